"""Hypothesis strategies for Kafka-shaped inputs, shared by the conformance suite and the project tests."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

from hypothesis import event
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


NEAR_MISS_KINDS = ("case", "dot", "longer", "prefixed", "shorter")
"""How a near-miss name differs from the name it imitates (see ``near_misses``)."""


@st.composite
def near_misses(draw: st.DrawFn, name: str) -> str:
    """A legal topic name that sloppy matching confuses with ``name``, and exact full matching does not.

    It differs only by the case of one letter (a case-insensitive compare), by a ``.`` where the
    other name has another character (a list turned into an unescaped regex), by characters after or
    before it (``re.match`` or a prefix compare; ``re.search``), or it is a proper prefix of it
    (a pattern made of that prefix matches ``name`` only partially).
    """
    kind = draw(st.sampled_from(NEAR_MISS_KINDS), label="near-miss kind")
    letters = [i for i, c in enumerate(name) if c.isalpha()]
    dots = [i for i, c in enumerate(name) if c == "."]
    if kind == "case" and letters:
        i = draw(st.sampled_from(letters))
        miss = name[:i] + name[i].swapcase() + name[i + 1 :]
    elif kind == "dot" and dots:
        i = draw(st.sampled_from(dots))
        miss = name[:i] + draw(st.sampled_from(KAFKA_TOPIC_ALPHABET.replace(".", ""))) + name[i + 1 :]
    elif kind == "dot":
        i = draw(st.integers(0, len(name) - 1))
        miss = name[:i] + "." + name[i + 1 :]
    elif kind == "shorter" and len(name) > 1:
        miss = name[: draw(st.integers(1, len(name) - 1))]
    elif kind == "prefixed":
        miss = draw(topic_names(4)) + name
    else:
        miss = name + draw(st.sampled_from(["-dlq", ".v2", "_", "0"]) | topic_names(4))
    miss = miss[:249]
    return miss if miss not in {name, ".", ".."} else name + "-x"


@st.composite
def cluster_histories(draw: st.DrawFn, partial_views: bool, max_rounds: int = 5) -> list[dict[str, frozenset[int]]]:
    """Successive metadata snapshots of one cluster: partitions and topics only ever grow.

    New topics are unrelated names or near misses of existing ones (``near_misses``), so a
    subscription built from an existing name has neighbours that only an exact match tells apart.
    With ``partial_views``, some snapshots omit partitions that exist (a broker hiccup), as a
    metadata request can during a leader election.
    """
    current = dict(draw(metadata_snapshots(max_topics=4, max_partitions=8, contiguous=True), label="initial"))
    rounds = []
    for _ in range(draw(st.integers(1, max_rounds), label="rounds")):
        action = draw(st.sampled_from(["same", "grow", "new-topic", "near-miss"]))
        if action == "grow" and current:
            topic = draw(st.sampled_from(sorted(current)))
            current[topic] = frozenset(range(len(current[topic]) + draw(st.integers(1, 4))))
        elif action == "near-miss" and current:
            current.setdefault(draw(st.sampled_from(sorted(current)).flatmap(near_misses)), frozenset(range(2)))
        elif action in {"new-topic", "near-miss"}:
            current[draw(topic_names(30))] = frozenset(range(draw(st.integers(1, 6))))
        snapshot = dict(current)
        if partial_views and draw(st.booleans()):
            snapshot = {t: frozenset(draw(st.sets(st.sampled_from(sorted(ids))))) for t, ids in current.items()}
        rounds.append(snapshot)
    return rounds


@dataclass
class InterleavingMix:
    """How often a run reached each class (a state machine's interleavings, a generator's input classes):
    a generator gap shows as a zero.

    Each step is also a Hypothesis ``event`` (``--hypothesis-show-statistics``), named by ``kind``;
    ``record`` puts the shares into the run's metrics.
    """

    classes: tuple[str, ...]
    counts: Counter[str] = field(default_factory=Counter)
    kind: str = "interleaving"

    def step(self, name: str) -> None:
        if name not in self.classes:
            raise ValueError(f"unknown {self.kind} class {name!r}; declare it in {self.classes}")
        event(f"{self.kind}: {name}")
        self.counts[name] += 1

    def missing(self) -> list[str]:
        return [name for name in self.classes if not self.counts[name]]

    def record(self, record_property: Callable[[str, object], None], prefix: str) -> None:
        """One metric per class (its share of all counted occurrences, in percent), their total, and the
        classes never run."""
        total = sum(self.counts.values())
        for name in self.classes:
            share = round(100 * self.counts[name] / (total or 1), 1)
            record_property(f"{prefix}_{name.replace('-', '_')}_pct", share)
        record_property(f"{prefix}_total", total)
        record_property(f"{prefix}_never_run", ", ".join(self.missing()) or "none")
