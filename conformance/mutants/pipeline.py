"""Pipeline-level mutants: the ``kconform-kafka`` Spark source or sink with one known-wrong mechanism.

Each is a pipeline adapter whose data source subclasses the reference one and breaks exactly one
thing a real Spark connector can get wrong, registered (``registry``) by a decorator on the reader or
writer that holds the bug; ``tests/test_mutants.py`` runs the named pipeline scenario against each
and asserts it fails on the mutant's requirement and no other. They live in the package (not the
tests) because Spark's Python workers must import them.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, replace
from typing import Any, Final, TypeVar
from uuid import uuid4

import numpy as np
import numpy.typing as npt
import pyarrow as pa  # type: ignore[import-untyped]
from pyspark import TaskContext
from pyspark.sql.datasource import DataSourceStreamReader, DataSourceStreamWriter, InputPartition, WriterCommitMessage
from pyspark.sql.streaming.datasource import ReadLimit
from pyspark.sql.types import StructType

from ...reference_impl.assignment import assign
from ...reference_impl.discovery import Subscription
from ...reference_impl.kafka_client import KafkaClient, KafkaTransactionalProducer
from ...reference_impl.ports import KafkaError
from ...reference_impl.spark import Connection
from ...reference_impl.spark.data_source import KafkaDataSource
from ...reference_impl.spark.offsets import SourceOffsets
from ...reference_impl.spark.producers import COMMIT_CLIENTS, Kept
from ...reference_impl.spark.sink import (
    EXACTLY_ONCE,
    KafkaStreamWriter,
    MarkerGroups,
    Placement,
    SinkOptions,
    TaskCommit,
    TaskIdentity,
    TaskTransaction,
    _produce,
)
from ...reference_impl.spark.source import KafkaInputPartition, KafkaStreamReader, SourceOptions
from ...reference_impl.types import LATEST, TopicPartition
from ..spark.cluster import STANDALONE
from ..spark.pipeline import KconformKafkaAdapter
from . import registry

R = TypeVar("R", bound=KafkaStreamReader)
READ_UNCOMMITTED: Final = ("isolation.level", "read_uncommitted")
W = TypeVar("W", bound=KafkaStreamWriter)


def _retried() -> bool:
    context = TaskContext.get()
    return context is not None and context.attemptNumber() > 0


@dataclass(frozen=True)
class SparkMutant:
    """A broken pipeline adapter and the requirements its bug breaks."""

    name: str
    kills_on: frozenset[str]
    bug: str
    adapter: KconformKafkaAdapter


@dataclass(frozen=True)
class PipelineMutant(SparkMutant):
    """A broken pipeline adapter, the scenario that must catch it and the requirements it breaks."""

    scenario: str
    """A substring of the suite test's name: the one scenario the mutant is run against."""
    needs: tuple[str, ...] = ()
    """Broker capabilities (``kconform.conformance.brokers.probe``) the scenario needs to show the bug: on a broker
    without them the scenario skips, naming them, and the mutant is not killed there."""
    spark_master: str | None = None
    """The ``--spark-master`` the scenario needs to show the bug (``standalone``: executors on two hosts), or
    ``None`` for any: on another master the scenario skips, naming it."""


@dataclass(frozen=True)
class FaultOnlyMutant(SparkMutant):
    """A broken pipeline adapter whose bug shows only under a broker fault: ``kconform soak`` catches it,
    the pipeline suite's gentler faults (task failures, driver kills) cannot."""

    faults: str
    """The fault kinds (``kconform soak --faults``) that expose it."""


def __getattr__(name: str) -> KconformKafkaAdapter:
    """``--adapter kconform.conformance.mutants.pipeline:<name>``: the adapter of the registered mutant ``name``."""
    return registry.find(name, SparkMutant).adapter


def _source(name: str, reader: type[KafkaStreamReader]) -> type[KafkaDataSource]:
    def stream_reader(self: KafkaDataSource, schema: StructType) -> DataSourceStreamReader:
        return reader(SourceOptions.parse(self.options))

    return type(name, (KafkaDataSource,), {"name": classmethod(lambda cls: name), "streamReader": stream_reader})


def _sink(name: str, writer: type[KafkaStreamWriter]) -> type[KafkaDataSource]:
    def stream_writer(self: KafkaDataSource, schema: StructType, overwrite: bool) -> DataSourceStreamWriter:
        return writer(SinkOptions.parse(self.options), schema)

    return type(name, (KafkaDataSource,), {"name": classmethod(lambda cls: name), "streamWriter": stream_writer})


