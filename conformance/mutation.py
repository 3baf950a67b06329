"""``make mutation``: mutation testing of the pure reference core, with the protocol suite as the test set.

Cosmic Ray mutates a copy of ``reference_impl/`` under ``build/mutation/`` (never the checkout), one
session per module of ``SUITES``. Each mutant is judged by ``kconform run --level protocol
--profile default --seed N`` on the suite tests keyed to its module, runs chained cheapest first so
that a killed mutant stops at the first failing one; Hypothesis's example database is emptied before
every mutant, so no mutant is judged by another's counterexamples. The suite's checkers take Flink's
formula from ``kconform.reference_impl.assignment``: ``judge`` runs ``kconform run`` with that oracle loaded
from the checkout, unmutated, so a mutant of the formula cannot move the oracle with it. Mutants that
``docs/mutation-triage.toml`` calls equivalent are skipped (Cosmic Ray's own ``# pragma: no mutate``
would skip every mutant of the line); the score is killed / (mutants - equivalent), and
``docs/mutation.md`` gets the score, the run time and every survivor with its triage.
"""

from __future__ import annotations

import argparse
import difflib
import importlib.util
import json
import shlex
import shutil
import subprocess
import sys
import time
import tomllib
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .paths import PACKAGE_ROOT

ROOT = PACKAGE_ROOT  # mutation testing runs from a checkout: its root
WORK = ROOT / "build" / "mutation"
TRIAGE = ROOT / "docs" / "mutation-triage.toml"
DOC = ROOT / "docs" / "mutation.md"
GOAL = 0.90
DEFAULT_SEED = 1
MIN_TIMEOUT_S = 60.0
TIMEOUT_FACTOR = 4.0
"""A mutant's time limit: this many times its module's unmutated run, at least ``MIN_TIMEOUT_S``."""

SUITES: dict[str, tuple[tuple[str, str], ...]] = {
    "assignment": (("ADAPTER", "ASSIGN_004_edge_names"), ("ADAPTER", "ASSIGN")),
    "discovery": (
        ("ADAPTER", "DISC_007"),
        ("ADAPTER", "DISC"),
        ("ADAPTER", "ASSIGN"),
        ("FLIP27_POOLING", "RESTORE"),
    ),
    "restore": (
        ("ADAPTER", "DISC_005"),
        ("ADAPTER", "RESTORE"),
        ("FLIP27_POOLING", "DISC_005"),
        ("FLIP27_POOLING", "RESTORE"),
    ),
    "commit": (("ADAPTER", "COMMIT_005"), ("ADAPTER", "COMMIT"), ("FLIP27_POOLING", "COMMIT")),
}
"""Module of ``reference_impl`` -> its ``(adapter of kconform.reference_impl.adapter, kconform run --only)`` runs.

``ADAPTER`` is union-filter restore with incrementing ids, ``FLIP27_POOLING`` split redistribution
(the FLIP-27 enumerator) with pooled ids: code only one variant runs is judged with that one.
"""


@dataclass(frozen=True)
class Triage:
    """A survivor's verdict (``equivalent``, ``weakness`` or ``unreached``) and why (not compared)."""

    verdict: str
    why: str = field(compare=False)


@dataclass(frozen=True)
class Mutant:
    """One mutant as the report shows it: where, which operator, the changed lines, its outcome."""

    module: str
    line: int
    operator: str
    removed: str
    added: str
    outcome: str
    """``killed``, ``timeout``, ``survived``, ``equivalent`` or ``incompetent``."""

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.module, self.removed, self.added)


TriageTable = dict[tuple[str, str, str], Triage]


def load_triage(path: Path) -> TriageTable:
    """``(module, original line, mutated line)`` -> verdict, from the ``[[mutant]]`` tables of ``path``.

    An entry without ``mutated`` covers every mutant of its line.
    """
    if not path.exists():
        return {}
    entries = tomllib.loads(path.read_text())["mutant"]
    return {
        (e["module"], e["original"], e.get("mutated", "")): Triage(e["verdict"], " ".join(e["why"].split()))
        for e in entries
    }


def verdict(triage: TriageTable, module: str, removed: str, added: str) -> Triage | None:
    """The triage of one mutant: its own entry, else its line's."""
    return triage.get((module, removed, added)) or triage.get((module, removed, ""))


UNREACHED = Triage("unreached", "")
"""Compares equal to every ``unreached`` verdict: survivors in code no protocol-level adapter method runs."""


def is_equivalent(triage: TriageTable, module: str, removed: str, added: str) -> bool:
    """Whether the triage calls the mutant equivalent (it is then skipped, and never counted)."""
    found = verdict(triage, module, removed, added)
    return found is not None and found.verdict == "equivalent"


