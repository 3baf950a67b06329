"""Broker lifecycle: Apache Kafka (one node and a three-node cluster) and the embedded Tansu start,
answer, stop without leaving a process, and every way they can fail to start says why; a cluster
node killed, paused or restarted comes back; the other kinds skip with a reason instead of failing."""

from __future__ import annotations

import io
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from uuid import uuid4

import pytest
from confluent_kafka.admin import AdminClient

from kconform.conformance import jvm
from kconform.conformance.brokers import (
    CLUSTER_SIZE,
    BrokerStartError,
    BrokerUnavailable,
    ContainerBroker,
    ExternalBroker,
    KafkaBroker,
    TansuBroker,
    broker_from_env,
    security_from_env,
)
from kconform.conformance.gate.options import RunOptions
from kconform.conformance.gate.runner import with_fallback
from kconform.reference_impl.credentials import Secret
from kconform.reference_impl.kafka_client import KafkaClient, wait_until
from kconform.reference_impl.ports import Isolation, KafkaError
from kconform.reference_impl.types import TopicPartition


def child_pids() -> set[int]:
    """Live or unreaped children of this process (Linux /proc)."""
    children = set()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:  # the process ended while we looked
            continue
        if int(fields[1]) == os.getpid():
            children.add(int(stat.parent.name))
    return children


def test_tansu_broker_starts_answers_and_leaves_no_process() -> None:
    before = child_pids()
    with TansuBroker() as broker, KafkaClient(broker) as client:
        assert isinstance(broker, TansuBroker) and broker.pid in child_pids()
        assert broker.local_pids() == [broker.pid]  # the bench counts the broker's CPU by them
        assert broker.log_path is not None and broker.log_path.exists()
        client.create_topic("lifecycle", 1)
        assert "lifecycle" in client.list_topics()
        workdir = broker.log_path.parent
    assert child_pids() <= before
    assert not workdir.exists()


def test_kafka_broker_starts_answers_and_leaves_no_process_nor_directory() -> None:
    before = child_pids()
    with KafkaBroker() as broker, KafkaClient(broker) as client:
        pids = broker.local_pids()
        assert broker.kind == "kafka" and set(pids) <= child_pids() and len(pids) == 1
        # the bench counts the broker's CPU by them: the JVM itself (setpriv execs it), not a wrapper
        assert b"kafka.Kafka" in Path(f"/proc/{pids[0]}/cmdline").read_bytes()
        assert broker.version.startswith("Apache Kafka 4.")
        assert broker.start_seconds is not None and broker.start_seconds < 90
        client.create_topic("lifecycle", 2)
        assert client.list_topics()["lifecycle"] == frozenset({0, 1})
        workdir = broker.nodes[0].workdir.parent
    assert child_pids() <= before
    assert not workdir.exists()


STARTS_AND_WAITS = """
import sys
from kconform.conformance.brokers import broker_from_env
broker = broker_from_env(sys.argv[1])
broker.start()
print(" ".join(map(str, broker.local_pids())), flush=True)
sys.stdin.read()
"""


