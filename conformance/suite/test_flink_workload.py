"""Pipeline level, Flink: a drawn workload over a job's whole life, judged by the Flink scenarios' own checkers.

Capability ``flink-job``. Where ``test_flink_jobs`` runs one hand-written scenario per requirement, this draws a
``FlinkSchedule`` (``kconform.conformance.workloads.flink.schedule``): one to three topics subscribed by list or by
pattern (by pattern, possibly none at start: the first run then stops once its enumerator listed the subscription,
and every topic created later is read from its first record), a start at the earliest or latest offsets or from a
consumer group's offsets with a fallback, one to three sinks, each exactly-once (its own transactional-id prefix) or
at-least-once (its own prefix or none set), and two to four runs, each restored from the savepoint of the one before
at its own parallelism, with records written, partitions added and topics created between runs and subtask failures
inside them. It runs each run in the Flink harness and judges the whole life: every offset once in the final state
(RESTORE-003), one reader per partition in each run (ASSIGN-007), the sink's read_committed output the input once
and in order, or at least once (COMMIT-011, COMMIT-013), every partition added or topic created read from its first
record (DISC-005, DISC-009, DISC-002; the harness records what each discovery of the enumerator found, so a
partition found and never read is DISC-005, not DISC-009), every sink's output judged on its own; and each run's job
runs to its stop (LIVE-001: a job that failed of its own accord, its restarts used up, is ``query-failed`` with the
connector's exception, and what it never read is not lost). Under a start at LATEST the starts depend on the run
whose enumerator did the first discovery: the history passes when one run it leaves open explains it
(``kconform.conformance.checks.flink_workload_checkers``). A drawn failure that did not happen is ERROR, never a
pass. A run may meet a fault inside it (``Refusal``): once its job read and checkpointed what it had to read, the
broker refuses an at-least-once sink's writes while records are written one at a time, each until a checkpoint
holding it completed or the job restarted; a refused record missing from that sink's output in the end is COMMIT-007
(the sink took a failed write for a done one), any other missing record COMMIT-011. After the life, a fresh bounded
job reads the input again once transactions (committed, aborted) were written to it (``Reader``): it must read what
its isolation shows below its stopping offsets once and end, also where a partition's log ends in a control marker
(RESTORE-010), its sink holding what it read (COMMIT-011: once for EXACTLY_ONCE, at least once for AT_LEAST_ONCE,
NONE not judged); it runs in STREAMING or BATCH runtime mode (a backfill: no checkpoint, the sink's writer handing its
transaction to its committer at the end of its input). Each run reports its source's discovery interval as the
release's enumerator reads it: discovery off where the job set an interval or left it to a release whose default is
on is DISC-009 (``check_discovery_interval``).

Few drawn examples, not shrunk (``kconform run --workload-draws``, as the client workload); a failing one prints
its schedule and its JSON, which ``FlinkSchedule.loads`` turns back into the schedule to replay.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from contextlib import ExitStack
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path
from typing import Final, Literal
from uuid import uuid4

import pytest
from hypothesis import HealthCheck, Phase, example, given, settings

from ..extras import pipeline_missing

if (missing := pipeline_missing()) is not None:  # a core install: every test here is skipped, naming the fix
    pytest.skip(missing, allow_module_level=True)

from ...reference_impl.kafka_client import KafkaClient, KafkaTransactionalProducer, topic_records, wait_until
from ...reference_impl.ports import Isolation, KafkaError, Record
from ...reference_impl.types import TopicPartition
from .. import progress
from ..brokers import Broker
from ..brokers.kafka import KafkaBroker
from ..brokers.proxy import LIST_OFFSETS
from ..brokers.refusal import refused_writes
from ..checks.checkers import Violation, fail_on, tolerated
from ..checks.flink_workload_checkers import (
    Judged,
    check_discovery_interval,
    check_reader_sink,
    check_sinks,
    check_workload_life,
)
from ..checks.liveness_checkers import Failure as JobFailure
from ..checks.liveness_checkers import check_query_ran, flink_job_failure
from ..checks.pipeline_checkers import ReadRecord, check_bounded_read, check_single_reader
from ..errors import HarnessError
from ..flink.harness import FlinkHarness, RunningJob, RunResult, visible_output
from ..flink.history import RunHistory, checkpointed_to, committed_reads, next_offsets
from ..flink.job import HARNESS_RESTARTS, GroupOffsets, JobRun, Sink, Stop
from ..gate.profiles import workload_draws
from ..gate.pytest_plugin import CouldNotCheck, Partial, requirement
from ..workloads.flink.job_options import Failure
from ..workloads.flink.schedule import (
    EVERY_KIND,
    MAX_REFUSED,
    MAX_RUNS,
    Cell,
    FlinkSchedule,
    Growth,
    Step,
    Transaction,
    describe,
    flink_schedules,
    stop_first,
)
from . import flink_fixtures
from .flink_fixtures import SETTLED_WITHIN_S, settled, write

pytestmark = pytest.mark.pipeline
harness, flink_broker, kafka = flink_fixtures.harness, flink_fixtures.flink_broker, flink_fixtures.kafka
"""The shared fixtures (``flink_fixtures``), found by pytest by these names."""

UNREAD: Final = frozenset({"RESTORE-003", "DISC-005", "DISC-009", "DISC-002"})
"""Requirements whose violations say a record the job had to read was not read: one tolerated explains a drawn
failure that never happened (its subtask did not read the records it was to fail after)."""
PACE_MS: Final = 2
"""Spreads a run's reads over several checkpoints, so that failures and savepoints fall between them."""
SINK_PARTITIONS: Final = 2
STOP_WITHIN_MS: Final = 30_000
"""How long a run may take to read to its stop: its start and a few hundred paced reads; a run that lost records
stops there with its savepoint, and the checkers name what it did not read."""
JOB_TIMEOUT_MS: Final = 60_000
"""The harness's bound on each wait for a job (its savepoint, its end)."""
REFUSAL_RESTARTS: Final = 20
"""Restarts a run with a refusal may take: a sink that surfaces the refused writes fails on each restart while the
broker refuses them (the harness restarts after 100 ms)."""
IDLE_WITHIN_S: Final = 90.0
"""The JVM's and the MiniCluster's start, the reads of what was written before the run and a checkpoint after them,
on two shared cores: the moment a refusal begins."""
READER_TIMEOUT_MS: Final = 60_000
"""The harness's bound on the bounded reader (``JobRun.timeout_ms``): its start and reads fit in the first half."""
READER_IDLE_MS: Final = 30_000
"""How long the bounded reader may run after its last read before it counts as never ending: its end is its final
checkpoint and the MiniCluster's shutdown, a few seconds on two shared cores."""
MARKERS_WITHIN_S: Final = 30.0
"""How long a transaction's control markers may take to reach its partitions after its commit or abort returned."""
RUN_BOUND_S: Final = 60 + (STOP_WITHIN_MS + 2 * JOB_TIMEOUT_MS) / 1000 + IDLE_WITHIN_S + MAX_REFUSED * SETTLED_WITHIN_S
"""The most one run takes (``flink.harness.run_limit_s``): the JVM's start, the stop's wait, savepoint and end, and
a refusal's waits."""


