"""The confluent-kafka implementation of the ports on a live broker, where librdkafka's own limits bite."""

from __future__ import annotations

from uuid import uuid4

from conformance.brokers import Broker, ExternalBroker
from reference_impl.kafka_client import KafkaClient
from reference_impl.ports import Isolation
from reference_impl.types import TopicPartition


def test_transactional_produce_waits_for_a_full_local_queue(broker: Broker) -> None:
    """More records than librdkafka's local queue holds: produce drains it instead of failing (the sink needs it)."""
    small_queue = ExternalBroker(broker.bootstrap_servers, security={"queue.buffering.max.messages": "5"})
    small_queue.start()
    topic = f"kc-queue-{uuid4().hex[:8]}"
    with KafkaClient(small_queue) as kafka:
        kafka.create_topic(topic, 1)
        producer = kafka.init_producer(f"{topic}-txn")
        producer.begin_transaction()
        for i in range(200):
            producer.produce(topic, 0, None, f"r{i}".encode())
        producer.flush()
        producer.commit_transaction()
        records = kafka.read(TopicPartition(topic, 0), 0, Isolation.READ_COMMITTED, 1000)
    assert [r.value for r in records] == [f"r{i}".encode() for i in range(200)]
