"""The adapter interface: how an implementation plugs into the suite.

Protocol level (in-process, fast): the implementation exposes its assigner, discoverer, source
state (snapshot / restore) and sink commit protocol over the reference core's ports, and the
suite drives them against the deterministic Kafka model. Pipeline level (a black box on Spark):
the implementation builds its streaming source and sink (``PipelineAdapter``) and the suite runs
real queries on a real broker, restarts, rescales, kills and fails them, and judges the records.
An adapter may offer either level or both.

An adapter declares capabilities and variants; a requirement whose capability is not declared is
a skip with a reason, never a pass. Adapters are loaded only from an explicit ``module:attr``.
Every call the suite makes goes through ``Guarded``, which first checks the member's signature
against the contract (a mismatch is a ``ContractError``: could not check) and then turns an
exception the adapter raises into an ``AdapterError`` naming the adapter method.
"""

from __future__ import annotations

import importlib
import inspect
import os
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from types import FrameType
from typing import TYPE_CHECKING, Any, Final, Protocol, TypeVar, cast, runtime_checkable

from ..reference_impl.commit import NamingStrategy
from ..reference_impl.configs import (
    CONTRACT_VERSION,
    DiscovererConfig,
    RecoveryConfig,
    RestoreConfig,
    SinkConfig,
    SourceConfig,
)
from ..reference_impl.credentials import Secret, redact
from ..reference_impl.discovery import Metadata, ZeroPartitionsPolicy
from ..reference_impl.ports import LogReader, OffsetStore, Record
from ..reference_impl.restore import RestoreVariant
from ..reference_impl.types import TopicPartition
from .errors import CannotCheck, ContractError

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
    "assignment-plan": "plans a whole partition list at once, plan(partitions, parallelism) (range-style assigners)",
    "discovery": "exposes a per-subtask discoverer",
    "regex-subscription": "subscribes by regular expression",
    "partition-growth": "discovers partitions added to existing topics",
    "source-state": "exposes source snapshot and restore",
    "rescale": "restores source state at a different parallelism",
    "offset-commit": "commits source offsets to the consumer group on checkpoint completion",
    "exactly-once-sink": "exposes a transactional two-phase-commit sink",
    "sink-close": "its exactly-once sink's close(): what stopping the job without a restart does to its transactions",
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

    def discoverer(self, config: DiscovererConfig) -> Discoverer: ...

    def source(self, config: SourceConfig) -> Source: ...

    def restore_source(self, config: RestoreConfig) -> Source:
        """Restore at ``config.parallelism``; ``config.initial_offset`` is the job's configured startup mode."""
        ...

    def sink(self, config: SinkConfig) -> Sink: ...

    def recover_sink(self, config: RecoveryConfig) -> Sink: ...

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
    client_settings: tuple[tuple[str, str | Secret], ...] = ()
    """librdkafka settings the broker needs (security); pass them to every client, a ``Secret``'s as
    ``secret.reveal()`` (``kconform.reference_impl.credentials.revealed``) and only there: it prints as ``***``."""
    client_timeout_ms: int | None = None
    """How long one client call may block before the connector gives up on it (``kconform soak`` sets it
    below its node pauses and commit stalls, which must outlast it); None: the connector's default."""


@dataclass(frozen=True, slots=True)
class SinkSpec:
    """What a pipeline scenario asks the adapter's sink to write: rows of ``key``, ``value`` (binary)."""

    bootstrap_servers: str
    topic: str
    exactly_once: bool
    client_settings: tuple[tuple[str, str | Secret], ...] = ()
    client_timeout_ms: int | None = None
    """As ``SourceSpec.client_timeout_ms``: e.g. how long a transaction's commit may go unanswered."""


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
    "offset-commit": ("source(config: SourceConfig)",),
    "exactly-once-sink": (
        "sink(config: SinkConfig)",
        "recover_sink(config: RecoveryConfig)",
        "initial_sink_checkpoint(parallelism)",
        "naming",
    ),
    "keyed-sink-placement": ("partitioner()",),
    "group-assignment": ("assign_group(strategy, group)", "assignment_strategies"),
    "pipeline": ("read_stream(spark, source)", "write_stream(frame, sink)"),
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


