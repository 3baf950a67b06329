"""The Kafka brokers the suite runs against, by kind.

``kafka`` (default) and ``kafka-cluster`` are Apache Kafka started from the jars ``kconform setup``
resolved, ``kafka-sasl`` one such node that takes only SASL/PLAIN logins (a password generated per run);
``tansu`` is the embedded Kafka-compatible broker from PyPI; ``external`` is a cluster
someone else runs; ``testcontainers`` is Kafka in Docker. Without the Kafka jars ``kafka`` is
``BrokerUnavailable`` (could not check), never silently Tansu: the fallback runs only when asked for
(``kconform run --allow-fallback``), loudly, naming what Tansu cannot show.
"""

from __future__ import annotations

import os

from .. import jvm
from .base import (
    BOOTSTRAP_ENV,
    BROKER_ENV,
    BROKER_KINDS,
    DEFAULT_BROKER,
    Broker,
    BrokerKind,
    BrokerStartError,
    BrokerUnavailable,
    free_port,
)
from .external import ContainerBroker, ExternalBroker, security_from_env
from .kafka import CLUSTER_SIZE, KafkaBroker
from .tansu import TANSU_CANNOT_SHOW, TansuBroker

__all__ = [
    "BOOTSTRAP_ENV",
    "BROKER_ENV",
    "BROKER_KINDS",
    "CLUSTER_SIZE",
    "DEFAULT_BROKER",
    "Broker",
    "BrokerKind",
    "BrokerStartError",
    "BrokerUnavailable",
    "ContainerBroker",
    "ExternalBroker",
    "KafkaBroker",
    "TansuBroker",
    "broker_from_env",
    "fallback_warning",
    "free_port",
    "kafka_unavailable",
    "security_from_env",
]


def broker_from_env(kind: str | None = None) -> Broker:
    """An unstarted broker of ``kind`` (default: ``$KCONFORM_BROKER``, else ``kafka``).

    ``kafka`` without its jars is ``BrokerUnavailable`` naming the fix, never silently Tansu: a fallback
    is ``kconform run --allow-fallback``'s to decide, before the run, so that its header names it.
    ``kafka-cluster`` has no fallback.
    """
    name = kind or os.environ.get(BROKER_ENV) or DEFAULT_BROKER
    if name == "kafka":
        cause = kafka_unavailable()
        if cause is not None:
            raise BrokerUnavailable(
                f"kafka broker: Apache Kafka cannot start here: {cause}; or run "
                "on the embedded Tansu broker with --broker tansu, or let kconform run fall back to it with "
                "--allow-fallback"
            )
        return KafkaBroker()
    if name == "kafka-sasl":  # a secured cluster's path: every client logs in, the password never shown
        cause = kafka_unavailable()
        if cause is not None:
            raise BrokerUnavailable(f"kafka-sasl broker: Apache Kafka cannot start here: {cause}")
        return KafkaBroker(sasl=True)
    if name == "kafka-cluster":
        return KafkaBroker(nodes=CLUSTER_SIZE)
    if name == "tansu":
        return TansuBroker()
    if name == "external":
        return ExternalBroker()
    if name == "testcontainers":
        return ContainerBroker()
    raise ValueError(f"unknown broker kind {name!r}; choose one of {', '.join(BROKER_KINDS)}")


def kafka_unavailable() -> str | None:
    """Why Apache Kafka cannot start here (its jars are not resolved), naming the fix; ``None`` if it can."""
    try:
        jvm.classpath(jvm.KAFKA_BROKER)
    except jvm.JvmArtifactsMissing as missing:
        return str(missing)
    return None


def fallback_warning(cause: str) -> str:
    """What a run on Tansu instead of Kafka cannot judge, said before anything runs."""
    lines = [
        f"kconform: WARNING: Apache Kafka cannot start here ({cause}).",
        "kconform: falling back to the embedded Tansu broker, which cannot show:",
        *(f"kconform:   {ident} {capability}" for capability, ident in TANSU_CANNOT_SHOW.items()),
        "kconform: verdicts that need these are reported as PARTIAL or skipped, never as PASS.",
    ]
    return "\n".join(lines)