def reader_mutant(
    name: str, kills_on: set[str], bug: str, *, scenario: str, data_source: str, needs: tuple[str, ...] = ()
) -> Callable[[type[R]], type[R]]:
    """Registers a broken stream reader as the mutant ``name``, run as the source ``data_source`` against
    ``scenario``, failing ``kills_on``."""
    return lambda reader: registry.register(
        reader,
        PipelineMutant(
            name,
            frozenset(kills_on),
            bug,
            KconformKafkaAdapter(data_source=_source(data_source, reader)),
            scenario,
            needs,
        ),
    )


def writer_mutant(
    name: str,
    kills_on: set[str],
    bug: str,
    *,
    scenario: str,
    data_source: str,
    needs: tuple[str, ...] = (),
    spark_master: str | None = None,
) -> Callable[[type[W]], type[W]]:
    """Registers a broken stream writer as the mutant ``name``, run as the sink ``data_source`` against
    ``scenario``, failing ``kills_on``."""
    return lambda writer: registry.register(
        writer,
        PipelineMutant(
            name,
            frozenset(kills_on),
            bug,
            KconformKafkaAdapter(data_source=_sink(data_source, writer)),
            scenario,
            needs,
            spark_master,
        ),
    )


def fault_only_writer_mutant(
    name: str, kills_on: set[str], bug: str, *, faults: str, data_source: str
) -> Callable[[type[W]], type[W]]:
    """Registers a broken stream writer whose bug only the fault kinds ``faults`` expose as the mutant ``name``."""
    return lambda writer: registry.register(
        writer,
        FaultOnlyMutant(
            name, frozenset(kills_on), bug, KconformKafkaAdapter(data_source=_sink(data_source, writer)), faults
        ),
    )


# -- source --------------------------------------------------------------------------------------


@reader_mutant(
    "spark_retry_skips_first_record",
    {"RESTORE-003"},
    "a retried source task starts one record late",
    scenario="injected_task_failures",
    data_source="kc-mutant-retry-skips",
)
class _RetrySkipsReader(KafkaStreamReader):
    """A retried task resumes after the failed attempt's first record instead of at its planned start."""

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        assert isinstance(partition, KafkaInputPartition)
        if _retried() and partition.ranges:
            head, *rest = partition.ranges
            partition = replace(partition, ranges=(replace(head, start=min(head.start + 1, head.until)), *rest))
        yield from super().read(partition)


@reader_mutant(
    "spark_source_fails_on_restart",
    {"LIVE-001"},
    "a query restarted on its checkpoint fails in the source's first planning (as Spark's connector 4.1.1 does on a "
    "batch planned but not committed, SPARK-55271): it cannot restart, and loses nothing",
    scenario="rescale_sequence_continues_every_partition",
    data_source="kc-mutant-fails-on-restart",
)
class _FailsOnRestartReader(KafkaStreamReader):
    """Plans from its initial offset only: a reader that Spark restores from a checkpoint (it never asks that reader
    for an initial offset) fails the first batch it plans, so the restarted query stops with the source's error."""

    def initialOffset(self) -> dict[str, Any]:
        self._fresh = True
        return super().initialOffset()

    def latestOffset(self, start: dict[str, Any], limit: ReadLimit) -> dict[str, Any]:
        if not getattr(self, "_fresh", False):
            raise RuntimeError("metrics of the restored batch: its latest offsets were never fetched (null)")
        return super().latestOffset(start, limit)


@reader_mutant(
    "spark_fixed_list_by_prefix",
    {"DISC-001"},
    "a fixed subscription also reads every topic whose name starts with a listed one",
    scenario="fixed_subscription_reads_exactly_its_listed_topics",
    data_source="kc-mutant-fixed-list-by-prefix",
)
class _FixedListByPrefixReader(KafkaStreamReader):
    """Matches the listed topics as prefixes (a regex built from the list, ``startswith``), not by exact name."""

    def __init__(self, options: SourceOptions) -> None:
        listed = sorted(options.subscription.topics)
        by_prefix = Subscription.regex("(?:" + "|".join(map(re.escape, listed)) + ").*") if listed else None
        super().__init__(replace(options, subscription=by_prefix or options.subscription))


@reader_mutant(
    "spark_fails_on_a_vanished_partition",
    {"LIVE-001"},
    "the source fails the query when a partition it read vanishes from the metadata (a deleted topic)",
    scenario="topic_deleted_under_a_pattern",
    data_source="kc-mutant-fails-on-vanished",
)
class _FailsOnVanishedReader(KafkaStreamReader):
    """Takes a partition missing from the metadata for lost data and fails the query, as Spark's own connector does
    under ``failOnDataLoss`` (its default): a topic retired under a pattern subscription stops every other topic."""

    def _discover(self, previous: SourceOffsets) -> SourceOffsets:
        present = self._options.subscription.select(self._kafka().list_topics())
        if vanished := sorted(str(tp) for tp in previous.offsets.keys() - present):
            raise KafkaError(f"partitions {vanished} are gone from the metadata: some data may have been lost")
        return super()._discover(previous)


