"""Each client checker catches a broken client end to end: broken confluent-kafka wrappers, run by the workload's
driver on the session broker through a fixed schedule, are each flagged with their anomaly, and the real clients
pass the same schedule."""

from __future__ import annotations

import os
import signal
import threading
from dataclasses import replace
from types import SimpleNamespace
from typing import Any, Final
from uuid import uuid4

import confluent_kafka as ck
import pytest

from kconform.conformance.brokers import Broker
from kconform.conformance.checks.client_workload_checkers import check_clients_failed, check_history
from kconform.conformance.workloads.clients import driver
from kconform.conformance.workloads.clients.driver import RealClients, Run
from kconform.conformance.workloads.clients.history import (
    ClientInfo,
    Closed,
    Committed,
    Crashed,
    Failed,
    History,
    Hung,
    Log,
    Sent,
    Subscribed,
    faults,
)
from kconform.conformance.workloads.clients.isolated import run_isolated
from kconform.conformance.workloads.clients.schedule import (
    ConsumerPlan,
    Discipline,
    ProducerPlan,
    Schedule,
    Span,
    Step,
    StepKind,
)


class Delegating:
    def __init__(self, inner: Any) -> None:
        self._inner = inner

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


class RewindingResume(Delegating):
    """A consumer whose resume restarts each partition's fetch two records back (librdkafka-4636's kind)."""

    def resume(self, partitions: list[ck.TopicPartition]) -> None:
        self._inner.resume(partitions)
        for p in self._inner.position(partitions):
            if p.offset >= 2:
                self._inner.seek(ck.TopicPartition(p.topic, p.partition, p.offset - 2))


class SkippingResume(Delegating):
    """A consumer whose resume jumps one record ahead (librdkafka-4208's kind)."""

    def resume(self, partitions: list[ck.TopicPartition]) -> None:
        self._inner.resume(partitions)
        for p in self._inner.position(partitions):
            if p.offset >= 0:
                self._inner.seek(ck.TopicPartition(p.topic, p.partition, p.offset + 1))


class ForgetfulStore(Delegating):
    """A consumer whose store_offsets stores nothing (librdkafka-4442's kind)."""

    def store_offsets(self, *args: Any, **kwargs: Any) -> None:
        return None


class EpochlessStoreIgnored(Delegating):
    """A consumer that ignores an offset stored without a record (``store_offsets(offsets=...)``, no leader epoch), so
    a commit of the stored offsets finds none: librdkafka-4442's outcome."""

    def store_offsets(self, *args: Any, **kwargs: Any) -> None:
        if "message" in kwargs:
            self._inner.store_offsets(*args, **kwargs)


class NoOffsetCommitted(Delegating):
    """A consumer whose ``committed`` answers "no committed offset" for every partition (a client that reads a failed
    offset fetch, such as one refused STALE_MEMBER_EPOCH, as the group having none)."""

    def committed(self, partitions: list[ck.TopicPartition], timeout: float = -1) -> list[ck.TopicPartition]:
        answer = self._inner.committed(partitions, timeout=timeout)
        return [ck.TopicPartition(p.topic, p.partition, ck.OFFSET_INVALID) for p in answer]


def misreported(p: Any) -> Any:
    """``p`` as an answer that says its commit failed (``ILLEGAL_GENERATION``) although the commit applied."""
    return SimpleNamespace(
        topic=p.topic, partition=p.partition, offset=p.offset, error=ck.KafkaError(ck.KafkaError.ILLEGAL_GENERATION)
    )


class MisreportedCommit(Delegating):
    """A consumer whose commits apply but are answered failed, partition by partition (its ``commit``'s result and its
    ``on_commit`` callback): librdkafka #5199's kind, an answer keeping an earlier attempt's error."""

    def commit(self, *args: Any, **kwargs: Any) -> Any:
        answer = self._inner.commit(*args, **kwargs)
        return None if answer is None else [misreported(p) for p in answer]


class UncommittedReader(Delegating):
    """A consumer built read_uncommitted whatever it was asked (a client that drops its isolation level)."""


class DoubleSender(Delegating):
    """A producer that sends every record twice, under idempotence too."""

    def produce(self, *args: Any, **kwargs: Any) -> None:
        self._inner.produce(*args, **kwargs)
        self._inner.produce(*args, **{k: v for k, v in kwargs.items() if k != "on_delivery"})


