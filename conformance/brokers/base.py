"""What every broker the suite runs against offers: a started, health-checked endpoint.

Every kind is a context manager that yields a started, health-checked broker, so a test or the
probe never talks to a broker that is not answering metadata requests. Client settings that
make tests fast on real brokers live here, in one place (``client_config``).
"""

from __future__ import annotations

import abc
import contextlib
import shutil
import socket
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Any, Final, Literal, Self

from ...reference_impl.credentials import Secret, mark_secrets, revealed
from ...reference_impl.ports import KafkaError

if TYPE_CHECKING:
    from ...reference_impl.kafka_client import ClientRole

BrokerKind = Literal["kafka", "kafka-cluster", "kafka-sasl", "tansu", "external", "testcontainers"]
BROKER_KINDS: Final[tuple[BrokerKind, ...]] = (
    "kafka",
    "kafka-cluster",
    "kafka-sasl",
    "tansu",
    "external",
    "testcontainers",
)
DEFAULT_BROKER: Final[BrokerKind] = "kafka"
BROKER_ENV: Final = "KCONFORM_BROKER"
BOOTSTRAP_ENV: Final = "KAFKA_BOOTSTRAP_SERVERS"
SECURITY_ENV_PREFIXES: Final = ("KAFKA_SECURITY_", "KAFKA_SASL_", "KAFKA_SSL_")
"""``KAFKA_SASL_USERNAME=u`` becomes ``sasl.username=u``; other ``KAFKA_*`` variables are ignored."""

START_TIMEOUT_S: Final = 30.0
EXTERNAL_TIMEOUT_ENV: Final = "KCONFORM_EXTERNAL_TIMEOUT_S"
"""Seconds the external broker has to answer (default ``START_TIMEOUT_S``): a gate can fail fast on a dead cluster."""
STOP_TIMEOUT_S: Final = 5.0
ANSWER_WAIT_S: Final = 10.0
"""How long a running broker gets to answer the metadata request of ``Broker.answers``."""

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
``kconform.reference_impl.kafka_client.SEMANTIC_CLIENT_SETTINGS``: a production Spark job gets them too.
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
    """This kind of broker cannot run here (no Docker engine, no bootstrap servers): nothing can be checked on it,
    which is not a failure of the connector under test (``kconform run`` reports ERROR, exit 3)."""


class BrokerStartError(Exception):
    """The broker was expected to start and did not; the message names the cause."""