@reader_mutant(
    "spark_rediscovery_reports_every_partition",
    {"DISC-003"},
    "a discovery that finds a new partition reports every partition again, each from its earliest offset",
    scenario="each_partition_once_while_partitions_are_added",
    data_source="kc-mutant-reports-every-partition",
)
class _ReReportingReader(KafkaStreamReader):
    """Forgets what it has reported whenever the metadata shows a new partition: every partition of the topic is
    reported as new and starts over at its earliest offset (a discoverer without its set of seen partitions)."""

    def _discover(self, previous: SourceOffsets) -> SourceOffsets:
        found = super()._discover(previous)
        if not found.first:
            return found
        return replace(found, first={tp: self._kafka().earliest_offset(tp) for tp in found.offsets})

    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> Sequence[InputPartition]:
        previous, reported = SourceOffsets.from_json(start), SourceOffsets.from_json(end).first
        kept = {tp: offset for tp, offset in previous.offsets.items() if tp not in reported}
        return super().partitions(replace(previous, offsets=kept).to_json(), end)


@reader_mutant(
    "spark_rotated_plan",
    {"ASSIGN-004", "ASSIGN-006"},
    "Spark task i reads subtask i+1's partitions",
    scenario="each_task_reads_its_reference_partitions",
    data_source="kc-mutant-rotated-plan",
)
class _RotatedPlanReader(KafkaStreamReader):
    """Input partition ``i`` reads subtask ``i + 1``'s partitions: a plan, but not Flink's."""

    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> Sequence[InputPartition]:
        planned = super().partitions(start, end)
        n = len(planned)
        return [KafkaInputPartition(i, planned[(i + 1) % n].ranges) for i in range(n)]  # type: ignore[attr-defined]


@reader_mutant(
    "spark_scale_in_forgets_offsets",
    {"RESTORE-003"},
    "scale-in keeps only the remaining subtasks' offsets (list state, not union state)",
    scenario="rescale_sequence",
    data_source="kc-mutant-scale-in-forgets",
)
class _ScaleInForgetsReader(KafkaStreamReader):
    """Scale-in keeps only the offsets of partitions the remaining subtasks owned before (Flink's
    list-state restore): the others are rediscovered and read again from their earliest offset."""

    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> Sequence[InputPartition]:
        previous, current = SourceOffsets.from_json(start), SourceOffsets.from_json(end)
        before, n = previous.parallelism, current.parallelism
        if before > n:
            kept = {tp: o for tp, o in previous.offsets.items() if assign(tp.topic, tp.partition, before) < n}
            lost = {tp: self._kafka().earliest_offset(tp) for tp in previous.offsets.keys() - kept.keys()}
            start = replace(previous, offsets=kept).to_json()
            end = replace(current, first={**current.first, **lost}).to_json()
        return super().partitions(start, end)


@reader_mutant(
    "spark_rescale_double_read",
    {"RESTORE-002", "RESTORE-003"},
    "after a rescale two tasks of a batch read the same partition (its records twice)",
    scenario="rescale_sequence",
    data_source="kc-mutant-rescale-double-read",
)
class _RescaleDoubleReadReader(KafkaStreamReader):
    """After a rescale the last task also reads the first task's partitions (an off-by-one in the
    new plan): two tasks of one batch read the same partition."""

    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> Sequence[InputPartition]:
        planned = list(super().partitions(start, end))
        if SourceOffsets.from_json(start).parallelism != SourceOffsets.from_json(end).parallelism and len(planned) > 1:
            last, first = planned[-1], planned[0]
            assert isinstance(last, KafkaInputPartition) and isinstance(first, KafkaInputPartition)
            planned[-1] = replace(last, ranges=(*last.ranges, *first.ranges))
        return planned


@reader_mutant(
    "spark_replay_replanned_at_new_parallelism",
    {"COMMIT-011"},
    "a batch replayed after a restart at another parallelism is planned at the new one, not as it first ran",
    scenario="batch_replayed_after_its_tasks_committed",
    data_source="kc-mutant-replay-replanned",
)
class _ReplayReplannedReader(KafkaStreamReader):
    """Plans every batch at the parallelism option, ignoring the one its log entry carries: a batch logged
    before a restart at another parallelism is replayed over other tasks than wrote it, whose progress
    markers no longer describe what they read."""

    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> Sequence[InputPartition]:
        current = SourceOffsets.from_json(end)
        return super().partitions(start, replace(current, parallelism=self._options.parallelism).to_json())


