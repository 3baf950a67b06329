"""The killed-driver scenario's kill points (conformance/spark/kill_points.py): the model and the watchers' decision
of "the k-th new event" and "the k-th advance" of a sink's ends, without a broker."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kconform.conformance.spark.kill_points import (
    CLOCK,
    CLOCK_SPAN_MS,
    EVENT_DELAY_MS,
    KILL_SOURCES,
    PROGRESS,
    PROGRESS_LINE,
    SINK_COMMITTED,
    Advances,
    check_kill_point,
    events_reached,
    landed_by_source,
    progress_lines,
)


def test_the_kth_new_log_entry_is_the_k_plus_first_after_those_seen_at_the_start() -> None:
    assert not events_reached(seen=4, now=4, k=0)
    assert events_reached(seen=4, now=5, k=0)
    assert not events_reached(seen=4, now=6, k=2)
    assert events_reached(seen=4, now=7, k=2)


def test_progress_events_are_the_drivers_lines_that_start_with_the_progress_line() -> None:
    output = f"{PROGRESS_LINE}0\nINFO MicroBatchExecution: ...\nsaid {PROGRESS_LINE}1\n{PROGRESS_LINE}1\n"
    assert progress_lines(output) == 2
    assert progress_lines("") == 0


def test_an_advance_is_a_poll_that_sees_any_end_move() -> None:
    watch = Advances({0: 10, 1: 4})
    watch = watch.observe({0: 10, 1: 4})
    assert watch.count == 0 and not watch.reached(0)
    watch = watch.observe({0: 12, 1: 4})
    assert watch.count == 1 and watch.reached(0) and not watch.reached(1)
    watch = watch.observe({0: 13, 1: 9})  # both moved between two polls: one advance
    assert watch.count == 2 and watch.reached(1)


def test_an_end_read_lower_is_no_advance_and_not_forgotten() -> None:
    watch = Advances({0: 10}).observe({0: 8})
    assert watch.count == 0 and watch.ends == {0: 10}
    assert watch.observe({0: 10}).count == 0  # back where it was: still no advance
    assert watch.observe({0: 11}).count == 1


def test_a_partition_the_first_poll_lacked_counts_from_zero() -> None:
    assert Advances({0: 3}).observe({0: 3, 1: 0}).count == 0
    assert Advances({0: 3}).observe({0: 3, 1: 2}).count == 1


@given(st.lists(st.dictionaries(st.integers(0, 2), st.integers(0, 50), max_size=3), max_size=12))
def test_advances_never_exceed_the_polls_nor_the_growth_of_the_highest_ends(polls: list[dict[int, int]]) -> None:
    watch = Advances({})
    for ends in polls:
        before = watch
        watch = watch.observe(ends)
        assert watch.count - before.count in (0, 1)
        assert (watch.count > before.count) == any(e > before.ends.get(p, 0) for p, e in ends.items())
    assert watch.count <= len(polls)
    assert watch.count <= sum(watch.ends.values())


@pytest.mark.parametrize(
    "point",
    [
        ("commits", 2, 0),
        ("offsets", 3, EVENT_DELAY_MS),
        ("sink-written", 0, 7),
        (SINK_COMMITTED, 1, 0),
        (PROGRESS, 3, 100),
        (CLOCK, 0, CLOCK_SPAN_MS),
    ],
)
def test_well_formed_kill_points_are_kept(point: tuple[str, int, int]) -> None:
    assert check_kill_point(point) == point


@pytest.mark.parametrize(
    ("point", "named"),
    [
        (("checkpoint", 0, 0), "none of"),
        ((CLOCK, 1, 0), "clock point"),
        (("commits", -1, 0), "negative"),
        (("offsets", 0, EVENT_DELAY_MS + 1), "above"),
        ((CLOCK, 0, CLOCK_SPAN_MS + 1), "above"),
    ],
)
def test_malformed_kill_points_are_refused_naming_why(point: tuple[str, int, int], named: str) -> None:
    with pytest.raises(ValueError, match=named):
        check_kill_point(point)


def test_kills_are_counted_by_source_landed_or_not_reached() -> None:
    points = [("commits", 2, 0), (SINK_COMMITTED, 0, 0), (SINK_COMMITTED, 3, 10), (CLOCK, 0, 9000)]
    counts = landed_by_source(points, [True, True, False, False])
    assert set(counts) == set(KILL_SOURCES)
    assert counts["commits"] == {"landed": 1, "not_reached": 0}
    assert counts[SINK_COMMITTED] == {"landed": 1, "not_reached": 1}
    assert counts[CLOCK] == {"landed": 0, "not_reached": 1}
    assert counts["offsets"] == {"landed": 0, "not_reached": 0}
    again = landed_by_source([(SINK_COMMITTED, 0, 5)], [True], before=counts)
    assert again[SINK_COMMITTED] == {"landed": 2, "not_reached": 1}
    assert again["commits"] == counts["commits"] and again[CLOCK] == counts[CLOCK]
