"""What a Flink job read, from what its subtasks recorded: the reads the pipeline checkers judge. Pure.

The harness's map (``jvm/flink-harness``) appends one line per event to a run's history: a subtask attempt
starting (``init``, with the checkpoint or savepoint it restored from), each record it read, each checkpoint its
state entered (``snapshot``: the records read before it are in that checkpoint) and each checkpoint it heard
completed; and, when the run asked for it, each listing of the subscription by the source's enumerator (``listed``,
with the number of partitions it found: a discovery, ``parse_listings``) and each answer of its starting offsets
initializer (``resolved``: the start it handed each partition, ``parse_handed``). A failure rolls a subtask back to a
checkpoint and its reads after that checkpoint are read again;
a restore at another parallelism starts from a savepoint. ``committed_reads`` follows these restores back from the
end of the last run and keeps the reads the job's final state rests on: a connector that reads each record once
end to end shows each offset once there (``check_read_once``), whatever was replayed on the way.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

from ...reference_impl.types import EARLIEST, LATEST, TopicPartition
from ..checks.pipeline_checkers import ReadRecord

Ended = Literal["finished", "unfinished", "savepoint"]
"""A bounded run's end, a bounded run the harness cancelled after its bound, an unbounded run's savepoint."""


class HistoryError(ValueError):
    """A history that no Flink job writes (a read before its subtask started, a restore from nowhere): a harness
    bug, never the connector's violation."""


@dataclass(frozen=True, slots=True)
class Segment:
    """What one attempt of one subtask recorded, in order."""

    subtask: int
    attempt: int
    restored: int | None
    """The checkpoint or savepoint id its state was restored from; ``None`` for a fresh start."""
    events: tuple[ReadRecord | int, ...]
    """Each record read, and each checkpoint id its state entered, in the order they happened."""
    completed: frozenset[int]
    """The checkpoints it was told completed."""

    def reads(self) -> list[ReadRecord]:
        return [e for e in self.events if isinstance(e, ReadRecord)]

    def checkpoints(self) -> list[int]:
        return [e for e in self.events if isinstance(e, int)]

    def reads_before(self, checkpoint: int) -> list[ReadRecord]:
        """The reads its state held when it entered ``checkpoint`` (which it must have entered)."""
        cut = self.events.index(checkpoint)
        return [e for e in self.events[:cut] if isinstance(e, ReadRecord)]


@dataclass(frozen=True, slots=True)
class RunHistory:
    """One job run: every subtask attempt's segment, and how the job ended."""

    segments: tuple[Segment, ...]
    ended: Ended
    listings: tuple[frozenset[TopicPartition], ...] = ()
    """The partitions each listing of the subscription by the source's enumerator found, in order (recorded only
    when the run asked: ``JobRun.record_listings``, ``Stop.listed``)."""
    handed: Mapping[TopicPartition, int] = field(default_factory=dict)
    """What the source's starting offsets initializer handed the enumerator for each partition it started in this
    run (a concrete offset, or a marker its reader resolves: ``LATEST`` -1, ``EARLIEST`` -2, ``COMMITTED`` -3; the
    last answer for a partition asked twice), recorded with the listings (``parse_handed``)."""

    def started_all(self) -> bool:
        """Whether the source's starting offsets initializer handed a start to every partition its enumerator's
        first listing found, and found one: what a job's first discovery does (``handed``, ``listings``)."""
        return bool(self.listings) and bool(self.listings[0]) and self.listings[0] <= self.handed.keys()

    def savepoint(self) -> int:
        """The savepoint the run stopped with: the last checkpoint any subtask heard completed."""
        completed = [c for s in self.segments for c in s.completed]
        if self.ended != "savepoint" or not completed:
            raise HistoryError(
                f"a run that ended {self.ended!r} with checkpoints {sorted(set(completed))} has no savepoint"
            )
        return max(completed)

    def final_segments(self) -> list[Segment]:
        """The last attempt of each subtask."""
        last: dict[int, Segment] = {}
        for segment in self.segments:
            if segment.subtask not in last or segment.attempt > last[segment.subtask].attempt:
                last[segment.subtask] = segment
        return [last[s] for s in sorted(last)]

    def reads(self) -> list[ReadRecord]:
        """Every read of the run, replays included."""
        return [r for s in self.segments for r in s.reads()]


def parse_run(lines: Iterable[str], ended: Ended) -> RunHistory:
    """The run a history file's lines describe; ``HistoryError`` on a line no harness writes."""
    lines = list(lines)
    return RunHistory(parse_segments(lines), ended, parse_listings(lines), parse_handed(lines))


def parse_handed(lines: Iterable[str]) -> dict[TopicPartition, int]:
    """The starts the source's starting offsets initializer handed out (``resolved`` lines), the last one per
    partition."""
    handed: dict[TopicPartition, int] = {}
    for line in lines:
        if line.strip() and (event := json.loads(line))["e"] == "resolved":
            handed |= {TopicPartition(t, int(p)): int(offset) for t, p, offset in event["offsets"]}
    return handed


def parse_listings(lines: Iterable[str]) -> tuple[frozenset[TopicPartition], ...]:
    """The partitions each recorded listing of the subscription found (``listed`` lines), in order."""
    found = []
    for line in lines:
        if line.strip() and (event := json.loads(line))["e"] == "listed":
            found.append(frozenset(TopicPartition(t, int(p)) for t, p in event["partitions"]))
    return tuple(found)


