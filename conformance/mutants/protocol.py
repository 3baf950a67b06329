"""Protocol-level mutants: broken adapters, each reproducing a real bug class, that the suite must kill.

Each mutant is the reference adapter with exactly one mechanism replaced by a known-wrong one, registered
(``registry``) by a decorator on the class or function that holds its bug, naming the requirements whose
failure proves the kill. ``make test`` runs the suite against every mutant and asserts one of those fails
(``tests/test_mutants.py``), and ``make bench`` reports the time to kill each. Load one with
``kconform run --adapter kconform.conformance.mutants.protocol:<name>``.
"""

from __future__ import annotations

import contextlib
import re
import zlib
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any, TypeVar

from ...reference_impl.adapter import ReferenceAdapter
from ...reference_impl.assignment import Owner, java_string_hash, owner
from ...reference_impl.commit import ExactlyOnceSink, NamingStrategy, SinkCheckpoint
from ...reference_impl.configs import DiscovererConfig, GroupStartConfig, RecoveryConfig, RestoreConfig, SinkConfig
from ...reference_impl.discovery import (
    Metadata,
    NoPartitionsDiscoveredError,
    PartitionDiscoverer,
    Subscription,
    ZeroPartitionsPolicy,
)
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
    KafkaError,
    LogReader,
    OffsetStore,
    ProducerFencedError,
    Record,
    TransactionalLog,
    TransactionalProducer,
    TransactionTimeoutError,
)
from ...reference_impl.restore import (
    RestoreVariant,
    SourceCheckpoint,
    SourceJob,
    next_offsets,
    redistribute_splits,
)
from ...reference_impl.types import EARLIEST, LATEST, SubtaskIndex, TopicPartition, is_sentinel
from . import registry

A = TypeVar("A", bound=ReferenceAdapter)
P = TypeVar("P", bound=PartitionDiscoverer)
J = TypeVar("J", bound=SourceJob)
S = TypeVar("S", bound=ExactlyOnceSink)
K = TypeVar("K", bound=KafkaPartitioner)
D = TypeVar("D", bound=Callable[..., object])


@dataclass(frozen=True)
class Mutant:
    """A broken adapter and the requirements whose failure shows the suite caught it."""

    name: str
    kills_on: frozenset[str]
    """The requirements this bug breaks: the suite must fail on one of them and on no other."""
    bug: str
    adapter: ReferenceAdapter


def __getattr__(name: str) -> ReferenceAdapter:
    """``--adapter kconform.conformance.mutants.protocol:<name>``: the adapter of the registered mutant ``name``."""
    return registry.find(name, Mutant).adapter


def _registered(defined: D, name: str, kills_on: set[str], bug: str, adapter: ReferenceAdapter) -> D:
    """Registers ``defined`` as the bug of ``adapter``, named ``mutant:<name>`` so reports say which mutant ran."""
    named = replace(adapter, name=f"mutant:{name}")
    return registry.register(defined, Mutant(name, frozenset(kills_on), bug, named))


def mutant(name: str, kills_on: set[str], bug: str) -> Callable[[type[A]], type[A]]:
    """Registers a broken adapter class as the mutant ``name``, failing ``kills_on``."""
    return lambda adapter: _registered(adapter, name, kills_on, bug, adapter())


# -- the reference adapter with one part replaced ------------------------------------------------


@dataclass(frozen=True)
class DiscovererMutant(ReferenceAdapter):
    """The reference adapter with its partition discoverer class replaced."""

    discoverer_class: type[PartitionDiscoverer] = PartitionDiscoverer

    def discoverer(self, config: DiscovererConfig) -> PartitionDiscoverer:
        subtask = SubtaskIndex(config.subtask)
        return self.discoverer_class(config.subscription, subtask, config.parallelism, config.on_zero, owner=self.owner)


def discoverer_mutant(name: str, kills_on: set[str], bug: str) -> Callable[[type[P]], type[P]]:
    """Registers a broken discoverer class as the mutant ``name``, failing ``kills_on``."""
    return lambda discoverer: _registered(
        discoverer, name, kills_on, bug, DiscovererMutant(discoverer_class=discoverer)
    )


@dataclass(frozen=True)
class SourceMutant(ReferenceAdapter):
    """The reference adapter with its source job class replaced: for fresh sources, and for restored ones
    too unless ``fresh_only`` (a bug of the running job alone then stays clear of the restore's requirements)."""

    fresh_only: bool = False

    def restore_source(self, config: RestoreConfig) -> SourceJob:
        if self.fresh_only:
            return ReferenceAdapter.restore_source(replace(self, job_class=SourceJob), config)
        return super().restore_source(config)


def source_mutant(
    name: str,
    kills_on: set[str],
    bug: str,
    restore_variant: RestoreVariant = RestoreVariant.UNION_FILTER,
    fresh_only: bool = False,
) -> Callable[[type[J]], type[J]]:
    """Registers a broken source job class as the mutant ``name``, failing ``kills_on``."""
    return lambda job: _registered(
        job, name, kills_on, bug, SourceMutant(restore_variant=restore_variant, job_class=job, fresh_only=fresh_only)
    )