class Broker(abc.ABC):
    """A running broker: its bootstrap servers and the client settings to reach it."""

    kind: BrokerKind

    def __init__(self, security: Mapping[str, str | Secret] | None = None) -> None:
        self._security = mark_secrets(security or {})
        self._bootstrap: str | None = None
        self.version = "unknown version"
        """The broker's product and version, once started (for reports and the docs' probe table)."""
        self.release: str | None = None
        """The Apache Kafka release of a broker the suite starts (``kafka``, ``kafka-cluster``, ``kafka-sasl``), from
        the version table (``versions.py``); ``None`` for the others."""

    @property
    def bootstrap_servers(self) -> str:
        if self._bootstrap is None:
            raise BrokerStartError(f"{self.kind} broker is not started (use it as a context manager)")
        return self._bootstrap

    @property
    def security(self) -> dict[str, str | Secret]:
        """The librdkafka security settings every client of this broker needs (SASL, TLS), credentials as ``Secret``."""
        return dict(self._security)

    def client_config(self, role: ClientRole, **overrides: Any) -> dict[str, Any]:
        """librdkafka settings for ``role``: bootstrap, security, fast-test settings, then overrides; credentials
        revealed, since this is what a client is given."""
        return {
            **COMMON_CLIENT_SETTINGS,
            **FAST_CLIENT_SETTINGS[role],
            **revealed(self._security),
            "bootstrap.servers": self.bootstrap_servers,
            **overrides,
        }

    def describe(self) -> str:
        """A line for reports; never includes security settings."""
        return f"{self.kind} broker at {self.bootstrap_servers}"

    def local_pids(self) -> list[int]:
        """The processes serving this broker on this machine (none for one the suite did not start): ``kconform
        bench`` counts the broker's CPU by them."""
        return []

    @abc.abstractmethod
    def start(self) -> None:
        """Start (or connect) and return once the broker answers a metadata request."""

    @abc.abstractmethod
    def stop(self) -> None:
        """Release everything ``start`` acquired; safe to call twice."""

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self._bootstrap or 'not started'}>"

    @contextlib.contextmanager
    def _starting(self, logs: Callable[[], str]) -> Iterator[None]:
        """Around a start: a ``BrokerStartError`` gains ``logs()`` and keeps the files for a look; any
        other exit (Ctrl-C included) stops what was started. Either way no process is left behind."""
        try:
            yield
        except BrokerStartError as error:
            message = f"{error}\n{logs()}"
            self._halt(keep=True)
            raise BrokerStartError(message) from None
        except BaseException:
            self._halt(keep=False)
            raise

    def _halt(self, keep: bool) -> None:
        """Stop every process ``start`` began, keeping its files (logs) if ``keep``; brokers that start
        processes override it, the others have nothing to keep."""
        self.stop()

    def answers(self, wait_s: float = ANSWER_WAIT_S) -> bool:
        """Whether the broker answers a metadata request within ``wait_s``: a hang of the judged code is a liveness
        violation only while it does (LIVE-001)."""
        from ...reference_impl.kafka_client import await_metadata

        try:
            await_metadata(self, wait_s)
        except KafkaError:
            return False
        return True

    def _wait_healthy(self, deadline: float, alive: Callable[[], None] | None = None) -> None:
        """Poll with metadata requests until the broker answers or ``deadline`` passes."""
        # The client (confluent-kafka, the ``pipeline`` extra) is needed once a broker starts, not to name one.
        from ...reference_impl.kafka_client import await_metadata

        wait_s = max(0.0, deadline - time.monotonic())
        try:
            await_metadata(self, wait_s, alive)
        except KafkaError as error:
            # await_metadata's message repeats this one with the exact float wait; keep only its last cause.
            cause = str(error).partition(" s: ")[2] or str(error)
            raise BrokerStartError(
                f"{self.describe()} did not answer a metadata request in time ({wait_s:.0f} s): {cause}"
            ) from None


def dies_with_parent(command: Sequence[str]) -> list[str]:
    """``command`` run so that the kernel SIGKILLs it when the process that started it dies
    (``setpriv --pdeathsig``, util-linux): a suite killed by SIGTERM or SIGKILL, before it could stop
    its brokers, leaves none behind. The signal follows the starting *thread*, so start brokers from
    a thread that lives as long as they should (the main one). Without ``setpriv``: the command as is.
    """
    setpriv = shutil.which("setpriv")
    return [setpriv, "--pdeathsig", "KILL", "--", *command] if setpriv else list(command)


HANDED_OUT: set[int] = set()
"""The ports ``free_port`` gave in this process: the kernel may offer a port it just freed again, and a broker's two
listeners (or two nodes, or a Spark master's two ports) would then be given one port (seen: a node whose format
step refused ``PLAINTEXT://127.0.0.1:57973,CONTROLLER://127.0.0.1:57973``)."""
FREE_PORT_TRIES: Final = 100


def free_port() -> int:
    """A loopback port that is free now (the broker binds it a moment later) and that this process was never given."""
    for _ in range(FREE_PORT_TRIES):
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            port: int = sock.getsockname()[1]
        if port not in HANDED_OUT:
            HANDED_OUT.add(port)
            return port
    raise BrokerStartError(f"no loopback port this process was not given already in {FREE_PORT_TRIES} tries")


def port_in_use(port: int) -> bool:
    with socket.socket() as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return True
        return False
