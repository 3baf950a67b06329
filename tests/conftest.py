"""A live broker for the tests that need one: ``KCONFORM_BROKER`` chooses it (default: embedded Tansu).

The broker is started once per test session, only if a test asks for it, health-checked, and
probed once; tests that depend on a capability read the probe's answer instead of assuming what
the broker can do.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from conformance.brokers import BROKER_ENV, Broker, BrokerUnavailable, broker_from_env
from conformance.probe import Capability, probe


@pytest.fixture(scope="session")
def broker() -> Iterator[Broker]:
    running = broker_from_env(os.environ.get(BROKER_ENV))
    try:
        running.start()
    except BrokerUnavailable as reason:
        pytest.skip(str(reason))
    try:
        yield running
    finally:
        running.stop()


@pytest.fixture(scope="session")
def capabilities(broker: Broker) -> dict[str, Capability]:
    """The probe's measurement of the session broker, by capability name."""
    return {c.name: c for c in probe(broker)}