@dataclass(frozen=True)
class SinkMutant(ReferenceAdapter):
    """The reference adapter with its sink class replaced."""

    sink_class: type[ExactlyOnceSink] = ExactlyOnceSink

    def sink(self, config: SinkConfig) -> ExactlyOnceSink:
        return self.sink_class(config.log, config.prefix, config.parallelism, config.naming or self.naming)

    def recover_sink(self, config: RecoveryConfig) -> ExactlyOnceSink:
        naming = config.naming or self.naming
        return self.sink_class.recover(config.log, config.prefix, config.parallelism, config.checkpoint, naming)


def sink_mutant(
    name: str, kills_on: set[str], bug: str, naming: NamingStrategy = NamingStrategy.INCREMENTING
) -> Callable[[type[S]], type[S]]:
    """Registers a broken sink class as the mutant ``name``, failing ``kills_on``."""
    return lambda sink: _registered(sink, name, kills_on, bug, SinkMutant(naming=naming, sink_class=sink))


@dataclass(frozen=True)
class PartitionerMutant(ReferenceAdapter):
    """The reference adapter with its sink's partitioner replaced."""

    partitioner_class: type[KafkaPartitioner] = StickyPartitioner

    def partitioner(self) -> KafkaPartitioner:
        return self.partitioner_class()


def partitioner_mutant(name: str, kills_on: set[str], bug: str) -> Callable[[type[K]], type[K]]:
    """Registers a broken partitioner class as the mutant ``name``, failing ``kills_on``."""
    return lambda partitioner: _registered(
        partitioner, name, kills_on, bug, PartitionerMutant(partitioner_class=partitioner)
    )


Assignor = Callable[[Group], Assignment]


@dataclass(frozen=True)
class AssignorMutant(ReferenceAdapter):
    """The reference adapter with one consumer-group assignor replaced."""

    strategy: str = "range"
    assignor: Assignor = range_assign

    def assign_group(self, strategy: str, group: Group) -> Assignment:
        return self.assignor(group) if strategy == self.strategy else super().assign_group(strategy, group)


def assignor_mutant(name: str, kills_on: set[str], bug: str, strategy: str) -> Callable[[Assignor], Assignor]:
    """Registers a broken assignor function as the mutant ``name``: ``strategy``'s, failing ``kills_on``."""
    return lambda assignor: _registered(
        assignor, name, kills_on, bug, AssignorMutant(strategy=strategy, assignor=assignor)
    )


Matcher = Callable[[Subscription, str], bool]


class _SloppyDiscoverer(PartitionDiscoverer):
    """Decides membership with ``matcher`` instead of the subscription's own full, exact match."""

    matcher: Matcher = Subscription.matches

    def discover(self, metadata: Metadata) -> list[TopicPartition]:
        """The reference's discovery, its zero-partitions policy included, with only the matching broken."""
        new = {TopicPartition(t, p) for t, ids in metadata.items() if self.matcher(self.subscription, t) for p in ids}
        if not new and self.on_zero is ZeroPartitionsPolicy.FAIL:
            raise NoPartitionsDiscoveredError(f"Unable to retrieve any partitions for {self.subscription.describe()}")
        new = {tp for tp in new if tp not in self.seen}
        self.seen.add(new)
        return sorted(tp for tp in new if owner(tp, self.parallelism) == self.subtask)


@dataclass(frozen=True)
class SloppyMatching(ReferenceAdapter):
    """The reference adapter whose discoverers match topics with ``matcher``."""

    matcher: Matcher = Subscription.matches

    def discoverer(self, config: DiscovererConfig) -> PartitionDiscoverer:
        subtask = SubtaskIndex(config.subtask)
        discoverer = _SloppyDiscoverer(config.subscription, subtask, config.parallelism, config.on_zero)
        discoverer.matcher = self.matcher
        return discoverer


def matching_mutant(name: str, kills_on: set[str], bug: str) -> Callable[[Matcher], Matcher]:
    """Registers a broken topic matcher as the mutant ``name``, failing ``kills_on``."""
    return lambda matcher: _registered(matcher, name, kills_on, bug, SloppyMatching(matcher=matcher))


# -- assignment ----------------------------------------------------------------------------------


@mutant("python_mod_no_mask", {"ASSIGN-004"}, "start index without the sign mask, Python %")
@dataclass(frozen=True)
class PythonModNoMask(ReferenceAdapter):
    """Start index as ``(hash * 31) % n`` in Python: always in range, but not Flink's owner."""

    def assign(self, topic: str, partition: int, parallelism: int) -> int:
        return ((java_string_hash(topic) * 31) % parallelism + partition) % parallelism


@mutant("java_remainder_no_mask", {"ASSIGN-001"}, "start index without the sign mask, Java %")
@dataclass(frozen=True)
class JavaRemainderNoMask(ReferenceAdapter):
    """Start index as Java's ``%`` of the wrapped int without ``& 0x7FFFFFFF``: negative owners."""

    def assign(self, topic: str, partition: int, parallelism: int) -> int:
        product = (java_string_hash(topic) * 31) & 0xFFFFFFFF
        signed = product - (1 << 32) if product & 0x80000000 else product
        start = abs(signed) % parallelism * (1 if signed >= 0 else -1)
        remainder = start + partition
        return abs(remainder) % parallelism * (1 if remainder >= 0 else -1)


