"""Requirement ids: parsed from the spec, traced to checkers, tests, mutants and TLA+ properties.

The spec (``spec/*.md``) is the single source of ids, levels and titles; the runner takes titles
and levels from here, ``kconform requirements`` lists the traceability matrix, and
``tests/test_requirements.py`` fails when an id is named in code but not in the spec, or the
other way round, so the two cannot drift apart.
"""

from __future__ import annotations

import argparse
import importlib
import re
import sys
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

from ..mutants import registry
from ..paths import PACKAGE_ROOT

REPO_ROOT = PACKAGE_ROOT
LEVELS = ("MUST", "SHOULD", "MAY")
"""Strongest first."""
CATEGORIES = ("safety", "liveness", "fidelity", "diagnostics")
"""Safety: no record lost, repeated or reordered; liveness: the connector recovers and gets on (it does not throw,
hang or loop where it should recover); fidelity: following Flink's (or Kafka's) model exactly; diagnostics: what a
connector's failures say (the partition, position, id, setting or strategy the user must act on), apart from
whether anything was lost."""

HEADING = re.compile(
    r"^### (?P<id>[A-Z]+-\d{3}) \((?P<level>MUST|SHOULD|MAY)"
    r"(?:, (?P<category>safety|liveness|fidelity|diagnostics))?\) "
    r"(?P<title>.+?)\s*$",
    re.MULTILINE,
)
ANY_HEADING = re.compile(r"^### [A-Z]+-\d{3}\b.*$", re.MULTILINE)
"""Every requirement-like heading, to find those ``HEADING`` cannot parse (e.g. two classes)."""
CHECKED_BY = re.compile(r"^\*\*Checked by\.\*\*(?P<text>.*?)(?:\n\s*\n|\Z)", re.MULTILINE | re.DOTALL)
OUTSIDE = re.compile(
    r"^\*\*From outside\.\*\* (?P<verdict>Observable, not judged yet|Observable|Not observable)\.(?P<text>.*?)"
    r"(?:\n\s*\n|\Z)",
    re.MULTILINE | re.DOTALL,
)
"""A section's word on the pipeline level: whether its id can be judged from outside the connector (the broker,
read_committed readers, the stalling proxy, a query's checkpoint folder), and what is observed or missing."""
ANY_OUTSIDE = re.compile(r"^\*\*From outside\.\*\*.*$", re.MULTILINE)
OBSERVABLE, UNJUDGED, HIDDEN = "observable", "observable, not judged yet", "not observable"
"""``Requirement.outside``: judged at the pipeline level; observable but no pipeline judge yet (the paragraph says
what a judge would look at); not observable from outside (the paragraph names the observation that is missing)."""
BROKER_AREA: Final = "KAFKA"
"""The broker's ids (``spec/kafka.md``), probed by ``kconform probe-broker``: no connector is judged on them."""
ID_IN_CODE = re.compile(
    r"(?<![A-Za-z0-9])(?P<area>ASSIGN|DISC|RESTORE|COMMIT|KAFKA|STRAT|LIVE|CLIENT)[-_](?P<num>\d{3})(?!\d)"
)
TEST_NAME = re.compile(
    r"^test_(?P<kind>required|should|optional)_(?P<ids>[A-Z]+_\d{3}(?:_(?:and_|to_)?(?:[A-Z]+_)?\d{3})*)"
)
ID_PART = re.compile(r"(?:(?P<joint>and|to)_)?(?:(?P<area>[A-Z]+)_)?(?P<num>\d{3})")
TEST_DEF = re.compile(r"\bdef (test_\w+)")
REQUIREMENT_MARK = re.compile(r"\brequirement\((?P<args>[^)]*)\)")
QUOTED_ID = re.compile(r"[\"'](?P<id>[A-Z]+-\d{3})[\"']")
BACKTICKED = re.compile(r"`([^`]+)`")
IDENTIFIER = re.compile(r"^[a-z][a-z0-9]*(?:[_.][a-z0-9]+)+$")
"""A function name such as ``check_plan``; single words in backticks are violation names."""

DEFINED = re.compile(r"^\s*(?:def|class) (?P<name>\w+)", re.MULTILINE)
"""A function or class definition (a mutant's is the registry's: ``mutants_by_id``)."""
CHECKER_FILES = (
    "conformance/checks/checkers.py",
    "conformance/checks/history.py",
    "conformance/checks/strategy_checkers.py",
)
"""Searched first for the definition of a name the spec's "Checked by." gives; then the rest of ``conformance/``."""