@pytest.mark.parametrize("kind", ["kafka", "tansu"])
def test_a_suite_killed_before_it_stops_its_broker_leaves_no_broker_process(kind: str) -> None:
    """SIGKILL the process that started a broker: the kernel kills the broker too (no orphan JVM)."""
    starter = subprocess.Popen(
        [sys.executable, "-c", STARTS_AND_WAITS, kind], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert starter.stdout is not None
        pids = [int(p) for p in starter.stdout.readline().split()]
        assert pids and all(Path(f"/proc/{pid}").exists() for pid in pids)
    finally:
        starter.kill()
        starter.wait(30)
    deadline = time.monotonic() + 30
    while any(alive(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.1)  # polling the kernel's reaping, bounded
    assert not [pid for pid in pids if alive(pid)], f"{kind} broker outlived the process that started it"


def alive(pid: int) -> bool:
    """Running, not a zombie waiting for init to reap it."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def test_kafka_crash_during_start_shows_the_log_tail_and_keeps_it(tmp_path: Path) -> None:
    before = child_pids()
    broken = KafkaBroker(settings={"num.network.threads": "not-a-number"}, tmp_root=tmp_path, start_timeout_s=60)
    with pytest.raises(BrokerStartError, match=r"(?s)num\.network\.threads.*logs kept in"):
        broken.start()
    assert child_pids() <= before


def test_kafka_without_its_jars_names_kconform_setup_and_falls_back_to_tansu_only_when_allowed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(jvm.JVM_DIR_ENV, str(tmp_path))
    with pytest.raises(jvm.JvmArtifactsMissing, match=r"kconform setup|install Maven"):
        KafkaBroker().start()
    with pytest.raises(BrokerUnavailable, match=r"kconform setup.*--broker tansu.*--allow-fallback"):
        broker_from_env("kafka")
    warning = io.StringIO()
    fallback = with_fallback(RunOptions(adapter="a:B", allow_fallback=True), warning)
    assert fallback.broker == "tansu" and isinstance(broker_from_env(fallback.broker), TansuBroker)
    assert "falling back to the embedded Tansu broker" in warning.getvalue()
    assert "KAFKA-001 abort_hidden_from_read_committed" in warning.getvalue()
    assert "never as PASS" in warning.getvalue()


@pytest.fixture(scope="module")
def cluster() -> Iterator[KafkaBroker]:
    with KafkaBroker(nodes=CLUSTER_SIZE) as running:
        yield running


def committed_round(cluster: KafkaBroker, topic: str, value: bytes) -> list[bytes | None]:
    """Commit one record in a transaction; return what read_committed shows of partition 0.

    Timeouts are generous: after a node dies, leadership and the transaction coordinator move.
    ``commit_transaction`` returns once the coordinator has logged PrepareCommit; it writes the
    partition's commit marker afterwards, so the LSO may still stand before the record: read again,
    bounded, until it is visible (a commit never made visible fails after 60 s with what was read).
    """
    with KafkaClient(cluster, timeout_s=60.0) as client:
        producer = client.init_producer(f"kconform-cluster-{uuid4().hex[:8]}")
        try:
            producer.begin_transaction()
            producer.produce(topic, 0, None, value)
            producer.commit_transaction()
        finally:
            producer.close()
        seen: list[bytes | None] = []

        def visible() -> list[bytes | None] | None:
            seen[:] = [r.value for r in client.read(TopicPartition(topic, 0), 0, Isolation.READ_COMMITTED, 100)]
            return list(seen) if value in seen else None

        try:
            return wait_until(visible, 60.0, f"commit of {value!r} visible under read_committed", step_s=0.2)
        except KafkaError:
            return list(seen)


def test_cluster_of_three_nodes_replicates_and_serves_transactions_after_a_node_is_killed_and_restarted(
    cluster: KafkaBroker,
) -> None:
    assert cluster.kind == "kafka-cluster" and len(cluster.local_pids()) == CLUSTER_SIZE
    topic = f"replicated-{uuid4().hex[:8]}"
    with KafkaClient(cluster, timeout_s=60.0) as client:
        client.create_topic(topic, 1)
    metadata = AdminClient(cluster.client_config("admin")).list_topics(topic, timeout=30)
    assert len(metadata.topics[topic].partitions[0].replicas) == CLUSTER_SIZE
    assert committed_round(cluster, topic, b"before") == [b"before"]
    victim = cluster.nodes[0].node_id
    cluster.kill(victim)
    assert not cluster.node(victim).running
    assert committed_round(cluster, topic, b"two-of-three") == [b"before", b"two-of-three"]
    cluster.restart(victim)
    assert cluster.node(victim).running
    assert committed_round(cluster, topic, b"after") == [b"before", b"two-of-three", b"after"]


def test_cluster_node_paused_and_resumed_rejoins(cluster: KafkaBroker) -> None:
    topic = f"paused-{uuid4().hex[:8]}"
    with KafkaClient(cluster, timeout_s=60.0) as client:
        client.create_topic(topic, 1)
    victim = cluster.nodes[-1].node_id
    with cluster.paused(victim):
        assert committed_round(cluster, topic, b"while-paused") == [b"while-paused"]
    cluster.restart(victim, clean=False)  # SIGKILL, then back on its ports and directory
    assert committed_round(cluster, topic, b"after") == [b"while-paused", b"after"]


def test_port_in_use_is_named() -> None:
    with socket.socket() as squatter:
        squatter.bind(("127.0.0.1", 0))
        squatter.listen()
        port = squatter.getsockname()[1]
        with pytest.raises(BrokerStartError, match=f"port in use: 127.0.0.1:{port}"):
            TansuBroker(port=port).start()


def test_missing_binary_is_named(tmp_path: Path) -> None:
    with pytest.raises(BrokerStartError, match="binary missing"):
        TansuBroker(binary=tmp_path / "tansu").start()


def test_crash_during_start_is_named_with_the_log(tmp_path: Path) -> None:
    crashing = tmp_path / "tansu"
    crashing.write_text("#!/bin/sh\necho 'tansu: simulated failure'\nexit 3\n")
    crashing.chmod(0o755)
    before = child_pids()
    with pytest.raises(BrokerStartError, match=r"(?s)crash: Tansu exited with code 3.*simulated failure"):
        TansuBroker(binary=crashing, start_timeout_s=10, tmp_root=tmp_path).start()
    assert child_pids() <= before


def test_start_timeout_is_bounded_and_names_the_cause(tmp_path: Path) -> None:
    silent = tmp_path / "tansu"
    silent.write_text("#!/bin/sh\nexec sleep 60\n")
    silent.chmod(0o755)
    before = child_pids()
    with pytest.raises(BrokerStartError, match="did not answer a metadata request in time"):
        TansuBroker(binary=silent, start_timeout_s=1, tmp_root=tmp_path).start()
    assert child_pids() <= before


def test_external_needs_bootstrap_servers_and_hides_security(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("KAFKA_BOOTSTRAP_SERVERS", raising=False)
    with pytest.raises(BrokerUnavailable, match="KAFKA_BOOTSTRAP_SERVERS"):
        ExternalBroker().start()
    env = {"KAFKA_SASL_PASSWORD": "s3cret", "KAFKA_SECURITY_PROTOCOL": "SASL_SSL", "KAFKA_HOME": "/opt"}
    assert security_from_env(env) == {"sasl.password": Secret("s3cret"), "security.protocol": "SASL_SSL"}
    assert "s3cret" not in repr(security_from_env(env))
    broker = ExternalBroker("127.0.0.1:1", security={"sasl.password": "s3cret"})
    assert "s3cret" not in repr(broker)


def test_testcontainers_skips_with_a_reason_when_it_cannot_run() -> None:
    try:
        with ContainerBroker() as container:
            assert container.bootstrap_servers
    except BrokerUnavailable as reason:
        assert "Docker engine" in str(reason) or "pip install kconform[docker]" in str(reason)


def test_unknown_broker_kind_is_rejected() -> None:
    with pytest.raises(ValueError, match="kafka, kafka-cluster, kafka-sasl, tansu, external, testcontainers"):
        broker_from_env("kraft")


def test_kafka_sasl_is_a_node_whose_clients_must_log_in() -> None:
    broker = broker_from_env("kafka-sasl")
    assert isinstance(broker, KafkaBroker) and broker.kind == "kafka-sasl"
    assert broker.security["security.protocol"] == "SASL_PLAINTEXT" and "***" in repr(broker.security)