@discoverer_mutant("order_dependent_assignment", {"ASSIGN-003"}, "FLINK-7143: owner by list position")
class _PositionalDiscoverer(PartitionDiscoverer):
    """FLINK-7143: ownership by position in the fetched list, so it follows metadata order."""

    def discover(self, metadata: Metadata) -> list[TopicPartition]:
        listed = [TopicPartition(t, p) for t, ids in metadata.items() if self.subscription.matches(t) for p in ids]
        mine = [tp for i, tp in enumerate(listed) if i % self.parallelism == self.subtask and tp not in self.seen]
        self.seen.add(listed)
        return mine


@mutant("range_planner", {"ASSIGN-004", "ASSIGN-006"}, "the plan is Kafka's range assignment, not Flink's formula")
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


@discoverer_mutant(
    "overlapping_range_discoverers",
    {"ASSIGN-007"},
    "each subtask's discoverer claims a range whose upper bound is inclusive: two subtasks read one partition",
)
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


# -- discovery -----------------------------------------------------------------------------------


@discoverer_mutant("rereporting_discovery", {"DISC-003"}, "discovery re-reports known partitions")
class _ForgetfulDiscoverer(PartitionDiscoverer):
    """Reports every owned partition on every call instead of only new ones."""

    def discover(self, metadata: Metadata) -> list[TopicPartition]:
        self.seen.clear()
        return super().discover(metadata)


@discoverer_mutant(
    "view_bound_discovery",
    {"DISC-008"},
    "partitions a metadata view lacks are forgotten, and re-reported when they return",
)
class _ViewBoundDiscoverer(PartitionDiscoverer):
    """Known partitions pruned to the current view: one a view lacks (a restarting broker, a deleted
    topic) is forgotten, and reported again, to be read from EARLIEST, if it comes back."""

    def discover(self, metadata: Metadata) -> list[TopicPartition]:
        kept = [tp for tp in self.seen if tp.partition in metadata.get(tp.topic, ())]
        self.seen.clear()
        self.seen.add(kept)
        return super().discover(metadata)


@discoverer_mutant("pattern_prefix_match", {"DISC-002"}, "pattern matched as a prefix (re.match)")
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


@discoverer_mutant(
    "zero_partitions_error_unnamed",
    {"DISC-010"},
    "the zero-partitions failure names neither the topics nor the pattern that matched nothing",
)
class _UnnamedZeroPartitionsDiscoverer(PartitionDiscoverer):
    """Fails on zero partitions as the policy says (DISC-007 holds), with an error that leaves out the subscription."""

    def discover(self, metadata: Metadata) -> list[TopicPartition]:
        try:
            return super().discover(metadata)
        except NoPartitionsDiscoveredError:
            raise NoPartitionsDiscoveredError(
                "Unable to retrieve any partitions; create the topic first or set discovery-of-zero=ignore"
            ) from None


