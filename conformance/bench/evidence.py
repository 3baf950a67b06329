"""What a race's paired rounds say about a goal: a verdict is "meets" or "MISSES" only when the whole confidence
interval of the rounds' median lies on one side of the goal, else "undecided".

On this 2-core machine single rounds of one race vary from 53 % to 149 % (the one-batch sink race, runs 8 to 12
of docs/bench.md's table), so a median alone fell on either side of a goal from run to run; the interval says when
it cannot decide.
The interval is distribution-free (the sign test's): order statistics ``x(k)`` and ``x(n+1-k)`` of ``n`` rounds
hold the median of the rounds' distribution unless ``k`` or more rounds fall on one side of it, which has
probability ``2 * P(Binomial(n, 1/2) <= k - 1)``. It assumes only independent rounds, which alternating the
competitors' order every round serves (``spark_races.race``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

CONFIDENCE: Final = 0.95
"""The narrowest interval with at least this coverage is used; with fewer than 6 rounds none reaches it, and the
rounds' whole range is used with the coverage it has (15/16 for 5 rounds), printed beside it."""


@dataclass(frozen=True, slots=True)
class MedianInterval:
    low: float
    high: float
    coverage: float
    """The probability that ``low .. high`` holds the median of the distribution the rounds are drawn from."""


def _at_most(n: int, j: int) -> float:
    """P(Binomial(n, 1/2) <= j)."""
    return sum(math.comb(n, i) for i in range(j + 1)) / float(2**n)


def median_interval(values: Sequence[float], confidence: float = CONFIDENCE) -> MedianInterval:
    """The narrowest ``x(k) .. x(n+1-k)`` that holds the median with probability >= ``confidence``, or the whole
    range (``k = 1``) when too few values reach it."""
    if not values:
        raise ValueError("a median interval needs at least one value")
    ordered = sorted(values)
    n = len(ordered)
    k = 1
    while k + 1 <= (n + 1) // 2 and 1 - 2 * _at_most(n, k) >= confidence:
        k += 1
    return MedianInterval(ordered[k - 1], ordered[n - k], 1 - 2 * _at_most(n, k - 1))


def goal_verdict(ratios: Sequence[float], goal: float) -> str:
    """``meets goal`` when the median's interval lies at or above ``goal``, ``MISSES goal`` when wholly below it,
    ``undecided`` when it holds the goal: then the rounds do not tell which side the race is on."""
    interval = median_interval(ratios)
    if interval.low >= goal:
        word = "meets goal"
    elif interval.high < goal:
        word = "MISSES goal"
    else:
        word = "undecided"
    return (
        f"goal >= {goal:.0%}  {word}  "
        f"(median in {interval.low:.0%}..{interval.high:.0%} at {interval.coverage:.1%} confidence)"
    )
