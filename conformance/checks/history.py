"""Jepsen-style histories of a sink under test, and the checker that names their anomalies.

A history is the list of operations the suite performed and what came back: each operation is
invoked and then completes ``ok``, ``fail`` (definitely did not happen) or ``info``
(indeterminate: it may or may not have happened, e.g. a commit whose answer was lost). Reads
observe the sink topic through a ``read_committed`` consumer together with the raw log, so the
checker can tell a lost record from one hidden behind a lingering transaction.

The checker is a pure function of the history: the same history always yields the same
anomalies, each with the requirement it violates and the evidence.
"""

from __future__ import annotations

import enum
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, NamedTuple

from .checkers import Violation, value_field


class Guarantee(enum.Enum):
    EXACTLY_ONCE = "exactly-once"
    AT_LEAST_ONCE = "at-least-once"


ANOMALY_REQUIREMENT = {
    "lost-write": "COMMIT-003",
    "duplicate": "COMMIT-008",
    "aborted-read": "COMMIT-008",
    "recovery-commits-uncheckpointed": "COMMIT-010",
    "precommitted-read": "COMMIT-002",
    "uncommitted-read": "COMMIT-001",
    "zombie-write": "COMMIT-006",
    "lingering-transaction": "COMMIT-004",
    "leftover-transaction": "COMMIT-012",
    "notification-lost-write": "COMMIT-009",
    "swallowed-error": "COMMIT-007",
}
"""Anomaly -> the requirement it violates."""

_FAMILY = {
    "duplicate": "duplicate",
    "lingering-transaction": "lingering",
    "leftover-transaction": "lingering",
    "lost-write": "lost",
    "notification-lost-write": "lost",
    "swallowed-error": "lost",
}
"""Anomalies of one family describe the same trouble of a value; only the first is reported."""

ALLOWED = {
    Guarantee.EXACTLY_ONCE: frozenset[str](),
    Guarantee.AT_LEAST_ONCE: frozenset({"duplicate", "aborted-read", "precommitted-read", "uncommitted-read"}),
}
"""Anomalies each declared guarantee permits."""


@dataclass(frozen=True, slots=True)
class Op:
    index: int
    process: str
    type: str
    """``invoke``, ``ok``, ``fail`` or ``info``."""
    f: str
    value: Any = None


@dataclass(frozen=True, slots=True)
class Observation:
    """What one read saw: committed values in log order, and where every value sits in the raw log."""

    committed: tuple[bytes, ...]
    located: Mapping[bytes, tuple[int, int]]
    """value -> (partition, offset) for every data record in the log, committed or not."""
    stable: Mapping[int, int]
    """partition -> last stable offset."""


@dataclass
class History:
    """An append-only history; ``invoke`` returns the index to complete."""

    ops: list[Op] = field(default_factory=list)

    def invoke(self, process: str, f: str, value: Any = None) -> None:
        self.ops.append(Op(len(self.ops), process, "invoke", f, value))

    def complete(self, process: str, type_: str, f: str, value: Any = None) -> None:
        if type_ not in {"ok", "fail", "info"}:
            raise ValueError(f"completion type must be ok, fail or info, got {type_!r}")
        self.ops.append(Op(len(self.ops), process, type_, f, value))

    def render(self, last: int = 40) -> str:
        """The last ``last`` operations, one per line, for a failure report."""
        lines = [f"{op.index:4d} {op.process:>12} {op.type:6} {op.f} {op.value!r}" for op in self.ops[-last:]]
        return "\n".join(lines)


@dataclass
class WrittenValue:
    process: str
    subtask: int
    checkpoint: int | None = None
    failed: bool = False
    superseded: bool = False
    """Written by an attempt after a newer attempt had recovered: a zombie's write, idle before or not."""
    covered: bool = False
    """A completed checkpoint of the same attempt is at or after this value's barrier."""


def check_sink_history(ops: Iterable[Op], guarantee: Guarantee = Guarantee.EXACTLY_ONCE) -> list[Violation]:
    """Every anomaly of the history that ``guarantee`` does not allow, once per (anomaly, value).

    Operations understood: ``write`` (value: (value, subtask)), ``barrier`` (checkpoint id),
    ``complete`` ((checkpoint id, attempt): covers that attempt's barriers up to it), ``notify``
    (checkpoint id), ``recover`` (invoke value: (log high watermarks per partition before
    recovery, the new parallelism); ok value: restored checkpoint id), ``fault`` (a nemesis step),
    ``read`` (ok value: ``Observation``). Once an attempt has recovered, a write by any other
    attempt is a zombie's, whether or not that attempt did anything before.

    Each read is judged by the ``DETECTORS``; of the anomalies of one family about one value (or
    partition) only the first is kept.
    """
    found: dict[tuple[str, bytes | int], Violation] = {}
    for read in reads_of(ops):
        for detect in DETECTORS:
            for anomaly in detect(read):
                if anomaly.kind not in ALLOWED[guarantee]:
                    violation = Violation(
                        ANOMALY_REQUIREMENT[anomaly.kind], anomaly.kind, anomaly.evidence, data=anomaly.data
                    )
                    found.setdefault((_FAMILY.get(anomaly.kind, "visible"), anomaly.key), violation)
    return sorted(found.values())


