"""The ``kconform-kafka`` streaming sink: at-least-once, or exactly-once per spec/commit.md's Spark mapping.

librdkafka has no KIP-939, so a transaction can be committed only by the producer that opened
it; the exactly-once sink therefore commits inside each task (COMMIT-011):

- the transactional id is stable per ``(prefix, query id, task index)``, so a new attempt of task
  ``i`` fences the earlier ones (COMMIT-006);
- batch ``b``'s records and a progress marker ``b + 1`` (``send_offsets_to_transaction`` for a
  group of the same name) commit in one transaction;
- a task whose marker is already past ``b`` writes nothing: batch ``b`` committed before (replay);
- a Python worker keeps the producer a task committed with (``producers.WORKER_PRODUCERS``) and a later
  task of the same id takes it back instead of initialising a new one. The marker read and the commit
  must both happen while that producer holds the id's current epoch. So the task reads the marker
  (a stable read, which waits for a transaction of the id still completing), begins, and puts marker
  ``b + 1`` into the transaction before any record: AddOffsetsToTxn carries the producer's epoch, and
  the coordinator refuses it as fenced when another producer initialised the id since (another attempt,
  ``fence_leftovers``). The task then drops the kept producer, initialises a new one (fencing the rest)
  and reads the marker again, with nothing written yet. When the call succeeds, no producer initialised
  the id since this one did, so no transaction of the id could commit after the marker read: the read
  is current. The commit needs the epoch too, so an init after that call fences the task as before.
  A marker other than the one the kept producer left (``b' + 1`` after its batch ``b'``) shows it fenced
  without the call: another producer of the id committed since, or ``fence_leftovers`` fenced the id and
  deleted its group; the task drops it at once (a task that lands in another worker than its id's last).
  The marker goes into a transaction once: a kept producer's at the start, a new producer's only with
  the commit: ``init_transactions`` has just proven that producer's epoch, and a marker pending from the
  start would hold a stable read of the group (a restart's, when nothing fences the transaction) until it ended;
- a task index registers its group (marker 0) before its first transaction, so when a later
  batch runs fewer tasks the driver's ``commit`` finds the ids of the larger earlier parallelism,
  fences them (``init_transactions`` aborts what they left open) and deletes their groups
  (COMMIT-012). This happens at the first batch commit after the rescale, not before its tasks;
- a query restarted under another ``transactionalIdPrefix`` takes over its earlier prefixes' ids
  (COMMIT-017): a task index with no marker under the new prefix fences its ids under the others,
  which aborts what they left open, carries their marker over and deletes their groups; the driver
  fences and deletes the rest at the first batch commit, as for a rescale. A marker group is taken
  for this query's only when its name is exactly ``{prefix}-{query id}-{task}``, so another sink's,
  whose prefix may start with this one's, is never touched (COMMIT-016).

Exactly-once holds under deterministic replay: every replay of batch ``b`` must give task ``i``
the same records (the ``kconform-kafka`` source plans replays from the offset log, so it does).
A row goes to its ``partition`` column if set (STRAT-002), else, with a non-null key, where Java's
producer puts it (murmur2, STRAT-001; librdkafka's default would hash with CRC32), else round-robin
from partition ``task % partitions`` (STRAT-003). All three are deterministic, unlike librdkafka's
choice for null keys, so a replay writes every row where its earlier attempt did; a task may write
to any partition. A task's rows arrive as Arrow record batches and stream into the
producer in their order (COMMIT-013), never buffered whole: while the producer opens (several
broker round trips) the task reads ahead at most ``READ_AHEAD_BYTES``, then memory stays bounded by
librdkafka's queue whatever the batch size.
"""

from __future__ import annotations

import contextlib
import itertools
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import ClassVar, Final

import confluent_kafka as ck
import numpy as np
import numpy.typing as npt
import pyarrow as pa  # type: ignore[import-untyped]
import pyarrow.compute as pc  # type: ignore[import-untyped]
from pyspark import TaskContext
from pyspark.sql.datasource import DataSourceStreamArrowWriter, WriterCommitMessage
from pyspark.sql.types import StructType

