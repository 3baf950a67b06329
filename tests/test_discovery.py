"""DISC-001..008 against the reference discoverer and enumerator."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kconform.conformance.checks.checkers import check_discovery
from kconform.conformance.generators.strategies import (
    KAFKA_TOPIC_ALPHABET,
    metadata_snapshots,
    near_misses,
    parallelisms,
    topic_names,
)
from kconform.reference_impl.assignment import owner
from kconform.reference_impl.discovery import (
    Enumerator,
    NoPartitionsDiscoveredError,
    PartitionDiscoverer,
    Subscription,
    ZeroPartitionsPolicy,
)
from kconform.reference_impl.types import SubtaskIndex, TopicPartition

Metadata = dict[str, frozenset[int]]


def _all(metadata: Metadata) -> set[TopicPartition]:
    return {TopicPartition(t, p) for t, ids in metadata.items() for p in ids}


def _discoverers(sub: Subscription, n: int) -> list[PartitionDiscoverer]:
    return [PartitionDiscoverer(sub, SubtaskIndex(i), n, ZeroPartitionsPolicy.IGNORE) for i in range(n)]


@given(metadata_snapshots(), st.data())
def test_required_DISC_001_fixed_topics_select_exactly_their_partitions(
    metadata: Metadata, data: st.DataObject
) -> None:
    chosen = data.draw(st.sets(st.sampled_from(sorted(metadata) or ["absent"]), min_size=1))
    sub = Subscription.fixed(chosen)
    assert sub.select(metadata) == {tp for tp in _all(metadata) if tp.topic in chosen}


def test_required_DISC_001_fixed_topic_appearing_later_is_discovered() -> None:
    (d,) = _discoverers(Subscription.fixed(["late"]), 1)
    assert d.discover({"other": frozenset({0})}) == []
    assert d.discover({"late": frozenset({0, 1})}) == [TopicPartition("late", 0), TopicPartition("late", 1)]


@given(metadata_snapshots())
def test_required_DISC_002_pattern_is_a_full_match(metadata: Metadata) -> None:
    sub = Subscription.regex(r"[a-m].*")
    assert {tp.topic for tp in sub.select(metadata)} == {t for t in metadata if t[0] in "abcdefghijklm" and metadata[t]}


def test_required_DISC_002_partial_match_is_not_a_match_and_new_topic_is_found() -> None:
    sub = Subscription.regex("orders")
    assert not sub.matches("orders-v2")
    assert not sub.matches("my-orders")
    (d,) = _discoverers(Subscription.regex(r"orders-.*"), 1)
    assert d.discover({"orders-a": frozenset({0})}) == [TopicPartition("orders-a", 0)]
    assert d.discover({"orders-a": frozenset({0}), "orders-b": frozenset({0})}) == [TopicPartition("orders-b", 0)]


@given(topic_names(30).flatmap(lambda t: st.tuples(st.just(t), near_misses(t))))
def test_required_DISC_001_002_near_misses_are_legal_and_never_match_exactly(pair: tuple[str, str]) -> None:
    """The suite's near-miss names are told apart only by an exact, full match: never by accident."""
    name, miss = pair
    assert miss != name and miss not in {".", ".."} and 1 <= len(miss) <= 249
    assert set(miss) <= set(KAFKA_TOPIC_ALPHABET)
    assert not Subscription.fixed([name]).matches(miss)
    assert not Subscription.regex(re.escape(name)).matches(miss)


def test_required_DISC_002_bad_pattern_names_the_option() -> None:
    with pytest.raises(ValueError, match="subscribePattern"):
        Subscription.regex("(unclosed")


@given(st.lists(metadata_snapshots(max_topics=4), min_size=1, max_size=5), parallelisms(8))
def test_required_DISC_003_each_partition_reported_once_and_first_call_reports_all_owned(
    snapshots: list[Metadata], n: int
) -> None:
    sub = Subscription.regex(".*")
    discoverers = _discoverers(sub, n)
    reported: list[TopicPartition] = []
    for i, snapshot in enumerate(snapshots):
        for d in discoverers:
            new = d.discover(snapshot)
            if i == 0:
                assert set(new) == {tp for tp in _all(snapshot) if owner(tp, n) == d.subtask}
            reported += new
    assert len(reported) == len(set(reported))
    assert set(reported) == set().union(*(_all(s) for s in snapshots))


@given(metadata_snapshots(), parallelisms(8))
def test_required_DISC_004_discoverer_reports_only_own_partitions(metadata: Metadata, n: int) -> None:
    for d in _discoverers(Subscription.regex(".*"), n):
        assert all(owner(tp, n) == d.subtask for tp in d.discover(metadata))


def test_a_foreign_partition_names_the_subtask_flink_gives_it_to() -> None:
    tp = TopicPartition("t", 0)  # Flink's assigner puts t-0 on subtask 0 of 2
    [violation] = check_discovery([({"t": frozenset({0})}, {0: [], 1: [tp]})], Subscription.fixed(["t"]), 2)
    assert str(violation) == (
        "DISC-004 foreign-partition: round 1: subtask 1 reported t-0; Flink's assigner gives it to subtask 0"
    )
    assert violation.data == {"round": 1, "subtask": 1, "topic": "t", "partition": 0, "want": 0}


@given(st.lists(metadata_snapshots(max_topics=4), min_size=1, max_size=5), parallelisms(8))
def test_required_DISC_004_enumerator_reports_every_new_partition_with_its_owner(
    snapshots: list[Metadata], n: int
) -> None:
    enumerator = Enumerator(Subscription.regex(".*"), n)
    seen: set[TopicPartition] = set()
    for snapshot in snapshots:
        new = enumerator.discover(snapshot)
        assert set(new) == _all(snapshot) - seen
        assert all(owner(tp, n) == s for tp, s in new.items())
        seen |= set(new)


@given(topic_names(), st.sets(st.integers(0, 10_000), min_size=1, max_size=30), parallelisms(16))
def test_required_DISC_006_non_contiguous_ids_are_discovered(topic: str, ids: set[int], n: int) -> None:
    found = [tp for d in _discoverers(Subscription.fixed([topic]), n) for tp in d.discover({topic: frozenset(ids)})]
    assert sorted(tp.partition for tp in found) == sorted(ids)


def test_required_DISC_007_zero_partitions_fail_policy_raises_a_named_error() -> None:
    d = PartitionDiscoverer(Subscription.fixed(["missing"]), SubtaskIndex(0), 1, ZeroPartitionsPolicy.FAIL)
    with pytest.raises(NoPartitionsDiscoveredError, match="discovery-of-zero=ignore"):
        d.discover({"other": frozenset({0})})


def test_required_DISC_007_zero_partitions_ignore_policy_proceeds_idle() -> None:
    enumerator = Enumerator(Subscription.regex("x.*"), 2, ZeroPartitionsPolicy.IGNORE)
    assert enumerator.discover({}) == {}
    assert enumerator.discover({"x1": frozenset({0})}) == {TopicPartition("x1", 0): owner(TopicPartition("x1", 0), 2)}


@given(metadata_snapshots(max_topics=4), st.data(), parallelisms(8))
def test_required_DISC_008_partial_view_neither_forgets_nor_rereports(
    metadata: Metadata, data: st.DataObject, n: int
) -> None:
    partial = {t: data.draw(st.frozensets(st.sampled_from(sorted(ids)))) for t, ids in metadata.items()}
    for d in _discoverers(Subscription.regex(".*"), n):
        first = d.discover(metadata)
        assert d.discover(partial) == []
        assert d.discover(metadata) == []
        assert all(tp in d.seen for tp in first)
