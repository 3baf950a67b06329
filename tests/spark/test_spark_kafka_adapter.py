"""Spark's built-in Kafka connector through ``kconform.conformance.adapters.spark_kafka`` on a live broker: a small
source-to-sink scenario, and the one-owner deviation observed from outside (``spark_partition_id``)."""

from __future__ import annotations

from pathlib import Path
from uuid import uuid4

from pyspark.sql import SparkSession

from kconform.conformance.adapters.spark_kafka import ADAPTER
from kconform.conformance.brokers import Broker
from kconform.conformance.checks.checkers import explain
from kconform.conformance.checks.pipeline_checkers import check_read_once, check_single_reader
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
