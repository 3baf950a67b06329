"""Partition discovery (DISC-001..008): subscriptions, the per-subtask discoverer and the enumerator.

Two forms, as in Flink:

- ``PartitionDiscoverer`` is the legacy ``AbstractPartitionDiscoverer``: every subtask lists the
  cluster's metadata, remembers every partition it has ever seen and reports only those that
  are new *and* its own (``setAndCheckDiscoveredPartition``).
- ``Enumerator`` is FLIP-27's ``KafkaSourceEnumerator``: one instance on the coordinator reports
  every new partition, with the reader that the same assigner gives it to.

Both only ever add to their memory of seen partitions, so a metadata snapshot that misses a
known partition (a partial view during a broker hiccup) neither forgets nor re-reports it.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field

from .assignment import Owner, owner
from .types import SubtaskIndex, TopicPartition

Metadata = Mapping[str, Iterable[int]]
"""A metadata snapshot: topic name -> partition ids (as ``MetadataSource.list_topics`` returns)."""


class ZeroPartitionsPolicy(enum.Enum):
    """What a discovery that matches no partition does (DISC-007)."""

    FAIL = "fail"
    """Legacy ``FlinkKafkaConsumer``: "Unable to retrieve any partitions" fails the job."""
    IGNORE = "ignore"
    """FLIP-27 ``KafkaSource``: nothing to read yet; the next discovery may find some."""


class NoPartitionsDiscoveredError(RuntimeError):
    """The subscription matched no partition and the policy is ``fail`` (DISC-007); it names the subscription as
    written (DISC-010)."""


@dataclass(frozen=True, slots=True)
class Subscription:
    """A fixed list of topics (DISC-001) or a regex that must match a whole topic name (DISC-002)."""

    topics: frozenset[str] = frozenset()
    pattern: re.Pattern[str] | None = None

    @classmethod
    def fixed(cls, topics: Iterable[str]) -> Subscription:
        names = frozenset(topics)
        if not names:
            raise ValueError("a fixed subscription needs at least one topic")
        return cls(topics=names)

    @classmethod
    def regex(cls, pattern: str) -> Subscription:
        try:
            compiled = re.compile(pattern)
        except re.error as exc:
            raise ValueError(f"subscribePattern {pattern!r} is not a valid regular expression: {exc}") from exc
        return cls(pattern=compiled)

    def matches(self, topic: str) -> bool:
        """Whether the subscription includes ``topic``; a pattern must match the whole name."""
        if self.pattern is not None:
            return self.pattern.fullmatch(topic) is not None
        return topic in self.topics

    def select(self, metadata: Metadata) -> set[TopicPartition]:
        """Every partition of ``metadata`` that the subscription includes."""
        return {TopicPartition(topic, p) for topic, ids in metadata.items() if self.matches(topic) for p in ids}

    def describe(self) -> str:
        """The subscription as the user wrote it: a pattern's ``repr`` would double its backslashes (DISC-010)."""
        if self.pattern is not None:
            return f"pattern '{self.pattern.pattern}'"
        return f"topics {sorted(self.topics)}"


@dataclass
class KnownPartitions:
    """Every partition seen so far, indexed by topic, so a discovery diff costs O(topics + new partitions)."""

    by_topic: dict[str, set[int]] = field(default_factory=dict)

    def add(self, partitions: Iterable[TopicPartition]) -> None:
        for tp in partitions:
            self.by_topic.setdefault(tp.topic, set()).add(tp.partition)

    def clear(self) -> None:
        self.by_topic.clear()

    def __contains__(self, tp: object) -> bool:
        return isinstance(tp, TopicPartition) and tp.partition in self.by_topic.get(tp.topic, ())

    def __iter__(self) -> Iterator[TopicPartition]:
        return (TopicPartition(t, p) for t, ids in self.by_topic.items() for p in ids)

    def __len__(self) -> int:
        return sum(len(ids) for ids in self.by_topic.values())

    def remember_new(
        self, subscription: Subscription, metadata: Metadata, policy: ZeroPartitionsPolicy
    ) -> list[TopicPartition]:
        """The subscribed partitions of ``metadata`` not seen before, sorted; they are remembered now."""
        new: list[TopicPartition] = []
        matched = 0
        for topic in sorted(t for t in metadata if subscription.matches(t)):
            ids = metadata[topic]
            listed = ids if isinstance(ids, (set, frozenset)) else set(ids)
            matched += len(listed)
            known = self.by_topic.setdefault(topic, set())
            fresh = listed - known
            known |= fresh
            new += [TopicPartition(topic, p) for p in sorted(fresh)]
        if not matched and policy is ZeroPartitionsPolicy.FAIL:
            raise NoPartitionsDiscoveredError(
                f"Unable to retrieve any partitions for {subscription.describe()}; "
                "create the topic first or set discovery-of-zero=ignore"
            )
        return new


@dataclass
class PartitionDiscoverer:
    """One subtask's discoverer: reports each partition it owns exactly once (DISC-003, DISC-004)."""

    subscription: Subscription
    subtask: SubtaskIndex
    parallelism: int
    on_zero: ZeroPartitionsPolicy = ZeroPartitionsPolicy.FAIL
    seen: KnownPartitions = field(default_factory=KnownPartitions)
    owner: Owner = owner
    """Flink's assigner unless the connector has its own."""

    def __post_init__(self) -> None:
        if not 0 <= self.subtask < self.parallelism:
            raise ValueError(f"subtask {self.subtask} is not in range({self.parallelism})")

    def discover(self, metadata: Metadata) -> list[TopicPartition]:
        """New partitions owned by this subtask, sorted; every partition seen is remembered."""
        new = self.seen.remember_new(self.subscription, metadata, self.on_zero)
        return [tp for tp in new if self.owner(tp, self.parallelism) == self.subtask]


@dataclass
class Enumerator:
    """FLIP-27 enumerator: reports every new partition with its reader; ``assigned`` is its checkpoint."""

    subscription: Subscription
    parallelism: int
    on_zero: ZeroPartitionsPolicy = ZeroPartitionsPolicy.IGNORE
    assigned: KnownPartitions = field(default_factory=KnownPartitions)
    owner: Owner = owner
    """Flink's assigner unless the connector has its own."""

    def discover(self, metadata: Metadata) -> dict[TopicPartition, SubtaskIndex]:
        """New partitions -> the reader that owns them (the same formula as the legacy assigner)."""
        new = self.assigned.remember_new(self.subscription, metadata, self.on_zero)
        return {tp: SubtaskIndex(self.owner(tp, self.parallelism)) for tp in new}
