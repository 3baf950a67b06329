"""``kconform bugbank``: run each bug of the catalogue on its buggy and its fixed release and judge it.

The thin shell around the pure catalogue, verdict and page modules: it makes each release ready
through its component (resolved, built, cached), runs ``kconform run`` on it in a child process with
the bug's selection and a fixed seed, reads the run's ``report.json``, prints progress and K/N, and
writes the generated page when asked.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from importlib.resources import files
from pathlib import Path
from typing import Any, Final

from ..jvm import JvmArtifactsMissing
from ..jvm.setup import SetupError
from ..spec_tools.requirements import SpecNotFoundError, load_requirements
from .catalogue import SHIPPED, Bug, CatalogueError, parse_catalogue
from .components import COMPONENTS
from .page import render_page, replay_command
from .verdict import Judgement, Outcome, Verdict, judge, outcome_of_report

RUN_TIMEOUT_S: Final = 1800
"""Longest one release's run may take (the pipeline level on a slow machine included)."""
EXAMPLES: Final = "examples"
"""The folder beside a run's report that holds its own Hypothesis example database."""

Say = Callable[[str], None]
RunRelease = Callable[[Bug, str], Outcome]


def bank(bugs: Sequence[Bug], run: RunRelease, say: Say) -> list[tuple[Bug, Judgement]]:
    """Each bug's verdict: one the catalogue says cannot run here is *could not run*, with its reason, without a run."""
    results = []
    for n, bug in enumerate(bugs, 1):
        say(f"[{n}/{len(bugs)}] {bug.id} ({bug.component} {bug.buggy} -> {bug.fixed}, {', '.join(bug.requirements)})")
        if bug.could_not_run is not None:
            judgement = Judgement(Verdict.COULD_NOT_RUN, bug.could_not_run)
        else:
            judgement = judge(bug.category, bug.requirements, run(bug, bug.buggy), run(bug, bug.fixed))
        say(f"  {judgement.verdict}: {judgement.reason}")
        results.append((bug, judgement))
    return results


def exit_code(results: Sequence[tuple[Bug, Judgement]]) -> int:
    """1 when a bug is missed, caught off target or a false alarm; else 3 when one could not run; else 0."""
    verdicts = {j.verdict for _, j in results}
    if verdicts & {Verdict.MISSED, Verdict.OFF_TARGET, Verdict.FALSE_ALARM}:
        return 1
    return 3 if Verdict.COULD_NOT_RUN in verdicts else 0


def run_command(bug: Bug, adapter: str, profile: str, seed: int, report: Path, release: str | None = None) -> list[str]:
    """``kconform run`` on the bug's selection of the suite, with an example database of its own (``examples``
    beside its report, emptied before each run): the adapter's shared one replays examples earlier runs saved
    first, the buggy release's failing one on the fixed release included, so a verdict would depend on what ran
    before it and not on the seed alone. ``release`` (default: the fixed one) decides which kinds it tolerates
    (``Bug.tolerated_in``)."""
    return [
        *("kconform", "run", "--adapter", adapter, "--level", bug.level, "--only", bug.only),
        *("--profile", profile, "--seed", str(seed), "--report", str(report)),
        *("--examples", str(report / EXAMPLES)),
        *(("--workload-draws", str(bug.draws)) if bug.draws is not None else ()),
        *(("--expectations", str(report / TOLERATED)) if bug.tolerated_in(release or bug.fixed) else ()),
    ]


TOLERATED: Final = "tolerated.toml"
"""Beside a run's report: the expectations file of the kinds of violation its entry tolerates in the run of that
release (``Bug.tolerated_in``)."""
CRASH_RETRIES: Final = 1
"""How often a run that died of a signal without a report is run again: a crash leaves no evidence either way."""


def died_without_evidence(returncode: int, report: dict[str, Any] | None) -> bool:
    """A run whose suite process a signal killed (an old client's native crash): before it wrote its report, or
    with crashes in it (``kconform run`` goes on after a crash, its report's ``crashes`` listing each, the test
    it ran ERROR): not a verdict."""
    if report is None:
        return returncode < 0
    return bool(report.get("crashes"))


def _report(path: Path) -> dict[str, Any] | None:
    try:
        found: dict[str, Any] = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError):
        return None
    return found


