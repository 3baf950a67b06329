"""A sink task run twice at once: Spark's speculative copy of an original held mid-write (COMMIT-006's scenario).

Spark speculates only where ``spark.speculation`` was set when the SparkContext started, so the query runs in a
driver process of its own (``python -m kconform.conformance.spark.speculation <master> <evidence>``) on a
cluster master whose executors sit on two hosts: Spark never starts a copy on a host where the task already
has an attempt (``TaskSetManager.dequeueTaskFromList``: ``!(speculative && hasAttemptOnHost(index, host))``,
apache/spark v4.2.0). The first attempt of one task passes ``after_rows`` rows to the sink, one Arrow batch
each, then stalls; the other task finishes, the stalled one runs past the speculation threshold and Spark
starts a copy on the other host, which runs free. When the copy succeeds Spark kills the original
(``TaskSetManager.handleSuccessfulTask``): by then it had written rows in a transaction of its own. The driver
writes the query's task attempts, from Spark's status store, to ``<evidence>`` as JSON.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any, Final

from pyspark.sql import SparkSession

from ...reference_impl.credentials import reveal
from ..checks.pipeline_checkers import TaskAttempt
from ..errors import CannotCheck
from .cluster import is_local
from .driver import DriverRun, serve
from .failures import StalledOriginal
from .pipeline import local_session

SPECULATION: Final = {
    "spark.speculation": "true",
    "spark.speculation.interval": "100ms",
    "spark.speculation.quantile": "0.5",
    "spark.speculation.multiplier": "1.5",
    "spark.speculation.efficiency.enabled": "false",
}
"""Speculate a task once half the stage's tasks finished and it ran 1.5 times their median; checked every 100 ms.
Spark's efficiency heuristic (4.x) would also weigh the task's records per second: off, so only time counts."""
ROW_AT_A_TIME: Final = {"spark.sql.execution.arrow.maxRecordsPerBatch": "1"}
"""Arrow batches of one row between the stall and the sink: the rows before the stall reach the sink, which
would otherwise wait for a full batch (10 000 rows) that the stall never completes."""
HOSTS_WAIT_S: Final = 90.0
"""How long the driver waits for executors on two hosts: a cluster's JVMs start in 5-20 s on two shared cores."""
DRIVER_TIMEOUT_S: Final = 300


def executor_hosts(spark: SparkSession) -> set[str]:
    """The hosts of the session's executors now (not the driver's), from Spark's status store."""
    summaries = spark.sparkContext._jsc.sc().statusStore().executorList(True)
    found = (summaries.apply(i) for i in range(summaries.size()))
    return {s.hostPort().rpartition(":")[0] for s in found if s.id() != "driver"}


def two_hosts_missing(spark: SparkSession) -> str | None:
    """Why the session's master cannot run a speculative copy beside its original, or ``None`` when it can (a
    cluster master's executors are waited for, bounded: they register seconds after the session starts)."""
    master = spark.sparkContext.master or ""
    if is_local(master):
        return (
            f"master {master} runs every task in the driver, on one host, and Spark never runs a speculative copy "
            "on the host of its original: run with --spark-master standalone (two workers on two loopback hosts)"
        )
    try:
        await_hosts(spark, 2)
    except CannotCheck as few:
        return str(few)
    return None


def task_attempts(spark: SparkSession, job_group: str) -> list[TaskAttempt]:
    """Every task attempt of the jobs of ``job_group`` (a query's run id), from Spark's status store."""
    tracker = spark.sparkContext.statusTracker()
    store = spark.sparkContext._jsc.sc().statusStore()
    attempts = []
    for job in tracker.getJobIdsForGroup(job_group):
        info = tracker.getJobInfo(job)
        for stage in info.stageIds if info is not None else ():
            tasks = store.taskList(stage, 0, 10_000)
            for i in range(tasks.size()):
                task = tasks.apply(i)
                attempts.append(
                    TaskAttempt(stage, task.index(), task.attempt(), task.speculative(), task.host(), task.status())
                )
    return sorted(attempts, key=lambda a: (a.stage, a.task, a.attempt))


def await_hosts(spark: SparkSession, wanted: int, timeout_s: float = HOSTS_WAIT_S) -> set[str]:
    """The executor hosts once there are ``wanted``, or ``CannotCheck`` after ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while len(hosts := executor_hosts(spark)) < wanted:
        if time.monotonic() >= deadline:
            raise CannotCheck(
                f"the master {spark.sparkContext.master} gave the speculation driver executors on {sorted(hosts)} "
                f"within {timeout_s:g} s; a speculative copy needs {wanted} hosts (--spark-master standalone)"
            )
        time.sleep(0.2)  # polling interval of a bounded wait
    return hosts


def start_driver(run: DriverRun, stall: StalledOriginal, evidence: Path, log: Path) -> subprocess.Popen[bytes]:
    """A driver process running ``run`` with speculation on and ``stall`` injected; output appended to ``log``."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    with log.open("ab") as out:
        driver = subprocess.Popen(
            [sys.executable, "-m", "kconform.conformance.spark.speculation", run.master, str(evidence)],
            stdin=subprocess.PIPE, stdout=out, stderr=subprocess.STDOUT, env=env,
            start_new_session=True,
        )  # fmt: skip
    assert driver.stdin is not None
    with contextlib.suppress(BrokenPipeError):
        driver.stdin.write(json.dumps({"run": asdict(run), "stall": asdict(stall)}, default=reveal).encode() + b"\n")
        driver.stdin.close()
    return driver


def read_attempts(evidence: Path) -> list[TaskAttempt]:
    """The task attempts a driver wrote to ``evidence``."""
    return [TaskAttempt(**fields) for fields in json.loads(evidence.read_text())]


def main(argv: list[str]) -> int:
    master, evidence = argv[0], Path(argv[1])
    spark = local_session(master, {**SPECULATION, **ROW_AT_A_TIME})

    def run_query() -> None:
        given: dict[str, Any] = json.loads(sys.stdin.readline())
        run, stall = DriverRun(**given["run"]), StalledOriginal(**given["stall"])
        pipeline = run.pipeline(spark, stall)
        await_hosts(spark, 2)
        try:
            pipeline.run_available_now(DRIVER_TIMEOUT_S)
        finally:
            if pipeline.query is not None:
                attempts = task_attempts(spark, str(pipeline.query.runId))
                evidence.write_text(json.dumps([a.fields() for a in attempts]))

    return serve(spark, run_query)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
