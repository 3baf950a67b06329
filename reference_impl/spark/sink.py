"""The ``kconform-kafka`` streaming sink: at-least-once, or exactly-once per spec/commit.md's Spark mapping.

librdkafka has no KIP-939, so a transaction can be committed only by the producer that opened
it; the exactly-once sink therefore commits inside each task (COMMIT-011):

- the transactional id is stable per ``(prefix, query id, task index)``, so a new attempt of task
  ``i`` fences the earlier ones (COMMIT-006);
- batch ``b``'s records and a progress marker ``b + 1`` (``send_offsets_to_transaction`` for a
  group of the same name) commit in one transaction;
- a task whose marker is already past ``b`` writes nothing: batch ``b`` committed before (replay);
- a task index registers its group (marker 0) before its first transaction, so when a later
  batch runs fewer tasks the driver's ``commit`` finds the ids of the larger earlier parallelism,
  fences them (``init_transactions`` aborts what they left open) and deletes their groups
  (COMMIT-012). This happens at the first batch commit after the rescale, not before its tasks.

Exactly-once holds under deterministic replay: every replay of batch ``b`` must give task ``i``
the same records (the ``kconform-kafka`` source plans replays from the offset log, so it does).
A row goes to its ``partition`` column if set (STRAT-002), else, with a non-null key, where Java's
producer puts it (murmur2, STRAT-001; librdkafka's default would hash with CRC32), else round-robin
from partition ``task % partitions`` (STRAT-003). All three are deterministic, unlike librdkafka's
choice for null keys, so a replay writes every row where its earlier attempt did; a task may write
to any partition. A task's rows arrive as Arrow record batches and stream into the
producer in their order (COMMIT-013), never buffered whole: memory stays bounded by librdkafka's
queue whatever the batch size.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, ClassVar, Final

import pyarrow as pa  # type: ignore[import-untyped]
from confluent_kafka.admin import AdminClient
from pyspark import TaskContext
from pyspark.sql.datasource import DataSourceStreamArrowWriter, WriterCommitMessage
from pyspark.sql.types import StructType

from reference_impl.kafka_client import KafkaClient, KafkaProducer
from reference_impl.kafka_strategies import partition_for_key
from reference_impl.spark import Connection, OptionError
from reference_impl.types import TopicPartition

AT_LEAST_ONCE: Final = "at-least-once"
EXACTLY_ONCE: Final = "exactly-once"
GUARANTEES: Final = (AT_LEAST_ONCE, EXACTLY_ONCE)
BATCH_ID_PROPERTY: Final = "streaming.sql.batchId"
QUERY_ID_PROPERTY: Final = "sql.streaming.queryId"
DEFAULT_PREFIX: Final = "kconform"


@dataclass(frozen=True, slots=True)
class SinkOptions:
    """The sink's options, checked before anything connects (each error names its option)."""

    connection: Connection
    topic: str
    guarantee: str
    prefix: str

    @classmethod
    def parse(cls, options: Mapping[str, str]) -> SinkOptions:
        topic = options.get("topic")
        if not topic:
            raise OptionError("option 'topic' is required (the Kafka topic to write to)")
        guarantee = options.get("deliveryGuarantee", AT_LEAST_ONCE)
        if guarantee not in GUARANTEES:
            raise OptionError(f"option 'deliveryGuarantee' must be one of {GUARANTEES}, got {guarantee!r}")
        prefix = options.get("transactionalIdPrefix", DEFAULT_PREFIX)
        if not prefix:
            raise OptionError("option 'transactionalIdPrefix' must not be empty")
        return cls(Connection.parse(options), topic, guarantee, prefix)


@dataclass(frozen=True, slots=True)
class TaskIdentity:
    """Which task of which batch of which query is writing: all the exactly-once sink keys on."""

    query: str
    batch: int
    task: int

    @classmethod
    def current(cls) -> TaskIdentity:
        context = TaskContext.get()
        if context is None:
            raise RuntimeError("the kconform-kafka sink writes only inside a Spark task")
        batch, query = context.getLocalProperty(BATCH_ID_PROPERTY), context.getLocalProperty(QUERY_ID_PROPERTY)
        if batch is None or query is None:
            raise RuntimeError(f"task has no {BATCH_ID_PROPERTY!r} / {QUERY_ID_PROPERTY!r}: not a streaming batch")
        return cls(query, int(batch), context.partitionId())

    def transactional_id(self, prefix: str) -> str:
        """Stable across attempts and restarts of this task index; also names the marker's group."""
        return f"{prefix}-{self.query}-{self.task}"


@dataclass(frozen=True, slots=True)
class TaskCommit(WriterCommitMessage):
    """What a task did: records written, or skipped because its marker showed the batch committed."""

    task: TaskIdentity
    records: int
    skipped: bool


_placed_by_key: Final = lru_cache(maxsize=4096)(partition_for_key)
"""``partition_for_key`` memoised per Python worker: murmur2 in Python costs about 10 us per 16 key
bytes (several times a row's produce), and keyed streams repeat their keys."""


