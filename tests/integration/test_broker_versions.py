"""Broker versions as data, on real brokers: a node of a release other than the pinned one starts from jars resolved
on demand, and the broker itself says which release it runs and what the version table claims of it
(transaction.version, group protocols). ``make test`` starts one such node; ``make test-long`` every release of the
table, as one node and as a three-node cluster."""

from __future__ import annotations

from uuid import uuid4

import pytest

from kconform.conformance.brokers import CLUSTER_SIZE, KafkaBroker
from kconform.conformance.brokers.facts import read_facts
from kconform.conformance.brokers.kafka import logged_version
from kconform.conformance.brokers.versions import DEFAULT_KAFKA_VERSION, KNOWN_RELEASES, KafkaRelease
from kconform.reference_impl.kafka_client import KafkaClient
from kconform.reference_impl.ports import Isolation
from kconform.reference_impl.types import TopicPartition

OTHER = KNOWN_RELEASES[0]
"""The oldest row (a 3.x): its settings, features and group protocols differ most from the pinned release's."""


def check_release(broker: KafkaBroker, row: KafkaRelease) -> None:
    """Every node logs ``row``'s version, and the broker's ApiVersions answer agrees with the table's row."""
    assert broker.release == row.version and broker.version == f"Apache Kafka {row.version}"
    assert [logged_version(n.log_path.read_text()) for n in broker.nodes] == [row.version] * len(broker.nodes)
    facts = read_facts(broker)
    assert facts.source == "broker", facts
    assert (facts.transaction_version, facts.group_protocols) == (row.transaction_version, row.group_protocols)
    with KafkaClient(broker, timeout_s=60.0) as client:  # a transaction commits under either transaction.version
        client.create_topic("versions", 1)
        producer = client.init_producer(f"kconform-versions-{uuid4().hex[:8]}")
        try:
            producer.begin_transaction()
            producer.produce("versions", 0, None, b"committed")
            producer.commit_transaction()
        finally:
            producer.close()
        read = client.read(TopicPartition("versions", 0), 0, Isolation.READ_COMMITTED, 10)
        assert [r.value for r in read] == [b"committed"]


def test_a_node_of_another_release_starts_and_says_which_release_it_runs() -> None:
    assert OTHER.version != DEFAULT_KAFKA_VERSION
    with KafkaBroker(kafka_version=OTHER.version) as broker:
        check_release(broker, OTHER)
        assert broker.start_seconds is not None and broker.start_seconds < 90


@pytest.mark.long
@pytest.mark.parametrize("nodes", [1, CLUSTER_SIZE], ids=["node", "cluster"])
@pytest.mark.parametrize("row", KNOWN_RELEASES, ids=[r.version for r in KNOWN_RELEASES])
def test_every_release_of_the_table_starts_and_is_what_the_table_says(row: KafkaRelease, nodes: int) -> None:
    with KafkaBroker(nodes=nodes, kafka_version=row.version) as broker:
        check_release(broker, row)
