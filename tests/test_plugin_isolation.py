"""kconform's pytest plugin loads into every pytest run of an environment that has kconform installed
(``pytest11``): outside a kconform run it must change no Hypothesis setting (issue: a dependency users can add).

Hypothesis's own defaults depend on the environment (it loads its ``ci`` profile when ``CI`` is set), so
the yardstick is the same test run with kconform's plugin blocked, not fixed values."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

UNRELATED_TEST = """
from hypothesis import given, settings, strategies as st


@given(st.integers())
def test_an_unrelated_property(n):
    current = settings.default
    print(
        f"SETTINGS deadline={current.deadline} examples={current.max_examples} database={current.database!r} "
        f"derandomize={current.derandomize} suppressed={list(current.suppress_health_check)}"
    )
"""


def run_unrelated(tmp_path: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / "test_theirs.py").write_text(UNRELATED_TEST)
    clean = {k: v for k, v in os.environ.items() if not k.startswith("KCONFORM_")} | env
    command = [sys.executable, "-m", "pytest", "-q", "-s", "-p", "no:cacheprovider", "test_theirs.py", *args]
    return subprocess.run(command, cwd=tmp_path, env=clean, capture_output=True, text=True, timeout=120, check=False)


def settings_seen(run: subprocess.CompletedProcess[str]) -> set[str]:
    assert run.returncode == 0, run.stdout + run.stderr
    seen = set(re.findall(r"^SETTINGS .*$", run.stdout, flags=re.MULTILINE))
    assert seen, run.stdout
    return seen


def test_an_unrelated_property_test_keeps_hypothesis_s_own_settings(tmp_path: Path) -> None:
    without_kconform = settings_seen(run_unrelated(tmp_path, "-p", "no:kconform"))
    with_kconform = settings_seen(run_unrelated(tmp_path))
    assert with_kconform == without_kconform


def test_a_kconform_run_still_gets_kconform_s_profile(tmp_path: Path) -> None:
    seen = settings_seen(run_unrelated(tmp_path, KCONFORM_PROFILE="quick"))
    assert seen == {next(iter(seen))}
    assert "deadline=None examples=25" in next(iter(seen)), seen
