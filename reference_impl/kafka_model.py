"""A deterministic model of the Kafka semantics the spec relies on (spec/kafka.md): the oracle.

Pure Python with no I/O and no wall clock: time is a logical clock moved by ``advance_clock``,
and every choice is explicit, so a run is a function of its calls. It implements the ports
``MetadataSource``, ``TransactionalLog``, ``LogReader`` and ``OffsetStore`` the way Apache Kafka
documents them:

- each partition is a log whose offsets are taken by data records *and* by the commit/abort
  control markers a transaction writes when it ends (KAFKA-003);
- the high watermark (HW) is the next offset; the last stable offset (LSO) is the first offset
  of the earliest open transaction on the partition, else the HW (KAFKA-002);
- ``read_committed`` returns data below the LSO and never aborted data (KAFKA-001);
  ``read_uncommitted`` returns every data record below the HW (KAFKA-007);
- ``init_producer`` keeps the producer id, bumps the epoch, aborts the id's open transaction and
  fences every older incarnation (KAFKA-004, KAFKA-013);
- the broker aborts a transaction open longer than its timeout and bumps the epoch, so the
  incarnation's next call raises ``TransactionTimeoutError`` (KAFKA-005);
- offsets sent to a transaction become group offsets only when it commits (KAFKA-006), and then
  only where no offset commit was appended after they were sent (KAFKA-013);
- ``resume_producer`` takes over a flushed open transaction of the current incarnation, as
  Flink does by reflection and KIP-939 allows (KAFKA-015);
- a transactional batch produced to a partition that is not in its producer's open transaction
  (``produce_without_add``: no ``AddPartitionsToTxn`` first) is refused with ``InvalidTxnStateError``,
  as a partition leader that verifies with the coordinator refuses it (KAFKA-016). The LSO is kept
  the way a partition leader keeps it, from the transactional data each producer appended there,
  not from what the coordinator knows: a batch the coordinator never heard of would hold it for good.

Simplifications, each harmless to the spec: the log start offset is always 0 (no retention),
a record reaches the log when produced (``flush`` only marks the transaction pre-committed),
markers are written by the call that ends a transaction and a transaction times out the moment
the clock passes its timeout (Kafka does both a little later), and an epoch is bumped by exactly
one per ``init_producer`` or timeout abort (spec/kafka.md, "The model against real Kafka").
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from .ports import (
    InvalidPidMappingError,
    InvalidTxnStateError,
    Isolation,
    KafkaError,
    ProducerFencedError,
    Record,
    TransactionTimeoutError,
)
from .types import TopicPartition

DEFAULT_TRANSACTION_TIMEOUT_MS = 60_000
"""Kafka's default ``transaction.timeout.ms``."""
TRANSACTIONAL_ID_EXPIRATION_MS = 7 * 24 * 3600 * 1000
"""Kafka's default ``transactional.id.expiration.ms``: an id with no transaction in progress is
forgotten once it goes this long without use (``TransactionStateManager``)."""


class _Status(enum.Enum):
    OPEN = "open"
    COMMITTED = "committed"
    ABORTED = "aborted"


@dataclass(frozen=True, slots=True)
class _Entry:
    """One offset of a partition log: a data record or a control marker (``control`` set)."""

    key: bytes | None
    value: bytes | None
    timestamp_ms: int
    txn: int | None
    """Sequence number of the transaction that wrote it; ``None`` for a non-transactional record."""
    control: _Status | None = None


@dataclass(frozen=True, slots=True)
class _GroupOffset:
    """One partition's offset commit as the group coordinator appended it to ``__consumer_offsets``."""

    offset: int
    metadata: str
    appended: int
    """Position of its commit record in the coordinator's log: of two commits, the later appended wins."""


@dataclass(slots=True)
class _Txn:
    """An open transaction as the coordinator sees it."""

    seq: int
    started_ms: int | None = None
    """Set when the first partition or group joins the transaction, as the coordinator does."""
    first_offsets: dict[TopicPartition, int] = field(default_factory=dict)
    offsets: dict[str, dict[TopicPartition, _GroupOffset]] = field(default_factory=dict)
    """Offsets sent to the transaction, appended when sent and applied when it commits."""
    flushed: bool = True


