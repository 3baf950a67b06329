"""One SparkSession and one live broker for every Spark test (a session costs 10-20 s to start).

The broker and its probe are ``tests/conftest.py``'s session fixtures, shared with the
integration tests, so ``KCONFORM_BROKER`` chooses the broker for both.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from pyspark.sql import SparkSession

from kconform.conformance.brokers import Broker
from kconform.conformance.spark.pipeline import local_session
from kconform.reference_impl.kafka_client import KafkaClient


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """A test that uses the SparkSession is a Spark test and needs a live broker."""
    for item in items:
        if "spark" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.spark)
            item.add_marker(pytest.mark.integration)


@pytest.fixture(scope="session")
def spark() -> Iterator[SparkSession]:
    session = local_session()
    try:
        yield session
    finally:
        session.stop()


@pytest.fixture
def client(broker: Broker) -> Iterator[KafkaClient]:
    with KafkaClient(broker) as kafka:
        yield kafka
