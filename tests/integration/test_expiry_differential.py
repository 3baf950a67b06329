"""Differential test of transactional-id expiry (COMMIT-019): ``KafkaModel`` against Apache Kafka.

One sequence runs on a Kafka broker started with a short ``transactional.id.expiration.ms`` and
on the model, whose clock jumps past its (default) expiration instead: a transactional producer
writes a record and commits it, or leaves its transaction open (pre-committed) until the broker
aborts it on its timeout; the id then stays idle past the expiration. Both must agree that

- the id is listed (ListTransactions, unfiltered) until it expires and is gone after;
- the recovery of the old transaction, the resume-and-commit of ``ExactlyOnceSink.recover`` with
  its producer id and epoch, succeeds before the expiration (of a committed one: a retried commit)
  and fails with ``InvalidPidMappingError`` after it;
- the incarnation that left its transaction open cannot commit it either (``InvalidPidMappingError``);
- ``init_transactions`` on the id works again, under a new producer id at epoch 0, after which the
  old producer id is still unknown (``InvalidPidMappingError``);
- read_committed shows the same records.

librdkafka can neither resume another incarnation's transaction (no KIP-939) nor say its producer
id and epoch, and confluent-kafka has no ListTransactions; so the broker side sends those three
requests itself (``Coordinator``): DescribeTransactions for the id's producer id and epoch while
its transaction is open (what a ``Committable`` holds), ListTransactions, and EndTxn v4, the
request kafka-clients 3.9 (Flink's connector) sends for a resumed producer's commit. The EndTxn
error code goes through ``kafka_client.translate``, the real client's own mapping onto the ports.
The broker's expiry is awaited by polling ListTransactions with a deadline.
"""

from __future__ import annotations

import abc
import socket
import struct
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Final, Literal, TypeVar
from uuid import uuid4

import confluent_kafka as ck
import pytest

from kconform.conformance.brokers.api_versions import Reader, uvarint
from kconform.conformance.brokers.kafka import KafkaBroker
from kconform.reference_impl.kafka_client import KafkaClient, translate
from kconform.reference_impl.kafka_model import TRANSACTIONAL_ID_EXPIRATION_MS, KafkaModel
from kconform.reference_impl.ports import Isolation, KafkaError
from kconform.reference_impl.types import TopicPartition

EXPIRATION_MS: Final = 2000
"""The broker's ``transactional.id.expiration.ms``. Kafka accepts 1 ms, but the expiration runs from the
id's last state change and also covers the gaps of the sequence (``init_transactions`` to the first
write; the commit to the listing and the retried commit that follow), so it must outlast those on two
shared cores."""
CLEANUP_INTERVAL_MS: Final = 200
"""``transaction.remove.expired.transaction.cleanup.interval.ms`` (Kafka's default: an hour) and
``transaction.abort.timed.out.transaction.cleanup.interval.ms`` (10 s; 1 s on the other test brokers)."""
EXPIRY_SETTINGS: Final = {
    "transactional.id.expiration.ms": str(EXPIRATION_MS),
    "transaction.remove.expired.transaction.cleanup.interval.ms": str(CLEANUP_INTERVAL_MS),
    "transaction.abort.timed.out.transaction.cleanup.interval.ms": str(CLEANUP_INTERVAL_MS),
}
SHORT_TIMEOUT_MS: Final = 1000
"""``transaction.timeout.ms`` of the transaction left open (librdkafka's minimum)."""
LONG_TIMEOUT_MS: Final = 120_000
"""``transaction.timeout.ms`` of every other transaction: nothing else times out."""
SLACK_S: Final = 15.0
"""Beyond timeout, expiration and two cleanup rounds, how long the broker may take to forget an id."""
REQUEST_TIMEOUT_S: Final = 10.0
RETRY_CODES: Final = frozenset({14, 15, 16, 51})
"""COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR, CONCURRENT_TRANSACTIONS: ask again."""

