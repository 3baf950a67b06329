"""``kconform bench --gate``: the time to a verdict, each part a real ``kconform`` command timed from its start to its
exit, and where its time went, read from the ``report.json`` files it wrote.

The parts (``PARTS``): the protocol level and the pipeline level of what ``make conformance`` runs, one Flink verdict
page's run (as ``make verdicts`` makes it), and the bug bank (``make bugbank``, its releases cached). Each runs as a
child process with a ``--report`` folder of its own under the bench's output folder; its wall time is printed beside
its goal, as every figure of ``kconform bench`` is, and nothing is timed as a test.

The attribution (``attribute``) is a pure function over the reports' data: the pytest phases of each test
(``tests[].phases``), the starts of the fixtures wider than a test (``timings.fixtures``: brokers, SparkSessions, the
Flink harness), the waits the suite records as metrics named ``*_wait_s``, and the run's own start and end. Its shares
add up to the part's wall time.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from datetime import datetime
from pathlib import Path
from typing import IO, Any, Final

from ..adapter.loader import DEFAULT_ADAPTERS
from ..gate.verdicts import DEFAULT_SEED

WAIT_SUFFIX: Final = "_wait_s"
"""A test's metric whose name ends so is a wait the suite knows it makes (DISC-009's discovery interval), in seconds."""
TOP_TESTS: Final = 5
REFERENCE: Final = DEFAULT_ADAPTERS["all"]
"""The adapter ``make conformance`` judges at both levels (its default level is ``all``)."""


@dataclass(frozen=True)
class Part:
    name: str
    title: str
    goal_seconds: float
    goal_source: str
    """Who set the goal: issue 42's done-when, or kconform's own choice."""


PARTS: Final = {
    p.name: p
    for p in (
        Part("protocol", "protocol level (make conformance's), to a verdict", 60.0, "kconform's choice"),
        Part("pipeline", "pipeline level on the reference, to a verdict", 180.0, "issue 42, warm"),
        Part("flink", "a Flink verdict page, one connector line", 300.0, "issue 42"),
        Part("bank", "the bug bank, releases cached", 900.0, "issue 42"),
    )
}
"""The parts in the order they run; the goals are wall seconds from the command's start to its exit."""


@dataclass(frozen=True)
class Selection:
    """What the parts run: ``only`` narrows the ``kconform run`` parts (a test name or requirement id), ``bank_only``
    the bank (a bug's upstream id); a narrowed part is no longer the goal's run, and its figure says so."""

    profile: str = "default"
    seed: int = DEFAULT_SEED
    only: str | None = None
    bank_only: str | None = None
    flink_line: str | None = None
    """The flink-connector-kafka line of the Flink part (default: the newest pinned, as ``make verdicts`` judges)."""

    def narrowed(self, part: str) -> str | None:
        if part == "bank":
            return f"--only {self.bank_only}" if self.bank_only else None
        return f"--only {self.only}" if self.only else None


def part_command(part: str, folder: Path, selection: Selection) -> list[str]:
    """The ``kconform`` command line of a part (without the program), its reports into ``folder``.

    The run parts take the seed given (``kconform verdicts``'s by default) and an example database of their own,
    emptied before the run, so that what runs depends on the seed alone, as on a verdict page."""
    only = ("--only", selection.only) if selection.only else ()
    common = ("--profile", selection.profile, "--seed", str(selection.seed), "--report", str(folder))
    examples = ("--examples", str(folder / "examples"))
    if part in ("protocol", "pipeline"):
        return ["run", "--adapter", REFERENCE, "--level", part, "--broker", "kafka", *common, *examples, *only]
    if part == "flink":
        from ..flink.versions import NEWEST  # the pinned lines; a core install has them too

        line = selection.flink_line or NEWEST
        return ["run", "--flink-connector", line, *common, *examples, *only]
    if part == "bank":
        bank = ("--only", selection.bank_only) if selection.bank_only else ()
        return ["bugbank", "--profile", selection.profile, "--reports", str(folder), *bank]
    raise ValueError(f"no gate part {part!r} (known: {', '.join(PARTS)})")