@dataclass(slots=True)
class _TransactionalId:
    """Coordinator state of one ``transactional.id``."""

    producer_id: int
    epoch: int
    timeout_ms: int
    txn: _Txn | None = None
    timed_out_epochs: set[int] = field(default_factory=set)
    last_outcome: _Status | None = None
    """How the current epoch's last transaction ended: a resumed commit of a committed one is a retry."""
    updated_ms: int = 0
    """The coordinator's ``txnLastUpdateTimestamp``: the id expires this long after it, if no transaction is open."""


class KafkaModel:
    """The deterministic Kafka: partition logs, a transaction coordinator and group offsets."""

    def __init__(self, transaction_timeout_ms: int = DEFAULT_TRANSACTION_TIMEOUT_MS) -> None:
        self._default_timeout_ms = transaction_timeout_ms
        self._now_ms = 0
        self._logs: dict[TopicPartition, list[_Entry]] = {}
        self._topics: dict[str, int] = {}
        self._txn_ids: dict[str, _TransactionalId] = {}
        self._status: dict[int, _Status] = {}
        self._groups: dict[str, dict[TopicPartition, _GroupOffset]] = {}
        self._offset_commits = 0
        """Offset commit records appended so far, plain or transactional (``_GroupOffset.appended``)."""
        self._next_producer_id = 1000
        self._ongoing: dict[TopicPartition, dict[int, int]] = {}
        """The partition leaders' view (``ProducerStateManager``): per partition, producer id -> the first offset of
        its transactional data there that no marker has ended yet. The LSO is the least of them (KAFKA-002)."""

    # -- clock -------------------------------------------------------------------------------

    @property
    def now_ms(self) -> int:
        return self._now_ms

    def advance_clock(self, ms: int) -> None:
        """Move logical time forward; the broker then aborts every transaction past its timeout."""
        if ms < 0:
            raise ValueError("the clock never moves backwards")
        self._now_ms += ms
        for state in self._txn_ids.values():
            txn = state.txn
            if txn is not None and txn.started_ms is not None and self._now_ms - txn.started_ms > state.timeout_ms:
                self._end(state, _Status.ABORTED)
                state.timed_out_epochs.add(state.epoch)
                state.epoch += 1
        # An id whose transaction ended (or that never joined one) is forgotten after the expiration.
        for tid, state in list(self._txn_ids.items()):
            idle = state.txn is None or state.txn.started_ms is None
            if idle and self._now_ms - state.updated_ms >= TRANSACTIONAL_ID_EXPIRATION_MS:  # shouldExpire
                del self._txn_ids[tid]

    # -- admin -------------------------------------------------------------------------------

    def create_topic(self, name: str, partitions: int) -> None:
        if name in self._topics:
            raise KafkaError(f"topic {name!r} already exists")
        if partitions < 1:
            raise KafkaError("a topic needs at least one partition")
        self._topics[name] = 0
        self._add_partitions(name, partitions)

    def create_partitions(self, topic: str, new_total: int) -> None:
        """Grow a topic to ``new_total`` partitions; the new ones are empty (KAFKA-009)."""
        current = self._partition_count(topic)
        if new_total <= current:
            raise KafkaError(f"topic {topic!r} has {current} partitions; cannot grow to {new_total}")
        self._add_partitions(topic, new_total)

    def delete_topic(self, name: str) -> None:
        """Remove a topic with its logs and its group offsets; open transactions forget its partitions."""
        for p in range(self._partition_count(name)):
            tp = TopicPartition(name, p)
            del self._logs[tp]
            self._ongoing.pop(tp, None)
            for state in self._txn_ids.values():
                if state.txn is not None:
                    state.txn.first_offsets.pop(tp, None)
            for offsets in self._groups.values():
                offsets.pop(tp, None)
        del self._topics[name]

    def _add_partitions(self, topic: str, new_total: int) -> None:
        for p in range(self._topics[topic], new_total):
            self._logs[TopicPartition(topic, p)] = []
        self._topics[topic] = new_total

    def _partition_count(self, topic: str) -> int:
        if topic not in self._topics:
            raise KafkaError(f"unknown topic {topic!r}")
        return self._topics[topic]

    def _log(self, tp: TopicPartition) -> list[_Entry]:
        if tp not in self._logs:
            raise KafkaError(f"unknown topic or partition {tp}")
        return self._logs[tp]

    # -- MetadataSource ----------------------------------------------------------------------

    def list_topics(self) -> Mapping[str, frozenset[int]]:
        return {name: frozenset(range(n)) for name, n in self._topics.items()}

    # -- writes ------------------------------------------------------------------------------

    def produce(self, tp: TopicPartition, key: bytes | None, value: bytes | None) -> int:
        """Non-transactional produce; returns the record's offset."""
        return self._append(tp, _Entry(key, value, self._now_ms, None))

    def _append(self, tp: TopicPartition, entry: _Entry) -> int:
        log = self._log(tp)
        log.append(entry)
        return len(log) - 1

    def _end(self, state: _TransactionalId, outcome: _Status) -> None:
        """Write ``outcome``'s marker to every partition of the open transaction, then close it."""
        txn = state.txn
        assert txn is not None
        for tp in sorted(txn.first_offsets):
            self._append(tp, _Entry(None, None, self._now_ms, txn.seq, outcome))
            self._ongoing.get(tp, {}).pop(state.producer_id, None)
        if outcome is _Status.COMMITTED:
            # Kafka's group coordinator applies a transaction's offsets at its marker, except where a
            # commit appended after them (plain, or another transaction's) already holds the partition.
            for group, offsets in txn.offsets.items():
                stored = self._groups.setdefault(group, {})
                for tp, sent in offsets.items():
                    if tp not in stored or stored[tp].appended < sent.appended:
                        stored[tp] = sent
        self._status[txn.seq] = outcome
        state.txn = None
        state.last_outcome = outcome
        state.updated_ms = self._now_ms

    # -- TransactionalLog --------------------------------------------------------------------

    def open_transactional_ids(self) -> list[str]:
        """``ListTransactions`` (KIP-664) filtered to ongoing ones: the ids whose transaction a partition
        or group joined and that has not ended (what Flink's listing-based abort starts from)."""
        return sorted(
            t for t, state in self._txn_ids.items() if state.txn is not None and state.txn.started_ms is not None
        )

    def transactional_ids(self) -> list[str]:
        """``ListTransactions`` without a state filter: every id the coordinator holds state for, ended
        transactions included (the broker keeps them until ``transactional.id.expiration.ms``)."""
        return sorted(self._txn_ids)

    def init_producer(self, transactional_id: str, transaction_timeout_ms: int | None = None) -> ModelProducer:
        """``init_transactions``: same producer id, epoch + 1, open transaction aborted."""
        timeout = self._default_timeout_ms if transaction_timeout_ms is None else transaction_timeout_ms
        state = self._txn_ids.get(transactional_id)
        if state is None:
            state = _TransactionalId(self._next_producer_id, 0, timeout, updated_ms=self._now_ms)
            self._next_producer_id += 1
            self._txn_ids[transactional_id] = state
        else:
            if state.txn is not None:
                self._end(state, _Status.ABORTED)
            state.epoch += 1
            state.last_outcome = None
            state.timeout_ms = timeout
            state.updated_ms = self._now_ms
        return ModelProducer(self, transactional_id, state.producer_id, state.epoch)

    def resume_producer(self, transactional_id: str, producer_id: int, epoch: int) -> ModelProducer:
        """Take over the flushed open transaction of incarnation ``(producer_id, epoch)``.

        If that incarnation's last transaction already committed, the handle's commit is a
        retry, which the coordinator answers with success (``EndTxn`` is idempotent per epoch).
        """
        handle = ModelProducer(self, transactional_id, producer_id, epoch, resumed=True)
        state = self._current(handle)
        txn = state.txn
        if txn is None and state.last_outcome is _Status.COMMITTED:
            return handle
        if txn is None or not txn.flushed:
            raise InvalidTxnStateError(
                f"{transactional_id!r} (pid {producer_id}, epoch {epoch}) has no pre-committed transaction"
            )
        if txn.started_ms is None and state.last_outcome is not _Status.COMMITTED:
            # No partition or group ever joined it: the coordinator's state is still Empty, and
            # EndTxn in Empty is INVALID_TXN_STATE (TransactionCoordinator.handleEndTransaction),
            # which a committer resuming an empty transaction meets (FLINK-31363, COMMIT-014).
            raise InvalidTxnStateError(
                f"{transactional_id!r} (pid {producer_id}, epoch {epoch}): its transaction holds nothing, "
                "so the coordinator never saw it (state Empty) and cannot commit it"
            )
        return handle

    def _current(self, handle: ModelProducer) -> _TransactionalId:
        """The id's coordinator state if ``handle`` is its current incarnation; else the fatal error."""
        state = self._txn_ids.get(handle.transactional_id)
        if state is None or state.producer_id != handle.producer_id:
            # TransactionCoordinator answers INVALID_PRODUCER_ID_MAPPING when it has no state for the
            # id, or holds it under another producer id (it expired and was initialised again).
            raise InvalidPidMappingError(
                f"{handle.transactional_id!r}: the coordinator holds no producer id {handle.producer_id} for it "
                "(expired after transactional.id.expiration.ms without use, or never initialised)"
            )
        if state.epoch < handle.epoch:
            raise ProducerFencedError(f"{handle.transactional_id!r}: unknown producer epoch {handle.epoch}")
        if handle.epoch in state.timed_out_epochs:
            raise TransactionTimeoutError(
                f"{handle.transactional_id!r} epoch {handle.epoch}: the broker aborted its transaction, open longer "
                f"than transaction.timeout.ms = {state.timeout_ms} ms"
            )
        if handle.epoch != state.epoch:
            raise ProducerFencedError(f"{handle.transactional_id!r} epoch {handle.epoch} fenced by epoch {state.epoch}")
        return state

    def _open(self, handle: ModelProducer) -> _Txn:
        txn = self._current(handle).txn
        if txn is None:
            raise InvalidTxnStateError(f"{handle.transactional_id!r}: no transaction in progress")
        if txn.started_ms is None:
            txn.started_ms = self._now_ms
            self._current(handle).updated_ms = self._now_ms
        return txn

    def _begin(self, handle: ModelProducer) -> None:
        state = self._current(handle)
        if state.txn is not None:
            raise InvalidTxnStateError(f"{handle.transactional_id!r}: a transaction is already in progress")
        seq = len(self._status)
        self._status[seq] = _Status.OPEN
        state.txn = _Txn(seq)

    def _produce_txn(self, handle: ModelProducer, tp: TopicPartition, key: bytes | None, value: bytes | None) -> None:
        self._current(handle)
        self._log(tp)
        txn = self._open(handle)
        offset = self._append_transactional(handle, tp, txn.seq, key, value)
        txn.first_offsets.setdefault(tp, offset)  # AddPartitionsToTxn: the coordinator now knows the partition
        txn.flushed = False

    def _produce_without_add(
        self, handle: ModelProducer, tp: TopicPartition, key: bytes | None, value: bytes | None
    ) -> int:
        """A Produce of a transactional batch with no AddPartitionsToTxn before it (KAFKA-016)."""
        state = self._current(handle)
        self._log(tp)
        txn = state.txn
        if txn is None or tp not in txn.first_offsets:
            # The partition leader asks the coordinator whether tp is in the producer's ongoing transaction
            # (transaction.partition.verification.enable): INVALID_TXN_STATE for a Produce below v11.
            raise InvalidTxnStateError(
                f"{handle.transactional_id!r}: {tp} is not in the producer's open transaction (KAFKA-016)"
            )
        txn.flushed = False
        return self._append_transactional(handle, tp, txn.seq, key, value)

    def _append_transactional(
        self, handle: ModelProducer, tp: TopicPartition, seq: int, key: bytes | None, value: bytes | None
    ) -> int:
        """Append transactional data; the leader holds the LSO at the producer's first unended offset there."""
        offset = self._append(tp, _Entry(key, value, self._now_ms, seq))
        self._ongoing.setdefault(tp, {}).setdefault(handle.producer_id, offset)
        return offset

    def _send_offsets(self, handle: ModelProducer, group: str, offsets: Mapping[TopicPartition, int]) -> None:
        self._open(handle).offsets.setdefault(group, {}).update(self._appended(offsets, ""))

    def _flush(self, handle: ModelProducer) -> None:
        state = self._current(handle)
        if state.txn is not None:
            state.txn.flushed = True

    def _finish(self, handle: ModelProducer, outcome: _Status) -> None:
        state = self._current(handle)
        if state.txn is None and handle.resumed and state.last_outcome is outcome:
            return
        if state.txn is None:
            raise InvalidTxnStateError(f"{handle.transactional_id!r}: no transaction in progress")
        self._end(state, outcome)

    # -- LogReader ---------------------------------------------------------------------------

    def earliest_offset(self, tp: TopicPartition) -> int:
        self._log(tp)
        return 0

    def high_watermark(self, tp: TopicPartition) -> int:
        return len(self._log(tp))

    def last_stable_offset(self, tp: TopicPartition) -> int:
        high = self.high_watermark(tp)
        return min(self._ongoing.get(tp, {}).values(), default=high)

    def latest_offset(self, tp: TopicPartition, isolation: Isolation) -> int:
        if isolation is Isolation.READ_COMMITTED:
            return self.last_stable_offset(tp)
        return self.high_watermark(tp)

    def read(self, tp: TopicPartition, start: int, isolation: Isolation, max_records: int) -> Sequence[Record]:
        """Data records from ``start`` below the isolation's end; read_committed skips aborted ones."""
        log = self._log(tp)
        if not 0 <= start <= len(log):
            raise KafkaError(f"offset {start} out of range [0, {len(log)}] for {tp}")
        records: list[Record] = []
        for offset in range(start, self.latest_offset(tp, isolation)):
            entry = log[offset]
            if len(records) == max_records:
                break
            aborted = entry.txn is not None and self._status[entry.txn] is _Status.ABORTED
            if entry.control is None and not (aborted and isolation is Isolation.READ_COMMITTED):
                records.append(Record(tp.topic, tp.partition, offset, entry.key, entry.value))
        return records

    def offset_for_time(self, tp: TopicPartition, timestamp_ms: int) -> int | None:
        """ListOffsets by timestamp: the first offset whose timestamp is ``>= timestamp_ms`` (KAFKA-011)."""
        log = self._log(tp)
        return next((o for o, e in enumerate(log) if e.timestamp_ms >= timestamp_ms), None)

    # -- OffsetStore -------------------------------------------------------------------------

    def commit_offsets(self, group: str, offsets: Mapping[TopicPartition, int], metadata: str = "") -> None:
        """Commit group offsets, each with the same ``metadata`` string (KAFKA-010)."""
        self._groups.setdefault(group, {}).update(self._appended(offsets, metadata))

    def _appended(self, offsets: Mapping[TopicPartition, int], metadata: str) -> dict[TopicPartition, _GroupOffset]:
        """Append one offset commit record per partition, in order."""
        records = {}
        for tp, offset in offsets.items():
            records[tp] = _GroupOffset(offset, metadata, self._offset_commits)
            self._offset_commits += 1
        return records

    def committed(self, group: str) -> Mapping[TopicPartition, int]:
        return {tp: stored.offset for tp, stored in self._groups.get(group, {}).items()}

    def committed_metadata(self, group: str) -> Mapping[TopicPartition, str]:
        return {tp: stored.metadata for tp, stored in self._groups.get(group, {}).items()}


