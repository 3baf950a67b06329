"""``kconform run`` end to end, on the sample suite in ``fixtures/suite_sample`` with its sample adapters.

Each run is a subprocess (``python -m kconform.conformance.cli run``): the runner calls ``pytest.main``
in-process, and nesting that inside this pytest session would share plugins, marks and signals.
"""

from __future__ import annotations

import io
import json
import os
import shlex
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import hypothesis.errors
import pytest
from hypothesis.errors import Flaky

from kconform.conformance import progress
from kconform.conformance.adapter.loader import default_adapter
from kconform.conformance.adapters.flink_kafka import ADAPTER_SPEC, FLINK_CONNECTOR_ENV
from kconform.conformance.checks.checkers import Violation, ViolationError
from kconform.conformance.errors import HarnessError
from kconform.conformance.gate import collector, results, run_command
from kconform.conformance.gate.collector import counterexamples
from kconform.conformance.gate.expectations import (
    Deviation,
    excusing_deviation,
    find_deviation,
    load_expectations,
    unmatched_tests,
)
from kconform.conformance.gate.options import RunOptions
from kconform.conformance.gate.report import violates
from kconform.conformance.gate.results import Status, aggregate

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
    command = [sys.executable, "-m", "kconform.conformance.cli", *args]
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
    assert "[ 1/10] required_ASSIGN_001_owner_in_range ... PASS (" in proc.stdout
    assert "Every result is as expected: exit 0." in proc.stdout
    rep = report(tmp_path)
    assert rep["adapter"]["name"] == "sample-good"
    assert rep["adapter"]["capabilities"] == ["assignment", "discovery"]
    assert (rep["seed"], rep["profile"], rep["level"], rep["exit_code"]) == (1, "quick", "all", 0)
    assert by_id(rep)["ASSIGN-001"]["status"] == "PASS"
    assert by_id(rep)["ASSIGN-001"]["title"] == "The assigner gives every partition exactly one subtask"
    assert by_id(rep)["ASSIGN-001"]["spec"].startswith("spec/assignment.md#assign-001-must-")
    junit = ET.parse(tmp_path / "report" / "junit.xml").getroot()
    assert len(junit.findall(".//testcase")) == 10
    markdown = (tmp_path / "report" / "report.md").read_text()
    assert "| requirement | level | class | title | status | tests |" in markdown
    assert "sample-good" in markdown
    assert (rep["safe"], rep["flink_faithful"]) == (None, True)  # its safety ids are pipeline tests, skipped
    assert by_id(rep)["ASSIGN-001"]["class"] == "fidelity"
    assert "Flink-faithful: yes" in proc.stdout
    assert "- **safe: not verified (no safety requirement verified in full; not verified: COMMIT-011 SKIP" in markdown
    assert not [p for p in junit.iter("property") if p.get("name", "").startswith("hypothesis-statistics")]
    ids = {c.get("name"): p.get("value") for c in junit.iter("testcase") for p in c.iter("property")}
    assert ids["test_required_ASSIGN_001_owner_in_range"] == "ASSIGN-001"


def test_missing_capability_is_a_skip_with_its_reason_never_a_pass(tmp_path: Path) -> None:
    proc = run_sample(tmp_path, "GOOD", "--seed", "1", "--report", "report")
    reason = "COMMIT-001: adapter 'sample-good' does not declare capability 'exactly-once-sink'"
    assert f"required_COMMIT_001_needs_a_sink ... SKIP ({reason})" in proc.stdout
    assert by_id(report(tmp_path))["COMMIT-001"]["status"] == "SKIP"
    assert by_id(report(tmp_path))["COMMIT-001"]["reason"] == reason.removeprefix("COMMIT-001: ")  # its own row


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
        f"{shlex.join(collector.kconform_program())} run --adapter {ADAPTERS}:BROKEN --level protocol"
        f" --only required_ASSIGN_004_matches_reference --seed 1 --profile quick --suite {SUITE}"
    )
    assert failure["replay"] == replay
    assert f"replay: {replay}" in proc.stdout
    assert example["blob"] in proc.stdout
    assert example["blob"] in (tmp_path / "report" / "report.md").read_text()
    [violation] = failure["violations"]
    assert (violation["id"], violation["kind"]) == ("ASSIGN-004", "failure")
    assert report(tmp_path)["flink_faithful"] is False
    [faithful] = [line for line in proc.stdout.splitlines() if line.startswith("Flink-faithful: ")]
    assert faithful.startswith("Flink-faithful: no (violated: ") and "ASSIGN-004" in faithful
    cases = {c.get("name"): c for c in ET.parse(tmp_path / "report" / "junit.xml").getroot().iter("testcase")}
    properties = {
        p.get("name"): p.get("value") for p in cases["test_required_ASSIGN_004_matches_reference"].iter("property")
    }
    assert properties == {"kconform.requirements": "ASSIGN-004", "kconform.replay": replay}


def test_replay_line_reruns_only_that_test_and_fails_the_same_way(tmp_path: Path) -> None:
    first = run_sample(tmp_path, "BROKEN", "--seed", "5", "--report", "report")
    failure = by_name(report(tmp_path))["required_ASSIGN_004_matches_reference"]
    replay = shlex.split(failure["replay"])
    assert replay[: len(collector.kconform_program()) + 1] == [*collector.kconform_program(), "run"]
    path = os.pathsep.join(p for p in (str(SAMPLE), os.environ.get("PYTHONPATH")) if p)
    env = {k: v for k, v in os.environ.items() if k != "KCONFORM_PROFILE"} | {"PYTHONPATH": path}
    again = subprocess.run([*replay, "--report", "again"], cwd=tmp_path, env=env, capture_output=True, timeout=120)
    assert first.returncode == again.returncode == 1
    rerun = json.loads((tmp_path / "again" / "report.json").read_text())
    assert [t["name"] for t in rerun["tests"]] == ["required_ASSIGN_004_matches_reference"]
    assert rerun["tests"][0]["counterexamples"][0]["blob"] == failure["counterexamples"][0]["blob"]


