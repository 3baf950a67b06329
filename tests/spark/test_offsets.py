"""The offsets JSON codec and the read limit: pure, no Spark or broker needed."""

from __future__ import annotations

import json
import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kconform.reference_impl.spark.offsets import VERSION, OffsetsFormatError, SourceOffsets
from kconform.reference_impl.spark.source import limit_rows
from kconform.reference_impl.types import TopicPartition

partitions = st.builds(TopicPartition, st.sampled_from(["a", "b", "topic-10"]), st.integers(0, 12))
offset_maps = st.dictionaries(partitions, st.integers(0, 10**12), max_size=20)
source_offsets = st.builds(SourceOffsets, st.integers(1, 64), offset_maps, offset_maps)


@given(source_offsets)
def test_round_trip_through_spark_json_text(offsets: SourceOffsets) -> None:
    """Spark stores ``json.dumps`` of the dict and hands back ``json.loads`` of it."""
    assert SourceOffsets.from_json(json.loads(json.dumps(offsets.to_json()))) == offsets


@given(offset_maps, st.randoms())
def test_encoding_is_canonical_whatever_the_insertion_order(
    offsets: dict[TopicPartition, int], rnd: random.Random
) -> None:
    """Equal offsets give equal JSON text, as Spark compares offsets by text."""
    items = list(offsets.items())
    rnd.shuffle(items)
    text = json.dumps(SourceOffsets(2, dict(items)).to_json())
    assert text == json.dumps(SourceOffsets(2, offsets).to_json())
    assert text == json.dumps(json.loads(text), sort_keys=True)


def test_carries_version_and_parallelism_with_string_partition_keys() -> None:
    encoded = SourceOffsets(3, {TopicPartition("t", 10): 5, TopicPartition("t", 2): 7}).to_json()
    assert encoded == {"first": {}, "offsets": {"t": {"10": 5, "2": 7}}, "parallelism": 3, "version": VERSION}


@pytest.mark.parametrize("bad", [{"version": 99, "parallelism": 1, "offsets": {}}, {"version": VERSION}, {}])
def test_other_versions_and_malformed_entries_are_refused(bad: dict[str, object]) -> None:
    with pytest.raises(OffsetsFormatError):
        SourceOffsets.from_json(bad)


def test_start_of_a_new_partition_is_its_resolved_first_offset() -> None:
    a, b = TopicPartition("t", 0), TopicPartition("t", 1)
    previous = SourceOffsets(1, {a: 4})
    current = SourceOffsets(1, {a: 9, b: 6}, first={b: 2})
    assert (current.start_of(a, previous), current.start_of(b, previous)) == (4, 2)
    assert current.same_progress(SourceOffsets(5, {a: 9, b: 6}))


@given(
    st.dictionaries(partitions, st.tuples(st.integers(0, 100), st.integers(0, 100)), max_size=10), st.integers(1, 50)
)
def test_limit_rows_takes_at_most_the_limit_never_moving_backwards_or_past_the_end(
    ranges: dict[TopicPartition, tuple[int, int]], limit: int
) -> None:
    previous = SourceOffsets(1, {tp: start for tp, (start, _) in ranges.items()})
    latest = SourceOffsets(1, {tp: start + extra for tp, (start, extra) in ranges.items()})
    capped = limit_rows(previous, latest, limit)
    for tp, (start, extra) in ranges.items():
        assert start <= capped.offsets[tp] <= start + extra
    taken = sum(capped.offsets[tp] - start for tp, (start, _) in ranges.items())
    assert taken == min(limit, sum(extra for _, extra in ranges.values()))


def test_limit_rows_serves_the_larger_backlog_first() -> None:
    a, b = TopicPartition("t", 0), TopicPartition("t", 1)
    capped = limit_rows(SourceOffsets(1, {a: 0, b: 0}), SourceOffsets(1, {a: 5, b: 6}), 1)
    assert dict(capped.offsets) == {a: 0, b: 1}
