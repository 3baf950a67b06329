"""Whether a pipeline scenario's injection took effect, checked before its verdict.

A scenario injects a condition (a kill, a partition added, a slow-down, a bounded run of several batches) and then
judges what the connector did under it. When the condition never happened, or the engine quietly ran something
else, the verdict would blame the connector for the suite's run: such a test is ERROR (``HarnessError``, exit 3)
naming the injection, never a violation. This module holds those checks, pure over their evidence (log lines, an
exit status, a partition count) but for ``group_gone``, which asks the kernel.

Spark's ``Trigger.AvailableNow`` fallback: every bounded query of the suite (``Pipeline.run_available_now``) runs
``trigger(availableNow=True)``, which reads what exists at the start in batches of at most
``maxRecordsPerTrigger``, and replays an uncommitted batch before reading on. Since SPARK-45178 (the 4.0 line), a
source that does not implement ``SupportsTriggerAvailableNow`` is run as ``Trigger.Once`` instead, one batch and no
read limit, after a single warning of the driver (``MicroBatchExecution.getTrigger``:
``sql/core/src/main/scala/org/apache/spark/sql/execution/streaming/MicroBatchExecution.scala`` in 4.0.x,
``.../streaming/runtime/MicroBatchExecution.scala`` from 4.1.0; the warning is in the spark-sql jars of PySpark
4.0.1, 4.1.1 and 4.2.0 and not in 3.5.7's, where an unsupporting source is wrapped and still runs several batches).
A restart on a checkpoint whose last batch never committed then runs only that batch and stops, never reading
what was written since (what ``Trigger.Once`` does, SPARK-39805): a scenario built on several batches, or on a
replay followed by new records, shows an ``offset-gap`` the connector did not make. The driver's log is the
evidence (``available_now_fallbacks``); a Python data source gets the interface from PySpark 4.2's
``pyspark.sql.streaming.datasource.SupportsTriggerAvailableNow`` (SPARK-55304).
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import time
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any, Final

from ...reference_impl.ports import KafkaError, UnsupportedFeatureError
from ..errors import HarnessError

FALLBACK_LINE: Final = re.compile(
    r"source \[(?P<source>.*?)\] does not support Trigger\.AvailableNow\. Falling back to single batch execution"
)
"""Spark's warning when it runs an ``availableNow`` query as one batch (``MicroBatchExecution.getTrigger``, 4.0+)."""
AVAILABLE_NOW_FIX: Final = (
    "implement SupportsTriggerAvailableNow in the source's stream reader (a Python data source: PySpark 4.2's "
    "pyspark.sql.streaming.datasource.SupportsTriggerAvailableNow, with prepareForTriggerAvailableNow and "
    "latestOffset(start, limit); a JVM source: org.apache.spark.sql.connector.read.streaming."
    "SupportsTriggerAvailableNow)"
)


def available_now_fallbacks(lines: Iterable[str]) -> list[str]:
    """The sources Spark's driver log ``lines`` say it ran as one batch instead of ``availableNow`` (each once, in
    the order first named); empty when none fell back."""
    found: dict[str, None] = {}
    for line in lines:
        if (match := FALLBACK_LINE.search(line)) is not None:
            found.setdefault(match.group("source"), None)
    return list(found)


def fallback_error(sources: Iterable[str], where: str) -> HarnessError:
    """The ERROR of a scenario whose bounded query Spark ran as a single batch: named, with the source and the fix."""
    named = ", ".join(sources)
    return HarnessError(
        f"Spark did not run {where} as Trigger.AvailableNow: source [{named}] does not support "
        'Trigger.AvailableNow, so Spark fell back to single batch execution (its driver log: "Falling back to '
        'single batch execution"), ignoring maxRecordsPerTrigger and, on a restart, running only the uncommitted '
        "batch and stopping. The scenario's batches and replays never happened, so this run shows nothing about "
        f"the connector: {AVAILABLE_NOW_FIX}"
    )


def require_available_now(lines: Iterable[str], where: str) -> None:
    """``HarnessError`` (``fallback_error``) when the driver log ``lines`` show the ``availableNow`` fallback."""
    sources = available_now_fallbacks(lines)
    if sources:
        raise fallback_error(sources, where)


def killed_by_sigkill(returncode: int | None) -> bool:
    """Whether a process's exit status (``Popen.returncode``) says SIGKILL ended it: not one that exited on its own
    between the check that it ran and the kill (its code is then its own), nor one still running (``None``)."""
    return returncode == -signal.SIGKILL


GROUP_GONE_S: Final = 10.0
"""How long a SIGKILLed process group may take to be gone: the kernel ends its processes in well under a second."""


