"""The ports of ``kconform.reference_impl.ports`` on a real broker, through confluent-kafka (librdkafka).

``KafkaClient`` offers the same methods as ``kconform.reference_impl.kafka_model.KafkaModel`` so the
differential test can drive both with one sequence, and the Spark source and sink use it on the
executors. Every broker call is bounded by ``timeout_s`` and fails with a ``KafkaError`` naming
what did not answer; librdkafka's error codes are mapped onto the ports' exception types so
fencing and state errors compare directly.

Where the broker is and how to reach it comes from an ``Endpoint``: the Spark options
(``StaticEndpoint``) in production, a test broker (``kconform.conformance.brokers``) in the suite, which
adds settings that only make tests fast. The settings the client's own logic depends on are
applied here, last, so no endpoint can change them.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Final, Literal, Protocol, TypeVar
from uuid import uuid4

import confluent_kafka as ck
from confluent_kafka import admin as ck_admin
from confluent_kafka.admin import AdminClient, NewPartitions, NewTopic  # type: ignore[attr-defined]

from .ports import (
    InvalidPidMappingError,
    InvalidTxnStateError,
    Isolation,
    KafkaError,
    ProducerFencedError,
    Record,
    TopicGoneError,
    UnsupportedFeatureError,
)
from .types import TopicPartition

DEFAULT_TIMEOUT_S: Final = 10.0

ClientRole = Literal["admin", "producer", "consumer"]

SEMANTIC_CLIENT_SETTINGS: Final[Mapping[ClientRole, Mapping[str, Any]]] = {
    "admin": {
        # An AdminClient is a producer-type handle, whose default is true: it would ask once a second, by name and
        # allowing creation, for any topic it once looked up that metadata no longer shows, and a broker with
        # auto.create.topics.enable (Kafka's default) re-creates a deleted topic behind the test's back (DISC-008).
        "allow.auto.create.topics": False,
    },
    "producer": {},
    "consumer": {
        # Offsets are committed explicitly (OffsetStore, transactions), never behind the client's back.
        "enable.auto.commit": False,
        # ``read`` ends a range where the fetcher reports end-of-partition (its position, not a record).
        "enable.partition.eof": True,
    },
}
"""Per-role librdkafka settings ``KafkaClient`` is correct only with; they override the endpoint's."""


class Endpoint(Protocol):
    """Where a broker is and the librdkafka settings (security, tuning) to reach it as ``role``."""

    @property
    def bootstrap_servers(self) -> str: ...

    def client_config(self, role: ClientRole, **overrides: Any) -> dict[str, Any]: ...


@dataclass(frozen=True, slots=True)
class StaticEndpoint:
    """A broker named by its bootstrap servers and user settings (picklable: Spark ships it to executors)."""

    bootstrap_servers: str
    settings: tuple[tuple[str, str], ...] = ()

    def client_config(self, role: ClientRole, **overrides: Any) -> dict[str, Any]:
        return {**dict(self.settings), "bootstrap.servers": self.bootstrap_servers, **overrides}


def configure(endpoint: Endpoint, role: ClientRole, **overrides: Any) -> dict[str, Any]:
    """librdkafka settings for a client of ``role``: the endpoint's, then the semantic ones, then ``overrides``."""
    return {**endpoint.client_config(role), **SEMANTIC_CLIENT_SETTINGS[role], **overrides}


def await_metadata(
    endpoint: Endpoint, timeout_s: float, alive: Callable[[], None] | None = None, admin: AdminClient | None = None
) -> None:
    """Return once the broker answers a metadata request; a ``KafkaError`` with the last cause after ``timeout_s``.

    ``alive`` is called between attempts so a caller can fail fast when a process it started died;
    ``admin`` is a client to ask with (default: a new one for ``endpoint``).
    """
    admin = admin or AdminClient(endpoint.client_config("admin"))
    deadline = time.monotonic() + timeout_s
    last: ck.KafkaException | None = None
    while time.monotonic() < deadline:
        if alive is not None:
            alive()
        try:
            admin.list_topics(timeout=min(1.0, max(0.1, deadline - time.monotonic())))
            return
        except ck.KafkaException as error:  # transport errors while the broker comes up
            last = error
    raise KafkaError(
        f"broker at {endpoint.bootstrap_servers} did not answer a metadata request in {timeout_s} s: {last}"
    )


INTERNAL_TOPICS: Final = frozenset({"__consumer_offsets", "__transaction_state"})
"""Hidden from ``list_topics`` as Kafka's Java ``Admin.listTopics()`` hides them."""

_LEADER_MOVING: Final = frozenset(
    {ck.KafkaError.NOT_LEADER_FOR_PARTITION, ck.KafkaError.LEADER_NOT_AVAILABLE, ck.KafkaError.UNKNOWN_TOPIC_OR_PART}
)
"""Answers librdkafka does not flag retriable, which Kafka gives while a new partition's leader is elected."""
_LEADER_UNKNOWN: Final = ck.KafkaError._NOENT
"""librdkafka's admin ListOffsets for a partition its metadata does not lead yet ("Failed to query partition
leaders: No leaders found"): a partition added moments ago, asked again within the bound."""
_FENCED_CODES: Final = frozenset(
    {ck.KafkaError._FENCED, ck.KafkaError.PRODUCER_FENCED, ck.KafkaError.INVALID_PRODUCER_EPOCH}
)
_STATE_CODES: Final = frozenset({ck.KafkaError._STATE, ck.KafkaError.INVALID_TXN_STATE})
_FETCH_AGAIN_CODES: Final = frozenset(
    {
        ck.KafkaError.UNSTABLE_OFFSET_COMMIT,  # a transaction's offsets await its markers (KIP-447)
        ck.KafkaError.COORDINATOR_LOAD_IN_PROGRESS,  # a restarted coordinator still reads its log
        ck.KafkaError.COORDINATOR_NOT_AVAILABLE,
        ck.KafkaError.NOT_COORDINATOR,  # the group's coordinator moved (a node stopped)
    }
)
"""OffsetFetch answers that mean "not yet": the same request is sent again until the client's deadline."""
_UNSUPPORTED_CODES: Final = frozenset(
    {ck.KafkaError._UNSUPPORTED_FEATURE, ck.KafkaError.UNSUPPORTED_VERSION, ck.KafkaError._NOT_IMPLEMENTED}
)


