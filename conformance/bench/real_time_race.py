"""The real-time race of ``kconform bench``: Spark's own connector in real-time mode beside micro-batches.

Real-time mode (``trigger(realTime=...)``, Spark 4.1+) admits only a Kafka source, so the race is a
pipe: each competitor reads the micro-batch races' source topic from its start and writes every record
to a new topic, one query per round, the queries run until stopped (real-time mode has no
``availableNow``). A consumer follows the output ``read_committed`` from before the query starts, and
the query is stopped once it has every record, so each competitor has two figures, measured alike:

- to the last record: from ``start()`` to the follower holding the last record (the query's start and
  its first batch's planning included; its stop not);
- first to last record: from the follower's first record to its last, the pipe's flow once it runs.

A real-time query runs one task per partition, all at once, so this race has its own session with a task
slot per partition (the micro-batch races keep theirs). A competitor that cannot run in real-time mode is
tried on the warm-up topic first and printed with the error it failed with, not assumed; then once more with
real-time mode's allowlist check off, to show what stops it past that check.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Final
from uuid import uuid4

import confluent_kafka as ck
from pyspark.sql.streaming.query import StreamingQuery

from ...reference_impl.kafka_client import configure
from ...reference_impl.ports import Isolation, KafkaError
from ..adapter.interface import PipelineAdapter, SinkSpec, SourceSpec
from ..adapters import spark_kafka
from ..brokers import Broker
from ..spark.pipeline import SPARK_ADAPTER
from ..spark.real_time import require_task_slots
from .spark_races import (
    PARALLELISM,
    PARTITIONS,
    QUERY_TIMEOUT_S,
    REFERENCE,
    SPARK_KAFKA,
    Arena,
    Comparison,
    Competitor,
    Skipped,
    Timing,
    expect_committed,
    fill_topic,
    race,
    race_rows,
    slug,
    spark_kafka_missing,
)

MASTER: Final = f"local[{PARTITIONS}]"
"""A task slot per source partition: a real-time task that finds none reads nothing (``require_task_slots``)."""
FIGURES: Final = ("to the last record", "first to last record")
REAL_TIME_ROUNDS: Final = 5
"""The race has no goal, so its rounds need only show the spread (``evidence`` decides none here)."""
PROBE_S: Final = 60.0
"""How long a competitor's real-time try on the warm-up topic may take to fail or to deliver."""
ALLOWLIST_CHECK: Final = "spark.sql.streaming.realTimeMode.allowlistCheck"
"""Spark's switch for real-time mode's operator and sink allowlist ("at your own risk", its error says)."""
ERROR_CHARS: Final = 400
MICRO_BATCH: Final = "micro-batch"
REAL_TIME: Final = "real-time"


def entrant_name(connector: str, mode: str) -> str:
    return f"{connector}, {mode}"


@dataclass(frozen=True)
class Pipe:
    """One connector's source-to-sink query in one mode."""

    connector: str
    adapter: PipelineAdapter
    real_time: bool

    @property
    def name(self) -> str:
        return entrant_name(self.connector, REAL_TIME if self.real_time else MICRO_BATCH)

    @property
    def exactly_once(self) -> bool:
        return "pipeline-exactly-once-sink" in self.adapter.capabilities

    def start(self, arena: Arena, source: str, sink: str, checkpoint: str) -> StreamingQuery:
        servers = arena.broker.bootstrap_servers
        frame = self.adapter.read_stream(arena.spark, SourceSpec(servers, PARALLELISM, subscribe=(source,)))
        writer = self.adapter.write_stream(frame.select("key", "value"), SinkSpec(servers, sink, self.exactly_once))
        writer = writer.option("checkpointLocation", checkpoint)
        if self.real_time:
            writer = writer.outputMode("update")  # real-time mode's only output mode
            writer = writer.trigger(realTime=spark_kafka.REAL_TIME_BATCH)  # type: ignore[call-overload]  # stubs lack it
        return writer.start()


@contextmanager
def follower(broker: Broker, topic: str) -> Iterator[ck.Consumer]:
    """A ``read_committed`` consumer of every partition of ``topic`` from its start, assigned before any write."""
    settings = {"group.id": f"kconform-bench-{uuid4().hex}", "isolation.level": Isolation.READ_COMMITTED.value}
    consumer = ck.Consumer(configure(broker, "consumer", **settings))
    consumer.assign([ck.TopicPartition(topic, p, ck.OFFSET_BEGINNING) for p in range(PARTITIONS)])
    try:
        yield consumer
    finally:
        consumer.close()


def follow(consumer: ck.Consumer, records: int, query: StreamingQuery, timeout_s: float) -> tuple[float, float]:
    """The ``perf_counter`` when the first and the ``records``-th record reached ``consumer``; ``KafkaError`` when
    the query ended first (its own error raised) or ``timeout_s`` passed."""
    first, received = 0.0, 0
    deadline = time.monotonic() + timeout_s
    while received < records:
        if not query.isActive:
            failure = query.exception()
            if failure is not None:
                raise failure
            raise KafkaError(f"query {query.id} ended with {received} of {records} records out")
        if time.monotonic() > deadline:
            raise KafkaError(f"query {query.id}: {received} of {records} records out within {timeout_s} s")
        for message in consumer.consume(10_000, timeout=0.05):
            error = message.error()
            if error is None:
                first, received = first or time.perf_counter(), received + 1
            elif error.code() != ck.KafkaError._PARTITION_EOF:
                raise KafkaError(f"follow {message.topic()}: {error.str()}")
    return first, time.perf_counter()


