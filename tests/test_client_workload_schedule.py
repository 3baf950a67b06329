"""The client workload's schedules draw their step kinds as ``WEIGHTS`` says."""

from __future__ import annotations

from collections import Counter

from hypothesis import HealthCheck, given, settings

from kconform.conformance.workloads.clients.schedule import WEIGHTS, Schedule, StepKind, schedules
from kconform.conformance.workloads.clients.settings import catalogue

DRAWN = 300


def test_step_kinds_follow_their_weights_with_polls_first() -> None:
    """Each kind WEIGHTS times as likely as a kind of weight 1 (polls a little more: Hypothesis leans to the first
    of a list, and polls are first). Drawn with st.one_of over repeated strategies, the weights did nothing
    (Hypothesis keeps one of identical branches) and produce, the first branch, took what polls were to have."""
    kinds: Counter[StepKind] = Counter()

    @settings(max_examples=DRAWN, database=None, deadline=None, suppress_health_check=list(HealthCheck))
    @given(schedules(catalogue()))
    def draw(schedule: Schedule) -> None:
        kinds.update(step.kind for step in schedule.steps)

    draw()
    ones = [k for k in StepKind if WEIGHTS.get(k, 1) == 1]
    assert all(kinds[k] > 0 for k in StepKind), f"a kind never drawn in {DRAWN} schedules: {kinds}"
    mean_one = sum(kinds[k] for k in ones) / len(ones)
    assert kinds.most_common(1)[0][0] == StepKind.POLL, kinds
    for kind, weight in WEIGHTS.items():  # at least half its weight's share, never less than a weight-1 kind
        assert kinds[kind] >= weight * mean_one / 2, (kind, kinds[kind], mean_one)
