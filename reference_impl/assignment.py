"""Partition assignment: Flink's ``KafkaTopicPartitionAssigner`` (ASSIGN-001..006).

Every subtask evaluates the same pure formula, so each can decide locally, with no
coordination, which partitions are its own::

    start = ((topic.hashCode() * 31) & 0x7FFFFFFF) % n
    owner = (start + partition) % n

``hashCode`` is Java's ``String.hashCode``: ``s[0]*31^(k-1) + ... + s[k-1]`` over UTF-16 code
units with 32-bit signed overflow. Python integers do not overflow, so every step is reduced
modulo 2**32 explicitly; getting that wrong (or using Python's ``%`` on a signed value without
the mask) silently moves partitions to other subtasks, which is why golden vectors from the
JVM pin this module.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from .types import SubtaskIndex, TopicPartition

_MASK32 = 0xFFFFFFFF
_SIGN_MASK = 0x7FFFFFFF


def java_string_hash(text: str) -> int:
    """Java's ``String.hashCode`` as a signed 32-bit integer."""
    h = 0
    data = text.encode("utf-16-be")
    for i in range(0, len(data), 2):
        h = (31 * h + ((data[i] << 8) | data[i + 1])) & _MASK32
    return h - (1 << 32) if h & 0x80000000 else h


def start_index(topic: str, parallelism: int) -> SubtaskIndex:
    """The subtask that owns partition 0 of ``topic`` (ASSIGN-004)."""
    _check_parallelism(parallelism)
    return SubtaskIndex(((java_string_hash(topic) * 31) & _SIGN_MASK) % parallelism)


def assign(topic: str, partition: int, parallelism: int) -> SubtaskIndex:
    """The subtask in ``range(parallelism)`` that owns ``topic``'s ``partition`` (ASSIGN-001, ASSIGN-004)."""
    if partition < 0:
        raise ValueError(f"partition id must be >= 0, got {partition}")
    return SubtaskIndex((start_index(topic, parallelism) + partition) % parallelism)


def owner(tp: TopicPartition, parallelism: int) -> SubtaskIndex:
    """``assign`` for a ``TopicPartition``."""
    return assign(tp.topic, tp.partition, parallelism)


Owner = Callable[[TopicPartition, int], int]
"""Who owns a partition at a parallelism. The core takes one, Flink's ``owner`` by default, so that a
connector with its own assigner (one that is not Flink's, ASSIGN-004) runs the same discovery and restore."""


@dataclass(frozen=True, slots=True)
class Plan:
    """Partitions grouped by owning subtask; ``by_subtask[i]`` is sorted."""

    parallelism: int
    by_subtask: tuple[tuple[TopicPartition, ...], ...]

    def owner_of(self) -> dict[TopicPartition, SubtaskIndex]:
        """Inverse view: partition -> subtask."""
        return {tp: SubtaskIndex(i) for i, tps in enumerate(self.by_subtask) for tp in tps}


def plan(partitions: Iterable[TopicPartition], parallelism: int) -> Plan:
    """Place every partition on its owner. The result does not depend on input order (ASSIGN-003).

    Works per topic: the start index is computed once per topic, and topics and partition ids
    are visited in sorted order so that every bucket comes out sorted without comparing
    ``TopicPartition`` objects, which keeps a million partitions near a second.
    """
    _check_parallelism(parallelism)
    by_topic: dict[str, dict[int, TopicPartition]] = {}
    for tp in partitions:
        by_topic.setdefault(tp.topic, {})[tp.partition] = tp
    buckets: list[list[TopicPartition]] = [[] for _ in range(parallelism)]
    for topic in sorted(by_topic):
        ids = by_topic[topic]
        start = start_index(topic, parallelism)
        for p in sorted(ids):
            if p < 0:
                raise ValueError(f"partition id must be >= 0, got {ids[p]}")
            buckets[(start + p) % parallelism].append(ids[p])
    return Plan(parallelism, tuple(tuple(b) for b in buckets))


def plan_topics(topics: Mapping[str, Iterable[int]], parallelism: int) -> Plan:
    """``plan`` over a metadata snapshot ``topic -> partition ids``."""
    return plan((TopicPartition(t, p) for t, ids in topics.items() for p in ids), parallelism)


def _check_parallelism(parallelism: int) -> None:
    if parallelism < 1:
        raise ValueError(f"parallelism must be >= 1, got {parallelism}")
