"""RESTORE-003, DISC-005, DISC-009, DISC-002, COMMIT-011 and COMMIT-013 over a drawn Flink workload's whole life,
and DISC-009 from each run's discovery interval as its enumerator reads it (``check_discovery_interval``).

Pure: the schedule (``kconform.conformance.workloads.flink.schedule``), what the final state's reads were, which
runs read anything, the partitions' ends, and a function that judges the sink's output from given starts. Where a
start at LATEST applies (plain, or a group start's fallback) the starts depend on which run's enumerator did the
job's first discovery (DISC-005: LATEST resolved there, to the partition's end then, every partition found later at
EARLIEST). The history names no such run; it rules out every run after the first one that read anything (a run
before the first discovery has no split to read). So the history is judged against each run it leaves open, earliest
first, and passes when one of them explains it: the connector's discovery may have been done in any of them. One
none explains is judged as the earliest explains it (the first run, whose discovery a job normally does), and the
others' findings go with it as data: a start at LATEST resolved at one discovery for some partitions and at a later
one for others (flink-connector-kafka 3.1 to 4.0.x after a checkpoint taken while its first discovery's splits were
still unassigned, FLINK-38453) leaves starting partitions past their first discovery's end and partitions added
since read from their first record, which no single first discovery explains.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Final

from ...reference_impl.ports import Record
from ...reference_impl.types import TopicPartition
from ..workloads.flink.schedule import Cell, FlinkSchedule
from .checkers import Violation, value_field
from .pipeline_checkers import ReadRecord, check_discovered, check_read_once, check_rewritten, check_sink_output

SinkOutput = tuple[str, bool, Mapping[int, Sequence[Record]]]
"""One sink of the job: its name, whether it is exactly-once, and its topic as a read_committed reader sees it
(partition -> records in log order)."""
SinkCheck = Callable[[Mapping[TopicPartition, int]], list[Violation]]
"""The sink's output judged against the source records from the given starts on (COMMIT-011, COMMIT-013)."""


@dataclass(frozen=True, slots=True)
class Judged:
    """A drawn workload's life judged: the run whose first discovery explains it (or, when none does, the earliest
    one open, whose findings these are), its violations, the ids judged, and the other runs tried with theirs."""

    first: int
    violations: list[Violation]
    judged: set[str]
    others: dict[int, list[Violation]] = field(default_factory=dict)

    def text(self) -> str:
        """What the other runs open would have found, for the failure's detail; empty when there are none."""
        return "\n".join(
            f"had run {k + 1} done the first discovery: {len(found)} violation{'s' * (len(found) != 1)}, first "
            f"{found[0].requirement} {found[0].kind}: {found[0].evidence}"
            for k, found in sorted(self.others.items())
        )


REFUSED: Final = "was written while the broker refused the sink's writes"
"""What a ``COMMIT-007`` finding of a refused record says of it (``check_rewritten``'s cause)."""


def check_sinks(
    produced: Mapping[int, Sequence[Record]], outputs: Sequence[SinkOutput],
    refused: Mapping[str, Collection[bytes]] | None = None,
) -> list[Violation]:  # fmt: skip
    """COMMIT-011 and COMMIT-013 for each sink of a job on its own (every sink writes every record the job reads):
    its read_committed output against ``produced`` (the source records from the starts, keyed apart), exactly once
    or at least once as the sink's guarantee says; each finding names its sink. ``refused``: sink name -> the
    records the job read while the broker refused that sink's writes; one of them missing from its output is
    COMMIT-007 (the sink took the refused write for a done one, instead of failing and writing it again), not
    COMMIT-011."""
    found = []
    expected = {r.value for records in produced.values() for r in records}
    for name, exactly_once, output in outputs:
        violations = check_sink_output(produced, output, exactly_once=exactly_once)
        failed: Counter[bytes | None] = Counter(v for v in (refused or {}).get(name, ()) if v in expected)
        if failed:
            seen = Counter(r.value for records in output.values() for r in records)
            named = {value_field(v) for v in failed}
            violations = check_rewritten(failed, seen, REFUSED) + [
                v for v in violations
                if not (v.requirement == "COMMIT-011" and v.kind == "lost-write" and v.data.get("value") in named)
            ]  # fmt: skip
        guarantee = "exactly-once" if exactly_once else "at-least-once"
        found += [replace(v, evidence=f"sink {name} ({guarantee}): {v.evidence}") for v in violations]
    return found


