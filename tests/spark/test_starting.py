"""``startingOffsets`` resolution (pure): Spark's JSON notation, every found partition named, offsets that exist."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kconform.reference_impl.spark.starting import Lookup, StartingOffsets, StartingOffsetsError
from kconform.reference_impl.types import EARLIEST, LATEST, TopicPartition

LOGS = {TopicPartition("a", 0): (0, 10), TopicPartition("a", 1): (5, 8), TopicPartition("b", 0): (3, 3)}


def earliest(tp: TopicPartition) -> int:
    return LOGS[tp][0]


def latest(tp: TopicPartition) -> int:
    return LOGS[tp][1]


def as_json(offsets: dict[TopicPartition, int]) -> str:
    nested: dict[str, dict[str, int]] = {}
    for tp, offset in offsets.items():
        nested.setdefault(tp.topic, {})[str(tp.partition)] = offset
    return json.dumps(nested)


@st.composite
def specific_offsets(draw: st.DrawFn) -> dict[TopicPartition, int]:
    """A legal JSON choice: each partition at a real offset of its log, or at -2 / -1."""
    return {
        tp: draw(st.one_of(st.integers(low, high), st.sampled_from([EARLIEST, LATEST])))
        for tp, (low, high) in LOGS.items()
    }


@given(specific_offsets())
def test_a_legal_json_resolves_to_its_offsets_with_sentinels_resolved(offsets: dict[TopicPartition, int]) -> None:
    resolved = StartingOffsets.parse(as_json(offsets)).resolve(set(LOGS), earliest, latest)
    want = {tp: earliest(tp) if o == EARLIEST else latest(tp) if o == LATEST else o for tp, o in offsets.items()}
    assert resolved == want


@pytest.mark.parametrize(("name", "pick"), [("earliest", earliest), ("latest", latest)])
def test_named_positions_apply_to_every_found_partition(name: str, pick: Lookup) -> None:
    resolved = StartingOffsets.parse(name).resolve(set(LOGS), earliest, latest)
    assert resolved == {tp: pick(tp) for tp in LOGS}


@given(specific_offsets(), st.sampled_from(sorted(LOGS)))
def test_a_found_partition_missing_from_the_json_is_an_error(
    offsets: dict[TopicPartition, int], gone: TopicPartition
) -> None:
    del offsets[gone]
    with pytest.raises(StartingOffsetsError, match=rf"no offset for {gone.topic} \[{gone.partition}\]"):
        StartingOffsets.parse(as_json(offsets) if offsets else '{"x": {"0": 0}}').resolve(set(LOGS), earliest, latest)


def test_a_partition_the_subscription_did_not_find_is_an_error() -> None:
    offsets = {**{tp: EARLIEST for tp in LOGS}, TopicPartition("c", 0): 0}
    with pytest.raises(StartingOffsetsError, match=r"names c \[0\], which the subscription did not find"):
        StartingOffsets.parse(as_json(offsets)).resolve(set(LOGS), earliest, latest)


@given(st.sampled_from(sorted(LOGS)), st.booleans())
def test_an_offset_outside_the_log_is_an_error(tp: TopicPartition, below: bool) -> None:
    offsets = {t: EARLIEST for t in LOGS}
    low, high = LOGS[tp]
    if below and low == 0:
        return
    offsets[tp] = low - 1 if below else high + 1
    with pytest.raises(StartingOffsetsError, match="outside its log"):
        StartingOffsets.parse(as_json(offsets)).resolve(set(LOGS), earliest, latest)
