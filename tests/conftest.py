"""A live broker for the tests that need one: ``KCONFORM_BROKER`` chooses it (default: Apache Kafka,
started from the jars ``make setup`` resolved).

The broker is started once per test session, only if a test asks for it, health-checked, and
probed once; tests that depend on a capability read the probe's answer instead of assuming what
the broker can do.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import settings

from kconform.conformance.brokers import Broker
from kconform.conformance.brokers.capability import Capability
from kconform.conformance.gate.profiles import hypothesis_profile, profile_from_env
from kconform.conformance.gate.pytest_plugin import live_broker


def pytest_configure(config: pytest.Config) -> None:
    """kconform's own tests run under kconform's profile (``KCONFORM_PROFILE``, else default), with or
    without ``make``: the plugin loads none in a run that does not ask for kconform."""
    if config.getoption("hypothesis_profile", None) is None:
        settings.load_profile(hypothesis_profile(profile_from_env()))


def declared_bound(item: pytest.Item) -> float:
    """The test's own ``timeout`` mark (0 without one): a test that declares a longer bound than the default is one
    of the long ones."""
    mark = item.get_closest_marker("timeout")
    if mark is None:
        return 0.0
    value = mark.args[0] if mark.args else mark.kwargs.get("timeout", 0)
    return float(value or 0)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The tests with the longest declared bounds first, the rest in their order: ``make test`` runs on two
    workers (pytest-xdist hands tests out in this order), and a long test handed out last would run alone at the
    end while the other worker sits idle."""
    items.sort(key=lambda item: -declared_bound(item))


@pytest.fixture(scope="session")
def broker() -> Iterator[Broker]:
    yield from live_broker()


@pytest.fixture(scope="session")
def capabilities(broker: Broker) -> dict[str, Capability]:
    """The probe's measurement of the session broker, by capability name."""
    from kconform.conformance.brokers.probe import probe  # the Kafka client: only with a broker (make compat has none)

    return {c.name: c for c in probe(broker)}


@pytest.fixture(scope="session")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """kconform's wheel, built once for every test that installs it into a fresh venv."""
    dist = tmp_path_factory.mktemp("dist")
    root = Path(__file__).resolve().parents[1]
    command = [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--wheel-dir", str(dist), str(root)]
    build = subprocess.run(command, capture_output=True, text=True, timeout=600, check=False)
    assert build.returncode == 0, build.stdout + build.stderr
    (built,) = dist.glob("kconform-*.whl")
    return built
