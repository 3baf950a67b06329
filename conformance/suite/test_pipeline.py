"""Pipeline level: the adapter's Spark source as a real streaming query on a live broker.

Each scenario runs ``kconform-kafka`` queries (``conformance.pipeline``) and judges what Spark's
tasks read with the pure checkers: the plan of every batch, exactly-once reading, and offset
continuity across a rescale. ``KCONFORM_BROKER`` chooses the broker (default: embedded Tansu).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any
from uuid import uuid4

import pytest
from pyspark.sql import SparkSession

from conformance.adapter import ProtocolAdapter
from conformance.brokers import Broker
from conformance.checkers import check_offset_continuity, explain, fail_on
from conformance.pipeline import (
    Pipeline,
    check_output,
    check_read_once,
    check_task_plan,
    fill,
    local_session,
    topic_values,
)
from conformance.probe import probe
from conformance.pytest_plugin import BROKER_CAPABILITIES, live_broker, requirement
from reference_impl.kafka_client import KafkaClient
from reference_impl.ports import Isolation

pytestmark = pytest.mark.pipeline


@pytest.fixture(scope="module")
def pipeline_capable(adapter_under_test: ProtocolAdapter) -> None:
    """Skip before starting Spark or a broker when the adapter has no pipeline level."""
    if "pipeline" not in adapter_under_test.capabilities:
        pytest.skip(f"adapter {adapter_under_test.name!r} does not declare capability 'pipeline'")


@pytest.fixture(scope="module")
def pipeline_broker(pipeline_capable: None, request: pytest.FixtureRequest) -> Iterator[Broker]:
    """The run's broker, probed once: the report shows what it can and cannot show (spec/kafka.md)."""
    for running in live_broker():
        request.config.stash[BROKER_CAPABILITIES] = probe(running)
        yield running


@pytest.fixture(scope="module")
def spark(pipeline_capable: None) -> Iterator[SparkSession]:
    """The running session if there is one (it is shared), else a local one stopped afterwards."""
    existing = SparkSession.getActiveSession()
    session = existing or local_session()
    try:
        yield session
    finally:
        if existing is None:
            session.stop()


@pytest.fixture
def kafka(pipeline_broker: Broker) -> Iterator[KafkaClient]:
    with KafkaClient(pipeline_broker) as client:
        yield client


def new_topic(kafka: KafkaClient, partitions: int) -> str:
    name = f"kc-suite-{uuid4().hex[:8]}"
    kafka.create_topic(name, partitions)
    return name


@requirement("ASSIGN-001", "ASSIGN-002", "ASSIGN-004", capability="pipeline")
def test_required_ASSIGN_001_each_task_reads_its_reference_partitions(
    adapter: Any, spark: SparkSession, pipeline_broker: Broker, kafka: KafkaClient, tmp_path: Path
) -> None:
    topic = new_topic(kafka, 6)
    ends = fill(kafka, topic, 6, 10, "a")
    pipeline = Pipeline(spark, pipeline_broker.bootstrap_servers, tmp_path, parallelism=4, subscribe=topic)
    pipeline.run_available_now()
    for batch, records in pipeline.batches.items():
        violations = check_task_plan(records, 4)
        assert not violations, f"batch {batch}: {explain(violations)}"
    fail_on(check_read_once(pipeline.records(), ends))


@requirement("RESTORE-002", "RESTORE-003", capability="pipeline")
def test_required_RESTORE_003_rescale_from_the_same_checkpoint_has_no_gap_or_duplicate(
    adapter: Any, spark: SparkSession, pipeline_broker: Broker, kafka: KafkaClient, tmp_path: Path
) -> None:
    topic = new_topic(kafka, 5)
    checkpointed = fill(kafka, topic, 5, 8, "a")
    first = Pipeline(spark, pipeline_broker.bootstrap_servers, tmp_path, parallelism=3, subscribe=topic)
    first.run_available_now()
    ends = fill(kafka, topic, 5, 8, "b")
    second = Pipeline(spark, pipeline_broker.bootstrap_servers, tmp_path, parallelism=2, subscribe=topic)
    second.run_available_now()
    resumed = {tp: min(r.offset for r in second.records() if r.tp == tp) for tp in checkpointed}
    fail_on([v for tp, end in checkpointed.items() for v in check_offset_continuity(tp, end, resumed[tp])])
    fail_on(check_task_plan(second.records(), 2))
    fail_on(check_read_once([*first.records(), *second.records()], ends))


@requirement("DISC-002", "DISC-005", capability="pipeline")
def test_required_DISC_005_newly_matching_topic_is_read_from_earliest(
    adapter: Any, spark: SparkSession, pipeline_broker: Broker, kafka: KafkaClient, tmp_path: Path
) -> None:
    prefix = f"kc-suite-{uuid4().hex[:8]}"
    pipeline = Pipeline(
        spark, pipeline_broker.bootstrap_servers, tmp_path, parallelism=2, subscribe_pattern=f"{prefix}-.*",
        starting_offsets="latest",
    )  # fmt: skip
    kafka.create_topic(f"{prefix}-first", 1)
    pipeline.start()
    try:
        pipeline.process_all_available()
        kafka.create_topic(f"{prefix}-later", 3)
        ends = fill(kafka, f"{prefix}-later", 3, 4, "later")
        pipeline.process_all_available()
    finally:
        pipeline.stop()
    fail_on(check_read_once(pipeline.records(), ends))


@requirement("COMMIT-011", capability="pipeline")
def test_required_COMMIT_011_batch_replayed_after_its_tasks_committed_writes_nothing_again(
    adapter: Any, spark: SparkSession, pipeline_broker: Broker, kafka: KafkaClient, tmp_path: Path
) -> None:
    """Source to exactly-once sink; the commit-log entry of the last batch is lost (a driver crash
    after the tasks committed), so Spark replays it: read_committed must still see each record once."""
    source, sink = new_topic(kafka, 3), new_topic(kafka, 2)
    fill(kafka, source, 3, 10, "a")
    for run in ("first", "replay"):
        pipeline = Pipeline(
            spark, pipeline_broker.bootstrap_servers, tmp_path, parallelism=2, subscribe=source, sink_topic=sink
        )
        pipeline.run_available_now()
        if run == "first":
            pipeline.forget_last_commit()
            fill(kafka, source, 3, 10, "b")
    expected = topic_values(kafka, source, Isolation.READ_UNCOMMITTED)
    fail_on(check_output(expected, topic_values(kafka, sink, Isolation.READ_COMMITTED), exactly_once=True))
