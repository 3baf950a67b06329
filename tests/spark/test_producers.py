"""What a Python worker keeps between the sink's calls: pure, no Spark or broker (connections are stand-ins)."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from kconform.reference_impl.spark.producers import KeptPool


@dataclass
class StandInClient:
    closed: bool = False

    def close(self) -> None:
        self.closed = True


@dataclass(frozen=True)
class StandInConnection:
    """Makes a new stand-in client per call, as ``Connection.new_client`` makes a new ``KafkaClient``."""

    name: str
    made: list[StandInClient] = field(default_factory=list, hash=False, compare=False)

    def new_client(self) -> StandInClient:
        self.made.append(StandInClient())
        return self.made[-1]


Pool = KeptPool[StandInConnection, StandInClient]


def test_a_commit_takes_the_client_the_last_commit_on_its_connection_kept() -> None:
    kept, a, b = Pool(2), StandInConnection("a"), StandInConnection("b")
    with kept.use(a, a.new_client) as first, kept.use(b, b.new_client) as other:
        pass
    with kept.use(a, a.new_client) as again:
        assert again is first and again is not other
    assert not first.closed


def test_a_failed_call_closes_its_client_and_the_next_starts_a_new_one() -> None:
    kept, a = Pool(2), StandInConnection("a")
    with pytest.raises(RuntimeError), kept.use(a, a.new_client) as failed:
        raise RuntimeError("the broker refused")
    assert failed.closed
    with kept.use(a, a.new_client) as fresh:
        assert fresh is not failed


def test_past_its_size_the_least_recently_used_client_is_closed() -> None:
    kept = Pool(2)
    connections = [StandInConnection(name) for name in "abc"]
    clients = []
    for connection in connections:
        with kept.use(connection, connection.new_client) as client:
            clients.append(client)
    assert [c.closed for c in clients] == [True, False, False]
    kept.close()
    assert all(c.closed for c in clients)
