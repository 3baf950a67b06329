"""The raw protocol of KAFKA-016's probe: CRC-32C, zigzag varints, RecordBatch v2 and the three requests, on known
bytes and round trips, and the exchange's sequencing against a scripted stand-in for the broker."""

from __future__ import annotations

import struct
from collections.abc import Callable

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kconform.conformance.brokers.outside_write import (
    FIND_COORDINATOR,
    INIT_PRODUCER_ID,
    PRODUCE,
    PRODUCE_VERSION,
    TRANSACTIONAL_ATTRIBUTE,
    Coordinator,
    OutsideWriteError,
    PartitionAnswer,
    ProducerIdentity,
    RecordBatch,
    crc32c,
    decode_batch,
    decode_find_coordinator,
    decode_init_producer_id,
    decode_produce,
    encode_batch,
    encode_find_coordinator,
    encode_init_producer_id,
    encode_produce,
    read_zigzag_varint,
    write_outside_transaction,
    zigzag_varint,
)

CLIENT = b"\x00\x16kconform-outside-write"


def test_crc32c_matches_the_standard_check_value_and_rfc_3720_vectors() -> None:
    assert crc32c(b"123456789") == 0xE3069283
    assert crc32c(bytes(32)) == 0x8A9136AA  # RFC 3720, B.4
    assert crc32c(b"\xff" * 32) == 0x62A8AB43
    assert crc32c(bytes(range(32))) == 0x46DD794E
    assert crc32c(b"") == 0


