"""LIVE-001: the connector recovers and gets on (spec/liveness.md).

Pure functions over what the run saw of a failure: a query's error (its type, message and first frames, taken
from the exception by ``kconform run``) or a call that did not return. They decide liveness, never safety: the
records a stopped query never read are not reported as lost.
"""

from __future__ import annotations

import json
import re
import signal
from collections.abc import Collection, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Final

from ...reference_impl.types import TopicPartition
from .checkers import Violation
from .pipeline_checkers import ReadRecord, check_read_once, ends_read, last_line_of

FRAMES_SHOWN = 5
"""First frames of an exception kept as evidence."""


@dataclass(frozen=True)
class Failure:
    """An exception as evidence: its type, its message (first line) and its first frames, innermost last."""

    type: str
    message: str
    frames: Sequence[str] = field(default_factory=tuple)
    cause: str = ""
    """The innermost cause the engine names (e.g. the JVM's ``java.lang.NullPointerException: ...``)."""


def check_query_ran(failure: Failure | None, where: str) -> list[Violation]:
    """LIVE-001: a query a scenario ran to its end (``where`` names the test) did not fail of its own accord."""
    if failure is None:
        return []
    because = f" (caused by {failure.cause})" if failure.cause else ""
    return [
        Violation(
            "LIVE-001",
            "query-failed",
            f"a query {where} ran to its end failed: {failure.type}: {failure.message}{because}",
            data={
                "exception": failure.type,
                "message": failure.message,
                "cause": failure.cause or None,
                "frames": list(failure.frames[:FRAMES_SHOWN]),
            },
        )
    ]


def check_restarted_reads(
    failure: Failure | None,
    where: str,
    records: Sequence[ReadRecord],
    ends: Mapping[TopicPartition, int],
    requirements: Mapping[str, Collection[int]],
) -> list[Violation]:
    """A query restarted on its checkpoint (``where`` names it for ``check_query_ran``) and its reads, first run
    and restart together (a replayed batch once): LIVE-001 if it failed (``failure``), then each partition read
    once below its end, under the id ``requirements`` gives its partition number (RESTORE-003 for those the
    checkpoint held, RESTORE-004 for one added since). A query that failed is judged only up to what it read
    (``ends_read``): the records it never got to are not lost, it stopped; those ids stay not verified."""
    judged = ends if failure is None else ends_read(records)
    out = check_query_ran(failure, where)
    for requirement, partitions in requirements.items():
        part = {tp: end for tp, end in judged.items() if tp.partition in partitions}
        out += check_read_once([r for r in records if r.tp in part], part, requirement=requirement)
    return out


DRIVER_FAILED_LINE: Final = "kconform driver: query failed: "
"""Starts the line on which a driver process records its query's failure (``Failure`` as JSON) before it exits."""


def failure_line(failure: Failure) -> str:
    """The line a driver prints for its query's failure, which ``driver_failure`` reads back from its log."""
    return DRIVER_FAILED_LINE + json.dumps(asdict(failure))


def driver_failure(log: str) -> Failure | None:
    """The last query failure a driver recorded in ``log`` (its output), if any."""
    lines = [line for line in log.splitlines() if line.startswith(DRIVER_FAILED_LINE)]
    if not lines:
        return None
    found = json.loads(lines[-1].removeprefix(DRIVER_FAILED_LINE))
    return Failure(found["type"], found["message"], tuple(found["frames"]), found["cause"])


def check_driver_exit(returncode: int | None, driver: str, log: str) -> list[Violation]:
    """LIVE-001 in a scenario that runs a query in a driver process (``driver`` names it: "the restarted driver"):
    the driver ends only by the scenario's kill (which its caller does not judge) or at the end of its input
    (``returncode`` ``None`` while it runs, 0 at its end). One that exits otherwise failed of its own accord: a
    query failure it recorded in its ``log`` (the driver's output since it started) is ``check_query_ran``'s
    ``query-failed``, any other exit ``driver-failed`` with the log's last line. The records it never got to
    deliver are not lost: it stopped, it did not drop them (the caller judges no output after such an exit)."""
    if returncode is None or returncode == 0:
        return []
    failure = driver_failure(log)
    if failure is not None:
        return check_query_ran(failure, f"that {driver}")
    how = f"exit {returncode}" if returncode > 0 else f"signal {signal_name(-returncode)}"
    error = last_line_of(log)
    return [
        Violation(
            "LIVE-001",
            "driver-failed",
            f"{driver} failed of its own accord ({how}): {error or '(it printed nothing)'}",
            data={"driver": driver, "returncode": returncode, "error": error},
        )
    ]


