"""Differential test: one generated operation sequence on ``KafkaModel`` and on the live broker.

Observations must be equal wherever the probe says the broker is capable. Where it is not, the
expected broker observation is the model's transformed by that deviation alone (e.g. without
KAFKA-001, read_committed also returns aborted records below the LSO), so the two disagree
exactly where, and only how, the probe says; operations whose outcome a missing capability
makes unpredictable (``GATED``: a zombie's calls, ListOffsets, growing a topic, offsets sent to a
transaction, a transaction left to time out) are not drawn, and
``test_operations_needing_a_missing_capability_are_not_drawn`` names them as its skip reason.

On a broker with every capability (Apache Kafka) the sequences mix aborts, zombie fencing,
transactions that time out (a short ``transaction.timeout.ms``: the model's clock jumps past it
while the test waits, bounded, for the broker's abort markers), markers taking offsets, open
transactions under both isolation levels, offsets sent to transactions and partitions added
while transactions run. What the model simplifies on purpose, and how the comparison allows for
it, is in spec/kafka.md, "The model against real Kafka".
"""

from __future__ import annotations

import abc
import time
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, replace
from typing import Any, Final
from uuid import uuid4

import pytest
from hypothesis import Phase, event, find, given, settings
from hypothesis import strategies as st
from hypothesis.errors import NoSuchExample

from kconform.conformance.brokers import Broker
from kconform.conformance.brokers.capability import Capability
from kconform.conformance.brokers.probe import TXN_TIMEOUT_WAIT_S
from kconform.reference_impl.kafka_client import KafkaClient, wait_until
from kconform.reference_impl.kafka_model import KafkaModel
from kconform.reference_impl.ports import (
    InvalidTxnStateError,
    Isolation,
    KafkaError,
    LogReader,
    MetadataSource,
    OffsetStore,
    ProducerFencedError,
    TransactionalLog,
    TransactionalProducer,
    TransactionTimeoutError,
    UnsupportedFeatureError,
)
from kconform.reference_impl.types import TopicPartition

PARTITIONS = 2
MAX_PARTITIONS = 4
"""``grow`` adds one partition at a time up to this; a drawn partition is taken modulo the partition count."""
TIDS = 2
GROUPS = 2
TXN_TIMEOUT_MS: Final = 120_000
"""Every producer but an ``expire`` one: longer than any example runs, so nothing else times out."""
EXPIRE_TIMEOUTS_MS: Final = (1000, 1500)
"""Bounds of a drawn short ``transaction.timeout.ms`` (librdkafka's minimum is 1000)."""
MARKER_SETTLE_S: Final = 5.0
"""How long a transaction's markers, its records under read_committed or its offsets may take to show after EndTxn."""
Log = KafkaModel | KafkaClient
Key = tuple[int, int]
"""(tid, incarnation index) of one producer handle."""


@dataclass(frozen=True)
class Op:
    """One generated operation; ``tid``/``zombie`` pick the producer incarnation it acts on."""

    kind: str
    tid: int = 0
    zombie: bool = False
    partition: int = 0
    value: bytes = b""
    group: int = 0
    offset: int = 0
    isolation: Isolation = Isolation.READ_COMMITTED
    records: tuple[tuple[int, bytes], ...] = ()
    """``txn``/``fence``/``expire``: (partition, value) pairs written between begin and its ``outcome``."""
    outcome: str = "commit"
    """``txn``: commit, abort or open; ``fence``/``expire``: the old incarnation's call after it lost."""
    timeout_ms: int = 0
    """``expire``: the ``transaction.timeout.ms`` of the new incarnation whose transaction is left to time out."""
    sent: int | None = None
    """``txn``/``fence``/``expire``: an offset its transaction sends for ``group`` and ``partition``, if any."""


def _grown(op: Op) -> bool:
    """Whether ``op`` grows the topic or names a partition it has only once grown."""
    return op.kind == "grow" or any(p >= PARTITIONS for p in (op.partition, *(p for p, _ in op.records)))


GATED: Final[Mapping[str, tuple[str, Callable[[Op], bool]]]] = {
    "zombie_fencing": ("a fenced incarnation's calls", lambda op: op.kind == "fence" or op.zombie),
    "transaction_timeout": ("transactions left to time out", lambda op: op.kind == "expire"),
    "create_partitions": ("partitions added while transactions run", _grown),
    "send_offsets_to_transaction": (
        "offsets sent to a transaction",
        lambda op: op.kind == "send_offsets" or op.outcome == "send_offsets" or op.sent is not None,
    ),
    "list_offsets_latest": ("ListOffsets latest", lambda op: op.kind == "latest"),
}
"""Capability -> what is drawn only where the probe found it, and the test telling such an operation."""