class FatalAfterSends(Delegating):
    """A producer that fails fatally after its third send, as librdkafka's idempotent producer does once it has set
    its fatal error (librdkafka #4438's sequence desynchronisation, #4750's batch it cannot rebuild): every later send
    is refused with ``_FATAL``."""

    sends = 0

    def produce(self, *args: Any, **kwargs: Any) -> None:
        FatalAfterSends.sends += 1
        if FatalAfterSends.sends > 3:
            raise ck.KafkaException(
                ck.KafkaError(ck.KafkaError._FATAL, "Inconsistent state: sequence desynchronization", fatal=True)
            )
        self._inner.produce(*args, **kwargs)


RELEASE = threading.Event()
"""Lets a hung consume return once its test is over (its thread is a daemon either way)."""


class HangingConsume(Delegating):
    """A consumer whose third batch poll never returns (a client stuck in a call)."""

    calls = 0

    def consume(self, *args: Any, **kwargs: Any) -> Any:
        HangingConsume.calls += 1
        if HangingConsume.calls == 3:
            RELEASE.wait(600)
        return self._inner.consume(*args, **kwargs)


class HangingProduce(Delegating):
    """A producer whose fourth send never returns (kafka-clients' send blocking for good, as in KAFKA-14303)."""

    calls = 0

    def produce(self, *args: Any, **kwargs: Any) -> None:
        HangingProduce.calls += 1
        if HangingProduce.calls == 4:
            RELEASE.wait(600)
        self._inner.produce(*args, **kwargs)


class StopsServing(Delegating):
    """A consumer whose polls, from its third on, return at once without polling its client (a member whose poll
    never again serves its group, so it never rejoins after its poll interval put it out: KAFKA-14024's kind)."""

    def __init__(self, inner: Any) -> None:
        super().__init__(inner)
        self.calls = 0

    def consume(self, *args: Any, **kwargs: Any) -> Any:
        self.calls += 1
        return [] if self.calls > 2 else self._inner.consume(*args, **kwargs)

    def poll(self, *args: Any, **kwargs: Any) -> Any:
        self.calls += 1
        return None if self.calls > 2 else self._inner.poll(*args, **kwargs)


class NeverStarts(Delegating):
    """A consumer that never fetches what it owns: each poll first pauses every assigned partition, and resume does
    nothing (a client whose position fetch never completes: KAFKA-20765's kind)."""

    def consume(self, *args: Any, **kwargs: Any) -> Any:
        self._inner.pause(self._inner.assignment())
        return self._inner.consume(*args, **kwargs)

    def resume(self, partitions: list[ck.TopicPartition]) -> None:
        return None


class AskStallsStart(Delegating):
    """A consumer whose ask for the committed offsets of a partition it has not started yet (no position) leaves that
    partition never started: its fetch of the partition's start is taken by the ask's request and never completes
    (KAFKA-20765's kind, where the position fetch is chained onto an offset fetch that failed STALE_MEMBER_EPOCH)."""

    def __init__(self, inner: Any) -> None:
        super().__init__(inner)
        self._stuck: set[tuple[str, int]] = set()

    def committed(self, partitions: list[ck.TopicPartition], timeout: float = -1) -> list[ck.TopicPartition]:
        answer = self._inner.committed(partitions, timeout=timeout)
        unstarted = [p for p in self._inner.position(partitions) if p.offset < 0]
        if unstarted:
            self._stuck |= {(p.topic, p.partition) for p in unstarted}
            self._inner.pause(unstarted)
        return answer

    def resume(self, partitions: list[ck.TopicPartition]) -> None:
        self._inner.resume([p for p in partitions if (p.topic, p.partition) not in self._stuck])


class AbortsOnAssign(Delegating):
    """A consumer whose process aborts in its first assignment callback (a native crash of the client: a failed
    librdkafka assertion aborts the process that runs it)."""

    def subscribe(self, topics: list[str], on_assign: Any = None, **callbacks: Any) -> None:
        def crash(_consumer: Any, _partitions: Any) -> None:
            os.abort()

        self._inner.subscribe(topics, on_assign=crash, **callbacks)