COMMITTED_MARKER: Final = -3
"""``KafkaPartitionSplit.COMMITTED_OFFSET``: the start the enumerator hands a partition started from the group's
committed offsets, which the split's reader resolves (every release line's ``ReaderHandledOffsetsInitializer``)."""
COMMITTED_START_GAP: Final = "committed-start-gap"
"""RESTORE-003's ``offset-gap`` at a partition whose start the enumerator handed out as the committed-offset marker
(``COMMITTED_MARKER``), with every offset from the partition's start up to it missed too: records written before
the reader resolved the marker, skipped. Its own kind, so that only this shape is known (fixtures/bugbank.toml,
``[[known]] flink-committed-offsets-restore``: a restore resolves the marker again, at its fallback LATEST) and any
other gap stays ``offset-gap``."""


def open_first_discoveries(schedule: FlinkSchedule, read: Sequence[bool], started: Sequence[bool] = ()) -> list[int]:
    """The runs (0-based) whose enumerator may have done the first discovery, given which runs read anything
    (``read``, one per run carried out): no run before it read (a run has no split before its job's first
    discovery), and the schedule's start depends on it (``FlinkSchedule.first_discoveries``).

    ``started``, when the harness recorded it (one per run carried out): whether the run's starting offsets
    initializer handed a start to every partition its enumerator's first listing found
    (``RunHistory.started_all``). A first discovery starts every partition it finds, so a run that did not do that
    did not do it: it only started partitions added since, or none (a restored split keeps its start, whatever it
    holds: a LATEST marker its reader resolves again is the connector's doing, not a later first discovery).
    Should the record leave no run open, the history is judged as without it."""
    found = [k for k in schedule.first_discoveries() if k < max(len(read), 1) and not any(read[:k])]
    return [k for k in found if k < len(started) and started[k]] or found


def committed_start_gaps(
    violations: Sequence[Violation], handed: Mapping[TopicPartition, int], starts: Mapping[TopicPartition, int],
    final: Sequence[ReadRecord],
) -> list[Violation]:  # fmt: skip
    """``violations`` with each RESTORE-003 ``offset-gap`` of ``COMMITTED_START_GAP``'s shape renamed to it: at a
    partition handed ``COMMITTED_MARKER``, with no offset from its start (``starts``) up to the gap read."""
    read: dict[TopicPartition, set[int]] = {}
    for r in final:
        read.setdefault(r.tp, set()).add(r.offset)
    out = []
    for v in violations:
        tp = TopicPartition(str(v.data.get("topic")), int(v.data.get("partition", -1)))
        offset = int(v.data.get("offset", -1))
        if (
            v.requirement == "RESTORE-003" and v.kind == "offset-gap" and handed.get(tp) == COMMITTED_MARKER
            and not any(starts.get(tp, 0) <= o < offset for o in read.get(tp, ()))
        ):  # fmt: skip
            v = replace(v, kind=COMMITTED_START_GAP)
        out.append(v)
    return out


def judge_first_discovery(
    schedule: FlinkSchedule, first: int, tp: Callable[[Cell], TopicPartition],
    ends: Mapping[TopicPartition, int], final: Sequence[ReadRecord], sink: SinkCheck,
    listed: Collection[TopicPartition] | None = None, handed: Mapping[TopicPartition, int] | None = None,
) -> tuple[list[Violation], set[str]]:  # fmt: skip
    """The life judged as if run ``first`` did the first discovery: every offset of a partition there was then once
    from its start (RESTORE-003), every partition added or topic created after it found and read from its first
    record (DISC-009 or DISC-002, DISC-005: one a discovery found, by ``listed``, and none of whose records was
    read, was started past them, DISC-005), the sink's output (COMMIT-011, COMMIT-013); and the ids judged."""
    starting = {tp(cell) for cell in schedule.starting(first)}
    starts = {tp(cell): offset for cell, offset in schedule.starts(first).items()}
    judged = {"RESTORE-003", "COMMIT-011", "COMMIT-013"}
    violations = check_read_once(
        [r for r in final if r.tp in starting],
        {t: end for t, end in ends.items() if t in starting},
        starts={t: s for t, s in starts.items() if t in starting},
    )
    violations = committed_start_gaps(violations, handed or {}, starts, final)
    for created, unfound in ((False, "DISC-009"), (True, "DISC-002")):
        added = {tp(cell): ends.get(tp(cell), 0) for cell, new in schedule.added(first).items() if new == created}
        added = {t: end for t, end in added.items() if end > 0}
        if added:
            judged |= {"DISC-005", unfound}
            violations += check_discovered([r for r in final if r.tp in added], added, unfound=unfound, listed=listed)
    violations += sink(starts)
    return violations, judged


