"""Applying a soak schedule's faults: to the broker's nodes, the topics, and a driver's checkpoint.

Every fault returns a line for the schedule's timeline saying what was done (or why nothing was).
A fault's own duration (a node paused for 12 s, a leader down for 3 s) is waited on the soak's
stop event, so Ctrl-C ends it at once and the ``finally`` resumes or restarts the node.

An ``executor-kill`` SIGKILLs one executor of the running application on a standalone cluster, as
a lost container or node would: the ``CoarseGrainedExecutorBackend`` JVM with its Python daemon and
workers. The executors are found in the cluster's process tree (``/proc``): an executor's working
directory is ``<cluster>/worker-<n>/<app id>/<executor id>`` and application ids grow with time, so
the newest one is the running driver's (a soak runs one driver at a time).

A ``commit-stall`` arms the proxies in front of the nodes (``KafkaBroker(proxied=True)``,
``kconform.conformance.brokers.proxy``): the answer to the next EndTxn any client sends is held back
for the fault's duration, so the node commits while the task's ``commit_transaction`` times out.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import confluent_kafka as ck
from confluent_kafka.admin import AdminClient

from ...reference_impl.kafka_client import KafkaClient
from ...reference_impl.ports import KafkaError
from ...reference_impl.types import TopicPartition
from ..brokers import KafkaBroker
from ..brokers.proxy import END_TXN
from ..spark.cluster import StandaloneCluster, alive, process_tree
from ..spark.injections import stopped
from .schedule import Fault, FaultKind, Phase

EXECUTOR_MAIN: Final = "org.apache.spark.executor.CoarseGrainedExecutorBackend"
EXECUTOR_GONE_S: Final = 10.0
WATCH_TIMEOUT_S: Final = 1.0
ADMIN_RETRY_S: Final = 60.0
ADMIN_BACKOFF_S: Final = 0.5
COMMIT_WAIT_S: Final = 20.0
"""How long a ``commit-stall`` waits for a task to send a commit before it is not injected."""


class FaultNotSupported(Exception):
    """A fault kind this runner cannot inject (``executor-kill`` without a standalone cluster)."""


class NotInjected(Exception):
    """The fault found nothing to act on (no executor of a running application); the timeline says so."""


@dataclass(frozen=True)
class Executor:
    pid: int
    worker: int
    app: str
    executor: str


def executors(cluster: StandaloneCluster) -> list[Executor]:
    """The cluster's live executor JVMs, each with its worker, application and executor id (bounded:
    one pass over the cluster's process tree)."""
    found = []
    for pid in sorted(cluster.pids):
        try:
            command = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
            where = Path(os.readlink(f"/proc/{pid}/cwd")).relative_to(cluster.workdir).parts
        except (OSError, ValueError):  # gone meanwhile, or not under the cluster's directory
            continue
        if EXECUTOR_MAIN.encode() in command and len(where) == 3 and where[0].startswith("worker-"):
            worker = where[0].removeprefix("worker-")
            if worker.isdigit() and alive(pid):
                found.append(Executor(pid, int(worker), where[1], where[2]))
    return found


def kill_executor(cluster: StandaloneCluster, worker: int) -> str:
    """SIGKILL the running application's executor on ``worker`` (or on another worker if it has none
    there) with its Python processes; what was killed. ``NotInjected`` if the application has none."""
    live = executors(cluster)
    if not live:
        raise NotInjected("no executor is running on the cluster")
    app = max(e.app for e in live)
    mine = [e for e in live if e.app == app]
    target = next((e for e in mine if e.worker == worker), mine[0])
    tree = process_tree([target.pid])
    for pid in [target.pid, *sorted(tree - {target.pid})]:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + EXECUTOR_GONE_S
    while (left := [pid for pid in tree if alive(pid)]) and time.monotonic() < deadline:
        time.sleep(0.05)  # polling interval of a bounded wait for the kernel to end them
    moved = "" if target.worker == worker else f" (worker {worker} has none of {app})"
    survivors = f"; pids {left} still alive after {EXECUTOR_GONE_S:g} s" if left else ""
    return (
        f"executor {target.executor} of {app} on worker {target.worker}{moved}, pid {target.pid} "
        f"and {len(tree) - 1} Python process(es), SIGKILLed{survivors}"
    )


