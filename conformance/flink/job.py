"""One run of a Flink job in the harness: what ``jvm/flink-harness`` reads (its run description), as data.

A scenario is a sequence of runs on one source and sink: a fresh run, then runs restored from the savepoint the
previous one stopped with (at another parallelism, say). Pure: ``description`` is the JSON the harness reads.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, Literal

from ...reference_impl.types import TopicPartition
from ..workloads.flink.job_options import Failure

MAX_PARALLELISM: Final = 8
"""The most subtasks a run may ask for: the MiniCluster runs them all as threads on a machine of two cores."""
HARNESS_RESTARTS: Final = 3
"""Restarts the job's fixed-delay strategy allows: a planned failure needs one; more is a job that keeps failing."""


@dataclass(frozen=True, slots=True)
class Stop:
    """When the harness stops an unbounded job with a savepoint: once every condition given holds, or once
    ``within_ms`` passed (the answer then says the condition was not met)."""

    after_records: int | None = None
    """Records read in this run (replays included)."""
    at_offsets: Mapping[TopicPartition, int] | None = None
    """Each partition read up to this end (exclusive) in this run, as the state of a completed checkpoint holds it:
    reads a failover rolled back (a failed attempt's, after its last completed checkpoint) do not count, so the
    savepoint the stop takes holds them all."""
    listed: bool = False
    """The source's enumerator listed its subscription in this run (its discovery, even one that found nothing):
    the run records each listing (``RunHistory.listings``)."""
    within_ms: int = 60_000


SINK_DEFAULTS: Final = {"transaction.timeout.ms": "60000"}
"""The sink's own default transaction timeout (one hour) is above the broker's maximum (15 minutes): Flink's
documentation says to lower it, and a job that does not fails when its first transaction starts."""


@dataclass(frozen=True, slots=True)
class Sink:
    """The job's ``KafkaSink``: its topic, its delivery guarantee and producer settings."""

    topic: str
    exactly_once: bool
    transactional_id_prefix: str | None
    """``None``: the job sets none, so the release's own default or refusal applies (COMMIT-022)."""
    properties: Mapping[str, str] = field(default_factory=lambda: dict(SINK_DEFAULTS))
    naming: str | None = None
    """Its ``TransactionNamingStrategy`` (``ConnectorRelease.transaction_naming``); ``None``: the release's default."""
    no_guarantee: bool = False
    """``DeliveryGuarantee.NONE`` (``exactly_once`` False): the sink neither flushes at a checkpoint nor commits."""

    def __post_init__(self) -> None:
        if self.no_guarantee and self.exactly_once:
            raise ValueError("a sink is exactly-once or has no guarantee, not both")

    @property
    def guarantee(self) -> str:
        """Its ``DeliveryGuarantee``'s name."""
        return "NONE" if self.no_guarantee else "EXACTLY_ONCE" if self.exactly_once else "AT_LEAST_ONCE"


@dataclass(frozen=True, slots=True)
class GroupOffsets:
    """A start from consumer group ``group``'s committed offsets (``OffsetsInitializer.committedOffsets``): a
    partition the group holds none for starts at ``fallback``, or, with ``None``, the start fails (RESTORE-018)."""

    group: str
    fallback: Literal["earliest", "latest"] | None = None