def _member_name(member: str) -> str:
    return member.split("(", 1)[0]


def needed_members(adapter: object) -> list[str]:
    """The members ``adapter``'s declared capabilities need, with their signatures."""
    needed = ["name", "capabilities"]
    for capability in sorted(set(getattr(adapter, "capabilities", ()) or ())):
        needed += [m for m in REQUIRED_MEMBERS.get(capability, ()) if m not in needed]
    return needed


def missing_members(adapter: object) -> list[str]:
    """The members ``adapter``'s declared capabilities need that it lacks, with their signatures."""
    return [m for m in needed_members(adapter) if not hasattr(adapter, _member_name(m))]


def search_working_directory() -> None:
    """Let ``--adapter`` name a module in the user's working directory, which a console script such
    as ``kconform`` does not put on ``sys.path`` (``python -m`` does)."""
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())


def _import(spec: str, module_name: str) -> Any:
    """Import the adapter's module; a module that is not on the path gets told where Python looked."""
    try:
        return importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name is not None and module_name.startswith(exc.name):
            raise ValueError(
                f"--adapter {spec!r}: cannot import {module_name!r}: {exc.name!r} is not on the Python path "
                f"(run kconform from the folder that contains it, add that folder to PYTHONPATH, or pip install "
                f"the package that provides it; searched {', '.join(sys.path[:4])}, ...)"
            ) from exc
        raise ValueError(f"--adapter {spec!r}: cannot import {module_name!r}: {exc}") from exc
    except ImportError as exc:
        raise ValueError(f"--adapter {spec!r}: cannot import {module_name!r}: {exc}") from exc


def load_adapter(spec: str) -> Adapter:
    """Import ``module:attr``; the attribute may be an adapter, or a class or zero-argument factory of one.

    An adapter must have a ``name``, its ``capabilities``, and the members those capabilities need
    (``REQUIRED_MEMBERS``); a missing one is named with its signature.
    """
    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        raise ValueError(f"--adapter must be 'module:attr', got {spec!r}")
    module = _import(spec, module_name)
    try:
        obj = getattr(module, attr)
    except AttributeError as exc:
        raise ValueError(f"--adapter {spec!r}: module {module_name!r} has no attribute {attr!r}") from exc
    is_factory = inspect.isclass(obj) or (callable(obj) and not hasattr(obj, "capabilities"))
    adapter = obj() if is_factory else obj
    missing = missing_members(adapter)
    if missing:
        declared = sorted(getattr(adapter, "capabilities", ()) or ())
        raise ValueError(
            f"--adapter {spec!r} is not a kconform adapter: for the capabilities it declares ({', '.join(declared)})"
            f" it lacks {'; '.join(missing)} (missing: {', '.join(_member_name(m) for m in missing)}; see "
            "kconform.conformance.adapter.AdapterBase and REQUIRED_MEMBERS)"
        )
    adapter = for_this_contract(adapter, spec)
    unknown = set(adapter.capabilities) - set(CAPABILITIES)
    if unknown:
        raise ValueError(f"adapter {adapter.name!r} declares unknown capabilities {sorted(unknown)}")
    pipeline = set(adapter.capabilities) & set(PIPELINE_CAPABILITIES)
    if pipeline and "pipeline" not in pipeline:
        raise ValueError(f"adapter {adapter.name!r} declares {sorted(pipeline)} without 'pipeline'")
    return cast(Adapter, adapter)


CONTRACT_CHANGES: Final = {
    2: "discoverer, source, restore_source, sink and recover_sink each take one config object (DiscovererConfig, "
    "SourceConfig, RestoreConfig, SinkConfig, RecoveryConfig: the old parameters are its fields) instead of "
    "positional arguments; a whole-list plan() is used only where the capability 'assignment-plan' is declared; "
    "an adapter states contract_version = 2",
}
"""What each contract version changed from the one before; an adapter written for an older one is told."""


