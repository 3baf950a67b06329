"""Flink's own ``KafkaSource`` and ``KafkaSink`` at one ``flink-connector-kafka`` release, as an adapter.

Capability ``flink-job``: the suite's Flink scenarios (``kconform.conformance.suite.test_flink_jobs``) run real
Flink jobs of that release in the harness (``kconform.conformance.flink``) and judge them with the same checkers
and requirement ids as the Spark scenarios. The release is ``$KCONFORM_FLINK_CONNECTOR`` (a pinned line of
``kconform.conformance.flink.versions``), by default the newest:
``kconform run --flink-connector 3.1.0-1.18``. ``prepare`` makes a line ready for the bug bank's
``flink-connector-kafka`` component.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Final

from ..adapter import AdapterBase
from ..flink.harness import JobEdit, as_asked
from ..flink.resolve import resolve
from ..flink.versions import NEWEST, ConnectorRelease, release

ADAPTER_SPEC: Final = "kconform.conformance.adapters.flink_kafka:adapter"
"""``kconform run --adapter``'s name of this adapter (``--flink-connector`` implies it)."""
FLINK_CONNECTOR_ENV: Final = "KCONFORM_FLINK_CONNECTOR"
"""The connector release the adapter judges (``3.1.0-1.18``); unset: the newest pinned line."""


@dataclass(frozen=True)
class FlinkKafkaAdapter(AdapterBase):
    """The connector at ``release``; the suite builds its harness on first use."""

    release: ConnectorRelease
    name: str = "flink-connector-kafka"
    capabilities: frozenset[str] = frozenset({"flink-job"})
    job_edit: JobEdit = as_asked
    """What the harness does to each job: nothing, unless a Flink mutant breaks the job on purpose."""

    def versions(self) -> dict[str, str]:
        """What ``kconform verdicts`` names as judged: the connector release and the Flink it runs on."""
        return {"flink-connector-kafka": self.release.connector, "Flink": self.release.flink}


def job_edit_of(adapter: object) -> JobEdit:
    """What the harness does to each job of ``adapter``: its ``job_edit`` when it has one (a Flink mutant's), else
    nothing. Optional, so a ``flink-job`` adapter written with ``release`` alone, before the member existed, runs
    unchanged: the contract (``CONTRACT_VERSION``) did not change."""
    edit: JobEdit = getattr(adapter, "job_edit", as_asked)
    return edit


def adapter() -> FlinkKafkaAdapter:
    """The adapter at ``$KCONFORM_FLINK_CONNECTOR``; a line that is not pinned is a ``ValueError`` naming the
    pinned ones (``kconform run`` exits 2: a usage error, nothing was checked)."""
    chosen = release(os.environ.get(FLINK_CONNECTOR_ENV) or NEWEST)
    return FlinkKafkaAdapter(chosen, name=f"flink-connector-kafka {chosen.connector}")


def prepare(connector: str, say: Callable[[str], None]) -> Mapping[str, str]:
    """Build (or find) ``connector``'s harness; the environment of a run judging it. ``ValueError`` for a line
    that is not pinned, before any build."""
    resolve(release(connector), say)
    return {FLINK_CONNECTOR_ENV: connector}
