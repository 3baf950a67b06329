"""A transactional write outside its producer's transaction, on a plain socket (KAFKA-016's probe).

Neither client here can send one: both add a partition to the transaction (``AddPartitionsToTxn``) before they
produce to it. This module speaks the protocol itself: ``InitProducerId`` v1 (API 22) for a transactional id, then
one ``Produce`` v8 (API 0, ``acks=-1``) carrying a RecordBatch v2 with the transactional attribute, that producer id
and epoch and base sequence 0, with no ``AddPartitionsToTxn`` before it. A broker that verifies the partition
against the coordinator (``transaction.partition.verification.enable``, KIP-890 part 1) answers ``INVALID_TXN_STATE``;
one that does not appends the batch, which then holds the partition's last stable offset: a hanging transaction.

Produce v8 is below v11, so a 4.x broker treats the request as a transactions-v1 client's (``DEFAULT_ERROR``:
``AddPartitionsToTxnManager.produceRequestVersionToTransactionSupportedOperation``) and verifies it only when the
setting is on. All versions used here are non-flexible (request header v1, response header v0). Encoding and
decoding (CRC-32C and zigzag varints included) are pure; ``ask`` is the one function that touches the network, and
``write_outside_transaction`` takes it as a parameter so its sequencing is tested without a broker.
"""

from __future__ import annotations

import struct
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

from .api_versions import ASK_TIMEOUT_S, Reader, exchange, uvarint

PRODUCE: Final = 0
FIND_COORDINATOR: Final = 10
INIT_PRODUCER_ID: Final = 22
PRODUCE_VERSION: Final = 8
"""Carries the partition's ``error_message`` (v8+) and is below v11, where 4.x starts treating a write differently."""
FIND_COORDINATOR_VERSION: Final = 1
INIT_PRODUCER_ID_VERSION: Final = 1
COORDINATOR_TYPE_TRANSACTION: Final = 1
ACKS_ALL: Final = -1
CLIENT_ID: Final = "kconform-outside-write"

MAGIC_V2: Final = 2
TRANSACTIONAL_ATTRIBUTE: Final = 0x10
"""Bit 4 of a RecordBatch v2's attributes."""
CONTROL_ATTRIBUTE: Final = 0x20
NO_PARTITION_LEADER_EPOCH: Final = -1

ERROR_NAMES: Final = {
    -1: "UNKNOWN_SERVER_ERROR",
    0: "NONE",
    2: "CORRUPT_MESSAGE",
    3: "UNKNOWN_TOPIC_OR_PARTITION",
    6: "NOT_LEADER_OR_FOLLOWER",
    7: "REQUEST_TIMED_OUT",
    14: "COORDINATOR_LOAD_IN_PROGRESS",
    15: "COORDINATOR_NOT_AVAILABLE",
    16: "NOT_COORDINATOR",
    19: "NOT_ENOUGH_REPLICAS",
    35: "UNSUPPORTED_VERSION",
    45: "OUT_OF_ORDER_SEQUENCE_NUMBER",
    47: "INVALID_PRODUCER_EPOCH",
    48: "INVALID_TXN_STATE",
    49: "INVALID_PRODUCER_ID_MAPPING",
    51: "CONCURRENT_TRANSACTIONS",
    53: "TRANSACTIONAL_ID_AUTHORIZATION_FAILED",
    59: "UNKNOWN_PRODUCER_ID",
    87: "INVALID_RECORD",
    90: "PRODUCER_FENCED",
    120: "TRANSACTION_ABORTABLE",
}
"""The codes of ``org.apache.kafka.common.protocol.Errors`` this exchange can meet (4.1.1)."""
RETRIABLE: Final = frozenset({7, 14, 15, 51})
"""Answers that mean "not yet": asked again until the caller's deadline."""
COORDINATOR_MOVED: Final = 16


def error_name(code: int) -> str:
    return ERROR_NAMES.get(code, f"error {code}")


class OutsideWriteError(Exception):
    """The exchange could not be had or read; the message says why."""


# -- CRC-32C (Castagnoli), table-driven ----------------------------------------------------------

CRC32C_POLYNOMIAL: Final = 0x82F63B78
"""0x1EDC6F41 bit-reversed: the CRC a RecordBatch v2 carries (``org.apache.kafka.common.utils.Crc32C``)."""


def _crc32c_table() -> tuple[int, ...]:
    table = []
    for byte in range(256):
        crc = byte
        for _ in range(8):
            crc = (crc >> 1) ^ CRC32C_POLYNOMIAL if crc & 1 else crc >> 1
        table.append(crc)
    return tuple(table)


_CRC32C_TABLE: Final = _crc32c_table()