def parse_parts(text: str) -> list[str]:
    """``protocol,pipeline`` -> the parts in ``PARTS``'s order; ``ValueError`` naming an unknown one."""
    wanted = {p.strip() for p in text.split(",") if p.strip()}
    unknown = sorted(wanted - PARTS.keys())
    if unknown or not wanted:
        raise ValueError(f"unknown gate part {', '.join(unknown) or '(none)'}: choose from {', '.join(PARTS)}")
    return [p for p in PARTS if p in wanted]


# --- where the time goes: pure functions over report.json data -------------------------------------------------


def epoch(iso: str) -> float:
    return datetime.fromisoformat(iso).timestamp()


@dataclass(frozen=True)
class Share:
    label: str
    seconds: float


@dataclass(frozen=True)
class Attribution:
    """Where a part's wall time went, from its reports; ``shares`` add up to ``total``."""

    total: float
    to_first_test: float | None
    """From the part's start to its first test's (``None``: no test ran)."""
    shares: list[Share]
    fixtures: list[tuple[str, int, float]]
    """Each fixture wider than a test, by name: how often it started and the seconds of those starts."""
    waits: dict[str, float]
    """The known waits (metrics ``*_wait_s``) summed by name; empty when the suite recorded none."""
    top_tests: list[tuple[str, float]]
    runs: int
    tests: int = 0
    notes: list[str] = field(default_factory=list)


def _phases(test: Mapping[str, Any]) -> dict[str, float]:
    phases = test.get("phases")
    return dict(phases) if phases else {"call": float(test.get("duration", 0.0))}  # a report from before phases


def attribute(
    reports: Sequence[tuple[str, Mapping[str, Any]]], launched: float, ended: float, outside: str
) -> Attribution:
    """Where the wall time from ``launched`` to ``ended`` (epoch seconds) went, given the ``report.json`` data of every
    ``kconform run`` the part made (``(label, report)``, label naming the run in the top tests: the bank's
    ``bug/release``). ``outside`` names what ran outside every run's suite (process starts and imports; the bank's
    release preparation too).

    Shares: outside the suites (the wall time minus each run's ``started`` to ``finished``); each suite's start to its
    first test (the spec, the adapter, pytest's collection); the fixtures' starts; the rest of the tests' setup; the
    scenarios' own work (pytest's call phase), of which the known waits are a part; teardown (module fixtures
    stopping: brokers, SparkSessions); between tests; after each run's last test (the broker probe's end, the
    summaries). A result with no start (a suite module that does not import) counts in the phases; its seconds, if
    any, come out of the time between tests.
    """
    total = ended - launched
    spans = to_first = after = between = setup = call = teardown = 0.0
    fixtures: dict[str, tuple[int, float]] = {}
    waits: dict[str, float] = {}
    timed: list[tuple[str, float]] = []
    first_test: float | None = None
    tests = 0
    notes: list[str] = []
    for label, report in reports:
        began, finished = epoch(report["started"]), epoch(report["finished"])
        spans += finished - began
        for f in report.get("timings", {}).get("fixtures", []):
            count, seconds = fixtures.get(f["name"], (0, 0.0))
            fixtures[f["name"]] = (count + 1, seconds + float(f["seconds"]))
        ran = report.get("tests", [])
        tests += len(ran)
        starts: list[tuple[float, float]] = []
        for t in ran:
            phases = _phases(t)
            setup += phases.get("setup", 0.0)
            call += phases.get("call", 0.0)
            teardown += phases.get("teardown", 0.0)
            duration = sum(phases.values())
            timed.append((f"{label}: {t['name']}" if label else t["name"], duration))
            for name, value in t.get("metrics", {}).items():
                if name.endswith(WAIT_SUFFIX) and isinstance(value, int | float):
                    waits[name] = waits.get(name, 0.0) + float(value)
            if t.get("started"):
                starts.append((epoch(t["started"]), duration))
        if not starts:
            after += finished - began
            continue
        first = min(s for s, _ in starts)
        last_end = max(s + d for s, d in starts)
        first_test = first if first_test is None else min(first_test, first)
        to_first += first - began
        after += finished - last_end
        between += (last_end - first) - sum(sum(_phases(t).values()) for t in ran)
    if not reports:
        notes.append("no report.json was written: the whole time is outside any suite")
    started_fixtures = sum(s for _, s in fixtures.values())
    shares = [
        Share(outside, total - spans),
        Share("suite start to its first test (spec, adapter, collection)", to_first),
        Share("fixture starts (brokers, SparkSessions, harnesses)", started_fixtures),
        Share("tests' other setup", setup - started_fixtures),
        Share("scenarios' own work (pytest's call phase)", call),
        Share("teardown (fixtures stopping)", teardown),
        Share("between tests", between),
        Share("after the last test (the broker probe's end, summaries)", after),
    ]
    top = sorted(timed, key=lambda t: -t[1])[:TOP_TESTS]
    return Attribution(
        total=total,
        to_first_test=None if first_test is None else first_test - launched,
        shares=shares,
        fixtures=sorted(((n, c, s) for n, (c, s) in fixtures.items()), key=lambda f: -f[2]),
        waits=waits,
        top_tests=top,
        runs=len(reports),
        tests=tests,
        notes=notes,
    )


