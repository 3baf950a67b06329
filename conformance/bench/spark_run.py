"""``kconform bench``'s Spark figures: one broker and one source topic for every race, printed in order.

The micro-batch races (``spark_races``) share a session at the suite's default master; the real-time
race (``real_time_race``) needs a task slot per partition, so it gets a session of its own, started
after the first one stopped (a process has one SparkContext at a time), on the same broker and data.
"""

from __future__ import annotations

import os
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from uuid import uuid4

from pyspark.sql import SparkSession

from ...reference_impl.kafka_client import KafkaClient
from ..adapter.interface import DEFAULT_MASTER
from ..brokers import Broker, broker_from_env
from ..spark.pipeline import local_session
from .real_time_race import MASTER, bench_real_time
from .spark_races import (
    PARTITIONS,
    SINK_RECORDS,
    SOURCE_RECORDS,
    VALUE_BYTES,
    WARM_UP_RECORDS,
    Arena,
    bench_sink,
    bench_source,
    fill_topic,
    new_topic,
    topic_prefix,
    warm_up,
)


@contextmanager
def _session(master: str, log_level: str = "ERROR") -> Iterator[tuple[SparkSession, float]]:
    # No console progress bar over the figures (a user's own PYSPARK_SUBMIT_ARGS wins).
    os.environ.setdefault("PYSPARK_SUBMIT_ARGS", "--conf spark.ui.showConsoleProgress=false pyspark-shell")
    began = time.perf_counter()
    session = local_session(master)
    seconds = time.perf_counter() - began
    session.sparkContext.setLogLevel(log_level)
    try:
        yield session, seconds
    finally:
        session.stop()


def bench_spark() -> None:
    """Start a broker (``KCONFORM_BROKER``, default kafka) and local sessions; print the races."""
    run = uuid4().hex[:8]
    with broker_from_env() as broker, KafkaClient(broker, timeout_s=30.0) as client:
        try:
            _bench_on(broker, client, run)
        finally:
            if broker.kind == "external":  # a broker the suite started forgets everything when it stops
                for topic in client.list_topics():
                    if topic.startswith(topic_prefix(run)):
                        client.delete_topic(topic)


def _bench_on(broker: Broker, client: KafkaClient, run: str) -> None:
    source_topic = new_topic(client, run, "source")
    began = time.perf_counter()
    records = fill_topic(client, source_topic, SOURCE_RECORDS)
    print(
        f"spark throughput on {broker.describe()}: {VALUE_BYTES} B values, {PARTITIONS} partitions "
        f"(source topic of {records:,} records filled in {time.perf_counter() - began:.2f} s)"
    )
    with tempfile.TemporaryDirectory(prefix="kconform-bench-spark-") as tmp:
        with _session(DEFAULT_MASTER) as (spark, start_s):
            arena = Arena(spark, broker, client, run, Path(tmp) / "micro-batch")
            warm_s = warm_up(arena)
            print(
                f"  SparkSession ({DEFAULT_MASTER}) start {start_s:.1f} s, warm-up query ({WARM_UP_RECORDS} records) "
                f"{warm_s:.1f} s: in no figure"
            )
            for line in bench_source(arena, source_topic, records):
                print(line, flush=True)
            for line in bench_sink(arena, SINK_RECORDS):
                print(line, flush=True)
        # Stopping a running query interrupts its tasks, which Spark logs as errors; a query's own failure is
        # raised from its exception() all the same.
        with _session(MASTER, log_level="FATAL") as (spark, start_s):
            print(f"  SparkSession ({MASTER}) start {start_s:.1f} s: in no figure")
            arena = Arena(spark, broker, client, run, Path(tmp) / "real-time")
            for line in bench_real_time(arena, source_topic, records):
                print(line, flush=True)