@dataclass(frozen=True, slots=True)
class JobRun:
    """One job of the harness: a ``KafkaSource`` on ``topics`` (or the topics ``topic_pattern`` matches, when set)
    into ``sink``, at ``parallelism``.

    ``stop`` is ``None`` for a bounded job (it reads to the end offsets it finds at start, then finishes; one still
    running after ``timeout_ms`` is cancelled and ends ``unfinished``); otherwise the source is unbounded and the
    job is stopped with a savepoint into ``savepoint_dir``.
    ``restore_from`` is the savepoint of an earlier run.
    """

    bootstrap_servers: str
    topics: tuple[str, ...]
    sink: Sink
    parallelism: int
    stop: Stop | None = None
    restore_from: str | None = None
    failure: Failure | None = None
    checkpoint_interval_ms: int = 500
    starting_offsets: Literal["earliest", "latest"] | GroupOffsets = "earliest"
    source_properties: Mapping[str, str] = field(default_factory=dict)
    pace_ms: int = 0
    """A pause after each record read: spreads a few hundred records over several checkpoints."""
    timeout_ms: int = 120_000
    """The harness's bound on each wait for the job (its end, its savepoint)."""
    topic_pattern: str | None = None
    """A Java regular expression: subscribe by pattern instead of ``topics``."""
    restart_attempts: int = HARNESS_RESTARTS
    """Restarts the job may take before it fails: more than ``HARNESS_RESTARTS`` for a fault that fails it
    again on each restart until the fault ends."""
    more_sinks: tuple[Sink, ...] = ()
    """Further ``KafkaSink``s of the same records, beside ``sink``."""
    stopping_offsets: Mapping[TopicPartition, int] | None = None
    """A bounded job's stopping offsets (``OffsetsInitializer.offsets``); ``None``: the latest at its start
    (``OffsetsInitializer.latest()``). Only for a bounded job (``stop`` is ``None``)."""
    record_listings: bool = False
    """Record each listing of the subscription by the source's enumerator (``RunHistory.listings``): what each
    discovery found. A stop that waits for a listing (``Stop.listed``) records them whatever this says."""
    runtime_mode: Literal["STREAMING", "BATCH"] = "STREAMING"
    """``execution.runtime-mode``. BATCH: a bounded job (``stop`` None), fresh (no savepoint to restore) and with no
    planned failure; the harness sets no checkpoint interval (BATCH takes no checkpoint)."""

    def __post_init__(self) -> None:
        if self.runtime_mode == "BATCH" and (
            self.stop is not None or self.restore_from is not None or self.failure is not None
        ):
            raise ValueError("a BATCH job is bounded and fresh, with no planned failure")
        if not 1 <= self.parallelism <= MAX_PARALLELISM:
            raise ValueError(f"parallelism {self.parallelism} is outside 1..{MAX_PARALLELISM}")
        if not self.topics and self.topic_pattern is None:
            raise ValueError("a job reads topics or a topic pattern: give one")
        if self.stopping_offsets is not None and self.stop is not None:
            raise ValueError("stopping offsets are a bounded job's (stop None)")


def description(run: JobRun, history: Path, savepoint_dir: Path) -> dict[str, Any]:
    """The run description ``kconform.FlinkHarness`` reads; it appends to ``history`` and saves into
    ``savepoint_dir``."""
    stop = run.stop
    return {
        "bootstrap_servers": run.bootstrap_servers,
        "topics": list(run.topics),
        "topic_pattern": run.topic_pattern,
        "starting_offsets": start_description(run.starting_offsets),
        "bounded": stop is None,
        "stopping_offsets": None
        if run.stopping_offsets is None
        else [[tp.topic, tp.partition, end] for tp, end in sorted(run.stopping_offsets.items())],
        "parallelism": run.parallelism,
        "checkpoint_interval_ms": run.checkpoint_interval_ms,
        "restart_attempts": run.restart_attempts,
        "sink": sink_description(run.sink),
        "more_sinks": [sink_description(sink) for sink in run.more_sinks],
        "source_properties": dict(run.source_properties),
        "history": str(history),
        "savepoint_dir": str(savepoint_dir),
        "restore_from": run.restore_from,
        "failure": None
        if run.failure is None
        else {"subtask": run.failure.subtask, "after_records": run.failure.after_records, "at": run.failure.at},
        "stop": None
        if stop is None
        else {
            "after_records": stop.after_records,
            "at_offsets": None
            if stop.at_offsets is None
            else [[tp.topic, tp.partition, end] for tp, end in sorted(stop.at_offsets.items())],
            "listed": stop.listed,
            "within_ms": stop.within_ms,
        },
        "record_listings": run.record_listings or (stop is not None and stop.listed),
        "pace_ms": run.pace_ms,
        "timeout_ms": run.timeout_ms,
        "runtime_mode": run.runtime_mode,
    }


def sink_description(sink: Sink) -> dict[str, Any]:
    """One ``KafkaSink`` as the harness reads it."""
    return {
        "topic": sink.topic,
        "exactly_once": sink.exactly_once,
        "delivery_guarantee": sink.guarantee,
        "transactional_id_prefix": sink.transactional_id_prefix,
        "properties": dict(sink.properties),
        "naming": sink.naming,
    }


def start_description(start: Literal["earliest", "latest"] | GroupOffsets) -> str | dict[str, str | None]:
    """The source's start as the harness reads it: ``earliest``, ``latest``, or the group and its fallback."""
    if isinstance(start, GroupOffsets):
        return {"group": start.group, "fallback": start.fallback}
    return start