def examples() -> int:
    """``kconform run --workload-draws``, else one drawn schedule per twenty examples of the loaded profile."""
    return workload_draws(settings().max_examples)


def workload_settings() -> settings:
    """Drawn, not shrunk: every shrink step runs Flink jobs for seconds each, so a failure prints its whole
    schedule (and as JSON) and Hypothesis's database replays it with the run's ``--seed``."""
    return settings(
        max_examples=examples(),
        deadline=None,
        phases=[Phase.explicit, Phase.reuse, Phase.generate],
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.function_scoped_fixture],
    )


DREW: Final[dict[int, Counter[str]]] = {}
"""What the draws of one test call covered, keyed by its ``record_property`` (one per call, shared by its examples)."""


def drew(key: object, schedule: FlinkSchedule, failed: int, first: int | None) -> dict[str, str]:
    """The report's coverage after this schedule: schedules, runs, failures drawn and injected, operator steps,
    parallelisms, stops, starts, guarantees and subscriptions, drawn so far, and (``first``) which run's first
    discovery explained the history of a start at LATEST (``None``: not judged, or not such a start)."""
    seen = DREW.setdefault(id(key), Counter())
    seen["schedules"] += 1
    seen["failures injected"] += failed
    seen.update(schedule.counts())
    if first is not None and schedule.resolves_late:
        seen[f"first discovery:run {first + 1}"] += 1

    def line(prefix: str) -> str:
        found = sorted(((k.removeprefix(prefix), n) for k, n in seen.items() if k.startswith(prefix)), key=str)
        return ", ".join(f"{k} {n}" for k, n in found) or "none"

    return {
        "drew: schedules": str(seen["schedules"]),
        "drew: runs": str(seen["runs"]),
        "drew: failures": f"{line('failure:')}; injected {seen['failures injected']}",
        "drew: operator steps": line("operator:"),
        "drew: parallelisms": line("parallelism:"),
        "drew: stops": line("stop:"),
        "drew: starts": line("start:"),
        "drew: guarantees": line("guarantee:"),
        "drew: sinks per job": line("sinks:"),
        "drew: sink prefixes": line("prefix:"),
        "drew: subscriptions": line("subscription:"),
        "drew: discovery intervals": line("discovery:"),
        "drew: faults": line("fault:"),
        "drew: first discovery at LATEST": line("first discovery:"),
        "drew: bounded readers": line("reader:"),
    }


def left(
    ends: Mapping[TopicPartition, int], starts: Mapping[TopicPartition, int], reads: Iterable[ReadRecord]
) -> dict[TopicPartition, int]:
    """The partitions a restored run has left to read (from its start, or past what the state read), with their end."""
    done = next_offsets(reads)
    return {tp: end for tp, end in ends.items() if max(starts.get(tp, 0), done.get(tp, 0)) < end}


