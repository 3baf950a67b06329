"""``kconform run`` from the command line: the suite runs in a child process, so that no run ends without a report.

The judged code runs inside the process that runs the suite (a connector's driver side, librdkafka, the py4j
gateway), and native code can kill it: a segmentation fault would end the run with no report and no reason. Here
the command starts that process with a journal (``journal``) and Python's faulthandler writing every thread's stack
to the journal's crash log. If the process dies of a crash signal, the test it was running is ERROR naming the
signal and its first frames, the processes it started (a Kafka broker, Spark's JVM) are stopped, and a new process
runs the tests left, up to ``MAX_CRASHES`` deaths; the last one writes every report. A process that ends by itself
(any exit code) ends the command with its code. ``run_command.main`` called in-process is not supervised.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import Final

JOURNAL_ENV: Final = "KCONFORM_JOURNAL"
"""The journal's folder: set by the supervisor for the process it starts (and passed on to a run at another Spark
release), so that process records what it does and does not supervise again."""
GIVE_UP_ENV: Final = "KCONFORM_JOURNAL_GIVE_UP"
"""Set when the suite's process died too often: the next one runs no test and reports those left as ERROR."""
CRASHES: Final = "crashes.json"
CRASH_LOG: Final = "crash.log"
"""Python's faulthandler writes each crash's native and Python stacks here (all threads)."""


MAX_CRASHES: Final = 3
"""Deaths after which the tests left are not run: each is ERROR naming the crashes."""
CRASH_SIGNALS: Final = frozenset(
    {signal.SIGSEGV, signal.SIGBUS, signal.SIGFPE, signal.SIGILL, signal.SIGABRT, signal.SIGKILL}
)
"""Deaths the run goes on after (SIGKILL: the kernel's out-of-memory killer). Any other signal (a Ctrl-C, a CI's
SIGTERM) ends the command as it ended the process."""
ORPHAN_GRACE_S: Final = 10.0
"""How long the processes a dead suite process left get to stop after SIGTERM, before SIGKILL."""
PR_SET_CHILD_SUBREAPER: Final = 36
PR_SET_PDEATHSIG: Final = 1
DIED: Final = "the process running the suite"
"""How the message of every test a crash left unjudged starts its account of the death (``Crash.cause``)."""


def needed() -> bool:
    """Whether ``kconform run`` should start a supervised child: not in that child (nor in the run at another Spark
    release it starts, which inherits the journal). ``--help`` and usage errors never get this far: the command line
    (``cli.Supervised``) parses the line with the verb's own parser first."""
    return not os.environ.get(JOURNAL_ENV)


def main(argv: Sequence[str]) -> int:
    """``kconform run argv`` in a supervised child, with a journal folder for the run that is gone after it."""
    folder = Path(tempfile.mkdtemp(prefix="kconform-journal-"))
    try:
        return supervise(list(argv), folder)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def supervise(argv: list[str], folder: Path, python: str = sys.executable) -> int:
    """Run ``kconform run argv`` in children until one ends by itself; each crash is journalled and the rest goes on."""
    _become_subreaper()
    crashes = 0
    while True:
        log = folder / CRASH_LOG
        written = log.stat().st_size if log.exists() else 0
        env = os.environ | {JOURNAL_ENV: str(folder)}
        if crashes >= MAX_CRASHES:
            env[GIVE_UP_ENV] = "1"
        child = subprocess.Popen(
            [python, "-m", "kconform.conformance.cli", "run", *argv], env=env, preexec_fn=_dies_with_parent
        )
        with _forwarding(child):
            code = child.wait()
        _stop_orphans()
        if code >= 0:
            return code
        died_of = -code
        if died_of not in CRASH_SIGNALS or crashes >= MAX_CRASHES:
            print(f"kconform run: the process running the suite died of {_name(died_of)}", file=sys.stderr)
            return 128 + died_of
        crashes += 1
        stacks = log.read_bytes()[written:].decode(errors="replace") if log.exists() else ""
        crash = Crash(died_of, child.pid, stacks)
        record_crash(folder, crash)
        print(
            f"kconform run: {crash.cause()}; its stacks follow, the test it ran is ERROR, and the run goes on "
            f"with the tests left (crash {crashes} of at most {MAX_CRASHES})\n{stacks.rstrip()}",
            file=sys.stderr,
            flush=True,
        )


@contextlib.contextmanager
def _forwarding(child: subprocess.Popen[bytes]) -> Iterator[None]:
    """While the child runs: a Ctrl-C reaches it from the terminal (its process group is this one's), so this
    process ignores it and waits for the child's report; a SIGTERM or SIGHUP sent to this process is passed on."""

    def forward(signum: int, _frame: FrameType | None) -> None:
        with contextlib.suppress(ProcessLookupError):
            child.send_signal(signum)

    previous = {s: signal.signal(s, forward) for s in (signal.SIGTERM, signal.SIGHUP)}
    previous[signal.SIGINT] = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


def _dies_with_parent() -> None:
    """In the child, before it runs: SIGTERM when this process dies (a CI job's or a test's SIGKILL of the command),
    so that the suite does not run on unwatched; the brokers it starts die with it (``dies_with_parent``)."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)


def _become_subreaper() -> None:
    """Processes the dead child started (a broker, Spark's JVM) become this process's children, so that they can be
    stopped; without prctl (not Linux) they are left to the operating system."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)


def _children() -> list[int]:
    """This process's children as /proc lists them (orphans it adopted as a subreaper among them)."""
    me = os.getpid()
    found = []
    for entry in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = entry.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[1]) == me:
            found.append(int(entry.parent.name))
    return found


def _stop_orphans() -> None:
    """SIGTERM every process the child left behind, SIGKILL what still runs ``ORPHAN_GRACE_S`` later, and reap them."""
    exits: dict[int, int] = {}
    for pid in _children():
        with contextlib.suppress(ProcessLookupError):
            exits[pid] = os.pidfd_open(pid)  # readable once the process has ended
            os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + ORPHAN_GRACE_S
    try:
        for pid, ended in exits.items():
            if not select.select([ended], [], [], max(0.0, deadline - time.monotonic()))[0]:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, 0)
    finally:
        for fd in exits.values():
            os.close(fd)


def _name(signum: int) -> str:
    try:
        return signal.Signals(signum).name
    except ValueError:
        return f"signal {signum}"


@dataclass(frozen=True)
class Crash:
    """One death of the process running the suite."""

    signal: int
    pid: int
    stacks: str
    """What faulthandler wrote as it died (empty for a signal it does not handle, e.g. SIGKILL)."""

    @property
    def signal_name(self) -> str:
        try:
            return signal.Signals(self.signal).name
        except ValueError:
            return f"signal {self.signal}"

    def cause(self) -> str:
        return f"{DIED} (pid {self.pid}) died of {self.signal_name} (signal {self.signal})"


def record_crash(folder: Path, crash: Crash) -> None:
    """The supervisor's record of a death (it never reads results: pickles are the suite process's business)."""
    path = folder / CRASHES
    crashes = json.loads(path.read_text()) if path.exists() else []
    crashes.append({"signal": crash.signal, "pid": crash.pid, "stacks": crash.stacks})
    path.write_text(json.dumps(crashes))
