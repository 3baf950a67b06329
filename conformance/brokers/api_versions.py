"""Kafka's ApiVersions request (version 3) on a plain socket: the APIs and the finalized features a broker states.

The Kafka client (confluent-kafka) exposes neither the feature levels (KIP-584's ``DescribeFeatures``) nor the
API version ranges, so reports ask the broker once with this: ``transaction.version`` among the finalized
features, and the group protocols among the APIs (``ConsumerGroupHeartbeat`` for KIP-848's ``consumer``
protocol). A broker answers ApiVersions before any SASL login, so a SASL listener answers too; a TLS one
does not (``ask`` then fails and a report falls back on the version table). Encoding and decoding are pure;
``ask`` is the one function that touches the network.
"""

from __future__ import annotations

import socket
import struct
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Final, TypeVar

T = TypeVar("T")

API_VERSIONS: Final = 18
VERSION: Final = 3
"""The first flexible version: it carries the features as tagged fields (KIP-584); brokers since 2.4 answer it."""
CLIENT_ID: Final = "kconform"
SOFTWARE: Final = ("kconform", "1")
ASK_TIMEOUT_S: Final = 5.0
MAX_FRAME: Final = 1 << 20

JOIN_GROUP: Final = 11
CONSUMER_GROUP_HEARTBEAT: Final = 68
STREAMS_GROUP_HEARTBEAT: Final = 88
GROUP_PROTOCOL_APIS: Final[Mapping[str, int]] = {
    "classic": JOIN_GROUP,
    "consumer": CONSUMER_GROUP_HEARTBEAT,
    "streams": STREAMS_GROUP_HEARTBEAT,
}
"""Each consumer-group rebalance protocol by the API its members call: offered when the broker lists that API."""
TRANSACTION_VERSION: Final = "transaction.version"


class ApiVersionsError(Exception):
    """The broker's answer could not be had or read; the message says why."""


@dataclass(frozen=True, slots=True)
class ApiVersionsAnswer:
    """What a broker states in its ApiVersions answer."""

    apis: Mapping[int, tuple[int, int]]
    """API key -> (min version, max version)."""
    supported_features: Mapping[str, tuple[int, int]]
    finalized_features: Mapping[str, int]
    """Feature -> its finalized (max) level; a feature not finalized is absent (level 0)."""

    def feature_level(self, name: str) -> int:
        return self.finalized_features.get(name, 0)

    def group_protocols(self) -> tuple[str, ...]:
        """The rebalance protocols whose API the broker lists, in ``GROUP_PROTOCOL_APIS`` order."""
        return tuple(name for name, key in GROUP_PROTOCOL_APIS.items() if key in self.apis)


def uvarint(value: int) -> bytes:
    """An unsigned varint (Kafka's ``ByteUtils.writeUnsignedVarint``)."""
    out = bytearray()
    while True:
        byte, value = value & 0x7F, value >> 7
        out.append(byte | (0x80 if value else 0))
        if not value:
            return bytes(out)


def _compact_string(text: str) -> bytes:
    data = text.encode()
    return uvarint(len(data) + 1) + data


def encode_request(correlation_id: int) -> bytes:
    """The whole frame (size prefix included) of an ApiVersions v3 request: header v2, then the body."""
    client = CLIENT_ID.encode()
    header = struct.pack(">hhih", API_VERSIONS, VERSION, correlation_id, len(client)) + client + uvarint(0)
    body = _compact_string(SOFTWARE[0]) + _compact_string(SOFTWARE[1]) + uvarint(0)
    payload = header + body
    return struct.pack(">i", len(payload)) + payload


