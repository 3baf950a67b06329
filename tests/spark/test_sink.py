"""The ``kconform-kafka`` sink on a live broker, fed by the ``kconform-kafka`` source: what the
pipeline suite (``conformance/suite/test_pipeline.py``, run by ``tests/test_suite_on_reference.py``)
does not cover: at-least-once mode, rescale fencing and zombies, seen from inside.

What Tansu cannot show (aborted records hidden from read_committed, zombie fencing; see
``kconform.conformance.brokers.probe``) is skipped with the probe's reason, never asserted.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa  # type: ignore[import-untyped]
import pytest
from hypothesis import given
from hypothesis import strategies as st
from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import BinaryType, StructField, StructType

from kconform.conformance.brokers import Broker
from kconform.conformance.brokers.capability import DUPLICATE_VERDICT_NEEDS, Capability, lacking
from kconform.conformance.checks.checkers import fail_on
from kconform.conformance.checks.strategy_checkers import check_keyless_spread
from kconform.conformance.spark.pipeline import Pipeline, fill, judge_sink, topic_values
from kconform.reference_impl.kafka_client import KafkaClient, KafkaTransactionalProducer, topic_records
from kconform.reference_impl.kafka_strategies import partition_for_key
from kconform.reference_impl.ports import Isolation
from kconform.reference_impl.spark import Connection
from kconform.reference_impl.spark.producers import WORKER_PRODUCERS, Kept
from kconform.reference_impl.spark.sink import (
    DEFAULT_PREFIX,
    EXACTLY_ONCE,
    KafkaStreamWriter,
    Placement,
    SinkOptions,
    TaskCommit,
    TaskIdentity,
    partitions_for_keys,
)
from kconform.reference_impl.types import TopicPartition
from tests.spark.test_source import topic_name


def committed_values(client: KafkaClient, topic: str) -> Counter[bytes | None]:
    return topic_values(client, topic, Isolation.READ_COMMITTED)


def produced_values(client: KafkaClient, topic: str) -> Counter[bytes | None]:
    return topic_values(client, topic, Isolation.READ_UNCOMMITTED)


def leave_open(client: KafkaClient, transactional_id: str, topic: str, value: bytes) -> None:
    """An attempt of ``transactional_id`` that wrote ``value`` to partition 0 and never ended its transaction."""
    producer = client.init_producer(transactional_id)
    producer.begin_transaction()
    producer.produce(topic, 0, None, value)
    producer.flush()


@pytest.fixture
def topics(client: KafkaClient) -> tuple[str, str]:
    """A 3-partition input topic with records and an empty 2-partition output topic."""
    source, sink = topic_name("in"), topic_name("out")
    client.create_topic(source, 3)
    client.create_topic(sink, 2)
    return source, sink


def test_at_least_once_loses_nothing_and_keeps_order(
    spark: SparkSession, broker: Broker, client: KafkaClient, topics: tuple[str, str], tmp_path: Path
) -> None:
    """COMMIT-013 in at-least-once mode (the suite's sink scenarios run the reference exactly-once)."""
    source, sink = topics
    fill(client, source, 3, 15, "a")
    pipeline = Pipeline(
        spark, broker.bootstrap_servers, tmp_path, parallelism=2, subscribe=source, sink_topic=sink,
        exactly_once=False,
    )  # fmt: skip
    pipeline.run_available_now()
    fail_on(judge_sink(client, source, sink, exactly_once=False))


def test_transaction_left_open_by_a_larger_parallelism_is_fenced_after_rescale(
    spark: SparkSession, broker: Broker, client: KafkaClient, topics: tuple[str, str],
    capabilities: dict[str, Capability], tmp_path: Path,
) -> None:  # fmt: skip
    """COMMIT-012: task 3 of a run at parallelism 4 left a transaction open; the next run at 2 fences it,
    so read_committed readers are no longer blocked (and, where the broker hides aborts, never see it)."""
    source, sink = topics
    fill(client, source, 3, 5, "a")
    wide = Pipeline(spark, broker.bootstrap_servers, tmp_path, parallelism=4, subscribe=source, sink_topic=sink)
    wide.run_available_now()
    assert wide.query is not None
    groups = [f"{DEFAULT_PREFIX}-{wide.query.id}-{task}" for task in range(4)]
    assert all(client.committed(g) for g in groups), "every task index registers its marker group"
    leave_open(client, groups[3], sink, b"left-open")

    fill(client, source, 3, 5, "b")
    Pipeline(
        spark, broker.bootstrap_servers, tmp_path, parallelism=2, subscribe=source, sink_topic=sink
    ).run_available_now()
    assert [bool(client.committed(g)) for g in groups] == [True, True, False, False]
    visible = committed_values(client, sink)
    assert not produced_values(client, source) - visible, "read_committed is still blocked by the open transaction"
    if capabilities["abort_hidden_from_read_committed"].supported:
        assert b"left-open" not in visible


def test_zombie_attempt_of_a_task_is_fenced_and_its_records_hidden(
    spark: SparkSession, broker: Broker, client: KafkaClient, topics: tuple[str, str],
    capabilities: dict[str, Capability], tmp_path: Path,
) -> None:  # fmt: skip
    """COMMIT-006: a new attempt of task i aborts the open transaction of an earlier one."""
    missing = lacking(capabilities, DUPLICATE_VERDICT_NEEDS)
    if missing:
        pytest.skip(f"not verifiable on this broker: {', '.join(missing)}")
    source, sink = topics
    fill(client, source, 3, 5, "a")
    pipeline = Pipeline(spark, broker.bootstrap_servers, tmp_path, parallelism=2, subscribe=source, sink_topic=sink)
    pipeline.run_available_now()
    assert pipeline.query is not None
    leave_open(client, f"{DEFAULT_PREFIX}-{pipeline.query.id}-0", sink, b"zombie")
    fill(client, source, 3, 5, "b")
    Pipeline(
        spark, broker.bootstrap_servers, tmp_path, parallelism=2, subscribe=source, sink_topic=sink
    ).run_available_now()
    assert committed_values(client, sink) == produced_values(client, source)


@pytest.mark.integration  # a live broker, no SparkSession: the sink's task runs in the test's process
def test_required_COMMIT_011_a_kept_producer_another_attempt_fenced_is_replaced_before_it_writes(
    broker: Broker, client: KafkaClient, topics: tuple[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A worker's kept producer whose id another attempt initialised since is refused before any record; a new
    producer takes over in the same task and each batch commits exactly once with its marker. A kept producer
    nobody fenced serves the next batch, and a replay of a committed batch through it writes nothing."""
    task = SinkTask.of(broker, topics[1], monkeypatch)
    try:
        task.write(0)
        first = task.kept().producer
        client.init_producer(task.transactional_id)  # another attempt of task 0: fences ``first``
        task.write(1)
        second = task.kept().producer
        assert second is not first, "the fenced kept producer was used"
        task.write(2)
        assert task.kept().producer is second, "a kept producer nobody fenced is initialised anew"
        assert task.write(2).skipped, "a replay wrote again"
    finally:
        task.close()
    assert committed_values(client, task.topic) == Counter({b"batch-0": 1, b"batch-1": 1, b"batch-2": 1})
    assert client.committed(task.transactional_id) == {TopicPartition(task.topic, 0): 3}


@pytest.mark.integration  # a live broker, no SparkSession: the sink's task runs in the test's process
def test_required_COMMIT_011_a_kept_producer_whose_id_committed_elsewhere_since_is_dropped_untried(
    broker: Broker, client: KafkaClient, topics: tuple[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """When the id's marker moved past the one a worker's kept producer left, another producer of the id committed
    since, so the kept one is fenced: the task drops it without a call (no fenced error for librdkafka to log as
    fatal, no wasted round trip) and commits through a new producer, exactly once."""
    task = SinkTask.of(broker, topics[1], monkeypatch)
    try:
        task.write(0)  # this worker committed batch 0 and keeps its producer
        first = WORKER_PRODUCERS.take(task.key)
        assert first is not None, "the committed task's producer was not kept"
        task.write(1)  # batch 1 ran in another worker, which initialised a producer of its own
        task.close()  # that worker's
        WORKER_PRODUCERS.give_back(task.key, first)
        calls: list[str] = []
        for name in ("begin_transaction", "send_offsets_to_transaction", "produce_all"):
            setattr(first.producer, name, lambda *_, name=name: calls.append(name))  # recorded, not made
        task.write(2)
        assert task.kept().producer is not first.producer and calls == [], f"the stale kept producer was tried: {calls}"
    finally:
        task.close()
    assert committed_values(client, task.topic) == Counter({b"batch-0": 1, b"batch-1": 1, b"batch-2": 1})


@pytest.mark.integration  # a live broker, no SparkSession: the sink's task runs in the test's process
def test_required_COMMIT_011_a_task_puts_its_marker_into_its_transaction_once(
    broker: Broker, client: KafkaClient, topics: tuple[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The sink's task sends marker ``batch + 1`` once: a new producer's with the commit, a kept producer's at the
    start (its proof of epoch) and not again; each batch commits exactly once with its marker."""
    task = SinkTask.of(broker, topics[1], monkeypatch)
    sent: list[int] = []  # the marker of every send, in order
    senders: list[KafkaTransactionalProducer] = []  # and the producer that sent it
    send = KafkaTransactionalProducer.send_offsets_to_transaction

    def recorded(producer: KafkaTransactionalProducer, group: str, offsets: Mapping[TopicPartition, int]) -> None:
        sent.extend(offsets.values())
        senders.append(producer)
        send(producer, group, offsets)

    monkeypatch.setattr(KafkaTransactionalProducer, "send_offsets_to_transaction", recorded)
    try:
        for batch in range(3):  # batch 0 through a new producer, 1 and 2 through the one this "worker" kept
            task.write(batch)
        task.kept()  # asserts the committed task's producer was kept
    finally:
        task.close()
    assert sent == [1, 2, 3], f"markers sent {sent}, not one per batch"
    assert senders[0] is senders[1] is senders[2], "batches 1 and 2 did not go through the kept producer"
    assert committed_values(client, task.topic) == Counter({b"batch-0": 1, b"batch-1": 1, b"batch-2": 1})
    assert client.committed(task.transactional_id) == {TopicPartition(task.topic, 0): 3}


@dataclass(frozen=True)
class SinkTask:
    """Task 0 of a new query writing ``batch-{b}`` in batch ``b`` through the exactly-once sink's own ``write``, in
    this process: the test plays the Python worker, whose kept producers are ``WORKER_PRODUCERS``'."""

    options: SinkOptions
    query: str
    monkeypatch: pytest.MonkeyPatch

    @classmethod
    def of(cls, broker: Broker, topic: str, monkeypatch: pytest.MonkeyPatch) -> SinkTask:
        connection = Connection.parse({"bootstrap.servers": broker.bootstrap_servers})
        return cls(SinkOptions(connection, topic, EXACTLY_ONCE, "kc"), topic_name("query"), monkeypatch)

    @property
    def topic(self) -> str:
        return self.options.topic

    @property
    def transactional_id(self) -> str:
        return TaskIdentity(self.query, 0, 0).transactional_id(self.options.prefix)

    @property
    def key(self) -> tuple[Connection, str]:
        return (self.options.connection, self.transactional_id)

    def write(self, batch: int) -> TaskCommit:
        self.monkeypatch.setattr(TaskIdentity, "current", lambda: TaskIdentity(self.query, batch, 0))
        writer = KafkaStreamWriter(self.options, StructType([StructField("value", BinaryType())]))
        return writer.write(iter([pa.RecordBatch.from_pydict({"value": [f"batch-{batch}".encode()]})]))

    def kept(self) -> Kept:
        """The producer this worker keeps for the id, left kept."""
        kept = WORKER_PRODUCERS.take(self.key)
        assert kept is not None, "the committed task's producer was not kept"
        WORKER_PRODUCERS.give_back(self.key, kept)
        return kept

    def close(self) -> None:
        """Close what this worker keeps for the id."""
        kept = WORKER_PRODUCERS.take(self.key)
        if kept is not None:
            kept.close()


def test_rows_are_routed_by_partition_column_then_by_key(
    spark: SparkSession, broker: Broker, client: KafkaClient, topics: tuple[str, str], tmp_path: Path
) -> None:
    """A third of the rows name their output partition and land there whatever their key (STRAT-002), a
    third have a key and land where Java's producer puts it (STRAT-001), the rest are keyless; each
    output partition keeps input order (COMMIT-013)."""
    source, sink = topics
    fill(client, source, 3, 6, "a")
    kind = F.col("offset") % 3
    frame = (
        spark.readStream.format("kconform-kafka")
        .option("bootstrap.servers", broker.bootstrap_servers)
        .option("subscribe", source)
        .option("startingOffsets", "earliest")
        .option("parallelism", "2")
        .load()
        .select(
            F.when(kind < 2, F.col("value")).alias("key"),
            "value",
            F.when(kind == 0, (F.col("offset") % 2).cast("int")).alias("partition"),
        )
    )
    query = (
        frame.writeStream.format("kconform-kafka")
        .option("bootstrap.servers", broker.bootstrap_servers)
        .option("topic", sink)
        .option("deliveryGuarantee", "exactly-once")
        .option("checkpointLocation", str(tmp_path))
        .trigger(availableNow=True)
        .start()
    )
    assert query.awaitTermination(120), "the query did not finish within 120 s"
    assert query.exception() is None, query.exception()
    want: dict[bytes, int] = {}
    for records in topic_records(client, source, Isolation.READ_UNCOMMITTED).values():
        for r in records:
            assert r.value is not None
            if r.offset % 3 < 2:
                want[r.value] = r.offset % 2 if r.offset % 3 == 0 else partition_for_key(r.value, 2)
    written = topic_records(client, sink, Isolation.READ_COMMITTED)
    placed = {r.value: p for p, records in written.items() for r in records}
    assert {value: placed.get(value) for value in want} == want
    fail_on(judge_sink(client, source, sink, exactly_once=True))


def test_keyless_rows_of_one_task_reach_every_partition() -> None:
    """STRAT-003 with fewer tasks than partitions: a task's keyless rows go round-robin from its own partition."""
    rows = pa.record_batch({"key": pa.array([None] * 320, pa.binary()), "value": pa.array([b"v"] * 320)})
    placed = Placement(7, 5).place(rows)
    assert placed[:6] == [2, 3, 4, 0, 1, 2]
    assert check_keyless_spread(placed, 5) == []


def test_rows_are_placed_by_partition_then_key_then_round_robin_across_batches() -> None:
    """``Placement.place`` works a batch at a time: STRAT-002 before STRAT-001 before STRAT-003, row by row,
    string keys hashed as their UTF-8 bytes, the empty key hashed, and the round-robin carried across batches."""
    keys = [None, "a", "", None, "é", None, "a", None]
    targets = [None, None, None, 1, 0, None, None, None]
    first = pa.record_batch({"key": pa.array(keys, pa.string()), "partition": pa.array(targets, pa.int32())})
    second = pa.record_batch({"key": pa.array([None, b"a"], pa.binary())})
    placement = Placement(2, 3)
    placed = placement.place(first) + placement.place(second)
    round_robin = iter([2, 0, 1, 2, 0])
    want = [
        target if target is not None else partition_for_key(key.encode(), 3) if key is not None else next(round_robin)
        for key, target in zip([*keys, None, "a"], [*targets, None, None], strict=True)
    ]
    assert placed == want


@given(
    keys=st.lists(st.binary(max_size=40), min_size=1, max_size=30),
    partitions=st.integers(1, 1000),
    skip=st.integers(0, 3),
    large=st.booleans(),
)
def test_partitions_for_keys_is_partition_for_key_on_whole_columns(
    keys: list[bytes], partitions: int, skip: int, large: bool
) -> None:
    """The NumPy murmur2 agrees with the reference one key by key, on sliced and large-offset arrays too."""
    column = pa.array([b"x" * 5] * skip + keys, pa.large_binary() if large else pa.binary()).slice(skip)
    assert partitions_for_keys(column, partitions).tolist() == [partition_for_key(k, partitions) for k in keys]