NAME_KIND_LEVEL = {"required": "MUST", "should": "SHOULD", "optional": "MAY"}
TEST_ROOTS = ("tests", "conformance/suite")
SUITE: Final = "conformance/suite"
SUITE_LEVELS: Final = {
    "test_assignment": "protocol",
    "test_discovery": "protocol",
    "test_source": "protocol",
    "test_sink": "protocol",
    "test_kafka_strategies": "protocol",
    "test_pipeline": "Spark queries",
    "test_flink_jobs": "Flink jobs",
    "test_flink_workload": "Flink jobs",
    "test_client": "its consumer",
    "test_client_workload": "its clients",
}
"""Suite module -> where its tests judge an adapter: the protocol level (its classes, in process), or the pipeline
level through Spark streaming queries, Flink jobs, or the Kafka consumer it reads with."""
CODE_ROOTS = ("conformance", "reference_impl", "tests", "spec/tla")
CODE_SUFFIXES = (".py", ".tla", ".cfg")


class SpecNotFoundError(FileNotFoundError):
    """``spec/`` is not next to the package: it ships with a source checkout, not with a wheel."""


@dataclass(frozen=True)
class Requirement:
    id: str
    level: str
    title: str
    page: str
    checked_by: str = ""
    category: str = ""
    """``safety``, ``liveness``, ``fidelity`` or ``diagnostics`` (``CATEGORIES``); empty where a page does not say."""
    outside: str = ""
    """``OBSERVABLE``, ``UNJUDGED`` or ``HIDDEN`` from the section's "From outside." paragraph; empty without one."""
    outside_why: str = ""
    """That paragraph after its verdict: what the pipeline level observes, or which observation it lacks."""

    @property
    def connector_safety(self) -> bool:
        """A safety id a connector must meet (the broker's KAFKA ids are probed, not judged on a connector)."""
        return self.category == "safety" and not self.id.startswith(f"{BROKER_AREA}-")

    @property
    def anchor(self) -> str:
        """The GitHub anchor of the requirement's heading."""
        tags = ", ".join(filter(None, [self.level, self.category]))
        return github_slug(f"{self.id} ({tags}) {self.title}")

    @property
    def link(self) -> str:
        """``page#anchor``, relative to ``spec/``."""
        return f"{self.page}#{self.anchor}"

    @property
    def checkers(self) -> list[str]:
        """The functions named in the "Checked by." paragraph, tests excluded."""
        names = (n for n in BACKTICKED.findall(self.checked_by) if IDENTIFIER.match(n))
        return [n for n in names if not n.startswith("test_")]


def github_slug(heading: str, separator: str = "-") -> str:
    """A heading's anchor as GitHub makes it; ``mkdocs.yml`` gives the site's headings the same."""
    return re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", separator)


def spec_dir(root: Path = REPO_ROOT) -> Path:
    spec = root / "spec"
    if not spec.is_dir():
        raise SpecNotFoundError(
            f"spec/ not found at {spec}: requirement titles and levels come from a kconform source checkout"
        )
    return spec


def parse_page(text: str, page: str) -> list[Requirement]:
    """The requirements of one spec page, in page order."""
    headings = list(HEADING.finditer(text))
    found = []
    for i, h in enumerate(headings):
        body = text[h.end() : headings[i + 1].start() if i + 1 < len(headings) else len(text)]
        checked = CHECKED_BY.search(body)
        checked_by = " ".join(checked.group("text").split()) if checked else ""
        category = h.group("category") or ""
        outside = OUTSIDE.search(body)
        verdict = outside.group("verdict").lower() if outside else ""
        why = " ".join(outside.group("text").split()) if outside else ""
        found.append(
            Requirement(h.group("id"), h.group("level"), h.group("title"), page, checked_by, category, verdict, why)
        )
    return found


def malformed_outside(text: str) -> list[str]:
    """ "From outside." paragraphs of a page that do not start with one of its three verdicts."""
    return [m.group(0) for m in ANY_OUTSIDE.finditer(text) if not OUTSIDE.match(text, m.start())]


def malformed_headings(text: str) -> list[str]:
    """Requirement headings of a page that ``parse_page`` does not read (a missing level, two classes)."""
    return [m.group(0) for m in ANY_HEADING.finditer(text) if not HEADING.match(m.group(0))]


