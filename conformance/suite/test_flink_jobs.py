"""Pipeline level, Flink: the adapter's Flink ``KafkaSource`` and ``KafkaSink`` release as real jobs on a live broker.

Capability ``flink-job`` (``kconform.conformance.adapters.flink_kafka``): each scenario runs jobs of that
connector release in the harness (``kconform.conformance.flink``: a local MiniCluster, the harness built on first
use) and judges what its subtasks read and what its sink made visible with the same checkers and requirement ids
as the Spark scenarios (``test_pipeline``): exactly once through a subtask failure and savepoint rescales, partitions
added while a job runs, or while it is stopped, found and read from their first record, a job stopped before its
first record restored without loss, a bounded job on input that ends in commit markers read once and ended, an
at-least-once job through a window in which the broker refuses its sink's writes (each refused record surfaced
and written again), a job killed and never restarted, whose transactions time out, and a job started from its
consumer group's committed offsets where the group holds none for a partition. Waits on a running job are
conditioned on what it did (its output, its end) and bounded.

Few drawn examples (a job takes seconds); a failing one prints its draw and replay blob.
"""

from __future__ import annotations

import contextlib
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, Final, Literal
from uuid import uuid4

import pytest
from hypothesis import Phase, example, given, settings
from hypothesis import strategies as st

from ..extras import pipeline_missing

if (missing := pipeline_missing()) is not None:  # a core install: every test here is skipped, naming the fix
    pytest.skip(missing, allow_module_level=True)

from ...reference_impl.kafka_client import KafkaClient, stable_offsets, topic_records, wait_until
from ...reference_impl.ports import Isolation, KafkaError
from ...reference_impl.types import LATEST, TopicPartition
from ..brokers import Broker
from ..brokers.probe import TXN_TIMEOUT_WAIT_S
from ..brokers.refusal import refused_writes
from ..checks.checkers import Violation, check_group_start, fail_on
from ..checks.pipeline_checkers import (
    check_discovered,
    check_output,
    check_read_once,
    check_rewritten,
    check_single_reader,
    check_sink_output,
    check_unblocked,
)
from ..checks.sink_checkers import check_naming_switched, check_prefixes_refused
from ..errors import HarnessError
from ..flink.harness import FlinkHarness, RunningJob, visible_output
from ..flink.history import RunHistory, committed_reads, left_to_read, starts_read
from ..flink.job import SINK_DEFAULTS, GroupOffsets, JobRun, Sink, Stop
from ..gate.pytest_plugin import requirement
from ..workloads.flink.job_options import NAMING, Failure
from . import flink_fixtures
from .flink_fixtures import SETTLED_WITHIN_S, settled, write

pytestmark = pytest.mark.pipeline
harness, flink_broker, kafka = flink_fixtures.harness, flink_fixtures.flink_broker, flink_fixtures.kafka
"""The shared fixtures (``flink_fixtures``), found by pytest by these names."""

PARTITIONS: Final = 4
PACE_MS: Final = 2
"""Spreads a run's reads over several checkpoints, so that failures and savepoints fall between them."""
CHECKPOINT_MS: Final = 200
STARTED_WITHIN_S: Final = 90.0
"""The JVM's and the MiniCluster's start and the source's first discovery, on two shared cores."""
EXPLICIT_DISCOVERY_MS: Final = 1000
DEFAULT_DISCOVERY_MS: Final = 300_000
"""``partition.discovery.interval.ms``'s default since flink-connector-kafka 3.1.0 (FLIP-288: five minutes)."""
SLACK_MS: Final = 60_000
"""On top of a discovery interval: the job's start, a discovery's own work, the records through the job."""
JOB_TIMEOUT_S: Final = 300
"""A test's bound per job it runs (``kconform run --timeout`` is per test, its default below one job's worst)."""
FINISHED_WITHIN_MS: Final = 30_000
"""How long a bounded job may run after its last read before it counts as never ending: its end is its final
checkpoint (every ``CHECKPOINT_MS``) and the MiniCluster's shutdown, a few seconds on two shared cores."""
BOUNDED_TIMEOUT_MS: Final = 2 * FINISHED_WITHIN_MS
"""The harness's bound on a bounded job: its subtasks' start and its reads fit in the first half."""


