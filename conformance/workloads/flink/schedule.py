"""A Flink workload's schedule: pure data, drawn by Hypothesis, replayed from its JSON.

A ``FlinkSchedule`` is one job's whole life on one source and one sink: the topics it starts with (named by index:
``t0``, ``t1``, ...), whether its ``KafkaSource`` subscribes to them by list or by a pattern, where its first run
starts (the earliest offsets, the latest, or a consumer group's committed offsets with a fallback), its ``KafkaSink``'s
guarantee and transaction naming, its checkpoint interval, and two to four runs. Each run after the first is
restored from the savepoint the one before it stopped with; before each, an operator writes records to some
partitions, adds partitions to a topic or creates a topic the pattern matches (never while a job runs: the job's
reads then follow from the schedule, not from a race). The job writes what it reads into one to ``MAX_SINKS``
``KafkaSink``s, each of its own guarantee: an exactly-once one under its own transactional-id prefix (the builder
requires one, COMMIT-022), an at-least-once one with its own prefix or none set, as most such jobs leave it (the
prefix names no transaction there). A run has its parallelism, an optional subtask ``Failure``
and its stop: at once (as soon as Flink takes the savepoint, right after the job's start), after some records, or
once it read to the end of what was written. The last run reads to the end.

Where a start at LATEST (plain, or a group's fallback) puts a partition depends on when the job's first discovery
was done: DISC-005 resolves LATEST there, to the partition's end then, and starts every partition found later at
EARLIEST. Writes come only between runs, so that end is what was written before some run; which run is what the
history tells (``first_discoveries``: a run before it read nothing), and the checkers accept a history one such run
explains (``kconform.conformance.checks.flink_workload_checkers``). A first run at LATEST has nothing to read, so it
stops at once: its savepoint is taken right after the start, before, during or after its first discovery; so does
every run before the first that read, but the last (``stop_first``). Under a plain start at LATEST the first run
draws its savepoint's moment (``moment``, see ``with_moment``): right after the start (``start``), or once its
enumerator listed the subscription (``listed``), the answer to the enumerator's first ListOffsets request (its
LATEST being resolved) held back by the broker's proxy until the savepoint is written: so the savepoint falls after
the first discovery's listing and before its splits were made and assigned, the window where a connector that
checkpoints its first discovery's partitions without their start (3.1 to 4.0.x, FLINK-38453) resolves LATEST again
after the restore.

A pattern subscription may match nothing when the job starts (``empty_at_start``): its topics are created before
the second run, and the first run stops once its enumerator listed the subscription (the harness records each
listing), so the job's first discovery is known to have found nothing; every topic found later is then read from
its first record (DISC-005, DISC-002), whatever the start. Each partition so created is written to again before the
last run, so a partition started late (read with a gap) is told apart from one never found.

A run that reads to the end may meet a fault inside it (``Refusal``, drawn last: see ``with_refusal``): once it read
and checkpointed what was written before it, the broker refuses every write to an at-least-once sink's topic while a
few records are written to the job's input one at a time, each until a checkpoint holding its read completed or the
job restarted; then it takes writes again and more records are written after them. A sink that surfaced the
refusal fails and writes the records again; one that swallowed it completes its checkpoint without them (COMMIT-007).

Partitions may also be added while a job runs (``Growth``, drawn after the refusal: see ``with_growth``): in a
schedule whose source sets a short discovery interval, its last run, once it read and checkpointed what was written
before it, has partitions added to a topic and written to; its enumerator's periodic discovery must find them and
the job read them from their first record (DISC-009, DISC-005) before its stop, which waits for them.

After the life, a fresh bounded job reads the input again (``Reader``, drawn after the refusal: see
``with_reader``): first one to three transactions, each committed or aborted, write to partitions of the input (every
partition one touches then ends in a control marker, KAFKA-003); then a new job on the same subscription starts at
the earliest offsets and stops at the latest ones (``setBounded(latest)``) or at given ones (the ends after the
first transaction, ``OffsetsInitializer.offsets``), its ``isolation.level`` read_committed or left unset
(read_uncommitted). It must read every record its isolation shows below the stopping offsets once, nothing else, and
end (RESTORE-010), and its sink must hold what it read (COMMIT-011): at least once, or exactly once in order for an
exactly-once sink; a sink with no guarantee (NONE) is not judged. A fresh job, not a restored run: a restored split
keeps the stopping offset it was checkpointed with (none, for the life's unbounded splits). The reader runs in
STREAMING or BATCH mode (``with_backfill``): BATCH is how backfills run Flink's Kafka connector (every source bounded,
no checkpoint: the sink's writer finishes and hands its committables to its committer at the end of its input).

Left out on purpose: a start from group offsets without a fallback on a group that holds none (a refusal,
RESTORE-018's scenario). A failure under a start at LATEST, which cannot be sure to happen (``failure_sure``). A
group start or a failure in a schedule that starts with no topic (nothing to hold, nothing surely read).
"""

from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from typing import Any, Final, Literal

from hypothesis import strategies as st

from .job_options import NAMING, Failure

StepKind = Literal["write", "add-partitions", "create-topic"]
Moment = Literal["start", "listed"]
"""When a run that stops at once takes its savepoint (``RunPlan.moment``)."""
Start = Literal["earliest", "latest", "group"]
RuntimeMode = Literal["STREAMING", "BATCH"]
"""The bounded reader's ``execution.runtime-mode`` (``Reader.mode``)."""
Guarantee = Literal["none", "at-least-once", "exactly-once"]
"""The bounded reader's sink's ``DeliveryGuarantee`` (``Reader.guarantee``)."""
Fallback = Literal["earliest", "latest"]
Cell = tuple[int, int]
"""(topic index, partition)."""

MAX_TOPICS: Final = 3
"""Topics a schedule starts with."""
MAX_PARTITIONS: Final = 4
"""Partitions of a topic when the schedule starts (or is created); an operator may add up to ``MAX_ADDED`` more."""
MAX_ADDED: Final = 2
MAX_GROWN: Final = MAX_PARTITIONS + MAX_ADDED
"""The most partitions a topic reaches."""
MAX_PARALLELISM: Final = 4
MAX_RUNS: Final = 4
MAX_WRITE: Final = 30
"""Records of one write step: a run reads a few hundred at most (two cores; the harness paces reads)."""
MAX_FAIL_AFTER: Final = 10
"""A failure comes after at most this many records of its subtask: each run with a failure writes more than that
to every partition the schedule started with, so the failing subtask surely reads past it (see ``failure_sure``)."""
MAX_STOP_AFTER: Final = 60
CHECKPOINT_MS: Final = (100, 200, 500)
MAX_SINKS: Final = 3
"""Sinks of one job: each writes every record the job reads into a topic of its own."""
DISCOVERY_MS: Final = (None, 1000)
"""``partition.discovery.interval.ms``: the release's own (unset, as most jobs leave it) or a short one. What a
schedule adds, it adds while no job runs, and a job finds it at its enumerator's first discovery, which it does
at start whether periodic discovery is on or off."""
"""Checkpoint intervals drawn: a run of a few seconds spans several checkpoints at each."""
MAX_REFUSED: Final = 3
"""Records written one at a time while the broker refuses a sink's writes."""
REFUSAL_ODDS: Final = 1
"""One in this many schedules that may meet a refusal (``with_refusal``) do."""
MAX_TRANSACTIONS: Final = 3
"""Transactions written before the bounded reader."""
MAX_TRANSACTION_WRITE: Final = 10
"""Records of one transaction to each partition it writes."""
GROWTH_ODDS: Final = 1
"""One in this many schedules that may have partitions added while their last run runs (``with_growth``) do."""
READER_ODDS: Final = 1
"""One in this many schedules has a bounded reader after its life (``with_reader``)."""
EMPTY_ODDS: Final = 2
"""One in this many schedules that may start with no topic (by pattern, not from a group, three runs or more) do."""


