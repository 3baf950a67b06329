"""Every text kconform writes (console, reports, saved schedules, log tails) passes ``redact`` on its way out.

``Secret`` keeps credentials out of messages built from configs; this is the guard for text that got a
credential some other way (a client's own error, a JAAS line, a JVM's log), at the few places text leaves.
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import IO

from ..reference_impl.credentials import redact


def write_text(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` (UTF-8) with every known secret replaced."""
    path.write_text(redact(text), encoding="utf-8")


class RedactingStream(io.TextIOBase):
    """A text stream that writes to ``out`` with every known secret replaced; console output goes through one."""

    def __init__(self, out: IO[str]) -> None:
        super().__init__()
        self._out = out

    def write(self, text: str) -> int:
        self._out.write(redact(text))
        return len(text)

    def flush(self) -> None:
        self._out.flush()

    def fileno(self) -> int:
        return self._out.fileno()

    def isatty(self) -> bool:
        return self._out.isatty()

    def close(self) -> None:
        """The wrapped stream belongs to whoever gave it (``sys.stdout``): it stays open."""
        self.flush()


def redacting(out: IO[str]) -> IO[str]:
    """``out`` behind a ``RedactingStream`` (once: a stream already wrapped is returned as is)."""
    if isinstance(out, RedactingStream):
        return out
    return RedactingStream(out)  # type: ignore[return-value]  # a TextIOBase is an IO[str] in all but name
