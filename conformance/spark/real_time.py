"""Spark's real-time mode (``trigger(realTime=...)``, Spark 4.1+) as the pipeline harness runs it.

A real-time query runs long batches of a fixed duration, each one task per Kafka partition, all at
once. Its allowlist (``RealTimeModeAllowlist``) admits the Kafka, ``foreach``, console and memory
sinks and JVM operators only: no ``foreachBatch``, no Python UDF; and it has no ``availableNow``.
So here a source-only query's rows are captured by a ``ForeachWriter`` (``RowCapture``), one file
per task attempt, a task failure is injected in that writer, and a query runs "to the end" by
waiting, bounded, until it processed what was available, then stopping it.

A task that finds no free slot starts after the others' batch ended and reads nothing, batch after
batch, while the query reports everything processed (measured on Spark 4.2.0, local[2] and a
3-partition topic): ``require_task_slots`` makes that a ``HarnessError`` naming the fix, never a verdict.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Final

from pyspark import TaskContext

from ...reference_impl.credentials import Secret, revealed
from ...reference_impl.kafka_client import KafkaClient, StaticEndpoint
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

    Spark pickles it before ``open``, so each task sets its own attempt's state; ``failures`` makes the first
    attempt of the chosen tasks fail after their first rows, which Spark must retry.
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
        if failure:
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


def subscribed_partitions(
    bootstrap_servers: str, settings: Mapping[str, str | Secret], topics: Iterable[str], pattern: str | None
) -> int:
    """How many Kafka partitions a query subscribed to ``topics`` or ``pattern`` reads now."""
    endpoint = StaticEndpoint(bootstrap_servers, tuple(sorted(revealed(dict(settings)).items())))
    with KafkaClient(endpoint) as client:
        listed = client.list_topics()
    wanted = set(topics)
    return sum(
        len(partitions)
        for topic, partitions in listed.items()
        if topic in wanted or (pattern is not None and re.fullmatch(pattern, topic))
    )


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