@reader_mutant(
    "spark_new_topic_at_latest",
    {"DISC-005"},
    "a newly matching topic starts at its end",
    scenario="newly_matching_topic",
    data_source="kc-mutant-new-topic-latest",
)
class _NewTopicAtLatestReader(KafkaStreamReader):
    """A newly discovered partition starts at its end, not its first record (before FLINK-32019, on Spark)."""

    def _discover(self, previous: SourceOffsets) -> SourceOffsets:
        found = super()._discover(previous)
        return replace(found, first={tp: found.offsets[tp] for tp in found.first})


@reader_mutant(
    "spark_tasks_read_uncommitted",
    {"RESTORE-013"},
    "the source's tasks read read_uncommitted whatever kafka.isolation.level asks",
    scenario="query_over_transactional_input",
    data_source="kc-mutant-tasks-read-uncommitted",
    needs=("abort_hidden_from_read_committed",),
)
class _TasksReadUncommittedReader(KafkaStreamReader):
    """The driver plans batches to read_committed's end, but the tasks' consumers read read_uncommitted: they
    return the aborted records in the range too."""

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        connection = self._options.connection
        settings = (*((k, v) for k, v in connection.settings if k != "isolation.level"), READ_UNCOMMITTED)
        self._options = replace(self._options, connection=replace(connection, settings=settings))
        yield from super().read(partition)


@reader_mutant(
    "spark_discovery_off_by_default",
    {"DISC-009"},
    "with no discovery option the source discovers once per query run (FLINK-36780)",
    scenario="partitions_added_to_a_subscribed_topic",
    data_source="kc-mutant-discovery-once",
    needs=("create_partitions",),
)
class _DiscoveryOnceReader(KafkaStreamReader):
    """Discovery runs once per query run, as with no interval set before FLINK-36780 (the builder
    wrote -1 for unbounded sources too): partitions added while the query runs are never read."""

    _first_found: frozenset[TopicPartition] | None = None

    def _discover(self, previous: SourceOffsets) -> SourceOffsets:
        found = super()._discover(previous)
        if self._first_found is None:
            self._first_found = frozenset(found.offsets)
        known = self._first_found | previous.offsets.keys()
        return replace(
            found,
            offsets={tp: o for tp, o in found.offsets.items() if tp in known},
            first={tp: o for tp, o in found.first.items() if tp in known},
        )


@reader_mutant(
    "spark_gone_position_reset_to_latest",
    {"RESTORE-015"},
    "a position deleted before it was read resets to the partition's end (auto.offset.reset=latest), silently",
    scenario="a_position_deleted_before_it_was_read",
    data_source="kc-mutant-gone-to-latest",
)
class _GoneToLatestReader(KafkaStreamReader):
    """A range that starts below its partition's log start is dropped from the batch: the source goes on from the
    batch's end, as a consumer with ``auto.offset.reset=latest`` does (Flink's ``KafkaSource`` started at
    ``latest()``, before FLINK-39888), skipping the records that still exist along with the deleted ones."""

    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> Sequence[InputPartition]:
        planned = [p for p in super().partitions(start, end) if isinstance(p, KafkaInputPartition)]
        log_start = {r.tp: self._kafka().earliest_offset(r.tp) for p in planned for r in p.ranges}
        return [replace(p, ranges=tuple(r for r in p.ranges if r.start >= log_start[r.tp])) for p in planned]


@reader_mutant(
    "spark_past_end_reset_to_end",
    {"RESTORE-022"},
    "a position past its partition's end (the topic created again) moves to the new end, silently",
    scenario="a_position_past_the_end_of_a_topic_created_again",
    data_source="kc-mutant-past-end-to-end",
)
class _PastEndToEndReader(KafkaStreamReader):
    """A partition whose end lies below the source's offset is planned from the new end on, as Spark's source does
    with ``failOnDataLoss=false`` (the batch's range is dropped, the next starts at the end) and a consumer with
    ``auto.offset.reset=latest``: the records the new log holds below the end are never read, and nothing fails."""

    def latestOffset(self, start: dict[str, Any], limit: ReadLimit) -> dict[str, Any]:
        previous = SourceOffsets.from_json(start)
        ends = self._ends(set(previous.offsets))
        moved = {tp: end for tp, end in ends.items() if end < previous.offsets[tp]}
        if moved:
            start = replace(previous, offsets={**previous.offsets, **moved}).to_json()
        return super().latestOffset(start, limit)


