"""A nemesis step any scenario can take on any ``Broker``: the broker refuses every write to one topic for a while.

The topic's ``max.message.bytes`` is set below the smallest record batch (its header alone is 61 bytes), so
the broker answers each produce request ``MESSAGE_TOO_LARGE``. A producer learns it asynchronously, in the send's
callback, as a ``RecordTooLargeException`` it does not retry: every send of the window fails within a round trip,
neither held back by retries nor by ``delivery.timeout.ms``. Undone by putting the topic's own override back (or
removing the one set here), so the broker takes the same writes again.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, Final

import confluent_kafka
from confluent_kafka.admin import (  # type: ignore[attr-defined]
    AdminClient,
    ConfigEntry,
    ConfigResource,
    ConfigSource,
    ResourceType,
)

if TYPE_CHECKING:
    from confluent_kafka.admin import AlterConfigOpType  # type: ignore[attr-defined]

from ...reference_impl.kafka_client import DEFAULT_TIMEOUT_S, Endpoint, admin_result, wait_until

LIMIT: Final = "max.message.bytes"
REFUSING: Final = "1"
"""Below any record batch: every write is refused, whatever its size."""


@contextlib.contextmanager
def refused_writes(endpoint: Endpoint, topic: str, timeout_s: float = DEFAULT_TIMEOUT_S) -> Iterator[None]:
    """The ``with`` block runs while the broker at ``endpoint`` refuses every write to ``topic``; on its exit (a
    raise included) the topic's limit is what it was before, and the broker answers with it again. Each admin
    call and each wait for the broker to describe the change is bounded by ``timeout_s``."""
    operation = _operations()
    admin = AdminClient(endpoint.client_config("admin"))
    resource = ConfigResource(ResourceType.TOPIC, topic)
    own = _own_limit(admin, resource, timeout_s)
    _alter(admin, topic, operation.SET, REFUSING, timeout_s)
    try:
        yield
    finally:
        if own is None:
            _alter(admin, topic, operation.DELETE, "", timeout_s)
        else:
            _alter(admin, topic, operation.SET, own, timeout_s)


def _operations() -> type[AlterConfigOpType]:
    """confluent-kafka's ``AlterConfigOpType``, imported where the nemesis runs, not where this module is imported:
    the suite's modules are all imported by every run, and the client workload runs confluent-kafka releases older
    than 2.2.0, which have no incremental config changes (the nemesis itself then cannot run)."""
    try:
        from confluent_kafka.admin import AlterConfigOpType  # type: ignore[attr-defined]
    except ImportError as error:
        raise RuntimeError(
            f"the write-refusal nemesis needs confluent-kafka 2.2.0 or later (incremental_alter_configs); this "
            f"interpreter imports {confluent_kafka.version()[0]}: run it with the confluent-kafka kconform installs"
        ) from error
    found: type[AlterConfigOpType] = AlterConfigOpType
    return found


def _own_limit(admin: AdminClient, resource: ConfigResource, timeout_s: float) -> str | None:
    """The topic's own ``max.message.bytes`` override, ``None`` when it uses the broker's."""
    entry = _described(admin, resource, timeout_s)
    return str(entry.value) if entry.source == ConfigSource.DYNAMIC_TOPIC_CONFIG.value else None


def _described(admin: AdminClient, resource: ConfigResource, timeout_s: float) -> Any:
    what = f"describe {LIMIT} of topic {resource.name}"
    configs = admin_result(admin.describe_configs([resource])[resource], what, timeout_s)
    return configs[LIMIT]


def _alter(admin: AdminClient, topic: str, operation: AlterConfigOpType, value: str, timeout_s: float) -> None:
    """Apply ``operation`` to the topic's limit and return once the broker describes the new value: the change
    reached the broker's metadata (a write after it meets the new limit)."""
    resource = ConfigResource(
        ResourceType.TOPIC, topic, incremental_configs=[ConfigEntry(LIMIT, value, incremental_operation=operation)]
    )
    what = f"{operation.name} {LIMIT}={value} on topic {topic}"
    admin_result(admin.incremental_alter_configs([resource])[resource], what, timeout_s)
    plain = ConfigResource(ResourceType.TOPIC, topic)

    def applied() -> bool | None:
        entry = _described(admin, plain, timeout_s)
        overridden = entry.source == ConfigSource.DYNAMIC_TOPIC_CONFIG.value
        removed = operation.name == "DELETE" and not overridden
        return True if removed or (overridden and str(entry.value) == value) else None

    wait_until(applied, timeout_s, f"{what} described by the broker", step_s=0.1)