def operations(capable: Mapping[str, bool]) -> st.SearchStrategy[list[Op]]:
    """Operation sequences limited to what the broker's capabilities make predictable."""
    tid = st.integers(0, TIDS - 1)
    zombie = st.booleans() if capable["zombie_fencing"] else st.just(False)
    part = st.integers(0, (MAX_PARTITIONS if capable["create_partitions"] else PARTITIONS) - 1)
    value = st.binary(min_size=1, max_size=3)
    group = st.integers(0, GROUPS - 1)
    offset = st.integers(0, 9)
    iso = st.sampled_from(Isolation)
    records = st.lists(st.tuples(part, value), min_size=1, max_size=3).map(tuple)
    outcome = st.sampled_from(["commit", "abort", "open"])
    late_calls = ["send", "commit", "abort"]
    sent: st.SearchStrategy[int | None] = st.none()
    if capable["send_offsets_to_transaction"]:
        late_calls.append("send_offsets")
        sent = st.none() | offset
    # Three equal branches weigh transactions up; one_of keeps a repeated strategy object only once.
    txns = [
        st.builds(Op, st.just("txn"), tid, zombie, part, group=group, records=records, outcome=outcome, sent=sent)
        for _ in range(3)
    ]
    choices = [
        st.builds(Op, st.just("plain"), partition=part, value=value),
        st.builds(Op, st.just("init"), tid),
        *txns,
        *(st.builds(Op, st.just(step), tid, zombie) for step in ("begin", "commit", "abort")),
        st.builds(Op, st.just("send"), tid, zombie, part, value),
        st.builds(Op, st.just("group_commit"), partition=part, group=group, offset=offset),
        st.builds(Op, st.just("committed"), group=group),
        st.builds(Op, st.just("read"), partition=part, isolation=iso),
        st.builds(Op, st.just("high_watermark"), partition=part),
    ]
    if capable["send_offsets_to_transaction"]:
        choices.append(st.builds(Op, st.just("send_offsets"), tid, zombie, part, group=group, offset=offset))
    late_call = st.sampled_from(late_calls)
    if capable["zombie_fencing"]:
        choices.append(
            st.builds(Op, st.just("fence"), tid, st.just(False), part, value, group, offset, records=records,
                      outcome=late_call, sent=sent)
        )  # fmt: skip
    if capable["transaction_timeout"]:
        timeout = st.integers(*EXPIRE_TIMEOUTS_MS)
        choices.append(
            st.builds(Op, st.just("expire"), tid, st.just(False), part, value, group, offset, records=records,
                      outcome=late_call, timeout_ms=timeout, sent=sent)
        )  # fmt: skip
    if capable["list_offsets_latest"]:
        choices.append(st.builds(Op, st.just("latest"), partition=part, isolation=iso))
    if capable["create_partitions"]:
        choices.append(st.builds(Op, st.just("grow")))
    return st.lists(st.one_of(choices), min_size=1, max_size=14)


