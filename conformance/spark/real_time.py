"""Spark's real-time mode (``trigger(realTime=...)``, Spark 4.1+) as the pipeline harness runs it.

A real-time query runs long batches of a fixed duration, each one task per Kafka partition, all at
once. Its allowlist (``RealTimeModeAllowlist``) admits the Kafka, ``foreach``, console and memory
sinks and JVM operators only: no ``foreachBatch``, no Python UDF; and it has no ``availableNow``.
So here a source-only query's rows are captured by a ``ForeachWriter`` (``RowCapture``), one file
per task attempt, a task failure is injected in that writer, and a query runs "to the end" by
waiting, bounded, until a committed batch took every partition to the end offset it had when the
wait began, then stopping it. Not ``processAllAvailable``: it returns once a batch committed what its
tasks read, though a retried task read nothing (measured on Spark 4.2.0).

A task that finds no free slot starts after the others' batch ended and reads nothing, batch after
batch, while the query reports everything processed (measured on Spark 4.2.0, local[2] and a
3-partition topic): ``require_task_slots`` makes that a ``HarnessError`` naming the fix, never a verdict. So is
a wait for the committed offsets that times out (``await_committed_to_end``): the run could not be judged.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Final

from pyspark import TaskContext

from ...reference_impl.credentials import Secret, revealed
from ...reference_impl.kafka_client import KafkaClient, StaticEndpoint, wait_until
from ...reference_impl.ports import Isolation, KafkaError
from ...reference_impl.types import TopicPartition
from ..checks.pipeline_checkers import ReadRecord
from ..errors import HarnessError
from .failures import TaskFailures

if TYPE_CHECKING:
    from pyspark.sql import Row, SparkSession

BATCH_MEMBER: Final = "real_time_batch"
"""The optional adapter member naming the real-time batch duration (``SparkKafkaAdapter.real_time_batch``)."""
DONE: Final = ".rows"
"""Suffix of a task attempt's capture that ended without error."""
PART: Final = ".part"
"""Suffix of a task attempt's capture while it runs; one that failed or was stopped keeps it and counts for
nothing, as a batch ``foreachBatch`` never received."""


def batch_duration(adapter: object) -> str | None:
    """The real-time batch duration ``adapter`` runs its queries under; ``None``: micro-batches.

    Optional, so an adapter written before real-time mode runs unchanged (the contract did not change)."""
    duration: str | None = getattr(adapter, BATCH_MEMBER, None)
    return duration


def sink_failure_unsupported(adapter: object) -> str | None:
    """Why a task failure cannot be injected into ``adapter``'s source-to-Kafka query; ``None`` when it can."""
    if batch_duration(adapter) is None:
        return None
    return (
        "real-time mode admits no Python UDF in its plan (ArrowEvalPythonExec is not in RealTimeModeAllowlist) and "
        "no JVM expression fails only a chosen task attempt, so the failure cannot be placed in a query that writes "
        "to Kafka; the source-side scenario injects it in the capturing ForeachWriter instead"
    )


class RowCapture:
    """A ``ForeachWriter`` writing each task attempt's rows to ``folder/<batch>-<task>-<attempt>``.

    Spark pickles it before ``open``, so each task sets its own attempt's state. ``failures`` makes the first
    attempt of each chosen task fail after its first rows once per run, not in every batch as in micro-batches:
    a retried real-time task reads nothing (its batch then commits the partition where it started, and the next
    batch reads it; measured on Spark 4.2.0), so a failure in every batch would leave the partition unread forever.
    """

    def __init__(self, folder: Path, failures: TaskFailures | None = None) -> None:
        self.folder = folder
        self.failures = failures
        self.path = folder
        self.batch = self.task = self.attempt = self.rows = 0

    def open(self, partition_id: int, epoch_id: int) -> bool:
        context = TaskContext.get()
        self.attempt = context.attemptNumber() if context is not None else 0
        self.batch, self.task, self.rows = epoch_id, partition_id, 0
        self.path = self.folder / f"{epoch_id}-{partition_id}-{self.attempt}{PART}"
        return True

    def process(self, row: Row) -> None:
        failure = self.failures and self.failures.failure(self.batch, self.task, self.attempt, self.rows)
        failed_once = self.folder / f"failed-{self.task}"
        if failure and not failed_once.exists():
            failed_once.touch()
            raise failure
        value = None if row["value"] is None else bytes(row["value"]).hex()
        line = {"topic": row["topic"], "partition": row["partition"], "offset": row["offset"], "value": value}
        with self.path.open("a") as out:
            out.write(json.dumps({**line, "task": row["task"]}) + "\n")
        self.rows += 1

    def close(self, error: BaseException | None) -> None:
        if error is None:
            self.path.touch()
            self.path.rename(self.path.with_suffix(DONE))