@pytest.mark.parametrize(("strict", "code"), [((), 0), (("--strict",), 1)])
def test_should_failure_fails_the_run_only_when_strict(tmp_path: Path, strict: tuple[str, ...], code: int) -> None:
    proc = run_sample(tmp_path, "BROKEN", "--only", "should_RESTORE_005", *strict)
    assert "should_RESTORE_005_partition_two_on_its_owner ... FAIL" in proc.stdout
    assert proc.returncode == code, proc.stdout


def test_only_takes_a_requirement_id_and_selects_the_tests_that_check_it(tmp_path: Path) -> None:
    proc = run_sample(tmp_path, "BROKEN", "--only", "RESTORE-005", "--report", "report")
    assert [t["name"] for t in report(tmp_path)["tests"]] == ["should_RESTORE_005_partition_two_on_its_owner"]
    assert proc.returncode == 0, proc.stdout


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
    assert proc.stdout.splitlines()[-1] == (
        "10 requirements: 1 PARTIAL, 6 PASS, 3 SKIP. NOT FULLY VERIFIED, so not a pass: ASSIGN-004 "
        "(see report.md for why). Nothing failed: exit 0 (--strict fails on PARTIAL)."
    )
    assert "Every result is as expected" not in proc.stdout
    rep = report(tmp_path)
    assert (by_id(rep)["ASSIGN-004"]["status"], by_id(rep)["ASSIGN-003"]["status"]) == ("PARTIAL", "PASS")
    assert by_id(rep)["ASSIGN-004"]["reason"] == f"not verified in full: {reason}"
    test = by_name(rep)["required_ASSIGN_003_same_owner_twice"]
    assert (test["status"], test["unverified"], test["metrics"]) == ("PARTIAL", {"ASSIGN-004": UNVERIFIED}, {})
    markdown = (tmp_path / "report" / "report.md").read_text()
    assert f"| PARTIAL (not verified in full: {reason}) | 1 partial, 1 pass |" in markdown
    assert "NOT FULLY VERIFIED, so not a pass: ASSIGN-004 (see report.md for why)." in markdown
    partial_section = "## Partial verdicts\n\nNot a pass: what each could not verify, and why.\n\n"
    assert f"{partial_section}- **ASSIGN-004** PARTIAL: {reason}\n" in markdown
    suite = ET.parse(tmp_path / "report" / "junit.xml").getroot().find("testsuite")
    assert suite is not None
    cases = {c.get("name"): c for c in suite.iter("testcase")}
    passed = cases["test_required_ASSIGN_003_same_owner_twice"]
    assert [child.tag for child in passed] == ["properties"]
    properties = {p.get("name"): p.get("value") for p in passed.iter("property")}
    assert properties == {
        "kconform.unverified.ASSIGN-004": UNVERIFIED,
        "kconform.status": "PARTIAL",
        "kconform.requirements": "ASSIGN-003, ASSIGN-004",
    }
    unverified = cases["test_required_ASSIGN_003_same_owner_twice (unverified: ASSIGN-004)"]
    [skipped] = list(unverified)
    assert (skipped.tag, skipped.get("message")) == ("skipped", f"PARTIAL: ASSIGN-004 not verified: {UNVERIFIED}")
    assert (suite.get("tests"), suite.get("skipped")) == (str(len(cases)), "4")  # and COMMIT-001, 011, 013's skips


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
    def result(status: Status, unverified: dict[str, str] | None = None, message: str = "") -> results.TestResult:
        test = results.TestResult("n", "n", ["COMMIT-011", "COMMIT-013"], "MUST", True, status, 0.0, message)
        test.unverified = unverified or {}
        return test

    def rows(*tests: results.TestResult) -> dict[str, tuple[Status, str]]:
        return {r.id: (r.status, r.reason) for r in aggregate(tests, {})[0]}

    partial = result(Status.PARTIAL, {"COMMIT-011": "broker lacks x"})
    assert rows(partial, result(Status.PASS)) == {
        "COMMIT-011": (Status.PARTIAL, "broker lacks x (1 of 2 tests verified it fully)"),
        "COMMIT-013": (Status.PASS, ""),
    }
    failure = result(Status.FAIL)
    failure.violated = failure.ids
    assert rows(partial, failure)["COMMIT-011"] == (Status.FAIL, "")
    assert rows(partial, result(Status.SKIP, message="no retries"))["COMMIT-011"] == (
        Status.SKIP,
        "no retries; partial: broker lacks x",
    )


def test_an_id_a_test_could_not_check_is_error_alone_and_its_other_ids_keep_their_verdict() -> None:
    """The client workload judged CLIENT-001..009 in full but could not judge LIVE-001 (its drain polled a member
    more seldom than its poll interval allows): LIVE-001 alone is ERROR, with the reason, and the run exits 3; the
    others pass. Before, the whole test was could-not-check, so every CLIENT id read ERROR too."""
    ids = ["CLIENT-004", "LIVE-001"]
    test = results.TestResult("n", "n", ids, "MUST", True, Status.PASS, 0.0)
    test.not_checked = {"LIVE-001": "the drain polled c1 every 40 s"}
    rows = {r.id: (r.status, r.reason) for r in aggregate([test], {})[0]}
    assert rows == {"CLIENT-004": (Status.PASS, ""), "LIVE-001": (Status.ERROR, "the drain polled c1 every 40 s")}
    assert [test.status_for(i) for i in ids] == [Status.PASS, Status.ERROR]
    failed = results.TestResult("n", "n", ids, "MUST", True, Status.FAIL, 0.0)
    failed.not_checked, failed.violated = {"LIVE-001": "x"}, ["CLIENT-004"]
    assert [failed.status_for(i) for i in ids] == [Status.FAIL, Status.ERROR]
    run = results.RunResult.__new__(results.RunResult)
    run.tests, run.errors = [test], []
    assert run.could_not_check == ["LIVE-001: the drain polled c1 every 40 s"]