@source_mutant(
    "new_partitions_at_latest", {"DISC-005"}, "new partitions at LATEST (before FLINK-32019)", fresh_only=True
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


# -- restore -------------------------------------------------------------------------------------


@mutant(
    "even_split_restore",
    {"RESTORE-002", "RESTORE-003", "RESTORE-006", "RESTORE-013", "ASSIGN-007"},
    "getListState instead of union state: offsets lost, partitions re-read from EARLIEST",
)
@dataclass(frozen=True)
class EvenSplitRestore(ReferenceAdapter):
    """``getListState`` instead of ``getUnionListState``: each subtask sees a chunk and keeps what it owns."""

    def restore_source(self, config: RestoreConfig) -> SourceJob:
        checkpoint, parallelism, subscription = config.checkpoint, config.parallelism, config.subscription
        keep = config.keep_unsubscribed
        job = SourceJob(
            subscription, parallelism, self.restore_variant, keep, self.discovery_of_zero, isolation=config.isolation
        )
        job._discovered_once = True
        for i, chunk in enumerate(redistribute_splits(checkpoint.by_subtask, parallelism)):
            job.offsets[i] = {
                tp: off for tp, off in chunk if owner(tp, parallelism) == i and (keep or subscription.matches(tp.topic))
            }
            job._discoverers[i].seen.add(tp for tp, _ in chunk)
        for tp, subtask in job._discover_new(config.metadata).items():
            job.offsets[subtask].setdefault(tp, EARLIEST)
        return job


@mutant("partial_view_filter", {"RESTORE-006"}, "FLINK-6006/7195: filter by partial view")
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


@mutant("restored_offset_backwards", {"RESTORE-003"}, "restored offset moved back")
@dataclass(frozen=True)
class RestoredOffsetBackwards(ReferenceAdapter):
    """Treats the stored next offset as the last emitted one minus one: re-reads a record per partition."""

    def restore_source(self, config: RestoreConfig) -> SourceJob:
        moved = tuple(
            tuple((tp, off - 1 if off > 0 else off) for tp, off in entries) for entries in config.checkpoint.by_subtask
        )
        moved_checkpoint = replace(config.checkpoint, by_subtask=moved)
        return super().restore_source(replace(config, checkpoint=moved_checkpoint))


@source_mutant(
    "offsets_committed_from_current_position",
    {"RESTORE-007"},
    "group offsets from the live position, not checkpoint N",
    fresh_only=True,
)
class _EagerOffsetCommitJob(SourceJob):
    """Commits the current position on notification, not checkpoint N's offsets."""

    def notify_checkpoint_complete(self, checkpoint_id: int, store: Any, group: str) -> None:
        current = {tp: off for o in self.offsets for tp, off in o.items() if off >= 0}
        if current:
            store.commit_offsets(group, current)


@mutant(
    "group_start_latest_without_offset",
    {"RESTORE-018"},
    "a start from group offsets puts a partition the group has none for at LATEST (Kafka's auto.offset.reset default)",
)
@dataclass(frozen=True)
class LatestWithoutCommittedOffset(ReferenceAdapter):
    """Hands the group's offsets to a consumer left at Kafka's default ``auto.offset.reset=latest``: a partition
    the group has no offset for starts at its end, silently, whatever fallback was configured or none."""

    def group_start(self, config: GroupStartConfig) -> dict[TopicPartition, int]:
        return {tp: config.committed.get(tp, LATEST) for tp in config.partitions}


# -- commit --------------------------------------------------------------------------------------


@sink_mutant("commit_before_completion", {"COMMIT-002"}, "commit at the barrier")
class _CommitAtBarrierSink(ExactlyOnceSink):
    def checkpoint(self, checkpoint_id: int) -> SinkCheckpoint:
        state = super().checkpoint(checkpoint_id)
        self.notify_checkpoint_complete(checkpoint_id)
        return state


@sink_mutant(
    "empty_transactions_committed", {"COMMIT-014"}, "FLINK-31363: a transaction without records handed to the committer"
)
class _EmptyCommittablesSink(ExactlyOnceSink):
    def checkpoint(self, checkpoint_id: int) -> SinkCheckpoint:
        """FLINK-31363: every writer's transaction becomes a committable, records or not."""
        self._written.update(range(self.parallelism))
        return super().checkpoint(checkpoint_id)


@sink_mutant(
    "listing_abort_by_prefix",
    {"COMMIT-016"},
    "Flink's LISTING abort: open transactions matched by prefix.startsWith, so sink 'job' aborts sink 'job-1''s",
)
class _ListingAbortSink(ExactlyOnceSink):
    def _abort_lingering(self, checkpoint: SinkCheckpoint) -> None:
        """Flink's ``TransactionAbortStrategyImpl.LISTING``: abort every open transaction whose id starts with
        the prefix and whose subtask field this sink owns, so ``job`` also aborts ``job-1``'s transactions."""
        assert isinstance(self.log, KafkaModel), "the listing mutant lists through the Kafka model"
        named = {c.transactional_id for c in checkpoint.committables}  # the committer's, skipped as Flink does
        for tid in self.log.open_transactional_ids():  # one sink here recovers every subtask: it owns them all
            if tid.startswith(self.prefix) and tid not in named:
                self.log.init_producer(tid)


@sink_mutant("no_abort_lingering", {"COMMIT-004", "COMMIT-012"}, "FLINK-23854: no abort on recovery")
class _NoAbortSink(ExactlyOnceSink):
    def _abort_lingering(self, checkpoint: SinkCheckpoint) -> None:
        """FLINK-23854: lingering transactions of the failed attempt are left open."""


@sink_mutant(
    "pooled_ids_never_freed",
    {"COMMIT-018"},
    "pooled transactional ids never reused: one new id per checkpoint (FLINK-34554)",
    naming=NamingStrategy.POOLING,
)
class _PoolNeverFreedSink(ExactlyOnceSink):
    def notify_checkpoint_complete(self, checkpoint_id: int) -> None:
        """Pooled ids never given back after their commit: every checkpoint takes a new slot, so the ids
        grow with the checkpoints taken, the broker load FLINK-34554 introduced pooling against."""
        held = set(self._in_use)
        super().notify_checkpoint_complete(checkpoint_id)
        self._in_use |= held


@sink_mutant(
    "pooled_id_freed_at_commit",
    {"COMMIT-003"},
    "a pooled id freed once its transaction commits, though the completed checkpoint still names it",
    naming=NamingStrategy.POOLING,
)
class _PoolFreedAtCommitSink(ExactlyOnceSink):
    def notify_checkpoint_complete(self, checkpoint_id: int) -> None:
        """Every committed id goes back to the pool at once: the next transaction reuses it, and a recovery
        from the checkpoint that named it is fenced when it resumes the id."""
        committed = {c.transactional_id for cid in self.pending if cid <= checkpoint_id for c in self.pending[cid]}
        super().notify_checkpoint_complete(checkpoint_id)
        self._in_use -= committed | self._retained
        self._retained = set()


@sink_mutant(
    "pooled_reuse_left_open_by_fenced_recovery",
    {"COMMIT-004", "COMMIT-007"},
    "a pooled id reused after its commit: recovery's fenced commit of it is discarded and the newer transaction"
    " under it left open (FLINK-40626)",
    naming=NamingStrategy.POOLING,
)
class _PoolReuseLeftOpenSink(_PoolFreedAtCommitSink):
    def _commit(self, committables: Iterable[Any]) -> None:
        """Flink's pool (an id free once its commit is reported) and Flink's recovery together: the restored
        checkpoint names an id that a later, unfinished checkpoint reused; ``KafkaCommitter`` meets the fence
        (``logFencedRequest``: "expected in some cases") and discards the committable, and the abort
        (``TransactionAbortStrategyImpl.LISTING``) skips every id to be committed, so the transaction open under
        the reused id holds ``read_committed`` readers back until the broker's timeout."""
        for c in committables:
            with contextlib.suppress(ProducerFencedError):
                super()._commit([c])


@sink_mutant(
    "late_notification_frees_pooled_ids",
    {"COMMIT-003"},
    "a late or repeated notification frees the pooled ids the newest completed checkpoint still names",
    naming=NamingStrategy.POOLING,
)
class _LateNotificationFreesSink(ExactlyOnceSink):
    def notify_checkpoint_complete(self, checkpoint_id: int) -> None:
        """The reference's own bug until the sink machine judged failed recoveries: a notification of a
        checkpoint already handled (its snapshot forgotten) released every retained id."""
        late = checkpoint_id not in self._snapshot_ids
        super().notify_checkpoint_complete(checkpoint_id)
        if late:
            self._in_use -= self._retained
            self._retained = set()


@sink_mutant(
    "expired_ids_as_committed",
    {"COMMIT-019"},
    "a recovered committable whose id expired is discarded as committed (FLINK-39072's proposal)",
)
class _ExpiredIdsAsCommittedSink(ExactlyOnceSink):
    def _commit(self, committables: Iterable[Any]) -> None:
        """A committable whose id the broker forgot is dropped as if committed: what FLINK-39072 proposes
        for Flink (a known failure, the committable discarded), silent where it never committed."""
        for c in committables:
            with contextlib.suppress(InvalidPidMappingError):
                super()._commit([c])


@sink_mutant(
    "timed_out_commit_discarded",
    {"COMMIT-007", "COMMIT-021"},
    "a committable the broker timed out is logged and discarded (Flink's KafkaCommitter, 3.0 to 5.0.0)",
)
class _TimedOutCommitDiscardedSink(ExactlyOnceSink):
    def _commit(self, committables: Iterable[Any]) -> None:
        """A commit or recovery that finds its transaction aborted by the broker's timeout goes on as if it had
        committed: Flink's ``KafkaCommitter`` logs the fenced commit ("recovery took longer than
        transaction.timeout.ms") and discards the committable (``signalFailedWithKnownReason``)."""
        for c in committables:
            with contextlib.suppress(TransactionTimeoutError):
                super()._commit([c])


@sink_mutant(
    "timeout_error_unnamed",
    {"COMMIT-026"},
    "a commit the broker timed out fails with the client's bare error, naming neither the id nor the timeout",
)
class _TimeoutErrorUnnamedSink(ExactlyOnceSink):
    def _commit(self, committables: Iterable[Any]) -> None:
        """The sink fails, but with an error of its own that says only that the commit failed, as a Python sink
        passing on librdkafka's fenced-producer text does: the operator learns neither which transaction nor
        which setting to raise."""
        try:
            super()._commit(committables)
        except TransactionTimeoutError as exc:
            raise KafkaError("failed to commit the transaction: the producer was fenced") from exc


@sink_mutant(
    "close_leaves_transactions_open",
    {"COMMIT-020"},
    "a stopped job's open transactions are left to the broker's timeout, blocking read_committed readers",
)
class _CloseLeavesOpenSink(ExactlyOnceSink):
    """Stopping the job ends nothing: the writers' open transactions wait for the broker's timeout."""

    def close(self) -> None:
        self._writers = []


@sink_mutant(
    "close_aborts_pending",
    {"COMMIT-020"},
    "a stopped job also aborts the transactions pending checkpoints pre-committed (lost on restart)",
)
class _CloseAbortsPendingSink(ExactlyOnceSink):
    """Stopping the job also aborts what pending checkpoints pre-committed: a restart cannot commit it."""

    def close(self) -> None:
        for batch in self.pending.values():
            for c in batch:
                self.log.resume_producer(c.transactional_id, c.producer_id, c.epoch).abort_transaction()
        super().close()


@sink_mutant(
    "fenced_swallowed",
    {"COMMIT-007"},
    "a fenced recovery commit swallowed as success"
    " (Flink discards it, FLINK-8086; kconform's COMMIT-007 requires the failure)",
)
class _SwallowFencedSink(ExactlyOnceSink):
    def _commit(self, committables: Iterable[Any]) -> None:
        """A fenced recovery commit swallowed as success: Flink's ``KafkaCommitter`` discards it on purpose
        (FLINK-8086); kconform's COMMIT-007 requires the failure."""
        for c in committables:
            try:
                super()._commit([c])
            except ProducerFencedError:
                continue


@sink_mutant("colliding_ids", {"COMMIT-005"}, "FLINK-7978: id without subtask")
class _SharedIdSink(ExactlyOnceSink):
    def _next_id(self, subtask: int) -> str:
        """FLINK-7978: the subtask index is missing from the transactional id."""
        return super()._next_id(0)


@sink_mutant("reuse_recovered_producer", {"COMMIT-006", "COMMIT-010"}, "FLINK-8132: recovered producer reused")
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


@sink_mutant("own_checkpoint_only_commit", {"COMMIT-009"}, "lost notification strands earlier checkpoints")
class _OwnCheckpointOnlySink(ExactlyOnceSink):
    def notify_checkpoint_complete(self, checkpoint_id: int) -> None:
        """Commits only the notified checkpoint's transactions; earlier ones wait for a recovery."""
        self._commit(self.pending.pop(checkpoint_id, []))


@sink_mutant("commit_ahead_of_notification", {"COMMIT-002"}, "a notification of N also commits N+1, still pending")
class _CommitAheadSink(ExactlyOnceSink):
    def notify_checkpoint_complete(self, checkpoint_id: int) -> None:
        """Commits every pending transaction, those of later checkpoints that have not completed too."""
        super().notify_checkpoint_complete(max(self.pending, default=checkpoint_id))


@sink_mutant(
    "leftover_ids_not_fenced", {"COMMIT-012"}, "recovery aborts only the new subtasks' ids (no subtask + k*n walk)"
)
class _OwnRangeAbortSink(ExactlyOnceSink):
    def _abort_lingering(self, checkpoint: SinkCheckpoint) -> None:
        """Aborts the ids of the new subtasks only: those of a larger earlier parallelism stay open."""
        for prefix, naming in self._walks(checkpoint):
            for subtask in range(self.parallelism):
                self._abort_ids_of(prefix, subtask, checkpoint.next_txn, naming)


@sink_mutant("old_prefix_left_open", {"COMMIT-017"}, "recovery under a changed prefix aborts only the new prefix's ids")
class _CurrentPrefixOnlySink(ExactlyOnceSink):
    def _prefixes_to_abort(self, checkpoint: SinkCheckpoint) -> list[str]:
        """Recovery probes only the current prefix: a run under a new prefix leaves the old one's open."""
        return [self.prefix]


@sink_mutant(
    "old_naming_left_open",
    {"COMMIT-023"},
    "recovery under a changed naming strategy probes only the new naming's ids",
)
class _CurrentNamingOnlySink(ExactlyOnceSink):
    def _namings_to_abort(self, checkpoint: SinkCheckpoint) -> list[NamingStrategy]:
        """Recovery probes only the current naming: a run restored under the other one leaves the old one's
        open (as Flink's PROBING abort would after POOLING, had Flink not refused that switch)."""
        return [self.naming]


@mutant(
    "default_prefix_shared",
    {"COMMIT-022"},
    "connector 3.x: a sink without a prefix takes 'kafka-sink', and a job's sinks may share one (FLINK-37380)",
)
@dataclass(frozen=True)
class DefaultPrefixShared(ReferenceAdapter):
    """No prefix means connector 3.x's default ``kafka-sink``, and a job starts sinks sharing a prefix: they
    name the same ids and fence each other once they write."""

    def sink(self, config: SinkConfig) -> ExactlyOnceSink:
        return super().sink(replace(config, prefix=config.prefix or DEFAULT_3X_PREFIX))

    def sinks(self, configs: Sequence[SinkConfig]) -> list[ExactlyOnceSink]:
        return [self.sink(config) for config in configs]

    def recover_sink(self, config: RecoveryConfig) -> ExactlyOnceSink:
        return super().recover_sink(replace(config, prefix=config.prefix or DEFAULT_3X_PREFIX))


DEFAULT_3X_PREFIX = "kafka-sink"
"""``KafkaSinkBuilder.transactionalIdPrefix``'s default up to connector 3.4.0, removed by FLINK-37380 in 4.0.0."""


@sink_mutant("zombie_reclaims_fenced_id", {"COMMIT-006"}, "a fenced writer re-initialises its id and carries on")
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


# -- Kafka's strategies -------------------------------------------------------------------------


@partitioner_mutant(
    "librdkafka_default_partitioner", {"STRAT-001"}, "sink on librdkafka's consistent_random (CRC32) partitioner"
)
class _ConsistentRandomPartitioner(StickyPartitioner):
    """librdkafka's default partitioner, ``consistent_random``: CRC32 of the key; an empty key goes the keyless way."""

    def partition(
        self, topic: str, partition: int | None, key: bytes | None, value: bytes | None, num_partitions: int
    ) -> int:
        if partition is None and key is not None:
            return zlib.crc32(key) % num_partitions if key else self.keyless(topic, len(value or b""), num_partitions)
        return super().partition(topic, partition, key, value, num_partitions)


@partitioner_mutant("null_key_hashed", {"STRAT-003"}, "a null key hashed as the empty key")
class _NullKeyHashedPartitioner(StickyPartitioner):
    """A null key hashed as the empty key: every keyless record lands in one partition."""

    def partition(
        self, topic: str, partition: int | None, key: bytes | None, value: bytes | None, num_partitions: int
    ) -> int:
        return super().partition(topic, partition, b"" if key is None else key, value, num_partitions)


@assignor_mutant("range_in_join_order", {"STRAT-005"}, "Range with members in join order, not sorted", strategy="range")
def _range_in_join_order(group: Group) -> Assignment:
    """Range over the members in the order they joined, not in member order."""
    joined = tuple(replace(m, instance_id=f"{i:06d}") for i, m in enumerate(group.members))
    return range_assign(replace(group, members=joined))


@assignor_mutant(
    "sticky_ignores_ownership", {"STRAT-009"}, "sticky assignor that moves partitions needlessly", strategy="sticky"
)
def _sticky_from_scratch(group: Group) -> Assignment:
    """A balanced sticky assignment that ignores what the members owned."""
    return sticky_assign(replace(group, members=tuple(replace(m, owned=frozenset()) for m in group.members)))


@assignor_mutant(
    "cooperative_revokes_and_assigns",
    {"STRAT-010"},
    "cooperative assignor that revokes and assigns in one rebalance",
    strategy="cooperative-sticky",
)
def _eager_sticky(group: Group) -> Assignment:
    """The eager sticky assignment offered as the cooperative one: a moved partition revoked and assigned at once."""
    return sticky_assign(group)


# -- topic matching: near-miss names ------------------------------------------------------------


@matching_mutant("pattern_search_match", {"DISC-002"}, "pattern found anywhere in the name (re.search)")
def _pattern_searched(subscription: Subscription, topic: str) -> bool:
    """``re.search``: the pattern anywhere in the name, so ``orders`` also subscribes ``eu-orders``."""
    if subscription.pattern is None:
        return subscription.matches(topic)
    return subscription.pattern.search(topic) is not None


@matching_mutant(
    "pattern_anchored_alternation", {"DISC-002"}, "full match imitated by ^pattern$, wrong for alternations"
)
def _pattern_anchored(subscription: Subscription, topic: str) -> bool:
    """``re.match('^' + pattern + '$')``: the anchors bind to the alternatives, so ``a|b`` matches ``a-dlq``."""
    if subscription.pattern is None:
        return subscription.matches(topic)
    return re.match(f"^{subscription.pattern.pattern}$", topic) is not None


@matching_mutant("fixed_case_insensitive", {"DISC-001"}, "listed topics compared case-insensitively")
def _fixed_case_insensitive(subscription: Subscription, topic: str) -> bool:
    """Listed names compared case-insensitively: ``Orders`` also subscribes ``orders``."""
    if subscription.pattern is not None:
        return subscription.matches(topic)
    return topic.casefold() in {t.casefold() for t in subscription.topics}


@matching_mutant("fixed_prefix_match", {"DISC-001"}, "listed topics compared as prefixes")
def _fixed_prefix(subscription: Subscription, topic: str) -> bool:
    """Listed names compared as prefixes: ``orders`` also subscribes ``orders-dlq``."""
    if subscription.pattern is not None:
        return subscription.matches(topic)
    return any(topic.startswith(t) for t in subscription.topics)


@matching_mutant("fixed_list_as_regex", {"DISC-001"}, "listed topics joined into an unescaped regex")
def _fixed_as_regex(subscription: Subscription, topic: str) -> bool:
    """The list joined into an unescaped regex: the ``.`` of ``a.b`` also subscribes ``a-b``."""
    if subscription.pattern is not None:
        return subscription.matches(topic)
    return re.fullmatch("|".join(sorted(subscription.topics)), topic) is not None


# -- offset commit on late notifications ---------------------------------------------------------


@source_mutant(
    "last_notified_offsets_win", {"RESTORE-007"}, "a late notification commits its older checkpoint's offsets"
)
class _LastNotifiedWinsJob(SourceJob):
    """Commits the notified checkpoint's offsets whenever a notification comes, even one older than the last."""

    def notify_checkpoint_complete(self, checkpoint_id: int, store: Any, group: str) -> None:
        offsets = self.pending_commits.get(checkpoint_id)
        if offsets:
            store.commit_offsets(group, offsets)


@source_mutant(
    "keep_unsubscribed_ignored",
    {"RESTORE-005"},
    "keep-unsubscribed=true, yet unsubscribed topics are dropped on restore",
)
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
        isolation: Isolation = Isolation.READ_UNCOMMITTED,
    ) -> SourceJob:
        return super().restore(
            checkpoint, parallelism, subscription, metadata, variant, False, on_zero, initial_offset, owner, isolation
        )