from ..kafka_client import KafkaClient, KafkaProducer, KafkaTransactionalProducer
from ..kafka_strategies import MURMUR2_SEED
from ..ports import InvalidPidMappingError, KafkaError, ProducerFencedError
from ..types import TopicPartition
from . import Connection, OptionError
from .producers import COMMIT_CLIENTS, WORKER_PRODUCERS, Kept

AT_LEAST_ONCE: Final = "at-least-once"
EXACTLY_ONCE: Final = "exactly-once"
GUARANTEES: Final = (AT_LEAST_ONCE, EXACTLY_ONCE)
BATCH_ID_PROPERTY: Final = "streaming.sql.batchId"
QUERY_ID_PROPERTY: Final = "sql.streaming.queryId"
DEFAULT_PREFIX: Final = "kconform"
READ_AHEAD_BYTES: Final = 16 << 20
"""At most this much of a task's input is held while its producer opens; after that rows stream."""


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


class MarkerGroups:
    """The progress-marker groups of one query (each named as its transactional id) among a cluster's groups.

    A name is this query's when it is exactly ``{prefix}-{query}-{task}``: Spark's query id is a UUID, so the
    match is exact whatever the prefix holds, and another sink's groups, whose prefix may start with this
    sink's (``job`` and ``job-1``), are never taken for this one's (COMMIT-016)."""

    def __init__(self, prefix: str, query: str) -> None:
        self.prefix = prefix
        self.query = query

    def owner(self, group: str) -> tuple[str, int] | None:
        """The prefix and task index ``group`` names for this query, or ``None`` when it is not this query's."""
        head, _, task = group.rpartition("-")
        prefix = head.removesuffix(f"-{self.query}")
        if not task.isdigit() or prefix == head or not prefix:
            return None
        return prefix, int(task)

    def earlier(self, groups: Iterable[str], task: int) -> list[str]:
        """Task ``task``'s groups under other prefixes: the ids a run under an earlier prefix used (COMMIT-017)."""
        return sorted(g for g in groups if (o := self.owner(g)) is not None and o[1] == task and o[0] != self.prefix)

    def leftovers(self, groups: Iterable[str], tasks: int) -> list[str]:
        """The groups no task of a batch of ``tasks`` tasks uses: task indices ``>= tasks`` under this prefix
        (COMMIT-012) and any under another (COMMIT-017)."""
        return sorted(g for g in groups if (o := self.owner(g)) is not None and (o[0] != self.prefix or o[1] >= tasks))


@dataclass(frozen=True, slots=True)
class TaskCommit(WriterCommitMessage):
    """What a task did: records written, or skipped because its marker showed the batch committed."""

    task: TaskIdentity
    records: int
    skipped: bool


class Placement:
    """Where one task's rows go, in their order (COMMIT-013): deterministic, so every attempt and replay of
    the task writes each row to the same partition and exactly-once holds.

    A record batch is placed at once, with Arrow and NumPy (murmur2 too): per-row Python work here
    would cost as much as producing the row."""

    def __init__(self, task: int, partitions: int) -> None:
        self.partitions = partitions
        self._keyless = task % partitions

    def keyed(self, keys: pa.Array) -> npt.NDArray[np.int64]:
        """STRAT-001: the partitions a Java producer writes ``keys`` (binary, no nulls) to; the empty key is a key."""
        return partitions_for_keys(keys, self.partitions)

    def keyless(self, rows: int) -> npt.NDArray[np.int64]:
        """STRAT-003: round-robin from ``task % partitions``, so keyless rows reach every partition even
        when fewer tasks than partitions write (one partition per task would leave the rest idle)."""
        placed = (self._keyless + np.arange(rows, dtype=np.int64)) % self.partitions
        self._keyless = (self._keyless + rows) % self.partitions
        return placed

    def place(self, batch: pa.RecordBatch) -> list[int]:
        """The partition of each row of ``batch``: its ``partition`` column (STRAT-002), else by key, else keyless."""
        names = batch.schema.names
        free = np.ones(batch.num_rows, dtype=bool)  # rows not placed yet
        placed = np.empty(batch.num_rows, dtype=np.int64)
        if "partition" in names:
            targets = batch.column("partition")
            explicit = _valid(targets)
            placed[explicit] = pc.cast(targets.drop_null(), pa.int64(), safe=False).to_numpy()
            free &= ~explicit
        if "key" in names:
            keys = binary(batch.column("key"))
            keyed = free & _valid(keys)
            if keyed.any():
                placed[keyed] = self.keyed(keys.filter(pa.array(keyed)))
            free &= ~keyed
        placed[free] = self.keyless(int(np.count_nonzero(free)))
        return placed.tolist()  # type: ignore[no-any-return]


