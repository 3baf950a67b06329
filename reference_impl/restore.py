"""Source state: snapshot into union list state, restore at any parallelism (RESTORE-001..007).

Offsets here are always the *next* offset to read (FLIP-27's convention; the legacy consumer
stores the last emitted offset and adds one on restore). A partition that starts at EARLIEST holds
that sentinel until its first read resolves it; LATEST is resolved at discovery, to where the log
ends then, so no checkpoint holds it (DISC-005, as Flink's enumerator does from connector 3.1 on).

Two restore variants, named by the spec:

- ``union-filter`` (legacy ``FlinkKafkaConsumer``): every subtask receives the whole union
  list and keeps the entries that the assigner gives it at the *new* parallelism.
- ``split-redistribution`` (FLIP-27): reader splits are redistributed as plain operator list
  state (contiguous chunks); the enumerator's checkpointed ``assigned`` set keeps it from
  handing out a split twice.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from .assignment import Owner, owner
from .discovery import (
    Enumerator,
    Metadata,
    PartitionDiscoverer,
    Subscription,
    ZeroPartitionsPolicy,
)
from .ports import Isolation, LogReader, OffsetStore, Record
from .types import EARLIEST, LATEST, SubtaskIndex, TopicPartition, is_sentinel

Entry = tuple[TopicPartition, int]
"""One element of the list state: a partition and its next offset (or a sentinel)."""


class RestoreVariant(enum.Enum):
    UNION_FILTER = "union-filter"
    SPLIT_REDISTRIBUTION = "split-redistribution"


class OffsetRegressionError(RuntimeError):
    """An attempt to move a partition's next offset backwards (RESTORE-003)."""


@dataclass(frozen=True, slots=True)
class SourceCheckpoint:
    """What one checkpoint of a source holds.

    ``by_subtask[i]`` is subtask i's list state; the union list state is their concatenation.
    ``assigned`` is the enumerator's state (every partition ever handed out), used by
    ``split-redistribution`` only.
    """

    checkpoint_id: int
    parallelism: int
    by_subtask: tuple[tuple[Entry, ...], ...]
    assigned: frozenset[TopicPartition] = frozenset()

    def union(self) -> tuple[Entry, ...]:
        """The union list state, sorted (RESTORE-001)."""
        return tuple(sorted(e for entries in self.by_subtask for e in entries))


def restore_union_filter(
    union: Iterable[Entry],
    subtask: SubtaskIndex,
    parallelism: int,
    subscription: Subscription,
    keep_unsubscribed: bool = False,
    owner_of: Owner = owner,
) -> dict[TopicPartition, int]:
    """The entries of the union state that ``subtask`` owns at ``parallelism`` (RESTORE-002).

    Nothing is filtered against metadata (RESTORE-006); entries of topics the subscription no
    longer includes are dropped unless ``keep_unsubscribed`` (RESTORE-005).
    """
    return {
        tp: offset
        for tp, offset in union
        if owner_of(tp, parallelism) == subtask and (keep_unsubscribed or subscription.matches(tp.topic))
    }


def redistribute_splits(by_subtask: Sequence[Sequence[Entry]], parallelism: int) -> list[list[Entry]]:
    """Flink's list-state redistribution (``RoundRobinOperatorStateRepartitioner``): at an unchanged
    parallelism every subtask keeps its own list; otherwise the concatenated list in contiguous
    chunks whose sizes differ by at most one, the longer ones first."""
    if len(by_subtask) == parallelism:
        return [list(entries) for entries in by_subtask]
    flat = [e for entries in by_subtask for e in entries]
    base, extra = divmod(len(flat), parallelism)
    chunks: list[list[Entry]] = []
    start = 0
    for i in range(parallelism):
        end = start + base + (1 if i < extra else 0)
        chunks.append(flat[start:end])
        start = end
    return chunks


