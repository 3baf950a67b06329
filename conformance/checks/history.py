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
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

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
class _Value:
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
    """
    values: dict[bytes, _Value] = {}
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
    last_action = "start"
    found: dict[tuple[str, bytes | int], Violation] = {}

    def report(anomaly: str, key: bytes | int, evidence: str, data: Mapping[str, Any]) -> None:
        """Keep the first anomaly of each kind of trouble per value (or partition)."""
        if anomaly not in ALLOWED[guarantee]:
            violation = Violation(ANOMALY_REQUIREMENT[anomaly], anomaly, evidence, data=data)
            found.setdefault((_FAMILY.get(anomaly, "visible"), key), violation)

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
            values[value] = _Value(op.process, subtask, failed=op.type == "fail", superseded=superseded)
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
            context = _Context(
                crashed, durable_upto, durable_by, watermarks_at_recover, parallelism_at_recover, last_action, faulted
            )
            _check_read(op, op.value, values, context, report)
            continue
        last_action = op.f
    return sorted(found.values())


@dataclass(frozen=True)
class _Context:
    """What the history has established by the time of a read."""

    crashed: set[str]
    durable_upto: int
    durable_by: str
    watermarks_at_recover: Mapping[int, int]
    parallelism_at_recover: int
    last_action: str
    faulted: bool


def _check_read(
    op: Op,
    seen: Observation,
    values: Mapping[bytes, _Value],
    ctx: _Context,
    report: Callable[[str, bytes | int, str, Mapping[str, Any]], None],
) -> None:
    counts = Counter(seen.committed)
    for value, n in counts.items():
        if n > 1:
            facts = {"read": op.index, "value": value_field(value), "times": n}
            report("duplicate", value, f"read #{op.index}: {value!r} visible {n} times", facts)
        info = values.get(value)
        if info is None:
            continue
        if info.covered and not info.failed and not info.superseded:
            continue
        if ctx.last_action == "recover":
            anomaly, why = "recovery-commits-uncheckpointed", "became visible when a recovery committed it"
        elif info.failed or info.superseded:
            anomaly = "zombie-write"
            why = f"written by {info.process} " + (
                "in a failed write" if info.failed else "after a newer attempt recovered"
            )
        elif info.checkpoint is None:
            anomaly, why = "uncommitted-read", "no barrier covered it yet"
        elif info.process in ctx.crashed:
            anomaly, why = (
                "aborted-read",
                f"its checkpoint {info.checkpoint} never completed and {info.process} crashed",
            )
        else:
            anomaly, why = "precommitted-read", f"its checkpoint {info.checkpoint} has not completed"
        facts = {
            "read": op.index,
            "value": value_field(value),
            "process": info.process,
            "subtask": info.subtask,
            "checkpoint": info.checkpoint,
        }
        report(anomaly, value, f"read #{op.index}: {value!r} is visible, yet {why}", facts)
    for partition, watermark in sorted(ctx.watermarks_at_recover.items()):
        stable = seen.stable.get(partition, watermark)
        if stable < watermark:
            # The record at the last stable offset opened the transaction that pins it: whose was it?
            holder = next((values.get(v) for v, where in seen.located.items() if where == (partition, stable)), None)
            if holder is not None and holder.subtask >= ctx.parallelism_at_recover:
                anomaly, whose = "leftover-transaction", f"subtask {holder.subtask}, beyond the new parallelism,"
            else:
                anomaly, whose = "lingering-transaction", "an earlier attempt"
            report(
                anomaly,
                partition,
                f"read #{op.index}: partition {partition} last stable offset {stable} < high watermark {watermark} "
                f"before recovery at parallelism {ctx.parallelism_at_recover}: a transaction of {whose} is still open",
                {
                    "read": op.index,
                    "partition": partition,
                    "stable": stable,
                    "high_watermark": watermark,
                    "parallelism": ctx.parallelism_at_recover,
                    "subtask": None if holder is None else holder.subtask,
                },
            )
    visible = set(counts)
    for value, info in sorted(values.items()):
        if (
            not info.failed
            and info.checkpoint is not None
            and info.covered
            and info.checkpoint <= ctx.durable_upto
            and value not in visible
        ):
            where = seen.located.get(value)
            hidden = where is not None and where[1] >= seen.stable.get(where[0], 0)
            if hidden and ctx.watermarks_at_recover:
                continue  # reported as lingering-transaction
            if ctx.faulted:
                anomaly = "swallowed-error"
            else:
                anomaly = "notification-lost-write" if ctx.durable_by == "notify" else "lost-write"
            report(
                anomaly,
                value,
                f"read #{op.index}: {value!r} of completed checkpoint {info.checkpoint} is not visible, "
                f"yet {ctx.durable_by} of checkpoint {ctx.durable_upto} reported success",
                {
                    "read": op.index,
                    "value": value_field(value),
                    "process": info.process,
                    "subtask": info.subtask,
                    "checkpoint": info.checkpoint,
                    "durable_checkpoint": ctx.durable_upto,
                    "durable_by": ctx.durable_by,
                },
            )