T = TypeVar("T")
Outcome = Literal["commit", "open"]


# -- the three coordinator requests librdkafka does not offer ------------------------------------------


def _string(text: str) -> bytes:
    """A compact string (flexible versions)."""
    raw = text.encode()
    return uvarint(len(raw) + 1) + raw


def _array(items: list[bytes]) -> bytes:
    """A compact array of encoded items."""
    return uvarint(len(items) + 1) + b"".join(items)


NO_TAGS: Final = b"\x00"


@dataclass(frozen=True)
class Described:
    """DescribeTransactions of one id: its coordinator state."""

    state: str
    producer_id: int
    epoch: int


class Coordinator:
    """The transaction coordinator of a one-node broker, asked over Kafka's wire protocol."""

    def __init__(self, broker: KafkaBroker) -> None:
        (node,) = broker.nodes  # one node: it is every id's coordinator and holds every transaction
        self._address = ("127.0.0.1", node.port)
        self._socket: socket.socket | None = None
        self._correlation = 0

    def close(self) -> None:
        if self._socket is not None:
            self._socket.close()
            self._socket = None

    def _request(self, api_key: int, version: int, body: bytes) -> Reader:
        """One request with header v2 and its answer, both bounded by ``REQUEST_TIMEOUT_S``."""
        if self._socket is None:
            self._socket = socket.create_connection(self._address, timeout=REQUEST_TIMEOUT_S)
        self._correlation += 1
        client = b"kconform-expiry"
        header = struct.pack(">hhih", api_key, version, self._correlation, len(client)) + client + NO_TAGS
        message = header + body
        try:
            self._socket.sendall(struct.pack(">i", len(message)) + message)
            size = struct.unpack(">i", self._receive(4))[0]
            reader = Reader(self._receive(size), KafkaError)
        except OSError as error:
            self.close()
            raise KafkaError(f"request {api_key} v{version} to {self._address}: {error}") from error
        if (correlation := reader.unpack(">i")) != self._correlation:
            raise KafkaError(f"answer to request {self._correlation} came as {correlation}")
        reader.skip_tags()  # response header v1
        return reader

    def _receive(self, size: int) -> bytes:
        assert self._socket is not None
        chunks = bytearray()
        while len(chunks) < size:
            chunk = self._socket.recv(size - len(chunks))
            if not chunk:
                raise OSError("connection closed by the broker")
            chunks += chunk
        return bytes(chunks)

    def _until_answered(self, ask: Callable[[], tuple[int, T]]) -> tuple[int, T]:
        """Ask again while the coordinator is loading, moving or busy; an error code or a value after that."""
        deadline = time.monotonic() + REQUEST_TIMEOUT_S
        while True:
            code, value = ask()
            if code not in RETRY_CODES or time.monotonic() >= deadline:
                return code, value
            time.sleep(0.05)  # polling interval of a bounded wait for the coordinator

    def list_transactions(self) -> dict[str, str]:
        """ListTransactions v0 without filters: every id the coordinator holds, with its state."""

        def ask() -> tuple[int, dict[str, str]]:
            reader = self._request(66, 0, _array([]) + _array([]) + NO_TAGS)
            reader.unpack(">i")  # throttle time
            code = reader.unpack(">h")
            reader.array(reader.compact_string)  # unknown state filters: none asked

            def state() -> tuple[str, str]:
                tid = reader.compact_string()
                reader.unpack(">q")
                found = (tid, reader.compact_string())
                reader.skip_tags()
                return found

            return code, dict(reader.array(state))

        code, states = self._until_answered(ask)
        if code:
            raise translate(ck.KafkaError(code), "ListTransactions")
        return states

    def describe(self, tid: str) -> Described:
        """DescribeTransactions v0 of ``tid``."""

        def ask() -> tuple[int, Described]:
            reader = self._request(65, 0, _array([_string(tid)]) + NO_TAGS)
            reader.unpack(">i")

            def state() -> tuple[int, Described]:
                code = reader.unpack(">h")
                reader.compact_string()
                name = reader.compact_string()
                reader.unpack(">i")  # timeout
                reader.unpack(">q")  # start time
                described = Described(name, reader.unpack(">q"), reader.unpack(">h"))

                def topic() -> None:
                    reader.compact_string()
                    reader.array(lambda: reader.unpack(">i"))
                    reader.skip_tags()

                reader.array(topic)
                reader.skip_tags()
                return code, described

            (answer,) = reader.array(state)
            return answer

        code, described = self._until_answered(ask)
        if code:
            raise translate(ck.KafkaError(code), f"DescribeTransactions {tid}")
        return described

    def end_txn(self, tid: str, producer_id: int, epoch: int, commit: bool) -> int:
        """EndTxn v4 as a resumed kafka-clients 3.9 producer sends it; the error code (0 for none)."""
        body = _string(tid) + struct.pack(">qh?", producer_id, epoch, commit) + NO_TAGS

        def ask() -> tuple[int, None]:
            reader = self._request(26, 4, body)
            reader.unpack(">i")
            return reader.unpack(">h"), None

        return self._until_answered(ask)[0]


