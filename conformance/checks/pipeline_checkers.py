"""Checkers of the pipeline level: pure functions over what a Spark query read and wrote.

The Spark harness (``kconform.conformance.spark.pipeline``) records each batch's rows with the task
that read them (``ReadRecord``), and the sink topic read back from the broker; these functions judge
those recordings and return ``Violation``s, as ``kconform.conformance.checks.checkers`` does for the
protocol level. They never touch Spark or a broker.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Final

from ...reference_impl.ports import Record
from ...reference_impl.types import TopicPartition
from .checkers import (
    Violation,
    check_formula,
    check_order,
    check_plan,
    check_single_owner,
    names_partition,
    offsets_field,
    tp_fields,
    value_field,
)


@dataclass(frozen=True, slots=True)
class ReadRecord:
    """One source record as the query saw it, with the Spark task (input partition) that read it."""

    tp: TopicPartition
    offset: int
    value: bytes | None
    task: int


READ_BEFORE_START: Final = "read-before-start"
"""``check_read_once``'s kind for an offset below its partition's start read once: the reader began before the
place its start put it (a start from a group's offsets or at the end read from an earlier offset), so it delivered
what that start skips; an offset read twice, below its start or not, is ``offset-duplicate``."""


def check_read_once(
    records: Iterable[ReadRecord],
    ends: Mapping[TopicPartition, int],
    requirement: str = "RESTORE-003",
    starts: Mapping[TopicPartition, int] | None = None,
) -> list[Violation]:
    """Every offset below each end was read exactly once, nothing else: RESTORE-003 end to end, or
    ``requirement`` when a scenario checks a more specific promise (DISC-005: a new topic from its start).
    ``starts``: a partition's first offset to read where it is not 0 (a start from a group's offsets, or at a
    partition's end): an offset below it read once is ``READ_BEFORE_START`` (a read of something the start skips),
    read more often ``offset-duplicate``."""
    records = list(records)
    seen = Counter((r.tp, r.offset) for r in records)
    tasks: dict[tuple[TopicPartition, int], set[int]] = defaultdict(set)
    for r in records:
        tasks[(r.tp, r.offset)].add(r.task)
    first = starts or {}
    expected = Counter((tp, o) for tp, end in ends.items() for o in range(first.get(tp, 0), end))
    out = [
        Violation(
            requirement, "offset-gap", f"{tp} offset {o} never read", data=tp_fields(tp) | {"offset": o, "times": 0}
        )
        for tp, o in sorted(expected - seen)
    ]
    out += [
        Violation(
            requirement,
            READ_BEFORE_START if seen[(tp, o)] == 1 and o < first.get(tp, 0) else "offset-duplicate",
            f"{tp} offset {o} read {seen[(tp, o)]} times"
            + (f", below its start {first[tp]}" if o < first.get(tp, 0) else ""),
            data=tp_fields(tp) | {"offset": o, "times": seen[(tp, o)], "tasks": sorted(tasks[(tp, o)])},
        )
        for tp, o in sorted(seen)
        if seen[(tp, o)] > expected[(tp, o)]
    ]
    return out


def ends_read(records: Iterable[ReadRecord]) -> dict[TopicPartition, int]:
    """Each partition read, with one past the highest offset read in it: what a query that failed before its end
    is judged to (its reads below that, once each), never the ends it did not get to, which it did not lose."""
    ends: dict[TopicPartition, int] = {}
    for r in records:
        ends[r.tp] = max(ends.get(r.tp, 0), r.offset + 1)
    return ends


def check_bounded_read(
    reads: Iterable[ReadRecord],
    committed: Mapping[TopicPartition, Sequence[int]],
    stopping: Mapping[TopicPartition, int],
    idle_ms: int | None,
    shown: str = "committed",
) -> list[Violation]:
    """RESTORE-010: a bounded read up to ``stopping`` (each partition's end when it started) reads each record of
    ``committed`` (partition -> the offsets a read_committed consumer sees there) below it once, nothing else,
    and ends, also where the last offset below it is a control marker that no read returns. ``idle_ms`` is
    ``None`` for a read that ended; for one given up on, how long it had run since its last read (its caller
    gives it at least its bound to end). ``shown``: what the evidence calls those records (a read_uncommitted
    read's are every data record, ``"data"``)."""
    reads = list(reads)
    want = {tp: [o for o in offsets if o < stopping[tp]] for tp, offsets in committed.items() if tp in stopping}
    expected = {(tp, o) for tp, offsets in want.items() for o in offsets}
    seen = Counter((r.tp, r.offset) for r in reads)
    out = [
        Violation(
            "RESTORE-010",
            "record-missed",
            f"{tp} {shown} offset {o}, below the stopping offset {stopping[tp]}, never read",
            data=tp_fields(tp) | {"offset": o, "times": 0, "end": stopping[tp]},
        )
        for tp, o in sorted(expected - set(seen))
    ]
    out += [
        Violation(
            "RESTORE-010",
            "record-duplicate" if key in expected else "unexpected-read",
            f"{key[0]} offset {key[1]} read {times} times"
            + ("" if key in expected else f" (not a {shown} record below the stopping offset)"),
            data=tp_fields(key[0]) | {"offset": key[1], "times": times} | _end_field(stopping, key[0]),
        )
        for key, times in sorted(seen.items())
        if times > (1 if key in expected else 0)
    ]
    if idle_ms is not None:
        last = {tp: max(offsets, default=None) for tp, offsets in want.items()}
        complete = expected <= set(seen)
        ends = ", ".join(f"{tp} last record {last.get(tp)} stop {end}" for tp, end in sorted(stopping.items()))
        out.append(
            Violation(
                "RESTORE-010",
                "unfinished",
                f"the bounded read was still running {idle_ms} ms after its last read, having read "
                f"{'every' if complete else 'not every'} {shown} record below its stopping offsets "
                f"({len(reads)} reads; {ends})",
                data={
                    "idle_ms": idle_ms,
                    "complete": complete,
                    "record_count": len(reads),
                    "stopping": offsets_field(stopping),
                    "last_records": offsets_field({tp: o for tp, o in last.items() if o is not None}),
                },
            )
        )
    return out


def _end_field(ends: Mapping[TopicPartition, int], tp: TopicPartition) -> dict[str, int]:
    return {"end": ends[tp]} if tp in ends else {}


def check_discovered(
    records: Iterable[ReadRecord],
    added: Mapping[TopicPartition, int],
    requirement: str = "DISC-005",
    unfound: str = "DISC-009",
    listed: Collection[TopicPartition] | None = None,
) -> list[Violation]:
    """``unfound`` then ``requirement``: each partition in ``added`` (found while the query ran, with
    records produced before and after the query had caught up) was read at all, and then read once
    from its first record. Nothing read of it at all is ``never-discovered`` (DISC-009 for a partition of a
    subscribed topic, DISC-002 for one of a newly matching topic), not a gap; unless the job's discoveries are
    known (``listed``: every partition they found) and found it: then it was started past its records,
    ``requirement``'s ``never-read``."""
    records = list(records)
    seen = {r.tp for r in records}
    out = [
        Violation(
            requirement,
            "never-read",
            f"{tp}: none of its {end} records read, though a discovery found it: started past them",
            data=tp_fields(tp) | {"end": end},
        )
        if listed is not None and tp in listed
        else Violation(
            unfound,
            "never-discovered",
            f"{tp}: none of its {end} records read; discovery never found it",
            data=tp_fields(tp) | {"end": end},
        )
        for tp, end in sorted(added.items())
        if end > 0 and tp not in seen
    ]
    found = {tp: end for tp, end in added.items() if tp in seen}
    return out + check_read_once([r for r in records if r.tp in found], found, requirement=requirement)


def task_claims(records: Iterable[ReadRecord]) -> dict[TopicPartition, list[int]]:
    """Partition -> the tasks that read it."""
    claims: dict[TopicPartition, set[int]] = defaultdict(set)
    for r in records:
        claims[r.tp].add(r.task)
    return {tp: sorted(tasks) for tp, tasks in claims.items()}


def check_single_reader(
    batch: Iterable[ReadRecord], parallelism: int, requirement: str = "RESTORE-002"
) -> list[Violation]:
    """Within one batch each partition is read by one task, and only tasks ``0..parallelism-1`` read."""
    return check_single_owner(task_claims(batch), parallelism, requirement)


def check_offsets_read_by_one_task(batch: Iterable[ReadRecord]) -> list[Violation]:
    """ASSIGN-007 as a black box sees it: within one batch no offset is read by two tasks. A connector may
    split a partition into offset ranges read by several tasks (Spark's does); the ranges must not overlap.
    A retried attempt is the same task, so its re-read is not a second reader."""
    readers: dict[tuple[TopicPartition, int], set[int]] = defaultdict(set)
    for r in batch:
        readers[(r.tp, r.offset)].add(r.task)
    overlapping: dict[TopicPartition, list[int]] = defaultdict(list)
    tasks: dict[TopicPartition, set[int]] = defaultdict(set)
    for (tp, offset), by in sorted(readers.items()):
        if len(by) > 1:
            overlapping[tp].append(offset)
            tasks[tp] |= by
    return [
        Violation(
            "ASSIGN-007",
            "double-read",
            f"{tp}: offsets {offsets[:10]}{' ...' if len(offsets) > 10 else ''} read by tasks {sorted(tasks[tp])}",
            data=tp_fields(tp) | {"offsets": offsets, "tasks": sorted(tasks[tp])},
        )
        for tp, offsets in sorted(overlapping.items())
    ]


def check_pattern_reads(read: Iterable[TopicPartition], pattern: str) -> list[Violation]:
    """DISC-002 on the partitions a query subscribed by ``pattern`` read: only those of topics the pattern
    matches in full (Java's ``Matcher.matches``, as Spark's subscribePattern tests each topic)."""
    return [
        Violation(
            "DISC-002",
            "unsubscribed-read",
            f"{tp} does not match {pattern!r}",
            data=tp_fields(tp) | {"pattern": pattern},
        )
        for tp in sorted(set(read))
        if re.fullmatch(pattern, tp.topic) is None
    ]


def check_listed_reads(read: Iterable[TopicPartition], topics: Iterable[str]) -> list[Violation]:
    """DISC-001 on the partitions a query subscribed to a fixed list read: only those of the listed topics, by exact
    name (a near miss of one, another case or a longer name, is another topic)."""
    listed = sorted(set(topics))
    return [
        Violation(
            "DISC-001", "unsubscribed-read", f"{tp} is not a listed topic", data=tp_fields(tp) | {"topics": listed}
        )
        for tp in sorted(set(read))
        if tp.topic not in listed
    ]


def check_task_plan(records: Iterable[ReadRecord], parallelism: int) -> list[Violation]:
    """ASSIGN-001/002/004 on what Spark tasks read: task i holds exactly Flink subtask i's partitions, one task per
    partition (Flink's model: ASSIGN-001 ``double-assignment`` when a batch splits a partition among tasks; that no
    offset is read twice is ASSIGN-007's, ``check_offsets_read_by_one_task``)."""
    claims = task_claims(records)
    owners = {tp: tasks[0] for tp, tasks in claims.items()}
    out = check_single_owner(claims, parallelism, requirement="ASSIGN-001")
    return out + check_plan(owners, parallelism) + check_formula(owners, parallelism)


def check_output(expected: Counter[bytes | None], seen: Counter[bytes | None], exactly_once: bool) -> list[Violation]:
    """COMMIT-011 end to end: every input value is visible once (at-least-once: at least once)."""
    out = [
        Violation(
            "COMMIT-011",
            "lost-write",
            f"{v!r} missing",
            data={"value": value_field(v), "times": seen[v], "written": expected[v]},
        )
        for v in sorted((expected - seen).keys(), key=repr)
    ]
    if exactly_once:
        out += [
            Violation(
                "COMMIT-011",
                "duplicate",
                f"{v!r} visible {n} times, written {expected[v]}",
                data={"value": value_field(v), "times": n, "written": expected[v]},
            )
            for v, n in sorted(seen.items(), key=repr)
            if n > expected[v]
        ]
    return out


def check_unblocked(
    stable: Mapping[TopicPartition, int], ends: Mapping[TopicPartition, int], when: str, requirement: str = "COMMIT-004"
) -> list[Violation]:
    """COMMIT-004: each partition's last stable offset has reached ``ends``, the end of its log when a driver
    was killed inside a transaction: that transaction no longer blocks read_committed readers. COMMIT-017 asks
    the same of a restart under another transactional-id prefix (``requirement``)."""
    return [
        Violation(
            requirement,
            "lingering-transaction",
            f"{tp}: last stable offset {stable.get(tp, 0)} is still below {end}, the end of the log when the "
            f"driver was killed, {when}: read_committed readers are blocked",
            data=tp_fields(tp) | {"stable": stable.get(tp, 0), "end": end, "when": when},
        )
        for tp, end in sorted(ends.items())
        if stable.get(tp, 0) < end
    ]


def check_foreign_left_open(
    left: Mapping[TopicPartition, int], stable: Mapping[TopicPartition, int], ends: Mapping[TopicPartition, int],
    when: str,
) -> list[Violation]:  # fmt: skip
    """COMMIT-016: while only another query ran and recovered (``when``), a partition a killed driver's open
    transaction held below its end (``ends``) still has the last stable offset the kill left (``left``): only
    the killed query's own restart may end that transaction, whatever the other's prefix has in common with it."""
    return [
        Violation(
            "COMMIT-016",
            "foreign-transaction-aborted",
            f"{tp}: last stable offset moved from {held} to {stable.get(tp, 0)} (end {end}) {when}: another query's "
            "sink ended a transaction this query's killed driver left open",
            data=tp_fields(tp) | {"stable": stable.get(tp, 0), "left": held, "end": end, "when": when},
        )
        for tp, end in sorted(ends.items())
        if (held := left.get(tp, 0)) < end and stable.get(tp, 0) > held
    ]


def check_closed_at_stop(
    stable: Mapping[TopicPartition, int], ends: Mapping[TopicPartition, int], waited_s: float
) -> list[Violation]:
    """COMMIT-020 on a query stopped while its sink's transactions held records, and not restarted: each partition's
    last stable offset has reached ``ends`` (the log's end at the stop) within ``waited_s``, far below the
    transaction timeout, so no transaction of the stopped query is left to block read_committed readers."""
    return [
        Violation(
            "COMMIT-020",
            "open-after-stop",
            f"{tp}: last stable offset {stable.get(tp, 0)} is still below {end}, the end of the log when the query "
            f"stopped, {waited_s:.0f} s after the stop: a transaction the stopped query began is still open",
            data=tp_fields(tp) | {"stable": stable.get(tp, 0), "end": end, "waited_s": round(waited_s, 1)},
        )
        for tp, end in sorted(ends.items())
        if stable.get(tp, 0) < end
    ]


ERROR_SHOWN: Final = 2000
"""Characters of a failed query's error (its end, where the Python worker's exception is) kept as evidence."""


QUERY_PLAN: Final = "=== Streaming Query ==="
"""Where Spark appends the query's description to its error: the plan there may list the sink's options, the
``kafka.transaction.timeout.ms`` a scenario set among them, which names nothing about the failure."""


def check_timed_out_task(error: str | None, timeout_ms: int, visible: int) -> list[Violation]:
    """COMMIT-021 on a query each of whose sink tasks writes for longer than its ``transaction.timeout.ms``
    (``timeout_ms``): the broker aborts every task's transaction, so the query must fail (``error``: its text)
    with an error that names the setting (before the query's plan), never report the batch written.
    ``visible``: records a read_committed reader of the sink topic saw after the run, evidence of what a run
    that went on made of the aborts."""
    shown = None if error is None else error[-ERROR_SHOWN:]
    facts = {"timeout_ms": timeout_ms, "error": shown, "record_count": visible}
    if error is None:
        where = (
            f"the query ended without an error though every sink task's transaction outlived transaction.timeout.ms "
            f"= {timeout_ms} ms; {visible} records visible read_committed"
        )
        return [Violation("COMMIT-021", "timeout-swallowed", where, data=facts)]
    if "transaction.timeout.ms" in error.split(QUERY_PLAN)[0]:
        return []
    where = f"the query failed without naming transaction.timeout.ms: {shown}"
    return [Violation("COMMIT-026", "timeout-unnamed", where, data=facts)]


def write_spans_ms(records: Iterable[Record], tag: str) -> dict[int, int]:
    """Source partition -> how long the sink took over its records: the last timestamp less the first of every
    record of the sink topic (aborted ones too) whose value came from that source partition (``tag-P-I``, as
    ``fill`` writes). Records without a timestamp are left out."""
    stamps: defaultdict[int, list[int]] = defaultdict(list)
    pattern = re.compile(rf"{re.escape(tag)}-(\d+)-")
    for r in records:
        found = pattern.match((r.value or b"").decode("utf-8", "replace"))
        if found and r.timestamp_ms is not None:
            stamps[int(found.group(1))].append(r.timestamp_ms)
    return {p: max(t) - min(t) for p, t in stamps.items()}


def unslowed_sink(spans_ms: Mapping[int, int], partitions: int, timeout_ms: int) -> str | None:
    """Why the slow-down of a sink's tasks (``SLOW_SINK``) did not happen, or ``None`` when it did: each of the
    ``partitions`` source partitions' records written over at least half of ``transaction.timeout.ms`` (a slowed
    task is aborted at the timeout, so its span may end short of it; an unslowed one writes its records in
    milliseconds). Judging COMMIT-021 on a run without the slow-down would blame the sink for what the suite did
    not do."""
    short = {p: spans_ms.get(p) for p in range(partitions) if spans_ms.get(p, 0) < timeout_ms // 2}
    if not short:
        return None
    shown = ", ".join(
        f"partition {p}: {'no timestamped record' if ms is None else f'{ms} ms'}" for p, ms in short.items()
    )
    return (
        f"the slow-down did not take effect: the sink wrote each source partition's records within less than half "
        f"of transaction.timeout.ms = {timeout_ms} ms ({shown}), so no task outlived its transaction. The suite slows "
        "the sink through SinkSpec.client_settings (linger.ms, queue.buffering.max.messages); a connector that "
        "overrides them defeats the injection: pass client_settings to the producer unchanged"
    )


def check_rewritten(failed: Counter[bytes | None], seen: Counter[bytes | None], cause: str) -> list[Violation]:
    """COMMIT-007: every record whose write the broker failed (``cause`` says how: a transaction it timed out,
    a write it refused) is visible in the end, i.e. the sink surfaced the error and wrote the record again
    instead of taking the failed write for a done one."""
    return [
        Violation(
            "COMMIT-007",
            "lost-write",
            f"{v!r} {cause}, never written again",
            data={"value": value_field(v), "times": seen[v], "cause": cause},
        )
        for v in sorted((failed - seen).keys(), key=repr)
    ]


@dataclass(frozen=True, slots=True)
class TaskAttempt:
    """One attempt of a Spark task as Spark's status store recorded it (``kconform.conformance.spark.speculation``)."""

    stage: int
    task: int
    """The task's index in its stage (its input partition)."""
    attempt: int
    speculative: bool
    host: str
    status: str
    """``SUCCESS``, ``FAILED``, ``KILLED`` or ``RUNNING``."""

    def fields(self) -> dict[str, object]:
        return {
            "stage": self.stage, "task": self.task, "attempt": self.attempt, "speculative": self.speculative,
            "host": self.host, "status": self.status,
        }  # fmt: skip


def overlapping_attempts(attempts: Iterable[TaskAttempt]) -> tuple[TaskAttempt, TaskAttempt] | None:
    """The first original attempt with a speculative copy on another host, and that copy: two live attempts of
    one task; ``None`` when Spark ran no copy, so a run shows no zombie."""
    by_task = defaultdict(list)
    for attempt in attempts:
        by_task[(attempt.stage, attempt.task)].append(attempt)
    for key in sorted(by_task):
        runs = by_task[key]
        originals = [a for a in runs if not a.speculative]
        copies = [a for a in runs if a.speculative and all(a.host != o.host for o in originals)]
        if originals and copies:
            return min(originals, key=lambda a: a.attempt), min(copies, key=lambda a: a.attempt)
    return None


def check_zombie_fenced(
    original: TaskAttempt,
    copy: TaskAttempt,
    stable: Mapping[TopicPartition, int],
    ends: Mapping[TopicPartition, int],
    expected: Counter[bytes | None],
    seen: Counter[bytes | None],
) -> list[Violation]:
    """COMMIT-006 on a query whose sink task ran twice at once: ``original``, held after writing some rows, and
    ``copy``, Spark's speculative attempt on another host, which initialised the task's transactional id while
    the original's transaction was open. After the query, nothing of the original may hold or show: each
    partition's last stable offset (``stable``) has reached the log's end (``ends``), so no transaction of the
    superseded attempt still blocks read_committed readers, and no input value (``expected``, as written to
    the source) is visible (``seen``, read_committed) more often than it was written."""
    attempts = {"original": original.fields(), "copy": copy.fields()}
    open_left = [
        Violation(
            "COMMIT-006",
            "zombie-transaction-open",
            f"{tp}: last stable offset {stable.get(tp, 0)} is below {end}, the end of the log, after the query ended: "
            f"a transaction of task {original.task}'s attempt {original.attempt} (on {original.host}) still holds "
            f"records, though its copy, attempt {copy.attempt} on {copy.host}, ran and committed: the copy did "
            "not fence it",
            data=tp_fields(tp) | {"stable": stable.get(tp, 0), "end": end, "attempts": attempts},
        )
        for tp, end in sorted(ends.items())
        if stable.get(tp, 0) < end
    ]
    twice = [
        Violation(
            "COMMIT-006",
            "zombie-write",
            f"{v!r} visible {n} times, written {expected[v]}: task {original.task} ran twice at once (attempt "
            f"{original.attempt} on {original.host}, its copy {copy.attempt} on {copy.host}) and both committed",
            data={"value": value_field(v), "times": n, "written": expected[v], "attempts": attempts},
        )
        for v, n in sorted(seen.items(), key=repr)
        if v in expected and n > expected[v]
    ]
    return open_left + twice


def check_sink_output(
    produced: Mapping[int, Sequence[Record]],
    written: Mapping[int, Sequence[Record]],
    exactly_once: bool,
    held: Mapping[int, Sequence[Record]] | None = None,
    stable: Mapping[int, int] | None = None,
) -> list[Violation]:
    """COMMIT-011 and COMMIT-013 over the source topic as written (partition -> records, read_uncommitted)
    and the sink topic as a read_committed consumer sees it (partition -> records in log order).

    A value missing there that the sink wrote inside a transaction still open (``held``: the sink's records at or
    above their partition's last stable offset, ``stable``) is not lost but hidden: COMMIT-004's
    ``hidden-write``, a transaction the connector left open, not COMMIT-011's ``lost-write``."""
    expected = Counter(r.value for records in produced.values() for r in records)
    seen = Counter(r.value for records in written.values() for r in records)
    origin = {r.value: (TopicPartition(r.topic, r.partition), r.offset) for rs in produced.values() for r in rs}
    order = check_order(origin, {p: [r.value for r in records] for p, records in written.items()})
    hidden = {r.value: r for records in (held or {}).values() for r in records}
    missing = expected - seen
    shown = check_output(expected - Counter({v: missing[v] for v in hidden}), seen, exactly_once)
    return check_hidden(missing, hidden, stable or {}) + shown + order


def check_hidden(
    missing: Counter[bytes | None], hidden: Mapping[bytes | None, Record], stable: Mapping[int, int]
) -> list[Violation]:
    """COMMIT-004: each missing value found above its partition's last stable offset, behind an open transaction."""
    return [
        Violation(
            "COMMIT-004",
            "hidden-write",
            f"{v!r} not visible to read_committed readers: written at {r.topic}[{r.partition}]@{r.offset}, inside a "
            f"transaction still open (last stable offset {stable.get(r.partition, 0)})",
            data=tp_fields(TopicPartition(r.topic, r.partition))
            | {"value": value_field(v), "offset": r.offset, "stable": stable.get(r.partition, 0)},
        )
        for v in sorted(missing, key=repr)
        if (r := hidden.get(v)) is not None
    ]


def check_refused_timeout(error: str | None, topic: str, written: int, timeout_ms: int) -> list[Violation]:
    """COMMIT-015 on a query whose sink asked for a transaction timeout (``timeout_ms``) the broker refuses:
    it fails (``error``: the failure's text), naming ``transaction.timeout.ms`` and
    ``transaction.max.timeout.ms``, and committed nothing to ``topic`` (``written``: records visible
    read_committed)."""
    if error is None:
        where = "the query ran to its end without the timeout"
        return [
            Violation(
                "COMMIT-015",
                "refused-timeout-ignored",
                where,
                data={"transaction_timeout_ms": timeout_ms, "error": None},
            )
        ]
    count = {"topic": topic, "record_count": written}
    out = [Violation("COMMIT-015", "written-anyway", f"{written} records committed", data=count)] * bool(written)
    unnamed = [name for name in ("transaction.timeout.ms", "transaction.max.timeout.ms") if name not in error]
    if unnamed:  # what the failure says (COMMIT-024), judged apart from what it committed
        why = f"the error does not name {', '.join(unnamed)}: {last_line_of(error)}"
        out.append(
            Violation("COMMIT-024", "unclear-error", why, data={"error": last_line_of(error), "unnamed": unnamed})
        )
    return out


def last_line_of(text: str) -> str:
    """The last non-empty line of an error (Spark wraps the task's in pages of stack trace)."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1][:300] if lines else ""


@dataclass(frozen=True, slots=True)
class Truncated:
    """A partition as a restarted query found it: its resumed position, its log start after retention or
    DeleteRecords, and its end. Records ``[position, log_start)`` were deleted before the query read them; a position
    past the end (a topic deleted and created again, RESTORE-022) lies beyond everything the log holds."""

    position: int
    log_start: int
    end: int


def check_gone_position(
    error: str | None,
    reads: Iterable[ReadRecord],
    partitions: Mapping[TopicPartition, Truncated],
    loss_accepted: bool,
) -> list[Violation]:
    """RESTORE-015 on a query restarted where some positions were deleted before it read them: it fails
    (``error``: the failure's text) naming each such partition and its position, and its log start (RESTORE-016,
    SHOULD); or, where it
    was told to accept loss (``loss_accepted``), goes on from the log start. Never does it go on silently, and
    it never skips a record that still exists (a reset to the end). ``reads``: what the restarted query read."""
    gone = {tp: t for tp, t in sorted(partitions.items()) if t.log_start > t.position}
    if error is not None:
        return [v for tp, t in gone.items() for v in _loss_unnamed(error, tp, t)]
    out = [
        Violation(
            "RESTORE-015",
            "silent-skip",
            f"{tp}: records [{t.position}, {t.log_start}) were deleted before the query read them, and it went on "
            "without failing although it was not told to accept loss",
            data=tp_fields(tp)
            | {"start": t.position, "log_start": t.log_start, "record_count": t.log_start - t.position},
        )
        for tp, t in gone.items()
        if not loss_accepted
    ]
    for tp, t, skipped in _unread(reads, partitions, lambda tp, t: max(t.position, t.log_start)):
        out.append(
            Violation(
                "RESTORE-015",
                "existing-record-skipped",
                f"{tp}: {len(skipped)} records that still exist (from offset {skipped[0]}, log start "
                f"{t.log_start}, end {t.end}) were never read: the position was reset past them",
                data=tp_fields(tp)
                | {"offsets": skipped[:20], "record_count": len(skipped), "log_start": t.log_start, "end": t.end},
            )
        )
    return out


def _unread(
    reads: Iterable[ReadRecord],
    partitions: Mapping[TopicPartition, Truncated],
    first: Callable[[TopicPartition, Truncated], int],
) -> list[tuple[TopicPartition, Truncated, list[int]]]:
    """Per partition (in order) the offsets in ``[first(tp, t), t.end)`` that ``reads`` never read, where any: what a
    restarted query skipped of the records the log holds (RESTORE-015's and RESTORE-022's skip kinds)."""
    read = {(r.tp, r.offset) for r in reads}
    unread = [
        (tp, t, [o for o in range(first(tp, t), t.end) if (tp, o) not in read]) for tp, t in sorted(partitions.items())
    ]
    return [(tp, t, skipped) for tp, t, skipped in unread if skipped]


def error_line(error: str, tp: TopicPartition) -> str:
    """The line of a failure's text that names ``tp``'s topic (else its last line), cut to 300 characters: the evidence
    a violation about how the failure names ``tp`` shows."""
    return next((line.strip() for line in error.splitlines() if tp.topic in line), last_line_of(error))[:300]


def _loss_unnamed(error: str, tp: TopicPartition, truncated: Truncated) -> list[Violation]:
    """A failure that does not say which partition lost records from where leaves the user to find them
    (RESTORE-015); one that does not name the log start leaves them to ask the broker how many (RESTORE-016)."""
    line = error_line(error, tp)
    facts = tp_fields(tp) | {"start": truncated.position, "log_start": truncated.log_start, "error": line}
    named = {"partition": names_partition(error, tp), "position": _names_number(error, truncated.position)}
    unnamed = [what for what, found in named.items() if not found]
    out = [
        Violation(
            "RESTORE-019",
            "loss-unnamed",
            f"{tp}: the query failed without naming its {' or '.join(unnamed)} (position {truncated.position}): {line}",
            data=facts | {"unnamed": unnamed},
        )
    ] * bool(unnamed)
    if not _names_number(error, truncated.log_start):
        out.append(
            Violation(
                "RESTORE-016",
                "log-start-unnamed",
                f"{tp}: the query failed without naming the log start {truncated.log_start}, so not how many records "
                f"were lost: {line}",
                data=facts,
            )
        )
    return out


def _names_number(text: str, number: int) -> bool:
    """Whether ``text`` has ``number`` as a number of its own (not a digit run inside another, nor a line number)."""
    return re.search(rf"(?<![\d.:]){number}(?!\d|\.\d)", text) is not None


def check_position_past_end(
    error: str | None,
    reads: Iterable[ReadRecord],
    partitions: Mapping[TopicPartition, Truncated],
    loss_accepted: bool,
) -> list[Violation]:
    """RESTORE-022 on a query restarted where some positions lie past their partition's end because the topic was
    deleted and created again (each such partition's log is new to the query, records ``[log_start, end)``): it fails
    (``error``: the failure's text) naming each such partition, its position and its end (RESTORE-023); or, where it
    was told to accept loss (``loss_accepted``), goes on reading every record of the new log. Never does it go on
    silently, and never does it skip a record it has not read: of a new log any, of a partition left alone those
    from its position on. ``reads``: what the restarted query read."""
    past = {tp: t for tp, t in sorted(partitions.items()) if t.position > t.end}
    if error is not None:
        return [v for tp, t in past.items() for v in _past_end_unnamed(error, tp, t)]
    out = [
        Violation(
            "RESTORE-022",
            "silent-past-end",
            f"{tp}: the query resumed at {t.position}, past the partition's end {t.end} (its topic was created "
            "again), and went on without failing although it was not told to accept loss",
            data=tp_fields(tp) | {"start": t.position, "log_start": t.log_start, "end": t.end},
        )
        for tp, t in past.items()
        if not loss_accepted
    ]
    for tp, t, skipped in _unread(
        reads, partitions, lambda tp, t: t.log_start if tp in past else max(t.position, t.log_start)
    ):
        out.append(
            Violation(
                "RESTORE-022",
                "unread-record-skipped",
                f"{tp}: {len(skipped)} records the log holds (from offset {skipped[0]}, log start {t.log_start}, "
                f"end {t.end}, resumed at {t.position}) were never read"
                + (": the position past the end was reset past them" if tp in past else ""),
                data=tp_fields(tp)
                | {
                    "offsets": skipped[:20],
                    "record_count": len(skipped),
                    "start": t.position,
                    "log_start": t.log_start,
                    "end": t.end,
                },
            )
        )
    return out


def _past_end_unnamed(error: str, tp: TopicPartition, past: Truncated) -> list[Violation]:
    """A failure that does not say which partition, from which position, and where its log ends now leaves the user
    to find out what happened to it (RESTORE-023)."""
    line = error_line(error, tp)
    named = {
        "partition": names_partition(error, tp),
        "position": _names_number(error, past.position),
        "end": _names_number(error, past.end),
    }
    unnamed = [what for what, found in named.items() if not found]
    return [
        Violation(
            "RESTORE-023",
            "past-end-unnamed",
            f"{tp}: the query failed without naming its {' or '.join(unnamed)} (position {past.position}, end "
            f"{past.end}): {line}",
            data=tp_fields(tp) | {"start": past.position, "end": past.end, "error": line, "unnamed": unnamed},
        )
    ] * bool(unnamed)


def check_unmapped_start(
    error: str | None,
    reads: Iterable[ReadRecord],
    specified: Mapping[TopicPartition, int],
    ends: Mapping[TopicPartition, int],
) -> list[Violation]:
    """RESTORE-017 on a fresh query started at ``specified`` offsets that leave out some partitions of ``ends``
    (every partition found at start, each with its end; logs start at 0): it fails (``error``: the failure's
    text) naming each partition left out; or it reads each specified partition from its offset and each left-out
    one from its first record (EARLIEST, the fallback when none is configured), never from elsewhere."""
    unmapped = sorted(ends.keys() - specified.keys())
    if error is not None:
        line = next((line.strip() for line in error.splitlines() if any(tp.topic in line for tp in ends)), "")
        return [
            Violation(
                "RESTORE-020",
                "unmapped-unnamed",
                f"{tp}: the start failed without naming this partition, which the offsets left out: "
                f"{line or last_line_of(error)}",
                data=tp_fields(tp) | {"error": (line or last_line_of(error))[:300]},
            )
            for tp in unmapped
            if not names_partition(error, tp)
        ]
    first: dict[TopicPartition, int] = {}
    for r in reads:
        first[r.tp] = min(r.offset, first.get(r.tp, r.offset))
    out = []
    for tp, end in sorted(ends.items()):
        want = specified.get(tp, 0)
        started = first.get(tp, end)
        if started != want:
            kind = "specified-offset-ignored" if tp in specified else "unmapped-not-earliest"
            out.append(
                Violation(
                    "RESTORE-017",
                    kind,
                    f"{tp}: read from offset {started}, not from {want} "
                    + ("(its specified offset)" if tp in specified else "(EARLIEST: the offsets left it out)"),
                    data=tp_fields(tp) | {"start": started, "want": want, "end": end},
                )
            )
    return out
