"""The narrow ports through which the pure core talks to Kafka.

The same core runs on the deterministic model (``kconform.reference_impl.kafka_model``), on a real
broker through confluent-kafka, and inside Spark tasks. Each port names only what the
mechanism needs, in Kafka's own terms, so a mismatch between the model and a broker shows
up as a differential-test failure on one method rather than as a vague behaviour change.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from .types import TopicPartition


class KafkaError(Exception):
    """A failure reported by the log. Never swallowed by the core (COMMIT-007)."""


class ProducerFencedError(KafkaError):
    """A newer producer with the same transactional id has called ``init_transactions``."""


class InvalidTxnStateError(KafkaError):
    """The call is not legal in the producer's current transaction state."""


class InvalidPidMappingError(KafkaError):
    """The coordinator holds no state for this transactional id under this producer id: it expired
    (``transactional.id.expiration.ms`` without use) or was initialised again after expiring."""


class TransactionTimeoutError(KafkaError):
    """The broker aborted the open transaction because it exceeded its timeout."""


class UnsupportedFeatureError(KafkaError):
    """The log cannot do this (e.g. resuming another process's transaction without KIP-939)."""


class TopicGoneError(KafkaError):
    """The partition's topic is not in the cluster's metadata (deleted since it was listed)."""


class Isolation(enum.Enum):
    """Consumer isolation level."""

    READ_COMMITTED = "read_committed"
    READ_UNCOMMITTED = "read_uncommitted"


@dataclass(frozen=True, slots=True)
class Record:
    """A data record as a consumer sees it (control markers are never returned)."""

    topic: str
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    timestamp_ms: int | None = field(default=None, compare=False)
    """The record's timestamp as the broker returned it (the producer's create time unless the topic logs append
    time); ``None`` where the reader had none. Not part of a record's identity: two reads of one record are equal."""

    @property
    def topic_partition(self) -> TopicPartition:
        return TopicPartition(self.topic, self.partition)


class MetadataSource(Protocol):
    """What discovery reads: a snapshot of topic names and their partition ids."""

    def list_topics(self) -> Mapping[str, frozenset[int]]:
        """All topics visible now, each with the ids of its partitions."""
        ...


class TransactionalProducer(Protocol):
    """One incarnation of a transactional producer (one ``init_transactions`` or resume)."""

    @property
    def transactional_id(self) -> str: ...

    @property
    def producer_id(self) -> int: ...

    @property
    def epoch(self) -> int: ...

    def begin_transaction(self) -> None: ...

    def produce(self, topic: str, partition: int, key: bytes | None, value: bytes | None) -> None: ...

    def send_offsets_to_transaction(self, group: str, offsets: Mapping[TopicPartition, int]) -> None:
        """Add consumer-group offsets to the open transaction (KIP-98/447): they commit with it."""
        ...

    def flush(self) -> None:
        """Make every produced record durable inside the open transaction (the pre-commit)."""
        ...

    def commit_transaction(self) -> None: ...

    def abort_transaction(self) -> None: ...


class TransactionalLog(Protocol):
    """The sink's port: producers by transactional id."""

    def init_producer(self, transactional_id: str) -> TransactionalProducer:
        """``init_transactions``: bump the epoch, abort the id's open transaction, fence older incarnations."""
        ...

    def resume_producer(self, transactional_id: str, producer_id: int, epoch: int) -> TransactionalProducer:
        """Take over a pre-committed transaction from another process, as Flink does by reflection.

        Raises ``UnsupportedFeatureError`` where the client has no KIP-939 (librdkafka).
        """
        ...


class LogReader(Protocol):
    """The source's port: offsets and records of one partition."""

    def earliest_offset(self, tp: TopicPartition) -> int: ...

    def latest_offset(self, tp: TopicPartition, isolation: Isolation) -> int:
        """High watermark for read_uncommitted; last stable offset for read_committed."""
        ...

    def read(self, tp: TopicPartition, start: int, isolation: Isolation, max_records: int) -> Sequence[Record]:
        """Records at offsets ``>= start`` up to ``latest_offset(tp, isolation)``, at most ``max_records``."""
        ...


class OffsetStore(Protocol):
    """Consumer-group offsets (the ON_CHECKPOINTS commit target of RESTORE-007)."""

    def commit_offsets(self, group: str, offsets: Mapping[TopicPartition, int]) -> None: ...

    def committed(self, group: str) -> Mapping[TopicPartition, int]: ...
