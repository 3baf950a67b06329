"""The checks that a pipeline scenario's injection took effect (``kconform.conformance.spark.injections``): each
finds a broken run (ERROR naming the injection) and passes its twin."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import pytest

from kconform.conformance.adapter.interface import SINK_SETTINGS_RELIED_ON, SOURCE_SETTINGS_STATED, SourceSpec
from kconform.conformance.errors import CannotCheck, HarnessError
from kconform.conformance.spark.injections import (
    available_now_fallbacks,
    group_gone,
    injected,
    killed_by_sigkill,
    no_transaction_left_open,
    partitions_missing,
    require_available_now,
    require_replay,
    stopped,
)
from kconform.reference_impl.ports import KafkaError, UnsupportedFeatureError

FALLBACK = (
    "26/11/30 05:58:02 WARN MicroBatchExecution: source [org.apache.spark.sql.execution.datasources.v2.python."
    "PythonMicroBatchStream@5d1f2a] does not support Trigger.AvailableNow. Falling back to single batch execution. "
    "Note that this may not guarantee processing new data if there is an uncommitted batch. Please consult with "
    "data source developer to support Trigger.AvailableNow."
)
"""Spark 4.x's warning (``MicroBatchExecution.getTrigger``), as the driver's log4j prints it."""
WRAPPED = (
    "26/11/30 05:58:02 INFO MicroBatchExecution: Configured to use the wrapper of Trigger.AvailableNow for query "
    "[id = 1, runId = 2]."
)
"""The line of a run whose unsupporting source Spark wraps (``spark.sql.streaming.triggerAvailableNowWrapper``):
several batches, nothing fell back."""


def test_the_available_now_fallback_is_found_in_the_driver_log_with_its_source() -> None:
    sources = available_now_fallbacks(["starting", FALLBACK, WRAPPED, FALLBACK])
    assert sources == ["org.apache.spark.sql.execution.datasources.v2.python.PythonMicroBatchStream@5d1f2a"]
    with pytest.raises(HarnessError) as error:
        require_available_now([FALLBACK], "the availableNow query on /tmp/checkpoint")
    message = str(error.value)
    assert "the availableNow query on /tmp/checkpoint" in message
    assert "source [org.apache.spark.sql.execution.datasources.v2.python.PythonMicroBatchStream@5d1f2a]" in message
    assert "fell back to single batch execution" in message
    assert "pyspark.sql.streaming.datasource.SupportsTriggerAvailableNow" in message
    assert isinstance(error.value, CannotCheck), "ERROR (exit 3), never a violation"


def test_a_driver_log_without_the_fallback_passes() -> None:
    assert available_now_fallbacks([WRAPPED, "WARN something else does not support Trigger.Once"]) == []
    require_available_now([WRAPPED], "the query")  # no error


def test_a_kill_counts_only_when_sigkill_ended_the_process() -> None:
    assert killed_by_sigkill(-signal.SIGKILL)
    assert not killed_by_sigkill(0)  # it finished first
    assert not killed_by_sigkill(1)  # it failed first
    assert not killed_by_sigkill(None)  # still running
    assert not killed_by_sigkill(-signal.SIGTERM)


def test_a_killed_process_group_is_gone_and_a_live_one_is_not() -> None:
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], start_new_session=True)
    try:
        assert not group_gone(child.pid, timeout_s=0.2)
    finally:
        child.kill()
        child.wait(timeout=10)
    assert group_gone(child.pid, timeout_s=5)


def test_a_partition_add_is_confirmed_by_the_metadata() -> None:
    assert partitions_missing({"t": frozenset({0, 1, 2})}, "t", 3) is None
    missed = partitions_missing({"t": frozenset({0, 1})}, "t", 3)
    assert missed is not None and "the partition add did not take effect" in missed and "[0, 1]" in missed
    gone = partitions_missing({}, "t", 3)
    assert gone is not None and "no such topic" in gone


def test_a_kill_inside_a_transaction_must_leave_one_open() -> None:
    slow = {"linger.ms": "100"}
    assert no_transaction_left_open({0: (3, 7), 1: (5, 5)}, slow) is None
    missed = no_transaction_left_open({0: (7, 7), 1: (5, 5)}, slow)
    assert missed is not None and "left no transaction open" in missed and "linger.ms" in missed


def with_injected(what: str, error: Exception) -> None:
    with injected(what):
        raise error


def test_an_admin_injection_that_failed_is_an_error_naming_it() -> None:
    failed = KafkaError("metadata of t with 3 partitions: not reached within 30 s")
    with pytest.raises(HarnessError, match="the injection did not take effect: adding partitions to t"):
        with_injected("adding partitions to t (to 3)", failed)
    with pytest.raises(UnsupportedFeatureError):  # the scenario skips on what the broker refuses
        with_injected("DeleteRecords", UnsupportedFeatureError("no DeleteRecords"))
    with injected("nothing"):
        pass


def test_a_forgotten_commit_must_leave_the_batch_to_replay(tmp_path: Path) -> None:
    for log in ("offsets", "commits"):
        (tmp_path / log).mkdir()
    (tmp_path / "offsets" / "2").write_text("v1")
    require_replay(tmp_path, 2)  # planned, not committed: replayed
    (tmp_path / "commits" / "2").write_text("v1")
    with pytest.raises(HarnessError, match=r"batch 2 of .* has an offset-log entry and a commit-log entry"):
        require_replay(tmp_path, 2)
    with pytest.raises(HarnessError, match="has no offset-log entry"):
        require_replay(tmp_path, 3)


def test_the_guide_states_every_setting_the_suite_passes_and_relies_on() -> None:
    """docs/adapter-guide.md's list matches the code's: a setting added to the contract's lists is documented."""
    guide = (Path(__file__).resolve().parents[1] / "docs" / "adapter-guide.md").read_text()
    section = guide.split("### What the suite passes and relies on", 1)[1].split("\n### ", 1)[0]
    for name in (*SOURCE_SETTINGS_STATED, *SINK_SETTINGS_RELIED_ON, "SupportsTriggerAvailableNow"):
        assert f"`{name}`" in section, name
    assert "Falling back to single batch execution" in section


def test_a_source_spec_names_the_isolation_its_settings_state() -> None:
    stated = SourceSpec("b:9092", 2, ("t",), client_settings=(("isolation.level", "read_committed"),))
    assert stated.isolation == "read_committed"
    assert SourceSpec("b:9092", 2, ("t",)).isolation is None


def test_every_source_spec_of_a_pipeline_states_the_settings_the_contract_names() -> None:
    pipeline = pytest.importorskip("kconform.conformance.spark.pipeline")
    assert tuple(pipeline.STATED_SOURCE_SETTINGS) == SOURCE_SETTINGS_STATED


def test_a_sigstop_is_confirmed_by_the_process_state() -> None:
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        assert not stopped(child.pid, timeout_s=0.2)
        child.send_signal(signal.SIGSTOP)
        assert stopped(child.pid, timeout_s=5)
    finally:
        child.kill()
        child.wait(timeout=10)
