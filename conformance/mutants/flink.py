"""Flink jobs broken on purpose: Flink's own connector at the newest pinned line, with the harness changing each
job it runs in one way a deployment can get wrong. Each must fail the Flink scenario that targets its bug
(``tests/test_mutants.py``), as the real bugs of the bank fail theirs on their releases.

``--adapter kconform.conformance.mutants.flink:<name>`` runs one.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

from ..adapters.flink_kafka import FlinkKafkaAdapter
from ..flink.harness import JobEdit
from ..flink.job import GroupOffsets, JobRun, Sink
from ..flink.versions import NEWEST, release
from . import registry


@dataclass(frozen=True)
class FlinkMutant:
    """A sabotaged Flink job, the scenario that must catch it and the requirements it breaks."""

    name: str
    kills_on: frozenset[str]
    bug: str
    adapter: FlinkKafkaAdapter
    scenario: str
    """A substring of the suite test's name: the one scenario the mutant is run against."""


def __getattr__(name: str) -> FlinkKafkaAdapter:
    """``--adapter kconform.conformance.mutants.flink:<name>``: the adapter of the registered mutant ``name``."""
    return registry.find(name, FlinkMutant).adapter


def flink_mutant(name: str, kills_on: set[str], bug: str, *, scenario: str) -> Callable[[JobEdit], JobEdit]:
    """Registers ``edit``, applied by the harness to every job of the newest line, as the mutant ``name``."""
    adapter = FlinkKafkaAdapter(release(NEWEST), name=f"flink-connector-kafka {NEWEST} ({name})")
    return lambda edit: registry.register(
        edit, FlinkMutant(name, frozenset(kills_on), bug, replace(adapter, job_edit=edit), scenario)
    )


@flink_mutant(
    "flink_sink_exactly_once_off",
    {"COMMIT-011", "COMMIT-013"},
    "the job's KafkaSink runs at-least-once where exactly-once was asked",
    scenario="flink_exactly_once_through_a_failure",
)
def _exactly_once_off(job: JobRun) -> JobRun:
    """``DeliveryGuarantee.AT_LEAST_ONCE`` in place of ``EXACTLY_ONCE``: what a subtask wrote after the last
    checkpoint is visible at once, and written again when the job replays from that checkpoint."""
    return replace(job, sink=replace(job.sink, exactly_once=False))


@flink_mutant(
    "flink_sink_transaction_timeout_ignored",
    {"COMMIT-004"},
    "the job's KafkaSink gives its producers a minute of transaction timeout, not the one it was configured with",
    scenario="killed_and_not_restarted",
)
def _transaction_timeout_ignored(job: JobRun) -> JobRun:
    """The sink's producers keep kafka-clients' default ``transaction.timeout.ms`` (60 s) whatever the job set: a
    job killed and never restarted blocks read_committed readers for that minute, not for the timeout asked."""
    properties = {**job.sink.properties, "transaction.timeout.ms": "60000"}
    return replace(job, sink=replace(job.sink, properties=properties))


@flink_mutant(
    "flink_sink_default_prefix",
    {"COMMIT-022"},
    "the job's exactly-once KafkaSink gets connector 3.x's default prefix 'kafka-sink' where it set none",
    scenario="flink_exactly_once_sink_without_a_prefix",
)
def _default_prefix(job: JobRun) -> JobRun:
    """A deployment that fills in ``kafka-sink`` (``KafkaSinkBuilder``'s default up to connector 3.4.0) for a sink
    without a prefix: the job starts where FLINK-37380 refuses it, sharing its ids with every such sink."""
    if job.sink.transactional_id_prefix is not None:
        return job
    return replace(job, sink=replace(job.sink, transactional_id_prefix="kafka-sink"))


@flink_mutant(
    "flink_switch_restored_without_state",
    {"COMMIT-023"},
    "a job switched to POOLING naming is started afresh instead of from its savepoint",
    scenario="flink_a_savepoint_restored_under_the_other_naming",
)
def _switch_restored_without_state(job: JobRun) -> JobRun:
    """A naming switch deployed as a new job: restored under ``POOLING``, it drops its savepoint and reads its
    input from the start again, so what the earlier run committed becomes visible twice."""
    if job.restore_from is None or job.sink.naming != "POOLING":
        return job
    return replace(job, restore_from=None)


@flink_mutant(
    "flink_group_start_latest_without_offset",
    {"RESTORE-018"},
    "the job's start from group offsets without a fallback starts a partition the group holds none for at LATEST",
    scenario="flink_a_start_from_group_offsets",
)
def _group_start_latest_without_offset(job: JobRun) -> JobRun:
    """``committedOffsets(LATEST)`` where ``committedOffsets()`` was asked, as a source left at Kafka's consumer
    default (``auto.offset.reset=latest``) does: the job goes on, skipping what the partition already holds."""
    start = job.starting_offsets
    if not isinstance(start, GroupOffsets) or start.fallback is not None:
        return job
    return replace(job, starting_offsets=replace(start, fallback="latest"))


@flink_mutant(
    "flink_sink_acks_zero",
    {"COMMIT-007"},
    "the job's at-least-once KafkaSinks send with acks=0, so a write the broker refused is taken for a done one",
    scenario="flink_jobs_keep_every_promise",
)
def _acks_zero(job: JobRun) -> JobRun:
    """Producer ``acks=0`` (idempotence off, which needs ``all``) on every at-least-once sink: the producer counts a
    record sent once it is on the wire and never hears the broker's refusal, so the sink's flush at a checkpoint
    succeeds over it. The Flink workload's refusal (``Refusal``) meets it in seed 1's first drawn schedule."""

    def unacked(sink: Sink) -> Sink:
        if sink.exactly_once:
            return sink
        return replace(sink, properties={**sink.properties, "acks": "0", "enable.idempotence": "false"})

    return replace(job, sink=unacked(job.sink), more_sinks=tuple(unacked(s) for s in job.more_sinks))


@flink_mutant(
    "flink_discovery_off",
    {"DISC-009"},
    "the job's unbounded KafkaSource gets partition.discovery.interval.ms -1 where the job set no interval",
    scenario="flink_jobs_keep_every_promise",
)
def _discovery_off(job: JobRun) -> JobRun:
    """Periodic partition discovery off for an unbounded source that left the interval to the release, as
    flink-connector-kafka 3.1.0 to 3.4.0's ``KafkaSourceBuilder`` did (FLINK-36780): the harness reports the
    interval its enumerator reads, -1, where the release's default is five minutes. The Flink workload's explicit
    schedule leaves the interval unset."""
    key = "partition.discovery.interval.ms"
    if job.stop is None or key in job.source_properties:
        return job
    return replace(job, source_properties={**job.source_properties, key: "-1"})


@flink_mutant(
    "flink_bounded_read_committed_forced",
    {"RESTORE-010", "COMMIT-011"},
    "the job's bounded KafkaSource reads at read_committed where the job left isolation.level unset",
    scenario="flink_jobs_keep_every_promise",
)
def _bounded_read_committed_forced(job: JobRun) -> JobRun:
    """A bounded source that reads only committed records where the job asked the consumer's default
    (read_uncommitted): the records of aborted transactions below its stopping offsets are never read, and its sink
    never holds them. The Flink workload's explicit schedule has a bounded reader with isolation unset over two
    aborted transactions."""
    if job.stop is not None or "isolation.level" in job.source_properties:
        return job
    return replace(job, source_properties={**job.source_properties, "isolation.level": "read_committed"})
