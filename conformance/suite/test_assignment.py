"""ASSIGN-001..007: the adapter's assigner (Flink's model, fidelity) and the plan its discoverers produce: no
partition claimed by two subtasks or by none, whatever the assigner (ASSIGN-007, safety)."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from ...reference_impl.configs import DiscovererConfig
from ...reference_impl.discovery import Subscription, ZeroPartitionsPolicy
from ...reference_impl.types import TopicPartition
from ..checks.checkers import (
    all_partitions,
    check_determinism,
    check_formula,
    check_plan,
    check_single_owner,
    fail_on,
    global_spread,
)
from ..checks.evidence import assignment_grid
from ..gate.pytest_plugin import requirement
from ..generators.strategies import metadata_snapshots, parallelisms

Metadata = dict[str, frozenset[int]]


def plans_whole_lists(adapter: Any) -> bool:
    return "assignment-plan" in adapter.capabilities


def owners(adapter: Any, metadata: Metadata, n: int) -> dict[TopicPartition, int]:
    """The adapter's plan of every partition in ``metadata``, in the metadata's own order: its whole-list
    ``plan`` when it declares one (range-style assigners need the list), else ``assign`` partition by partition."""
    partitions = [TopicPartition(t, p) for t, ids in metadata.items() for p in ids]
    if plans_whole_lists(adapter):
        return dict(adapter.plan(partitions, n))
    return {tp: adapter.assign(tp.topic, tp.partition, n) for tp in partitions}


def placements(adapter: Any, metadata: Metadata, n: int) -> list[tuple[str, dict[TopicPartition, int]]]:
    """Each way the adapter places partitions: its whole-list ``plan`` if it declares one, and ``assign`` one by one."""
    partitions = [TopicPartition(t, p) for t, ids in metadata.items() for p in ids]
    out = [("plan()", dict(adapter.plan(partitions, n)))] if plans_whole_lists(adapter) else []
    return [*out, ("assign()", {tp: adapter.assign(tp.topic, tp.partition, n) for tp in partitions})]


def discovered_plan(adapter: Any, metadata: Metadata, n: int) -> dict[TopicPartition, list[int]]:
    """partition -> subtasks whose discoverer reported it (the plan as the source runs it)."""
    claims: dict[TopicPartition, list[int]] = {tp: [] for tp in all_partitions(metadata)}
    for subtask in range(n):
        d = adapter.discoverer(
            DiscovererConfig(
                subscription=Subscription.regex(".*"),
                subtask=subtask,
                parallelism=n,
                on_zero=ZeroPartitionsPolicy.IGNORE,
            )
        )
        for tp in d.discover(metadata):
            claims.setdefault(tp, []).append(subtask)
    return claims


@requirement("ASSIGN-001", "ASSIGN-002", capability="assignment")
@given(metadata_snapshots(contiguous=True), parallelisms())
def test_required_ASSIGN_001_and_002_every_partition_one_owner_spread_uniformly(
    adapter: Any, metadata: Metadata, n: int
) -> None:
    plan = owners(adapter, metadata, n)
    given_owner = {tp: plan.get(tp) for tp in all_partitions(metadata)}
    claims = {tp: [] if o is None else [o] for tp, o in given_owner.items()}
    fail_on(check_plan(given_owner, n), [assignment_grid(claims, n, f"the plan at parallelism {n}")])


@requirement("LIVE-001", capability="assignment")
@given(metadata_snapshots(contiguous=True), parallelisms())
def test_required_LIVE_001_the_assigner_answers_every_call(adapter: Any, metadata: Metadata, n: int) -> None:
    """Every partition's owner is asked for: each call returns within ``--timeout``. One still running then is
    LIVE-001's ``hang``, which ``kconform run``'s alarm reports with the call (spec/liveness.md); what the answers
    are is ASSIGN-001's and ASSIGN-002's."""
    owners(adapter, metadata, n)


@requirement("ASSIGN-007", capability="discovery")
@given(metadata_snapshots(), parallelisms(16))
def test_required_ASSIGN_007_discoverers_together_claim_each_partition_once(
    adapter: Any, metadata: Metadata, n: int
) -> None:
    """Each subtask decides alone what it reads: together they must claim every partition exactly once,
    whatever the assigner (a connector need not use Flink's)."""
    claims = discovered_plan(adapter, metadata, n)
    fail_on(check_single_owner(claims, n), [assignment_grid(claims, n, f"what {n} discoverers report")])


@requirement("ASSIGN-007", capability="discovery")
@given(metadata_snapshots(max_topics=2, max_partitions=12), st.integers(257, 300))
def test_required_ASSIGN_007_discoverers_above_subtask_256_claim_their_partitions(
    adapter: Any, metadata: Metadata, n: int
) -> None:
    """Subtask indexes past CPython's small-int cache: an owner compared with ``is`` loses their partitions."""
    claims = discovered_plan(adapter, metadata, n)
    fail_on(check_single_owner(claims, n), [assignment_grid(claims, n, f"what {n} discoverers report")])


@requirement("ASSIGN-003", capability="discovery")
@given(metadata_snapshots(), parallelisms(16), st.randoms(use_true_random=False))
def test_required_ASSIGN_003_ownership_independent_of_metadata_order(
    adapter: Any, metadata: Metadata, n: int, rnd: Any
) -> None:
    topics = list(metadata.items())
    rnd.shuffle(topics)
    reordered = {t: frozenset(sorted(ids, reverse=True)) for t, ids in topics}
    reordered_with_extra = {**reordered, "kconform-unrelated-topic": frozenset({0, 1, 2})}

    def single_owner(claims: dict[TopicPartition, list[int]]) -> dict[TopicPartition, int]:
        return {tp: subtasks[0] for tp, subtasks in claims.items() if subtasks}

    first = single_owner(discovered_plan(adapter, metadata, n))
    second = single_owner(discovered_plan(adapter, reordered_with_extra, n))
    violations = check_determinism(first, second)
    violations += check_determinism(owners(adapter, metadata, n), owners(adapter, reordered, n))
    fail_on(violations)


@requirement("ASSIGN-004", "ASSIGN-006", capability="assignment")
@given(metadata_snapshots(), parallelisms(10_000))
def test_required_ASSIGN_004_and_006_flink_formula_exactly(adapter: Any, metadata: Metadata, n: int) -> None:
    """Flink's owner for every partition, as the adapter's ``assign`` places it one by one and as its
    whole ``plan`` places it, when it has one: a connector may run either, so both must be Flink's."""
    violations, grids = [], []
    for how, found in placements(adapter, metadata, n):
        if wrong := check_formula(found, n):
            violations += wrong
            grids.append(assignment_grid({tp: [o] for tp, o in found.items()}, n, f"{how} at parallelism {n}"))
    fail_on(violations, grids)


@requirement("ASSIGN-004", capability="assignment")
def test_required_ASSIGN_004_edge_names(adapter: Any) -> None:
    """Names whose hash is Integer.MIN_VALUE or its neighbours, a 249-character name, the seed's example."""
    names = ["polygenelubricants", "polygenelubricantr", "polygenelubricantt", "GydZG_", "test-topic", "k" * 249]
    metadata = {name: frozenset(range(12)) for name in names}
    violations, grids = [], []
    for n in (1, 2, 3, 5, 6, 7, 31, 32768):
        for how, found in placements(adapter, metadata, n):
            if wrong := check_formula(found, n):
                violations += wrong
                grids.append(assignment_grid({tp: [o] for tp, o in found.items()}, n, f"{how} at parallelism {n}"))
    fail_on(violations, grids)


@requirement("ASSIGN-005", capability="assignment")
def test_optional_ASSIGN_005_global_spread_is_reported(adapter: Any, record_property: Any) -> None:
    """MAY: cross-topic imbalance never fails; the spread over 100 small topics is recorded for the report."""
    metadata = {f"kconform-spread-{i}": frozenset(range(1 + i % 4)) for i in range(100)}
    total = sum(len(ids) for ids in metadata.values())
    for n in (2, 4, 8, 16):
        spread = global_spread(owners(adapter, metadata, n), n)
        record_property(f"global_spread_parallelism_{n}", spread)
        assert 0 <= spread <= total