@dataclass(frozen=True, slots=True)
class Step:
    """What an operator does while no job runs: ``write`` ``count`` records to partition ``partition`` of topic
    ``topic``; ``add-partitions``: ``count`` more partitions to topic ``topic``; ``create-topic``: topic ``topic``
    (the next index), of ``count`` partitions, which the source's pattern matches."""

    kind: StepKind
    topic: int
    partition: int = 0
    count: int = 0

    def text(self) -> str:
        if self.kind == "write":
            return f"write {self.count} to t{self.topic}[{self.partition}]"
        if self.kind == "add-partitions":
            return f"add {self.count} partition{'s' * (self.count > 1)} to t{self.topic}"
        return f"create t{self.topic} ({self.count} partition{'s' * (self.count > 1)}, matching the pattern)"


@dataclass(frozen=True, slots=True)
class Refusal:
    """A fault inside a run: once the run's job read what was written before it and a checkpoint holding that
    completed (the job idle, no write of its sinks in flight), the broker refuses every write to sink ``sink``'s
    topic while one record is written to each of ``cells`` in turn (a starting partition), each until a checkpoint
    holding its read completed or the job restarted; then the broker takes writes again and ``after`` more
    records are written to each partition of ``cells``. The run's stop waits for those: it cannot come while the
    broker refuses."""

    sink: int
    cells: tuple[Cell, ...]
    after: int

    def text(self) -> str:
        where = ", ".join(f"t{t}[{p}]" for t, p in self.cells)
        return (
            f"the broker refuses sink {self.sink}'s writes while {len(self.cells)} record"
            f"{'s are' if len(self.cells) > 1 else ' is'} written ({where}), then {self.after} more to each"
        )

    def written(self) -> dict[Cell, int]:
        """Records the fault writes to each partition while the run's job runs (refused ones and those after)."""
        found: dict[Cell, int] = {}
        for cell in self.cells:
            found[cell] = found.get(cell, 0) + 1
        return {cell: n + self.after for cell, n in found.items()}


@dataclass(frozen=True, slots=True)
class Growth:
    """Partitions added while a run's job runs: once it read what was written before it and a checkpoint holding
    that completed, ``count`` partitions are added to topic ``topic`` and ``records`` records written to each; the
    job's periodic discovery must find them. The run's stop waits for them."""

    topic: int
    count: int
    records: int

    def text(self) -> str:
        return (
            f"{self.count} partition{'s' * (self.count > 1)} added to t{self.topic} while the job runs, "
            f"{self.records} records written to each"
        )


@dataclass(frozen=True, slots=True)
class Transaction:
    """``count`` records written to each of ``cells`` in one transaction, then committed or aborted."""

    cells: tuple[Cell, ...]
    count: int
    commit: bool

    def text(self) -> str:
        where = ", ".join(f"t{t}[{p}]" for t, p in self.cells)
        return f"{self.count} to each of {where}, {'committed' if self.commit else 'aborted'}"


@dataclass(frozen=True, slots=True)
class Reader:
    """A fresh bounded job after the life: once ``transactions`` are written (in order, each committed or aborted),
    a new job on the schedule's subscription reads from the earliest offsets to its stopping offsets (``latest``:
    ``setBounded(OffsetsInitializer.latest())``, each partition's end at its start; ``offsets``: each partition's
    end after the first transaction, ``OffsetsInitializer.offsets``) at ``parallelism``, with ``isolation.level``
    read_committed or not set (``None``: the consumer's read_uncommitted), into an at-least-once sink of its own."""

    transactions: tuple[Transaction, ...]
    parallelism: int
    isolation: Literal["read_committed"] | None
    stop: Literal["latest", "offsets"]
    mode: RuntimeMode = "STREAMING"
    """The job's runtime mode (``with_backfill``): ``BATCH`` is a backfill, every source bounded, no checkpoint
    (nothing restores it: the job is fresh and has no savepoint, so no ``moment`` applies), its sink's writer
    finishing before its committer commits."""
    guarantee: Guarantee = "at-least-once"
    """Its sink's delivery guarantee (``with_backfill``); ``exactly-once`` under a transactional-id prefix of its own.
    ``none`` promises nothing of the output: its sink is not judged."""

    def text(self) -> str:
        isolation = self.isolation or "isolation.level not set"
        stop = "the latest offsets" if self.stop == "latest" else "the ends after the first transaction"
        txns = "; ".join(t.text() for t in self.transactions)
        return (
            f"then transactions ({txns}); a fresh bounded job from the earliest offsets to {stop}, "
            f"parallelism {self.parallelism}, {isolation}, in {self.mode} mode, its sink {self.guarantee}"
        )


@dataclass(frozen=True, slots=True)
class RunPlan:
    """One run: the operator's steps before it, its parallelism, its failure and its stop."""

    parallelism: int
    steps: tuple[Step, ...] = ()
    failure: Failure | None = None
    stop_after: int | None = None
    """Stop with a savepoint after this many reads of the run (replays counted; at most what is left to read, the
    runner's clamp); ``0``: at once, as soon as Flink takes a savepoint after the job's start; ``None``: once it
    read to the end of what was written."""
    refusal: Refusal | None = None
    """A fault while the job runs (a run that reads to the end, with no failure of its own)."""
    growth: Growth | None = None
    """Partitions added while the job runs (the last run, with no failure and no refusal)."""
    moment: Moment = "start"
    """When a run that stops at once takes its savepoint: ``start``, as soon as Flink takes one after the job's
    start; ``listed``, once its enumerator listed the subscription, the answer to its first ListOffsets request held
    back until the savepoint is written (the first run under a plain start at LATEST, ``with_moment``)."""

    def text(self) -> str:
        steps = ", ".join(s.text() for s in self.steps) or "no operator step"
        failure = (
            "no failure"
            if self.failure is None
            else f"subtask {self.failure.subtask} fails after {self.failure.after_records} records "
            f"(at {self.failure.at})"
        )
        stop = (
            "read to the end"
            if self.stop_after is None
            else "stop at once"
            if self.stop_after == 0
            else f"stop after {self.stop_after} records"
        )
        if self.moment == "listed":
            stop = (
                "stop once the enumerator listed the subscription, the answer to its first ListOffsets request held "
                "until the savepoint is written"
            )
        fault = "" if self.refusal is None else f"; {self.refusal.text()}"
        fault += "" if self.growth is None else f"; {self.growth.text()}"
        return f"{steps}; parallelism {self.parallelism}, {failure}{fault}; {stop}"