@dataclass
class Topology:
    """The schedule's topics: sources matched by ``pattern``, the sink, and how to grow them."""

    prefix: str
    sink: str
    sources: dict[str, int]
    """Source topic -> partition count."""
    on_new_partitions: Callable[[list[TopicPartition]], None]

    @property
    def pattern(self) -> str:
        return f"{self.prefix}-src-.*"

    def source_name(self, number: int) -> str:
        return f"{self.prefix}-src-{number}"


class OpenTransactionWatch:
    """Whether the sink holds an open transaction with records now: a partition whose high watermark
    (what a read_uncommitted consumer may read) is above its last stable offset (read_committed's)."""

    def __init__(self, broker: KafkaBroker, topic: str, partitions: int) -> None:
        self._partitions = [ck.TopicPartition(topic, p) for p in range(partitions)]
        self._consumers = [
            ck.Consumer(broker.client_config("consumer", **{"group.id": f"kconform-soak-watch-{level}",
                                                           "isolation.level": level}))
            for level in ("read_uncommitted", "read_committed")
        ]  # fmt: skip

    def open(self) -> bool:
        """One ListOffsets per isolation and partition; a broker that does not answer (paused, restarting)
        shows no open transaction."""
        try:
            for tp in self._partitions:
                high, stable = (
                    c.get_watermark_offsets(tp, timeout=WATCH_TIMEOUT_S, cached=False) for c in self._consumers
                )
                if high[1] > stable[1]:
                    return True
        except ck.KafkaException:
            return False
        return False

    def close(self) -> None:
        for consumer in self._consumers:
            consumer.close()


def checkpoint_entries(checkpoint: Path, log: str) -> list[int]:
    """The batch ids with an entry in the checkpoint's ``offsets`` or ``commits`` log, ascending."""
    folder = checkpoint / log
    return sorted(int(p.name) for p in folder.iterdir() if p.name.isdigit()) if folder.exists() else []


def tear_last_commit(checkpoint: Path) -> str:
    """A crash between the tasks' commit and the commit log (``Phase.TORN``) on a killed driver: remove
    the newest commit-log entry, unless the next batch is already planned (then the crash came later:
    a real one cannot lose an offset-log entry written before it, so the entry stays)."""
    commits, planned = checkpoint_entries(checkpoint, "commits"), checkpoint_entries(checkpoint, "offsets")
    if not commits:
        return "no commit-log entry to tear"
    last = commits[-1]
    if planned and planned[-1] > last:
        return f"batch {planned[-1]} already planned: commit-log entry {last} kept (a plain kill after the commit)"
    for path in (checkpoint / "commits" / str(last), checkpoint / "commits" / f".{last}.crc"):
        path.unlink(missing_ok=True)
    return f"commit-log entry {last} removed: batch {last} is replayed with its output already committed"


def stall_next_commit(broker: KafkaBroker, duration_ms: int, stop: threading.Event) -> str:
    """Hold back the answer to the next EndTxn any client sends for ``duration_ms``; what was held.
    ``NotInjected`` when no commit is sent within ``COMMIT_WAIT_S``."""
    hold = broker.hold_next_answer(END_TXN, duration_ms / 1000)
    deadline = time.monotonic() + COMMIT_WAIT_S
    while not hold.claimed.wait(0.05) and time.monotonic() < deadline and not stop.is_set():
        pass  # a bounded wait for the next commit, watching the soak's stop event
    if not hold.cancel():
        raise NotInjected(f"no transaction was committed within {COMMIT_WAIT_S:g} s")
    limit = time.monotonic() + duration_ms / 1000 + COMMIT_WAIT_S
    while not hold.released.wait(0.05) and time.monotonic() < limit and not stop.is_set():
        pass  # the held answer is delivered after duration_ms
    return f"the answer to the commit (EndTxn, {hold.where}) held back {duration_ms} ms; the node had committed"