@source_mutant(
    "fetch_after_position",
    {"RESTORE-003", "RESTORE-013"},
    "the source's fetch starts one past its position: a record skipped per poll",
)
class _FetchAfterPositionJob(SourceJob):
    """Reads a known position as the last record read, not the next one: one record skipped per poll."""

    def poll(self, reader: LogReader, tp: TopicPartition, max_records: int) -> list[Record]:
        position = next_offsets(self.offsets)[tp]
        if not is_sentinel(position) and position < reader.latest_offset(tp, Isolation.READ_UNCOMMITTED):
            self.advance(tp, position + 1)
        return super().poll(reader, tp, max_records)


@source_mutant(
    "aborted_records_read",
    {"RESTORE-013"},
    "the source's consumer reads read_uncommitted whatever isolation the job asks for: aborted records emitted",
)
class _ReadUncommittedJob(SourceJob):
    """Its consumer is made without the job's ``isolation.level``, so Kafka's default, read_uncommitted, reads."""

    def __post_init__(self) -> None:
        super().__post_init__()
        self.isolation = Isolation.READ_UNCOMMITTED


@source_mutant(
    "position_counts_records",
    {"RESTORE-013"},
    "the source's position moves by the number of records a poll returned: a marker or aborted record it "
    "passed puts it behind, and the next poll reads records again",
)
class _CountingPositionJob(SourceJob):
    """Moves the position by the records a poll returned, as if every offset held one (Spark's Kafka source
    assumed consecutive offsets until SPARK-25005)."""

    def poll(self, reader: LogReader, tp: TopicPartition, max_records: int) -> list[Record]:
        position = next_offsets(self.offsets).get(tp, LATEST)
        records = super().poll(reader, tp, max_records)
        subtask = self.owner_of(tp)
        if records and subtask is not None and position != LATEST:
            start = reader.earliest_offset(tp) if position == EARLIEST else position
            self.offsets[subtask][tp] = start + len(records)
        return records


