"""Spark throughput figures for ``kconform bench``: the ``kconform-kafka`` source and sink against raw clients.

Every rate is measured in the same run, on the same broker, so the ratios compare like with like:

- source: a streaming query ``readStream.format("kconform-kafka")`` at parallelism 2 with the
  ``availableNow`` trigger and the ``noop`` sink reads a pre-filled topic, against one raw
  confluent-kafka consumer counting the same records; goal: source >= 50 % of the raw consumer;
- sink: ``writeStream.format("kconform-kafka")`` in exactly-once mode writes N records read from
  Parquet files (two input partitions, so two tasks), against one raw confluent-kafka transactional
  producer writing the same N records in two transactions; no goal is set.

Spark rates come twice: wall time from defining the query to ``stop()`` returning (query start and
stop included), and inside the batch (the ``addBatch`` durations of the query's progress reports:
the tasks reading and writing, without planning, offset logging and query start/stop). The
SparkSession's start and a small warm-up query (the session's first query spends seconds starting
its Python workers) are in neither. Raw clients take the best of 3 runs, Spark one run, which makes
the ratios conservative. Every written output is read back (read_committed) and counted outside
the timed regions: a rate over records that were lost would mean nothing.
"""

from __future__ import annotations

import os
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final
from uuid import uuid4

import confluent_kafka as ck
from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from pyspark.sql.streaming.query import StreamingQuery

from conformance.brokers import Broker, broker_from_env
from conformance.pipeline import Pipeline, local_session
from reference_impl.kafka_client import KafkaClient, configure
from reference_impl.ports import Isolation, KafkaError
from reference_impl.spark import FORMAT
from reference_impl.types import TopicPartition

PARTITIONS: Final = 4
SOURCE_RECORDS: Final = 200_000
SINK_RECORDS: Final = 100_000
"""Kept equal to the raw producer's count so the two rates compare the same work."""
VALUE_BYTES: Final = 100
PARALLELISM: Final = 2
RAW_TRANSACTIONS: Final = 2
RAW_REPEAT: Final = 3
"""Raw clients take the best of 3 runs (about a second each): the figure least disturbed by other load,
which makes the Spark/raw ratios conservative."""
WARM_UP_RECORDS: Final = 40
SOURCE_GOAL: Final = 0.5
QUERY_TIMEOUT_S: Final = 180
READ_TIMEOUT_S: Final = 60.0


@dataclass(frozen=True)
class Rate:
    name: str
    records: int
    seconds: float

    @property
    def per_second(self) -> float:
        return self.records / self.seconds if self.seconds > 0 else float("inf")

    def row(self) -> str:
        return f"    {self.name:<62} {self.per_second:>9,.0f} rec/s  ({self.records:,} in {self.seconds:.2f} s)"


def ratio_row(name: str, measured: Rate, baseline: Rate, goal: float | None) -> str:
    ratio = measured.per_second / baseline.per_second
    if goal is None:
        verdict = "no goal set"
    else:
        verdict = f"goal >= {goal:.0%}  " + ("meets goal" if ratio >= goal else "MISSES goal")
    return f"    {name:<62} {ratio:>9.1%}        {verdict}"


def topic_prefix(run: str) -> str:
    return f"kconform-bench-{run}-"


def new_topic(client: KafkaClient, run: str, role: str) -> str:
    """A topic of ``PARTITIONS`` partitions named for this run, deleted at the end on shared brokers."""
    name = topic_prefix(run) + role
    client.create_topic(name, PARTITIONS)
    return name


def _value(i: int) -> bytes:
    return f"{i:0{VALUE_BYTES}d}".encode()


def fill_topic(client: KafkaClient, topic: str, records: int) -> int:
    """``records`` values of ``VALUE_BYTES`` spread over the partitions, then a one-record sentinel on
    each: ListOffsets(latest) is wrong after multi-record batches on Tansu (KAFKA-008), and the source
    plans its ends with it. Returns every record written, sentinels included."""
    per_partition = records // PARTITIONS
    for p in range(PARTITIONS):
        tp = TopicPartition(topic, p)
        client.produce_batch(tp, [(None, _value(p * per_partition + i)) for i in range(per_partition)], linger_ms=5)
        client.produce(tp, None, b"sentinel")
    return per_partition * PARTITIONS + PARTITIONS


