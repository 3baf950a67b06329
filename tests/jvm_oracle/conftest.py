"""The Kafka and Flink oracles for the differential tests: one helper JVM each per session
(``-m kafka_oracle`` and ``-m flink_oracle`` select them)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from kconform.conformance.jvm.flink_oracle import FlinkOracle
from kconform.conformance.jvm.kafka_oracle import KafkaOracle


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
