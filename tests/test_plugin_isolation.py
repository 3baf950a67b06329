"""kconform's pytest plugin loads into every pytest run of an environment that has kconform installed
(``pytest11``): outside a kconform run it must change no Hypothesis setting (issue: a dependency users can add)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

UNRELATED_TEST = """
from datetime import timedelta

from hypothesis import given, settings, strategies as st


@given(st.integers())
def test_an_unrelated_property(n):
    current = settings.default
    print(f"deadline={current.deadline} examples={current.max_examples} database={current.database!r}")
    assert current.deadline == timedelta(milliseconds=200)
    assert current.max_examples == 100
    assert "adapters" not in repr(current.database)
    assert not current.suppress_health_check
"""


def run_unrelated(tmp_path: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / "test_theirs.py").write_text(UNRELATED_TEST)
    clean = {k: v for k, v in os.environ.items() if not k.startswith("KCONFORM_")} | env
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_theirs.py", *args]
    return subprocess.run(command, cwd=tmp_path, env=clean, capture_output=True, text=True, timeout=120, check=False)


def test_an_unrelated_property_test_keeps_hypothesis_s_deadline_and_database(tmp_path: Path) -> None:
    run = run_unrelated(tmp_path)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "1 passed" in run.stdout


def test_a_kconform_run_still_gets_kconform_s_profile(tmp_path: Path) -> None:
    run = run_unrelated(tmp_path, KCONFORM_PROFILE="quick")
    assert run.returncode == 1, run.stdout + run.stderr  # kconform's profile: no deadline, 25 examples
    assert "deadline=None examples=25" in run.stdout, run.stdout