def test_an_xfail_row_gives_the_reason_of_the_deviation_that_excused_that_id() -> None:
    """A test excused on another id (RESTORE-002) that verified this one (LIVE-001) lends it no reason: the row's
    reason is the deviation of the test that is XFAIL on LIVE-001 itself."""
    rescale = results.TestResult("rescale", "rescale", ["RESTORE-002", "LIVE-001"], "MUST", True, Status.XFAIL, 0.0)
    rescale.violated, rescale.verified_before_failing = ["RESTORE-002"], ["LIVE-001"]
    rescale.deviation = Deviation("RESTORE-002", "one task per partition", BUG)
    deleted = results.TestResult("deleted", "deleted", ["DISC-008", "LIVE-001"], "MUST", True, Status.XFAIL, 0.0)
    deleted.violated, deleted.deviation = ["LIVE-001"], Deviation("LIVE-001", "the query fails", BUG)
    rows = {r.id: (r.status, r.reason) for r in aggregate([rescale, deleted], {})[0]}
    assert rows["LIVE-001"] == (Status.XFAIL, f"the query fails ({BUG})")
    assert rows["RESTORE-002"] == (Status.XFAIL, f"one task per partition ({BUG})")


def test_failure_fails_only_the_ids_it_violates_and_leaves_the_others_unverified(tmp_path: Path) -> None:
    proc = run_sample(tmp_path, "SKEWED", "--level", "protocol", "--only", "spread_then_sparse", "--report", "report")
    assert proc.returncode == 1, proc.stdout
    rows = {line.split()[0]: line.split()[-3:] for line in proc.stdout.splitlines() if line.startswith("ASSIGN-")}
    assert rows == {"ASSIGN-002": ["FAIL", "1", "fail"], "ASSIGN-006": ["PARTIAL", "1", "partial"]}
    why = "required_ASSIGN_002_spread_then_sparse_ids stopped at its violation of ASSIGN-002 before verifying it"
    assert f"-> not verified in full: {why}" in proc.stdout
    assert "violates ASSIGN-002 (counted as MUST); ASSIGN-006 not verified: the test stopped at this violation" in (
        proc.stdout
    )
    rep = report(tmp_path)
    assert (by_id(rep)["ASSIGN-002"]["status"], by_id(rep)["ASSIGN-006"]["status"]) == ("FAIL", "PARTIAL")
    assert by_name(rep)["required_ASSIGN_002_spread_then_sparse_ids"]["violated"] == ["ASSIGN-002"]
    markdown = (tmp_path / "report" / "report.md").read_text()
    assert "| ASSIGN-002 | MUST | fidelity | Partitions of one topic are spread uniformly | FAIL | 1 fail |" in markdown
    assert f"| PARTIAL (not verified in full: {why}) | 1 partial |" in markdown
    suite = ET.parse(tmp_path / "report" / "junit.xml").getroot().find("testsuite")
    assert suite is not None
    cases = {c.get("name"): c for c in suite.iter("testcase")}
    failed = cases["test_required_ASSIGN_002_spread_then_sparse_ids"]
    properties = {p.get("name"): p.get("value") for p in failed.iter("property")}
    assert properties["kconform.violated"] == "ASSIGN-002"
    assert properties["kconform.requirements"] == "ASSIGN-002, ASSIGN-006"
    assert "--only required_ASSIGN_002_spread_then_sparse_ids" in properties["kconform.replay"]
    [skipped] = list(cases["test_required_ASSIGN_002_spread_then_sparse_ids (unverified: ASSIGN-006)"])
    assert (skipped.tag, skipped.get("message")) == ("skipped", f"PARTIAL: ASSIGN-006 not verified: {why}")


def test_unviolated_id_of_a_failure_keeps_the_verdict_of_its_other_tests() -> None:
    def result(status: Status, violated: list[str] | None = None) -> results.TestResult:
        test = results.TestResult("n", "n", ["COMMIT-011", "COMMIT-013"], "MUST", True, status, 0.0)
        test.violated = violated or []
        return test

    def rows(*tests: results.TestResult) -> dict[str, Status]:
        return {r.id: r.status for r in aggregate(tests, {})[0]}

    blamed = result(Status.FAIL, ["COMMIT-011"])
    assert rows(blamed) == {"COMMIT-011": Status.FAIL, "COMMIT-013": Status.PARTIAL}
    assert rows(blamed, result(Status.PASS))["COMMIT-013"] == Status.PARTIAL  # not shown to hold by every test
    assert rows(blamed, result(Status.FAIL, ["COMMIT-013"]))["COMMIT-013"] == Status.FAIL
    assert rows(blamed, result(Status.SKIP))["COMMIT-013"] == Status.SKIP
    assert rows(blamed, result(Status.ERROR))["COMMIT-013"] == Status.ERROR
    blamed.level = "MAY"  # a MAY failure never fails the run, but what it left unverified is PARTIAL
    assert (blamed.fails(strict=False), blamed.fails(strict=True)) == (False, True)
    thorough = result(Status.XFAIL, ["COMMIT-011"])  # a failure that checked COMMIT-013 in full first
    thorough.verified_before_failing = frozenset({"COMMIT-013"})
    assert rows(thorough) == {"COMMIT-011": Status.XFAIL, "COMMIT-013": Status.PASS}
    assert violates(thorough) == "violates COMMIT-011 (counted as MUST); COMMIT-013 verified in full before it"
    assert violates(blamed).endswith("; COMMIT-013 not verified: the test stopped at this violation")


