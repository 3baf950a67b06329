"""``kconform soak`` end to end on Apache Kafka and local Spark: short schedules, a few minutes each test.

The reference adapter passes schedules that inject every kind and a commit whose answer is
held back past its timeout (``commit-stall``), which a sink that then writes the batch again under a
fresh transactional id fails, as does that failure's saved replay; a pipeline mutant whose
exactly-once sink writes a replayed batch again (``spark_sink_forgets_marker``) is caught by a
schedule whose driver is killed between its tasks' commit and the commit log (``driver-kill@torn``),
and the failure is saved with its replay line; the same schedule on Spark's built-in connector is
judged by at-least-once, its replayed batch's duplicates counted, not failed. On a standalone
cluster (``--spark-master standalone``) an executor killed inside a batch's tasks is survived (about
2 minutes).
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from kconform.conformance import jvm
from kconform.conformance.adapter.interface import DEFAULT_MASTER
from kconform.conformance.soak.schedule import (
    BROKER_FAULTS,
    FaultKind,
    Phase,
    available_kinds,
    draw_schedule,
    parse_kinds,
)
from kconform.conformance.spark.driver import DriverRun, StandbyDrivers

pytestmark = [pytest.mark.spark, pytest.mark.integration]

SOAK_TIMEOUT_S = 1200


@pytest.fixture(autouse=True)
def _kafka_jars() -> None:
    try:
        jvm.classpath(jvm.KAFKA_BROKER)
    except jvm.JvmArtifactsMissing as missing:
        pytest.skip(f"kconform soak needs Apache Kafka: {missing}")


def soak(*args: str, timeout_s: float = SOAK_TIMEOUT_S) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    return subprocess.run(
        [sys.executable, "-m", "kconform.conformance.cli", "soak", *args],
        capture_output=True, text=True, timeout=timeout_s, check=False, env=env,
    )  # fmt: skip


EVERY_KIND_SCHEDULES = (21, 285)
"""Two schedules of seed 1 (``make soak-long``'s) that together draw every fault kind a single node and local Spark
can do (checked below): ``make test``'s short case of the long soak. In neither does a fault follow a broker kill,
a clean restart or a node pause in the same driver run: a driver may fail at such an outage (the soak then starts
its next run, and the schedule still passes), and a fault planned after it would go uninjected, as schedule 55's
driver kill once did after its broker kill (the pair was 9 and 55 until then)."""


@pytest.mark.timeout(SOAK_TIMEOUT_S)
def test_schedules_of_every_fault_kind_pass_on_the_reference_adapter(tmp_path: Path) -> None:
    """Schedules of ``make soak-long`` (seed 1) drawn as a user's ``make soak`` draws them, which between them
    inject every kind a single node and local Spark can do (165 s here)."""
    kinds = available_kinds("kafka")
    schedules = {i: draw_schedule(1, i, "kafka", kinds, 2) for i in EVERY_KIND_SCHEDULES}
    drawn = {f.kind for schedule in schedules.values() for f in schedule.faults()}
    assert drawn == kinds, f"schedules {EVERY_KIND_SCHEDULES} no longer draw {sorted(kinds - drawn)}: choose others"
    for i, schedule in schedules.items():  # a broker fault (an outage, on one node) ends its driver run's faults
        for segment in schedule.segments:  # a driver run's faults, in the order injected
            outages = [n for n, fault in enumerate(segment.faults) if fault.kind in BROKER_FAULTS]
            after = [f.kind for f in segment.faults[outages[0] + 1 :]] if outages else []
            assert not after, f"schedule {i}: {after} planned after an outage in the same run: choose others"
    only = [arg for i in EVERY_KIND_SCHEDULES for arg in ("--only-schedule", str(i))]
    run = soak("--seed", "1", *only, "--out", str(tmp_path), timeout_s=SOAK_TIMEOUT_S - 60)
    output = run.stdout + run.stderr
    assert run.returncode == 0, output[-6000:]
    assert f"kconform soak: PASS: {len(EVERY_KIND_SCHEDULES)} schedule(s)" in output, output[-6000:]
    assert "ETA" in output, output[-6000:]
    missing = sorted(k.value for k in kinds if not re.search(rf"(?<![a-z-]){re.escape(k.value)} [0-9]+\b", output))
    assert not missing, f"not injected: {missing}\n{output[-6000:]}"
    assert not list(tmp_path.iterdir()), "a passing soak saves nothing"


TORN_SEED = 7
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
    saved_files = ("schedule.json", "timeline.txt", "history.jsonl", "verdict.txt", "broker-log-tail.txt")
    for name in (*saved_files, "replay.txt", "driver-1.log"):
        assert (saved / name).is_file(), f"{name} not saved: {sorted(p.name for p in saved.iterdir())}"
    replay = shlex.split((saved / "replay.txt").read_text())
    flags = dict(zip(replay[2::2], replay[3::2], strict=False))
    assert replay[:2] == ["kconform", "soak"] and flags.get("--adapter") == adapter, replay
    assert (flags.get("--seed"), flags.get("--broker"), flags.get("--only-schedule")) == (str(TORN_SEED), "kafka", "0")
    assert "driver-kill@torn" in (saved / "timeline.txt").read_text()


@pytest.mark.timeout(SOAK_TIMEOUT_S)
def test_a_contract_fault_in_a_driver_is_could_not_check_with_its_reason_and_ends_the_soak(tmp_path: Path) -> None:
    """A driver that exits with a contract fault (its frame has no ``offset``) is not data loss: the soak
    says why, as the driver said it, exits 3 and runs no further schedule (each would meet it again)."""
    run = soak("--adapter", "tests.misbehaving_adapters:FRAME_WITHOUT_OFFSET", "--seed", str(TORN_SEED),
               "--schedules", "2", "--max-runs", "1", "--faults", "driver-kill", "--out", str(tmp_path))  # fmt: skip
    output = run.stdout + run.stderr
    assert run.returncode == 3, output[-6000:]
    assert "kconform soak: could not check: " in output and "frame without column 'offset'" in output, output[-6000:]
    assert "the remaining schedules were not run" in output and "(2/2)" not in output, output[-6000:]
    assert "kconform soak: FAIL" not in output, output[-6000:]


SPARK_KAFKA = "kconform.conformance.adapters.spark_kafka:ADAPTER"


@pytest.mark.timeout(SOAK_TIMEOUT_S)
def test_spark_builtin_connector_is_judged_by_at_least_once_its_replayed_batch_counted_not_failed(
    tmp_path: Path,
) -> None:
    """The torn driver kill of ``TORN_SEED``'s schedule 0 makes Spark replay a batch whose output its
    at-least-once sink already wrote: the duplicates it is allowed are counted, and the schedule passes
    (it fails on a loss, a reordering or a skipped offset, which it showed none of here)."""
    try:
        jvm.jars(jvm.SPARK_KAFKA)
    except jvm.JvmArtifactsMissing as missing:
        pytest.skip(f"Spark's Kafka connector is not resolved: {missing}")
    run = soak("--adapter", SPARK_KAFKA, "--seed", str(TORN_SEED), "--only-schedule", "0", "--max-runs", "1",
               "--faults", "driver-kill", "--out", str(tmp_path))  # fmt: skip
    output = run.stdout + run.stderr
    assert "judged by the at-least-once guarantee" in output, output[-6000:]
    assert run.returncode == 0, output[-6000:]
    assert "driver-kill@torn" in output and "commit-log entry" in output, output[-6000:]
    passed = re.search(r"schedule 0 \(1/1\): PASS .* duplicated (\d+) \(counted, not failed: at-least-once\)", output)
    assert passed is not None and int(passed[1]) > 0, output[-6000:]
    assert not list(tmp_path.iterdir()), "a passing soak saves nothing"


STALL_SEED = 1
"""Schedule 0 of this seed, commit stalls only, one killable run: ``commit-stall`` after the first batch."""
FAULT_ONLY = "kconform.conformance.mutants.pipeline:spark_sink_rewrites_timed_out_commit"


STALL_ARGS = ("--seed", str(STALL_SEED), "--only-schedule", "0", "--max-runs", "1", "--faults", "commit-stall")


@pytest.mark.long
@pytest.mark.timeout(SOAK_TIMEOUT_S)
def test_the_reference_survives_the_stall_that_catches_the_rewriting_sink(tmp_path: Path) -> None:
    """The schedule below is fair: the reference passes it, its commit held back after the node committed
    (``make test``'s every-kind soak shows the reference passing commit stalls of other schedules)."""
    reference = soak(*STALL_ARGS, "--out", str(tmp_path))
    assert reference.returncode == 0, (reference.stdout + reference.stderr)[-6000:]
    assert "commit-stall 1" in reference.stdout and "the node had committed" in reference.stdout


@pytest.mark.timeout(2 * SOAK_TIMEOUT_S)
def test_a_sink_that_rewrites_a_timed_out_commit_is_caught_by_the_stall_and_its_replay_fails_again(
    tmp_path: Path,
) -> None:
    schedule = draw_schedule(STALL_SEED, 0, "kafka", parse_kinds("commit-stall", "kafka"), 1)
    assert [f.kind for f in schedule.faults()] == [FaultKind.COMMIT_STALL]
    caught = soak("--adapter", FAULT_ONLY, *STALL_ARGS, "--out", str(tmp_path / "mutant"))
    output = caught.stdout + caught.stderr
    assert caught.returncode == 1 and "COMMIT-011 duplicate" in output, output[-6000:]
    replay = shlex.split((tmp_path / "mutant" / "schedule-0" / "replay.txt").read_text())
    assert replay[:2] == ["kconform", "soak"] and FAULT_ONLY in replay
    again = soak(*replay[2:], "--out", str(tmp_path / "replayed"))
    assert again.returncode == 1 and "COMMIT-011 duplicate" in again.stdout, (again.stdout + again.stderr)[-6000:]


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


@pytest.mark.timeout(300)
def test_standby_drivers_run_what_they_are_handed_and_close_leaves_no_process(tmp_path: Path) -> None:
    drivers = StandbyDrivers(DEFAULT_MASTER, tmp_path)
    run = DriverRun(
        adapter="kconform.no_such_module:ADAPTER", master=DEFAULT_MASTER, bootstrap_servers="127.0.0.1:9",
        source="s", sink="o", checkpoint=str(tmp_path / "checkpoint"), parallelism=1, exactly_once=True,
        max_records_per_trigger=1, client_settings={},
    )  # fmt: skip
    driver, log = drivers.start(run)
    waiting, _ = drivers._ready or (None, None)
    try:
        assert driver.wait(timeout=240) != 0
        assert "kconform.no_such_module" in log.read_text(), log.read_text()[-3000:]
    finally:
        drivers.close()
    assert waiting is not None and waiting.returncode == 0, "the standby ends cleanly when nothing is handed to it"
    with pytest.raises(ValueError, match="local"):
        StandbyDrivers(DEFAULT_MASTER, tmp_path).start(replace(run, master="spark://127.0.0.1:7077"))
