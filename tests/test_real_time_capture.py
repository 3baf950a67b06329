"""How a real-time query's rows reach the checkers (``kconform.conformance.spark.real_time``), without Spark:
``RowCapture`` writes each task attempt's rows, ``captured_batches`` keeps the attempts that ended well."""

from __future__ import annotations

from pathlib import Path

import pytest
from pyspark.sql import Row

from kconform.conformance.adapters.spark_kafka import ADAPTER, REAL_TIME
from kconform.conformance.errors import CannotCheck
from kconform.conformance.spark.failures import InjectedTaskFailure, TaskFailures
from kconform.conformance.spark.real_time import (
    RowCapture,
    await_committed_to_end,
    batch_duration,
    captured_batches,
    caught_up,
    committed_offsets,
)
from kconform.reference_impl.types import TopicPartition


def rows(task: int, offsets: range) -> list[Row]:
    return [Row(topic="t", partition=task, offset=o, value=f"v{o}".encode(), task=task) for o in offsets]


def run_attempt(writer: RowCapture, batch: int, task: int, offsets: range) -> BaseException | None:
    """One task attempt as Spark drives a ``ForeachWriter``: open, process each row, close with its error."""
    writer.open(task, batch)
    error: BaseException | None = None
    try:
        for row in rows(task, offsets):
            writer.process(row)
    except InjectedTaskFailure as failed:
        error = failed
    writer.close(error)
    return error


def test_a_batch_holds_the_rows_of_its_tasks_that_ended_well(tmp_path: Path) -> None:
    writer = RowCapture(tmp_path)
    assert run_attempt(writer, 0, 0, range(3)) is None
    assert run_attempt(writer, 0, 1, range(2)) is None
    assert run_attempt(writer, 1, 0, range(3, 5)) is None
    batches = captured_batches(tmp_path)
    assert sorted(batches) == [0, 1]
    assert sorted((r.tp, r.offset, r.task) for r in batches[0]) == [
        *((TopicPartition("t", 0), o, 0) for o in range(3)),
        *((TopicPartition("t", 1), o, 1) for o in range(2)),
    ]
    assert [r.value for r in batches[1]] == [b"v3", b"v4"]


def test_a_failed_attempt_counts_for_nothing_and_its_retry_for_the_task(tmp_path: Path) -> None:
    """The injected failure ends attempt 0 of task 1 after 2 rows, once per run (a retried real-time task reads
    nothing, so failing every batch would starve the partition); its retry (attempt 1) is what the batch read."""
    writer = RowCapture(tmp_path, TaskFailures(frozenset({1}), 2))
    assert run_attempt(writer, 0, 0, range(4)) is None, "task 0 is not planned to fail"
    assert isinstance(run_attempt(writer, 0, 1, range(4)), InjectedTaskFailure)
    assert run_attempt(writer, 1, 1, range(4, 8)) is None, "failed once in this run: the next batch reads on"
    assert [r.offset for r in captured_batches(tmp_path)[1]] == [4, 5, 6, 7]
    assert captured_batches(tmp_path)[0] == [r for r in captured_batches(tmp_path)[0] if r.task == 0]
    (tmp_path / "0-1-1.rows").write_text("".join(
        f'{{"topic": "t", "partition": 1, "offset": {o}, "value": null, "task": 1}}\n' for o in range(4)
    ))  # fmt: skip
    retried = [r for r in captured_batches(tmp_path)[0] if r.task == 1]
    assert [(r.offset, r.value) for r in retried] == [(o, None) for o in range(4)]


def test_a_stopped_attempt_leaves_only_a_part_file(tmp_path: Path) -> None:
    writer = RowCapture(tmp_path)
    writer.open(0, 3)
    for row in rows(0, range(2)):
        writer.process(row)
    writer.close(RuntimeError("query stopped"))
    assert [p.name for p in tmp_path.iterdir()] == ["3-0-0.part"]
    assert captured_batches(tmp_path) == {}


@pytest.mark.parametrize(("adapter", "duration"), [(ADAPTER, None), (REAL_TIME, "5 seconds"), (object(), None)])
def test_only_an_adapter_naming_a_batch_duration_runs_in_real_time_mode(adapter: object, duration: str | None) -> None:
    assert batch_duration(adapter) == duration


def test_caught_up_once_a_committed_batch_took_every_partition_to_its_end(tmp_path: Path) -> None:
    """``committed_offsets`` reads the offset-log entry of the last committed batch (Spark's Kafka JSON on its
    third line); a partition the query has not committed yet, even an empty one, is not caught up."""
    a0, a1 = TopicPartition("a", 0), TopicPartition("a", 1)
    assert committed_offsets(tmp_path) == {}
    (tmp_path / "offsets").mkdir()
    (tmp_path / "commits").mkdir()
    for batch, line in ((0, '{"a":{"0":9,"1":0}}'), (1, '{"a":{"0":9,"1":9}}')):
        (tmp_path / "offsets" / str(batch)).write_text(f'v1\n{{"batchWatermarkMs":0}}\n{line}\n')
    (tmp_path / "commits" / "0").write_text("v1\n{}\n")
    assert committed_offsets(tmp_path) == {a0: 9, a1: 0}, "batch 1 is planned, not committed"
    assert not caught_up({a0: 9, a1: 9}, committed_offsets(tmp_path))
    (tmp_path / "commits" / "1").write_text("v1\n{}\n")
    assert caught_up({a0: 9, a1: 9}, committed_offsets(tmp_path))
    assert not caught_up({a0: 9, a1: 9, TopicPartition("a", 2): 0}, committed_offsets(tmp_path))


def commit_batch(checkpoint: Path, batch: int, offsets: str) -> None:
    """Spark's offset-log and commit-log entries of ``batch``, its Kafka source at ``offsets`` (JSON)."""
    for log in ("offsets", "commits"):
        (checkpoint / log).mkdir(exist_ok=True)
    (checkpoint / "offsets" / str(batch)).write_text(f'v1\n{{"batchWatermarkMs":0}}\n{offsets}\n')
    (checkpoint / "commits" / str(batch)).write_text("v1\n{}\n")


def test_a_real_time_query_that_never_commits_to_its_end_could_not_be_checked(tmp_path: Path) -> None:
    """The bounded wait for a committed batch at every partition's end timing out is the harness failing to
    run the query to its end: a ``CannotCheck`` (``kconform run``: ERROR, exit 3) naming what it awaited and
    which partition stayed behind, never a violation by the connector."""
    a0, a1 = TopicPartition("a", 0), TopicPartition("a", 1)
    commit_batch(tmp_path, 0, '{"a":{"0":9,"1":4}}')
    with pytest.raises(CannotCheck) as timed_out:
        await_committed_to_end(tmp_path, {a0: 9, a1: 9}, lambda: True, timeout_s=0.3)
    message = str(timed_out.value)
    assert f"the real-time query on {tmp_path} did not commit every partition to its end within 0.3 s" in message
    assert "awaited a committed batch at or past {'a-0': 9, 'a-1': 9}" in message
    assert "stayed behind as (committed, end): {'a-1': (4, 9)}" in message


def test_the_wait_for_a_real_time_query_ends_once_it_committed_to_its_end_or_stopped(tmp_path: Path) -> None:
    a0 = TopicPartition("a", 0)
    commit_batch(tmp_path, 0, '{"a":{"0":9}}')
    await_committed_to_end(tmp_path, {a0: 9}, lambda: True, timeout_s=5)
    await_committed_to_end(tmp_path, {a0: 10}, lambda: False, timeout_s=5)  # stopped: its error is the caller's
