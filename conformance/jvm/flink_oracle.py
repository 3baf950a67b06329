"""The Flink oracle: Flink's Kafka connector's own assigner and transaction naming, asked through a helper JVM.

``jvm/flink-oracle`` is a small Java program (built by ``kconform setup`` into ``flink-oracle/`` of the jars folder,
next to the pinned connector's classpath, 5.x) that reads JSON requests, one a line, and answers each with
what Flink's classes compute: the owner of a partition from FLIP-27's
``KafkaSourceEnumerator.getSplitOwner`` and from the legacy ``KafkaTopicPartitionAssigner.assign``
(3.x connector, loaded from ``flink-legacy/`` beside it by a class loader of its own), and the sink's
transactional ids from ``TransactionalIdFactory`` (the pinned line and 3.x) and ``TransactionNamingStrategyImpl``
(``INCREMENTING``, ``POOLING``), and what FLIP-27's ``KafkaSourceEnumerator`` assigns, keeps pending
and checkpoints through a sequence of discoveries, driven in Flink's own test context
(``MockSplitEnumeratorContext``, flink-core's test jar), its starting offsets initializer (LATEST
too) answered from each step's given log offsets. It runs through ``JvmHelper``: started once per
test session, every wait bounded, a dead helper an error that shows what it printed.

``python -m kconform.conformance.jvm.flink_oracle TOPICS OUT`` writes the assigner's golden vectors
(``make golden``: ``fixtures/golden/assign_vectors.csv``) from Flink's classes.
"""

from __future__ import annotations

import argparse
import csv
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from ...reference_impl.discovery import Metadata
from ...reference_impl.types import EARLIEST, LATEST, SubtaskIndex, TopicPartition
from . import JvmArtifactsMissing, classpath, jvm_dir, setup_hint
from .kafka_oracle import TIMEOUT_S, JvmHelper, OracleError

FLINK_ORACLE: Final = "flink-oracle"
"""The module whose jar and classpath (the connector ``jvm/pom.xml`` pins, 5.x) run the helper
(``jvm/flink-oracle/pom.xml``)."""
FLINK_LEGACY: Final = "flink-legacy"
"""The 3.x connector, whose legacy assigner the helper loads apart (``jvm/flink-legacy/pom.xml``)."""
MAIN_CLASS: Final = "kconform.FlinkOracle"
TEST_CONTEXT_JAR: Final = "flink-core-*-tests.jar"
"""flink-core's test jar, with the ``MockSplitEnumeratorContext`` the enumerator runs in."""

GOLDEN_PARALLELISMS: Final = (1, 2, 3, 4, 5, 6, 7, 8, 11, 16, 31, 64, 100, 1000, 10007, 32768)
GOLDEN_PARTITIONS: Final = (0, 1, 2, 10, 11, 1000, 65535)
GOLDEN_COLUMNS: Final = ("topic", "hash_code", "parallelism", "start_index", "partition", "owner")

LogOffsets = Mapping[TopicPartition, tuple[int, int]]
"""Each partition's earliest and end offset (read_uncommitted: the high watermark) at one step."""


@dataclass(frozen=True, slots=True)
class FlinkOwner:
    """What Flink computes for one (topic, partition, parallelism)."""

    hash_code: int
    """``topic.hashCode()`` on the JVM."""
    split_owner: int
    """FLIP-27: ``KafkaSourceEnumerator.getSplitOwner(new TopicPartition(topic, partition), n)``."""
    legacy_owner: int
    """FlinkKafkaConsumer: ``KafkaTopicPartitionAssigner.assign(topic, partition, n)``."""


@dataclass(frozen=True, slots=True)
class SplitAssignment:
    """One split Flink's enumerator hands a reader, or keeps for it while it is not registered."""

    reader: SubtaskIndex
    partition: TopicPartition
    starting_offset: int
    """An offset, or Flink's marker (``KafkaPartitionSplit.EARLIEST_OFFSET`` is the reference's ``EARLIEST``)."""


@dataclass(frozen=True, slots=True)
class EnumeratorState:
    """``KafkaSourceEnumState``: what ``KafkaSourceEnumerator.snapshotState`` checkpoints (connector 5.x: splits,
    each with its starting offset, FLINK-38453; 3.1 to 4.x held bare partitions, the unassigned ones of the first
    discovery only)."""

    assigned: Mapping[TopicPartition, int]
    """Splits handed to a reader, each with the starting offset it was handed out at."""
    unassigned: Mapping[TopicPartition, int] = field(default_factory=dict)
    """Splits discovered and not handed out yet (their reader was not registered), of any discovery, each with its
    starting offset (a LATEST already resolved)."""
    initial_discovery_finished: bool = False


