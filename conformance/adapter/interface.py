"""The adapter interface: what an implementation provides to plug into the suite.

Protocol level (in-process, fast): the implementation exposes its assigner, discoverer, source
state (snapshot / restore) and sink commit protocol over the reference core's ports, and the
suite drives them against the deterministic Kafka model. Pipeline level (a black box on Spark):
the implementation builds its streaming source and sink (``PipelineAdapter``) and the suite runs
real queries on a real broker, restarts, rescales, kills and fails them, and judges the records.
An adapter may offer either level or both.

An adapter declares capabilities and variants; a requirement whose capability is not declared is
a skip with a reason, never a pass. ``REQUIRED_MEMBERS`` says what each capability needs, and
``CONTRACT_CHANGES`` what each contract version changed.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, Protocol, runtime_checkable

from ...reference_impl.commit import NamingStrategy
from ...reference_impl.configs import (
    CONTRACT_VERSION,
    DiscovererConfig,
    RecoveryConfig,
    RestoreConfig,
    SinkConfig,
    SourceConfig,
)
from ...reference_impl.credentials import Secret
from ...reference_impl.discovery import Metadata, ZeroPartitionsPolicy
from ...reference_impl.ports import LogReader, OffsetStore, Record
from ...reference_impl.restore import RestoreVariant
from ...reference_impl.types import TopicPartition

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.streaming.readwriter import DataStreamWriter

PIPELINE_CAPABILITIES = {
    "pipeline": "runs its Spark source as a real streaming query (pipeline level)",
    "pipeline-assignment": "Spark task i of a batch reads exactly the partitions Flink's assigner gives subtask i",
    "pipeline-rescale": "a restart from the same checkpoint at another parallelism continues every partition",
    "pipeline-regex": "subscribes by regular expression; a newly matching topic is read from its first record",
    "pipeline-sink": "writes a streaming query's rows to Kafka, at least once",
    "pipeline-exactly-once-sink": "its sink's exactly-once mode: read_committed output equals the input",
    "pipeline-keyed-sink": "its sink writes a keyed row (no partition column) where Java's producer puts its key",
    "pipeline-transactional-id-prefix": "its exactly-once sink names its transactional ids with "
    "SinkSpec.transactional_id_prefix, mapped onto the connector's own option",
    "confluent-kafka-consumer": "reads Kafka with the confluent-kafka this interpreter imports: the consumer's "
    "positions, pause, resume and stored offsets are checked on the run's broker (RESTORE-008, -009, -011, -012)",
}
ENGINE_CAPABILITIES = {
    "flink-job": "is Flink's own KafkaSource and KafkaSink at one release, run as real jobs (pipeline level)",
    "kafka-clients-workload": "is Kafka's own KafkaProducer and KafkaConsumer (kafka-clients) at one release, driven "
    "by the client workload through a harness JVM (CLIENT-001 to -008)",
}
"""Pipeline-level capabilities of an engine the suite runs itself (no Spark frame): its own scenarios judge it."""
ENGINE_SPECIFIC = frozenset({*ENGINE_CAPABILITIES, "confluent-kafka-consumer"})
"""Capabilities of how an adapter runs, not of what it supports: a test that needs one judges requirements
through that engine's or client's own scenario, so it says nothing of an adapter that does not run on it."""
CAPABILITIES = {
    "assignment": "exposes its partition assigner",
    "assignment-plan": "plans a whole partition list at once, plan(partitions, parallelism) (range-style assigners)",
    "discovery": "exposes a per-subtask discoverer",
    "regex-subscription": "subscribes by regular expression",
    "partition-growth": "discovers partitions added to existing topics",
    "source-state": "exposes source snapshot and restore",
    "rescale": "restores source state at a different parallelism",
    "read-committed-source": "its source reads read_committed when SourceConfig/RestoreConfig.isolation asks it to",
    "offset-commit": "commits source offsets to the consumer group on checkpoint completion",
    "exactly-once-sink": "exposes a transactional two-phase-commit sink",
    "sink-close": "its exactly-once sink's close(): what stopping the job without a restart does to its transactions",
    "sink-job": "starts a job's exactly-once sinks together, sinks(configs), refusing an empty or shared prefix",
    "naming-switch": "its exactly-once sink takes SinkConfig/RecoveryConfig.naming: a recovery under another naming",
    "keyed-sink-placement": "exposes its sink's partitioner: partitioner().partition(topic, partition, key, value, n)",
    "group-assignment": "exposes its consumer-group assignors: assign_group(strategy, group) for assignment_strategies",
    "group-offsets-start": "starts a fresh source from its consumer group's committed offsets: group_start(config)",
    **PIPELINE_CAPABILITIES,
    **ENGINE_CAPABILITIES,
}


class Discoverer(Protocol):
    def discover(self, metadata: Metadata) -> Iterable[TopicPartition]: ...


class Source(Protocol):
    """All subtasks of one source (see ``kconform.reference_impl.restore.SourceJob``)."""

    @property
    def offsets(self) -> Sequence[Mapping[TopicPartition, int]]: ...

    def discover(self, metadata: Metadata, reader: LogReader) -> Mapping[TopicPartition, int]:
        """Find new partitions and place them; ``reader`` is the log, for the start offsets discovery
        resolves (a job started at LATEST begins where each partition ended when it was found, DISC-005)."""
        ...

    def poll(self, reader: LogReader, tp: TopicPartition, max_records: int) -> Sequence[Record]:
        """Fetch the next records of ``tp`` (at most ``max_records``) and advance past them; the source
        resolves its own start sentinels and owns its position."""
        ...

    def snapshot(self, checkpoint_id: int, store: OffsetStore, group: str) -> Any:
        """Checkpoint ``checkpoint_id``; ``store`` is the consumer group, there as in a real connector."""
        ...

    def notify_checkpoint_complete(self, checkpoint_id: int, store: OffsetStore, group: str) -> None: ...


class Sink(Protocol):
    """All writers of one sink and its committer (see ``kconform.reference_impl.commit.ExactlyOnceSink``)."""

    def start(self) -> None: ...

    def write(self, subtask: int, topic: str, partition: int, key: bytes | None, value: bytes | None) -> None: ...

    def checkpoint(self, checkpoint_id: int) -> Any: ...

    def notify_checkpoint_complete(self, checkpoint_id: int) -> None: ...

    def close(self) -> None:
        """The job stops without a restart (capability ``sink-close``, COMMIT-020)."""
        ...


@runtime_checkable
class ProtocolAdapter(Protocol):
    """What an implementation provides at protocol level. Methods of undeclared capabilities may raise."""

    contract_version: int
    name: str
    capabilities: frozenset[str]
    restore_variant: RestoreVariant
    naming: NamingStrategy
    discovery_of_zero: ZeroPartitionsPolicy

    def assign(self, topic: str, partition: int, parallelism: int) -> int: ...

    # Optional: ``plan(partitions, parallelism) -> {partition: subtask}``, the plan of a whole
    # partition list at once (an assigner that depends on the list, range-style). The assignment
    # tests judge it when present, else the plan ``assign`` gives partition by partition.

    # Optional (capability ``group-offsets-start``): ``group_start(config: GroupStartConfig) -> {partition: start}``,
    # where a fresh source told to start from its group's committed offsets starts each partition (an offset, or
    # the EARLIEST/LATEST sentinel of a configured fallback); a ``ValueError`` naming the partitions when it fails.

    # Optional, for any adapter: ``versions() -> {component: release}``, the releases it judges (its connector's
    # jars), which every report's ``judged`` names (``kconform.conformance.gate.report.judged_components``).

    def discoverer(self, config: DiscovererConfig) -> Discoverer: ...

    def source(self, config: SourceConfig) -> Source: ...

    def restore_source(self, config: RestoreConfig) -> Source:
        """Restore at ``config.parallelism``; ``config.initial_offset`` is the job's configured startup mode."""
        ...

    def sink(self, config: SinkConfig) -> Sink: ...

    def sinks(self, configs: Sequence[SinkConfig]) -> Sequence[Sink]:
        """The exactly-once sinks of one job, started together (capability ``sink-job``, COMMIT-022)."""
        ...

    def recover_sink(self, config: RecoveryConfig) -> Sink: ...

    def initial_sink_checkpoint(self, parallelism: int) -> Any: ...


