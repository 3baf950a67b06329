"""The start classes (a pattern matching nothing at start, under each zero-partitions policy, and topics created
after a start at LATEST): every class is drawn at the default profile, and each drawn start is what it says."""

from __future__ import annotations

from hypothesis import given, settings

from kconform.conformance.gate.profiles import PROFILES
from kconform.conformance.generators.start_classes import (
    LATE_TOPIC,
    LateStart,
    drawn_classes,
    late_starts,
    matches_nothing,
    start_classes,
)
from kconform.conformance.generators.strategies import InterleavingMix
from kconform.reference_impl.discovery import Subscription, ZeroPartitionsPolicy

EVERY_POLICY = tuple(ZeroPartitionsPolicy)


def test_required_DISC_007_every_start_class_is_drawn_at_the_default_profile() -> None:
    """The generator gap issue 28 names: each policy on a pattern matching nothing, and a topic created after a
    start at LATEST, occur in a default run."""
    mix = InterleavingMix(start_classes(EVERY_POLICY), kind="start")

    @settings(max_examples=PROFILES["default"], derandomize=True, database=None)
    @given(late_starts(EVERY_POLICY))
    def draw(start: LateStart) -> None:
        for name in drawn_classes(start):
            mix.step(name)

    draw()
    assert not mix.missing(), f"never drawn: {mix.missing()} ({dict(mix.counts)})"


@given(late_starts(EVERY_POLICY))
def test_required_DISC_005_a_drawn_start_matches_nothing_and_only_its_created_topics_match(start: LateStart) -> None:
    subscription = Subscription.regex(start.pattern)
    assert not any(subscription.matches(t) for t in start.at_start)
    assert all(subscription.matches(t) and t not in start.at_start for t in start.created)
    assert bool(start.created) == (start.policy is ZeroPartitionsPolicy.IGNORE)


def test_required_DISC_007_a_level_reaches_a_late_topic_only_under_a_policy_that_proceeds() -> None:
    assert start_classes((ZeroPartitionsPolicy.FAIL,)) == (matches_nothing(ZeroPartitionsPolicy.FAIL),)
    assert start_classes((ZeroPartitionsPolicy.IGNORE,)) == ("matches-nothing-ignore", LATE_TOPIC)
