"""The mutant catalogue: broken adapters, each reproducing a real bug class, that the suite must kill.

Each mutant is the reference adapter with exactly one mechanism replaced by a known-wrong one.
``MUTANTS`` names the requirement whose failure proves the kill; ``make test`` runs the suite
against every mutant and asserts that requirement fails (``tests/test_mutants.py``), and
``make bench`` reports the time to kill each. Load one with
``kconform run --adapter kconform.conformance.mutants.protocol:<name>``.
"""

from __future__ import annotations

import contextlib
import re
import zlib
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from ...reference_impl.adapter import ReferenceAdapter
from ...reference_impl.assignment import Owner, java_string_hash, owner
from ...reference_impl.commit import ExactlyOnceSink, NamingStrategy, SinkCheckpoint
from ...reference_impl.configs import DiscovererConfig, RecoveryConfig, RestoreConfig, SinkConfig, SourceConfig
from ...reference_impl.discovery import Metadata, PartitionDiscoverer, Subscription, ZeroPartitionsPolicy
from ...reference_impl.kafka_model import KafkaModel
from ...reference_impl.kafka_strategies import (
    Assignment,
    Group,
    KafkaPartitioner,
    StickyPartitioner,
    range_assign,
    sticky_assign,
)
from ...reference_impl.ports import (
    InvalidPidMappingError,
    Isolation,
    LogReader,
    OffsetStore,
    ProducerFencedError,
    Record,
    TransactionalLog,
    TransactionalProducer,
)
from ...reference_impl.restore import (
    RestoreVariant,
    SourceCheckpoint,
    SourceJob,
    next_offsets,
    redistribute_splits,
)
from ...reference_impl.types import EARLIEST, LATEST, SubtaskIndex, TopicPartition, is_sentinel


@dataclass(frozen=True)
class Mutant:
    """A broken adapter and the requirement whose failure shows the suite caught it."""

    name: str
    kills_on: frozenset[str]
    """The requirements this bug breaks: the suite must fail on one of them and on no other."""
    bug: str
    adapter: ReferenceAdapter


# -- assignment ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class PythonModNoMask(ReferenceAdapter):
    """Start index as ``(hash * 31) % n`` in Python: always in range, but not Flink's owner."""

    def assign(self, topic: str, partition: int, parallelism: int) -> int:
        return ((java_string_hash(topic) * 31) % parallelism + partition) % parallelism


@dataclass(frozen=True)
class JavaRemainderNoMask(ReferenceAdapter):
    """Start index as Java's ``%`` of the wrapped int without ``& 0x7FFFFFFF``: negative owners."""

    def assign(self, topic: str, partition: int, parallelism: int) -> int:
        product = (java_string_hash(topic) * 31) & 0xFFFFFFFF
        signed = product - (1 << 32) if product & 0x80000000 else product
        start = abs(signed) % parallelism * (1 if signed >= 0 else -1)
        remainder = start + partition
        return abs(remainder) % parallelism * (1 if remainder >= 0 else -1)


class _PositionalDiscoverer(PartitionDiscoverer):
    """FLINK-7143: ownership by position in the fetched list, so it follows metadata order."""

    def discover(self, metadata: Metadata) -> list[TopicPartition]:
        listed = [TopicPartition(t, p) for t, ids in metadata.items() if self.subscription.matches(t) for p in ids]
        mine = [tp for i, tp in enumerate(listed) if i % self.parallelism == self.subtask and tp not in self.seen]
        self.seen.add(listed)
        return mine


@dataclass(frozen=True)
class OrderDependentAssignment(ReferenceAdapter):
    def discoverer(self, config: DiscovererConfig) -> PartitionDiscoverer:
        return _PositionalDiscoverer(
            config.subscription, SubtaskIndex(config.subtask), config.parallelism, config.on_zero
        )