@reader_mutant(
    "spark_unmapped_partition_at_latest",
    {"RESTORE-017"},
    "a partition left out of the specific startingOffsets starts at its end, silently",
    scenario="a_partition_left_out_of_specific_start_offsets",
    data_source="kc-mutant-unmapped-latest",
)
class _UnmappedAtLatestReader(KafkaStreamReader):
    """Partitions the ``startingOffsets`` JSON leaves out start at LATEST instead of failing the start: what a
    connector whose fallback is its reset strategy does when that strategy is LATEST, unstated."""

    def initialOffset(self) -> dict[str, Any]:
        starting = self._options.starting
        if starting.default is None:
            found = self._options.subscription.select(self._kafka().list_topics())
            specific = {**dict.fromkeys(found, LATEST), **starting.specific}
            self._options = replace(self._options, starting=replace(starting, specific=specific))
        return super().initialOffset()


# -- sink ----------------------------------------------------------------------------------------


@writer_mutant(
    "spark_sink_forgets_marker",
    {"COMMIT-011"},
    "the exactly-once sink writes a replayed batch again",
    scenario="batch_replayed_after_its_tasks_committed",
    data_source="kc-mutant-forgets-marker",
)
class _MarkerForgottenWriter(KafkaStreamWriter):
    """Exactly-once without the progress check: a replayed batch is written and committed again."""

    def write(self, iterator: Iterator[pa.RecordBatch]) -> TaskCommit:
        identity = TaskIdentity.current()
        transactional_id = identity.transactional_id(self._options.prefix)
        with self._options.connection.client() as kafka:
            kafka.commit_offsets(transactional_id, {TopicPartition(self._options.topic, 0): 0})
        return super().write(iterator)


@writer_mutant(
    "spark_sink_retry_drops_rows",
    {"COMMIT-011"},
    "a retried sink task reports success without writing",
    scenario="sink_task_failures",
    data_source="kc-mutant-retry-drops",
)
class _RetryDropsRowsWriter(KafkaStreamWriter):
    """A retried task assumes its failed attempt wrote the rows and reports success without writing."""

    def write(self, iterator: Iterator[pa.RecordBatch]) -> TaskCommit:
        if _retried():
            return TaskCommit(TaskIdentity.current(), sum(b.num_rows for b in iterator), skipped=True)
        return super().write(iterator)


@writer_mutant(
    "spark_sink_reverses_rows",
    {"COMMIT-013"},
    "the sink writes a task's rows in reverse order",
    scenario="sink_task_failures",
    data_source="kc-mutant-reverses",
)
class _ReversingWriter(KafkaStreamWriter):
    """Writes a task's rows last to first: nothing lost or duplicated, per-partition order broken."""

    def write(self, iterator: Iterator[pa.RecordBatch]) -> TaskCommit:
        batches = list(iterator)
        rows = pa.Table.from_batches(batches) if batches else None
        reversed_rows = rows.take(list(range(rows.num_rows - 1, -1, -1))).to_batches() if rows else []
        return super().write(iter(reversed_rows))


class _RenamingClient(KafkaClient):
    """Initialises every transactional producer under another id than the one the sink asks for (``rename``)."""

    def __init__(self, connection: _RenamingConnection) -> None:
        super().__init__(connection.endpoint, timeout_s=connection.timeout_s)
        self._rename = connection.rename

    def init_producer(
        self, transactional_id: str, transaction_timeout_ms: int | None = None
    ) -> KafkaTransactionalProducer:
        return super().init_producer(self._rename(transactional_id), transaction_timeout_ms)


@dataclass(frozen=True, slots=True)
class _RenamingConnection(Connection):
    """The sink's connection, handing out ``_RenamingClient``s; the progress marker's group keeps its name."""

    rename: Callable[[str], str] = str

    @classmethod
    def of(cls, options: SinkOptions, rename: Callable[[str], str]) -> SinkOptions:
        """``options`` with its connection renaming every transactional id."""
        c = options.connection
        return replace(options, connection=cls(c.bootstrap_servers, c.settings, c.timeout_s, rename))

    def new_client(self) -> KafkaClient:
        return _RenamingClient(self)


def _fresh_id(transactional_id: str) -> str:
    return f"{transactional_id}-{uuid4().hex[:8]}"


def _attempt_id(transactional_id: str) -> str:
    context = TaskContext.get()
    return f"{transactional_id}-attempt-{context.attemptNumber() if context is not None else 0}"


