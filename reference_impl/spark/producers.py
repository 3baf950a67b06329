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
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Final

from ..kafka_client import KafkaClient, KafkaTransactionalProducer
from . import Connection

KEPT_PER_WORKER: Final = 8
"""At most this many ids' producers (each with its client's connections) per worker; the least recently used
one is closed first. A query's tasks spread over a few workers, so a handful of ids per worker covers them."""


@dataclass(frozen=True, slots=True)
class Kept:
    """A producer with no transaction open, and the client it was made by (its admin and group connections)."""

    client: KafkaClient
    producer: KafkaTransactionalProducer


class KeptProducers:
    """Producers by ``(connection, transactional id)``, at most ``size``: a task takes one out while it runs,
    so a failed task's producer is never kept, and gives it back after it committed."""

    def __init__(self, size: int) -> None:
        self._size = size
        self._kept: OrderedDict[tuple[Connection, str], Kept] = OrderedDict()

    def take(self, connection: Connection, transactional_id: str) -> Kept | None:
        return self._kept.pop((connection, transactional_id), None)

    def give_back(self, connection: Connection, transactional_id: str, kept: Kept) -> None:
        self._kept[(connection, transactional_id)] = kept
        while len(self._kept) > self._size:
            _, oldest = self._kept.popitem(last=False)
            oldest.client.close()

    def close(self) -> None:
        while self._kept:
            self._kept.popitem()[1].client.close()


WORKER_PRODUCERS: Final = KeptProducers(KEPT_PER_WORKER)
"""This process's kept producers. ``atexit`` closes them where the interpreter exits normally; a forked PySpark
worker ends with ``os._exit`` and its connections close with the process. A kept producer has no transaction
open, so neither way leaves anything behind on the broker."""
atexit.register(WORKER_PRODUCERS.close)


class KeptClients:
    """One ``KafkaClient`` per connection, at most ``size``, for the calls a process makes again and again on
    the same broker: each batch commit of the sink runs in a Python worker PySpark reuses, and a new client's
    connections cost more than the commit's one request (a new admin client answers after about 16 ms)."""

    def __init__(self, size: int) -> None:
        self._size = size
        self._kept: OrderedDict[Connection, KafkaClient] = OrderedDict()

    @contextmanager
    def use(self, connection: Connection) -> Iterator[KafkaClient]:
        """The kept client of ``connection`` (a new one the first time), kept again unless the caller fails:
        a failure may have come from the client, so the next call starts from a new one."""
        client = self._kept.pop(connection, None) or connection.new_client()
        try:
            yield client
        except BaseException:
            client.close()
            raise
        self._kept[connection] = client
        while len(self._kept) > self._size:
            self._kept.popitem(last=False)[1].close()

    def close(self) -> None:
        while self._kept:
            self._kept.popitem()[1].close()


COMMIT_CLIENTS: Final = KeptClients(KEPT_PER_WORKER)
"""This process's clients for the sink's batch commits, closed as ``WORKER_PRODUCERS`` are."""
atexit.register(COMMIT_CLIENTS.close)
