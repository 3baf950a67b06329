"""STRAT-001..010: the adapter's sink partitioner and consumer-group assignors against Kafka's strategies.

Capability ``keyed-sink-placement``: ``adapter.partitioner()`` returns a fresh partitioner, as a
new sink writer has one, whose ``partition(topic, partition, key, value, num_partitions)`` names
the partition the sink writes that record to (``partition`` is the record's explicit partition or
``None``). Capability ``group-assignment``: ``adapter.assign_group(strategy, group)`` answers the
rebalance of a ``kconform.reference_impl.kafka_strategies.Group`` with ``member id -> partitions``, for each
strategy of ``adapter.assignment_strategies`` (Kafka's names: ``range``, ``roundrobin``,
``sticky``, ``cooperative-sticky``); a strategy it does not offer is a skip.

The pipeline-level check (the keyed records a Spark sink wrote, read back from the broker) is not
here yet.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from ...reference_impl.kafka_strategies import DEFAULT_BATCH_SIZE, Group, Member, next_generation
from ...reference_impl.types import TopicPartition
from ..adapter.guard import Guarded
from ..checks.checkers import Violation, fail_on
from ..checks.strategy_checkers import (
    check_balance,
    check_cooperative,
    check_exact_assignment,
    check_group_assignment,
    check_keyed_placement,
    check_keyless_spread,
    check_settles,
    check_stickiness,
    revoked,
    spread,
)
from ..gate.pytest_plugin import requirement
from ..generators.group_strategies import groups, keys, partition_counts
from ..generators.strategies import topic_names

STRATEGIES = ("range", "roundrobin", "sticky", "cooperative-sticky")
STICKY = ("sticky", "cooperative-sticky")
MAX_REBALANCES = 4
"""A cooperative rebalance and its follow-ups, at most (Kafka's ``CooperativeStickyAssignorTest`` allows 4)."""
RECORDS_PER_PARTITION = 64
"""STRAT-003: keyless records of ``batch.size`` bytes per partition within which every partition is used."""

KAFKA_MURMUR2_VECTORS = (
    b"21",
    b"foobar",
    b"a-little-bit-long-string",
    b"a-little-bit-longer-string",
    b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8",
    b"abc",
    b"",
    "grüße-ü€😀".encode(),
    bytes(range(256)),
)
"""Kafka's ``UtilsTest.testMurmur2`` keys, the empty key, non-ASCII and every byte value."""


class Payload(bytes):
    """A record value that shows as its size in a failure message, not as 16 KiB of bytes."""

    def __repr__(self) -> str:
        return f"<{len(self)} bytes>"


def _members(*subscriptions: tuple[str, set[str]]) -> tuple[Member, ...]:
    return tuple(Member(member_id, frozenset(topics)) for member_id, topics in subscriptions)


RANGE_JAVADOC = Group(_members(("C0", {"t0", "t1"}), ("C1", {"t0", "t1"})), {"t0": 3, "t1": 3})
ROUND_ROBIN_JAVADOC = Group(
    _members(("C0", {"t0"}), ("C1", {"t0", "t1"}), ("C2", {"t0", "t1", "t2"})), {"t0": 1, "t1": 2, "t2": 3}
)
"""The examples of the assignors' Javadoc; the second is RoundRobin's skew with differing subscriptions."""


def _claims(member_id: str, topic: str, partitions: tuple[int, ...], generation: int) -> Member:
    owned = frozenset(TopicPartition(topic, p) for p in partitions)
    return Member(member_id, frozenset({topic}), owned, generation)


THREE_GENERATIONS = Group(
    (
        _claims("consumer1", "topic", (0, 2), 3),
        _claims("consumer2", "topic", (1, 2, 3), 1),
        _claims("consumer3", "topic", (2, 4, 5), 2),
        _claims("consumer4", "topic1", (0,), 2),
    ),
    {"topic": 6, "topic1": 1},
)
"""Kafka's ``AbstractStickyAssignorTest.testSubscriptionNotEqualAndAssignSamePartitionWith3Generation``:
``topic-2`` claimed in three generations, the newest claim first; it goes to ``consumer1`` alone."""


def offer(adapter: Any, strategy: str) -> None:
    """Skip unless the adapter offers ``strategy``."""
    offered = getattr(adapter, "assignment_strategies", None)
    if offered is None:
        pytest.skip(f"adapter {adapter.name!r} declares group-assignment without assignment_strategies")
    if strategy not in offered:
        pytest.skip(f"adapter {adapter.name!r} does not offer the {strategy!r} assignor")


def rebalances(adapter: Any, strategy: str, group: Group) -> list[tuple[Group, Any]]:
    """The rebalance of ``group`` and, for the cooperative assignor, its follow-ups until one revokes nothing."""
    rounds = [(group, adapter.assign_group(strategy, group))]
    while strategy == "cooperative-sticky" and len(rounds) < MAX_REBALANCES and revoked(*rounds[-1]):
        group = next_generation(*rounds[-1])
        rounds.append((group, adapter.assign_group(strategy, group)))
    return rounds


# -- the sink's partitioner --------------------------------------------------------------------


@requirement("STRAT-001", capability="keyed-sink-placement")
@given(
    topic_names(40),
    partition_counts(),
    st.lists(st.tuples(keys(), st.one_of(st.none(), st.binary(max_size=64))), min_size=1, max_size=30),
)
def test_required_STRAT_001_keyed_records_go_where_a_java_producer_puts_them(
    adapter: Any, topic: str, n: int, records: list[tuple[bytes, bytes | None]]
) -> None:
    partitioner = Guarded(adapter.partitioner(), "partitioner", adapter.name)
    fail_on(check_keyed_placement([(None, k, n, partitioner.partition(topic, None, k, v, n)) for k, v in records]))


@requirement("STRAT-001", capability="keyed-sink-placement")
def test_required_STRAT_001_kafka_murmur2_vectors(adapter: Any) -> None:
    """Kafka's own murmur2 test keys, the empty key (hashed, not keyless) and non-ASCII keys."""
    partitioner = Guarded(adapter.partitioner(), "partitioner", adapter.name)
    counts = (1, 2, 3, 7, 10, 12, 1000, 2**31 - 1)
    placements = [
        (None, key, n, partitioner.partition("kconform-keyed", None, key, b"v", n))
        for key in KAFKA_MURMUR2_VECTORS
        for n in counts
    ]
    fail_on(check_keyed_placement(placements))


@requirement("STRAT-002", capability="keyed-sink-placement")
@given(
    topic_names(40),
    st.integers(1, 64).flatmap(
        lambda n: st.tuples(
            st.just(n), st.lists(st.tuples(st.integers(0, n - 1), st.one_of(st.none(), keys())), min_size=1)
        )
    ),
)
def test_required_STRAT_002_an_explicit_partition_wins_over_the_key(
    adapter: Any, topic: str, records: tuple[int, list[tuple[int, bytes | None]]]
) -> None:
    n, written = records
    partitioner = Guarded(adapter.partitioner(), "partitioner", adapter.name)
    fail_on(check_keyed_placement([(p, k, n, partitioner.partition(topic, p, k, b"v", n)) for p, k in written]))


@requirement("STRAT-003", capability="keyed-sink-placement")
@given(topic_names(40), st.integers(1, 16))
def test_required_STRAT_003_keyless_records_spread_over_every_partition(adapter: Any, topic: str, n: int) -> None:
    partitioner = Guarded(adapter.partitioner(), "partitioner", adapter.name)
    value = Payload(DEFAULT_BATCH_SIZE)
    placed = [partitioner.partition(topic, None, None, value, n) for _ in range(RECORDS_PER_PARTITION * n)]
    fail_on(check_keyless_spread(placed, n))


# -- consumer-group assignors ------------------------------------------------------------------


@requirement("STRAT-004", capability="group-assignment")
@pytest.mark.parametrize("strategy", STRATEGIES)
@given(group=groups())
@example(group=THREE_GENERATIONS)
def test_required_STRAT_004_every_partition_to_exactly_one_subscriber(
    adapter: Any, strategy: str, group: Group
) -> None:
    """Every rebalance is valid; a cooperative one may hold back what it revokes, its last follow-up may not."""
    offer(adapter, strategy)
    rounds = rebalances(adapter, strategy, group)
    cooperative = strategy == "cooperative-sticky"
    violations = [v for g, a in rounds for v in check_group_assignment(g, a, cooperative)]
    fail_on(violations or check_group_assignment(*rounds[-1]))


@requirement("STRAT-005", capability="group-assignment")
@given(group=groups())
@example(group=RANGE_JAVADOC)
def test_required_STRAT_005_range_gives_contiguous_ranges_first_members_one_extra(adapter: Any, group: Group) -> None:
    offer(adapter, "range")
    fail_on(check_exact_assignment(group, adapter.assign_group("range", group), "range"))


@requirement("STRAT-006", capability="group-assignment")
@given(group=groups())
@example(group=ROUND_ROBIN_JAVADOC)
def test_required_STRAT_006_roundrobin_deals_sorted_partitions_around_sorted_members(
    adapter: Any, group: Group
) -> None:
    offer(adapter, "roundrobin")
    fail_on(check_exact_assignment(group, adapter.assign_group("roundrobin", group), "roundrobin"))


@requirement("STRAT-007", capability="group-assignment")
def test_optional_STRAT_007_roundrobin_skew_is_reported(adapter: Any, record_property: Any) -> None:
    """MAY: RoundRobin's skew with differing subscriptions never fails; the Javadoc's example is recorded."""
    offer(adapter, "roundrobin")
    skew = spread(adapter.assign_group("roundrobin", ROUND_ROBIN_JAVADOC))
    record_property("roundrobin_spread_javadoc_example", skew)
    assert 0 <= skew <= sum(ROUND_ROBIN_JAVADOC.partitions.values())


@requirement("STRAT-008", capability="group-assignment")
@pytest.mark.parametrize("strategy", STICKY)
@given(group=groups())
def test_required_STRAT_008_sticky_assignors_balance(adapter: Any, strategy: str, group: Group) -> None:
    """Balanced after the rebalance (cooperative: after its follow-ups)."""
    offer(adapter, strategy)
    fail_on(check_balance(*rebalances(adapter, strategy, group)[-1]))


@requirement("STRAT-009", capability="group-assignment")
@pytest.mark.parametrize("strategy", STICKY)
@given(group=groups())
def test_should_STRAT_009_sticky_assignors_move_only_what_balance_needs(
    adapter: Any, strategy: str, group: Group
) -> None:
    offer(adapter, strategy)
    fail_on(check_stickiness(group, adapter.assign_group(strategy, group)))


@requirement("STRAT-010", capability="group-assignment")
@given(group=groups())
def test_required_STRAT_010_cooperative_never_revokes_and_assigns_in_one_rebalance(adapter: Any, group: Group) -> None:
    offer(adapter, "cooperative-sticky")
    rounds = rebalances(adapter, "cooperative-sticky", group)
    violations: list[Violation] = [v for g, a in rounds for v in check_cooperative(g, a)]
    fail_on(violations or check_settles(rounds))