def readable(seconds: float) -> str:
    """``75.3 s`` below ten minutes, ``12 min 5 s`` from there."""
    if seconds < 600:
        return f"{seconds:.1f} s"
    minutes, rest = divmod(round(seconds), 60)
    return f"{minutes} min {rest} s"


def render(attribution: Attribution) -> list[str]:
    """The attribution as indented lines under the part's figure."""
    a = attribution
    lines = [f"  {a.runs} kconform run{'s' * (a.runs != 1)}, {a.tests} tests; where the {readable(a.total)} went:"]
    if a.to_first_test is not None:
        lines.append(f"    {'process start to the first test':<58} {readable(a.to_first_test):>12}")
    for share in a.shares:
        if abs(share.seconds) >= 0.05:
            lines.append(f"    {share.label:<58} {readable(share.seconds):>12}  {share.seconds / a.total:6.1%}")
        if share.label.startswith("fixture starts"):
            lines += [
                f"      {name} x{count}".ljust(62) + f" {readable(s):>12}" for name, count, s in a.fixtures if s >= 0.05
            ]
        if share.label.startswith("scenarios'"):
            if a.waits:
                known = ", ".join(f"{n} {readable(s)}" for n, s in sorted(a.waits.items()))
                lines.append(f"      of which known waits: {readable(sum(a.waits.values()))} ({known})")
            else:
                lines.append("      of which known waits: none recorded (no *_wait_s metric)")
    if a.top_tests:
        lines.append("    longest tests:")
        lines += [f"      {readable(s):>12}  {name}" for name, s in a.top_tests]
    lines += [f"    note: {n}" for n in a.notes]
    return lines


def attribution_json(attribution: Attribution) -> dict[str, Any]:
    return asdict(attribution)


def reports_of(part: str, folder: Path) -> list[tuple[str, dict[str, Any]]]:
    """Every ``report.json`` a part wrote: the run's own, or the bank's ``<bug>/<release>/report.json``, labelled."""
    found = [folder / "report.json"] if part != "bank" else sorted(folder.glob("*/*/report.json"))
    reports = []
    for path in found:
        try:
            loaded = json.loads(path.read_text())
        except (OSError, json.JSONDecodeError):
            continue
        label = "" if part != "bank" else f"{path.parent.parent.name}/{path.parent.name}"
        reports.append((label, loaded))
    return reports


# --- running the parts -------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PartRun:
    part: str
    command: list[str]
    seconds: float
    exit_code: int | None
    """``None``: stopped at its bound."""
    folder: Path
    attribution: Attribution


def part_bound(part: str) -> float:
    """How long a part may run before it is stopped: four times its goal, at least 15 minutes."""
    return max(4 * PARTS[part].goal_seconds, 900.0)


