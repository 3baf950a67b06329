"""``pip install kconform`` (no extra) beside a project's own Hypothesis and pytest.

A user adds kconform to a project that already has its test tools: installing the wheel must keep
them (pyproject's ranges admit the oldest versions ``make compat`` tests), and the core install,
without PySpark or the Kafka client, must still judge an adapter at the protocol level, while the
pipeline level is ERROR naming the extra that brings it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from kconform.conformance.adapter.loader import default_adapter
from kconform.conformance.cli import KCONFORM
from kconform.conformance.extras import PIPELINE_FIX

pytestmark = pytest.mark.wheel

ROOT = Path(__file__).resolve().parents[1]
COMMAND_TIMEOUT_S = 600
USER_TOOLS = ("hypothesis", "pytest", "pytest-timeout")


def oldest_pins() -> list[str]:
    """The oldest supported versions of the user's tools, as ``make compat`` pins them."""
    pins = (ROOT / "constraints-oldest.txt").read_text().splitlines()
    return [line for line in pins if line.split("==")[0] in USER_TOOLS]


def clean_env() -> dict[str, str]:
    """This environment without what points at the checkout (whose egg-info pip would take for an install)."""
    return {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "KCONFORM_BROKER")}


def pip(venv: Path, *args: str) -> subprocess.CompletedProcess[str]:
    command = [str(venv / "bin" / "python"), "-m", "pip", *args]
    return subprocess.run(
        command, env=clean_env(), capture_output=True, text=True, timeout=COMMAND_TIMEOUT_S, check=False
    )


def user_tools(venv: Path, names: tuple[str, ...] = USER_TOOLS) -> dict[str, str]:
    """The installed version of each of ``names`` (by ``pip freeze``)."""
    freeze = pip(venv, "freeze")
    assert freeze.returncode == 0, freeze.stderr
    pins = dict(line.split("==", 1) for line in freeze.stdout.splitlines() if "==" in line)
    return {name: pins[name] for name in names if name in pins}


@pytest.fixture(scope="module")
def core(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, dict[str, str]]]:
    """(a venv with the user's own tools, then kconform's wheel without extras; those tools' versions before)."""
    venv = tmp_path_factory.mktemp("core") / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=COMMAND_TIMEOUT_S)
    tools = pip(venv, "install", "--quiet", *oldest_pins())
    assert tools.returncode == 0, tools.stdout + tools.stderr
    before = user_tools(venv)
    install = pip(venv, "install", "--quiet", str(wheel))
    assert install.returncode == 0, install.stdout + install.stderr
    try:
        yield venv, before
    finally:
        shutil.rmtree(venv, ignore_errors=True)


def kconform(venv: Path, cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    command = [str(venv / "bin" / "kconform"), *args]
    return subprocess.run(command, cwd=cwd, env=clean_env(), capture_output=True, text=True, timeout=COMMAND_TIMEOUT_S)


def test_installing_kconform_keeps_the_users_hypothesis_and_pytest(core: tuple[Path, dict[str, str]]) -> None:
    venv, before = core
    assert set(before) == set(USER_TOOLS), before
    assert user_tools(venv) == before


def test_the_core_install_judges_the_protocol_level_without_pyspark(
    core: tuple[Path, dict[str, str]], tmp_path: Path
) -> None:
    venv, _ = core
    for absent in ("pyspark", "confluent_kafka", "pandas", "numpy"):
        python = [str(venv / "bin" / "python"), "-c", f"import {absent}"]
        probe = subprocess.run(python, env=clean_env(), capture_output=True, timeout=COMMAND_TIMEOUT_S)
        assert probe.returncode != 0, f"{absent} is installed in the core venv"
    # Without --adapter, the protocol level judges the pure reference implementation (kconform run --help says so).
    run = kconform(venv, tmp_path, "run", "--level", "protocol", "--profile", "quick")
    assert run.returncode == 0, run.stdout + run.stderr
    assert f"({default_adapter('protocol')}), level protocol" in run.stdout.splitlines()[0]
    assert "Every result is as expected: exit 0." in run.stdout


def test_the_pipeline_level_without_its_extra_is_error_naming_it(
    core: tuple[Path, dict[str, str]], tmp_path: Path
) -> None:
    venv, _ = core
    run = kconform(venv, tmp_path, "run", "--level", "pipeline")
    assert run.returncode == 3, run.stdout + run.stderr
    assert PIPELINE_FIX in run.stderr


def test_every_verb_explains_itself_without_the_extras(core: tuple[Path, dict[str, str]], tmp_path: Path) -> None:
    """``--help`` builds the verb's parser only: the Kafka client and PySpark are imported where a command runs."""
    venv, _ = core
    for verb in KCONFORM.verbs:
        shown = kconform(venv, tmp_path, verb, "--help")
        assert shown.returncode == 0, f"kconform {verb} --help:\n{shown.stdout}{shown.stderr}"
        assert shown.stdout.startswith("usage: kconform"), shown.stdout


TEAM_PINS = {"pyspark": "4.1.1", "pandas": "3.1.1"}
"""A team's own PySpark and pandas, of another line than the ones constraints.txt pins for CI (4.2, pandas 2): the
pipeline extra accepts every line the suite judges and names no pandas of its own (tests/test_team_pyspark.py
judges Spark's connector in such a project, and one on 3.5.7, in make test-long)."""


def test_the_pipeline_extra_keeps_the_users_own_pyspark_pandas_hypothesis_and_pytest(
    wheel: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    pinned = (ROOT / "constraints.txt").read_text().splitlines()
    assert not {f"{name}=={version}" for name, version in TEAM_PINS.items()} & set(pinned)  # else it proves nothing
    venv = tmp_path_factory.mktemp("pipeline") / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=COMMAND_TIMEOUT_S)
    try:
        own = [f"pyspark[sql]=={TEAM_PINS['pyspark']}", f"pandas=={TEAM_PINS['pandas']}"]
        tools = pip(venv, "install", "--quiet", *own, *oldest_pins())
        assert tools.returncode == 0, tools.stdout + tools.stderr
        before = user_tools(venv, (*TEAM_PINS, "numpy", "pyarrow", *USER_TOOLS))
        assert {name: before[name] for name in TEAM_PINS} == TEAM_PINS, before
        install = pip(venv, "install", "--quiet", f"{wheel}[pipeline]")
        assert install.returncode == 0, install.stdout + install.stderr
        assert user_tools(venv, (*TEAM_PINS, "numpy", "pyarrow", *USER_TOOLS)) == before
    finally:
        shutil.rmtree(venv, ignore_errors=True)