_M: Final = np.uint32(0x5BD1E995)
"""murmur2's multiplier; uint32 arrays wrap modulo 2**32 as Java's ``int`` products do."""


def partitions_for_keys(keys: pa.Array, partitions: int) -> npt.NDArray[np.int64]:
    """``partition_for_key`` (Kafka's murmur2, STRAT-001) of every key of a binary array without nulls, on
    whole columns: in Python, murmur2 costs about 10 us per 16 key bytes, several times the key's produce."""
    _, offsets_buffer, data_buffer = keys.buffers()
    width = np.int64 if pa.types.is_large_binary(keys.type) else np.int32
    offsets = np.frombuffer(offsets_buffer, dtype=width)[keys.offset : keys.offset + len(keys) + 1].astype(np.int64)
    data = np.frombuffer(data_buffer, dtype=np.uint8) if data_buffer is not None else np.zeros(0, np.uint8)
    data = np.concatenate([data, np.zeros(4, np.uint8)])  # a short key's tail reads stay in bounds
    starts, lengths = offsets[:-1], np.diff(offsets)
    h = np.uint32(MURMUR2_SEED) ^ lengths.astype(np.uint32)
    blocks = lengths // 4
    for block in range(int(blocks.max(initial=0))):
        rows = np.flatnonzero(blocks > block)
        at = starts[rows] + 4 * block
        k = _byte(data, at, 0) | _byte(data, at, 1) << 8 | _byte(data, at, 2) << 16 | _byte(data, at, 3) << 24
        k *= _M
        k ^= k >> np.uint32(24)
        k *= _M
        h[rows] = (h[rows] * _M) ^ k
    tail, rest = starts + 4 * blocks, lengths % 4
    h ^= np.where(rest == 3, _byte(data, tail, 2) << 16, 0).astype(np.uint32)
    h ^= np.where(rest >= 2, _byte(data, tail, 1) << 8, 0).astype(np.uint32)
    last = rest >= 1
    h[last] = (h[last] ^ _byte(data, tail[last], 0)) * _M
    h ^= h >> np.uint32(13)
    h *= _M
    h ^= h >> np.uint32(15)
    return ((h & np.uint32(0x7FFFFFFF)) % np.uint32(partitions)).astype(np.int64)


def _byte(data: npt.NDArray[np.uint8], at: npt.NDArray[np.int64], byte: int) -> npt.NDArray[np.uint32]:
    """Byte ``byte`` after each of the positions ``at``, widened for murmur2's 32-bit arithmetic."""
    return data[at + byte].astype(np.uint32)


def _valid(column: pa.Array) -> npt.NDArray[np.bool_]:
    return column.is_valid().to_numpy(zero_copy_only=False)  # type: ignore[no-any-return]


def binary(column: pa.Array) -> pa.Array:
    """``column`` as Arrow binary: strings as their UTF-8 bytes, other non-binary types as their ``str()``'s."""
    kind = column.type
    if pa.types.is_binary(kind) or pa.types.is_large_binary(kind):
        return column
    if pa.types.is_string(kind) or pa.types.is_large_string(kind):
        return column.cast(pa.large_binary() if pa.types.is_large_string(kind) else pa.binary())
    return pa.array([_as_bytes(v) for v in column.to_pylist()], pa.binary())


def _as_bytes(value: object) -> bytes | None:
    if value is None or isinstance(value, bytes):
        return value
    return str(value).encode()


def _cells(batch: pa.RecordBatch, name: str) -> list[bytes | None]:
    """The column's values as Python bytes (all ``None`` when the column is absent)."""
    if name not in batch.schema.names:
        return [None] * batch.num_rows
    return binary(batch.column(name)).to_pylist()  # type: ignore[no-any-return]