@writer_mutant(
    "spark_sink_unfenced_ids",
    {"COMMIT-004"},
    "every producer gets a fresh transactional id: a restart never aborts what a killed driver left open",
    scenario="restart_aborts_the_transactions",
    data_source="kc-mutant-unfenced-ids",
    needs=("zombie_fencing", "last_stable_offset"),
)
class _FreshIdsWriter(KafkaStreamWriter):
    """Each producer gets a fresh transactional id (a random suffix, say to stop overlapping attempts from
    fencing each other), while the progress marker's group keeps its stable name: nothing ever fences
    the transactions an earlier run left open. A killed driver's open transactions then block
    read_committed readers until the broker times them out, and forever on a broker that does not
    (FLINK-23854). Only a broker that fences zombies shows it: on one that does not (Tansu), the
    reference's restart cannot end those transactions either, so the scenario skips there."""

    def __init__(self, options: SinkOptions, schema: StructType) -> None:
        super().__init__(_RenamingConnection.of(options, _fresh_id), schema)


@writer_mutant(
    "spark_sink_id_per_attempt",
    {"COMMIT-006"},
    "the transactional id names the task attempt: a speculative copy never fences the original it overlaps",
    scenario="speculative_copy_of_a_sink_task",
    data_source="kc-mutant-id-per-attempt",
    needs=("zombie_fencing", "last_stable_offset"),
    spark_master=STANDALONE,
)
class _AttemptIdsWriter(KafkaStreamWriter):
    """Each task attempt writes under its own transactional id (the attempt number appended, say so that a retry
    never waits on its predecessor), while the progress marker's group keeps the task's stable name. Two live
    attempts of one task, an original and Spark's speculative copy, then never fence each other: the original's
    transaction survives the copy's commit, holding read_committed readers until the broker times it out, and
    both commit the same rows where the original gets that far."""

    def __init__(self, options: SinkOptions, schema: StructType) -> None:
        super().__init__(_RenamingConnection.of(options, _attempt_id), schema)


@writer_mutant(
    "spark_sink_drops_transaction_timeout",
    {"COMMIT-015"},
    "the sink drops the transaction.timeout.ms it was given and runs on with librdkafka's 60 s",
    scenario="refused_transaction_timeout",
    data_source="kc-mutant-drops-txn-timeout",
)
class _DroppedTimeoutWriter(KafkaStreamWriter):
    """Passes every ``kafka.*`` setting to its producers but ``transaction.timeout.ms``, so they run with
    librdkafka's default (60 s): the broker never refuses a timeout the user asked for and the sink runs
    on, its transactions aborted by the broker at a minute where the user planned for longer."""

    def __init__(self, options: SinkOptions, schema: StructType) -> None:
        connection = options.connection
        kept = tuple((k, v) for k, v in connection.settings if k != "transaction.timeout.ms")
        super().__init__(replace(options, connection=replace(connection, settings=kept)), schema)


@writer_mutant(
    "spark_sink_commit_deferred_to_next_batch",
    {"COMMIT-020"},
    "a task leaves its transaction open for the next batch's task to commit (Flink's commit one checkpoint later), "
    "so the last one before a stop stays open until the broker's timeout",
    scenario="query_stopped_while_its_tasks_write",
    data_source="kc-mutant-deferred-commit",
    needs=("last_stable_offset",),
)
class _DeferredCommitWriter(KafkaStreamWriter):
    """Two-phase commit copied from Flink's writer: a task pre-commits (flushes its rows and the marker into its
    transaction) and parks the producer in its Python worker where the reference keeps a committed one; the next
    batch's task of the same index there commits it when it takes the producer back, before opening its own, as
    Flink commits on the next checkpoint's notification. While the query runs, each batch becomes visible one
    batch late. When it stops, no next batch comes, and librdkafka lets no other producer commit or resume that
    transaction (no KIP-939): it holds read_committed readers back until the broker aborts it at
    ``transaction.timeout.ms``, which is what the reference's commit inside the task avoids."""

    def _take_kept(self, transactional_id: str) -> Kept | None:
        parked = super()._take_kept(transactional_id)
        if parked is not None:
            parked.producer.commit_transaction()  # the previous batch's, before this task reads its marker
        return parked

    def _end_transaction(self, task: TaskTransaction) -> None:
        self._keep(task)  # parked with its transaction open, for the next task


@writer_mutant(
    "spark_sink_timed_out_write_reported_done",
    {"COMMIT-021"},
    "a task whose transaction the broker aborted at its timeout reports its rows written",
    scenario="a_task_slower_than_its_transaction_timeout",
    data_source="kc-mutant-timed-out-write-done",
    needs=("transaction_timeout", "last_stable_offset"),
)
class _TimedOutWriteDoneWriter(KafkaStreamWriter):
    """Takes a task's failed transaction for a written one, as Flink's committer discards a committable whose
    commit the broker fenced after the timeout: the batch then commits in Spark's log without its records."""

    def write(self, iterator: Iterator[pa.RecordBatch]) -> TaskCommit:
        try:
            return super().write(iterator)
        except KafkaError:
            return TaskCommit(TaskIdentity.current(), 0, skipped=False)