class Runner(abc.ABC):
    """Applies operations to one log and returns comparable observations."""

    def __init__(self, log: Log, prefix: str, capable: Mapping[str, bool]) -> None:
        self.log = log
        self.prefix = prefix
        self.capable = capable
        self.handles: dict[int, list[TransactionalProducer]] = {}
        self.open_txns: dict[Key, set[int]] = {}
        """Partitions of each incarnation's open transaction once the broker accepted a record in it,
        as the incarnation itself sees it: a zombie keeps its entry until its own call fails."""
        self.known: dict[Key, int] = {}
        """The partition count when each incarnation started: librdkafka fails a produce to a partition
        its metadata does not show yet (``_UNKNOWN_PARTITION``), so an incarnation writes only to those."""
        self.partitions = PARTITIONS
        log.create_topic(self.topic, PARTITIONS)

    @property
    def topic(self) -> str:
        return f"{self.prefix}-t"

    def tp(self, partition: int) -> TopicPartition:
        return TopicPartition(self.topic, partition % self.partitions)

    def _written(self, key: Key, partition: int) -> int:
        """The partition incarnation ``key`` writes for a drawn ``partition``."""
        return partition % self.known[key]

    def apply(self, op: Op) -> object:
        """The operation's result, or the class of error it raised (fenced and timed out are one: fatal).

        A failed transactional write is one class whatever the error: a fenced or timed-out producer's
        write is reported by confluent-kafka 2.16.1 as fenced, as a record purged from its queue or
        as ``SystemError`` from ``flush``, depending on when the fatal error strikes.
        """
        try:
            return ("ok", self._apply(op))
        except InvalidTxnStateError:
            return ("invalid-state",)
        except KafkaError as error:
            if op.kind == "send":
                return ("write failed",)
            if isinstance(error, (ProducerFencedError, TransactionTimeoutError)):
                return ("fatal",)
            if isinstance(error, UnsupportedFeatureError):
                return ("unsupported",)
            return ("error", str(error))

    def _init(self, tid: int, timeout_ms: int) -> None:
        """A new incarnation of ``tid``; it aborts the open transaction of the current one."""
        handles = self.handles.setdefault(tid, [])
        aborted = self.open_txns.get((tid, len(handles) - 1), set())
        self.known[(tid, len(handles))] = self.partitions
        with self._markers(dict.fromkeys(aborted, 0), MARKER_SETTLE_S):
            handles.append(self.log.init_producer(f"{self.prefix}-tid{tid}", timeout_ms))

    def _producer(self, op: Op) -> tuple[Key, TransactionalProducer | None]:
        """The tid's current incarnation (initialised on first use) or the one before it (a zombie)."""
        if op.tid not in self.handles:
            self._init(op.tid, TXN_TIMEOUT_MS)
        handles = self.handles[op.tid]
        index = len(handles) - (2 if op.zombie else 1)
        return (op.tid, index), handles[index] if index >= 0 else None

    def _apply(self, op: Op) -> Any:
        log = self.log
        if op.kind == "plain":
            return log.produce(self.tp(op.partition), None, op.value)
        if op.kind == "init":
            return self._init(op.tid, TXN_TIMEOUT_MS)
        if op.kind == "group_commit":
            return log.commit_offsets(self._group(op), {self.tp(op.partition): op.offset})
        if op.kind == "committed":
            return self._committed(self._group(op))
        if op.kind == "read":
            return self._read(op.partition, op.isolation)
        if op.kind == "high_watermark":
            return log.high_watermark(self.tp(op.partition))
        if op.kind == "latest":
            return log.latest_offset(self.tp(op.partition), op.isolation)
        if op.kind == "grow":
            if self.partitions == MAX_PARTITIONS:
                return "skipped"
            self.partitions += 1
            return log.create_partitions(self.topic, self.partitions)
        if op.kind == "fence":
            # The classic zombie: its transaction is open on the broker when a new incarnation starts.
            opened = self.apply(replace(op, kind="txn", outcome="open"))
            self._init(op.tid, TXN_TIMEOUT_MS)
            return opened, self.apply(Op(op.outcome, op.tid, True, op.partition, op.value, op.group, op.offset))
        if op.kind == "expire":
            # An abandoned transaction: the broker aborts it after its timeout; the incarnation's next call fails.
            self._init(op.tid, op.timeout_ms)
            written = Counter(self._written((op.tid, len(self.handles[op.tid]) - 1), p) for p, _ in op.records)
            with self._markers(written, op.timeout_ms / 1000 + TXN_TIMEOUT_WAIT_S):
                opened = self.apply(replace(op, kind="txn", outcome="open"))
                self._expire(op.timeout_ms)
            return opened, self.apply(Op(op.outcome, op.tid, False, op.partition, op.value, op.group, op.offset))
        key, producer = self._producer(op)
        if producer is None or (op.zombie and (key not in self.open_txns or op.kind in ("begin", "txn"))):
            # A client checks its own transaction state before the broker can fence it (begin, and
            # the commit of an empty transaction, never reach the broker), while the model fences
            # first: a zombie's calls are comparable only inside a transaction the broker knows.
            return "skipped"
        try:
            result = self._transact(op, producer, key)
        except InvalidTxnStateError:
            raise  # nothing changed
        except KafkaError:
            self.open_txns.pop(key, None)  # the broker aborted, or will abort, the transaction
            raise
        except SystemError as error:  # confluent-kafka's flush when a fatal error meets a delivery report
            self.open_txns.pop(key, None)
            raise KafkaError(f"flush: {error}") from error
        if op.kind == "send":
            self.open_txns.setdefault(key, set()).add(self._written(key, op.partition))
        elif op.kind == "txn" and op.outcome == "open":
            self.open_txns[key] = {self._written(key, p) for p, _ in op.records}
        elif op.kind in ("txn", "commit", "abort"):
            self.open_txns.pop(key, None)
        return result

    def _transact(self, op: Op, producer: TransactionalProducer, key: Key) -> Any:
        if op.kind == "send":
            producer.produce(self.topic, self._written(key, op.partition), None, op.value)
            return producer.flush()
        if op.kind == "txn":
            producer.begin_transaction()
            for partition, value in op.records:
                producer.produce(self.topic, self._written(key, partition), None, value)
            if op.sent is not None:
                producer.send_offsets_to_transaction(self._group(op), {self.tp(op.partition): op.sent})
            producer.flush()
            if op.outcome != "open":
                self._end(producer, op.outcome, {self._written(key, p) for p, _ in op.records})
            return op.outcome
        if op.kind == "send_offsets":
            return producer.send_offsets_to_transaction(self._group(op), {self.tp(op.partition): op.offset})
        if op.kind == "begin":
            return producer.begin_transaction()
        return self._end(producer, op.kind, self.open_txns.get(key, set()))

    def _end(self, producer: TransactionalProducer, outcome: str, partitions: set[int]) -> None:
        with self._markers(dict.fromkeys(partitions, 0), MARKER_SETTLE_S):
            (producer.commit_transaction if outcome == "commit" else producer.abort_transaction)()

    @abc.abstractmethod
    def _markers(self, written: Mapping[int, int], timeout_s: float) -> AbstractContextManager[None]:
        """Around a step that ends a transaction on ``written``'s partitions after writing that many records to each."""

    @abc.abstractmethod
    def _expire(self, timeout_ms: int) -> None:
        """Let the open transactions of ``timeout_ms`` time out."""

    @abc.abstractmethod
    def _committed(self, group: str) -> dict[TopicPartition, int]:
        """The group's committed offsets."""

    def final_ops(self) -> list[Op]:
        """Every partition at both isolation levels with its high watermark, and every group's offsets;
        then each tid commits what it left open (so what was sent meanwhile meets a commit), and
        read_committed and the groups' offsets once more."""
        committed_view = [
            *(Op("read", partition=p) for p in range(self.partitions)),
            *(Op("committed", group=g) for g in range(GROUPS)),
        ]
        return [
            *(Op("read", partition=p, isolation=Isolation.READ_UNCOMMITTED) for p in range(self.partitions)),
            *(Op("high_watermark", partition=p) for p in range(self.partitions)),
            *committed_view,
            *(Op("commit", tid) for tid in range(TIDS)),
            *committed_view,
        ]

    def _group(self, op: Op) -> str:
        return f"{self.prefix}-g{op.group}"

    def _read(self, partition: int, isolation: Isolation) -> list[tuple[int, bytes | None]]:
        records = self.log.read(self.tp(partition), 0, isolation, 10_000)
        return [(r.offset, r.value) for r in records]