DEFAULT_MASTER = "local[2,3]"
"""Where pipeline scenarios run by default: two cores, up to three attempts per task, so Spark
retries a failed task as it would on a cluster."""


SOURCE_SETTINGS_STATED: Final = ("isolation.level",)
"""Client settings every ``SourceSpec.client_settings`` states, whatever the scenario: ``isolation.level`` is
``read_uncommitted`` unless a scenario asks for ``read_committed`` (RESTORE-013), because the clients' defaults
differ (librdkafka's is read_committed, its ``CONFIGURATION.md``; Kafka's Java consumer's, and so Spark's and
Flink's connectors', read_uncommitted, ``ConsumerConfig.DEFAULT_ISOLATION_LEVEL``; Spark's connector passes its
``kafka.isolation.level`` option through, overriding only deserializers, ``auto.offset.reset``, ``group.id``,
``enable.auto.commit`` and the driver's ``max.poll.records``: ``KafkaSourceProvider.kafkaParamsForDriver`` and
``kafkaParamsForExecutors``). A source passes them to every consumer after its own defaults and overrides none
(contract 4)."""
SINK_SETTINGS_RELIED_ON: Final = ("linger.ms", "queue.buffering.max.messages", "transaction.timeout.ms")
"""Client settings of ``SinkSpec.client_settings`` that the exactly-once scenarios inject faults through, so a sink
passes them to its producers unchanged: ``linger.ms`` = 100 and ``queue.buffering.max.messages`` = 1 slow each task
to about ten records a second, holding its transaction open for seconds (COMMIT-004, -007, -016, -017, -020,
-021), and ``transaction.timeout.ms`` is the timeout the broker must enforce (2 s in COMMIT-021, 5 s in COMMIT-007,
a refused one in COMMIT-015, 5 min elsewhere). The slow-down is verified before a verdict (a sink that overrides it
gets ERROR naming it: ``kconform.conformance.spark.injections``); the timeout is not (the broker does not show a
client's timeout), so a sink that overrides it changes what those scenarios judge."""


