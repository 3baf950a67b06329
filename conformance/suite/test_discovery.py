"""DISC-001..008: the adapter's discoverers over a growing, sometimes partial, cluster, and started on a pattern
that matches nothing yet."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ...reference_impl.configs import DiscovererConfig
from ...reference_impl.discovery import Metadata, Subscription, ZeroPartitionsPolicy
from ...reference_impl.types import TopicPartition
from ..checks.checkers import check_discovery, check_zero_partitions, fail_on
from ..gate.pytest_plugin import requirement
from ..generators.start_classes import LateStart, drawn_classes, late_starts, start_classes
from ..generators.strategies import InterleavingMix, cluster_histories, near_misses, parallelisms, topic_names


def run_rounds(
    adapter: Any, subscription: Subscription, n: int, rounds: Sequence[Metadata]
) -> list[tuple[Metadata, dict[int, list[Any]]]]:
    discoverers = [
        adapter.discoverer(
            DiscovererConfig(subscription=subscription, subtask=i, parallelism=n, on_zero=ZeroPartitionsPolicy.IGNORE)
        )
        for i in range(n)
    ]
    return [(metadata, {i: list(d.discover(metadata)) for i, d in enumerate(discoverers)}) for metadata in rounds]


def cluster_names(rounds: list[Metadata]) -> tuple[st.SearchStrategy[str], st.SearchStrategy[str]]:
    """The cluster's topic names, and those names or their near misses."""
    existing = st.sampled_from(sorted({t for m in rounds for t in m}) or ["none"])
    return existing, st.one_of(existing, existing.flatmap(near_misses))


def fixed_subscriptions(rounds: list[Metadata]) -> st.SearchStrategy[Subscription]:
    """Fixed lists of the cluster's names and their near misses, which must stay out."""
    _, names = cluster_names(rounds)
    return st.sets(st.one_of(names, st.just("kconform-absent")), min_size=1).map(Subscription.fixed)


def pattern_subscriptions(rounds: list[Metadata]) -> st.SearchStrategy[Subscription]:
    """Patterns built from the cluster's names and their near misses.

    Patterns are exact, a prefix with ``.*``, a bare prefix (full match, not ``re.match``), the
    name unescaped (its ``.`` a wildcard) or an alternation of two names (anchors must not bind
    to one alternative).
    """
    existing, names = cluster_names(rounds)
    prefix = existing.flatmap(lambda t: st.integers(1, len(t)).map(lambda k: re.escape(t[:k])))
    patterns = st.one_of(
        names.map(re.escape),
        prefix.map(lambda p: p + ".*"),
        prefix,
        names,
        st.tuples(names, names).map(lambda ab: "|".join(map(re.escape, ab))),
    )
    return patterns.map(Subscription.regex)


@requirement("DISC-001", "DISC-003", "DISC-004", "DISC-006", capability="discovery")
@given(cluster_histories(partial_views=False), parallelisms(8), st.data())
def test_required_DISC_001_003_004_006_each_partition_reported_once_by_its_owner(
    adapter: Any, rounds: list[Metadata], n: int, data: st.DataObject
) -> None:
    subscription = data.draw(fixed_subscriptions(rounds), label="subscription")
    violations = check_discovery(run_rounds(adapter, subscription, n, rounds), subscription, n)
    fail_on(violations)


def exact_match_hazards(topic: str) -> list[tuple[str, str]]:
    """(listed, other) pairs where a sloppy compare of a fixed list reads ``other`` as ``listed``: another
    case, a ``.`` where the other name has another character (the list joined into an unescaped regex), a
    name the listed one prefixes, or one it is a suffix of (``re.search``); each a legal topic name."""
    pairs = [(topic, topic.swapcase()), (topic, topic + "-dlq"), (topic, "x" + topic), (topic[:-1], topic)]
    pairs += [("." + topic[1:], topic)] if topic[0] != "." else [(topic, "x" + topic[1:])]
    return [(a, b) for a, b in pairs if a != b and a not in {"", ".", ".."} and b not in {".", ".."}]


@requirement("DISC-001", capability="discovery")
@given(topic_names(30), parallelisms(4))
def test_required_DISC_001_a_fixed_list_matches_each_name_exactly(adapter: Any, topic: str, n: int) -> None:
    """Every near miss of a listed name stays out, in every example (a drawn cluster meets them by chance)."""
    for listed, other in exact_match_hazards(topic):
        subscription = Subscription.fixed([listed])
        rounds = [{other: frozenset({0})}, {other: frozenset({0}), listed: frozenset({0})}]
        fail_on(check_discovery(run_rounds(adapter, subscription, n, rounds), subscription, n))