@pytest.mark.parametrize(
    ("value", "encoded"),
    [(0, "00"), (-1, "01"), (1, "02"), (-64, "7f"), (64, "8001"), (300, "d804"), (-(1 << 63), "ff" * 9 + "01")],
)
def test_zigzag_varints_known_bytes(value: int, encoded: str) -> None:
    assert zigzag_varint(value).hex() == encoded
    assert read_zigzag_varint(bytes.fromhex(encoded) + b"\x99", 0) == (value, len(encoded) // 2)


@given(st.integers(min_value=-(1 << 63), max_value=(1 << 63) - 1))
def test_zigzag_varints_round_trip(value: int) -> None:
    data = zigzag_varint(value)
    assert read_zigzag_varint(data, 0) == (value, len(data))


def test_zigzag_varints_refuse_what_does_not_fit() -> None:
    with pytest.raises(ValueError):
        zigzag_varint(1 << 63)
    with pytest.raises(OutsideWriteError):
        read_zigzag_varint(b"\x80", 0)


# One transactional record b"x" of producer 1000, epoch 0, sequence 0, at timestamp 123, written field by field
# from the RecordBatch v2 layout of Kafka's DefaultRecordBatch (not by the encoder under test).
BODY = bytes.fromhex(
    "0010"  # attributes: transactional (bit 4)
    "00000000"  # lastOffsetDelta
    "000000000000007b"  # baseTimestamp
    "000000000000007b"  # maxTimestamp
    "00000000000003e8"  # producerId 1000
    "0000"  # producerEpoch
    "00000000"  # baseSequence
    "00000001"  # record count
    "0e"  # record length 7 (zigzag): the 7 bytes below
    "00"  # record attributes
    "00"  # timestampDelta 0
    "00"  # offsetDelta 0
    "01"  # key length -1: null
    "02"  # value length 1
    "78"  # b"x"
    "00"  # no headers
)
KNOWN_BATCH = (
    bytes.fromhex("0000000000000000")  # baseOffset
    + struct.pack(">i", 9 + len(BODY))  # batchLength: from partitionLeaderEpoch to the end
    + bytes.fromhex("ffffffff02")  # partitionLeaderEpoch -1, magic 2
    + struct.pack(">I", crc32c(BODY))
    + BODY
)


def test_a_record_batch_has_known_bytes() -> None:
    batch = RecordBatch(1000, 0, 0, (b"x",), 123)
    assert encode_batch(batch) == KNOWN_BATCH
    assert decode_batch(KNOWN_BATCH) == batch
    assert KNOWN_BATCH[21:23] == struct.pack(">h", TRANSACTIONAL_ATTRIBUTE)


@given(
    producer_id=st.integers(0, (1 << 63) - 1),
    epoch=st.integers(0, (1 << 15) - 1),
    sequence=st.integers(0, (1 << 31) - 1),
    values=st.lists(st.one_of(st.none(), st.binary(max_size=300)), min_size=1, max_size=5),
    timestamp=st.integers(0, 1 << 45),
    transactional=st.booleans(),
)
def test_a_record_batch_round_trips(
    producer_id: int, epoch: int, sequence: int, values: list[bytes | None], timestamp: int, transactional: bool
) -> None:
    batch = RecordBatch(producer_id, epoch, sequence, tuple(values), timestamp, transactional)
    assert decode_batch(encode_batch(batch)) == batch


def test_a_changed_byte_fails_the_batch_crc() -> None:
    changed = KNOWN_BATCH[:-2] + b"y" + KNOWN_BATCH[-1:]
    with pytest.raises(OutsideWriteError, match="CRC-32C"):
        decode_batch(changed)
    with pytest.raises(ValueError):
        encode_batch(RecordBatch(1, 0, 0, (), 0))


def test_requests_have_known_bytes() -> None:
    find = encode_find_coordinator(7, "tid")
    assert find == struct.pack(">i", len(find) - 4) + bytes.fromhex("000a000100000007") + CLIENT + b"\x00\x03tid\x01"
    init = encode_init_producer_id(8, "tid", 60_000)
    assert init == struct.pack(">i", len(init) - 4) + bytes.fromhex("0016000100000008") + CLIENT + (
        b"\x00\x03tid" + struct.pack(">i", 60_000)
    )
    produce = encode_produce(9, "tid", "t", 2, KNOWN_BATCH, 1500)
    body = (
        b"\x00\x03tid"
        + struct.pack(">hii", -1, 1500, 1)  # acks=-1, timeout, one topic
        + b"\x00\x01t"
        + struct.pack(">iii", 1, 2, len(KNOWN_BATCH))  # one partition: 2, its records
        + KNOWN_BATCH
    )
    assert produce == struct.pack(">i", len(produce) - 4) + struct.pack(">hhi", 0, 8, 9) + CLIENT + body


def _produce_answer(cid: int, error: int, offset: int, message: str | None, record_errors: int = 0) -> bytes:
    text = b"\xff\xff" if message is None else struct.pack(">h", len(message)) + message.encode()
    errors = b"".join(struct.pack(">i", i) + b"\x00\x02no" for i in range(record_errors))
    return (
        struct.pack(">ii", cid, 1)
        + b"\x00\x01t"
        + struct.pack(">iihqqq", 1, 0, error, offset, -1, 0)
        + struct.pack(">i", record_errors)
        + errors
        + text
        + struct.pack(">i", 0)  # throttle_time_ms
    )


def _coordinator_answer(cid: int, host: str, port: int) -> bytes:
    """FindCoordinator v1: throttle, error 0, null message, node 1, host, port."""
    return (
        struct.pack(">iih", cid, 0, 0)
        + b"\xff\xff"
        + struct.pack(">ih", 1, len(host))
        + host.encode()
        + (struct.pack(">i", port))
    )


def test_answers_decode() -> None:
    assert decode_produce(_produce_answer(3, 48, -1, "not in txn", 1), 3) == [
        PartitionAnswer("t", 0, 48, -1, "not in txn")
    ]
    assert decode_produce(_produce_answer(3, 0, 5, None), 3) == [PartitionAnswer("t", 0, 0, 5, None)]
    init = struct.pack(">iihqh", 4, 0, 0, 1000, 3)
    assert decode_init_producer_id(init, 4) == ProducerIdentity(0, 1000, 3)
    found = _coordinator_answer(5, "127.0.0.1", 9092)
    assert decode_find_coordinator(found, 5) == Coordinator(0, "127.0.0.1:9092")


def test_answers_that_do_not_fit_are_refused() -> None:
    with pytest.raises(OutsideWriteError, match="request 3, not 4"):
        decode_produce(_produce_answer(3, 0, 5, None), 4)
    with pytest.raises(OutsideWriteError, match="ends early"):
        decode_produce(_produce_answer(3, 0, 5, None)[:-3], 3)
    with pytest.raises(OutsideWriteError, match="unread bytes"):
        decode_init_producer_id(struct.pack(">iihqh", 4, 0, 0, 1000, 3) + b"\x00", 4)


def _header(frame: bytes) -> tuple[int, int, int]:
    key, version, cid = struct.unpack_from(">hhi", frame, 4)
    return key, version, cid


def _broker(init_errors: list[int], produce_error: int) -> tuple[Callable[[str, bytes, float], bytes], list[str]]:
    """A scripted broker: its coordinator at c:1, its partition leader at l:2; it logs ``API@address``."""
    seen: list[str] = []

    def ask(address: str, frame: bytes, timeout_s: float) -> bytes:
        assert timeout_s > 0
        key, version, cid = _header(frame)
        seen.append(f"{key}@{address}")
        if key == FIND_COORDINATOR:
            return _coordinator_answer(cid, "c", 1)
        if key == INIT_PRODUCER_ID:
            return struct.pack(">iihqh", cid, 0, init_errors.pop(0) if init_errors else 0, 77, 2)
        assert (key, version) == (PRODUCE, PRODUCE_VERSION)
        batch = decode_batch(frame[-len(KNOWN_BATCH) :])  # one 1-byte value: same size as KNOWN_BATCH
        assert (batch.producer_id, batch.producer_epoch, batch.base_sequence, batch.transactional) == (77, 2, 0, True)
        return _produce_answer(cid, produce_error, 4 if not produce_error else -1, None)

    return ask, seen


@pytest.mark.parametrize("produce_error", [0, 48])
def test_the_exchange_finds_the_coordinator_inits_then_produces_to_the_leader(produce_error: int) -> None:
    ask, seen = _broker([14], produce_error)  # the coordinator is still loading the first time
    write = write_outside_transaction("b:0", "l:2", "tid", "t", 0, b"v", 5.0, 123, ask)
    assert seen == ["10@b:0", "22@c:1", "22@c:1", "0@l:2"]
    assert write.producer == ProducerIdentity(0, 77, 2) and write.coordinator == "c:1"
    assert (write.accepted, write.refused) == (not produce_error, bool(produce_error))
    assert ("INVALID_TXN_STATE" in write.text()) == bool(produce_error)


def test_a_producer_id_refused_for_good_produces_nothing() -> None:
    ask, seen = _broker([53], 0)
    write = write_outside_transaction("b:0", "l:2", "tid", "t", 0, b"v", 5.0, 123, ask)
    assert seen == ["10@b:0", "22@c:1"]
    assert write.answer is None and not write.accepted and not write.refused
    assert "TRANSACTIONAL_ID_AUTHORIZATION_FAILED" in write.text()


def test_retries_end_at_the_deadline() -> None:
    ticks = iter(range(100))
    ask, seen = _broker([14] * 50, 0)
    write = write_outside_transaction("b:0", "l:2", "tid", "t", 0, b"v", 3.0, 123, ask, clock=lambda: next(ticks))
    assert write.answer is None and write.producer.error_code == 14
    assert len(seen) < 5
