"""Task faults a pipeline scenario injects. Failures, so Spark retries the task: the first attempt of chosen tasks
fails after some of its rows, in every batch. In micro-batches a pass-through filter raises (``TaskFailures.inject``);
in real-time mode, whose allowlist admits no Python UDF, the capturing ``ForeachWriter`` does
(``kconform.conformance.spark.real_time.RowCapture``). A stall, so Spark speculates: the first attempt of one task
stops passing rows for a while (``StalledOriginal``, micro-batches only)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

import pyarrow as pa  # type: ignore[import-untyped]
from pyspark import TaskContext
from pyspark.sql import functions as F
from pyspark.sql.types import BooleanType

if TYPE_CHECKING:
    from pyspark.sql import DataFrame


class InjectedTaskFailure(RuntimeError):
    """Raised on purpose inside a task by ``TaskFailures``; Spark is expected to retry the task."""


@dataclass(frozen=True, slots=True)
class TaskFailures:
    """The first attempt of each Spark task in ``tasks`` fails after ``after_rows`` of its rows, in every batch."""

    tasks: frozenset[int]
    after_rows: int

    def failure(self, stage: int, task: int, attempt: int, rows_passed: int) -> InjectedTaskFailure | None:
        """The failure to raise in ``task``'s ``attempt`` before its next row, having passed ``rows_passed``."""
        if attempt > 0 or task not in self.tasks or rows_passed < self.after_rows:
            return None
        return InjectedTaskFailure(
            f"kconform: injected failure of task {task} (stage {stage}, attempt 0) after "
            f"{self.after_rows} rows; Spark should retry it"
        )

    def inject(self, frame: DataFrame) -> DataFrame:
        """``frame`` with a pass-through filter that raises ``InjectedTaskFailure`` where planned."""
        plan = self

        def passes(_offset: int) -> bool:
            context = TaskContext.get()
            if context is None:
                return True
            key = (context.stageId(), context.partitionId())
            failure = plan.failure(*key, context.attemptNumber(), _ROWS_SEEN.get(key, 0))
            if failure is not None:
                raise failure
            _ROWS_SEEN[key] = _ROWS_SEEN.get(key, 0) + 1
            return True

        check = F.udf(passes, BooleanType()).asNondeterministic()
        return frame.where(check(F.col("offset")))


_ROWS_SEEN: dict[tuple[int, int], int] = {}
"""Rows a first task attempt passed, per (stage, task), in this Python worker."""


@dataclass(frozen=True)
class StalledOriginal:
    """The first attempt of task ``task`` stalls for ``stall_s`` after ``after_rows`` rows: long past Spark's
    speculation threshold, so a copy starts on the other host; Spark kills the stalled attempt when the copy
    succeeds, which ends the stall early."""

    task: int
    after_rows: int
    stall_s: float

    def inject(self, frame: DataFrame) -> DataFrame:
        """``frame`` passed through ``mapInArrow``, with the stall where planned."""
        plan = self

        def passes(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
            context = TaskContext.get()
            stalls = context is not None and context.partitionId() == plan.task and context.attemptNumber() == 0
            rows = 0
            for batch in batches:
                if stalls and rows >= plan.after_rows:
                    time.sleep(plan.stall_s)  # the injected stall (a slow host), not synchronisation
                    stalls = False
                rows += batch.num_rows
                yield batch

        return frame.mapInArrow(passes, frame.schema)
