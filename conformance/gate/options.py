"""The settings of a ``kconform run`` (``RunOptions``) and how reports name its broker."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..adapter.interface import DEFAULT_MASTER
from ..brokers import DEFAULT_BROKER
from .pytest_plugin import SUITE_PACKAGE

DEFAULT_LEVEL = "all"
"""What ``make conformance`` runs: both levels of the reference implementation."""
DEFAULT_SUITE = SUITE_PACKAGE
DEFAULT_TIMEOUT = 120.0


@dataclass(frozen=True)
class RunOptions:
    adapter: str
    level: str = DEFAULT_LEVEL
    profile: str = "default"
    report: Path | None = None
    expectations: Path | None = None
    only: str | None = None
    seed: int | None = None
    broker: str = DEFAULT_BROKER
    timeout: float = DEFAULT_TIMEOUT
    strict: bool = False
    suite: str = DEFAULT_SUITE
    spark_master: str = DEFAULT_MASTER
    examples: Path | None = None
    """Hypothesis's example database; ``None``: the adapter's own under ``.hypothesis/adapters/``."""
    allow_fallback: bool = False
    """``--allow-fallback``: run on Tansu when ``--broker kafka`` cannot start here (else its tests are ERROR)."""
    fallback_cause: str | None = None
    """Set when the fallback happened (``broker`` is then ``tansu``): why Kafka could not start."""


def broker_used(options: RunOptions) -> str:
    """The run's broker as reports name it: the protocol level has none, whatever ``--broker`` says, and a
    fallback names the broker that ran and why."""
    if options.level == "protocol":
        return f"no broker (the protocol level runs in-process; --broker {options.broker} is not used)"
    if options.fallback_cause is not None:
        return f"broker {options.broker} (--allow-fallback: Apache Kafka cannot start here: {options.fallback_cause})"
    return f"broker {options.broker}"
