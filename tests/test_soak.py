"""``kconform soak`` end to end on Apache Kafka and local Spark: short schedules, a few minutes each test.

The reference adapter passes two schedules of the cheapest faults; a pipeline mutant whose
exactly-once sink writes a replayed batch again (``spark_sink_forgets_marker``) is caught by a
schedule whose driver is killed between its tasks' commit and the commit log (``driver-kill@torn``),
and the failure is saved with its replay line. On a standalone cluster (``--spark-master
standalone``) an executor killed inside a batch's tasks is survived (about 2 minutes).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from kconform.conformance import jvm
from kconform.conformance.soak.schedule import FaultKind, Phase, draw_schedule, parse_kinds

pytestmark = [pytest.mark.spark, pytest.mark.integration]

SOAK_TIMEOUT_S = 1200


@pytest.fixture(autouse=True)
def _kafka_jars() -> None:
    try:
        jvm.classpath(jvm.KAFKA_BROKER)
    except jvm.JvmArtifactsMissing as missing:
        pytest.skip(f"kconform soak needs Apache Kafka: {missing}")


def soak(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    return subprocess.run(
        [sys.executable, "-m", "kconform.conformance.cli", "soak", *args],
        capture_output=True, text=True, timeout=SOAK_TIMEOUT_S, check=False, env=env,
    )  # fmt: skip


@pytest.mark.timeout(SOAK_TIMEOUT_S + 60)
def test_two_short_schedules_on_the_reference_adapter_pass_with_faults_injected(tmp_path: Path) -> None:
    faults = "driver-kill,rescale,add-topic,add-partitions"
    run = soak("--schedules", "2", "--seed", "5", "--max-runs", "1", "--faults", faults, "--out", str(tmp_path))
    output = run.stdout + run.stderr
    assert run.returncode == 0, output[-6000:]
    assert "schedule 1 (2/2): PASS" in output and "ETA" in output, output[-6000:]
    assert "kconform soak: PASS: 2 schedule(s)" in output
    assert not list(tmp_path.iterdir()), "a passing soak saves nothing"


TORN_SEED = 4
"""Schedule 0 of this seed, driver kills only, one killable run: ``driver-kill@torn`` (checked below)."""


@pytest.mark.timeout(SOAK_TIMEOUT_S + 60)
def test_a_sink_that_rewrites_a_replayed_batch_is_caught_and_saved_with_its_replay(tmp_path: Path) -> None:
    schedule = draw_schedule(TORN_SEED, 0, "kafka", parse_kinds("driver-kill", "kafka"), 1)
    assert [(f.kind, f.phase) for f in schedule.faults()] == [(FaultKind.DRIVER_KILL, Phase.TORN)]
    adapter = "kconform.conformance.mutants.pipeline:spark_sink_forgets_marker"
    run = soak("--adapter", adapter, "--seed", str(TORN_SEED), "--only-schedule", "0", "--max-runs", "1",
               "--faults", "driver-kill", "--out", str(tmp_path))  # fmt: skip
    output = run.stdout + run.stderr
    assert run.returncode == 1, output[-6000:]
    assert "COMMIT-011 duplicate" in output, output[-6000:]
    saved = tmp_path / "schedule-0"
    for name in ("schedule.json", "timeline.txt", "history.jsonl", "verdict.txt", "broker-log-tail.txt", "replay.txt"):
        assert (saved / name).is_file(), f"{name} not saved: {sorted(p.name for p in saved.iterdir())}"
    replay = (saved / "replay.txt").read_text()
    assert f"--seed {TORN_SEED} --broker kafka --only-schedule 0" in replay and adapter in replay
    assert "driver-kill@torn" in (saved / "timeline.txt").read_text()


EXECUTOR_SEED = 13
"""Schedule 0 of this seed on a standalone cluster, executor and driver kills, one killable run:
``executor-kill`` inside batch 2's tasks, then ``driver-kill@committed`` (about 2 minutes here)."""


@pytest.mark.timeout(600)
def test_an_executor_killed_inside_a_batch_is_survived_on_a_standalone_cluster(tmp_path: Path) -> None:
    kinds = parse_kinds("executor-kill,driver-kill", "kafka", executors=True)
    schedule = draw_schedule(EXECUTOR_SEED, 0, "kafka", kinds, 1, executors=True)
    assert [f.kind for f in schedule.faults()] == [FaultKind.EXECUTOR_KILL, FaultKind.DRIVER_KILL]
    run = soak(
        "--spark-master", "standalone", "--faults", "executor-kill,driver-kill", "--schedules", "1",
        "--max-runs", "1", "--seed", str(EXECUTOR_SEED), "--out", str(tmp_path),
    )  # fmt: skip
    output = run.stdout + run.stderr
    assert run.returncode == 0, output[-6000:]
    assert "executor-kill 1" in output and "SIGKILLed" in output, output[-6000:]
