"""Kafka's own strategies: the producer's partitioner and the consumer-group assignors (STRAT-001..010).

A sink that writes keyed records places them with its client's partitioner, and a source that
uses consumer-group management inherits its assignor's guarantees; both come from Kafka's client
code, not from Flink, and spec/kafka-strategies.md states them. This module is the reference:

- ``murmur2`` and ``partition_for_key`` are Kafka's ``Utils.murmur2`` and
  ``BuiltInPartitioner.partitionForKey`` bit for bit (signed 32-bit arithmetic, seed
  ``0x9747b28c``); Python integers do not overflow, so every product is reduced modulo 2**32;
- ``range_assign`` and ``round_robin_assign`` are ``RangeAssignor`` and ``RoundRobinAssignor``
  member for member (member order is Java's: static members by ``group.instance.id`` first, then
  ``member.id``, comparing UTF-16 code units as ``String.compareTo`` does);
- ``sticky_assign`` and ``cooperative_sticky_assign`` satisfy the sticky assignors' invariants
  (valid, balanced, sticky, cooperative) without copying ``AbstractStickyAssignor``'s algorithm,
  so they may pick other partitions than Kafka's when several answers satisfy them.

The JVM oracle (``kconform.conformance.jvm.kafka_oracle``) checks all of it against kafka-clients' own classes.
"""

from __future__ import annotations

import random
from abc import ABC, abstractmethod
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Final

from .types import TopicPartition

_MASK32: Final = 0xFFFFFFFF
MURMUR2_SEED: Final = 0x9747B28C
_M: Final = 0x5BD1E995
DEFAULT_BATCH_SIZE: Final = 16384
"""The producer's ``batch.size`` default: how many bytes the sticky partitioner sends to one partition."""


# -- the producer's partitioner ----------------------------------------------------------------


def murmur2(data: bytes) -> int:
    """Kafka's ``Utils.murmur2``: the 32-bit MurmurHash2 of ``data`` as a signed Java ``int``."""
    length = len(data)
    h = (MURMUR2_SEED ^ length) & _MASK32
    tail = length & ~3
    for i in range(0, tail, 4):
        k = (int.from_bytes(data[i : i + 4], "little") * _M) & _MASK32
        k ^= k >> 24
        k = (k * _M) & _MASK32
        h = ((h * _M) & _MASK32) ^ k
    rest = length - tail
    if rest == 3:
        h ^= data[tail + 2] << 16
    if rest >= 2:
        h ^= data[tail + 1] << 8
    if rest >= 1:
        h = ((h ^ data[tail]) * _M) & _MASK32
    h ^= h >> 13
    h = (h * _M) & _MASK32
    h ^= h >> 15
    return h - (1 << 32) if h & 0x80000000 else h


def to_positive(number: int) -> int:
    """Kafka's ``Utils.toPositive``: the sign bit cleared (not the absolute value)."""
    return number & 0x7FFFFFFF


def partition_for_key(key: bytes, num_partitions: int) -> int:
    """Kafka's ``BuiltInPartitioner.partitionForKey``: where a Java producer puts a keyed record (STRAT-001)."""
    if num_partitions < 1:
        raise ValueError(f"a topic has at least one partition, got {num_partitions}")
    return to_positive(murmur2(key)) % num_partitions


class KafkaPartitioner(ABC):
    """Where a producer writes a record: its explicit partition, else its key's, else the keyless choice.

    The first two are ``KafkaProducer.partition`` (STRAT-002, STRAT-001); subclasses choose keyless
    records' partitions (STRAT-003). A null key is not the empty key: ``b""`` is hashed like any key.
    """

    def partition(
        self, topic: str, partition: int | None, key: bytes | None, value: bytes | None, num_partitions: int
    ) -> int:
        if partition is not None:
            return partition
        if key is not None:
            return partition_for_key(key, num_partitions)
        return self.keyless(topic, len(value or b""), num_partitions)

    @abstractmethod
    def keyless(self, topic: str, size: int, num_partitions: int) -> int:
        """The partition of a keyless record of ``size`` value bytes."""


@dataclass
class StickyPartitioner(KafkaPartitioner):
    """Keyless records as Kafka >= 3.3's ``BuiltInPartitioner`` places them with adaptive partitioning off.

    Every keyless record of a topic goes to the topic's current partition; once ``batch_size``
    bytes went there, the next one is drawn uniformly (it may be the same). ``rng`` is injected so
    that a run can be replayed.
    """

    batch_size: int = DEFAULT_BATCH_SIZE
    rng: random.Random = field(default_factory=lambda: random.Random(0))
    _current: dict[str, tuple[int, int]] = field(default_factory=dict, init=False, repr=False)
    """topic -> (partition, bytes sent to it)."""

    def keyless(self, topic: str, size: int, num_partitions: int) -> int:
        current, sent = self._current.get(topic, (-1, 0))
        if not 0 <= current < num_partitions:
            current, sent = self.rng.randrange(num_partitions), 0
        sent += size
        self._current[topic] = (self.rng.randrange(num_partitions), 0) if sent >= self.batch_size else (current, sent)
        return current


