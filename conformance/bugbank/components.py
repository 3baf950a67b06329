"""The components the bank puts under the suite by release, and how a run reaches each.

A component names its artifact's coordinate, the adapter the suite judges and how a release is
made ready (resolved, built, cached) before ``kconform run`` starts; a release that cannot be made ready is
*could not run* with the reason, never a verdict.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from ..adapters import flink_kafka
from ..jvm.oracle_at_release import KAFKA_CLIENTS_VERSION_ENV, build_at_release
from ..spark import at_release as spark_release
from .pyreleases import install_release

Say = Callable[[str], None]
Prepare = Callable[[str, Say], Mapping[str, str]]
"""Makes ``release`` ready and returns the environment that points the run's adapter at it."""


@dataclass(frozen=True)
class Component:
    name: str
    coordinate: str
    """The artifact, ``{version}`` standing for the release (Maven ``group:artifact:version``, PyPI ``name==v``)."""
    adapter: str
    """``kconform run --adapter``."""
    prepare: Prepare


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
        Component(
            "confluent-kafka",
            "confluent-kafka=={version}",
            "kconform.conformance.spark.pipeline:REFERENCE",
            install_release,
        ),
        Component(
            "pyspark", "pyspark=={version}", "kconform.conformance.adapters.spark_kafka:ADAPTER", spark_release.prepare
        ),
    )
}