def check_workload_life(
    schedule: FlinkSchedule, tp: Callable[[Cell], TopicPartition], ends: Mapping[TopicPartition, int],
    final: Sequence[ReadRecord], read: Sequence[bool], sink: SinkCheck,
    listed: Collection[TopicPartition] | None = None, handed: Sequence[Mapping[TopicPartition, int]] = (),
    started: Sequence[bool] = (),
) -> Judged:  # fmt: skip
    """The life judged against each run open for its first discovery (``open_first_discoveries``), earliest first:
    the first that finds nothing explains it; when none does, the earliest's findings, the others' beside them.
    ``listed``: every partition the job's discoveries found (the harness's record), when known; ``handed``: what
    each run's starting offsets initializer handed out, and ``started``: whether it started every partition its
    first listing found (the harness's record), when known."""
    tried: dict[int, tuple[list[Violation], set[str]]] = {}
    for first in open_first_discoveries(schedule, read, started):
        given = handed[first] if first < len(handed) else None
        found, judged = judge_first_discovery(schedule, first, tp, ends, final, sink, listed, given)
        if not found:
            return Judged(first, [], judged)
        tried[first] = (found, judged)
    earliest = min(tried)
    return Judged(
        earliest, tried[earliest][0], tried[earliest][1], {k: v for k, (v, _) in tried.items() if k != earliest}
    )


def check_discovery_interval(
    run: int, asked_ms: int | None, interval_ms: int | None, default_ms: int | None
) -> tuple[list[Violation], bool]:
    """DISC-009 for run ``run`` (1-based)'s unbounded source, from its ``partition.discovery.interval.ms`` as the
    release's enumerator reads it (``interval_ms``, the harness's report) against what the job asked: the interval
    it set (``asked_ms``), else the release's own documented default (``default_ms``: five minutes from
    flink-connector-kafka 3.1.0, FLIP-288; none before). Discovery off (an interval of 0 or less, or none) where the
    job asked for it, or left it to a release whose default is on, is ``discovery-off``: partitions added while the
    job runs are never found (FLINK-36780: 3.1.0 to 3.4.0's ``KafkaSourceBuilder`` set -1 when the interval was not
    set, bounded or not). Also whether DISC-009 was judged: not when the job asked for no discovery and the release
    has no default on (connector 3.0.x)."""
    expected = asked_ms if asked_ms is not None else default_ms
    if expected is None or expected <= 0:
        return [], False
    if interval_ms is not None and interval_ms > 0:
        return [], True
    asked = f"set to {asked_ms} ms" if asked_ms is not None else f"not set (the release's default: {default_ms} ms)"
    return [
        Violation(
            "DISC-009",
            "discovery-off",
            f"run {run}'s unbounded source has partition discovery off (partition.discovery.interval.ms "
            f"{interval_ms} as its enumerator reads it) though the job's interval was {asked}: partitions added "
            "while it runs are never found",
            data={"run": run, "got": interval_ms, "want": expected, "asked_ms": asked_ms, "default_ms": default_ms},
        )
    ], True


def check_reader_sink(
    guarantee: str, mode: str, name: str, read: Mapping[int, Sequence[Record]], output: Mapping[int, Sequence[Record]]
) -> tuple[list[Violation], set[str]]:
    """COMMIT-011 and COMMIT-013 over the bounded reader's sink (``Reader``, STREAMING or BATCH ``mode``), once its
    job ended: every record it had to read (``read``: source partition -> records below the stopping offsets its
    isolation shows) in the sink topic ``name`` as a read_committed reader sees it (``output``): once and in order
    for ``exactly-once``, at least once for ``at-least-once``. A sink that committed nothing by the job's end, its
    transactions aborted or left open (flink-connector-kafka's exactly-once writer aborting in BATCH the transaction
    it handed its committer, FLINK-37622), is COMMIT-011 ``lost-write`` for each record. A ``none`` sink promises
    nothing of its output: nothing judged. Returns the violations, each naming the sink, its guarantee and the mode,
    and the ids judged."""
    if guarantee == "none":
        return [], set()
    found = check_sink_output(read, output, exactly_once=guarantee == "exactly-once")
    where = f"the bounded reader's {guarantee} sink {name} ({mode} mode)"
    return [replace(v, evidence=f"{where}: {v.evidence}") for v in found], {"COMMIT-011", "COMMIT-013"}
