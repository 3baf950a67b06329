"""A live broker for the tests that need one: ``KCONFORM_BROKER`` chooses it (default: Apache Kafka,
started from the jars ``make setup`` resolved).

The broker is started once per test session, only if a test asks for it, health-checked, and
probed once; tests that depend on a capability read the probe's answer instead of assuming what
the broker can do.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from kconform.conformance.brokers import Broker
from kconform.conformance.brokers.probe import Capability, probe
from kconform.conformance.gate.pytest_plugin import live_broker


@pytest.fixture(scope="session")
def broker() -> Iterator[Broker]:
    yield from live_broker()


@pytest.fixture(scope="session")
def capabilities(broker: Broker) -> dict[str, Capability]:
    """The probe's measurement of the session broker, by capability name."""
    return {c.name: c for c in probe(broker)}
