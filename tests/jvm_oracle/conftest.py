"""The Kafka and Flink oracles for the differential tests: one helper JVM each per session
(``-m kafka_oracle`` and ``-m flink_oracle`` select them)."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from kconform.conformance.jvm.flink_oracle import FlinkOracle
from kconform.conformance.jvm.kafka_oracle import KafkaOracle


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Every test under tests/jvm_oracle starts a helper JVM (marker ``jvm``): ``make check`` leaves them out."""
    here = os.path.dirname(__file__)
    for item in items:
        if str(item.path).startswith(here):
            item.add_marker(pytest.mark.jvm)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "kafka_oracle: checks the reference against kafka-clients' own classes")
    config.addinivalue_line("markers", "flink_oracle: checks the reference against Flink's Kafka connector's classes")


@pytest.fixture(scope="session")
def kafka_oracle() -> Iterator[KafkaOracle]:
    with KafkaOracle() as oracle:
        yield oracle


@pytest.fixture(scope="session")
def flink_oracle() -> Iterator[FlinkOracle]:
    with FlinkOracle() as oracle:
        yield oracle
