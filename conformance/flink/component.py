"""The bug bank's ``flink-connector-kafka`` component: how one release is made ready for ``kconform run``.

``prepare`` builds (or finds) the harness of a pinned line and points the Flink adapter
(``kconform.conformance.adapters.flink_kafka``) at it through ``$KCONFORM_FLINK_CONNECTOR``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Final

from ..adapters.flink_kafka import FLINK_CONNECTOR_ENV
from .resolve import resolve
from .versions import release

ADAPTER: Final = "kconform.conformance.adapters.flink_kafka:adapter"


def prepare(connector: str, say: Callable[[str], None]) -> Mapping[str, str]:
    """The environment of a run judging ``connector``; ``ValueError`` for a line that is not pinned."""
    resolve(release(connector), say)
    return {FLINK_CONNECTOR_ENV: connector}
