"""A TCP proxy in front of one Kafka node that can hold back the answer to one request: a network stall.

Kafka nodes started with ``KafkaBroker(proxied=True)`` advertise the proxy's port, so every client
(and every other node) reaches the node through it. ``ResponseHold`` arms the proxies: the answer to
the next request of one API (``END_TXN``: a transaction's commit or abort) is held back, with
everything after it on that connection, for a while, then delivered. The node has done the work; the
client, past its timeout, does not know it: the commit that "timed out" but happened.

Frames are parsed only as far as Kafka's framing goes: a 4-byte size, then for a request its API key,
version and correlation id, for a response its correlation id. One thread serves every connection.
"""

from __future__ import annotations

import contextlib
import selectors
import socket
import struct
import threading
import time
from dataclasses import dataclass, field
from typing import Final

END_TXN: Final = 26
"""Kafka's EndTxn API key: the producer's commit or abort of its transaction."""
LIST_OFFSETS: Final = 2
"""Kafka's ListOffsets API key: a client's question for a partition's end (or start) offset."""
_SIZE: Final = struct.Struct(">i")
_REQUEST_HEADER: Final = struct.Struct(">hhi")
_SELECT_S: Final = 0.05


@dataclass
class ResponseHold:
    """Hold the answer to the next request of ``api_key`` seen by any of the proxies for ``seconds``, or until
    ``release()``, whichever comes first."""

    api_key: int
    seconds: float
    until: threading.Event = field(default_factory=threading.Event)
    """Set by ``release()``: the held answer goes out at once (the ``seconds`` are its bound)."""
    claimed: threading.Event = field(default_factory=threading.Event)
    released: threading.Event = field(default_factory=threading.Event)
    where: str = ""
    """Which node's proxy held which request (set when claimed)."""
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    _cancelled: bool = field(default=False, repr=False)

    def claim(self, where: str) -> bool:
        """Called by a proxy on a matching request: whether that request's answer is the one to hold."""
        with self._lock:
            if self.claimed.is_set() or self._cancelled:
                return False
            self.where = where
            self.claimed.set()
            return True

    def release(self) -> None:
        """Deliver the held answer now (or, not yet claimed or answered, as soon as the node answers)."""
        self.until.set()

    def cancel(self) -> bool:
        """No request claims this hold from now on; whether one already had."""
        with self._lock:
            self._cancelled = True
            return self.claimed.is_set()


@dataclass
class _Link:
    """One client connection and its connection to the node."""

    client: socket.socket
    node: socket.socket
    from_client: bytearray = field(default_factory=bytearray)
    from_node: bytearray = field(default_factory=bytearray)
    to_client: bytearray = field(default_factory=bytearray)
    to_node: bytearray = field(default_factory=bytearray)
    held_ids: set[int] = field(default_factory=set)
    held: bytearray = field(default_factory=bytearray)
    """Answers held back: the held one and everything after it, in order."""
    hold: ResponseHold | None = None
    release_at: float | None = None