def flink_settings() -> settings:
    """The loaded profile with about one drawn example per hundred protocol examples, no shrinking."""
    return settings(
        max_examples=max(1, settings().max_examples // 100),
        phases=[Phase.explicit, Phase.reuse, Phase.generate],
        deadline=None,
    )


def sink_values(kafka: KafkaClient, sink: str) -> list[bytes]:
    """What the sink wrote so far, aborted transactions included (a sign of reading, not a verdict)."""
    return [r.value or b"" for rs in topic_records(kafka, sink, Isolation.READ_UNCOMMITTED).values() for r in rs]


def job_of(broker: Broker, topics: tuple[str, ...], sink: str, exactly_once: bool, parallelism: int) -> JobRun:
    return JobRun(
        broker.bootstrap_servers,
        topics,
        Sink(sink, exactly_once, f"{sink}-txn"),
        parallelism,
        checkpoint_interval_ms=CHECKPOINT_MS,
        pace_ms=PACE_MS,
    )


@requirement("RESTORE-003", "ASSIGN-007", "COMMIT-011", "COMMIT-013", capability="flink-job")
@pytest.mark.timeout(JOB_TIMEOUT_S * 8)  # up to four runs an example, the explicit one and a drawn one
@flink_settings()
@given(
    fail_after=st.integers(10, 250),
    parallelisms=st.lists(st.integers(1, 4), min_size=2, max_size=4),
    naming=st.sampled_from(NAMING),
)
@example(fail_after=120, parallelisms=[2, 3, 1, 4], naming="INCREMENTING")
@example(fail_after=60, parallelisms=[3, 1, 2], naming="POOLING")
def test_required_RESTORE_003_flink_exactly_once_through_a_failure_and_savepoint_rescales(
    harness: FlinkHarness, flink_broker: Broker, kafka: KafkaClient, tmp_path: Path, record_property: Any,
    fail_after: int, parallelisms: list[int], naming: str,
) -> None:  # fmt: skip
    """Subtask 0 of the first run fails once after ``fail_after`` records; each run stops with a savepoint that
    the next restores at the next parallelism, records written between runs: every offset is in the final state
    once (RESTORE-003), each run's subtasks read disjoint partitions (ASSIGN-007), and the exactly-once sink's
    read_committed output is the input once, in order (COMMIT-011, COMMIT-013). The sink names its transactions
    by the drawn ``TransactionNamingStrategy`` where the release has them (4.0 on); before, by its only one."""
    strategy = naming if naming in harness.release.transaction_naming else None
    record_property("sink_naming", strategy or "the release's only one")
    tag = f"flink-{uuid4().hex[:8]}"
    source, sink = f"{tag}-in", f"{tag}-out"
    kafka.create_topic(source, PARTITIONS)
    kafka.create_topic(sink, 2)
    runs: list[RunHistory] = []
    savepoint: str | None = None
    violations: list[Violation] = []
    work = tmp_path / tag
    for step, parallelism in enumerate(parallelisms):
        # The first run reads all it finds, more than any subtask's share of it before its failure.
        ends = write(kafka, source, range(PARTITIONS), 260 if step == 0 else 60, f"{tag}-step{step}")
        left = Stop(at_offsets=left_to_read(ends, committed_reads(runs) if runs else []))
        stop = left if step in (0, len(parallelisms) - 1) else Stop(after_records=120)
        job = replace(job_of(flink_broker, (source,), sink, True, parallelism), stop=stop, restore_from=savepoint)
        job = replace(job, sink=replace(job.sink, naming=strategy))
        if step == 0:
            job = replace(job, failure=Failure(subtask=0, after_records=fail_after))
        result = harness.run(job, work / f"run-{step + 1}")
        runs.append(result.history)
        savepoint = result.savepoint
        violations += check_single_reader(result.history.reads(), parallelism, requirement="ASSIGN-007")
    if not any(s.subtask == 0 and s.attempt > 0 for s in runs[0].segments):
        raise HarnessError(f"the failure injection did not happen: subtask 0 of run 1 never restarted ({work})")
    produced = topic_records(kafka, source, Isolation.READ_UNCOMMITTED)
    violations += check_read_once(committed_reads(runs), ends)
    violations += check_sink_output(produced, visible_output(kafka, sink), exactly_once=True)
    fail_on(violations, detail=f"runs at {parallelisms}, subtask 0 failing after {fail_after} records: {work}")


def partitions_added_while_running(
    harness: FlinkHarness, broker: Broker, kafka: KafkaClient, work: Path, source_properties: Mapping[str, str],
    discovered_within_ms: int, record_property: Callable[[str, object], None],
) -> list[Violation]:  # fmt: skip
    """A job at LATEST on a two-partition topic; once it reads (its first discovery done), two partitions are
    added and written to, and once their records come out of the job or ``discovered_within_ms`` passed, written
    to again: each added partition must be found (DISC-009) and read from offset 0 (DISC-005). The second
    writes tell a partition started late (read, with a gap: DISC-005) from one never found (DISC-009). The two
    waits are the test's metrics ``first_read_wait_s`` (the job's start to its first output) and
    ``discovery_wait_s`` (the added partitions' records to their output), which ``kconform bench --gate`` sums."""
    tag = f"flink-{uuid4().hex[:8]}"
    source, sink = f"{tag}-in", f"{tag}-out"
    kafka.create_topic(source, 2)
    kafka.create_topic(sink, 1)
    added = [TopicPartition(source, p) for p in (2, 3)]
    before, after = 20, 10
    ends = {tp: before + after for tp in added}
    stop = Stop(at_offsets=ends, within_ms=discovered_within_ms + 2 * SLACK_MS)
    job = replace(
        job_of(broker, (source,), sink, False, 2),
        stop=stop,
        starting_offsets="latest",
        source_properties=dict(source_properties),
    )
    began = time.monotonic()
    running = harness.start(job, work)
    read = await_first_read(kafka, running, TopicPartition(source, 0), sink)
    record_property("first_read_wait_s", round(time.monotonic() - began, 1))
    if read:
        kafka.create_partitions(source, 4)
        write(kafka, source, (2, 3), before, f"{tag}-before")
        waited = write_once_read(kafka, added, after, sink, tag, discovered_within_ms)
        record_property("discovery_wait_s", round(waited, 1))
    result = running.finish()
    return check_discovered([r for r in committed_reads([result.history]) if r.tp in added], ends)


def write_once_read(
    kafka: KafkaClient, added: Sequence[TopicPartition], count: int, sink: str, tag: str, within_ms: int
) -> float:
    """Once records written to ``added`` (values ``tag-before-p-i``) come out of the job into ``sink``, or
    ``within_ms`` passed, write ``count`` more to each (``tag-after-p-i``): read, they show a partition started
    late (a gap before them) apart from one never found (nothing read). The seconds it waited."""
    began = time.monotonic()
    prefixes = tuple(f"{tag}-before-{tp.partition}-".encode() for tp in added)
    with contextlib.suppress(KafkaError):  # not read in time: the records written next tell which it was
        wait_until(
            lambda: any(v.startswith(prefixes) for v in sink_values(kafka, sink)) or None,
            within_ms / 1000,
            "the added partitions' records read",
            step_s=0.2,
        )
    waited = time.monotonic() - began
    for tp in added:
        write(kafka, tp.topic, (tp.partition,), count, f"{tag}-after")
    return waited


def await_first_read(kafka: KafkaClient, running: RunningJob, probe: TopicPartition, sink: str) -> bool:
    """Write one record a second to ``probe`` until the job's output shows one (its source's first discovery is
    done and its readers read); ``False`` when the job ended first (``finish`` then says why)."""

    def probed() -> bool | None:
        if running.ended(within_s=1.0):
            return False
        if sink_values(kafka, sink):
            return True
        kafka.produce(probe, None, b"probe")
        return None

    return wait_until(probed, STARTED_WITHIN_S, "the job's first read", step_s=0.0)


@requirement("DISC-005", capability="flink-job")
@pytest.mark.timeout(JOB_TIMEOUT_S)
def test_required_DISC_005_flink_partitions_added_while_running_are_read_from_their_first_record(
    harness: FlinkHarness, flink_broker: Broker, kafka: KafkaClient, tmp_path: Path, record_property: Any
) -> None:
    """With ``partition.discovery.interval.ms`` set short, records written to a partition before the job
    discovered it are read (FLINK-32019: flink-connector-kafka up to 3.0.2 started such partitions at LATEST)."""
    properties = {"partition.discovery.interval.ms": str(EXPLICIT_DISCOVERY_MS)}
    work = tmp_path / "job"
    within_ms = 10 * EXPLICIT_DISCOVERY_MS
    fail_on(partitions_added_while_running(harness, flink_broker, kafka, work, properties, within_ms, record_property))


@requirement("DISC-009", capability="flink-job")
@pytest.mark.waits_default  # six minutes: at --profile thorough only; shorter runs judge the interval the source reads
@pytest.mark.timeout(JOB_TIMEOUT_S + (DEFAULT_DISCOVERY_MS + 3 * SLACK_MS) // 1000)
def test_required_DISC_009_flink_partitions_added_while_running_are_found_with_default_discovery(
    harness: FlinkHarness, flink_broker: Broker, kafka: KafkaClient, tmp_path: Path, record_property: Any
) -> None:
    """With the release's own discovery settings (none given; the default interval is five minutes, so this
    waits up to six), partitions added while the job runs are found and read (FLINK-36780: 3.1.0 to 3.4.0
    switched discovery off for every source whose interval was not set)."""
    work = tmp_path / "job"
    within_ms = DEFAULT_DISCOVERY_MS + SLACK_MS
    fail_on(partitions_added_while_running(harness, flink_broker, kafka, work, {}, within_ms, record_property))


def added_while_stopped(
    harness: FlinkHarness, broker: Broker, kafka: KafkaClient, work: Path, new_topic: bool
) -> list[Violation]:
    """A job at LATEST reads (its first discovery done) and stops with a savepoint; while no job runs, two
    partitions are added to its topic, or (``new_topic``, the job subscribed by pattern) a two-partition topic
    matching its pattern is created, and written to; the job restored from the savepoint must read them from
    offset 0 (written to again once it read them or a bound passed, as while running). Unlike partitions added
    while the job runs, the records surely precede the discovery that finds them: the restored enumerator's first."""
    tag = f"flink-{uuid4().hex[:8]}"
    source, sink, restored_sink = f"{tag}-in", f"{tag}-out", f"{tag}-out-restored"
    kafka.create_topic(source, 2)
    kafka.create_topic(sink, 1)
    kafka.create_topic(restored_sink, 1)  # its first output tells the restored job reads
    properties = {"partition.discovery.interval.ms": str(EXPLICIT_DISCOVERY_MS)}
    job = replace(job_of(broker, (source,), sink, False, 2), starting_offsets="latest", source_properties=properties)
    if new_topic:
        job = replace(job, topics=(), topic_pattern=f"{tag}-in.*")
    running = harness.start(replace(job, stop=Stop(after_records=1)), work / "run-1")
    await_first_read(kafka, running, TopicPartition(source, 0), sink)
    first = running.finish()
    if new_topic:
        kafka.create_topic(f"{tag}-in-new", 2)
        added = [TopicPartition(f"{tag}-in-new", p) for p in (0, 1)]
    else:
        kafka.create_partitions(source, 4)
        added = [TopicPartition(source, p) for p in (2, 3)]
    before, after = 20, 10
    for tp in added:
        write(kafka, tp.topic, (tp.partition,), before, f"{tag}-before")
    ends = {tp: before + after for tp in added}
    discovered_within_ms = 10 * EXPLICIT_DISCOVERY_MS
    restored = replace(
        job,
        sink=replace(job.sink, topic=restored_sink),
        restore_from=first.savepoint,
        stop=Stop(at_offsets=ends, within_ms=discovered_within_ms + 2 * SLACK_MS),
    )
    running = harness.start(restored, work / "run-2")
    if await_first_read(kafka, running, TopicPartition(source, 0), restored_sink):
        write_once_read(kafka, added, after, restored_sink, tag, discovered_within_ms)
    second = running.finish()
    reads = [r for r in committed_reads([first.history, second.history]) if r.tp in added]
    return check_discovered(reads, ends, unfound="DISC-002" if new_topic else "DISC-009")


@requirement("DISC-005", "DISC-009", capability="flink-job")
@pytest.mark.timeout(JOB_TIMEOUT_S * 2)
def test_required_DISC_005_flink_partitions_added_while_a_job_is_stopped_are_read_from_their_first_record(
    harness: FlinkHarness, flink_broker: Broker, kafka: KafkaClient, tmp_path: Path
) -> None:
    """Partitions added to the job's topic while it is stopped. flink-connector-kafka 3.0.2 (FLINK-32019) keeps
    only the assigned partitions (``KafkaSource.restoreEnumerator`` passes ``checkpoint.assignedPartitions()``)
    and starts every partition outside them at the startup initializer
    (``KafkaSourceEnumerator.initializePartitionSplits``), LATEST, resolved to the end then: the records are
    skipped. From 3.1.0 the state holds ``initialDiscoveryFinished`` (``KafkaSourceEnumState``), so the restored
    enumerator starts them at ``newDiscoveryOffsetsInitializer``, EARLIEST (5.0 as well)."""
    fail_on(added_while_stopped(harness, flink_broker, kafka, tmp_path, new_topic=False), detail=f"runs in {tmp_path}")


@requirement("DISC-002", "DISC-005", capability="flink-job")
@pytest.mark.timeout(JOB_TIMEOUT_S * 2)
def test_required_DISC_002_flink_topic_matching_the_pattern_created_while_stopped_is_read_from_its_start(
    harness: FlinkHarness, flink_broker: Broker, kafka: KafkaClient, tmp_path: Path
) -> None:
    """A job subscribed by pattern; a topic matching it is created and written to while the job is stopped: the
    restored job finds it (DISC-002) and reads it from its first record (DISC-005), as for partitions added."""
    fail_on(added_while_stopped(harness, flink_broker, kafka, tmp_path, new_topic=True), detail=f"runs in {tmp_path}")


REFUSED_WRITES: Final = 3
"""Records written one at a time while the broker refuses the sink's writes."""
REFUSAL_RESTARTS: Final = 20
"""A job that surfaces the refusal fails again on each restart while the refusal lasts (a poll's time)."""


def await_visible(kafka: KafkaClient, running: RunningJob, sink: str, values: Sequence[bytes]) -> None:
    """Until ``values`` are all in the sink's output; ``HarnessError`` when the job ended first or took longer than
    its start may take (the sink writes, the broker takes them: no fault yet)."""

    def shown() -> bool | None:
        if running.ended(within_s=0.0):
            raise HarnessError(f"the job ended ({running.finish().ended}) before it wrote its first records")
        return True if set(values) <= set(sink_values(kafka, sink)) else None

    try:
        wait_until(shown, STARTED_WITHIN_S, "the job's first records written", step_s=0.2)
    except KafkaError as error:
        raise HarnessError(str(error)) from None


def write_refused(kafka: KafkaClient, running: RunningJob, tp: TopicPartition, value: bytes) -> bool:
    """Write ``value`` while the sink's writes are refused, alone (the job idle when its send fails), and wait
    until the job went on: a checkpoint holding its read completed, or the job restarted (``True``: it surfaced
    an error, and the refusal has done its part). ``HarnessError`` when neither came in time."""
    kafka.produce(tp, None, value)
    return settled(running, value)


@requirement("COMMIT-007", "COMMIT-011", capability="flink-job")
@pytest.mark.timeout(JOB_TIMEOUT_S * 3)
def test_required_COMMIT_007_flink_at_least_once_sink_surfaces_writes_the_broker_refused(
    harness: FlinkHarness, flink_broker: Broker, kafka: KafkaClient, tmp_path: Path
) -> None:
    """An at-least-once job writes its input to the sink topic; once records flow the broker refuses every write
    to that topic (``refused_writes``) while a few records are written one at a time, each until a
    checkpoint holding it completed or the job restarted, then takes writes again. Failing and restarting from the
    checkpoint is conforming; a refused record missing from the output in the end is an error the sink swallowed
    (COMMIT-007: FLINK-35749, flink-connector-kafka 3.2.0 checked the send's error in a mailbox task whose result
    nobody read, and an at-least-once checkpoint completed without the record), any other one lost (COMMIT-011)."""
    tag = f"flink-{uuid4().hex[:8]}"
    source, sink = f"{tag}-in", f"{tag}-out"
    kafka.create_topic(source, 2)
    kafka.create_topic(sink, 1)
    write(kafka, source, (0, 1), 20, f"{tag}-before")
    ends = {TopicPartition(source, p): 40 for p in (0, 1)}
    within_s = STARTED_WITHIN_S + REFUSED_WRITES * SETTLED_WITHIN_S + SLACK_MS / 1000
    job = replace(
        job_of(flink_broker, (source,), sink, False, 2),
        stop=Stop(at_offsets=ends, within_ms=int(within_s * 1000)),
        restart_attempts=REFUSAL_RESTARTS,
    )
    refused = [f"{tag}-refused-{i}".encode() for i in range(REFUSED_WRITES)]
    work = tmp_path / "job"
    running = harness.start(job, work)
    await_visible(kafka, running, sink, [f"{tag}-before-{p}-19".encode() for p in (0, 1)])
    with refused_writes(flink_broker, sink):
        for i, value in enumerate(refused):
            if write_refused(kafka, running, TopicPartition(source, i % 2), value):
                refused = refused[: i + 1]
                break
    for tp, end in ends.items():
        count = end - kafka.latest_offset(tp, Isolation.READ_UNCOMMITTED)
        kafka.produce_batch(tp, [(None, f"{tag}-after-{tp.partition}-{i}".encode()) for i in range(count)])
    result = running.finish()
    if not result.stop_met:
        raise HarnessError(f"the job did not read its input to {ends} in time: {work}")
    produced = Counter(r.value for rs in topic_records(kafka, source, Isolation.READ_UNCOMMITTED).values() for r in rs)
    seen = Counter(r.value for rs in visible_output(kafka, sink).values() for r in rs)
    cause = "was written while the broker refused the sink's writes"
    violations = check_rewritten(Counter(refused), seen, cause)
    violations += check_output(produced - Counter(refused), seen, exactly_once=False)
    restarts = max(s.attempt for s in result.history.segments)
    fail_on(violations, detail=f"{len(refused)} records refused, {restarts} restarts: {work}")


KILLED_TXN_TIMEOUT_MS: Final = 5_000
"""The killed job's ``transaction.timeout.ms``: the broker aborts its open transactions this long after their start."""
KILLED_CHECKPOINT_MS: Final = 20_000
"""Checkpoints of the killed job: rare, so each transaction holds records for seconds and the kill lands in one."""


@requirement("COMMIT-004", capability="flink-job")
@pytest.mark.timeout(JOB_TIMEOUT_S)
def test_required_COMMIT_004_flink_job_killed_and_not_restarted_blocks_readers_no_longer_than_its_timeout(
    harness: FlinkHarness, flink_broker: Broker, kafka: KafkaClient, tmp_path: Path
) -> None:
    """An exactly-once job (``transaction.timeout.ms`` 5 s, a checkpoint every 20 s) is SIGKILLed while its sink's
    transactions hold records, and never restarted: no recovery will abort them, so the transaction timeout the
    sink gave its producers is what lets read_committed readers past them, within that timeout and the broker's
    abort sweep (KafkaSink passes its producer properties to each transactional producer)."""
    tag = f"flink-{uuid4().hex[:8]}"
    source, sink = f"{tag}-in", f"{tag}-out"
    kafka.create_topic(source, PARTITIONS)
    kafka.create_topic(sink, 2)
    write(kafka, source, range(PARTITIONS), 500, tag)
    properties = {**SINK_DEFAULTS, "transaction.timeout.ms": str(KILLED_TXN_TIMEOUT_MS)}
    job = replace(
        job_of(flink_broker, (source,), sink, True, 2),
        sink=Sink(sink, True, f"{sink}-txn", properties),
        checkpoint_interval_ms=KILLED_CHECKPOINT_MS,
        stop=Stop(after_records=10**9, within_ms=JOB_TIMEOUT_S * 1000),
    )
    running = harness.start(job, tmp_path / "job")

    def holding_records() -> bool | None:
        return True if any(lso < end for lso, end in stable_offsets(kafka, sink).values()) else None

    def ended_or_holding() -> bool | None:
        return True if running.ended(within_s=0.0) else holding_records()

    try:
        wait_until(ended_or_holding, STARTED_WITHIN_S, "a sink transaction holding records", step_s=0.05)
        if running.ended(within_s=0.0):
            running.finish()  # raises, saying why it ended
            raise HarnessError("the job ended before a transaction of its sink held records")
    except KafkaError as error:
        raise HarnessError(f"no transaction of the job's sink held records: {error}") from error
    finally:
        running.kill()
    killed_at = time.monotonic()
    ends = {tp: end for tp, (_, end) in stable_offsets(kafka, sink).items()}

    def unblocked() -> bool | None:
        return True if all(lso >= ends[tp] for tp, (lso, _) in stable_offsets(kafka, sink).items()) else None

    bound_s = KILLED_TXN_TIMEOUT_MS / 1000 + TXN_TIMEOUT_WAIT_S
    with contextlib.suppress(KafkaError):  # still blocked at the bound: check_unblocked names it
        wait_until(unblocked, bound_s, "the killed job's transactions timed out", step_s=0.2)
    stable = {tp: lso for tp, (lso, _) in stable_offsets(kafka, sink).items()}
    when = f"{time.monotonic() - killed_at:.0f} s after the kill (transaction.timeout.ms={KILLED_TXN_TIMEOUT_MS})"
    fail_on(check_unblocked(stable, ends, when), detail=f"job in {tmp_path / 'job'}")


def failure_named(work: Path, error: HarnessError) -> str:
    """The error a failed harness run names: its stack trace's deepest cause (the last ``Caused by:`` line of its
    stderr), else the first exception line, else ``error`` itself (whose tail of stderr may miss both)."""
    log = work / "stderr.log"
    lines = log.read_text(encoding="utf-8", errors="replace").splitlines() if log.exists() else []
    causes = [line.removeprefix("Caused by: ") for line in lines if line.startswith("Caused by: ")]
    thrown = [line for line in lines if "Exception: " in line and not line.startswith("\t")]
    return (causes or thrown[:1] or [str(error)])[-1]


@requirement("COMMIT-022", "COMMIT-027", capability="flink-job")
@pytest.mark.timeout(JOB_TIMEOUT_S)
def test_required_COMMIT_022_flink_exactly_once_sink_without_a_prefix_is_refused_at_start(
    harness: FlinkHarness, flink_broker: Broker, kafka: KafkaClient, tmp_path: Path
) -> None:
    """A bounded job over a few records whose exactly-once ``KafkaSink`` is built without
    ``setTransactionalIdPrefix``: it must not start (FLINK-37380, connector 4.0.0: ``KafkaSinkBuilder.build``
    fails); connector 3.x runs it under its default prefix ``kafka-sink``, shared by every such sink."""
    tag = f"flink-{uuid4().hex[:8]}"
    source, sink = f"{tag}-in", f"{tag}-out"
    kafka.create_topic(source, PARTITIONS)
    kafka.create_topic(sink, 2)
    write(kafka, source, range(PARTITIONS), 5, tag)
    job = job_of(flink_broker, (source,), sink, True, 2)
    job = replace(job, sink=replace(job.sink, transactional_id_prefix=None), timeout_ms=BOUNDED_TIMEOUT_MS)
    error = None
    try:
        harness.run(job, tmp_path / tag)
    except HarnessError as refused:
        error = failure_named(tmp_path / tag, refused)
    written = [value.decode("utf-8", "backslashreplace") for value in sink_values(kafka, sink)]
    fail_on(check_prefixes_refused([""], error, written), detail=f"run in {tmp_path / tag}")


@requirement("COMMIT-023", "COMMIT-028", capability="flink-job")
@pytest.mark.timeout(JOB_TIMEOUT_S * 3)
@pytest.mark.parametrize("old", NAMING)
def test_required_COMMIT_023_flink_a_savepoint_restored_under_the_other_naming_loses_nothing(
    harness: FlinkHarness, flink_broker: Broker, kafka: KafkaClient, tmp_path: Path, old: str
) -> None:
    """A job under ``TransactionNamingStrategy`` ``old`` stops with a savepoint part-way through its input; more
    is written, and the job is restored from the savepoint under the other strategy (where Flink refuses that,
    as it refuses POOLING -> INCREMENTING, under ``old`` again) and reads to the end. Its read_committed output
    must hold every input record once, and no partition's last stable offset may stay behind its end."""
    if old not in harness.release.transaction_naming:
        pytest.skip(
            f"flink-connector-kafka {harness.release.connector} has one transactional-id naming "
            "(TransactionNamingStrategy came with connector 4.0, FLINK-34554): there is nothing to switch"
        )
    new = next(naming for naming in NAMING if naming != old)
    tag = f"flink-{uuid4().hex[:8]}"
    source, sink = f"{tag}-in", f"{tag}-out"
    kafka.create_topic(source, PARTITIONS)
    kafka.create_topic(sink, 2)
    work = tmp_path / tag
    write(kafka, source, range(PARTITIONS), 100, f"{tag}-before")
    job = job_of(flink_broker, (source,), sink, True, 2)
    first = harness.run(replace(job, sink=replace(job.sink, naming=old), stop=Stop(after_records=150)), work / "run-1")
    ends = write(kafka, source, range(PARTITIONS), 50, f"{tag}-after")
    rest = replace(job, stop=Stop(at_offsets=left_to_read(ends, committed_reads([first.history]))))
    rest = replace(rest, restore_from=first.savepoint)
    refused = None
    try:
        harness.run(replace(rest, sink=replace(rest.sink, naming=new)), work / "run-2")
    except HarnessError as error:
        refused = failure_named(work / "run-2", error)
        harness.run(replace(rest, sink=replace(rest.sink, naming=old)), work / "run-2-again")
    produced = topic_records(kafka, source, Isolation.READ_UNCOMMITTED)
    expected = [r.value or b"" for records in produced.values() for r in records]
    committed = [r.value or b"" for records in visible_output(kafka, sink).values() for r in records]
    sink_partitions = [TopicPartition(sink, p) for p in range(2)]
    stable = {tp.partition: kafka.latest_offset(tp, Isolation.READ_COMMITTED) for tp in sink_partitions}
    log_ends = {tp.partition: kafka.high_watermark(tp) for tp in sink_partitions}
    found = check_naming_switched(old.lower(), new.lower(), expected, committed, stable, log_ends, refused)
    fail_on(found, detail=f"runs in {work}")


GROUP_HELD: Final = 7
"""The offset the group holds for partition 0: between its first record (EARLIEST) and its end (LATEST)."""
GROUP_WRITTEN: Final = 20
"""Records on each partition before the job starts."""


def probe_until_ended(kafka: KafkaClient, running: RunningJob, tp: TopicPartition, within_s: float) -> None:
    """Write one record a second to ``tp`` until the job ended (it stops once it read them, or fails) or
    ``within_s`` passed (``finish`` then waits for the harness's own bound): a start at LATEST, resolved whenever
    the reader first polls, still has records to read."""
    deadline = time.monotonic() + within_s
    while not running.ended(within_s=1.0) and time.monotonic() < deadline:
        kafka.produce(tp, None, b"probe")


@requirement("RESTORE-018", "RESTORE-021", capability="flink-job")
@pytest.mark.timeout(JOB_TIMEOUT_S)
@pytest.mark.parametrize("fallback", [None, "latest"], ids=["none", "latest"])
def test_required_RESTORE_018_flink_a_start_from_group_offsets_fails_named_or_starts_at_the_fallback(
    harness: FlinkHarness, flink_broker: Broker, kafka: KafkaClient, tmp_path: Path, fallback: Literal["latest"] | None
) -> None:
    """A job started with ``OffsetsInitializer.committedOffsets()`` (``fallback`` none) or
    ``committedOffsets(OffsetResetStrategy.LATEST)``, its group holding an offset for partition 0 of two only:
    without a fallback the job must fail naming partition 1 (Kafka's consumer: ``NoOffsetForPartitionException``);
    with LATEST it must read partition 0 from the held offset and partition 1 from its end at start. Probes are
    written to partition 1 until the job stopped (once it read partition 0 to its end and partition 1 past it)."""
    tag = f"flink-{uuid4().hex[:8]}"
    source, sink, group = f"{tag}-in", f"{tag}-out", f"{tag}-group"
    kafka.create_topic(source, 2)
    kafka.create_topic(sink, 1)
    ends = write(kafka, source, (0, 1), GROUP_WRITTEN, tag)
    held, probed = {TopicPartition(source, 0): GROUP_HELD}, TopicPartition(source, 1)
    kafka.commit_offsets(group, held)
    stop = Stop(at_offsets={**ends, probed: ends[probed] + 1}, within_ms=int(STARTED_WITHIN_S * 1000) + SLACK_MS)
    job = replace(
        job_of(flink_broker, (source,), sink, False, 1),
        starting_offsets=GroupOffsets(group, fallback),
        stop=stop,
        restart_attempts=0,  # a failed start is the verdict: restarts would only fail the same way
    )
    work = tmp_path / tag
    running = harness.start(job, work)
    probe_until_ended(kafka, running, probed, STARTED_WITHIN_S + stop.within_ms / 1000)
    started, error = None, None
    try:
        result = running.finish()
    except HarnessError as failed:
        error = failure_named(work, failed)
    else:
        firsts = {tp: kafka.earliest_offset(tp) for tp in ends}
        started = starts_read(result.history.reads(), firsts, ends)
    configured = None if fallback is None else LATEST
    fail_on(check_group_start(ends, held, configured, started, error), detail=f"group {group}, job in {work}")
