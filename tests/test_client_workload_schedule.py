"""The client workload's schedules draw their step kinds as ``WEIGHTS`` says, and each group's protocol with the
settings that protocol takes."""

from __future__ import annotations

from collections import Counter
from dataclasses import replace

import pytest
from hypothesis import HealthCheck, given, settings

from kconform.conformance.workloads.clients.jvm_clients import catalogue as java_catalogue
from kconform.conformance.workloads.clients.schedule import (
    GROUP_SETTINGS,
    WEIGHTS,
    Schedule,
    StepKind,
    group_settings,
    schedules,
)
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


def group_of(schedule: Schedule) -> dict[str, str]:
    """The settings the schedule's consumers share (``group_settings``), from its first consumer."""
    first = schedule.consumers[0].settings
    return {name: first[name] for name in GROUP_SETTINGS if name in first}


@pytest.mark.parametrize("release", ["librdkafka", "kafka-clients"])
def test_a_consumer_protocol_group_has_no_client_side_assignor_and_a_classic_group_always_has_one(release: str) -> None:
    """Both protocols are drawn; a classic group draws its assignors, a group of ``group.protocol=consumer`` none (the
    broker assigns, and both clients refuse the setting there, which made every drawn consumer group classic)."""
    drawn_from = catalogue() if release == "librdkafka" else java_catalogue()
    seen: Counter[str] = Counter()

    @settings(max_examples=DRAWN, database=None, deadline=None, suppress_health_check=list(HealthCheck))
    @given(schedules(drawn_from))
    def draw(schedule: Schedule) -> None:
        group = group_of(schedule)
        protocol = group["group.protocol"]
        seen[protocol] += 1
        assert ("partition.assignment.strategy" in group) == (protocol == "classic"), group
        assert all(group_of(replace(schedule, consumers=(c,))) == group for c in schedule.consumers)

    draw()
    assert seen["classic"] > DRAWN / 5 and seen["consumer"] > DRAWN / 5, seen


def test_a_release_without_group_protocol_draws_its_assignors_for_every_group() -> None:
    """A release older than KIP 848 (kafka-clients 3.1, no ``group.protocol``) has classic groups alone: every
    schedule draws their assignors, as before the protocol came."""
    older = tuple(s for s in java_catalogue() if s.name != "group.protocol")

    @settings(max_examples=100, database=None, deadline=None, suppress_health_check=list(HealthCheck))
    @given(group_settings(older))
    def draw(group: dict[str, str]) -> None:
        assert set(group) == {"partition.assignment.strategy"}, group

    draw()
