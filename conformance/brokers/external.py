"""Brokers someone else runs: an existing cluster named by ``KAFKA_BOOTSTRAP_SERVERS``, or Docker."""

from __future__ import annotations

import contextlib
import math
import os
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

from ...reference_impl.credentials import Secret, mark_secrets
from .base import (
    BOOTSTRAP_ENV,
    EXTERNAL_TIMEOUT_ENV,
    SECURITY_ENV_PREFIXES,
    START_TIMEOUT_S,
    Broker,
    BrokerKind,
    BrokerStartError,
    BrokerUnavailable,
)


class ExternalBroker(Broker):
    """A broker someone else runs, named by ``KAFKA_BOOTSTRAP_SERVERS``; security settings pass through.

    It gets ``start_timeout_s`` (default ``$KCONFORM_EXTERNAL_TIMEOUT_S``, else 30 s) to answer.
    """

    kind: BrokerKind = "external"

    def __init__(
        self, bootstrap_servers: str | None = None, security: Mapping[str, str | Secret] | None = None,
        start_timeout_s: float | None = None,
    ) -> None:  # fmt: skip
        super().__init__(security if security is not None else security_from_env())
        self._servers = bootstrap_servers or os.environ.get(BOOTSTRAP_ENV)
        self._start_timeout_s = start_timeout_s

    def start(self) -> None:
        if not self._servers:
            raise BrokerUnavailable(
                f"external broker: {BOOTSTRAP_ENV} is not set; fix: set it to your cluster's host:port[,host:port...]"
            )
        self._bootstrap = self._servers
        try:
            self._wait_healthy(time.monotonic() + self._timeout_s())
        except BrokerStartError as error:
            raise BrokerStartError(
                f"{error}; fix: check that the cluster is up and that {BOOTSTRAP_ENV} (and any KAFKA_SECURITY_*, "
                "KAFKA_SASL_*, KAFKA_SSL_* settings) reach it from here"
            ) from None

    def _timeout_s(self) -> float:
        """Read at start, where a bad value makes the broker unusable like a missing bootstrap (not a crash)."""
        if self._start_timeout_s is not None:
            return self._start_timeout_s
        raw = os.environ.get(EXTERNAL_TIMEOUT_ENV, str(START_TIMEOUT_S))
        try:
            timeout = float(raw)
            if not 0 < timeout < math.inf:
                raise ValueError(raw)
        except ValueError:
            raise BrokerUnavailable(
                f"external broker: {EXTERNAL_TIMEOUT_ENV}={raw!r} is not a positive number of seconds"
            ) from None
        return timeout

    def stop(self) -> None:
        self._bootstrap = None


def security_from_env(environ: Mapping[str, str] | None = None) -> dict[str, str | Secret]:
    """librdkafka security settings from ``KAFKA_SECURITY_*``, ``KAFKA_SASL_*``, ``KAFKA_SSL_*``; credentials
    (``KAFKA_SASL_PASSWORD``, ``KAFKA_SSL_KEY_PASSWORD``, ...) as ``Secret``."""
    env = os.environ if environ is None else environ
    return mark_secrets(
        {
            name.removeprefix("KAFKA_").lower().replace("_", "."): value
            for name, value in env.items()
            if name.startswith(SECURITY_ENV_PREFIXES)
        }
    )


class ContainerBroker(Broker):
    """Apache Kafka in Docker through ``testcontainers`` (optional extra ``kconform[docker]``)."""

    kind: BrokerKind = "testcontainers"
    IMAGE: Final = "apache/kafka:3.9.1"

    def __init__(self, image: str = IMAGE, start_timeout_s: float = 120.0) -> None:
        super().__init__()
        self._image = image
        self._start_timeout_s = start_timeout_s
        self._container: Any = None

    def start(self) -> None:
        reasons = []
        if not (os.environ.get("DOCKER_HOST") or Path("/var/run/docker.sock").exists()):
            reasons.append("no Docker engine reachable (DOCKER_HOST unset and no /var/run/docker.sock)")
        try:
            from testcontainers.kafka import KafkaContainer  # type: ignore[import-not-found,unused-ignore]
        except ImportError:
            reasons.append("testcontainers is not installed: pip install kconform[docker]")
        if reasons:
            raise BrokerUnavailable("testcontainers broker: " + "; ".join(reasons))
        try:
            self._container = KafkaContainer(self._image).with_kraft().start()
        except Exception as error:  # docker SDK errors: engine refused, image pull failed
            raise BrokerUnavailable(f"testcontainers broker: Docker engine not usable: {error}") from error
        self._bootstrap = self._container.get_bootstrap_server()
        self._wait_healthy(time.monotonic() + self._start_timeout_s)

    def stop(self) -> None:
        container, self._container = self._container, None
        if container is not None:
            with contextlib.suppress(Exception):  # the container may already be gone with the engine
                container.stop()
        self._bootstrap = None
