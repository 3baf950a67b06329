"""Flink's own Kafka connector in real Flink jobs (the local MiniCluster) on the live broker, judged by the pipeline
checkers: its history read once end to end through a task failure and a rescale from a savepoint, its sink's output
exactly once; and the same job with the sink's exactly-once mode switched off caught duplicating on COMMIT-011.

Each test runs on the connector releases ``KCONFORM_FLINK_VERSIONS`` names (comma-separated versions, or ``all``
for every pinned one: ``make flink-versions``), by default the newest alone (``make test``); the first test of a
session resolves a release's harness with Maven when it is not built yet.
"""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path
from uuid import uuid4

import pytest

from kconform.conformance.brokers import Broker
from kconform.conformance.checks.checkers import Violation
from kconform.conformance.checks.pipeline_checkers import check_read_once, check_single_reader, check_sink_output
from kconform.conformance.flink.harness import FlinkHarness, visible_output
from kconform.conformance.flink.history import committed_reads, left_to_read
from kconform.conformance.flink.job import Failure, JobRun, Sink, Stop
from kconform.conformance.flink.versions import ConnectorRelease, chosen
from kconform.conformance.spark.pipeline import fill
from kconform.reference_impl.kafka_client import KafkaClient, topic_records
from kconform.reference_impl.ports import Isolation
from kconform.reference_impl.types import TopicPartition

pytestmark = [pytest.mark.flink, pytest.mark.integration]

PARTITIONS = 4
PER_PARTITION = 150
PACE_MS = 2
"""Spreads each run's reads over several 200 ms checkpoints, so that failures and savepoints fall between them."""


RELEASES_RUN = chosen(os.environ.get("KCONFORM_FLINK_VERSIONS"))


@pytest.fixture(scope="module", params=RELEASES_RUN, ids=[r.connector for r in RELEASES_RUN])
def harness(request: pytest.FixtureRequest) -> FlinkHarness:
    """Each chosen connector release, its harness built on first use."""
    release: ConnectorRelease = request.param
    return FlinkHarness(release, print)


def sink_output_violations(kafka: KafkaClient, source: str, sink: str) -> list[Violation]:
    produced = topic_records(kafka, source, Isolation.READ_UNCOMMITTED)
    return check_sink_output(produced, visible_output(kafka, sink), exactly_once=True)


def filled_topics(kafka: KafkaClient, source: str, sink: str, tag: str) -> dict[TopicPartition, int]:
    """A source topic filled with ``PER_PARTITION`` records a partition and an empty two-partition sink topic;
    the source's end offsets."""
    kafka.create_topic(source, PARTITIONS)
    kafka.create_topic(sink, 2)
    return fill(kafka, source, PARTITIONS, PER_PARTITION, tag)


def exactly_once_job(broker: Broker, source: str, sink: str, tag: str) -> JobRun:
    """The source topic by list into an exactly-once sink, at parallelism 2, a checkpoint every 200 ms."""
    return JobRun(broker.bootstrap_servers, (source,), Sink(sink, True, f"{tag}-txn"), 2, checkpoint_interval_ms=200)


def test_exactly_once_through_a_task_failure_and_a_rescale_from_a_savepoint(
    broker: Broker, harness: FlinkHarness, tmp_path: Path
) -> None:
    tag = f"flink-{uuid4().hex[:8]}"
    source, sink = f"{tag}-in", f"{tag}-out"
    with KafkaClient(broker) as kafka:
        ends = filled_topics(kafka, source, sink, tag)
        job = replace(exactly_once_job(broker, source, sink, tag), pace_ms=PACE_MS)
        failing = replace(job, stop=Stop(after_records=400), failure=Failure(subtask=0, after_records=120))
        first = harness.run(failing, tmp_path / "run-1")
        left = left_to_read(ends, committed_reads([first.history]))
        second = harness.run(
            replace(job, parallelism=3, restore_from=first.savepoint, stop=Stop(at_offsets=left)), tmp_path / "run-2"
        )
        runs = [first.history, second.history]
        violations = check_read_once(committed_reads(runs), ends)
        violations += check_single_reader(first.history.reads(), 2) + check_single_reader(second.history.reads(), 3)
        violations += sink_output_violations(kafka, source, sink)
    assert first.savepoint is not None and left, "the first run stopped before it had read everything"
    assert {(s.subtask, s.attempt) for s in first.history.segments} >= {(0, 1)}, "subtask 0 never failed"
    assert {s.subtask for s in second.history.segments} == {0, 1, 2} and second.stop_met
    assert not violations, violations