class BrokerRunner(Runner):
    """The live broker."""

    log: KafkaClient

    @contextmanager
    def _markers(self, written: Mapping[int, int], timeout_s: float) -> Iterator[None]:
        """Once the step succeeds, wait (bounded) until the broker wrote the markers: Kafka answers EndTxn,
        and finds a transaction past its timeout, before the markers are in the log."""
        before = {p: self._end_offset(p) for p in written}
        yield
        wait_until(
            lambda: all(self._end_offset(p) > before[p] + n for p, n in written.items()) or None,
            timeout_s,
            f"transaction markers on partitions {sorted(written)} of {self.topic}",
        )

    def _end_offset(self, partition: int) -> int:
        """The high watermark, by ListOffsets where the probe trusts it (it is cheap), else by a fetch."""
        tp = self.tp(partition)
        if self.capable["list_offsets_latest"]:
            return self.log.latest_offset(tp, Isolation.READ_UNCOMMITTED)
        return self.log.high_watermark(tp)

    def _expire(self, timeout_ms: int) -> None:
        """Nothing to do: the broker's clock runs while ``_markers`` waits for its abort."""

    def _committed(self, group: str) -> dict[TopicPartition, int]:
        """The offsets resolved so far, at once (a stable read waits out every transaction that sent
        offsets to the group, open ones too); ``observe`` reads again while a commit's are applied."""
        return dict(self.log.committed(group, stable=False))


class ModelRunner(Runner):
    """The model; with ``deviations``, what it predicts the broker shows, each deviation the probe found applied."""

    log: KafkaModel

    def __init__(self, prefix: str, capable: Mapping[str, bool], deviations: bool) -> None:
        super().__init__(KafkaModel(), prefix, capable)
        self.deviations = deviations

    @contextmanager
    def _markers(self, written: Mapping[int, int], timeout_s: float) -> Iterator[None]:
        """The model writes a transaction's markers before its EndTxn returns."""
        yield

    def _expire(self, timeout_ms: int) -> None:
        self.log.advance_clock(timeout_ms + 1)

    def _committed(self, group: str) -> dict[TopicPartition, int]:
        return dict(self.log.committed(group))

    def _read(self, partition: int, isolation: Isolation) -> list[tuple[int, bytes | None]]:
        abort_shown = not self.capable["abort_hidden_from_read_committed"]
        if self.deviations and isolation is Isolation.READ_COMMITTED and abort_shown:
            # Without KAFKA-001 the broker shows aborted records too, still below the LSO (KAFKA-002).
            stable = self.log.last_stable_offset(self.tp(partition))
            return [(o, v) for o, v in super()._read(partition, Isolation.READ_UNCOMMITTED) if o < stable]
        return super()._read(partition, isolation)