@dataclass
class SourceJob:
    """All subtasks of one Kafka source: discovery, reading progress, checkpoints and restore.

    A small state machine the conformance suite drives against the Kafka model; the Spark
    source runs the same transitions on the offsets JSON of its offset log.
    """

    subscription: Subscription
    parallelism: int
    variant: RestoreVariant = RestoreVariant.UNION_FILTER
    keep_unsubscribed: bool = False
    on_zero: ZeroPartitionsPolicy = ZeroPartitionsPolicy.IGNORE
    initial_offset: int = EARLIEST
    """Start position of the partitions found by the very first discovery of a fresh job."""
    owner: Owner = owner
    """Flink's assigner unless the connector has its own: discovery and the union-filter restore place by it."""
    isolation: Isolation = Isolation.READ_UNCOMMITTED
    """The consumer's ``isolation.level``: Kafka's default, unless the job asks for read_committed (RESTORE-013)."""
    offsets: list[dict[TopicPartition, int]] = field(default_factory=list)
    pending_commits: dict[int, dict[TopicPartition, int]] = field(default_factory=dict)
    _discoverers: list[PartitionDiscoverer] = field(default_factory=list)
    _enumerator: Enumerator | None = None
    _discovered_once: bool = False

    def __post_init__(self) -> None:
        if self.parallelism < 1:
            raise ValueError(f"parallelism must be >= 1, got {self.parallelism}")
        if not self.offsets:
            self.offsets = [{} for _ in range(self.parallelism)]
        if self.variant is RestoreVariant.UNION_FILTER:
            self._discoverers = [
                PartitionDiscoverer(
                    self.subscription, SubtaskIndex(i), self.parallelism, self.on_zero, owner=self.owner
                )
                for i in range(self.parallelism)
            ]
        else:
            self._enumerator = Enumerator(self.subscription, self.parallelism, self.on_zero, owner=self.owner)

    # -- discovery ---------------------------------------------------------------------------
    def discover(self, metadata: Metadata, reader: LogReader) -> dict[TopicPartition, SubtaskIndex]:
        """Run discovery on every subtask and place the partitions it finds (DISC-005).

        Those of the very first discovery of a fresh job start at ``initial_offset``, every later one
        at EARLIEST. LATEST is resolved here, through ``reader``, to the partition's end offset now,
        as Flink's enumerator does from connector 3.0.1 on (FLINK-28303): a checkpoint taken before the
        partition's first read then holds where the log ended at discovery, not a sentinel that a
        restore would resolve past the records written in between. EARLIEST stays a sentinel until
        the partition's first read (``poll``): resolved that late, it loses nothing.
        """
        first = not self._discovered_once
        new = self._discover_new(metadata)
        for tp, subtask in new.items():
            if not first:
                start = EARLIEST
            elif self.initial_offset == LATEST:
                start = reader.latest_offset(tp, self.isolation)
            else:
                start = self.initial_offset
            self.offsets[subtask].setdefault(tp, start)
        return new

    def _discover_new(self, metadata: Metadata) -> dict[TopicPartition, SubtaskIndex]:
        """The partitions discovery finds for the first time, each with the subtask that owns it."""
        self._discovered_once = True
        if self._enumerator is not None:
            return self._enumerator.discover(metadata)
        return {tp: d.subtask for d in self._discoverers for tp in d.discover(metadata)}

    # -- reading -----------------------------------------------------------------------------
    def owner_of(self, tp: TopicPartition) -> SubtaskIndex | None:
        """The subtask currently reading ``tp``, if any."""
        for i, offsets in enumerate(self.offsets):
            if tp in offsets:
                return SubtaskIndex(i)
        return None

    def advance(self, tp: TopicPartition, next_offset: int) -> None:
        """Record that ``tp`` has been read up to ``next_offset`` (exclusive); never backwards."""
        subtask = self.owner_of(tp)
        if subtask is None:
            raise KeyError(f"{tp} is not assigned to any subtask")
        current = self.offsets[subtask][tp]
        if not is_sentinel(current) and next_offset < current:
            raise OffsetRegressionError(f"{tp}: next offset {next_offset} < current {current}")
        self.offsets[subtask][tp] = next_offset

    def poll(self, reader: LogReader, tp: TopicPartition, max_records: int) -> list[Record]:
        """Read the next records of ``tp`` and advance past them (the fetch a subtask's consumer does).

        EARLIEST is resolved here, to the log start, at the partition's first read and not before
        (DISC-005). LATEST is resolved at discovery; it can reach ``poll`` only from a checkpoint
        written without that (before connector 3.1), and is then resolved to the end the isolation reads
        to. The resolved position is kept even when nothing is read, as a consumer's position is after
        its first seek. The position is one past the last record returned, never a count of records:
        control markers and aborted records take offsets too, and the next read passes over them
        (RESTORE-013).
        """
        subtask = self.owner_of(tp)
        if subtask is None:
            raise KeyError(f"{tp} is not assigned to any subtask")
        position = self.offsets[subtask][tp]
        if position == EARLIEST:
            position = reader.earliest_offset(tp)
        elif position == LATEST:
            position = reader.latest_offset(tp, self.isolation)
        records = list(reader.read(tp, position, self.isolation, max_records))
        self.advance(tp, records[-1].offset + 1 if records else position)
        return records

    # -- checkpoints -------------------------------------------------------------------------
    def snapshot(self, checkpoint_id: int, store: OffsetStore | None = None, group: str = "") -> SourceCheckpoint:
        """Write every subtask's offsets (sentinels included) and remember them for commit (RESTORE-001).

        ``store`` and ``group`` are the consumer group a real connector has at hand here; the
        reference commits nothing at snapshot time, only when the checkpoint completes (RESTORE-007).
        """
        by_subtask = tuple(tuple(sorted(o.items())) for o in self.offsets)
        self.pending_commits[checkpoint_id] = {
            tp: off for o in self.offsets for tp, off in o.items() if not is_sentinel(off)
        }
        assigned = frozenset(self._enumerator.assigned) if self._enumerator is not None else frozenset()
        return SourceCheckpoint(checkpoint_id, self.parallelism, by_subtask, assigned)

    def notify_checkpoint_complete(self, checkpoint_id: int, store: OffsetStore, group: str) -> None:
        """Commit checkpoint N's offsets to Kafka only now, and forget older pending ones (RESTORE-007)."""
        offsets = self.pending_commits.get(checkpoint_id)
        if offsets is None:
            return
        for older in [c for c in self.pending_commits if c <= checkpoint_id]:
            del self.pending_commits[older]
        if offsets:
            store.commit_offsets(group, offsets)

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
        """A job restored from ``checkpoint`` at ``parallelism`` that has run its first discovery.

        Partitions the metadata shows but the state lacks start at EARLIEST whatever the configured
        startup mode ``initial_offset`` (RESTORE-004: it applies to a fresh job only), so this
        discovery never resolves LATEST and needs no ``LogReader``; restored partitions missing from
        a partial metadata view are kept (RESTORE-006).
        """
        job = cls(subscription, parallelism, variant, keep_unsubscribed, on_zero, initial_offset, owner, isolation)
        job._discovered_once = True
        if variant is RestoreVariant.UNION_FILTER:
            union = checkpoint.union()
            for i, discoverer in enumerate(job._discoverers):
                job.offsets[i] = restore_union_filter(
                    union, SubtaskIndex(i), parallelism, subscription, keep_unsubscribed, owner
                )
                discoverer.seen.add(tp for tp, _ in union)
        else:
            chunks = redistribute_splits(checkpoint.by_subtask, parallelism)
            job.offsets = [
                {tp: off for tp, off in chunk if keep_unsubscribed or subscription.matches(tp.topic)}
                for chunk in chunks
            ]
            assert job._enumerator is not None
            job._enumerator.assigned.add(checkpoint.assigned | {tp for tp, _ in checkpoint.union()})
        for tp, subtask in job._discover_new(metadata).items():
            job.offsets[subtask].setdefault(tp, EARLIEST)
        return job


def next_offsets(job_offsets: Sequence[Mapping[TopicPartition, int]]) -> dict[TopicPartition, int]:
    """All subtasks' offsets merged into one mapping (a partition is on at most one subtask)."""
    return {tp: off for offsets in job_offsets for tp, off in offsets.items()}
