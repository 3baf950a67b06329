"""Pipeline level: the adapter's Spark source and sink as real streaming queries on a live broker.

Each scenario runs the adapter's queries (``kconform.conformance.spark.pipeline``) and judges what Spark's tasks
read and what the sink made visible with the pure checkers: the plan of every batch, reading
every record once across restarts, rescales (2 -> 3 -> 1 -> 4 and drawn sequences), injected
task failures and drivers killed at drawn points, and the sink's output against its input.
``KCONFORM_BROKER`` chooses the broker (default: Apache Kafka, started by the suite); what the
broker cannot show (see ``kconform.conformance.brokers.probe``) is not asserted: the check is skipped or reported
PARTIAL with the probe's reason.

Every pipeline example costs seconds, so Hypothesis draws few of them (``pipeline_settings``)
beside the explicit ``@example``; a failure prints the drawn schedule and its replay blob.
"""

from __future__ import annotations

import contextlib
import json
import re
import subprocess
import time
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Final
from uuid import uuid4

import pytest
from hypothesis import Phase, example, given, settings
from hypothesis import strategies as st

from ..extras import pipeline_missing

if (missing := pipeline_missing()) is not None:  # a core install: every test here is skipped, naming the fix
    pytest.skip(missing, allow_module_level=True)

from pyspark.errors import StreamingQueryException
from pyspark.sql import SparkSession

from ...reference_impl.discovery import ZeroPartitionsPolicy
from ...reference_impl.kafka_client import KafkaClient, stable_offsets, topic_records, wait_until
from ...reference_impl.ports import Isolation, KafkaError, UnsupportedFeatureError
from ...reference_impl.types import TopicPartition
from ..adapter.interface import DEFAULT_MASTER, PipelineAdapter
from ..brokers import Broker
from ..brokers.capability import DUPLICATE_VERDICT_NEEDS, Capability, lacking
from ..brokers.facts import read_facts
from ..brokers.probe import TXN_TIMEOUT_WAIT_S, probe
from ..checks.checkers import (
    Violation,
    check_offset_continuity,
    check_topic_deleted,
    check_zero_partitions,
    fail_on,
)
from ..checks.evidence import assignment_grid, offset_step, offset_timeline
from ..checks.input_checkers import check_records_read, check_values_as_written
from ..checks.liveness_checkers import (
    check_driver_exit,
    check_query_ran,
    check_restarted_reads,
    query_failure,
)
from ..checks.pipeline_checkers import (
    Truncated,
    check_closed_at_stop,
    check_discovered,
    check_foreign_left_open,
    check_gone_position,
    check_listed_reads,
    check_offsets_read_by_one_task,
    check_pattern_reads,
    check_position_past_end,
    check_read_once,
    check_refused_timeout,
    check_rewritten,
    check_single_reader,
    check_task_plan,
    check_timed_out_task,
    check_unblocked,
    check_unmapped_start,
    check_zombie_fenced,
    ends_read,
    overlapping_attempts,
    unslowed_sink,
    write_spans_ms,
)
from ..checks.strategy_checkers import check_sink_placement
from ..errors import HarnessError
from ..gate.pytest_plugin import (
    BROKER_ANSWERS,
    BROKER_CAPABILITIES,
    BROKER_FACTS,
    BROKER_VERSION,
    Partial,
    adapter_spec,
    requirement,
)
from ..generators.input_classes import (
    INPUT_CLASSES,
    InputWrite,
    input_writes,
    log_view,
    write_input,
    written_values,
)
from ..generators.start_classes import LATE_TOPIC, VERSIONED, matches_nothing, start_classes
from ..generators.strategies import InterleavingMix
from ..spark.cluster import is_local
from ..spark.driver import (
    DriverRun,
    StandbyDrivers,
    hand_over,
    kill_group,
    log_end,
    output_since,
    raise_if_cannot_check,
    session_up_at,
    spawn,
)
from ..spark.failures import StalledOriginal, TaskFailures
from ..spark.injections import (
    group_gone,
    injected,
    kill_not_landed,
    killed_by_sigkill,
    no_transaction_left_open,
    partitions_missing,
    require_available_now,
    require_replay,
)
from ..spark.kill_points import (
    CLOCK,
    CLOCK_SPAN_MS,
    EVENT_DELAY_MS,
    EVENT_SOURCES,
    PROGRESS,
    SINK_COMMITTED,
    SINK_ENDS,
    SINK_POLL_S,
    Advances,
    KillPoint,
    SinkEnds,
    check_kill_point,
    events_reached,
    landed_by_source,
    progress_lines,
)
from ..spark.pipeline import (
    Pipeline,
    QueryTimes,
    fill,
    judge_sink,
    local_session,
    task_attempts,
    topic_values,
)
from ..spark.real_time import batch_duration, sink_failure_unsupported
from ..spark.speculation import read_attempts, start_driver, two_hosts_missing

pytestmark = pytest.mark.pipeline

DRIVER_TIMEOUT_S: Final = 300


