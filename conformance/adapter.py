"""The adapter interface: how an implementation plugs into the suite.

Protocol level (in-process, fast): the implementation exposes its assigner, discoverer, source
state (snapshot / restore) and sink commit protocol over the reference core's ports, and the
suite drives them against the deterministic Kafka model. Pipeline level (a black box on Spark):
the implementation builds its streaming source and sink (``PipelineAdapter``) and the suite runs
real queries on a real broker, restarts, rescales, kills and fails them, and judges the records.
An adapter may offer either level or both.

An adapter declares capabilities and variants; a requirement whose capability is not declared is
a skip with a reason, never a pass. Adapters are loaded only from an explicit ``module:attr``.
Every call the suite makes goes through ``GuardedAdapter``, which turns an exception or a result
of the wrong shape into an ``AdapterError`` naming the adapter method.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, runtime_checkable

from reference_impl.commit import NamingStrategy
from reference_impl.discovery import Metadata, Subscription, ZeroPartitionsPolicy
from reference_impl.ports import OffsetStore, TransactionalLog
from reference_impl.restore import RestoreVariant
from reference_impl.types import TopicPartition

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
}
CAPABILITIES = {
    "assignment": "exposes its partition assigner",
    "discovery": "exposes a per-subtask discoverer",
    "regex-subscription": "subscribes by regular expression",
    "partition-growth": "discovers partitions added to existing topics",
    "source-state": "exposes source snapshot and restore",
    "rescale": "restores source state at a different parallelism",
    "offset-commit": "commits source offsets to the consumer group on checkpoint completion",
    "exactly-once-sink": "exposes a transactional two-phase-commit sink",
    "keyed-sink-placement": "exposes its sink's partitioner: partitioner().partition(topic, partition, key, value, n)",
    "group-assignment": "exposes its consumer-group assignors: assign_group(strategy, group) for assignment_strategies",
    **PIPELINE_CAPABILITIES,
}


class AdapterError(AssertionError):
    """The adapter raised, or answered with something that is not a legal answer."""


class Discoverer(Protocol):
    def discover(self, metadata: Metadata) -> Iterable[TopicPartition]: ...


class SourceCheckpointLike(Protocol):
    """Opaque to the suite: only handed back to ``restore_source``."""


class Source(Protocol):
    """All subtasks of one source (see ``reference_impl.restore.SourceJob``)."""

    @property
    def offsets(self) -> Sequence[Mapping[TopicPartition, int]]: ...

    def discover(self, metadata: Metadata) -> Mapping[TopicPartition, int]: ...

    def advance(self, tp: TopicPartition, next_offset: int) -> None: ...

    def snapshot(self, checkpoint_id: int) -> Any: ...

    def notify_checkpoint_complete(self, checkpoint_id: int, store: OffsetStore, group: str) -> None: ...


class Sink(Protocol):
    """All writers of one sink and its committer (see ``reference_impl.commit.ExactlyOnceSink``)."""

    def start(self) -> None: ...

    def write(self, subtask: int, topic: str, partition: int, key: bytes | None, value: bytes | None) -> None: ...

    def checkpoint(self, checkpoint_id: int) -> Any: ...

    def notify_checkpoint_complete(self, checkpoint_id: int) -> None: ...


@runtime_checkable
class ProtocolAdapter(Protocol):
    """What an implementation provides at protocol level. Methods of undeclared capabilities may raise."""

    name: str
    capabilities: frozenset[str]
    restore_variant: RestoreVariant
    naming: NamingStrategy
    discovery_of_zero: ZeroPartitionsPolicy

    def assign(self, topic: str, partition: int, parallelism: int) -> int: ...

    def discoverer(
        self, subscription: Subscription, subtask: int, parallelism: int, on_zero: ZeroPartitionsPolicy
    ) -> Discoverer: ...

    def source(
        self, subscription: Subscription, parallelism: int, initial_offset: int, keep_unsubscribed: bool
    ) -> Source: ...

    def restore_source(
        self,
        checkpoint: Any,
        parallelism: int,
        subscription: Subscription,
        metadata: Metadata,
        keep_unsubscribed: bool,
    ) -> Source: ...

    def sink(self, log: TransactionalLog, prefix: str, parallelism: int) -> Sink: ...

    def recover_sink(self, log: TransactionalLog, prefix: str, parallelism: int, checkpoint: Any) -> Sink: ...

    def initial_sink_checkpoint(self, parallelism: int) -> Any: ...


DEFAULT_MASTER = "local[2,3]"
"""Where pipeline scenarios run by default: two cores, up to three attempts per task, so Spark
retries a failed task as it would on a cluster."""


@dataclass(frozen=True, slots=True)
class SourceSpec:
    """What a pipeline scenario asks the adapter's streaming source to read."""

    bootstrap_servers: str
    parallelism: int
    """Flink's n: the number of input partitions (Spark tasks) per batch."""
    subscribe: tuple[str, ...] = ()
    subscribe_pattern: str | None = None
    starting_offsets: str = "earliest"
    """``earliest`` or ``latest``, for partitions the checkpoint does not know yet."""
    max_records_per_trigger: int | None = None
    client_settings: tuple[tuple[str, str], ...] = ()
    """librdkafka settings the broker needs (security); pass them to every client."""


