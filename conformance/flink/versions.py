"""The ``flink-connector-kafka`` releases the Flink harness runs: each with the Flink it was built for.

The one place these versions are pinned. ``kconform.conformance.flink.resolve`` passes an entry's versions to
``jvm/flink-harness/pom.xml`` and resolves it into ``<jvm dir>/flink-harness/<connector>/`` the first time that
release is asked for.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from ..workloads.flink.job_options import NAMING


@dataclass(frozen=True, slots=True)
class ConnectorRelease:
    """One ``flink-connector-kafka`` release and the Flink the harness runs it on."""

    connector: str
    """Its Maven version: ``<connector>-<Flink line>`` (e.g. ``3.1.0-1.18``)."""
    flink: str
    """The Flink (``flink-streaming-java``, ``flink-clients``, ``flink-connector-base``) of that line."""
    kafka_clients: str | None = None
    """A kafka-clients over the one the connector's pom names; ``None`` keeps the connector's."""
    java_options: tuple[str, ...] = ()
    """JVM options its Flink needs on Java 17 that later Flinks do not (the harness passes them to its JVM)."""
    transaction_naming: tuple[str, ...] = ()
    """The exactly-once sink's ``TransactionNamingStrategy`` values (connector 4.0 on, FLINK-34554); none before."""

    def maven_properties(self) -> dict[str, str]:
        """The ``-D`` properties ``jvm/flink-harness/pom.xml`` leaves open."""
        pinned = {} if self.kafka_clients is None else {"kafka.clients.version": self.kafka_clients}
        return {"connector.version": self.connector, "flink.version": self.flink, **pinned}


RELEASES: Final = {
    release.connector: release
    for release in (
        # Flink 1.17 predates its Java 17 support (Flink 1.18): its ClosureCleaner makes String's fields
        # accessible, which Java 17 refuses (InaccessibleObjectException) unless java.lang is opened.
        ConnectorRelease("3.0.0-1.17", "1.17.2", java_options=("--add-opens=java.base/java.lang=ALL-UNNAMED",)),
        # FLINK-28303's fix (a split at LATEST checkpointed as its resolved offset) on the line it broke; Maven
        # Central lacks 3.0.1-1.17's parent pom, so its first fixed release there is 3.0.2-1.17.
        ConnectorRelease("3.0.2-1.17", "1.17.2", java_options=("--add-opens=java.base/java.lang=ALL-UNNAMED",)),
        ConnectorRelease("3.0.2-1.18", "1.18.1"),
        # 3.0.x above bring kafka-clients 3.2.3, whose sticky partitioner sends an at-least-once replay of keyless
        # records to other output partitions than their first writes (COMMIT-013 counts such copies as repeats).
        ConnectorRelease("3.1.0-1.18", "1.18.1"),  # kafka-clients 3.4.0
        ConnectorRelease("3.2.0-1.19", "1.19.1"),
        ConnectorRelease("3.3.0-1.20", "1.20.0"),  # kafka-clients 3.4.0
        ConnectorRelease("3.4.0-1.20", "1.20.1"),
        # 4.0.0 made every KafkaSink's committer a transactional one with a backchannel keyed by the prefix, so
        # two at-least-once sinks of one job without distinct prefixes fail its start (FLINK-37818, fixed 4.0.1).
        ConnectorRelease("4.0.0-2.0", "2.0.0", transaction_naming=NAMING),  # kafka-clients 3.9.0
        ConnectorRelease("4.0.1-2.0", "2.0.0", transaction_naming=NAMING),  # kafka-clients 3.9.1
        ConnectorRelease("5.0.0-2.2", "2.2.0", transaction_naming=NAMING),
    )
}
"""Connector version -> its release: the lines the harness is built and run against (tests/flink)."""


def release(connector: str) -> ConnectorRelease:
    """The pinned release of ``connector``; ``ValueError`` naming the known ones for any other."""
    try:
        return RELEASES[connector]
    except KeyError:
        known = ", ".join(RELEASES)
        raise ValueError(
            f"flink-connector-kafka {connector!r} is not pinned in kconform.conformance.flink.versions (known: {known})"
        ) from None


NEWEST: Final = next(reversed(RELEASES))
"""The newest pinned line (the last one above): the one ``make test`` runs the harness on."""
EVERY: Final = "all"
"""The choice of every pinned line (``make flink-versions``)."""


def chosen(choice: str | None) -> tuple[ConnectorRelease, ...]:
    """The releases named by ``choice`` (comma-separated connector versions, or ``all``); the newest for ``None``."""
    if choice is None or not choice.strip():
        return (RELEASES[NEWEST],)
    if choice.strip() == EVERY:
        return tuple(RELEASES.values())
    return tuple(release(name.strip()) for name in choice.split(",") if name.strip())