@dataclass(frozen=True, slots=True)
class SourceSpec:
    """What a pipeline scenario asks the adapter's streaming source to read."""

    bootstrap_servers: str
    parallelism: int
    """Flink's n: the number of input partitions (Spark tasks) per batch."""
    subscribe: tuple[str, ...] = ()
    subscribe_pattern: str | None = None
    starting_offsets: str = "earliest"
    """``earliest`` or ``latest``, for partitions the checkpoint does not know yet; in the RESTORE-017 scenario
    specific offsets in Spark's JSON notation (``{"topic": {"0": 4}}``), which leave a partition out."""
    max_records_per_trigger: int | None = None
    client_settings: tuple[tuple[str, str | Secret], ...] = ()
    """Kafka client settings the source must pass to every consumer and not override: those the broker needs
    (security), a ``Secret``'s as ``secret.reveal()`` (``kconform.reference_impl.credentials.revealed``) and only
    there (it prints as ``***``), and those the scenario relies on, always stated: ``isolation.level``
    (``read_uncommitted`` unless a scenario asks for ``read_committed``; librdkafka's own default is
    read_committed)."""
    client_timeout_ms: int | None = None
    """How long one client call may block before the connector gives up on it (``kconform soak`` sets it
    below its node pauses and commit stalls, which must outlast it); None: the connector's default."""
    accept_data_loss: bool = False
    """Whether the source may go on from a partition's log start when its position was deleted before it read
    there (Spark's ``failOnDataLoss=false``), reporting the loss; False: it must fail (RESTORE-015). A
    connector that never accepts loss ignores it: failing is right either way."""

    @property
    def isolation(self) -> str | None:
        """The ``isolation.level`` ``client_settings`` states (``SOURCE_SETTINGS_STATED``): ``read_uncommitted`` or
        ``read_committed``; ``None`` only in a spec the suite did not build."""
        stated = dict(self.client_settings).get("isolation.level")
        return None if stated is None else str(stated)