def stop_of(
    stop_after: int | None, ends: Mapping[TopicPartition, int], starts: Mapping[TopicPartition, int],
    reads: Iterable[ReadRecord],
) -> Stop:  # fmt: skip
    """The drawn stop as the harness takes it: to the end of what is left, or after ``stop_after`` reads, never
    more than are left (the harness counts replays too: a run that reads them all surely gets there)."""
    reads = list(reads)
    rest, done = left(ends, starts, reads), next_offsets(reads)
    records = sum(end - max(starts.get(tp, 0), done.get(tp, 0)) for tp, end in rest.items())
    if stop_after is None or records == 0:
        return Stop(at_offsets=rest, within_ms=STOP_WITHIN_MS)
    return Stop(after_records=min(stop_after, records), within_ms=STOP_WITHIN_MS)


@dataclass
class Workload:
    """One schedule carried out: its topics' names, the source partitions' ends, the runs so far."""

    schedule: FlinkSchedule
    broker: Broker
    kafka: KafkaClient
    work: Path
    tag: str
    ends: dict[TopicPartition, int]
    runs: list[RunHistory]
    refused: dict[int, list[bytes]] = field(default_factory=dict)
    """Sink index -> the records written while the broker refused that sink's writes (``Refusal``)."""

    def topic(self, index: int) -> str:
        return f"{self.tag}-in-{index}"

    @property
    def sink(self) -> str:
        return f"{self.tag}-out"

    def sink_topic(self, index: int) -> str:
        """The output topic of the job's sink ``index`` (0: the first, ``sink``)."""
        return self.sink if index == 0 else f"{self.sink}-{index}"

    def tp(self, cell: tuple[int, int]) -> TopicPartition:
        return TopicPartition(self.topic(cell[0]), cell[1])

    def starts(self, first: int = 0) -> dict[TopicPartition, int]:
        """Where the job must start each partition had run ``first`` done the first discovery."""
        return {self.tp(cell): offset for cell, offset in self.schedule.starts(first).items()}

    def create(self) -> None:
        for index, partitions in enumerate(self.schedule.partitions):
            self.kafka.create_topic(self.topic(index), partitions)
            self.ends |= {TopicPartition(self.topic(index), p): 0 for p in range(partitions)}
        for index in range(len(self.schedule.sinks)):
            self.kafka.create_topic(self.sink_topic(index), SINK_PARTITIONS)

    def carry_out(self, run: int, number: int, step: Step) -> None:
        """One operator step before run ``run``; its records' values name the run, the step and the partition."""
        if step.kind == "write":
            tp = TopicPartition(self.topic(step.topic), step.partition)
            self.ends |= write(
                self.kafka, tp.topic, (tp.partition,), step.count, f"{self.tag}-r{run}s{number}-t{step.topic}"
            )
        elif step.kind == "add-partitions":
            total = sum(1 for tp in self.ends if tp.topic == self.topic(step.topic)) + step.count
            self.kafka.create_partitions(self.topic(step.topic), total)
            self.ends |= {TopicPartition(self.topic(step.topic), p): 0 for p in range(total - step.count, total)}
        else:
            self.kafka.create_topic(self.topic(step.topic), step.count)
            self.ends |= {TopicPartition(self.topic(step.topic), p): 0 for p in range(step.count)}

    def grown(self, growth: Growth) -> list[Cell]:
        """The partitions ``growth`` adds to its topic, given what exists now."""
        there = sum(1 for tp in self.ends if tp.topic == self.topic(growth.topic))
        return [(growth.topic, p) for p in range(there, there + growth.count)]

    def put(self, cell: Cell, value: bytes) -> None:
        """One record written to ``cell`` while the job runs (a refusal's)."""
        tp = self.tp(cell)
        self.ends[tp] = self.kafka.produce(tp, None, value) + 1

    def job(self, run: int, savepoint: str | None, naming: str | None) -> JobRun:
        schedule, plan = self.schedule, self.schedule.runs[run]
        start: Literal["earliest", "latest"] | GroupOffsets = (
            GroupOffsets(f"{self.tag}-group", schedule.fallback) if schedule.start == "group" else schedule.start
        )
        topics, pattern = self.subscription()
        sinks = [
            Sink(
                self.sink_topic(index),
                sink.exactly_once,
                f"{self.sink_topic(index)}-txn" if sink.prefixed else None,
                naming=naming if sink.exactly_once else None,
            )
            for index, sink in enumerate(schedule.sinks)
        ]
        ends = dict(self.ends)
        if plan.refusal is not None:  # what it writes while the job runs: the stop waits for it
            for cell, count in plan.refusal.written().items():
                ends[self.tp(cell)] += count
        if plan.growth is not None:  # the partitions added while it runs, and their records: the stop waits for them
            ends |= {self.tp(cell): plan.growth.records for cell in self.grown(plan.growth)}
        stop = stop_of(
            plan.stop_after,
            ends,
            self.starts(stop_first(schedule, run, [bool(r.reads()) for r in self.runs])),
            committed_reads(self.runs) if self.runs else [],
        )
        if plan.refusal is not None:  # its stop waits for the writes after the refusal: the refusal's own waits too
            stop = replace(
                stop, within_ms=STOP_WITHIN_MS + int((IDLE_WITHIN_S + MAX_REFUSED * SETTLED_WITHIN_S) * 1000)
            )
        if plan.growth is not None:  # and for the partitions added once it is idle
            stop = replace(stop, within_ms=STOP_WITHIN_MS + int(IDLE_WITHIN_S * 1000))
        if (schedule.empty_at_start and run == 0) or plan.moment == "listed":
            # nothing to read: stop once the first discovery was done (listed; its splits held back, ``run_listed``)
            stop = Stop(listed=True, within_ms=STOP_WITHIN_MS)
        return JobRun(
            self.broker.bootstrap_servers,
            topics,
            sinks[0],
            plan.parallelism,
            stop=stop,
            restore_from=savepoint,
            failure=plan.failure,
            checkpoint_interval_ms=schedule.checkpoint_ms,
            starting_offsets=start,
            source_properties={}
            if schedule.discovery_ms is None
            else {"partition.discovery.interval.ms": str(schedule.discovery_ms)},
            pace_ms=PACE_MS,
            timeout_ms=JOB_TIMEOUT_MS,
            topic_pattern=pattern,
            more_sinks=tuple(sinks[1:]),
            record_listings=True,
            restart_attempts=HARNESS_RESTARTS if plan.refusal is None else REFUSAL_RESTARTS,
        )

    def subscription(self) -> tuple[tuple[str, ...], str | None]:
        """The source's topics (by list) and pattern (by pattern): one of them."""
        if self.schedule.pattern:
            return (), f"{self.tag}-in-.*"
        return tuple(self.topic(i) for i in range(len(self.schedule.partitions))), None

    def source(self) -> dict[TopicPartition, list[Record]]:
        """Every source record (read_uncommitted)."""
        out = {}
        for topic in sorted({tp.topic for tp in self.ends}):
            for partition, records in topic_records(self.kafka, topic, Isolation.READ_UNCOMMITTED).items():
                out[TopicPartition(topic, partition)] = records
        return out