@dataclass
class RoundRobinKeylessPartitioner(KafkaPartitioner):
    """Keyless records as Kafka <= 2.3's ``DefaultPartitioner`` placed them: round-robin from a random start."""

    rng: random.Random = field(default_factory=lambda: random.Random(0))
    _next: dict[str, int] = field(default_factory=dict, init=False, repr=False)

    def keyless(self, topic: str, size: int, num_partitions: int) -> int:
        counter = self._next[topic] if topic in self._next else self.rng.randrange(1 << 31)
        self._next[topic] = counter + 1
        return counter % num_partitions


# -- consumer groups ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Member:
    """One consumer of a group as the leader sees it when it assigns."""

    member_id: str
    topics: frozenset[str]
    owned: frozenset[TopicPartition] = frozenset()
    """What it owned after the previous rebalance (what the sticky assignors keep if they can)."""
    generation: int = -1
    """The generation of ``owned``; -1 for a member that owned nothing before."""
    instance_id: str | None = None
    """``group.instance.id`` of a static member."""


@dataclass(frozen=True, slots=True)
class Group:
    """A rebalance's input: the members and the partition count of each existing topic."""

    members: tuple[Member, ...]
    partitions: Mapping[str, int]

    @property
    def identical_subscriptions(self) -> bool:
        return len({m.topics for m in self.members}) <= 1

    def assignable(self) -> list[TopicPartition]:
        """Every partition of an existing topic some member subscribes to, sorted."""
        subscribed = {t for m in self.members for t in m.topics}
        return [
            TopicPartition(t, p) for t in sorted(subscribed & set(self.partitions)) for p in range(self.partitions[t])
        ]

    def exists(self, tp: TopicPartition) -> bool:
        return 0 <= tp.partition < self.partitions.get(tp.topic, 0)


Assignment = dict[str, list[TopicPartition]]
"""member id -> its partitions, sorted."""


def java_order(text: str) -> bytes:
    """A sort key ordering strings as Java's ``String.compareTo`` does (by UTF-16 code unit, not code point)."""
    return text.encode("utf-16-be", "surrogatepass")


def member_order(member: Member) -> tuple[int, bytes]:
    """``AbstractPartitionAssignor.MemberInfo.compareTo``: static members by instance id first, then by member id."""
    if member.instance_id is not None:
        return (0, java_order(member.instance_id))
    return (1, java_order(member.member_id))


def range_assign(group: Group) -> Assignment:
    """``RangeAssignor``: per topic, contiguous ranges to its subscribers in member order, the first ones one extra."""
    out: dict[str, list[TopicPartition]] = {m.member_id: [] for m in group.members}
    for topic, count in sorted(group.partitions.items()):
        consumers = sorted((m for m in group.members if topic in m.topics), key=member_order)
        if not consumers:
            continue
        per, extra = divmod(count, len(consumers))
        start = 0
        for i, consumer in enumerate(consumers):
            size = per + (1 if i < extra else 0)
            out[consumer.member_id] += [TopicPartition(topic, p) for p in range(start, start + size)]
            start += size
    return _sorted(out)


def round_robin_assign(group: Group) -> Assignment:
    """``RoundRobinAssignor``: all partitions by topic then id, dealt around the sorted members, skipping
    a member that does not subscribe to the partition's topic."""
    members = sorted(group.members, key=member_order)
    out: dict[str, list[TopicPartition]] = {m.member_id: [] for m in members}
    at = 0
    for topic in sorted({t for m in members for t in m.topics}, key=java_order):
        for p in range(group.partitions.get(topic, 0)):
            while topic not in members[at % len(members)].topics:
                at += 1
            out[members[at % len(members)].member_id].append(TopicPartition(topic, p))
            at += 1
    return _sorted(out)


def owners(group: Group) -> dict[TopicPartition, set[str]]:
    """Who owns each claimed partition: the members of the newest generation that claims it.

    An older claim is one a rebalance its member missed overrode; that member revokes it when it
    learns its assignment (``AbstractStickyAssignor.allSubscriptionsEqual``).
    """
    claims: dict[TopicPartition, list[Member]] = defaultdict(list)
    for m in group.members:
        for tp in m.owned:
            claims[tp].append(m)
    newest = {tp: max(c.generation for c in claimants) for tp, claimants in claims.items()}
    return {tp: {c.member_id for c in claimants if c.generation == newest[tp]} for tp, claimants in claims.items()}


def kept_ownership(group: Group) -> dict[str, set[TopicPartition]]:
    """What each member may keep: a partition it alone owns (``owners``) that still exists and that it
    still subscribes to; a partition its newest generation claims twice goes to none of them."""
    members = {m.member_id: m for m in group.members}
    kept: dict[str, set[TopicPartition]] = {m.member_id: set() for m in group.members}
    for tp, holders in owners(group).items():
        if len(holders) != 1:
            continue
        (owner,) = holders
        if group.exists(tp) and tp.topic in members[owner].topics:
            kept[owner].add(tp)
    return kept