@dataclass(frozen=True)
class Read:
    """One read of the history with what the history had established by then."""

    index: int
    seen: Observation
    values: Mapping[bytes, WrittenValue]
    """Every value written so far, as of this read."""
    crashed: frozenset[str]
    durable_upto: int
    """The newest checkpoint a notification or a recovery reported committed ..."""
    durable_by: str
    """... and which of the two (``notify``, ``recover``; ``start`` before either)."""
    watermarks_at_recover: Mapping[int, int]
    parallelism_at_recover: int
    hidden_before_recovery: frozenset[bytes]
    """Values the previous read saw hidden when the only operation since is a recovery: any of them visible
    now, that recovery made visible. Without such a read, when a value became visible is not known."""
    faulted: bool


class Anomaly(NamedTuple):
    """What a detector found: its kind (an ``ANOMALY_REQUIREMENT`` key), the value or partition it is about."""

    kind: str
    key: bytes | int
    evidence: str
    data: Mapping[str, Any]


def reads_of(ops: Iterable[Op]) -> Iterator[Read]:
    """Replay the history (see ``check_sink_history``), yielding each completed read with its state."""
    values: dict[bytes, WrittenValue] = {}
    open_values: dict[str, list[bytes]] = {}
    durable_upto = 0
    durable_by = "start"
    watermarks_at_recover: Mapping[int, int] = {}
    watermarks_pending: Mapping[int, int] = {}
    parallelism_at_recover = 0
    parallelism_pending = 0
    recovered_by: str | None = None
    crashed: set[str] = set()
    attempts: set[str] = set()
    faulted = False
    hidden_at_last_read: frozenset[bytes] = frozenset()
    since_last_read: list[str] = []
    for op in ops:
        if op.f in {"write", "barrier", "notify", "recover"}:
            attempts.add(op.process)
        if op.type == "invoke":
            if op.f == "recover":
                watermarks_pending, parallelism_pending = op.value
            continue
        if op.f == "write":
            value, subtask = op.value
            superseded = recovered_by is not None and op.process != recovered_by
            values[value] = WrittenValue(op.process, subtask, failed=op.type == "fail", superseded=superseded)
            if op.type == "ok":
                open_values.setdefault(op.process, []).append(value)
        elif op.f == "barrier" and op.type == "ok":
            for value in open_values.pop(op.process, []):
                values[value].checkpoint = op.value
        elif op.f == "complete" and op.type == "ok":
            cid, attempt = op.value
            for info in values.values():
                if info.process == attempt and info.checkpoint is not None and info.checkpoint <= cid:
                    info.covered = True
        elif op.f in {"notify", "recover"} and op.type == "ok":
            if op.value >= durable_upto:
                durable_upto, durable_by = op.value, op.f
            if op.f == "recover":
                watermarks_at_recover, parallelism_at_recover = watermarks_pending, parallelism_pending
                recovered_by = op.process
                crashed |= attempts - {op.process}
                open_values.clear()
        elif op.f == "fault" and op.type == "ok":
            faulted = True
        elif op.f == "read" and op.type == "ok":
            yield Read(
                op.index,
                op.value,
                {v: replace(info) for v, info in values.items()},
                frozenset(crashed),
                durable_upto,
                durable_by,
                watermarks_at_recover,
                parallelism_at_recover,
                hidden_at_last_read if since_last_read == ["recover"] else frozenset(),
                faulted,
            )
            hidden_at_last_read = frozenset(values) - frozenset(op.value.committed)
            since_last_read = []
            continue
        since_last_read.append(op.f)


def duplicates(read: Read) -> list[Anomaly]:
    """``duplicate``: a value visible more than once."""
    return [
        Anomaly(
            "duplicate",
            value,
            f"read #{read.index}: {value!r} visible {n} times",
            {"read": read.index, "value": value_field(value), "times": n},
        )
        for value, n in Counter(read.seen.committed).items()
        if n > 1
    ]