def run_part(part: str, folder: Path, selection: Selection, out: IO[str], bound: float | None = None) -> PartRun:
    """Run one part as a child process (its output to ``folder/bench.log`` and, prefixed, to ``out``), timed from
    its start to its exit; stopped at ``bound`` seconds (default ``part_bound``)."""
    shutil.rmtree(folder, ignore_errors=True)  # an earlier run's reports would be read as this one's
    folder.mkdir(parents=True)
    command = part_command(part, folder, selection)
    print(f"[{part}] kconform {' '.join(command)}", file=out, flush=True)
    child = [sys.executable, "-m", "kconform.conformance.cli", *command]
    limit = part_bound(part) if bound is None else bound
    launched, ended, code = timed_child(child, folder / "bench.log", out, f"[{part}] ", limit)
    outside = "outside the suites (process starts, imports, reports)"
    if part == "bank":
        outside = "outside the runs (releases made ready, process starts)"
    attribution = attribute(reports_of(part, folder), launched, ended, outside)
    return PartRun(part, command, ended - launched, code, folder, attribution)


STOP_GRACE_S: Final = 30.0
"""How long a stopped child's processes get after SIGTERM, before SIGKILL."""


def timed_child(
    argv: Sequence[str], log_path: Path, out: IO[str], prefix: str, bound: float
) -> tuple[float, float, int | None]:
    """Run ``argv`` in a session of its own (its brokers, JVMs and Spark with it), its output copied to ``log_path``
    and, each line after ``prefix``, to ``out``: its start and end (epoch seconds) and exit code, ``None`` when it
    was stopped at ``bound`` seconds. A SIGTERM or SIGINT to this process (a CI's ``timeout``, a Ctrl-C, which reach
    only this process group) stops the child's whole session before this process ends."""
    with log_path.open("w") as log:
        launched = time.time()
        process = subprocess.Popen(
            argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True, env=os.environ
        )
        assert process.stdout is not None
        copier = threading.Thread(target=_copy, args=(process.stdout, log, out, prefix), daemon=True)
        copier.start()

        def forward(signum: int, _frame: object) -> None:
            stop(process, signum)
            raise SystemExit(128 + signum)

        main = threading.current_thread() is threading.main_thread()  # only the main thread may set handlers
        previous = {s: signal.signal(s, forward) for s in (signal.SIGTERM, signal.SIGINT)} if main else {}
        code: int | None
        try:
            code = process.wait(timeout=bound)
        except subprocess.TimeoutExpired:
            stop(process, signal.SIGTERM)
            code = None
        finally:
            for s, handler in previous.items():
                signal.signal(s, handler)
        ended = time.time()
        copier.join(timeout=10)
    return launched, ended, code


def stop(process: subprocess.Popen[str], signum: int) -> None:
    """Send ``signum`` to the child's session, then SIGKILL what is left after ``STOP_GRACE_S``."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signum)
    try:
        process.wait(timeout=STOP_GRACE_S)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=STOP_GRACE_S)


def _copy(source: IO[str], log: IO[str], out: IO[str], prefix: str) -> None:
    for line in source:
        log.write(line)
        print(prefix + line.rstrip("\n"), file=out, flush=True)


def run_gate(
    parts: Iterable[str],
    folder: Path,
    selection: Selection,
    out: IO[str],
    runner: Callable[[str, Path, Selection, IO[str]], PartRun] | None = None,
) -> list[PartRun]:
    """Each part in turn (``runner``: ``run_part``), its reports in ``folder/<part>``."""
    run = runner or run_part
    return [run(part, folder / part, selection, out) for part in parts]


def outcome(run: PartRun) -> str:
    """What the part's command ended with, beside its figure: a verdict's exit (0 or 1) is a verdict reached."""
    if run.exit_code is None:
        return f"stopped at its bound ({readable(part_bound(run.part))}): no verdict"
    meaning = {0: "verdict reached, as expected", 1: "verdict reached, with a violation", 2: "usage error"}
    return f"exit {run.exit_code}: " + meaning.get(run.exit_code, "could not check (ERROR)")


def gate_json(runs: Sequence[PartRun], selection: Selection) -> list[dict[str, Any]]:
    return [
        {
            "part": r.part,
            "command": ["kconform", *r.command],
            "seconds": round(r.seconds, 3),
            "goal_seconds": PARTS[r.part].goal_seconds,
            "goal_source": PARTS[r.part].goal_source,
            "narrowed": selection.narrowed(r.part),
            "exit_code": r.exit_code,
            "reports": str(r.folder),
            "attribution": attribution_json(r.attribution),
        }
        for r in runs
    ]