def sticky_assign(group: Group) -> Assignment:
    """The sticky assignors' answer: valid, then as balanced as possible (STRAT-008), then keeping as
    much of the previous ownership as that allows (STRAT-009)."""
    kept = kept_ownership(group)
    if group.identical_subscriptions:
        return _sorted(_constrained(group, kept))
    return _sorted(_general(group, kept))


def cooperative_sticky_assign(group: Group) -> Assignment:
    """``sticky_assign`` without the partitions it moves away from a current owner (STRAT-010).

    Those are revoked in this rebalance and assigned in the next one, when nobody owns them.
    """
    claimants = owners(group)
    return {
        member: [tp for tp in tps if claimants.get(tp, {member}) <= {member}]
        for member, tps in sticky_assign(group).items()
    }


def next_generation(group: Group, assignment: Mapping[str, Iterable[TopicPartition]]) -> Group:
    """The same group rejoining after ``assignment``: what a follow-up rebalance starts from."""
    generation = max((m.generation for m in group.members), default=-1) + 1
    return replace(
        group,
        members=tuple(
            replace(m, owned=frozenset(assignment.get(m.member_id, ())), generation=generation) for m in group.members
        ),
    )


def _constrained(group: Group, kept: Mapping[str, set[TopicPartition]]) -> dict[str, list[TopicPartition]]:
    """Identical subscriptions: quotas of ``P // N`` or one more, the larger ones to members that keep the most.

    A member keeps ``min(owned, quota)`` of its partitions, so only the excess of the members
    over quota moves, which is the fewest moves any balanced assignment makes.
    """
    members = sorted(group.members, key=member_order)
    partitions = group.assignable()
    quota, extra = divmod(len(partitions), len(members))
    by_keep = sorted(members, key=lambda m: (-min(len(kept[m.member_id]), quota + 1), member_order(m)))
    quotas = {m.member_id: quota + (1 if i < extra else 0) for i, m in enumerate(by_keep)}
    out = {m.member_id: sorted(kept[m.member_id])[: quotas[m.member_id]] for m in members}
    taken = {tp for tps in out.values() for tp in tps}
    free = iter([tp for tp in partitions if tp not in taken])
    for m in members:
        out[m.member_id] += [next(free) for _ in range(quotas[m.member_id] - len(out[m.member_id]))]
    return out


def _general(group: Group, kept: Mapping[str, set[TopicPartition]]) -> dict[str, list[TopicPartition]]:
    """Different subscriptions: keep every valid ownership, give each free partition to its least loaded
    subscriber, then move partitions from a member to a subscriber with two fewer until none can move.

    Each move lowers the sum of squared sizes, so the loop ends; when it ends no partition can move to
    a subscriber with two fewer partitions, which is STRAT-008's balance. An assignment that is
    already complete and balanced is never touched (STRAT-009).
    """
    members = sorted(group.members, key=member_order)
    out = {m.member_id: set(kept[m.member_id]) for m in members}
    subscribers = {t: [m for m in members if t in m.topics] for t in group.partitions}
    taken = {tp for tps in out.values() for tp in tps}
    free = sorted((tp for tp in group.assignable() if tp not in taken), key=lambda tp: (len(subscribers[tp.topic]), tp))
    for tp in free:
        least = min(subscribers[tp.topic], key=lambda m: (len(out[m.member_id]), member_order(m)))
        out[least.member_id].add(tp)
    while move := _movable(members, subscribers, out, kept):
        tp, source, target = move
        out[source].remove(tp)
        out[target].add(tp)
    return {m: sorted(tps) for m, tps in out.items()}


def _movable(
    members: Sequence[Member],
    subscribers: Mapping[str, Sequence[Member]],
    out: Mapping[str, set[TopicPartition]],
    kept: Mapping[str, set[TopicPartition]],
) -> tuple[TopicPartition, str, str] | None:
    """A partition of the most loaded member that can go to a subscriber with two fewer, preferring
    one the member did not own before; ``None`` when the assignment is balanced."""
    for source in sorted(members, key=lambda m: (-len(out[m.member_id]), member_order(m))):
        size = len(out[source.member_id])
        for tp in sorted(out[source.member_id], key=lambda tp: (tp in kept[source.member_id], tp)):
            target = min(subscribers[tp.topic], key=lambda m: (len(out[m.member_id]), member_order(m)))
            if size >= len(out[target.member_id]) + 2:
                return tp, source.member_id, target.member_id
    return None


def _sorted(assignment: Mapping[str, Iterable[TopicPartition]]) -> Assignment:
    return {member: sorted(tps) for member, tps in assignment.items()}


ASSIGNORS: Final[Mapping[str, Callable[[Group], Assignment]]] = {
    "range": range_assign,
    "roundrobin": round_robin_assign,
    "sticky": sticky_assign,
    "cooperative-sticky": cooperative_sticky_assign,
}
"""Kafka's assignor names (``partition.assignment.strategy`` protocol names) -> the reference assignor."""
STICKY_STRATEGIES: Final = ("sticky", "cooperative-sticky")
