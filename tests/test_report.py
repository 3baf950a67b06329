"""The report's own logic: the two class verdicts, shortened names, skip causes."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from kconform.conformance.gate.report import ClassVerdict, shorten
from kconform.conformance.gate.runner import skip_cause


@pytest.mark.parametrize(
    ("violated", "unverified", "verified", "text"),
    [
        (["RESTORE-003"], [], ["COMMIT-011"], "safe: no (violated: RESTORE-003)"),
        ([], [], ["COMMIT-011", "COMMIT-013"], "safe: yes (2 safety requirements verified)"),
        (
            [],
            ["COMMIT-013 PARTIAL"],
            ["COMMIT-011"],
            "safe: yes (as far as checked; not fully verified: COMMIT-013 PARTIAL)",
        ),
        (
            [],
            ["COMMIT-011 PARTIAL"],
            [],
            "safe: not verified (no safety requirement verified in full; not verified: COMMIT-011 PARTIAL)",
        ),
        ([], [], [], "safe: not verified (no safety requirement verified in full; none selected)"),
    ],
)
def test_a_class_holds_only_without_violation_and_with_something_verified_in_full(
    violated: list[str], unverified: list[str], verified: list[str], text: str
) -> None:
    verdict = ClassVerdict("safety", violated, unverified, verified)
    assert verdict.text() == text
    assert verdict.holds is {"no": False, "yes": True, "not verified": None}[verdict.answer]


def test_long_names_are_cut_in_the_middle_and_short_ones_kept() -> None:
    name = "a" + "k" * 247 + "z"
    line = shorten(f"ASSIGN-004 formula-mismatch: {name}-3 at parallelism 5: got 1, Flink 2")
    assert line.startswith("ASSIGN-004 formula-mismatch: akkk") and "...kkk" in line
    assert line.endswith("kkz-3 at parallelism 5: got 1, Flink 2")
    assert len(line) < 130  # from 310
    assert shorten("polygenelubricants-0 at parallelism 2") == "polygenelubricants-0 at parallelism 2"


def test_skip_causes_drop_the_ids_they_start_with() -> None:
    cause = "adapter 'x' does not declare capability 'pipeline'"
    assert skip_cause(f"COMMIT-011, COMMIT-013: {cause}") == cause
    assert skip_cause(f"DISC-005: {cause}; RESTORE-004: other") == f"{cause}; other"


def test_report_md_lists_the_run_s_metrics(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "KCONFORM_PROFILE"}
    args = [
        "--adapter",
        "kconform.reference_impl.adapter:ADAPTER",
        "--level",
        "protocol",
        "--only",
        "optional_ASSIGN_005",
    ]
    command = [
        sys.executable,
        "-m",
        "kconform.conformance.cli",
        "run",
        *args,
        "--profile",
        "quick",
        "--report",
        "report",
    ]
    proc = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    markdown = (tmp_path / "report" / "report.md").read_text()
    assert "## Metrics\n\n| test | metric | value |\n| --- | --- | --- |\n" in markdown
    assert "| `optional_ASSIGN_005_global_spread_is_reported` | global_spread_parallelism_16 | " in markdown
