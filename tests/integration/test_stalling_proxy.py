"""``StallingProxy`` on Apache Kafka: a commit whose answer is held past the client's timeout happened.

This is the network stall ``kconform soak``'s ``commit-stall`` injects: the producer's
``commit_transaction`` times out, yet the node committed, so a read_committed consumer sees the
record, and the held answer reaches the producer once released (its commit then succeeds).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import confluent_kafka as ck
import pytest

from kconform.conformance.brokers.kafka import KafkaBroker
from kconform.conformance.brokers.proxy import END_TXN, LIST_OFFSETS
from kconform.reference_impl.kafka_client import KafkaClient
from kconform.reference_impl.ports import Isolation
from kconform.reference_impl.types import TopicPartition

HOLD_S = 4.0
HELD_BOUND_S = 60.0


@pytest.fixture(scope="module")
def kafka() -> Iterator[KafkaBroker]:
    with KafkaBroker(proxied=True) as broker:
        yield broker


def test_every_client_goes_through_the_proxy(kafka: KafkaBroker) -> None:
    proxies = {n.proxy.address for n in kafka.nodes if n.proxy is not None}
    assert proxies and set(kafka.bootstrap_servers.split(",")) == proxies
    admin = ck.admin.AdminClient(kafka.client_config("admin"))
    advertised = {f"{b.host}:{b.port}" for b in admin.list_topics(timeout=10).brokers.values()}
    assert advertised == proxies


def test_a_commit_whose_answer_is_held_times_out_but_happened(kafka: KafkaBroker) -> None:
    tp = TopicPartition("stall", 0)
    with KafkaClient(kafka, timeout_s=10) as client:
        client.create_topic(tp.topic, 1)
        producer = ck.Producer(kafka.client_config("producer", **{"transactional.id": "stall-1"}))
        producer.init_transactions(10)
        producer.begin_transaction()
        producer.produce(tp.topic, b"once", partition=0)
        hold = kafka.hold_next_answer(END_TXN, HOLD_S)
        with pytest.raises(ck.KafkaException) as timed_out:
            producer.commit_transaction(1.0)
        assert timed_out.value.args[0].code() == ck.KafkaError._TIMED_OUT
        assert hold.claimed.is_set() and "node 1" in hold.where
        seen = [r.value for r in client.read(tp, 0, Isolation.READ_COMMITTED, 10)]
        assert seen == [b"once"], "the node committed while the producer was told nothing"
        assert hold.released.wait(HOLD_S + 5)
        producer.commit_transaction(10)  # the held answer arrived: the commit completes
        assert [r.value for r in client.read(tp, 0, Isolation.READ_COMMITTED, 10)] == [b"once"]


def test_a_held_list_offsets_answer_goes_out_once_released(kafka: KafkaBroker) -> None:
    """The Flink workload's savepoint moment (``run_listed``): the answer to the next ListOffsets request is held
    for a long bound, and ``release()`` delivers it at once: the asker gets its end offset soon after."""
    tp = TopicPartition("held-offsets", 0)
    with KafkaClient(kafka, timeout_s=10) as client:
        client.create_topic(tp.topic, 1)
        client.produce(tp, None, b"one")
        consumer = ck.Consumer(kafka.client_config("consumer", **{"group.id": "held-offsets"}))
        hold = kafka.hold_next_answer(LIST_OFFSETS, HELD_BOUND_S)
        answers: list[tuple[int, int]] = []
        asker = threading.Thread(
            target=lambda: answers.append(consumer.get_watermark_offsets(ck.TopicPartition(tp.topic, 0), 30.0))
        )
        asked = time.monotonic()
        asker.start()
        assert hold.claimed.wait(10), "no ListOffsets request reached the proxy"
        asker.join(1.0)
        assert asker.is_alive() and not answers, "the answer went out while held"
        hold.release()
        asker.join(10.0)
        assert answers and answers[0][1] == 1
        assert time.monotonic() - asked < HELD_BOUND_S / 2, "released by its bound, not by release()"
        consumer.close()
