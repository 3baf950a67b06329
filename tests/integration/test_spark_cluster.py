"""The Spark standalone cluster of ``--spark-master standalone``: it starts from pyspark's own jars,
a job's tasks run in executors on both workers (not in the driver), and stopping it, or killing
the process that started it, leaves none of its processes behind; a start that fails says why."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Final

import pytest

from kconform.conformance.mutants import registry
from kconform.conformance.mutants.pipeline import PipelineMutant
from kconform.conformance.spark.cluster import STANDALONE, SparkClusterError, StandaloneCluster, alive, process_tree
from tests.test_mutants import assert_killed

DRIVER_TIMEOUT_S: Final = 240

TINY_JOB = """
import json, os, sys
from pyspark import TaskContext
from kconform.conformance.spark.pipeline import local_session, task_attempts
from kconform.conformance.spark.speculation import await_hosts

spark = local_session(sys.argv[1])
try:
    def where(_rows):
        return [(TaskContext.get().partitionId(), os.getpid(), os.getcwd())]

    tasks = spark.sparkContext.parallelize(range(8), 4).mapPartitions(where).collect()
    print(json.dumps({
        "driver": os.getpid(), "attempts": task_attempts(spark), "master": spark.sparkContext.master,
        "tasks": tasks, "hosts": sorted(await_hosts(spark, 2)),
    }), flush=True)
finally:
    spark.stop()
"""


def run_driver(master: str) -> dict[str, Any]:
    """The tiny job in its own driver process (this one may hold a local session), bounded."""
    driver = subprocess.Popen(
        [sys.executable, "-c", TINY_JOB, master],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)},
    )  # fmt: skip
    try:
        out, err = driver.communicate(timeout=DRIVER_TIMEOUT_S)
    finally:
        if driver.poll() is None:
            os.killpg(driver.pid, signal.SIGKILL)
            driver.wait(30)
    assert driver.returncode == 0, f"the driver failed ({driver.returncode}):\n{err[-4000:]}"
    found: dict[str, Any] = json.loads(out.strip().splitlines()[-1])
    return found


def test_a_jobs_tasks_run_on_both_workers_and_the_cluster_leaves_no_process() -> None:
    with StandaloneCluster() as cluster:
        assert cluster.master_url.startswith("spark://127.0.0.1:")
        assert cluster.start_seconds is not None and cluster.start_seconds < 90
        state = cluster.state()
        assert state["aliveworkers"] == 2 and state["cores"] == 2 * cluster.shape.worker_cores
        workdir, master = cluster.workdir, cluster.master_url
        job = run_driver(master)
        pids = cluster.pids | {int(pid) for _, pid, _ in job["tasks"]}
    assert job["master"] == master and job["attempts"] == 3
    assert job["hosts"] == ["127.0.0.1", "127.0.0.2"], "each worker's executor must sit on a host of its own"
    assert sorted(task for task, _, _ in job["tasks"]) == [0, 1, 2, 3]
    # Python workers run in executor directories, worker-<n>/<app>/<executor id>: both workers ran tasks
    executors = {Path(cwd).relative_to(workdir).parts for _, _, cwd in job["tasks"]}
    assert {parts[0] for parts in executors} == {"worker-1", "worker-2"}, executors
    assert all(len(parts) == 3 and parts[1].startswith("app-") for parts in executors), executors
    assert job["driver"] not in {pid for _, pid, _ in job["tasks"]}
    assert not [pid for pid in pids if alive(pid)], "processes of the cluster outlived its stop"
    assert not workdir.exists()


def test_a_failed_start_shows_the_logs_keeps_them_and_leaves_no_process(tmp_path: Path) -> None:
    """Workers that never register in time (the wait is too short): the error says what it waited
    for, with each daemon's log, and every process it started is gone."""
    before = process_tree([os.getpid()])
    cluster = StandaloneCluster(start_timeout_s=0.5, tmp_root=tmp_path)
    with pytest.raises(SparkClusterError, match=r"(?s)timed out .* waiting for .*--- master\.log ---.*logs kept in"):
        cluster.start()
    kept = next(tmp_path.iterdir())
    assert (kept / "master.log").exists()
    assert process_tree([os.getpid()]) <= before


STARTS_AND_WAITS = """
import sys
from kconform.conformance.spark.cluster import StandaloneCluster
cluster = StandaloneCluster()
cluster.start()
print(cluster.workdir, *sorted(cluster.pids), flush=True)
sys.stdin.read()
"""


def test_a_suite_killed_before_it_stops_its_cluster_leaves_no_spark_process() -> None:
    """SIGKILL the process that started the cluster: the kernel kills master and workers too (its
    directory stays, as nothing ran to remove it; the test does)."""
    starter = subprocess.Popen(
        [sys.executable, "-c", STARTS_AND_WAITS], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)},
    )  # fmt: skip
    try:
        assert starter.stdout is not None
        workdir, *pids = starter.stdout.readline().split()
        assert len(pids) >= 3 and all(alive(int(pid)) for pid in pids)
    finally:
        starter.kill()
        starter.wait(30)
    deadline = time.monotonic() + 30
    while any(alive(int(pid)) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.1)  # polling the kernel's reaping, bounded
    shutil.rmtree(workdir, ignore_errors=True)
    assert not [pid for pid in pids if alive(int(pid))], "the cluster outlived the process that started it"


@pytest.mark.spark
@pytest.mark.slow
@pytest.mark.parametrize(
    "mutant", [m for m in registry.mutants(PipelineMutant) if m.spark_master == STANDALONE], ids=lambda m: m.name
)
def test_required_pipeline_mutant_is_killed_by_its_scenario_on_the_standalone_cluster(
    mutant: PipelineMutant, record_property: Any
) -> None:
    """A mutant whose scenario needs executors on two hosts (a speculative copy beside its original), which
    tests/test_mutants.py skips on its local master: the suite on ``--spark-master standalone`` kills it."""
    started = time.monotonic()
    selected = ["-k", mutant.scenario, f"--kconform-spark-master={STANDALONE}"]
    assert_killed(f"kconform.conformance.mutants.pipeline:{mutant.name}", mutant.name, mutant.bug, mutant.kills_on,
                  selected, profile="quick")  # fmt: skip
    record_property("kill_s", round(time.monotonic() - started, 1))