@dataclass(frozen=True, slots=True)
class EnumeratorStep:
    """What Flink's enumerator did in one step: register readers, discover, initialise splits."""

    assigned: tuple[SplitAssignment, ...]
    """Every split the enumerator asked its context to assign during the step, sorted."""
    pending: tuple[SplitAssignment, ...]
    """The splits it holds after the step for readers not registered, sorted."""
    state: EnumeratorState
    """``snapshotState`` after the step."""
    end_offsets_asked: frozenset[TopicPartition] = frozenset()
    """The partitions whose end offset the starting offsets initializer looked up during the step
    (``PartitionOffsetsRetriever.endOffsets``: how LATEST is resolved)."""
    beginning_offsets_asked: frozenset[TopicPartition] = frozenset()
    """The partitions whose earliest offset it looked up (``beginningOffsets``)."""


def _pairs(pairs: Iterable[Sequence[Any]]) -> frozenset[TopicPartition]:
    return frozenset(TopicPartition(t, p) for t, p in pairs)


def _starts(rows: Iterable[Sequence[Any]]) -> dict[TopicPartition, int]:
    return {TopicPartition(t, p): o for t, p, o in rows}


def _rows(starts: Mapping[TopicPartition, int]) -> list[list[Any]]:
    return [[tp.topic, tp.partition, offset] for tp, offset in sorted(starts.items())]


def _splits(rows: Iterable[Sequence[Any]]) -> tuple[SplitAssignment, ...]:
    return tuple(SplitAssignment(SubtaskIndex(r), TopicPartition(t, p), o) for r, t, p, o in rows)


class FlinkOracle(JvmHelper):
    """Flink's Kafka connector classes in one running helper JVM."""

    def __init__(self, timeout_s: float = TIMEOUT_S) -> None:
        legacy = jvm_dir() / FLINK_LEGACY
        classpath(FLINK_LEGACY)  # JvmArtifactsMissing naming `kconform setup` if the 3.x connector is absent
        if not any((jvm_dir() / FLINK_ORACLE).glob(TEST_CONTEXT_JAR)):
            raise JvmArtifactsMissing(
                f"Flink's test context (no {TEST_CONTEXT_JAR} in {jvm_dir() / FLINK_ORACLE}) is not resolved: "
                f"{setup_hint()}"
            )
        super().__init__(FLINK_ORACLE, MAIN_CLASS, (str(legacy),), "the Flink oracle", timeout_s)

    def owners(self, cases: Sequence[tuple[str, int, int]]) -> list[FlinkOwner]:
        """For each (topic, partition, parallelism): its hash code and both Flink assigners' owner."""
        answer = self.request(
            {
                "op": "owners",
                "topics": [t for t, _, _ in cases],
                "partitions": [p for _, p, _ in cases],
                "parallelisms": [n for _, _, n in cases],
            }
        )
        return [
            FlinkOwner(h, o, legacy)
            for h, o, legacy in zip(answer["hash_code"], answer["split_owner"], answer["legacy_owner"], strict=True)
        ]

    def transactional_ids(self, cases: Sequence[tuple[str, int, int]]) -> list[tuple[str, str]]:
        """For each (prefix, subtask, offset): ``TransactionalIdFactory.buildTransactionalId``, pinned and 3.x."""
        answer = self.request(
            {
                "op": "transactional_ids",
                "prefixes": [s for s, _, _ in cases],
                "subtasks": [i for _, i, _ in cases],
                "offsets": [o for _, _, o in cases],
            }
        )
        return list(zip(answer["ids"], answer["legacy_ids"], strict=True))

    def incrementing(self, prefix: str, subtask: int, last_checkpoint: int, next_checkpoint: int) -> list[str]:
        """The ids ``INCREMENTING`` asks its producer pool for, in order, for the next checkpoint's
        transaction: the gap's ids (initialised and recycled), then the one it writes to."""
        request = {
            "op": "incrementing",
            "prefix": prefix,
            "subtask": subtask,
            "last_checkpoint": last_checkpoint,
            "next_checkpoint": next_checkpoint,
        }
        return list(self.request(request)["requested"])

    def pooling(self, prefix: str, subtask: int, ongoing: Sequence[str]) -> list[str]:
        """The ids ``POOLING`` asks its producer pool for while ``ongoing`` transactions are open."""
        answer = self.request({"op": "pooling", "prefix": prefix, "subtask": subtask, "ongoing": list(ongoing)})
        return list(answer["requested"])

    def enumerator(
        self,
        parallelism: int,
        steps: Sequence[tuple[Collection[int], Metadata]],
        start: int = EARLIEST,
        restore: EnumeratorState | None = None,
        offsets: Sequence[LogOffsets] | None = None,
    ) -> list[EnumeratorStep]:
        """Flink's ``KafkaSourceEnumerator`` at ``parallelism`` (restored from ``restore``, if given)
        through ``steps``: in each, the registered readers become those listed, then one periodic
        discovery lists the metadata. Partitions of the first discovery start at ``start`` (an offset,
        ``EARLIEST`` or ``LATEST``), later ones where Flink starts them.

        ``offsets[k]``, if given, is what Kafka answers during step ``k`` when Flink's starting
        offsets initializer looks a partition's offsets up (LATEST: its end offset); it should hold
        every partition of the cluster, not only those the step's metadata lists, since the
        enumerator looks up partitions it knows from a restored state too. A partition looked up but
        not given is an ``OracleError``.
        """
        if offsets is not None and len(offsets) != len(steps):
            raise ValueError(f"{len(offsets)} offsets for {len(steps)} steps")
        if start == LATEST and offsets is None:
            raise ValueError("LATEST is resolved from log offsets: give offsets for every step")
        request = {
            "op": "enumerator",
            "parallelism": parallelism,
            "start": start,
            "restore": None
            if restore is None
            else {
                "assigned": _rows(restore.assigned),
                "unassigned": _rows(restore.unassigned),
                "initial_discovery_finished": restore.initial_discovery_finished,
            },
            "steps": [
                {
                    "readers": sorted(readers),
                    "metadata": {t: sorted(ids) for t, ids in metadata.items()},
                    "offsets": []
                    if offsets is None
                    else [[tp.topic, tp.partition, first, end] for tp, (first, end) in sorted(offsets[k].items())],
                }
                for k, (readers, metadata) in enumerate(steps)
            ],
        }
        return [
            EnumeratorStep(
                _splits(step["assigned"]),
                _splits(step["pending"]),
                EnumeratorState(
                    _starts(step["state"]["assigned"]),
                    _starts(step["state"]["unassigned"]),
                    step["state"]["initial_discovery_finished"],
                ),
                _pairs(step["end_offsets_asked"]),
                _pairs(step["beginning_offsets_asked"]),
            )
            for step in self.request(request)["steps"]
        ]