class StallingProxy:
    """Forwards 127.0.0.1:``port`` to ``upstream``; see the module docstring."""

    def __init__(self, upstream_port: int, name: str) -> None:
        self._upstream = ("127.0.0.1", upstream_port)
        self._name = name
        self._listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._listener.bind(("127.0.0.1", 0))
        self._listener.listen(64)
        self._listener.setblocking(False)
        self.port: int = self._listener.getsockname()[1]
        self._selector = selectors.DefaultSelector()
        self._links: list[_Link] = []
        self._hold: ResponseHold | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, name=f"kconform-proxy-{name}", daemon=True)

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self) -> None:
        self._selector.register(self._listener, selectors.EVENT_READ, None)
        self._thread.start()

    def arm(self, hold: ResponseHold) -> None:
        """The next request of ``hold.api_key`` on any connection gets its answer held (``hold.cancel()`` disarms)."""
        self._hold = hold

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        for link in list(self._links):
            self._drop(link)
        self._selector.close()
        self._listener.close()

    # -- the serving thread ------------------------------------------------------------------------

    def _serve(self) -> None:
        while not self._stop.is_set():
            for key, events in self._selector.select(timeout=_SELECT_S):
                if key.data is None:
                    self._accept()
                    continue
                link, side = key.data
                if link not in self._links:
                    continue
                try:
                    if events & selectors.EVENT_READ:
                        self._read(link, side)
                    if link in self._links and events & selectors.EVENT_WRITE:
                        self._write(link, side)
                except OSError:
                    self._drop(link)
            now = time.monotonic()
            for link in list(self._links):
                released = link.hold is not None and link.hold.until.is_set()
                if link.release_at is not None and (now >= link.release_at or released):
                    link.to_client += link.held
                    link.held.clear()
                    link.release_at = None
                    if link.hold is not None:
                        link.hold.released.set()
                    self._update(link)

    def _accept(self) -> None:
        with contextlib.suppress(BlockingIOError):
            client, _ = self._listener.accept()
            try:
                node = socket.create_connection(self._upstream, timeout=5)
            except OSError:  # the node is down: the client sees its connection closed, as it would
                client.close()
                return
            for sock in (client, node):
                sock.setblocking(False)
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            link = _Link(client, node)
            self._links.append(link)
            self._selector.register(client, selectors.EVENT_READ, (link, "client"))
            self._selector.register(node, selectors.EVENT_READ, (link, "node"))

    def _read(self, link: _Link, side: str) -> None:
        sock = link.client if side == "client" else link.node
        data = sock.recv(65536)
        if not data:
            self._drop(link)
            return
        if side == "client":
            link.from_client += data
            for frame in _frames(link.from_client):
                self._watch_request(link, frame)
                link.to_node += frame
        else:
            link.from_node += data
            for frame in _frames(link.from_node):
                correlation = _SIZE.unpack_from(frame, 4)[0] if len(frame) >= 8 else None
                if link.release_at is None and correlation in link.held_ids:
                    link.release_at = time.monotonic() + (link.hold.seconds if link.hold else 0)
                (link.held if link.release_at is not None else link.to_client).extend(frame)
        self._update(link)

    def _watch_request(self, link: _Link, frame: bytes) -> None:
        hold = self._hold
        if hold is None or len(frame) < 4 + _REQUEST_HEADER.size:
            return
        api_key, _, correlation = _REQUEST_HEADER.unpack_from(frame, 4)
        if api_key != hold.api_key:
            return
        if hold.claim(f"{self._name}, correlation id {correlation}"):
            link.held_ids.add(correlation)
            link.hold = hold
        self._hold = None  # claimed here or by another node's proxy

    def _write(self, link: _Link, side: str) -> None:
        sock, pending = (link.client, link.to_client) if side == "client" else (link.node, link.to_node)
        if pending:
            sent = sock.send(pending)
            del pending[:sent]
        self._update(link)

    def _update(self, link: _Link) -> None:
        if link not in self._links:
            return
        for sock, pending, side in ((link.client, link.to_client, "client"), (link.node, link.to_node, "node")):
            events = selectors.EVENT_READ | (selectors.EVENT_WRITE if pending else 0)
            self._selector.modify(sock, events, (link, side))

    def _drop(self, link: _Link) -> None:
        if link in self._links:
            self._links.remove(link)
        for sock in (link.client, link.node):
            with contextlib.suppress(KeyError, ValueError, OSError):
                self._selector.unregister(sock)
            sock.close()
        if link.hold is not None:
            link.hold.released.set()


def _frames(buffer: bytearray) -> list[bytes]:
    """Take every whole size-prefixed frame off the front of ``buffer``."""
    frames = []
    while len(buffer) >= 4:
        size = _SIZE.unpack_from(buffer, 0)[0]
        if len(buffer) < 4 + size:
            break
        frames.append(bytes(buffer[: 4 + size]))
        del buffer[: 4 + size]
    return frames