class HangingPause(Delegating):
    """A consumer whose pause never returns, called where the driver awaits no bound of its own (the run's thread
    itself stuck: before the run's process was the suite's child, the suite hung with it)."""

    def pause(self, partitions: list[ck.TopicPartition]) -> None:
        RELEASE.wait(600)


class HangingCommit(Delegating):
    """A consumer whose commits never return (a client that keeps waiting for a coordinator that came back)."""

    def commit(self, *args: Any, **kwargs: Any) -> Any:
        RELEASE.wait(600)
        return self._inner.commit(*args, **kwargs)


class Broken(RealClients):
    def __init__(self, consumer: type[Delegating] | None = None, producer: type[Delegating] | None = None) -> None:
        self._consumer, self._producer = consumer, producer

    def consumer(self, config: dict[str, Any]) -> Any:
        if self._consumer is StopsServing and config.get("client.id") != "first":
            return super().consumer(config)  # one member of the group is broken, the other keeps serving it
        if self._consumer is UncommittedReader:
            config = {**config, "isolation.level": "read_uncommitted"}
        if self._consumer is MisreportedCommit and config.get("on_commit") is not None:
            told = config["on_commit"]
            config = {**config, "on_commit": lambda err, parts: told(err, [misreported(p) for p in parts])}
        built = super().consumer(config)
        return built if self._consumer is None else self._consumer(built)

    def producer(self, config: dict[str, Any]) -> Any:
        built = super().producer(config)
        return built if self._producer is None else self._producer(built)


def schedule(consumer: dict[str, str], producer: dict[str, str], *steps: Step, transactional: bool = False) -> Schedule:
    return Schedule(
        (1,),
        (ProducerPlan(producer, transactional),),
        (ConsumerPlan({"auto.offset.reset": "earliest", **consumer}, "assign"),),
        steps,
        faults=False,
    )


def disciplined(drawn: Schedule, discipline: Discipline) -> Schedule:
    """``drawn`` with its consumer's application doing ``discipline`` around its polls."""
    return replace(drawn, consumers=tuple(replace(c, discipline=discipline) for c in drawn.consumers))


PRODUCE = Step(StepKind.PRODUCE, count=6, partition=0)
FLUSH = Step(StepKind.FLUSH)
POLL = Step(StepKind.POLL, count=100, wait_ms=1_000)
READ_THEN_COMMITTED: Final = (PRODUCE, FLUSH, POLL, POLL, Step(StepKind.COMMIT, mode="sync"))
"""Six records written, read by two polls and committed by a sync commit: where the committed-offset mutants start."""
PAUSE_RESUME = (Step(StepKind.PAUSE), Step(StepKind.RESUME))
CASES = {
    "resume-rewinds": (
        schedule({}, {}, PRODUCE, FLUSH, POLL, POLL, *PAUSE_RESUME, PRODUCE, FLUSH, POLL, POLL),
        Broken(consumer=RewindingResume),
        ("CLIENT-004", "redelivered"),
    ),
    "resume-skips": (
        schedule({}, {}, PRODUCE, FLUSH, POLL, POLL, *PAUSE_RESUME, PRODUCE, FLUSH, POLL, POLL),
        Broken(consumer=SkippingResume),
        ("CLIENT-004", "skipped"),
    ),
    "store-forgets": (
        schedule(
            {"enable.auto.offset.store": "false"},
            {},
            PRODUCE,
            FLUSH,
            POLL,
            POLL,
            Step(StepKind.STORE),
            Step(StepKind.COMMIT, mode="sync"),
        ),
        Broken(consumer=ForgetfulStore),
        ("CLIENT-007", "stored-not-committed"),
    ),
    "discipline-store-by-offset-ignored": (
        # no store step: the consumer's discipline stores by offset and commits after each poll
        disciplined(
            schedule(
                {"enable.auto.offset.store": "false", "enable.auto.commit": "false"},
                {},
                PRODUCE,
                FLUSH,
                POLL,
                POLL,
                POLL,
            ),
            Discipline("offset", "sync"),
        ),
        Broken(consumer=EpochlessStoreIgnored),
        ("CLIENT-007", "stored-not-committed"),
    ),
    "reads-aborted": (
        schedule(
            {"isolation.level": "read_committed"},
            {},
            Step(StepKind.TRANSACTION, count=3, partition=0, mode="abort"),
            PRODUCE,
            FLUSH,
            POLL,
            POLL,
            transactional=True,
        ),
        Broken(consumer=UncommittedReader),
        ("CLIENT-006", "read-aborted"),
    ),
    "committed-read-as-none": (
        schedule(
            {"enable.auto.commit": "false"},
            {},
            *READ_THEN_COMMITTED,
            Step(StepKind.COMMITTED, count=2, wait_ms=5_000),
        ),
        Broken(consumer=NoOffsetCommitted),
        ("CLIENT-005", "fetched-no-offset"),
    ),
    "commit-misreported": (
        # the reopened consumer starts from the group's committed offset, 6, which the answer said was not committed
        schedule(
            {"enable.auto.commit": "false"},
            {},
            *READ_THEN_COMMITTED,
            Step(StepKind.CLOSE),
            PRODUCE,
            FLUSH,
            Step(StepKind.REOPEN),
            POLL,
            POLL,
        ),
        Broken(consumer=MisreportedCommit),
        ("CLIENT-009", "commit-misreported"),
    ),
    "sends-twice": (
        schedule({}, {"enable.idempotence": "true"}, PRODUCE, FLUSH, POLL),
        Broken(producer=DoubleSender),
        ("CLIENT-002", "duplicate-write"),
    ),
    "producer-fails-fatally": (
        schedule({}, {"enable.idempotence": "true"}, PRODUCE, FLUSH, POLL, POLL),
        Broken(producer=FatalAfterSends),
        ("LIVE-001", "producer-failed"),
    ),
}