@requirement("DISC-002", capability="regex-subscription")
@given(cluster_histories(partial_views=False), parallelisms(8), st.data())
def test_required_DISC_002_pattern_full_match_and_new_matching_topics(
    adapter: Any, rounds: list[Metadata], n: int, data: st.DataObject
) -> None:
    subscription = data.draw(pattern_subscriptions(rounds), label="subscription")
    violations = check_discovery(run_rounds(adapter, subscription, n, rounds), subscription, n)
    fail_on(violations)


@requirement("DISC-002", capability="regex-subscription")
@given(topic_names(30), topic_names(30), st.booleans(), parallelisms(4))
def test_required_DISC_002_pattern_does_not_match_a_longer_name(
    adapter: Any, topic: str, other: str, alternation: bool, n: int
) -> None:
    """Longer names around an exact pattern, or around each side of ``topic|other``, stay out."""
    names = [topic, other] if alternation else [topic]
    subscription = Subscription.regex("|".join(map(re.escape, names)))
    longer = {name: frozenset({0}) for t in names for name in (t + "-dlq", "x" + t) if name not in names}
    rounds = [longer, {**longer, **{t: frozenset({0}) for t in names}}]
    violations = check_discovery(run_rounds(adapter, subscription, n, rounds), subscription, n)
    fail_on(violations)


@requirement("DISC-008", "DISC-003", capability="partition-growth")
@given(cluster_histories(partial_views=True), parallelisms(8))
def test_required_DISC_008_partial_views_neither_forget_nor_rereport(
    adapter: Any, rounds: list[Metadata], n: int
) -> None:
    subscription = Subscription.regex(".*")
    violations = check_discovery(run_rounds(adapter, subscription, n, rounds), subscription, n)
    fail_on(violations)


@requirement("DISC-007", "DISC-010", capability="discovery")
@pytest.mark.parametrize("policy", list(ZeroPartitionsPolicy), ids=lambda p: p.value)
def test_required_DISC_007_zero_partitions_follow_the_policy(adapter: Any, policy: ZeroPartitionsPolicy) -> None:
    discoverer = adapter.discoverer(
        DiscovererConfig(
            subscription=Subscription.fixed(["kconform-missing"]), subtask=0, parallelism=1, on_zero=policy
        )
    )
    found: list[TopicPartition] = []
    error: Exception | None = None
    try:
        found = list(discoverer.discover({"other": frozenset({0})}))
    except Exception as exc:  # the adapter's own error type: any error counts, if it names the subscription
        error = exc
    fail_on(check_zero_partitions(policy, "kconform-missing", found, error))


@requirement("DISC-007", "DISC-010", "DISC-002", capability="regex-subscription")
def test_required_DISC_007_a_pattern_matching_nothing_at_start_follows_every_policy(
    adapter: Any, record_property: Any
) -> None:
    """Each subtask's discoverer starts on a pattern that matches none of the cluster's topics (near misses of the
    name to come), under each zero-partitions policy: under ``fail`` its first discovery raises an error (naming
    the pattern: DISC-010), under ``ignore`` it reports nothing, and the matching topics created later are reported
    once, by their owners, and their near misses never. The classes drawn are the run's ``discovery_start_*``
    metrics."""
    mix = InterleavingMix(start_classes(tuple(ZeroPartitionsPolicy)), kind="start")

    @given(start=late_starts(tuple(ZeroPartitionsPolicy)), n=parallelisms(4))
    def scenario(start: LateStart, n: int) -> None:
        for name in drawn_classes(start):
            mix.step(name)
        first_discovery_matching_nothing(adapter, start, n)

    try:
        scenario()
    finally:
        mix.record(record_property, "discovery_start")


def first_discovery_matching_nothing(adapter: Any, start: LateStart, n: int) -> None:
    """The first discovery of ``n`` subtasks on ``start``'s cluster, judged by its policy; then, where the
    policy proceeds, a discovery after its topics were created."""
    subscription = Subscription.regex(start.pattern)
    at_start: Metadata = {t: frozenset({0}) for t in start.at_start}
    discoverers = [
        adapter.discoverer(DiscovererConfig(subscription=subscription, subtask=i, parallelism=n, on_zero=start.policy))
        for i in range(n)
    ]
    first: dict[int, list[TopicPartition]] = {}
    errors: dict[int, Exception] = {}
    for i, discoverer in enumerate(discoverers):
        try:
            first[i] = list(discoverer.discover(at_start))
        except Exception as exc:  # the adapter's own error type: any error counts, if it names the pattern
            errors[i] = exc
    fail_on(check_discovery([(at_start, first)], subscription, n))  # a near miss matched is DISC-002's
    for i in range(n):
        fail_on(check_zero_partitions(start.policy, start.pattern, first.get(i, []), errors.get(i)))
    if not start.created:
        return
    later: Metadata = {**at_start, **{t: frozenset(range(k)) for t, k in start.created.items()}}
    rounds = [(at_start, first), (later, {i: list(d.discover(later)) for i, d in enumerate(discoverers)})]
    fail_on(check_discovery(rounds, subscription, n))