OffsetWay = Literal["admin", "consumer"]
"""How a release lists a partition's offsets (``offset_listing``)."""
OffsetQuery = Literal["earliest", "latest"] | int
"""What ``KafkaClient._list_offset`` asks for: a partition's earliest or latest offset, or a timestamp's (ms)."""


def offset_listing(kafka_module: object, admin_module: object) -> OffsetWay | None:
    """How the confluent-kafka of ``kafka_module`` (``confluent_kafka``) and ``admin_module``
    (``confluent_kafka.admin``) lists a partition's offsets: ``admin``, the AdminClient's ListOffsets
    (``admin.OffsetSpec`` and ``IsolationLevel``, in 2.3.0 and later); else ``consumer``, a consumer's
    ``get_watermark_offsets(cached=False)`` and ``offsets_for_times``, which every release the bank loads has
    (2.0.2 and 2.2.0, whose client workload lists the log's ends so, included). Both send ListOffsets at the
    asking client's isolation level (librdkafka's ``rd_kafka_make_ListOffsetsRequest`` writes
    ``rk_conf.isolation_level``, v2.0.2), so a ``read_committed`` consumer's high watermark is the last stable
    offset, as ``OffsetSpec.latest()`` at ``IsolationLevel.READ_COMMITTED`` is. ``None`` when the release has
    neither: what lists offsets is then a feature it lacks (``UnsupportedFeatureError``)."""
    if hasattr(admin_module, "OffsetSpec") and hasattr(kafka_module, "IsolationLevel"):
        return "admin"
    consumer = getattr(kafka_module, "Consumer", None)
    if all(hasattr(consumer, name) for name in ("get_watermark_offsets", "offsets_for_times")):
        return "consumer"
    return None


def _offset_way() -> OffsetWay:
    """``offset_listing`` of the confluent-kafka this process imported, or ``UnsupportedFeatureError`` (so what
    needed it is could-not-check, never a violation)."""
    way = offset_listing(ck, ck_admin)
    if way is None:
        raise UnsupportedFeatureError(
            f"confluent-kafka {ck.version()[0]} can list no partition's offsets (neither Admin.list_offsets nor "
            "Consumer.get_watermark_offsets and offsets_for_times): what lists them cannot run on it"
        )
    return way


T = TypeVar("T")


def translate(error: ck.KafkaError, what: str) -> KafkaError:
    """The ports' exception for a librdkafka error (fenced, invalid state, expired id, unsupported, other)."""
    code = error.code()
    message = f"{what}: {error.name()}: {error.str()}"
    if code == ck.KafkaError.INVALID_PRODUCER_ID_MAPPING:
        return InvalidPidMappingError(message)
    if code in _FENCED_CODES:
        return ProducerFencedError(message)
    if code in _STATE_CODES:
        return InvalidTxnStateError(message)
    if code in _UNSUPPORTED_CODES:
        return UnsupportedFeatureError(message)
    return KafkaError(message)


@contextmanager
def _translated(what: str) -> Iterator[None]:
    try:
        yield
    except ck.KafkaException as exc:
        raise translate(exc.args[0], what) from exc
    except SystemError as exc:
        # confluent-kafka calls a delivery callback while its own fatal error (e.g. fenced) is
        # pending, and CPython reports that as a SystemError caused by it (seen on real Kafka when a
        # fenced producer flushes); the cause is the error that happened. Something below Python keeps that
        # SystemError (the garbage collector finds no referrer to free it by), so its traceback must go: its
        # frames hold the producer and its client, whose librdkafka handles would never be freed.
        exc.__traceback__ = None
        if isinstance(exc.__cause__, ck.KafkaException):
            raise translate(exc.__cause__.args[0], what) from exc
        raise KafkaError(f"{what}: the client failed: {exc}") from exc


def admin_result(future: Any, what: str, timeout_s: float) -> Any:
    """Wait for an admin future, bounded; errors become ports exceptions."""
    try:
        with _translated(what):
            return future.result(timeout=timeout_s)
    except TimeoutError as exc:
        raise KafkaError(f"{what}: no answer within {timeout_s} s") from exc


def _offset(message: ck.Message) -> int:
    """A delivered or consumed message's offset (librdkafka leaves it unset only for errors)."""
    offset = message.offset()
    if offset is None:
        raise KafkaError(f"message on {message.topic()} [{message.partition()}] has no offset")
    return offset


def _record(tp: TopicPartition, message: ck.Message) -> Record:
    """A consumed message as a ``Record``, with its timestamp when the broker gave one."""
    kind, timestamp = message.timestamp()
    known = kind != ck.TIMESTAMP_NOT_AVAILABLE
    return Record(
        tp.topic, tp.partition, _offset(message), message.key(), message.value(), timestamp if known else None
    )