@dataclass(frozen=True, slots=True)
class Begun:
    """A task's producer with its transaction begun, and whether marker ``batch + 1`` is in it already: a kept
    producer puts it in first, to prove its epoch; a new producer's goes in with the commit."""

    producer: KafkaTransactionalProducer
    marker_in: bool


@dataclass(frozen=True, slots=True)
class TaskTransaction:
    """A task's open transaction under exactly-once, with what ending it needs: the clients closed when the task
    ends (unless kept), the client and producer a committed task keeps, and whose id the transaction is."""

    clients: contextlib.ExitStack[bool | None]
    kafka: KafkaClient
    producer: KafkaTransactionalProducer
    identity: TaskIdentity
    transactional_id: str


class KafkaStreamWriter(DataSourceStreamArrowWriter):
    """Each task writes and commits its rows; the driver's ``commit`` fences ids a rescale left behind."""

    placement: ClassVar[type[Placement]] = Placement
    """Where a task's rows go; the pipeline mutants swap in a broken one."""
    marker_groups: ClassVar[type[MarkerGroups]] = MarkerGroups
    """Which groups are this query's markers; the pipeline mutants swap in a broken one."""

    def __init__(self, options: SinkOptions, schema: StructType) -> None:
        names = set(schema.names)
        if "value" not in names:
            raise OptionError(f"the sink needs a 'value' column (string or binary); the query has {sorted(names)}")
        self._options = options

    def write(self, iterator: Iterator[pa.RecordBatch]) -> TaskCommit:
        identity = TaskIdentity.current()
        topic = self._options.topic
        with contextlib.ExitStack() as clients:
            with ThreadPoolExecutor(max_workers=1, thread_name_prefix="kconform-sink-open") as pool:
                opening = pool.submit(self._open, clients, identity)
                ahead = _read_ahead(iterator, opening.done)
                kafka, opened, placement = opening.result()
            batches = itertools.chain(ahead, iterator)
            if opened is None:
                for _ in batches:  # Spark feeds the task's input whether or not it is written; no need to decode it
                    pass
                return TaskCommit(identity, 0, skipped=True)
            if not isinstance(opened, Begun):  # at-least-once
                written = _produce(opened, topic, placement, batches)
                opened.flush()
                return TaskCommit(identity, written, skipped=False)
            producer = opened.producer  # exactly-once: the marker commits with the rows
            written = _produce(producer, topic, placement, batches)
            task = TaskTransaction(clients, kafka, producer, identity, identity.transactional_id(self._options.prefix))
            if not opened.marker_in:
                producer.send_offsets_to_transaction(
                    task.transactional_id, {TopicPartition(topic, 0): identity.batch + 1}
                )
            producer.flush()
            self._end_transaction(task)
            return TaskCommit(identity, written, skipped=False)

    def _open(
        self, clients: contextlib.ExitStack[bool | None], identity: TaskIdentity
    ) -> tuple[KafkaClient, KafkaProducer | Begun | None, Placement]:
        """What must happen before the first record, from connecting (the client joins ``clients``, closed
        when the task ends unless it committed) to the topic's partitions and the producer; under exactly-once
        its transaction begun, or ``None`` when the batch committed before.

        The admin client connects and reads the topic while the producer connects (and fences): each
        takes several broker round trips, and only the marker's read needs both. Under exactly-once a
        client and producer this worker kept for the id are taken back (see the module docstring)."""
        connection = self._options.connection
        exactly_once = self._options.guarantee == EXACTLY_ONCE
        kept = self._take_kept(identity.transactional_id(self._options.prefix)) if exactly_once else None
        kafka = clients.enter_context(kept.client if kept is not None else connection.new_client())
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="kconform-sink-topic") as pool:
            partitions = pool.submit(self._partitions, kafka)
            try:
                if not exactly_once:
                    opened: KafkaProducer | Begun | None = kafka.producer()
                else:
                    opened = _open_transaction(kafka, self._options, identity, self.marker_groups, kept)
            except KafkaError:
                partitions.result()  # an unreachable broker or a missing topic fails as the option it is
                raise
            return kafka, opened, self.placement(identity.task, partitions.result())

    def _take_kept(self, transactional_id: str) -> Kept | None:
        """The client and producer this worker kept for ``transactional_id`` when its last task here committed, taken
        out (a failed task's is never given back). One of the two steps the pipeline mutants override, with
        ``_end_transaction``, so that each differs from this sink in its bug only."""
        return WORKER_PRODUCERS.take((self._options.connection, transactional_id))

    def _end_transaction(self, task: TaskTransaction) -> None:
        """End the task's transaction, its rows and marker flushed into it: commit, then keep client and producer
        for the id's next task in this worker."""
        task.producer.commit_transaction()
        self._keep(task)

    def _keep(self, task: TaskTransaction) -> None:
        """Keep client and producer (out of the task's clients, which would close them) for the id's next task."""
        task.clients.pop_all()
        kept = Kept(task.kafka, task.producer, task.identity.batch)
        WORKER_PRODUCERS.give_back((self._options.connection, task.transactional_id), kept)

    def _partitions(self, kafka: KafkaClient) -> int:
        """How many partitions the topic has; an unreachable broker or a missing topic is an ``OptionError``."""
        self._options.connection.reach(kafka)
        partitions = len(kafka.list_topics().get(self._options.topic, ()))
        if partitions == 0:
            raise OptionError(f"option 'topic': topic {self._options.topic!r} does not exist")
        return partitions

    def commit(self, messages: Sequence[WriterCommitMessage | None], batchId: int) -> None:
        """Tasks committed their own transactions; what is left is fencing ids of tasks this batch lacks.

        PySpark builds a new writer for every commit (``pyspark/sql/worker/python_streaming_sink_runner.py``,
        v4.2.0), so no commit knows whether an earlier one of the run fenced: each lists the query's groups,
        one request on a client the worker keeps (``producers.COMMIT_CLIENTS``), and finds leftovers only at
        the first commit after a rescale or a prefix change."""
        commits = [m for m in messages if isinstance(m, TaskCommit)]
        if self._options.guarantee == EXACTLY_ONCE and commits:
            connection = self._options.connection
            with COMMIT_CLIENTS.use(connection, connection.new_client) as kafka:  # the tasks reached it: no need to ask
                groups = self.marker_groups(self._options.prefix, commits[0].task.query)
                fence_leftovers(kafka, groups, len(messages))

    def abort(self, messages: Sequence[WriterCommitMessage | None], batchId: int) -> None:
        """A failed task's transaction was never committed; its retry fences and aborts it."""


