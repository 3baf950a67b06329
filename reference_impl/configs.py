"""What the suite hands an adapter's members: one object per member (adapter contract 2).

Positional parameters made every new input a breaking change (``restore_source`` gained its
``initial_offset`` that way); a field added to one of these objects breaks no adapter, since an adapter
reads the fields it knows. They live in the reference implementation, beside the types they carry,
because the reference adapter implements the contract and must not import the suite.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from .commit import NamingStrategy
from .discovery import Metadata, Subscription, ZeroPartitionsPolicy
from .ports import Isolation, TransactionalLog
from .types import TopicPartition

CONTRACT_VERSION: Final = 4
"""The adapter contract these objects belong to: an adapter states it as ``contract_version``."""


@dataclass(frozen=True, kw_only=True)
class DiscovererConfig:
    """``discoverer(config)``: the partition discoverer of one subtask."""

    subscription: Subscription
    subtask: int
    parallelism: int
    on_zero: ZeroPartitionsPolicy


@dataclass(frozen=True, kw_only=True)
class SourceConfig:
    """``source(config)``: a fresh source job. ``initial_offset`` is the configured startup mode (EARLIEST,
    LATEST or an offset); ``keep_unsubscribed`` keeps partitions the subscription no longer matches."""

    subscription: Subscription
    parallelism: int
    initial_offset: int
    keep_unsubscribed: bool
    isolation: Isolation = Isolation.READ_UNCOMMITTED
    """The consumer's ``isolation.level`` (Kafka's default unless the job asks for read_committed, RESTORE-013)."""


@dataclass(frozen=True, kw_only=True)
class RestoreConfig:
    """``restore_source(config)``: a source job restored from ``checkpoint`` (what the adapter's own snapshot
    returned) at ``parallelism``, with the topics' current ``metadata``."""

    checkpoint: Any
    parallelism: int
    subscription: Subscription
    metadata: Metadata
    keep_unsubscribed: bool
    initial_offset: int
    isolation: Isolation = Isolation.READ_UNCOMMITTED
    """As ``SourceConfig.isolation``: the restored job reads as the job it restores did."""


@dataclass(frozen=True, kw_only=True)
class GroupStartConfig:
    """``group_start(config)``: where a fresh source told to start from consumer group ``group``'s committed
    offsets starts each of ``partitions`` (capability ``group-offsets-start``, RESTORE-018). ``committed`` is
    what the group holds; ``fallback`` the start (EARLIEST or LATEST) configured for a partition it holds
    nothing for, ``None`` when none is (Flink's ``committedOffsets()``, strategy ``NONE``)."""

    group: str
    partitions: tuple[TopicPartition, ...]
    committed: Mapping[TopicPartition, int]
    fallback: int | None


@dataclass(frozen=True, kw_only=True)
class SinkConfig:
    """``sink(config)``: a fresh exactly-once sink writing ``log`` under transactional-id ``prefix``."""

    log: TransactionalLog
    prefix: str
    parallelism: int
    naming: NamingStrategy | None = None
    """Its transactional-id naming (capability ``naming-switch``); ``None``: the adapter's own ``naming``."""


@dataclass(frozen=True, kw_only=True)
class RecoveryConfig:
    """``recover_sink(config)``: a sink recovered from ``checkpoint`` (the adapter's own) at ``parallelism``."""

    log: TransactionalLog
    prefix: str
    parallelism: int
    checkpoint: Any
    naming: NamingStrategy | None = None
    """As ``SinkConfig.naming``: it may differ from the naming the checkpoint was taken under (COMMIT-023)."""