def pipe_competitor(arena: Arena, pipe: Pipe, source: str, records: int) -> Competitor:
    topics: list[str] = []
    stem = slug(pipe.name)

    def run(round_: int) -> Timing:
        sink = arena.topic(f"pipe-{stem}-{round_}")
        topics.append(sink)
        with follower(arena.broker, sink) as consumer:
            began = time.perf_counter()
            query = pipe.start(arena, source, sink, arena.checkpoint(f"pipe-{stem}-{round_}"))
            try:
                first, last = follow(consumer, records, query, QUERY_TIMEOUT_S)
            finally:
                query.stop()
        return Timing(last - began, last - first)

    mode = f"trigger(realTime={spark_kafka.REAL_TIME_BATCH!r})" if pipe.real_time else "default trigger"
    guarantee = "exactly-once" if pipe.exactly_once else "at-least-once"
    what = f"{pipe.adapter.name} source and {guarantee} sink, {mode}"
    return Competitor(pipe.name, what, run, expect_committed(arena.broker, topics, records))


def cannot_run(arena: Arena, pipe: Pipe, source: str, records: int) -> str | None:
    """Why ``pipe`` fails on the warm-up topic, or ``None``: it delivered every record. A pipe Spark refuses is
    tried again with real-time mode's allowlist check off, so the reason also says what stops it past that check."""
    refused = _first_failure(arena, pipe, source, records, "try")
    if refused is None:
        return None
    arena.spark.conf.set(ALLOWLIST_CHECK, "false")
    try:
        unchecked = _first_failure(arena, pipe, source, records, "try-unchecked")
    finally:
        arena.spark.conf.unset(ALLOWLIST_CHECK)
    past = unchecked or "it delivered, outside what Spark supports, so it is not raced"
    return f"cannot run here, tried: {refused}; with {ALLOWLIST_CHECK}=false: {past}"


def _first_failure(arena: Arena, pipe: Pipe, source: str, records: int, role: str) -> str | None:
    """The first line of the error ``pipe`` fails with on ``source``, or ``None`` when it delivered ``records``."""
    sink = arena.topic(f"{role}-{slug(pipe.name)}")
    try:
        with follower(arena.broker, sink) as consumer:
            query = pipe.start(arena, source, sink, arena.checkpoint(f"{role}-{slug(pipe.name)}"))
            try:
                follow(consumer, records, query, PROBE_S)
            finally:
                query.stop()
    except Exception as error:  # whatever Spark raises is the reason, printed as it is
        lines = str(error).strip().splitlines() or [type(error).__name__]
        return lines[0][:ERROR_CHARS]
    return None


PIPES: Final = (
    Pipe(SPARK_KAFKA, spark_kafka.ADAPTER, real_time=False),
    Pipe(SPARK_KAFKA, spark_kafka.REAL_TIME, real_time=True),
    Pipe(REFERENCE, SPARK_ADAPTER, real_time=False),
    Pipe(REFERENCE, SPARK_ADAPTER, real_time=True),
)
COMPARISONS: Final = (
    Comparison(entrant_name(SPARK_KAFKA, REAL_TIME), entrant_name(SPARK_KAFKA, MICRO_BATCH)),
    Comparison(entrant_name(REFERENCE, MICRO_BATCH), entrant_name(SPARK_KAFKA, MICRO_BATCH)),
    Comparison(entrant_name(REFERENCE, MICRO_BATCH), entrant_name(SPARK_KAFKA, REAL_TIME)),
    Comparison(entrant_name(REFERENCE, REAL_TIME), entrant_name(SPARK_KAFKA, REAL_TIME)),
)


def bench_real_time(arena: Arena, source: str, records: int) -> list[str]:
    """The pipe race on ``source`` (``records`` records) in ``arena``, whose session has ``MASTER``'s slots."""
    require_task_slots(arena.spark, PARTITIONS)
    warm = arena.topic("pipe-warm")
    warm_records = fill_topic(arena.client, warm, 40)
    missing = spark_kafka_missing(arena.spark)
    entrants: list[Competitor | Skipped] = []
    for pipe in PIPES:
        if pipe.connector == SPARK_KAFKA and missing is not None:
            entrants.append(Skipped(pipe.name, missing))
            continue
        reason = cannot_run(arena, pipe, warm, warm_records)  # also the session's warm-up for this pipe
        entrants.append(Skipped(pipe.name, reason) if reason else pipe_competitor(arena, pipe, source, records))
    timings = race([e for e in entrants if isinstance(e, Competitor)], REAL_TIME_ROUNDS, arena.cpu_meters())
    return [
        f"  real-time race: {records:,} records from the source topic to a new topic per round, "
        f"{REAL_TIME_ROUNDS} rounds, master {MASTER} (a task slot per partition); a read_committed follower times "
        "each; every round's output read back read_committed",
        *race_rows(records, entrants, timings, COMPARISONS, FIGURES),
    ]
