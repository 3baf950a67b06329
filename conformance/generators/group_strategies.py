"""Hypothesis strategies for Kafka's strategies (STRAT-*): record keys and consumer groups mid-life.

A drawn group is a rebalance as the leader sees it: some members stayed from the previous
generation and own what it gave them, some left (their partitions are free), some are new;
topics may have grown and subscriptions changed. Member and instance ids mix ASCII with
characters whose UTF-16 order differs from their code point order, so an assignor that sorts
members as Python does, not as Java's ``String.compareTo`` does, is caught.
"""

from __future__ import annotations

from hypothesis import strategies as st

from ...reference_impl.kafka_strategies import Group, Member
from ...reference_impl.types import TopicPartition
from .strategies import topic_names

ID_ALPHABET = ("a", "b", "C", "0", "-", "é", "\uff21", "\U0001f600")
"""U+FF21 sorts after U+1F600 in Java (surrogate 0xD83D < 0xFF21), before it in Python."""


def keys() -> st.SearchStrategy[bytes]:
    """Record keys: empty, short, long, UTF-8 text and arbitrary (non-ASCII) bytes."""
    return st.one_of(
        st.binary(max_size=12),
        st.text(max_size=20).map(lambda t: t.encode("utf-8", "surrogatepass")),
        st.binary(min_size=100, max_size=1500),
    )


def partition_counts() -> st.SearchStrategy[int]:
    """Partitions of a topic: mostly few, sometimes up to Java's ``Integer.MAX_VALUE``."""
    return st.one_of(st.integers(1, 64), st.integers(1, 2**31 - 1))


def member_ids() -> st.SearchStrategy[str]:
    return st.text(st.sampled_from(ID_ALPHABET), min_size=1, max_size=4)


MISSED_REBALANCES = 2
"""The most rebalances a drawn member missed: two let three generations claim one partition (KAFKA-15106)."""
TOPICS = st.lists(topic_names(8), min_size=1, max_size=4, unique=True)
TOPIC_SHAPE = st.tuples(st.integers(1, 8), st.integers(0, 8), st.integers(0, 9))
"""(partitions now, partitions before, 0 when the topic has no metadata now)."""


@st.composite
def groups(draw: st.DrawFn, identical: bool | None = None, max_members: int = 6) -> Group:
    """A group at a rebalance: members, their subscriptions, what they owned, the partitions now.

    ``identical``: every member subscribes to the same topics (``None``: either). The previous
    ownership is what members report, which a completed rebalance does not always leave consistent:
    a member that missed the last rebalances (one or two) rejoins with its older generation and
    what it owned then, which the rebalances it missed may have given to other members (a
    partition has one owner per generation), and a partition may be claimed by two members of the same
    generation (a coordinator or client fault: the assignor must give it to one member,
    KAFKA-12984). Few, flat draws keep generating and shrinking fast.
    """
    topics = draw(TOPICS, label="topics")
    shapes = draw(st.lists(TOPIC_SHAPE, min_size=len(topics), max_size=len(topics)), label="topic shapes")
    now = {t: count for t, (count, _, metadata) in zip(topics, shapes, strict=True) if metadata}
    before = [
        TopicPartition(t, p) for t, (count, was, _) in zip(topics, shapes, strict=True) for p in range(min(was, count))
    ]
    ids = draw(st.lists(member_ids(), min_size=1, max_size=max_members, unique=True), label="member ids")
    if identical is None:
        identical = draw(st.booleans(), label="identical subscriptions")
    masks = draw(
        st.lists(st.integers(1, 2 ** len(topics) - 1), min_size=len(ids), max_size=len(ids)),
        label="subscriptions (bit masks over topics)",
    )
    if identical:
        masks = [masks[0]] * len(ids)
    stayed = draw(st.lists(st.booleans(), min_size=len(ids), max_size=len(ids)), label="in the previous generation")
    history = draw(
        st.lists(
            st.lists(st.integers(-1, len(ids) - 1), min_size=len(before), max_size=len(before)),
            min_size=MISSED_REBALANCES + 1,
            max_size=MISSED_REBALANCES + 1,
        ),
        label="owner of each partition in the previous generation, then in each one before "
        "(-1: none; a member not in the previous generation: one that left)",
    )
    owners = history[0]
    generation = draw(st.integers(MISSED_REBALANCES, 5), label="previous generation")
    missed = draw(
        st.lists(st.integers(0, MISSED_REBALANCES), min_size=len(ids), max_size=len(ids)),
        label="rebalances each member missed (it rejoins with that much older a generation)",
    )
    late = [n > 0 for n in missed]
    doubly = draw(
        st.lists(st.tuples(st.integers(0, max(len(before) - 1, 0)), st.integers(0, len(ids) - 1)), max_size=2),
        label="(partition, second member) claims of a partition another member of its generation owns",
    )
    second_claims = {
        (before[tp], m)
        for tp, m in doubly
        if before and stayed[m] and not late[m] and 0 <= owners[tp] != m and stayed[owners[tp]] and not late[owners[tp]]
    }
    instances = draw(st.lists(member_ids(), max_size=len(ids), unique=True), label="group.instance.ids")
    subscribed = [frozenset(t for bit, t in enumerate(topics) if masks[i] >> bit & 1) for i in range(len(ids))]
    # A member claims only partitions of topics it subscribes to now: Kafka's consumer revokes the partitions
    # of topics it left before it rejoins (ConsumerCoordinator.onJoinPrepare), so no assignor meets such claims.
    members = tuple(
        Member(
            member_id=m,
            topics=subscribed[i],
            owned=frozenset(
                tp
                for tp, owner in zip(before, history[missed[i]], strict=True)
                if owner == i and stayed[i] and tp.topic in subscribed[i]
            )
            | {tp for tp, m in second_claims if m == i and tp.topic in subscribed[i]},
            generation=(generation - missed[i] if stayed[i] else -1),
            instance_id=instances[i] if i < len(instances) else None,
        )
        for i, m in enumerate(ids)
    )
    return Group(members, now)
