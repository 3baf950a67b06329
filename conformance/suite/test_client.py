"""RESTORE-008, -009, -011 and -012: the Kafka consumer a source reads with, on the run's broker.

A source's progress is only as good as the positions its client reports and redelivers from. An
adapter that declares ``confluent-kafka-consumer`` reads Kafka with the confluent-kafka (librdkafka)
this interpreter imports, so the suite drives that consumer the way a source does (batch consume
with end-of-partition events, commit the position, restart; pause and resume, also from another
thread while a poll waits; store its own offsets and commit them) and judges what it delivered with
the pure checkers. Each example costs about a second, so Hypothesis draws few.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from typing import Any, Final
from uuid import uuid4

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from ..extras import pipeline_missing

if (missing := pipeline_missing()) is not None:  # a core install: every test here is skipped, naming the fix
    pytest.skip(missing, allow_module_level=True)

import confluent_kafka as ck

from ...reference_impl.kafka_client import KafkaClient, configure, wait_until
from ...reference_impl.types import TopicPartition
from ..brokers import Broker
from ..checks.checkers import fail_on
from ..checks.client_checkers import check_position_at_end, check_stored_offset_committed
from ..checks.pipeline_checkers import ReadRecord, check_read_once
from ..gate.pytest_plugin import requirement, stated_broker

pytestmark = pytest.mark.pipeline

CAPABILITY: Final = "confluent-kafka-consumer"
CONSUME_TIMEOUT_S: Final = 15.0
"""Longest a consumer may take to deliver what was written and report the end of the partition."""
TRANSIENT: Final = frozenset(
    {ck.KafkaError.NOT_COORDINATOR, ck.KafkaError.COORDINATOR_LOAD_IN_PROGRESS, ck.KafkaError.COORDINATOR_NOT_AVAILABLE}
)
"""Errors a consumer reports while the group's coordinator settles (a fresh broker); it asks again by itself."""
BATCH: Final = 100
"""``Consumer.consume``'s batch size: the batch path (``rd_kafka_consume_batch_queue``) is what sources use."""