def for_this_contract(adapter: Any, spec: str) -> Any:
    """``adapter`` as contract ``CONTRACT_VERSION`` calls it: contract 1 (no ``contract_version``) through
    ``ContractOne``; a newer contract than this kconform speaks is a ``ValueError`` naming the upgrade."""
    version = getattr(adapter, "contract_version", 1)
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise ValueError(f"--adapter {spec!r}: contract_version must be a positive int, got {version!r}")
    if version > CONTRACT_VERSION:
        raise ValueError(
            f"--adapter {spec!r} is written for adapter contract {version}; this kconform speaks contract "
            f"{CONTRACT_VERSION}: upgrade kconform (pip install --upgrade kconform)"
        )
    if version == CONTRACT_VERSION or not changed_members(adapter):
        return adapter  # what it has, contracts 1 and 2 call alike (a pipeline-only adapter, an assigner)
    return ContractOne(adapter)


def changed_members(adapter: Any) -> list[str]:
    """The members of ``adapter`` that contract 2 calls differently from contract 1."""
    return [m for m in (*CONTRACT_ONE_PARAMETERS, "plan") if hasattr(adapter, m)]


def contract_note(adapter: Any) -> str | None:
    """What a run says about an adapter written for an older contract: what changed and how to update."""
    if not isinstance(adapter, ContractOne):
        return None
    changes = "; ".join(f"contract {v}: {what}" for v, what in sorted(CONTRACT_CHANGES.items()))
    return (
        f"adapter {adapter.name!r} is written for adapter contract 1 (it states no contract_version); kconform "
        f"still runs it, translating each call. To update it: {changes} (docs/adapter-guide.md#the-adapter-contract)"
    )


class ContractOne:
    """An adapter written for contract 1, whose members took positional arguments, called by contract 2.

    Each config object is unpacked into the positional arguments contract 1 passed, so an adapter written
    before contract 2 keeps working; the run says how to update it (``contract_note``).
    """

    contract_version = CONTRACT_VERSION

    def __init__(self, adapter: Any) -> None:
        self.adapter = adapter

    def __getattr__(self, name: str) -> Any:
        return getattr(self.adapter, name)

    @property
    def capabilities(self) -> frozenset[str]:
        """Contract 1 used any ``plan`` it found; contract 2 asks for the capability."""
        declared = frozenset(self.adapter.capabilities)
        return declared | {"assignment-plan"} if hasattr(self.adapter, "plan") else declared

    def discoverer(self, config: DiscovererConfig) -> Any:
        return self._call("discoverer", config.subscription, config.subtask, config.parallelism, config.on_zero)

    def source(self, config: SourceConfig) -> Any:
        args = (config.subscription, config.parallelism, config.initial_offset, config.keep_unsubscribed)
        return self._call("source", *args)

    def restore_source(self, config: RestoreConfig) -> Any:
        c = config
        args = (c.checkpoint, c.parallelism, c.subscription, c.metadata, c.keep_unsubscribed, c.initial_offset)
        return self._call("restore_source", *args)

    def sink(self, config: SinkConfig) -> Any:
        return self._call("sink", config.log, config.prefix, config.parallelism)

    def recover_sink(self, config: RecoveryConfig) -> Any:
        return self._call("recover_sink", config.log, config.prefix, config.parallelism, config.checkpoint)

    def _call(self, member: str, *args: Any) -> Any:
        fn = getattr(self.adapter, member)
        check_signature(self.adapter.name, f"adapter.{member}{CONTRACT_ONE}", fn, len(args))
        return fn(*args)


T = TypeVar("T")
SHOWN_ARGUMENTS = 200
"""Characters of an adapter call's arguments shown in an error or timeout message."""


def _contract_members() -> dict[str, Callable[..., Any]]:
    """The members the contract defines, by the label ``Guarded`` calls them under (``adapter.assign``)."""
    owners = {"adapter": (ProtocolAdapter, PipelineAdapter), "source": (Source,), "sink": (Sink,)}
    return {
        f"{label}.{name}": member
        for label, protocols in owners.items()
        for protocol in protocols
        for name, member in vars(protocol).items()
        if inspect.isfunction(member) and not name.startswith("_")
    }


