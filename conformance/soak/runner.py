"""One soak schedule end to end: fresh topics, records produced throughout, driver runs with faults, a verdict.

The query is the adapter's source-to-sink query (``kconform.conformance.spark.driver``), its sink in
exactly-once mode where the adapter declares one (the soak's ``Guarantee``), at-least-once otherwise,
subscribed by pattern to the schedule's source topics, each segment in its own killable driver
process on one checkpoint. A producer thread writes numbered records (idempotent, ``acks=all``) to
every source partition in turn while the killable segments run and records what the broker
acknowledged: first a burst of ``MAX_ENTRY + 2`` batches' worth, acknowledged before the first
driver starts (a driver reads what was there when it started, so its faults' anchors, up to
``MAX_ENTRY`` batches in, are reached), then ``records_per_s``. Before the final segment it stops;
the final driver must then read everything and exit 0 (it is started again, up to ``FINAL_ATTEMPTS``
times, if it fails, e.g. on a broker still recovering: each failure is in the timeline).

The verdict is a Jepsen-style history: what was produced (acknowledged or not), what the source
topics hold, what the sink shows ``read_committed``. It is judged with the suite's checkers:
``check_output`` (COMMIT-011: nothing lost, nothing duplicated), ``check_order`` (COMMIT-013) and
``check_read_once`` over the source offsets the output covers (RESTORE-003: every source offset
once, no gap). An at-least-once sink promises no loss, not no repeat: it is judged the same way
except that a record written more than once (and so its source offset covered more than once) is
counted in ``duplicated``, not failed. An acknowledged record missing from its source topic is the
broker's loss, reported as ``BROKER acknowledged-record-missing``, not blamed on the connector.
"""

from __future__ import annotations

import contextlib
import subprocess
import threading
import time
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Final

import confluent_kafka as ck

from ...reference_impl.kafka_client import LIBRDKAFKA_TXN_TIMEOUT_MS, KafkaClient, topic_records, wait_until
from ...reference_impl.ports import Isolation, Record
from ...reference_impl.types import TopicPartition
from ..brokers import KafkaBroker
from ..checks.checkers import Violation, check_order, tp_fields, value_field
from ..checks.pipeline_checkers import ReadRecord, check_output, check_read_once
from ..errors import CannotCheck
from ..spark.cluster import StandaloneCluster
from ..spark.driver import DriverRun, StandbyDrivers, kill_group, raise_if_cannot_check
from ..spark.injections import killed_by_sigkill
from ..spark.pipeline import QUERY_TIMEOUT_S as PIPELINE_QUERY_TIMEOUT_S
from .faults import (
    NotInjected,
    OpenTransactionWatch,
    Topology,
    apply,
    checkpoint_entries,
    torn_or_plain,
)
from .guarantee import Guarantee
from .schedule import (
    CLIENT_TIMEOUT_MS,
    MAX_ENTRY,
    NEEDS_A_RUNNING_DRIVER,
    Fault,
    FaultKind,
    Schedule,
    Segment,
)

BROKER: Final = "BROKER"
"""The requirement of a violation that is the broker's (an acknowledged record missing), not the connector's."""
UNFINISHED_IS_NOT_LOSS: Final = frozenset({"lost-write", "offset-gap"})
"""Violations a schedule whose final run did not finish cannot show: it is an ERROR (not judged), not a FAIL."""
QUERY_TIMEOUT_S: Final = PIPELINE_QUERY_TIMEOUT_S + LIBRDKAFKA_TXN_TIMEOUT_MS // 1000
"""A run's query bound: the suite's, plus the sink's ``transaction.timeout.ms``. A broker killed inside a
transaction can leave it open until the restarted coordinator rolls it back at that timeout ("Completed rollback
of ongoing transaction ... due to timeout" in the broker's log, 60 s after the restart, on Kafka 4.4.0), and
until then the id's ``init_transactions`` is answered CONCURRENT_TRANSACTIONS: Kafka's own recovery, which a
query waiting for it is live through, not stuck."""
DRIVER_TIMEOUT_S: Final = 300.0
"""A driver that neither reaches its next anchor nor ends within this is a failure of the schedule."""
FINAL_ATTEMPTS: Final = 3
FINAL_TRIGGER_FACTOR: Final = 10
"""The final run, a catch-up with nothing produced any more, reads up to this many times the schedule's
records per trigger: fewer batches of its own, each still planned and committed as any other."""
FLUSH_TIMEOUT_S: Final = 150.0
PRODUCER_SETTINGS: Final = {
    "enable.idempotence": True,
    "acks": "all",
    "linger.ms": 5,
    # Longer than a paused node (15 s) or a restart: a record is retried, not given up, meanwhile.
    "message.timeout.ms": 120_000,
}