@dataclass(frozen=True, slots=True)
class SinkSpec:
    """What a pipeline scenario asks the adapter's sink to write: rows of ``key``, ``value`` (binary)."""

    bootstrap_servers: str
    topic: str
    exactly_once: bool
    client_settings: tuple[tuple[str, str | Secret], ...] = ()
    """Kafka client settings the sink must pass to every producer and not override: those the broker needs
    (security) and those the scenarios inject faults through (``SINK_SETTINGS_RELIED_ON``: the slow-down's
    ``linger.ms`` and ``queue.buffering.max.messages``, ``transaction.timeout.ms``)."""
    client_timeout_ms: int | None = None
    """As ``SourceSpec.client_timeout_ms``: e.g. how long a transaction's commit may go unanswered."""
    transactional_id_prefix: str | None = None
    """The prefix of the exactly-once sink's transactional ids; None: the adapter's own default. Only an adapter
    that declares ``pipeline-transactional-id-prefix`` is given one (two sinks whose prefixes extend one another,
    COMMIT-016; a prefix changed between runs of one query, COMMIT-017)."""


@runtime_checkable
class PipelineAdapter(Protocol):
    """What an implementation provides at pipeline level (capability ``pipeline``).

    ``read_stream`` returns a streaming frame with at least ``topic``, ``partition``, ``offset``,
    ``key`` and ``value``; ``write_stream`` returns the writer of ``frame`` to Kafka, without a
    checkpoint location or trigger (the suite sets both). Optional, so not members here:
    ``real_time_batch``, a duration that makes the suite run every query in Spark's real-time mode
    (``kconform.conformance.spark.real_time``), and ``discovery_of_zero``, the source's policy for a
    subscription that matches nothing at start (``ZeroPartitionsPolicy.IGNORE`` where absent, as Spark's).
    """

    @property
    def name(self) -> str: ...

    @property
    def capabilities(self) -> frozenset[str]: ...

    def read_stream(self, spark: SparkSession, source: SourceSpec) -> DataFrame: ...

    def write_stream(self, frame: DataFrame, sink: SinkSpec) -> DataStreamWriter: ...


Adapter = ProtocolAdapter | PipelineAdapter


REQUIRED_MEMBERS: dict[str, tuple[str, ...]] = {
    "assignment": ("assign(topic, partition, parallelism)",),
    "assignment-plan": ("plan(partitions, parallelism)",),
    "discovery": ("discoverer(config: DiscovererConfig)", "discovery_of_zero"),
    "regex-subscription": ("discoverer(config: DiscovererConfig)",),
    "partition-growth": ("source(config: SourceConfig)",),
    "source-state": (
        "source(config: SourceConfig)",
        "restore_source(config: RestoreConfig)",
        "restore_variant",
    ),
    "rescale": ("restore_source(config: RestoreConfig)",),
    "read-committed-source": ("source(config: SourceConfig)", "restore_source(config: RestoreConfig)"),
    "offset-commit": ("source(config: SourceConfig)",),
    "exactly-once-sink": (
        "sink(config: SinkConfig)",
        "recover_sink(config: RecoveryConfig)",
        "initial_sink_checkpoint(parallelism)",
        "naming",
    ),
    "sink-job": ("sinks(configs: Sequence[SinkConfig])",),
    "naming-switch": ("sink(config: SinkConfig)", "recover_sink(config: RecoveryConfig)"),
    "keyed-sink-placement": ("partitioner()",),
    "group-assignment": ("assign_group(strategy, group)", "assignment_strategies"),
    "group-offsets-start": ("group_start(config: GroupStartConfig)",),
    "pipeline": ("read_stream(spark, source)", "write_stream(frame, sink)"),
    "flink-job": ("release",),
    "kafka-clients-workload": ("release",),
}
"""What each capability needs of an adapter; nothing else is required (``AdapterBase`` has the rest)."""