@dataclass(frozen=True, slots=True)
class SinkPlan:
    """One further ``KafkaSink`` of the job: its guarantee and whether the job sets its transactional-id prefix (its
    own); an exactly-once sink always has one."""

    exactly_once: bool
    prefixed: bool = True

    def text(self) -> str:
        guarantee = "exactly-once" if self.exactly_once else "at-least-once"
        return f"{guarantee} ({'own prefix' if self.prefixed else 'no prefix set'})"


@dataclass(frozen=True, slots=True)
class Held:
    """An offset the start's consumer group holds, committed before the first run."""

    topic: int
    partition: int
    offset: int


@dataclass(frozen=True, slots=True)
class FlinkSchedule:
    partitions: tuple[int, ...]
    """Partitions of each topic created before the first run."""
    pattern: bool
    """Subscribe by a pattern every topic of the schedule matches (else by the list of the starting topics)."""
    start: Start
    fallback: Fallback | None
    """The group start's fallback for a partition the group holds no offset for; ``None`` for another start."""
    held: tuple[Held, ...]
    exactly_once: bool
    naming: str
    """The sink's ``TransactionNamingStrategy``: used where the release has one (connector 4.0 on)."""
    checkpoint_ms: int
    runs: tuple[RunPlan, ...]
    discovery_ms: int | None = None
    """The source's ``partition.discovery.interval.ms``; ``None``: not set (the release's default)."""
    prefixed: bool = True
    """Whether the job sets the first sink's transactional-id prefix (always, for an exactly-once sink)."""
    more_sinks: tuple[SinkPlan, ...] = ()
    """Further sinks of the job, each writing every record it reads into a topic of its own."""
    reader: Reader | None = None
    """A fresh bounded job after the life, on transactions written after it (``with_reader``)."""

    @property
    def sinks(self) -> tuple[SinkPlan, ...]:
        """Every sink of the job, the first (``exactly_once``, ``prefixed``, ``naming``) first."""
        return (SinkPlan(self.exactly_once, self.prefixed), *self.more_sinks)

    def __post_init__(self) -> None:
        problem = self.problem()
        if problem:
            raise ValueError(f"not a Flink schedule: {problem}")

    @property
    def empty_at_start(self) -> bool:
        """Whether the subscription (a pattern) matches no topic when the job starts: every topic is created later."""
        return not self.partitions

    def problem(self) -> str | None:
        """What makes this no schedule the runner can carry out, or ``None``."""
        if len(self.partitions) > MAX_TOPICS or not all(1 <= n <= MAX_PARTITIONS for n in self.partitions):
            return f"topics {self.partitions}: 0 to {MAX_TOPICS} topics of 1 to {MAX_PARTITIONS} partitions"
        if not 2 <= len(self.runs) <= MAX_RUNS:
            return f"{len(self.runs)} runs: 2 to {MAX_RUNS}"
        if self.empty_at_start and not self.pattern:
            return "no topic at start: only a pattern subscription finds the topics created later"
        if self.empty_at_start and (self.start == "group" or len(self.runs) < 3):
            return "no topic at start: no group start (nothing to hold), and three runs or more"
        if self.empty_at_start and any(run.failure is not None for run in self.runs):
            return "no topic at start: no failure (none is sure to happen)"
        if self.runs[-1].stop_after is not None:
            return "the last run reads to the end"
        if self.naming not in NAMING or self.checkpoint_ms <= 0:
            return f"naming {self.naming!r}, checkpoint interval {self.checkpoint_ms}"
        if len(self.sinks) > MAX_SINKS or any(s.exactly_once and not s.prefixed for s in self.sinks):
            return f"sinks {[s.text() for s in self.sinks]}: 1 to {MAX_SINKS}, every exactly-once one prefixed"
        if (self.start == "group") != (self.fallback is not None):
            return f"start {self.start!r} with fallback {self.fallback!r}: a group start has a fallback, no other"
        layout = list(self.partitions)
        for k, run in enumerate(self.runs):
            if not 1 <= run.parallelism <= MAX_PARALLELISM:
                return f"run {k + 1}: parallelism {run.parallelism}"
            if run.failure is not None and not (0 <= run.failure.subtask < run.parallelism):
                return f"run {k + 1}: failure of subtask {run.failure.subtask} at parallelism {run.parallelism}"
            if run.failure is not None and run.failure.after_records < 0:
                return f"run {k + 1}: failure after {run.failure.after_records} records"
            if run.stop_after is not None and run.stop_after < 0:
                return f"run {k + 1}: stop after {run.stop_after} records"
            for step in run.steps:
                wrong = _step_problem(step, layout, first=k == 0, pattern=self.pattern)
                if wrong:
                    return f"run {k + 1}: {step.text()}: {wrong}"
                _apply(step, layout)
            if run.refusal is not None and (wrong := self._refusal_problem(run)):
                return f"run {k + 1}: {run.refusal.text()}: {wrong}"
        if self.start != "group" and self.held:
            return f"offsets held for a start at the {self.start} offsets"
        before = self.written(0)
        for h in self.held:
            if not 1 <= h.offset < before.get((h.topic, h.partition), 0):
                return f"t{h.topic}[{h.partition}] held at {h.offset}: not between its first record and its end"
        if self.start == "group" and not self.held:
            return "a group start holds an offset the first run reads from"
        if len({(h.topic, h.partition) for h in self.held}) != len(self.held):
            return "an offset held twice"
        if (wrong := self._growth_problem()) is not None:
            return wrong
        if (wrong := self._moment_problem()) is not None:
            return wrong
        if self.reader is not None and (wrong := self._reader_problem(self.reader)):
            return f"the bounded reader: {wrong}"
        return None

    def _growth_problem(self) -> str | None:
        grown = [k for k, run in enumerate(self.runs) if run.growth is not None]
        if not grown:
            return None
        last = self.runs[-1]
        if grown != [len(self.runs) - 1] or last.failure is not None or last.refusal is not None:
            return "partitions added while a job runs: in the last run alone, with no failure and no refusal"
        if self.discovery_ms is None or self.resolves_late or self.empty_at_start:
            return (
                "partitions added while a job runs: only with a short discovery interval set, not under a start at "
                "LATEST, and with a topic at start"
            )
        growth = last.growth
        assert growth is not None
        before = self.layout(len(self.runs) - 1)
        if not 0 <= growth.topic < len(before) or growth.count < 1 or before[growth.topic] + growth.count > MAX_GROWN:
            return f"{growth.text()}: no such topic, or past {MAX_GROWN} partitions"
        if not 1 <= growth.records <= MAX_WRITE:
            return f"{growth.text()}: 1 to {MAX_WRITE} records each"
        return None

    def _moment_problem(self) -> str | None:
        for k, run in enumerate(self.runs):
            if run.moment not in ("start", "listed"):
                return f"run {k + 1}: moment {run.moment!r}"
            if run.moment == "listed" and (
                k != 0 or self.start != "latest" or self.empty_at_start or run.stop_after is None
                or run.failure is not None
            ):  # fmt: skip
                return (
                    f"run {k + 1}: a savepoint once the enumerator listed: the first run alone, stopped (it has "
                    "nothing to read), under a plain start at LATEST with a topic at start"
                )
        return None

    def _reader_problem(self, reader: Reader) -> str | None:
        cells = {(t, p) for t, n in enumerate(self.layout(len(self.runs))) for p in range(n)}
        if not 1 <= len(reader.transactions) <= MAX_TRANSACTIONS:
            return f"{len(reader.transactions)} transactions: 1 to {MAX_TRANSACTIONS}"
        for txn in reader.transactions:
            if not txn.cells or not set(txn.cells) <= cells or len(set(txn.cells)) != len(txn.cells):
                return f"transaction {txn.text()}: distinct partitions of the input"
            if not 1 <= txn.count <= MAX_TRANSACTION_WRITE:
                return f"transaction {txn.text()}: 1 to {MAX_TRANSACTION_WRITE} records each"
        if not 1 <= reader.parallelism <= MAX_PARALLELISM:
            return f"parallelism {reader.parallelism}"
        if reader.isolation not in (None, "read_committed") or reader.stop not in ("latest", "offsets"):
            return f"isolation {reader.isolation!r}, stop {reader.stop!r}"
        if reader.mode not in ("STREAMING", "BATCH") or reader.guarantee not in GUARANTEES:
            return f"mode {reader.mode!r}, guarantee {reader.guarantee!r}"
        return None

    def _refusal_problem(self, run: RunPlan) -> str | None:
        refusal = run.refusal
        assert refusal is not None
        if self.resolves_late or self.empty_at_start:
            return "not under a start at LATEST nor with no topic at start (what is written meanwhile must be read)"
        if run.stop_after is not None or run.failure is not None:
            return "only in a run that reads to the end and has no failure of its own"
        if not 0 <= refusal.sink < len(self.sinks) or self.sinks[refusal.sink].exactly_once:
            return "no such sink, or not at-least-once"
        initial = {(t, p) for t, n in enumerate(self.partitions) for p in range(n)}
        if not 1 <= len(refusal.cells) <= MAX_REFUSED or not set(refusal.cells) <= initial:
            return f"1 to {MAX_REFUSED} records, each to a partition the job started with"
        if not 1 <= refusal.after <= MAX_WRITE:
            return f"1 to {MAX_WRITE} records after"
        return None

    def refusals(self) -> list[tuple[int, Refusal]]:
        """The runs (0-based) with a refusal, and theirs."""
        return [(k, run.refusal) for k, run in enumerate(self.runs) if run.refusal is not None]

    @property
    def resolves_late(self) -> bool:
        """Whether a partition's start depends on when the first discovery was done: a LATEST applies somewhere."""
        return self.start == "latest" or self.fallback == "latest"

    def first_discoveries(self) -> range:
        """The runs (0-based) whose enumerator may have done the job's first discovery: any, under a LATEST (a run
        stopped before its discovery leaves it to the next), else the first alone (where it is done changes no
        start). With no topic at start, the first: it stops once its enumerator listed the subscription (the runner
        holds it to that, ``empty_at_start``), so the first discovery found nothing."""
        return range(len(self.runs) if self.resolves_late and not self.empty_at_start else 1)

    def layout(self, run: int) -> list[int]:
        """Partitions of each topic when run ``run`` (0-based) starts: after its operator steps (and the partitions
        added while the runs before it ran); ``len(runs)``: at the end of the life."""
        layout = list(self.partitions)
        for k, plan in enumerate(self.runs[: run + 1]):
            for step in plan.steps:
                _apply(step, layout)
            if k < run and plan.growth is not None:
                layout[plan.growth.topic] += plan.growth.count
        return layout

    def written(self, run: int) -> dict[Cell, int]:
        """Records written to each partition once run ``run``'s steps are done."""
        found: dict[Cell, int] = {}
        for plan in self.runs[: run + 1]:
            for step in plan.steps:
                if step.kind == "write":
                    found[(step.topic, step.partition)] = found.get((step.topic, step.partition), 0) + step.count
        return found

    def starting(self, first: int = 0) -> set[Cell]:
        """The partitions there are when run ``first`` starts, the one whose enumerator did the first discovery:
        where the start's rule applies (DISC-005)."""
        return {(t, p) for t, n in enumerate(self.layout(first)) for p in range(n)}

    def added(self, first: int = 0) -> dict[Cell, bool]:
        """Partitions that came into being after run ``first`` (the first discovery's) started -> whether of a
        topic created then (found by the pattern, DISC-002) rather than added to a topic the job already knew
        (DISC-009)."""
        known = self.layout(first)
        last = self.layout(len(self.runs))
        return {
            (t, p): t >= len(known) for t, n in enumerate(last) for p in range(known[t] if t < len(known) else 0, n)
        }

    def starts(self, first: int = 0) -> dict[Cell, int]:
        """Where the job must start each partition when run ``first`` did its first discovery: the group's held
        offset, else the start's (or its fallback's) earliest (0) or latest (the partition's end when run ``first``
        starts: its steps are done, and nothing is written while it runs); every partition added after at 0."""
        held = {(h.topic, h.partition): h.offset for h in self.held}
        before = self.written(first)
        found: dict[Cell, int] = {}
        for cell in self.starting(first):
            if cell in held:
                found[cell] = held[cell]
            elif self.resolves_late:
                found[cell] = before.get(cell, 0)
            else:
                found[cell] = 0
        return found | dict.fromkeys(self.added(first), 0)

    def to_json(self) -> dict[str, Any]:
        """Its fields; ``reader`` only when there is one, so a schedule without one keeps the JSON it had before the
        reader existed (``with_refusal`` and ``with_reader`` are seeded with it)."""
        found = asdict(self)
        if self.reader is None:
            del found["reader"]
        else:  # a reader at the defaults keeps the JSON it had before the mode and the guarantee were drawn
            if self.reader.mode == "STREAMING":
                del found["reader"]["mode"]
            if self.reader.guarantee == "at-least-once":
                del found["reader"]["guarantee"]
        for run in found["runs"]:  # likewise a run without partitions added while it runs, or at today's moment
            if run["growth"] is None:
                del run["growth"]
            if run["moment"] == "start":
                del run["moment"]
        return found

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> FlinkSchedule:
        return cls(
            tuple(data["partitions"]),
            data["pattern"],
            data["start"],
            data["fallback"],
            tuple(Held(**h) for h in data["held"]),
            data["exactly_once"],
            data["naming"],
            data["checkpoint_ms"],
            tuple(
                RunPlan(
                    r["parallelism"],
                    tuple(Step(**s) for s in r["steps"]),
                    None if r["failure"] is None else Failure(**r["failure"]),
                    r["stop_after"],
                    None
                    if r.get("refusal") is None
                    else Refusal(
                        r["refusal"]["sink"], tuple((t, p) for t, p in r["refusal"]["cells"]), r["refusal"]["after"]
                    ),
                    None if r.get("growth") is None else Growth(**r["growth"]),
                    r.get("moment", "start"),
                )
                for r in data["runs"]
            ),
            data.get("discovery_ms"),
            data.get("prefixed", True),
            tuple(SinkPlan(**sink) for sink in data.get("more_sinks", ())),
            None
            if data.get("reader") is None
            else Reader(
                tuple(
                    Transaction(tuple((t, p) for t, p in txn["cells"]), txn["count"], txn["commit"])
                    for txn in data["reader"]["transactions"]
                ),
                data["reader"]["parallelism"],
                data["reader"]["isolation"],
                data["reader"]["stop"],
                data["reader"].get("mode", "STREAMING"),
                data["reader"].get("guarantee", "at-least-once"),
            ),
        )

    def dumps(self) -> str:
        return json.dumps(self.to_json(), sort_keys=True)

    @classmethod
    def loads(cls, text: str) -> FlinkSchedule:
        return cls.from_json(json.loads(text))

    def counts(self) -> dict[str, int]:
        """What the schedule draws, for the report's coverage: ``runs``, ``failure:<at>``, ``operator:<kind>``,
        ``parallelism:<n>``, ``start:<start>``, ``guarantee:<guarantee>`` and ``prefix:<set or not>`` (each sink),
        ``sinks:<n>``, ``subscription:<how>``, ``discovery:<how>``, and the bounded reader's ``reader:<stop, isolation,
        runtime mode, mode and sink guarantee, each transaction's outcome>``."""
        found: dict[str, int] = {"runs": len(self.runs)}

        def add(key: str) -> None:
            found[key] = found.get(key, 0) + 1

        for run in self.runs:
            add(f"parallelism:{run.parallelism}")
            if run.failure is not None:
                add(f"failure:{run.failure.at}")
            for step in run.steps:
                add(f"operator:{step.kind}")
            stop = "to the end" if run.stop_after is None else "at once" if run.stop_after == 0 else "after records"
            add(f"stop:{stop}" if run.moment == "start" else "stop:once listed, ListOffsets held")
            if run.growth is not None:
                add("operator:add-partitions while running")
            if run.refusal is not None:
                add("fault:writes refused")
                found["fault:records refused"] = found.get("fault:records refused", 0) + len(run.refusal.cells)
        add("start:" + (self.start if self.start != "group" else f"group, fallback {self.fallback}"))
        for sink in self.sinks:
            add("guarantee:" + ("exactly-once" if sink.exactly_once else "at-least-once"))
            add("prefix:" + ("set" if sink.prefixed else "unset"))
        add(f"sinks:{len(self.sinks)}")
        add("subscription:" + ("pattern" if self.pattern else "list") + (", empty at start" * self.empty_at_start))
        add("discovery:" + ("the release's" if self.discovery_ms is None else f"{self.discovery_ms} ms"))
        if self.reader is not None:
            add(f"reader:stop at {self.reader.stop}")
            add(f"reader:{self.reader.isolation or 'isolation unset'}")
            add(f"reader:{self.reader.mode}")
            add(f"reader:{self.reader.mode} sink {self.reader.guarantee}")
            for txn in self.reader.transactions:
                add("reader:transaction " + ("committed" if txn.commit else "aborted"))
        return found


