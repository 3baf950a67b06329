"""The ``kconform-kafka`` streaming source: Flink's Kafka source semantics on micro-batches.

The driver discovers partitions on every trigger (``latestOffset``) with the reference
``Subscription`` and plans each batch as exactly ``parallelism`` input partitions with the
reference assigner, so Spark task ``i`` reads what Flink subtask ``i`` would (ASSIGN-001). The
offsets JSON (``kconform.reference_impl.spark.offsets``) plays the union list state: it only grows, never
moves an offset backwards, and carries the parallelism a batch was planned with, so a replayed
batch is planned as it first was and a new parallelism starts at the next batch (rescale).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Final
from uuid import uuid4

import confluent_kafka as ck
import pyarrow as pa  # type: ignore[import-untyped]
from pyspark.sql.datasource import DataSourceStreamReader, InputPartition
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.streaming.datasource import ReadLimit, ReadMaxRows, SupportsTriggerAvailableNow
from pyspark.sql.types import (
    BinaryType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from ..assignment import plan
from ..discovery import Subscription
from ..kafka_client import KafkaClient, configure, translate
from ..ports import KafkaError, TopicGoneError
from ..types import TopicPartition
from . import Connection, OptionError, positive_int
from .offsets import SourceOffsets
from .starting import OPTION as STARTING_OPTION
from .starting import StartingOffsets, StartingOffsetsError

SCHEMA: Final = StructType(
    [
        StructField("topic", StringType(), False),
        StructField("partition", IntegerType(), False),
        StructField("offset", LongType(), False),
        StructField("key", BinaryType()),
        StructField("value", BinaryType()),
        StructField("timestamp", TimestampType()),
    ]
)
"""Built from types, not DDL: parsing DDL needs a SparkSession, which worker processes lack."""
ARROW_SCHEMA: Final = to_arrow_schema(SCHEMA, timezone="UTC")
ARROW_BATCH_ROWS: Final = 10_000


@dataclass(frozen=True, slots=True)
class SourceOptions:
    """The source's options, checked before anything connects (each error names its option)."""

    connection: Connection
    subscription: Subscription
    parallelism: int
    starting: StartingOffsets
    max_records: int | None

    @classmethod
    def parse(cls, options: Mapping[str, str]) -> SourceOptions:
        topics, pattern = options.get("subscribe"), options.get("subscribePattern")
        if (topics is None) == (pattern is None):
            raise OptionError("option 'subscribe' (comma list) or 'subscribePattern' is required, not both")
        if topics is not None:
            names = [t.strip() for t in topics.split(",") if t.strip()]
            if not names:
                raise OptionError(f"option 'subscribe' names no topic: {topics!r}")
            subscription = Subscription.fixed(names)
        else:
            assert pattern is not None
            try:
                subscription = Subscription.regex(pattern)
            except ValueError as error:
                raise OptionError(f"option 'subscribePattern': {error}") from None
        try:
            starting = StartingOffsets.parse(options.get(STARTING_OPTION, "latest"))
        except StartingOffsetsError as error:
            raise OptionError(str(error)) from None
        max_records = positive_int(options, "maxRecordsPerTrigger", 0) or None
        return cls(
            Connection.parse(options), subscription, positive_int(options, "parallelism", 1), starting, max_records
        )


@dataclass(frozen=True, slots=True)
class OffsetRange:
    """Records ``[start, until)`` of one partition."""

    tp: TopicPartition
    start: int
    until: int


@dataclass(frozen=True, slots=True)
class KafkaInputPartition(InputPartition):
    """Input partition ``subtask`` of a batch: the ranges of the partitions the assigner gives it."""

    subtask: int
    ranges: tuple[OffsetRange, ...]


class KafkaStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """Driver side: discovery and planning; executor side: ``read`` of one input partition."""

    def __init__(self, options: SourceOptions) -> None:
        self._options = options
        self._client: KafkaClient | None = None
        self._available_now: Mapping[TopicPartition, int] | None = None

    def __getstate__(self) -> dict[str, Any]:
        """Executors get the options only: a client never crosses processes."""
        return {"_options": self._options, "_client": None, "_available_now": None}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)

    def _kafka(self) -> KafkaClient:
        if self._client is None:
            self._client = self._options.connection.client()
        return self._client

    def stop(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None

    # -- driver: discovery and planning -----------------------------------------------------

    def initialOffset(self) -> dict[str, Any]:
        """A fresh query: the partitions found now at ``startingOffsets``; fixed topics must exist."""
        metadata = self._kafka().list_topics()
        subscription = self._options.subscription
        missing = sorted(t for t in subscription.topics if t not in metadata)
        if missing:
            raise OptionError(f"option 'subscribe': unknown topic(s) {missing}")
        found = subscription.select(metadata)
        ends = self._ends(found)
        try:
            offsets = self._options.starting.resolve(found, self._kafka().earliest_offset, ends.__getitem__)
        except StartingOffsetsError as error:
            raise OptionError(str(error)) from None
        return SourceOffsets(self._options.parallelism, offsets).to_json()

    def _ends(self, partitions: set[TopicPartition]) -> dict[TopicPartition, int]:
        """Each partition's end; one whose topic was deleted since the listing is left out, as absent from this
        view (its offset kept, RESTORE-006; never a failure of the query, DISC-008)."""
        isolation = self._options.connection.isolation
        ends = {}
        for tp in partitions:
            with contextlib.suppress(TopicGoneError):
                ends[tp] = self._kafka().latest_offset(tp, isolation)
        return ends

    def _discover(self, previous: SourceOffsets) -> SourceOffsets:
        """Every subscribed partition at its end; new ones start at their real earliest offset (DISC-005).

        Partitions absent from this metadata view keep their offsets (RESTORE-006); offsets only
        move forward (RESTORE-003). A partition whose end lies below its offset (its topic deleted and created
        again, or its log truncated) fails the trigger, ``PositionPastEnd`` (RESTORE-022): an end never moves back
        on a log that kept its records, so going on would skip what the new log holds below the offset.
        """
        subscribed = self._options.subscription.select(self._kafka().list_topics())
        first = {tp: self._kafka().earliest_offset(tp) for tp in subscribed - previous.offsets.keys()}
        known = {**previous.offsets, **first}
        found = self._ends(subscribed)
        past = [tp for tp, end in found.items() if end < known[tp]]
        for _ in range(PAST_END_ASKS - 1):
            if not past:
                break
            time.sleep(PAST_END_ASK_INTERVAL_S)  # the broker asked again after a pause, a bounded count of times
            again = self._ends(set(past))
            found = {tp: end for tp, end in found.items() if tp not in past} | again
            past = [tp for tp in past if tp in again and again[tp] < known[tp]]
        if past:
            raise position_past_end({tp: (known[tp], found[tp]) for tp in past})
        return SourceOffsets(self._options.parallelism, {**known, **found}, first)

    def prepareForTriggerAvailableNow(self) -> None:
        """``availableNow`` reads up to what exists now; partitions found later wait for the next run."""
        subscribed = self._options.subscription.select(self._kafka().list_topics())
        self._available_now = self._ends(subscribed)

    def latestOffset(self, start: dict[str, Any], limit: ReadLimit) -> dict[str, Any]:
        previous = SourceOffsets.from_json(start)
        latest = self._discover(previous)
        if self._available_now is not None:
            cap = self._available_now
            latest = replace(
                latest,
                offsets={
                    tp: min(o, max(cap.get(tp, 0), latest.start_of(tp, previous))) for tp, o in latest.offsets.items()
                },
            )
        if isinstance(limit, ReadMaxRows):
            latest = limit_rows(previous, latest, limit.max_rows)
        if latest.same_progress(previous):
            return start  # the same text, or Spark logs an empty batch on every trigger
        return latest.to_json()

    def getDefaultReadLimit(self) -> ReadLimit:
        if self._options.max_records is None:
            return super().getDefaultReadLimit()
        return ReadMaxRows(self._options.max_records)

    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> Sequence[InputPartition]:
        """Exactly ``parallelism`` input partitions, planned from the log entry alone (replay-safe)."""
        previous, current = SourceOffsets.from_json(start), SourceOffsets.from_json(end)
        by_subtask = plan(current.offsets, current.parallelism).by_subtask
        return [
            KafkaInputPartition(i, tuple(r for r in _ranges(tps, previous, current) if r.until > r.start))
            for i, tps in enumerate(by_subtask)
        ]

    def commit(self, end: dict[str, Any]) -> None:
        """Nothing to do: progress lives in Spark's offset and commit logs."""

    # -- executor: reading -------------------------------------------------------------------

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        assert isinstance(partition, KafkaInputPartition)
        if partition.ranges:
            yield from read_ranges(self._options.connection, partition.ranges)


def _ranges(tps: Sequence[TopicPartition], previous: SourceOffsets, current: SourceOffsets) -> Iterator[OffsetRange]:
    for tp in tps:
        yield OffsetRange(tp, current.start_of(tp, previous), current.offsets[tp])


def limit_rows(previous: SourceOffsets, latest: SourceOffsets, max_rows: int) -> SourceOffsets:
    """Cap a batch at exactly ``max_rows`` records, shared in proportion to each partition's backlog.

    Largest remainders get the rows that flooring leaves over, so a partition whose backlog grows
    while others are served is served next: no partition starves under a small limit.
    """
    available = {tp: end - latest.start_of(tp, previous) for tp, end in latest.offsets.items()}
    total = sum(available.values())
    if total <= max_rows:
        return latest
    shares = {tp: count * max_rows // total for tp, count in available.items()}
    left_over = max_rows - sum(shares.values())
    for tp in sorted(available, key=lambda tp: (-(available[tp] * max_rows % total), tp))[:left_over]:
        shares[tp] += 1
    return replace(latest, offsets={tp: latest.start_of(tp, previous) + share for tp, share in shares.items()})


NO_RESET: Final = {"auto.offset.reset": "error"}
"""A planned offset that is gone fails the read instead of silently jumping (RESTORE-003, RESTORE-015)."""
POSITION_GONE: Final = frozenset({ck.KafkaError.OFFSET_OUT_OF_RANGE, ck.KafkaError._AUTO_OFFSET_RESET})
"""What librdkafka reports, with no reset policy, for a position the partition's log no longer holds."""


class PositionGone(KafkaError):
    """A range starts below its partition's log start: retention or DeleteRecords removed records never read."""


def position_gone(tp: TopicPartition, position: int, log_start: int) -> PositionGone:
    """The failure that names what was lost (RESTORE-015): the partition, the position and the log start."""
    return PositionGone(
        f"{tp}: position {position} is below the partition's log start {log_start}: records [{position}, "
        f"{log_start}) were deleted (retention or DeleteRecords) before this source read them, so it fails instead "
        "of skipping them; to go on from the log start, restart the query with a new checkpoint at startingOffsets "
        "earliest, knowing those records are lost"
    )


PAST_END_ASKS: Final = 3
PAST_END_ASK_INTERVAL_S: Final = 1.0
"""How often, and how far apart, an end below the source's position is asked for before the trigger fails: a leader
that just moved may answer ListOffsets with an end that lags (KAFKA-7703), which Spark's source asks again for as
often (``fetchOffset.numRetries`` 3, ``fetchOffset.retryIntervalMs`` 1000)."""


class PositionPastEnd(KafkaError):
    """A partition's end lies below the source's position: its topic was deleted and created again, or its log
    truncated, since the position was taken."""


def position_past_end(past: Mapping[TopicPartition, tuple[int, int]]) -> PositionPastEnd:
    """The failure that names what happened (RESTORE-022, RESTORE-023): each partition, its position and its end."""
    each = "; ".join(f"{tp}: position {position}, end {end}" for tp, (position, end) in sorted(past.items()))
    return PositionPastEnd(
        f"positions past their partition's end ({each}): the topic was deleted and created again, or its log "
        "truncated, since this source read there, so it fails instead of skipping the records the log now holds "
        "below those positions; to read the partition anew, restart the query with a new checkpoint"
    )


def read_ranges(connection: Connection, ranges: Sequence[OffsetRange]) -> Iterator[pa.RecordBatch]:
    """Read every range with one consumer, as Arrow batches; bounded by the no-progress timeout.

    A range is complete when the consumer's position reaches ``until``: the position, not the
    offset of the last record, because control markers (and, under read_committed, aborted
    records) take offsets that are never returned. The consumer reads at the isolation the driver
    planned the range with (``Connection.isolation``), set explicitly: librdkafka's own default is
    read_committed, the option's is read_uncommitted (RESTORE-013).
    """
    consumer = ck.Consumer(
        configure(
            connection.endpoint,
            "consumer",
            **{
                "group.id": f"kconform-source-{uuid4().hex}",
                **NO_RESET,
                "isolation.level": connection.isolation.value,
            },
        )
    )
    pending = {(r.tp.topic, r.tp.partition): r for r in ranges}
    position = {key: r.start for key, r in pending.items()}
    consumer.assign([ck.TopicPartition(r.tp.topic, r.tp.partition, r.start) for r in ranges])
    columns: list[list[Any]] = [[] for _ in ARROW_SCHEMA]
    last_progress = time.monotonic()
    try:
        while pending:
            for message in consumer.consume(ARROW_BATCH_ROWS, timeout=0.2):
                key = (message.topic() or "", message.partition() or 0)  # set on every consumed event
                entry = pending.get(key)
                error = message.error()
                if error is not None and entry is not None and error.code() in POSITION_GONE:
                    low, high = consumer.get_watermark_offsets(ck.TopicPartition(*key), timeout=connection.timeout_s)
                    if low > position[key]:
                        raise position_gone(entry.tp, position[key], low)
                    raise translate(error, f"read {entry.tp} at {position[key]}, outside its log [{low}, {high})")
                if error is not None and error.code() != ck.KafkaError._PARTITION_EOF:
                    raise translate(error, f"read {entry.tp if entry else key}")
                if entry is None:
                    continue
                offset = message.offset() or 0
                if error is None and offset < entry.until:
                    _append(columns, message, offset)
                reached = offset if error is not None else offset + 1
                if reached > position[key]:
                    position[key] = reached
                    last_progress = time.monotonic()
                if position[key] >= entry.until:
                    del pending[key]
                    consumer.pause([ck.TopicPartition(*key)])
            if len(columns[0]) >= ARROW_BATCH_ROWS:
                yield _batch(columns)
            if pending and time.monotonic() - last_progress > connection.timeout_s:
                stuck = ", ".join(
                    f"{r.tp} at {position[k]} of [{r.start}, {r.until})" for k, r in sorted(pending.items())
                )
                raise KafkaError(
                    f"no progress for {connection.timeout_s} s reading {stuck}; records in the planned range are "
                    "not fetchable (an open transaction under read_committed, or a broker reporting a wrong end offset)"
                )
        if columns[0]:
            yield _batch(columns)
    finally:
        consumer.close()


def _append(columns: list[list[Any]], message: ck.Message, offset: int) -> None:
    kind, millis = message.timestamp()
    values = (
        message.topic(),
        message.partition(),
        offset,
        message.key(),
        message.value(),
        None if kind == ck.TIMESTAMP_NOT_AVAILABLE else millis * 1000,
    )
    for column, value in zip(columns, values, strict=True):
        column.append(value)


def _batch(columns: list[list[Any]]) -> pa.RecordBatch:
    arrays = [pa.array(column, type=field.type) for column, field in zip(columns, ARROW_SCHEMA, strict=True)]
    for column in columns:
        column.clear()
    return pa.RecordBatch.from_arrays(arrays, schema=ARROW_SCHEMA)
