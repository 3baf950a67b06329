"""The Flink level's shared fixtures and broker helper: the adapter's connector release in the harness, the broker
its jobs run on, a client of it, and records written to a topic. Imported by the Flink suite modules
(``test_flink_jobs``, ``test_flink_workload``) once their pipeline extra is known to be installed.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import pytest

from ...reference_impl.kafka_client import KafkaClient
from ...reference_impl.types import TopicPartition
from ..adapters.flink_kafka import job_edit_of
from ..brokers import Broker
from ..brokers.facts import read_facts
from ..flink.harness import FlinkHarness
from ..gate.pytest_plugin import BROKER_FACTS, BROKER_VERSION, CouldNotCheck, live_broker
from ..jvm import JvmArtifactsMissing
from ..jvm.setup import SetupError


@pytest.fixture(scope="module")
def harness(adapter_under_test: Any) -> FlinkHarness:
    """The adapter's connector release, its harness built on first use; skips an adapter of another engine."""
    if "flink-job" not in adapter_under_test.capabilities:
        pytest.skip(f"adapter {adapter_under_test.name!r} does not declare capability 'flink-job'")
    try:
        return FlinkHarness(adapter_under_test.release, print, job_edit_of(adapter_under_test))
    except (SetupError, JvmArtifactsMissing) as error:
        raise CouldNotCheck(f"the Flink harness of {adapter_under_test.name}: {error}") from error


@pytest.fixture(scope="module")
def flink_broker(harness: FlinkHarness, request: pytest.FixtureRequest) -> Iterator[Broker]:
    for running in live_broker():
        request.config.stash[BROKER_VERSION] = running.version
        request.config.stash[BROKER_FACTS] = read_facts(running)
        yield running


@pytest.fixture
def kafka(flink_broker: Broker) -> Iterator[KafkaClient]:
    with KafkaClient(flink_broker) as client:
        yield client


def write(kafka: KafkaClient, topic: str, partitions: Sequence[int], count: int, tag: str) -> dict[TopicPartition, int]:
    """``count`` records on each of ``partitions`` of ``topic`` (values ``tag-p-i``); each partition's end."""
    ends = {}
    for p in partitions:
        tp = TopicPartition(topic, p)
        ends[tp] = kafka.produce_batch(tp, [(None, f"{tag}-{p}-{i}".encode()) for i in range(count)], linger_ms=5)[-1]
        ends[tp] += 1
    return ends
