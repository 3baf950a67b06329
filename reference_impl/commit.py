"""The exactly-once Kafka sink as Flink runs it: two-phase commit over transactions (COMMIT-001..010).

Per subtask, records between barriers N-1 and N go into one Kafka transaction. At barrier N
the writer flushes it (pre-commit), hands a ``Committable`` (transactional id, producer id,
epoch) to the framework and begins the next transaction. Only when checkpoint N completes
does the committer commit N's transactions. After a crash the sink restores the last
completed checkpoint, commits the committables that checkpoint holds (they may or may not
have been committed before the crash: committing again with the same producer id and epoch is
a no-op in Kafka, but only while no newer transaction uses that producer id and epoch,
FLINK-8132) and aborts every lingering transaction that no completed checkpoint covers.

Transactional-id naming, as named spec options:

- ``incrementing``: ``{prefix}-{subtask}-{n}``, a fresh id per checkpoint interval, ``n`` dense
  (one per barrier, not the checkpoint id, which may skip); lingering transactions are found
  by probing ids upward from the restored ``n`` until one that was never initialised
  (epoch 0), as Flink's ``TransactionAborter`` does.
- ``pooling``: ``{prefix}-{subtask}-p{slot}``, ids reused once their transaction has ended
  (smallest free slot first, so used slots are contiguous); recovery probes slots upward
  from 0 the same way.

A recovery under another naming than its checkpoint's probes the ids of both (COMMIT-023). The sinks
of one job are started together (``refuse_shared_prefixes``): an empty or shared prefix is refused
before any transactional id is initialised (COMMIT-022).

Errors from the log (fenced, invalid state, timeout) propagate unchanged (COMMIT-007).
"""

from __future__ import annotations

import contextlib
import enum
import itertools
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from .ports import ProducerFencedError, TransactionalLog, TransactionalProducer


class NamingStrategy(enum.Enum):
    INCREMENTING = "incrementing"
    POOLING = "pooling"


def transactional_id(prefix: str, subtask: int, suffix: int, naming: NamingStrategy) -> str:
    """The id of subtask's transaction ``suffix`` (a transaction counter or a pool slot).

    Injective for distinct prefixes because the last two dash-separated fields are
    integers (COMMIT-005).
    """
    slot = f"p{suffix}" if naming is NamingStrategy.POOLING else str(suffix)
    return f"{prefix}-{subtask}-{slot}"


def refuse_shared_prefixes(prefixes: Sequence[str]) -> None:
    """``ValueError`` naming the problem when one of a job's sinks has no prefix or shares one (COMMIT-022).

    Sinks with one prefix name the same ids, so they fence each other and one's recovery aborts the
    other's pre-committed transactions (COMMIT-005): refused here, before any of them starts.
    """
    if "" in prefixes:
        raise ValueError(f"sink {prefixes.index('')} of the job has an empty transactional id prefix")
    shared = sorted(prefix for prefix, sinks in Counter(prefixes).items() if sinks > 1)
    if shared:
        sinks = [i for i, prefix in enumerate(prefixes) if prefix == shared[0]]
        raise ValueError(f"sinks {sinks} of the job share the transactional id prefix {shared[0]!r}")


@dataclass(frozen=True, order=True, slots=True)
class Committable:
    """What the committer needs to commit a pre-committed transaction from another process."""

    checkpoint_id: int
    transactional_id: str
    producer_id: int
    epoch: int


@dataclass(frozen=True, slots=True)
class SinkCheckpoint:
    """The sink's part of checkpoint N: the committables not yet known to be committed."""

    checkpoint_id: int
    parallelism: int
    committables: tuple[Committable, ...]
    next_txn: int = 1
    """Suffix of the transactions begun after this barrier (``incrementing``): recovery probes from it."""
    prefix: str = ""
    """The transactional-id prefix of the sink that took it (none for the initial state): a recovery under
    another prefix still aborts what this one left open (COMMIT-017)."""
    naming: NamingStrategy | None = None
    """The naming of the sink that took it (none for the initial state): a recovery under the other one
    still probes this one's ids (COMMIT-023)."""


INITIAL = 0
"""Checkpoint id of the empty state a sink that never completed a checkpoint recovers from."""


