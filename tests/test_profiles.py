"""Each adapter keeps its own Hypothesis examples, so one adapter's failures never replay against another."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from kconform.conformance.gate.profiles import PROFILE_ENV, WORKLOAD_DRAWS_ENV, examples_dir, workload_draws


def test_examples_dir_is_one_folder_per_adapter_spec() -> None:
    first, second = (
        examples_dir("kconform.conformance.mutants.protocol:python_mod_no_mask"),
        examples_dir("my.pkg:ADAPTER"),
    )
    assert first != second
    assert first.parent == second.parent == Path(".hypothesis") / "adapters"
    assert "/" not in first.name and ":" not in first.name


def test_a_failing_adapter_saves_its_examples_in_its_own_folder(tmp_path: Path) -> None:
    def run(adapter: str) -> tuple[int, str]:
        done = subprocess.run(
            [sys.executable, "-m", "pytest", "--pyargs", "kconform.conformance.suite", "-k", "ASSIGN_004_and_006", "-q",
             "-p", "no:cacheprovider", "--kconform-adapter", adapter],
            cwd=tmp_path, capture_output=True, text=True, timeout=300, check=False,
            env={**os.environ, PROFILE_ENV: "default"},
        )  # fmt: skip
        return done.returncode, done.stdout + done.stderr

    failing, broken_output = run("kconform.conformance.mutants.protocol:python_mod_no_mask")
    assert failing == 1, f"the broken adapter's run did not fail (exit {failing}):\n{broken_output[-3000:]}"
    passing, output = run("kconform.reference_impl.adapter:ADAPTER")
    assert passing == 0, f"the reference's run did not pass (exit {passing}):\n{output[-3000:]}"
    adapters = tmp_path / ".hypothesis" / "adapters"
    assert adapters.is_dir(), f"the failing run saved no example:\n{broken_output[-3000:]}"
    saved = sorted(p.name for p in adapters.iterdir())
    assert saved == [examples_dir("kconform.conformance.mutants.protocol:python_mod_no_mask").name], saved
    assert not (tmp_path / ".hypothesis" / "examples").exists(), "an example was saved in the shared database"


def test_a_workload_draws_one_schedule_per_twenty_examples_unless_told(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(WORKLOAD_DRAWS_ENV, raising=False)
    assert [workload_draws(n) for n in (25, 100, 1000)] == [2, 5, 50]
    monkeypatch.setenv(WORKLOAD_DRAWS_ENV, "20")
    assert workload_draws(100) == 20
    for wrong in ("0", "-1", "many"):
        monkeypatch.setenv(WORKLOAD_DRAWS_ENV, wrong)
        with pytest.raises(ValueError, match=WORKLOAD_DRAWS_ENV):
            workload_draws(100)
