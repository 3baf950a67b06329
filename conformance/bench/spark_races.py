"""Spark throughput races for ``kconform bench``: the ``kconform-kafka`` source and sink against other clients.

A race runs its competitors on the same data and the same broker in the same run, each once per round for
``SOURCE_ROUNDS``, ``SINK_ROUNDS`` or ``REAL_TIME_ROUNDS`` rounds (source, sink and real-time races), the order reversed
every other round, so drift in the machine's load (the project's machines are two shared cores) falls on each
alike. Every rate is the median of the rounds; every ratio is the median of the rounds' paired ratios, and a
goal is met or missed only when the median's confidence interval lies on one side of it (``evidence``).
Competitors are looked up by name (``SOURCE_COMPETITORS``, ``SINK_COMPETITORS``); one that cannot run here prints
why instead.

- source: ``readStream.format("kconform-kafka")`` at parallelism 2, ``availableNow``, ``noop``
  sink, reading a pre-filled topic, against one raw confluent-kafka consumer counting the same
  records (goal: >= 50 %) and against Spark's own ``format("kafka")`` source (goal: >= 50 % of its
  wall rate, the query's start and stop included);
- sink: ``writeStream.format("kconform-kafka")`` in exactly-once mode writing N records read from
  Parquet files (one task per file), against one raw confluent-kafka transactional producer
  writing the same records to the same partitions, one transaction per task's share (goal: >= 50 %
  inside the batch), and against Spark's own ``format("kafka")`` sink (at-least-once: it has no
  transactions; goal: >= 100 % inside the batch, exactly-once costing no more than Spark's at-least-once);
  once in one batch of a new query (the exactly-once sink's tasks initialise new transactional ids, Spark's take
  the producer their executor cached), once in a streaming query's steady state (batches 2 to ``STEADY_BATCHES``
  of a query, the sink's producers kept from its first). The one-batch race also runs a Python sink that reads its
  input and writes nothing (``floor_sink``): the bound of any sink on PySpark's data source API.

Every competitor has two rates, measured the same way for each:

- wall: a query from its definition to ``stop()`` returning (query start and stop included); a raw
  client from its construction (``init_transactions`` included) to its last record's end;
- inside the batch: a query's ``addBatch`` durations (its tasks reading or writing, without
  planning, offset logging and query start/stop); a raw client's time after it is ready: the
  consumer's reads, the producer's transactions from the first ``begin_transaction`` to the last
  ``commit_transaction`` returning.

Beside them, CPU while each round ran (``/proc`` counters, ``process_cpu``): the broker's processes (only for a
broker the suite started here) and the whole machine's, every process. Spark, the broker and the clients share the
machine's cores, so a rate includes the broker's work the competitor causes and competes with all the work it
makes the machine do: these say how much, and a comparison prints the contender's machine CPU a round as a share of
the baseline's. The one-batch sink race also runs Spark's own ``noop`` sink on the same input, the JVM's floor
beside the Python one.

The SparkSession's start and a small warm-up query (the session's first query spends seconds
starting its Python workers) are in no figure. Every written output is read back (read_committed)
and counted outside the timed regions: a rate over records that were lost would mean nothing.
"""

from __future__ import annotations

import re
import statistics
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Final
from uuid import uuid4

import confluent_kafka as ck
import pyarrow.parquet as pq  # type: ignore[import-untyped]
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.streaming.query import StreamingQuery
from pyspark.sql.streaming.readwriter import DataStreamWriter
from pyspark.sql.types import StructType

from ...reference_impl.kafka_client import KafkaClient, configure
from ...reference_impl.ports import Isolation, KafkaError
from ...reference_impl.spark import FORMAT
from ...reference_impl.types import TopicPartition
from ..adapter.interface import SinkSpec, SourceSpec
from ..adapters import spark_kafka
from ..brokers import Broker
from ..spark.pipeline import Pipeline
from .evidence import goal_verdict
from .floor_sink import FLOOR_FORMAT, register_floor
from .process_cpu import CpuMeter, cpu_meter, machine_cpu_meter

