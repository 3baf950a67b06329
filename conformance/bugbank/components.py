"""The components the bank puts under the suite by release, and how a run reaches each.

A component names its artifact's coordinate, the adapter the suite judges and how a release is
made ready (resolved, built, cached) before ``kconform run`` starts; a component whose harness is not
built says so, and each of its bugs is *could not run* with that reason, never a verdict.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from ..adapters import flink_kafka
from ..jvm.oracle_at_release import KAFKA_CLIENTS_VERSION_ENV, build_at_release

Say = Callable[[str], None]
Prepare = Callable[[str, Say], Mapping[str, str]]
"""Makes ``release`` ready and returns the environment that points the run's adapter at it."""


@dataclass(frozen=True)
class Component:
    name: str
    coordinate: str
    """The artifact, ``{version}`` standing for the release (Maven ``group:artifact:version``, PyPI ``name==v``)."""
    adapter: str | None = None
    """``kconform run --adapter``; ``None`` until the component's harness is built."""
    prepare: Prepare | None = None

    def not_runnable(self) -> str | None:
        """Why no bug of this component can run here, or ``None``."""
        if self.adapter is None or self.prepare is None:
            return f"the {self.name} harness is not built yet"
        return None


def _kafka_clients(release: str, say: Say) -> Mapping[str, str]:
    build_at_release(release, say)
    return {KAFKA_CLIENTS_VERSION_ENV: release}


COMPONENTS: Mapping[str, Component] = {
    c.name: c
    for c in (
        Component(
            "kafka-clients",
            "org.apache.kafka:kafka-clients:{version}",
            "kconform.conformance.adapters.kafka_clients:adapter",
            _kafka_clients,
        ),
        Component(
            "flink-connector-kafka",
            "org.apache.flink:flink-connector-kafka:{version}",
            flink_kafka.ADAPTER_SPEC,
            flink_kafka.prepare,
        ),
        Component("confluent-kafka", "confluent-kafka=={version}"),
        Component("pyspark", "pyspark=={version}"),
    )
}
