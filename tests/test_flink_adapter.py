"""Flink's own connector as ``kconform run``'s adapter: the release it judges comes from
``$KCONFORM_FLINK_CONNECTOR`` (the newest pinned line by default; an unpinned one is a usage error naming the
pinned lines), its capability puts it at the pipeline level, and the bug bank's flink-connector-kafka
component runs through it. A running job's bound covers its stop condition's wait."""

from __future__ import annotations

import pytest

from kconform.conformance.adapter.loader import load_adapter
from kconform.conformance.adapters.flink_kafka import (
    ADAPTER_SPEC,
    FLINK_CONNECTOR_ENV,
    FlinkKafkaAdapter,
    job_edit_of,
    prepare,
)
from kconform.conformance.bugbank.command import load
from kconform.conformance.bugbank.components import COMPONENTS
from kconform.conformance.flink.harness import STARTUP_S, as_asked, run_limit_s
from kconform.conformance.flink.job import JobRun, Sink, Stop
from kconform.conformance.flink.versions import NEWEST, RELEASES
from kconform.conformance.gate.run_command import main
from kconform.conformance.gate.runner import LEVEL_CAPABILITIES

SPEC = ADAPTER_SPEC


def test_the_adapter_judges_the_newest_line_unless_told(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(FLINK_CONNECTOR_ENV, raising=False)
    newest = load_adapter(SPEC)
    assert isinstance(newest, FlinkKafkaAdapter) and newest.release == RELEASES[NEWEST]
    assert newest.name == f"flink-connector-kafka {NEWEST}" and newest.capabilities == {"flink-job"}
    monkeypatch.setenv(FLINK_CONNECTOR_ENV, "3.1.0-1.18")
    chosen = load_adapter(SPEC)
    assert isinstance(chosen, FlinkKafkaAdapter) and chosen.release.connector == "3.1.0-1.18"


def test_flink_job_is_a_pipeline_capability() -> None:
    assert "flink-job" in LEVEL_CAPABILITIES["pipeline"] and "flink-job" not in LEVEL_CAPABILITIES["protocol"]


def test_an_unpinned_line_is_a_usage_error_naming_the_pinned_ones(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv(FLINK_CONNECTOR_ENV, "9.9.9-9.9")
    assert main(["--adapter", SPEC, "--level", "pipeline"]) == 2
    error = capsys.readouterr().err
    assert "'9.9.9-9.9' is not pinned" in error and NEWEST in error and "3.0.0-1.17" in error


def test_the_bank_runs_flink_bugs_on_pinned_lines_through_the_adapter() -> None:
    flink = COMPONENTS["flink-connector-kafka"]
    assert flink.adapter == SPEC
    with pytest.raises(ValueError, match="not pinned"):
        prepare("3.9.9-2.0", print)  # refused before any build (no such release is pinned)
    caught_here = {b.id: b for b in load(None) if b.id in ("FLINK-32019", "FLINK-28303", "FLINK-36780")}
    assert len(caught_here) == 3
    for bug in caught_here.values():
        assert {bug.buggy, bug.fixed} <= set(RELEASES) and bug.level == "pipeline", bug.id


def test_a_running_job_may_wait_for_its_stop_condition_then_its_savepoint_and_end() -> None:
    job = JobRun("b:9092", ("t",), Sink("o", True, "x"), 2, timeout_ms=10_000)
    assert run_limit_s(job) == STARTUP_S + 30
    assert run_limit_s(JobRun("b:9092", ("t",), Sink("o", True, "x"), 2, stop=Stop(within_ms=400_000))) == (
        STARTUP_S + 400 + 240
    )


def test_flink_connector_implies_the_flink_adapter_at_the_pipeline_level(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv(FLINK_CONNECTOR_ENV, NEWEST)  # recorded, so the teardown undoes what main sets below
    monkeypatch.delenv(FLINK_CONNECTOR_ENV)
    assert main(["--flink-connector", "9.9.9-9.9"]) == 2
    assert "'9.9.9-9.9' is not pinned" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["--flink-connector", NEWEST, "--adapter", "kconform.reference_impl.adapter:ReferenceAdapter"])
    assert "it takes no other --adapter" in capsys.readouterr().err


def test_a_flink_adapter_written_with_release_alone_runs_its_jobs_as_asked() -> None:
    """``job_edit`` is optional: an adapter from before it existed (``release`` only) is not broken by it."""

    class ReleaseOnly:
        release = RELEASES[NEWEST]
        name = "old-shape"
        capabilities = frozenset({"flink-job"})

    assert job_edit_of(ReleaseOnly()) is as_asked
    assert job_edit_of(FlinkKafkaAdapter(RELEASES[NEWEST])) is as_asked

    def off(job: JobRun) -> JobRun:
        return job

    assert job_edit_of(FlinkKafkaAdapter(RELEASES[NEWEST], job_edit=off)) is off