PARTITIONS: Final = 4
SOURCE_RECORDS: Final = 200_000
SINK_RECORDS: Final = 100_000
VALUE_BYTES: Final = 100
PARALLELISM: Final = 2
SOURCE_ROUNDS: Final = 9
"""Rounds of the source race: its goals lie far outside its rounds' spread, but a first round slowed by a cold
worker moved the whole-range interval that 5 rounds give (39 % against 87-93 %); 9 rounds drop the highest and
lowest (``evidence``: the 2nd to the 8th, at 96.1 %)."""
SINK_ROUNDS: Final = 15
"""Rounds of both sink races: their goal against Spark's sink lies inside the spread of their single rounds (44 % to
174 % on a 2-core machine, runs 8 to 18), so deciding it needs a narrow interval of the median (``evidence``): the
4th to the 12th of 15 rounds, at 96.5 %."""
STEADY_BATCHES: Final = 5
"""Batches of the sink race's steady-state query: the first opens every task's transactional id, the rest are timed."""
WARM_UP_RECORDS: Final = 40
GOAL: Final = 0.5
"""The source reaches at least half the raw consumer's rate, wall and inside the batch; the exactly-once
sink half the raw transactional producer's inside the batch."""
SPARK_SINK_GOAL: Final = 1.0
"""The exactly-once sink writes at least as fast as Spark's own at-least-once sink inside the batch."""
QUERY_TIMEOUT_S: Final = 180
READ_TIMEOUT_S: Final = 60.0
SPARK_KAFKA_MISSING: Final = "skipped: Spark's Kafka connector jars not on the classpath (kconform setup)"

RAW_CONSUMER: Final = "raw consumer"
RAW_PRODUCER: Final = "raw transactional producer"
REFERENCE: Final = FORMAT
SPARK_KAFKA: Final = "spark kafka"
PYTHON_FLOOR: Final = "python floor"
JVM_FLOOR: Final = "jvm floor"
BROKER_CPU: Final = "broker"
MACHINE_CPU: Final = "machine"
CPU_COUNTED: Final[Mapping[str, str]] = {
    BROKER_CPU: "the broker's processes while the round ran",
    MACHINE_CPU: "every process on this machine while the round ran",
}
"""What each CPU meter of a race counts, in the order its rows print."""