def _step_problem(step: Step, layout: list[int], first: bool, pattern: bool) -> str | None:
    if step.kind == "write":
        if not (0 <= step.topic < len(layout) and 0 <= step.partition < layout[step.topic]) or step.count < 1:
            return "no such partition, or no record"
    elif first:
        return "the first run's start decides where its partitions start: add and create after it"
    elif step.kind == "add-partitions":
        if not 0 <= step.topic < len(layout) or step.count < 1 or layout[step.topic] + step.count > MAX_GROWN:
            return f"no such topic, or past {MAX_GROWN} partitions"
    elif step.kind == "create-topic":
        if not pattern:
            return "a topic created for a list subscription is never read"
        if step.topic != len(layout) or not 1 <= step.count <= MAX_PARTITIONS:
            return f"topic t{step.topic} is not the next one, or of no partition"
    else:
        return f"unknown step {step.kind!r}"
    return None


def _apply(step: Step, layout: list[int]) -> None:
    if step.kind == "add-partitions":
        layout[step.topic] += step.count
    elif step.kind == "create-topic":
        layout.append(step.count)


def failure_sure(schedule: FlinkSchedule, run: int) -> bool:
    """Whether run ``run``'s failure surely happens: its subtask surely reads past ``after_records`` in its first
    attempt. So when every run up to it has a parallelism no wider than the widest starting topic (Flink's
    enumerator spreads a topic's partitions over consecutive subtasks, and a restore spreads the splits of the
    state evenly over the new subtasks: each subtask owns a starting partition), the run reads to the end, and
    its steps wrote more than ``after_records`` to every starting partition that its start does not skip."""
    plan = schedule.runs[run]
    if plan.failure is None:
        return True
    if schedule.empty_at_start:
        return False
    widest = max(schedule.partitions)
    if any(r.parallelism > widest for r in schedule.runs[: run + 1]) or plan.stop_after is not None:
        return False
    if schedule.start == "latest" or (run == 0 and schedule.start != "earliest"):
        # a group start skips some of what was written: which subtask reads what is not sure; a start at LATEST
        # may be resolved at this run's own discovery, after its writes, which it then does not read
        return False
    wrote: dict[Cell, int] = {}
    for step in plan.steps:
        if step.kind == "write":
            wrote[(step.topic, step.partition)] = wrote.get((step.topic, step.partition), 0) + step.count
    initial = {(t, p) for t, n in enumerate(schedule.partitions) for p in range(n)}
    return all(wrote.get(cell, 0) > plan.failure.after_records for cell in initial)