@source_mutant(
    "empty_values_as_null",
    {"RESTORE-014"},
    "the source hands on an empty value (or key) as null: a tombstone downstream (librdkafka 0.11.0, #1386)",
)
class _EmptyAsNullJob(SourceJob):
    """As librdkafka 0.11.0's consumer did (confluentinc/librdkafka#1386, fixed in 0.11.1): an empty value or
    key reaches the application as null, so an empty record becomes a tombstone."""

    def poll(self, reader: LogReader, tp: TopicPartition, max_records: int) -> list[Record]:
        return [replace(r, key=r.key or None, value=r.value or None) for r in super().poll(reader, tp, max_records)]


@source_mutant(
    "sentinels_resolved_eagerly", {"DISC-005"}, "every EARLIEST sentinel resolved at the first poll of any partition"
)
class _EagerSentinelJob(SourceJob):
    """Resolves every EARLIEST sentinel at the first poll of any partition, not at each one's own first read."""

    def poll(self, reader: LogReader, tp: TopicPartition, max_records: int) -> list[Record]:
        for offsets in self.offsets:
            for other, position in list(offsets.items()):
                if position == EARLIEST:
                    offsets[other] = reader.earliest_offset(other)
        return super().poll(reader, tp, max_records)


@source_mutant(
    "latest_resolved_at_first_read",
    {"DISC-005"},
    "LATEST resolved at the partition's first read, not at discovery (before FLINK-28303)",
)
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