def pipeline_settings() -> settings:
    """The loaded profile with about one drawn example per hundred protocol examples, no shrinking
    (a pipeline example takes seconds to a minute; the failing one is printed and stored as is)."""
    return settings(
        max_examples=max(1, settings().max_examples // 100),
        phases=[Phase.explicit, Phase.reuse, Phase.generate],
    )


@pytest.fixture(scope="module")
def pipeline_adapter(adapter_under_test: Any) -> PipelineAdapter:
    """Skip before starting Spark or a broker when the adapter has no pipeline level."""
    if "pipeline" not in adapter_under_test.capabilities:
        pytest.skip(f"adapter {adapter_under_test.name!r} does not declare capability 'pipeline'")
    assert isinstance(adapter_under_test, PipelineAdapter)
    return adapter_under_test


PROBE_WAIT_S: Final = 180
PROBED = pytest.StashKey[Future[list[Capability]]]()


@pytest.fixture(scope="module")
def pipeline_broker(pipeline_adapter: PipelineAdapter, request: pytest.FixtureRequest) -> Iterator[Broker]:
    """The run's broker (``shared_broker``, the client scenarios' too), probed once in the background (the probe
    mostly waits on the broker, so it overlaps Spark's start and the first scenarios): the report shows what the
    broker can and cannot show (spec/kafka.md)."""
    running: Broker = request.getfixturevalue("shared_broker")
    request.config.stash[BROKER_VERSION] = running.version
    request.config.stash[BROKER_FACTS] = read_facts(running)
    request.config.stash[BROKER_ANSWERS] = running.answers
    with ThreadPoolExecutor(1, thread_name_prefix="kconform-probe") as pool:
        probed = request.config.stash[PROBED] = pool.submit(probe, running)
        try:
            yield running
        finally:
            request.config.stash[BROKER_CAPABILITIES] = probed.result(timeout=PROBE_WAIT_S)


class BrokerCan(dict[str, Capability]):
    """The probe's findings by name, one line in a failing example: the reports have the broker table."""

    def __repr__(self) -> str:
        return f"<{len(self)} broker capabilities, in the report's broker table>"


@pytest.fixture(scope="module")
def broker_can(pipeline_broker: Broker, request: pytest.FixtureRequest) -> dict[str, Capability]:
    """What the broker can show, once the background probe has measured it."""
    return BrokerCan((c.name, c) for c in request.config.stash[PROBED].result(timeout=PROBE_WAIT_S))


@pytest.fixture(scope="module")
def spark(pipeline_adapter: PipelineAdapter, spark_master: str) -> Iterator[SparkSession]:
    """The running session if there is one (it is shared), else one on ``--kconform-spark-master``."""
    existing = SparkSession.getActiveSession()
    session = existing or local_session(spark_master)
    try:
        yield session
    finally:
        if existing is None:
            session.stop()


@pytest.fixture(scope="module")
def standby_drivers(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> Iterator[StandbyDrivers | None]:
    """Driver processes for the scenarios that kill a driver, each started while the scenario before it runs: a
    driver's interpreter, JVM and session take about 9 s here, so one waits, its session up and warmed up by a query of
    its own (``kconform.conformance.spark.warm_up``), for the next run (``StandbyDrivers``); the first is started with
    the module's first Spark scenario (``first_driver_ahead``), or when a scenario first asks. None on a cluster
    master, where a waiting driver would hold executors: each driver is then started when it is needed, as
    ``driver_for`` does without one."""
    master = spark.sparkContext.master or DEFAULT_MASTER
    if not is_local(master):
        yield None
        return
    drivers = StandbyDrivers(master, tmp_path_factory.mktemp("drivers"), warm_up=True)
    try:
        yield drivers
    finally:
        drivers.close()


@pytest.fixture(autouse=True)
def first_driver_ahead(request: pytest.FixtureRequest) -> None:
    """When a later test of this run kills drivers, the first standby driver starts its session with the first of the
    module's Spark scenarios (``StandbyDrivers.prime``), while the scenarios before it run: a driver's session takes
    about 9 s here, which the first killed-driver scenario otherwise waits out. A run without such a test starts
    none."""
    if "spark" not in request.fixturenames or "standby_drivers" in request.fixturenames:
        return
    if any("standby_drivers" in getattr(item, "fixturenames", ()) for item in request.session.items):
        drivers: StandbyDrivers | None = request.getfixturevalue("standby_drivers")
        if drivers is not None:
            drivers.prime()


def driver_for(
    drivers: StandbyDrivers | None, run: DriverRun, log: Path, fresh: bool = False
) -> tuple[subprocess.Popen[bytes], Path, int]:
    """A driver process for ``run``, not yet given it (``hand_over`` does; until then it runs nothing), its log and
    where its output starts there: a standby's, whose log holds its own output alone (its session's start, then
    the run), so from its first line; or, without a standby on ``run``'s master or when ``fresh``, one spawned now
    that appends to ``log``, from where ``log`` ends now. A clock kill point takes a fresh one: its delay counts
    from the driver's start, its session's start included."""
    if drivers is not None and not fresh and drivers.master == run.master:
        driver, own = drivers.take()
        return driver, own, 0
    start = log_end(log)
    return spawn(run.master, log), log, start


@dataclass
class DriverClock:
    """Where a scenario's driver processes spent its time (data for the report's metrics, never judged): how many
    drivers it gave a run, their seconds from the hand-over to their exit or kill, and of those the seconds a
    driver's session was still starting (``driver_session_wait_s``: a standby not ready yet, or a fresh driver)."""

    runs: int = 0
    run_s: float = 0.0
    session_wait_s: float = 0.0

    def ended(self, handed_at: float, output: str) -> None:
        """A driver given its run at ``handed_at`` (``time.time``) has exited or been killed; ``output`` is its log."""
        now = time.time()
        self.runs += 1
        self.run_s += now - handed_at
        up = session_up_at(output)
        if up is not None:
            self.session_wait_s += min(max(0.0, up - handed_at), now - handed_at)

    def metrics(self) -> dict[str, Any]:
        return {
            "driver_runs": self.runs,
            "driver_run_s": round(self.run_s, 1),
            "driver_session_wait_s": round(self.session_wait_s, 1),
        }


@pytest.fixture
def driver_clock(request: pytest.FixtureRequest) -> Iterator[DriverClock]:
    """The test's ``DriverClock``, its figures in the test's metrics at the end."""
    clock = DriverClock()
    yield clock
    if clock.runs:
        request.node.user_properties.extend(clock.metrics().items())


@pytest.fixture
def kafka(pipeline_broker: Broker) -> Iterator[KafkaClient]:
    with KafkaClient(pipeline_broker) as client:
        yield client


@pytest.fixture
def make_pipeline(
    adapter: Any, spark: SparkSession, pipeline_broker: Broker, tmp_path: Path, request: pytest.FixtureRequest
) -> Iterator[Callable[..., Pipeline]]:
    """``make_pipeline(parallelism, checkpoint=..., **fields)``: a ``Pipeline`` of the adapter under test,
    guarded, so an exception in ``read_stream`` or ``write_stream`` fails naming the method; its
    ``client_settings`` go over the broker's security settings. Where the queries it made spent their time
    (``QueryTimes``) is in the test's metrics, as data."""
    made: list[Pipeline] = []

    def make(parallelism: int, checkpoint: Path | None = None, **fields: Any) -> Pipeline:
        settings = {**pipeline_broker.security, **fields.pop("client_settings", {})}
        pipeline = Pipeline(
            spark,
            pipeline_broker.bootstrap_servers,
            checkpoint or tmp_path / "checkpoint",
            parallelism,
            client_settings=settings,
            adapter=adapter,
            **fields,
        )
        made.append(pipeline)
        return pipeline

    yield make
    times = QueryTimes()
    for pipeline in made:
        times = times.merged(pipeline.times)
    if times.queries:
        request.node.user_properties.extend(times.metrics().items())


def new_topic(kafka: KafkaClient, partitions: int) -> str:
    name = f"kc-suite-{uuid4().hex[:8]}"
    kafka.create_topic(name, partitions)
    return name


def add_partitions(kafka: KafkaClient, topic: str, total: int) -> None:
    """Grow ``topic`` to ``total`` partitions and confirm it in the broker's metadata before the scenario goes on;
    ``HarnessError`` naming the partition add when it did not happen."""
    with injected(f"adding partitions to {topic} (to {total})"):
        kafka.create_partitions(topic, total)
        missing = partitions_missing(kafka.list_topics(), topic, total)
    if missing is not None:
        raise HarnessError(f"{missing}, so this run shows nothing about partitions added")


def forget_last_commit(pipeline: Pipeline) -> int:
    """``Pipeline.forget_last_commit``, confirmed: the batch it returns will be replayed (``require_replay``)."""
    batch = pipeline.forget_last_commit()
    require_replay(pipeline.checkpoint, batch)
    return batch


def judge_output(
    kafka: KafkaClient,
    source: str,
    sink: str,
    exactly_once: bool,
    broker_can: dict[str, Capability],
    record: Any,
    partial: Partial,
) -> None:
    """COMMIT-011 and COMMIT-013: nothing lost, order kept; with exactly-once, nothing duplicated
    where the broker can show it (where it cannot, COMMIT-011 is PARTIAL, never a pass)."""
    missing = lacking(broker_can, DUPLICATE_VERDICT_NEEDS) if exactly_once else []
    record("duplicates_checked", "no: broker lacks " + ", ".join(missing) if missing else str(exactly_once).lower())
    if missing:
        lacks = ", ".join(f"{name} ({broker_can[name].requirement_id})" for name in missing)
        partial(["COMMIT-011"], f"duplicates not checked: the broker lacks {lacks}")
    fail_on(judge_sink(kafka, source, sink, exactly_once=exactly_once and not missing))


@requirement("ASSIGN-001", "ASSIGN-002", "ASSIGN-004", capability="pipeline-assignment")
def test_required_ASSIGN_001_each_task_reads_its_reference_partitions(
    adapter: Any, make_pipeline: Callable[..., Pipeline], kafka: KafkaClient
) -> None:
    topic = new_topic(kafka, 6)
    ends = fill(kafka, topic, 6, 10, "a")
    pipeline = make_pipeline(4, subscribe=topic, max_records_per_trigger=25)
    pipeline.run_available_now()
    violations: list[Violation] = []
    grids = []
    for batch, records in sorted(pipeline.batches.items()):
        violations += [replace(v, evidence=f"batch {batch}: {v.evidence}") for v in check_task_plan(records, 4)]
        claims: dict[TopicPartition, set[int]] = {}
        for r in records:
            claims.setdefault(r.tp, set()).add(r.task)
        grids.append(assignment_grid({tp: sorted(ts) for tp, ts in claims.items()}, 4, f"batch {batch}: tasks read"))
    fail_on(violations, grids)
    fail_on(check_read_once(pipeline.records(), ends))


@requirement("RESTORE-003", "ASSIGN-007", capability="pipeline")
def test_required_RESTORE_003_injected_task_failures_are_retried_without_gap_or_duplicate(
    adapter: Any, make_pipeline: Callable[..., Pipeline], spark: SparkSession, kafka: KafkaClient, record_property: Any
) -> None:
    """The first attempt of tasks 0 and 1 fails after 3 rows in every batch; Spark's retry must
    read exactly the same records (a retried task is the same subtask with the same range), and no
    offset of a batch is read by two tasks (ASSIGN-007, whatever the connector's assigner)."""
    if task_attempts(spark) < 2:
        pytest.skip(f"master {spark.sparkContext.master} does not retry tasks; run with --spark-master local[2,3]")
    topic = new_topic(kafka, 4)
    ends = fill(kafka, topic, 4, 12, "a")
    pipeline = make_pipeline(
        2, subscribe=topic, max_records_per_trigger=20, failures=TaskFailures(frozenset({0, 1}), 3)
    )
    pipeline.run_available_now()
    record_property("failed_task_attempts", pipeline.require_injected_failures())
    double_reads = [v for batch in pipeline.batches.values() for v in check_offsets_read_by_one_task(batch)]
    fail_on(check_read_once(pipeline.records(), ends) + double_reads)


@requirement("RESTORE-002", "RESTORE-003", "ASSIGN-007", "LIVE-001", capability="pipeline-rescale")
@pytest.mark.timeout(DRIVER_TIMEOUT_S * 2)
@pipeline_settings()
@given(parallelisms=st.lists(st.integers(1, 4), min_size=2, max_size=4))
@example(parallelisms=[2, 3, 1, 4])
def test_required_RESTORE_003_rescale_sequence_continues_every_partition(
    adapter: Any,
    make_pipeline: Callable[..., Pipeline],
    kafka: KafkaClient,
    tmp_path: Path,
    parallelisms: list[int],
) -> None:
    """Restart from one checkpoint at each parallelism in turn, producing between restarts: every
    partition resumes exactly where the previous run ended, and in every batch of a run each
    partition is read by one of that run's n tasks. A batch read by other tasks (RESTORE-002) does
    not stop the sequence, so continuity (RESTORE-003, safety) and no offset of a batch read by two
    tasks (ASSIGN-007, safety) are judged in full either way."""
    topic = new_topic(kafka, 5)
    checkpoint = tmp_path / f"rescale-{uuid4().hex[:8]}"
    runs: list[Pipeline] = []
    ends: dict[TopicPartition, int] = {}
    steps = []
    readers: list[Violation] = []
    double_reads: list[Violation] = []
    for step, parallelism in enumerate(parallelisms):
        before = dict(ends)
        ends = fill(kafka, topic, 5, 6, f"step{step}")
        run = make_pipeline(parallelism, checkpoint, subscribe=topic)
        run.run_available_now()
        runs.append(run)
        expected = {tp: (before.get(tp, 0), end) for tp, end in ends.items()}
        read = [(r.tp, r.offset) for r in run.records()]
        steps.append(offset_step(f"run {step + 1}", "restart" if step else "start", parallelism, read, expected))
        timeline = [offset_timeline(steps, f"rescale {' -> '.join(map(str, parallelisms))}")]
        readers += [v for batch in run.batches.values() for v in check_single_reader(batch, parallelism)]
        double_reads += [v for batch in run.batches.values() for v in check_offsets_read_by_one_task(batch)]
        first_read: dict[TopicPartition, int] = {}
        for tp, offset in read:
            first_read[tp] = min(offset, first_read.get(tp, offset))
        continuity = [
            v for tp, end in before.items() for v in check_offset_continuity(tp, end, first_read.get(tp, end))
        ]
        fail_on(continuity, timeline)
    read_once = check_read_once([r for run in runs for r in run.records()], ends)
    fail_on(readers + read_once + double_reads, timeline, verified=["RESTORE-003", "ASSIGN-007", "LIVE-001"])


@requirement("DISC-002", "DISC-005", "DISC-009", capability="pipeline-regex")
def test_required_DISC_005_009_newly_matching_topic_is_found_and_read_from_earliest(
    adapter: Any, make_pipeline: Callable[..., Pipeline], kafka: KafkaClient
) -> None:
    """A query subscribed by pattern at ``latest``, with no discovery option: a matching topic
    created while it is stopped (found on restart, with its records already there) and one created
    while it runs (DISC-009: found without being asked, records produced before and after the query
    caught up) are both read from their first record; a topic that only shares the prefix is not read."""
    prefix = f"kc-suite-{uuid4().hex[:8]}"
    lookalike = f"{prefix}x-lookalike"
    kafka.create_topic(f"{prefix}-first", 1)
    kafka.create_topic(lookalike, 1)
    fill(kafka, lookalike, 1, 2, "never")
    pattern = f"{prefix}-.*"
    stopped = make_pipeline(2, subscribe_pattern=pattern, starting_offsets="latest")
    stopped.run_available_now()
    kafka.create_topic(f"{prefix}-while-stopped", 2)
    ends = fill(kafka, f"{prefix}-while-stopped", 2, 4, "stopped")
    running = make_pipeline(2, subscribe_pattern=pattern, starting_offsets="latest")
    running.start()
    try:
        running.process_all_available()
        kafka.create_topic(f"{prefix}-while-running", 3)
        fill(kafka, f"{prefix}-while-running", 3, 4, "running")
        running.process_all_available()
        added = fill(kafka, f"{prefix}-while-running", 3, 2, "running-later")
        running.process_all_available()
    finally:
        running.stop()
    records = [*stopped.records(), *running.records()]
    fail_on(check_pattern_reads((r.tp for r in records), pattern))
    subscribed = [r for r in records if r.tp.topic != lookalike]
    fail_on(
        check_read_once([r for r in subscribed if r.tp in ends], ends, requirement="DISC-005")
        + check_discovered([r for r in subscribed if r.tp in added], added)
    )


@requirement("DISC-005", "DISC-007", "DISC-010", "DISC-002", capability="pipeline-regex")
@pytest.mark.timeout(DRIVER_TIMEOUT_S)
def test_required_DISC_005_007_a_query_started_at_latest_before_any_matching_topic_reads_what_is_written_after(
    adapter: Any, make_pipeline: Callable[..., Pipeline], kafka: KafkaClient, tmp_path: Path, record_property: Any
) -> None:
    """A query at ``latest`` on a pattern that matches none of the topics there (near misses of the name to come:
    a longer, a shorter and another case), with no discovery option. Under the adapter's zero-partitions policy
    (its ``discovery_of_zero``; ``ignore`` where it declares none, as Spark's sources have no such option) it fails
    (naming the pattern: DISC-010) or runs idle (DISC-007). Then the matching topics are created and written while
    it runs, twice: every record written since their creation must be read once (DISC-005: found after the start,
    they begin at their first record, not at ``latest``), and no near miss (DISC-002). The classes drawn are the run's
    ``pipeline_start_*`` metrics."""
    policy = getattr(adapter, "discovery_of_zero", ZeroPartitionsPolicy.IGNORE)
    mix = InterleavingMix(start_classes((policy,)), kind="start")

    @pipeline_settings()
    @given(versioned=st.booleans(), partitions=st.integers(1, 3), parallelism=st.integers(1, 3))
    @example(versioned=True, partitions=2, parallelism=2)
    def scenario(versioned: bool, partitions: int, parallelism: int) -> None:
        mix.step(matches_nothing(policy))
        topic = f"kc-suite-{uuid4().hex[:8]}-late"
        for miss in (f"{topic}x", topic[:-1], topic.upper()):
            kafka.create_topic(miss, 1)
            fill(kafka, miss, 1, 2, "near-miss")
        pattern = re.escape(topic) + (VERSIONED if versioned else "")
        query = make_pipeline(
            parallelism, tmp_path / f"late-{uuid4().hex[:8]}", subscribe_pattern=pattern, starting_offsets="latest"
        )
        error = None
        try:
            query.start()
            query.process_all_available()
        except StreamingQueryException as failed:
            error = failed
        read = [r.tp for r in query.records()]
        fail_on(check_pattern_reads(read, pattern))  # a near miss read is DISC-002's
        fail_on(check_zero_partitions(policy, pattern, read, error))
        if error is not None:
            return
        mix.step(LATE_TOPIC)
        try:
            created = [topic, f"{topic}-v2"] if versioned else [topic]
            for name in created:
                kafka.create_topic(name, partitions)
            ends = {tp: end for name in created for tp, end in fill(kafka, name, partitions, 3, "created").items()}
            query.process_all_available()
            ends |= {tp: end for name in created for tp, end in fill(kafka, name, partitions, 2, "later").items()}
            query.process_all_available()
        finally:
            query.stop()
        records = list(query.records())
        fail_on(
            check_pattern_reads((r.tp for r in records), pattern)
            + check_read_once([r for r in records if r.tp in ends], ends, requirement="DISC-005")
        )

    try:
        scenario()
    finally:
        mix.record(record_property, "pipeline_start")


@requirement("DISC-001", capability="pipeline")
def test_required_DISC_001_a_fixed_subscription_reads_exactly_its_listed_topics(
    make_pipeline: Callable[..., Pipeline], kafka: KafkaClient
) -> None:
    """A query subscribed to two topics, with near misses of their names (another case, a longer and a shorter
    name, a ``.`` for a ``-``) written alongside, before the first run and between two runs on one checkpoint
    (one created between them): it reads every record of the listed topics once, and none of the others."""
    base = f"kc-suite-{uuid4().hex[:8]}"
    listed = [f"{base}-a", f"{base}-b"]
    near_misses = [f"{base}-A", f"{base}-ab", f"{base}-", f"{base}.a"]
    for topic in listed:
        kafka.create_topic(topic, 2)
    for topic in near_misses[:-1]:
        kafka.create_topic(topic, 1)
    records = []
    for run, alongside in (("first", near_misses[:-1]), ("second", near_misses)):
        if run == "second":
            kafka.create_topic(near_misses[-1], 1)
        ends = {tp: end for topic in listed for tp, end in fill(kafka, topic, 2, 3, run).items()}
        for topic in alongside:
            fill(kafka, topic, 1, 2, f"{run}-near-miss")
        pipeline = make_pipeline(2, subscribe=",".join(listed))
        pipeline.run_available_now()
        records += list(pipeline.records())
    listed_records = [r for r in records if r.tp.topic in listed]
    fail_on(
        check_listed_reads((r.tp for r in records), listed)
        + check_read_once(listed_records, ends, requirement="DISC-001")
    )


NO_AUTO_CREATE: Final = {"allow.auto.create.topics": "false"}
"""A source's consumers never have the broker create a topic they ask for (Java's default is true, librdkafka's
false)."""


@requirement("DISC-008", "LIVE-001", capability="pipeline-regex")
@pytest.mark.timeout(DRIVER_TIMEOUT_S)
def test_required_DISC_008_a_topic_deleted_under_a_pattern_stops_no_other_topic(
    make_pipeline: Callable[..., Pipeline], kafka: KafkaClient
) -> None:
    """A running query subscribed by pattern reads two matching topics; one is deleted (a retired topic): the query
    must neither fail nor stall, and must read on every record written to the other after the deletion. A query
    that fails is LIVE-001's ``query-failed`` (its exception as evidence): the other topic's records are still in
    Kafka, so a query that stops is not counted as losing them, and DISC-008 stays not verified. One that runs on
    without reading the other topic's new records leaves its partitions read by none: DISC-008 ``stalled``. What
    it read, of both topics, it read once each with no gap (DISC-008: a partition re-reported is read again).
    (Whether it keeps the deleted topic's offsets is in its checkpoint, in a form of the connector's own: not
    judged.)"""
    prefix = f"kc-suite-{uuid4().hex[:8]}"
    kept, deleted = f"{prefix}-kept", f"{prefix}-retired"
    kafka.create_topic(kept, 2)
    kafka.create_topic(deleted, 1)
    before = fill(kafka, kept, 2, 3, "before")
    fill(kafka, deleted, 1, 3, "before")
    # A consumer that asks for the deleted topic by name must not have the broker create it again (Java's consumer
    # allows that by default; Spark's real-time tasks keep fetching the deleted partition): stated, not assumed.
    running = make_pipeline(2, subscribe_pattern=f"{prefix}-.*", client_settings=NO_AUTO_CREATE)
    running.start()
    failure = None
    after: dict[TopicPartition, int] = {}
    try:
        running.process_all_available()
        with injected(f"deleting {deleted}"):
            kafka.delete_topic(deleted)
        after = fill(kafka, kept, 2, 3, "after")
        running.process_all_available()
    except StreamingQueryException as failed:
        failure = query_failure(failed)
    finally:
        with contextlib.suppress(StreamingQueryException):
            running.stop()
    if deleted in kafka.list_topics():  # could not check: the deletion did not hold, whoever undid it
        raise HarnessError(
            f"{deleted} exists again after the run (a client asked for it by name and the broker auto-created it): "
            "the source may never have seen it deleted, so this run shows nothing"
        )
    records = list(running.records())
    read = ends_read(records)
    read_once = check_read_once(records, read, requirement="DISC-008")  # nothing re-read or skipped
    if failure is not None:
        fail_on(check_query_ran(failure, f"subscribed to {prefix}-.* when {deleted} was deleted") + read_once)
    now = {tp: read.get(tp, 0) for tp in before}
    produced = {after[tp] - before[tp] for tp in before}
    assert len(produced) == 1, f"fill wrote unequal counts {after} after {before}: this run shows nothing"
    fail_on(read_once + check_topic_deleted(before, now, deleted, produced.pop()))


def skip_unless_broker_can(broker_can: dict[str, Capability], needed: tuple[str, ...], ids: str) -> None:
    """Skip with the probe's reason when the broker lacks a capability the scenario's verdict needs."""
    missing = lacking(broker_can, needed)
    if missing:
        seen = "; ".join(f"{name}: {broker_can[name].observation}" for name in missing)
        pytest.skip(f"{ids}: not verifiable on this broker: {', '.join(missing)} ({seen})")


@requirement("DISC-005", "DISC-009", "RESTORE-004", "RESTORE-003", capability="pipeline-regex")
def test_required_DISC_005_009_partitions_added_to_a_subscribed_topic_are_found_and_read_from_earliest(
    adapter: Any, make_pipeline: Callable[..., Pipeline], kafka: KafkaClient, broker_can: dict[str, Capability]
) -> None:
    """A query subscribed to one topic at ``latest``, with no discovery option: a partition added
    while it is stopped (found on restart, its records already there: RESTORE-004) and two added
    while it runs (found without being asked: DISC-009; records produced before and after the query
    caught up) are read from offset 0 (DISC-005); the first partitions continue where the first run
    left them (RESTORE-003)."""
    skip_unless_broker_can(broker_can, ("create_partitions",), "DISC-005, DISC-009, RESTORE-004")
    topic = new_topic(kafka, 2)
    stopped = make_pipeline(2, subscribe=topic, starting_offsets="latest")
    stopped.run_available_now()
    add_partitions(kafka, topic, 3)
    fill(kafka, topic, 3, 4, "stopped")
    running = make_pipeline(2, subscribe=topic, starting_offsets="latest")
    running.start()
    try:
        running.process_all_available()
        add_partitions(kafka, topic, 5)
        fill(kafka, topic, 5, 4, "running")
        running.process_all_available()
        ends = fill(kafka, topic, 5, 2, "running-later")
        running.process_all_available()
    finally:
        running.stop()
    records = [*stopped.records(), *running.records()]
    violations = []
    for requirement_id, partitions in (("RESTORE-003", range(2)), ("RESTORE-004", range(2, 3))):
        part = {tp: end for tp, end in ends.items() if tp.partition in partitions}
        violations += check_read_once([r for r in records if r.tp in part], part, requirement=requirement_id)
    added = {tp: end for tp, end in ends.items() if tp.partition >= 3}
    fail_on(violations + check_discovered([r for r in records if r.tp in added], added))


@requirement("DISC-003", "RESTORE-003", capability="pipeline")
def test_required_DISC_003_a_running_query_reads_each_partition_once_while_partitions_are_added(
    make_pipeline: Callable[..., Pipeline], kafka: KafkaClient, broker_can: dict[str, Capability]
) -> None:
    """A query runs over many triggers while partitions are added to its topic twice, records written everywhere
    each time: every offset of every partition is read once. A partition reported again restarts at EARLIEST, so
    its offsets are read twice (DISC-003: ``offset-duplicate``); one never read on is RESTORE-003's ``offset-gap``."""
    skip_unless_broker_can(broker_can, ("create_partitions",), "DISC-003")
    topic = new_topic(kafka, 2)
    fill(kafka, topic, 2, 3, "start")
    running = make_pipeline(2, subscribe=topic)
    running.start()
    try:
        running.process_all_available()
        for step, partitions in enumerate((3, 5)):
            add_partitions(kafka, topic, partitions)
            fill(kafka, topic, partitions, 2, f"added-{step}")
            running.process_all_available()
        ends = fill(kafka, topic, 5, 2, "last")
        running.process_all_available()
    finally:
        running.stop()
    read = check_read_once(running.records(), ends)
    fail_on([replace(v, requirement="DISC-003") if v.kind == "offset-duplicate" else v for v in read])


UPSTREAM_RESTART_BUGS: Final = "SPARK-53560 before 4.0.2, SPARK-55271 in 4.1.1 and 4.1.2"
"""The upstream bugs the available-now restart scenario meets, named in its LIVE-001 evidence (whoever fails it)."""


@requirement("RESTORE-003", "RESTORE-004", capability="pipeline")
def test_required_RESTORE_003_available_now_restart_replays_an_uncommitted_batch_after_partitions_were_added(
    adapter: Any, make_pipeline: Callable[..., Pipeline], kafka: KafkaClient, broker_can: dict[str, Capability]
) -> None:
    """A bounded (``availableNow``) query whose last batch was planned but never committed (its offsets logged,
    its commit not: the query stopped or its driver died inside the batch), restarted after a partition was
    added to its topic and records written everywhere: it must replay that batch as planned, read the rest and
    finish, every record read once (a replayed batch counts once): the first partitions continuing (RESTORE-003),
    the added one from offset 0 (RESTORE-004). A restarted query that fails instead of finishing is LIVE-001's
    ``query-failed`` (SPARK-53560: Spark's connector before 4.0.2 took the ``availableNow`` bound over the new
    partitions at start and failed replaying the batch, on every restart; SPARK-55271: 4.1.1's
    ``KafkaMicroBatchStream.metrics`` throws a NullPointerException once the replayed batch ran): what it read is
    still judged, once each, but not what it never got to, which it did not lose; RESTORE-003 and RESTORE-004
    stay not verified."""
    skip_unless_broker_can(broker_can, ("create_partitions",), "RESTORE-003, RESTORE-004")
    topic = new_topic(kafka, 2)
    fill(kafka, topic, 2, 6, "first")
    first = make_pipeline(2, subscribe=topic, max_records_per_trigger=4)
    first.run_available_now()
    replayed = forget_last_commit(first)
    add_partitions(kafka, topic, 3)
    ends = fill(kafka, topic, 3, 4, "after")
    restarted = make_pipeline(2, subscribe=topic, max_records_per_trigger=4)
    failure = None
    try:
        restarted.run_available_now()
    except StreamingQueryException as failed:
        failure = query_failure(failed)
    records = [r for batch in {**first.batches, **restarted.batches}.values() for r in batch]
    where = f"that the scenario restarted on its uncommitted batch {replayed} (where Spark's connector failed: "
    where += f"{UPSTREAM_RESTART_BUGS})"
    fail_on(check_restarted_reads(failure, where, records, ends, {"RESTORE-003": range(2), "RESTORE-004": [2]}))


ISOLATION_SETTINGS: Final = {
    Isolation.READ_COMMITTED: {"isolation.level": "read_committed"},
    Isolation.READ_UNCOMMITTED: {"isolation.level": "read_uncommitted"},
}
"""The source's client settings at each isolation, stated either way: librdkafka's default is read_committed."""
TXN_PARTITIONS: Final = 3
EVERY_INPUT_CLASS: Final = [
    InputWrite("plain", (0, 1, 2), 2),
    InputWrite("aborted-transaction", (0, 1), 3),
    InputWrite("committed-transaction", (0, 2), 2),
    InputWrite("tombstone", (1,), 1),
    InputWrite("aborted-transaction", (2,), 2),
    InputWrite("empty-value", (0, 2), 1),
    InputWrite("committed-transaction", (1,), 1),
]
"""Every input class; every partition has aborted records and ends in a commit marker."""


@requirement("RESTORE-013", "RESTORE-014", capability="pipeline")
@pytest.mark.timeout(DRIVER_TIMEOUT_S * 3)
def test_required_RESTORE_013_014_query_over_transactional_input_restarts_at_a_gap(
    adapter: Any,
    make_pipeline: Callable[..., Pipeline],
    kafka: KafkaClient,
    broker_can: dict[str, Capability],
    tmp_path: Path,
    record_property: Any,
) -> None:
    """A query at a drawn isolation (``kafka.isolation.level=read_committed``, or none: read_uncommitted) on input
    of every class (``INPUT_CLASSES``, written by a transactional and a plain producer into the live broker),
    read in small batches (``maxRecordsPerTrigger``) so that batch ends fall inside gaps; more such input, and a
    restart on its checkpoint at a drawn parallelism. Across both runs it must read each record its isolation
    reads once and nothing else: no aborted record under read_committed, no marker, none skipped at a gap or read
    again after the restart (RESTORE-013), each with the value written, a tombstone's null and an empty value kept
    apart (RESTORE-014). The input classes drawn are the run's ``pipeline_input_*`` metrics."""
    skip_unless_broker_can(broker_can, ("abort_hidden_from_read_committed",), "RESTORE-013")
    mix = InterleavingMix(INPUT_CLASSES, kind="input")

    @pipeline_settings()
    @given(
        isolation=st.sampled_from(Isolation),
        before=input_writes(TXN_PARTITIONS),
        after=input_writes(TXN_PARTITIONS),
        parallelism=st.integers(1, 3),
        restart_parallelism=st.integers(1, 3),
        batch=st.integers(1, 5),
    )
    @example(
        isolation=Isolation.READ_COMMITTED,
        before=EVERY_INPUT_CLASS,
        after=EVERY_INPUT_CLASS,
        parallelism=2,
        restart_parallelism=3,
        batch=2,
    )
    @example(
        isolation=Isolation.READ_UNCOMMITTED,
        before=EVERY_INPUT_CLASS,
        after=EVERY_INPUT_CLASS,
        parallelism=3,
        restart_parallelism=1,
        batch=3,
    )
    def scenario(
        isolation: Isolation,
        before: list[InputWrite],
        after: list[InputWrite],
        parallelism: int,
        restart_parallelism: int,
        batch: int,
    ) -> None:
        for write in [*before, *after]:
            mix.step(write.kind)
        topic = new_topic(kafka, TXN_PARTITIONS)
        checkpoint = tmp_path / f"txn-{uuid4().hex[:8]}"
        runs = []
        for step, (writes, n) in enumerate(((before, parallelism), (after, restart_parallelism))):
            write_input(kafka, topic, writes, f"{topic}-{step}")
            settings = ISOLATION_SETTINGS[isolation]
            run = make_pipeline(n, checkpoint, subscribe=topic, max_records_per_trigger=batch, client_settings=settings)
            run.run_available_now()
            runs.append(run)
        tps = [TopicPartition(topic, p) for p in range(TXN_PARTITIONS)]
        views = {tp: log_view(kafka, tp, isolation) for tp in tps}
        read = [r for run in runs for r in run.records()]
        emitted: dict[TopicPartition, list[int]] = {tp: [] for tp in views}
        for record in read:
            emitted.setdefault(record.tp, []).append(record.offset)
        written = {tp: written_values(kafka, tp) for tp in views}
        when = f"by two runs ({isolation.value}) at parallelism {parallelism}, then {restart_parallelism}"
        fail_on(
            check_records_read(views, emitted, when)
            + check_values_as_written(written, [(r.tp, r.offset, r.value) for r in read], when)
        )

    try:
        scenario()
    finally:
        mix.record(record_property, "pipeline_input")


READ_BEFORE_TRUNCATION: Final = 1013
"""Records per partition the first run reads; with ``DELETED_UNREAD`` offsets that a failure's text names only when
it names them (a small number would turn up anywhere in a stack trace)."""
DELETED_UNREAD: Final = 16


@requirement("RESTORE-015", "RESTORE-016", "RESTORE-019", "RESTORE-003", capability="pipeline")
@pytest.mark.parametrize("loss_accepted", [False, True], ids=["fail-on-data-loss", "data-loss-accepted"])
def test_required_RESTORE_015_a_position_deleted_before_it_was_read_is_never_skipped_silently(
    adapter: Any, make_pipeline: Callable[..., Pipeline], kafka: KafkaClient, tmp_path: Path, loss_accepted: bool
) -> None:
    """A query reads two partitions to their end and stops; more records are written, and DeleteRecords moves
    partition 0's log start past its position (what retention does to a query stopped too long) and partition 1's
    exactly to its position (nothing lost there). Restarted, the query must fail naming partition 0, its position
    and (RESTORE-016) its log start; or, told to accept loss (``failOnDataLoss=false``), read every record that
    still exists, once. Going on without failing when not told to, or resetting past records that still exist
    (to the end, as ``auto.offset.reset=latest`` does), is the silent loss RESTORE-015 forbids."""
    topic, checkpoint = new_topic(kafka, 2), tmp_path / "checkpoint"
    first_ends = fill(kafka, topic, 2, READ_BEFORE_TRUNCATION - 1, "before")
    first = make_pipeline(1, checkpoint, subscribe=topic)
    first.run_available_now()
    fail_on(check_read_once(first.records(), first_ends))
    ends = fill(kafka, topic, 2, 2 * DELETED_UNREAD, "after")
    gone, kept = TopicPartition(topic, 0), TopicPartition(topic, 1)
    try:
        with injected(f"DeleteRecords on {gone} and {kept}"):
            kafka.delete_records(gone, READ_BEFORE_TRUNCATION + DELETED_UNREAD)
            kafka.delete_records(kept, READ_BEFORE_TRUNCATION)
    except UnsupportedFeatureError as refused:
        pytest.skip(f"RESTORE-015: this broker refuses DeleteRecords, so no position can fall out of range: {refused}")
    restarted = make_pipeline(1, checkpoint, subscribe=topic, accept_data_loss=loss_accepted)
    error = failure_text(restarted)
    verdict = check_gone_position(error, restarted.records(), truncated(kafka, first_ends, ends), loss_accepted)
    fail_on(
        verdict, verified=["RESTORE-003", "RESTORE-015", "RESTORE-016", "RESTORE-019"]
    )  # one call judged all in full


def failure_text(pipeline: Pipeline) -> str | None:
    """Run ``pipeline`` to what is there now: its query's failure as text, or ``None`` when it ran to its end."""
    try:
        pipeline.run_available_now()
    except StreamingQueryException as failed:
        return str(failed)
    return None


def truncated(
    kafka: KafkaClient, positions: Mapping[TopicPartition, int], ends: Mapping[TopicPartition, int]
) -> dict[TopicPartition, Truncated]:
    """Each partition of ``ends`` as a restarted query finds it: the position it had reached, the log start now,
    the end now."""
    return {tp: Truncated(positions[tp], kafka.earliest_offset(tp), end) for tp, end in ends.items()}


RECREATED_RECORDS: Final = 307
"""Records the topic holds once created again (its end 308 with the sentinel): below the ``READ_BEFORE_TRUNCATION``
the query had read, and a number a failure's text names only when it names the end."""


def recreate_topic(kafka: KafkaClient, topic: str, partitions: int) -> None:
    """Delete ``topic`` and create it again under its name, empty, confirmed in the broker's metadata. The broker may
    refuse the create for a moment while the deletion completes (``TopicExistsException``, "marked for deletion"):
    asked again within the client's bound."""

    def created() -> bool | None:
        try:
            kafka.create_topic(topic, partitions)
        except KafkaError as refused:
            if "exist" in str(refused).lower() or "marked for deletion" in str(refused):
                return None
            raise
        return True

    with injected(f"deleting {topic} and creating it again"):
        kafka.delete_topic(topic)
        wait_until(created, kafka.timeout_s, f"{topic} created again", step_s=0.5)
        if any(kafka.latest_offset(TopicPartition(topic, p), Isolation.READ_UNCOMMITTED) for p in range(partitions)):
            raise KafkaError(f"{topic} was created again with records in it")


@requirement("RESTORE-022", "RESTORE-023", capability="pipeline")
@pytest.mark.parametrize("loss_accepted", [False, True], ids=["fail-on-data-loss", "data-loss-accepted"])
def test_required_RESTORE_022_a_position_past_the_end_of_a_topic_created_again_is_never_reset_silently(
    adapter: Any, make_pipeline: Callable[..., Pipeline], kafka: KafkaClient, tmp_path: Path, loss_accepted: bool
) -> None:
    """A query reads two topics to their end and stops; one is deleted and created again with fewer records than the
    query read of it (its position now lies past the new end), and more records go to the other. Restarted, the query
    must fail naming the recreated partition, its position and its end; or, told to accept loss
    (``failOnDataLoss=false``), read every record of the new topic and the other topic's new records. Going on
    without failing when not told to, or from the new end (Spark's ``failOnDataLoss=false``, a consumer's
    ``auto.offset.reset=latest``), or waiting for the new log to pass the old position, skips records no one read."""
    recreated, other, checkpoint = new_topic(kafka, 1), new_topic(kafka, 1), tmp_path / "checkpoint"
    first_ends = {
        **fill(kafka, recreated, 1, READ_BEFORE_TRUNCATION - 1, "before"),
        **fill(kafka, other, 1, READ_BEFORE_TRUNCATION - 1, "before"),
    }
    subscribe = f"{recreated},{other}"
    first = make_pipeline(1, checkpoint, subscribe=subscribe)
    first.run_available_now()
    fail_on(check_read_once(first.records(), first_ends))
    recreate_topic(kafka, recreated, 1)
    ends = {**fill(kafka, recreated, 1, RECREATED_RECORDS, "recreated"), **fill(kafka, other, 1, 31, "after")}
    restarted = make_pipeline(1, checkpoint, subscribe=subscribe, accept_data_loss=loss_accepted)
    error = failure_text(restarted)
    fail_on(check_position_past_end(error, restarted.records(), truncated(kafka, first_ends, ends), loss_accepted))


@requirement("RESTORE-017", "RESTORE-020", capability="pipeline")
def test_required_RESTORE_017_a_partition_left_out_of_specific_start_offsets_fails_named_or_starts_at_earliest(
    adapter: Any, make_pipeline: Callable[..., Pipeline], kafka: KafkaClient
) -> None:
    """A fresh query on a two-partition topic, started at specific offsets (Spark's JSON notation) that name only
    partition 0, at offset 4: it must fail naming partition 1, or read partition 0 from 4 and partition 1 from its
    first record (EARLIEST, the fallback when none is configured); a partition left out that starts at its end
    (LATEST) or anywhere else loses records without a word."""
    topic = new_topic(kafka, 2)
    ends = fill(kafka, topic, 2, 9, "s")
    specified = {TopicPartition(topic, 0): 4}
    pipeline = make_pipeline(1, subscribe=topic, starting_offsets=json.dumps({topic: {"0": 4}}))
    error = failure_text(pipeline)
    fail_on(check_unmapped_start(error, pipeline.records(), specified, ends))


UNCOMMITTED_BATCH_CLASSES: Final = ("replayed-at-its-parallelism", "replayed-rescaled")
"""Spark's closest analogue of a checkpoint declined while its transactions are open (COMMIT-009 at the protocol
level): a batch whose tasks committed and whose commit-log entry was never written, replayed on restart at the
parallelism it ran at or at another. A query has no checkpoint to decline: its tasks commit their own
transactions (librdkafka has no KIP-939, so none outlives its task) and then the driver writes the batch's entry
or dies first; so no pre-committed transaction waits for a later batch, and the replay is what must not repeat it."""
FIRST_PARALLELISM: Final = 2


@requirement("COMMIT-011", "COMMIT-013", capability="pipeline-exactly-once-sink")
def test_required_COMMIT_011_batch_replayed_after_its_tasks_committed_writes_nothing_again(
    adapter: Any, make_pipeline: Callable[..., Pipeline], kafka: KafkaClient, tmp_path: Path, record_property: Any
) -> None:
    """Source to exactly-once sink at parallelism 2; the commit-log entry of the last batch is lost (a driver
    crash after the tasks committed), so Spark replays it, on a restart at a drawn parallelism (a rescale while
    a batch was uncommitted, the window where Paimon #9666 and Hudi #6098 lost exactly-once): read_committed
    must still see each record once. The classes drawn (``UNCOMMITTED_BATCH_CLASSES``) are the run's
    ``pipeline_uncommitted_batch_*`` metrics."""
    mix = InterleavingMix(UNCOMMITTED_BATCH_CLASSES, kind="uncommitted-batch")

    @pipeline_settings()
    @given(replay_parallelism=st.integers(1, 3))
    @example(replay_parallelism=3)
    @example(replay_parallelism=FIRST_PARALLELISM)
    def scenario(replay_parallelism: int) -> None:
        mix.step(UNCOMMITTED_BATCH_CLASSES[replay_parallelism != FIRST_PARALLELISM])
        source, sink = new_topic(kafka, 3), new_topic(kafka, 2)
        checkpoint = tmp_path / f"replay-{uuid4().hex[:8]}"
        fill(kafka, source, 3, 10, "a")
        for run, parallelism in (("first", FIRST_PARALLELISM), ("replay", replay_parallelism)):
            pipeline = make_pipeline(parallelism, checkpoint, subscribe=source, sink_topic=sink)
            pipeline.run_available_now()
            if run == "first":
                forget_last_commit(pipeline)
                fill(kafka, source, 3, 10, "b")
        fail_on(judge_sink(kafka, source, sink, exactly_once=True))

    try:
        scenario()
    finally:
        mix.record(record_property, "pipeline_uncommitted_batch")


REFUSED_TXN_TIMEOUT_MS: Final = 2_147_483_647
"""librdkafka's largest ``transaction.timeout.ms`` (24.8 days): above any broker's ``transaction.max.timeout.ms``."""


@requirement("COMMIT-015", "COMMIT-024", capability="pipeline-exactly-once-sink")
def test_required_COMMIT_015_a_refused_transaction_timeout_fails_the_query_naming_both_settings(
    adapter: Any, make_pipeline: Callable[..., Pipeline], kafka: KafkaClient
) -> None:
    """The sink asks for a transaction timeout the broker refuses: the query must fail, within its bound,
    with an error naming ``transaction.timeout.ms`` and ``transaction.max.timeout.ms``, having committed
    nothing; never run on with another timeout than the one asked for."""
    source, sink = new_topic(kafka, 2), new_topic(kafka, 1)
    fill(kafka, source, 2, 5, "t")
    refused = {"transaction.timeout.ms": str(REFUSED_TXN_TIMEOUT_MS)}
    error = None
    try:
        make_pipeline(1, subscribe=source, sink_topic=sink, sink_settings=refused).run_available_now()
    except Exception as exc:  # the query's failure, as Spark reports it
        error = str(exc)
    written = sum(topic_values(kafka, sink, Isolation.READ_COMMITTED).values())
    fail_on(check_refused_timeout(error, sink, written, REFUSED_TXN_TIMEOUT_MS))


@requirement("COMMIT-011", "COMMIT-013", capability="pipeline-sink")
def test_required_COMMIT_011_sink_task_failures_are_retried_without_loss_or_duplicate(
    adapter: Any,
    pipeline_adapter: PipelineAdapter,
    make_pipeline: Callable[..., Pipeline],
    spark: SparkSession,
    kafka: KafkaClient,
    broker_can: dict[str, Capability],
    record_property: Any,
    partial: Partial,
) -> None:
    """The first attempt of sink task 1 fails mid-stream in every batch; after Spark's retries the
    output holds every input record (once, in exactly-once mode, where the broker can show it)."""
    if task_attempts(spark) < 2:
        pytest.skip(f"master {spark.sparkContext.master} does not retry tasks; run with --spark-master local[2,3]")
    if (unsupported := sink_failure_unsupported(pipeline_adapter)) is not None:
        pytest.skip(f"COMMIT-011, COMMIT-013: not in real-time mode: {unsupported}")
    exactly_once = "pipeline-exactly-once-sink" in pipeline_adapter.capabilities
    source, sink = new_topic(kafka, 3), new_topic(kafka, 2)
    fill(kafka, source, 3, 20, "a")
    pipeline = make_pipeline(
        2, subscribe=source, sink_topic=sink, exactly_once=exactly_once, max_records_per_trigger=30,
        failures=TaskFailures(frozenset({1}), 4),
    )  # fmt: skip
    pipeline.run_available_now()
    record_property("failed_task_attempts", pipeline.require_injected_failures())
    judge_output(kafka, source, sink, exactly_once, broker_can, record_property, partial)


@requirement("STRAT-001", capability="pipeline-keyed-sink")
@pytest.mark.timeout(DRIVER_TIMEOUT_S)
@pipeline_settings()
@given(keys=st.lists(st.binary(max_size=24), min_size=1, max_size=16), partitions=st.integers(2, 12))
@example(keys=[b"foobar", b"21", b"abc", b"", "cl\u00e9".encode(), b"foobar"], partitions=10)
def test_required_STRAT_001_keyed_rows_land_where_javas_producer_puts_them(
    adapter: Any,
    pipeline_adapter: PipelineAdapter,
    make_pipeline: Callable[..., Pipeline],
    kafka: KafkaClient,
    tmp_path: Path,
    keys: list[bytes],
    partitions: int,
) -> None:
    """Keyed rows (the empty key is a key) read from a 2-partition topic and written through the sink,
    without a partition column, into one of ``partitions``: each record must sit in
    ``toPositive(murmur2(key)) % partitions``, where every Java producer (Spark's own Kafka sink among
    them) writes its key. ``foobar`` of the example goes to 6 of 10; librdkafka's default (CRC32) puts it in 9."""
    exactly_once = "pipeline-exactly-once-sink" in pipeline_adapter.capabilities
    source, sink = new_topic(kafka, 2), new_topic(kafka, partitions)
    values = [f"keyed-{i}".encode() for i in range(len(keys))]
    for i, (key, value) in enumerate(zip(keys, values, strict=True)):
        kafka.produce(TopicPartition(source, i % 2), key, value)
    checkpoint = tmp_path / f"keyed-{uuid4().hex[:8]}"
    make_pipeline(2, checkpoint, subscribe=source, sink_topic=sink, exactly_once=exactly_once).run_available_now()
    written = topic_records(kafka, sink, Isolation.READ_COMMITTED)
    seen = {r.value for records in written.values() for r in records}
    assert seen == set(values), f"the sink wrote {seen}, not the {len(values)} input rows: this run shows nothing"
    fail_on(check_sink_placement({p: [r.key for r in records] for p, records in written.items()}, partitions))


KILL_POINTS: Final = st.one_of(
    st.tuples(st.sampled_from(EVENT_SOURCES), st.integers(0, 3), st.integers(0, EVENT_DELAY_MS)),
    st.tuples(st.just(CLOCK), st.just(0), st.integers(0, CLOCK_SPAN_MS)),
)
"""``(source, k, delay_ms)`` (``kconform.conformance.spark.kill_points``): the ``k+1``-th new entry of a checkpoint
log, advance of the sink topic's high watermark or read_committed end, or progress event the driver logged, then
``delay_ms``; or ``delay_ms`` from the driver's start."""


KILLS_SO_FAR = pytest.StashKey[dict[str, dict[str, int]]]()
"""The kills of the killed-driver test's examples so far, by source (``landed_by_source``)."""


@requirement("COMMIT-011", "COMMIT-013", capability="pipeline-sink")
@pytest.mark.timeout(DRIVER_TIMEOUT_S * 4)
@pipeline_settings()
@given(kills=st.lists(KILL_POINTS, min_size=1, max_size=2))
@example(kills=[(SINK_COMMITTED, 0, 0), ("commits", 2, 0)])
def test_required_COMMIT_011_driver_killed_at_drawn_points_then_restarted_loses_nothing(
    adapter: Any,
    pipeline_adapter: PipelineAdapter,
    pipeline_broker: Broker,
    spark: SparkSession,
    make_pipeline: Callable[..., Pipeline],
    kafka: KafkaClient,
    broker_can: dict[str, Capability],
    pytestconfig: pytest.Config,
    tmp_path: Path,
    record_property: Any,
    request: pytest.FixtureRequest,
    partial: Partial,
    standby_drivers: StandbyDrivers | None,
    driver_clock: DriverClock,
    kills: list[KillPoint],
) -> None:
    """Each kill ``(source, k, delay_ms)``: start a driver process on the checkpoint, wait until the ``k+1``-th new
    event of ``source`` since its start (an entry in the checkpoint's ``offsets`` or ``commits`` log; an advance of
    the sink topic's high watermark, ``sink-written``, or of its read_committed end, ``sink-committed``: records
    written, a transaction ended; a line the driver printed for its query's progress event, ``progress``), wait
    ``delay_ms`` more (``clock``: only that, from the driver's start), SIGKILL the driver with its Spark JVM. The
    points come from what any connector shows from outside, not from the reference's steps alone, so a kill lands
    inside a step the reference lacks (a driver that moves its progress marker after its tasks' transactions
    committed). A point the driver never reaches (it finished first) is counted, not failed. Then the query is
    restarted on the checkpoint in the suite's own session, as the other killed-driver scenarios restart theirs (a
    driver crash is over once its process group is gone: what a restart must do is the same in any driver), and runs
    to the end. Nothing may be lost; in exactly-once mode nothing may be duplicated (where the broker can show it). A
    driver that fails of its own accord before its kill point, or a restarted query that fails, is LIVE-001's: the
    records it did not get to deliver are not lost, so the output is not judged and COMMIT-011 and COMMIT-013 stay
    not verified."""
    exactly_once = "pipeline-exactly-once-sink" in pipeline_adapter.capabilities
    source, sink = new_topic(kafka, 3), new_topic(kafka, 2)
    fill(kafka, source, 3, 60, "k")
    checkpoint, log = tmp_path / f"kill-{uuid4().hex[:8]}", tmp_path / "drivers.log"
    run = sink_driver(pytestconfig, spark, pipeline_broker, source, sink, checkpoint, exactly_once)
    landed = [kill_at(standby_drivers, run, log, kafka, sink, check_kill_point(point), driver_clock) for point in kills]
    try:
        restart(make_pipeline, run)
    except StreamingQueryException as failed:
        if (failure := query_failure(failed)) is None:
            raise
        fail_on(check_query_ran(failure, "that the scenario restarted after the drivers' kills"))
    tally = request.node.stash[KILLS_SO_FAR] = landed_by_source(
        kills, landed, request.node.stash.get(KILLS_SO_FAR, None)
    )
    record_property("drivers_killed", sum(n["landed"] for n in tally.values()))  # in the test's examples so far
    by_source = {s: n for s, n in tally.items() if any(n.values())}
    record_property("kills_by_source", json.dumps(by_source))  # landed, and not reached (the driver finished first)
    judge_output(kafka, source, sink, exactly_once, broker_can, record_property, partial)


def kill_at(
    drivers: StandbyDrivers | None,
    run: DriverRun,
    log: Path,
    kafka: KafkaClient,
    sink: str,
    point: KillPoint,
    clock: DriverClock,
) -> bool:
    """Start a driver (``driver_for``), SIGKILL its process group at ``point``; whether it was killed (a driver that
    finishes first is not). The point's events are counted from before the driver is given its run."""
    source, k, delay_ms = point
    run = replace(run, log_progress=source == PROGRESS)
    driver, log, start = driver_for(drivers, run, log, fresh=source == CLOCK)
    reached = kill_watch(run, log, kafka, sink, source, k)
    handed_at = time.time()
    hand_over(driver, run)
    try:
        wait_until(
            lambda: True if driver.poll() is not None or reached() else None,
            timeout_s=DRIVER_TIMEOUT_S,
            what=f"kill point {point} or the driver's exit (log: {log})",
            step_s=SINK_POLL_S if source in (*SINK_ENDS, PROGRESS) else 0.01,
        )
        with contextlib.suppress(subprocess.TimeoutExpired):
            driver.wait(timeout=delay_ms / 1000)  # the drawn kill point inside the batch, not synchronisation
        raise_if_cannot_check(driver, log)  # an exit before the kill, at its point or in the delay, is its own
        fail_on(check_driver_exit(driver.poll(), "the driver before its kill point", output_since(log, start)))
    finally:
        kill_group(driver)
    clock.ended(handed_at, output_since(log, start))
    confirm_kill(driver, log, start, f"the driver at kill point {point}")
    return killed_by_sigkill(driver.returncode)


def confirm_kill(driver: subprocess.Popen[bytes], log: Path, start: int, what: str) -> None:
    """After ``kill_group``: ``HarnessError`` when the driver's process group outlived SIGKILL, or when its log shows
    that Spark ran its query as one batch instead of ``availableNow`` (``kconform.conformance.spark.injections``)."""
    if not group_gone(driver.pid):
        raise kill_not_landed(what, driver.pid)
    require_available_now(output_since(log, start).splitlines(), what)


def kill_watch(run: DriverRun, log: Path, kafka: KafkaClient, sink: str, source: str, k: int) -> Callable[[], bool]:
    """Whether the ``k+1``-th new event of ``source`` since now has happened (``clock``: at once), polled."""
    if source == CLOCK:
        return lambda: True
    if source == PROGRESS:
        start = log_end(log)
        return lambda: events_reached(0, progress_lines(output_since(log, start)), k)
    if source in SINK_ENDS:
        ends = SinkEnds.of(kafka, sink, source)
        watch = Advances(ends())

        def advanced() -> bool:
            nonlocal watch
            watch = watch.observe(ends())
            return watch.reached(k)

        return advanced
    entries = Path(run.checkpoint) / source

    def count() -> int:
        return len(list(entries.glob("[0-9]*"))) if entries.exists() else 0

    seen = count()
    return lambda: events_reached(seen, count(), k)


def sink_driver(
    pytestconfig: pytest.Config, spark: SparkSession, broker: Broker, source: str, sink: str, checkpoint: Path,
    exactly_once: bool = True,
) -> DriverRun:  # fmt: skip
    """The adapter's source-to-sink query at parallelism 2, run in a driver process a scenario can kill."""
    return DriverRun(
        adapter=adapter_spec(pytestconfig),
        master=spark.sparkContext.master or DEFAULT_MASTER,
        bootstrap_servers=broker.bootstrap_servers,
        source=source,
        sink=sink,
        checkpoint=str(checkpoint),
        parallelism=2,
        exactly_once=exactly_once,
        max_records_per_trigger=30,
        client_settings=broker.security,
    )


SLOW_SINK: Final = {"linger.ms": "100", "queue.buffering.max.messages": "1"}
"""Sink client settings under which its producer sends about one record per 100 ms: a task's
transaction then holds records for seconds, so a driver can be killed inside it (the task is slowed
by its own client, not made to sleep)."""

LONG_TXN_TIMEOUT_MS: Final = 300_000
"""Far longer than a scenario (and within Kafka's default ``transaction.max.timeout.ms``, 15 min):
only the restart can end what a killed driver left open."""

TXN_TIMEOUT_MS: Final = 3_000
"""The timeout scenario's ``transaction.timeout.ms``: seconds longer than it takes to see a transaction hold
records and kill the driver (a poll every 50 ms, then SIGKILL: well under a second), seconds shorter than the
scenario's patience. COMMIT-007 is about what a timeout does, not about a default, and all of it is waited out after
the kill: 3 s since issue 42's cuts (5 s before)."""


def with_transaction_timeout(run: DriverRun, timeout_ms: int) -> DriverRun:
    """``run`` with its sink's ``transaction.timeout.ms`` set."""
    return replace(run, sink_settings={**run.sink_settings, "transaction.timeout.ms": str(timeout_ms)})


def restart(make_pipeline: Callable[..., Pipeline], run: DriverRun) -> None:
    """Run ``run``'s query again on its checkpoint, in this process, to the end."""
    make_pipeline(
        run.parallelism, Path(run.checkpoint), subscribe=run.source, sink_topic=run.sink,
        exactly_once=run.exactly_once, max_records_per_trigger=run.max_records_per_trigger,
        sink_settings=dict(run.sink_settings), transactional_id_prefix=run.transactional_id_prefix,
    ).run_available_now(run.query_timeout_s)  # fmt: skip


def kill_inside_transaction(
    drivers: StandbyDrivers | None,
    run: DriverRun,
    log: Path,
    kafka: KafkaClient,
    record_property: Any,
    clock: DriverClock,
) -> dict[TopicPartition, tuple[int, int]]:
    """Start ``run`` in a driver (``driver_for``), its sink slowed (``SLOW_SINK``), and kill it as soon as a sink
    transaction holds records (a partition's last stable offset below its end); the sink's (last stable offset,
    end) per partition after the kill, whose blocked partitions are recorded as ``partitions_left_blocked``."""
    sink, slowed = run.sink, replace(run, sink_settings={**run.sink_settings, **SLOW_SINK})
    driver, log, start = driver_for(drivers, slowed, log)
    handed_at = time.time()
    hand_over(driver, slowed)

    def open_transaction() -> bool | None:
        ended = driver.poll() is not None
        return True if ended or any(lso < end for lso, end in stable_offsets(kafka, sink).values()) else None

    try:
        with injected(f"the slowed sink ({SLOW_SINK}) holding a transaction open on {sink} (log: {log})"):
            wait_until(open_transaction, DRIVER_TIMEOUT_S, f"a transaction holding records on {sink}", 0.05)
        raise_if_cannot_check(driver, log)
        fail_on(check_driver_exit(driver.poll(), "the driver before its kill", output_since(log, start)))
    finally:
        kill_group(driver)
    clock.ended(handed_at, output_since(log, start))
    confirm_kill(driver, log, start, "the driver inside a sink transaction")
    if not killed_by_sigkill(driver.returncode):
        raise HarnessError(
            f"the kill inside a transaction did not take effect: the driver ended (exit {driver.returncode}) before "
            f"a transaction held records on {sink}; log:\n{output_since(log, start)[-4000:]}"
        )
    after = stable_offsets(kafka, sink)
    if (missed := no_transaction_left_open(after, SLOW_SINK)) is not None:
        raise HarnessError(missed)
    record_property("partitions_left_blocked", sum(lso < end for lso, end in after.values()))
    return after


@requirement("COMMIT-004", "COMMIT-011", "COMMIT-013", capability="pipeline-exactly-once-sink")
@pytest.mark.timeout(DRIVER_TIMEOUT_S * 3)
def test_required_COMMIT_004_restart_aborts_the_transactions_a_killed_driver_left_open(
    adapter: Any,
    make_pipeline: Callable[..., Pipeline],
    pipeline_broker: Broker,
    spark: SparkSession,
    kafka: KafkaClient,
    broker_can: dict[str, Capability],
    pytestconfig: pytest.Config,
    tmp_path: Path,
    record_property: Any,
    partial: Partial,
    standby_drivers: StandbyDrivers | None,
    driver_clock: DriverClock,
) -> None:
    """A driver is SIGKILLed while its tasks' transactions hold records (transaction timeout 5 min); the
    restarted query must abort them (its tasks initialise the same transactional ids again, COMMIT-006),
    so read_committed readers get past them without waiting for the timeout, and see every record once."""
    skip_unless_broker_can(broker_can, ("zombie_fencing", "last_stable_offset"), "COMMIT-004")
    source, sink = new_topic(kafka, 2), new_topic(kafka, 2)
    fill(kafka, source, 2, 20, "r")
    checkpoint, log = tmp_path / "checkpoint", tmp_path / "drivers.log"
    run = with_transaction_timeout(
        sink_driver(pytestconfig, spark, pipeline_broker, source, sink, checkpoint), LONG_TXN_TIMEOUT_MS
    )
    left = kill_inside_transaction(standby_drivers, run, log, kafka, record_property, driver_clock)
    restart(make_pipeline, run)
    stable = {tp: lso for tp, (lso, _) in stable_offsets(kafka, sink).items()}
    fail_on(check_unblocked(stable, {tp: end for tp, (_, end) in left.items()}, "after the restarted query ended"))
    judge_output(kafka, source, sink, True, broker_can, record_property, partial)


@requirement("COMMIT-004", "COMMIT-007", "COMMIT-011", "COMMIT-013", capability="pipeline-exactly-once-sink")
@pytest.mark.timeout(DRIVER_TIMEOUT_S * 3)
def test_required_COMMIT_007_transactions_a_killed_driver_left_open_time_out(
    adapter: Any,
    make_pipeline: Callable[..., Pipeline],
    pipeline_broker: Broker,
    spark: SparkSession,
    kafka: KafkaClient,
    broker_can: dict[str, Capability],
    pytestconfig: pytest.Config,
    tmp_path: Path,
    record_property: Any,
    partial: Partial,
    standby_drivers: StandbyDrivers | None,
    driver_clock: DriverClock,
) -> None:
    """With ``transaction.timeout.ms`` = 3 s, a driver is SIGKILLed while its tasks' transactions hold
    records, and not restarted: read_committed readers must get past them once the broker times them out
    (within the timeout plus the probe's bound on the broker's abort), never seeing their records; a
    restart after the timeout must write those records again, once (a timed-out transaction is not a
    committed one)."""
    skip_unless_broker_can(broker_can, ("transaction_timeout", "last_stable_offset"), "COMMIT-004, COMMIT-007")
    source, sink = new_topic(kafka, 2), new_topic(kafka, 2)
    fill(kafka, source, 2, 20, "t")
    checkpoint, log = tmp_path / "checkpoint", tmp_path / "drivers.log"
    run = with_transaction_timeout(
        sink_driver(pytestconfig, spark, pipeline_broker, source, sink, checkpoint), TXN_TIMEOUT_MS
    )
    left = kill_inside_transaction(standby_drivers, run, log, kafka, record_property, driver_clock)
    killed, bound_s = time.monotonic(), TXN_TIMEOUT_MS / 1000 + TXN_TIMEOUT_WAIT_S
    ends = {tp: end for tp, (_, end) in left.items()}
    while True:
        stable = {tp: lso for tp, (lso, _) in stable_offsets(kafka, sink).items()}
        if all(stable.get(tp, 0) >= end for tp, end in ends.items()) or time.monotonic() - killed > bound_s:
            break
        time.sleep(0.2)  # polling interval of a bounded wait
    record_property("readers_blocked_after_kill_s", round(time.monotonic() - killed, 1))
    fail_on(check_unblocked(stable, ends, f"{bound_s:.0f} s after the kill (transaction.timeout.ms={TXN_TIMEOUT_MS})"))
    timed_out = Counter(
        r.value for tp, (lso, _) in left.items() for r in kafka.read(tp, lso, Isolation.READ_UNCOMMITTED, 1_000_000)
    )
    restart(make_pipeline, run)
    cause = "was in a transaction the broker timed out"
    fail_on(check_rewritten(timed_out, topic_values(kafka, sink, Isolation.READ_COMMITTED), cause))
    judge_output(kafka, source, sink, True, broker_can, record_property, partial)


SPECULATED_RECORDS: Final = 20
"""Records per source partition, so per sink task of the scenario's one batch."""
PADDED_KEY_BYTES: Final = 80 << 10
"""Each of the scenario's keys is padded past a Python worker's 64 KiB output buffer (``spark.buffer.size``):
a row the stalled original passes then leaves the worker at once, instead of waiting in the buffer for the
task's end, and reaches the sink before the stall (the values stay short, as evidence)."""
STALL_AFTER_ROWS: Final = 5
"""Rows the stalled original passes to the sink, which writes them into its open transaction, before it stalls."""
STALL_S: Final = 120.0
"""The original's stall at most: Spark kills it within seconds of its copy's success (a stall that runs out means
Spark ran no copy, and the scenario says so)."""


@requirement("COMMIT-006", "COMMIT-011", "COMMIT-013", capability="pipeline-exactly-once-sink")
@pytest.mark.timeout(DRIVER_TIMEOUT_S * 2)
def test_required_COMMIT_006_a_speculative_copy_of_a_sink_task_fences_the_original_it_overlaps(
    adapter: Any,
    pipeline_adapter: PipelineAdapter,
    pipeline_broker: Broker,
    spark: SparkSession,
    kafka: KafkaClient,
    broker_can: dict[str, Capability],
    pytestconfig: pytest.Config,
    tmp_path: Path,
    record_property: Any,
    partial: Partial,
) -> None:
    """Two live attempts of one sink task: with ``spark.speculation`` on (a driver of its own), the first attempt
    of task 0 writes a few rows into its transaction and stalls; Spark starts a copy on the other executor host,
    which writes the whole task and commits; then Spark kills the original. The copy must have fenced it (one
    transactional id per task: initialising it aborts the original's transaction): after the query no
    transaction holds records and read_committed readers see each record once (transaction timeout 5 min, so
    only fencing can end the original's)."""
    if batch_duration(pipeline_adapter) is not None:
        pytest.skip("COMMIT-006: not in real-time mode, whose allowlist admits no Python UDF (the stall is one)")
    if (missing := two_hosts_missing(spark)) is not None:
        pytest.skip(f"COMMIT-006: {missing}")
    skip_unless_broker_can(broker_can, ("zombie_fencing", "last_stable_offset"), "COMMIT-006")
    source, sink = new_topic(kafka, 2), new_topic(kafka, 2)
    for p in range(2):
        padded = [
            (f"key-{p}-{i}-".encode().ljust(PADDED_KEY_BYTES, b"."), f"zombie-{p}-{i}".encode())
            for i in range(SPECULATED_RECORDS)
        ]
        kafka.produce_batch(TopicPartition(source, p), padded)
    log, evidence = tmp_path / "driver.log", tmp_path / "attempts.json"
    run = replace(
        sink_driver(pytestconfig, spark, pipeline_broker, source, sink, tmp_path / "checkpoint"),
        max_records_per_trigger=10 * SPECULATED_RECORDS,  # one batch
        sink_settings={"transaction.timeout.ms": str(LONG_TXN_TIMEOUT_MS)},
    )
    started = time.monotonic()
    driver = start_driver(run, StalledOriginal(0, STALL_AFTER_ROWS, STALL_S), evidence, log)
    try:
        driver.wait(timeout=DRIVER_TIMEOUT_S)
    finally:
        kill_group(driver)
    record_property("speculated_run_s", round(time.monotonic() - started, 1))
    raise_if_cannot_check(driver, log)
    fail_on(check_driver_exit(driver.returncode, "the speculation driver", log.read_text()))
    attempts = read_attempts(evidence)
    record_property("task_attempts", json.dumps([a.fields() for a in attempts]))
    overlap = overlapping_attempts(attempts)
    if overlap is None:
        raise HarnessError(
            f"Spark ran no speculative copy of the stalled task on another host (attempts: {attempts}), so this run "
            f"shows no zombie; driver log {log}:\n{log.read_text()[-3000:]}"
        )
    offsets = stable_offsets(kafka, sink)
    visible = topic_values(kafka, sink, Isolation.READ_COMMITTED)
    in_log = sum(topic_values(kafka, sink, Isolation.READ_UNCOMMITTED).values()) - sum(visible.values())
    record_property("original_records_aborted", in_log)
    fail_on(
        check_zombie_fenced(
            *overlap,
            {tp: lso for tp, (lso, _) in offsets.items()},
            {tp: end for tp, (_, end) in offsets.items()},
            topic_values(kafka, source, Isolation.READ_UNCOMMITTED),
            visible,
        )
    )
    if not in_log:
        partial(["COMMIT-006"], "the stalled original wrote no record before its copy fenced it: no zombie write shown")
    judge_output(kafka, source, sink, True, broker_can, record_property, partial)


def stable_now(kafka: KafkaClient, topic: str) -> dict[TopicPartition, int]:
    """Each partition's last stable offset now."""
    return {tp: lso for tp, (lso, _) in stable_offsets(kafka, topic).items()}


def run_prefix() -> str:
    """A transactional-id prefix no other scenario of the run shares, for a sink a scenario names itself."""
    return f"kc{uuid4().hex[:6]}"


@requirement("COMMIT-016", "COMMIT-004", "COMMIT-011", "COMMIT-013", capability="pipeline-transactional-id-prefix")
@pytest.mark.timeout(DRIVER_TIMEOUT_S * 4)
@pipeline_settings()
@given(
    stem=st.from_regex(r"[a-z][a-z0-9]{0,5}", fullmatch=True),
    extension=st.from_regex(r"[-_.]?[a-z0-9]{1,3}", fullmatch=True),
)
@example(stem="job", extension="-1")
def test_required_COMMIT_016_a_query_restarted_beside_a_killed_one_under_a_longer_prefix_leaves_its_transactions_open(
    adapter: Any,
    make_pipeline: Callable[..., Pipeline],
    pipeline_broker: Broker,
    spark: SparkSession,
    kafka: KafkaClient,
    broker_can: dict[str, Capability],
    pytestconfig: pytest.Config,
    tmp_path: Path,
    record_property: Any,
    partial: Partial,
    standby_drivers: StandbyDrivers | None,
    driver_clock: DriverClock,
    stem: str,
    extension: str,
) -> None:
    """Two queries on one broker whose sinks' transactional-id prefixes extend one another (``job``, ``job-1``:
    drawn, behind a tag of the scenario's own). ``job-1``'s driver is SIGKILLed while its tasks' transactions hold
    records (timeout 5 min); then ``job`` runs, and is restarted on its checkpoint. Its recoveries end only
    transactions of its own: ``job-1``'s output must still be held where the kill left it until ``job-1``'s own
    restart ends its transactions; then neither query has lost or duplicated a record."""
    skip_unless_broker_can(broker_can, ("zombie_fencing", "last_stable_offset"), "COMMIT-016")
    prefix = f"{run_prefix()}-{stem}"
    longer = prefix + extension
    source, sink, own_source, own_sink = (new_topic(kafka, 2) for _ in range(4))
    fill(kafka, source, 2, 20, "longer")
    checkpoint, log = tmp_path / f"longer-{uuid4().hex[:8]}", tmp_path / "drivers.log"
    first = replace(
        sink_driver(pytestconfig, spark, pipeline_broker, source, sink, checkpoint), transactional_id_prefix=longer
    )
    other = with_transaction_timeout(first, LONG_TXN_TIMEOUT_MS)
    left = kill_inside_transaction(standby_drivers, other, log, kafka, record_property, driver_clock)
    own_checkpoint = tmp_path / f"shorter-{uuid4().hex[:8]}"
    for run in ("first", "restart"):
        fill(kafka, own_source, 2, 5, run)
        make_pipeline(
            2, own_checkpoint, subscribe=own_source, sink_topic=own_sink, transactional_id_prefix=prefix
        ).run_available_now()
    ends = {tp: end for tp, (_, end) in left.items()}
    held = {tp: lso for tp, (lso, _) in left.items()}
    when = f"while only query {prefix!r} ran and was restarted (this query's prefix: {longer!r})"
    fail_on(check_foreign_left_open(held, stable_now(kafka, sink), ends, when))
    restart(make_pipeline, other)
    fail_on(check_unblocked(stable_now(kafka, sink), ends, f"after query {longer!r} was restarted"))
    judge_output(kafka, source, sink, True, broker_can, record_property, partial)
    judge_output(kafka, own_source, own_sink, True, broker_can, record_property, partial)


@requirement("COMMIT-017", "COMMIT-011", "COMMIT-013", capability="pipeline-transactional-id-prefix")
@pytest.mark.timeout(DRIVER_TIMEOUT_S * 3)
def test_required_COMMIT_017_a_query_restarted_under_another_prefix_ends_the_old_prefixs_transactions(
    adapter: Any,
    make_pipeline: Callable[..., Pipeline],
    pipeline_broker: Broker,
    spark: SparkSession,
    kafka: KafkaClient,
    broker_can: dict[str, Capability],
    pytestconfig: pytest.Config,
    tmp_path: Path,
    record_property: Any,
    partial: Partial,
    standby_drivers: StandbyDrivers | None,
    driver_clock: DriverClock,
) -> None:
    """A driver is SIGKILLed while its tasks' transactions hold records (transaction timeout 5 min); the query is
    restarted on its checkpoint under another transactional-id prefix (a renamed job). The restart must end what
    the old prefix's ids left open, so read_committed readers get past it without waiting for the timeout, and
    must commit every record once: a task of the old prefix that committed the interrupted batch is not run again."""
    skip_unless_broker_can(broker_can, ("zombie_fencing", "last_stable_offset"), "COMMIT-017")
    old, new = f"{run_prefix()}-v1", f"{run_prefix()}-v2"
    source, sink = new_topic(kafka, 2), new_topic(kafka, 2)
    fill(kafka, source, 2, 20, "renamed")
    checkpoint, log = tmp_path / "checkpoint", tmp_path / "drivers.log"
    first = replace(
        sink_driver(pytestconfig, spark, pipeline_broker, source, sink, checkpoint), transactional_id_prefix=old
    )
    run = with_transaction_timeout(first, LONG_TXN_TIMEOUT_MS)
    left = kill_inside_transaction(standby_drivers, run, log, kafka, record_property, driver_clock)
    restart(make_pipeline, replace(run, transactional_id_prefix=new))
    ends = {tp: end for tp, (_, end) in left.items()}
    when = f"after the restart under prefix {new!r} (the killed driver's: {old!r})"
    fail_on(check_unblocked(stable_now(kafka, sink), ends, when, requirement="COMMIT-017"))


SLOW_TASK_TXN_TIMEOUT_MS: Final = 2_000
"""COMMIT-021's ``transaction.timeout.ms``: a task slowed by ``SLOW_SINK`` (about ten records a second) writing
``SLOW_TASK_RECORDS`` outlives it by seconds, past the broker's abort check (every second on the suite's broker,
``TXN_TIMEOUT_WAIT_S`` at most elsewhere)."""

SLOW_TASK_RECORDS: Final = 60
"""Records per source partition, and so per sink task of the one batch: about 6 s of a slowed task."""


@requirement("COMMIT-021", "COMMIT-026", "COMMIT-011", "COMMIT-013", capability="pipeline-exactly-once-sink")
@pytest.mark.timeout(DRIVER_TIMEOUT_S * 2)
def test_required_COMMIT_021_a_task_slower_than_its_transaction_timeout_fails_and_its_batch_is_written_once(
    make_pipeline: Callable[..., Pipeline],
    kafka: KafkaClient,
    broker_can: dict[str, Capability],
    record_property: Any,
    partial: Partial,
) -> None:
    """Every sink task of a one-batch query writes for seconds (its client slowed) under a 2 s
    ``transaction.timeout.ms``: the broker aborts each task's transaction before it commits, so every attempt
    Spark makes fails and the query must fail naming ``transaction.timeout.ms``, never report the batch
    written. Restarted on its checkpoint with a timeout that outlasts the write, it must write every record once:
    nothing of the aborted transactions visible, nothing lost."""
    skip_unless_broker_can(broker_can, ("transaction_timeout", "last_stable_offset"), "COMMIT-021")
    source, sink = new_topic(kafka, 2), new_topic(kafka, 2)
    fill(kafka, source, 2, SLOW_TASK_RECORDS, "slow")
    slowed = {"transaction.timeout.ms": str(SLOW_TASK_TXN_TIMEOUT_MS), **SLOW_SINK}
    pipeline = make_pipeline(2, subscribe=source, sink_topic=sink, sink_settings=slowed)
    started = time.monotonic()
    error = None
    try:
        pipeline.run_available_now()
    except Exception as exc:  # the query's failure, as Spark reports it
        error = str(exc)
    record_property("slowed_run_s", round(time.monotonic() - started, 1))
    written = [r for records in topic_records(kafka, sink, Isolation.READ_UNCOMMITTED).values() for r in records]
    spans = write_spans_ms(written, "slow")
    record_property("slowed_spans_ms", ", ".join(f"partition {p}: {ms}" for p, ms in sorted(spans.items())))
    if (missed := unslowed_sink(spans, 2, SLOW_TASK_TXN_TIMEOUT_MS)) is not None:
        raise HarnessError(missed)
    visible = sum(topic_values(kafka, sink, Isolation.READ_COMMITTED).values())
    fail_on(check_timed_out_task(error, SLOW_TASK_TXN_TIMEOUT_MS, visible))
    long_enough = {"transaction.timeout.ms": str(LONG_TXN_TIMEOUT_MS)}
    make_pipeline(
        2, pipeline.checkpoint, subscribe=source, sink_topic=sink, sink_settings=long_enough
    ).run_available_now()
    judge_output(kafka, source, sink, True, broker_can, record_property, partial)


STOP_ABORT_WAIT_S: Final = 30
"""How long after a query's stop its sink's transactions may take to end: seconds of Spark cancelling tasks and
producers aborting, far below ``LONG_TXN_TIMEOUT_MS``, after which only the broker's timeout would end them."""


@requirement("COMMIT-020", capability="pipeline-exactly-once-sink")
@pytest.mark.timeout(DRIVER_TIMEOUT_S)
def test_required_COMMIT_020_a_query_stopped_while_its_tasks_write_leaves_no_transaction_open(
    make_pipeline: Callable[..., Pipeline], kafka: KafkaClient, broker_can: dict[str, Capability], record_property: Any
) -> None:
    """A query is stopped (``StreamingQuery.stop``) while its sink tasks' transactions hold records (their client
    slowed, transaction timeout 5 min) and is not restarted: within seconds, not the timeout, every output
    partition's last stable offset must reach the end its log had at the stop. The records of a batch that never
    committed belong to no checkpoint; left open, they would block read_committed readers until the timeout."""
    skip_unless_broker_can(broker_can, ("last_stable_offset",), "COMMIT-020")
    source, sink = new_topic(kafka, 2), new_topic(kafka, 2)
    fill(kafka, source, 2, 20, "stop")
    slowed = {"transaction.timeout.ms": str(LONG_TXN_TIMEOUT_MS), **SLOW_SINK}
    pipeline = make_pipeline(2, subscribe=source, sink_topic=sink, sink_settings=slowed)
    pipeline.start()
    try:
        with injected(f"the slowed sink ({SLOW_SINK}) holding a transaction open on {sink}"):
            wait_until(
                lambda: True if any(lso < end for lso, end in stable_offsets(kafka, sink).values()) else None,
                DRIVER_TIMEOUT_S,
                f"a transaction holding records on {sink}",
            )
    finally:
        pipeline.stop()
    stopped = time.monotonic()
    ends = {tp: end for tp, (_, end) in stable_offsets(kafka, sink).items()}
    logged = {name: {p.name for p in (pipeline.checkpoint / name).glob("[0-9]*")} for name in ("offsets", "commits")}
    interrupted = sorted(logged["offsets"] - logged["commits"], key=int)
    if not interrupted:
        raise HarnessError(
            f"the stop inside a batch did not take effect: it let every batch commit ({logged}), so this run shows "
            f"nothing; the sink must pass its client settings {SLOW_SINK} to its producer unchanged"
        )
    record_property("batches_interrupted_by_the_stop", ",".join(interrupted))

    def closed() -> dict[TopicPartition, int] | None:
        stable = {tp: lso for tp, (lso, _) in stable_offsets(kafka, sink).items()}
        done = all(stable.get(tp, 0) >= end for tp, end in ends.items())
        return stable if done or time.monotonic() - stopped > STOP_ABORT_WAIT_S else None

    stable = wait_until(closed, STOP_ABORT_WAIT_S * 2, f"the transactions on {sink} to end after the stop", 0.2)
    record_property("open_after_stop_s", round(time.monotonic() - stopped, 1))
    fail_on(check_closed_at_stop(stable, ends, time.monotonic() - stopped))
