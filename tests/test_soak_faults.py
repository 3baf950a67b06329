"""``executor-kill`` finds the running application's executor on a worker and kills it with its Python
processes: on stand-in processes laid out as a standalone worker's (no Spark, no broker)."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import cast
from unittest import mock

import pytest

from kconform.conformance.soak.faults import EXECUTOR_MAIN, NotInjected, executors, kill_executor, retry_admin
from kconform.conformance.spark.cluster import StandaloneCluster, alive, process_tree
from kconform.reference_impl.ports import KafkaError

# An "executor": a process naming Spark's executor main class that starts one child (its "Python daemon").
EXECUTOR = (
    "import subprocess, sys, time; subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)']); "
    "time.sleep(60)"
)


class FakeCluster:
    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        self.roots: list[subprocess.Popen[bytes]] = []

    @property
    def pids(self) -> set[int]:
        return process_tree(p.pid for p in self.roots)

    def executor(self, worker: int, app: str, executor: str) -> subprocess.Popen[bytes]:
        where = self.workdir / f"worker-{worker}" / app / executor
        where.mkdir(parents=True)
        process = subprocess.Popen([sys.executable, "-c", EXECUTOR, EXECUTOR_MAIN], cwd=where)
        self.roots.append(process)
        deadline = time.monotonic() + 20
        while len(process_tree([process.pid])) < 2:  # bounded wait for its child
            assert time.monotonic() < deadline, "the stand-in executor did not start its child"
            time.sleep(0.02)
        return process


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[FakeCluster]:
    fake = FakeCluster(tmp_path)
    try:
        yield fake
    finally:
        for pid in fake.pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        for process in fake.roots:
            process.wait(timeout=10)


def test_the_newest_applications_executor_on_the_drawn_worker_dies_with_its_python(cluster: FakeCluster) -> None:
    old = cluster.executor(2, "app-20261123170000-0000", "1")
    mine_1 = cluster.executor(1, "app-20261123170500-0001", "0")
    mine_2 = cluster.executor(2, "app-20261123170500-0001", "1")
    children = process_tree([mine_2.pid]) - {mine_2.pid}
    found = executors(cast(StandaloneCluster, cluster))
    assert {(e.worker, e.app, e.executor) for e in found} == {
        (2, "app-20261123170000-0000", "1"), (1, "app-20261123170500-0001", "0"), (2, "app-20261123170500-0001", "1"),
    }  # fmt: skip
    text = kill_executor(cast(StandaloneCluster, cluster), 2)
    assert text.startswith("executor 1 of app-20261123170500-0001 on worker 2, pid") and "1 Python" in text
    mine_2.wait(timeout=10)
    assert not any(alive(pid) for pid in children)
    assert old.poll() is None and mine_1.poll() is None
    # worker 2 has none of the newest application now: its executor on worker 1 is killed instead
    assert "(worker 2 has none of app-20261123170500-0001)" in kill_executor(cast(StandaloneCluster, cluster), 2)
    mine_1.wait(timeout=10)


def test_no_executor_is_not_injected(cluster: FakeCluster) -> None:
    with pytest.raises(NotInjected, match="no executor"):
        kill_executor(cast(StandaloneCluster, cluster), 1)


class FlakyAdmin:
    """A KafkaClient stand-in whose first ``fail`` topic operations raise, the first after taking effect."""

    def __init__(self, fail: int) -> None:
        self.fail = fail
        self.topics: dict[str, frozenset[int]] = {}

    def grow(self, topic: str, partitions: int) -> None:
        if self.fail:
            self.fail -= 1
            if self.fail == 0:
                self.topics[topic] = frozenset(range(partitions))  # it happened; the answer was lost
            raise KafkaError("create partitions: _DESTROY_BROKER: Broker handle destroyed without termination")
        self.topics[topic] = frozenset(range(partitions))

    def list_topics(self) -> dict[str, frozenset[int]]:
        return self.topics


def test_a_topic_grown_while_a_node_recovers_is_retried_until_it_took_effect() -> None:
    admin = FlakyAdmin(fail=2)
    retry_admin(admin, lambda: admin.grow("t", 3), "t", 3)  # type: ignore[arg-type]
    assert admin.topics == {"t": frozenset({0, 1, 2})} and admin.fail == 0
    never = FlakyAdmin(fail=10**9)
    with (
        pytest.raises(KafkaError, match="_DESTROY_BROKER"),
        mock.patch("kconform.conformance.soak.faults.ADMIN_RETRY_S", 0),
    ):
        retry_admin(never, lambda: never.grow("t", 3), "t", 3)  # type: ignore[arg-type]
