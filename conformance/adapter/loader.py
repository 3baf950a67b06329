"""Loading an adapter: ``--adapter module:attr`` (only from an explicit spec), the default adapter of each level,
and ``ContractOne``, through which an adapter written for contract 1 still runs."""

from __future__ import annotations

import importlib
import inspect
import os
import sys
from dataclasses import replace
from typing import Any, Final, cast

from ...reference_impl.configs import (
    CONTRACT_VERSION,
    DiscovererConfig,
    RecoveryConfig,
    RestoreConfig,
    SinkConfig,
    SourceConfig,
)
from ...reference_impl.credentials import Secret, revealed
from .guard import check_signature
from .interface import (
    CAPABILITIES,
    CONTRACT_CHANGES,
    CONTRACT_ONE,
    CONTRACT_ONE_PARAMETERS,
    PIPELINE_CAPABILITIES,
    Adapter,
    SinkSpec,
    SourceSpec,
    member_name,
    missing_members,
)

DEFAULT_ADAPTERS: Final = {
    "protocol": "kconform.reference_impl.adapter:ADAPTER",
    "pipeline": "kconform.conformance.spark.pipeline:REFERENCE",
    "all": "kconform.conformance.spark.pipeline:REFERENCE",
}
"""The reference implementation's adapter judged at each level when none is named: the protocol level's is pure (no
PySpark), so a core install (no pipeline extra) gets a verdict; the pipeline one has both levels."""


def default_adapter(level: str) -> str:
    """The adapter a run at ``level`` (protocol, pipeline or all) judges without ``--adapter``."""
    return DEFAULT_ADAPTERS[level]


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
            f" it lacks {'; '.join(missing)} (missing: {', '.join(member_name(m) for m in missing)}; see "
            "kconform.conformance.adapter.interface.AdapterBase and REQUIRED_MEMBERS)"
        )
    adapter = for_this_contract(adapter, spec)
    unknown = set(adapter.capabilities) - set(CAPABILITIES)
    if unknown:
        raise ValueError(f"adapter {adapter.name!r} declares unknown capabilities {sorted(unknown)}")
    pipeline = set(adapter.capabilities) & set(PIPELINE_CAPABILITIES)
    if pipeline and "pipeline" not in pipeline:
        raise ValueError(f"adapter {adapter.name!r} declares {sorted(pipeline)} without 'pipeline'")
    return cast(Adapter, adapter)


def written_for_contract(adapter: Any) -> int:
    """The contract ``adapter`` states (1 when it states none)."""
    version = getattr(adapter, "contract_version", 1)
    return version if isinstance(version, int) and not isinstance(version, bool) else 1


def for_this_contract(adapter: Any, spec: str) -> Any:
    """``adapter`` as contract ``CONTRACT_VERSION`` calls it: contract 1's members through ``ContractOne``, an
    older contract's pipeline members through ``PlainSettings``; a newer contract than this kconform speaks is a
    ``ValueError`` naming the upgrade."""
    version = getattr(adapter, "contract_version", 1)
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise ValueError(f"--adapter {spec!r}: contract_version must be a positive int, got {version!r}")
    if version > CONTRACT_VERSION:
        raise ValueError(
            f"--adapter {spec!r} is written for adapter contract {version}; this kconform speaks contract "
            f"{CONTRACT_VERSION}: upgrade kconform (pip install --upgrade kconform)"
        )
    if version == 1 and changed_members(adapter):
        adapter = ContractOne(adapter)
    if version < 3 and any(hasattr(adapter, m) for m in ("read_stream", "write_stream")):
        adapter = PlainSettings(adapter, version)
    return adapter  # what it has, every contract calls alike (an assigner, a pipeline adapter of contract 3)


def changed_members(adapter: Any) -> list[str]:
    """The members of ``adapter`` that contract 2 calls differently from contract 1."""
    return [m for m in (*CONTRACT_ONE_PARAMETERS, "plan") if hasattr(adapter, m)]


def contract_note(adapter: Any) -> str | None:
    """What a run says about an adapter written for an older contract: what changed and how to update."""
    if isinstance(adapter, ContractOne | PlainSettings):
        written_for = adapter.written_for
    elif hasattr(adapter, "read_stream"):  # contract 4 changed what a source is given, not how it is called
        written_for = written_for_contract(adapter)
    else:
        return None
    if written_for >= CONTRACT_VERSION:
        return None
    changes = "; ".join(f"contract {v}: {what}" for v, what in sorted(CONTRACT_CHANGES.items()) if v > written_for)
    stated = "it states no contract_version" if written_for == 1 else f"contract_version = {written_for}"
    return (
        f"adapter {adapter.name!r} is written for adapter contract {written_for} ({stated}); kconform still runs "
        f"it, translating what changed shape. To update it: {changes} (docs/adapter-guide.md#the-adapter-contract)"
    )


class PlainSettings:
    """An adapter written before contract 3, whose pipeline members got ``client_settings`` as plain text,
    called by contract 3: each spec's credentials are revealed for it, as they were, so it still logs in; what it
    prints is still redacted at every exit. The run says how to update it (``contract_note``)."""

    contract_version = CONTRACT_VERSION

    def __init__(self, adapter: Any, written_for: int) -> None:
        self.adapter = adapter
        self.written_for = getattr(adapter, "written_for", written_for)  # a ContractOne inside says 1

    def __getattr__(self, name: str) -> Any:
        return getattr(self.adapter, name)

    def read_stream(self, spark: Any, source: SourceSpec) -> Any:
        return self.adapter.read_stream(spark, replace(source, client_settings=_plain(source.client_settings)))

    def write_stream(self, frame: Any, sink: SinkSpec) -> Any:
        return self.adapter.write_stream(frame, replace(sink, client_settings=_plain(sink.client_settings)))


def _plain(settings: tuple[tuple[str, str | Secret], ...]) -> tuple[tuple[str, str | Secret], ...]:
    return tuple(revealed(dict(settings)).items())


class ContractOne:
    """An adapter written for contract 1, whose members took positional arguments, called by contract 2.

    Each config object is unpacked into the positional arguments contract 1 passed, so an adapter written
    before contract 2 keeps working; the run says how to update it (``contract_note``).
    """

    contract_version = CONTRACT_VERSION
    written_for = 1

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