def check_signature(adapter_name: str, method: str, fn: Callable[..., Any], arity: int) -> None:
    """``ContractError`` when ``fn`` cannot take the ``arity`` positional arguments the suite passes: calling it
    would raise a ``TypeError`` that looks like the adapter's own failure, though its semantics were never
    reached. Judged once per function: the suite calls ``assign`` thousands of times a test."""
    key = (getattr(fn, "__func__", fn), hasattr(fn, "__self__"), method, arity)
    try:
        if key not in _mismatches:
            _mismatches[key] = _mismatch(method, fn, arity)
        mismatch = _mismatches[key]
    except TypeError:  # an unhashable callable object: judge it every time
        mismatch = _mismatch(method, fn, arity)
    if mismatch is not None:
        raise ContractError(f"adapter {adapter_name!r}: {mismatch}")


_mismatches: dict[tuple[object, bool, str, int], str | None] = {}
POSITIONAL: Final = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)


def _mismatch(method: str, fn: Callable[..., Any], arity: int) -> str | None:
    """Why ``fn`` does not fit the contract's ``method``, naming the contract's parameters it lacks, or ``None``."""
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError):  # a builtin or C callable without a signature: the call itself tells
        return None
    try:
        signature.bind(*(None,) * arity)
    except TypeError as error:
        member = method.rpartition(".")[2].removesuffix(CONTRACT_ONE)
        given = contract_parameters(method)
        if given is None:
            return (
                f"{method} is {member}({_parameter_names(signature)}), which cannot take {arity} argument(s) ({error})"
            )
        takes = [n for n, p in signature.parameters.items() if n != "self" and p.kind in POSITIONAL]
        lacking, extra = given[len(takes) :], takes[len(given) :]  # the suite passes them by position
        change = f"; it lacks the contract's {', '.join(lacking)}" if lacking else ""
        change += f"; the contract does not pass its {', '.join(extra)}" if extra else ""
        if given == ["config"] and len(takes) > 1:
            change += (
                f"; since adapter contract 2 it takes one config object whose fields are those parameters "
                f"(read config.{takes[0]}, ...), or, for an adapter written for contract 1, state no contract_version"
            )
        return (
            f"{method} is {member}({_parameter_names(signature)}), but the contract calls "
            f"{member}({', '.join(given)}) ({error}){change}: give the adapter's {member} that signature "
            "(docs/adapter-guide.md; kconform.conformance.adapter.ProtocolAdapter and PipelineAdapter define the "
            "members)"
        )
    return None


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


def contract_parameters(method: str) -> list[str] | None:
    """The parameters the contract passes to ``method`` (``adapter.assign``), or ``None`` if it defines none."""
    if method.endswith(CONTRACT_ONE):
        return CONTRACT_ONE_PARAMETERS.get(method.removesuffix(CONTRACT_ONE).rpartition(".")[2])
    contract = CONTRACT_MEMBERS.get(method)
    if contract is None:
        return None
    return [name for name in inspect.signature(contract).parameters if name != "self"]


def _parameter_names(signature: inspect.Signature) -> str:
    return ", ".join(str(p).split(":")[0] for name, p in signature.parameters.items() if name != "self")


def call(adapter_name: str, method: str, fn: Callable[..., T], *args: Any) -> T:
    """Call an adapter method; anything it raises becomes an ``AdapterError`` naming the method.

    A member whose signature does not take the suite's arguments is a ``ContractError`` before the
    call. Errors of the Kafka port (fenced, timeout, ...) are part of the protocol and pass through,
    and so do missing JVM artifacts (``kconform setup`` not run) and other ``CannotCheck``s: a setup
    problem, never the adapter's violation. A method that already hung in this run is not called
    again (``AdapterHung``): it would only hang again.
    """
    from ..reference_impl.ports import KafkaError
    from .jvm import JvmArtifactsMissing

    if (hung_in := _hung.get((adapter_name, method))) is not None:
        raise AdapterHung(f"{_method_name(adapter_name, method)} not called again: {hung_in}")
    check_signature(adapter_name, method, fn, len(args))
    shown = _shown(args)
    _in_progress.append(_Call(adapter_name, method, shown, getattr(fn, "__self__", None)))
    try:
        return fn(*args)
    except (KafkaError, AdapterError, JvmArtifactsMissing, CannotCheck):
        raise
    except Exception as exc:  # the adapter is untrusted code: report whatever it raised
        raise AdapterError(f"adapter {adapter_name!r}: {method}({shown}) raised {exc!r}") from exc
    finally:
        _in_progress.pop()


