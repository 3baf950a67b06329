"""A misbehaving adapter gets a clear failing verdict naming the adapter method, never a hang or a pass."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def run_suite(adapter: str, tmp_path: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "conformance.cli",
            "run",
            "--adapter",
            f"tests.misbehaving_adapters:{adapter}",
            "--only",
            "ASSIGN_004_edge_names",
            "--profile",
            "quick",
            "--seed",
            "1",
            "--report",
            str(tmp_path),
            *extra,
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.mark.parametrize(
    ("adapter", "expected"),
    [
        ("RAISES", "raised RuntimeError('connector bug: lookup table not loaded')"),
        ("NEGATIVE_INDEX", "ASSIGN-004 formula-mismatch"),
    ],
)
def test_required_adapter_errors_are_failing_verdicts_naming_the_method(
    adapter: str, expected: str, tmp_path: Path
) -> None:
    run = run_suite(adapter, tmp_path)
    assert run.returncode == 1, run.stdout + run.stderr
    assert expected in run.stdout, run.stdout


def test_required_a_hanging_adapter_fails_within_the_timeout(tmp_path: Path) -> None:
    run = run_suite("HANGS", tmp_path, "--timeout", "3")
    assert run.returncode == 1, run.stdout + run.stderr
    assert "still waiting for adapter 'hangs': adapter.assign(" in run.stdout, run.stdout
