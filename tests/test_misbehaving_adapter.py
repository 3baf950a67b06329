"""A misbehaving adapter gets a clear failing verdict naming the adapter method, never a hang or a pass."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def run_suite(
    adapter: str, tmp_path: Path, *extra: str, only: str = "ASSIGN_004_edge_names"
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "kconform.conformance.cli",
            "run",
            "--adapter",
            f"tests.misbehaving_adapters:{adapter}",
            "--only",
            only,
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
        timeout=300,
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


def test_required_a_hanging_adapter_costs_one_timeout_and_is_could_not_check(tmp_path: Path) -> None:
    """The first test that calls the hanging method waits out --timeout; the others that need it do not wait."""
    run = run_suite("HANGS", tmp_path, "--timeout", "3", "--level", "protocol", only="ASSIGN")
    assert run.returncode == 3, run.stdout + run.stderr
    report = json.loads((tmp_path / "report.json").read_text())
    first, *later = [t for t in report["tests"] if t["status"] == "ERROR"]
    # the adapter's plan calls its hanging assign: the message names the method that is stuck, with its arguments
    assert first["message"].startswith(
        "adapter 'hangs'.assign did not return within --timeout 3s (still running: assign('"
    ), first["message"]
    assert first["message"].endswith("), called by plan); raise --timeout if it is only slow"), first["message"]
    assert first["duration"] >= 3, first
    assert len(later) >= 3, report["tests"]
    for test in later:
        assert test["message"] == f"adapter 'hangs'.plan not called again: assign hung in {first['name']}", test
        assert test["duration"] < 1 and not test["violated"], test
    assert {t["status"] for t in report["tests"]} == {"ERROR", "PASS"}, "the discoverers do not call assign"
    assert report["flink_faithful"] is not False, "a hang is no answer, so no violation"
    hung_ids = {i for t in [first, *later] for i in t["requirements"]}
    assert {r["status"] for r in report["requirements"] if r["id"] in hung_ids} == {"ERROR"}
    assert max(len(line) for line in run.stdout.splitlines()) < 400, "the arguments are shortened"


@pytest.mark.spark
def test_required_a_raising_pipeline_adapter_fails_naming_read_stream(tmp_path: Path) -> None:
    run = run_suite("READ_STREAM_RAISES", tmp_path, "--level", "pipeline", only="ASSIGN_001_each_task")
    assert run.returncode == 1, run.stdout + run.stderr
    assert "adapter.read_stream(" in run.stdout and "connector bug: no such format" in run.stdout, run.stdout


def test_required_a_pipeline_level_without_read_stream_is_a_usage_error(tmp_path: Path) -> None:
    run = run_suite("PIPELINE_WITHOUT_METHODS", tmp_path, "--level", "pipeline")
    assert run.returncode == 2, run.stdout + run.stderr
    assert "missing: read_stream, write_stream" in run.stderr, run.stderr