FLINK_JOB_ENDED: Final = re.compile(
    r"^(java\.lang\.IllegalStateException: the job ended|\S+JobExecutionException: Job execution failed)"
)
"""The first line of the stack trace the Flink harness prints when the job it ran failed (``FlinkHarness``: the job
ended before its stop, or a bounded job's result was a failure), as opposed to a fault of the harness itself."""
FLINK_WRAPPERS: Final = (
    "org.apache.flink.runtime.",
    "java.util.concurrent.",
    "java.lang.IllegalStateException: the job ended",
)
"""Exceptions of Flink's runtime and of the harness that wrap a job's failure: the connector's own is below them."""


def flink_job_failure(stderr: str) -> Failure | None:
    """The failure of the Flink job a harness run reports on ``stderr``, or ``None`` when the harness failed of its
    own (no job failure printed). Evidence is the first exception of the printed chain that is neither Flink's
    runtime nor the harness's wrapper (the connector's, with its first frames), and the chain's innermost cause."""
    lines = stderr.splitlines()
    starts = [k for k, line in enumerate(lines) if FLINK_JOB_ENDED.match(line)]
    if not starts:
        return None
    chain: list[tuple[str, list[str]]] = []
    for line in lines[starts[-1] :]:
        if line.startswith("\tat ") and chain:
            chain[-1][1].append(line.strip().removeprefix("at "))
        elif line.startswith("Caused by: ") or not chain:
            chain.append((line.removeprefix("Caused by: ").strip(), []))
        elif not line.startswith("\t"):
            break  # the trace ended: what follows is another print
    own = next((c for c in chain if not c[0].startswith(FLINK_WRAPPERS)), chain[-1])
    if ": kconform: " in own[0]:
        return None  # the harness's own injected failure ended the job (its restarts used up): not the connector's
    kind, _, message = own[0].partition(": ")
    innermost = chain[-1][0]
    return Failure(kind, message, tuple(own[1][:FRAMES_SHOWN]), innermost if innermost != own[0] else "")


def signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return str(number)


def check_call_returned(method: str | None, running: str, timeout_s: float, broker_answers: bool | None) -> list[
    Violation
]:  # fmt: skip
    """LIVE-001: no call into the connector was still running at ``--timeout`` (``method``: the innermost adapter
    method still running, ``None`` when no call was under way). At the pipeline level a hang counts only while the
    broker still answers (``broker_answers``; ``None`` at the protocol level, which has none): a stopped broker
    would hang a correct connector too, so that is could-not-check, not a violation."""
    if method is None or broker_answers is False:
        return []
    return [
        Violation(
            "LIVE-001",
            "hang",
            f"{method} did not return within --timeout {timeout_s:g}s (still running: {running})"
            + ("; the broker still answered" if broker_answers else "")
            + "; raise --timeout if it is only slow",
            data={"method": method, "running": running, "timeout_s": timeout_s, "broker_answers": broker_answers},
        )
    ]


def linked_errors(error: BaseException) -> Iterator[BaseException]:
    """``error``, then every exception it groups or was raised from or during, each once."""
    seen: set[int] = set()
    stack = [error]
    while stack:
        found = stack.pop()
        if id(found) in seen:
            continue
        seen.add(id(found))
        yield found
        if isinstance(found, BaseExceptionGroup):
            stack.extend(found.exceptions)
        stack.extend(linked for linked in (found.__cause__, found.__context__) if linked is not None)


QUERY_FAILED: Final = "StreamingQueryException"
"""The exception a Spark query's ``awaitTermination`` raises when the query failed (PySpark's, by name: the gate does
not import pyspark)."""
JVM_FRAME = re.compile(r"^\s*at (\S+)", re.MULTILINE)
JVM_CAUSE = re.compile(r"^Caused by: (.+)$", re.MULTILINE)


def query_failure(exc: BaseException) -> Failure | None:
    """A failed Spark query among ``exc`` and the exceptions it groups or was raised from, as evidence: its
    message's first line, the innermost JVM cause and that cause's first frames."""
    failed = next((e for e in linked_errors(exc) if any(c.__name__ == QUERY_FAILED for c in type(e).__mro__)), None)
    if failed is None:
        return None
    trace = str(getattr(failed, "_stackTrace", None) or "")
    text = str(failed)
    causes = JVM_CAUSE.findall(trace) or JVM_CAUSE.findall(text)
    cause = causes[-1].strip() if causes else ""
    inner = trace.rsplit("Caused by:", 1)[-1] if causes else trace
    first = next((line.strip() for line in text.splitlines() if line.strip()), type(failed).__name__)
    return Failure(type(failed).__name__, first, tuple(JVM_FRAME.findall(inner)[:FRAMES_SHOWN]), cause)