def stop_first(schedule: FlinkSchedule, run: int, read: Sequence[bool]) -> int:
    """The run whose first discovery the runner plans run ``run``'s stop by, given which runs before it read
    anything (``read``). Where the start does not depend on it, and for the last run, the first (the starts that
    leave the most to read: the last run reads to the end of whatever the start left); for another run, the latest
    still open (the first run that read, else this one). Until a run read, nothing shows where LATEST was resolved,
    so such a run has nothing sure to read and stops at once: its savepoint right after its start, before, during
    or after its own first discovery. A run that reads less than its stop expects stops at its bound."""
    if not schedule.resolves_late or schedule.empty_at_start or run == len(schedule.runs) - 1:
        return 0
    return next((k for k, did in enumerate(read[:run]) if did), run)


def describe(schedule: FlinkSchedule) -> str:
    """The schedule as a reader follows it: one line for the job, one per run."""
    topics = ", ".join(f"t{i} ({n} partition{'s' * (n > 1)})" for i, n in enumerate(schedule.partitions))
    topics = topics or "none at start"
    how = "by pattern" if schedule.pattern else "by list"
    if schedule.start != "group":
        start = f"{schedule.start} offsets"
    else:
        held = ", ".join(f"t{h.topic}[{h.partition}]@{h.offset}" for h in schedule.held)
        start = f"group offsets ({held}; fallback {schedule.fallback})"
    sink = "exactly-once" if schedule.exactly_once else "at-least-once"
    sink += "" if schedule.prefixed else " (no prefix set)"
    more = "".join(f", then {plan.text()}" for plan in schedule.more_sinks)
    lines = [
        f"topics {topics} {how}; start at {start}; sink {sink}{more} (naming {schedule.naming} where the release "
        "has it); "
        f"checkpoint every {schedule.checkpoint_ms} ms; discovery "
        + ("as the release sets it" if schedule.discovery_ms is None else f"every {schedule.discovery_ms} ms")
    ]
    lines += [f"run {k}: {run.text()}" for k, run in enumerate(schedule.runs, 1)]
    if schedule.reader is not None:
        lines.append(schedule.reader.text())
    if schedule.empty_at_start:
        lines[1] = lines[1].replace("stop at once", "stop once the enumerator listed the subscription")
    return "\n".join(lines)


