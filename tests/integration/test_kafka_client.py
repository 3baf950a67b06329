"""The confluent-kafka implementation of the ports on a live broker, where librdkafka's own limits bite."""

from __future__ import annotations

import gc
import weakref
from typing import Any
from uuid import uuid4

import confluent_kafka as ck
import pytest
from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource, ResourceType  # type: ignore[attr-defined]

from kconform.conformance.brokers import Broker, ExternalBroker
from kconform.conformance.brokers.refusal import refused_writes
from kconform.reference_impl.kafka_client import KafkaClient, TransactionTimeoutRefusedError, wait_until
from kconform.reference_impl.ports import Isolation, KafkaError, ProducerFencedError, TopicGoneError
from kconform.reference_impl.types import TopicPartition


def test_transactional_produce_waits_for_a_full_local_queue(broker: Broker) -> None:
    """More records than librdkafka's local queue holds: produce drains it instead of failing (the sink needs it)."""
    small_queue = ExternalBroker(broker.bootstrap_servers, security={"queue.buffering.max.messages": "5"})
    small_queue.start()
    topic = f"kc-queue-{uuid4().hex[:8]}"
    with KafkaClient(small_queue) as kafka:
        kafka.create_topic(topic, 1)
        producer = kafka.init_producer(f"{topic}-txn")
        producer.begin_transaction()
        producer.produce_all(topic, [0] * 150, [None] * 150, [f"r{i}".encode() for i in range(150)])
        for i in range(150, 200):
            producer.produce(topic, 0, None, f"r{i}".encode())
        producer.flush()
        producer.commit_transaction()
        records = kafka.read(TopicPartition(topic, 0), 0, Isolation.READ_COMMITTED, 1000)
    assert [r.value for r in records] == [f"r{i}".encode() for i in range(200)]


def test_a_failed_delivery_surfaces_at_flush(broker: Broker) -> None:
    """Only failed deliveries are reported, once per producer, not per record: they must still raise (COMMIT-007)."""
    topic = f"kc-missing-partition-{uuid4().hex[:8]}"
    with KafkaClient(broker) as kafka:
        kafka.create_topic(topic, 1)
        producer = kafka.producer()
        with pytest.raises(KafkaError, match="partition"):
            producer.produce_all(topic, [0, 3], [None, None], [b"lands", b"no such partition"])
            producer.flush()
        producer.produce(topic, 0, None, b"after")
        producer.flush()  # the failure was reported once, not again
        kafka.create_topic(f"{topic}-2", 1)  # its metadata not yet known: the failure comes as a delivery report
        with pytest.raises(KafkaError, match="partition"):  # and a later one is reported too
            producer.produce(f"{topic}-2", 3, None, b"no such partition either")
            producer.flush()


def test_a_closed_producer_is_freed_when_dropped_without_a_garbage_collection(broker: Broker) -> None:
    """librdkafka's handle holds the producer's delivery callback: were it a bound method of the wrapper, wrapper and
    handle would be a cycle, and a closed producer's handle (its threads, its broker connections) would live on
    until a garbage collection: in a Python worker, one per task that ran there."""
    topic = f"kc-freed-{uuid4().hex[:8]}"
    gc.disable()
    try:
        with KafkaClient(broker) as kafka:
            kafka.create_topic(topic, 1)
            producer = kafka.init_producer(f"{topic}-txn")
            producer.begin_transaction()
            producer.produce(topic, 0, None, b"r")
            producer.flush()
            producer.commit_transaction()
            wrapper = weakref.ref(producer)
            kafka.discard(producer)
            del producer
            assert wrapper() is None, "the closed producer lives on until a garbage collection"
    finally:
        gc.enable()


def test_a_fenced_producers_failed_flush_keeps_nothing_alive(broker: Broker) -> None:
    """A fenced producer's flush fails through a SystemError that confluent-kafka keeps: its frames must not keep the
    client (and with it every librdkafka handle the client made) alive once the task dropped it."""
    topic = f"kc-fenced-{uuid4().hex[:8]}"
    with KafkaClient(broker) as kafka:
        kafka.create_topic(topic, 1)
        producer = kafka.init_producer(f"{topic}-txn")
        kafka.init_producer(f"{topic}-txn")  # fences the first
        producer.begin_transaction()
        producer.produce(topic, 0, None, b"zombie")
        with pytest.raises(ProducerFencedError):
            producer.flush()
        client = weakref.ref(kafka)
    del kafka, producer
    gc.collect()  # not a cycle: nothing frees it
    assert client() is None, "the client lives on after its producer's fenced flush"


