"""The Flink level's shared fixtures and broker helper: the adapter's connector release in the harness, the broker
its jobs run on, a client of it, and records written to a topic. Imported by the Flink suite modules
(``test_flink_jobs``, ``test_flink_workload``) once their pipeline extra is known to be installed.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any, Final

import pytest

from ...reference_impl.kafka_client import KafkaClient, wait_until
from ...reference_impl.ports import KafkaError
from ...reference_impl.types import TopicPartition
from ..adapters.flink_kafka import job_edit_of
from ..brokers import Broker
from ..brokers.facts import read_facts
from ..errors import HarnessError
from ..flink.harness import FlinkHarness, RunningJob
from ..flink.history import restarted_or_checkpointed
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


SETTLED_WITHIN_S: Final = 30.0
"""A refused record's read in a completed checkpoint (at the job's interval: 100 to 500 ms), or the job's restart
after its failure."""


def settled(running: RunningJob, value: bytes) -> bool:
    """Wait until the job went on after reading ``value``, written while its sink's writes are refused: a
    checkpoint holding its read completed, or the job restarted (``True``: the sink surfaced the refusal, and the
    refusal has done its part). ``HarnessError`` when the job ended first or neither came in time."""

    def went_on() -> bool | None:
        if running.ended(within_s=0.0):
            raise HarnessError(f"the job ended ({running.finish().ended}) while the broker refused its writes")
        return restarted_or_checkpointed(running.segments_so_far(), {value}) or None

    try:
        wait_until(went_on, SETTLED_WITHIN_S, f"the job's checkpoint or restart after {value!r}", step_s=0.1)
    except KafkaError as error:
        raise HarnessError(str(error)) from None
    return any(s.attempt > 0 for s in running.segments_so_far())