@dataclass(frozen=True)
class ResumedProducer:
    """A producer that takes over incarnation ``(producer_id, epoch)`` of ``transactional_id`` and ends its
    transaction with EndTxn, as Flink's committer does by reflection; errors as the real client maps them."""

    coordinator: Coordinator
    transactional_id: str
    producer_id: int
    epoch: int

    def _end(self, commit: bool) -> None:
        code = self.coordinator.end_txn(self.transactional_id, self.producer_id, self.epoch, commit)
        if code:
            what = f"EndTxn({self.transactional_id}, pid {self.producer_id}, epoch {self.epoch})"
            raise translate(ck.KafkaError(code), what)

    def commit_transaction(self) -> None:
        self._end(True)

    def abort_transaction(self) -> None:
        self._end(False)


# -- the sequence, on either side ----------------------------------------------------------------------


@dataclass
class Observed:
    """What one side showed at each step, in order: (step, what)."""

    steps: list[tuple[str, object]] = field(default_factory=list)

    def add(self, step: str, what: object) -> None:
        self.steps.append((step, what))


def attempt(call: Callable[[], object]) -> str:
    """``ok``, or the name of the ports exception the call raised."""
    try:
        call()
    except KafkaError as error:
        return type(error).__name__
    return "ok"


class Side(abc.ABC):
    """The model or the broker, behind the few calls the sequence makes."""

    def __init__(self) -> None:
        self.topic = f"expiry-{uuid4().hex[:8]}"
        self.value = 0
        self._open: Callable[[], None] | None = None

    @abc.abstractmethod
    def write_pre_committed(self, tid: str, timeout_ms: int) -> tuple[int, int]:
        """A new incarnation of ``tid`` writes one record and flushes; its (producer id, epoch)."""
        raise NotImplementedError

    @abc.abstractmethod
    def end_written(self) -> None:
        """Commit the transaction ``write_pre_committed`` left open, by the incarnation that wrote it."""
        raise NotImplementedError

    @abc.abstractmethod
    def listed(self) -> set[str]:
        """ListTransactions without filters: every id the coordinator holds state for."""
        raise NotImplementedError

    @abc.abstractmethod
    def resume_commit(self, tid: str, producer_id: int, epoch: int) -> None:
        """What ``ExactlyOnceSink.recover`` does with a committable."""
        raise NotImplementedError

    @abc.abstractmethod
    def idle_until_forgotten(self, tid: str, timed_out: bool) -> None:
        """Stay idle until the id is forgotten: past the open transaction's timeout if ``timed_out``, then
        past the expiration."""
        raise NotImplementedError

    @abc.abstractmethod
    def read_committed(self) -> list[bytes | None]:
        raise NotImplementedError


