"""The initialised transactional producers a Python worker keeps between the sink tasks it runs, and the client
it keeps between the sink's batch commits.

Opening a task's producer costs its connections and ``init_transactions`` (62-73 ms of a 150-200 ms
task, measured in ``kconform bench``). The exactly-once sink's transactional id is stable per
``(prefix, query id, task index)`` and PySpark reuses its Python workers
(``spark.python.worker.reuse``), so a worker that runs task ``i`` of a later batch takes back the
producer it committed with. Whether a kept producer may still write is the sink's to check
(``kconform.reference_impl.spark.sink``): this module only keeps, bounds and closes.
"""

from __future__ import annotations

import atexit
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Final, Generic, Protocol, TypeVar

from ..kafka_client import KafkaClient, KafkaTransactionalProducer
from . import Connection

KEPT_PER_WORKER: Final = 8
"""At most this many ids' producers (each with its client's connections) per worker; the least recently used
one is closed first. A query's tasks spread over a few workers, so a handful of ids per worker covers them."""


class Closeable(Protocol):
    def close(self) -> None: ...


K = TypeVar("K", bound=Hashable)
V = TypeVar("V", bound=Closeable)


@dataclass(frozen=True, slots=True)
class Kept:
    """A producer with no transaction open, the client it was made by (its admin and group connections), and the
    batch its last transaction committed (its id's marker is ``batch + 1`` unless another producer took the id)."""

    client: KafkaClient
    producer: KafkaTransactionalProducer
    batch: int

    def close(self) -> None:
        self.client.close()  # and the producer with it


class KeptPool(Generic[K, V]):
    """Values by key, at most ``size``, the least recently given back closed first. A caller takes one out while
    it uses it and gives it back after, so one whose use failed (a failed task's producer) is never kept."""

    def __init__(self, size: int) -> None:
        self._size = size
        self._kept: OrderedDict[K, V] = OrderedDict()

    def take(self, key: K) -> V | None:
        return self._kept.pop(key, None)

    def give_back(self, key: K, value: V) -> None:
        self._kept[key] = value
        while len(self._kept) > self._size:
            self._kept.popitem(last=False)[1].close()

    @contextmanager
    def use(self, key: K, make: Callable[[], V]) -> Iterator[V]:
        """The value kept for ``key`` (``make()``'s when there is none), kept again unless the caller fails: a
        failure may have come from the value, so the next use starts from a new one."""
        value = self.take(key) or make()
        try:
            yield value
        except BaseException:
            value.close()
            raise
        self.give_back(key, value)

    def close(self) -> None:
        while self._kept:
            self._kept.popitem()[1].close()


WORKER_PRODUCERS: Final = KeptPool[tuple[Connection, str], Kept](KEPT_PER_WORKER)
"""This process's kept producers, by connection and transactional id. ``atexit`` closes them where the interpreter
exits normally; a forked PySpark worker ends with ``os._exit`` and its connections close with the process. A kept
producer has no transaction open, so neither way leaves anything behind on the broker."""
atexit.register(WORKER_PRODUCERS.close)

COMMIT_CLIENTS: Final = KeptPool[Connection, KafkaClient](KEPT_PER_WORKER)
"""This process's clients for the sink's batch commits, by connection: each batch commit runs in a Python worker
PySpark reuses, and a new client's connections cost more than the commit's one request (a new admin client answers
after about 16 ms)."""
atexit.register(COMMIT_CLIENTS.close)