def count_records(broker: Broker, topic: str, partitions: int, isolation: Isolation) -> dict[int, int]:
    """Records per partition one raw consumer returns from the start until each partition reports its end.

    The end is the fetch response's high watermark (or LSO), which Tansu gets right; bounded by
    ``READ_TIMEOUT_S``.
    """
    consumer = ck.Consumer(
        configure(
            broker, "consumer", **{"group.id": f"kconform-bench-{uuid4().hex}", "isolation.level": isolation.value}
        )
    )
    consumer.assign([ck.TopicPartition(topic, p, ck.OFFSET_BEGINNING) for p in range(partitions)])
    pending, counts = set(range(partitions)), dict.fromkeys(range(partitions), 0)
    deadline = time.monotonic() + READ_TIMEOUT_S
    try:
        while pending:
            if time.monotonic() > deadline:
                raise KafkaError(f"count {topic}: partitions {sorted(pending)} not at their end in {READ_TIMEOUT_S} s")
            for message in consumer.consume(10_000, timeout=0.2):
                error = message.error()
                if error is None:
                    counts[message.partition() or 0] += 1
                elif error.code() == ck.KafkaError._PARTITION_EOF:
                    pending.discard(message.partition() or 0)
                else:
                    raise KafkaError(f"count {topic}: {error.str()}")
    finally:
        consumer.close()
    return counts


def timed(fn: Callable[[], Any]) -> tuple[Any, float]:
    start = time.perf_counter()
    value = fn()
    return value, time.perf_counter() - start


def run_query(query: StreamingQuery) -> list[Any]:
    """Wait, bounded, for an ``availableNow`` query to end; stop it; raise its error; its progress reports."""
    try:
        if not query.awaitTermination(QUERY_TIMEOUT_S):
            raise TimeoutError(f"query {query.id} did not finish within {QUERY_TIMEOUT_S} s")
    finally:
        query.stop()
    error = query.exception()
    if error is not None:
        raise error
    return list(query.recentProgress)


def inside_batches(name: str, progress: list[Any], expected: int) -> Rate:
    """The records the progress reports counted over their summed ``addBatch`` time; all must be there."""
    rows = sum(int(p.numInputRows) for p in progress)
    if rows != expected:
        raise KafkaError(f"{name}: the query processed {rows} records, expected {expected}")
    seconds = sum(int(p.durationMs.get("addBatch", 0)) for p in progress) / 1000
    return Rate(f"{name}, inside the batch ({len(progress)} batch, addBatch)", rows, seconds)


def bench_source(spark: SparkSession, broker: Broker, topic: str, records: int, work: Path) -> list[str]:
    raw_runs = [
        timed(lambda: sum(count_records(broker, topic, PARTITIONS, Isolation.READ_UNCOMMITTED).values()))
        for _ in range(RAW_REPEAT)
    ]
    if any(count != records for count, _ in raw_runs):
        raise KafkaError(f"raw consumer read {[c for c, _ in raw_runs]} records of {topic}, expected {records}")
    raw = Rate(
        f"raw consumer (1 confluent-kafka consumer counting; best of {RAW_REPEAT})",
        records,
        min(s for _, s in raw_runs),
    )

    def query() -> list[Any]:
        frame = (
            spark.readStream.format(FORMAT)
            .option("bootstrap.servers", broker.bootstrap_servers)
            .option("subscribe", topic)
            .option("startingOffsets", "earliest")
            .option("parallelism", str(PARALLELISM))
            .load()
        )
        writer = frame.writeStream.format("noop").option("checkpointLocation", str(work / "source-checkpoint"))
        return run_query(writer.trigger(availableNow=True).start())

    progress, wall_s = timed(query)
    wall = Rate("source, wall incl. query start/stop", records, wall_s)
    inside = inside_batches("source", progress, records)
    return [
        f"  source: readStream.format({FORMAT!r}), parallelism {PARALLELISM}, availableNow, noop sink",
        raw.row(),
        wall.row(),
        inside.row(),
        ratio_row("source / raw consumer, wall incl. query start/stop", wall, raw, SOURCE_GOAL),
        ratio_row("source / raw consumer, inside the batch", inside, raw, SOURCE_GOAL),
    ]


def raw_transactional_write(broker: Broker, topic: str, records: int) -> None:
    """``records`` values in ``RAW_TRANSACTIONS`` transactions (librdkafka's default linger), transaction
    ``k`` on partition ``k`` as sink task ``k`` would; every wait bounded."""
    producer = ck.Producer(
        {**broker.client_config("producer"), "linger.ms": 5, "transactional.id": f"kconform-bench-{uuid4().hex}"}
    )
    producer.init_transactions(READ_TIMEOUT_S)
    errors: list[ck.KafkaError] = []

    def delivered(error: ck.KafkaError | None, _message: ck.Message) -> None:
        if error is not None:
            errors.append(error)

    per_transaction = records // RAW_TRANSACTIONS
    for k in range(RAW_TRANSACTIONS):
        producer.begin_transaction()
        for i in range(k * per_transaction, (k + 1) * per_transaction):
            producer.produce(topic, _value(i), partition=k % PARTITIONS, on_delivery=delivered)
            producer.poll(0)
        producer.commit_transaction(READ_TIMEOUT_S)  # flushes first
    if errors:
        raise KafkaError(f"raw transactional producer: {errors[0].str()}")