def group_gone(pgid: int, timeout_s: float = GROUP_GONE_S) -> bool:
    """Whether process group ``pgid`` has no process left, waiting at most ``timeout_s`` (a zombie of it left to
    be reaped counts as gone: it runs nothing)."""
    deadline = time.monotonic() + timeout_s
    while True:
        if not _group_alive(pgid):
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.05)  # polling interval of a bounded wait for the kernel to end them


def _group_alive(pgid: int) -> bool:
    for stat in _proc_stats():
        with contextlib.suppress(OSError, ValueError, IndexError):
            fields = stat.rpartition(")")[2].split()
            if int(fields[2]) == pgid and fields[0] not in ("Z", "X"):
                return True
    return False


def _proc_stats() -> Iterable[str]:
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            with contextlib.suppress(OSError), open(f"/proc/{entry}/stat") as stat:
                yield stat.read()


def stopped(pid: int, timeout_s: float = GROUP_GONE_S) -> bool:
    """Whether process ``pid`` is stopped by a signal (``T`` in ``/proc/<pid>/stat``: a SIGSTOP took effect), waiting
    at most ``timeout_s`` for the kernel to stop it."""
    deadline = time.monotonic() + timeout_s
    while True:
        with contextlib.suppress(OSError, IndexError), open(f"/proc/{pid}/stat") as stat:
            if stat.read().rpartition(")")[2].split()[0] == "T":
                return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.05)  # polling interval of a bounded wait for the kernel to stop it


def kill_not_landed(what: str, pgid: int) -> HarnessError:
    """The ERROR of a kill whose process group outlived SIGKILL: its JVM may still write or commit, so what the
    scenario judges after "the kill" is not what a killed driver leaves."""
    return HarnessError(
        f"the kill of {what} did not take effect: processes of its group {pgid} are still running {GROUP_GONE_S:g} s "
        "after SIGKILL (a process that left the group, or one the kernel could not end), so the run shows nothing "
        "about a killed driver; re-run it, and report it if it recurs"
    )


def partitions_missing(found: Mapping[str, Iterable[int]], topic: str, wanted: int) -> str | None:
    """Why ``topic`` does not have ``wanted`` partitions in the metadata ``found`` (topic -> partition ids), or
    ``None`` when it has them (0 to ``wanted - 1``)."""
    have = sorted(found.get(topic, ()))
    if have == list(range(wanted)):
        return None
    shown = "no such topic" if topic not in found else f"partitions {have}"
    return f"the partition add did not take effect: {topic} should have partitions 0-{wanted - 1}, the broker's " \
        f"metadata shows {shown}"  # fmt: skip


def no_transaction_left_open(after: Mapping[Any, tuple[int, int]], settings: Mapping[str, str]) -> str | None:
    """Why a kill inside a sink transaction (a partition's last stable offset below its end, ``after``: partition ->
    (last stable offset, end)) left none open, or ``None`` when one is: the slow-down ``settings`` did not hold the
    sink's transactions open."""
    if any(lso < end for lso, end in after.values()):
        return None
    return (
        f"the kill inside a transaction did not take effect: it left no transaction open ({dict(after)}), so this run "
        f"shows nothing: the sink must pass its client settings {dict(settings)} to its producer unchanged, which "
        "keeps a task's transaction open for seconds"
    )


@contextlib.contextmanager
def injected(what: str) -> Iterator[None]:
    """Run an admin injection (a partition add, a topic deletion, a DeleteRecords), which the suite's client makes
    and waits for until the broker's metadata shows it: a ``KafkaError`` there (refused, or not shown in time) is
    ``HarnessError`` naming ``what``, since the scenario's premise never happened. A feature the broker refuses
    (``UnsupportedFeatureError``) is raised as it is, for the scenario to skip on."""
    try:
        yield
    except UnsupportedFeatureError:
        raise
    except KafkaError as failed:
        message = f"the injection did not take effect: {what} failed ({failed}), so this run shows nothing"
        raise HarnessError(message) from failed


def require_replay(checkpoint: Path, batch: int) -> None:
    """``HarnessError`` unless the checkpoint will make Spark replay ``batch``: its offset-log entry kept, its
    commit-log entry gone (``Pipeline.forget_last_commit``'s simulated crash)."""
    planned = (checkpoint / "offsets" / str(batch)).exists()
    committed = (checkpoint / "commits" / str(batch)).exists()
    if planned and not committed:
        return
    raise HarnessError(
        f"the simulated crash did not take effect: batch {batch} of {checkpoint} has "
        f"{'an' if planned else 'no'} offset-log entry and {'a' if committed else 'no'} commit-log entry, so a restart "
        "replays nothing and this run shows nothing about a replayed batch"
    )
