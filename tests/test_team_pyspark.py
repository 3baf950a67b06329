"""kconform beside the PySpark a team already runs (issue 46): a fresh project pinned to PySpark 4.1.1 with pandas 3,
and one pinned to 3.5.7, installs kconform's wheel with the ``pipeline`` extra; pip keeps the project's PySpark,
pandas, numpy and pyarrow; then ``kconform setup`` and ``kconform run --level pipeline`` judge Spark's built-in
connector there without ``--spark``: the run takes the Kafka connector jars of the installed PySpark (its summary's
``judged:`` line is the published page's) and gives the page's verdict on the ids it runs.

Each case downloads or unpacks a 300-450 MB pyspark, starts Kafka and Spark: ``make test-long`` runs it (about
3 minutes a release, warm); ``make test`` checks the install half on 4.1.1 and pandas 3
(tests/test_core_install.py).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

pytestmark = [pytest.mark.wheel, pytest.mark.integration, pytest.mark.spark, pytest.mark.long]

ROOT = Path(__file__).resolve().parents[1]
COMMAND_TIMEOUT_S = 900
TEAMS: dict[str, tuple[str, ...]] = {
    "4.1.1": ("pyspark[sql]==4.1.1", "pandas==3.1.1"),
    "3.5.7": ("pyspark[sql]==3.5.7", "pandas==2.2.3", "pyarrow==17.0.0"),
}
"""A team's own pins per PySpark release: 4.1.1 with pandas 3 (pyspark 4.1.1 takes it); 3.5.7 as a Spark 3.5
project has it: its ``sql`` extra takes numpy < 2, and the newest pyarrow (26) does not import beside numpy 1.26
("pyarrow requires NumPy 2.0 or newer"), so such a project pins an older one."""
KEPT = ("pyspark", "pandas", "numpy", "pyarrow")
ONLY = "RESTORE-013"
"""One scenario (a transactional input read, restarted at a gap: RESTORE-013 and -014), about 80 s."""
ADAPTER = "kconform.conformance.adapters.spark_kafka:ADAPTER"
PAGE_COLUMNS = ("requirement", "level", "class", "title", "verdict", "tests", "why")
"""The verdict table's columns (``kconform.conformance.gate.verdicts.render``)."""
UNSET = ("PYTHONPATH", "VIRTUAL_ENV", "KCONFORM_BROKER", "KCONFORM_JVM_DIR", "KCONFORM_SPARK_VERSION")


def clean_env(**extra: str) -> dict[str, str]:
    """This environment without what points at the checkout or chooses a Spark release."""
    return {k: v for k, v in os.environ.items() if k not in UNSET} | extra


def run(command: list[str], cwd: Path | None = None, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        command, cwd=cwd, env=clean_env(**env), capture_output=True, text=True, timeout=COMMAND_TIMEOUT_S, check=False
    )


def frozen(venv: Path) -> dict[str, str]:
    """The installed version of each of ``KEPT``."""
    freeze = run([str(venv / "bin" / "python"), "-m", "pip", "freeze"])
    assert freeze.returncode == 0, freeze.stderr
    pins = dict(line.split("==", 1) for line in freeze.stdout.splitlines() if "==" in line)
    return {name: pins[name] for name in KEPT if name in pins}


def published(release: str) -> tuple[str, dict[str, str]]:
    """The page of ``release`` (docs/verdicts/spark-kafka-<release>.md): its ``judged:`` line and verdict per id."""
    page = (ROOT / "docs" / "verdicts" / f"spark-kafka-{release}.md").read_text()
    (judged,) = re.findall(r"^- judged: (.*)$", page, re.MULTILINE)
    rows = [re.split(r"(?<!\\)\|", line) for line in page.splitlines() if re.match(r"\| [A-Z]+-\d{3} \|", line)]
    verdict_rows = [cells for cells in rows if len(cells) == len(PAGE_COLUMNS) + 2]  # not the unchecked ids' table
    return judged, {cells[1].strip(): cells[1 + PAGE_COLUMNS.index("verdict")].strip() for cells in verdict_rows}


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The per-user cache the projects' ``kconform setup`` fills (the pinned jars; each release's connector)."""
    return tmp_path_factory.mktemp("user-cache")


@pytest.fixture(params=list(TEAMS), ids=[f"pyspark-{r}" for r in TEAMS])
def team(
    request: pytest.FixtureRequest, wheel: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[str, Path, dict[str, str]]]:
    """(the release, a venv with the team's pins, then kconform's wheel with ``[pipeline]``; the pins before)."""
    release: str = request.param
    venv = tmp_path_factory.mktemp(f"team-{release}") / "venv"
    assert run([sys.executable, "-m", "venv", str(venv)]).returncode == 0
    pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet", "--no-input"]
    try:
        own = run([*pip, *TEAMS[release]])
        assert own.returncode == 0, own.stdout + own.stderr
        before = frozen(venv)
        assert before["pyspark"] == release and set(before) == set(KEPT), before
        install = run([*pip, f"{wheel}[pipeline]"])
        assert install.returncode == 0, install.stdout + install.stderr
        yield release, venv, before
    finally:
        shutil.rmtree(venv, ignore_errors=True)


def test_the_team_s_pyspark_is_kept_and_judged_with_its_own_connector_as_its_page_says(
    team: tuple[str, Path, dict[str, str]], cache: Path
) -> None:
    release, venv, before = team
    assert frozen(venv) == before  # pip moved none of the project's pins
    project = venv.parent / "my-project"
    project.mkdir()
    kconform = str(venv / "bin" / "kconform")
    setup = run([kconform, "setup"], cwd=project, XDG_CACHE_HOME=str(cache))
    assert setup.returncode == 0, setup.stdout + setup.stderr
    where = run([str(venv / "bin" / "python"), "-c", "import kconform.conformance as c; print(c.__file__)"], project)
    expectations = Path(where.stdout.strip()).parent / "adapters" / "spark_kafka.expectations.toml"
    report = project / "report"
    command = [kconform, "run", "--level", "pipeline", "--adapter", ADAPTER, "--expectations", str(expectations)]
    judged = run(
        [*command, "--profile", "quick", "--only", ONLY, "--report", str(report)],
        cwd=project,
        XDG_CACHE_HOME=str(cache),
    )
    out = judged.stdout + judged.stderr
    assert judged.returncode in (0, 1), out  # 1: a violation the page has too (compared below); 3 is not a verdict
    assert f"the installed pyspark is {release}, of another line than the pinned" in out.splitlines()[0], out
    page_judged, page_verdicts = published(release)
    assert f"\njudged: {page_judged}\n" in judged.stdout, (page_judged, out)
    verdicts = {r["id"]: r["status"] for r in json.loads((report / "report.json").read_text())["requirements"]}
    assert verdicts and verdicts == {i: page_verdicts[i] for i in verdicts}, (verdicts, page_verdicts)