def _writes(layout: list[int], cells: list[Cell] | None = None) -> st.SearchStrategy[list[Step]]:
    """A few writes to partitions of ``layout`` (or of ``cells``)."""
    where = cells or [(t, p) for t, n in enumerate(layout) for p in range(n)]
    write = st.builds(
        lambda cell, count: Step("write", cell[0], cell[1], count),
        st.sampled_from(where),
        st.integers(1, MAX_WRITE),
    )
    return st.lists(write, max_size=4)


@st.composite
def _operator_steps(draw: st.DrawFn, layout: list[int], pattern: bool) -> list[Step]:
    """Up to two partition additions or (subscribed by pattern) topic creations, applied to ``layout``, each
    followed by records written to every partition it made: a partition found later is judged by its records
    (DISC-005: read from its first; DISC-009, DISC-002: found at all), and one with none gives nothing to judge."""
    steps: list[Step] = []
    for _ in range(draw(st.integers(0, 2))):
        growable = [t for t, n in enumerate(layout) if n < MAX_GROWN]
        kinds = (["add-partitions"] if growable else []) + (["create-topic"] if pattern else [])
        if not kinds:
            break
        if draw(st.sampled_from(kinds)) == "add-partitions":
            topic = draw(st.sampled_from(growable))
            step = Step("add-partitions", topic, count=draw(st.integers(1, MAX_GROWN - layout[topic])))
        else:
            step = Step("create-topic", len(layout), count=draw(st.integers(1, MAX_PARTITIONS)))
        before = layout[step.topic] if step.kind == "add-partitions" else 0
        _apply(step, layout)
        made = range(before, layout[step.topic])
        steps.append(step)
        steps += [Step("write", step.topic, p, draw(st.integers(1, MAX_WRITE))) for p in made]
    return steps


def _sink_plans() -> st.SearchStrategy[SinkPlan]:
    """A further sink: exactly-once under its own prefix, or at-least-once with its own prefix or none set."""
    return st.one_of(st.just(SinkPlan(True)), st.builds(SinkPlan, st.just(False), st.booleans()))


@st.composite
def flink_schedules(draw: st.DrawFn) -> FlinkSchedule:
    """Schedules whose every drawn failure surely happens (``failure_sure``) and whose group start, if any, holds
    an offset below what the first run finds written."""
    partitions = tuple(draw(st.lists(st.integers(1, MAX_PARTITIONS), min_size=1, max_size=MAX_TOPICS)))
    pattern = draw(st.booleans())
    start: Start = draw(st.sampled_from(("earliest", "latest", "group")))
    fallback: Fallback | None = draw(st.sampled_from(("earliest", "latest"))) if start == "group" else None
    parallelisms = draw(st.lists(st.integers(1, MAX_PARALLELISM), min_size=2, max_size=MAX_RUNS))
    widest = max(partitions)
    initial = [(t, p) for t, n in enumerate(partitions) for p in range(n)]
    layout = list(partitions)
    runs: list[RunPlan] = []
    for k, parallelism in enumerate(parallelisms):
        last = k == len(parallelisms) - 1
        steps = [] if k == 0 else draw(_operator_steps(layout, pattern))
        steps += draw(_writes(layout))
        failure = None
        can_fail = (
            all(p <= widest for p in parallelisms[: k + 1]) and (k > 0 or start == "earliest") and start != "latest"
        )
        if can_fail and draw(st.booleans()):
            failure = Failure(
                draw(st.integers(0, parallelism - 1)),
                draw(st.integers(0, MAX_FAIL_AFTER)),
                draw(st.sampled_from(("record", "checkpoint"))),
            )
            more = st.integers(failure.after_records + 1, failure.after_records + MAX_WRITE)
            steps += [Step("write", t, p, draw(more)) for t, p in initial]
        if k == 0 and start == "group":
            steps.append(Step("write", 0, 0, draw(st.integers(2, MAX_WRITE))))  # an offset to hold below its end
        stop = None
        if not last and failure is None and draw(st.booleans()):
            stop = 0 if draw(st.booleans()) else draw(st.integers(1, MAX_STOP_AFTER))  # 0: at once
        runs.append(RunPlan(parallelism, tuple(steps), failure, stop))
    exactly_once = draw(st.booleans())
    prefixed = exactly_once or draw(st.booleans())
    more_sinks = draw(st.lists(_sink_plans(), max_size=MAX_SINKS - 1))
    held: list[Held] = []
    if start == "group":
        before: dict[Cell, int] = {}
        for step in runs[0].steps:
            before[(step.topic, step.partition)] = before.get((step.topic, step.partition), 0) + step.count
        holdable = sorted(cell for cell, n in before.items() if n >= 2)
        cells = draw(st.lists(st.sampled_from(holdable), min_size=1, max_size=len(holdable), unique=True))
        held = [Held(t, p, draw(st.integers(1, before[(t, p)] - 1))) for t, p in sorted(cells)]
    schedule = FlinkSchedule(
        partitions,
        pattern,
        start,
        fallback,
        tuple(held),
        exactly_once,
        draw(st.sampled_from(NAMING)),
        draw(st.sampled_from(CHECKPOINT_MS)),
        tuple(runs),
        draw(st.sampled_from(DISCOVERY_MS)),
        prefixed,
        tuple(more_sinks),
    )
    # Drawn last, so that what comes before draws as it did before this choice existed (a seed's other schedules
    # stay what they were).
    if pattern and start != "group" and len(runs) >= 3 and draw(st.integers(0, EMPTY_ODDS - 1)) == 0:
        emptied = emptied_at_start(schedule)
        cells = [(t, p) for t, n in enumerate(emptied.layout(1)) for p in range(n)]
        return with_reader(written_again(emptied, {cell: draw(st.integers(1, MAX_WRITE)) for cell in cells}))
    return with_reader(with_growth(with_refusal(with_moment(schedule))))