def test_a_failure_blames_only_the_ids_its_violations_name_even_one_outside_the_tests_mark() -> None:
    """A test of DISC-001, -003, -004 and -006 whose only violation is DISC-008 fails DISC-008 alone: its own ids are
    not verified (PARTIAL), never failed; a failure that names no id (an adapter's exception) fails them all."""
    ids = ["DISC-001", "DISC-003", "DISC-004", "DISC-006"]
    assert collector.blamed(ids, ["DISC-008"]) == ["DISC-008"]
    assert collector.blamed(ids, ["DISC-004", "DISC-008", "DISC-004"]) == ["DISC-004", "DISC-008"]
    assert collector.blamed(ids, ["DISC-001, DISC-003"]) == ["DISC-001", "DISC-003"]  # an unstructured failure's
    assert collector.blamed(ids, []) == ids
    test = results.TestResult("n", "n", ids, "MUST", True, Status.FAIL, 0.0)
    test.violated = collector.blamed(ids, ["DISC-008"])
    rows = {r.id: r.status for r in aggregate([test], {})[0]}
    assert rows == {"DISC-008": Status.FAIL, **dict.fromkeys(ids, Status.PARTIAL)}


def test_a_failure_passes_only_the_ids_it_says_it_verified_and_never_one_it_violates() -> None:
    error = ViolationError(
        [Violation("COMMIT-011", "lost-write", "x", data={"value": "x"})], verified=["COMMIT-013", "COMMIT-011"]
    )
    assert error.verified == {"COMMIT-013"}


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


def test_a_deviation_naming_no_test_of_the_suite_is_named_with_the_closest_test() -> None:
    """A test renamed (``..._008_...`` to ``..._009_...``) leaves a deviation naming its old name tolerating nothing:
    each such deviation is a line naming the closest tests; one naming part of a test's name, or none, is not."""
    names = {"required_CLIENT_001_to_009_a_drawn_client_workload", "required_ASSIGN_004_golden"}
    old = Deviation("CLIENT-008", "r", BUG, test="required_CLIENT_001_to_008_a_drawn_client_workload")
    assert (
        unmatched_tests([Deviation("ASSIGN-004", "r", BUG, test="golden"), Deviation("ASSIGN-004", "r", BUG)], names)
        == []
    )
    (line,) = unmatched_tests([Deviation("ASSIGN-004", "r", BUG), old], names)
    assert line.startswith("deviation #2 (CLIENT-008): test 'required_CLIENT_001_to_008_")
    assert "did you mean 'required_CLIENT_001_to_009_a_drawn_client_workload'?" in line
    (far,) = unmatched_tests([Deviation("ASSIGN-004", "r", BUG, test="zzz")], names)
    assert "did you mean" not in far


def test_an_expectations_file_naming_no_test_stops_the_run_before_any_test_as_a_usage_error(tmp_path: Path) -> None:
    text = '[[deviation]]\nrequirement = "ASSIGN-004"\ntest = "required_ASSIGN_004_matches_referenc_"\nreason = "r"\n'
    file = expectations(tmp_path, text + 'link = "https://x"\n')
    proc = run_sample(tmp_path, "GOOD", "--expectations", file)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "is part of no test's name in this suite" in proc.stderr
    assert "did you mean 'required_ASSIGN_004_matches_reference'" in proc.stderr
    assert "Traceback" not in proc.stderr and "[1/" not in proc.stdout


def test_deviation_matches_requirement_and_optional_test_substring() -> None:
    any_test = Deviation("ASSIGN-004", "r", BUG)
    one_test = Deviation("ASSIGN-004", "r", BUG, test="golden")
    assert find_deviation([one_test, any_test], "required_ASSIGN_004_golden", ["ASSIGN-004"]) is one_test
    assert find_deviation([one_test, any_test], "required_ASSIGN_004_formula", ["ASSIGN-004"]) is any_test
    assert find_deviation([one_test, any_test], "required_ASSIGN_001_x", ["ASSIGN-001"]) is None


def test_a_failure_is_excused_only_when_every_id_it_violated_is_listed() -> None:
    """A listed fidelity deviation never hides a safety violation found in the same failing example."""
    owner = Deviation("RESTORE-002", "its own assigner", BUG)
    name = "required_RESTORE_001_to_007_source_state_machine"
    assert excusing_deviation([owner], name, ["RESTORE-002"]) is owner
    assert excusing_deviation([owner], name, ["RESTORE-002", "ASSIGN-007"]) is None
    assert excusing_deviation([owner, Deviation("ASSIGN-007", "r", BUG)], name, ["RESTORE-002", "ASSIGN-007"]) is owner
    assert excusing_deviation([owner], name, []) is None


def test_hanging_adapter_is_a_liveness_violation_after_the_timeout_not_a_hang_of_the_run(tmp_path: Path) -> None:
    """The adapter's own method still running at --timeout is LIVE-001's hang (exit 1), never a hung run, and the
    test's own ids are not failed by it (they are not verified)."""
    proc = run_sample(tmp_path, "HANGING", "--only", "required_ASSIGN_004", "--timeout", "2", "--report", "report")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    failed = by_name(report(tmp_path))["required_ASSIGN_004_matches_reference"]
    assert (failed["status"], failed["violated"]) == ("FAIL", ["LIVE-001"])
    assert failed["message"].startswith("adapter 'sample-hanging'.assign did not return within --timeout 2s (still ")
    assert report(tmp_path)["live"] is False