def load_requirements(root: Path = REPO_ROOT) -> dict[str, Requirement]:
    """Every requirement of ``spec/*.md`` by id; an id defined twice is an error."""
    requirements: dict[str, Requirement] = {}
    for path in sorted(spec_dir(root).glob("*.md")):
        text = path.read_text(encoding="utf-8")
        if bad := malformed_headings(text):
            raise ValueError(f"{path.name}: requirement headings not of the form '### ID (LEVEL, CLASS) title': {bad}")
        if bad := malformed_outside(text):
            raise ValueError(
                f"{path.name}: 'From outside.' paragraphs must start 'Observable.', 'Observable, not judged yet.' or "
                f"'Not observable.': {bad}"
            )
        for req in parse_page(text, path.name):
            if req.id in requirements:
                raise ValueError(f"{req.id} is defined in both {requirements[req.id].page} and {req.page}")
            requirements[req.id] = req
    return requirements


def ids_in_text(text: str) -> set[str]:
    """Every id named in ``text``, spelled ``ASSIGN_001`` or ``ASSIGN-001``, as ``ASSIGN-001``."""
    return {f"{m.group('area')}-{m.group('num')}" for m in ID_IN_CODE.finditer(text)}


def ids_in_test_name(name: str) -> list[str]:
    """``test_required_RESTORE_002_and_003_x`` -> ``['RESTORE-002', 'RESTORE-003']``; a list
    (``DISC_001_003``) names each id, a range (``RESTORE_001_to_004``) every id in it."""
    match = TEST_NAME.match(name)
    if not match:
        return []
    ids: list[str] = []
    area = ""
    for part in ID_PART.finditer(match.group("ids")):
        area = part.group("area") or area
        num = int(part.group("num"))
        first = int(ids[-1].rsplit("-", 1)[1]) + 1 if part.group("joint") == "to" and ids else num
        ids += [f"{area}-{n:03d}" for n in range(first, num + 1)]
    return ids


def level_of_test_name(name: str) -> str | None:
    """The level a test's name claims (``test_should_...`` -> SHOULD), if it follows the convention."""
    match = TEST_NAME.match(name)
    return NAME_KIND_LEVEL[match.group("kind")] if match else None


def _files(root: Path, dirs: Iterable[str], suffixes: Sequence[str]) -> list[Path]:
    return sorted(p for d in dirs if (root / d).is_dir() for p in (root / d).rglob("*") if p.suffix in suffixes)


def tests_by_id(root: Path = REPO_ROOT) -> dict[str, list[str]]:
    """id -> ``path::test_name`` of every test naming it, by its name or by a ``requirement(...)`` mark."""
    found: dict[str, set[str]] = defaultdict(set)
    for path in _files(root, TEST_ROOTS, (".py",)):
        text = path.read_text(encoding="utf-8")
        where = path.relative_to(root).as_posix()
        for name in TEST_DEF.findall(text):
            for req_id in ids_in_test_name(name):
                found[req_id].add(f"{where}::{name}")
        for mark in REQUIREMENT_MARK.finditer(text):
            follows = TEST_DEF.search(text, mark.end())
            label = f"{where}::{follows.group(1)}" if follows else where
            for req_id in QUOTED_ID.findall(mark.group("args")):
                found[req_id].add(label)
    return {req_id: sorted(tests) for req_id, tests in found.items()}


def judged_at(tests: Iterable[str]) -> list[str]:
    """Where the suite judges an id, from its tests (``path::name``): ``SUITE_LEVELS`` of their suite modules, in
    that table's order; kconform's own tests judge no adapter."""
    modules = {Path(t.partition("::")[0]).stem for t in tests if t.startswith(f"{SUITE}/")}
    return list(dict.fromkeys(level for module, level in SUITE_LEVELS.items() if module in modules))


def judged_from_outside(tests: Iterable[str]) -> bool:
    """Whether a pipeline-level suite module (a Spark query, a Flink job, the consumer) judges an id."""
    return any(level != "protocol" for level in judged_at(tests))


def outside_problems(rows: Iterable[Trace]) -> list[str]:
    """Where the "From outside." paragraphs disagree with the suite: a connector safety id judged at the protocol
    level only that says nothing of the pipeline level, one marked observable that no pipeline test judges (the
    claim needs a judge), and one a pipeline test judges that is still marked otherwise."""
    problems = []
    for t in rows:
        r, outside = t.requirement, judged_from_outside(t.tests)
        if r.connector_safety and not outside and not r.outside:
            problems.append(f"{r.id}: judged at the protocol level only, and its section has no 'From outside.'")
        elif r.outside == OBSERVABLE and not outside:
            problems.append(f"{r.id}: marked observable from outside, but no pipeline-level test judges it")
        elif r.outside in (UNJUDGED, HIDDEN) and outside:
            problems.append(f"{r.id}: a pipeline-level test judges it, but its section says '{r.outside}'")
    return problems