@writer_mutant(
    "spark_sink_timeout_unnamed",
    {"COMMIT-026"},
    "a task whose transaction the broker aborted at its timeout fails with the client's bare error",
    scenario="a_task_slower_than_its_transaction_timeout",
    data_source="kc-mutant-timeout-unnamed",
    needs=("transaction_timeout", "last_stable_offset"),
)
class _TimeoutUnnamedWriter(KafkaStreamWriter):
    """Fails with the error librdkafka gave, as the reference did before its client named the timeout: a fenced
    producer, with neither ``transaction.timeout.ms`` nor how long the transaction was open."""

    def write(self, iterator: Iterator[pa.RecordBatch]) -> TaskCommit:
        try:
            return super().write(iterator)
        except KafkaError as error:
            bare = error.__cause__ if isinstance(error.__cause__, KafkaError) else error
            raise type(bare)(str(bare)) from None


@fault_only_writer_mutant(
    "spark_sink_rewrites_timed_out_commit",
    {"COMMIT-011"},
    "a commit that timed out is taken for failed: the batch is written again in a new transaction under a "
    "fresh id while the first commit completes",
    faults="commit-stall",
    data_source="kc-mutant-rewrites-timed-out-commit",
)
class _TimedOutCommitRewritesWriter(KafkaStreamWriter):
    """Takes a commit that timed out for a failed one and writes the batch again in a new transaction,
    under a fresh transactional id (the first producer looks stuck). When the first commit reached the
    broker and only its answer was late (a network stall: ``kconform soak``'s ``commit-stall``) the
    batch is in the output twice; the reference lets the task fail instead, and its retry's
    ``init_transactions`` on the same id finds the commit done (the marker). Without a fault no commit
    times out, so no gentler scenario can tell it from the reference (a ``FaultOnlyMutant``)."""

    _rows: list[pa.RecordBatch]
    """The task's input as it was produced, kept for the rewrite."""

    def write(self, iterator: Iterator[pa.RecordBatch]) -> TaskCommit:
        self._rows = []
        return super().write(_recorded(iterator, self._rows))

    def _end_transaction(self, task: TaskTransaction) -> None:
        try:
            super()._end_transaction(task)
        except KafkaError as error:
            if "TIMED_OUT" not in str(error):
                raise
            group, topic = task.transactional_id, self._options.topic
            rewrite = task.kafka.init_producer(f"{group}-rewrite-{uuid4().hex[:8]}")
            rewrite.begin_transaction()
            _produce(rewrite, topic, self.placement(task.identity.task, self._partitions(task.kafka)), self._rows)
            rewrite.send_offsets_to_transaction(group, {TopicPartition(topic, 0): task.identity.batch + 1})
            rewrite.commit_transaction()