class AdapterBase:
    """Subclass this and define only what your declared capabilities need (``REQUIRED_MEMBERS``).

    The variants default to Flink's legacy consumer's (union-filter restore, incrementing
    transactional ids, zero partitions ignored); a method of an undeclared capability is never
    called by the suite.
    """

    contract_version: int = CONTRACT_VERSION
    name: str = "my-connector"
    capabilities: frozenset[str] = frozenset()
    restore_variant: RestoreVariant = RestoreVariant.UNION_FILTER
    naming: NamingStrategy = NamingStrategy.INCREMENTING
    discovery_of_zero: ZeroPartitionsPolicy = ZeroPartitionsPolicy.IGNORE


def member_name(member: str) -> str:
    return member.split("(", 1)[0]


def needed_members(adapter: object) -> list[str]:
    """The members ``adapter``'s declared capabilities need, with their signatures."""
    needed = ["name", "capabilities"]
    for capability in sorted(set(getattr(adapter, "capabilities", ()) or ())):
        needed += [m for m in REQUIRED_MEMBERS.get(capability, ()) if m not in needed]
    return needed


def missing_members(adapter: object) -> list[str]:
    """The members ``adapter``'s declared capabilities need that it lacks, with their signatures."""
    return [m for m in needed_members(adapter) if not hasattr(adapter, member_name(m))]


CONTRACT_CHANGES: Final = {
    2: "discoverer, source, restore_source, sink and recover_sink each take one config object (DiscovererConfig, "
    "SourceConfig, RestoreConfig, SinkConfig, RecoveryConfig: the old parameters are its fields) instead of "
    "positional arguments; a whole-list plan() is used only where the capability 'assignment-plan' is declared; "
    "an adapter states contract_version = 2",
    3: "a credential in SourceSpec/SinkSpec.client_settings arrives as a Secret, which prints as ***: hand a "
    "client kconform.reference_impl.credentials.revealed(dict(spec.client_settings)); an adapter states "
    "contract_version = 3",
    4: "SourceSpec.client_settings always states isolation.level (read_uncommitted unless a scenario asks for "
    "read_committed; librdkafka's own default is read_committed), and a source applies every client setting as "
    "given, overriding none; an adapter states contract_version = 4",
}
"""What each contract version changed from the one before; an adapter written for an older one is told."""
REMOVED_NAMES: Final = {
    "SourceCheckpointLike": (
        3,
        "it typed nothing the suite passes and no member took it (a source's checkpoint is opaque: snapshot returns "
        "it and restore_source gets it back in RestoreConfig.checkpoint); annotate it as Any or your own type",
    ),
}
"""Names this module no longer has, outside the adapter API (``kconform.conformance.adapter``'s ``__all__``) but
importable before, each with the contract in force when it went (its removal changed no contract) and what to
write instead: an adapter that still imports one is told (``removal_message``)."""
CONTRACT_ONE: Final = " (contract 1)"
"""How ``ContractOne`` labels the members it calls positionally, as contract 1 did."""
CONTRACT_ONE_PARAMETERS: Final = {
    "discoverer": ["subscription", "subtask", "parallelism", "on_zero"],
    "source": ["subscription", "parallelism", "initial_offset", "keep_unsubscribed"],
    "restore_source": ["checkpoint", "parallelism", "subscription", "metadata", "keep_unsubscribed", "initial_offset"],
    "sink": ["log", "prefix", "parallelism"],
    "recover_sink": ["log", "prefix", "parallelism", "checkpoint"],
}
"""Contract 1's positional parameters of the members contract 2 gives a config object."""


def removal_message(name: str) -> str:
    """Why ``name`` is gone and what to write instead; the contract numbers are read from ``REMOVED_NAMES`` and
    ``CONTRACT_CHANGES``, so the message stays true as the contract moves on."""
    during, instead = REMOVED_NAMES[name]
    current = max(CONTRACT_CHANGES)
    now = "still the current one" if current == during else f"the current contract is {current}"
    return (
        f"{__name__}.{name} was removed from kconform: {instead}. Its removal changed no contract "
        f"(contract_version = {during} when it went; {now})"
    )


def __getattr__(name: str) -> object:
    """A removed name is an ``ImportError`` naming what replaced it, not a bare "cannot import name"."""
    if name in REMOVED_NAMES:
        raise ImportError(removal_message(name))
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