@dataclass(frozen=True)
class RangePlanner(ReferenceAdapter):
    """Kafka's range assignor as the plan: each topic's sorted partitions in contiguous chunks.

    Safe (one owner, even within a topic) but not Flink's formula, and its owners move when a
    topic grows; only an adapter's whole-list ``plan`` can express it.
    """

    capabilities: frozenset[str] = ReferenceAdapter.capabilities | {"assignment-plan"}

    def plan(self, partitions: Sequence[TopicPartition], parallelism: int) -> dict[TopicPartition, int]:
        by_topic: dict[str, list[TopicPartition]] = {}
        for tp in sorted(partitions):
            by_topic.setdefault(tp.topic, []).append(tp)
        return {tp: i * parallelism // len(tps) for tps in by_topic.values() for i, tp in enumerate(tps)}


class _OverlappingRangeDiscoverer(PartitionDiscoverer):
    """Range assignment decided by each subtask alone, its upper bound inclusive: the first partition of
    the next subtask's range is claimed by both (a rounding bug of hand-written range assigners)."""

    def discover(self, metadata: Metadata) -> list[TopicPartition]:
        new = self.seen.remember_new(self.subscription, metadata, self.on_zero)
        n, i = self.parallelism, self.subtask
        mine = []
        for tp in new:
            size = max(metadata[tp.topic]) + 1
            if i * size // n <= tp.partition <= (i + 1) * size // n:
                mine.append(tp)
        return mine


@dataclass(frozen=True)
class OverlappingRangeDiscoverers(ReferenceAdapter):
    def discoverer(self, config: DiscovererConfig) -> PartitionDiscoverer:
        return _OverlappingRangeDiscoverer(
            config.subscription, SubtaskIndex(config.subtask), config.parallelism, config.on_zero
        )


# -- discovery -----------------------------------------------------------------------------------


class _ForgetfulDiscoverer(PartitionDiscoverer):
    """Reports every owned partition on every call instead of only new ones."""

    def discover(self, metadata: Metadata) -> list[TopicPartition]:
        self.seen.clear()
        return super().discover(metadata)


@dataclass(frozen=True)
class RereportingDiscovery(ReferenceAdapter):
    def discoverer(self, config: DiscovererConfig) -> PartitionDiscoverer:
        return _ForgetfulDiscoverer(
            config.subscription, SubtaskIndex(config.subtask), config.parallelism, config.on_zero
        )


class _ViewBoundDiscoverer(PartitionDiscoverer):
    """Known partitions pruned to the current view: one a view lacks (a restarting broker, a deleted
    topic) is forgotten, and reported again, to be read from EARLIEST, if it comes back."""

    def discover(self, metadata: Metadata) -> list[TopicPartition]:
        kept = [tp for tp in self.seen if tp.partition in metadata.get(tp.topic, ())]
        self.seen.clear()
        self.seen.add(kept)
        return super().discover(metadata)


@dataclass(frozen=True)
class ViewBoundDiscovery(ReferenceAdapter):
    def discoverer(self, config: DiscovererConfig) -> PartitionDiscoverer:
        return _ViewBoundDiscoverer(
            config.subscription, SubtaskIndex(config.subtask), config.parallelism, config.on_zero
        )


class _PrefixMatchDiscoverer(PartitionDiscoverer):
    """``re.match`` instead of a full match: ``orders`` also subscribes ``orders-dlq``."""

    def discover(self, metadata: Metadata) -> list[TopicPartition]:
        pattern = self.subscription.pattern
        if pattern is None:
            return super().discover(metadata)
        new = {TopicPartition(t, p) for t, ids in metadata.items() if pattern.match(t) for p in ids}
        new = {tp for tp in new if tp not in self.seen}
        self.seen.add(new)
        return sorted(tp for tp in new if owner(tp, self.parallelism) == self.subtask)


@dataclass(frozen=True)
class PatternPrefixMatch(ReferenceAdapter):
    def discoverer(self, config: DiscovererConfig) -> PartitionDiscoverer:
        return _PrefixMatchDiscoverer(
            config.subscription, SubtaskIndex(config.subtask), config.parallelism, config.on_zero
        )


class _LatestForNewJob(SourceJob):
    """Before FLINK-32019: partitions discovered while running start at LATEST."""

    def discover(self, metadata: Metadata, reader: LogReader) -> dict[TopicPartition, SubtaskIndex]:
        first = not self._discovered_once
        new = super().discover(metadata, reader)
        if not first:
            for tp, subtask in new.items():
                self.offsets[subtask][tp] = LATEST
        return new


@dataclass(frozen=True)
class NewPartitionsAtLatest(ReferenceAdapter):
    def source(self, config: SourceConfig) -> SourceJob:
        return _LatestForNewJob(
            config.subscription,
            config.parallelism,
            self.restore_variant,
            config.keep_unsubscribed,
            self.discovery_of_zero,
            config.initial_offset,
        )


# -- restore -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class EvenSplitRestore(ReferenceAdapter):
    """``getListState`` instead of ``getUnionListState``: each subtask sees a chunk and keeps what it owns."""

    def restore_source(self, config: RestoreConfig) -> SourceJob:
        checkpoint, parallelism, subscription = config.checkpoint, config.parallelism, config.subscription
        keep = config.keep_unsubscribed
        job = SourceJob(subscription, parallelism, self.restore_variant, keep, self.discovery_of_zero)
        job._discovered_once = True
        for i, chunk in enumerate(redistribute_splits(checkpoint.by_subtask, parallelism)):
            job.offsets[i] = {
                tp: off for tp, off in chunk if owner(tp, parallelism) == i and (keep or subscription.matches(tp.topic))
            }
            job._discoverers[i].seen.add(tp for tp, _ in chunk)
        for tp, subtask in job._discover_new(config.metadata).items():
            job.offsets[subtask].setdefault(tp, EARLIEST)
        return job


@dataclass(frozen=True)
class PartialViewFilter(ReferenceAdapter):
    """FLINK-6006/7195: restored state filtered against the partitions the metadata lists now."""

    def restore_source(self, config: RestoreConfig) -> SourceJob:
        listed = {(t, p) for t, ids in config.metadata.items() for p in ids}
        kept = tuple(
            tuple(e for e in entries if (e[0].topic, e[0].partition) in listed)
            for entries in config.checkpoint.by_subtask
        )
        kept_checkpoint = replace(config.checkpoint, by_subtask=kept)
        return super().restore_source(replace(config, checkpoint=kept_checkpoint))


@dataclass(frozen=True)
class RestoredOffsetBackwards(ReferenceAdapter):
    """Treats the stored next offset as the last emitted one minus one: re-reads a record per partition."""

    def restore_source(self, config: RestoreConfig) -> SourceJob:
        moved = tuple(
            tuple((tp, off - 1 if off > 0 else off) for tp, off in entries) for entries in config.checkpoint.by_subtask
        )
        moved_checkpoint = replace(config.checkpoint, by_subtask=moved)
        return super().restore_source(replace(config, checkpoint=moved_checkpoint))


class _EagerOffsetCommitJob(SourceJob):
    """Commits the current position on notification, not checkpoint N's offsets."""

    def notify_checkpoint_complete(self, checkpoint_id: int, store: Any, group: str) -> None:
        current = {tp: off for o in self.offsets for tp, off in o.items() if off >= 0}
        if current:
            store.commit_offsets(group, current)


@dataclass(frozen=True)
class OffsetsCommittedFromCurrentPosition(ReferenceAdapter):
    def source(self, config: SourceConfig) -> SourceJob:
        return _EagerOffsetCommitJob(
            config.subscription,
            config.parallelism,
            self.restore_variant,
            config.keep_unsubscribed,
            self.discovery_of_zero,
            config.initial_offset,
        )


# -- commit --------------------------------------------------------------------------------------


class _CommitAtBarrierSink(ExactlyOnceSink):
    def checkpoint(self, checkpoint_id: int) -> SinkCheckpoint:
        state = super().checkpoint(checkpoint_id)
        self.notify_checkpoint_complete(checkpoint_id)
        return state


@dataclass(frozen=True)
class CommitBeforeCompletion(ReferenceAdapter):
    def sink(self, config: SinkConfig) -> ExactlyOnceSink:
        return _CommitAtBarrierSink(config.log, config.prefix, config.parallelism, self.naming)

    def recover_sink(self, config: RecoveryConfig) -> Any:
        return _CommitAtBarrierSink.recover(
            config.log, config.prefix, config.parallelism, config.checkpoint, self.naming
        )


class _EmptyCommittablesSink(ExactlyOnceSink):
    def checkpoint(self, checkpoint_id: int) -> SinkCheckpoint:
        """FLINK-31363: every writer's transaction becomes a committable, records or not."""
        self._written.update(range(self.parallelism))
        return super().checkpoint(checkpoint_id)


class _ListingAbortSink(ExactlyOnceSink):
    def _abort_lingering(self, checkpoint: SinkCheckpoint) -> None:
        """Flink's ``TransactionAbortStrategyImpl.LISTING``: abort every open transaction whose id starts with
        the prefix and whose subtask field this sink owns, so ``job`` also aborts ``job-1``'s transactions."""
        assert isinstance(self.log, KafkaModel), "the listing mutant lists through the Kafka model"
        named = {c.transactional_id for c in checkpoint.committables}  # the committer's, skipped as Flink does
        for tid in self.log.open_transactional_ids():  # one sink here recovers every subtask: it owns them all
            if tid.startswith(self.prefix) and tid not in named:
                self.log.init_producer(tid)


class _NoAbortSink(ExactlyOnceSink):
    def _abort_lingering(self, checkpoint: SinkCheckpoint) -> None:
        """FLINK-23854: lingering transactions of the failed attempt are left open."""


class _PoolNeverFreedSink(ExactlyOnceSink):
    def notify_checkpoint_complete(self, checkpoint_id: int) -> None:
        """Pooled ids never given back after their commit: every checkpoint takes a new slot, so the ids
        grow with the checkpoints taken, the broker load FLINK-34554 introduced pooling against."""
        held = set(self._in_use)
        super().notify_checkpoint_complete(checkpoint_id)
        self._in_use |= held


class _ExpiredIdsAsCommittedSink(ExactlyOnceSink):
    def _commit(self, committables: Iterable[Any]) -> None:
        """A committable whose id the broker forgot is dropped as if committed: what FLINK-39072 proposes
        for Flink (a known failure, the committable discarded), silent where it never committed."""
        for c in committables:
            with contextlib.suppress(InvalidPidMappingError):
                super()._commit([c])


class _CloseLeavesOpenSink(ExactlyOnceSink):
    """Stopping the job ends nothing: the writers' open transactions wait for the broker's timeout."""

    def close(self) -> None:
        self._writers = []


class _CloseAbortsPendingSink(ExactlyOnceSink):
    """Stopping the job also aborts what pending checkpoints pre-committed: a restart cannot commit it."""

    def close(self) -> None:
        for batch in self.pending.values():
            for c in batch:
                self.log.resume_producer(c.transactional_id, c.producer_id, c.epoch).abort_transaction()
        super().close()


class _SwallowFencedSink(ExactlyOnceSink):
    def _commit(self, committables: Iterable[Any]) -> None:
        """A fenced recovery commit swallowed as success: Flink's ``KafkaCommitter`` discards it on purpose
        (FLINK-8086); kconform's COMMIT-007 requires the failure."""
        for c in committables:
            try:
                super()._commit([c])
            except ProducerFencedError:
                continue


class _SharedIdSink(ExactlyOnceSink):
    def _next_id(self, subtask: int) -> str:
        """FLINK-7978: the subtask index is missing from the transactional id."""
        return super()._next_id(0)


class _ReuseRecoveredProducerSink(ExactlyOnceSink):
    """FLINK-8132: after recovery, subtask 0 keeps writing with the producer that committed a recovered transaction."""

    @classmethod
    def recover(
        cls,
        log: TransactionalLog,
        prefix: str,
        parallelism: int,
        checkpoint: SinkCheckpoint,
        naming: NamingStrategy = NamingStrategy.INCREMENTING,
    ) -> ExactlyOnceSink:
        sink = super().recover(log, prefix, parallelism, checkpoint, naming)
        mine = [c for c in checkpoint.committables if c.transactional_id.startswith(f"{prefix}-0-")]
        if mine:
            reused = log.resume_producer(mine[-1].transactional_id, mine[-1].producer_id, mine[-1].epoch)
            reused.begin_transaction()
            sink._writers[0] = reused
        return sink


class _OwnCheckpointOnlySink(ExactlyOnceSink):
    def notify_checkpoint_complete(self, checkpoint_id: int) -> None:
        """Commits only the notified checkpoint's transactions; earlier ones wait for a recovery."""
        self._commit(self.pending.pop(checkpoint_id, []))


class _CommitAheadSink(ExactlyOnceSink):
    def notify_checkpoint_complete(self, checkpoint_id: int) -> None:
        """Commits every pending transaction, those of later checkpoints that have not completed too."""
        super().notify_checkpoint_complete(max(self.pending, default=checkpoint_id))


class _OwnRangeAbortSink(ExactlyOnceSink):
    def _abort_lingering(self, checkpoint: SinkCheckpoint) -> None:
        """Aborts the ids of the new subtasks only: those of a larger earlier parallelism stay open."""
        for prefix in self._prefixes_to_abort(checkpoint):
            for subtask in range(self.parallelism):
                self._abort_ids_of(prefix, subtask, checkpoint.next_txn)


class _CurrentPrefixOnlySink(ExactlyOnceSink):
    def _prefixes_to_abort(self, checkpoint: SinkCheckpoint) -> list[str]:
        """Recovery probes only the current prefix: a run under a new prefix leaves the old one's open."""
        return [self.prefix]


class _ReclaimingSink(ExactlyOnceSink):
    """A fenced writer initialises its transactional id again and carries on: a zombie takes its id back."""

    def write(self, subtask: int, topic: str, partition: int, key: bytes | None, value: bytes | None) -> None:
        try:
            super().write(subtask, topic, partition, key, value)
        except ProducerFencedError:
            self._writers[subtask] = self._reclaim(self._writers[subtask].transactional_id)
            super().write(subtask, topic, partition, key, value)

    def checkpoint(self, checkpoint_id: int) -> SinkCheckpoint:
        for subtask, producer in enumerate(self._writers):
            try:
                producer.flush()
            except ProducerFencedError:
                self._writers[subtask] = self._reclaim(producer.transactional_id)
        return super().checkpoint(checkpoint_id)

    def _reclaim(self, transactional_id: str) -> TransactionalProducer:
        producer = self.log.init_producer(transactional_id)
        producer.begin_transaction()
        return producer


@dataclass(frozen=True)
class SinkMutant(ReferenceAdapter):
    """The reference adapter with its sink class replaced."""

    sink_class: type[ExactlyOnceSink] = ExactlyOnceSink

    def sink(self, config: SinkConfig) -> ExactlyOnceSink:
        return self.sink_class(config.log, config.prefix, config.parallelism, self.naming)

    def recover_sink(self, config: RecoveryConfig) -> ExactlyOnceSink:
        return self.sink_class.recover(config.log, config.prefix, config.parallelism, config.checkpoint, self.naming)


# -- Kafka's strategies -------------------------------------------------------------------------


class _ConsistentRandomPartitioner(StickyPartitioner):
    """librdkafka's default partitioner, ``consistent_random``: CRC32 of the key; an empty key goes the keyless way."""

    def partition(
        self, topic: str, partition: int | None, key: bytes | None, value: bytes | None, num_partitions: int
    ) -> int:
        if partition is None and key is not None:
            return zlib.crc32(key) % num_partitions if key else self.keyless(topic, len(value or b""), num_partitions)
        return super().partition(topic, partition, key, value, num_partitions)


class _NullKeyHashedPartitioner(StickyPartitioner):
    """A null key hashed as the empty key: every keyless record lands in one partition."""

    def partition(
        self, topic: str, partition: int | None, key: bytes | None, value: bytes | None, num_partitions: int
    ) -> int:
        return super().partition(topic, partition, b"" if key is None else key, value, num_partitions)


@dataclass(frozen=True)
class PartitionerMutant(ReferenceAdapter):
    """The reference adapter with its sink's partitioner replaced."""

    partitioner_class: type[KafkaPartitioner] = StickyPartitioner

    def partitioner(self) -> KafkaPartitioner:
        return self.partitioner_class()


def _range_in_join_order(group: Group) -> Assignment:
    """Range over the members in the order they joined, not in member order."""
    joined = tuple(replace(m, instance_id=f"{i:06d}") for i, m in enumerate(group.members))
    return range_assign(replace(group, members=joined))


def _sticky_from_scratch(group: Group) -> Assignment:
    """A balanced sticky assignment that ignores what the members owned."""
    return sticky_assign(replace(group, members=tuple(replace(m, owned=frozenset()) for m in group.members)))


@dataclass(frozen=True)
class AssignorMutant(ReferenceAdapter):
    """The reference adapter with one consumer-group assignor replaced."""

    strategy: str = "range"
    assignor: Callable[[Group], Assignment] = range_assign

    def assign_group(self, strategy: str, group: Group) -> Assignment:
        return self.assignor(group) if strategy == self.strategy else super().assign_group(strategy, group)


# -- topic matching: near-miss names ------------------------------------------------------------


class _SloppyDiscoverer(PartitionDiscoverer):
    """Decides membership with ``matcher`` instead of the subscription's own full, exact match."""

    matcher: Callable[[Subscription, str], bool] = Subscription.matches

    def discover(self, metadata: Metadata) -> list[TopicPartition]:
        new = {TopicPartition(t, p) for t, ids in metadata.items() if self.matcher(self.subscription, t) for p in ids}
        new = {tp for tp in new if tp not in self.seen}
        self.seen.add(new)
        return sorted(tp for tp in new if owner(tp, self.parallelism) == self.subtask)


@dataclass(frozen=True)
class SloppyMatching(ReferenceAdapter):
    """The reference adapter whose discoverers match topics with ``matcher``."""

    matcher: Callable[[Subscription, str], bool] = Subscription.matches

    def discoverer(self, config: DiscovererConfig) -> PartitionDiscoverer:
        subtask = SubtaskIndex(config.subtask)
        discoverer = _SloppyDiscoverer(config.subscription, subtask, config.parallelism, config.on_zero)
        discoverer.matcher = self.matcher
        return discoverer


def _pattern_searched(subscription: Subscription, topic: str) -> bool:
    """``re.search``: the pattern anywhere in the name, so ``orders`` also subscribes ``eu-orders``."""
    if subscription.pattern is None:
        return subscription.matches(topic)
    return subscription.pattern.search(topic) is not None


def _pattern_anchored(subscription: Subscription, topic: str) -> bool:
    """``re.match('^' + pattern + '$')``: the anchors bind to the alternatives, so ``a|b`` matches ``a-dlq``."""
    if subscription.pattern is None:
        return subscription.matches(topic)
    return re.match(f"^{subscription.pattern.pattern}$", topic) is not None


def _fixed_case_insensitive(subscription: Subscription, topic: str) -> bool:
    """Listed names compared case-insensitively: ``Orders`` also subscribes ``orders``."""
    if subscription.pattern is not None:
        return subscription.matches(topic)
    return topic.casefold() in {t.casefold() for t in subscription.topics}


def _fixed_prefix(subscription: Subscription, topic: str) -> bool:
    """Listed names compared as prefixes: ``orders`` also subscribes ``orders-dlq``."""
    if subscription.pattern is not None:
        return subscription.matches(topic)
    return any(topic.startswith(t) for t in subscription.topics)


def _fixed_as_regex(subscription: Subscription, topic: str) -> bool:
    """The list joined into an unescaped regex: the ``.`` of ``a.b`` also subscribes ``a-b``."""
    if subscription.pattern is not None:
        return subscription.matches(topic)
    return re.fullmatch("|".join(sorted(subscription.topics)), topic) is not None


# -- offset commit on late notifications ---------------------------------------------------------


class _LastNotifiedWinsJob(SourceJob):
    """Commits the notified checkpoint's offsets whenever a notification comes, even one older than the last."""

    def notify_checkpoint_complete(self, checkpoint_id: int, store: Any, group: str) -> None:
        offsets = self.pending_commits.get(checkpoint_id)
        if offsets:
            store.commit_offsets(group, offsets)


class _KeepIgnoredJob(SourceJob):
    """Restore drops the entries of unsubscribed topics even when keep-unsubscribed asks to keep them."""

    @classmethod
    def restore(
        cls,
        checkpoint: SourceCheckpoint,
        parallelism: int,
        subscription: Subscription,
        metadata: Metadata,
        variant: RestoreVariant = RestoreVariant.UNION_FILTER,
        keep_unsubscribed: bool = False,
        on_zero: ZeroPartitionsPolicy = ZeroPartitionsPolicy.IGNORE,
        initial_offset: int = EARLIEST,
        owner: Owner = owner,
    ) -> SourceJob:
        return super().restore(
            checkpoint, parallelism, subscription, metadata, variant, False, on_zero, initial_offset, owner
        )


class _FetchAfterPositionJob(SourceJob):
    """Reads a known position as the last record read, not the next one: one record skipped per poll."""

    def poll(self, reader: LogReader, tp: TopicPartition, max_records: int) -> list[Record]:
        position = next_offsets(self.offsets)[tp]
        if not is_sentinel(position) and position < reader.latest_offset(tp, Isolation.READ_UNCOMMITTED):
            self.advance(tp, position + 1)
        return super().poll(reader, tp, max_records)


class _EagerSentinelJob(SourceJob):
    """Resolves every EARLIEST sentinel at the first poll of any partition, not at each one's own first read."""

    def poll(self, reader: LogReader, tp: TopicPartition, max_records: int) -> list[Record]:
        for offsets in self.offsets:
            for other, position in list(offsets.items()):
                if position == EARLIEST:
                    offsets[other] = reader.earliest_offset(other)
        return super().poll(reader, tp, max_records)


class _LazyLatestJob(SourceJob):
    """Before FLINK-28303 (connector 3.0.0): LATEST left as a sentinel at discovery, resolved at the
    partition's first read, so a checkpoint taken before that read stores LATEST."""

    def discover(self, metadata: Metadata, reader: LogReader) -> dict[TopicPartition, SubtaskIndex]:
        first = not self._discovered_once
        new = super().discover(metadata, reader)
        if first and self.initial_offset == LATEST:
            for tp, subtask in new.items():
                self.offsets[subtask][tp] = LATEST
        return new


class _CommitAtSnapshotJob(SourceJob):
    """Commits the snapshot's offsets when it is taken, before the checkpoint is known to complete."""

    def snapshot(self, checkpoint_id: int, store: OffsetStore | None = None, group: str = "") -> SourceCheckpoint:
        state = super().snapshot(checkpoint_id, store, group)
        if store is not None and self.pending_commits[checkpoint_id]:
            store.commit_offsets(group, self.pending_commits[checkpoint_id])
        return state


class _StartupModeOnRestoreJob(SourceJob):
    """Before FLINK-32019, on restore: partitions the state lacks start at the configured startup mode
    (a LATEST left as a sentinel: restore has no ``LogReader`` to resolve it)."""

    @classmethod
    def restore(
        cls, checkpoint: SourceCheckpoint, parallelism: int, subscription: Subscription, metadata: Metadata, *args: Any
    ) -> SourceJob:
        job = super().restore(checkpoint, parallelism, subscription, {}, *args)  # no discovery yet
        for tp, subtask in job._discover_new(metadata).items():
            job.offsets[subtask].setdefault(tp, job.initial_offset)
        return job


class _PruningJob(SourceJob):
    """Offsets of partitions the metadata no longer lists are dropped at each discovery: a deleted topic's
    progress is forgotten, so a topic re-created under its name is read again from its start."""

    def discover(self, metadata: Metadata, reader: Any) -> dict[TopicPartition, SubtaskIndex]:
        new = super().discover(metadata, reader)
        for offsets in self.offsets:
            for tp in [tp for tp in offsets if tp.partition not in metadata.get(tp.topic, ())]:
                del offsets[tp]
        return new


class _RechunkingJob(SourceJob):
    """Split state cut into even chunks even when the parallelism is unchanged, where Flink's
    repartitioner leaves every subtask its own list: safe, but partitions move between readers."""

    @classmethod
    def restore(cls, checkpoint: SourceCheckpoint, parallelism: int, *args: Any) -> SourceJob:
        merged = (tuple(e for entries in checkpoint.by_subtask for e in entries),)
        rechunked = replace(checkpoint, by_subtask=merged) if parallelism > 1 else checkpoint
        return super().restore(rechunked, parallelism, *args)


class _ScaleInIgnoredJob(SourceJob):
    """A restore at a lower parallelism keeps the checkpoint's: every split stays on its old subtask, so
    the job runs more readers than it was given (safe, but not the parallelism asked for)."""

    @classmethod
    def restore(cls, checkpoint: SourceCheckpoint, parallelism: int, *args: Any) -> SourceJob:
        return super().restore(checkpoint, max(parallelism, checkpoint.parallelism), *args)


class _RestoreWithoutDiscoveryJob(SourceJob):
    """The restore runs no discovery of its own: partitions new since the checkpoint wait for the next one."""

    @classmethod
    def restore(
        cls, checkpoint: SourceCheckpoint, parallelism: int, subscription: Subscription, metadata: Metadata, *args: Any
    ) -> SourceJob:
        stated: dict[str, set[int]] = {}
        for tp, _ in checkpoint.union():
            stated.setdefault(tp.topic, set()).add(tp.partition)
        return super().restore(checkpoint, parallelism, subscription, stated, *args)


@dataclass(frozen=True)
class SourceMutant(ReferenceAdapter):
    """The reference adapter with its source job class replaced, for fresh and restored sources alike."""

    job_class: type[SourceJob] = SourceJob

    def source(self, config: SourceConfig) -> SourceJob:
        return self.job_class(
            config.subscription,
            config.parallelism,
            self.restore_variant,
            config.keep_unsubscribed,
            self.discovery_of_zero,
            config.initial_offset,
        )

    def restore_source(self, config: RestoreConfig) -> SourceJob:
        return self.job_class.restore(
            config.checkpoint,
            config.parallelism,
            config.subscription,
            config.metadata,
            self.restore_variant,
            config.keep_unsubscribed,
            self.discovery_of_zero,
            config.initial_offset,
        )


MUTANTS: tuple[Mutant, ...] = (
    Mutant(
        "python_mod_no_mask",
        frozenset({"ASSIGN-004"}),
        "start index without the sign mask, Python %",
        PythonModNoMask(),
    ),
    Mutant(
        "java_remainder_no_mask",
        frozenset({"ASSIGN-001"}),
        "start index without the sign mask, Java %",
        JavaRemainderNoMask(),
    ),
    Mutant(
        "overlapping_range_discoverers",
        frozenset({"ASSIGN-007"}),
        "each subtask's discoverer claims a range whose upper bound is inclusive: two subtasks read one partition",
        OverlappingRangeDiscoverers(),
    ),
    Mutant(
        "order_dependent_assignment",
        frozenset({"ASSIGN-003"}),
        "FLINK-7143: owner by list position",
        OrderDependentAssignment(),
    ),
    Mutant(
        "rereporting_discovery",
        frozenset({"DISC-003"}),
        "discovery re-reports known partitions",
        RereportingDiscovery(),
    ),
    Mutant(
        "view_bound_discovery",
        frozenset({"DISC-008"}),
        "partitions a metadata view lacks are forgotten, and re-reported when they return",
        ViewBoundDiscovery(),
    ),
    Mutant(
        "vanished_partitions_pruned",
        frozenset({"DISC-008"}),
        "a deleted topic's partitions dropped from the source's state at the next discovery",
        SourceMutant(job_class=_PruningJob),
    ),
    Mutant(
        "pattern_prefix_match", frozenset({"DISC-002"}), "pattern matched as a prefix (re.match)", PatternPrefixMatch()
    ),
    Mutant(
        "new_partitions_at_latest",
        frozenset({"DISC-005"}),
        "new partitions at LATEST (before FLINK-32019)",
        NewPartitionsAtLatest(),
    ),
    Mutant(
        "even_split_restore",
        frozenset({"RESTORE-002", "RESTORE-003", "RESTORE-006"}),
        "getListState instead of union state: offsets lost, partitions re-read from EARLIEST",
        EvenSplitRestore(),
    ),
    Mutant(
        "splits_rechunked_at_same_parallelism",
        frozenset({"RESTORE-002"}),
        "split state re-chunked at an unchanged parallelism (Flink leaves each subtask its own)",
        SourceMutant(restore_variant=RestoreVariant.SPLIT_REDISTRIBUTION, job_class=_RechunkingJob),
    ),
    Mutant(
        "scale_in_ignored",
        frozenset({"RESTORE-002"}),
        "a restore at a lower parallelism keeps the checkpoint's subtasks and their splits",
        SourceMutant(restore_variant=RestoreVariant.SPLIT_REDISTRIBUTION, job_class=_ScaleInIgnoredJob),
    ),
    Mutant(
        "restore_without_discovery",
        frozenset({"RESTORE-004"}),
        "the restore discovers nothing itself: partitions new since the checkpoint wait for the next discovery",
        SourceMutant(job_class=_RestoreWithoutDiscoveryJob),
    ),
    Mutant(
        "partial_view_filter",
        frozenset({"RESTORE-006"}),
        "FLINK-6006/7195: filter by partial view",
        PartialViewFilter(),
    ),
    Mutant(
        "restored_offset_backwards", frozenset({"RESTORE-003"}), "restored offset moved back", RestoredOffsetBackwards()
    ),
    Mutant(
        "offsets_committed_from_current_position",
        frozenset({"RESTORE-007"}),
        "group offsets from the live position, not checkpoint N",
        OffsetsCommittedFromCurrentPosition(),
    ),
    Mutant("commit_before_completion", frozenset({"COMMIT-002"}), "commit at the barrier", CommitBeforeCompletion()),
    Mutant(
        "pooled_ids_never_freed",
        frozenset({"COMMIT-018"}),
        "pooled transactional ids never reused: one new id per checkpoint (FLINK-34554)",
        SinkMutant(naming=NamingStrategy.POOLING, sink_class=_PoolNeverFreedSink),
    ),
    Mutant(
        "expired_ids_as_committed",
        frozenset({"COMMIT-019"}),
        "a recovered committable whose id expired is discarded as committed (FLINK-39072's proposal)",
        SinkMutant(sink_class=_ExpiredIdsAsCommittedSink),
    ),
    Mutant(
        "close_leaves_transactions_open",
        frozenset({"COMMIT-020"}),
        "a stopped job's open transactions are left to the broker's timeout, blocking read_committed readers",
        SinkMutant(sink_class=_CloseLeavesOpenSink),
    ),
    Mutant(
        "close_aborts_pending",
        frozenset({"COMMIT-020"}),
        "a stopped job also aborts the transactions pending checkpoints pre-committed (lost on restart)",
        SinkMutant(sink_class=_CloseAbortsPendingSink),
    ),
    Mutant(
        "no_abort_lingering",
        frozenset({"COMMIT-004", "COMMIT-012"}),
        "FLINK-23854: no abort on recovery",
        SinkMutant(sink_class=_NoAbortSink),
    ),
    Mutant(
        "empty_transactions_committed",
        frozenset({"COMMIT-014"}),
        "FLINK-31363: a transaction without records handed to the committer",
        SinkMutant(sink_class=_EmptyCommittablesSink),
    ),
    Mutant(
        "listing_abort_by_prefix",
        frozenset({"COMMIT-016"}),
        "Flink's LISTING abort: open transactions matched by prefix.startsWith, so sink 'job' aborts sink 'job-1''s",
        SinkMutant(sink_class=_ListingAbortSink),
    ),
    Mutant(
        "old_prefix_left_open",
        frozenset({"COMMIT-017"}),
        "recovery under a changed prefix aborts only the new prefix's ids",
        SinkMutant(sink_class=_CurrentPrefixOnlySink),
    ),
    Mutant(
        "fenced_swallowed",
        frozenset({"COMMIT-007"}),
        "a fenced recovery commit swallowed as success"
        " (Flink discards it, FLINK-8086; kconform's COMMIT-007 requires the failure)",
        SinkMutant(sink_class=_SwallowFencedSink),
    ),
    Mutant(
        "colliding_ids",
        frozenset({"COMMIT-005"}),
        "FLINK-7978: id without subtask",
        SinkMutant(sink_class=_SharedIdSink),
    ),
    Mutant(
        "reuse_recovered_producer",
        frozenset({"COMMIT-010", "COMMIT-006"}),
        "FLINK-8132: recovered producer reused",
        SinkMutant(sink_class=_ReuseRecoveredProducerSink),
    ),
    Mutant(
        "own_checkpoint_only_commit",
        frozenset({"COMMIT-009"}),
        "lost notification strands earlier checkpoints",
        SinkMutant(sink_class=_OwnCheckpointOnlySink),
    ),
    Mutant(
        "librdkafka_default_partitioner",
        frozenset({"STRAT-001"}),
        "sink on librdkafka's consistent_random (CRC32) partitioner",
        PartitionerMutant(partitioner_class=_ConsistentRandomPartitioner),
    ),
    Mutant(
        "null_key_hashed",
        frozenset({"STRAT-003"}),
        "a null key hashed as the empty key",
        PartitionerMutant(partitioner_class=_NullKeyHashedPartitioner),
    ),
    Mutant(
        "range_in_join_order",
        frozenset({"STRAT-005"}),
        "Range with members in join order, not sorted",
        AssignorMutant(strategy="range", assignor=_range_in_join_order),
    ),
    Mutant(
        "sticky_ignores_ownership",
        frozenset({"STRAT-009"}),
        "sticky assignor that moves partitions needlessly",
        AssignorMutant(strategy="sticky", assignor=_sticky_from_scratch),
    ),
    Mutant(
        "cooperative_revokes_and_assigns",
        frozenset({"STRAT-010"}),
        "cooperative assignor that revokes and assigns in one rebalance",
        AssignorMutant(strategy="cooperative-sticky", assignor=sticky_assign),
    ),
    Mutant(
        "pattern_search_match",
        frozenset({"DISC-002"}),
        "pattern found anywhere in the name (re.search)",
        SloppyMatching(matcher=_pattern_searched),
    ),
    Mutant(
        "pattern_anchored_alternation",
        frozenset({"DISC-002"}),
        "full match imitated by ^pattern$, wrong for alternations",
        SloppyMatching(matcher=_pattern_anchored),
    ),
    Mutant(
        "fixed_case_insensitive",
        frozenset({"DISC-001"}),
        "listed topics compared case-insensitively",
        SloppyMatching(matcher=_fixed_case_insensitive),
    ),
    Mutant(
        "fixed_prefix_match",
        frozenset({"DISC-001"}),
        "listed topics compared as prefixes",
        SloppyMatching(matcher=_fixed_prefix),
    ),
    Mutant(
        "fixed_list_as_regex",
        frozenset({"DISC-001"}),
        "listed topics joined into an unescaped regex",
        SloppyMatching(matcher=_fixed_as_regex),
    ),
    Mutant(
        "last_notified_offsets_win",
        frozenset({"RESTORE-007"}),
        "a late notification commits its older checkpoint's offsets",
        SourceMutant(job_class=_LastNotifiedWinsJob),
    ),
    Mutant(
        "commit_ahead_of_notification",
        frozenset({"COMMIT-002"}),
        "a notification of N also commits N+1, still pending",
        SinkMutant(sink_class=_CommitAheadSink),
    ),
    Mutant(
        "keep_unsubscribed_ignored",
        frozenset({"RESTORE-005"}),
        "keep-unsubscribed=true, yet unsubscribed topics are dropped on restore",
        SourceMutant(job_class=_KeepIgnoredJob),
    ),
    Mutant(
        "fetch_after_position",
        frozenset({"RESTORE-003"}),
        "the source's fetch starts one past its position: a record skipped per poll",
        SourceMutant(job_class=_FetchAfterPositionJob),
    ),
    Mutant(
        "sentinels_resolved_eagerly",
        frozenset({"DISC-005"}),
        "every EARLIEST sentinel resolved at the first poll of any partition",
        SourceMutant(job_class=_EagerSentinelJob),
    ),
    Mutant(
        "latest_resolved_at_first_read",
        frozenset({"DISC-005"}),
        "LATEST resolved at the partition's first read, not at discovery (before FLINK-28303)",
        SourceMutant(job_class=_LazyLatestJob),
    ),
    Mutant(
        "offsets_committed_at_snapshot",
        frozenset({"RESTORE-007"}),
        "offsets committed when the snapshot is taken, before the checkpoint completes",
        SourceMutant(job_class=_CommitAtSnapshotJob),
    ),
    Mutant(
        "startup_mode_on_restore",
        frozenset({"RESTORE-004"}),
        "on restore, partitions the state lacks start at the configured startup mode",
        SourceMutant(job_class=_StartupModeOnRestoreJob),
    ),
    Mutant(
        "range_planner",
        frozenset({"ASSIGN-004", "ASSIGN-006"}),
        "the plan is Kafka's range assignment, not Flink's formula",
        RangePlanner(),
    ),
    Mutant(
        "leftover_ids_not_fenced",
        frozenset({"COMMIT-012"}),
        "recovery aborts only the new subtasks' ids (no subtask + k*n walk)",
        SinkMutant(sink_class=_OwnRangeAbortSink),
    ),
    Mutant(
        "zombie_reclaims_fenced_id",
        frozenset({"COMMIT-006"}),
        "a fenced writer re-initialises its id and carries on",
        SinkMutant(sink_class=_ReclaimingSink),
    ),
)

for _mutant in MUTANTS:
    globals()[_mutant.name] = replace(_mutant.adapter, name=f"mutant:{_mutant.name}")