@dataclass
class ExactlyOnceSink:
    """All writers of one sink and its committer, driven by barriers and completion notifications."""

    log: TransactionalLog
    prefix: str
    parallelism: int
    naming: NamingStrategy = NamingStrategy.INCREMENTING
    pending: dict[int, list[Committable]] = field(default_factory=dict)
    _writers: list[TransactionalProducer] = field(default_factory=list)
    _next_txn: int = 1
    _last_barrier: int = INITIAL
    _in_use: set[str] = field(default_factory=set)
    """Pooled ids that must not be reused: open, pre-committed, or named by the last completed checkpoint."""
    _retained: set[str] = field(default_factory=set)
    """Committed pooled ids that the last completed checkpoint still names: a recovery may resume them."""
    _snapshot_ids: dict[int, set[str]] = field(default_factory=dict)
    _written: set[int] = field(default_factory=set)
    """Subtasks whose current transaction holds records: only theirs become committables (COMMIT-014)."""

    def __post_init__(self) -> None:
        if not self.prefix:
            raise ValueError("transactional id prefix must not be empty (it keeps sinks apart: COMMIT-005)")
        if self.parallelism < 1:
            raise ValueError(f"parallelism must be >= 1, got {self.parallelism}")

    # -- lifecycle -----------------------------------------------------------------------------
    def start(self) -> None:
        """Open one transaction per subtask for the data of the next checkpoint."""
        self._writers = [self._begin(s) for s in range(self.parallelism)]

    @classmethod
    def recover(
        cls,
        log: TransactionalLog,
        prefix: str,
        parallelism: int,
        checkpoint: SinkCheckpoint,
        naming: NamingStrategy = NamingStrategy.INCREMENTING,
    ) -> ExactlyOnceSink:
        """Restore from the last completed checkpoint: commit its committables, abort the rest.

        Works at any parallelism: lingering ids are probed for every old subtask too.
        """
        sink = cls(log, prefix, parallelism, naming)
        sink._retained = {c.transactional_id for c in checkpoint.committables}
        sink._in_use = set(sink._retained)
        sink._commit(checkpoint.committables)  # COMMIT-003; a second commit is a no-op (COMMIT-010)
        sink._next_txn = checkpoint.next_txn
        sink._last_barrier = checkpoint.checkpoint_id
        sink._abort_lingering(checkpoint)  # COMMIT-004
        sink.start()
        return sink

    @classmethod
    def initial_checkpoint(cls, parallelism: int) -> SinkCheckpoint:
        """The state to recover from when no checkpoint has completed yet."""
        return SinkCheckpoint(INITIAL, parallelism, ())

    # -- data path -----------------------------------------------------------------------------
    def write(self, subtask: int, topic: str, partition: int, key: bytes | None, value: bytes | None) -> None:
        self._writers[subtask].produce(topic, partition, key, value)
        self._written.add(subtask)

    def checkpoint(self, checkpoint_id: int) -> SinkCheckpoint:
        """Barrier N: pre-commit every writer's transaction and begin the next (COMMIT-001).

        A transaction without records gives no committable: no partition joined it, so Kafka's
        coordinator still holds it as Empty and a committer's ``EndTxn`` would fail with
        INVALID_TXN_STATE (FLINK-31363); it is aborted here, which Kafka's client does locally.
        """
        if checkpoint_id <= self._last_barrier:
            raise ValueError(f"barrier {checkpoint_id} is not after the last one, {self._last_barrier}")
        self._last_barrier = checkpoint_id
        self._next_txn += 1
        for subtask, producer in enumerate(self._writers):
            if subtask in self._written:
                producer.flush()
                self.pending.setdefault(checkpoint_id, []).append(
                    Committable(checkpoint_id, producer.transactional_id, producer.producer_id, producer.epoch)
                )
            else:  # nothing to commit, and the coordinator never saw it: end it here (COMMIT-014)
                producer.abort_transaction()
                self._in_use.discard(producer.transactional_id)
            self._writers[subtask] = self._begin(subtask)
        self._written.clear()
        outstanding = tuple(c for cid in sorted(self.pending) if cid <= checkpoint_id for c in self.pending[cid])
        self._snapshot_ids[checkpoint_id] = {c.transactional_id for c in outstanding}
        return SinkCheckpoint(checkpoint_id, self.parallelism, outstanding, self._next_txn, self.prefix, self.naming)

    def notify_checkpoint_complete(self, checkpoint_id: int) -> None:
        """Checkpoint N completed: commit every pending transaction up to N (COMMIT-002, COMMIT-009)."""
        committed: set[str] = set()
        for cid in sorted(c for c in self.pending if c <= checkpoint_id):
            batch = self.pending.pop(cid)
            self._commit(batch)
            committed |= {c.transactional_id for c in batch}
        if checkpoint_id not in self._snapshot_ids:
            # A late or repeated notification: a checkpoint at least as new completed and may still name the
            # retained ids, so none is freed here (freeing one let the next transaction reuse an id that a
            # recovery from that checkpoint must resume: COMMIT-003).
            self._retained |= committed
            return
        named = self._snapshot_ids[checkpoint_id]
        self._snapshot_ids = {c: ids for c, ids in self._snapshot_ids.items() if c > checkpoint_id}
        # A pooled id is reused only once no completed checkpoint names it (else recovery could not resume it).
        ended = committed | self._retained
        self._retained = ended & named
        self._in_use -= ended - named

    def close(self) -> None:
        """The job stops (cancelled, or stopped without a restart): abort each writer's open transaction.

        Records written since the last barrier belong to no checkpoint, so nothing may ever commit
        them; left open they would hold back every ``read_committed`` reader of their partitions until
        the broker's transaction timeout (COMMIT-020). Transactions pre-committed for a pending
        checkpoint stay open: a restart from that checkpoint commits them. As Flink's
        ``ExactlyOnceKafkaWriter.close`` (``abortCurrentProducer``), a writer fenced meanwhile has
        nothing left to abort.
        """
        for producer in self._writers:
            with contextlib.suppress(ProducerFencedError):  # a newer incarnation has aborted it already
                producer.abort_transaction()
        self._writers = []
        self._written.clear()

    # -- internals -----------------------------------------------------------------------------
    def _begin(self, subtask: int) -> TransactionalProducer:
        producer = self.log.init_producer(self._next_id(subtask))
        producer.begin_transaction()
        return producer

    def _next_id(self, subtask: int) -> str:
        if self.naming is NamingStrategy.INCREMENTING:
            return transactional_id(self.prefix, subtask, self._next_txn, self.naming)
        tid = next(
            tid
            for slot in itertools.count()
            if (tid := transactional_id(self.prefix, subtask, slot, self.naming)) not in self._in_use
        )
        self._in_use.add(tid)
        return tid

    def _commit(self, committables: Iterable[Committable]) -> None:
        for c in committables:
            self.log.resume_producer(c.transactional_id, c.producer_id, c.epoch).commit_transaction()

    def _abort_lingering(self, checkpoint: SinkCheckpoint) -> None:
        """``init_transactions`` on every id that may hold an open transaction aborts it (COMMIT-004).

        New subtask i also covers old subtasks i + k*n, so ids left by a larger earlier
        parallelism, checkpointed or not, are aborted too (COMMIT-012). A subtask beyond the
        checkpoint's parallelism whose first id was never used ends the walk. Both this sink's prefix
        and the one the checkpoint was taken under are walked (COMMIT-017), each under both this
        sink's naming and the checkpoint's (COMMIT-023): a prefix or naming changed between runs must
        not leave the old one's transactions open.
        """
        for prefix, naming in self._walks(checkpoint):
            for first in range(self.parallelism):
                subtask = first
                while (
                    self._abort_ids_of(prefix, subtask, checkpoint.next_txn, naming) or subtask < checkpoint.parallelism
                ):
                    subtask += self.parallelism

    def _walks(self, checkpoint: SinkCheckpoint) -> list[tuple[str, NamingStrategy]]:
        """Each (prefix, naming) whose ids a recovery from ``checkpoint`` probes."""
        return [(p, n) for p in self._prefixes_to_abort(checkpoint) for n in self._namings_to_abort(checkpoint)]

    def _prefixes_to_abort(self, checkpoint: SinkCheckpoint) -> list[str]:
        return list(dict.fromkeys(p for p in (self.prefix, checkpoint.prefix) if p))

    def _namings_to_abort(self, checkpoint: SinkCheckpoint) -> list[NamingStrategy]:
        return list(dict.fromkeys(n for n in (self.naming, checkpoint.naming) if n is not None))

    def _abort_ids_of(self, prefix: str, subtask: int, first_txn: int, naming: NamingStrategy) -> bool:
        """Initialise the subtask's ids of ``naming`` in order until one was never used (epoch 0); whether any was.

        Ids the restored checkpoint names are skipped, not initialised: a later recovery from
        the same checkpoint must still be able to resume them.
        """
        start = first_txn if naming is NamingStrategy.INCREMENTING else 0
        for suffix in itertools.count(start):
            tid = transactional_id(prefix, subtask, suffix, naming)
            if tid not in self._in_use and self.log.init_producer(tid).epoch == 0:
                return suffix > start
        raise AssertionError("unreachable: itertools.count never ends")
