"""The client workload on kafka-clients: the driver runs a fixed schedule through the harness JVM (the real
KafkaProducer and KafkaConsumer at the release ``jvm/pom.xml`` pins) on the session broker, and the checkers find
nothing."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from kconform.conformance.brokers import Broker
from kconform.conformance.checks.client_workload_checkers import check_history
from kconform.conformance.jvm import JvmArtifactsMissing, artifact_version
from kconform.conformance.jvm.client_workload_at_release import build_at_release
from kconform.conformance.jvm.setup import SetupError
from kconform.conformance.workloads.clients.driver import Run
from kconform.conformance.workloads.clients.history import Assigned, Committed, Polled
from kconform.conformance.workloads.clients.jvm_clients import JvmClients, harness_settings
from kconform.conformance.workloads.clients.schedule import ConsumerPlan, ProducerPlan, Schedule, Step, StepKind

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
