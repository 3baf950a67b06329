"""The Kafka brokers the suite runs against, by kind.

``kafka`` (default) and ``kafka-cluster`` are Apache Kafka started from the jars ``kconform setup``
resolved (or, with ``$KCONFORM_KAFKA_VERSION``, another release of ``versions.py``, resolved with Maven
on first use), ``kafka-sasl`` one such node that takes only SASL/PLAIN logins (a password generated per run);
``tansu`` is the embedded Kafka-compatible broker from PyPI; ``external`` is a cluster
someone else runs; ``testcontainers`` is Kafka in Docker. Without the Kafka jars ``kafka`` is
``BrokerUnavailable`` (could not check), never silently Tansu: the fallback runs only when asked for
(``kconform run --allow-fallback``), loudly, naming what Tansu cannot show.
"""

from __future__ import annotations

import os
import shutil

from ..jvm import INSTALL_MAVEN, JvmArtifactsMissing
from ..jvm.broker_at_release import pinned, resolve_at_release, resolved
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
from .versions import DEFAULT_KAFKA_VERSION, KAFKA_VERSION_ENV, UnknownKafkaVersion, chosen_version

__all__ = [
    "BOOTSTRAP_ENV",
    "BROKER_ENV",
    "BROKER_KINDS",
    "CLUSTER_SIZE",
    "DEFAULT_BROKER",
    "DEFAULT_KAFKA_VERSION",
    "KAFKA_VERSION_ENV",
    "Broker",
    "BrokerKind",
    "BrokerStartError",
    "BrokerUnavailable",
    "ContainerBroker",
    "ExternalBroker",
    "KafkaBroker",
    "TansuBroker",
    "UnknownKafkaVersion",
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
    ``kafka-cluster`` has no fallback. The Kafka kinds run ``$KCONFORM_KAFKA_VERSION``'s release (default the
    pinned one); one the version table lacks is ``UnknownKafkaVersion`` (a ``ValueError``) naming the known ones.
    """
    name = kind or os.environ.get(BROKER_ENV) or DEFAULT_BROKER
    if name in ("kafka", "kafka-sasl", "kafka-cluster"):
        try:
            chosen_version(os.environ)
        except UnknownKafkaVersion as unknown:  # kconform's commands refuse it up front; a plain pytest run gets here
            raise BrokerUnavailable(f"{name} broker: ${KAFKA_VERSION_ENV}: {unknown}") from None
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
    """Why Apache Kafka cannot start here, naming the fix; ``None`` if it can: the release ``$KCONFORM_KAFKA_VERSION``
    names is resolved, or it is not the pinned one and Maven is here to resolve it on first use."""
    release = chosen_version(os.environ)
    if resolved(release) is not None:
        return None
    if release == pinned():  # `kconform setup`'s: no Maven here, only why its folder does not hold it
        try:
            resolve_at_release(release, lambda _: None)
        except JvmArtifactsMissing as missing:
            return str(missing)
    if shutil.which("mvn") is None:
        return f"Apache Kafka {release} is resolved with Maven on first use, and mvn is not on PATH: {INSTALL_MAVEN}"
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
