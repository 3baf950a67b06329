"""How an implementation plugs into the suite: ``interface`` (what an adapter provides: its protocols, capabilities
and contract), ``loader`` (``--adapter module:attr``, contract 1's shim) and ``guard`` (every call the suite makes).

An adapter imports from this package, not from its modules: the names below are the adapter's API, which stays
where it is when the modules behind it move."""

from .interface import (
    CAPABILITIES,
    REQUIRED_MEMBERS,
    Adapter,
    AdapterBase,
    PipelineAdapter,
    ProtocolAdapter,
    SinkSpec,
    SourceSpec,
)

__all__ = [
    "CAPABILITIES",
    "REQUIRED_MEMBERS",
    "Adapter",
    "AdapterBase",
    "PipelineAdapter",
    "ProtocolAdapter",
    "SinkSpec",
    "SourceSpec",
]
