"""The client workload on kafka-clients: the driver runs a fixed schedule through the harness JVM (the real
KafkaProducer and KafkaConsumer at the release ``jvm/pom.xml`` pins) on the session broker, and the checkers find
nothing."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from uuid import uuid4

import confluent_kafka as ck
import pytest

from kconform.conformance.brokers import Broker
from kconform.conformance.checks.client_workload_checkers import check_clients_failed, check_history
from kconform.conformance.jvm import JvmArtifactsMissing, artifact_version
from kconform.conformance.jvm.client_workload_at_release import build_at_release
from kconform.conformance.jvm.setup import SetupError
from kconform.conformance.workloads.clients.driver import Run, fatal
from kconform.conformance.workloads.clients.history import (
    Assigned,
    ClientInfo,
    Committed,
    Failed,
    History,
    Log,
    Polled,
    Sent,
)
from kconform.conformance.workloads.clients.jvm_clients import JvmClients, harness_settings
from kconform.conformance.workloads.clients.schedule import ConsumerPlan, ProducerPlan, Schedule, Step, StepKind
from kconform.reference_impl.kafka_client import KafkaClient

pytestmark = pytest.mark.jvm


@pytest.fixture(scope="module")
def clients(broker: Broker) -> Iterator[JvmClients]:
    try:
        release = artifact_version("kafka-oracle", "kafka-clients")
        folder = build_at_release(release, lambda _line: None)
    except (JvmArtifactsMissing, SetupError) as missing:
        pytest.skip(f"the client workload's harness cannot be built here: {missing}")
    with JvmClients(folder, release, harness_settings(broker)) as built:
        yield built


PRODUCE = Step(StepKind.PRODUCE, count=6, partition=0)
FLUSH = Step(StepKind.FLUSH)
POLL = Step(StepKind.POLL, count=100, wait_ms=1_000)


def test_kafka_clients_run_a_fixed_schedule_and_the_checkers_find_nothing(broker: Broker, clients: JvmClients) -> None:
    schedule = Schedule(
        (2,),
        (ProducerPlan({"enable.idempotence": "true"}, False), ProducerPlan({}, True)),
        (
            # isolation.level explicit: the checkers read an absent one as librdkafka's default (read_committed),
            # kafka-clients' is read_uncommitted
            ConsumerPlan(
                {"auto.offset.reset": "earliest", "enable.auto.commit": "false", "isolation.level": "read_committed"},
                "assign",
            ),
            ConsumerPlan(
                {"auto.offset.reset": "earliest", "enable.auto.commit": "false", "isolation.level": "read_committed"},
                "subscribe",
            ),
        ),
        (
            PRODUCE,
            Step(StepKind.TRANSACTION, client=1, count=3, partition=1, mode="commit"),
            Step(StepKind.TRANSACTION, client=1, count=2, partition=1, mode="abort"),
            FLUSH,
            POLL,
            Step(StepKind.POLL, client=1, count=100, wait_ms=2_000),
            Step(StepKind.COMMIT, mode="sync"),
            Step(StepKind.COMMIT, client=1, mode="async"),
            # its callback is served by the next poll (one still pending at close was not reported: see the module)
            Step(StepKind.POLL, client=1, count=100, wait_ms=500),
            Step(StepKind.PAUSE),
            Step(StepKind.RESUME),
            Step(StepKind.PRODUCE, count=4, keyed=True),
            FLUSH,
            POLL,
            Step(StepKind.COMMIT, mode="message"),
            Step(StepKind.SEEK, partition=0, mode="beginning"),
            POLL,
            Step(StepKind.CLOSE, client=1),
            Step(StepKind.REOPEN, client=1),
            Step(StepKind.POLL, client=1, count=100, wait_ms=2_000),
        ),
        faults=False,
    )
    history = Run(schedule, broker, clients=clients).run()
    found = check_history(history, broker.answers())
    assert found == [], "\n".join([str(v) for v in found] + [repr(e) for e in history.events])
    assert history.drained
    assert any(isinstance(e, Assigned) and e.how == "rebalance" for e in history.events)
    assert any(isinstance(e, Committed) and e.offsets for e in history.events)
    assert sum(len(e.records) for e in history.events if isinstance(e, Polled)) >= 10


def test_a_replay_runs_one_schedule_alone_and_keeps_the_clients_own_log(tmp_path: Path) -> None:
    """``kconform replay-schedule``'s run (``replay.command.replay``): a broker of its own, the schedule on the
    release's harness, judged in full (exit 0), and the clients' log at ``info`` beside the history."""
    from kconform.conformance.replay import command as replay

    try:
        release = artifact_version("kafka-oracle", "kafka-clients")
        build_at_release(release, lambda _line: None)
    except (JvmArtifactsMissing, SetupError) as missing:
        pytest.skip(f"the client workload's harness cannot be built here: {missing}")
    schedule = Schedule(
        (2,),
        (ProducerPlan({}),),
        (ConsumerPlan({}, "topics"),),
        (PRODUCE, FLUSH, POLL),
    )
    assert replay.replay(schedule, release, "info", tmp_path) == 0
    log = (tmp_path / "clients.log").read_text()
    assert "INFO org.apache.kafka.clients" in log and "Subscribed to topic(s)" in log
    assert "Polled(" in (tmp_path / "history.txt").read_text()
    assert replay.read_schedule(str(tmp_path / "schedule.json")) == schedule


def test_a_kafka_clients_producer_fenced_by_a_later_one_of_its_id_reads_fatal_and_is_excused(
    broker: Broker, clients: JvmClients
) -> None:
    """The harness reads a real KafkaProducer's fatal error state: fenced by a later producer of its transactional id
    (KIP 98), its commit fails with an error ``fatal()`` says is one, and no abort is asked of it; the driver records
    it as ``Failed`` with the call. With the later producer in the history, ``check_clients_failed`` excuses it; with
    none, it is LIVE-001 ``producer-failed``."""
    prefix = f"kcw-{uuid4().hex[:8]}"
    kafka = KafkaClient(broker)
    try:
        kafka.create_topic(f"{prefix}-t0", 1)
    finally:
        kafka.close()
    config = {**broker.client_config("producer"), "transactional.id": f"{prefix}-p0"}
    old = clients.producer(config)
    old.init_transactions()
    old.begin_transaction()
    old.produce(f"{prefix}-t0", value=b"p0-0", partition=0)
    old.flush()
    new = clients.producer(config)
    new.init_transactions()
    with pytest.raises(ck.KafkaException) as raised:
        old.commit_transaction()
    error = raised.value.args[0]
    assert fatal(error) and not error.txn_requires_abort(), error
    run = Run(Schedule((1,), (), (), ()), broker, clients, prefix=prefix)
    run.recorder.add(Sent, "p0", value=b"p0-0", topic=f"{prefix}-t0", partition=0, txn=1)
    run.recorder.add(Sent, "p1", value=b"p1-0", topic=f"{prefix}-t0", partition=0, txn=1)
    run._producer_failed("p0", "commit_transaction", raised.value)
    (failed,) = [e for e in run.recorder.events if isinstance(e, Failed)]
    assert failed.call == "commit_transaction" and "Fenced" in failed.error, failed
    same = ClientInfo({}, transactional=True, transactional_id=f"{prefix}-p0")
    events = tuple(run.recorder.events)
    log = Log({}, {})
    assert check_clients_failed(History(events, {"p0": same, "p1": same}, log), True) == []
    other = replace(same, transactional_id=f"{prefix}-p1")
    found = check_clients_failed(History(events, {"p0": same, "p1": other}, log), True)
    assert [(v.requirement, v.kind) for v in found] == [("LIVE-001", "producer-failed")]
    run.kafka.close()
    old.close(5.0)
    new.close(5.0)