class Reader:
    """Reads a Kafka response body field by field; a body that ends early or holds a malformed field raises
    ``error`` (the caller's own exception type, so each protocol exchange names itself)."""

    def __init__(self, data: bytes, error: type[Exception] = ApiVersionsError) -> None:
        self._data = data
        self._at = 0
        self._error = error

    def take(self, size: int) -> bytes:
        if self._at + size > len(self._data):
            raise self._error(f"the answer ends early (wanted {size} bytes at {self._at} of {len(self._data)})")
        chunk = self._data[self._at : self._at + size]
        self._at += size
        return chunk

    def unpack(self, fmt: str) -> int:
        value: int = struct.unpack(fmt, self.take(struct.calcsize(fmt)))[0]
        return value

    def uvarint(self) -> int:
        value = shift = 0
        while True:
            byte = self.take(1)[0]
            value |= (byte & 0x7F) << shift
            if not byte & 0x80:
                return value
            shift += 7
            if shift > 63:
                raise self._error("a varint longer than 64 bits")

    def compact_string(self) -> str:
        size = self.uvarint() - 1
        return "" if size < 0 else self.take(size).decode()

    def string(self) -> str | None:
        """A nullable string of a version that is not flexible (an int16 length, -1 for null)."""
        size = self.unpack(">h")
        return None if size < 0 else self.take(size).decode()

    def array(self, item: Callable[[], T]) -> list[T]:
        """A compact array (flexible versions): its length plus one, then each item as ``item`` reads it."""
        return [item() for _ in range(self.uvarint() - 1)]

    def skip_tags(self) -> None:
        for _ in range(self.uvarint()):
            self.uvarint()
            self.take(self.uvarint())

    def tags(self) -> dict[int, bytes]:
        return {self.uvarint(): self.take(self.uvarint()) for _ in range(self.uvarint())}

    def finish(self, correlation_id: int) -> None:
        """Nothing may be left unread: a field this decoder does not know means it read the wrong version."""
        if self._at != len(self._data):
            raise self._error(f"{len(self._data) - self._at} unread bytes after answer {correlation_id}")


def decode_response(payload: bytes, correlation_id: int) -> ApiVersionsAnswer:
    """The answer of ``payload`` (the frame without its size): header v0 (ApiVersions answers never use v1), body v3."""
    read = Reader(payload)
    if (got := read.unpack(">i")) != correlation_id:
        raise ApiVersionsError(f"the answer is to request {got}, not {correlation_id}")
    if error := read.unpack(">h"):
        raise ApiVersionsError(f"the broker answered ApiVersions v{VERSION} with error code {error}")
    apis = {}
    for _ in range(read.uvarint() - 1):
        key, low, high = read.unpack(">h"), read.unpack(">h"), read.unpack(">h")
        read.skip_tags()
        apis[key] = (low, high)
    read.unpack(">i")  # throttle_time_ms
    tags = read.tags()
    supported: dict[str, tuple[int, int]] = {}
    if 0 in tags:
        inner = Reader(tags[0])
        for _ in range(inner.uvarint() - 1):
            name, low, high = inner.compact_string(), inner.unpack(">h"), inner.unpack(">h")
            inner.skip_tags()
            supported[name] = (low, high)
    finalized: dict[str, int] = {}
    if 2 in tags:
        inner = Reader(tags[2])
        for _ in range(inner.uvarint() - 1):
            name, level = inner.compact_string(), inner.unpack(">h")
            inner.unpack(">h")  # min_version_level
            inner.skip_tags()
            finalized[name] = level
    return ApiVersionsAnswer(apis, supported, finalized)


def ask(address: str, timeout_s: float = ASK_TIMEOUT_S) -> ApiVersionsAnswer:
    """Send one ApiVersions request to ``host:port`` and read its answer; ``ApiVersionsError`` (or ``OSError``)."""
    correlation_id = 1
    payload = exchange(address, encode_request(correlation_id), timeout_s, ApiVersionsError, "ApiVersions")
    return decode_response(payload, correlation_id)


def exchange(
    address: str, request: bytes, timeout_s: float = ASK_TIMEOUT_S, error: type[Exception] = ApiVersionsError,
    what: str = "",
) -> bytes:  # fmt: skip
    """Send one request frame to ``host:port`` on a plain socket and return its answer's payload (the frame without
    its size): the one place a raw-protocol request of kconform touches the network. ``error`` (with ``what``, the
    request's name, in its message) when the answer is no Kafka frame or never comes whole; ``OSError`` as raised."""
    host, _, port = address.rpartition(":")
    with socket.create_connection((host.strip("[]"), int(port)), timeout=timeout_s) as sock:
        sock.sendall(request)
        size = struct.unpack(">i", _receive(sock, 4, error, what))[0]
        if not 0 < size <= MAX_FRAME:
            raise error(f"{address} answered a frame of {size} bytes: is it a Kafka broker (not TLS)?")
        return _receive(sock, size, error, what)


def _receive(sock: socket.socket, size: int, error: type[Exception], what: str) -> bytes:
    data = bytearray()
    while len(data) < size:
        chunk = sock.recv(size - len(data))
        if not chunk:
            raise error(f"the broker closed the connection before it answered{f' {what}' if what else ''}")
        data += chunk
    return bytes(data)