def observe(real: BrokerRunner, op: Op, expected: object) -> object:
    """The broker's answer to ``op``. A read_committed read or a group's offsets that differ are read
    again, bounded, until they agree: the runner waits for a transaction's markers on the data
    partitions, but its offsets become the group's once the marker reaches ``__consumer_offsets``,
    which it does not watch, and brokers have shown read_committed lagging behind a commit."""
    seen = real.apply(op)
    deadline = time.monotonic() + MARKER_SETTLE_S
    settling = op.kind == "committed" or (op.kind == "read" and op.isolation is Isolation.READ_COMMITTED)
    while seen != expected and settling and time.monotonic() < deadline:
        seen = real.apply(op)
    return seen


# No explain phase: its tracer and librdkafka's callbacks under a pending fatal error make CPython
# raise SystemError (confluent-kafka 2.16, Python 3.11), hiding the real failure.
@settings(max_examples=12, deadline=None, print_blob=True, phases=[p for p in Phase if p is not Phase.explain])
@given(data=st.data())
def test_model_and_broker_agree_within_the_probed_capabilities(
    broker: Broker, capabilities: dict[str, Capability], data: st.DataObject
) -> None:
    capable = {name: c.supported for name, c in capabilities.items()}
    ops = data.draw(operations(capable), label="ops")
    for name, (what, gated) in GATED.items():
        if any(gated(op) for op in ops):
            event(f"drew {what} ({name})")
    prefix = f"kconform-diff-{uuid4().hex[:8]}"
    with KafkaClient(broker) as client:
        real = BrokerRunner(client, prefix, capable)
        model = ModelRunner(prefix, capable, deviations=True)
        pure = ModelRunner(prefix, capable, deviations=False)
        for step, op in enumerate(ops):
            expected, oracle = model.apply(op), pure.apply(op)
            seen = observe(real, op, expected)
            assert seen == expected, f"step {step} {op}: broker {seen!r}, model {expected!r}"
            if expected != oracle:
                event(f"deviation shown: {op.kind} {op.isolation.value}")
        final = model.final_ops()
        expected, oracle = [model.apply(op) for op in final], [pure.apply(op) for op in final]
        seen = [observe(real, op, e) for op, e in zip(final, expected, strict=True)]
        assert seen == expected, f"final state after {ops}: broker {seen!r}, model {expected!r}"
        event(f"final state {'shows a deviation' if expected != oracle else 'as the pure model'}")


def _draws(strategy: st.SearchStrategy[list[Op]], gated: Callable[[Op], bool]) -> bool:
    """Whether ``strategy`` draws a sequence with an operation ``gated`` tells (among the same 200 each run)."""
    search = settings(max_examples=200, database=None, phases=[Phase.generate], derandomize=True)
    try:
        find(strategy, lambda ops: any(gated(op) for op in ops), settings=search)
    except NoSuchExample:
        return False
    return True


def test_operations_needing_a_missing_capability_are_not_drawn(capabilities: dict[str, Capability]) -> None:
    """The differential test draws each gated operation exactly where the probe found its capability;
    the skip reason names what it leaves out on this broker."""
    capable = {name: c.supported for name, c in capabilities.items()}
    for name, (what, gated) in GATED.items():
        drawn = _draws(operations(capable), gated)
        assert drawn == capable[name], f"{what}: drawn {drawn}, but capability {name} supported {capable[name]}"
    missing = [f"{what} ({name})" for name, (what, _) in GATED.items() if not capable[name]]
    if missing:
        pytest.skip(f"not verifiable on this broker, so not drawn: {'; '.join(missing)}")


def test_client_and_model_implement_the_ports(broker: Broker) -> None:
    """Checked by mypy: both logs are every port the core uses."""
    with KafkaClient(broker) as client:
        for log in (client, KafkaModel()):
            ports: tuple[MetadataSource, TransactionalLog, LogReader, OffsetStore] = (log, log, log, log)
            assert len(ports) == 4
