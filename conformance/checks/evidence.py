"""The data of a failure's pictures, built by the suite test that fails and drawn by the HTML report.

A violation's text names one partition; a picture shows the whole observation it came from (every
partition's expected and actual owner, every partition's offsets across restarts), so a reader
sees the pattern of a bug at a glance. Pictures travel with the failure (``fail_on(violations,
pictures)``) as plain JSON-ready dicts, so report.json keeps them and the HTML report needs no
access to the suite's objects.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ...reference_impl.assignment import assign
from ...reference_impl.types import TopicPartition
from .checkers import Picture

GRID_ROWS = 48
"""Partitions one grid shows at most: those of topics with a difference first."""


def assignment_grid(claims: Mapping[TopicPartition, Sequence[int]], parallelism: int, title: str) -> Picture:
    """A task x partition grid: the subtasks that claim each partition beside Flink's owner of it.

    Topics with a difference come first, whole, so a reader sees the shift of a wrong start
    index along a topic; at most ``GRID_ROWS`` partitions are kept, and the picture says how many.
    """
    rows = [
        {"topic": tp.topic, "partition": tp.partition, "expected": assign(tp.topic, tp.partition, parallelism),
         "actual": sorted(owners)}
        for tp, owners in sorted(claims.items())
    ]  # fmt: skip
    wrong = {r["topic"] for r in rows if r["actual"] != [r["expected"]]}
    rows.sort(key=lambda r: (r["topic"] not in wrong, r["topic"], r["partition"]))
    return {
        "kind": "assignment-grid",
        "title": title,
        "parallelism": parallelism,
        "partitions": len(rows),
        "rows": rows[:GRID_ROWS],
    }


def offset_step(
    label: str,
    event: str,
    parallelism: int,
    read: Iterable[tuple[TopicPartition, int]],
    expected: Mapping[TopicPartition, tuple[int, int]],
    resumed: Mapping[TopicPartition, int] | None = None,
) -> dict[str, Any]:
    """One run of a restart sequence: per partition the offsets it read (first, last + 1) and should have.

    ``event`` is how the run began: ``start``, ``restart`` (from the previous run's checkpoint,
    perhaps at another parallelism), ``driver-kill`` (after the previous driver was SIGKILLed) or
    ``crash`` (the previous job failed and this one restored its last completed checkpoint).
    ``resumed``: where the run's source said each partition resumes, when the scenario can ask it
    (a run that fails at its restore has read nothing yet, so only this shows where it went wrong).
    """
    resumed = resumed or {}
    first: dict[TopicPartition, int] = {}
    last: dict[TopicPartition, int] = {}
    for tp, offset in read:
        first[tp] = min(offset, first.get(tp, offset))
        last[tp] = max(offset + 1, last.get(tp, offset + 1))
    partitions = sorted(set(first) | set(expected) | set(resumed))
    return {
        "label": label,
        "event": event,
        "parallelism": parallelism,
        "ranges": [
            {
                "topic": tp.topic,
                "partition": tp.partition,
                "read": [first[tp], last[tp]] if tp in first else None,
                "expected": list(expected[tp]) if tp in expected else None,
                "resumed": resumed.get(tp),
            }
            for tp in partitions
        ],
    }


def offset_timeline(steps: Sequence[dict[str, Any]], title: str) -> Picture:
    """Offsets per partition across a sequence of runs (``offset_step``), restarts and kills marked."""
    return {"kind": "offset-timeline", "title": title, "steps": list(steps)}