def _recorded(batches: Iterator[pa.RecordBatch], into: list[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """``batches``, each appended to ``into`` as it is read."""
    for batch in batches:
        into.append(batch)
        yield batch


SHADOW_SUFFIX: Final = "-in-txn"
"""Where the marker-after-commit mutant's transactions put their offsets: a group no read of the marker asks."""


class _ShadowMarkerClient(KafkaClient):
    """Sends every transaction's offsets to a shadow group (``SHADOW_SUFFIX``), so they commit with the records but
    are never read as the marker; the marker's group itself is written by the driver's ``commit`` alone."""

    def group_metadata(self, group: str) -> object:
        return super().group_metadata(group + SHADOW_SUFFIX)


@dataclass(frozen=True, slots=True)
class _ShadowMarkerConnection(Connection):
    """The sink's connection, handing out ``_ShadowMarkerClient``s."""

    @classmethod
    def of(cls, options: SinkOptions) -> SinkOptions:
        c = options.connection
        return replace(options, connection=cls(c.bootstrap_servers, c.settings, c.timeout_s))

    def new_client(self) -> KafkaClient:
        return _ShadowMarkerClient(self.endpoint, timeout_s=self.timeout_s)


@writer_mutant(
    "spark_sink_marker_after_commit",
    {"COMMIT-011"},
    "the exactly-once sink's driver commits each task's progress marker after the tasks committed their "
    "transactions: a driver killed between the two leaves a batch's records committed and its marker behind, so "
    "the restarted query writes the batch again",
    scenario="driver_killed_at_drawn_points",
    data_source="kc-mutant-marker-after-commit",
)
class _MarkerAfterCommitWriter(KafkaStreamWriter):
    """Two commits where one must be: each task commits its records in its transaction (its offsets go to a shadow
    group, keeping the reference's fencing of a kept producer), and the driver's ``commit``, once every task is
    done, advances each task's marker to ``batch + 1`` (AlterConsumerGroupOffsets), as a sink that records its
    progress in a driver-side commit does. A replay after the marker moved is skipped as the reference's; one after
    a driver died between a task's commit and its own writes the batch again. Without a kill in that window (from
    the first task's commit to the driver's, tenths of a second of a batch) it is the reference: only a kill drawn
    from the sink's own commits, or a lucky delay, lands there."""

    def __init__(self, options: SinkOptions, schema: StructType) -> None:
        super().__init__(_ShadowMarkerConnection.of(options), schema)

    def commit(self, messages: Sequence[WriterCommitMessage | None], batchId: int) -> None:
        super().commit(messages, batchId)
        done = [m for m in messages if isinstance(m, TaskCommit) and not m.skipped]
        if self._options.guarantee != EXACTLY_ONCE or not done:
            return
        marker_tp = TopicPartition(self._options.topic, 0)
        with COMMIT_CLIENTS.use(self._options.connection, self._options.connection.new_client) as kafka:
            for message in done:
                kafka.commit_offsets_via_admin(
                    message.task.transactional_id(self._options.prefix), {marker_tp: batchId + 1}
                )


class _CurrentPrefixOnly(MarkerGroups):
    """Knows the query's groups under its current prefix only."""

    def owner(self, group: str) -> tuple[str, int] | None:
        found = super().owner(group)
        return found if found is not None and found[0] == self.prefix else None


@writer_mutant(
    "spark_sink_ignores_old_prefix",
    {"COMMIT-017"},
    "restarted under another transactionalIdPrefix, the sink looks for its ids and markers under the new one only",
    scenario="restarted_under_another_prefix",
    data_source="kc-mutant-ignores-old-prefix",
    needs=("zombie_fencing", "last_stable_offset"),
)
class _OldPrefixIgnoredWriter(KafkaStreamWriter):
    """Keeps no earlier prefix (the reference before it judged COMMIT-017 from outside): restarted on a checkpoint
    under another prefix, its tasks fence and probe only the new prefix's ids, so the transactions a killed driver
    left open under the old one hold read_committed readers back until the broker times them out."""

    marker_groups = _CurrentPrefixOnly


class _GroupsByPrefix(MarkerGroups):
    """Takes every group whose name starts with its prefix for its query's, as a listing abort by ``startswith``."""

    def leftovers(self, groups: Iterable[str], tasks: int) -> list[str]:
        current = {f"{self.prefix}-{self.query}-{task}" for task in range(tasks)}
        return sorted(g for g in groups if g.startswith(self.prefix) and g not in current)


@writer_mutant(
    "spark_sink_fences_by_prefix",
    {"COMMIT-016"},
    "the driver fences, as its own leftovers, every marker group whose name starts with its prefix",
    scenario="restarted_beside_a_killed_one",
    data_source="kc-mutant-fences-by-prefix",
    needs=("zombie_fencing", "last_stable_offset"),
)
class _FencesByPrefixWriter(KafkaStreamWriter):
    """Finds its leftover ids by string prefix, as Flink's listing abort under POOLING naming does (``startsWith``
    one of its prefixes): another query's sink whose prefix starts with this one's (``job``, ``job-1``) has its
    ids fenced and its groups deleted, so the transactions it holds open are aborted from outside."""

    marker_groups = _GroupsByPrefix


UNASSIGNED: Final = -1
"""librdkafka's ``RD_KAFKA_PARTITION_UA``: a record produced without a partition, for the partitioner to place."""


class _UnplacedKeys(Placement):
    """Keyed rows carry no partition: the producer's partitioner places them."""

    def keyed(self, keys: pa.Array) -> npt.NDArray[np.int64]:
        return np.full(len(keys), UNASSIGNED, dtype=np.int64)


@writer_mutant(
    "spark_sink_librdkafka_partitioner",
    {"STRAT-001"},
    "keyed rows left to librdkafka's default partitioner (consistent_random: CRC32, not Java's murmur2)",
    scenario="keyed_rows_land_where_javas_producer_puts_them",
    data_source="kc-mutant-librdkafka-partitioner",
)
class _LibrdkafkaPartitionerWriter(KafkaStreamWriter):
    """Keyed rows left to librdkafka's default partitioner, ``consistent_random``: CRC32 of the key, not
    Java's murmur2, so keys land away from where every JVM producer puts them (a Python sink on
    confluent-kafka's defaults). Explicit partitions and keyless rows are placed as the reference does."""

    placement = _UnplacedKeys

    def __init__(self, options: SinkOptions, schema: StructType) -> None:
        connection = options.connection
        settings = tuple(sorted({**dict(connection.settings), "partitioner": "consistent_random"}.items()))
        super().__init__(replace(options, connection=replace(connection, settings=settings)), schema)