CONTRACT_MEMBERS: dict[str, Callable[..., Any]] = _contract_members()
"""``adapter.assign`` -> ``ProtocolAdapter.assign``: what a signature mismatch is compared to."""


class AdapterHung(BaseException):
    """A call to an adapter method that hung earlier in the run, not made: the test could not check it.

    A ``BaseException``, like the runner's timeout: Hypothesis would take an ``Exception`` for a
    failing example and shrink it, calling the adapter again and again for nothing.
    """


@dataclass(frozen=True)
class Hang:
    """An adapter call that did not return in time, as a timeout message names it."""

    method: str
    """``adapter 'name'.assign``: the innermost method of the adapter that was still running."""
    running: str
    """That method's call with its arguments, and the suite's call it ran in when that is another one."""


@dataclass(frozen=True)
class _Call:
    adapter_name: str
    method: str
    shown: str
    target: object
    """The object whose method was called: its frames on the stack are the adapter's own methods."""


_in_progress: list[_Call] = []
"""Adapter calls under way, innermost last: a timeout names the call that hung."""
_hung: dict[tuple[str, str], str] = {}
"""(adapter name, method) -> ``assign hung in <test>``, for the rest of the run."""


def _shown(args: Sequence[Any]) -> str:
    # an argument's own repr may carry a credential (a ``Secret``'s does not): out before a cut could halve it
    shown = redact(", ".join(repr(a) for a in args))
    if len(shown) > SHOWN_ARGUMENTS:  # a whole partition list would bury the message
        shown = f"{shown[: SHOWN_ARGUMENTS - 40]} ... {shown[-30:]}"
    return shown


def _method_name(adapter_name: str, method: str) -> str:
    return f"adapter {adapter_name!r}.{method.removeprefix('adapter.')}"


def _innermost_own_frame(frame: FrameType | None, target: object) -> FrameType | None:
    """The innermost frame, inside the suite's ``call``, of a method of ``target``: where the adapter is stuck
    when its method calls another of its own (a ``plan`` that calls ``assign`` partition by partition)."""
    while frame is not None and frame.f_code is not call.__code__:
        if frame.f_locals.get("self") is target and callable(getattr(target, frame.f_code.co_name, None)):
            return frame
        frame = frame.f_back
    return None


def record_hang(frame: FrameType | None, test: str) -> Hang | None:
    """The adapter call under way, interrupted at ``frame``, if any; it is remembered as hung in ``test``,
    and so is the adapter's own method it was stuck in, so neither is called again in this run."""
    if not _in_progress:
        return None
    outer = _in_progress[-1]
    outer_name = outer.method.rpartition(".")[2]
    running, method = f"{outer_name}({outer.shown})", outer.method
    own = _innermost_own_frame(frame, outer.target)
    if own is not None and own.f_code.co_name != outer_name:
        names = own.f_code.co_varnames[1 : own.f_code.co_argcount]  # without self
        inner = f"{own.f_code.co_name}({_shown([own.f_locals[n] for n in names if n in own.f_locals])})"
        # the outer call's arguments (a partition list) would double the line for little
        running, method = f"{inner}, called by {outer_name}", f"{method.rpartition('.')[0]}.{own.f_code.co_name}"
    short = method.rpartition(".")[2]
    for hung in {outer.method, method}:
        _hung.setdefault((outer.adapter_name, hung), f"{short} hung in {test}")
    return Hang(_method_name(outer.adapter_name, method), running)


def forget_hangs() -> None:
    """A new run calls every method again: a hang of an earlier run in this process may have been cured."""
    _hung.clear()


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
    """The suite's view of ``adapter``, once the members its capabilities need fit the contract's signatures
    (``ContractError`` if not): a member the adapter calls itself (e.g. ``assign`` from its ``plan``) would
    otherwise fail inside the adapter, as if the adapter were at fault."""
    for member in needed_members(adapter):
        method = f"adapter.{_member_name(member)}"
        contract, value = CONTRACT_MEMBERS.get(method), getattr(adapter, _member_name(member), None)
        if contract is not None and callable(value):
            arity = len(inspect.signature(contract).parameters) - 1  # without self
            check_signature(adapter.name, method, value, arity)
    return Guarded(adapter, "adapter", adapter.name)
