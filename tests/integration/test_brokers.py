"""Broker lifecycle: the embedded Tansu starts, answers, stops without leaving a process, and
every way it can fail to start says why; the other kinds skip with a reason instead of failing."""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest

from conformance.brokers import (
    BrokerStartError,
    BrokerUnavailable,
    ContainerBroker,
    EmbeddedBroker,
    ExternalBroker,
    broker_from_env,
    security_from_env,
)
from reference_impl.kafka_client import KafkaClient


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


def test_embedded_broker_starts_answers_and_leaves_no_process() -> None:
    before = child_pids()
    with EmbeddedBroker() as broker, KafkaClient(broker) as client:
        assert isinstance(broker, EmbeddedBroker) and broker.pid in child_pids()
        assert broker.log_path is not None and broker.log_path.exists()
        client.create_topic("lifecycle", 1)
        assert "lifecycle" in client.list_topics()
        workdir = broker.log_path.parent
    assert child_pids() <= before
    assert not workdir.exists()


def test_port_in_use_is_named() -> None:
    with socket.socket() as squatter:
        squatter.bind(("127.0.0.1", 0))
        squatter.listen()
        port = squatter.getsockname()[1]
        with pytest.raises(BrokerStartError, match=f"port in use: 127.0.0.1:{port}"):
            EmbeddedBroker(port=port).start()


def test_missing_binary_is_named(tmp_path: Path) -> None:
    with pytest.raises(BrokerStartError, match="binary missing"):
        EmbeddedBroker(binary=tmp_path / "tansu").start()


def test_crash_during_start_is_named_with_the_log(tmp_path: Path) -> None:
    crashing = tmp_path / "tansu"
    crashing.write_text("#!/bin/sh\necho 'tansu: simulated failure'\nexit 3\n")
    crashing.chmod(0o755)
    before = child_pids()
    with pytest.raises(BrokerStartError, match=r"(?s)crash: Tansu exited with code 3.*simulated failure"):
        EmbeddedBroker(binary=crashing, start_timeout_s=10, tmp_root=tmp_path).start()
    assert child_pids() <= before


def test_start_timeout_is_bounded_and_names_the_cause(tmp_path: Path) -> None:
    silent = tmp_path / "tansu"
    silent.write_text("#!/bin/sh\nexec sleep 60\n")
    silent.chmod(0o755)
    before = child_pids()
    with pytest.raises(BrokerStartError, match="did not answer a metadata request in time"):
        EmbeddedBroker(binary=silent, start_timeout_s=1, tmp_root=tmp_path).start()
    assert child_pids() <= before


def test_external_needs_bootstrap_servers_and_hides_security(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("KAFKA_BOOTSTRAP_SERVERS", raising=False)
    with pytest.raises(BrokerUnavailable, match="KAFKA_BOOTSTRAP_SERVERS"):
        ExternalBroker().start()
    env = {"KAFKA_SASL_PASSWORD": "s3cret", "KAFKA_SECURITY_PROTOCOL": "SASL_SSL", "KAFKA_HOME": "/opt"}
    assert security_from_env(env) == {"sasl.password": "s3cret", "security.protocol": "SASL_SSL"}
    broker = ExternalBroker("127.0.0.1:1", security={"sasl.password": "s3cret"})
    assert "s3cret" not in repr(broker)


def test_testcontainers_skips_with_a_reason_when_it_cannot_run() -> None:
    try:
        with ContainerBroker() as container:
            assert container.bootstrap_servers
    except BrokerUnavailable as reason:
        assert "Docker engine" in str(reason) or "pip install kconform[docker]" in str(reason)


def test_unknown_broker_kind_is_rejected() -> None:
    with pytest.raises(ValueError, match="embedded, external, testcontainers"):
        broker_from_env("kraft")
