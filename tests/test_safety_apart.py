"""Safety is judged apart from fidelity: a correct connector whose assigner is not Flink's is safe, and
a connector whose subtasks claim one partition twice is not, on ASSIGN-007 (issue: every verdict means
what it says)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from kconform.conformance.checks.checkers import Violation, ViolationError, deferring, fail_on
from kconform.conformance.gate.pytest_plugin import deferred_ids

ROOT = Path(__file__).resolve().parents[1]
OWN_ASSIGNER = "kconform.fixtures.adapters.own_assigner:ADAPTER"
OWN_EXPECTATIONS = ROOT / "fixtures" / "adapters" / "own_assigner.expectations.toml"
DOUBLE_ASSIGNING = "kconform.conformance.mutants.protocol:overlapping_range_discoverers"


def protocol_run(
    tmp_path: Path, adapter: str, *extra: str, seed: int = 3
) -> tuple[subprocess.CompletedProcess[str], Any]:
    command = [sys.executable, "-m", "kconform.conformance.cli", "run", "--adapter", adapter, "--level", "protocol"]
    proc = subprocess.run(
        [*command, "--profile", "quick", "--seed", str(seed), "--report", str(tmp_path), *extra],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    return proc, json.loads((tmp_path / "report.json").read_text())


def statuses(report: Any) -> dict[str, str]:
    return {r["id"]: r["status"] for r in report["requirements"]}


def test_a_correct_connector_with_its_own_assigner_is_safe(tmp_path: Path) -> None:
    # RESTORE-002's deviation is found by search (a restore at a parallelism where p % n is not Flink's owner),
    # and one seed draws other examples under another Hypothesis. At the quick profile seed 3 misses it under
    # Hypothesis 6.100.0 (1 of seeds 1-8 misses) and 6.110.0 (2 of 6 miss); seed 1 finds it under 6.100.0,
    # 6.110.0 and constraints.txt's version. `make compat` runs this test with the oldest and the newest.
    proc, report = protocol_run(tmp_path, OWN_ASSIGNER, "--expectations", str(OWN_EXPECTATIONS), seed=1)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr
    assert "safe: yes" in proc.stdout
    assert "Flink-faithful: no (violated: ASSIGN-004, DISC-004, RESTORE-002)" in proc.stdout
    assert report["safe"] is True and report["flink_faithful"] is False
    got = statuses(report)
    # The combined discovery test failed on DISC-004 (expected) and still judged its safety ids in full.
    assert {i: got[i] for i in ("DISC-001", "DISC-003", "DISC-006", "ASSIGN-007")} == dict.fromkeys(
        ("DISC-001", "DISC-003", "DISC-006", "ASSIGN-007"), "PASS"
    )
    assert {i: got[i] for i in ("ASSIGN-004", "DISC-004", "RESTORE-002")} == dict.fromkeys(
        ("ASSIGN-004", "DISC-004", "RESTORE-002"), "XFAIL"
    )
    safety = [r for r in report["requirements"] if r["class"] == "safety"]
    assert safety and all(r["status"] == "PASS" for r in safety), [(r["id"], r["status"]) for r in safety]


def test_without_its_expectations_it_is_still_safe_but_not_faithful(tmp_path: Path) -> None:
    proc, report = protocol_run(tmp_path, OWN_ASSIGNER, "--only", "DISC_001")
    assert proc.returncode == 1, proc.stdout[-4000:]
    assert report["safe"] is True and report["flink_faithful"] is False
    assert statuses(report) == {"DISC-001": "PASS", "DISC-003": "PASS", "DISC-004": "FAIL", "DISC-006": "PASS"}


def test_subtasks_that_claim_one_partition_twice_are_unsafe_on_assign_007(tmp_path: Path) -> None:
    proc, report = protocol_run(tmp_path, DOUBLE_ASSIGNING, "--only", "ASSIGN-007")
    assert proc.returncode == 1, proc.stdout[-4000:]
    assert "safe: no (violated: ASSIGN-007)" in proc.stdout
    assert report["safe"] is False
    kinds = {v["kind"] for t in report["tests"] for v in t["violations"] if v["id"] == "ASSIGN-007"}
    assert kinds == {"double-assignment"}


def test_a_listed_fidelity_deviation_does_not_hide_a_restore_onto_two_subtasks(tmp_path: Path) -> None:
    """The restore's failing example violates RESTORE-002 (listed: its own owner) and ASSIGN-007 (not listed):
    the test fails, the run exits 1 and says unsafe, never XFAIL."""
    adapter = "tests.own_assigner_broken:OWN_ASSIGNER_RESTORED_TWICE"
    proc, report = protocol_run(tmp_path, adapter, "--only", "RESTORE", "--expectations", str(OWN_EXPECTATIONS))
    assert proc.returncode == 1, proc.stdout[-4000:]
    assert "safe: no (violated: ASSIGN-007)" in proc.stdout
    kinds = {
        v["kind"] for t in report["tests"] if t["status"] == "FAIL" for v in t["violations"] if v["id"] == "ASSIGN-007"
    }
    assert kinds == {"double-assignment"}


def fidelity(topic: str) -> Violation:
    return Violation("ASSIGN-004", "formula-mismatch", f"{topic}-0 elsewhere", data={"topic": topic, "partition": 0})


def test_a_deferred_fidelity_violation_fails_the_test_after_its_safety_ids_were_judged() -> None:
    with deferring({"ASSIGN-004", "DISC-004"}, checked={"ASSIGN-004", "ASSIGN-007"}) as deferral:
        fail_on([fidelity("a")])  # kept: the test goes on
        fail_on(
            [Violation("DISC-004", "foreign-partition", "not this test's id", data={"text": "x"})]
        )  # not its own: dropped
        fail_on([fidelity("b")])
        with pytest.raises(ViolationError):  # a safety violation is raised at once, even among fidelity ones
            fail_on(
                [
                    fidelity("c"),
                    Violation("ASSIGN-007", "double-assignment", "x-0 on 0 and 1", data={"subtasks": [0, 1]}),
                ]
            )
    with pytest.raises(ViolationError) as raised:
        deferral.raise_kept()
    assert [v.evidence for v in raised.value.violations] == ["a-0 elsewhere"]
    assert "and in 1 later example" in str(raised.value)
    assert raised.value.verified == frozenset({"ASSIGN-007"})


def test_nothing_kept_raises_nothing() -> None:
    with deferring({"ASSIGN-004"}, checked={"ASSIGN-007"}) as deferral:
        fail_on([fidelity("a")])  # a fidelity id the test does not check
    deferral.raise_kept()
    fail_on([])


def test_a_connector_correct_in_data_whose_errors_name_nothing_is_safe_and_not_diagnosable(tmp_path: Path) -> None:
    """The sink loses nothing and fails every commit past its timeout, but with the client's bare error: no safety id
    is failed by a message's wording alone (COMMIT-021 passes); its diagnostics id (COMMIT-026) fails."""
    unnamed = "kconform.conformance.mutants.protocol:timeout_error_unnamed"
    proc, report = protocol_run(tmp_path, unnamed, "--only", "COMMIT-021")
    assert proc.returncode == 1, proc.stdout[-4000:] + proc.stderr
    assert statuses(report)["COMMIT-026"] == "FAIL" and statuses(report)["COMMIT-021"] != "FAIL", statuses(report)
    assert (report["safe"], report["diagnosable"]) == (True, False), report["verdicts"]
    assert "safe: yes" in proc.stdout and "diagnosable: no (violated: COMMIT-026)" in proc.stdout