@dataclass
class Produced:
    """One produce operation of the history: invoked, then ``ok`` at (tp, offset), ``fail``, or still pending."""

    value: bytes
    tp: TopicPartition
    offset: int | None = None
    error: str | None = None

    def to_json(self) -> dict[str, Any]:
        status = "ok" if self.offset is not None else "fail" if self.error else "info"
        return {
            "op": "produce",
            "value": self.value.decode(),
            "topic": self.tp.topic,
            "partition": self.tp.partition,
            "offset": self.offset,
            "status": status,
            "error": self.error,
        }


class RecordProducer:
    """A thread producing ``tag-<n>`` records round-robin over the source partitions: the first ``burst``
    at once, then ``rate`` per second."""

    def __init__(
        self, broker: KafkaBroker, tag: str, partitions: list[TopicPartition], rate: int, burst: int = 0
    ) -> None:
        self._producer = ck.Producer(broker.client_config("producer", **PRODUCER_SETTINGS))
        self._tag = tag
        self._targets = list(partitions)
        self._interval_s = 1 / max(1, rate)
        self._burst = burst
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self.history: list[Produced] = []
        self._thread = threading.Thread(target=self._run, name=f"kconform-soak-producer-{tag}", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def add(self, partitions: list[TopicPartition]) -> None:
        with self._lock:
            self._targets += partitions

    def _run(self) -> None:
        sequence = 0
        while not self._stop.wait(0 if sequence < self._burst else self._interval_s):  # pacing, and the stop signal
            with self._lock:
                tp = self._targets[sequence % len(self._targets)]
                op = Produced(f"{self._tag}-{sequence}".encode(), tp)
                self.history.append(op)
            self._send(op)
            sequence += 1
            self._producer.poll(0)

    def _send(self, op: Produced) -> None:
        def delivered(error: ck.KafkaError | None, message: ck.Message) -> None:
            if error is None:
                op.offset = message.offset()
            else:
                op.error = str(error)

        try:
            self._producer.produce(op.tp.topic, op.value, partition=op.tp.partition, on_delivery=delivered)
        except (BufferError, ck.KafkaException) as error:
            op.error = f"not sent: {error}"

    def stop(self) -> int:
        """Stop producing and flush (bounded); how many records are still undelivered (indeterminate)."""
        self._stop.set()
        self._thread.join(timeout=10)
        left: int = self._producer.flush(FLUSH_TIMEOUT_S)
        return left

    def burst_acknowledged(self) -> bool | None:
        """True once the first burst is acknowledged (None before: ``wait_until``'s "not yet")."""
        return True if self.acknowledged >= self._burst else None

    @property
    def acknowledged(self) -> int:
        with self._lock:
            return sum(op.offset is not None for op in self.history)


@dataclass
class Timeline:
    """What happened, with seconds since the schedule started."""

    began: float = field(default_factory=time.monotonic)
    events: list[str] = field(default_factory=list)
    injected: Counter[str] = field(default_factory=Counter)
    """Fault kind -> how many were injected (a kill whose driver ended first is not)."""
    echo: Callable[[str], None] = field(default=lambda _: None, repr=False)
    """Called with every event as it happens (``kconform soak``'s progress lines)."""

    def add(self, text: str) -> None:
        event = f"{time.monotonic() - self.began:7.1f}s {text}"
        self.events.append(event)
        self.echo(event)

    def injected_fault(self, fault: Fault, outcome: str) -> None:
        self.injected[str(fault.kind)] += 1
        self.add(f"{fault.describe()}: {outcome}")


@dataclass
class Outcome:
    """A schedule's verdict and its evidence."""

    schedule: Schedule
    violations: list[Violation]
    timeline: Timeline
    produced: int = 0
    lost: int = 0
    duplicated: int = 0
    error: str | None = None
    """Set when the schedule could not be judged in full (the final driver never finished, a broker did not come
    back): a missing record may still have come, so it is no loss."""
    stuck: str | None = None
    """Set, with ``error``, when the query crashed or hung where it should have recovered while the broker answered
    (the final driver never finished cleanly): a liveness failure (``live: no``, LIVE-001), not data loss."""
    cannot_check: str | None = None
    """Set when a driver exited with a contract or harness fault: every later schedule would meet it too."""
    guarantee: Guarantee = Guarantee.EXACTLY_ONCE
    """What the schedule was judged by: under at-least-once ``duplicated`` is counted, never a violation."""
    history: list[dict[str, Any]] = field(default_factory=list)
    driver_logs: list[Path] = field(default_factory=list)
    """The logs of the schedule's drivers, in the order they ran."""
    seconds: float = 0.0

    @property
    def passed(self) -> bool:
        return self.error is None and not self.violations

    @property
    def safe(self) -> bool | None:
        """The schedule's safety verdict, as ``kconform run``'s: False on a record lost, duplicated (under
        exactly-once), reordered or skipped; None when it could not be judged in full (a final run that did not
        finish shows no loss, and a record the broker lost is the broker's); else True."""
        if any(v.requirement != BROKER for v in self.violations):
            return False
        return None if self.error is not None or self.violations else True

    @property
    def live(self) -> bool | None:
        """The schedule's liveness verdict: False when the query crashed or hung (``stuck``); None when the schedule
        stopped for another cause (a broker or a harness fault, a contract fault); else True."""
        if self.stuck is not None:
            return False
        return None if self.error is not None else True


@dataclass
class SoakContext:
    """What every schedule of a soak shares: the broker, the adapter, where to put files."""

    broker: KafkaBroker
    adapter: str
    master: str
    workdir: Path
    run_id: str
    guarantee: Guarantee
    """The adapter's sink's: the drivers ask for exactly-once only of a sink that declares it."""
    stop: threading.Event = field(default_factory=threading.Event)
    cluster: StandaloneCluster | None = None
    """The standalone cluster ``master`` points at, when the soak started one (``executor-kill``)."""
    standby: StandbyDrivers | None = None
    """Drivers started ahead, their session up (local masters): a restart then costs no JVM start."""

    def start_driver(self, run: DriverRun, logs: list[Path], folder: Path) -> subprocess.Popen[bytes]:
        """A driver running ``run``; its log (a new one in ``folder`` unless a standby's) joins ``logs``."""
        if self.standby is not None:
            driver, log = self.standby.start(run)
        else:
            log = folder / f"driver-{len(logs) + 1}.log"
            driver = run.start(log)
        logs.append(log)
        return driver


def run_schedule(context: SoakContext, schedule: Schedule, progress: Callable[[str], None] = lambda _: None) -> Outcome:
    """Run ``schedule`` against a fresh topic set and judge it; never leaves a driver process behind."""
    timeline = Timeline(echo=progress)
    folder = context.workdir / f"schedule-{schedule.index}"
    folder.mkdir(parents=True, exist_ok=True)
    logs: list[Path] = []
    prefix = f"kc-soak-{context.run_id}-{schedule.index}"
    with KafkaClient(context.broker, timeout_s=30) as kafka:
        first = f"{prefix}-src-0"
        kafka.create_topic(first, schedule.source_partitions)
        sink = f"{prefix}-out"
        kafka.create_topic(sink, schedule.sink_partitions)
        producer = RecordProducer(
            context.broker,
            f"s{schedule.seed}.{schedule.index}",
            [TopicPartition(first, p) for p in range(schedule.source_partitions)],
            schedule.records_per_s,
            burst=(MAX_ENTRY + 2) * schedule.max_records_per_trigger,
        )
        topics = Topology(prefix, sink, {first: schedule.source_partitions}, producer.add)
        base = DriverRun(
            adapter=context.adapter,
            master=context.master,
            bootstrap_servers=context.broker.bootstrap_servers,
            source=first,
            sink=sink,
            checkpoint=str(folder / "checkpoint"),
            parallelism=schedule.segments[0].parallelism,
            exactly_once=context.guarantee is Guarantee.EXACTLY_ONCE,
            max_records_per_trigger=schedule.max_records_per_trigger,
            client_settings=context.broker.security,
            subscribe_pattern=topics.pattern,
            client_timeout_ms=CLIENT_TIMEOUT_MS,
            query_timeout_s=QUERY_TIMEOUT_S,
        )
        error: str | None = None
        stuck: str | None = None
        cannot_check: str | None = None
        watch = OpenTransactionWatch(context.broker, sink, schedule.sink_partitions)
        producer.start()
        try:
            wait_until(producer.burst_acknowledged, FLUSH_TIMEOUT_S, "the producer's first records acknowledged")
            *runs, final = schedule.segments
            for segment in runs:
                run = replace(base, parallelism=segment.parallelism)
                _run_segment(context, run, segment, logs, kafka, topics, watch, timeline)
            undelivered = producer.stop()
            timeline.add(f"producer stopped: {producer.acknowledged} acknowledged, {undelivered} undelivered")
            final_run = replace(
                base,
                parallelism=final.parallelism,
                max_records_per_trigger=schedule.max_records_per_trigger * FINAL_TRIGGER_FACTOR,
            )
            error = _run_final(context, final_run, final, logs, kafka, topics, timeline)
            if error is not None and context.broker.answers():  # the query's own failure, the broker healthy
                stuck = error
                timeline.add(f"the broker answers: the query crashed or hung, LIVE-001 ({error})")
        except CannotCheck as fault:  # the adapter or the harness, not the connector: said as the driver said it
            cannot_check = error = f"could not check: {fault}"
            timeline.add(error)
        except Exception as failure:  # any failure of the run is the schedule's error, with its cause
            error = f"{type(failure).__name__}: {failure}"
            timeline.add(f"error: {error}")
        finally:
            producer.stop()
            watch.close()
        outcome = judge(kafka, topics, producer.history, schedule, timeline, error, context.guarantee)
    outcome.cannot_check = cannot_check
    outcome.stuck = stuck
    outcome.driver_logs = logs
    outcome.seconds = time.monotonic() - timeline.began
    return outcome


def _run_segment(
    context: SoakContext, run: DriverRun, segment: Segment, logs: list[Path], kafka: KafkaClient, topics: Topology,
    watch: OpenTransactionWatch, timeline: Timeline,
) -> None:  # fmt: skip
    """One killable driver: its start faults, then its anchored faults in order, then its kill or its end."""
    checkpoint = Path(run.checkpoint)
    for fault in segment.faults:
        if fault.anchor is None:
            timeline.injected_fault(fault, _apply(context, fault, kafka, topics))
    seen = {log_name: len(checkpoint_entries(checkpoint, log_name)) for log_name in ("offsets", "commits")}
    timeline.add(f"driver started at n={run.parallelism}")
    driver = context.start_driver(run, logs, checkpoint.parent)
    try:
        for fault in (f for f in segment.faults if f.anchor is not None):
            anchor = fault.anchor
            assert anchor is not None

            def reached(name: str = anchor.log, entry: int = anchor.entry) -> bool | None:
                if driver.poll() is not None:
                    return True
                if name == "txn":
                    return True if len(checkpoint_entries(checkpoint, "commits")) >= seen["commits"] + entry \
                        and watch.open() else None  # fmt: skip
                return True if len(checkpoint_entries(checkpoint, name)) > seen[name] + entry else None

            wait_until(reached, DRIVER_TIMEOUT_S, f"{anchor} or the driver's exit (log: {logs[-1]})", step_s=0.01)
            if driver.poll() is not None:
                if fault.kind in NEEDS_A_RUNNING_DRIVER:
                    timeline.add(f"{fault.describe()}: not injected, the driver ended first (exit {driver.returncode})")
                else:
                    timeline.injected_fault(fault, "after the driver ended: " + _apply(context, fault, kafka, topics))
                continue
            with contextlib.suppress(subprocess.TimeoutExpired):
                driver.wait(timeout=anchor.delay_ms / 1000)  # the drawn point inside the batch, not synchronisation
            if fault.kind is FaultKind.DRIVER_KILL:
                kill_group(driver)
                if killed_by_sigkill(driver.returncode):  # not a driver that ended just before the signal
                    timeline.injected_fault(fault, "SIGKILL; " + torn_or_plain(fault.phase, checkpoint))
                else:
                    timeline.add(f"{fault.describe()}: not injected, the driver ended first (exit {driver.returncode})")
            else:
                try:
                    timeline.injected_fault(fault, _apply(context, fault, kafka, topics))
                except NotInjected as nothing:
                    timeline.add(f"{fault.describe()}: not injected, {nothing}")
        if segment.kill is None:
            code = driver.wait(timeout=DRIVER_TIMEOUT_S)
            timeline.add(f"driver ended (exit {code})")
    finally:
        kill_group(driver)
    raise_if_cannot_check(driver, logs[-1])


def _apply(context: SoakContext, fault: Fault, kafka: KafkaClient, topics: Topology) -> str:
    return apply(fault, context.broker, kafka, topics, context.stop, context.cluster)


def _run_final(
    context: SoakContext, run: DriverRun, segment: Segment, logs: list[Path], kafka: KafkaClient, topics: Topology,
    timeline: Timeline,
) -> str | None:  # fmt: skip
    """The last driver, with nothing produced any more: it must read everything and exit 0."""
    for fault in segment.faults:
        timeline.injected_fault(fault, _apply(context, fault, kafka, topics))
    for attempt in range(1, FINAL_ATTEMPTS + 1):
        timeline.add(f"final driver started at n={run.parallelism} (attempt {attempt})")
        driver = context.start_driver(run, logs, Path(run.checkpoint).parent)
        try:
            code = driver.wait(timeout=DRIVER_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            code = None
        finally:
            kill_group(driver)
        timeline.add(f"final driver ended ({'timed out' if code is None else f'exit {code}'})")
        raise_if_cannot_check(driver, logs[-1])
        if code == 0:
            return None
    return f"the final driver did not finish cleanly in {FINAL_ATTEMPTS} attempts (log: {logs[-1]})"


def judge(
    kafka: KafkaClient, topics: Topology, produced: list[Produced], schedule: Schedule, timeline: Timeline,
    error: str | None, guarantee: Guarantee,
) -> Outcome:  # fmt: skip
    """Read the schedule's topics and give the history its ``verdict``."""
    source = {
        TopicPartition(topic, p): records
        for topic in sorted(topics.sources)
        for p, records in topic_records(kafka, topic, Isolation.READ_UNCOMMITTED).items()
    }
    written = topic_records(kafka, topics.sink, Isolation.READ_COMMITTED)
    outcome = verdict(source, written, produced, schedule, timeline, error, guarantee=guarantee)
    outcome.history += [
        {"op": "read", "isolation": "read_committed", "topic": topics.sink, "partition": p,
         "values": [None if r.value is None else r.value.decode(errors="replace") for r in records]}
        for p, records in written.items()
    ]  # fmt: skip
    return outcome


def verdict(
    source: Mapping[TopicPartition, list[Record]], written: Mapping[int, list[Record]], produced: list[Produced],
    schedule: Schedule, timeline: Timeline, error: str | None, *, guarantee: Guarantee = Guarantee.EXACTLY_ONCE,
) -> Outcome:  # fmt: skip
    """The history's verdict: COMMIT-011 (lost, duplicated), COMMIT-013 (order), RESTORE-003 (continuity).

    ``source``: what the source partitions hold; ``written``: the sink's partitions read_committed. With
    ``error`` (the final run did not finish) a missing record may still have come, so only excesses and
    disorder are evidence: such a schedule is an ERROR, or a FAIL on a duplicate, never a PASS. Under
    ``Guarantee.AT_LEAST_ONCE`` a duplicate is counted, not failed: each written value covers its source
    offset once, so only a gap is RESTORE-003's evidence.
    """
    origin = {r.value: (tp, r.offset) for tp, records in source.items() for r in records}
    expected = Counter(r.value for records in source.values() for r in records)
    seen = Counter(r.value for records in written.values() for r in records)
    acknowledged = [op for op in produced if op.offset is not None]
    violations = [
        Violation(
            BROKER,
            "acknowledged-record-missing",
            f"{op.value!r} acknowledged at {op.tp}@{op.offset}",
            data=tp_fields(op.tp) | {"offset": op.offset, "value": value_field(op.value)},
        )
        for op in acknowledged
        if op.value not in expected
    ]
    exactly_once = guarantee is Guarantee.EXACTLY_ONCE
    violations += check_output(expected, seen, exactly_once=exactly_once)
    violations += check_order(origin, {p: [r.value for r in records] for p, records in written.items()})
    reads = seen if exactly_once else Counter(seen.keys())
    covered = [ReadRecord(*origin[v], value=v, task=0) for v, n in reads.items() if v in origin for _ in range(n)]
    ends = {tp: max((r.offset for r in records), default=-1) + 1 for tp, records in source.items()}
    violations += check_read_once(covered, ends)
    if error is not None:
        violations = [v for v in violations if v.kind not in UNFINISHED_IS_NOT_LOSS]
    return Outcome(
        schedule,
        violations,
        timeline,
        produced=len(acknowledged),
        lost=0 if error is not None else sum((expected - seen).values()),
        duplicated=sum((seen - expected).values()),
        error=error,
        guarantee=guarantee,
        history=[op.to_json() for op in produced],
    )
