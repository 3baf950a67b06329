"""Hypothesis strategies for Kafka-shaped inputs, shared by the conformance suite and the project tests."""

from __future__ import annotations

from hypothesis import strategies as st

KAFKA_TOPIC_ALPHABET = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-"


def topic_names(max_size: int = 249) -> st.SearchStrategy[str]:
    """Kafka-legal topic names: ``[a-zA-Z0-9._-]{1,249}``, not ``.`` or ``..``."""
    return st.text(KAFKA_TOPIC_ALPHABET, min_size=1, max_size=max_size).filter(lambda t: t not in {".", ".."})


def parallelisms(max_value: int = 64) -> st.SearchStrategy[int]:
    return st.integers(1, max_value)


def metadata_snapshots(
    max_topics: int = 6, max_partitions: int = 40, contiguous: bool = False
) -> st.SearchStrategy[dict[str, frozenset[int]]]:
    """topic -> partition ids; contiguous ids (0..k-1) or arbitrary non-negative ones."""
    ids: st.SearchStrategy[frozenset[int]]
    if contiguous:
        ids = st.integers(1, max_partitions).map(lambda k: frozenset(range(k)))
    else:
        ids = st.frozensets(st.integers(0, 4 * max_partitions), min_size=1, max_size=max_partitions)
    return st.dictionaries(topic_names(40), ids, max_size=max_topics)


@st.composite
def cluster_histories(draw: st.DrawFn, partial_views: bool, max_rounds: int = 5) -> list[dict[str, frozenset[int]]]:
    """Successive metadata snapshots of one cluster: partitions and topics only ever grow.

    With ``partial_views``, some snapshots omit partitions that exist (a broker hiccup), as a
    metadata request can during a leader election.
    """
    current = dict(draw(metadata_snapshots(max_topics=4, max_partitions=8, contiguous=True), label="initial"))
    rounds = []
    for _ in range(draw(st.integers(1, max_rounds), label="rounds")):
        action = draw(st.sampled_from(["same", "grow", "new-topic"]))
        if action == "grow" and current:
            topic = draw(st.sampled_from(sorted(current)))
            current[topic] = frozenset(range(len(current[topic]) + draw(st.integers(1, 4))))
        elif action == "new-topic":
            current[draw(topic_names(30))] = frozenset(range(draw(st.integers(1, 6))))
        snapshot = dict(current)
        if partial_views and draw(st.booleans()):
            snapshot = {t: frozenset(draw(st.sets(st.sampled_from(sorted(ids))))) for t, ids in current.items()}
        rounds.append(snapshot)
    return rounds