HANGS = {
    "consume": (Broken(consumer=HangingConsume), "consume(100, 1)"),
    "produce": (Broken(producer=HangingProduce), "produce(b'p0-3')"),
}


@pytest.mark.parametrize("call", sorted(HANGS))
def test_a_client_call_that_never_returns_is_a_liveness_finding_not_a_hung_suite(
    broker: Broker, monkeypatch: pytest.MonkeyPatch, call: str
) -> None:
    monkeypatch.setattr(driver, "CALL_SLACK_S", 3.0)
    broken, named = HANGS[call]
    drawn = schedule({}, {}, PRODUCE, FLUSH, POLL, POLL, POLL, POLL)
    RELEASE.clear()
    try:
        found = check_history(Run(drawn, broker, broken).run(), broker.answers())
    finally:
        RELEASE.set()
    assert [(v.requirement, v.kind) for v in found] == [("LIVE-001", "hang")], [str(v) for v in found]
    assert named in found[0].evidence and "the broker still answered" in found[0].evidence, found[0].evidence


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_broken_client_is_caught_and_the_real_one_passes_the_same_schedule(broker: Broker, case: str) -> None:
    drawn, broken, want = CASES[case]
    real = check_history(Run(drawn, broker).run(), broker.answers())
    assert real == [], [str(v) for v in real]
    found = {(v.requirement, v.kind) for v in check_history(Run(drawn, broker, broken).run(), broker.answers())}
    assert want in found, found


GROUP_OF_TWO = Schedule(
    (2,),
    (ProducerPlan({}, False),),
    tuple(
        ConsumerPlan({"auto.offset.reset": "earliest", "max.poll.interval.ms": "7000", "client.id": name}, "topics")
        for name in ("first", "second")
    ),
    (
        Step(StepKind.PRODUCE, count=6, partition=0),
        Step(StepKind.PRODUCE, count=6, partition=1),
        FLUSH,
        Step(StepKind.WAIT, wait_ms=4_000),
        Step(StepKind.PRODUCE, count=6, partition=0),
        Step(StepKind.PRODUCE, count=6, partition=1),
        FLUSH,
    ),
    faults=False,
)
"""Two members of one classic group, each owning a partition with records to read."""
ASKING_MEMBER = Schedule(
    (1,),
    (ProducerPlan({}, False),),
    (
        ConsumerPlan(
            # a short poll interval: the broken run's drain waits out about a minute, not librdkafka's 300 s
            {"auto.offset.reset": "earliest", "enable.auto.commit": "false", "max.poll.interval.ms": "10000"},
            "topics",
        ),
    ),
    (PRODUCE, FLUSH, *[Step(StepKind.POLL, count=100, wait_ms=50)] * 20, POLL),
    faults=False,
    asks=((0, 500),),
)
"""A group of one member that asks for its committed offsets after each poll (``Schedule.asks``), reading what one
producer wrote; its polls are short, so the poll that serves its assignment returns before any record of it."""
LIVENESS = {
    "never-rejoins": (GROUP_OF_TWO, Broken(consumer=StopsServing), ("LIVE-001", "never-converged")),
    "never-starts": (
        schedule({}, {}, PRODUCE, FLUSH, POLL, POLL),
        Broken(consumer=NeverStarts),
        ("LIVE-001", "owned-never-started"),
    ),
    "ask-stalls-start": (ASKING_MEMBER, Broken(consumer=AskStallsStart), ("LIVE-001", "owned-never-started")),
}


