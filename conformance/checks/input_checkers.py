"""RESTORE-013 and RESTORE-014: what a source emits, and where it stands, on input as pipelines write it.

Transactions leave offsets no read returns: their control markers, and under read_committed the records of
aborted ones (KAFKA-001, KAFKA-003; read_uncommitted returns those, KAFKA-007). A ``LogView`` says, offset by
offset, which is which at the source's isolation; the checkers judge a source's emitted offsets and its
positions (checkpointed, committed) against it, and the values it emitted against those written (a
tombstone's null, an empty value), whatever level recorded them. They are pure: the views and the
recordings are data.
"""

from __future__ import annotations

from bisect import bisect_right
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from ...reference_impl.types import TopicPartition, is_sentinel
from .checkers import Violation, tp_fields, value_field


@dataclass(frozen=True, slots=True)
class LogView:
    """One partition as a read at the source's isolation shows it, below that isolation's end.

    Under read_committed an aborted transaction's records are ``hidden``; under read_uncommitted every data
    record is one of ``records`` (KAFKA-007). An offset below ``end`` in neither tuple is a control marker (or a
    record compaction removed): no read returns it.
    """

    records: tuple[int, ...]
    """Offsets of the records the read returns, ascending."""
    hidden: tuple[int, ...]
    """Offsets of the records read_uncommitted returns and this read hides: aborted transactions'."""
    end: int
    """Where the read stops (the last stable offset under read_committed, else the high watermark)."""

    def what_is_at(self, offset: int) -> str:
        if offset in self.records:
            return "record"
        if offset in self.hidden:
            return "aborted record"
        return "control marker" if offset < self.end else "offset past the end"

    def next_record(self, after: int | None) -> int:
        """The first record after offset ``after`` (from the log start for ``None``), else ``end``."""
        i = 0 if after is None else bisect_right(self.records, after)
        return self.records[i] if i < len(self.records) else self.end


def check_records_read(
    views: Mapping[TopicPartition, LogView],
    emitted: Mapping[TopicPartition, Sequence[int]],
    when: str,
    read_to: Mapping[TopicPartition, int] | None = None,
) -> list[Violation]:
    """RESTORE-013: each partition's emitted offsets are the records its isolation reads, each once, none
    missing below where it was read to (``read_to``, its position; else the view's end): never an aborted
    record under read_committed (``aborted-emitted``), never an offset that holds no record
    (``marker-emitted``), no record left out (``record-skipped``) or emitted twice (``record-repeated``)."""
    out = []
    for tp, view in sorted(views.items()):
        until = view.end if read_to is None else read_to.get(tp, 0)
        seen = Counter(emitted.get(tp, ()))
        for offset, times in sorted(seen.items()):
            what = view.what_is_at(offset)
            fields = tp_fields(tp) | {"offset": offset, "times": times, "end": view.end}
            if what == "aborted record":
                evidence = f"{tp} offset {offset}: an {what} emitted {when}, under read_committed"
                out.append(Violation("RESTORE-013", "aborted-emitted", evidence, data=fields))
            elif what != "record":
                evidence = f"{tp} offset {offset}: a {what} emitted {when} as a record"
                out.append(Violation("RESTORE-013", "marker-emitted", evidence, data=fields))
            elif times > 1:
                evidence = f"{tp} offset {offset} emitted {times} times {when}"
                out.append(Violation("RESTORE-013", "record-repeated", evidence, data=fields))
        out += [
            Violation(
                "RESTORE-013",
                "record-skipped",
                f"{tp} offset {offset}, a record, never emitted {when} ({_around(view, offset)})",
                data=tp_fields(tp) | {"offset": offset, "times": 0, "end": view.end},
            )
            for offset in view.records
            if offset < until and offset not in seen
        ]
    return out


def check_positions_in_gaps(
    views: Mapping[TopicPartition, LogView],
    emitted: Mapping[TopicPartition, Sequence[int]],
    positions: Mapping[TopicPartition, int],
    when: str,
) -> list[Violation]:
    """RESTORE-013: a partition's position (the next offset to read, as checkpointed or committed) lies past its
    last emitted record and no further than its next record (or the end): any offset of the gap
    between them is right, a marker's included. Behind the last emitted record, a restore from it emits
    that record again (``position-behind-read``); past the next record, it skips it (``position-past-record``).
    A partition with no resolved position yet (a start sentinel) has nothing to judge."""
    out = []
    for tp, position in sorted(positions.items()):
        view = views.get(tp)
        if view is None or is_sentinel(position):
            continue
        last = max(emitted.get(tp, ()), default=None)
        low = 0 if last is None else last + 1
        high = view.next_record(last)
        fields = tp_fields(tp) | {"next_offset": position, "last_emitted": last, "next_record": high, "end": view.end}
        if position < low:
            evidence = f"{tp} position {position} {when} not past the last record emitted, {last}: a restore repeats it"
            out.append(Violation("RESTORE-013", "position-behind-read", evidence, data=fields))
        elif position > high:
            evidence = (
                f"{tp} position {position} {when}, past the next record not yet emitted, at {high} "
                f"({_around(view, high)}): a restore skips it"
                if high in view.records
                else f"{tp} position {position} {when}, past {high}, where its isolation's read ends: a restore "
                "skips what is written there"
            )
            out.append(Violation("RESTORE-013", "position-past-record", evidence, data=fields))
    return out


def _around(view: LogView, offset: int) -> str:
    """What the log holds just before ``offset``: the gap a reader had to cross to reach it."""
    before = [f"{o}: {view.what_is_at(o)}" for o in range(max(0, offset - 3), offset)]
    return "before it " + ", ".join(before) if before else "the first offset"


def check_values_as_written(
    written: Mapping[TopicPartition, Mapping[int, bytes | None]],
    emitted: Iterable[tuple[TopicPartition, int, bytes | None]],
    when: str,
) -> list[Violation]:
    """RESTORE-014: each emitted record carries the value written at its offset: a tombstone's null as null
    (``tombstone-not-null``), an empty value as empty (``empty-became-null``), any other byte for byte
    (``value-changed``). An offset with no written record is RESTORE-013's to name."""
    out = []
    for tp, offset, value in emitted:
        want = written.get(tp, {}).get(offset, value)
        if value == want:
            continue
        kind = "tombstone-not-null" if want is None else "empty-became-null" if want == b"" else "value-changed"
        out.append(
            Violation(
                "RESTORE-014",
                kind,
                f"{tp} offset {offset} emitted {when} with value {value!r}, written as {want!r}",
                data=tp_fields(tp) | {"offset": offset, "got": value_field(value), "want": value_field(want)},
            )
        )
    return out