def written_to(kafka: KafkaClient, ends: Mapping[TopicPartition, int]) -> bool | None:
    """Whether each partition's log reached its end in ``ends`` (``None``: not yet, for ``wait_until``)."""
    return all(kafka.latest_offset(tp, Isolation.READ_UNCOMMITTED) >= end for tp, end in ends.items()) or None


def write_transaction(
    producer: KafkaTransactionalProducer, workload: Workload, number: int, txn: Transaction, cells: Sequence[Cell]
) -> None:
    """Transaction ``number`` of the reader: ``txn.count`` records to each of ``cells``, committed or aborted."""
    tag = workload.tag
    producer.begin_transaction()
    pairs = [(cell, i) for cell in cells for i in range(txn.count)]
    values = [f"{tag}-txn{number}-t{t}p{p}-{i}".encode() for (t, p), i in pairs]
    for topic in sorted({workload.topic(t) for (t, _), _ in pairs}):
        mine = [(p, v) for ((t, p), _), v in zip(pairs, values, strict=True) if workload.topic(t) == topic]
        producer.produce_all(topic, [p for p, _ in mine], [None] * len(mine), [v for _, v in mine])
    producer.flush()  # librdkafka's abort drops what it has not sent: these reach the log, then abort
    if txn.commit:
        producer.commit_transaction()
    else:
        producer.abort_transaction()