def retry_admin(kafka: KafkaClient, operation: Callable[[], None], topic: str, partitions: int) -> None:
    """Run a topic-growing admin ``operation``, again after an error, until ``topic`` has ``partitions``
    (bounded by ``ADMIN_RETRY_S``): a node just resumed or restarted may drop the admin client's
    connection mid-request (``_DESTROY_BROKER``), and the operation may have happened anyway."""
    deadline = time.monotonic() + ADMIN_RETRY_S
    while True:
        try:
            operation()
            return
        except KafkaError:
            with contextlib.suppress(KafkaError):
                if len(kafka.list_topics().get(topic, ())) >= partitions:
                    return
            if time.monotonic() >= deadline:
                raise
            time.sleep(ADMIN_BACKOFF_S)  # back-off of a bounded retry


def leader_of(broker: KafkaBroker, tp: TopicPartition) -> int:
    admin = AdminClient(broker.client_config("admin"))
    topic = admin.list_topics(tp.topic, timeout=10).topics[tp.topic]
    leader: int = topic.partitions[tp.partition].leader
    return leader


def apply(
    fault: Fault, broker: KafkaBroker, kafka: KafkaClient, topics: Topology, stop: threading.Event,
    cluster: StandaloneCluster | None = None,
) -> str:  # fmt: skip
    """Inject ``fault`` (not a driver kill: the runner does those); what was done."""
    kind = fault.kind
    if kind is FaultKind.EXECUTOR_KILL:
        if cluster is None:
            raise FaultNotSupported("executor-kill needs a standalone Spark cluster (--spark-master standalone)")
        assert fault.node is not None
        return kill_executor(cluster, fault.node)
    if kind is FaultKind.RESCALE:
        return f"next driver at parallelism {fault.amount}"
    if kind is FaultKind.COMMIT_STALL:
        return stall_next_commit(broker, fault.duration_ms, stop)
    if kind is FaultKind.ADD_PARTITIONS:
        topic = sorted(topics.sources)[0]
        before = topics.sources[topic]
        retry_admin(kafka, lambda: kafka.create_partitions(topic, before + fault.amount), topic, before + fault.amount)
        topics.sources[topic] = before + fault.amount
        topics.on_new_partitions([TopicPartition(topic, p) for p in range(before, before + fault.amount)])
        return f"{topic}: {before} -> {before + fault.amount} partitions"
    if kind is FaultKind.ADD_TOPIC:
        name = topics.source_name(len(topics.sources))
        retry_admin(kafka, lambda: kafka.create_topic(name, fault.amount), name, fault.amount)
        topics.sources[name] = fault.amount
        topics.on_new_partitions([TopicPartition(name, p) for p in range(fault.amount)])
        return f"created {name} with {fault.amount} partitions"
    if kind in (FaultKind.BROKER_RESTART_CLEAN, FaultKind.BROKER_KILL):
        assert fault.node is not None
        broker.restart(fault.node, clean=kind is FaultKind.BROKER_RESTART_CLEAN)
        return f"node {fault.node} {'stopped' if kind is FaultKind.BROKER_RESTART_CLEAN else 'SIGKILLed'}, restarted"
    if kind is FaultKind.NODE_PAUSE:
        assert fault.node is not None
        with broker.paused(fault.node) as paused:
            if paused.pid is None or not stopped(paused.pid):
                raise NotInjected(f"node {fault.node} did not stop on SIGSTOP (pid {paused.pid})")
            stop.wait(fault.duration_ms / 1000)  # the fault's duration
        return f"node {fault.node} paused (SIGSTOP) for {fault.duration_ms} ms, resumed"
    if kind is FaultKind.LEADER_KILL:
        tp = TopicPartition(topics.sink, 0)
        node = leader_of(broker, tp)
        if node < 0:
            return f"{tp} has no leader now: nothing killed"
        broker.kill(node)
        try:
            stop.wait(fault.duration_ms / 1000)  # the fault's duration: the node stays down
        finally:
            broker.restart(node, clean=False)
        return f"leader of {tp}, node {node}, SIGKILLed; restarted after {fault.duration_ms} ms"
    if kind is FaultKind.DRIVER_KILL:
        raise ValueError("driver kills are applied by the runner, which owns the driver process")
    raise FaultNotSupported(f"no injector for {kind}")


def torn_or_plain(phase: Phase | None, checkpoint: Path) -> str:
    """After a driver kill: tear the last commit for ``Phase.TORN``; what was done."""
    return tear_last_commit(checkpoint) if phase is Phase.TORN else "checkpoint left as the kill left it"