@dataclass(frozen=True)
class Timing:
    """One run of one competitor: seconds overall and inside the batch (see the module docstring), and CPU seconds
    while it ran by meter (``CPU_COUNTED``; a meter that could not read is absent)."""

    wall_s: float
    inside_s: float
    cpu_s: Mapping[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class Competitor:
    name: str
    what: str
    """What it runs, printed beside its rates."""
    run: Callable[[int], Timing]
    """Runs round ``n`` on fresh state (topic, checkpoint) and returns its timing."""
    check: Callable[[], None] = lambda: None
    """Raises if what the rounds wrote is not all there, read back after every round ran."""


@dataclass(frozen=True)
class Skipped:
    name: str
    reason: str


@dataclass(frozen=True)
class Comparison:
    """The contender's rate as a share of the baseline's, each figure against its goal (``None``: none set)."""

    contender: str
    baseline: str
    wall_goal: float | None = None
    inside_goal: float | None = None


def race(
    competitors: Sequence[Competitor], rounds: int, cpu_meters: Mapping[str, CpuMeter] | None = None
) -> dict[str, list[Timing]]:
    """Each competitor once per round, in reverse order every other round, CPU counted around each run by every
    meter that can read; then each one's check."""
    meters = cpu_meters or {}
    timings: dict[str, list[Timing]] = {c.name: [] for c in competitors}
    for n in range(rounds):
        for competitor in competitors if n % 2 == 0 else reversed(competitors):
            before = {name: meter() for name, meter in meters.items()}
            timing = competitor.run(n)
            after = {name: meter() for name, meter in meters.items()}
            cpu = {
                name: end - start
                for name, start in before.items()
                if start is not None and (end := after[name]) is not None
            }
            timings[competitor.name].append(replace(timing, cpu_s=cpu))
    for competitor in competitors:
        competitor.check()
    return timings


def rate(records: int, seconds: float) -> float:
    return records / seconds if seconds > 0 else float("inf")


def race_rows(
    records: int,
    entrants: Sequence[Competitor | Skipped],
    timings: Mapping[str, list[Timing]],
    comparisons: Sequence[Comparison],
    figures: tuple[str, str] = ("wall", "inside the batch"),
    wall_records: int | None = None,
) -> list[str]:
    """A row per competitor and figure (median of the rounds), then a row per comparison both sides ran;
    ``figures`` names a ``Timing``'s two, ``wall_s`` and ``inside_s``, over ``wall_records`` (default ``records``)
    and ``records``."""
    rows = []
    wall, inside = figures
    counted = {wall: records if wall_records is None else wall_records, inside: records}
    for entrant in entrants:
        if isinstance(entrant, Skipped):
            rows.append(f"    {entrant.name:<28} {entrant.reason}")
            continue
        runs = timings[entrant.name]
        for figure, seconds in ((wall, [t.wall_s for t in runs]), (inside, [t.inside_s for t in runs])):
            median = statistics.median(seconds)
            rows.append(
                f"    {entrant.name:<28} {figure:<20} {rate(counted[figure], median):>9,.0f} rec/s  "
                f"({counted[figure]:,} in {median:.2f} s, median of {len(runs)})"
            )
        for meter, what in CPU_COUNTED.items():
            cpu = [t.cpu_s[meter] for t in runs if meter in t.cpu_s]
            if len(cpu) == len(runs):
                rows.append(
                    f"    {'':<28} {f'{meter} CPU':<20} {statistics.median(cpu) * 1000:>9,.0f} ms a round "
                    f"(median of {len(runs)}, {what})"
                )
        rows.append(f"    {'':<28} {entrant.what}")
    for comparison in comparisons:
        if comparison.contender not in timings or comparison.baseline not in timings:
            continue
        pairs = list(zip(timings[comparison.contender], timings[comparison.baseline], strict=True))
        for figure, goal, ratios in (
            (wall, comparison.wall_goal, [b.wall_s / c.wall_s for c, b in pairs]),
            (inside, comparison.inside_goal, [b.inside_s / c.inside_s for c, b in pairs]),
        ):
            ratio = statistics.median(ratios)
            verdict = "no goal set" if goal is None else goal_verdict(ratios, goal)
            name = f"{comparison.contender} / {comparison.baseline}, {figure}"
            rounds = ", ".join(f"{r:.0%}" for r in ratios)
            rows.append(f"    {name:<64} {ratio:>6.1%}  {verdict}  (rounds: {rounds})")
        if all(MACHINE_CPU in t.cpu_s and t.cpu_s[MACHINE_CPU] > 0 for pair in pairs for t in pair):
            shares = [c.cpu_s[MACHINE_CPU] / b.cpu_s[MACHINE_CPU] for c, b in pairs]
            name = f"{comparison.contender} / {comparison.baseline}, {MACHINE_CPU} CPU a round"
            rounds = ", ".join(f"{r:.0%}" for r in shares)
            rows.append(f"    {name:<64} {statistics.median(shares):>6.1%}  the contender's share  (rounds: {rounds})")
    return rows


@dataclass(frozen=True)
class Arena:
    """What every competitor of the run shares: the session, the broker and where to put files."""

    spark: SparkSession
    broker: Broker
    client: KafkaClient
    run: str
    work: Path

    def topic(self, role: str) -> str:
        return new_topic(self.client, self.run, role)

    def cpu_meters(self) -> dict[str, CpuMeter]:
        """The CPU a race counts (``CPU_COUNTED``): the broker's, when the suite started it on this machine, and the
        whole machine's, where ``/proc`` can tell."""
        meters = {BROKER_CPU: cpu_meter(self.broker.local_pids()), MACHINE_CPU: machine_cpu_meter()}
        return {name: meter for name, meter in meters.items() if meter is not None}

    def checkpoint(self, role: str) -> str:
        return str(self.work / f"{role}-checkpoint")


def slug(name: str) -> str:
    """A competitor's name as a topic or file name."""
    return re.sub(r"[^A-Za-z0-9._-]+", "-", name)


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


def count_records(broker: Broker, topic: str, partitions: int, isolation: Isolation) -> tuple[dict[int, int], Timing]:
    """Records per partition one raw consumer returns from the start until each partition reports its end,
    and how long that took (inside: from the assignment on).

    The end is the fetch response's high watermark (or LSO), which Tansu gets right; bounded by
    ``READ_TIMEOUT_S``.
    """
    began = time.perf_counter()
    consumer = ck.Consumer(
        configure(
            broker, "consumer", **{"group.id": f"kconform-bench-{uuid4().hex}", "isolation.level": isolation.value}
        )
    )
    ready = time.perf_counter()
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
        done = time.perf_counter()
    finally:
        consumer.close()
    return counts, Timing(done - began, done - ready)


def expect_committed(broker: Broker, topics: Sequence[str], records: int) -> Callable[[], None]:
    """A check that each of ``topics`` holds exactly ``records`` committed records."""

    def check() -> None:
        for topic in topics:
            written = sum(count_records(broker, topic, PARTITIONS, Isolation.READ_COMMITTED)[0].values())
            if written != records:
                raise KafkaError(f"{topic}: {written} committed records read back, expected {records}")

    return check


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


def every_record_counted(name: str, progress: list[Any], expected: int) -> None:
    """Raise unless the progress reports counted ``expected`` records: a race on less input proves nothing."""
    rows = sum(int(p.numInputRows) for p in progress)
    if rows != expected:
        raise KafkaError(f"{name}: the query processed {rows} records, expected {expected}")


def add_batch_seconds(progress: Iterable[Any]) -> float:
    """The summed ``addBatch`` seconds of the progress reports: the time inside the batches."""
    return sum(int(p.durationMs.get("addBatch", 0)) for p in progress) / 1000


def inside_batches(name: str, progress: list[Any], expected: int) -> float:
    """The summed ``addBatch`` seconds of the progress reports, which must have counted every record."""
    every_record_counted(name, progress, expected)
    return add_batch_seconds(progress)


def timed_query(name: str, start: Callable[[], StreamingQuery], records: int) -> Timing:
    began = time.perf_counter()
    progress = run_query(start())
    return Timing(time.perf_counter() - began, inside_batches(name, progress, records))


def spark_kafka_missing(spark: SparkSession) -> str | None:
    """Why Spark's own Kafka connector cannot run in this session (the adapter's probe), or ``None``."""
    return SPARK_KAFKA_MISSING if spark_kafka.connector_missing(spark) is not None else None


# -- source ----------------------------------------------------------------------------------------

SourceEntrant = Callable[[Arena, str, int], "Competitor | Skipped"]
"""Builds a source competitor reading ``topic`` (``records`` records) in ``arena``."""


def raw_consumer(arena: Arena, topic: str, records: int) -> Competitor:
    def run(_round: int) -> Timing:
        counts, timing = count_records(arena.broker, topic, PARTITIONS, Isolation.READ_UNCOMMITTED)
        if sum(counts.values()) != records:
            raise KafkaError(f"raw consumer read {sum(counts.values())} records of {topic}, expected {records}")
        return timing

    return Competitor(RAW_CONSUMER, "1 confluent-kafka consumer counting", run)


def reference_source(arena: Arena, topic: str, records: int) -> Competitor:
    def frame() -> DataFrame:
        return (
            arena.spark.readStream.format(FORMAT)
            .option("bootstrap.servers", arena.broker.bootstrap_servers)
            .option("subscribe", topic)
            .option("startingOffsets", "earliest")
            .option("parallelism", str(PARALLELISM))
            .load()
        )

    return Competitor(
        REFERENCE,
        f"readStream.format({FORMAT!r}), parallelism {PARALLELISM}, availableNow, noop sink",
        _noop_query(arena, REFERENCE, frame, records),
    )


def spark_kafka_source(arena: Arena, topic: str, records: int) -> Competitor | Skipped:
    missing = spark_kafka_missing(arena.spark)
    if missing is not None:
        return Skipped(SPARK_KAFKA, missing)

    def frame() -> DataFrame:  # through the shipped adapter: the race times what the suite judges
        source = SourceSpec(arena.broker.bootstrap_servers, PARALLELISM, subscribe=(topic,))
        return spark_kafka.ADAPTER.read_stream(arena.spark, source)

    return Competitor(
        SPARK_KAFKA,
        "readStream.format('kafka') (Spark's own), availableNow, noop sink",
        _noop_query(arena, SPARK_KAFKA, frame, records),
    )


def _noop_query(arena: Arena, name: str, frame: Callable[[], DataFrame], records: int) -> Callable[[int], Timing]:
    return _unwritten_query(arena, f"source {name}", frame, "noop", records)


def _unwritten_query(
    arena: Arena, label: str, frame: Callable[[], DataFrame], sink_format: str, records: int
) -> Callable[[int], Timing]:
    """Rounds of ``frame`` into a sink that writes nothing, each timed as ``label``: nothing to read back, the
    progress reports must still count ``records``."""

    def run(round_: int) -> Timing:
        def start() -> StreamingQuery:
            checkpoint = arena.checkpoint(f"{slug(label)}-{round_}")
            writer = frame().writeStream.format(sink_format).option("checkpointLocation", checkpoint)
            return writer.trigger(availableNow=True).start()

        return timed_query(label, start, records)

    return run


SOURCE_COMPETITORS: Final[Mapping[str, SourceEntrant]] = {
    RAW_CONSUMER: raw_consumer,
    REFERENCE: reference_source,
    SPARK_KAFKA: spark_kafka_source,
}
SOURCE_COMPARISONS: Final = (
    Comparison(REFERENCE, RAW_CONSUMER, wall_goal=GOAL, inside_goal=GOAL),
    Comparison(REFERENCE, SPARK_KAFKA, wall_goal=GOAL),
)


def bench_source(arena: Arena, topic: str, records: int) -> list[str]:
    entrants = [entrant(arena, topic, records) for entrant in SOURCE_COMPETITORS.values()]
    timings = race([e for e in entrants if isinstance(e, Competitor)], SOURCE_ROUNDS, arena.cpu_meters())
    return [
        f"  source race: {records:,} records of {PARTITIONS} partitions, {SOURCE_ROUNDS} rounds",
        *race_rows(records, entrants, timings, SOURCE_COMPARISONS),
    ]


# -- sink ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SinkInput:
    """The records every sink competitor writes: Parquet files, one per task, and their row counts;
    ``batches`` batches of ``PARALLELISM`` files each."""

    path: Path
    schema: StructType
    rows: list[int]
    """The rows of each file, in order: a task's."""
    batches: int = 1

    @property
    def records(self) -> int:
        return sum(self.rows)

    def shares(self) -> list[list[bytes]]:
        """The values of each file, in order: a task's rows (read from the files, for a raw client to write)."""
        return [pq.read_table(f).column("value").to_pylist() for f in sorted(self.path.glob("*.parquet"))]

    @property
    def timed_records(self) -> int:
        """The records of the batches timed inside: every batch of a one-batch input, else all but the first."""
        return self.records if self.batches == 1 else sum(self.rows[PARALLELISM:])

    def frame(self, spark: SparkSession) -> DataFrame:
        stream = spark.readStream.schema(self.schema)
        if self.batches > 1:  # a batch per PARALLELISM files, in the order they were written
            stream = stream.option("maxFilesPerTrigger", str(PARALLELISM))
        return stream.parquet(str(self.path))

    @classmethod
    def write(cls, spark: SparkSession, path: Path, records: int, batches: int = 1) -> SinkInput:
        """``records`` in each of ``batches`` batches."""
        values = F.lpad(F.col("id").cast("string"), VALUE_BYTES, "0").cast("binary")
        spark.range(0, records * batches, 1, PARALLELISM * batches).select(
            F.lit(None).cast("binary").alias("key"), values.alias("value")
        ).write.parquet(str(path))
        files = sorted(path.glob("*.parquet"))
        schema = spark.read.parquet(str(path)).schema
        return cls(path, schema, [pq.read_metadata(f).num_rows for f in files], batches)


SinkEntrant = Callable[[Arena, SinkInput], "Competitor | Skipped"]
"""Builds a sink competitor writing ``SinkInput`` in ``arena``."""


def raw_transactional_producer(arena: Arena, given: SinkInput) -> Competitor:
    """One librdkafka transactional producer, the confluent-kafka way: a delivery callback per record and
    ``poll(0)`` after each; share ``k`` in transaction ``k``, record ``j`` of it on partition
    ``(k + j) % PARTITIONS``, where sink task ``k`` puts it."""
    shares = given.shares()
    topics: list[str] = []

    def run(round_: int) -> Timing:
        topic = arena.topic(f"raw-{round_}")
        topics.append(topic)
        errors: list[ck.KafkaError] = []

        def delivered(error: ck.KafkaError | None, _message: ck.Message) -> None:
            if error is not None:
                errors.append(error)

        began = time.perf_counter()
        # librdkafka's default linger, as the sink's producer has (the test settings' is 0)
        settings = {"linger.ms": 5, "transactional.id": f"kconform-bench-{uuid4().hex}"}
        producer = ck.Producer({**arena.broker.client_config("producer"), **settings})
        producer.init_transactions(READ_TIMEOUT_S)
        ready = time.perf_counter()
        for k, share in enumerate(shares):
            producer.begin_transaction()
            for j, value in enumerate(share):
                producer.produce(topic, value, partition=(k + j) % PARTITIONS, on_delivery=delivered)
                producer.poll(0)
            producer.commit_transaction(READ_TIMEOUT_S)  # flushes first
        done = time.perf_counter()
        if errors:
            raise KafkaError(f"raw transactional producer: {errors[0].str()}")
        return Timing(done - began, done - ready)

    return Competitor(
        RAW_PRODUCER,
        f"1 confluent-kafka producer, {len(shares)} transactions, delivery callback and poll(0) per record",
        run,
        expect_committed(arena.broker, topics, given.records),
    )


def reference_sink(arena: Arena, given: SinkInput) -> Competitor:
    def writer(frame: DataFrame, topic: str) -> DataStreamWriter:
        return (
            frame.writeStream.format(FORMAT)
            .option("bootstrap.servers", arena.broker.bootstrap_servers)
            .option("topic", topic)
            .option("deliveryGuarantee", "exactly-once")
        )

    return _sink_query(
        arena, given, REFERENCE, f"writeStream.format({FORMAT!r}), exactly-once, availableNow, Parquet input", writer
    )


def spark_kafka_sink(arena: Arena, given: SinkInput) -> Competitor | Skipped:
    missing = spark_kafka_missing(arena.spark)
    if missing is not None:
        return Skipped(SPARK_KAFKA, missing)

    def writer(frame: DataFrame, topic: str) -> DataStreamWriter:
        sink = SinkSpec(arena.broker.bootstrap_servers, topic, exactly_once=False)
        return spark_kafka.ADAPTER.write_stream(frame, sink)

    what = "writeStream.format('kafka') (Spark's own, at-least-once), availableNow, Parquet input"
    return _sink_query(arena, given, SPARK_KAFKA, what, writer)


def _sink_query(
    arena: Arena, given: SinkInput, name: str, what: str, writer: Callable[[DataFrame, str], DataStreamWriter]
) -> Competitor:
    topics: list[str] = []
    stem = slug(name) if given.batches == 1 else f"{slug(name)}-steady"  # its own topics and checkpoints

    def run(round_: int) -> Timing:
        topic = arena.topic(f"{stem}-{round_}")
        topics.append(topic)

        def start() -> StreamingQuery:
            checkpoint = arena.checkpoint(f"sink-{stem}-{round_}")
            return (
                writer(given.frame(arena.spark), topic)
                .option("checkpointLocation", checkpoint)
                .trigger(availableNow=True)
                .start()
            )

        if given.batches == 1:
            return timed_query(f"sink {name}", start, given.records)
        began = time.perf_counter()
        progress = run_query(start())
        return Timing(time.perf_counter() - began, after_the_first(f"sink {name}", progress, given))

    return Competitor(name, what, run, expect_committed(arena.broker, topics, given.records))


def after_the_first(name: str, progress: list[Any], given: SinkInput) -> float:
    """The summed ``addBatch`` seconds of the batches after the first, which must each have had
    ``PARALLELISM`` files' rows; every record must have been counted."""
    batches = sorted((p for p in progress if int(p.numInputRows) > 0), key=lambda p: int(p.batchId))
    every_record_counted(name, batches, given.records)
    sizes = [int(p.numInputRows) for p in batches]
    if len(batches) != given.batches or len(set(sizes)) != 1:
        raise KafkaError(f"{name}: batches of {sizes} rows, expected {given.batches} of equal size")
    return add_batch_seconds(batches[1:])


def python_floor(arena: Arena, given: SinkInput) -> Competitor:
    """``floor_sink``'s sink, which reads its input and writes nothing: what any Python sink can reach at best."""
    register_floor(arena.spark)
    what = f"writeStream.format({FLOOR_FORMAT!r}): PySpark's Python data source API, reading every row, writing none"
    run = _unwritten_query(arena, f"sink {PYTHON_FLOOR}", lambda: given.frame(arena.spark), FLOOR_FORMAT, given.records)
    return Competitor(PYTHON_FLOOR, what, run)


def jvm_floor(arena: Arena, given: SinkInput) -> Competitor:
    """Spark's own ``noop`` sink: the query and its reading without a Python worker, the floor of any JVM sink."""
    what = "writeStream.format('noop'): Spark's own sink that writes nothing, reading every row in the JVM"
    run = _unwritten_query(arena, f"sink {JVM_FLOOR}", lambda: given.frame(arena.spark), "noop", given.records)
    return Competitor(JVM_FLOOR, what, run)


SINK_COMPETITORS: Final[Mapping[str, SinkEntrant]] = {
    RAW_PRODUCER: raw_transactional_producer,
    REFERENCE: reference_sink,
    SPARK_KAFKA: spark_kafka_sink,
    PYTHON_FLOOR: python_floor,
    JVM_FLOOR: jvm_floor,
}
SINK_COMPARISONS: Final = (
    Comparison(REFERENCE, RAW_PRODUCER, inside_goal=GOAL),
    Comparison(SPARK_KAFKA, RAW_PRODUCER),
    Comparison(REFERENCE, SPARK_KAFKA, inside_goal=SPARK_SINK_GOAL),
    Comparison(PYTHON_FLOOR, SPARK_KAFKA),
    Comparison(REFERENCE, PYTHON_FLOOR),
    Comparison(PYTHON_FLOOR, JVM_FLOOR),
)


STEADY_COMPETITORS: Final[Mapping[str, SinkEntrant]] = {REFERENCE: reference_sink, SPARK_KAFKA: spark_kafka_sink}
STEADY_COMPARISONS: Final = (Comparison(REFERENCE, SPARK_KAFKA, inside_goal=SPARK_SINK_GOAL),)


def bench_sink(arena: Arena, records: int) -> list[str]:
    given = SinkInput.write(arena.spark, arena.work / "sink-input", records)
    entrants = [entrant(arena, given) for entrant in SINK_COMPETITORS.values()]
    timings = race([e for e in entrants if isinstance(e, Competitor)], SINK_ROUNDS, arena.cpu_meters())
    steady = SinkInput.write(arena.spark, arena.work / "steady-input", records, STEADY_BATCHES)
    steady_entrants = [entrant(arena, steady) for entrant in STEADY_COMPETITORS.values()]
    steady_timings = race([e for e in steady_entrants if isinstance(e, Competitor)], SINK_ROUNDS, arena.cpu_meters())
    later = f"batches 2-{STEADY_BATCHES}"
    return [
        f"  sink race: {given.records:,} records in {len(given.rows)} Parquet files (one task each), "
        f"{SINK_ROUNDS} rounds; every round's output read back read_committed; one batch, a new query each "
        "round: the exactly-once sink initialises a new transactional id per task",
        *race_rows(given.records, entrants, timings, SINK_COMPARISONS),
        f"  sink race, steady state: a query of {STEADY_BATCHES} batches of {records:,} records ({PARALLELISM} "
        f"Parquet files, one task each), {SINK_ROUNDS} rounds; inside: {later}, each task's producer kept from batch 1",
        *race_rows(
            steady.timed_records, steady_entrants, steady_timings, STEADY_COMPARISONS, ("wall", later), steady.records
        ),
    ]


def warm_up(arena: Arena) -> float:
    """A tiny source-to-sink query, not measured: the session's first query spends ~7 s starting and
    importing into its Python workers, which would swamp any rate. Returns its wall time."""
    source, sink = arena.topic("warm-in"), arena.topic("warm-out")
    records = fill_topic(arena.client, source, WARM_UP_RECORDS)
    pipeline = Pipeline(
        arena.spark,
        arena.broker.bootstrap_servers,
        arena.work / "warm-up-checkpoint",
        PARALLELISM,
        subscribe=source,
        sink_topic=sink,
    )
    began = time.perf_counter()
    pipeline.run_available_now()
    seconds = time.perf_counter() - began
    inside_batches("warm-up", pipeline.progress(), records)
    return seconds