class ModelSide(Side):
    def __init__(self) -> None:
        super().__init__()
        self.model = KafkaModel()
        self.model.create_topic(self.topic, 1)

    def write_pre_committed(self, tid: str, timeout_ms: int) -> tuple[int, int]:
        producer = self.model.init_producer(tid, timeout_ms)
        producer.begin_transaction()
        self.value += 1
        producer.produce(self.topic, 0, None, f"v{self.value}".encode())
        producer.flush()
        self._open = producer.commit_transaction
        return producer.producer_id, producer.epoch

    def end_written(self) -> None:
        assert self._open is not None
        self._open()

    def listed(self) -> set[str]:
        return set(self.model.transactional_ids())

    def resume_commit(self, tid: str, producer_id: int, epoch: int) -> None:
        self.model.resume_producer(tid, producer_id, epoch).commit_transaction()

    def idle_until_forgotten(self, tid: str, timed_out: bool) -> None:
        if timed_out:
            self.model.advance_clock(SHORT_TIMEOUT_MS + 1)  # the open transaction times out and is aborted ...
        self.model.advance_clock(TRANSACTIONAL_ID_EXPIRATION_MS)  # ... then the idle id expires

    def read_committed(self) -> list[bytes | None]:
        tp = TopicPartition(self.topic, 0)
        return [r.value for r in self.model.read(tp, 0, Isolation.READ_COMMITTED, 100)]


class BrokerSide(Side):
    def __init__(self, broker: KafkaBroker, client: KafkaClient) -> None:
        super().__init__()
        self.client = client
        self.coordinator = Coordinator(broker)
        self.client.create_topic(self.topic, 1)
        self.states_seen: list[str] = []
        """The id's states while it was awaited to expire (ListTransactions), each change once."""
        self.forgotten_after_s = 0.0
        """From the last call that changed the id's state to the first listing without it."""
        self._last_change = 0.0

    def write_pre_committed(self, tid: str, timeout_ms: int) -> tuple[int, int]:
        producer = self.client.init_producer(tid, timeout_ms)
        producer.begin_transaction()
        self.value += 1
        producer.produce(self.topic, 0, None, f"v{self.value}".encode())
        producer.flush()
        self._last_change = time.monotonic()
        self._open = producer.commit_transaction
        described = self.coordinator.describe(tid)
        assert described.state == "Ongoing", f"{tid} after a flushed write: {described}"
        return described.producer_id, described.epoch

    def end_written(self) -> None:
        assert self._open is not None
        self._open()
        self._last_change = time.monotonic()

    def listed(self) -> set[str]:
        return set(self.coordinator.list_transactions())

    def resume_commit(self, tid: str, producer_id: int, epoch: int) -> None:
        ResumedProducer(self.coordinator, tid, producer_id, epoch).commit_transaction()

    def idle_until_forgotten(self, tid: str, timed_out: bool) -> None:
        """Poll ListTransactions, bounded, until the broker no longer lists ``tid``."""
        waited_ms = (SHORT_TIMEOUT_MS if timed_out else 0) + EXPIRATION_MS + 2 * CLEANUP_INTERVAL_MS
        deadline = time.monotonic() + waited_ms / 1000 + SLACK_S
        while (state := self.coordinator.list_transactions().get(tid)) is not None:
            if not self.states_seen or self.states_seen[-1] != state:
                self.states_seen.append(state)
            if time.monotonic() >= deadline:
                raise AssertionError(
                    f"Kafka still lists {tid!r} ({state}) {time.monotonic() - self._last_change:.1f} s after its "
                    f"last change, with {EXPIRY_SETTINGS}; states seen: {self.states_seen}"
                )
            time.sleep(0.05)  # polling interval of a bounded wait for the broker's expiration
        self.forgotten_after_s = time.monotonic() - self._last_change

    def read_committed(self) -> list[bytes | None]:
        tp = TopicPartition(self.topic, 0)
        end = self.client.latest_offset(tp, Isolation.READ_COMMITTED)
        return [r.value for r in self.client.read(tp, 0, Isolation.READ_COMMITTED, end + 1)]


