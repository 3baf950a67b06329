"""Ports picked for brokers and Spark are never handed out twice in one process."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from typing import Any

import pytest

from kconform.conformance.brokers import base


class OfferedPort:
    """A socket whose ``bind(0)`` gets the next port of a script, as the kernel may offer a just-freed one again."""

    offers: Iterator[int] = iter(())

    def __init__(self, *_: Any) -> None:
        self._port = 0

    def __enter__(self) -> OfferedPort:
        return self

    def __exit__(self, *_: object) -> None:
        return None

    def bind(self, _address: tuple[str, int]) -> None:
        self._port = next(OfferedPort.offers)

    def getsockname(self) -> tuple[str, int]:
        return ("127.0.0.1", self._port)


def test_a_port_the_kernel_offers_again_is_not_handed_out_twice(monkeypatch: pytest.MonkeyPatch) -> None:
    """A node's client and controller listeners asked one after the other: the second offer of 41000 is refused."""
    monkeypatch.setattr(base, "HANDED_OUT", set())
    monkeypatch.setattr(socket, "socket", OfferedPort)
    OfferedPort.offers = iter([41000, 41000, 41000, 41001])
    assert [base.free_port(), base.free_port()] == [41000, 41001]


def test_a_port_is_still_picked_by_the_kernel_and_free() -> None:
    port = base.free_port()
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", port))  # free now: nothing holds it
    assert port in base.HANDED_OUT