def wait_until(check: Callable[[], T | None], timeout_s: float, what: str, step_s: float = 0.05) -> T:
    """Poll ``check`` until it returns a value; a ``KafkaError`` naming ``what`` after ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while True:
        value = check()
        if value is not None:
            return value
        if time.monotonic() >= deadline:
            raise KafkaError(f"{what}: not reached within {timeout_s} s")
        time.sleep(step_s)  # polling interval of a bounded wait, not synchronisation


class KafkaClient:
    """``MetadataSource``, ``TransactionalLog``, ``LogReader`` and ``OffsetStore`` on a live broker."""

    def __init__(self, endpoint: Endpoint, timeout_s: float = DEFAULT_TIMEOUT_S) -> None:
        self.endpoint = endpoint
        self.timeout_s = timeout_s
        self._admin = AdminClient(self.config("admin"))
        self._consumers: dict[Isolation, ck.Consumer] = {}
        self._group_consumers: dict[str, ck.Consumer] = {}
        self._offset_readers: dict[tuple[str, bool], ck.Consumer] = {}
        self._producers: list[KafkaProducer] = []

    def close(self) -> None:
        """Close every client this object made (bounded by librdkafka's own close)."""
        for consumer in [*self._consumers.values(), *self._group_consumers.values(), *self._offset_readers.values()]:
            consumer.close()
        self._consumers.clear()
        self._group_consumers.clear()
        self._offset_readers.clear()
        for producer in self._producers:
            producer.close()
        self._producers.clear()

    def config(self, role: ClientRole, **overrides: Any) -> dict[str, Any]:
        return configure(self.endpoint, role, **overrides)

    def await_metadata(self) -> None:
        """Return once the broker answers a metadata request, within ``timeout_s``; else a ``KafkaError``."""
        await_metadata(self.endpoint, self.timeout_s, admin=self._admin)

    def __enter__(self) -> KafkaClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- admin and MetadataSource ------------------------------------------------------------

    def list_topics(self) -> Mapping[str, frozenset[int]]:
        with _translated("list topics"):
            metadata = self._admin.list_topics(timeout=self.timeout_s)
        return {
            name: frozenset(topic.partitions)
            for name, topic in metadata.topics.items()
            if name not in INTERNAL_TOPICS and topic.error is None
        }

    def partition_leader(self, tp: TopicPartition) -> str:
        """``host:port`` of the broker that leads ``tp``, as metadata advertises it (for a raw-protocol probe)."""
        with _translated(f"metadata of {tp.topic}"):
            metadata = self._admin.list_topics(tp.topic, timeout=self.timeout_s)
        topic = metadata.topics.get(tp.topic)
        leader = topic.partitions[tp.partition].leader if topic and tp.partition in topic.partitions else -1
        if leader not in metadata.brokers:
            raise KafkaError(f"metadata names no leader for {tp}")
        return f"{metadata.brokers[leader].host}:{metadata.brokers[leader].port}"

    def create_topic(self, name: str, partitions: int) -> None:
        """Create and wait until metadata shows every partition."""
        futures = self._admin.create_topics([NewTopic(name, num_partitions=partitions)])
        admin_result(futures[name], f"create topic {name}", self.timeout_s)
        self._await_partitions(name, partitions)

    def create_partitions(self, topic: str, new_total: int) -> None:
        futures = self._admin.create_partitions([NewPartitions(topic, new_total)])
        admin_result(futures[topic], f"create partitions of {topic}", self.timeout_s)
        self._await_partitions(topic, new_total)

    def delete_records(self, tp: TopicPartition, before: int) -> None:
        """Delete the records of ``tp`` below ``before`` (DeleteRecords) and wait until its log starts there: what
        retention does to a partition, in a second instead of hours (RESTORE-015)."""
        futures = self._admin.delete_records([ck.TopicPartition(tp.topic, tp.partition, before)])
        admin_result(next(iter(futures.values())), f"delete records of {tp} below {before}", self.timeout_s)
        wait_until(lambda: self.earliest_offset(tp) >= before or None, self.timeout_s, f"{tp} to start at {before}")

    def delete_topic(self, name: str) -> None:
        admin_result(self._admin.delete_topics([name])[name], f"delete topic {name}", self.timeout_s)
        wait_until(lambda: name not in self.list_topics() or None, self.timeout_s, f"topic {name} gone")

    def consumer_groups(self) -> list[str]:
        """The id of every consumer group the cluster knows (ListGroups), members or not."""
        listed = admin_result(
            self._admin.list_consumer_groups(request_timeout=self.timeout_s), "list consumer groups", self.timeout_s
        )
        return [g.group_id for g in listed.valid]

    def describe_group(self, group: str) -> tuple[str, list[tuple[str, tuple[TopicPartition, ...]]]]:
        """A consumer group as the broker describes it (DescribeGroups, or ConsumerGroupDescribe for a group of
        the consumer protocol where the client has it): its state's name (``STABLE``, ``PREPARING_REBALANCING``,
        ...) and each member as ``client id/member id`` with its assignment. An ``AttributeError`` from a release
        without ``describe_consumer_groups``; a ``KafkaError`` when the broker did not answer or refused."""
        future = self._admin.describe_consumer_groups([group], request_timeout=self.timeout_s)[group]
        described = admin_result(future, f"describe consumer group {group}", self.timeout_s)
        state = described.state
        name = state.name if hasattr(state, "name") else str(state).upper()
        members = [
            (
                f"{m.client_id}/{m.member_id}",
                tuple(sorted(TopicPartition(p.topic, p.partition) for p in (m.assignment.topic_partitions or ()))),
            )
            for m in described.members
        ]
        return name, members

    def delete_consumer_groups(self, groups: Collection[str]) -> None:
        """Delete ``groups`` (none may have members), with their committed offsets."""
        for group, future in self._admin.delete_consumer_groups(list(groups), request_timeout=self.timeout_s).items():
            admin_result(future, f"delete consumer group {group}", self.timeout_s)

    def _await_partitions(self, topic: str, count: int) -> None:
        """Wait until metadata shows ``count`` partitions of ``topic``, each with a leader.

        Kafka answers CreateTopics/CreatePartitions before leaders are elected; a ListOffsets or a
        produce in that window fails with NOT_LEADER_FOR_PARTITION.
        """

        def led() -> bool | None:
            with _translated(f"metadata of {topic}"):
                found = self._admin.list_topics(topic, timeout=self.timeout_s).topics.get(topic)
            partitions = {} if found is None or found.error is not None else found.partitions
            return (len(partitions) == count and all(p.leader >= 0 for p in partitions.values())) or None

        wait_until(led, self.timeout_s, f"metadata of {topic} with {count} partitions, each with a leader")

    # -- plain writes ------------------------------------------------------------------------

    def produce(self, tp: TopicPartition, key: bytes | None, value: bytes | None) -> int:
        """Non-transactional produce, flushed; returns the record's offset."""
        return self.produce_batch(tp, [(key, value)])[0]

    def produce_batch(
        self, tp: TopicPartition, records: Sequence[tuple[bytes | None, bytes | None]], linger_ms: int = 0,
        timestamp_ms: int | None = None,
    ) -> list[int]:  # fmt: skip
        """Produce ``records`` and flush; with ``linger_ms`` > 0 they travel as one multi-record batch."""
        producer = ck.Producer(self.config("producer", **{"linger.ms": linger_ms}))
        offsets: list[int] = []
        errors: list[ck.KafkaError] = []

        def delivered(error: ck.KafkaError | None, message: ck.Message) -> None:
            if error is not None:
                errors.append(error)
            else:
                offsets.append(_offset(message))

        with _translated(f"produce to {tp}"):
            for key, value in records:
                producer.produce(
                    tp.topic, value, key, partition=tp.partition, on_delivery=delivered, timestamp=timestamp_ms or 0
                )
            undelivered = producer.flush(self.timeout_s)
        if undelivered > 0:
            raise KafkaError(f"produce to {tp}: not delivered within {self.timeout_s} s")
        if errors:
            raise translate(errors[0], f"produce to {tp}")
        return offsets

    def producer(self, linger_ms: int = 5) -> KafkaProducer:
        """A plain (non-transactional) streaming producer, closed with this client."""
        producer = KafkaProducer(self, f"producer-{uuid4().hex[:8]}", {"linger.ms": linger_ms})
        self._producers.append(producer)
        return producer

    # -- TransactionalLog --------------------------------------------------------------------

    def init_producer(
        self, transactional_id: str, transaction_timeout_ms: int | None = None
    ) -> KafkaTransactionalProducer:
        """A new librdkafka producer for ``transactional_id``; ``init_transactions`` fences older ones."""
        settings: dict[str, Any] = {"transactional.id": transactional_id}
        if transaction_timeout_ms is not None:
            settings["transaction.timeout.ms"] = transaction_timeout_ms
        producer = KafkaTransactionalProducer(self, transactional_id, settings)
        self._producers.append(producer)
        return producer

    def discard(self, producer: KafkaProducer) -> None:
        """Close ``producer`` and forget it: a client kept across tasks must not hold its dead producers."""
        producer.close()
        self._producers.remove(producer)

    def resume_producer(self, transactional_id: str, producer_id: int, epoch: int) -> KafkaTransactionalProducer:
        raise UnsupportedFeatureError(
            "librdkafka cannot resume another process's transaction (no KIP-939, no Flink-style reflection)"
        )

    def _group_consumer(self, group: str) -> ck.Consumer:
        """A consumer of ``group`` that never joins it: commits as a simple consumer (generation -1)."""
        if group not in self._group_consumers:
            self._group_consumers[group] = ck.Consumer(self.config("consumer", **{"group.id": group}))
        return self._group_consumers[group]

    def group_metadata(self, group: str) -> object:
        """``ConsumerGroupMetadata`` for ``send_offsets_to_transaction`` (KIP-447)."""
        return self._group_consumer(group).consumer_group_metadata()

    # -- LogReader ---------------------------------------------------------------------------

    def _list_offset(self, tp: TopicPartition, which: OffsetQuery, isolation: Isolation) -> int:
        """ListOffsets (``which``: the earliest or latest offset, or the first at or after a timestamp), by the way
        the release offers (``offset_listing``), asked again on a retriable error (a leader moving or not yet
        known) until ``timeout_s``; -1 for a timestamp no record is that recent."""
        way = _offset_way()
        deadline = time.monotonic() + self.timeout_s
        while True:
            try:
                if way == "admin":
                    return self._admin_offset(tp, which, isolation, deadline)
                return self._consumer_offset(tp, which, isolation, deadline)
            except ck.KafkaException as exc:
                error: ck.KafkaError = exc.args[0]
                if error.code() == ck.KafkaError.UNKNOWN_TOPIC_OR_PART and tp.topic not in self.list_topics():
                    raise TopicGoneError(f"ListOffsets {tp}: topic {tp.topic} is gone from the metadata") from exc
                moving = error.code() in _LEADER_MOVING or error.code() == _LEADER_UNKNOWN
                if (error.retriable() or moving) and time.monotonic() < deadline:
                    time.sleep(0.05)  # polling interval of a bounded wait
                    continue
                raise translate(error, f"ListOffsets {tp}") from exc
            except TimeoutError as exc:
                raise KafkaError(f"ListOffsets {tp}: no answer within {self.timeout_s} s") from exc

    def _admin_offset(self, tp: TopicPartition, which: OffsetQuery, isolation: Isolation, deadline: float) -> int:
        spec: Any = ck_admin.OffsetSpec  # type: ignore[attr-defined]
        if which == "earliest":
            chosen = spec.earliest()
        elif which == "latest":
            chosen = spec.latest()
        else:
            chosen = spec.for_timestamp(which)
        futures = self._admin.list_offsets(
            {ck.TopicPartition(tp.topic, tp.partition): chosen},
            isolation_level=ck.IsolationLevel[isolation.name],
            request_timeout=self.timeout_s,
        )
        (future,) = futures.values()
        return int(future.result(timeout=max(0.1, deadline - time.monotonic())).offset)

    def _consumer_offset(self, tp: TopicPartition, which: OffsetQuery, isolation: Isolation, deadline: float) -> int:
        """A release before ``Admin.list_offsets``: the consumer at ``isolation`` (never subscribed, so this asks
        the partition's leader without touching its assignment) asks for the watermarks or a timestamp's offset.
        An error comes back as ``KafkaException`` (the whole query) or on the partition (a timestamp's)."""
        consumer = self._consumer(isolation)
        part = ck.TopicPartition(tp.topic, tp.partition)
        timeout = max(0.1, deadline - time.monotonic())
        if which in ("earliest", "latest"):
            low, high = consumer.get_watermark_offsets(part, timeout=timeout, cached=False)
            return int(low if which == "earliest" else high)
        part.offset = int(which)
        (found,) = consumer.offsets_for_times([part], timeout=timeout)
        if found.error is not None:
            raise ck.KafkaException(found.error)
        return int(found.offset)

    def earliest_offset(self, tp: TopicPartition) -> int:
        return self._list_offset(tp, "earliest", Isolation.READ_UNCOMMITTED)

    def latest_offset(self, tp: TopicPartition, isolation: Isolation) -> int:
        """ListOffsets latest: the high watermark, or the LSO for read_committed (KAFKA-008)."""
        return self._list_offset(tp, "latest", isolation)

    def high_watermark(self, tp: TopicPartition) -> int:
        """The HW a fetch response reports: right where ListOffsets latest is not (Tansu, KAFKA-008)."""
        consumer = ck.Consumer(self.config("consumer", **{"group.id": f"kconform-hw-{uuid4().hex}"}))
        partition = ck.TopicPartition(tp.topic, tp.partition)
        try:
            consumer.assign([ck.TopicPartition(tp.topic, tp.partition, ck.OFFSET_BEGINNING)])

            def fetched() -> int | None:
                consumer.consume(1, timeout=0.1)  # only to drive a fetch; the records are not needed
                high = consumer.get_watermark_offsets(partition, cached=True)[1]
                return high if high >= 0 else None

            return wait_until(fetched, self.timeout_s, f"a fetch response for {tp}", 0)
        finally:
            consumer.close()

    def offset_for_time(self, tp: TopicPartition, timestamp_ms: int) -> int | None:
        """ListOffsets by timestamp (KAFKA-011); ``None`` when no record is that recent."""
        offset = self._list_offset(tp, timestamp_ms, Isolation.READ_UNCOMMITTED)
        return None if offset < 0 else offset

    def _consumer(self, isolation: Isolation) -> ck.Consumer:
        if isolation not in self._consumers:
            self._consumers[isolation] = ck.Consumer(
                self.config(
                    "consumer",
                    **{
                        "group.id": f"kconform-reader-{uuid4().hex}",
                        "isolation.level": isolation.value,
                        "auto.offset.reset": "error",
                    },
                )
            )
        return self._consumers[isolation]

    def read(self, tp: TopicPartition, start: int, isolation: Isolation, max_records: int) -> Sequence[Record]:
        """Assign at ``start`` and poll until the consumer's position reaches the end of the partition.

        The end is where librdkafka's fetcher reports end-of-partition (the HW, or the LSO under
        read_committed): the position, not the offset of the last record seen, decides, because
        control markers and aborted records take offsets that are never returned.
        """
        consumer = self._consumer(isolation)
        consumer.assign([ck.TopicPartition(tp.topic, tp.partition, start)])
        records: list[Record] = []
        deadline = time.monotonic() + self.timeout_s
        try:
            while len(records) < max_records:
                if time.monotonic() >= deadline:
                    raise KafkaError(f"read {tp} from {start}: end of partition not reached within {self.timeout_s} s")
                for message in consumer.consume(max_records - len(records), timeout=0.1):
                    error = message.error()
                    if error is None:
                        records.append(_record(tp, message))
                    elif error.code() == ck.KafkaError._PARTITION_EOF:
                        return records
                    else:
                        raise translate(error, f"read {tp} from {start}")
            return records
        finally:
            consumer.unassign()

    def read_partitions(
        self, tps: Sequence[TopicPartition], isolation: Isolation
    ) -> tuple[dict[TopicPartition, list[Record]], dict[TopicPartition, int]]:
        """Every record of ``tps`` from their beginning, read in one assignment, and where each ended: the
        position at librdkafka's end-of-partition (the HW, or the LSO under read_committed). One consumer for all,
        where ``read`` per partition costs a fetch round each."""
        records: dict[TopicPartition, list[Record]] = {tp: [] for tp in tps}
        ends: dict[TopicPartition, int] = {}
        if not tps:
            return records, ends
        consumer = self._consumer(isolation)
        consumer.assign([ck.TopicPartition(tp.topic, tp.partition, ck.OFFSET_BEGINNING) for tp in tps])
        deadline = time.monotonic() + self.timeout_s
        try:
            while len(ends) < len(records):
                if time.monotonic() >= deadline:
                    left = sorted(set(records) - set(ends))
                    raise KafkaError(f"read {left}: end of partition not reached within {self.timeout_s} s")
                for message in consumer.consume(10_000, timeout=0.1):
                    tp = TopicPartition(message.topic() or "", message.partition() or 0)
                    error = message.error()
                    if error is None:
                        records[tp].append(_record(tp, message))
                    elif error.code() == ck.KafkaError._PARTITION_EOF:
                        ends[tp] = _offset(message)
                    else:
                        raise translate(error, f"read {tp}")
            return records, ends
        finally:
            consumer.unassign()

    # -- OffsetStore -------------------------------------------------------------------------

    def commit_offsets(self, group: str, offsets: Mapping[TopicPartition, int], metadata: str = "") -> None:
        """OffsetCommit for ``group``, each offset with ``metadata``."""
        with _translated(f"commit offsets of {group}"):
            self._group_consumer(group).commit(
                offsets=[ck.TopicPartition(tp.topic, tp.partition, o, metadata) for tp, o in offsets.items()],
                asynchronous=False,
            )

    def commit_offsets_via_admin(self, group: str, offsets: Mapping[TopicPartition, int]) -> None:
        """OffsetCommit of ``offsets`` for ``group``, which has no members, through the admin client
        (AlterConsumerGroupOffsets): one request on a connection already open, where ``commit_offsets``'s
        consumer first connects and finds the coordinator, about 60 ms on a loaded 2-core machine."""
        request = ck.ConsumerGroupTopicPartitions(
            group, [ck.TopicPartition(tp.topic, tp.partition, o) for tp, o in offsets.items()]
        )
        what = f"commit offsets of {group} (admin)"
        answer = admin_result(
            self._admin.alter_consumer_group_offsets([request], request_timeout=self.timeout_s)[group],
            what,
            self.timeout_s,
        )
        errors = [p.error for p in answer.topic_partitions if p.error is not None]
        if errors:
            raise translate(errors[0], what)

    def _fetch_committed(
        self, group: str, partitions: Collection[TopicPartition] | None, stable: bool = True
    ) -> list[ck.TopicPartition]:
        """OffsetFetch of stable offsets (KIP-447), asked again while a transaction's are unresolved
        or the group's coordinator is loading or moving (after a broker restart), through ``_offset_reader``.

        Kafka materialises offsets sent in a transaction when the coordinator writes its markers,
        after EndTxn has returned; a plain fetch in that window reads the previous value. With
        ``require_stable`` the broker answers UNSTABLE_OFFSET_COMMIT for such partitions instead;
        a whole-group fetch cannot see a partition whose only offset is still pending, so name
        ``partitions`` where they are known. ``stable=False`` answers at once with the last
        resolved offsets, as a read during an open transaction must.
        """
        if partitions is None:  # every partition it may have committed: every partition of every topic
            partitions = [TopicPartition(t, p) for t, ids in self.list_topics().items() for p in ids]
        wanted = [ck.TopicPartition(tp.topic, tp.partition) for tp in partitions]
        reader = self._offset_reader(group, stable)
        deadline = time.monotonic() + self.timeout_s
        while True:
            try:
                answer = reader.committed(wanted, timeout=self.timeout_s) if wanted else []
                errors = [p.error for p in answer if p.error is not None]
            except ck.KafkaException as exc:  # the whole request failed (its coordinator, say)
                errors = [exc.args[0]]
            if not errors:
                return [p for p in answer if p.offset >= 0]
            if all(e.code() in _FETCH_AGAIN_CODES for e in errors) and time.monotonic() < deadline:
                time.sleep(0.05)  # polling interval of a bounded wait for markers or a coordinator
                continue
            if all(e.code() == ck.KafkaError._TIMED_OUT for e in errors):
                raise KafkaError(f"OffsetFetch {group}: no answer within {self.timeout_s} s")
            raise translate(errors[0], f"OffsetFetch {group}")

    def _offset_reader(self, group: str, stable: bool) -> ck.Consumer:
        """A consumer of ``group`` that never joins it and only fetches its offsets: ``read_committed`` asks for
        stable offsets (librdkafka sets OffsetFetch's RequireStable by the isolation level). A consumer, not the
        AdminClient: librdkafka's ListConsumerGroupOffsets answered NOT_COORDINATOR (a fresh broker's loading
        coordinator) re-queries the coordinator through the handle's consumer group, which an AdminClient has
        none of: ``rd_kafka_handle_OffsetFetch`` calls ``rd_kafka_cgrp_op(rk->rk_cgrp == NULL, ...)`` and the
        process dies of SIGSEGV on librdkafka's own thread, where every signal is blocked, so Python's
        faulthandler writes nothing (src/rdkafka_request.c, v2.15.0; seen with librdkafka 2.16.0)."""
        key = (group, stable)
        if key not in self._offset_readers:
            isolation = Isolation.READ_COMMITTED if stable else Isolation.READ_UNCOMMITTED
            self._offset_readers[key] = ck.Consumer(
                self.config("consumer", **{"group.id": group, "isolation.level": isolation.value})
            )
        return self._offset_readers[key]

    def committed(
        self, group: str, partitions: Collection[TopicPartition] | None = None, stable: bool = True
    ) -> Mapping[TopicPartition, int]:
        """The group's committed offsets (of ``partitions``, or of every partition it has committed);
        ``stable`` waits for transactions that sent offsets to end (see ``_fetch_committed``)."""
        fetched = self._fetch_committed(group, partitions, stable)
        return {TopicPartition(p.topic, p.partition): p.offset for p in fetched}

    def committed_metadata(self, group: str) -> Mapping[TopicPartition, str]:
        return {TopicPartition(p.topic, p.partition): p.metadata or "" for p in self._fetch_committed(group, None)}


def _appending_to(errors: list[ck.KafkaError]) -> Callable[[ck.KafkaError | None, ck.Message], None]:
    """A delivery callback that appends each failed delivery's error to ``errors``. Not a bound method of the
    producer's wrapper: librdkafka's handle holds its callback, so a bound method would make wrapper and handle a
    cycle, and the handle (its threads and broker connections) would outlive ``close`` until a garbage collection."""

    def delivered(error: ck.KafkaError | None, _message: ck.Message) -> None:
        if error is not None:
            errors.append(error)

    return delivered


class KafkaProducer:
    """One librdkafka producer that streams records: a full local queue is drained, not an error.

    Only failed deliveries are reported (``delivery.report.only.error``, one callback for the
    producer): a report and a callback object per record would cost more than the produce itself,
    and ``flush`` still waits for every record and raises the first failure.
    """

    def __init__(self, client: KafkaClient, name: str, settings: Mapping[str, Any]) -> None:
        self._client = client
        self._timeout_s = client.timeout_s
        self._name = name
        self._errors: list[ck.KafkaError] = []
        reports = {"delivery.report.only.error": True, "on_delivery": _appending_to(self._errors)}
        config = client.config("producer", **settings, **reports)
        self._request_timeout_s = int(config.get("socket.timeout.ms", LIBRDKAFKA_SOCKET_TIMEOUT_MS)) / 1000
        self._producer = ck.Producer(config)

    def produce(self, topic: str, partition: int, key: bytes | None, value: bytes | None) -> None:
        self.produce_all(topic, (partition,), (key,), (value,))

    def produce_all(
        self, topic: str, partitions: Iterable[int], keys: Iterable[bytes | None], values: Iterable[bytes | None]
    ) -> None:
        """Queue the records in their order (the i-th of each iterable is one record), polling once, not per record."""
        produce = self._producer.produce
        with _translated(f"produce ({self._name})"):
            for partition, key, value in zip(partitions, keys, values, strict=True):
                try:
                    produce(topic, value, key, partition)
                except BufferError:
                    self._produce_when_queue_frees(topic, partition, key, value)
            self._producer.poll(0)

    def _produce_when_queue_frees(self, topic: str, partition: int, key: bytes | None, value: bytes | None) -> None:
        """librdkafka's local queue is full: let deliveries drain it and queue the record, bounded by the timeout."""
        deadline = time.monotonic() + self._timeout_s
        while True:
            self._producer.poll(0.1)
            try:
                self._producer.produce(topic, value, key, partition)
                return
            except BufferError:
                if time.monotonic() >= deadline:
                    full = f"local queue still full after {self._timeout_s} s"
                    raise KafkaError(f"produce ({self._name}): {full}") from None

    def flush(self) -> None:
        """Deliver every produced record; a delivery or fatal (fenced) error surfaces here (COMMIT-007)."""
        with _translated(f"flush ({self._name})"):
            undelivered = self._producer.flush(self._timeout_s)
        if undelivered > 0:
            raise KafkaError(f"flush ({self._name}): not delivered within {self._timeout_s} s")
        if self._errors:
            error = self._errors[0]
            self._errors.clear()  # the list the delivery callback appends to
            raise translate(error, f"delivery ({self._name})")

    def close(self) -> None:
        """Drop queued records without waiting: a zombie's records must not be retried forever.

        A fenced producer repeats its fatal error here; it was surfaced by the call that met it.
        """
        with contextlib.suppress(ck.KafkaException):
            self._producer.purge()
            self._producer.flush(0)


LIBRDKAFKA_TXN_TIMEOUT_MS: Final = 60_000
"""librdkafka's (and Kafka's Java producer's) default ``transaction.timeout.ms``."""
LIBRDKAFKA_SOCKET_TIMEOUT_MS: Final = 60_000
"""librdkafka's default ``socket.timeout.ms``: how long one request waits for its answer."""


def returned_within(what: str, operation: Callable[[], None], timeout_s: float, request_timeout_s: float) -> None:
    """Run ``operation``, a librdkafka transactional call given ``timeout_s``, and wait for it at most that plus
    one request's timeout (``socket.timeout.ms``); past that, a retriable ``KafkaError`` naming both.

    librdkafka waits for the answer of ``init_transactions``, ``send_offsets_to_transaction``,
    ``commit_transaction`` and ``abort_transaction`` without limit (``rd_kafka_txn_op_req0`` with
    ``RD_POLL_INFINITE``, rdkafka_txnmgr.c) and leaves the timeout to the requests it sends, a deadline it
    checks between them plus the one in flight. Measured here on confluent-kafka 2.16.1: a
    ``send_offsets_to_transaction`` given 10 s, called as a Kafka 4.4.0 node was SIGKILLed and restarted, had
    not returned 140 s later (its thread in ``rd_kafka_txn_op_req0``), and the Spark task waiting on it held
    the query past its bound. The call keeps running in its own thread; the producer is left to its
    task's failure, whose retry fences it."""
    done = threading.Event()
    failed: list[BaseException] = []

    def run() -> None:
        try:
            operation()
        except BaseException as error:  # handed to the caller's thread
            failed.append(error)
        finally:
            done.set()

    threading.Thread(target=run, name=f"kconform-{what}", daemon=True).start()
    bound_s = timeout_s + request_timeout_s
    if not done.wait(bound_s):
        raise KafkaError(
            f"{what}: librdkafka had not returned {bound_s:g} s after it was called with a {timeout_s:g} s timeout "
            f"(that timeout plus one request's socket.timeout.ms): the call is abandoned as failed"
        )
    if failed:
        raise failed[0]


class TransactionTimeoutRefusedError(KafkaError):
    """The broker refused the producer's ``transaction.timeout.ms`` (above its ``transaction.max.timeout.ms``)."""


def timeout_named(error: KafkaError, what: str, open_ms: int | None, timeout_ms: int) -> KafkaError:
    """``error``, met by ``what`` in a transaction open ``open_ms`` (``None``: no record yet), as the sink should
    raise it (COMMIT-021): past ``transaction.timeout.ms`` (``timeout_ms``) the broker has aborted the transaction
    and fenced its epoch, whatever the client's error says, and librdkafka's names neither the setting nor how
    long the transaction was open, so the error says both. It keeps its type (a fenced producer stays fenced)."""
    if open_ms is None or open_ms <= timeout_ms:
        return error
    return type(error)(
        f"{what}: its transaction was open {open_ms} ms, longer than transaction.timeout.ms = {timeout_ms} ms, "
        f"so the broker has aborted it ({error}); raise the sink's transaction.timeout.ms above the longest a "
        "task writes (COMMIT-021)"
    )


class KafkaTransactionalProducer(KafkaProducer):
    """One librdkafka transactional producer: one incarnation of its transactional id."""

    def __init__(self, client: KafkaClient, transactional_id: str, settings: Mapping[str, Any]) -> None:
        super().__init__(client, transactional_id, settings)
        self._transactional_id = transactional_id
        try:
            with _translated(f"init_transactions({transactional_id})"):
                # A metadata answer first: librdkafka looks for the transaction coordinator the moment
                # init_transactions is called, and if no broker connection is up yet (the bootstrap one
                # is being replaced) it retries on a fixed 500 ms timer. Measured on one Kafka node: 10
                # of 14 inits took 0.51 s instead of 0.07 s without it, none of 14 with it.
                self._producer.list_topics(timeout=self._timeout_s)
                returned_within(
                    f"init_transactions({transactional_id})",
                    lambda: self._producer.init_transactions(self._timeout_s),
                    self._timeout_s,
                    self._request_timeout_s,
                )
        except KafkaError as error:
            cause = error.__cause__
            if (
                isinstance(cause, ck.KafkaException)
                and cause.args[0].code() == ck.KafkaError.INVALID_TRANSACTION_TIMEOUT
            ):
                asked = client.config("producer", **settings).get("transaction.timeout.ms")
                timeout = LIBRDKAFKA_TXN_TIMEOUT_MS if asked is None else asked
                raise TransactionTimeoutRefusedError(
                    f"init_transactions({transactional_id}): transaction.timeout.ms={timeout} is above the broker's "
                    "transaction.max.timeout.ms (Kafka's default 900000, 15 min; the broker's own message calls it "
                    "max.transaction.timeout.ms): lower the sink's transaction.timeout.ms or raise the broker's "
                    "transaction.max.timeout.ms (COMMIT-015)"
                ) from error
            raise
        asked = client.config("producer", **settings).get("transaction.timeout.ms")
        self._txn_timeout_ms = int(LIBRDKAFKA_TXN_TIMEOUT_MS if asked is None else asked)
        self._first_record_at: float | None = None
        """When the open transaction's first record was queued: the broker's timeout counts from about then."""

    @property
    def transactional_id(self) -> str:
        return self._transactional_id

    @property
    def producer_id(self) -> int:
        raise UnsupportedFeatureError("confluent-kafka does not expose the producer id")

    @property
    def epoch(self) -> int:
        raise UnsupportedFeatureError("confluent-kafka does not expose the producer epoch")

    def _call(self, what: str, operation: Callable[[], None]) -> None:
        with self._timeout_named(what), _translated(f"{what} ({self._transactional_id})"):
            returned_within(f"{what} ({self._transactional_id})", operation, self._timeout_s, self._request_timeout_s)

    @contextmanager
    def _timeout_named(self, what: str) -> Iterator[None]:
        """An error met once the transaction has been open longer than its ``transaction.timeout.ms`` says so."""
        try:
            yield
        except KafkaError as error:
            opened = self._first_record_at
            open_ms = None if opened is None else round((time.monotonic() - opened) * 1000)
            named = timeout_named(error, f"{what} ({self._transactional_id})", open_ms, self._txn_timeout_ms)
            if named is error:
                raise
            raise named from error

    def begin_transaction(self) -> None:
        self._first_record_at = None
        self._call("begin_transaction", self._producer.begin_transaction)

    def produce_all(
        self, topic: str, partitions: Iterable[int], keys: Iterable[bytes | None], values: Iterable[bytes | None]
    ) -> None:
        if self._first_record_at is None:
            self._first_record_at = time.monotonic()
        with self._timeout_named("produce"):
            super().produce_all(topic, partitions, keys, values)

    def flush(self) -> None:
        with self._timeout_named("flush"):
            super().flush()

    def send_offsets_to_transaction(self, group: str, offsets: Mapping[TopicPartition, int]) -> None:
        positions = [ck.TopicPartition(tp.topic, tp.partition, o) for tp, o in offsets.items()]
        metadata = self._client.group_metadata(group)
        self._call(
            "send_offsets_to_transaction",
            lambda: self._producer.send_offsets_to_transaction(positions, metadata, self._timeout_s),
        )

    def commit_transaction(self) -> None:
        self._call("commit_transaction", lambda: self._producer.commit_transaction(self._timeout_s))

    def abort_transaction(self) -> None:
        self._call("abort_transaction", lambda: self._producer.abort_transaction(self._timeout_s))


def topic_records(client: KafkaClient, topic: str, isolation: Isolation) -> dict[int, list[Record]]:
    """Partition -> every record of ``topic`` a consumer at ``isolation`` sees, in log order."""
    return {
        p: list(client.read(TopicPartition(topic, p), 0, isolation, 1_000_000))
        for p in sorted(client.list_topics().get(topic, ()))
    }


def stable_offsets(client: KafkaClient, topic: str) -> dict[TopicPartition, tuple[int, int]]:
    """Partition -> (last stable offset, high watermark) of ``topic``: where read_committed readers stop, and
    where the log ends; the first is below the second while a transaction holds records (KAFKA-002)."""
    partitions = [TopicPartition(topic, p) for p in sorted(client.list_topics().get(topic, ()))]
    return {
        tp: (client.latest_offset(tp, Isolation.READ_COMMITTED), client.latest_offset(tp, Isolation.READ_UNCOMMITTED))
        for tp in partitions
    }