def with_refusal(schedule: FlinkSchedule) -> FlinkSchedule:
    """``schedule``, in one of ``REFUSAL_ODDS`` of those that may have one, with a ``Refusal`` in one of its runs
    that read to the end with no failure: of one of its at-least-once sinks, while one to ``MAX_REFUSED`` records
    are written to partitions it started with. Not under a start at LATEST (plain or a fallback) nor with no topic
    at start: a record written while the job runs must surely be read, whenever its first discovery was.

    Drawn from the schedule itself (a generator seeded with its JSON), not from Hypothesis's choices: a choice more
    at the end of a schedule moves every later schedule of a seed (one more ``draw`` there changes seed 1's fourth
    schedule on, 2026-11-30), and the bank's entries and ``make test`` rest on a seed's early schedules. So a seed
    draws the schedules it drew before, some now with a refusal; a schedule's JSON replays it with its refusal.
    The seed is the JSON: a field added to ``FlinkSchedule`` or ``RunPlan`` changes it and so moves every refusal,
    unless a schedule without the new choice keeps its JSON (leave the field out of ``to_json`` at its default)."""
    sinks = [k for k, sink in enumerate(schedule.sinks) if not sink.exactly_once]
    runs = [k for k, run in enumerate(schedule.runs) if run.stop_after is None and run.failure is None]
    if schedule.resolves_late or schedule.empty_at_start or not sinks or not runs:
        return schedule
    rng = random.Random(hashlib.sha256(schedule.dumps().encode()).digest())
    if rng.randrange(REFUSAL_ODDS) != 0:
        return schedule
    initial = [(t, p) for t, n in enumerate(schedule.partitions) for p in range(n)]
    refusal = Refusal(
        rng.choice(sinks),
        tuple(rng.choice(initial) for _ in range(rng.randint(1, MAX_REFUSED))),
        rng.randint(1, MAX_WRITE),
    )
    run = rng.choice(runs)
    plans = list(schedule.runs)
    plans[run] = replace(plans[run], refusal=refusal)
    return replace(schedule, runs=tuple(plans))


MOMENT_SALT: Final = b"savepoint moment\n"
"""Prefixed to the schedule's JSON to seed ``with_moment``."""
MOMENT_ODDS: Final = 2
"""One in this many schedules that may stop their first run once its enumerator listed (``with_moment``) do."""


def with_moment(schedule: FlinkSchedule) -> FlinkSchedule:
    """``schedule``, in one of ``MOMENT_ODDS`` of those that may have it, with its first run's savepoint taken once
    the enumerator listed the subscription, the answer to the enumerator's first ListOffsets request held back
    until the savepoint is written (``RunPlan.moment`` ``listed``); else as it was (``start``). Only under a plain
    start at LATEST with a topic at start: there the enumerator resolves LATEST with that request (every release
    line from 3.0.1, ``LatestOffsetsInitializer``), after it listed the subscription and before it makes and
    assigns the splits, so the savepoint falls between the two. A group start resolves its fallback in the
    reader, and a first run that reads stops by its records. Drawn from the schedule itself, as ``with_refusal``,
    so a seed's schedules stay what they were; a run at today's moment keeps its JSON."""
    first = schedule.runs[0]
    if schedule.start != "latest" or schedule.empty_at_start or first.failure is not None:
        return schedule
    rng = random.Random(hashlib.sha256(MOMENT_SALT + schedule.dumps().encode()).digest())
    if rng.randrange(MOMENT_ODDS) != 0:
        return schedule
    # a first run at LATEST has nothing to read, whatever its drawn stop: it stops once the savepoint is taken
    return replace(schedule, runs=(replace(first, stop_after=0, moment="listed"), *schedule.runs[1:]))


GROWTH_SALT: Final = b"partitions added while running\n"
"""Prefixed to the schedule's JSON to seed ``with_growth``."""


def with_growth(schedule: FlinkSchedule) -> FlinkSchedule:
    """``schedule``, in one of ``GROWTH_ODDS`` of those that may have it, with a ``Growth`` in its last run: one or
    two partitions added to a topic (never past ``MAX_GROWN``) while the job runs, 1 to ``MAX_WRITE`` records written
    to each. Only where the source sets a short discovery interval (waiting out the release's default, five
    minutes, is a long target's: the harness reports the interval instead, ``check_discovery_interval``), not under
    a start at LATEST nor with no topic at start (the added partitions then surely come after the first discovery),
    and in a last run with no failure and no refusal. Drawn from the schedule itself, as ``with_refusal``, so a
    seed's schedules stay what they were; a run without one keeps its JSON."""
    last = schedule.runs[-1]
    if (
        schedule.discovery_ms is None
        or schedule.resolves_late
        or schedule.empty_at_start
        or last.failure is not None
        or last.refusal is not None
    ):
        return schedule
    before = schedule.layout(len(schedule.runs) - 1)
    growable = [t for t, n in enumerate(before) if n < MAX_GROWN]
    rng = random.Random(hashlib.sha256(GROWTH_SALT + schedule.dumps().encode()).digest())
    if not growable or rng.randrange(GROWTH_ODDS) != 0:
        return schedule
    topic = rng.choice(growable)
    growth = Growth(topic, rng.randint(1, min(2, MAX_GROWN - before[topic])), rng.randint(1, MAX_WRITE))
    return replace(schedule, runs=(*schedule.runs[:-1], replace(last, growth=growth)))