RunKey = tuple[str, str, str, str, int | None, frozenset[tuple[str, str]]]
SHARED: Final = "shared-run.txt"
"""In a release's report folder, when an earlier entry's run of the same release was the same run: where it is."""


def run_key(bug: Bug, release: str) -> RunKey:
    """What decides a release's run, the profile and seed of the bank aside: the component and release, the
    selection (level, only), the draws and the kinds the run tolerates (not the entry that tolerates them, which
    only the reasons of the expectations file name). Two entries with the same key ask for the same run, such as
    two bugs fixed in one release and judged by one workload (KAFKA-9279 and KAFKA-14024 on kafka-clients 3.2.1)."""
    tolerated = frozenset((requirement, kind) for requirement, kind, _, _ in bug.tolerated_in(release))
    return (bug.component, release, bug.level, bug.only, bug.draws, tolerated)


def _said(outcome: Outcome) -> str:
    """A release's run in the bank's progress line: why it could not check, ``FAIL: <what it reads>`` or ``PASS``."""
    return outcome.problem or (f"FAIL: {outcome.reads()}" if outcome.failed else "PASS")


def release_runner(profile: str, seed: int, reports: Path, say: Say) -> RunRelease:
    """Runs one release of a bug in a child ``kconform run`` and reads back its report.

    The child's output is kept beside its report (``run.log``, with Python's fault handler on, so a native
    crash shows where it happened); a run that died of a signal without a report is run once more, and says so.
    A run an earlier entry already ran (the same ``run_key``) is not run again: its outcome is reused, and the
    entry's report folder holds ``shared-run.txt`` naming the report it rests on. A run that ended in a problem
    (not made ready, timed out, no report) is never reused.
    """
    done_runs: dict[RunKey, tuple[Path, Outcome]] = {}

    def run(bug: Bug, release: str) -> Outcome:
        key = run_key(bug, release)
        if key in done_runs:
            where, shared = done_runs[key]
            report = reports / bug.id / release
            report.mkdir(parents=True, exist_ok=True)
            (report / "report.json").unlink(missing_ok=True)  # an earlier bank's, not this run's
            (report / SHARED).write_text(f"{where}\n")
            alike = "same selection, draws and tolerated kinds"
            say(f"  {release}: the same run as {where} ({alike}): {_said(shared)}, reused")
            return shared
        outcome = run_once(bug, release)
        if outcome.problem is None:
            done_runs[key] = (reports / bug.id / release, outcome)
        return outcome

    def run_once(bug: Bug, release: str) -> Outcome:
        component = COMPONENTS[bug.component]
        started = time.monotonic()
        try:
            env = component.prepare(release, say)
        except (SetupError, JvmArtifactsMissing, ValueError) as error:
            return Outcome(problem=f"{component.name} {release} could not be made ready: {error}")
        report = reports / bug.id / release
        command = run_command(bug, component.adapter, profile, seed, report, release)
        shown = " ".join(f"{k}={v}" for k, v in env.items())
        say(f"  {release}: {shown} {' '.join(command)}")
        child = [sys.executable, "-m", "kconform.conformance.cli", *command[1:]]
        if bug.tolerated_in(release):
            report.mkdir(parents=True, exist_ok=True)
            (report / TOLERATED).write_text(bug.expectations(release))
        (report / SHARED).unlink(missing_ok=True)  # an earlier bank's, which shared another entry's run
        for attempt in range(CRASH_RETRIES + 1):
            (report / "report.json").unlink(missing_ok=True)
            shutil.rmtree(report / EXAMPLES, ignore_errors=True)
            try:
                done = subprocess.run(
                    child,
                    env=os.environ | dict(env) | {"PYTHONFAULTHANDLER": "1"},
                    capture_output=True,
                    text=True,
                    timeout=RUN_TIMEOUT_S,
                )
            except subprocess.TimeoutExpired:
                return Outcome(problem=f"kconform run on {release} took longer than {RUN_TIMEOUT_S} s")
            report.mkdir(parents=True, exist_ok=True)
            (report / "run.log").write_text(f"{done.stdout}\n{done.stderr}")
            written = _report(report / "report.json")
            if attempt < CRASH_RETRIES and died_without_evidence(done.returncode, written):
                say(
                    f"  {release}: kconform run's suite process died of a signal (its output: {report / 'run.log'}); "
                    "running it once more"
                )
                continue
            break
        if written is not None:  # the last attempt's report, read once
            outcome = outcome_of_report(written)
        else:
            tail = (done.stderr or done.stdout).strip().splitlines()[-3:]
            outcome = Outcome(problem=f"kconform run exited {done.returncode} without a report: {' '.join(tail)}")
        say(f"  {release}: {_said(outcome)} ({time.monotonic() - started:.0f} s)")
        return outcome

    return run