def golden_rows(oracle: FlinkOracle, topics: Sequence[str]) -> list[tuple[str, int, int, int, int, int]]:
    """``GOLDEN_COLUMNS`` rows for every topic, parallelism and partition, from Flink's classes.

    The owner is FLIP-27's ``getSplitOwner``; the start index is its owner of partition 0. The
    legacy assigner must agree on every row, or this is an ``OracleError``.
    """
    cases = [(t, p, n) for t in topics for n in GOLDEN_PARALLELISMS for p in (0, *GOLDEN_PARTITIONS)]
    answers = dict(zip(cases, oracle.owners(cases), strict=True))
    rows = []
    for topic in topics:
        for n in GOLDEN_PARALLELISMS:
            start = answers[(topic, 0, n)].split_owner
            for partition in GOLDEN_PARTITIONS:
                found = answers[(topic, partition, n)]
                if found.legacy_owner != found.split_owner:
                    raise OracleError(f"Flink's assigners disagree on {(topic, partition, n)}: {found}")
                rows.append((topic, found.hash_code, n, start, partition, found.split_owner))
    return rows


def write_golden(topics_file: Path, out: Path) -> int:
    """Write the golden vectors of the topics in ``topics_file`` (one a line) to ``out``; the row count."""
    topics = [t for t in topics_file.read_text(encoding="utf-8").split("\n") if t]  # lines as Java reads them
    with FlinkOracle() as oracle:
        rows = golden_rows(oracle, topics)
    with out.open("w", encoding="utf-8", newline="") as f:
        writer = csv.writer(f, lineterminator="\n")
        writer.writerow(GOLDEN_COLUMNS)
        writer.writerows(rows)
    return len(rows)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Write the assigner's golden vectors from Flink's own classes.")
    parser.add_argument("topics", type=Path, help="topic names, one a line")
    parser.add_argument("out", type=Path, help="the CSV to write")
    args = parser.parse_args(argv)
    print(f"wrote {write_golden(args.topics, args.out)} rows to {args.out}")


if __name__ == "__main__":
    main()