def _produce(producer: KafkaProducer, topic: str, placement: Placement, batches: Iterable[pa.RecordBatch]) -> int:
    """Queue every row of ``batches`` in order, each where ``placement`` puts it; returns how many."""
    written = 0
    for batch in batches:
        producer.produce_all(topic, placement.place(batch), _cells(batch, "key"), _cells(batch, "value"))
        written += batch.num_rows
    return written


def _open_transaction(
    kafka: KafkaClient,
    options: SinkOptions,
    identity: TaskIdentity,
    marker_groups: type[MarkerGroups],
    kept: Kept | None = None,
) -> Begun | None:
    """The task's producer with its transaction begun, or ``None`` when the marker shows the batch committed
    (COMMIT-011): records and marker ``batch + 1`` then commit in that transaction.

    ``kept``, the producer of the id this worker committed a batch with before, serves if it still holds the id's
    epoch; when it lost it (fenced, its id expired, any fatal error) a new producer is initialised, which
    fences every other, and the marker read again: no record was written yet."""
    if kept is not None:
        try:
            return _begin(kafka, options, identity, marker_groups, kept.producer, kept_batch=kept.batch)
        except KafkaError as error:
            if not _lost_its_epoch(error):
                raise
            kafka.discard(kept.producer)
    producer = kafka.init_producer(identity.transactional_id(options.prefix))  # fences every earlier attempt
    return _begin(kafka, options, identity, marker_groups, producer)