def client_settings() -> settings:
    """The loaded profile with about one drawn example per fifty protocol examples (each starts consumers)."""
    return settings(max_examples=max(1, settings().max_examples // 50), deadline=None)


@pytest.fixture(scope="module")
def client_broker(adapter_under_test: Any, request: pytest.FixtureRequest) -> Iterator[Broker]:
    """The run's broker, started only for an adapter that reads with this interpreter's confluent-kafka; its
    release, transaction.version and group protocols go in the run's reports."""
    if CAPABILITY not in adapter_under_test.capabilities:
        pytest.skip(f"adapter {adapter_under_test.name!r} does not declare capability {CAPABILITY!r}")
    yield from stated_broker(request.config)


@contextmanager
def assigned(broker: Broker, group: str, tp: TopicPartition, offset: int, **settings: Any) -> Iterator[ck.Consumer]:
    """A consumer as a source makes one (explicit commits, end-of-partition events: ``configure``'s), assigned
    ``tp`` from ``offset`` (``ck.OFFSET_STORED``: the group's), closed on the way out."""
    client = ck.Consumer(
        configure(broker, "consumer", **{"group.id": group, "auto.offset.reset": "earliest", **settings})
    )
    try:
        client.assign([ck.TopicPartition(tp.topic, tp.partition, offset)])
        yield client
    finally:
        client.close()


def consume_to_end(client: ck.Consumer, tp: TopicPartition, end: int, incarnation: int) -> list[ReadRecord]:
    """Batch-consume until the end-of-partition event at ``end``; a timeout fails naming what was read."""
    read: list[ReadRecord] = []
    deadline = time.monotonic() + CONSUME_TIMEOUT_S
    while time.monotonic() < deadline:
        for message in client.consume(BATCH, timeout=0.2):
            error, offset = message.error(), message.offset()
            assert offset is not None, f"{tp}: an event without an offset: {error}"
            if error is None:
                read.append(ReadRecord(tp, offset, message.value(), incarnation))
            elif error.code() in TRANSIENT or (error.retriable() and not error.fatal()):
                continue
            elif error.code() != ck.KafkaError._PARTITION_EOF:
                raise AssertionError(f"{tp}: consume failed: {error}")
            elif offset >= end:
                return read
    raise AssertionError(
        f"{tp}: no end-of-partition event at {end} within {CONSUME_TIMEOUT_S} s; read {[r.offset for r in read]}"
    )


def new_partition(kafka: KafkaClient, values: Sequence[bytes]) -> TopicPartition:
    tp = TopicPartition(f"kc-client-{uuid4().hex[:8]}", 0)
    kafka.create_topic(tp.topic, 1)
    if values:
        kafka.produce_batch(tp, [(None, v) for v in values])
    return tp


def values(prefix: str, count: int) -> list[bytes]:
    return [f"{prefix}-{i}".encode() for i in range(count)]


@requirement("RESTORE-008", capability=CAPABILITY)
@client_settings()
@given(before=st.integers(1, 5), after=st.integers(1, 5))
@example(before=3, after=3)
def test_required_RESTORE_008_a_restart_from_the_position_committed_at_the_end_reads_every_later_record(
    client_broker: Broker, before: int, after: int
) -> None:
    """Read to the end-of-partition event, commit the consumer's position, write more, restart the
    group from its committed offset: the position was the end offset and every record is read once."""
    group = f"kc-client-{uuid4().hex[:8]}"
    with KafkaClient(client_broker) as kafka:
        tp = new_partition(kafka, values("before", before))
        kafka.committed(group, [tp])  # waits out a coordinator still loading, which a fresh broker's first group meets
        with assigned(client_broker, group, tp, ck.OFFSET_STORED) as first:
            read = consume_to_end(first, tp, before, 0)
            (position,) = first.position([ck.TopicPartition(tp.topic, tp.partition)])
            first.commit(asynchronous=False)
        kafka.produce_batch(tp, [(None, v) for v in values("after", after)])
        with assigned(client_broker, group, tp, ck.OFFSET_STORED) as second:
            read += consume_to_end(second, tp, before + after, 1)
    fail_on(
        check_position_at_end(tp, position.offset, before, "RESTORE-008")
        + check_read_once(read, {tp: before + after}, "RESTORE-008")
    )


@requirement("RESTORE-009", capability=CAPABILITY)
@client_settings()
@given(before=st.integers(1, 5), after=st.integers(1, 5))
@example(before=3, after=2)
def test_required_RESTORE_009_resuming_a_partition_that_is_not_paused_delivers_nothing_again(
    client_broker: Broker, before: int, after: int
) -> None:
    """Read to the end, resume the partition (not paused), write more and read to the end again:
    every record is delivered once (a resume that restarts the fetch from where it began repeats them)."""
    with KafkaClient(client_broker) as kafka:
        tp = new_partition(kafka, values("before", before))
        with assigned(client_broker, f"kc-client-{uuid4().hex[:8]}", tp, 0) as reader:
            read = consume_to_end(reader, tp, before, 0)
            reader.resume([ck.TopicPartition(tp.topic, tp.partition)])
            kafka.produce_batch(tp, [(None, v) for v in values("after", after)])
            read += consume_to_end(reader, tp, before + after, 0)
    fail_on(check_read_once(read, {tp: before + after}, "RESTORE-009"))


def fetched_to(client: ck.Consumer, tp: TopicPartition, end: int) -> bool | None:
    """Whether the consumer's last fetch response for ``tp`` reported a high watermark of ``end`` or more."""
    high = client.get_watermark_offsets(ck.TopicPartition(tp.topic, tp.partition), cached=True)[1]
    return True if high >= end else None


@requirement("RESTORE-011", capability=CAPABILITY)
@client_settings()
@given(before=st.integers(0, 5), held=st.integers(1, 10))
@example(before=2, held=5)
def test_required_RESTORE_011_a_partition_paused_while_a_poll_waits_is_read_on_from_the_last_record_delivered(
    client_broker: Broker, before: int, held: int
) -> None:
    """Read to the end; while a poll thread reads on, write more and, once the consumer fetched them
    (its batch poll holds them until it fills or times out), pause and resume the partition from this
    thread: every record is delivered once (the pause drops the records fetched, which are fetched again)."""
    with KafkaClient(client_broker) as kafka:
        tp = new_partition(kafka, values("before", before))
        partition = [ck.TopicPartition(tp.topic, tp.partition)]
        with assigned(client_broker, f"kc-client-{uuid4().hex[:8]}", tp, 0) as reader:
            read = consume_to_end(reader, tp, before, 0)
            with ThreadPoolExecutor(1) as poll_thread:
                polling = poll_thread.submit(consume_to_end, reader, tp, before + held, 0)
                kafka.produce_batch(tp, [(None, v) for v in values("held", held)])
                wait_until(lambda: fetched_to(reader, tp, before + held), CONSUME_TIMEOUT_S, f"a fetch of {tp}", 0.001)
                reader.pause(partition)
                reader.resume(partition)
                read += polling.result(timeout=CONSUME_TIMEOUT_S)
    fail_on(check_read_once(read, {tp: before + held}, "RESTORE-011"))


def as_read(tp: TopicPartition, message: ck.Message, incarnation: int) -> ReadRecord:
    """A delivered record as the checkers take it; a record without an offset fails."""
    offset = message.offset()
    assert offset is not None, f"{tp}: a record without an offset"
    return ReadRecord(tp, offset, message.value(), incarnation)


def consume_messages(client: ck.Consumer, tp: TopicPartition, count: int) -> list[ck.Message]:
    """Batch-consume ``count`` records as the client's messages (each with its leader epoch); a timeout fails."""
    messages: list[ck.Message] = []
    deadline = time.monotonic() + CONSUME_TIMEOUT_S
    while len(messages) < count:
        if time.monotonic() > deadline:
            raise AssertionError(f"{tp}: {count} records not read within {CONSUME_TIMEOUT_S} s")
        messages += [m for m in client.consume(count - len(messages), timeout=0.2) if m.error() is None]
    return messages


@requirement("RESTORE-012", capability=CAPABILITY)
@client_settings()
@given(before=st.integers(1, 5), after=st.integers(1, 5))
@example(before=3, after=2)
def test_required_RESTORE_012_an_offset_the_source_stores_is_committed_over_one_committed_from_a_record(
    client_broker: Broker, before: int, after: int
) -> None:
    """The group's offset is committed from a record (with its leader epoch, as Kafka's Java consumer
    commits); write more, restart the group: it reads on from there, stores the end offset it tracked
    itself (an offset alone, no leader epoch) and commits: the commit succeeds and the group's offset
    is the stored one."""
    group = f"kc-client-{uuid4().hex[:8]}"
    with KafkaClient(client_broker) as kafka:
        tp = new_partition(kafka, values("before", before))
        kafka.committed(group, [tp])  # waits out a coordinator still loading, which a fresh broker's first group meets
        with assigned(client_broker, group, tp, ck.OFFSET_STORED) as first:
            messages = consume_messages(first, tp, before)
            first.commit(message=messages[-1], asynchronous=False)
        read = [as_read(tp, m, 0) for m in messages]
        kafka.produce_batch(tp, [(None, v) for v in values("after", after)])
        error: str | None = None
        with assigned(client_broker, group, tp, ck.OFFSET_STORED, **{"enable.auto.offset.store": False}) as second:
            read += consume_to_end(second, tp, before + after, 1)
            second.store_offsets(offsets=[ck.TopicPartition(tp.topic, tp.partition, before + after)])
            try:
                second.commit(asynchronous=False)
            except ck.KafkaException as failed:
                error = str(failed.args[0])
        committed = kafka.committed(group, [tp]).get(tp)
    fail_on(
        check_read_once(read, {tp: before + after}, "RESTORE-012")
        + check_stored_offset_committed(tp, before + after, committed, error, "RESTORE-012")
    )