@pytest.mark.parametrize("exactly_once", [True, False], ids=["exactly-once", "at-least-once"])
def test_a_failure_after_the_sink_flushed_duplicates_only_without_exactly_once(
    broker: Broker, harness: FlinkHarness, tmp_path: Path, exactly_once: bool
) -> None:
    """Subtask 0 fails in a checkpoint, after the sink flushed the records read since the last one: the job goes
    back to that checkpoint and reads them again. Exactly-once, their transaction was aborted; at-least-once,
    they were written and are written again, which COMMIT-011 catches as duplicates."""
    tag = f"flink-{uuid4().hex[:8]}"
    source, sink = f"{tag}-in", f"{tag}-out"
    with KafkaClient(broker) as kafka:
        ends = filled_topics(kafka, source, sink, tag)
        failure = Failure(subtask=0, after_records=100, at="checkpoint")
        job = JobRun(
            broker.bootstrap_servers,
            (),
            Sink(sink, exactly_once, f"{tag}-txn"),
            2,
            failure=failure,
            checkpoint_interval_ms=200,
            pace_ms=PACE_MS,
            topic_pattern=f"{tag}-i[n]",  # the source topic alone, by pattern
        )
        run = harness.run(job, tmp_path / "run")
        read = check_read_once(committed_reads([run.history]), ends)
        output = sink_output_violations(kafka, source, sink)
    assert run.ended == "finished" and run.idle_ms is None, f"the bounded job did not end: {run}"
    assert any(s.attempt > 0 for s in run.history.segments), "no subtask failed"
    assert not read, read
    if exactly_once:
        assert not output, output
    else:
        assert output and {(v.requirement, v.kind) for v in output} == {("COMMIT-011", "duplicate")}, output


def test_a_stop_at_the_ends_holds_only_once_a_completed_checkpoint_holds_them(
    broker: Broker, harness: FlinkHarness, tmp_path: Path
) -> None:
    """Subtask 1 fails in a checkpoint once it read all but a few of its records, after subtask 0 may have read all
    of its own: the job goes back to its last completed checkpoint, so what either read since is read again. A stop
    at the ends must not hold on the failed attempt's reads (the harness stopped such a run with a savepoint that
    had not read them, and the records were never read: a false RESTORE-003 of FLINK-35749's fixed 3.3.0,
    2026-12-01), so the run's savepoint holds every record."""
    tag = f"flink-{uuid4().hex[:8]}"
    source, sink = f"{tag}-in", f"{tag}-out"
    with KafkaClient(broker) as kafka:
        ends = filled_topics(kafka, source, sink, tag)
        job = replace(
            exactly_once_job(broker, source, sink, tag),
            failure=Failure(subtask=1, after_records=2 * PER_PARTITION - 5, at="checkpoint"),
            stop=Stop(at_offsets=ends),
        )
        run = harness.run(job, tmp_path / "run")
        read = check_read_once(committed_reads([run.history]), ends)
        output = sink_output_violations(kafka, source, sink)
    assert run.ended == "savepoint" and run.stop_met, f"the run did not reach its stop: {run}"
    assert any(s.subtask == 1 and s.attempt > 0 for s in run.history.segments), "subtask 1 never failed"
    assert not read, read
    assert not output, output


@pytest.mark.parametrize("guarantee", ["EXACTLY_ONCE", "AT_LEAST_ONCE", "NONE"])
def test_a_batch_job_reads_its_bounded_input_once_and_its_sink_holds_it(
    broker: Broker, harness: FlinkHarness, tmp_path: Path, guarantee: str
) -> None:
    """A backfill: the source topic by list, bounded at its latest offsets, in BATCH mode (no checkpoint) at
    parallelism 2, into a sink at each guarantee. It ends, reads every record once, and its sink holds every record
    for a read_committed reader: once for EXACTLY_ONCE (its writer hands its transaction to its committer at the end
    of its input; a writer that aborts it at its close loses them all, FLINK-37622), at least once otherwise
    (NONE promises nothing, but a finished job's writer flushed at its end of input)."""
    tag = f"flink-{uuid4().hex[:8]}"
    source, sink = f"{tag}-in", f"{tag}-out"
    with KafkaClient(broker) as kafka:
        ends = filled_topics(kafka, source, sink, tag)
        out = Sink(sink, guarantee == "EXACTLY_ONCE", f"{tag}-txn", no_guarantee=guarantee == "NONE")
        job = JobRun(broker.bootstrap_servers, (source,), out, 2, pace_ms=PACE_MS, runtime_mode="BATCH")
        run = harness.run(job, tmp_path / "run")
        read = check_read_once(committed_reads([run.history]), ends) + check_single_reader(run.history.reads(), 2)
        produced = topic_records(kafka, source, Isolation.READ_UNCOMMITTED)
        output = check_sink_output(produced, visible_output(kafka, sink), exactly_once=guarantee == "EXACTLY_ONCE")
    assert run.ended == "finished" and run.idle_ms is None, f"the bounded job did not end: {run}"
    assert not any(s.checkpoints() for s in run.history.segments), "a BATCH job took a checkpoint"
    assert not read, read
    assert not output, output
