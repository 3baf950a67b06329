"""Spark's built-in Kafka connector through ``kconform.conformance.adapters.spark_kafka`` on a live broker: a small
source-to-sink scenario, and the one-owner deviation observed from outside (``spark_partition_id``); the same in
real-time mode (``REAL_TIME``), and its refusal of a master with fewer task slots than partitions."""

from __future__ import annotations

from pathlib import Path
from uuid import uuid4

import pytest
from pyspark.sql import SparkSession

from kconform.conformance.adapters.spark_kafka import ADAPTER, REAL_TIME
from kconform.conformance.brokers import Broker
from kconform.conformance.checks.checkers import explain
from kconform.conformance.checks.pipeline_checkers import check_read_once, check_single_reader
from kconform.conformance.errors import HarnessError
from kconform.conformance.spark.failures import TaskFailures
from kconform.conformance.spark.pipeline import Pipeline, fill, judge_sink
from kconform.reference_impl.kafka_client import KafkaClient


def test_reads_once_splitting_partitions_and_writes_at_least_once(
    spark: SparkSession, broker: Broker, client: KafkaClient, tmp_path: Path
) -> None:
    """Two partitions at parallelism 4: ``minPartitions=4`` splits each into offset ranges read by
    different tasks of the batch (RESTORE-002's one owner broken, a named deviation), yet every
    record is read once; the sink then loses nothing and keeps each partition's order."""
    source, sink = f"kc-sparkkafka-{uuid4().hex[:8]}", f"kc-sparkkafka-out-{uuid4().hex[:8]}"
    client.create_topic(source, 2)
    client.create_topic(sink, 2)
    ends = fill(client, source, 2, 12, "a")
    read = Pipeline(spark, broker.bootstrap_servers, tmp_path / "read", 4, subscribe=source, adapter=ADAPTER)
    read.run_available_now()
    violations = check_read_once(read.records(), ends)
    assert not violations, explain(violations)
    split = [v for batch in read.batches.values() for v in check_single_reader(batch, 4)]
    assert split and {v.kind for v in split} == {"double-assignment"}, explain(split)
    write = Pipeline(
        spark, broker.bootstrap_servers, tmp_path / "write", 2, subscribe=source, sink_topic=sink,
        exactly_once=False, adapter=ADAPTER,
    )  # fmt: skip
    write.run_available_now()
    violations = judge_sink(client, source, sink, exactly_once=False)
    assert not violations, explain(violations)


def test_real_time_mode_reads_once_retrying_a_failed_task_and_writes_at_least_once(
    spark: SparkSession, broker: Broker, client: KafkaClient, tmp_path: Path
) -> None:
    """``REAL_TIME``: a run to the end captures every record once through the ``ForeachWriter``, one task per
    partition (no ``minPartitions``), though task 1's first attempt fails after 3 rows; a restart on the same
    checkpoint reads only what came after; the sink query loses nothing."""
    source, sink = f"kc-rtm-{uuid4().hex[:8]}", f"kc-rtm-out-{uuid4().hex[:8]}"
    client.create_topic(source, 2)
    client.create_topic(sink, 2)
    before = fill(client, source, 2, 8, "a")
    first = Pipeline(
        spark, broker.bootstrap_servers, tmp_path / "read", 4, subscribe=source, adapter=REAL_TIME,
        failures=TaskFailures(frozenset({1}), 3),
    )  # fmt: skip
    first.run_available_now()
    assert first.require_injected_failures() >= 1
    assert {r.task for r in first.records()} == {0, 1}, "real-time mode: one task per Kafka partition"
    violations = check_read_once(first.records(), before)
    assert not violations, explain(violations)
    after = fill(client, source, 2, 3, "b")
    restarted = Pipeline(spark, broker.bootstrap_servers, tmp_path / "read", 4, subscribe=source, adapter=REAL_TIME)
    restarted.run_available_now()
    assert min(r.offset for r in restarted.records()) == min(before.values())
    violations = check_read_once([*first.records(), *restarted.records()], after)
    assert not violations, explain(violations)
    write = Pipeline(
        spark, broker.bootstrap_servers, tmp_path / "write", 2, subscribe=source, sink_topic=sink,
        exactly_once=False, adapter=REAL_TIME,
    )  # fmt: skip
    write.run_available_now()
    violations = judge_sink(client, source, sink, exactly_once=False)
    assert not violations, explain(violations)


def test_real_time_mode_refuses_more_partitions_than_task_slots(
    spark: SparkSession, broker: Broker, client: KafkaClient, tmp_path: Path
) -> None:
    """A partition whose task finds no slot would be read by nobody while the query reports all processed:
    the harness refuses to start rather than judge that run."""
    source = f"kc-rtm-wide-{uuid4().hex[:8]}"
    slots = spark.sparkContext.defaultParallelism
    client.create_topic(source, slots + 1)
    wide = Pipeline(spark, broker.bootstrap_servers, tmp_path / "wide", 2, subscribe=source, adapter=REAL_TIME)
    with pytest.raises(HarnessError, match=f"reads {slots + 1} partitions"):
        wide.run_available_now()
    assert wide.query is None, "refused before the query started"
