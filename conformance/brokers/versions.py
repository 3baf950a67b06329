"""The Apache Kafka broker releases the suite knows how to start, as data.

``kafka``, ``kafka-cluster`` and ``kafka-sasl`` run the release ``--kafka-version`` (or
``$KCONFORM_KAFKA_VERSION``) names, else ``DEFAULT_KAFKA_VERSION``, the one ``jvm/pom.xml`` pins
(``kafka.broker.version``: ``kconform setup`` resolves it); any other release of this table is resolved
with Maven on first use (``kconform.conformance.jvm.broker_at_release``). A row says what differs between
releases where the suite meets it: the settings a release does not know (left out of its
``server.properties``), the ``transaction.version`` a fresh KRaft cluster finalizes, and the consumer-group
protocols it offers out of the box. A run reads the last two from the running broker (ApiVersions); the
table is what a report falls back on, saying so. Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Final

KAFKA_VERSION_ENV: Final = "KCONFORM_KAFKA_VERSION"
"""The broker release a run starts (``kafka``, ``kafka-cluster``, ``kafka-sasl``); unset: ``DEFAULT_KAFKA_VERSION``."""
TABLE_MODULE: Final = "conformance/brokers/versions.py"


@dataclass(frozen=True, slots=True)
class KafkaRelease:
    """One Apache Kafka broker release (``org.apache.kafka:kafka_2.13:<version>``) and what sets it apart."""

    version: str
    transaction_version: int
    """The ``transaction.version`` feature level a fresh KRaft cluster of this release finalizes: 2 (KIP-890's
    transactions: an epoch bump per transaction, no implicit partition adds) from 4.0 on; 0 before, which like
    1 means the classic transaction protocol."""
    group_protocols: tuple[str, ...]
    """The consumer-group rebalance protocols the broker offers by default (``group.coordinator.rebalance.
    protocols``): ``classic`` only before 4.0; ``consumer`` (KIP-848) from 4.0; ``streams`` (KIP-1071) from 4.2."""
    unknown_settings: tuple[str, ...] = ()
    """Prefixes of the suite's broker settings this release does not know: left out of its configuration."""

    @property
    def line(self) -> str:
        """``major.minor``: the release line."""
        return ".".join(self.version.split(".")[:2])


KNOWN_RELEASES: Final[tuple[KafkaRelease, ...]] = (
    # The newest 3.x Maven serves (3.9.3 is not): ZooKeeper-free KRaft, the classic group and transaction protocols.
    KafkaRelease("3.9.2", 0, ("classic",), unknown_settings=("share.coordinator.",)),
    KafkaRelease("4.1.1", 2, ("classic", "consumer")),
    KafkaRelease("4.4.0", 2, ("classic", "consumer", "streams")),
)
"""Oldest first. A new row is all a release needs, once ``kconform probe-broker --kafka-version V`` starts it."""
DEFAULT_KAFKA_VERSION: Final = "4.4.0"
"""The release a run starts unless told otherwise: ``jvm/pom.xml``'s ``kafka.broker.version`` (a test checks)."""
RELEASES: Final[Mapping[str, KafkaRelease]] = {r.version: r for r in KNOWN_RELEASES}


class UnknownKafkaVersion(ValueError):
    """A broker release this table does not know: a usage error whose message names the known ones and the fix."""


def known_versions() -> Sequence[str]:
    return [r.version for r in KNOWN_RELEASES]


def kafka_release(version: str | None) -> KafkaRelease:
    """The row of ``version`` (``None`` or empty: the default's); ``UnknownKafkaVersion`` naming the fix."""
    chosen = version or DEFAULT_KAFKA_VERSION
    found = RELEASES.get(chosen.strip())
    if found is None:
        raise UnknownKafkaVersion(
            f"Apache Kafka {chosen!r} is not a broker release kconform knows; known: {', '.join(known_versions())} "
            f"(default {DEFAULT_KAFKA_VERSION}); choose one of them, or add a row for it to {TABLE_MODULE} "
            "(its settings differences, transaction.version and group protocols) once "
            f"`kconform probe-broker --kafka-version {chosen}` starts it"
        )
    return found


def chosen_version(env: Mapping[str, str]) -> str:
    """The release ``$KCONFORM_KAFKA_VERSION`` names, checked against the table; else the default."""
    return kafka_release(env.get(KAFKA_VERSION_ENV)).version


def settings_for(release: KafkaRelease, settings: Mapping[str, str]) -> dict[str, str]:
    """``settings`` without those ``release`` does not know."""
    return {k: v for k, v in settings.items() if not k.startswith(release.unknown_settings)}