def _begin(
    kafka: KafkaClient,
    options: SinkOptions,
    identity: TaskIdentity,
    marker_groups: type[MarkerGroups],
    producer: KafkaTransactionalProducer,
    kept_batch: int | None = None,
) -> Begun | None:
    """Read the marker; unless it shows the batch committed, begin.

    A kept producer (``kept_batch``, the batch it committed last) is refused as fenced when the marker is not
    the one it left, and otherwise puts marker ``batch + 1`` into the transaction before any record, which
    the coordinator refuses when another producer initialised the id since this one did; it is not sent again.
    A new producer's ``init_transactions`` has just proven its epoch, so its marker goes in only with the
    commit: one pending from the start would hold every stable read of the group (a restart's) until the
    transaction ends."""
    transactional_id = identity.transactional_id(options.prefix)
    marker_tp = TopicPartition(options.topic, 0)
    marker = kafka.committed(transactional_id, [marker_tp]).get(marker_tp)
    if marker is None:  # a new task index, or a new prefix: findable by fence_leftovers from now on
        earlier = marker_groups(options.prefix, identity.query).earlier(kafka.consumer_groups(), identity.task)
        marker = take_over(kafka, earlier, marker_tp)
        kafka.commit_offsets_via_admin(transactional_id, {marker_tp: marker})
        if earlier:
            kafka.delete_consumer_groups(earlier)
    if marker > identity.batch:
        return None
    if kept_batch is not None and marker != kept_batch + 1:
        raise ProducerFencedError(
            f"{transactional_id}: marker {marker}, not {kept_batch + 1} as this worker's producer left it after batch "
            f"{kept_batch}: another producer of the id committed since, or the id was fenced and its group deleted"
        )
    producer.begin_transaction()
    if kept_batch is None:
        return Begun(producer, marker_in=False)
    producer.send_offsets_to_transaction(transactional_id, {marker_tp: identity.batch + 1})
    return Begun(producer, marker_in=True)


def _lost_its_epoch(error: KafkaError) -> bool:
    """Whether a kept producer can never write again: fenced by a newer producer of its id, its id expired
    at the coordinator, or another fatal librdkafka error."""
    if isinstance(error, ProducerFencedError | InvalidPidMappingError):
        return True
    cause = error.__cause__
    return isinstance(cause, ck.KafkaException) and bool(cause.args[0].fatal())


def take_over(kafka: KafkaClient, transactional_ids: Sequence[str], marker_tp: TopicPartition) -> int:
    """Fence ``transactional_ids``, this task's under earlier prefixes, aborting what they left open (COMMIT-017);
    the highest marker they hold (0 without one), which the task's id under its current prefix carries on."""
    for transactional_id in transactional_ids:
        kafka.init_producer(transactional_id)  # aborts the id's open transaction; its marker is final from now on
    markers = (kafka.committed(tid, [marker_tp]).get(marker_tp) for tid in transactional_ids)
    return max((m for m in markers if m is not None), default=0)


def _read_ahead(batches: Iterator[pa.RecordBatch], opened: Callable[[], bool]) -> list[pa.RecordBatch]:
    """The batches Spark delivers while the producer is being opened, up to ``READ_AHEAD_BYTES``: opening
    takes several broker round trips, and Spark's feeding stalls on a full socket while nobody reads."""
    ahead: list[pa.RecordBatch] = []
    held = 0
    while not opened() and held < READ_AHEAD_BYTES:
        batch = next(batches, None)
        if batch is None:
            break
        ahead.append(batch)
        held += batch.nbytes
    return ahead


def fence_leftovers(kafka: KafkaClient, marker_groups: MarkerGroups, tasks: int) -> list[str]:
    """Fence and forget the transactional ids of a batch of ``tasks`` tasks does not use: task indices ``>= tasks``
    of the query (COMMIT-012) and its ids under earlier prefixes (COMMIT-017).

    Forgetting their markers is safe: every batch those ids ran is in Spark's commit log by now, or was
    replayed by this batch's tasks, which carried the markers of their own indices over. Returns the ids fenced.
    """
    leftovers = marker_groups.leftovers(kafka.consumer_groups(), tasks)
    for transactional_id in leftovers:
        kafka.init_producer(transactional_id)  # aborts the id's open transaction, fences its producer
    if leftovers:
        kafka.delete_consumer_groups(leftovers)
    return leftovers