@source_mutant(
    "offsets_committed_at_snapshot",
    {"RESTORE-007"},
    "offsets committed when the snapshot is taken, before the checkpoint completes",
)
class _CommitAtSnapshotJob(SourceJob):
    """Commits the snapshot's offsets when it is taken, before the checkpoint is known to complete."""

    def snapshot(self, checkpoint_id: int, store: OffsetStore | None = None, group: str = "") -> SourceCheckpoint:
        state = super().snapshot(checkpoint_id, store, group)
        if store is not None and self.pending_commits[checkpoint_id]:
            store.commit_offsets(group, self.pending_commits[checkpoint_id])
        return state


@source_mutant(
    "startup_mode_on_restore",
    {"RESTORE-004"},
    "on restore, partitions the state lacks start at the configured startup mode",
)
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


@source_mutant(
    "restored_on_two_subtasks",
    {"ASSIGN-007"},
    "a restore gives the first subtask's partitions to the second as well: both read them",
)
class _RestoredTwiceJob(SourceJob):
    """After a restore, subtask 1 also holds subtask 0's partitions at their offsets (a state handed to two
    readers): whatever the assigner, those partitions are read twice."""

    @classmethod
    def restore(cls, checkpoint: SourceCheckpoint, parallelism: int, *args: Any) -> SourceJob:
        job = super().restore(checkpoint, parallelism, *args)
        if parallelism > 1:
            job.offsets[1].update(job.offsets[0])
        return job


