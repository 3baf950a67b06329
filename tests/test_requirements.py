"""Traceability between the spec and the code, and the parser of ``spec/*.md`` it rests on.

Made-up ids in this file use the area ``DEMO``, which the code-wide id scan does not know, so
they can never show up as orphans of the real repository.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from kconform.conformance.mutants import registry
from kconform.conformance.spec_tools import requirements
from kconform.conformance.spec_tools.requirements import (
    REPO_ROOT,
    Requirement,
    SpecNotFoundError,
    definitions,
    github_slug,
    ids_in_test_name,
    ids_in_text,
    level_of_test_name,
    load_requirements,
    orphans,
    parse_page,
    render_markdown,
    tests_by_id,
    traces,
)

PAGE = """# Demo

Intro text, not a requirement.

### DEMO-001 (MUST, fidelity) Every partition is owned by exactly one subtask

The requirement.

**Checked by.** `check_plan` (violations `double-assignment`, `unassigned`);
`tests/test_demo.py::test_required_DEMO_001_*`.

### DEMO-002 (SHOULD, safety) Entries are filtered, unless kept on request

**Why.** Because.

### DEMO-003 (MAY) Global spread is reported; the `global_spread` metric

**Checked by.** the sink state machine (`complete(notify=False)`); TLA+ `DEMO_003_*`.
"""


def test_every_id_named_in_code_tests_or_tla_is_in_the_spec() -> None:
    unknown, _ = orphans()
    assert not unknown, f"ids named in code but missing from spec/*.md: {sorted(unknown)}"


def test_every_spec_id_is_named_by_a_test() -> None:
    _, untested = orphans()
    assert not untested, f"spec ids that no test names (by name or requirement mark): {sorted(untested)}"


def test_spec_pages_parse_into_unique_ids_with_levels_and_titles() -> None:
    reqs = load_requirements()
    assert reqs["ASSIGN-001"] == Requirement(
        "ASSIGN-001",
        "MUST",
        "The assigner gives every partition exactly one subtask",
        "assignment.md",
        reqs["ASSIGN-001"].checked_by,
        "fidelity",
    )
    assert reqs["RESTORE-005"].level == "SHOULD"
    assert reqs["ASSIGN-005"].level == "MAY"
    assert all(
        r.page
        in {
            "assignment.md",
            "discovery.md",
            "restore.md",
            "commit.md",
            "liveness.md",
            "clients.md",
            "kafka.md",
            "kafka-strategies.md",
        }
        for r in reqs.values()
    )


def test_headings_checked_by_and_anchors_are_parsed() -> None:
    first, second, third = parse_page(PAGE, "demo.md")
    assert (first.id, first.level, first.title, first.page) == (
        "DEMO-001",
        "MUST",
        "Every partition is owned by exactly one subtask",
        "demo.md",
    )
    assert first.link == "demo.md#demo-001-must-fidelity-every-partition-is-owned-by-exactly-one-subtask"
    assert (first.category, second.category, third.category) == ("fidelity", "safety", "")
    assert first.checkers == ["check_plan"]
    assert first.checked_by.startswith("`check_plan` (violations")
    assert (second.level, second.checked_by, second.checkers) == ("SHOULD", "", [])
    assert third.anchor == "demo-003-may-global-spread-is-reported-the-global_spread-metric"
    assert third.checkers == []


def test_every_spec_requirement_has_exactly_one_class() -> None:
    """Reports give a safety and a fidelity verdict: an id of neither class (or of both) would be in none."""
    spec = Path(requirements.__file__).resolve().parents[2] / "spec"
    for page in spec.glob("*.md"):
        assert requirements.malformed_headings(page.read_text()) == [], page.name
    classes = {r.id: r.category for r in load_requirements().values()}
    assert set(classes.values()) == set(requirements.CATEGORIES), classes
    assert classes["RESTORE-003"] == "safety"
    assert classes["ASSIGN-004"] == "fidelity"


@pytest.mark.parametrize("tags", ["MUST, safety, fidelity", "MUST, availability", "safety"])
def test_a_heading_without_exactly_one_known_class_is_an_error(tmp_path: Path, tags: str) -> None:
    (tmp_path / "spec").mkdir()
    (tmp_path / "spec" / "a.md").write_text(PAGE + f"\n### DEMO-004 ({tags}) Two classes\n")
    with pytest.raises(ValueError, match=r"a\.md: requirement headings not of the form .*DEMO-004"):
        load_requirements(tmp_path)


def test_an_id_defined_twice_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "spec").mkdir()
    (tmp_path / "spec" / "a.md").write_text(PAGE)
    (tmp_path / "spec" / "b.md").write_text(PAGE)
    with pytest.raises(ValueError, match=r"DEMO-001 is defined in both a\.md and b\.md"):
        load_requirements(tmp_path)


def test_missing_spec_directory_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(SpecNotFoundError, match=r"spec/ not found at .*: requirement titles and levels come from"):
        load_requirements(tmp_path)


@pytest.mark.parametrize(
    ("name", "ids", "level"),
    [
        ("test_required_DEMO_001_owner_in_range", ["DEMO-001"], "MUST"),
        ("test_required_DEMO_002_and_003_restore", ["DEMO-002", "DEMO-003"], "MUST"),
        ("test_should_DEMO_004_and_OTHER_005_x", ["DEMO-004", "OTHER-005"], "SHOULD"),
        ("test_optional_DEMO_006_spread", ["DEMO-006"], "MAY"),
        ("test_required_DEMO_001_003_004_x", ["DEMO-001", "DEMO-003", "DEMO-004"], "MUST"),
        ("test_required_DEMO_001_to_003_machine", ["DEMO-001", "DEMO-002", "DEMO-003"], "MUST"),
        ("test_required_DEMO_002_003_and_OTHER_005_x", ["DEMO-002", "DEMO-003", "OTHER-005"], "MUST"),
        ("test_unknown_partitions_raise", [], None),
        ("test_may_DEMO_007_not_the_convention", [], None),
    ],
)
def test_ids_and_level_from_test_names(name: str, ids: list[str], level: str | None) -> None:
    assert ids_in_test_name(name) == ids
    assert level_of_test_name(name) == level


def test_ids_in_text_accept_both_spellings_and_known_areas_only() -> None:
    text = "RESTORE_002_ExactlyOneOwner, COMMIT-011, test_required_ASSIGN_001_x, DEMO-001, XASSIGN-001, DISC-0011"
    assert ids_in_text(text) == {"RESTORE-002", "COMMIT-011", "ASSIGN-001"}


def test_tests_are_found_by_name_and_by_requirement_mark(tmp_path: Path) -> None:
    suite = tmp_path / "conformance" / "suite"
    suite.mkdir(parents=True)
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_a.py").write_text("def test_required_DEMO_001_and_002_x():\n    pass\n")
    (suite / "test_b.py").write_text(
        '@requirement(\n    "DEMO-003",\n    "DEMO-001",\n    capability="assignment",\n)\n'
        "def test_checks_two():\n    pass\n"
    )
    assert tests_by_id(tmp_path) == {
        "DEMO-001": [
            "conformance/suite/test_b.py::test_checks_two",
            "tests/test_a.py::test_required_DEMO_001_and_002_x",
        ],
        "DEMO-002": ["tests/test_a.py::test_required_DEMO_001_and_002_x"],
        "DEMO-003": ["conformance/suite/test_b.py::test_checks_two"],
    }


def test_tla_properties_are_optional(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "kconform.conformance.spec_tools.tlc", None)
    assert requirements.tla_properties() == {}


def test_requirements_verb_lists_spec_checker_and_tests(capsys: pytest.CaptureFixture[str]) -> None:
    assert requirements.main([]) == 0
    out = capsys.readouterr().out
    assert "ASSIGN-001 (MUST, fidelity) The assigner gives every partition exactly one subtask" in out
    anchor = "assign-001-must-fidelity-the-assigner-gives-every-partition-exactly-one-subtask"
    assert f"  spec:    spec/assignment.md#{anchor}" in out
    assert "  checker: check_plan" in out
    assert "  test:    tests/test_assignment.py::test_required_ASSIGN_001_owner_in_range" in out


def test_requirements_verb_markdown_is_a_table(capsys: pytest.CaptureFixture[str]) -> None:
    assert requirements.main(["--markdown"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert "| id | level | class | title | judged at | from outside | checked by | tests | mutants | TLA+ |" in lines
    row = next(line for line in lines if line.startswith("| [ASSIGN-001]"))
    assert row.startswith(
        "| [ASSIGN-001](assignment.md#assign-001-must-fidelity-the-assigner-gives-every-partition-exactly-one-subtask)"
    )
    assert "| protocol, Spark queries | - | [`check_plan`](../conformance/checks/checkers.py) |" in row
    test = "tests/test_assignment.py::test_required_ASSIGN_001_owner_in_range"
    assert f"[`{test}`](../tests/test_assignment.py)" in row
    row = next(line for line in lines if line.startswith("| [COMMIT-004]"))
    assert "[`TwoPhaseCommitSink!COMMIT_004_NoTransactionLingers`](tla/TwoPhaseCommitSink.tla)" in row
    row = next(line for line in lines if line.startswith("| [RESTORE-006]"))
    assert "| protocol | not observable: A metadata answer at restore that lacks a partition" in row


def test_every_link_of_the_requirement_table_reaches_a_file() -> None:
    """Checkers, tests and TLA+ modules are linked by path from ``spec/``: a moved file breaks the table."""
    table = render_markdown(traces())
    targets = set(re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", table))
    assert {"assignment.md", "../conformance/checks/checkers.py", "tla/TwoPhaseCommitSink.tla"} <= targets
    missing = sorted(t for t in targets if not (REPO_ROOT / "spec" / t).is_file())
    assert not missing, f"the requirement table links to files that do not exist: {missing}"


def test_spec_requirements_md_is_up_to_date() -> None:
    pytest.importorskip("pyspark", reason="the table lists the pipeline mutants, which need the pipeline extra")
    committed = (REPO_ROOT / "spec" / "REQUIREMENTS.md").read_text(encoding="utf-8")
    assert committed == render_markdown(traces()) + "\n", (
        "spec/REQUIREMENTS.md is stale: regenerate it with `make docs` "
        "(or `kconform requirements --markdown > spec/REQUIREMENTS.md`)"
    )


def test_checkers_are_found_where_defined(tmp_path: Path) -> None:
    (tmp_path / "conformance" / "checks").mkdir(parents=True)
    (tmp_path / "conformance" / "checks" / "checkers.py").write_text("def check_demo():\n    pass\n")
    (tmp_path / "conformance" / "other.py").write_text(
        "def check_demo():\n    pass\n\n\nclass Helper:\n    def rule(self):\n        pass\n"
    )
    found = definitions(tmp_path)
    assert found["check_demo"] == "conformance/checks/checkers.py"  # the checker modules come first
    assert found["kconform.conformance.other.check_demo"] == "conformance/other.py"
    assert found["rule"] == found["Helper"] == "conformance/other.py"
    assert "kconform.conformance.checks.checkers.absent" not in found


def test_every_id_a_mutant_must_fail_has_a_requirement_row() -> None:
    rows = {t.requirement.id for t in traces()}
    registered = registry.registered()
    assert len(registered) >= 50, "the mutant modules registered too few mutants"
    unknown = {name: sorted(e.mutant.kills_on - rows) for name, e in registered.items() if e.mutant.kills_on - rows}
    assert not unknown, f"mutants name requirement ids the spec does not define: {unknown}"


def test_every_mutant_is_on_the_row_of_each_id_it_names_linked_to_the_line_of_its_definition() -> None:
    """The link goes to the ``class``/``def`` of its bug, and the registration naming the mutant sits right above it."""
    rows = {t.requirement.id: t for t in traces()}
    cells = {i: _mutant_links(render_markdown([trace])) for i, trace in rows.items()}
    for name, entry in registry.registered().items():
        where = entry.definition
        for req_id in entry.mutant.kills_on:
            link = cells[req_id].get(name)
            assert link is not None, f"mutant {name} is not on the row of {req_id}"
            path, _, line = link.partition("#L")
            source = (REPO_ROOT / "spec" / path).resolve()
            assert source == where.path.resolve() and int(line) == where.line, (name, link, where)
            lines = source.read_text(encoding="utf-8").splitlines()
            assert re.match(rf"\s*(class|def) {where.name}\b", lines[int(line) - 1]), (name, lines[int(line) - 1])
            above = "\n".join(lines[max(0, int(line) - 12) : int(line) - 1]).rpartition("\n\n")[2]
            assert f'"{name}"' in above, f"mutant {name} is not registered right above {where.name} ({link})"


def _mutant_links(table: str) -> dict[str, str]:
    """Mutant name -> link target (from ``spec/``) in the mutants column (the second last) of a one-row table."""
    row = table.splitlines()[-1].strip("|").split(" | ")
    return dict(re.findall(r"\[`(\w+)`\]\(([^)]+)\)", row[-2]))


def test_anchors_are_github_s_which_keeps_each_space() -> None:
    assert github_slug("STRAT-001 (MUST) `murmur2(key) % n` ok") == "strat-001-must-murmur2key--n-ok"


def test_every_checker_the_spec_names_exists() -> None:
    """The spec is documentation users read: a checker it names must be a function of the suite."""
    import kconform.conformance.checks.checkers
    import kconform.conformance.checks.client_checkers
    import kconform.conformance.checks.history
    import kconform.conformance.checks.input_checkers
    import kconform.conformance.checks.liveness_checkers
    import kconform.conformance.checks.pipeline_checkers
    import kconform.conformance.checks.sink_checkers
    import kconform.conformance.checks.strategy_checkers

    spec = Path(requirements.__file__).resolve().parents[2] / "spec"
    named = set(re.findall(r"`(check_[a-z_]+|global_spread)`", "".join(p.read_text() for p in spec.glob("*.md"))))
    defined = {
        n
        for m in (
            kconform.conformance.checks.checkers,
            kconform.conformance.checks.client_checkers,
            kconform.conformance.checks.history,
            kconform.conformance.checks.input_checkers,
            kconform.conformance.checks.liveness_checkers,
            kconform.conformance.checks.pipeline_checkers,
            kconform.conformance.checks.sink_checkers,
            kconform.conformance.checks.strategy_checkers,
        )
        for n in dir(m)
    }
    assert named, "the spec names no checker"
    assert named <= defined, f"spec names checkers that do not exist: {sorted(named - defined)}"


def test_the_anomaly_table_of_the_spec_is_the_checker_s() -> None:
    from kconform.conformance.checks.history import ANOMALY_REQUIREMENT

    page = (Path(requirements.__file__).resolve().parents[2] / "spec" / "commit.md").read_text()
    rows = dict(re.findall(r"^\| `([a-z-]+)` \| [^|]+ \| ([A-Z]+-\d{3}) \|", page, re.MULTILINE))
    assert rows == ANOMALY_REQUIREMENT


def test_every_suite_module_says_where_it_judges_an_adapter_and_its_pipeline_mark_agrees() -> None:
    """``SUITE_LEVELS`` (the requirement table's "judged at") names every suite module; those marked pipeline as a
    whole are the pipeline level's, the others the protocol level's."""
    suite = REPO_ROOT / requirements.SUITE
    modules = {path.stem: path.read_text(encoding="utf-8") for path in suite.glob("test_*.py")}
    assert set(requirements.SUITE_LEVELS) == set(modules)
    for module, text in modules.items():
        pipeline = "pytestmark = pytest.mark.pipeline" in text
        assert (requirements.SUITE_LEVELS[module] != "protocol") == pipeline, module


def test_judged_at_counts_suite_tests_only_in_the_table_s_order() -> None:
    tests = [
        "tests/test_restore.py::test_required_X",
        "conformance/suite/test_flink_jobs.py::test_required_Y",
        "conformance/suite/test_source.py::test_required_Z",
    ]
    assert requirements.judged_at(tests) == ["protocol", "Flink jobs"]
    assert requirements.judged_at(tests[:1]) == []


OUTSIDE_PAGE = """### DEMO-010 (MUST, safety) Judged from outside

**From outside.** Observable. The broker's open transactions.

### DEMO-011 (MUST, safety) Not judged from outside yet

**Checked by.** `check_plan`.

**From outside.** Observable, not judged yet. What read_committed
readers see.

### DEMO-012 (MUST, safety) Hidden inside

**From outside.** Not observable. Which producer committed.

### DEMO-013 (MUST, fidelity) Silent
"""


def test_from_outside_paragraphs_are_parsed_in_their_three_forms() -> None:
    found = [(r.outside, r.outside_why) for r in parse_page(OUTSIDE_PAGE, "demo.md")]
    assert found == [
        (requirements.OBSERVABLE, "The broker's open transactions."),
        (requirements.UNJUDGED, "What read_committed readers see."),
        (requirements.HIDDEN, "Which producer committed."),
        ("", ""),
    ]


def test_a_from_outside_paragraph_without_its_verdict_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "spec").mkdir()
    (tmp_path / "spec" / "a.md").write_text(PAGE + "\n**From outside.** Partly: the broker shows some.\n")
    with pytest.raises(ValueError, match=r"a\.md: 'From outside\.' paragraphs must start .*Partly"):
        load_requirements(tmp_path)


def test_outside_problems_name_a_silent_id_a_claim_without_a_judge_and_a_stale_verdict() -> None:
    observable, unjudged, hidden, _ = parse_page(OUTSIDE_PAGE, "demo.md")
    silent = Requirement("DEMO-014", "MUST", "Silent safety", "demo.md", category="safety")
    broker = Requirement("KAFKA-001", "MUST", "The broker's own", "kafka.md", category="safety")
    protocol = ["conformance/suite/test_sink.py::test_required_DEMO"]
    spark = ["conformance/suite/test_pipeline.py::test_required_DEMO"]
    rows = [
        requirements.Trace(observable, protocol),
        requirements.Trace(unjudged, protocol + spark),
        requirements.Trace(hidden, spark),
        requirements.Trace(silent, protocol),
        requirements.Trace(broker, []),
    ]
    assert requirements.outside_problems(rows) == [
        "DEMO-010: marked observable from outside, but no pipeline-level test judges it",
        "DEMO-011: a pipeline-level test judges it, but its section says 'observable, not judged yet'",
        "DEMO-012: a pipeline-level test judges it, but its section says 'not observable'",
        "DEMO-014: judged at the protocol level only, and its section has no 'From outside.'",
    ]
    fixed = [requirements.Trace(observable, spark), requirements.Trace(unjudged, protocol)]
    assert requirements.outside_problems([*fixed, requirements.Trace(hidden, protocol)]) == []


def test_every_connector_safety_id_judged_at_the_protocol_level_only_says_why_from_outside() -> None:
    """Issue 28 item 3: the spec says, for each connector safety id the pipeline level does not judge, what it
    would observe or which observation is missing; one marked observable has a pipeline-level judge."""
    assert requirements.outside_problems(traces()) == []


RETURNED = re.compile(r'Violation\(\s*"([A-Z]+-\d{3})",\s*"([a-z]+(?:-[a-z]+)+)"')
"""A checker's violation of a literal id and kind (``Violation("COMMIT-024", "unclear-error", ...)``)."""


def test_no_paragraph_but_a_diagnostics_ids_lists_a_wording_violation() -> None:
    """A violation kind only diagnostics ids' checkers return (what a failure names) is listed in the "Checked by."
    paragraphs of diagnostics ids alone: a safety, liveness or fidelity id whose paragraph still listed one would
    claim it fails on a message's wording."""
    source = "\n".join(p.read_text() for p in (REPO_ROOT / "conformance" / "checks").glob("*.py"))
    returned = RETURNED.findall(source)
    specified = load_requirements()
    diagnostics = {i for i, r in specified.items() if r.category == "diagnostics"}
    wording = {k for i, k in returned if i in diagnostics} - {k for i, k in returned if i not in diagnostics}
    assert {"unclear-error", "timeout-unnamed", "refusal-unnamed", "uncommitted-unnamed"} <= wording, wording
    listed = {
        req_id: [kind for kind in sorted(wording) if f"`{kind}`" in req.checked_by]
        for req_id, req in specified.items()
        if req.category != "diagnostics"
    }
    assert {req_id: kinds for req_id, kinds in listed.items() if kinds} == {}
