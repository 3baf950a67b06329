"""What a long test is doing now, in a line of its own words, for the run's heartbeat to show beside the test's
name and elapsed time ("draw 7 of 20"): set by the test, read by ``gate.collector.Heartbeat``, cleared at each
test's start. One process-wide line: the gate runs one test at a time."""

from __future__ import annotations

import threading

_lock = threading.Lock()
_line = ""


def say(line: str) -> None:
    """Show ``line`` as what the running test is doing, until the next ``say`` or ``clear``."""
    global _line
    with _lock:
        _line = line


def now() -> str:
    """The running test's line ("" when it said nothing)."""
    with _lock:
        return _line


def clear() -> None:
    say("")