def test_interrupted_run_fails_even_if_nothing_failed(tmp_path: Path) -> None:
    proc = run_sample(tmp_path, "INTERRUPTED", "--only", "ASSIGN_001", "--report", "report")
    assert proc.returncode == 1
    assert "note: the run was interrupted after 0 of 2 tests" in proc.stdout
    stopped = "not verified (the run was interrupted after 0 of 2 tests)"
    *_, safe, live, faithful, diagnosable, last = proc.stdout.splitlines()
    labels = ("safe", "live", "Flink-faithful", "diagnosable")
    assert (safe, live, faithful, diagnosable) == tuple(f"{label}: {stopped}" for label in labels)
    assert "Not as expected, exit 1: the run was interrupted" in last
    rep = report(tmp_path)
    assert (rep["safe"], rep["live"], rep["flink_faithful"], rep["diagnosable"]) == (None, None, None, None)
    assert [v["text"] for v in rep["verdicts"].values()] == [f"{label}: {stopped}" for label in labels]
    markdown = (tmp_path / "report" / "report.md").read_text()
    assert "\n".join(f"- **{label}: {stopped}**" for label in labels) in markdown
    html = (tmp_path / "report" / "report.html").read_text()
    assert '<div class="verdict unknown" id="verdict-safety"><b>safe: not verified</b>' in html
    assert "<div>the run was interrupted after 0 of 2 tests</div>" in html


@pytest.mark.parametrize(
    ("adapter", "message"),
    [
        (f"{ADAPTERS}:failing_factory", "failed to load: RuntimeError(\"the sample adapter's license server"),
        (f"{SUITE}.adapter_needs_a_missing_module:ADAPTER", "cannot import 'kconform_sample_suite.adapter_needs_a"),
    ],
)
def test_adapter_that_fails_to_load_is_an_error_not_a_usage_error(tmp_path: Path, adapter: str, message: str) -> None:
    """The adapter exists but its code raised or lacks a dependency: nothing could be checked (3). A spec
    naming no adapter at all is the user's typo (2, below)."""
    proc = kconform(tmp_path, "run", "--adapter", adapter, "--suite", SUITE)
    assert proc.returncode == 3, proc.stdout + proc.stderr
    assert proc.stderr.startswith("kconform run: could not check (ERROR): ")
    assert message in proc.stderr
    assert "Traceback" not in proc.stderr