@pytest.mark.parametrize("case", sorted(LIVENESS))
def test_a_group_that_never_converges_or_a_partition_never_started_is_caught_and_the_real_client_passes(
    broker: Broker, monkeypatch: pytest.MonkeyPatch, case: str
) -> None:
    """LIVE-001 of the drain's end: a member that stops serving its group (put out at its 7 s poll interval, it
    never rejoins while it still owns its partition) leaves the group never converged; a consumer that never
    fetches what it owns, or whose asks for its committed offsets after each poll (``Schedule.asks``) take a
    partition's start and never give it back, leaves its partition never started. The real clients converge and
    start everything on the same schedule. The slacks are cut so that each broken run waits out its bound within a
    minute."""
    monkeypatch.setattr(driver, "DRAIN_SLACK_S", 0.0)
    monkeypatch.setattr(driver, "CONVERGE_SLACK_S", 10.0)
    drawn, broken, want = LIVENESS[case]
    real = Run(drawn, broker).run()
    assert check_history(real, broker.answers()) == []
    assert real.convergence is not None and real.convergence.converged and not real.convergence.unjudged
    history = Run(drawn, broker, broken).run()
    found = check_history(history, broker.answers())
    assert want in {(v.requirement, v.kind) for v in found}, [str(v) for v in found]
    (finding,) = [v for v in found if (v.requirement, v.kind) == want]
    assert finding.data["broker_answers"] is True and finding.data["waited_s"] >= 45.0, finding


ONE_MEMBER = Schedule(
    (1,),
    (ProducerPlan({}, False),),
    (ConsumerPlan({"auto.offset.reset": "earliest"}, "topics"),),
    (PRODUCE, FLUSH, POLL, Step(StepKind.WAIT, wait_ms=4_000), *PAUSE_RESUME, POLL),
    faults=False,
)
"""A group of one member reading what one producer wrote (joined within the wait), with a pause and a resume."""
ISOLATED_BOUND_S = 90.0


def test_a_client_that_kills_its_process_is_a_liveness_finding_with_its_last_call_and_the_real_one_passes(
    broker: Broker,
) -> None:
    """LIVE-001 ``client-crashed``: the schedule runs in a child process (``isolated``); a consumer aborting it in its
    assignment callback leaves the events before the abort (the producer's six acknowledged records, judged against
    the log the suite reads afterwards: none lost), the signal, and the call the consumer was in. The real clients
    run the same schedule in the same child process with no finding."""
    real = run_isolated(ONE_MEMBER, broker, ISOLATED_BOUND_S)
    assert check_history(real, broker.answers()) == [], [str(v) for v in check_history(real, broker.answers())]
    assert real.drained and not any(isinstance(e, Crashed | Hung) for e in real.events)
    history = run_isolated(ONE_MEMBER, broker, ISOLATED_BOUND_S, clients=Broken(consumer=AbortsOnAssign))
    found = check_history(history, broker.answers())
    assert [(v.requirement, v.kind) for v in found] == [("LIVE-001", "client-crashed")], [str(v) for v in found]
    (crash,) = found
    assert crash.data["signal"] == signal.SIGABRT and crash.data["how"] == "SIGABRT (signal 6)", crash.data
    calls = {c["client"]: c for c in crash.data["last_calls"]}
    assert calls["c0#0"]["under_way"] and calls["c0#0"]["call"].startswith("consume("), calls
    assert calls["run"]["call"].startswith(("step 3 of 7: poll(", "step 4 of 7: wait(")), calls
    assert "c0#0 in consume(" in crash.evidence and "the broker still answered" in crash.evidence, crash.evidence
    assert "Fatal Python error: Aborted" in crash.data["stderr_tail"], crash.data["stderr_tail"]
    acked = [e for e in history.events if e.client == "p0" and type(e).__name__ == "Acked"]
    assert len(acked) == 6 and not history.drained and history.log.records, history.log
    assert isinstance(history.events[-2], Crashed) or isinstance(history.events[-1], Crashed)