def test_command(sandbox: Path, links: Sequence[tuple[str, str]], seed: int) -> str:
    """The shell command that judges one mutant: each ``kconform run`` of ``links`` in turn, from an empty database."""
    judge_run = [
        sys.executable,
        "-m",
        "kconform.conformance.mutation",
        "judge",
        "--level",
        "protocol",
        "--profile",
        "default",
    ]
    runs = [
        shlex.join(
            [*judge_run, "--seed", str(seed), "--adapter", f"kconform.reference_impl.adapter:{adapter}", "--only", only]
        )
        for adapter, only in links
    ]
    return shlex.join(["sh", "-c", " && ".join([f"cd {shlex.quote(str(sandbox))}", "rm -rf .hypothesis", *runs])])


def make_sandbox(sandbox: Path) -> None:
    """A ``kconform`` package whose ``reference_impl`` is a copy to mutate; the rest links to the repository."""
    package = sandbox / "kconform"
    shutil.rmtree(sandbox, ignore_errors=True)
    shutil.copytree(ROOT / "reference_impl", package / "reference_impl", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "kconform" / "__init__.py", package / "__init__.py")
    for folder in ("conformance", "spec", "fixtures"):
        (package / folder).symlink_to(ROOT / folder, target_is_directory=True)


def judge(argv: Sequence[str]) -> int:
    """``kconform run argv`` on the ``reference_impl`` of the working directory, judged by the unmutated formula.

    Hypothesis does not shrink: the first failing example kills the mutant (the verdict shrinking would reach
    too), and a smaller counterexample is of no use here.
    """
    from hypothesis import Phase, settings

    from .checks import checkers
    from .gate import profiles, pytest_plugin, run_command

    def register_without_shrinking(database_dir: Path | None = None) -> None:
        profiles.register_profiles(database_dir)
        for name in map(profiles.hypothesis_profile, profiles.PROFILES):
            phases = [p for p in settings.get_profile(name).phases if p is not Phase.shrink]
            settings.register_profile(name, settings.get_profile(name), phases=phases)

    setattr(pytest_plugin, "register_profiles", register_without_shrinking)  # noqa: B010  # its pytest_configure's

    formula = ROOT / "reference_impl" / "assignment.py"
    spec = importlib.util.spec_from_file_location("kconform_oracle_assignment", formula)
    assert spec is not None and spec.loader is not None
    oracle = sys.modules[spec.name] = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(oracle)
    setattr(checkers, "assign", oracle.assign)  # noqa: B010  # the name checkers imports, not one it exports
    return run_command.main(argv)


def changed_lines(original: str, mutated: str) -> tuple[str, str]:
    """The lines a mutation removes and adds, each side stripped and joined with `` / ``."""
    removed: list[str] = []
    added: list[str] = []
    for line in difflib.unified_diff(original.splitlines(), mutated.splitlines(), lineterm="", n=0):
        if line.startswith(("---", "+++", "@@")):
            continue
        (removed if line.startswith("-") else added).append(line[1:].strip())
    return " / ".join(removed), " / ".join(added)


def describe(spec: Any, sandbox: Path) -> tuple[str, int, str, str]:
    """Module, line and changed lines of a Cosmic Ray ``MutationSpec``."""
    from cosmic_ray.mutating import mutate_code
    from cosmic_ray.plugins import get_operator

    source = Path(spec.module_path).read_text()
    operator = get_operator(spec.operator_name)(**spec.operator_args)
    removed, added = changed_lines(source, mutate_code(source, operator, spec.occurrence) or source)
    return str(Path(spec.module_path).relative_to(sandbox / "kconform")), int(spec.start_pos[0]), removed, added


def outcome_of(result: Any) -> str:
    """The report's name for a Cosmic Ray ``WorkResult``."""
    from cosmic_ray.work_item import TestOutcome, WorkerOutcome

    if result.worker_outcome == WorkerOutcome.SKIPPED:
        return "equivalent"
    if result.test_outcome == TestOutcome.SURVIVED:
        return "survived"
    if result.test_outcome == TestOutcome.INCOMPETENT:
        return "incompetent"
    return "timeout" if result.output == "timeout" else "killed"