def from_outside(requirement: Requirement) -> str:
    """The "From outside." verdict with what it observes or lacks, for the table; ``-`` without the paragraph."""
    return ": ".join(filter(None, [requirement.outside, requirement.outside_why])) or "-"


def ids_in_code(root: Path = REPO_ROOT) -> set[str]:
    """Every id of a known area named in code, tests or the TLA+ models (``ASSIGN_001`` or ``ASSIGN-001``)."""
    ids: set[str] = set()
    for path in _files(root, CODE_ROOTS, CODE_SUFFIXES):
        ids.update(ids_in_text(path.read_text(encoding="utf-8")))
    ids.update(i for i in tests_by_id(root) if ids_in_text(i))  # adds the 003 of ``RESTORE_002_and_003``
    return ids


def tla_properties(root: Path = REPO_ROOT) -> dict[str, list[str]]:
    """id -> ``Module!Property`` from ``kconform.conformance.spec_tools.tlc``, or nothing without that module."""
    try:
        tlc = importlib.import_module("kconform.conformance.spec_tools.tlc")
    except ModuleNotFoundError as exc:
        if exc.name != "kconform.conformance.spec_tools.tlc":
            raise
        return {}
    properties: Callable[[Path], dict[str, list[str]]] = tlc.tla_properties
    return properties(root)


def orphans(root: Path = REPO_ROOT) -> tuple[set[str], set[str]]:
    """(ids named in code, tests or TLA+ but absent from the spec, spec ids that no test or TLA+ property checks)."""
    spec_ids = set(load_requirements(root))
    formalised = set(tla_properties(root))
    named = ids_in_code(root) | formalised
    return named - spec_ids, spec_ids - set(tests_by_id(root)) - formalised


def definitions(root: Path = REPO_ROOT) -> dict[str, str]:
    """Name (also ``kconform.conformance.module.name``) -> the file under ``conformance/`` defining it."""
    first = [root / f for f in CHECKER_FILES]
    found: dict[str, str] = {}
    for path in first + [p for p in _files(root, ("conformance",), (".py",)) if p not in first]:
        if not path.is_file():
            continue
        where = path.relative_to(root).as_posix()
        module = "kconform." + where.removesuffix(".py").replace("/", ".")
        for match in DEFINED.finditer(path.read_text(encoding="utf-8")):
            name = match.group("name")
            found.setdefault(name, where)
            found.setdefault(f"{module}.{name}", where)
    return found


def mutants_by_id(root: Path = REPO_ROOT) -> dict[str, dict[str, str]]:
    """id -> {mutant: ``path#Lline`` of the definition of its bug, from ``root``} for each registered mutant
    that must fail it, by name (not import order). A mutant module whose extra is not installed (the
    pipeline one, without PySpark) registers nothing."""
    for module in registry.MODULES:
        try:
            registry.load([module])
        except ModuleNotFoundError as exc:
            if (exc.name or "kconform").startswith("kconform"):
                raise
    found: dict[str, dict[str, str]] = defaultdict(dict)
    for name, entry in sorted(registry.registered().items()):
        where = entry.definition
        link = f"{where.path.resolve().relative_to(root.resolve()).as_posix()}#L{where.line}"
        for req_id in sorted(entry.mutant.kills_on):
            found[req_id][name] = link
    return dict(found)


@dataclass(frozen=True)
class Trace:
    """One row of the traceability matrix."""

    requirement: Requirement
    tests: list[str] = field(default_factory=list)
    tla: list[str] = field(default_factory=list)
    sources: dict[str, str] = field(default_factory=dict)
    """Checker name -> the file that defines it, for those found (``definitions``)."""
    mutants: dict[str, str] = field(default_factory=dict)
    """Each registered mutant that must fail the requirement -> ``path#Lline`` of its bug (``mutants_by_id``)."""

    @property
    def checkers(self) -> list[str]:
        """The functions the "Checked by." paragraph names; a mutant it names is in ``mutants`` instead."""
        return [n for n in self.requirement.checkers if n not in self.mutants]

    @property
    def checker(self) -> str:
        """The checkers named; the "Checked by." text where it names none (mutants aside)."""
        if self.requirement.checkers:
            return ", ".join(self.checkers) or "-"
        return self.requirement.checked_by or "-"