def test_a_run_the_suite_must_kill_at_its_bound_is_a_hang_not_a_hung_suite(broker: Broker) -> None:
    """LIVE-001 ``hang``: a consumer whose pause never returns stops the run's own thread, where no call of the driver
    bounds it; the suite kills the child at its bound and judges what it streamed."""
    RELEASE.clear()
    try:
        history = run_isolated(ONE_MEMBER, broker, 45.0, clients=Broken(consumer=HangingPause))
    finally:
        RELEASE.set()
    found = check_history(history, broker.answers())
    assert [(v.requirement, v.kind) for v in found] == [("LIVE-001", "hang")], [str(v) for v in found]
    assert found[0].data["client"] == "run" and "run in step 5 of 7: pause(" in found[0].evidence, found[0].evidence


MEMBER: Final = {"auto.offset.reset": "earliest", "enable.auto.commit": "false", "max.poll.interval.ms": "20000"}
THROUGH_AN_OUTAGE = Schedule(
    (2,),
    (ProducerPlan({}, False), ProducerPlan({}, True)),
    (
        ConsumerPlan(MEMBER, "topics"),
        ConsumerPlan({**MEMBER, "enable.auto.commit": "true"}, "topics"),
        ConsumerPlan({"auto.offset.reset": "earliest"}, "assign"),
    ),
    (
        Step(StepKind.PRODUCE, count=6, partition=0),
        Step(StepKind.PRODUCE, count=6, partition=1),
        FLUSH,
        Step(StepKind.WAIT, wait_ms=4_000),
        Step(StepKind.BROKER_RESTART, mode="kill"),
        Step(StepKind.CLOSE, 1),
        Step(StepKind.SUBSCRIBE, 0, mode="topics"),
        Step(StepKind.POLL, 2, count=100, wait_ms=1_000),
        Step(StepKind.PRODUCE, 0, count=3, partition=0),
        Step(StepKind.COMMIT, 0, mode="sync"),
        Step(StepKind.TRANSACTION, 1, count=2, partition=1, mode="commit"),
        Step(StepKind.REOPEN, 1),
        FLUSH,
        Step(StepKind.POLL, 0, count=100, wait_ms=1_000),
    ),
    spans=(Span(4, 6, 8_000),),
)
"""A group of two members and a consumer assigned by hand reading what two producers wrote; the broker killed at
step 5 and started again after the next six steps (or 8 s) while a member closes, a member subscribes again, the
assigned consumer polls, a producer sends, a member commits and a transaction commits."""


def test_the_real_clients_pass_a_schedule_whose_calls_run_while_the_broker_is_down(broker: Broker) -> None:
    """A fault that spans steps (``Schedule.spans``): the killed broker stays down while the next steps call the
    clients, in the suite's child process as a drawn schedule runs; the fault's notes bound those calls, and the real
    clients keep every promise (what failed or timed out during the outage is no finding by itself)."""
    history = run_isolated(THROUGH_AN_OUTAGE, broker, 3 * ISOLATED_BOUND_S)
    found = check_history(history, broker.answers())
    assert found == [], [str(v) for v in found]
    (fault,) = faults(history.events)
    assert fault.healed < float("inf") and fault.what.startswith("restarting (kill), until the next 6 steps ran")
    during = [e for e in history.events if fault.began <= e.at <= fault.healed]
    assert any(isinstance(e, Closed) and e.client == "c1#0" for e in during), during
    assert any(isinstance(e, Subscribed) and e.client == "c0#0" for e in during), during
    assert any(isinstance(e, Committed) and e.client == "c0#0" and e.at > fault.began for e in history.events)
    assert history.drained and not any(isinstance(e, Crashed | Hung) for e in history.events)


