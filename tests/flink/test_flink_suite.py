"""``kconform run --flink-connector``, end to end: the suite's Flink scenario of partitions added while a job
runs (DISC-005, the shortest) judges the chosen connector lines (``KCONFORM_FLINK_VERSIONS``, by default the
newest) on the session's broker and the report passes DISC-005; the full Flink suite and the bank's Flink bugs
run under ``kconform run`` and ``kconform bugbank``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from kconform.conformance.brokers import BOOTSTRAP_ENV, Broker
from kconform.conformance.flink.versions import ConnectorRelease, chosen

pytestmark = [pytest.mark.flink, pytest.mark.integration]

ROOT = Path(__file__).resolve().parents[2]
RUN_TIMEOUT_S = 600
RELEASES_RUN = chosen(os.environ.get("KCONFORM_FLINK_VERSIONS"))


@pytest.mark.parametrize("release", RELEASES_RUN, ids=[r.connector for r in RELEASES_RUN])
def test_kconform_run_judges_a_flink_line_on_disc_005(
    broker: Broker, release: ConnectorRelease, tmp_path: Path
) -> None:
    report = tmp_path / "report"
    done = subprocess.run(
        [sys.executable, "-m", "kconform.conformance.cli", "run", "--flink-connector", release.connector,
         "--broker", "external", "--only", "flink_partitions_added_while_running_are_read",
         "--profile", "quick", "--seed", "1", "--report", str(report)],
        cwd=ROOT, env={**os.environ, BOOTSTRAP_ENV: broker.bootstrap_servers}, capture_output=True, text=True,
        timeout=RUN_TIMEOUT_S, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    found = json.loads((report / "report.json").read_text())
    assert {r["id"]: r["status"] for r in found["requirements"]} == {"DISC-005": "PASS"}
    assert f"flink-connector-kafka {release.connector}" in done.stdout


WORKLOAD_TIMEOUT_S = 900
"""The explicit schedule (four runs, two sinks) and one drawn schedule of up to four runs: about a minute each."""


def test_kconform_run_draws_the_flink_workload_on_the_newest_line(broker: Broker, tmp_path: Path) -> None:
    """A short draw of the Flink workload, as ``make test`` runs it (issue 45): its explicit schedule and one drawn
    schedule (``--workload-draws 1``, seed 1) on the newest pinned line, judged by every checker of the workload.
    Its long draws: ``kconform run --flink-connector V --only flink_jobs_keep_every_promise_of_a_drawn_workload
    --workload-draws N``."""
    release = chosen(None)[0]
    report = tmp_path / "report"
    done = subprocess.run(
        [sys.executable, "-m", "kconform.conformance.cli", "run", "--flink-connector", release.connector,
         "--broker", "external", "--only", "flink_jobs_keep_every_promise_of_a_drawn_workload",
         "--workload-draws", "1", "--profile", "quick", "--seed", "1", "--report", str(report)],
        cwd=ROOT, env={**os.environ, BOOTSTRAP_ENV: broker.bootstrap_servers}, capture_output=True, text=True,
        timeout=WORKLOAD_TIMEOUT_S, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    found = {r["id"]: r["status"] for r in json.loads((report / "report.json").read_text())["requirements"]}
    judged = {"RESTORE-003", "ASSIGN-007", "COMMIT-011", "COMMIT-013", "DISC-005", "DISC-009", "DISC-002", "LIVE-001"}
    judged.add("COMMIT-007")  # seed 1's drawn schedule has the broker refuse its at-least-once sink's writes
    judged.add("RESTORE-010")  # every schedule ends with a bounded reader over transactions ending in markers
    assert {i: found.get(i) for i in judged} == dict.fromkeys(judged, "PASS"), found