class Placement:
    """Where one task's rows go, in their order (COMMIT-013): deterministic, so every attempt and replay of
    the task writes each row to the same partition and exactly-once holds."""

    def __init__(self, task: int, partitions: int) -> None:
        self.partitions = partitions
        self._keyless = task % partitions

    def keyed(self, key: bytes) -> int:
        """STRAT-001: the partition a Java producer writes ``key`` to (the empty key is a key)."""
        return _placed_by_key(key, self.partitions)

    def keyless(self) -> int:
        """STRAT-003: round-robin from ``task % partitions``, so keyless rows reach every partition even
        when fewer tasks than partitions write (one partition per task would leave the rest idle)."""
        partition = self._keyless
        self._keyless = (partition + 1) % self.partitions
        return partition

    def records(self, batches: Iterable[pa.RecordBatch]) -> Iterator[Routed]:
        """The task's rows in order, each with its partition: the ``partition`` column (STRAT-002), else by key."""
        for batch in batches:
            names = batch.schema.names
            keys = batch.column("key").to_pylist() if "key" in names else [None] * batch.num_rows
            targets = batch.column("partition").to_pylist() if "partition" in names else [None] * batch.num_rows
            for raw, value, target in zip(keys, batch.column("value").to_pylist(), targets, strict=True):
                key = _bytes(raw)
                if target is not None:
                    partition = int(target)
                elif key is not None:
                    partition = self.keyed(key)
                else:
                    partition = self.keyless()
                yield partition, key, _bytes(value)


class KafkaStreamWriter(DataSourceStreamArrowWriter):
    """Each task writes and commits its rows; the driver's ``commit`` fences ids a rescale left behind."""

    placement: ClassVar[type[Placement]] = Placement
    """Where a task's rows go; the pipeline mutants swap in a broken one."""

    def __init__(self, options: SinkOptions, schema: StructType) -> None:
        names = set(schema.names)
        if "value" not in names:
            raise OptionError(f"the sink needs a 'value' column (string or binary); the query has {sorted(names)}")
        self._options = options
        self._fenced = False
        """Whether this run fenced its leftovers: none can appear later in the same run."""

    def write(self, iterator: Iterator[pa.RecordBatch]) -> TaskCommit:
        identity = TaskIdentity.current()
        with self._options.connection.client() as kafka:
            partitions = len(kafka.list_topics().get(self._options.topic, ()))
            if partitions == 0:
                raise OptionError(f"option 'topic': topic {self._options.topic!r} does not exist")
            placement = self.placement(identity.task, partitions)
            if self._options.guarantee == AT_LEAST_ONCE:
                producer = kafka.producer()
                written = _produce(producer, self._options.topic, placement.records(iterator))
                producer.flush()
                return TaskCommit(identity, written, skipped=False)
            return _write_transaction(kafka, self._options, identity, iterator, placement)

    def commit(self, messages: Sequence[WriterCommitMessage | None], batchId: int) -> None:
        """Tasks committed their own transactions; what is left is fencing ids of tasks this batch lacks."""
        commits = [m for m in messages if isinstance(m, TaskCommit)]
        if self._options.guarantee == EXACTLY_ONCE and commits and not self._fenced:
            with self._options.connection.client() as kafka:
                fence_leftovers(kafka, self._options.prefix, commits[0].task.query, len(messages))
            self._fenced = True

    def abort(self, messages: Sequence[WriterCommitMessage | None], batchId: int) -> None:
        """A failed task's transaction was never committed; its retry fences and aborts it."""


Routed = tuple[int, bytes | None, bytes | None]
"""(partition, key, value) of one output record."""


def _produce(producer: KafkaProducer, topic: str, records: Iterable[Routed]) -> int:
    written = 0
    for partition, key, value in records:
        producer.produce(topic, partition, key, value)
        written += 1
    return written


def _write_transaction(
    kafka: KafkaClient,
    options: SinkOptions,
    identity: TaskIdentity,
    batches: Iterator[pa.RecordBatch],
    placement: Placement,
) -> TaskCommit:
    """Records and marker ``batch + 1`` in one transaction, unless the marker shows it done (COMMIT-011)."""
    transactional_id = identity.transactional_id(options.prefix)
    producer = kafka.init_producer(transactional_id)  # fences every earlier attempt of this task
    marker_tp = TopicPartition(options.topic, 0)
    marker = kafka.committed(transactional_id, [marker_tp]).get(marker_tp)
    if marker is None:
        kafka.commit_offsets(transactional_id, {marker_tp: 0})  # findable by fence_leftovers from now on
    elif marker > identity.batch:
        for _ in batches:  # Spark feeds the task's input whether or not it is written; no need to decode it
            pass
        return TaskCommit(identity, 0, skipped=True)
    producer.begin_transaction()
    written = _produce(producer, options.topic, placement.records(batches))
    producer.send_offsets_to_transaction(transactional_id, {marker_tp: identity.batch + 1})
    producer.flush()
    producer.commit_transaction()
    return TaskCommit(identity, written, skipped=False)


def fence_leftovers(kafka: KafkaClient, prefix: str, query: str, tasks: int) -> list[str]:
    """Fence and forget the transactional ids of task indices ``>= tasks`` of ``query`` (COMMIT-012).

    Forgetting their markers is safe: every batch those tasks ran is in Spark's commit log by now,
    so none of them is replayed. Returns the ids fenced.
    """
    admin = AdminClient(kafka.config("admin"))
    stem = f"{prefix}-{query}-"
    listed = admin.list_consumer_groups(request_timeout=kafka.timeout_s).result(kafka.timeout_s)
    leftovers = sorted(
        g.group_id
        for g in listed.valid
        if g.group_id.startswith(stem) and g.group_id[len(stem) :].isdigit() and int(g.group_id[len(stem) :]) >= tasks
    )
    for transactional_id in leftovers:
        kafka.init_producer(transactional_id)  # aborts the id's open transaction, fences its producer
    if leftovers:
        for future in admin.delete_consumer_groups(leftovers, request_timeout=kafka.timeout_s).values():
            future.result(kafka.timeout_s)
    return leftovers


def _bytes(value: Any) -> bytes | None:
    if value is None or isinstance(value, bytes):
        return value
    if isinstance(value, bytearray):
        return bytes(value)
    return str(value).encode()
