"""LIVE-001: the connector recovers and gets on (spec/liveness.md).

Pure functions over what the run saw of a failure: a query's error (its type, message and first frames, taken
from the exception by ``kconform run``) or a call that did not return. They decide liveness, never safety: the
records a stopped query never read are not reported as lost.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Final

from .checkers import Violation

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