def visible_too_early(read: Read) -> list[Anomaly]:
    """A value visible that no completed checkpoint of a live attempt covers, named by why it should not be:
    a recovery committed it (``recovery-commits-uncheckpointed``), a zombie or a failed write wrote it
    (``zombie-write``), no barrier covers it (``uncommitted-read``), its attempt crashed before its
    checkpoint completed (``aborted-read``) or that checkpoint has not completed (``precommitted-read``)."""
    out = []
    for value in Counter(read.seen.committed):
        info = read.values.get(value)
        if info is None or (info.covered and not info.failed and not info.superseded):
            continue
        if value in read.hidden_before_recovery:
            anomaly, why = "recovery-commits-uncheckpointed", "became visible when a recovery committed it"
        elif info.failed or info.superseded:
            anomaly = "zombie-write"
            why = f"written by {info.process} " + (
                "in a failed write" if info.failed else "after a newer attempt recovered"
            )
        elif info.checkpoint is None:
            anomaly, why = "uncommitted-read", "no barrier covered it yet"
        elif info.process in read.crashed:
            anomaly, why = (
                "aborted-read",
                f"its checkpoint {info.checkpoint} never completed and {info.process} crashed",
            )
        else:
            anomaly, why = "precommitted-read", f"its checkpoint {info.checkpoint} has not completed"
        facts = {
            "read": read.index,
            "value": value_field(value),
            "process": info.process,
            "subtask": info.subtask,
            "checkpoint": info.checkpoint,
        }
        out.append(Anomaly(anomaly, value, f"read #{read.index}: {value!r} is visible, yet {why}", facts))
    return out


def open_transactions(read: Read) -> list[Anomaly]:
    """A partition whose last stable offset is below its high watermark before the last recovery: a
    transaction of an earlier attempt is still open (``lingering-transaction``), or one of a subtask beyond
    the new parallelism (``leftover-transaction``)."""
    out = []
    for partition, watermark in sorted(read.watermarks_at_recover.items()):
        stable = read.seen.stable.get(partition, watermark)
        if stable >= watermark:
            continue
        # The record at the last stable offset opened the transaction that pins it: whose was it?
        located = read.seen.located.items()
        holder = next((read.values.get(v) for v, where in located if where == (partition, stable)), None)
        if holder is not None and holder.subtask >= read.parallelism_at_recover:
            anomaly, whose = "leftover-transaction", f"subtask {holder.subtask}, beyond the new parallelism,"
        else:
            anomaly, whose = "lingering-transaction", "an earlier attempt"
        out.append(
            Anomaly(
                anomaly,
                partition,
                f"read #{read.index}: partition {partition} last stable offset {stable} < high watermark "
                f"{watermark} before recovery at parallelism {read.parallelism_at_recover}: a transaction of "
                f"{whose} is still open",
                {
                    "read": read.index,
                    "partition": partition,
                    "stable": stable,
                    "high_watermark": watermark,
                    "parallelism": read.parallelism_at_recover,
                    "subtask": None if holder is None else holder.subtask,
                },
            )
        )
    return out


def lost_writes(read: Read) -> list[Anomaly]:
    """A value of a completed checkpoint, at or before the one reported committed, that is not visible:
    ``lost-write``; ``notification-lost-write`` when a notification reported it; ``swallowed-error`` after
    a fault. One hidden behind an open transaction after a recovery is ``open_transactions``' to name."""
    out = []
    visible = set(read.seen.committed)
    for value, info in sorted(read.values.items()):
        if (
            info.failed
            or info.checkpoint is None
            or not info.covered
            or info.checkpoint > read.durable_upto
            or value in visible
        ):
            continue
        where = read.seen.located.get(value)
        hidden = where is not None and where[1] >= read.seen.stable.get(where[0], 0)
        if hidden and read.watermarks_at_recover:
            continue  # reported as lingering-transaction
        if read.faulted:
            anomaly = "swallowed-error"
        else:
            anomaly = "notification-lost-write" if read.durable_by == "notify" else "lost-write"
        out.append(
            Anomaly(
                anomaly,
                value,
                f"read #{read.index}: {value!r} of completed checkpoint {info.checkpoint} is not visible, "
                f"yet {read.durable_by} of checkpoint {read.durable_upto} reported success",
                {
                    "read": read.index,
                    "value": value_field(value),
                    "process": info.process,
                    "subtask": info.subtask,
                    "checkpoint": info.checkpoint,
                    "durable_checkpoint": read.durable_upto,
                    "durable_by": read.durable_by,
                },
            )
        )
    return out


DETECTORS: tuple[Callable[[Read], list[Anomaly]], ...] = (duplicates, visible_too_early, open_transactions, lost_writes)
"""Each judges one read for one family of anomalies; ``check_sink_history`` runs them in this order."""