def parse_segments(lines: Iterable[str]) -> tuple[Segment, ...]:
    """The subtask attempts a history's lines describe, so far (a run still going has no end yet)."""
    started: dict[tuple[int, int], int | None] = {}
    events: dict[tuple[int, int], list[ReadRecord | int]] = {}
    completed: dict[tuple[int, int], set[int]] = {}
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        event = json.loads(line)
        key = (int(event["subtask"]), int(event["attempt"]))
        kind = event["e"]
        if kind in ("listed", "resolved"):  # the enumerator's, no subtask's: parse_listings, parse_handed
            continue
        if kind == "init":
            started[key] = event["restored"]
            events[key], completed[key] = [], set()
        elif key not in started:
            raise HistoryError(f"line {number}: {kind!r} of subtask {key[0]} attempt {key[1]} before it started")
        elif kind == "read":
            value = None if event["value"] is None else bytes.fromhex(event["value"])
            events[key].append(
                ReadRecord(TopicPartition(event["topic"], event["partition"]), event["offset"], value, key[0])
            )
        elif kind == "snapshot":
            events[key].append(int(event["checkpoint"]))
        elif kind == "complete":
            completed[key].add(int(event["checkpoint"]))
        else:
            raise HistoryError(f"line {number}: unknown event {kind!r}")
    return tuple(
        Segment(s, a, started[(s, a)], tuple(events[(s, a)]), frozenset(completed[(s, a)])) for s, a in started
    )


def committed_reads(runs: Sequence[RunHistory]) -> list[ReadRecord]:
    """The reads the final state of the last run rests on, through every restore back to the first fresh start."""
    return _content(runs, len(runs) - 1, None)


def _content(runs: Sequence[RunHistory], index: int, checkpoint: int | None) -> list[ReadRecord]:
    """The reads in run ``index``'s ``checkpoint`` (``None``: in its end: a savepoint, or every last read)."""
    run = runs[index]
    end = run.savepoint() if checkpoint is None and run.ended == "savepoint" else checkpoint
    out: list[ReadRecord] = []
    earlier: set[int] = set()
    if end is None:
        for segment in run.final_segments():
            out += segment.reads() + _lineage(run, segment, earlier)
    else:
        for segment in run.segments:
            if end in segment.checkpoints():
                out += segment.reads_before(end) + _lineage(run, segment, earlier)
    for savepoint in sorted(earlier):
        if index == 0:
            raise HistoryError(f"the first run restored from {savepoint}, which no earlier run took")
        out += _content(runs, index - 1, savepoint)
    return out


def _lineage(run: RunHistory, segment: Segment, earlier: set[int]) -> list[ReadRecord]:
    """The reads ``segment``'s restored state held, through the earlier attempts of its subtask in ``run``;
    a restore from a checkpoint no attempt of this run took (the savepoint it started from) goes to ``earlier``."""
    out: list[ReadRecord] = []
    current, restored = segment, segment.restored
    while restored is not None:
        took = [
            s
            for s in run.segments
            if s.subtask == current.subtask and s.attempt < current.attempt and restored in s.checkpoints()
        ]
        if not took:
            earlier.add(restored)
            break
        (current,) = took
        out += current.reads_before(restored)
        restored = current.restored
    return out


def next_offsets(reads: Iterable[ReadRecord]) -> dict[TopicPartition, int]:
    """Each partition's offset after the last one read: where a job restored from these reads goes on."""
    found: dict[TopicPartition, int] = {}
    for r in reads:
        found[r.tp] = max(found.get(r.tp, 0), r.offset + 1)
    return found


def left_to_read(ends: Mapping[TopicPartition, int], reads: Iterable[ReadRecord]) -> dict[TopicPartition, int]:
    """The partitions of ``ends`` that ``reads`` have not read up to their end, with that end."""
    done = next_offsets(reads)
    return {tp: end for tp, end in ends.items() if done.get(tp, 0) < end}


def starts_read(
    reads: Iterable[ReadRecord], firsts: Mapping[TopicPartition, int], ends: Mapping[TopicPartition, int]
) -> dict[TopicPartition, int]:
    """Where a fresh job started each partition of ``ends``, as its lowest offset read shows it: at the partition's
    first record (``firsts``) ``EARLIEST``; at or past its end when the job started (``ends``: a start at LATEST
    reads only records written since, and resolves when the reader first polls) ``LATEST``; else that offset. A
    partition not read is left out. A start asked at a first record or an end reads the same: ask between them."""
    lowest: dict[TopicPartition, int] = {}
    for r in reads:
        if r.tp in ends:
            lowest[r.tp] = min(lowest.get(r.tp, r.offset), r.offset)
    return {
        tp: EARLIEST if offset == firsts[tp] else LATEST if offset >= ends[tp] else offset
        for tp, offset in lowest.items()
    }


def restarted_or_checkpointed(segments: Iterable[Segment], values: Collection[bytes | None]) -> bool:
    """Whether a subtask restarted (an attempt past its first), or a checkpoint some subtask heard completed
    holds a read of one of ``values``: the two ways a job goes on once its sink failed to write them."""
    for segment in segments:
        if segment.attempt > 0:
            return True
        for checkpoint in segment.completed & set(segment.checkpoints()):
            if any(r.value in values for r in segment.reads_before(checkpoint)):
                return True
    return False


def checkpointed_to(segments: Iterable[Segment], ends: Mapping[TopicPartition, int]) -> bool:
    """Whether the job read each partition of ``ends`` up to its end and a checkpoint holding that last read
    completed (its sinks flushed what came before it: no write of the job in flight); with no partition to read,
    whether any checkpoint completed (the job runs, its sinks started)."""
    segments = list(segments)
    held: set[TopicPartition] = set()
    done = False
    for segment in segments:
        for checkpoint in segment.completed & set(segment.checkpoints()):
            done = True
            held |= {r.tp for r in segment.reads_before(checkpoint) if r.tp in ends and r.offset >= ends[r.tp] - 1}
    return done and held >= set(ends)
