"""What every report states about the broker a run used: its release, its transactions version and the group
protocols it offers, read from the running broker (ApiVersions), else from the version table, saying which.

``transaction.version`` is the finalized feature level (0 when not finalized, as on every 3.x cluster: the
classic transaction protocol, as level 1; 2 is KIP-890's). A protocol is offered when the broker lists its API
and, for ``consumer`` and ``streams``, finalizes the feature that enables it (``group.version``,
``streams.version``): a 3.9 broker lists ConsumerGroupHeartbeat yet runs only classic groups.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, Literal

from .api_versions import TRANSACTION_VERSION, ApiVersionsAnswer, ApiVersionsError, ask
from .versions import RELEASES

if TYPE_CHECKING:
    from .base import Broker

Source = Literal["broker", "table", "unknown"]
ENABLING_FEATURE: Final[Mapping[str, str]] = {"consumer": "group.version", "streams": "streams.version"}
TRANSACTIONS: Final[Mapping[int, str]] = {
    0: "the classic transaction protocol",
    1: "the classic transaction protocol",
    2: "KIP-890's transaction protocol",
}


@dataclass(frozen=True, slots=True)
class BrokerFacts:
    """The broker release of a run as reports state it."""

    name: str
    """The product and version (``Broker.version``), e.g. ``Apache Kafka 4.4.0``."""
    release: str | None
    """The Apache Kafka release the suite started (``None``: a broker it did not start, or Tansu)."""
    transaction_version: int | None
    group_protocols: tuple[str, ...] | None
    source: Source
    """Where the last two come from: the running broker, the version table, or nowhere."""
    note: str | None = None
    """Why they are not the broker's own answer (its error), when they are not."""

    def details(self) -> str:
        """``transaction.version 2 (KIP-890's ...), group protocols classic, consumer (read from the broker)``."""
        if self.source == "unknown":
            return f"transaction.version and group protocols unknown ({self.note})"
        txn = self.transaction_version or 0
        protocols = ", ".join(self.group_protocols or ()) or "none"
        where = "read from the broker" if self.source == "broker" else f"from kconform's version table: {self.note}"
        return (
            f"transaction.version {txn} ({TRANSACTIONS.get(txn, 'a newer transaction protocol')}), "
            f"group protocols {protocols} ({where})"
        )

    def text(self) -> str:
        """One line: ``Apache Kafka 4.4.0: transaction.version 2 (...), group protocols classic, ...``."""
        return f"{self.name}: {self.details()}"

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "release": self.release,
            "transaction_version": self.transaction_version,
            "group_protocols": None if self.group_protocols is None else list(self.group_protocols),
            "source": self.source,
            "note": self.note,
        }


def offered_protocols(answer: ApiVersionsAnswer) -> tuple[str, ...]:
    """The group protocols whose API the broker lists and whose enabling feature it finalized."""
    return tuple(
        p for p in answer.group_protocols() if p not in ENABLING_FEATURE or answer.feature_level(ENABLING_FEATURE[p])
    )


def from_answer(name: str, release: str | None, answer: ApiVersionsAnswer) -> BrokerFacts:
    return BrokerFacts(name, release, answer.feature_level(TRANSACTION_VERSION), offered_protocols(answer), "broker")


def from_table(name: str, release: str | None, why: str) -> BrokerFacts:
    """The table's row for ``release``, or nothing known when the table has none (a broker the suite did not start)."""
    row = RELEASES.get(release or "")
    if row is None:
        return BrokerFacts(name, release, None, None, "unknown", why)
    return BrokerFacts(name, release, row.transaction_version, row.group_protocols, "table", why)


def read_facts(broker: Broker) -> BrokerFacts:
    """Ask the running ``broker`` (its first bootstrap server) once; the table when it cannot be asked."""
    protocol = str(broker.security.get("security.protocol", "plaintext")).lower()
    if "ssl" in protocol:
        return from_table(broker.version, broker.release, f"a {protocol.upper()} listener is not asked ApiVersions")
    try:
        return from_answer(broker.version, broker.release, ask(broker.bootstrap_servers.split(",")[0]))
    except (OSError, ApiVersionsError, ValueError) as error:
        return from_table(broker.version, broker.release, f"the broker did not answer ApiVersions ({error})")