@dataclass(frozen=True, slots=True)
class ModelProducer:
    """One incarnation ``(transactional_id, producer_id, epoch)``; every call checks it is current."""

    model: KafkaModel
    transactional_id: str
    producer_id: int
    epoch: int
    resumed: bool = False
    """Made by ``resume_producer``: it speaks to the coordinator directly, as Flink's reflection does."""

    def begin_transaction(self) -> None:
        self.model._begin(self)

    def produce(self, topic: str, partition: int, key: bytes | None, value: bytes | None) -> None:
        self.model._produce_txn(self, TopicPartition(topic, partition), key, value)

    def produce_without_add(self, topic: str, partition: int, key: bytes | None, value: bytes | None) -> int:
        """A transactional batch sent with no ``AddPartitionsToTxn`` first, as neither client sends one (the raw
        Produce of KAFKA-016's probe); its offset, or ``InvalidTxnStateError`` when the partition is not in the
        open transaction."""
        return self.model._produce_without_add(self, TopicPartition(topic, partition), key, value)

    def send_offsets_to_transaction(self, group: str, offsets: Mapping[TopicPartition, int]) -> None:
        self.model._send_offsets(self, group, offsets)

    def flush(self) -> None:
        self.model._flush(self)

    def commit_transaction(self) -> None:
        self.model._finish(self, _Status.COMMITTED)

    def abort_transaction(self) -> None:
        self.model._finish(self, _Status.ABORTED)