def traces(root: Path = REPO_ROOT) -> list[Trace]:
    tests = tests_by_id(root)
    tla = tla_properties(root)
    defined = definitions(root)
    mutants = mutants_by_id(root)
    return [
        Trace(
            r,
            tests.get(r.id, []),
            tla.get(r.id, []),
            {c: defined[c] for c in r.checkers if c in defined},
            mutants.get(r.id, {}),
        )
        for r in load_requirements(root).values()
    ]


def render_text(rows: Sequence[Trace]) -> str:
    lines = []
    for t in rows:
        r = t.requirement
        lines += [
            f"{r.id} ({r.level}, {r.category or '-'}) {r.title}",
            f"  spec:    spec/{r.link}",
            f"  judged:  {', '.join(judged_at(t.tests)) or '-'}",
            f"  outside: {from_outside(r)}",
            f"  checker: {t.checker}",
            *(f"  test:    {name}" for name in t.tests or ["-"]),
            *(f"  mutant:  {name} ({where})" for name, where in t.mutants.items()),
            *(f"  tla+:    {prop}" for prop in t.tla or ["-"]),
        ]
    return "\n".join(lines)


def _checker_cell(trace: Trace) -> str:
    """Each checker linked to the file that defines it; the "Checked by." text where no checker is named."""
    names = trace.checkers
    if not names:
        return trace.checker.replace("|", "\\|")
    return ", ".join(f"[`{n}`](../{trace.sources[n]})" if n in trace.sources else f"`{n}`" for n in names)


def render_markdown(rows: Sequence[Trace]) -> str:
    """The matrix as a GitHub table; links are relative to ``spec/`` (``make docs`` writes it there):
    each id to its spec section, each checker, test and TLA+ property to the file that holds it, each
    mutant to the line of its bug."""
    lines = [
        "# Requirements",
        "",
        "Generated by `kconform requirements --markdown`; do not edit.",
        "",
        "*Judged at*: where the suite's tests of an id judge an adapter: the protocol level (its classes, in "
        "process), or the pipeline level through Spark queries, Flink jobs or the Kafka consumer it reads with. "
        "The KAFKA ids are the broker's, probed by `kconform probe-broker`.",
        "",
        "*From outside*: the section's word on the pipeline level, for a connector safety id the suite judges at the "
        "protocol level only: *not observable* names the observation the broker, read_committed readers, the "
        "stalling proxy and a query's checkpoint folder do not give; *observable, not judged yet* says what a "
        "pipeline judge would look at.",
        "",
        "| id | level | class | title | judged at | from outside | checked by | tests | mutants | TLA+ |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for t in rows:
        r = t.requirement
        cells = [
            f"[{r.id}]({r.link})",
            r.level,
            r.category or "-",
            r.title.replace("|", "\\|"),
            ", ".join(judged_at(t.tests)) or "-",
            from_outside(r).replace("|", "\\|"),
            _checker_cell(t),
            "<br>".join(f"[`{name}`](../{name.partition('::')[0]})" for name in t.tests) or "-",
            "<br>".join(f"[`{name}`](../{where})" for name, where in t.mutants.items()) or "-",
            "<br>".join(f"[`{prop}`](tla/{prop.partition('!')[0]}.tla)" for prop in t.tla) or "-",
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="kconform requirements",
        description="the requirement traceability matrix: each requirement id with its spec section, checker, "
        "tests, mutants and TLA+ property; ids without a test are listed on stderr",
    )
    parser.add_argument("--markdown", action="store_true", help="print a GitHub table (for spec/REQUIREMENTS.md)")
    return parser


def main(argv: Sequence[str]) -> int:
    """``kconform requirements [--markdown]``; orphans are listed on stderr as a warning."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        rows = traces()
        unknown, untested = orphans()
    except (SpecNotFoundError, ValueError) as exc:
        parser.exit(2, f"kconform requirements: error: {exc}\n")
    print(render_markdown(rows) if args.markdown else render_text(rows))
    if not (REPO_ROOT / "tests").is_dir():
        print("note: the project's own tests/ are not installed, so ids only they check list no test", file=sys.stderr)
        untested = set()
    problems = {"named in code but not in the spec": unknown, "in the spec but named by no test": untested}
    for problem, ids in problems.items():
        if ids:
            print(f"warning: {problem}: {', '.join(sorted(ids))}", file=sys.stderr)
    return 0