def read_bounded(harness: FlinkHarness, workload: Workload, work: Path) -> tuple[list[Violation], set[str]]:
    """The schedule's ``Reader`` after its life: its transactions written (each committed or aborted: every
    partition one touches then ends in a control marker), then a fresh bounded job on the same subscription from
    the earliest offsets to its stopping offsets, into a sink of its own, in the drawn runtime mode (STREAMING or
    BATCH) at the drawn guarantee (NONE, AT_LEAST_ONCE, EXACTLY_ONCE under a prefix of its own). Judged: every record
    its isolation shows below the stopping offsets read once, nothing else, and the job ended (RESTORE-010); a job
    that ended holds what it read in its sink, committed (read_committed): at least once, or once and in order for
    EXACTLY_ONCE (COMMIT-011, COMMIT-013); a NONE sink's output is not judged; a job that failed of its own accord is
    LIVE-001. Returns the violations and the ids judged."""
    reader = workload.schedule.reader
    assert reader is not None
    if not workload.ends:  # the life ended before any input partition existed: nothing to write to or read
        return [], set()
    kafka, tag = workload.kafka, workload.tag
    producer = kafka.init_producer(f"{tag}-reader-writer")
    after_first: dict[TopicPartition, int] = {}
    for number, txn in enumerate(reader.transactions):
        # A life that failed before a later run's steps never made their partitions: only those that exist.
        there = tuple(cell for cell in txn.cells if workload.tp(cell) in workload.ends)
        marked = {workload.tp(cell): kafka.latest_offset(workload.tp(cell), Isolation.READ_UNCOMMITTED) + txn.count + 1
                  for cell in there}  # fmt: skip
        if there:
            write_transaction(producer, workload, number, txn, there)
        # the coordinator answers EndTxn before its markers reach the partitions: wait for each (one offset each)
        wait_until(
            partial(written_to, kafka, marked), MARKERS_WITHIN_S, f"transaction {number + 1}'s control markers written",
            step_s=0.1,
        )  # fmt: skip
        if number == 0:
            after_first = {tp: kafka.latest_offset(tp, Isolation.READ_UNCOMMITTED) for tp in workload.ends}
    ends = {tp: kafka.latest_offset(tp, Isolation.READ_UNCOMMITTED) for tp in workload.ends}
    workload.ends |= ends
    stopping = ends if reader.stop == "latest" else after_first
    isolation = Isolation.READ_COMMITTED if reader.isolation == "read_committed" else Isolation.READ_UNCOMMITTED
    visible = {tp: [r for r in topic_records(kafka, tp.topic, isolation).get(tp.partition, [])] for tp in stopping}
    shown = {tp: [r.offset for r in records] for tp, records in visible.items()}
    sink = f"{workload.sink}-reader"
    kafka.create_topic(sink, SINK_PARTITIONS)
    naming = workload.schedule.naming if reader.guarantee == "exactly-once" else None
    naming = naming if naming in harness.release.transaction_naming else None
    topics, pattern = workload.subscription()
    job = JobRun(
        workload.broker.bootstrap_servers,
        topics,
        Sink(
            sink,
            reader.guarantee == "exactly-once",
            f"{sink}-txn",
            naming=naming,
            no_guarantee=reader.guarantee == "none",
        ),
        reader.parallelism,
        checkpoint_interval_ms=workload.schedule.checkpoint_ms,
        runtime_mode=reader.mode,
        source_properties={} if reader.isolation is None else {"isolation.level": reader.isolation},
        pace_ms=PACE_MS,
        timeout_ms=READER_TIMEOUT_MS,
        topic_pattern=pattern,
        stopping_offsets=None if reader.stop == "latest" else stopping,
    )
    try:
        result = harness.run(job, work)
    except HarnessError as error:
        return check_query_ran(job_failure(work, error), "the schedule's bounded reader"), {"LIVE-001"}
    if result.idle_ms is not None and result.idle_ms < READER_IDLE_MS:
        raise HarnessError(
            f"the harness gave up on the bounded reader {result.idle_ms} ms after its last read, before the "
            f"{READER_IDLE_MS} ms it is given to end: its start took too long to judge its end ({work})"
        )
    reads = committed_reads([result.history])
    what = "committed" if reader.isolation == "read_committed" else "data"
    violations = check_bounded_read(reads, shown, stopping, result.idle_ms, shown=what)
    violations += check_single_reader(reads, reader.parallelism, requirement="ASSIGN-007")
    judged = {"RESTORE-010", "ASSIGN-007", "LIVE-001"}
    if result.idle_ms is None:  # a job given up on: its sink's output is not its final one
        topic_index = {topic: index for index, topic in enumerate(sorted({tp.topic for tp in visible}))}
        must = {
            topic_index[tp.topic] * 100 + tp.partition: [r for r in records if r.offset < stopping[tp]]
            for tp, records in visible.items()
        }
        found, ids = check_reader_sink(reader.guarantee, reader.mode, sink, must, visible_output(kafka, sink))
        violations += found
        judged |= ids
    return violations, judged


def run_refused(
    harness: FlinkHarness, workload: Workload, run: int, job: JobRun, work: Path
) -> tuple[RunResult, str | None]:
    """Run ``run``, whose plan has a ``Refusal``, in the harness: once its job read what it had to read and a
    checkpoint holding that completed, the broker refuses every write to the refusal's sink topic while one record
    is written to each of its partitions in turn, each until a checkpoint holding its read completed or the job
    restarted (a restart: the sink surfaced the refusal, which has done its part; the rest are written after it);
    then ``after`` more records to each. Returns the run's result, and what says the refusal was not carried out
    (the job did not get idle in time: judged without it) or ``None``. ``HarnessError`` when the job ended before
    its stop (its failure, for LIVE-001) or a refused record never settled."""
    refusal = workload.schedule.runs[run].refusal
    assert refusal is not None
    before = left(workload.ends, workload.starts(), committed_reads(workload.runs) if workload.runs else [])
    running = harness.start(job, work)
    try:
        missing = None
        try:
            wait_until(
                lambda: checkpointed_to(going(running, "before the refusal").segments_so_far(), before) or None,
                IDLE_WITHIN_S, "the job's reads of what was written before it, checkpointed", step_s=0.1,
            )  # fmt: skip
        except KafkaError as late:
            missing = f"the refusal of run {run + 1} was not carried out: {late} ({work})"
        refused: list[bytes] = []
        rest = list(refusal.cells)
        if missing is None:
            with refused_writes(workload.broker, workload.sink_topic(refusal.sink)):
                while rest:
                    value = f"{workload.tag}-r{run}-refused-{len(refused)}-t{rest[0][0]}".encode()
                    workload.put(rest.pop(0), value)
                    refused.append(value)
                    if settled(running, value):
                        break
        workload.refused.setdefault(refusal.sink, []).extend(refused)
        for number, cell in enumerate(rest):
            workload.put(cell, f"{workload.tag}-r{run}-unrefused-{number}-t{cell[0]}".encode())
        for t, p in sorted(set(refusal.cells)):
            workload.ends |= write(
                workload.kafka, workload.topic(t), (p,), refusal.after, f"{workload.tag}-r{run}-after-t{t}"
            )
    except BaseException:
        if not running.ended(within_s=0.0):
            running.kill()
        raise
    return running.finish(), missing


