"""The run description the Flink harness reads (``jvm/flink-harness``), from a ``JobRun``."""

from __future__ import annotations

from pathlib import Path

import pytest

from kconform.conformance.flink.job import (
    HARNESS_RESTARTS,
    MAX_PARALLELISM,
    Failure,
    GroupOffsets,
    JobRun,
    Sink,
    Stop,
    description,
)
from kconform.reference_impl.types import TopicPartition

SINK = Sink("out", True, "txn")


def test_an_unbounded_run_says_when_to_stop_and_where_to_save() -> None:
    run = JobRun("b:9092", ("in",), SINK, 3, stop=Stop(at_offsets={TopicPartition("in", 1): 7}), restore_from="/sp/1")
    described = description(run, Path("/h.jsonl"), Path("/sp"))
    assert described["bounded"] is False and described["restore_from"] == "/sp/1"
    assert described["stop"] == {
        "after_records": None, "at_offsets": [["in", 1, 7]], "listed": False, "within_ms": 60_000
    }  # fmt: skip
    assert described["record_listings"] is False
    pattern = JobRun("b:9092", (), SINK, 1, stop=Stop(listed=True), topic_pattern="in-.*")
    listed = description(pattern, Path("/h"), Path("/s"))
    assert listed["stop"]["listed"] is True and listed["record_listings"] is True  # the harness records each listing
    assert described["sink"]["properties"] == {"transaction.timeout.ms": "60000"}
    assert described["sink"]["naming"] is None  # the release's default naming strategy
    pooled = JobRun("b:9092", ("in",), Sink("out", True, "txn", naming="POOLING"), 1)
    assert description(pooled, Path("/h.jsonl"), Path("/sp"))["sink"]["naming"] == "POOLING"
    assert described["sink"]["transactional_id_prefix"] == "txn"
    unprefixed = JobRun("b:9092", ("in",), Sink("out", True, None), 1)  # the harness then sets none (COMMIT-022)
    assert description(unprefixed, Path("/h.jsonl"), Path("/sp"))["sink"]["transactional_id_prefix"] is None


def test_further_sinks_are_described_each_with_its_own_guarantee_and_prefix() -> None:
    alone = description(JobRun("b:9092", ("in",), SINK, 1), Path("/h.jsonl"), Path("/sp"))
    assert alone["more_sinks"] == []
    run = JobRun("b:9092", ("in",), SINK, 1, more_sinks=(Sink("out-1", False, None), Sink("out-2", True, "p2")))
    described = description(run, Path("/h.jsonl"), Path("/sp"))["more_sinks"]
    assert [(s["topic"], s["exactly_once"], s["transactional_id_prefix"]) for s in described] == [
        ("out-1", False, None),
        ("out-2", True, "p2"),
    ]
    assert described[0]["properties"] == {"transaction.timeout.ms": "60000"}


def test_a_bounded_run_with_a_failure_in_a_checkpoint() -> None:
    run = JobRun("b:9092", (), SINK, 2, failure=Failure(0, 5, "checkpoint"), topic_pattern="in-.*")
    described = description(run, Path("/h.jsonl"), Path("/sp"))
    assert described["bounded"] is True and described["stop"] is None and described["topic_pattern"] == "in-.*"
    assert described["failure"] == {"subtask": 0, "after_records": 5, "at": "checkpoint"}
    assert described["restart_attempts"] == HARNESS_RESTARTS


def test_a_run_through_a_fault_that_fails_each_restart_may_restart_more() -> None:
    run = JobRun("b:9092", ("in",), SINK, 1, restart_attempts=20)
    assert description(run, Path("/h.jsonl"), Path("/sp"))["restart_attempts"] == 20


def test_a_start_from_group_offsets_names_the_group_and_its_fallback_or_none() -> None:
    """RESTORE-018's job: ``committedOffsets()`` (no fallback: ``null``) or ``committedOffsets(LATEST)``."""

    def start(run: JobRun) -> object:
        return description(run, Path("/h.jsonl"), Path("/sp"))["starting_offsets"]

    for fallback in (None, "latest"):
        run = JobRun("b:9092", ("in",), SINK, 1, starting_offsets=GroupOffsets("g", fallback))
        assert start(run) == {"group": "g", "fallback": fallback}
    assert start(JobRun("b:9092", ("in",), SINK, 1)) == "earliest"


@pytest.mark.parametrize("parallelism", [0, MAX_PARALLELISM + 1])
def test_parallelism_is_bounded(parallelism: int) -> None:
    with pytest.raises(ValueError, match="outside"):
        JobRun("b:9092", ("in",), SINK, parallelism)


def test_a_job_reads_something() -> None:
    with pytest.raises(ValueError, match="topics or a topic pattern"):
        JobRun("b:9092", (), SINK, 1)


def test_a_bounded_run_stops_at_the_latest_offsets_or_at_given_ones() -> None:
    """``setBounded(OffsetsInitializer.latest())`` unless stopping offsets are given (``OffsetsInitializer.offsets``),
    which only a bounded job takes."""
    latest = description(JobRun("b:9092", ("in",), SINK, 1), Path("/h.jsonl"), Path("/sp"))
    assert latest["bounded"] is True and latest["stopping_offsets"] is None
    given = JobRun(
        "b:9092", ("in",), SINK, 1, stopping_offsets={TopicPartition("in", 1): 9, TopicPartition("in", 0): 4}
    )
    assert description(given, Path("/h.jsonl"), Path("/sp"))["stopping_offsets"] == [["in", 0, 4], ["in", 1, 9]]
    with pytest.raises(ValueError, match="bounded"):
        JobRun("b:9092", ("in",), SINK, 1, stop=Stop(after_records=1), stopping_offsets={TopicPartition("in", 0): 4})


def test_a_batch_run_is_bounded_and_fresh_and_a_sink_may_have_no_guarantee() -> None:
    """``runtime_mode`` BATCH goes to the harness (which then sets no checkpoint interval); a BATCH job with a stop,
    a savepoint to restore or a planned failure is refused; a sink's guarantee is named (NONE, AT_LEAST_ONCE,
    EXACTLY_ONCE), and NONE is never exactly-once."""
    none = Sink("out", False, None, no_guarantee=True)
    run = JobRun("b:9092", ("in",), none, 2, runtime_mode="BATCH", more_sinks=(SINK, Sink("out-2", False, "p")))
    described = description(run, Path("/h.jsonl"), Path("/sp"))
    assert described["runtime_mode"] == "BATCH" and described["bounded"] is True
    assert described["sink"]["delivery_guarantee"] == "NONE"
    assert [s["delivery_guarantee"] for s in described["more_sinks"]] == ["EXACTLY_ONCE", "AT_LEAST_ONCE"]
    assert description(JobRun("b:9092", ("in",), SINK, 1), Path("/h"), Path("/s"))["runtime_mode"] == "STREAMING"
    with pytest.raises(ValueError, match="not both"):
        Sink("out", True, "txn", no_guarantee=True)
    for wrong in ({"stop": Stop(after_records=1)}, {"restore_from": "/sp/1"}, {"failure": Failure(0, 1)}):
        with pytest.raises(ValueError, match="BATCH"):
            JobRun("b:9092", ("in",), SINK, 1, runtime_mode="BATCH", **wrong)  # type: ignore[arg-type]
