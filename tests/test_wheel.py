"""The built wheel, installed by pip into a fresh venv outside the repository, is complete.

A user who pip-installs kconform has no checkout: the spec pages, TLA+ models and golden fixtures must
travel in the wheel, and the import names must not collide with the user's own top-level folders. This
installs the built wheel with every extra (constraints.txt's versions, from the registry or pip's cache)
into a venv in a directory that holds a ``conformance/`` package of its own, and runs the commands a
user runs there: ``run``, ``requirements``, ``spec check``, ``verdicts`` and ``probe-broker``; and ``setup``,
which resolves the JVM pieces from the poms the wheel carries into a per-user cache (here a temporary
``XDG_CACHE_HOME``), after which the pipeline level judges Spark's Kafka connector on Apache Kafka (marked
integration and spark: Maven, Kafka and Spark).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

pytestmark = pytest.mark.wheel

CONSTRAINTS = Path(__file__).resolve().parents[1] / "constraints.txt"
ROOT = Path(__file__).resolve().parents[1]
COMMAND_TIMEOUT_S = 600
SETUP_TIMEOUT_S = 1800
PIPELINE_TIMEOUT_S = 1800


@pytest.fixture(scope="module")
def installed(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Path]]:
    """(the venv's ``kconform`` script, a user's project directory); the venv is removed afterwards (~1 GB)."""
    base = tmp_path_factory.mktemp("wheel")
    venv = base / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=COMMAND_TIMEOUT_S)
    install = subprocess.run(
        [str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet", "-c", str(CONSTRAINTS), f"{wheel}[all]"],
        env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"},  # else pip may find kconform.egg-info there
        capture_output=True,
        text=True,
        timeout=COMMAND_TIMEOUT_S,
        check=False,
    )
    assert install.returncode == 0, install.stdout + install.stderr
    project = base / "my-project"
    (project / "conformance").mkdir(parents=True)
    (project / "conformance" / "__init__.py").write_text('raise ImportError("the user\'s own conformance/ folder")\n')
    try:
        yield venv / "bin" / "kconform", project
    finally:
        shutil.rmtree(venv, ignore_errors=True)


def kconform(
    installed: tuple[Path, Path], *args: str, timeout: float = COMMAND_TIMEOUT_S
) -> subprocess.CompletedProcess[str]:
    """``kconform *args`` as a user runs it: no checkout's variables, a per-user cache of its own."""
    script, project = installed
    unset = ("PYTHONPATH", "VIRTUAL_ENV", "KCONFORM_BROKER", "KCONFORM_JVM_DIR")
    env = {k: v for k, v in os.environ.items() if k not in unset}
    env["XDG_CACHE_HOME"] = str(project.parent / "cache")
    return subprocess.run([str(script), *args], cwd=project, env=env, capture_output=True, text=True, timeout=timeout)


