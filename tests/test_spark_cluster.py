"""The pure parts of ``kconform.conformance.spark.cluster``: the daemons' commands and environment, a
session's cluster settings, the process tree; and the errors that name their fix before any JVM starts."""

from __future__ import annotations

import ipaddress
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kconform.conformance.spark.cluster import (
    DEFAULT_SHAPE,
    STANDALONE,
    TASK_ATTEMPTS,
    SparkClusterError,
    StandaloneCluster,
    alive,
    cluster_settings,
    daemon_command,
    daemon_env,
    is_local,
    master_args,
    process_tree,
    scala_version,
    spark_home,
    worker_args,
    worker_host,
)
from kconform.conformance.spark.pipeline import local_session


def test_masters_that_run_tasks_in_the_driver_are_local() -> None:
    assert all(is_local(m) for m in ("local", "local[2]", "local[2,3]", "local[*]", "local[*,4]"))
    assert not any(is_local(m) for m in ("spark://127.0.0.1:7077", "yarn", "local-cluster[2,1,1024]"))


def test_the_scala_version_is_read_off_spark_core(tmp_path: Path) -> None:
    (tmp_path / "jars").mkdir()
    (tmp_path / "jars" / "spark-core_2.13-4.2.0.jar").touch()
    assert scala_version(tmp_path) == "2.13"
    assert scala_version(spark_home()).startswith("2.")


def test_a_distribution_without_spark_core_is_named(tmp_path: Path) -> None:
    (tmp_path / "jars").mkdir()
    with pytest.raises(SparkClusterError, match="no spark-core jar: reinstall pyspark"):
        scala_version(tmp_path)


def test_daemons_run_pysparks_jars_on_loopback_with_a_bounded_heap(tmp_path: Path) -> None:
    master = daemon_command(Path("/usr/bin/java"), tmp_path, "master.Master", master_args(7077, 8080))
    assert master[0] == "/usr/bin/java" and "-Xmx256m" in master
    assert master[master.index("-cp") + 1] == f"{tmp_path}/jars/*"
    assert "-Dspark.master.rest.enabled=false" in master and "-Dspark.port.maxRetries=0" in master
    main = master.index("org.apache.spark.deploy.master.Master")
    assert master[main + 1 :] == ["--host", "127.0.0.1", "--port", "7077", "--webui-port", "8080"]


def test_a_worker_offers_its_shapes_cores_and_memory_to_the_master(tmp_path: Path) -> None:
    args = worker_args("spark://127.0.0.1:7077", tmp_path, "127.0.0.2")
    assert args[-1] == "spark://127.0.0.1:7077"
    options = dict(zip(args[:-1:2], args[1:-1:2], strict=True))
    assert options == {
        "--host": "127.0.0.2",
        "--port": "0",
        "--webui-port": "0",
        "--cores": str(DEFAULT_SHAPE.worker_cores),
        "--memory": DEFAULT_SHAPE.worker_memory,
        "--work-dir": str(tmp_path),
    }


def test_each_worker_is_a_host_of_its_own_on_loopback() -> None:
    """Spark runs a speculative copy only on another host than the original's (COMMIT-006's scenario)."""
    hosts = [worker_host(n) for n in range(1, DEFAULT_SHAPE.workers + 1)]
    assert hosts == ["127.0.0.1", "127.0.0.2"]
    assert all(ipaddress.ip_address(h).is_loopback for h in hosts)


def test_two_applications_fit_at_once() -> None:
    """The suite's session and a driver it kills must both get executors, one on each worker."""
    shape = DEFAULT_SHAPE
    assert shape.workers * shape.worker_cores >= 2 * shape.app_cores
    assert shape.app_cores == shape.workers * shape.executor_cores


def test_daemons_get_sparks_home_and_loopback_and_nothing_else_of_the_environment(tmp_path: Path) -> None:
    (tmp_path / "jars").mkdir()
    (tmp_path / "jars" / "spark-core_2.13-4.2.0.jar").touch()
    env = daemon_env(tmp_path, "127.0.0.2", {"PATH": "/bin", "JAVA_HOME": "/jdk", "KAFKA_SASL_PASSWORD": "secret"})
    assert env == {
        "PATH": "/bin",
        "JAVA_HOME": "/jdk",
        "SPARK_HOME": str(tmp_path),
        "SPARK_SCALA_VERSION": "2.13",
        "SPARK_LOCAL_IP": "127.0.0.2",
    }


def test_executors_run_this_interpreter_with_the_drivers_path_and_retry_tasks() -> None:
    settings = cluster_settings("/venv/bin/python", ["", "/a", "rel", "/a", "/b"])
    assert settings["spark.executorEnv.PYSPARK_PYTHON"] == "/venv/bin/python"
    assert settings["spark.executorEnv.PYTHONPATH"] == os.pathsep.join(["/a", os.path.abspath("rel"), "/b"])
    assert settings["spark.task.maxFailures"] == str(TASK_ATTEMPTS) == "3"
    assert settings["spark.cores.max"] == str(DEFAULT_SHAPE.app_cores)


def test_standalone_is_not_a_master_url() -> None:
    with pytest.raises(ValueError, match="StandaloneCluster"):
        local_session(STANDALONE)


def test_the_process_tree_holds_descendants_in_other_groups() -> None:
    child = subprocess.Popen(
        [sys.executable, "-c", "import subprocess, sys; subprocess.run(['sleep', '30'], start_new_session=True)"]
    )
    try:
        for _ in range(200):
            tree = process_tree([child.pid])
            if len(tree) == 2:
                break
            time.sleep(0.05)  # polling for the grandchild to start, bounded
        assert child.pid in tree and len(tree) == 2, tree
    finally:
        for pid in process_tree([child.pid]):
            os.kill(pid, 9)
        child.wait(10)
    assert not alive(child.pid) and process_tree([child.pid]) == set()


def test_a_cluster_without_java_names_the_fix(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "no-jdk"))
    with pytest.raises(SparkClusterError, match=r"needs Java: .*install Java 17"):
        StandaloneCluster(tmp_root=tmp_path).start()
    assert list(tmp_path.iterdir()) == []


def test_an_unstarted_cluster_has_no_master_url() -> None:
    with pytest.raises(SparkClusterError, match="not started"):
        _ = StandaloneCluster().master_url