def bench_sink(
    spark: SparkSession, broker: Broker, client: KafkaClient, run: str, records: int, work: Path
) -> list[str]:
    raw_topic, sink_topic = new_topic(client, run, "raw"), new_topic(client, run, "sink")
    raw_s = min(timed(lambda: raw_transactional_write(broker, raw_topic, records))[1] for _ in range(RAW_REPEAT))
    raw = Rate(f"raw transactional producer ({RAW_TRANSACTIONS} transactions; best of {RAW_REPEAT})", records, raw_s)

    parquet = work / "sink-input"
    values = F.lpad(F.col("id").cast("string"), VALUE_BYTES, "0").cast("binary")
    spark.range(0, records, 1, PARALLELISM).select(
        F.lit(None).cast("binary").alias("key"), values.alias("value")
    ).write.parquet(str(parquet))
    schema = spark.read.parquet(str(parquet)).schema

    def query() -> list[Any]:
        writer = (
            spark.readStream.schema(schema)
            .parquet(str(parquet))
            .writeStream.format(FORMAT)
            .option("bootstrap.servers", broker.bootstrap_servers)
            .option("topic", sink_topic)
            .option("deliveryGuarantee", "exactly-once")
            .option("checkpointLocation", str(work / "sink-checkpoint"))
        )
        return run_query(writer.trigger(availableNow=True).start())

    progress, wall_s = timed(query)
    tasks = 0
    for topic, expected in ((raw_topic, RAW_REPEAT * records), (sink_topic, records)):
        written = count_records(broker, topic, PARTITIONS, Isolation.READ_COMMITTED)
        if sum(written.values()) != expected:
            raise KafkaError(f"{topic}: {sum(written.values())} committed records read back, expected {expected}")
        tasks = sum(1 for n in written.values() if n)  # sink task i writes to partition i % PARTITIONS
    wall = Rate("sink, wall incl. query start/stop", records, wall_s)
    inside = inside_batches("sink", progress, records)
    return [
        f"  sink: writeStream.format({FORMAT!r}), exactly-once, {tasks} tasks, availableNow, Parquet input; "
        "all records read back read_committed",
        raw.row(),
        wall.row(),
        inside.row(),
        ratio_row("sink / raw producer, wall incl. query start/stop", wall, raw, None),
        ratio_row("sink / raw producer, inside the batch", inside, raw, None),
    ]


def warm_up(spark: SparkSession, broker: Broker, client: KafkaClient, run: str, work: Path) -> float:
    """A tiny source-to-sink query, not measured: the session's first query spends ~7 s starting and
    importing into its Python workers, which would swamp any rate. Returns its wall time."""
    source, sink = new_topic(client, run, "warm-in"), new_topic(client, run, "warm-out")
    records = fill_topic(client, source, WARM_UP_RECORDS)
    pipeline = Pipeline(
        spark, broker.bootstrap_servers, work / "warm-up-checkpoint", PARALLELISM, subscribe=source, sink_topic=sink
    )
    _, seconds = timed(pipeline.run_available_now)
    inside_batches("warm-up", pipeline.progress(), records)
    return float(seconds)


@contextmanager
def _session() -> Iterator[tuple[SparkSession, float]]:
    # No console progress bar over the figures (a user's own PYSPARK_SUBMIT_ARGS wins).
    os.environ.setdefault("PYSPARK_SUBMIT_ARGS", "--conf spark.ui.showConsoleProgress=false pyspark-shell")
    session, seconds = timed(local_session)
    session.sparkContext.setLogLevel("ERROR")
    try:
        yield session, seconds
    finally:
        session.stop()


def bench_spark() -> None:
    """Start a broker (``KCONFORM_BROKER``, default kafka) and a local session; print the figures."""
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
    records, fill_s = timed(lambda: fill_topic(client, source_topic, SOURCE_RECORDS))
    print(
        f"spark throughput on {broker.describe()}: {VALUE_BYTES} B values, {PARTITIONS} partitions "
        f"(source topic of {records:,} records filled in {fill_s:.2f} s)"
    )
    with tempfile.TemporaryDirectory(prefix="kconform-bench-spark-") as tmp, _session() as (spark, start_s):
        warm_s = warm_up(spark, broker, client, run, Path(tmp))
        print(
            f"  SparkSession start {start_s:.1f} s, warm-up query ({WARM_UP_RECORDS} records) {warm_s:.1f} s: "
            "in no figure"
        )
        for line in bench_source(spark, broker, source_topic, records, Path(tmp)):
            print(line, flush=True)
        for line in bench_sink(spark, broker, client, run, SINK_RECORDS, Path(tmp)):
            print(line, flush=True)