@source_mutant(
    "vanished_partitions_pruned",
    {"DISC-008"},
    "a deleted topic's partitions dropped from the source's state at the next discovery",
)
class _PruningJob(SourceJob):
    """Offsets of partitions the metadata no longer lists are dropped at each discovery: a deleted topic's
    progress is forgotten, so a topic re-created under its name is read again from its start."""

    def discover(self, metadata: Metadata, reader: Any) -> dict[TopicPartition, SubtaskIndex]:
        new = super().discover(metadata, reader)
        for offsets in self.offsets:
            for tp in [tp for tp in offsets if tp.partition not in metadata.get(tp.topic, ())]:
                del offsets[tp]
        return new


@source_mutant(
    "splits_rechunked_at_same_parallelism",
    {"RESTORE-002"},
    "split state re-chunked at an unchanged parallelism (Flink leaves each subtask its own)",
    restore_variant=RestoreVariant.SPLIT_REDISTRIBUTION,
)
class _RechunkingJob(SourceJob):
    """Split state cut into even chunks even when the parallelism is unchanged, where Flink's
    repartitioner leaves every subtask its own list: safe, but partitions move between readers."""

    @classmethod
    def restore(cls, checkpoint: SourceCheckpoint, parallelism: int, *args: Any) -> SourceJob:
        merged = (tuple(e for entries in checkpoint.by_subtask for e in entries),)
        rechunked = replace(checkpoint, by_subtask=merged) if parallelism > 1 else checkpoint
        return super().restore(rechunked, parallelism, *args)


@source_mutant(
    "scale_in_ignored",
    {"RESTORE-002"},
    "a restore at a lower parallelism keeps the checkpoint's subtasks and their splits",
    restore_variant=RestoreVariant.SPLIT_REDISTRIBUTION,
)
class _ScaleInIgnoredJob(SourceJob):
    """A restore at a lower parallelism keeps the checkpoint's: every split stays on its old subtask, so
    the job runs more readers than it was given (safe, but not the parallelism asked for)."""

    @classmethod
    def restore(cls, checkpoint: SourceCheckpoint, parallelism: int, *args: Any) -> SourceJob:
        return super().restore(checkpoint, max(parallelism, checkpoint.parallelism), *args)


@source_mutant(
    "restore_without_discovery",
    {"RESTORE-004"},
    "the restore discovers nothing itself: partitions new since the checkpoint wait for the next discovery",
)
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