def run_grown(
    harness: FlinkHarness, workload: Workload, run: int, job: JobRun, work: Path
) -> tuple[RunResult, str | None]:
    """Run ``run``, whose plan has a ``Growth``, in the harness: once its job read what it had to read and a
    checkpoint holding that completed (its first discovery long done), the partitions are added and written to;
    its periodic discovery must find them before its stop, which waits for them. Returns the run's result, and what
    says they were added before the job was known to be idle (it did not get idle in time: the run is ERROR, as a
    refusal not carried out) or ``None``."""
    growth = workload.schedule.runs[run].growth
    assert growth is not None
    before = left(workload.ends, workload.starts(), committed_reads(workload.runs) if workload.runs else [])
    running = harness.start(job, work)
    missing = None
    try:
        try:
            wait_until(
                lambda: checkpointed_to(going(running, "before its partitions were added").segments_so_far(), before)
                or None,
                IDLE_WITHIN_S, "the job's reads of what was written before it, checkpointed", step_s=0.1,
            )  # fmt: skip
        except KafkaError as late:
            missing = f"the partitions of run {run + 1} were added before the job was idle: {late} ({work})"
        cells = workload.grown(growth)
        topic = workload.topic(growth.topic)
        workload.kafka.create_partitions(topic, cells[-1][1] + 1)
        workload.ends |= {workload.tp(cell): 0 for cell in cells}
        for t, p in cells:
            workload.ends |= write(workload.kafka, topic, (p,), growth.records, f"{workload.tag}-r{run}-grown-t{t}")
    except BaseException:
        if not running.ended(within_s=0.0):
            running.kill()
        raise
    return running.finish(), missing


HOLD_WITHIN_S: Final = IDLE_WITHIN_S
"""The most the broker's proxy holds the enumerator's first ListOffsets answer (``run_listed``): the JVM's and the
MiniCluster's start, the listing, and the savepoint written after it."""


def saved(work: Path) -> bool:
    """Whether a run's savepoint is written: its metadata file, the last the savepoint writes."""
    return any((work / "savepoints").glob("*/_metadata"))


def run_listed(
    harness: FlinkHarness, workload: Workload, run: int, job: JobRun, work: Path
) -> tuple[RunResult, str | None]:
    """Run ``run``, whose plan stops it once its enumerator listed the subscription (``moment`` ``listed``), in the
    harness: the broker's proxy holds back the answer to the next ListOffsets request (the enumerator's, resolving
    LATEST for the splits of its first discovery) until the savepoint the stop takes is written, or at most
    ``HOLD_WITHIN_S``. So the savepoint falls after the listing and before the splits were made and assigned.
    Returns the run's result, and what says the moment was not carried out (no proxy, no ListOffsets request held,
    the savepoint not written while it was held: the run is then judged as stopped at once) or ``None``."""
    broker = workload.broker
    if not isinstance(broker, KafkaBroker) or not any(node.proxy is not None for node in broker.nodes):
        unheld = f"run {run + 1} stopped once listed without its ListOffsets answer held: the broker has no proxy"
        return harness.run(job, work), unheld
    hold = broker.hold_next_answer(LIST_OFFSETS, HOLD_WITHIN_S)
    missing: str | None = None
    running = harness.start(job, work)
    try:
        try:
            wait_until(
                lambda: saved(work) or running.ended(within_s=0.0) or None, HOLD_WITHIN_S,
                f"run {run + 1}'s savepoint written", step_s=0.1,
            )  # fmt: skip
        except KafkaError as late:
            missing = f"the ListOffsets answer of run {run + 1} was released before its savepoint was written: {late}"
        hold.release()
        claimed = hold.cancel()
        result = running.finish()
    except BaseException:
        hold.release()
        if not running.ended(within_s=0.0):
            running.kill()
        raise
    if not claimed:
        missing = f"no ListOffsets request was held while run {run + 1} ran ({work})"
    elif missing is None and not saved(work):
        missing = f"run {run + 1} ended without a savepoint written while its ListOffsets answer was held ({work})"
    return result, missing


def proxied(stack: ExitStack, broker: Broker) -> tuple[Broker, KafkaClient]:
    """A broker of ``broker``'s Apache Kafka release behind the proxy that holds an answer (``run_listed``), and a
    client of it, stopped when ``stack`` closes; ``CouldNotCheck`` when it cannot start."""
    if not isinstance(broker, KafkaBroker) or broker.kind != "kafka":
        raise CouldNotCheck(
            f"a drawn schedule holds the enumerator's ListOffsets answer: that needs a single Apache Kafka node "
            f"behind kconform's proxy, and the run's broker is {broker.kind}"
        )
    held = KafkaBroker(proxied=True, kafka_version=broker.release)
    try:
        held.start()
    except Exception as error:
        raise CouldNotCheck(f"the proxied Apache Kafka node for a held ListOffsets answer: {error}") from error
    stack.callback(held.stop)
    return held, stack.enter_context(KafkaClient(held))


