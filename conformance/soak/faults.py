"""Applying a soak schedule's faults: to the broker's nodes, the topics, and a driver's checkpoint.

Every fault returns a line for the schedule's timeline saying what was done (or why nothing was).
A fault's own duration (a node paused for 12 s, a leader down for 3 s) is waited on the soak's
stop event, so Ctrl-C ends it at once and the ``finally`` resumes or restarts the node.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from confluent_kafka.admin import AdminClient

from conformance.brokers import KafkaBroker
from conformance.soak.schedule import Fault, FaultKind, Phase
from reference_impl.kafka_client import KafkaClient
from reference_impl.types import TopicPartition

KILL_WAIT_S: Final = 30.0


class FaultNotSupported(Exception):
    """A fault kind this runner cannot inject (``executor-kill`` without a standalone cluster)."""


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


def checkpoint_entries(checkpoint: Path, log: str) -> list[int]:
    """The batch ids with an entry in the checkpoint's ``offsets`` or ``commits`` log, ascending."""
    folder = checkpoint / log
    return sorted(int(p.name) for p in folder.iterdir() if p.name.isdigit()) if folder.exists() else []


def kill_group(driver: subprocess.Popen[bytes]) -> bool:
    """SIGKILL a driver's process group (the driver and Spark's JVM); whether it was still running."""
    running = driver.poll() is None
    with contextlib.suppress(ProcessLookupError):
        os.killpg(driver.pid, signal.SIGKILL)
    driver.wait(timeout=KILL_WAIT_S)
    return running


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


def leader_of(broker: KafkaBroker, tp: TopicPartition) -> int:
    admin = AdminClient(broker.client_config("admin"))
    topic = admin.list_topics(tp.topic, timeout=10).topics[tp.topic]
    leader: int = topic.partitions[tp.partition].leader
    return leader


def apply(fault: Fault, broker: KafkaBroker, kafka: KafkaClient, topics: Topology, stop: threading.Event) -> str:
    """Inject ``fault`` (not a driver kill: the runner does those); what was done."""
    kind = fault.kind
    if kind is FaultKind.EXECUTOR_KILL:
        raise FaultNotSupported("executor-kill needs a standalone Spark cluster (--spark-master standalone)")
    if kind is FaultKind.RESCALE:
        return f"next driver at parallelism {fault.amount}"
    if kind is FaultKind.ADD_PARTITIONS:
        topic = sorted(topics.sources)[0]
        before = topics.sources[topic]
        kafka.create_partitions(topic, before + fault.amount)
        topics.sources[topic] = before + fault.amount
        topics.on_new_partitions([TopicPartition(topic, p) for p in range(before, before + fault.amount)])
        return f"{topic}: {before} -> {before + fault.amount} partitions"
    if kind is FaultKind.ADD_TOPIC:
        name = topics.source_name(len(topics.sources))
        kafka.create_topic(name, fault.amount)
        topics.sources[name] = fault.amount
        topics.on_new_partitions([TopicPartition(name, p) for p in range(fault.amount)])
        return f"created {name} with {fault.amount} partitions"
    if kind in (FaultKind.BROKER_RESTART_CLEAN, FaultKind.BROKER_KILL):
        assert fault.node is not None
        broker.restart(fault.node, clean=kind is FaultKind.BROKER_RESTART_CLEAN)
        return f"node {fault.node} {'stopped' if kind is FaultKind.BROKER_RESTART_CLEAN else 'SIGKILLed'}, restarted"
    if kind is FaultKind.NODE_PAUSE:
        assert fault.node is not None
        with broker.paused(fault.node):
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
