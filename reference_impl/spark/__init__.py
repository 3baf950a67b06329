"""Flink-style Kafka source and sink for Spark Structured Streaming (format ``kconform-kafka``).

Both sides make every decision through the pure core (``kconform.reference_impl.assignment``,
``kconform.reference_impl.discovery``, ``kconform.reference_impl.spark.offsets``) and talk to Kafka through the
ports' confluent-kafka implementation (``kconform.reference_impl.kafka_client.KafkaClient``), so Spark adds
only the mechanics: offsets in the offset log, tasks as subtasks, task-local transactions.
Options shared by source and sink are parsed here; ``register(spark)`` installs both.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

from ..kafka_client import KafkaClient, StaticEndpoint
from ..ports import Isolation, KafkaError

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

FORMAT: Final = "kconform-kafka"
BOOTSTRAP: Final = "bootstrap.servers"
KAFKA_PREFIX: Final = "kafka."
TIMEOUT_OPTION: Final = "timeoutMs"
DEFAULT_TIMEOUT_MS: Final = 30_000
DEFAULT_CLIENT_SETTINGS: Final = {
    # librdkafka warnings and errors only: its info lines (e.g. on every close) flood executor logs.
    "log_level": "4",
    # librdkafka holds a client's next connection to "any broker" until half of reconnect.backoff.ms (at least
    # 11 ms) has passed since its last (``sparse_connect_intvl``, rdkafka_conf.c, librdkafka 2.x). A new client
    # connects to the bootstrap server, retires that connection once metadata names the brokers, and then waits
    # this out before its next request: 50 ms at librdkafka's default of 100 ms, in every task's new
    # transactional producer (init_transactions: 61 ms -> 22 ms measured on one Kafka node). Java's client
    # defaults to 50 ms.
    "reconnect.backoff.ms": "20",
}
"""Settings every client of the connector starts from; a ``kafka.<setting>`` option overrides each."""


class OptionError(ValueError):
    """A wrong option; the message names it, so the query fails at start saying what to fix."""


@dataclass(frozen=True, slots=True)
class Connection:
    """Where the broker is and how to talk to it: picklable, opened lazily in each process."""

    bootstrap_servers: str
    settings: tuple[tuple[str, str], ...]
    """``kafka.*`` options with the prefix removed, passed to every librdkafka client."""
    timeout_s: float

    @classmethod
    def parse(cls, options: Mapping[str, str]) -> Connection:
        servers = options.get(BOOTSTRAP) or options.get(KAFKA_PREFIX + BOOTSTRAP)
        if not servers:
            raise OptionError(f"option {BOOTSTRAP!r} is required (the Kafka brokers to connect to)")
        given = {k.removeprefix(KAFKA_PREFIX): v for k, v in options.items() if k.startswith(KAFKA_PREFIX)}
        settings = tuple(sorted({**DEFAULT_CLIENT_SETTINGS, **given}.items()))
        timeout_ms = positive_int(options, TIMEOUT_OPTION, DEFAULT_TIMEOUT_MS)
        return cls(servers, settings, timeout_ms / 1000)

    @property
    def isolation(self) -> Isolation:
        value = dict(self.settings).get("isolation.level", Isolation.READ_UNCOMMITTED.value)
        try:
            return Isolation(value)
        except ValueError:
            raise OptionError("option 'kafka.isolation.level' must be read_committed or read_uncommitted") from None

    @property
    def endpoint(self) -> StaticEndpoint:
        return StaticEndpoint(self.bootstrap_servers, self.settings)

    def new_client(self) -> KafkaClient:
        """A ``KafkaClient`` that has not talked to the broker yet: each of its clients connects on first use."""
        return KafkaClient(self.endpoint, timeout_s=self.timeout_s)

    def client(self) -> KafkaClient:
        """A ``KafkaClient`` on a broker that answered a metadata request; unreachable names the option."""
        client = self.new_client()
        try:
            self.reach(client)
        except OptionError:
            client.close()
            raise
        return client

    def reach(self, client: KafkaClient) -> None:
        """Return once ``client``'s broker answered a metadata request; unreachable names the option."""
        try:
            client.await_metadata()
        except KafkaError as error:
            raise OptionError(f"option {BOOTSTRAP!r}: broker {self.bootstrap_servers} not reachable: {error}") from None


def positive_int(options: Mapping[str, str], name: str, default: int | None) -> int:
    """``options[name]`` as an integer >= 1, or ``default`` when absent (``None``: required)."""
    raw = options.get(name)
    if raw is None:
        if default is None:
            raise OptionError(f"option {name!r} is required")
        return default
    try:
        value = int(raw)
    except ValueError:
        raise OptionError(f"option {name!r} must be an integer, got {raw!r}") from None
    if value < 1:
        raise OptionError(f"option {name!r} must be >= 1, got {value}")
    return value


def register(spark: SparkSession) -> None:
    """Register the ``kconform-kafka`` source and sink with ``spark``. They need pyspark 4's Python data source
    API, imported here so that the rest of this package (and a run of Spark's own connector) works on 3.5."""
    from .data_source import KafkaDataSource

    spark.dataSource.register(KafkaDataSource)