def run_module(name: str, sandbox: Path, seed: int, triage: TriageTable) -> None:
    """Baseline, init, skip the equivalent mutants, judge the others one by one; the session keeps every result."""
    from cosmic_ray.mutating import mutate_and_test
    from cosmic_ray.work_db import WorkDB, use_db
    from cosmic_ray.work_item import WorkerOutcome, WorkResult

    started = time.monotonic()
    command = test_command(sandbox, SUITES[name], seed)
    baseline = subprocess.run(shlex.split(command), capture_output=True, text=True, check=False)
    took = time.monotonic() - started
    if baseline.returncode != 0:
        raise SystemExit(f"{name}: the unmutated suite fails at seed {seed}, no baseline:\n{baseline.stdout[-3000:]}")
    timeout = max(MIN_TIMEOUT_S, TIMEOUT_FACTOR * took)
    config = WORK / f"{name}.toml"
    session = WORK / f"{name}.sqlite"
    config.write_text(
        "[cosmic-ray]\n"
        f"module-path = {str(sandbox / 'kconform' / 'reference_impl' / f'{name}.py')!r}\n"
        f"timeout = {timeout:.0f}.0\nexcluded-modules = []\ntest-command = {command!r}\n"
        '[cosmic-ray.distributor]\nname = "local"\n'
    )
    session.unlink(missing_ok=True)
    subprocess.run([str(Path(sys.executable).parent / "cosmic-ray"), "init", str(config), str(session)], check=True)
    with use_db(str(session), WorkDB.Mode.open) as db:
        items = sorted(db.work_items, key=lambda w: (w.mutations[0].start_pos, w.mutations[0].operator_name))
        print(f"{name}: {len(items)} mutants, unmutated run {took:.1f}s, time limit {timeout:.0f}s each", flush=True)
        for i, item in enumerate(items, 1):
            module, line, removed, added = describe(item.mutations[0], sandbox)
            label = f"[{i}/{len(items)}] {module}:{line} {item.mutations[0].operator_name}"
            if is_equivalent(triage, module, removed, added):
                result = WorkResult(worker_outcome=WorkerOutcome.SKIPPED)
            else:
                t0 = time.monotonic()
                result = mutate_and_test(item.mutations, command, timeout)
                label += f" {time.monotonic() - t0:.1f}s"
            db.set_result(item.job_id, result)
            seconds = time.monotonic() - started
            meta = {"seed": seed, "seconds": seconds, "mutants": len(items), "judged": i}
            (WORK / f"{name}.json").write_text(json.dumps(meta))
            print(f"{label} {outcome_of(result)} (elapsed {seconds:.0f}s)", flush=True)


@dataclass(frozen=True)
class ModuleRun:
    """What a module's session holds: its judged mutants, of how many, and the seconds the run took."""

    mutants: list[Mutant]
    total: int
    judged: int
    seconds: float
    seed: int


def collect(name: str, sandbox: Path, triage: TriageTable) -> ModuleRun:
    """A module's session, finished or stopped, a survivor triaged equivalent counted as such."""
    from cosmic_ray.work_db import WorkDB, use_db
    from cosmic_ray.work_item import WorkerOutcome

    mutants = []
    with use_db(str(WORK / f"{name}.sqlite"), WorkDB.Mode.open) as db:
        for item, result in db.completed_work_items:
            if result.worker_outcome == WorkerOutcome.NO_TEST:
                continue
            module, line, removed, added = describe(item.mutations[0], sandbox)
            outcome = outcome_of(result)
            if outcome == "survived" and is_equivalent(triage, module, removed, added):
                outcome = "equivalent"
            mutants.append(Mutant(module, line, item.mutations[0].operator_name, removed, added, outcome))
    mutants.sort(key=lambda m: (m.line, m.operator))
    meta = json.loads((WORK / f"{name}.json").read_text())
    return ModuleRun(mutants, meta["mutants"], meta["judged"], meta["seconds"], meta["seed"])


def score(mutants: Sequence[Mutant]) -> tuple[int, int, float]:
    """Killed (timeouts included), non-equivalent mutants, and their ratio."""
    judged = [m for m in mutants if m.outcome != "equivalent"]
    killed = sum(m.outcome in ("killed", "timeout") for m in judged)
    return killed, len(judged), killed / len(judged) if judged else 1.0