def run(side: Side, outcome: Outcome) -> Observed:
    """The COMMIT-019 sequence: a checkpoint's transaction, the downtime, the recovery, a new start."""
    seen = Observed()
    tid = f"expiry-{outcome}-{uuid4().hex[:8]}"
    committed = outcome == "commit"
    producer_id, epoch = side.write_pre_committed(tid, LONG_TIMEOUT_MS if committed else SHORT_TIMEOUT_MS)
    if committed:
        side.end_written()
    seen.add("listed before the expiration", tid in side.listed())
    if committed:
        seen.add("resumed commit before the expiration", attempt(lambda: side.resume_commit(tid, producer_id, epoch)))
    side.idle_until_forgotten(tid, timed_out=not committed)
    seen.add("listed after the expiration", tid in side.listed())
    if not committed:  # the old incarnation itself (librdkafka's EndTxn and error mapping on the broker side)
        seen.add("the old incarnation's own commit after the expiration", attempt(side.end_written))
    seen.add("resumed commit after the expiration", attempt(lambda: side.resume_commit(tid, producer_id, epoch)))
    fresh: list[tuple[int, int]] = []

    def restart() -> None:
        fresh.append(side.write_pre_committed(tid, LONG_TIMEOUT_MS))
        side.end_written()

    seen.add("init_transactions and a commit after the expiration", attempt(restart))
    if fresh:
        new_id, new_epoch = fresh[0]
        seen.add("new producer id, epoch", (new_id != producer_id, new_epoch))
    resumed_again = attempt(lambda: side.resume_commit(tid, producer_id, epoch))
    seen.add("resumed commit of the old producer id after the new init", resumed_again)
    seen.add("read_committed", side.read_committed())
    return seen


@pytest.fixture(scope="module")
def kafka() -> Iterator[KafkaBroker]:
    """A one-node Apache Kafka that forgets an idle transactional id after ``EXPIRATION_MS``."""
    with KafkaBroker(settings=EXPIRY_SETTINGS) as broker:
        yield broker


@pytest.mark.parametrize("outcome", ["commit", "open"])
def test_required_COMMIT_019_kafka_forgets_an_idle_transactional_id_as_the_model_does(
    kafka: KafkaBroker, outcome: Outcome
) -> None:
    """A checkpoint's transaction committed (a stop with a savepoint) or left open until the broker aborts
    it (a crash), then the id idle past ``transactional.id.expiration.ms``: Apache Kafka and the model
    forget the id alike, answer the recovery's resumed commit with ``InvalidPidMappingError`` alike and
    let the id start again under a new producer id alike."""
    model = run(ModelSide(), outcome)
    with KafkaClient(kafka) as client:
        side = BrokerSide(kafka, client)
        try:
            real = run(side, outcome)
        finally:
            side.coordinator.close()
    print(
        f"Kafka ({kafka.version}, transactional.id.expiration.ms={EXPIRATION_MS}, cleanup every "
        f"{CLEANUP_INTERVAL_MS} ms) forgot the id {side.forgotten_after_s:.2f} s after its last change; "
        f"states seen while waiting: {side.states_seen}"
    )
    differences = [
        f"  {step}: Kafka {got!r}, model {want!r}"
        for (step, got), (_, want) in zip(real.steps, model.steps, strict=False)
        if got != want
    ]
    if len(real.steps) != len(model.steps):
        differences.append(f"  steps: Kafka {[s for s, _ in real.steps]}, model {[s for s, _ in model.steps]}")
    assert not differences, "Kafka and the model disagree on an expired transactional id:\n" + "\n".join(differences)
    assert dict(model.steps)["resumed commit after the expiration"] == "InvalidPidMappingError"
