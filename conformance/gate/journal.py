"""What a supervised ``kconform run`` has done so far, kept on disk so that a run survives the death of the process
that runs its suite (``supervisor``).

The process running the suite appends a record when a test starts and its result when it ends; the supervisor adds
a record for each death of that process (the signal and what Python's faulthandler wrote). A process started after
a death reads the journal back: the tests that ended keep their results, the test that was running when the process
died is ERROR naming the signal, and the rest run on. One folder a run, gone when the run ends.
"""

from __future__ import annotations

import json
import os
import pickle
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Final

from .results import CrashRecord, FixtureStart, Status, TestResult
from .supervisor import CRASH_LOG, CRASHES, GIVE_UP_ENV, JOURNAL_ENV, Crash

RECORDS: Final = "records.pickle"
"""Pickled records, appended: the seed, then a stub when each test starts and its result when it ends, and which
test each death interrupted once a later process has judged it so."""
FIRST_FRAMES: Final = 3
"""How many of the crashing thread's innermost frames a crash's ERROR message and its record in the report name."""


@dataclass
class Journal:
    folder: Path
    seed: int | None = None
    started_at: float | None = None
    finished: list[TestResult] = field(default_factory=list)
    """The results of the tests that ended, in the order they ended."""
    running: list[TestResult] = field(default_factory=list)
    """Tests that started and never ended (each an ERROR stub): the process died while they ran."""
    crashes: list[Crash] = field(default_factory=list)
    interrupted: dict[int, TestResult] = field(default_factory=dict)
    """The pid of each dead process -> the test it was running when it died, as a later process recorded it."""
    fixtures: list[FixtureStart] = field(default_factory=list)
    """Every start of a fixture wider than a test, by every process of the run, in order."""

    @classmethod
    def from_environment(cls) -> Journal | None:
        folder = os.environ.get(JOURNAL_ENV)
        return cls.read(Path(folder)) if folder else None

    @classmethod
    def read(cls, folder: Path) -> Journal:
        journal = cls(folder)
        ended: dict[str, TestResult] = {}
        started: dict[str, TestResult] = {}
        for kind, value in _records(folder / RECORDS):
            if kind == "seed" and isinstance(value, tuple):
                journal.seed, journal.started_at = value
            elif kind == "started" and isinstance(value, TestResult):
                started[value.nodeid] = value
            elif kind == "finished" and isinstance(value, TestResult):
                ended[value.nodeid] = value
                journal.finished.append(value)
            elif kind == "fixture" and isinstance(value, FixtureStart):
                journal.fixtures.append(value)
            elif kind == "interrupted" and isinstance(value, tuple):
                pid, stub = value
                journal.interrupted[pid] = stub
        journal.running = [stub for nodeid, stub in started.items() if nodeid not in ended]
        crashes = folder / CRASHES
        if crashes.exists():
            journal.crashes = [Crash(**c) for c in json.loads(crashes.read_text())]
        return journal

    @property
    def resumed(self) -> bool:
        return bool(self.crashes)

    @property
    def give_up(self) -> bool:
        return bool(os.environ.get(GIVE_UP_ENV))

    @property
    def crash_log(self) -> Path:
        return self.folder / CRASH_LOG

    def seen(self) -> set[str]:
        """The node ids of every test a process of this run started: none of them runs again."""
        return {t.nodeid for t in self.finished} | {t.nodeid for t in self.running}

    def deaths(self) -> list[tuple[TestResult, Crash]]:
        """Each test that was running when a process died with that death (the newest crash goes with the test that
        started last), among the tests no process has ended yet."""
        return list(reversed(list(zip(reversed(self.running), reversed(self.crashes), strict=False))))

    def crashed_results(self) -> list[TestResult]:
        """An ERROR for each test that was running when the process died, naming the death (``deaths``)."""
        results = []
        for stub, crash in self.deaths():
            first_frames = _first_frames(crash.stacks)
            results.append(
                replace(
                    stub,
                    status=Status.ERROR,
                    message=f"{crash.cause()} while this test ran, so nothing was judged; the run went on with the "
                    f"other tests, and --report's {CRASH_LOG} holds the stacks Python's faulthandler wrote"
                    + (f" (first frames: {first_frames})" if first_frames else ""),
                    longrepr=crash.stacks or f"{crash.cause()}; faulthandler wrote nothing (a signal it cannot catch)",
                )
            )
        return results

    def record_interrupted(self, crash: Crash, stub: TestResult) -> None:
        """That ``crash`` killed the process while ``stub``'s test ran, so that the report's crash record names it."""
        self.interrupted[crash.pid] = stub
        self._append(("interrupted", (crash.pid, stub)))

    def crash_records(self) -> list[CrashRecord]:
        """Every death of the run's processes as data, in order, with the test it interrupted (None: it died
        outside a test) and the crashing thread's first frames."""
        return [
            CrashRecord(
                pid=crash.pid,
                signal=crash.signal,
                signal_name=crash.signal_name,
                test=stub.nodeid if (stub := self.interrupted.get(crash.pid)) else None,
                test_name=stub.name if stub else None,
                first_frames=frames(crash.stacks),
            )
            for crash in self.crashes
        ]

    def record_seed(self, seed: int, started_at: float) -> None:
        self._append(("seed", (seed, started_at)))

    def record_start(self, stub: TestResult) -> None:
        self._append(("started", stub))

    def record_end(self, result: TestResult) -> None:
        self._append(("finished", result))

    def record_fixture(self, start: FixtureStart) -> None:
        self._append(("fixture", start))

    def _append(self, record: tuple[str, object]) -> None:
        with open(self.folder / RECORDS, "ab") as out:
            pickle.dump(record, out)
            out.flush()
            os.fsync(out.fileno())


def _records(path: Path) -> Iterator[tuple[str, object]]:
    """The journal's records in order; a record cut short by the death it was being written in is dropped, and cut
    from the file, so that what this process appends after it is read back by the next one."""
    if not path.exists():
        return
    with open(path, "r+b") as records:
        while True:
            good = records.tell()
            try:
                yield pickle.load(records)
            except (EOFError, pickle.UnpicklingError, AttributeError, ValueError, IndexError):
                records.truncate(good)  # at the end of a whole journal, nothing to cut
                return


def frames(stacks: str, count: int = FIRST_FRAMES) -> list[str]:
    """The innermost frames of the crashing thread as faulthandler prints them (``File "...", line N in f``)."""
    found: list[str] = []
    in_current = False
    for line in stacks.splitlines():
        if line.startswith("Current thread") or line.startswith("Fatal Python error"):
            in_current = line.startswith("Current thread")
            continue
        if in_current and line.strip().startswith("File "):
            found.append(line.strip())
        elif in_current and not line.strip():
            break
    return found[:count]


def _first_frames(stacks: str, count: int = FIRST_FRAMES) -> str:
    return "; ".join(frames(stacks, count))
