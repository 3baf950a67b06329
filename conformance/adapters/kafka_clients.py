"""kafka-clients' own consumer-group assignors as a protocol-level adapter, at a release chosen per run.

The bug bank's ``kafka-clients`` component: ``assign_group`` asks Kafka's ``RangeAssignor``,
``RoundRobinAssignor``, ``StickyAssignor`` and ``CooperativeStickyAssignor`` through the Kafka oracle
(``kconform.conformance.jvm.kafka_oracle``) built at ``$KCONFORM_KAFKA_CLIENTS_VERSION``
(``kconform.conformance.jvm.oracle_at_release`` builds it), so the ordinary STRAT tests judge that
release: ``kconform run --level protocol --adapter kconform.conformance.adapters.kafka_clients:adapter``.
One helper JVM serves the whole run; it ends with the process.

At the pipeline level the same release's KafkaProducer and KafkaConsumer are judged by the client workload
(capability ``kafka-clients-workload``, ``conformance/suite/test_client_workload.py``): its harness JVM is built at
``release`` on first use.
"""

from __future__ import annotations

import atexit
import os
from dataclasses import dataclass, field

from ...reference_impl.kafka_strategies import ASSIGNORS, Assignment, Group
from ..adapter import AdapterBase
from ..errors import HarnessError
from ..jvm import artifact_version
from ..jvm.kafka_oracle import KafkaOracle, OracleError, OracleRefused, oracle_jar
from ..jvm.oracle_at_release import KAFKA_CLIENTS_VERSION_ENV, oracle_module


@dataclass
class KafkaClientsAdapter(AdapterBase):
    """Kafka's assignors in the oracle build ``module``; the JVM starts at the first rebalance asked."""

    module: str
    name: str = "kafka-clients"
    capabilities: frozenset[str] = frozenset({"group-assignment", "kafka-clients-workload"})
    assignment_strategies: frozenset[str] = frozenset(ASSIGNORS)
    release: str | None = None
    """The kafka-clients release judged; ``None``: the one ``jvm/pom.xml`` pins (after the fields it had before, so
    a positional call made for them means what it meant)."""
    _oracle: KafkaOracle | None = field(default=None, repr=False)

    def versions(self) -> dict[str, str]:
        """What a run's reports name as judged: the kafka-clients release of its oracle build (the jar in the folder
        it loads, so the pinned release when ``release`` is ``None``), whose assignors the protocol level asks
        and whose KafkaProducer and KafkaConsumer the client workload runs."""
        return {"kafka-clients": self.release or artifact_version(self.module, "kafka-clients")}

    def assign_group(self, strategy: str, group: Group) -> Assignment:
        """Kafka's answer; an assignor that throws fails the test, a helper JVM that dies or hangs is ERROR."""
        if self._oracle is None:
            self._oracle = KafkaOracle(module=self.module)
            atexit.register(self._oracle.close)
        try:
            return self._oracle.assign(strategy, [group])[0]
        except OracleRefused:
            raise
        except OracleError as error:
            raise HarnessError(f"the Kafka oracle of {self.name} failed: {error}") from error


def adapter() -> KafkaClientsAdapter:
    """The adapter at ``$KCONFORM_KAFKA_CLIENTS_VERSION`` (else the pinned release); a build that is not
    there fails the adapter's load, so the run could not check (exit 3) rather than fail."""
    module = oracle_module(os.environ)
    oracle_jar(module, f"the Kafka oracle at {os.environ.get(KAFKA_CLIENTS_VERSION_ENV) or 'the pinned release'}")
    release = os.environ.get(KAFKA_CLIENTS_VERSION_ENV)
    return KafkaClientsAdapter(module, f"kafka-clients {release}" if release else "kafka-clients", release=release)