def test_a_discovery_that_fails_on_zero_partitions_without_naming_them_is_faithful_and_not_diagnosable(
    tmp_path: Path,
) -> None:
    """DISC-007 (fidelity) is whether the discovery fails or proceeds; what its failure names is DISC-010
    (diagnostics), judged apart: the discoverer fails as its policy says, with an error naming no subscription. The
    DISC-007 tests keep the wording back until DISC-007 is judged on every example, so it passes in full."""
    unnamed = "kconform.conformance.mutants.protocol:zero_partitions_error_unnamed"
    proc, report = protocol_run(tmp_path, unnamed, "--only", "DISC-007")
    assert proc.returncode == 1, proc.stdout[-4000:] + proc.stderr
    assert (statuses(report)["DISC-007"], statuses(report)["DISC-010"]) == ("PASS", "FAIL"), statuses(report)
    assert (report["flink_faithful"], report["diagnosable"]) == (True, False), report["verdicts"]
    assert {v["id"] for t in report["tests"] for v in t["violations"]} == {"DISC-010"}


def test_a_test_keeps_back_the_violations_of_every_class_weaker_than_its_strongest() -> None:
    classes = {"ASSIGN-004": "fidelity", "DISC-007": "fidelity", "DISC-010": "diagnostics"}
    assert deferred_ids(frozenset({"ASSIGN-007", "DISC-007"}), classes) == frozenset(classes)  # a safety id's test
    assert deferred_ids(frozenset({"DISC-007", "DISC-010"}), classes) == frozenset({"DISC-010"})
    assert deferred_ids(frozenset({"DISC-010"}), classes) == frozenset()  # diagnostics alone: nothing kept back
    assert deferred_ids(frozenset({"ASSIGN-004"}), classes) == frozenset({"DISC-010"})
