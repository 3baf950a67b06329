"""How real pipelines start: at LATEST before the topics they subscribe to exist, on a pattern matching nothing.

A job is often deployed before its input topic is created (the topic is made by whoever first writes to it),
and started at LATEST because it wants only new records. Every record written after the topic was created must
still be read: its partitions are found after the first discovery, so they start at EARLIEST (DISC-005), and a
source that starts them at LATEST, or resolves LATEST when they appear, loses what was written in between. A
pattern that matches nothing at start fails the job or proceeds, as the zero-partitions policy says (DISC-007).

A scenario counts the classes it drew with ``InterleavingMix(start_classes(policies), kind="start")``, which
makes each a metric of the run; ``drawn_classes`` names the classes of one drawn start.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from hypothesis import strategies as st

from ...reference_impl.discovery import Subscription, ZeroPartitionsPolicy
from .strategies import near_misses, topic_names

LATE_TOPIC: Final = "topic-after-latest-start"
"""A job started at LATEST before any subscribed topic existed; then the topics were created and written."""
VERSIONED: Final = "(-v[0-9]+)?"
"""What the drawn versioned patterns allow after the name: ``orders`` and ``orders-v2`` both match."""


def matches_nothing(policy: ZeroPartitionsPolicy) -> str:
    """The class of a subscription that matches no partition at start, under ``policy``."""
    return f"matches-nothing-{policy.value}"


def start_classes(policies: Sequence[ZeroPartitionsPolicy]) -> tuple[str, ...]:
    """The classes reachable under ``policies``: a topic created after start only where a policy proceeds."""
    proceeds = ZeroPartitionsPolicy.IGNORE in policies
    return tuple(matches_nothing(p) for p in policies) + ((LATE_TOPIC,) if proceeds else ())


@dataclass(frozen=True, slots=True)
class LateStart:
    """A pattern that matches none of ``at_start``'s topics, and the matching topics ``created`` after start."""

    policy: ZeroPartitionsPolicy
    pattern: str
    at_start: tuple[str, ...]
    """Topics that exist at start: near misses of the topic to come, which only an exact full match leaves out."""
    created: dict[str, int]
    """Topic -> partitions, created after the source started; none under ``fail``, where the job has failed."""


@st.composite
def late_starts(draw: st.DrawFn, policies: Sequence[ZeroPartitionsPolicy]) -> LateStart:
    """A start on a pattern that matches nothing yet, under one of ``policies``, beside near misses of the name
    to come; where the policy proceeds, one or two matching topics (the name, a later version) appear."""
    policy = draw(st.sampled_from(policies), label="zero-partitions policy")
    name = draw(topic_names(30), label="topic to come")
    versioned = draw(st.booleans(), label="versioned pattern")
    pattern = re.escape(name) + (VERSIONED if versioned else "")
    subscription = Subscription.regex(pattern)
    misses = draw(st.lists(near_misses(name), max_size=3, unique=True), label="near misses at start")
    at_start = tuple(t for t in misses if not subscription.matches(t))
    names = [name, f"{name}-v2"] if versioned else [name]
    wanted = [t for t in names if subscription.matches(t) and t not in at_start]
    if policy is ZeroPartitionsPolicy.FAIL:
        return LateStart(policy, pattern, at_start, {})
    chosen = draw(st.lists(st.sampled_from(wanted), min_size=1, unique=True), label="topics created")
    return LateStart(policy, pattern, at_start, {t: draw(st.integers(1, 3)) for t in chosen})


def drawn_classes(start: LateStart) -> list[str]:
    """The classes ``start`` reaches: its policy on a pattern matching nothing, and a topic created after."""
    return [matches_nothing(start.policy)] + ([LATE_TOPIC] if start.created else [])
