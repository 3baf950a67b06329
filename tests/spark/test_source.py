"""The ``kconform-kafka`` source on a live broker: plan, rescale, discovery and option errors.

Bulk records are followed by a single-record sentinel per partition: Tansu's ListOffsets(latest)
is wrong after multi-record batches (KAFKA-008) and right after a single-record one.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from uuid import uuid4

import pytest
from pyspark.errors import AnalysisException, StreamingQueryException
from pyspark.sql import SparkSession

from kconform.conformance.brokers import Broker
from kconform.conformance.brokers.capability import Capability
from kconform.conformance.checks.checkers import check_offset_continuity, explain
from kconform.conformance.checks.pipeline_checkers import ReadRecord, check_read_once, check_task_plan
from kconform.conformance.spark.pipeline import Pipeline, fill
from kconform.reference_impl.kafka_client import KafkaClient
from kconform.reference_impl.types import TopicPartition


def topic_name(label: str) -> str:
    return f"kc-{label}-{uuid4().hex[:8]}"


def assert_exactly(records: Iterable[ReadRecord], ends: dict[TopicPartition, int]) -> None:
    violations = check_read_once(records, ends)
    assert not violations, explain(violations)


def assert_reference_plan(records: Iterable[ReadRecord], parallelism: int) -> None:
    violations = check_task_plan(records, parallelism)
    assert not violations, explain(violations)


def test_reads_every_record_once_on_the_reference_plan(
    spark: SparkSession, broker: Broker, client: KafkaClient, tmp_path: Path
) -> None:
    topic = topic_name("plan")
    client.create_topic(topic, 5)
    ends = fill(client, topic, 5, 20, "a")
    pipeline = Pipeline(spark, broker.bootstrap_servers, tmp_path, parallelism=3, subscribe=topic)
    pipeline.run_available_now()
    assert_exactly(pipeline.records(), ends)
    assert_reference_plan(pipeline.records(), 3)
    logged = list(pipeline.offset_log().values())
    assert {o.parallelism for o in logged} == {3}
    assert dict(logged[-1].offsets) == ends


def test_rescale_replays_the_logged_plan_then_continues_at_the_new_parallelism(
    spark: SparkSession, broker: Broker, client: KafkaClient, tmp_path: Path
) -> None:
    """Restart from the same checkpoint at another parallelism: a batch replayed from the offset
    log is planned as it first was; later batches use the new parallelism; no gap, no duplicate."""
    topic = topic_name("rescale")
    client.create_topic(topic, 4)
    first_ends = fill(client, topic, 4, 10, "a")
    before = Pipeline(spark, broker.bootstrap_servers, tmp_path, parallelism=2, subscribe=topic)
    before.run_available_now()
    replayed = before.forget_last_commit()
    original = sorted(before.batches[replayed], key=repr)
    ends = fill(client, topic, 4, 10, "b")

    after = Pipeline(spark, broker.bootstrap_servers, tmp_path, parallelism=3, subscribe=topic)
    after.run_available_now()
    assert sorted(after.batches[replayed], key=repr) == original, "a replayed batch must be planned as it first was"
    logged = after.offset_log()
    assert logged[replayed].parallelism == 2
    assert {logged[b].parallelism for b in logged if b > replayed} == {3}
    new_records = [r for b, rows in after.batches.items() if b > replayed for r in rows]
    assert_reference_plan(new_records, 3)
    resumed = {tp: min(r.offset for r in new_records if r.tp == tp) for tp in first_ends}
    violations = [v for tp, end in first_ends.items() for v in check_offset_continuity(tp, end, resumed[tp])]
    assert not violations, explain(violations)
    assert_exactly([*before.records(), *(r for b, rows in after.batches.items() if b > replayed for r in rows)], ends)


def test_max_records_per_trigger_splits_the_backlog_without_gaps(
    spark: SparkSession, broker: Broker, client: KafkaClient, tmp_path: Path
) -> None:
    topic = topic_name("limit")
    client.create_topic(topic, 2)
    ends = fill(client, topic, 2, 10, "a")
    pipeline = Pipeline(
        spark, broker.bootstrap_servers, tmp_path, parallelism=2, subscribe=topic,
        max_records_per_trigger=5,
    )  # fmt: skip
    pipeline.run_available_now()
    assert_exactly(pipeline.records(), ends)
    sizes = [len(rows) for rows in pipeline.batches.values()]
    assert len(sizes) >= 4 and max(sizes) <= 5, sizes


def test_topic_created_while_running_is_read_from_its_first_record(
    spark: SparkSession, broker: Broker, client: KafkaClient, tmp_path: Path
) -> None:
    """DISC-002/DISC-005: a newly matching topic starts at EARLIEST even when the query started at latest."""
    prefix = topic_name("pattern")
    old = f"{prefix}-old"
    client.create_topic(old, 2)
    fill(client, old, 2, 3, "before")  # before the start: startingOffsets=latest skips these
    pipeline = Pipeline(
        spark, broker.bootstrap_servers, tmp_path, parallelism=2, subscribe_pattern=f"{prefix}-.*",
        starting_offsets="latest",
    )  # fmt: skip
    pipeline.start()
    try:
        pipeline.process_all_available()
        assert list(pipeline.records()) == []
        # Spark always runs the first batch; after it, no new data must mean no batch (start returned).
        assert len(pipeline.batches) <= 1, pipeline.batches
        new = f"{prefix}-new"
        client.create_topic(new, 3)
        ends = fill(client, new, 3, 5, "new")
        pipeline.process_all_available()
    finally:
        pipeline.stop()
    assert_exactly(pipeline.records(), ends)
    assert_reference_plan(pipeline.records(), 2)


def test_partition_added_to_a_subscribed_topic_is_read_from_its_first_record(
    spark: SparkSession, broker: Broker, client: KafkaClient, capabilities: dict[str, Capability], tmp_path: Path
) -> None:
    """DISC-001/DISC-005 on partition growth (never run on Tansu, which has no CreatePartitions)."""
    if not capabilities["create_partitions"].supported:
        pytest.skip("not verifiable on this broker: create_partitions")
    topic = topic_name("grow")
    client.create_topic(topic, 2)
    pipeline = Pipeline(spark, broker.bootstrap_servers, tmp_path, parallelism=2, subscribe=topic)
    pipeline.start()
    try:
        pipeline.process_all_available()
        client.create_partitions(topic, 4)
        ends = fill(client, topic, 4, 3, "grown")
        pipeline.process_all_available()
    finally:
        pipeline.stop()
    assert_exactly(pipeline.records(), ends)
    assert_reference_plan(pipeline.records(), 2)


@pytest.mark.parametrize(
    ("options", "named"),
    [
        ({"subscribe": "kc-missing-topic-x"}, "subscribe"),
        ({"subscribePattern": "kc-(", "timeoutMs": "3000"}, "subscribePattern"),
        ({"subscribe": "t", "parallelism": "0"}, "parallelism"),
        ({"subscribe": "t", "bootstrap.servers": "127.0.0.1:9", "timeoutMs": "2000"}, "bootstrap.servers"),
        ({}, "subscribe"),
    ],
)
def test_wrong_option_fails_the_query_at_start_naming_it(
    spark: SparkSession, broker: Broker, tmp_path: Path, options: dict[str, str], named: str
) -> None:
    reader = spark.readStream.format("kconform-kafka").option("bootstrap.servers", broker.bootstrap_servers)
    with pytest.raises((StreamingQueryException, AnalysisException), match=rf"option '{named}'"):
        query = reader.options(**options).load().writeStream.format("noop")
        started = query.option("checkpointLocation", str(tmp_path)).trigger(availableNow=True).start()
        started.awaitTermination(60)
        error = started.exception()
        assert error is not None, f"query with {options} did not fail"
        raise error


def test_starting_offsets_json_starts_each_partition_where_it_says(
    spark: SparkSession, broker: Broker, client: KafkaClient, tmp_path: Path
) -> None:
    """Spark's notation: partition 0 from offset 4, partition 1 from earliest (-2), 2 from latest (-1)."""
    topic = topic_name("json-start")
    client.create_topic(topic, 3)
    ends = fill(client, topic, 3, 10, "a")
    starting = json.dumps({topic: {"0": 4, "1": -2, "2": -1}})
    pipeline = Pipeline(spark, broker.bootstrap_servers, tmp_path, parallelism=2, subscribe=topic,
                        starting_offsets=starting)  # fmt: skip
    pipeline.run_available_now()
    read = {(r.tp.partition, r.offset) for r in pipeline.records()}
    assert read == {(0, o) for o in range(4, ends[TopicPartition(topic, 0)])} | {
        (1, o) for o in range(ends[TopicPartition(topic, 1)])
    }


def test_starting_offsets_json_naming_a_partition_that_does_not_exist_fails_at_start(
    spark: SparkSession, broker: Broker, client: KafkaClient, tmp_path: Path
) -> None:
    topic = topic_name("json-bad")
    client.create_topic(topic, 1)
    pipeline = Pipeline(spark, broker.bootstrap_servers, tmp_path, parallelism=1, subscribe=topic,
                        starting_offsets=json.dumps({topic: {"0": -2, "5": 0}}))  # fmt: skip
    with pytest.raises(StreamingQueryException, match=r"option 'startingOffsets' names .* \[5\]"):
        pipeline.run_available_now()
