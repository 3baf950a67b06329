"""The Kafka oracle for the differential tests: one helper JVM per session (``-m kafka_oracle`` selects them)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from conformance.jvm_oracle import KafkaOracle


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "kafka_oracle: checks the reference against kafka-clients' own classes")


@pytest.fixture(scope="session")
def kafka_oracle() -> Iterator[KafkaOracle]:
    with KafkaOracle() as oracle:
        yield oracle