def load(catalogue: Path | None) -> list[Bug]:
    """The bugs of ``catalogue`` (default: the shipped one), checked against the spec's requirement ids."""
    text = catalogue.read_text() if catalogue else files("kconform.fixtures").joinpath(SHIPPED).read_text()
    classes = {req_id: req.category for req_id, req in load_requirements().items()}
    return parse_catalogue(text, str(catalogue or f"fixtures/{SHIPPED}"), COMPONENTS.keys(), classes)


def build_parser() -> argparse.ArgumentParser:
    """``kconform bugbank``'s options (``kconform --help`` walks every verb's parser)."""
    parser = argparse.ArgumentParser(
        prog="kconform bugbank",
        description=(
            "Run the bug bank: each real bug of the catalogue on its buggy and its fixed release through the "
            "ordinary suite (each release resolved on demand and cached). Verdict per bug, in the class of its "
            "requirements: caught (the buggy release reads no on that class on an intended id: safe: no for a safety "
            "bug, live: no for a liveness bug, Flink-faithful: no or diagnosable: no; and the fixed one fails "
            "nothing), caught off target, missed, false alarm (the fixed release fails) or could not run (with the "
            "reason); prints K/N caught."
        ),
        epilog="exit 0: every bug caught; 1: a bug missed, caught off target or a false alarm; 2: a bad catalogue "
        "or usage; 3: otherwise, a bug that could not run.",
    )
    parser.add_argument("--only", metavar="ID", help="run only the bug with this upstream id (KAFKA-14639)")
    parser.add_argument("--component", choices=sorted(COMPONENTS), help="run only the bugs of this component")
    parser.add_argument(
        "--catalogue",
        type=Path,
        metavar="FILE",
        help="a catalogue of your own (a regression bank) instead of the shipped one",
    )
    parser.add_argument(
        "--page", type=Path, metavar="FILE", help="write the generated Markdown page here (docs/bugbank.md)"
    )
    parser.add_argument(
        "--profile", choices=("quick", "default", "thorough"), default="default", help="Hypothesis profile of each run"
    )
    parser.add_argument(
        "--seed", type=int, default=1, help="Hypothesis seed of every run, so verdicts replay (default 1)"
    )
    parser.add_argument(
        "--reports", type=Path, default=Path("build/bugbank"), help="each run's report goes to DIR/<bug>/<release>"
    )
    return parser


def main(argv: Sequence[str]) -> int:
    """``kconform bugbank``: the verdict of each selected bug, K/N caught, the page when ``--page`` is given."""
    args = build_parser().parse_args(argv)
    try:
        bugs = load(args.catalogue)
    except (CatalogueError, SpecNotFoundError, OSError) as error:
        print(f"kconform bugbank: ERROR: {error}", file=sys.stderr)
        return 2
    selected = [b for b in bugs if args.only in (None, b.id) and args.component in (None, b.component)]
    if not selected:
        print(
            f"kconform bugbank: no bug of the catalogue matches --only {args.only} --component {args.component}",
            file=sys.stderr,
        )
        return 2

    def say(line: str) -> None:
        print(line, flush=True)

    results = bank(selected, release_runner(args.profile, args.seed, args.reports, say), say)
    caught = sum(j.verdict is Verdict.CAUGHT for _, j in results)
    say(f"kconform bugbank: {caught}/{len(results)} caught on an intended id")
    catalogue = str(args.catalogue) if args.catalogue else None
    for bug, judgement in results:
        say(f"  {bug.id:<16} {judgement.verdict:<18} {replay_command(bug, catalogue)}")
    if args.page:
        coordinates = {name: c.coordinate for name, c in COMPONENTS.items()}
        args.page.write_text(render_page(results, coordinates, catalogue, args.seed))
        say(f"kconform bugbank: wrote {args.page}")
    return exit_code(results)