def captured_batches(folder: Path) -> dict[int, list[ReadRecord]]:
    """Batch id -> the rows of its tasks' successful attempts (the last attempt of a task that ran twice)."""
    attempts: dict[tuple[int, int], tuple[int, Path]] = {}
    for path in folder.glob(f"*{DONE}") if folder.exists() else ():
        batch, task, attempt = (int(field) for field in path.name.removesuffix(DONE).split("-"))
        if attempt >= attempts.get((batch, task), (-1, path))[0]:
            attempts[(batch, task)] = (attempt, path)
    batches: dict[int, list[ReadRecord]] = {}
    for (batch, _task), (_attempt, path) in sorted(attempts.items()):
        batches.setdefault(batch, []).extend(read_rows(path.read_text().splitlines()))
    return batches


def read_rows(lines: Iterable[str]) -> list[ReadRecord]:
    """``RowCapture``'s lines as the records the checkers judge."""
    records = []
    for line in lines:
        row = json.loads(line)
        value = None if row["value"] is None else bytes.fromhex(row["value"])
        records.append(ReadRecord(TopicPartition(row["topic"], row["partition"]), row["offset"], value, row["task"]))
    return records


def end_offsets(
    bootstrap_servers: str, settings: Mapping[str, str | Secret], topics: Iterable[str], pattern: str | None
) -> dict[TopicPartition, int]:
    """Where a query subscribed to ``topics`` or ``pattern`` has read everything each partition holds for it: past
    its last record at the query's isolation, not past trailing control markers or aborted records, which a
    real-time batch never consumes, so its committed offset may stay in that gap (RESTORE-013)."""
    plain = revealed(dict(settings))
    isolation = (
        Isolation.READ_COMMITTED if plain.get("isolation.level") == "read_committed" else Isolation.READ_UNCOMMITTED
    )
    endpoint = StaticEndpoint(bootstrap_servers, tuple(sorted(plain.items())))
    with KafkaClient(endpoint) as client:
        wanted = set(topics)
        return {
            tp: after_last_record(client, tp, isolation)
            for topic, partitions in client.list_topics().items()
            if topic in wanted or (pattern is not None and re.fullmatch(pattern, topic))
            for tp in (TopicPartition(topic, p) for p in sorted(partitions))
        }


def after_last_record(client: KafkaClient, tp: TopicPartition, isolation: Isolation) -> int:
    """The offset after ``tp``'s last record a reader at ``isolation`` gets; its log start when it gets none."""
    start = client.earliest_offset(tp)
    if start >= client.latest_offset(tp, Isolation.READ_UNCOMMITTED):
        return start
    records = client.read(tp, start, isolation, MAX_RECORDS)
    return records[-1].offset + 1 if records else start


MAX_RECORDS: Final = 1_000_000
"""More than any scenario writes to a partition."""


def committed_offsets(checkpoint: Path) -> dict[TopicPartition, int]:
    """The next offset of every partition as of the last batch Spark committed (its offset-log entry, in the
    Kafka source's JSON); empty before the first commit."""
    commits = [int(p.name) for p in (checkpoint / "commits").glob("[0-9]*")]  # a folder not there yet has none
    if not commits:
        return {}
    source = json.loads((checkpoint / "offsets" / str(max(commits))).read_text().splitlines()[2])
    return {TopicPartition(topic, int(p)): offset for topic, parts in source.items() for p, offset in parts.items()}


def caught_up(ends: Mapping[TopicPartition, int], committed: Mapping[TopicPartition, int]) -> bool:
    """Whether a committed batch has taken every partition to its end (and so has the query's start resolved)."""
    return all(committed.get(tp, -1) >= end for tp, end in ends.items())


def await_committed_to_end(
    checkpoint: Path, ends: Mapping[TopicPartition, int], active: Callable[[], bool], timeout_s: float
) -> None:
    """Wait, bounded, until a committed batch took every partition to its end in ``ends`` or the query stopped
    (its error is the caller's to raise). ``HarnessError`` when neither happens within ``timeout_s``: the harness
    could not run the query to its end, so nothing was judged yet; a violation needs the rows it would have read."""
    try:
        wait_until(
            lambda: True if not active() or caught_up(ends, committed_offsets(checkpoint)) else None,
            timeout_s,
            "a committed batch taking every partition to its end",
            step_s=0.2,
        )
    except KafkaError as timed_out:
        committed, awaited = committed_offsets(checkpoint), {str(tp): end for tp, end in ends.items()}
        behind = {str(tp): (committed.get(tp), end) for tp, end in ends.items() if committed.get(tp, -1) < end}
        raise HarnessError(
            f"the real-time query on {checkpoint} did not commit every partition to its end within {timeout_s:g} s: "
            f"awaited a committed batch at or past {awaited}, and these "
            f"partitions stayed behind as (committed, end): {behind} (None: never committed), so the run could not "
            "be judged; a query that stopped reading a partition, or a machine too slow for the bound, shows in its log"
        ) from timed_out


def require_task_slots(spark: SparkSession, partitions: int) -> None:
    """``HarnessError`` when the session cannot run a task for each of ``partitions`` at once."""
    slots = spark.sparkContext.defaultParallelism
    if partitions > slots:
        raise HarnessError(
            f"real-time mode runs one task per Kafka partition, all at once: this query reads {partitions} "
            f"partitions and master {spark.sparkContext.master} has {slots} task slots, so some tasks would start "
            f"after their batch ended and read nothing while the query reports every record processed; run with "
            f"--spark-master local[{max(partitions, 8)},3]"
        )