def crc32c(data: bytes) -> int:
    crc = 0xFFFFFFFF
    for byte in data:
        crc = _CRC32C_TABLE[(crc ^ byte) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


# -- zigzag varints (the record fields of a RecordBatch v2) --------------------------------------


def zigzag_varint(value: int) -> bytes:
    """A signed 64-bit value as Kafka's ``ByteUtils.writeVarlong`` writes it (a 32-bit one the same)."""
    if not -(1 << 63) <= value < 1 << 63:
        raise ValueError(f"{value} does not fit a 64-bit varint")
    return uvarint(((value << 1) ^ (value >> 63)) & 0xFFFFFFFFFFFFFFFF)


def read_zigzag_varint(data: bytes, at: int) -> tuple[int, int]:
    """The value of the zigzag varint at ``data[at]`` and the offset after it."""
    encoded = shift = 0
    while True:
        if at >= len(data):
            raise OutsideWriteError("a varint runs past the end of its data")
        byte = data[at]
        at += 1
        encoded |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return (encoded >> 1) ^ -(encoded & 1), at
        shift += 7
        if shift > 63:
            raise OutsideWriteError("a varint longer than 64 bits")


# -- RecordBatch v2 ------------------------------------------------------------------------------

_BATCH_HEAD: Final = struct.Struct(">qiibI")
"""baseOffset, batchLength, partitionLeaderEpoch, magic, crc."""
_BATCH_BODY: Final = struct.Struct(">hiqqqhii")
"""attributes, lastOffsetDelta, baseTimestamp, maxTimestamp, producerId, producerEpoch, baseSequence, record count."""


@dataclass(frozen=True, slots=True)
class RecordBatch:
    """What a RecordBatch v2 of uncompressed records without headers holds (every record at the base timestamp)."""

    producer_id: int
    producer_epoch: int
    base_sequence: int
    values: tuple[bytes | None, ...]
    timestamp_ms: int
    transactional: bool = True
    base_offset: int = 0

    @property
    def attributes(self) -> int:
        return TRANSACTIONAL_ATTRIBUTE if self.transactional else 0


def _record(offset_delta: int, value: bytes | None) -> bytes:
    """One record: attributes 0, timestamp delta 0, null key, ``value``, no headers; prefixed by its length."""
    value_part = zigzag_varint(-1) if value is None else zigzag_varint(len(value)) + value
    body = b"\x00" + zigzag_varint(0) + zigzag_varint(offset_delta) + zigzag_varint(-1) + value_part + zigzag_varint(0)
    return zigzag_varint(len(body)) + body


def encode_batch(batch: RecordBatch) -> bytes:
    if not batch.values:
        raise ValueError("a record batch holds at least one record")
    body = _BATCH_BODY.pack(
        batch.attributes,
        len(batch.values) - 1,
        batch.timestamp_ms,
        batch.timestamp_ms,
        batch.producer_id,
        batch.producer_epoch,
        batch.base_sequence,
        len(batch.values),
    ) + b"".join(_record(i, v) for i, v in enumerate(batch.values))
    # batchLength counts from partitionLeaderEpoch (4 bytes) + magic (1) + crc (4) to the end.
    head = _BATCH_HEAD.pack(batch.base_offset, 9 + len(body), NO_PARTITION_LEADER_EPOCH, MAGIC_V2, crc32c(body))
    return head + body


def decode_batch(data: bytes) -> RecordBatch:
    """The batch ``encode_batch`` wrote (its CRC checked); ``OutsideWriteError`` for anything else."""
    if len(data) < _BATCH_HEAD.size + _BATCH_BODY.size:
        raise OutsideWriteError(f"{len(data)} bytes is too short for a RecordBatch v2")
    base_offset, length, _, magic, crc = _BATCH_HEAD.unpack_from(data)
    if magic != MAGIC_V2:
        raise OutsideWriteError(f"magic {magic}, not 2")
    if length != len(data) - 12:
        raise OutsideWriteError(f"batchLength {length} but {len(data) - 12} bytes follow it")
    body = data[_BATCH_HEAD.size :]
    if crc32c(body) != crc:
        raise OutsideWriteError(f"CRC-32C {crc32c(body):#010x} does not match the batch's {crc:#010x}")
    attributes, last_delta, base_ts, _, pid, epoch, sequence, count = _BATCH_BODY.unpack_from(body)
    if attributes & ~TRANSACTIONAL_ATTRIBUTE:
        raise OutsideWriteError(f"attributes {attributes:#x}: only the transactional bit is read here")
    at, values = _BATCH_BODY.size, []
    for expected_delta in range(count):
        size, at = read_zigzag_varint(body, at)
        end = at + size
        at += 1  # record attributes
        timestamp_delta, at = read_zigzag_varint(body, at)
        offset_delta, at = read_zigzag_varint(body, at)
        key_size, at = read_zigzag_varint(body, at)
        at += max(key_size, 0)
        value_size, at = read_zigzag_varint(body, at)
        values.append(None if value_size < 0 else body[at : at + value_size])
        at += max(value_size, 0)
        headers, at = read_zigzag_varint(body, at)
        if (timestamp_delta, offset_delta, key_size, headers, at) != (0, expected_delta, -1, 0, end):
            raise OutsideWriteError(f"record {expected_delta} is not one encode_batch writes")
    if at != len(body) or last_delta != count - 1:
        raise OutsideWriteError("the batch's record count or length does not match its records")
    return RecordBatch(
        pid, epoch, sequence, tuple(values), base_ts, bool(attributes & TRANSACTIONAL_ATTRIBUTE), base_offset
    )


# -- requests ------------------------------------------------------------------------------------


def _string(text: str) -> bytes:
    data = text.encode()
    return struct.pack(">h", len(data)) + data


def _frame(api_key: int, version: int, correlation_id: int, body: bytes) -> bytes:
    """Size prefix, request header v1 (non-flexible: key, version, correlation id, client id), body."""
    payload = struct.pack(">hhi", api_key, version, correlation_id) + _string(CLIENT_ID) + body
    return struct.pack(">i", len(payload)) + payload


def encode_find_coordinator(correlation_id: int, transactional_id: str) -> bytes:
    """FindCoordinator v1 for a transactional id (key type 1)."""
    body = _string(transactional_id) + struct.pack(">b", COORDINATOR_TYPE_TRANSACTION)
    return _frame(FIND_COORDINATOR, FIND_COORDINATOR_VERSION, correlation_id, body)


def encode_init_producer_id(correlation_id: int, transactional_id: str, transaction_timeout_ms: int) -> bytes:
    """InitProducerId v1: the transactional id and its transaction timeout."""
    body = _string(transactional_id) + struct.pack(">i", transaction_timeout_ms)
    return _frame(INIT_PRODUCER_ID, INIT_PRODUCER_ID_VERSION, correlation_id, body)


def encode_produce(
    correlation_id: int, transactional_id: str, topic: str, partition: int, batch: bytes, timeout_ms: int
) -> bytes:
    """Produce v8, ``acks=-1``: one topic, one partition, ``batch`` as its records."""
    body = (
        _string(transactional_id)
        + struct.pack(">hii", ACKS_ALL, timeout_ms, 1)
        + _string(topic)
        + struct.pack(">iii", 1, partition, len(batch))
        + batch
    )
    return _frame(PRODUCE, PRODUCE_VERSION, correlation_id, body)


# -- answers -------------------------------------------------------------------------------------


def _answer(payload: bytes, correlation_id: int) -> Reader:
    read = Reader(payload, OutsideWriteError)
    if (got := read.unpack(">i")) != correlation_id:  # response header v0
        raise OutsideWriteError(f"the answer is to request {got}, not {correlation_id}")
    return read


@dataclass(frozen=True, slots=True)
class Coordinator:
    error_code: int
    address: str
    """``host:port``; empty with an error."""


def decode_find_coordinator(payload: bytes, correlation_id: int) -> Coordinator:
    read = _answer(payload, correlation_id)
    read.unpack(">i")  # throttle_time_ms
    error = read.unpack(">h")
    read.string()  # error_message
    read.unpack(">i")  # node_id
    host = read.string() or ""
    port = read.unpack(">i")
    read.finish(correlation_id)
    return Coordinator(error, f"{host}:{port}" if not error else "")


@dataclass(frozen=True, slots=True)
class ProducerIdentity:
    error_code: int
    producer_id: int
    producer_epoch: int


def decode_init_producer_id(payload: bytes, correlation_id: int) -> ProducerIdentity:
    read = _answer(payload, correlation_id)
    read.unpack(">i")  # throttle_time_ms
    identity = ProducerIdentity(read.unpack(">h"), read.unpack(">q"), read.unpack(">h"))
    read.finish(correlation_id)
    return identity


@dataclass(frozen=True, slots=True)
class PartitionAnswer:
    """One partition of a Produce answer."""

    topic: str
    partition: int
    error_code: int
    base_offset: int
    error_message: str | None

    def text(self) -> str:
        said = f" ({self.error_message})" if self.error_message else ""
        if self.error_code:
            return f"{error_name(self.error_code)}{said}"
        return f"accepted at offset {self.base_offset}"


def decode_produce(payload: bytes, correlation_id: int) -> list[PartitionAnswer]:
    """A Produce v8 answer: per topic and partition the error code, base offset, record errors and message."""
    read = _answer(payload, correlation_id)
    answers = []
    for _ in range(read.unpack(">i")):
        topic = read.string() or ""
        for _ in range(read.unpack(">i")):
            partition, error, base_offset = read.unpack(">i"), read.unpack(">h"), read.unpack(">q")
            read.unpack(">q")  # log_append_time_ms
            read.unpack(">q")  # log_start_offset
            for _ in range(read.unpack(">i")):  # record_errors
                read.unpack(">i")
                read.string()
            answers.append(PartitionAnswer(topic, partition, error, base_offset, read.string()))
    read.unpack(">i")  # throttle_time_ms
    read.finish(correlation_id)
    return answers


# -- the exchange --------------------------------------------------------------------------------

Ask = Callable[[str, bytes, float], bytes]
"""``(address, request frame, timeout) -> answer payload``: ``ask``, or a test's stand-in."""


@dataclass(frozen=True, slots=True)
class OutsideWrite:
    """What the broker answered, step by step."""

    coordinator: str
    producer: ProducerIdentity
    answer: PartitionAnswer | None
    """``None`` when no producer id was had, so nothing was produced."""

    @property
    def refused(self) -> bool:
        return self.answer is not None and self.answer.error_code != 0

    @property
    def accepted(self) -> bool:
        return self.answer is not None and self.answer.error_code == 0

    def text(self) -> str:
        if self.answer is None:
            return f"InitProducerId answered {error_name(self.producer.error_code)}: nothing produced"
        return (
            f"transactional batch (pid {self.producer.producer_id}, epoch {self.producer.producer_epoch}, "
            f"sequence 0) produced without AddPartitionsToTxn: {self.answer.text()}"
        )


def write_outside_transaction(
    bootstrap: str,
    leader: str,
    transactional_id: str,
    topic: str,
    partition: int,
    value: bytes,
    timeout_s: float,
    now_ms: int,
    ask_fn: Ask,
    clock: Callable[[], float] = time.monotonic,
) -> OutsideWrite:
    """FindCoordinator (asked of ``bootstrap``), InitProducerId (of the coordinator), then the transactional
    Produce to ``leader`` with no AddPartitionsToTxn. Retriable coordinator answers are asked again until
    ``timeout_s`` has passed; the last answer is then returned."""
    deadline = clock() + timeout_s
    correlation = iter(range(1, 1 << 31))

    def call(address: str, encode: Callable[[int], bytes]) -> tuple[bytes, int]:
        cid = next(correlation)
        return ask_fn(address, encode(cid), max(0.1, deadline - clock())), cid

    def until_settled(step: Callable[[], tuple[int, object]]) -> object:
        while True:
            code, result = step()
            if (code not in RETRIABLE and code != COORDINATOR_MOVED) or clock() >= deadline:
                return result
            time.sleep(0.1)  # polling interval of a bounded wait for the coordinator to load

    def find() -> tuple[int, Coordinator]:
        payload, cid = call(bootstrap, lambda c: encode_find_coordinator(c, transactional_id))
        found = decode_find_coordinator(payload, cid)
        return found.error_code, found

    coordinator = until_settled(find)
    assert isinstance(coordinator, Coordinator)
    address = coordinator.address or bootstrap

    def init() -> tuple[int, ProducerIdentity]:
        timeout_ms = 60_000
        payload, cid = call(address, lambda c: encode_init_producer_id(c, transactional_id, timeout_ms))
        identity = decode_init_producer_id(payload, cid)
        return identity.error_code, identity

    identity = until_settled(init)
    assert isinstance(identity, ProducerIdentity)
    if identity.error_code:
        return OutsideWrite(address, identity, None)
    batch = encode_batch(RecordBatch(identity.producer_id, identity.producer_epoch, 0, (value,), now_ms))
    produce_timeout_ms = max(100, int((deadline - clock()) * 1000))
    payload, cid = call(
        leader, lambda c: encode_produce(c, transactional_id, topic, partition, batch, produce_timeout_ms)
    )
    answers = decode_produce(payload, cid)
    mine = [a for a in answers if (a.topic, a.partition) == (topic, partition)]
    if len(mine) != 1:
        raise OutsideWriteError(f"the Produce answer names {[(a.topic, a.partition) for a in answers]}, not {topic}")
    return OutsideWrite(address, identity, mine[0])


def ask(address: str, request: bytes, timeout_s: float = ASK_TIMEOUT_S) -> bytes:
    """Send one request frame to ``host:port`` and return its answer's payload (the frame without its size)."""
    return exchange(address, request, timeout_s, OutsideWriteError)