READER_SALT: Final = b"bounded reader\n"
"""Prefixed to the schedule's JSON to seed ``with_reader``: its draws are its own, not the refusal's."""


def with_reader(schedule: FlinkSchedule) -> FlinkSchedule:
    """``schedule``, in one of ``READER_ODDS``, with a ``Reader`` after its life: one to ``MAX_TRANSACTIONS``
    transactions, each of one to ``MAX_TRANSACTION_WRITE`` records to each of one to three partitions of the input
    as the life left it, committed or aborted; then a fresh bounded job at a parallelism of 1 to
    ``MAX_PARALLELISM``, stopping at the latest offsets or at the ends after the first transaction, its
    ``isolation.level`` read_committed or not set. Drawn from the schedule itself, as ``with_refusal`` is (a
    generator seeded with ``READER_SALT`` and its JSON, the refusal included), so a seed's schedules stay what they
    were and a schedule without a reader keeps its JSON (``to_json`` leaves the field out). Its runtime mode
    (STREAMING or BATCH) and its sink's guarantee are drawn last (``with_backfill``)."""
    rng = random.Random(hashlib.sha256(READER_SALT + schedule.dumps().encode()).digest())
    if rng.randrange(READER_ODDS) != 0:
        return schedule
    cells = [(t, p) for t, n in enumerate(schedule.layout(len(schedule.runs))) for p in range(n)]
    transactions = tuple(
        Transaction(
            tuple(rng.sample(cells, rng.randint(1, min(3, len(cells))))),
            rng.randint(1, MAX_TRANSACTION_WRITE),
            rng.random() < 0.5,
        )
        for _ in range(rng.randint(1, MAX_TRANSACTIONS))
    )
    isolation: Literal["read_committed"] | None = rng.choice(("read_committed", None))
    stop: Literal["latest", "offsets"] = rng.choice(("latest", "offsets"))
    reader = Reader(transactions, rng.randint(1, MAX_PARALLELISM), isolation, stop)
    return replace(schedule, reader=with_backfill(schedule, reader))


BACKFILL_SALT: Final = b"bounded reader's runtime mode and sink\n"
"""Prefixed to the schedule's JSON (its reader left out) to seed ``with_backfill``."""
BATCH_ODDS: Final = 2
"""One in this many bounded readers runs in BATCH mode (``with_backfill``)."""
GUARANTEES: Final[tuple[Guarantee, ...]] = ("none", "at-least-once", "exactly-once")


def with_backfill(schedule: FlinkSchedule, reader: Reader) -> Reader:
    """``reader`` (the bounded job after ``schedule``'s life) with its runtime mode and its sink's guarantee drawn:
    BATCH in one of ``BATCH_ODDS`` (a backfill: ``execution.runtime-mode`` BATCH, every source bounded, no
    checkpoint), else STREAMING as before; the sink NONE, AT_LEAST_ONCE or EXACTLY_ONCE (its own transactional-id
    prefix) alike. From a generator of its own (``BACKFILL_SALT`` and the schedule's JSON without its reader), drawn
    after every other choice: so a seed's schedules, refusals, growths, moments and readers stay what they were,
    and only the reader's mode and sink change (a reader drawn STREAMING at least-once keeps its JSON)."""
    rng = random.Random(hashlib.sha256(BACKFILL_SALT + schedule.dumps().encode()).digest())
    mode: RuntimeMode = "BATCH" if rng.randrange(BATCH_ODDS) == 0 else "STREAMING"
    return replace(reader, mode=mode, guarantee=rng.choice(GUARANTEES))


def emptied_at_start(schedule: FlinkSchedule) -> FlinkSchedule:
    """``schedule`` with its subscription matching nothing at the start: the first run has no step and stops once
    its enumerator listed the subscription; the topics it would have started with are created before the second
    run, with the first run's writes after them; no failure."""
    first, second, *rest = schedule.runs
    created = [Step("create-topic", t, count=n) for t, n in enumerate(schedule.partitions)]
    runs = (
        replace(first, steps=(), failure=None, stop_after=0),
        replace(second, steps=(*created, *first.steps, *second.steps), failure=None),
        *(replace(run, failure=None) for run in rest),
    )
    return replace(schedule, partitions=(), runs=runs)


def written_again(schedule: FlinkSchedule, counts: Mapping[Cell, int]) -> FlinkSchedule:
    """``schedule`` with ``counts[cell]`` more records written to each ``cell`` before its last run: after a
    partition's first discovery, so that one started late shows a gap, and one never found shows nothing read."""
    writes = tuple(Step("write", t, p, count) for (t, p), count in sorted(counts.items()))
    last = schedule.runs[-1]
    return replace(schedule, runs=(*schedule.runs[:-1], replace(last, steps=(*last.steps, *writes))))


def _as_backfill(schedule: FlinkSchedule) -> FlinkSchedule:
    """``schedule`` with its reader run as a backfill: BATCH mode into an exactly-once sink."""
    assert schedule.reader is not None
    return replace(schedule, reader=replace(schedule.reader, mode="BATCH", guarantee="exactly-once"))


EVERY_KIND: Final = _as_backfill(
    with_reader(
        FlinkSchedule(
            partitions=(2, 1),
            pattern=True,
            start="group",
            fallback="earliest",
            held=(Held(0, 0, 4),),
            exactly_once=True,
            naming="POOLING",
            checkpoint_ms=200,
            runs=(
                RunPlan(2, (Step("write", 0, 0, 12), Step("write", 0, 1, 6), Step("write", 1, 0, 5)), stop_after=4),
                RunPlan(
                    2,
                    (
                        Step("add-partitions", 0, count=1),
                        Step("create-topic", 2, count=2),
                        Step("write", 0, 2, 7),
                        Step("write", 2, 0, 5),
                        Step("write", 2, 1, 4),
                        Step("write", 0, 0, 15),
                        Step("write", 0, 1, 15),
                        Step("write", 1, 0, 15),
                    ),
                    failure=Failure(1, 6, "record"),
                ),
                RunPlan(3, (Step("write", 0, 1, 10), Step("write", 2, 1, 3)), stop_after=8),
                RunPlan(1, (Step("write", 1, 0, 9),)),
            ),
            more_sinks=(SinkPlan(False, prefixed=False),),
        )
    )
)
"""The explicit example: every step kind, a group start, a failure that surely happens, a rescale up and down, both
stops, a second sink (at-least-once, no prefix set) beside the exactly-once one, and the bounded reader
its JSON draws, run as a backfill (BATCH mode, an exactly-once sink). Its fallback is EARLIEST: with
LATEST, flink-connector-kafka 5.0.0 loses what is written while the job is stopped to a partition its first run read
nothing of (the restored split starts at the end again, as FLINK-28303's LATEST marker did), which the draws still
reach; the explicit example checks the rest on every run."""