STUCK_IN_AN_OUTAGE = Schedule(
    (1,),
    (ProducerPlan({}, False),),
    (ConsumerPlan(MEMBER, "assign"),),
    (PRODUCE, FLUSH, POLL, POLL, Step(StepKind.NODE_PAUSE), Step(StepKind.COMMIT, mode="sync"), POLL),
    spans=(Span(4, 1, 2_000),),
)
"""A consumer assigned by hand commits while the broker is paused (for 2 s at most)."""


def test_a_call_that_never_returns_through_an_outage_is_a_hang_and_the_real_one_returns(
    broker: Broker, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A call made while a fault that spans steps holds the broker is awaited until ``CALL_SLACK_S`` past the heal:
    the real consumer's commit returns within it (no finding), a commit that never returns is LIVE-001 hang."""
    monkeypatch.setattr(driver, "CALL_SLACK_S", 3.0)
    real = check_history(Run(STUCK_IN_AN_OUTAGE, broker).run(), broker.answers())
    assert real == [], [str(v) for v in real]
    RELEASE.clear()
    try:
        found = check_history(Run(STUCK_IN_AN_OUTAGE, broker, Broken(consumer=HangingCommit)).run(), broker.answers())
    finally:
        RELEASE.set()
    assert [(v.requirement, v.kind) for v in found] == [("LIVE-001", "hang")], [str(v) for v in found]
    assert "commit(sync)" in found[0].evidence and found[0].data["timeout_s"] >= 3.0, found[0]


def test_a_librdkafka_producer_fenced_by_a_later_one_of_its_id_is_recorded_failed_with_its_call(broker: Broker) -> None:
    """A real fatal error of librdkafka, recorded as the run records a producer's: a transactional producer fenced
    by a later producer of its transactional id (KIP 98) fails its commit with a fatal error (``_FENCED``), which the
    driver records as ``Failed`` with the call; the checker excuses it only with that later producer in the
    history."""
    prefix = f"kcw-{uuid4().hex[:8]}"
    run = Run(Schedule((1,), (), (), ()), broker, prefix=prefix)
    try:
        run.kafka.create_topic(f"{prefix}-t0", 1)
        config = {**broker.client_config("producer"), "transactional.id": f"{prefix}-p0"}
        old = ck.Producer({**config, "error_cb": lambda error: run._producer_error("p0", error)})
        old.init_transactions(10.0)
        old.begin_transaction()
        old.produce(f"{prefix}-t0", value=b"p0-0", partition=0)
        old.flush(10.0)
        run.recorder.add(Sent, "p0", value=b"p0-0", topic=f"{prefix}-t0", partition=0, txn=1)
        new = ck.Producer(dict(config))
        new.init_transactions(10.0)
        run.recorder.add(Sent, "p1", value=b"p1-0", topic=f"{prefix}-t0", partition=0, txn=1)
        with pytest.raises(ck.KafkaException) as raised:
            old.commit_transaction(10.0)
        assert driver.fatal(raised.value.args[0]), raised.value
        run._producer_failed("p0", "commit_transaction", raised.value)
        # confluent-kafka raises the fatal error from poll in place of calling error_cb: recorded, not raised
        slot = driver.ProducerSlot(0, old, driver.Worker("p0"), True, {})
        assert run._serve(slot, "poll(0)", lambda: old.poll(0), 10.0) is None
    finally:
        run.kafka.close()
    calls = [e.call for e in run.recorder.events if isinstance(e, Failed)]
    assert calls == ["commit_transaction", "poll"], run.recorder.events
    same = ClientInfo({}, transactional=True, transactional_id=f"{prefix}-p0")
    events, log = tuple(run.recorder.events), Log({}, {})
    assert check_clients_failed(History(events, {"p0": same, "p1": same}, log), True) == []
    other = replace(same, transactional_id=f"{prefix}-p1")
    found = check_clients_failed(History(events, {"p0": same, "p1": other}, log), True)
    assert [(v.requirement, v.kind) for v in found] == [("LIVE-001", "producer-failed")]