def test_offset_fetch_is_asked_again_while_the_coordinator_loads(broker: Broker) -> None:
    """A restarted coordinator answers COORDINATOR_LOAD_IN_PROGRESS for the whole request: not an error, a wait."""
    topic = f"kc-coordinator-{uuid4().hex[:8]}"
    tp = TopicPartition(topic, 0)
    with KafkaClient(broker) as kafka:
        kafka.create_topic(topic, 1)
        kafka.commit_offsets(f"{topic}-group", {tp: 7})
        real = kafka._offset_reader(f"{topic}-group", True)
        loading = [ck.KafkaError.COORDINATOR_LOAD_IN_PROGRESS, ck.KafkaError.NOT_COORDINATOR]

        class AnswersLoadingFirst:
            def committed(self, *args: Any, **kwargs: Any) -> Any:
                if not loading:
                    return real.committed(*args, **kwargs)
                raise ck.KafkaException(ck.KafkaError(loading.pop(0)))

        kafka._offset_readers[(f"{topic}-group", True)] = AnswersLoadingFirst()  # type: ignore[assignment]
        assert kafka.committed(f"{topic}-group", [tp]) == {tp: 7}
        assert not loading
        kafka._offset_readers[(f"{topic}-group", True)] = real


def test_a_transaction_timeout_the_broker_refuses_names_both_settings(broker: Broker) -> None:
    """The broker's own message names ``max.transaction.timeout.ms``, a setting that does not exist (COMMIT-015)."""
    with KafkaClient(broker) as kafka, pytest.raises(TransactionTimeoutRefusedError) as refused:
        kafka.init_producer(f"kc-refused-{uuid4().hex[:8]}", 2_147_483_647)
    assert "transaction.timeout.ms=2147483647" in str(refused.value)
    assert "raise the broker's transaction.max.timeout.ms" in str(refused.value)


@pytest.mark.parametrize("own_limit", [None, "500000"])
def test_a_topic_refuses_every_write_while_the_nemesis_holds_then_keeps_its_own_limit(
    broker: Broker, own_limit: str | None
) -> None:
    """``refused_writes``: every produce to the topic fails (the broker's MSG_SIZE_TOO_LARGE) inside the
    block, none after it, and the topic's own ``max.message.bytes`` (or the broker's, without one) is back."""
    topic = f"kc-refused-writes-{uuid4().hex[:8]}"
    tp = TopicPartition(topic, 0)
    with KafkaClient(broker) as kafka:
        kafka.create_topic(topic, 1)
        resource = ConfigResource(ResourceType.TOPIC, topic)
        if own_limit is not None:
            entry = ConfigEntry("max.message.bytes", own_limit, incremental_operation=AlterConfigOpType.SET)
            kafka._admin.incremental_alter_configs(
                [ConfigResource(ResourceType.TOPIC, topic, incremental_configs=[entry])]
            )[ConfigResource(ResourceType.TOPIC, topic)].result(timeout=10)
        before = kafka._admin.describe_configs([resource])[resource].result(timeout=10)["max.message.bytes"]
        kafka.produce(tp, None, b"before")
        with refused_writes(broker, topic), pytest.raises(KafkaError, match="MSG_SIZE_TOO_LARGE"):
            kafka.produce(tp, None, b"refused")
        kafka.produce(tp, None, b"after")
        after = kafka._admin.describe_configs([resource])[resource].result(timeout=10)["max.message.bytes"]
        values = [r.value for r in kafka.read(tp, 0, Isolation.READ_COMMITTED, 10)]
    assert values == [b"before", b"after"]
    assert (after.value, after.source) == (before.value, before.source)


def _leader_forgot(kafka: KafkaClient, topic: str) -> bool | None:
    """True once a raw ListOffsets of ``topic``'s partition 0 answers UNKNOWN_TOPIC_OR_PART."""
    (future,) = kafka._admin.list_offsets({ck.TopicPartition(topic, 0): ck.admin.OffsetSpec.latest()}).values()
    try:
        future.result(timeout=10)
    except ck.KafkaException as exc:
        return exc.args[0].code() == ck.KafkaError.UNKNOWN_TOPIC_OR_PART or None
    return None


def test_list_offsets_on_a_deleted_topic_says_it_is_gone_at_once(broker: Broker) -> None:
    """DISC-008: a partition whose topic was deleted after a listing is gone, not a leader to wait for (the reference
    source leaves it out of that discovery); before, ListOffsets retried UNKNOWN_TOPIC_OR_PART until its timeout."""
    topic = f"kc-deleted-{uuid4().hex[:8]}"
    with KafkaClient(broker) as kafka:
        kafka.create_topic(topic, 1)
        kafka.delete_topic(topic)
        # The metadata drops a topic before its leader drops the log: in that window (CI met it once) ListOffsets
        # still answers an offset, which is Kafka's answer, not the client's. Wait, bounded, for the leader's own
        # UNKNOWN_TOPIC_OR_PART, then the client must call it gone at once instead of retrying it to its timeout.
        wait_until(lambda: _leader_forgot(kafka, topic), 30.0, f"the leader of {topic} to forget it")
        with pytest.raises(TopicGoneError, match=f"topic {topic} is gone"):  # not a KafkaError at the timeout
            kafka.latest_offset(TopicPartition(topic, 0), Isolation.READ_UNCOMMITTED)