def going(running: RunningJob, when: str) -> RunningJob:
    """``running``, still running; ``HarnessError`` (its failure, read from its stderr) when it ended ``when``."""
    if running.ended(within_s=0.0):
        raise HarnessError(f"the job ended {when}")
    return running


def produced(
    source: Mapping[TopicPartition, list[Record]], starts: Mapping[TopicPartition, int]
) -> dict[int, list[Record]]:
    """Every source record from where the job must start its partition, keyed apart."""
    topics = {topic: index for index, topic in enumerate(sorted({tp.topic for tp in source}))}
    return {
        topics[tp.topic] * 100 + tp.partition: [r for r in records if r.offset >= starts.get(tp, 0)]
        for tp, records in source.items()
    }


def missed_failure(run: int, failure: Failure | None, result: RunResult, work: Path) -> str | None:
    """What says the run's drawn failure did not happen (its subtask never restarted), or ``None``: none was
    drawn, or it happened. A schedule is drawn so that it surely happens (``schedule.failure_sure``) when the
    connector reads what it must: one that did not is a harness fault, unless the checkers find why."""
    if failure is None or any(s.subtask == failure.subtask and s.attempt > 0 for s in result.history.segments):
        return None
    read = sum(len(s.reads()) for s in result.history.segments if s.subtask == failure.subtask)
    return (
        f"the failure injection did not happen: subtask {failure.subtask} of run {run + 1} never restarted "
        f"(it read {read} records; {failure}) ({work})"
    )


def job_failure(work: Path, error: HarnessError) -> JobFailure:
    """The failure of a run's job (its connector's exception, LIVE-001's evidence) from the harness's stderr;
    ``error`` itself when the harness failed of its own (no job failure printed): that is could-not-check."""
    log = work / "stderr.log"
    found = flink_job_failure(log.read_text(encoding="utf-8", errors="replace")) if log.exists() else None
    if found is None:
        raise error
    return found


def judge(workload: Workload) -> Judged:
    """What the checkers find in the whole life, against each run open for its first discovery."""
    schedule, source = workload.schedule, workload.source()
    outputs = [
        (workload.sink_topic(index), plan.exactly_once, visible_output(workload.kafka, workload.sink_topic(index)))
        for index, plan in enumerate(schedule.sinks)
    ]

    refused = {workload.sink_topic(index): values for index, values in workload.refused.items()}

    def sink(starts: Mapping[TopicPartition, int]) -> list[Violation]:
        return check_sinks(produced(source, starts), outputs, refused)

    read = [bool(run.reads()) for run in workload.runs]
    listed = {tp for run in workload.runs for listing in run.listings for tp in listing}
    final = committed_reads(workload.runs)
    handed = [run.handed for run in workload.runs]
    started = [run.started_all() for run in workload.runs]
    return check_workload_life(schedule, workload.tp, workload.ends, final, read, sink, listed, handed, started)


