"""Value types shared by every part of the reference core.

They are frozen and hashable so that plans, snapshots and histories can be compared,
sorted and used as dictionary keys by the checkers.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, NewType

SubtaskIndex = NewType("SubtaskIndex", int)
"""Index of a parallel source or sink instance, in ``range(parallelism)`` (Flink subtask i, Spark task i)."""


@dataclass(frozen=True, order=True, slots=True)
class TopicPartition:
    """One Kafka partition. Ordered by topic name, then partition id."""

    topic: str
    partition: int

    def __str__(self) -> str:
        return f"{self.topic}-{self.partition}"


EARLIEST: Final = -2
"""Offset sentinel: start at the log's earliest offset (Flink's ``KafkaTopicPartitionStateSentinel.EARLIEST_OFFSET``).

It is resolved to a real offset only when the partition is first read, so records written
between discovery and the first read are never skipped (DISC-005, RESTORE-004).
"""

LATEST: Final = -1
"""Offset sentinel: start at the log's end (only for partitions known at the very first start).

It is resolved at discovery, to the partition's end offset then (DISC-005, FLINK-28303): left
until the first read, a checkpoint taken before that read would store it, and a restore would
resolve it past every record written in between.
"""

SENTINELS: Final = frozenset({EARLIEST, LATEST})


def is_sentinel(offset: int) -> bool:
    """Whether ``offset`` is a start-position sentinel rather than a real next offset."""
    return offset in SENTINELS
