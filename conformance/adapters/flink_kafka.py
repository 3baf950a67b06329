"""Flink's own ``KafkaSource`` and ``KafkaSink`` at one ``flink-connector-kafka`` release, as an adapter.

Capability ``flink-job``: the suite's Flink scenarios (``kconform.conformance.suite.test_flink_jobs``) run real
Flink jobs of that release in the harness (``kconform.conformance.flink``) and judge them with the same checkers
and requirement ids as the Spark scenarios. The release is ``$KCONFORM_FLINK_CONNECTOR`` (a pinned line of
``kconform.conformance.flink.versions``), by default the newest:
``kconform run --level pipeline --adapter kconform.conformance.adapters.flink_kafka:adapter``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Final

from ..adapter import AdapterBase
from ..flink.versions import NEWEST, ConnectorRelease, release

FLINK_CONNECTOR_ENV: Final = "KCONFORM_FLINK_CONNECTOR"
"""The connector release the adapter judges (``3.1.0-1.18``); unset: the newest pinned line."""


@dataclass(frozen=True)
class FlinkKafkaAdapter(AdapterBase):
    """The connector at ``release``; the suite builds its harness on first use."""

    release: ConnectorRelease
    name: str = "flink-connector-kafka"
    capabilities: frozenset[str] = frozenset({"flink-job"})


def adapter() -> FlinkKafkaAdapter:
    """The adapter at ``$KCONFORM_FLINK_CONNECTOR``; a line that is not pinned is a ``ValueError`` naming the
    pinned ones (``kconform run`` exits 2: a usage error, nothing was checked)."""
    chosen = release(os.environ.get(FLINK_CONNECTOR_ENV) or NEWEST)
    return FlinkKafkaAdapter(chosen, name=f"flink-connector-kafka {chosen.connector}")