@requirement(  # IDS: spelled out, since the requirements page credits a test with the ids its mark quotes
    "RESTORE-003", "ASSIGN-007", "COMMIT-011", "COMMIT-013", "DISC-005", "DISC-009", "DISC-002", "LIVE-001",
    "COMMIT-007", "RESTORE-010", capability="flink-job",
)  # fmt: skip
@pytest.mark.timeout((examples() + 1) * (MAX_RUNS + 1) * RUN_BOUND_S)
@workload_settings()
@given(schedule=flink_schedules())
@example(schedule=EVERY_KIND)
def test_required_RESTORE_003_flink_jobs_keep_every_promise_of_a_drawn_workload(
    harness: FlinkHarness, flink_broker: Broker, kafka: KafkaClient, tmp_path: Path,
    record_property: Callable[[str, object], None], partial: Partial, schedule: FlinkSchedule,
) -> None:  # fmt: skip
    """A drawn schedule of runs, operator steps and failures carried out on the release's Flink jobs, each run
    restored from the savepoint of the one before, and judged by every Flink checker it gives something to judge:
    each offset in the final state once from where the start put it, each partition read by one subtask per run,
    the sink's read_committed output the input once and in order (exactly-once; at least once otherwise), every
    partition added and topic created read from its first record."""
    naming = schedule.naming if schedule.naming in harness.release.transaction_naming else None
    tag = f"flink-{uuid4().hex[:8]}"
    work = tmp_path / tag
    stack = ExitStack()  # a proxied broker of its own, for a schedule that holds an answer (``run_listed``)
    broker, client = flink_broker, kafka
    if any(plan.moment == "listed" for plan in schedule.runs):
        broker, client = proxied(stack, flink_broker)
    workload = Workload(schedule, broker, client, work, tag, {}, [])
    injected = 0
    missed: list[str] = []
    unmet: list[str] = []
    violations: list[Violation] = []
    first: int | None = None
    life: Judged | None = None
    discovery_judged = False
    reader_ids: set[str] = set()
    detail = f"schedule:\n{describe(schedule)}\nas JSON: {schedule.dumps()}\nruns in {work}"
    progress.say(f"drawn Flink schedule {DREW.get(id(record_property), Counter())['schedules'] + 1} of {examples()}")
    try:
        workload.create()
        savepoint = None
        for run, plan in enumerate(schedule.runs):
            for number, step in enumerate(plan.steps):
                workload.carry_out(run, number, step)
            if run == 0 and schedule.held:
                held = {workload.tp((h.topic, h.partition)): h.offset for h in schedule.held}
                client.commit_offsets(f"{tag}-group", held)
            try:
                job = workload.job(run, savepoint, naming)
                if plan.growth is not None:
                    result, ungrown = run_grown(harness, workload, run, job, work / f"run-{run + 1}")
                    missed += [ungrown] if ungrown else []
                elif plan.moment == "listed":
                    result, unheld = run_listed(harness, workload, run, job, work / f"run-{run + 1}")
                    missed += [unheld] if unheld else []
                elif plan.refusal is None:
                    result = harness.run(job, work / f"run-{run + 1}")
                else:
                    result, unrefused = run_refused(harness, workload, run, job, work / f"run-{run + 1}")
                    missed += [unrefused] if unrefused else []
            except HarnessError as error:
                stopped = job_failure(work / f"run-{run + 1}", error)
                violations += check_query_ran(stopped, f"that run {run + 1} of the drawn schedule")
                break  # no savepoint to go on from; what the job never got to read is not lost (LIVE-001)
            workload.runs.append(result.history)
            savepoint = result.savepoint
            if schedule.empty_at_start and run == 0 and not (result.stop_met and result.history.listings):
                raise CouldNotCheck(
                    f"run 1's enumerator did not list its subscription within {STOP_WITHIN_MS} ms (listings "
                    f"{result.history.listings}): which run did the job's first discovery is unknown, so what it "
                    f"must have read of the topics created later is not judged\n{detail}"
                )
            missing = missed_failure(run, plan.failure, result, work / f"run-{run + 1}")
            injected += plan.failure is not None and missing is None
            missed += [missing] if missing else []
            if not result.stop_met:
                unmet.append(f"run {run + 1} did not reach its stop in {STOP_WITHIN_MS} ms ({result.history.ended})")
            violations += check_single_reader(result.history.reads(), plan.parallelism, requirement="ASSIGN-007")
            if result.discovery is not None:
                off, judged = check_discovery_interval(
                    run + 1, schedule.discovery_ms, result.discovery.interval_ms, result.discovery.default_ms
                )
                violations += off
                discovery_judged |= judged
        else:
            life = judge(workload)
            first = life.first
        if schedule.reader is not None:  # after the life, judged whatever the life showed: a job of its own
            found, reader_ids = read_bounded(harness, workload, work / "reader")
            violations += found
    except KafkaError as failed:
        raise CouldNotCheck(
            f"the workload's topics or records could not be set up, so nothing was judged: {failed}\n{detail}"
        ) from failed
    except HarnessError as failed:
        raise HarnessError(f"{failed}\n{detail}") from failed
    finally:
        stack.close()
        for name, value in drew(record_property, schedule, injected, first).items():
            record_property(name, value)  # the report's metrics: what the workload drew so far
    if life is None:  # a job failed: its LIVE-001 stands, and nothing else was judged in full
        fail_on(violations, detail=f"\na job of the schedule failed; later runs not carried out\n{detail}")
        return
    violations += life.violations
    ids = life.judged | {"ASSIGN-007", "LIVE-001"} | ({"COMMIT-007"} if any(workload.refused.values()) else set())
    ids |= reader_ids | ({"DISC-009"} if discovery_judged else set())
    violated = {v.requirement for v in violations}
    explained = (
        f"judged as if run {life.first + 1} had done the first discovery (a start at LATEST)"
        if schedule.resolves_late
        else ""
    )
    detail = "\n".join(line for line in [*missed, *unmet, explained, life.text(), detail] if line)
    # What the checkers found stands; without it, a failure drawn and not injected judged nothing in full.
    verified = [] if missed else [i for i in IDS if i in ids and i not in violated]
    fail_on(violations, detail=detail, verified=verified)
    unread = [v for v in tolerated(violations) if v.requirement in UNREAD]
    if missed and unread:  # the checkers found why: a known bug kept the subtask from what it had to read
        why = unread[0]
        partial(
            None,
            f"{missed[0]}: explained by a tolerated violation ({why.requirement} {why.kind}: a record the "
            "job had to read was not read), so the run was judged without its failure",
        )
    elif missed:
        raise HarnessError("\n".join(missed) + f"\n{detail}")


IDS: Final[tuple[str, ...]] = next(
    mark.args for mark in test_required_RESTORE_003_flink_jobs_keep_every_promise_of_a_drawn_workload.pytestmark
    if mark.name == "requirement"
)  # fmt: skip
"""The ids the workload judges: its test's ``requirement`` mark."""