def test_the_wheel_carries_the_spec_the_models_and_the_fixtures(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    assert {
        "kconform/spec/assignment.md",
        "kconform/spec/tla/models.toml",
        "kconform/fixtures/golden/topics.txt",
        "kconform/fixtures/bugbank.toml",
        "kconform/jvm/pom.xml",
        "kconform/jvm/spark-kafka/pom.xml",
        "kconform/jvm/kafka-oracle/src/main/java/kconform/KafkaOracle.java",
    } <= names
    assert not [n for n in names if n.split("/")[0] in ("conformance", "reference_impl", "tests")], sorted(names)
    maven_project = {
        f"kconform/{f.relative_to(ROOT)}" for pattern in ("pom.xml", "*.java") for f in (ROOT / "jvm").rglob(pattern)
    }
    assert maven_project <= names, (
        f"pyproject.toml's package-data for kconform.jvm lacks {sorted(maven_project - names)}"
    )
    packages = {
        f"kconform/{init.relative_to(ROOT)}"
        for top in ("conformance", "reference_impl")
        for init in (ROOT / top).rglob("__init__.py")
    }
    assert packages <= names, f"pyproject.toml's packages lack {sorted(packages - names)}"


def test_setup_help_from_the_wheel_names_the_per_user_cache(installed: tuple[Path, Path]) -> None:
    run = kconform(installed, "setup", "--help")
    assert run.returncode == 0, run.stdout + run.stderr
    assert "--into DIR" in run.stdout
    assert str(installed[1].parent / "cache" / "kconform") in " ".join(run.stdout.split()), run.stdout


def test_requirements_from_the_wheel(installed: tuple[Path, Path]) -> None:
    run = kconform(installed, "requirements")
    assert run.returncode == 0, run.stdout + run.stderr
    assert "ASSIGN-004" in run.stdout and "(not in the spec)" not in run.stdout


def test_spec_check_from_the_wheel(installed: tuple[Path, Path]) -> None:
    run = kconform(installed, "spec", "check", "--only", "restore-union-filter")
    assert run.returncode == 0, run.stdout + run.stderr
    assert "1/1 runs as expected" in run.stdout


def test_run_from_the_wheel_beside_a_folder_named_conformance(installed: tuple[Path, Path]) -> None:
    run = kconform(installed, "run", "--level", "protocol", "--profile", "quick", "--only", "ASSIGN-004")
    assert run.returncode == 0, run.stdout + run.stderr
    assert "Every result is as expected: exit 0." in run.stdout


def test_a_violation_from_the_wheel_exits_1(installed: tuple[Path, Path]) -> None:
    mutant = "kconform.conformance.mutants.protocol:python_mod_no_mask"
    run = kconform(
        installed, "run", "--adapter", mutant, "--level", "protocol", "--profile", "quick", "--only", "ASSIGN-004"
    )
    assert run.returncode == 1, run.stdout + run.stderr
    assert "ASSIGN-004" in run.stdout


def test_verdicts_from_the_wheel(installed: tuple[Path, Path]) -> None:
    page = installed[1] / "verdicts.md"
    adapter = "kconform.reference_impl.adapter:ADAPTER"
    run = kconform(
        installed, "verdicts", "--adapter", adapter, "--level", "protocol", "--profile", "quick", "--out", str(page)
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert "ASSIGN-004" in page.read_text() and "(not in the spec)" not in page.read_text()


def test_probe_broker_from_the_wheel(installed: tuple[Path, Path]) -> None:
    run = kconform(installed, "probe-broker", "--broker", "tansu")
    assert run.returncode == 0, run.stdout + run.stderr
    assert "KAFKA-014" in run.stdout


@pytest.mark.integration
@pytest.mark.spark
@pytest.mark.parametrize(
    "selection",
    [
        pytest.param(("--only", "RESTORE-003"), id="rescale-only"),  # make test: the jars, Spark and Kafka all used
        pytest.param((), marks=pytest.mark.long, id="every-scenario"),
    ],
)
def test_setup_then_the_pipeline_level_on_kafka_from_the_wheel(
    installed: tuple[Path, Path], selection: tuple[str, ...]
) -> None:
    """The done-when of a wheel install: Maven resolves the pinned pieces into the per-user cache, then
    Spark's own connector is judged on Apache Kafka, both started from those jars (ERROR without them). ``make
    test`` judges its restarts across rescales (a query, its checkpoint and the broker from the wheel's jars);
    ``make test-long`` every pipeline scenario."""
    cache = installed[1].parent / "cache" / "kconform"
    setup = kconform(installed, "setup", timeout=SETUP_TIMEOUT_S)
    assert setup.returncode == 0, setup.stdout + setup.stderr
    assert f"{cache}/" in setup.stdout and "/spark-kafka" in setup.stdout, setup.stdout
    again = kconform(installed, "setup")
    assert again.returncode == 0 and "is up to date" in again.stdout, again.stdout + again.stderr
    where = "import kconform.conformance as c, os; print(os.path.dirname(c.__file__))"
    installed_suite = subprocess.run(
        [str(installed[0].parent / "python"), "-c", where],
        cwd=installed[1],  # not the checkout, whose kconform/ folder would shadow the installed package
        capture_output=True,
        text=True,
        timeout=COMMAND_TIMEOUT_S,
        check=True,
    ).stdout.strip()
    assert "site-packages" in installed_suite, installed_suite
    expectations = f"{installed_suite}/adapters/spark_kafka.expectations.toml"
    adapter = "kconform.conformance.adapters.spark_kafka:ADAPTER"
    run = kconform(
        installed,
        *("run", "--level", "pipeline", "--adapter", adapter, "--expectations", expectations, "--profile", "quick"),
        *selection,
        timeout=PIPELINE_TIMEOUT_S,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert "broker kafka" in run.stdout and "Every result is as expected: exit 0." in run.stdout, run.stdout
    assert re.search(r"^RESTORE-003 .* PASS ", run.stdout, re.MULTILINE), run.stdout  # offsets kept across rescales
