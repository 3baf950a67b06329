"""The race mechanics of ``kconform bench``'s Spark figures, without Spark or a broker."""

from __future__ import annotations

from kconform.conformance.bench.spark_races import (
    SPARK_KAFKA_MISSING,
    Comparison,
    Competitor,
    Skipped,
    Timing,
    race,
    race_rows,
)


def test_race_reverses_the_order_every_other_round() -> None:
    """Load drifting during a run falls on every competitor alike."""
    order: list[tuple[int, str]] = []

    def entrant(name: str) -> Competitor:
        def run(round_: int) -> Timing:
            order.append((round_, name))
            return Timing(1.0, 1.0)

        return Competitor(name, "", run)

    timings = race([entrant("a"), entrant("b")], 3)
    assert order == [(0, "a"), (0, "b"), (1, "b"), (1, "a"), (2, "a"), (2, "b")]
    assert [len(t) for t in timings.values()] == [3, 3]


def test_ratios_are_medians_of_paired_rounds_and_a_skipped_competitor_says_why() -> None:
    """One round where the baseline was slowed (9 s) moves no median; a skipped competitor has no ratio."""
    timings = {
        "raw": [Timing(1, 1), Timing(1, 1), Timing(9, 9)],
        "ref": [Timing(2, 2), Timing(4, 2), Timing(2, 2)],
    }
    entrants = [Competitor("raw", "", lambda _: Timing(0, 0)), Competitor("ref", "", lambda _: Timing(0, 0))]
    comparisons = [Comparison("ref", "raw", inside_goal=0.5), Comparison("spark kafka", "raw")]
    rows = race_rows(100, [*entrants, Skipped("spark kafka", SPARK_KAFKA_MISSING)], timings, comparisons)
    assert any("spark kafka" in row and SPARK_KAFKA_MISSING in row for row in rows)
    assert not any("spark kafka /" in row for row in rows)
    inside = next(row for row in rows if "ref / raw, inside the batch" in row)
    assert "50.0%" in inside and "meets goal" in inside and "(rounds: 50%, 50%, 450%)" in inside
    assert "no goal set" in next(row for row in rows if "ref / raw, wall" in row)
    assert any(row.split()[:2] == ["raw", "wall"] and "100 rec/s" in row for row in rows)