@pytest.mark.parametrize(
    ("adapter", "message"),
    [
        ("no_such_module:ADAPTER", "cannot import 'no_such_module'"),
        (f"{SUITE}.no_such_module:ADAPTER", f"cannot import '{SUITE}.no_such_module'"),
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


def test_level_the_adapter_declares_nothing_of_checks_nothing_so_it_is_an_error(tmp_path: Path) -> None:
    proc = run_sample(tmp_path, "GOOD", "--level", "pipeline", "--strict", "--report", "report")
    assert "[1/2] required_COMMIT_011_on_the_broker ... SKIP" in proc.stdout
    assert proc.returncode == 3, proc.stdout
    cause = "level pipeline: adapter 'sample-good' declares no pipeline capability, so none of its tests can run"
    assert proc.stdout.splitlines()[-1].endswith(f"2 requirements: 2 SKIP. Could not check, exit 3: {cause}")
    assert (report(tmp_path)["exit_code"], report(tmp_path)["could_not_check"]) == (3, [cause])
    assert cause in (tmp_path / "report" / "report.md").read_text()
    suite = ET.parse(tmp_path / "report" / "junit.xml").getroot().find("testsuite")
    assert suite is not None
    [error] = suite.iter("error")
    assert (error.get("type"), error.get("message"), suite.get("errors")) == ("kconform.error", cause, "1")


def test_every_selected_test_skipped_is_an_error_not_a_pass(tmp_path: Path) -> None:
    proc = run_sample(tmp_path, "GOOD", "--only", "needs_a_sink")
    assert "SKIP (COMMIT-001: adapter 'sample-good' does not declare capability 'exactly-once-sink')" in proc.stdout
    assert proc.returncode == 3, proc.stdout
    assert "Could not check, exit 3: all 1 selected tests were skipped, so nothing was checked" in proc.stdout


def test_level_all_runs_both_levels_and_names_the_level_the_adapter_lacks(tmp_path: Path) -> None:
    proc = run_sample(tmp_path, "GOOD", "--level", "all")
    assert "[10/10] required_COMMIT_013_on_the_broker ... SKIP" in proc.stdout
    assert "note: level pipeline: adapter 'sample-good' declares no pipeline capability" in proc.stdout
    assert proc.returncode == 0, proc.stdout


def test_cli_defaults_are_what_make_conformance_runs() -> None:
    args = run_command.build_parser().parse_args([])
    assert (default_adapter(args.level), args.level) == ("kconform.conformance.spark.pipeline:REFERENCE", "all")
    makefile = (Path(__file__).resolve().parents[1] / "Makefile").read_text()
    conformance = makefile.split("\nconformance:", 1)[1].split("\n\n", 1)[0]
    assert "--adapter" not in conformance.replace("$(if $(ADAPTER),--adapter", "")
    assert "--level" not in conformance.replace("$(if $(LEVEL),--level", "")
    help_text = run_command.build_parser().format_help()
    assert "  3  could not check (ERROR)" in help_text
    assert "  2  usage error" in help_text


def test_a_run_s_example_database_is_the_adapter_s_unless_given(tmp_path: Path) -> None:
    """``--examples DIR`` (the bank gives each run a fresh one) replaces the adapter's shared database."""
    assert run_command.build_parser().parse_args([]).examples is None
    assert run_command.build_parser().parse_args(["--examples", str(tmp_path)]).examples == tmp_path


def test_protocol_level_says_it_uses_no_broker(tmp_path: Path) -> None:
    proc = run_sample(tmp_path, "GOOD", "--level", "protocol", "--broker", "external", "--only", "owner_in_range")
    header = proc.stdout.splitlines()[0]
    assert "level protocol, no broker (the protocol level runs in-process; --broker external is not used)" in header
    assert proc.returncode == 0, proc.stdout


def run_on_external(tmp_path: Path, bootstrap: str, *args: str) -> Any:
    """The sample with its pipeline level on ``--broker external``, given one second to answer
    (``bootstrap`` empty: unset, as the broker reads it)."""
    env = {"KAFKA_BOOTSTRAP_SERVERS": bootstrap, "KCONFORM_EXTERNAL_TIMEOUT_S": "1"}
    return run_sample(tmp_path, "PIPELINE", "--broker", "external", *args, env=env)


def test_unreachable_broker_is_an_error_with_one_line_naming_it_and_the_fix_not_a_failure(tmp_path: Path) -> None:
    proc = run_on_external(tmp_path, "127.0.0.1:1", "--level", "pipeline", "--report", "report")
    assert proc.returncode == 3, proc.stdout + proc.stderr
    cause = "external broker at 127.0.0.1:1 did not answer a metadata request in time (1 s): "
    fix = "fix: check that the cluster is up and that KAFKA_BOOTSTRAP_SERVERS"
    assert f"[1/2] required_COMMIT_011_on_the_broker ... ERROR (could not check: {cause}" in proc.stdout
    assert "[2/2] required_COMMIT_013_on_the_broker ... ERROR (could not check: as above)" in proc.stdout
    summary = proc.stdout.split("\n\n", 1)[1]  # after the progress lines
    [line] = [line for line in summary.splitlines() if "127.0.0.1:1" in line]
    assert line.startswith(f"2 requirements: 2 ERROR. Could not check, exit 3: {cause}")
    assert fix in line
    assert "FAIL" not in proc.stdout and "Traceback" not in proc.stdout + proc.stderr
    rows = [row.split()[-3:] for row in summary.splitlines() if row.startswith("COMMIT-")]
    assert rows == [["ERROR", "1", "error"]] * 2
    rep = report(tmp_path)
    assert [(r["id"], r["status"]) for r in rep["requirements"]] == [("COMMIT-011", "ERROR"), ("COMMIT-013", "ERROR")]
    assert by_id(rep)["COMMIT-011"]["reason"].startswith(f"could not check: {cause}")
    assert {(t["status"], t["violated"] == [], t["replay"]) for t in rep["tests"]} == {("ERROR", True, None)}
    assert (rep["exit_code"], len(rep["could_not_check"])) == (3, 1)
    assert f"| ERROR (could not check: {cause}" in (tmp_path / "report" / "report.md").read_text()
    cases = ET.parse(tmp_path / "report" / "junit.xml").getroot().iter("testcase")
    errors = [(c.find("error"), {p.get("name"): p.get("value") for p in c.iter("property")}) for c in cases]
    assert [(e.get("type"), props.get("kconform.status")) for e, props in errors if e is not None] == [
        ("kconform.error", "ERROR")
    ] * 2
    assert all(str(e.get("message")).startswith(f"could not check: {cause}") for e, _ in errors if e is not None)


@pytest.mark.parametrize("strict", [(), ("--strict",)])
def test_unconfigured_external_broker_is_an_error(tmp_path: Path, strict: tuple[str, ...]) -> None:
    proc = run_on_external(tmp_path, "", "--level", "pipeline", *strict)
    assert proc.returncode == 3, proc.stdout + proc.stderr
    assert proc.stdout.splitlines()[-1] == (
        "2 requirements: 2 ERROR. Could not check, exit 3: external broker: KAFKA_BOOTSTRAP_SERVERS is not set; "
        "fix: set it to your cluster's host:port[,host:port...]"
    )


def test_a_violation_wins_over_what_could_not_be_checked(tmp_path: Path) -> None:
    gone = expectations(tmp_path, f'[[deviation]]\nrequirement = "ASSIGN-003"\nreason = "r"\nlink = "{BUG}"\n')
    proc = run_on_external(tmp_path, "", "--level", "all", "--expectations", gone)  # XPASS: a result that fails
    assert proc.returncode == 1, proc.stdout
    assert proc.stdout.splitlines()[-1].endswith(
        "(XPASS MUST). Could not check: external broker: KAFKA_BOOTSTRAP_SERVERS is not set; "
        "fix: set it to your cluster's host:port[,host:port...]"
    )


def test_nothing_selected_is_an_error_not_a_pass(tmp_path: Path) -> None:
    proc = run_sample(tmp_path, "GOOD", "--only", "no_such_test")
    assert proc.returncode == 2
    assert "matches --only 'no_such_test'; nothing was checked" in proc.stderr


def test_broken_suite_module_and_broken_generator_are_errors_empty_level_is_named(tmp_path: Path) -> None:
    proc = kconform(tmp_path, "run", "--adapter", f"{ADAPTERS}:GOOD", "--suite", "kconform_sample_broken_suite",
                    "--level", "all")  # fmt: skip
    assert proc.returncode == 3, proc.stdout  # nothing the adapter did failed: the run could not check
    broken = "kconform_sample_broken_suite/test_broken.py ... ERROR (could not check: suite module does not import: "
    assert broken in proc.stdout
    assert "ModuleNotFoundError" in proc.stdout
    assert "required_ASSIGN_001_owner_in_range ... PASS" in proc.stdout
    generator = "required_ASSIGN_004_never_drawn ... ERROR (could not check: kconform's input generator failed ("
    assert generator in proc.stdout
    assert "level pipeline: the suite 'kconform_sample_broken_suite' has no pipeline tests yet" in proc.stdout


def test_seed_is_random_and_printed_when_not_given(tmp_path: Path) -> None:
    proc = run_sample(tmp_path, "GOOD", "--only", "owner_in_range", "--report", "report")
    seed = report(tmp_path)["seed"]
    assert f"seed {seed} (replay this run with --seed {seed})" in proc.stdout


def test_kafka_without_its_jars_is_an_error_naming_the_fixes_unless_the_fallback_is_allowed(tmp_path: Path) -> None:
    no_jars = tmp_path / "no-jars"
    no_jars.mkdir()
    env = {"KCONFORM_JVM_DIR": str(no_jars)}
    refused = run_sample(tmp_path, "PIPELINE", "--level", "pipeline", "--broker", "kafka", env=env)
    assert refused.returncode == 3, refused.stdout + refused.stderr
    assert ", broker kafka," in refused.stdout.splitlines()[0]
    cause = refused.stdout.splitlines()[-1]
    assert cause.startswith("2 requirements: 2 ERROR. Could not check, exit 3: kafka broker: Apache Kafka cannot start")
    assert "kconform setup" in cause and "--broker tansu" in cause and "--allow-fallback" in cause, cause
    assert "Tansu" not in refused.stderr, "no silent substitute"

    fallen_back = run_sample(
        tmp_path, "PIPELINE", "--level", "pipeline", "--allow-fallback", "--report", "report", env=env
    )
    assert fallen_back.returncode == 0, fallen_back.stdout + fallen_back.stderr
    assert "falling back to the embedded Tansu broker" in fallen_back.stderr
    ran = "broker tansu (--allow-fallback: Apache Kafka cannot start here: "
    assert ran in fallen_back.stdout.splitlines()[0]
    for name in ("report.md", "report.html"):
        assert ran in (tmp_path / "report" / name).read_text(), name


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


def test_a_running_test_is_named_with_its_elapsed_time_while_it_runs(tmp_path: Path) -> None:
    """In a CI log (not a terminal) as a line per beat, before the test's result line."""
    env = {collector.HEARTBEAT_ENV: "1"}
    proc = run_sample(tmp_path, "HANGING", "--only", "required_ASSIGN_004", "--timeout", "3", env=env)
    lines = proc.stdout.splitlines()
    beats = [line for line in lines if line.startswith("... still running: ")]
    assert beats[:2] == [
        "... still running: required_ASSIGN_004_matches_reference (1 s)",
        "... still running: required_ASSIGN_004_matches_reference (2 s)",
    ], proc.stdout
    assert lines.index(beats[-1]) < next(i for i, line in enumerate(lines) if line.startswith("[1/1] ")), proc.stdout


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_on_a_terminal_the_heartbeat_is_one_line_rewritten_in_place_and_cleared() -> None:
    out = Terminal()
    heartbeat = collector.Heartbeat(out, 0.01)
    heartbeat.start("slow_test")
    deadline = time.monotonic() + 10
    while out.getvalue().count("\r") < 2 and time.monotonic() < deadline:
        time.sleep(0.01)  # polls the output the heartbeat thread writes; the heartbeat itself does not sleep
    heartbeat.stop()
    *beats, cleared, after = out.getvalue().split("\r")
    assert beats[0] == "" and beats[1] == "... still running: slow_test (0 s)", out.getvalue()
    assert "\n" not in out.getvalue()
    assert cleared == " " * len(beats[-1]) and after == "", "the result line starts on an empty line"
    heartbeat.close()


def test_the_heartbeat_shows_what_the_running_test_said_it_is_doing_and_forgets_it_at_the_next_test() -> None:
    out = io.StringIO()
    heartbeat = collector.Heartbeat(out, 0.01)
    progress.say("an earlier test's line")
    heartbeat.start("drawn_test")  # a test's start clears what the one before said
    progress.say("drawn schedule 7 of 20")
    deadline = time.monotonic() + 10
    while "drawn schedule 7 of 20" not in out.getvalue() and time.monotonic() < deadline:
        time.sleep(0.01)  # polls the output the heartbeat thread writes; the heartbeat itself does not sleep
    heartbeat.stop()
    assert "... still running: drawn_test (0 s; drawn schedule 7 of 20)" in out.getvalue(), out.getvalue()
    assert "earlier" not in out.getvalue()
    heartbeat.close()
    progress.clear()


def test_a_failure_of_an_older_flink_line_replays_at_that_line_not_the_newest() -> None:
    """``--flink-connector 3.4.0-1.20`` runs with ``$KCONFORM_FLINK_CONNECTOR`` set: the replay names the line."""
    line = {FLINK_CONNECTOR_ENV: "3.4.0-1.20"}
    args = collector.replay_args(RunOptions(adapter=ADAPTER_SPEC), 1, "required_DISC_009_x", True, line)
    assert args[args.index("run") :] == ["run", "--flink-connector", "3.4.0-1.20", "--only", "required_DISC_009_x",
                                         "--seed", "1"]  # fmt: skip
    mutant = "kconform.conformance.mutants.flink:flink_sink_exactly_once_off"
    args = collector.replay_args(RunOptions(adapter=mutant), 1, "required_X", True, line)
    assert (
        args[0] == f"{FLINK_CONNECTOR_ENV}=3.4.0-1.20" and ["--adapter", mutant] == args[args.index("--adapter") :][:2]
    )
    assert FLINK_CONNECTOR_ENV not in shlex.join(collector.replay_args(RunOptions(adapter=mutant), 1, "x", True, {}))


def raised_while_handling(handled: BaseException, raised: Exception) -> Exception:
    try:
        raise handled
    except BaseException:
        try:
            raise raised  # what a framework does: its own error, the alarm as its context
        except Exception as replaced:
            return replaced


def test_an_alarm_a_framework_replaced_by_its_own_error_is_still_no_verdict() -> None:
    """Hypothesis 6.100, interrupted inside a draw by the alarm, raised ``Flaky``: that was read as a FAIL."""
    alarm = collector.TestTimeoutError("no result within --timeout 120s")
    flaky = raised_while_handling(alarm, Flaky("Inconsistent data generation!"))
    assert collector.interrupting_alarm(flaky) is alarm
    assert collector.interrupting_alarm(ExceptionGroup("two failures", [ValueError("a"), flaky])) is alarm
    assert collector.interrupting_alarm(raised_while_handling(ValueError("x"), AssertionError("y"))) is None


def test_inconsistent_data_generation_is_no_verdict_but_a_flaky_failure_is_one() -> None:
    """Hypothesis 6.100 says both with a bare ``Flaky``; later releases with two subclasses."""
    assert collector.inconsistent_generation(Flaky("Inconsistent data generation! Data generation behaved differently"))
    assert not collector.inconsistent_generation(Flaky("Hypothesis f(x=1) produces unreliable results: Falsified"))
    assert not collector.inconsistent_generation(ValueError("Inconsistent data generation"))
    if hasattr(hypothesis.errors, "FlakyStrategyDefinition"):
        assert collector.inconsistent_generation(hypothesis.errors.FlakyStrategyDefinition("drew differently"))


def test_a_harness_failure_hypothesis_calls_flaky_is_could_not_check_not_a_failure_of_every_id() -> None:
    """A harness that failed once, whose replay passed, reached the collector wrapped in ``FlakyFailure`` and was
    read as an unstructured failure of every id of the test: it is could-not-check, as the bare error is. A group
    with a violation in it is judged on that violation."""
    harness = HarnessError("the failure injection did not happen")
    assert collector.not_checking(harness) is harness
    flaky = getattr(hypothesis.errors, "FlakyFailure", ExceptionGroup)
    assert collector.not_checking(flaky("unreliable", [harness])) is harness
    violation = ViolationError([Violation("RESTORE-003", "offset-gap", "x", data={"offset": 1})])
    assert collector.not_checking(ExceptionGroup("two", [harness, violation])) is None
    assert collector.not_checking(ValueError("adapter")) is None


def test_a_kind_of_violation_listed_is_tolerated_inside_the_test_and_any_other_still_fails(tmp_path: Path) -> None:
    """A deviation with ``kind`` lets the test go on past that violation (a drawn workload keeps drawing); the
    test is XFAIL when it met nothing else; a listed kind no test met is not XPASS."""
    listed = (
        f'[[deviation]]\nrequirement = "ASSIGN-002"\nkind = "uneven-spread"\nreason = "known"\nlink = "{BUG}"\n'
        f'[[deviation]]\nrequirement = "ASSIGN-004"\nkind = "never-met"\nreason = "known"\nlink = "{BUG}"\n'
    )
    proc = run_sample(
        tmp_path, "SKEWED", "--only", "spread_then_sparse", "--expectations", expectations(tmp_path, listed),
        "--report", "report",
    )  # fmt: skip
    test = by_name(report(tmp_path))["required_ASSIGN_002_spread_then_sparse_ids"]
    assert test["metrics"]["tolerated: ASSIGN-002 uneven-spread"] == 1, proc.stdout
    assert (test["status"], test["violated"]) == ("XFAIL", ["ASSIGN-002"]), proc.stdout
    assert "only known deviations, tolerated: ASSIGN-002 uneven-spread x1" in test["message"]
    assert by_id(report(tmp_path))["ASSIGN-006"]["status"] == "PASS"  # judged in full past the tolerated one
    assert proc.returncode == 0, proc.stdout
    other = f'[[deviation]]\nrequirement = "ASSIGN-002"\nkind = "other-kind"\nreason = "known"\nlink = "{BUG}"\n'
    proc = run_sample(
        tmp_path, "SKEWED", "--only", "spread_then_sparse", "--expectations", expectations(tmp_path, other)
    )
    assert proc.returncode == 1 and "required_ASSIGN_002_spread_then_sparse_ids ... FAIL" in proc.stdout, proc.stdout


def test_a_deviations_kind_is_a_violation_kind_and_acts_on_violations_not_on_whole_tests() -> None:
    kind = Deviation("CLIENT-004", "r", BUG, kind="position-past-end")
    assert find_deviation([kind], "required_CLIENT_001_to_008_x", ["CLIENT-004"]) is None
    assert kind.tolerates("required_CLIENT_001_to_008_x", "CLIENT-004", "position-past-end")
    assert not kind.tolerates("required_CLIENT_001_to_008_x", "CLIENT-004", "redelivered")
    assert not kind.tolerates("required_CLIENT_001_to_008_x", "CLIENT-007", "position-past-end")


def test_a_deviations_kind_is_validated(tmp_path: Path) -> None:
    text = '[[deviation]]\nrequirement = "ASSIGN-004"\nreason = "r"\nlink = "https://x"\nkind = "Lost Write"\n'
    with pytest.raises(ValueError, match="'kind' must be a violation kind"):
        load_expectations(Path(expectations(tmp_path, text)), {"ASSIGN-004"})