def render(results: dict[str, ModuleRun], triage: TriageTable) -> str:
    """``docs/mutation.md``: how it was run, the score per module and overall, every survivor with its triage."""
    everything = [m for run in results.values() for m in run.mutants]
    killed, judged, ratio = score(everything)
    total_s = sum(run.seconds for run in results.values())
    seeds = ", ".join(sorted({str(run.seed) for run in results.values()}))
    stopped = [f"{name} after {run.judged} of {run.total}" for name, run in results.items() if run.judged < run.total]
    unreached = [m for m in everything if m.outcome == "survived" and verdict(triage, *m.key) == UNREACHED]
    reached = score([m for m in everything if m not in unreached])
    lines = [
        "# Mutation testing of the reference core",
        "",
        "Written by `make mutation` (`python -m kconform.conformance.mutation`); the triage lives in",
        "`docs/mutation-triage.toml`. Cosmic Ray mutates a copy of each module under `build/mutation/`; a",
        f"mutant is killed when `kconform run --level protocol --profile default --seed {seeds}` fails on the",
        "suite tests keyed to its module (below, run in this order, the first failure ends the mutant's",
        "run) or exceeds its time limit. The checkers take Flink's formula from the unmutated module, and",
        "Hypothesis does not shrink (the first failing example kills). Verdicts: *equivalent* (no input",
        "tells it apart: skipped and not counted), *weakness* (the suite could kill it and does not: what",
        "misses it and how to kill it), *unreached* (no protocol-level adapter method runs the code).",
        "",
        f"**Score: {killed} of {judged} non-equivalent mutants killed, {ratio:.1%}** "
        f"(goal {GOAL:.0%}: {'met' if ratio >= GOAL else 'NOT met'}); {len(everything)} mutants, "
        f"run time {total_s / 60:.1f} min on this machine"
        + (f"; the run stopped early: {', '.join(stopped)} mutants." if stopped else "."),
        f"Without the {len(unreached)} survivors in code no protocol-level adapter method runs (*unreached*): "
        f"{reached[0]} of {reached[1]}, {reached[2]:.1%}.",
        "",
        "| module | `kconform run` selections (adapter: --only) | mutants | equivalent | killed | timeout "
        "| survived | score | minutes |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for name, run in results.items():
        count = {o: sum(m.outcome == o for m in run.mutants) for o in ("equivalent", "killed", "timeout", "survived")}
        selections = ", ".join(f"{a}: {o}" for a, o in SUITES[name])
        judged_of = f"{run.total}" if run.judged == run.total else f"{run.judged} of {run.total}"
        lines.append(
            f"| {name} | {selections} | {judged_of} | {count['equivalent']} | {count['killed']} "
            f"| {count['timeout']} | {count['survived']} | {score(run.mutants)[2]:.1%} | {run.seconds / 60:.1f} |"
        )
    for title, wanted in (
        ("Surviving mutants", ("survived", "incompetent")),
        ("Skipped as equivalent", ("equivalent",)),
    ):
        shown = [m for m in everything if m.outcome in wanted]
        lines += ["", f"## {title} ({len(shown)})", ""]
        for m in shown:
            found = verdict(triage, *m.key) or Triage("UNTRIAGED", "not triaged yet")
            lines += [
                f"- `{m.module}:{m.line}` {m.operator}: `{m.removed}` → `{m.added}`",
                f"  **{found.verdict}**: {found.why}",
            ]
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    """Run every module of ``--modules`` and write the report, 1 if a survivor is not triaged; or ``judge ARGS``."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["judge"]:
        return judge(argv[1:])
    parser = argparse.ArgumentParser(
        prog="python -m kconform.conformance.mutation", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--modules", nargs="+", choices=list(SUITES), default=list(SUITES))
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED, help="Hypothesis seed (default %(default)s)")
    parser.add_argument("--doc", type=Path, default=DOC, help="the report to write (default %(default)s)")
    parser.add_argument(
        "--report-only", action="store_true", help="rewrite the report from the modules' last sessions (after triage)"
    )
    args = parser.parse_args(argv)
    sandbox = WORK / "src"
    triage = load_triage(TRIAGE)
    if not args.report_only:
        make_sandbox(sandbox)
        for name in args.modules:
            run_module(name, sandbox, args.seed, triage)
    results = {name: collect(name, sandbox, triage) for name in args.modules}
    args.doc.parent.mkdir(parents=True, exist_ok=True)
    args.doc.write_text(render(results, triage))
    everything = [m for run in results.values() for m in run.mutants]
    survivors = [m for m in everything if m.outcome in ("survived", "incompetent")]
    killed, judged, ratio = score(everything)
    print(f"\nscore: {killed}/{judged} non-equivalent mutants killed ({ratio:.1%}, goal {GOAL:.0%}); wrote {args.doc}")
    for m in survivors:
        print(f"survived: {m.module}:{m.line} {m.operator}: {m.removed} -> {m.added}")
    untriaged = [m for m in survivors if verdict(triage, *m.key) is None]
    if untriaged:
        print(f"{len(untriaged)} survivors are not triaged in {TRIAGE.relative_to(ROOT)}", file=sys.stderr)
    return 1 if untriaged else 0


if __name__ == "__main__":
    raise SystemExit(main())
