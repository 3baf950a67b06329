"""``kconform run`` end to end, on the sample suite in ``fixtures/suite_sample`` with its sample adapters.

Each run is a subprocess (``python -m conformance.cli run``): the runner calls ``pytest.main``
in-process, and nesting that inside this pytest session would share plugins, marks and signals.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from conformance import runner
from conformance.expectations import Deviation, find_deviation, load_expectations
from conformance.runner import Status, aggregate, counterexamples

SAMPLE = Path(__file__).resolve().parents[1] / "fixtures" / "suite_sample"
SUITE = "kconform_sample_suite"
ADAPTERS = f"{SUITE}.adapters"
BUG = "https://example.org/issues/1"
UNVERIFIED = "the sample broker cannot show it"


def kconform(cwd: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """Run ``kconform`` in ``cwd`` (so ``.hypothesis/`` is fresh) with the sample suite importable."""
    path = os.pathsep.join(p for p in (str(SAMPLE), os.environ.get("PYTHONPATH")) if p)
    full_env = {**os.environ, "PYTHONPATH": path, **(env or {})}
    full_env.pop("KCONFORM_PROFILE", None)
    command = [sys.executable, "-m", "conformance.cli", *args]
    return subprocess.run(command, cwd=cwd, env=full_env, capture_output=True, text=True, timeout=120, check=False)


def run_sample(tmp_path: Path, adapter: str, *args: str, env: dict[str, str] | None = None) -> Any:
    return kconform(
        tmp_path, "run", "--adapter", f"{ADAPTERS}:{adapter}", "--suite", SUITE, "--profile", "quick", *args, env=env
    )


def report(tmp_path: Path) -> Any:
    return json.loads((tmp_path / "report" / "report.json").read_text())


def by_name(rep: Any) -> dict[str, Any]:
    return {t["name"]: t for t in rep["tests"]}


def by_id(rep: Any) -> dict[str, Any]:
    return {r["id"]: r for r in rep["requirements"]}


def expectations(tmp_path: Path, text: str) -> str:
    path = tmp_path / "expectations.toml"
    path.write_text(text)
    return str(path)


def test_conforming_adapter_passes_and_writes_every_report(tmp_path: Path) -> None:
    proc = run_sample(tmp_path, "GOOD", "--seed", "1", "--report", "report")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "[1/7] required_ASSIGN_001_owner_in_range ... PASS (" in proc.stdout
    assert "Every result is as expected: exit 0." in proc.stdout
    rep = report(tmp_path)
    assert rep["adapter"]["name"] == "sample-good"
    assert rep["adapter"]["capabilities"] == ["assignment", "discovery"]
    assert (rep["seed"], rep["profile"], rep["level"], rep["exit_code"]) == (1, "quick", "protocol", 0)
    assert by_id(rep)["ASSIGN-001"]["status"] == "PASS"
    assert by_id(rep)["ASSIGN-001"]["title"] == "Every partition is owned by exactly one subtask"
    assert by_id(rep)["ASSIGN-001"]["spec"].startswith("spec/assignment.md#assign-001-must-")
    junit = ET.parse(tmp_path / "report" / "junit.xml").getroot()
    assert len(junit.findall(".//testcase")) == 7
    markdown = (tmp_path / "report" / "report.md").read_text()
    assert "| requirement | level | title | status | tests |" in markdown
    assert "sample-good" in markdown


def test_missing_capability_is_a_skip_with_its_reason_never_a_pass(tmp_path: Path) -> None:
    proc = run_sample(tmp_path, "GOOD", "--seed", "1", "--report", "report")
    reason = "COMMIT-001: adapter 'sample-good' does not declare capability 'exactly-once-sink'"
    assert f"required_COMMIT_001_needs_a_sink ... SKIP ({reason})" in proc.stdout
    assert by_id(report(tmp_path))["COMMIT-001"]["status"] == "SKIP"
    assert by_id(report(tmp_path))["COMMIT-001"]["reason"] == reason


def test_must_failure_fails_the_run_with_counterexample_blob_and_replay_line(tmp_path: Path) -> None:
    proc = run_sample(tmp_path, "BROKEN", "--seed", "1", "--report", "report")
    assert proc.returncode == 1
    failure = by_name(report(tmp_path))["required_ASSIGN_004_matches_reference"]
    assert failure["status"] == "FAIL"
    assert failure["requirements"] == ["ASSIGN-004"]
    [example] = failure["counterexamples"]
    assert example["example"].startswith(("Failing test case", "Falsifying example"))
    assert "partition=2" in example["example"]
    assert example["blob"].startswith("@reproduce_failure(")
    replay = (
        f"kconform run --adapter {ADAPTERS}:BROKEN --only required_ASSIGN_004_matches_reference --seed 1"
        f" --profile quick --suite {SUITE}"
    )
    assert failure["replay"] == replay
    assert f"replay: {replay}" in proc.stdout
    assert example["blob"] in proc.stdout
    assert example["blob"] in (tmp_path / "report" / "report.md").read_text()


def test_replay_line_reruns_only_that_test_and_fails_the_same_way(tmp_path: Path) -> None:
    first = run_sample(tmp_path, "BROKEN", "--seed", "5", "--report", "report")
    failure = by_name(report(tmp_path))["required_ASSIGN_004_matches_reference"]
    replay = shlex.split(failure["replay"])
    assert replay[:2] == ["kconform", "run"]
    again = kconform(tmp_path, *replay[1:], "--report", "again")
    assert first.returncode == again.returncode == 1
    rerun = json.loads((tmp_path / "again" / "report.json").read_text())
    assert [t["name"] for t in rerun["tests"]] == ["required_ASSIGN_004_matches_reference"]
    assert rerun["tests"][0]["counterexamples"][0]["blob"] == failure["counterexamples"][0]["blob"]


@pytest.mark.parametrize(("strict", "code"), [((), 0), (("--strict",), 1)])
def test_should_failure_fails_the_run_only_when_strict(tmp_path: Path, strict: tuple[str, ...], code: int) -> None:
    proc = run_sample(tmp_path, "BROKEN", "--only", "should_RESTORE_005", *strict)
    assert "should_RESTORE_005_partition_two_on_its_owner ... FAIL" in proc.stdout
    assert proc.returncode == code, proc.stdout


def test_may_failure_never_fails_the_run(tmp_path: Path) -> None:
    proc = run_sample(tmp_path, "BROKEN", "--only", "optional_ASSIGN_005", "--strict")
    assert "MAY: reported, never fails the run" in proc.stdout
    assert proc.returncode == 0, proc.stdout


def test_listed_deviation_is_xfail_and_does_not_fail_the_run(tmp_path: Path) -> None:
    file = expectations(
        tmp_path,
        f'[[deviation]]\nrequirement = "ASSIGN-004"\ntest = "matches_reference"\nreason = "we hash"\nlink = "{BUG}"\n',
    )
    proc = run_sample(tmp_path, "BROKEN", "--expectations", file, "--report", "report")
    assert proc.returncode == 0, proc.stdout
    assert f"required_ASSIGN_004_matches_reference ... XFAIL (expected: {BUG})" in proc.stdout
    rep = report(tmp_path)
    assert by_id(rep)["ASSIGN-004"]["status"] == "XFAIL"
    assert by_id(rep)["ASSIGN-004"]["reason"] == f"we hash ({BUG})"
    assert by_name(rep)["required_ASSIGN_004_matches_reference"]["counterexamples"]


def test_listed_deviation_that_passes_is_xpass_and_fails_the_run(tmp_path: Path) -> None:
    file = expectations(tmp_path, f'[[deviation]]\nrequirement = "ASSIGN-004"\nreason = "was broken"\nlink = "{BUG}"\n')
    proc = run_sample(tmp_path, "GOOD", "--expectations", file, "--report", "report")
    assert proc.returncode == 1
    assert "required_ASSIGN_004_matches_reference ... XPASS" in proc.stdout
    assert "remove it from the expectations file" in proc.stdout
    assert by_id(report(tmp_path))["ASSIGN-004"]["status"] == "XPASS"


def run_partial(tmp_path: Path, adapter: str, unverified: str, *args: str) -> Any:
    """The sample suite, its ``same_owner_twice`` test declaring ``unverified`` not verified (``partial``);
    the broker is pinned so that the broker test passes whatever the default broker is."""
    env = {"SAMPLE_UNVERIFIED": unverified, "SAMPLE_EXPECTED_BROKER": "external"}
    return run_sample(tmp_path, adapter, "--broker", "external", "--seed", "1", *args, env=env)


def test_partially_verified_requirement_is_partial_in_every_report_never_a_pass(tmp_path: Path) -> None:
    proc = run_partial(tmp_path, "GOOD", "ASSIGN-004", "--report", "report")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    [line] = [line for line in proc.stdout.splitlines() if "required_ASSIGN_003_same_owner_twice ..." in line]
    assert "same_owner_twice ... PARTIAL (" in line
    assert line.endswith(f"s; ASSIGN-004 not verified: {UNVERIFIED})")
    [row] = [line.split() for line in proc.stdout.splitlines() if line.startswith("ASSIGN-004 ")]
    assert row[-5:] == ["PARTIAL", "1", "partial,", "1", "pass"]
    reason = f"{UNVERIFIED} (1 of 2 tests verified it fully)"
    assert f"-> not verified in full: {reason}" in proc.stdout
    assert (
        f"6 requirements: 1 PARTIAL, 4 PASS, 1 SKIP. NOT FULLY VERIFIED, so not a pass: ASSIGN-004: {reason}. "
        "Nothing failed: exit 0 (--strict fails on PARTIAL)." in proc.stdout
    )
    assert "Every result is as expected" not in proc.stdout
    rep = report(tmp_path)
    assert (by_id(rep)["ASSIGN-004"]["status"], by_id(rep)["ASSIGN-003"]["status"]) == ("PARTIAL", "PASS")
    assert by_id(rep)["ASSIGN-004"]["reason"] == f"not verified in full: {reason}"
    test = by_name(rep)["required_ASSIGN_003_same_owner_twice"]
    assert (test["status"], test["unverified"], test["metrics"]) == ("PARTIAL", {"ASSIGN-004": UNVERIFIED}, {})
    markdown = (tmp_path / "report" / "report.md").read_text()
    assert f"| PARTIAL (not verified in full: {reason}) | 1 partial, 1 pass |" in markdown
    assert f"NOT FULLY VERIFIED, so not a pass: ASSIGN-004: {reason}." in markdown
    suite = ET.parse(tmp_path / "report" / "junit.xml").getroot().find("testsuite")
    assert suite is not None
    cases = {c.get("name"): c for c in suite.iter("testcase")}
    passed = cases["test_required_ASSIGN_003_same_owner_twice"]
    assert [child.tag for child in passed] == ["properties"]
    properties = {p.get("name"): p.get("value") for p in passed.iter("property")}
    assert properties == {"kconform.unverified.ASSIGN-004": UNVERIFIED, "kconform.status": "PARTIAL"}
    unverified = cases["test_required_ASSIGN_003_same_owner_twice (unverified: ASSIGN-004)"]
    [skipped] = list(unverified)
    assert (skipped.tag, skipped.get("message")) == ("skipped", f"PARTIAL: ASSIGN-004 not verified: {UNVERIFIED}")
    assert (suite.get("tests"), suite.get("skipped")) == (str(len(cases)), "2")  # and COMMIT-001's skip


@pytest.mark.parametrize(("strict", "code"), [((), 0), (("--strict",), 1)])
def test_partial_fails_the_run_only_when_strict(tmp_path: Path, strict: tuple[str, ...], code: int) -> None:
    proc = run_partial(tmp_path, "GOOD", "ASSIGN-004", "--only", "same_owner_twice", *strict)
    assert proc.returncode == code, proc.stdout
    assert "Every result is as expected" not in proc.stdout
    assert ("Not as expected, exit 1: required_ASSIGN_003_same_owner_twice (PARTIAL MUST)" in proc.stdout) == bool(
        strict
    )


def test_failure_wins_over_partial_on_the_same_requirement(tmp_path: Path) -> None:
    proc = run_partial(tmp_path, "BROKEN", "ASSIGN-004", "--report", "report")
    assert proc.returncode == 1
    rep = report(tmp_path)
    assert by_name(rep)["required_ASSIGN_003_same_owner_twice"]["status"] == "PARTIAL"
    assert by_name(rep)["required_ASSIGN_004_matches_reference"]["status"] == "FAIL"
    assert by_id(rep)["ASSIGN-004"]["status"] == "FAIL"
    assert "NOT FULLY VERIFIED" not in proc.stdout


@pytest.mark.parametrize(
    ("unverified", "status", "message"),
    [
        ("all", "PARTIAL", f"ASSIGN-003 not verified: {UNVERIFIED}; ASSIGN-004 not verified: {UNVERIFIED}"),
        ("RESTORE-001", "FAIL", "(unknown: ['RESTORE-001']) and a non-empty reason"),
    ],
)
def test_partial_names_the_tests_own_ids(tmp_path: Path, unverified: str, status: str, message: str) -> None:
    run_partial(tmp_path, "GOOD", unverified, "--only", "same_owner_twice", "--report", "report")
    rep = report(tmp_path)
    test = by_name(rep)["required_ASSIGN_003_same_owner_twice"]
    assert test["status"] == status
    assert test["message"].endswith(message)
    assert {by_id(rep)[i]["status"] for i in ("ASSIGN-003", "ASSIGN-004")} == {status}


@pytest.mark.parametrize(("unverified", "status"), [("ASSIGN-004", "PARTIAL"), ("ASSIGN-003", "XPASS")])
def test_only_a_verified_id_shows_that_a_listed_deviation_is_gone(tmp_path: Path, unverified: str, status: str) -> None:
    file = expectations(
        tmp_path, f'[[deviation]]\nrequirement = "ASSIGN-004"\ntest = "same_owner"\nreason = "r"\nlink = "{BUG}"\n'
    )
    run_partial(
        tmp_path, "GOOD", unverified, "--only", "same_owner_twice", "--expectations", file, "--report", "report"
    )
    assert by_name(report(tmp_path))["required_ASSIGN_003_same_owner_twice"]["status"] == status


def test_requirement_verdict_failure_beats_skip_beats_partial_per_id() -> None:
    def result(status: Status, unverified: dict[str, str] | None = None, message: str = "") -> runner.TestResult:
        test = runner.TestResult("n", "n", ["COMMIT-011", "COMMIT-013"], "MUST", True, status, 0.0, message)
        test.unverified = unverified or {}
        return test

    def rows(*tests: runner.TestResult) -> dict[str, tuple[Status, str]]:
        return {r.id: (r.status, r.reason) for r in aggregate(tests, {})[0]}

    partial = result(Status.PARTIAL, {"COMMIT-011": "broker lacks x"})
    assert rows(partial, result(Status.PASS)) == {
        "COMMIT-011": (Status.PARTIAL, "broker lacks x (1 of 2 tests verified it fully)"),
        "COMMIT-013": (Status.PASS, ""),
    }
    assert rows(partial, result(Status.FAIL))["COMMIT-011"] == (Status.FAIL, "")
    assert rows(partial, result(Status.SKIP, message="no retries"))["COMMIT-011"] == (
        Status.SKIP,
        "no retries; partial: broker lacks x",
    )


def test_bad_expectations_file_is_a_usage_error(tmp_path: Path) -> None:
    file = expectations(tmp_path, '[[deviation]]\nrequirement = "ASSIGN-004"\nreason = "no link"\n')
    proc = run_sample(tmp_path, "GOOD", "--expectations", file)
    assert proc.returncode == 2
    assert "'link' is required" in proc.stderr
    assert "Traceback" not in proc.stderr


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('[[deviation]]\nrequirement = "ASSIGN-004"\nlink = "https://x"\n', "'reason' is required"),
        ('[[deviation]]\nrequirement = "ASSIGN-004"\nreason = "r"\nlink = "#12"\n', "'link' must be the URL"),
        ('[[deviation]]\nrequirement = "NOPE-001"\nreason = "r"\nlink = "https://x"\n', "not a requirement id"),
        ('[[deviation]]\nrequirement = "ASSIGN-004"\nreason = "r"\nlink = "https://x"\ntests = "a"\n', "unknown keys"),
        ('[deviation]\nrequirement = "ASSIGN-004"\n', "array of tables"),
        ("[[deviation]\n", "not valid TOML"),
    ],
)
def test_expectations_are_validated(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        load_expectations(Path(expectations(tmp_path, text)), {"ASSIGN-004"})


def test_deviation_matches_requirement_and_optional_test_substring() -> None:
    any_test = Deviation("ASSIGN-004", "r", BUG)
    one_test = Deviation("ASSIGN-004", "r", BUG, test="golden")
    assert find_deviation([one_test, any_test], "required_ASSIGN_004_golden", ["ASSIGN-004"]) is one_test
    assert find_deviation([one_test, any_test], "required_ASSIGN_004_formula", ["ASSIGN-004"]) is any_test
    assert find_deviation([one_test, any_test], "required_ASSIGN_001_x", ["ASSIGN-001"]) is None


def test_hanging_adapter_is_a_failure_after_the_timeout_not_a_hang(tmp_path: Path) -> None:
    proc = run_sample(tmp_path, "HANGING", "--only", "required_ASSIGN_004", "--timeout", "2", "--report", "report")
    assert proc.returncode == 1
    failure = by_name(report(tmp_path))["required_ASSIGN_004_matches_reference"]
    assert failure["status"] == "FAIL"
    assert "no result within --timeout 2s" in failure["message"]
    assert "--timeout 2" in failure["replay"]


def test_interrupted_run_fails_even_if_nothing_failed(tmp_path: Path) -> None:
    proc = run_sample(tmp_path, "INTERRUPTED", "--only", "ASSIGN_001", "--report", "report")
    assert proc.returncode == 1
    assert "note: the run was interrupted after 0 of 2 tests" in proc.stdout
    assert "Not as expected, exit 1: the run was interrupted" in proc.stdout


@pytest.mark.parametrize(
    ("adapter", "message"),
    [
        ("no_such_module:ADAPTER", "cannot import 'no_such_module'"),
        (ADAPTERS, "must be 'module:attr'"),
        (f"{ADAPTERS}:MISSING", "has no attribute 'MISSING'"),
        (f"{ADAPTERS}:NOT_AN_ADAPTER", "is not a kconform adapter"),
    ],
)
def test_bad_adapter_is_a_usage_error_without_traceback(tmp_path: Path, adapter: str, message: str) -> None:
    proc = kconform(tmp_path, "run", "--adapter", adapter, "--suite", SUITE)
    assert proc.returncode == 2
    assert proc.stderr.startswith("kconform run: error: ")
    assert message in proc.stderr
    assert "Traceback" not in proc.stderr


def test_level_pipeline_selects_only_pipeline_tests(tmp_path: Path) -> None:
    proc = run_sample(tmp_path, "GOOD", "--level", "pipeline")
    assert "[1/1] required_COMMIT_011_needs_a_pipeline ... SKIP" in proc.stdout
    assert proc.returncode == 0


def test_level_all_runs_both_levels(tmp_path: Path) -> None:
    proc = run_sample(tmp_path, "GOOD", "--level", "all")
    assert "[8/8] " in proc.stdout
    assert proc.returncode == 0


def test_nothing_selected_is_an_error_not_a_pass(tmp_path: Path) -> None:
    proc = run_sample(tmp_path, "GOOD", "--only", "no_such_test")
    assert proc.returncode == 2
    assert "matches --only 'no_such_test'; nothing was checked" in proc.stderr


def test_suite_module_that_does_not_import_fails_and_empty_level_is_named(tmp_path: Path) -> None:
    proc = kconform(tmp_path, "run", "--adapter", f"{ADAPTERS}:GOOD", "--suite", "kconform_sample_broken_suite",
                    "--level", "all")  # fmt: skip
    assert proc.returncode == 1
    assert "kconform_sample_broken_suite/test_broken.py ... FAIL" in proc.stdout
    assert "collection error: ModuleNotFoundError" in proc.stdout
    assert "required_ASSIGN_001_owner_in_range ... PASS" in proc.stdout
    assert "level pipeline: the suite 'kconform_sample_broken_suite' has no pipeline tests yet" in proc.stdout


def test_seed_is_random_and_printed_when_not_given(tmp_path: Path) -> None:
    proc = run_sample(tmp_path, "GOOD", "--only", "owner_in_range", "--report", "report")
    seed = report(tmp_path)["seed"]
    assert f"seed {seed} (replay this run with --seed {seed})" in proc.stdout


@pytest.mark.parametrize(("broker", "code"), [("external", 0), ("tansu", 1)])
def test_broker_is_passed_to_the_suite(tmp_path: Path, broker: str, code: int) -> None:
    env = {"SAMPLE_EXPECTED_BROKER": "external"}
    proc = run_sample(tmp_path, "GOOD", "--only", "sees_the_chosen_broker", "--broker", broker, env=env)
    assert proc.returncode == code, proc.stdout


def test_counterexamples_of_an_exception_group_are_one_per_failure() -> None:
    first, second = ValueError("a"), KeyError("b")
    first.add_note("Falsifying example: f(\n    a=11,\n)")
    first.add_note(
        "\nYou can reproduce this example by temporarily adding @reproduce_failure('6', b'AE') as a decorator"
    )
    second.add_note("Falsifying example: f(\n    b=11,\n)")
    found = counterexamples(ExceptionGroup("Hypothesis found 2 distinct failures.", [first, second]))
    assert [(c.error, c.example, c.blob) for c in found] == [
        ("ValueError: a", "Falsifying example: f(\n    a=11,\n)", "@reproduce_failure('6', b'AE')"),
        ("KeyError: 'b'", "Falsifying example: f(\n    b=11,\n)", None),
    ]
