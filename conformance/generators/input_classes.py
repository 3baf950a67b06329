"""Input as real pipelines write it: transactions committed and aborted, tombstones and empty values.

A drawn input is a list of ``InputWrite``s, written in order by ``write_input`` through what the Kafka model
and the live broker's client both offer, so the protocol and the pipeline level read the same classes.
Every transaction ends in a control marker on each partition it wrote, and an aborted one leaves records
read_committed hides: offsets no read returns (KAFKA-003), the gaps RESTORE-013 is about. A test counts the
classes it drew with ``InterleavingMix(INPUT_CLASSES, kind="input")``, which makes each a metric of the run.

Compacted topics are not drawn. The model keeps every offset (no retention, no cleaner), and Kafka's log
cleaner compacts only rolled segments, on its own schedule (``log.cleaner.backoff.ms``, 15 s by default),
which no client can trigger: a scenario could only wait for it. To a source, an offset compaction removed is
what a marker is, an offset no read returns, and the transactions already draw those.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final, Protocol

from hypothesis import strategies as st

from ...reference_impl.ports import Isolation, LogReader, TransactionalProducer
from ...reference_impl.types import TopicPartition
from ..checks.input_checkers import LogView

INPUT_CLASSES: Final = ("plain", "tombstone", "empty-value", "committed-transaction", "aborted-transaction")
"""What a write puts on the log; the last two leave a control marker on every partition they wrote."""
TRANSACTIONAL: Final = frozenset({"committed-transaction", "aborted-transaction"})
WHOLE_LOG: Final = 1_000_000
"""More records than any drawn input holds: a read of the whole partition."""


@dataclass(frozen=True, slots=True)
class InputWrite:
    """``count`` records of class ``kind`` on each of ``partitions``; a transaction spans all of them."""

    kind: str
    partitions: tuple[int, ...]
    count: int


def input_writes(partitions: int, max_writes: int = 6) -> st.SearchStrategy[list[InputWrite]]:
    """Writes of every input class, in any order, each on a drawn set of the topic's ``partitions``."""
    write = st.builds(
        InputWrite,
        st.sampled_from(INPUT_CLASSES),
        st.sets(st.integers(0, partitions - 1), min_size=1).map(lambda ps: tuple(sorted(ps))),
        st.integers(1, 3),
    )
    return st.lists(write, min_size=1, max_size=max_writes)


class InputLog(Protocol):
    """Plain and transactional writes: the Kafka model and the live broker's client both offer them."""

    def produce(self, tp: TopicPartition, key: bytes | None, value: bytes | None) -> int: ...

    def init_producer(self, transactional_id: str) -> TransactionalProducer: ...


def write_input(log: InputLog, topic: str, writes: Sequence[InputWrite], tag: str) -> None:
    """Write ``writes`` to ``topic`` in order; every record is keyed (a tombstone deletes a key) and its value
    names the write and the record, except a tombstone's (null) and an empty value's (empty)."""
    producer: TransactionalProducer | None = None
    for n, write in enumerate(writes):
        cells = [(p, i) for p in write.partitions for i in range(write.count)]
        if write.kind in TRANSACTIONAL:
            producer = producer or log.init_producer(f"{tag}-writer")
            producer.begin_transaction()
            for p, i in cells:
                producer.produce(topic, p, _key(tag, n, i), f"{tag}-{write.kind}-{n}-{p}-{i}".encode())
            producer.flush()  # librdkafka's abort drops what it has not sent: these reach the log, then abort
            if write.kind == "committed-transaction":
                producer.commit_transaction()
            else:
                producer.abort_transaction()
            continue
        for p, i in cells:
            value = {"tombstone": None, "empty-value": b""}.get(write.kind, f"{tag}-plain-{n}-{p}-{i}".encode())
            log.produce(TopicPartition(topic, p), _key(tag, n, i), value)


def _key(tag: str, write: int, record: int) -> bytes:
    return f"{tag}-key-{write}-{record}".encode()


def log_view(reader: LogReader, tp: TopicPartition, isolation: Isolation) -> LogView:
    """``tp`` as a read at ``isolation`` shows it now, beside read_uncommitted (``LogView``)."""
    end = reader.latest_offset(tp, isolation)
    records = tuple(r.offset for r in reader.read(tp, 0, isolation, WHOLE_LOG))
    written = (r.offset for r in reader.read(tp, 0, Isolation.READ_UNCOMMITTED, WHOLE_LOG))
    return LogView(records, tuple(o for o in written if o < end and o not in records), end)


def written_values(reader: LogReader, tp: TopicPartition) -> dict[int, bytes | None]:
    """Offset -> value of every record of ``tp`` (aborted ones too), as a read_uncommitted reader sees it."""
    return {r.offset: r.value for r in reader.read(tp, 0, Isolation.READ_UNCOMMITTED, WHOLE_LOG)}