@dataclass(frozen=True, slots=True)
class SinkSpec:
    """What a pipeline scenario asks the adapter's sink to write: rows of ``key``, ``value`` (binary)."""

    bootstrap_servers: str
    topic: str
    exactly_once: bool
    client_settings: tuple[tuple[str, str], ...] = ()


@runtime_checkable
class PipelineAdapter(Protocol):
    """What an implementation provides at pipeline level (capability ``pipeline``).

    ``read_stream`` returns a streaming frame with at least ``topic``, ``partition``, ``offset``,
    ``key`` and ``value``; ``write_stream`` returns the writer of ``frame`` to Kafka, without a
    checkpoint location or trigger (the suite sets both).
    """

    @property
    def name(self) -> str: ...

    @property
    def capabilities(self) -> frozenset[str]: ...

    def read_stream(self, spark: SparkSession, source: SourceSpec) -> DataFrame: ...

    def write_stream(self, frame: DataFrame, sink: SinkSpec) -> DataStreamWriter: ...


Adapter = ProtocolAdapter | PipelineAdapter


def load_adapter(spec: str) -> Adapter:
    """Import ``module:attr``; the attribute may be an adapter or a zero-argument factory of one."""
    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        raise ValueError(f"--adapter must be 'module:attr', got {spec!r}")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ValueError(f"--adapter {spec!r}: cannot import {module_name!r}: {exc}") from exc
    try:
        obj = getattr(module, attr)
    except AttributeError as exc:
        raise ValueError(f"--adapter {spec!r}: module {module_name!r} has no attribute {attr!r}") from exc
    adapter = obj if isinstance(obj, (ProtocolAdapter, PipelineAdapter)) else obj() if callable(obj) else obj
    if not isinstance(adapter, (ProtocolAdapter, PipelineAdapter)):
        declared = set(getattr(adapter, "capabilities", ()))
        wanted = ["name", "capabilities"]
        if declared & set(PIPELINE_CAPABILITIES):
            wanted += ["read_stream", "write_stream"]
        if declared - set(PIPELINE_CAPABILITIES) or not declared:
            wanted += ["assign", "source", "sink"]
        missing = [m for m in wanted if not hasattr(adapter, m)] or ["a method of the level it declares"]
        raise ValueError(
            f"--adapter {spec!r} is not a kconform adapter (missing: {', '.join(missing)}; "
            "see conformance.adapter.ProtocolAdapter and PipelineAdapter)"
        )
    unknown = set(adapter.capabilities) - set(CAPABILITIES)
    if unknown:
        raise ValueError(f"adapter {adapter.name!r} declares unknown capabilities {sorted(unknown)}")
    pipeline = set(adapter.capabilities) & set(PIPELINE_CAPABILITIES)
    if pipeline and not isinstance(adapter, PipelineAdapter):
        raise ValueError(
            f"adapter {adapter.name!r} declares {sorted(pipeline)} but has no read_stream/write_stream "
            "(see conformance.adapter.PipelineAdapter)"
        )
    if pipeline and "pipeline" not in pipeline:
        raise ValueError(f"adapter {adapter.name!r} declares {sorted(pipeline)} without 'pipeline'")
    return adapter


T = TypeVar("T")


def call(adapter_name: str, method: str, fn: Callable[..., T], *args: Any) -> T:
    """Call an adapter method; anything it raises becomes an ``AdapterError`` naming the method.

    Errors of the Kafka port (fenced, timeout, ...) are part of the protocol and pass through, and so
    do missing JVM artifacts (``make setup`` not run): a setup problem, never the adapter's violation.
    """
    from conformance.jvm import JvmArtifactsMissing
    from reference_impl.ports import KafkaError

    shown = ", ".join(repr(a) for a in args)
    _in_progress.append(f"adapter {adapter_name!r}: {method}({shown})")
    try:
        return fn(*args)
    except (KafkaError, AdapterError, JvmArtifactsMissing):
        raise
    except Exception as exc:  # the adapter is untrusted code: report whatever it raised
        raise AdapterError(f"adapter {adapter_name!r}: {method}({shown}) raised {exc!r}") from exc
    finally:
        _in_progress.pop()


_in_progress: list[str] = []
"""Adapter calls under way, innermost last: a timeout names the call that hung."""


def call_in_progress() -> str | None:
    """The innermost adapter call that has not returned yet, if any."""
    return _in_progress[-1] if _in_progress else None


class Guarded:
    """A proxy for an adapter or an object it returned: each method call goes through ``call``.

    Results of the wrong shape are left to the checkers, which report them as violations of
    the requirement concerned (e.g. a negative subtask index is ``owner-out-of-range``).
    """

    def __init__(self, target: Any, label: str, adapter_name: str) -> None:
        self._target = target
        self._label = label
        self._adapter_name = adapter_name

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._target, name)
        if not callable(value):
            return value
        label = f"{self._label}.{name}"
        return lambda *args: call(self._adapter_name, label, value, *args)


def guard(adapter: Adapter) -> Any:
    """The suite's view of ``adapter``."""
    return Guarded(adapter, "adapter", adapter.name)
