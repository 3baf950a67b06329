"""ASSIGN-001..006 against the reference assigner, pinned by golden vectors from Flink's own classes (`make golden`)."""

from __future__ import annotations

import csv
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kconform.conformance.generators.strategies import metadata_snapshots, parallelisms, topic_names
from kconform.reference_impl.assignment import assign, java_string_hash, plan, plan_topics, start_index
from kconform.reference_impl.types import TopicPartition

GOLDEN = Path(__file__).resolve().parents[1] / "fixtures" / "golden" / "assign_vectors.csv"


def _golden_rows() -> list[dict[str, str]]:
    with GOLDEN.open(encoding="utf-8", newline="") as f:
        return list(csv.DictReader(f))


def test_required_ASSIGN_004_matches_jvm_golden_vectors() -> None:
    rows = _golden_rows()
    assert len(rows) > 2000
    for row in rows:
        topic, n, p = row["topic"], int(row["parallelism"]), int(row["partition"])
        assert java_string_hash(topic) == int(row["hash_code"]), topic
        assert start_index(topic, n) == int(row["start_index"]), (topic, n)
        assert assign(topic, p, n) == int(row["owner"]), (topic, p, n)


def test_required_ASSIGN_004_golden_vectors_cover_overflow_and_min_value() -> None:
    hashes = {int(r["hash_code"]) for r in _golden_rows()}
    assert -(2**31) in hashes  # "polygenelubricants": Integer.MIN_VALUE
    assert 2**31 - 1 in hashes  # its neighbour: Integer.MAX_VALUE
    assert -(2**31) + 1 in hashes
    assert any(len(r["topic"]) == 249 for r in _golden_rows())  # longest legal topic name


@pytest.mark.parametrize(("parallelism", "expected_start"), [(5, 1), (6, 0)])
def test_required_ASSIGN_004_seed_worked_example(parallelism: int, expected_start: int) -> None:
    """Seed 002: ``test-topic`` with 11 partitions starts at subtask 1 for 5 subtasks, 0 for 6."""
    assert start_index("test-topic", parallelism) == expected_start
    owners = [assign("test-topic", p, parallelism) for p in range(11)]
    assert owners == [(expected_start + p) % parallelism for p in range(11)]


@given(topic_names(), st.integers(0, 100_000), parallelisms())
def test_required_ASSIGN_001_owner_in_range(topic: str, partition: int, n: int) -> None:
    assert 0 <= assign(topic, partition, n) < n


@given(metadata_snapshots(), parallelisms())
def test_required_ASSIGN_001_plan_covers_every_partition_exactly_once(
    metadata: dict[str, frozenset[int]], n: int
) -> None:
    result = plan_topics(metadata, n)
    placed = [tp for tps in result.by_subtask for tp in tps]
    expected = {TopicPartition(t, p) for t, ids in metadata.items() for p in ids}
    assert len(placed) == len(set(placed))
    assert set(placed) == expected


@given(topic_names(), st.integers(1, 300), parallelisms())
def test_required_ASSIGN_002_per_topic_uniform_spread(topic: str, partitions: int, n: int) -> None:
    counts = Counter(assign(topic, p, n) for p in range(partitions))
    sizes = [counts.get(i, 0) for i in range(n)]
    assert max(sizes) - min(sizes) <= 1


@given(metadata_snapshots(), parallelisms(), st.randoms(use_true_random=False))
def test_required_ASSIGN_003_plan_independent_of_metadata_order(
    metadata: dict[str, frozenset[int]], n: int, rnd: object
) -> None:
    tps = [TopicPartition(t, p) for t, ids in metadata.items() for p in ids]
    shuffled = list(tps)
    rnd.shuffle(shuffled)  # type: ignore[attr-defined]
    assert plan(tps, n) == plan(shuffled, n)
    assert plan(tps, n) == plan(reversed(tps), n)


@given(topic_names(), topic_names(), st.integers(0, 1000), parallelisms())
def test_required_ASSIGN_003_owner_independent_of_other_topics(topic: str, other: str, partition: int, n: int) -> None:
    alone = plan([TopicPartition(topic, partition)], n).owner_of()
    together = plan([TopicPartition(topic, partition), TopicPartition(other, partition)], n).owner_of()
    assert alone[TopicPartition(topic, partition)] == together[TopicPartition(topic, partition)]


@given(topic_names(), st.integers(0, 2000), parallelisms())
def test_required_ASSIGN_004_clockwise_from_start_index(topic: str, partition: int, n: int) -> None:
    assert assign(topic, partition + 1, n) == (assign(topic, partition, n) + 1) % n


@given(topic_names(), st.sets(st.integers(0, 5000), min_size=1, max_size=50), parallelisms())
def test_required_ASSIGN_006_non_contiguous_ids_use_the_same_formula(topic: str, ids: set[int], n: int) -> None:
    owners = plan_topics({topic: ids}, n).owner_of()
    for p in ids:
        assert owners[TopicPartition(topic, p)] == (start_index(topic, n) + p) % n


def test_optional_ASSIGN_005_cross_topic_imbalance_is_allowed() -> None:
    """Two one-partition topics whose start index is the same land on one subtask; that is conformant."""
    n = 4
    same_start = [t for t in (f"t{i}" for i in range(200)) if start_index(t, n) == 0][:2]
    result = plan_topics({t: [0] for t in same_start}, n)
    assert [len(b) for b in result.by_subtask] == [2, 0, 0, 0]


def test_required_ASSIGN_001_rejects_bad_parallelism_and_partition() -> None:
    with pytest.raises(ValueError, match="parallelism must be >= 1"):
        assign("t", 0, 0)
    with pytest.raises(ValueError, match="partition id must be >= 0"):
        assign("t", -1, 3)
