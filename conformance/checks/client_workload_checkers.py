"""CLIENT-001 to CLIENT-009 (spec/clients.md) and LIVE-001: pure checkers of a client workload's history.

Each takes the ``History`` a drawn schedule left (``kconform.conformance.workloads.clients``): events in the
order they happened and, read after the drain, what the log holds. None calls a client; each returns the
violations of one anomaly kind family with the records, offsets, partitions and clients as data. Where a
history cannot tell (a commit that timed out, a member whose session may have ended in a broker fault, a
drain that did not finish) the checker says nothing rather than guess: a verdict is never redder than its
evidence.
"""

from __future__ import annotations

import bisect
import re
from collections import defaultdict
from collections.abc import Collection, Iterator, Sequence
from dataclasses import dataclass
from itertools import pairwise
from typing import Final

from ...reference_impl.types import TopicPartition
from ..workloads.clients.history import (
    Acked,
    Assigned,
    Closed,
    Committed,
    Crashed,
    Event,
    Failed,
    Fault,
    FetchedCommitted,
    GroupView,
    History,
    Hung,
    Polled,
    Revoked,
    Seeked,
    Sent,
    Subscribed,
    TxnEnded,
    faults,
    rebalances_eagerly,
)
from .checkers import Violation, tp_fields, value_field

OFFSET_BEGINNING: Final = -2
SHOWN: Final = 8
"""Offsets listed in a violation's evidence (its data keeps them all)."""
EARLIEST: Final = frozenset({"smallest", "earliest", "beginning"})
LATEST: Final = frozenset({"largest", "latest", "end"})
LIBRDKAFKA_DEFAULTS: Final = {
    "isolation.level": "read_committed",
    "auto.offset.reset": "largest",
    "max.poll.interval.ms": "300000",
    "enable.idempotence": "false",
    "group.protocol": "classic",
    "partition.assignment.strategy": "range,roundrobin",
    "session.timeout.ms": "45000",
    "heartbeat.interval.ms": "3000",
    "socket.timeout.ms": "60000",
    "reconnect.backoff.max.ms": "10000",
}
"""librdkafka's defaults for the settings the checkers read (CONFIGURATION.md), where a history states none of its
client release's own (``ClientInfo.defaults``)."""
TIMING_MARGIN_S: Final = 2.0
"""How much earlier than its poll interval says a member may already have left its group (clocks, scheduling)."""


def setting(history: History, client: str, name: str) -> str:
    info = history.consumer(client) if client.startswith("c") else history.clients[client]
    return str(info.settings.get(name) or info.defaults.get(name) or LIBRDKAFKA_DEFAULTS.get(name, ""))


def eager(history: History, client: str) -> bool:
    """Whether ``client`` rebalances eagerly: as its driver recorded it at its release (``ClientInfo.eager``), else
    ``rebalances_eagerly`` at its settings or its release's defaults."""
    recorded = history.consumer(client).eager
    if recorded is not None:
        return recorded
    return rebalances_eagerly(
        setting(history, client, "group.protocol"), setting(history, client, "partition.assignment.strategy")
    )


def visible(history: History, tp: TopicPartition, isolation: str) -> list[int]:
    """The offsets of ``tp`` a reader at ``isolation`` is given, ascending."""
    if isolation == "read_committed":
        return sorted(history.log.committed.get(tp, ()))
    return [offset for offset, _ in history.log.records.get(tp, ())]


def first_at_or_after(offsets: Sequence[int], offset: int) -> int | None:
    i = bisect.bisect_left(offsets, offset)
    return offsets[i] if i < len(offsets) else None


def shown(offsets: Sequence[int]) -> str:
    more = f" and {len(offsets) - SHOWN} more" if len(offsets) > SHOWN else ""
    return ", ".join(map(str, offsets[:SHOWN])) + more


def of_kind(history: History, kind: type[Event]) -> Iterator[Event]:
    return (e for e in history.events if isinstance(e, kind))


def idempotent(history: History, producer: str) -> bool:
    info = history.clients[producer]
    return info.settings.get("enable.idempotence") == "true" or info.transactional


def sends(history: History) -> dict[bytes, Sent]:
    return {e.value: e for e in of_kind(history, Sent)}  # type: ignore[attr-defined, misc]


def txn_ends(history: History) -> dict[tuple[str, int], TxnEnded]:
    return {(e.client, e.txn): e for e in of_kind(history, TxnEnded)}  # type: ignore[attr-defined, misc]


def log_index(history: History) -> dict[bytes | None, list[tuple[TopicPartition, int]]]:
    where: dict[bytes | None, list[tuple[TopicPartition, int]]] = defaultdict(list)
    for tp, records in history.log.records.items():
        for offset, value in records:
            where[value].append((tp, offset))
    return where


# -- producers ----------------------------------------------------------------------------------------------


def check_acknowledged_in_log(history: History) -> list[Violation]:
    """CLIENT-001: a record acknowledged with an offset is in the log at that offset; every record of a
    transaction whose commit returned is in the log and visible to ``read_committed``."""
    violations: list[Violation] = []
    records = {tp: dict(rs) for tp, rs in history.log.records.items()}
    for ack in of_kind(history, Acked):
        assert isinstance(ack, Acked)
        if ack.error is not None or ack.offset is None or ack.tp is None:
            continue
        if ack.tp not in records:
            continue  # a partition the log read did not cover: nothing to say
        found = records[ack.tp].get(ack.offset, b"\0missing")
        if found != ack.value:
            violations.append(
                Violation(
                    "CLIENT-001",
                    "lost-write",
                    f"{ack.client} was told {ack.value!r} was written to {ack.tp} at offset {ack.offset}; "
                    + ("the log has no record there" if found == b"\0missing" else f"the log has {found!r} there"),
                    data=tp_fields(ack.tp)
                    | {"offset": ack.offset, "value": value_field(ack.value), "client": ack.client},
                )
            )
    where = log_index(history)
    ends = txn_ends(history)
    held = history.log.held_back()
    for sent in sends(history).values():
        if sent.txn is None:
            continue
        end = ends.get((sent.client, sent.txn))
        if end is None or end.outcome != "commit" or end.error is not None:
            continue
        places = where.get(sent.value, [])
        if any(tp in held and offset >= held[tp][0] for tp, offset in places):
            continue  # still held back by an open transaction when read: committed or not, the log cannot tell yet
        if not any(offset in history.log.committed.get(tp, ()) for tp, offset in places):
            violations.append(
                Violation(
                    "CLIENT-001",
                    "lost-committed-write",
                    f"{sent.client}'s transaction {sent.txn} committed, but its record {sent.value!r} is "
                    + ("not in the log" if not places else f"not visible to read_committed at {places}"),
                    data={
                        "client": sent.client,
                        "transaction": sent.txn,
                        "value": value_field(sent.value),
                        "places": [tp_fields(tp) | {"offset": o} for tp, o in places],
                    },
                )
            )
    return violations


def check_written_once(history: History) -> list[Violation]:
    """CLIENT-002: an idempotent (or transactional) producer's record is in the log once."""
    violations: list[Violation] = []
    sent = sends(history)
    for value, places in log_index(history).items():
        if len(places) < 2 or value not in sent or not idempotent(history, sent[value].client):
            continue
        violations.append(
            Violation(
                "CLIENT-002",
                "duplicate-write",
                f"{sent[value].client} (idempotent) sent {value!r} once; the log has it {len(places)} times: "
                + ", ".join(f"{tp}@{o}" for tp, o in places),
                data={
                    "value": value_field(value),
                    "client": sent[value].client,
                    "places": [tp_fields(tp) | {"offset": o} for tp, o in places],
                },
            )
        )
    return violations


def send_number(value: bytes) -> int:
    return int(value.rsplit(b"-", 1)[1])


def check_send_order(history: History) -> list[Violation]:
    """CLIENT-003: an idempotent producer's records are in each partition in the order it sent them."""
    violations: list[Violation] = []
    sent = sends(history)
    by_producer: dict[tuple[str, TopicPartition], list[tuple[int, int, bytes]]] = defaultdict(list)
    for tp, records in history.log.records.items():
        for offset, value in records:
            if value in sent and idempotent(history, sent[value].client):
                by_producer[(sent[value].client, tp)].append((offset, send_number(value), value))
    for (client, tp), rows in sorted(by_producer.items()):
        rows.sort()
        for (o1, n1, v1), (o2, n2, v2) in pairwise(rows):
            if n2 < n1:
                violations.append(
                    Violation(
                        "CLIENT-003",
                        "reordered",
                        f"{client} sent {v2!r} before {v1!r}; {tp} has {v1!r} at {o1} and {v2!r} at {o2}",
                        data=tp_fields(tp)
                        | {
                            "client": client,
                            "offsets": [o1, o2],
                            "values": [value_field(v1), value_field(v2)],
                        },
                    )
                )
                break
    return violations


# -- consumers ----------------------------------------------------------------------------------------------


@dataclass
class Reading:
    """One consumer incarnation's view of one partition while it owns it."""

    expected: int | None = None
    """The next offset it must deliver; ``None`` when unknown (not started, or sought to the end)."""
    started: bool = False
    assigned_at: int | None = None
    """The ``seq`` of the assignment this ownership began with; ``None`` once a seek moved it."""
    floor: int | None = None
    """One past the last offset delivered, or the end reported at an end-of-partition event if further: nothing below
    it may come again while this ownership lasts. It outlives ``expected``, which is ``None`` once every record the
    final log gives was delivered: a delivery after that is below it, a redelivery (librdkafka-4636's resume of a
    partition not paused refetching from its stale fetch start, which a drain reaches after reading to the end)."""


def consumer_events(history: History) -> dict[str, list[Event]]:
    found: dict[str, list[Event]] = defaultdict(list)
    for event in history.events:
        if event.client.startswith("c"):
            found[event.client].append(event)
    return found


def check_consumer_continuity(history: History) -> list[Violation]:
    """CLIENT-004: while a consumer owns a partition, it delivers the records its isolation gives from where it
    started, each once and in order (a pause and resume change nothing; a seek moves the start), before it reports
    the partition's end (an end-of-partition event at E after the records up to X leaves none of X+1..E-1 that its
    isolation gives undelivered), and after an end-of-partition event it reports the end as its position."""
    violations: list[Violation] = []
    for client, events in consumer_events(history).items():
        isolation = setting(history, client, "isolation.level")
        readings: dict[TopicPartition, Reading] = {}
        for event in events:
            if isinstance(event, Assigned):
                for tp in event.tps:
                    readings[tp] = Reading()
            elif isinstance(event, Revoked):
                for tp in event.tps:
                    readings.pop(tp, None)
            elif isinstance(event, Seeked) and event.error is None:
                offsets = visible(history, event.tp, isolation)
                if event.offset is None:  # the end, as the client resolved it: where it reads on from is unknown
                    readings[event.tp] = Reading()
                else:
                    start = (offsets[0] if offsets else 0) if event.offset == OFFSET_BEGINNING else event.offset
                    readings[event.tp] = Reading(first_at_or_after(offsets, start), True)
            elif isinstance(event, Polled):
                violations += _continuity(history, client, isolation, readings, event)
    return violations


def _continuity(
    history: History, client: str, isolation: str, readings: dict[TopicPartition, Reading], polled: Polled
) -> list[Violation]:
    violations: list[Violation] = []
    last_record: dict[TopicPartition, int] = {}
    for i, (tp, offset, _value) in enumerate(polled.records):
        last_record[tp] = i
        reading = readings.setdefault(tp, Reading())
        offsets = visible(history, tp, isolation)
        want = reading.expected if reading.expected is not None else reading.floor
        if reading.started and want is not None and offset != want and (reading.expected is not None or offset < want):
            if offset < want:
                again = [o for o in offsets if offset <= o < want]
                violations.append(
                    Violation(
                        "CLIENT-004",
                        "redelivered",
                        f"{client} delivered {tp} offset {offset} when {want} was next: offsets {shown(again)} again",
                        data=tp_fields(tp) | {"client": client, "offset": offset, "want": want, "offsets": again},
                    )
                )
            else:
                skipped = [o for o in offsets if want <= o < offset]
                violations.append(
                    Violation(
                        "CLIENT-004",
                        "skipped",
                        f"{client} delivered {tp} offset {offset} next, skipping offsets {shown(skipped)} "
                        f"({isolation} gives them)",
                        data=tp_fields(tp)
                        | {
                            "client": client,
                            "offset": offset,
                            "want": want,
                            "offsets": skipped,
                        },
                    )
                )
        reading.started = True
        reading.expected = first_at_or_after(offsets, offset + 1)
        reading.floor = max(reading.floor or 0, offset + 1)
    positions = dict(polled.positions)
    for tp, end in polled.eofs:
        ended = readings.get(tp)
        if ended is not None and ended.started and ended.expected is not None and ended.expected < end:
            # the end reported is a delivery too: everything its isolation gives below it came first
            offsets = visible(history, tp, isolation)
            skipped = [o for o in offsets if ended.expected <= o < end]
            if skipped:
                violations.append(
                    Violation(
                        "CLIENT-004",
                        "skipped",
                        f"{client} reported the end of {tp} at {end} when {ended.expected} was next, skipping "
                        f"offsets {shown(skipped)} ({isolation} gives them)",
                        data=tp_fields(tp)
                        | {"client": client, "offset": end, "want": ended.expected, "offsets": skipped, "eof": True},
                    )
                )
            ended.expected = first_at_or_after(offsets, end)
        if ended is not None and ended.started:
            ended.floor = max(ended.floor or 0, end)
        position = positions.get(tp)
        if position is None or position < 0 or any(t == tp and o >= end for t, o, _ in polled.records):
            continue  # no position asked, or records after the end came in the same batch
        if position != end:
            violations.append(
                Violation(
                    "CLIENT-004",
                    "position-past-end" if position > end else "position-before-end",
                    f"{client} reported the end of {tp} at {end}, then its position as {position}",
                    data=tp_fields(tp) | {"client": client, "got": position, "want": end, "end": end},
                )
            )
    return violations


def group_commits(history: History) -> dict[tuple[str, TopicPartition], list[Committed]]:
    found: dict[tuple[str, TopicPartition], list[Committed]] = defaultdict(list)
    for event in of_kind(history, Committed):
        assert isinstance(event, Committed)
        for tp, _offset in event.offsets:
            found[(event.group, tp)].append(event)
    return found


def committed_offset(event: Committed, tp: TopicPartition) -> int:
    return dict(event.offsets)[tp]


@dataclass(frozen=True)
class FailedCommit:
    """One partition a commit's answer gave an error for (``Committed.failed``)."""

    commit: Committed
    offset: int
    error: str
    ambiguous: bool


def group_failures(history: History) -> dict[tuple[str, TopicPartition], list[FailedCommit]]:
    found: dict[tuple[str, TopicPartition], list[FailedCommit]] = defaultdict(list)
    for event in of_kind(history, Committed):
        assert isinstance(event, Committed)
        for tp, offset, error, ambiguous in event.failed:
            found[(event.group, tp)].append(FailedCommit(event, offset, error, ambiguous))
    return found


@dataclass(frozen=True)
class Start:
    """The first record a consumer delivered of a partition newly assigned to it (CLIENT-005's subject)."""

    client: str
    group: str
    tp: TopicPartition
    offset: int
    assigned: int
    """The ``seq`` of the assignment."""
    polled: int
    """The ``seq`` of the poll that delivered it."""
    isolation: str
    reset: str


def starts(history: History) -> Iterator[Start]:
    """Every start of a partition newly assigned to a consumer (by its group or by hand) and not sought since, in a
    group whose commits are all certain (none ambiguous)."""
    ambiguous_groups = {e.group for e in of_kind(history, Committed) if isinstance(e, Committed) and e.ambiguous}
    for client, events in consumer_events(history).items():
        group = history.consumer(client).group or ""
        isolation = setting(history, client, "isolation.level")
        reset = setting(history, client, "auto.offset.reset")
        pending: dict[TopicPartition, int] = {}
        for event in events:
            if isinstance(event, Assigned):
                for tp in event.tps:
                    pending[tp] = event.seq
            elif isinstance(event, (Revoked, Seeked)):
                for tp in event.tps if isinstance(event, Revoked) else (event.tp,):
                    pending.pop(tp, None)
            elif isinstance(event, Polled):
                for tp, offset, _value in event.records:
                    if tp not in pending:
                        continue
                    since = pending.pop(tp)
                    if group not in ambiguous_groups:
                        yield Start(client, group, tp, offset, since, event.seq, isolation, reset)


def _held_by_failed(
    history: History, start: Start, commits: Sequence[Committed], failures: Sequence[FailedCommit]
) -> FailedCommit | None:
    """The commit the client reported failed for ``start.tp`` that explains where the consumer started: one recorded
    before the poll, later than the last commit confirmed before the assignment, at whose offset (the first record
    the consumer's isolation gives at or after it) the consumer started. The group held that offset, so the commit
    took effect whatever its answer said (or, were its error one that leaves the outcome open, may have)."""
    offsets = visible(history, start.tp, start.isolation)
    confirmed = [c.seq for c in commits if c.error is None and c.seq < start.assigned]
    after = confirmed[-1] if confirmed else -1
    for failure in reversed(failures):
        if after < failure.commit.seq < start.polled and first_at_or_after(offsets, failure.offset) == start.offset:
            return failure
    return None


def check_start_positions(history: History) -> list[Violation]:
    """CLIENT-005: a partition assigned to a consumer of a group starts at the group's committed offset (the first
    record its isolation gives at or after it), or where ``auto.offset.reset`` says when the group has none or its
    committed offset is past the log's end (out of range: CLIENT-007 ``committed-past-end`` judges that commit). A start
    at the offset of a commit the client reported failed (``Committed.failed``), later than the last one confirmed,
    is no skip: the group held it (CLIENT-009 judges the answer, ``check_commit_answers``)."""
    violations: list[Violation] = []
    commits = group_commits(history)
    failures = group_failures(history)
    for start in starts(history):
        found = _start_violation(
            history,
            commits.get((start.group, start.tp), []),
            start.tp,
            start.offset,
            start.assigned,
            start.polled,
            start.isolation,
            start.reset,
            start.client,
        )
        if found is not None and not _held_by_failed(
            history, start, commits.get((start.group, start.tp), []), failures.get((start.group, start.tp), [])
        ):
            violations.append(found)
    return violations


def check_commit_answers(history: History) -> list[Violation]:
    """CLIENT-009: a commit's answer says what the commit did. A partition the answer gave a definite error for
    (not one that leaves the outcome open: a timeout, a lost connection) was not committed by it; when the group then
    held that offset, as the next consumer assigned the partition shows by starting there where no commit the history
    shows as successful put the group, the answer misreported it (``commit-misreported``): the application was told
    to redo what had been done. Where the group's recorded commits explain the start, nothing is said, nor where any
    commit of the same offset, at any time of the history, was answered success."""
    violations: list[Violation] = []
    commits = group_commits(history)
    failures = group_failures(history)
    for start in starts(history):
        own = commits.get((start.group, start.tp), [])
        if (
            _start_violation(
                history, own, start.tp, start.offset, start.assigned, start.polled, start.isolation, start.reset, ""
            )
            is None
        ):
            continue
        failure = _held_by_failed(history, start, own, failures.get((start.group, start.tp), []))
        if failure is None or failure.ambiguous:
            continue
        if any(c.error is None and committed_offset(c, start.tp) == failure.offset for c in own):
            continue  # a commit of the same offset answered success (its callback served later, perhaps): no misreport
        confirmed = [c for c in own if c.error is None and c.seq < start.assigned]
        before = committed_offset(confirmed[-1], start.tp) if confirmed else None
        commit = failure.commit
        violations.append(
            Violation(
                "CLIENT-009",
                "commit-misreported",
                f"{commit.client}'s commit of {start.tp} at offset {failure.offset} was answered with an error "
                f"({failure.error}; event {commit.seq}), but group {start.group} then held that offset: "
                f"{start.client}, assigned {start.tp} (event {start.assigned}), started at offset {start.offset}, "
                f"the first record at or after it; the last commit the history shows succeeding before the "
                f"assignment was " + ("none" if before is None else f"at {before}"),
                data=tp_fields(start.tp)
                | {
                    "client": commit.client,
                    "group": start.group,
                    "offset": failure.offset,
                    "error": failure.error,
                    "held_by": start.client,
                    "started_at": start.offset,
                    "committed_before": before,
                },
            )
        )
    return violations


def _start_violation(
    history: History,
    commits: Sequence[Committed],
    tp: TopicPartition,
    offset: int,
    assigned: int,
    polled: int,
    isolation: str,
    reset: str,
    client: str,
) -> Violation | None:
    offsets = visible(history, tp, isolation)
    confirmed = [c for c in commits if c.error is None and c.seq < assigned]
    candidates = {committed_offset(c, tp) for c in commits if assigned <= c.seq < polled}
    if confirmed:
        candidates.add(committed_offset(confirmed[-1], tp))
    elif reset in EARLIEST:
        candidates.add(offsets[0] if offsets else 0)
    else:
        return None  # latest (the end when it started, which the history does not hold) or error
    allowed = {first_at_or_after(offsets, c) for c in candidates}
    end = history.log.ends.get(tp)
    if end is not None and any(c > end for c in candidates):
        # a committed offset past the log's end (CLIENT-007 committed-past-end) names no record: the fetch from it is
        # out of range and the consumer starts where auto.offset.reset says, its first record at an earliest reset,
        # the end then (which the history does not hold) at a latest one
        if reset not in EARLIEST:
            return None
        allowed.add(offsets[0] if offsets else None)
    if offset in allowed:
        return None
    where = sorted(c for c in candidates)
    lowest = min((a for a in allowed if a is not None), default=None)
    kind = "started-before-committed" if lowest is not None and offset < lowest else "started-after-committed"
    skipped = [o for o in offsets if lowest is not None and lowest <= o < offset]
    because = (
        f"the group's committed offset was {shown(where)}"
        if confirmed or len(where) > 1
        else f"the group had no committed offset and auto.offset.reset is {reset}, so {where[0]}"
    )
    return Violation(
        "CLIENT-005",
        kind,
        f"{client} was assigned {tp} and delivered offset {offset} first; {because}"
        + (f": offsets {shown(skipped)} were skipped" if skipped else ""),
        data=tp_fields(tp) | {"client": client, "offset": offset, "want": where, "offsets": skipped},
    )


def asked_from(asks: Sequence[FetchedCommitted]) -> dict[int, int]:
    """For each ask (by its ``seq``), when the request it was answered from may have begun: its own start
    (``since``), or, where the same consumer's asks of the same partitions just before it failed, the start of the
    first of them. A failed ask (its bound passed, above all) may leave its request in flight, and kafka-clients
    answers a later ask of the same partitions from it: the classic consumer's
    ``ConsumerCoordinator.fetchCommittedOffsets`` reuses its ``pendingCommittedOffsetRequest`` for the same
    partitions and generation, and the consumer protocol's ``CommitRequestManager`` chains an ask onto an in-flight
    fetch of the same partitions (``PendingRequests.addOffsetFetchRequest``; read in kafka-clients 4.4.0's and
    4.3.1's classes with ``javap``). A commit between such a request and the later ask is not in its answer.
    ``asks``: every ask of the history, in order; one pass."""
    began: dict[int, int] = {}
    failing: dict[tuple[str, tuple[TopicPartition, ...]], int] = {}  # per consumer and partitions: the start of
    # the failed asks since its last ask that answered
    for ask in asks:
        key = (ask.client, ask.tps)
        began[ask.seq] = failing.get(key, ask.since)
        if ask.error is None:
            failing.pop(key, None)
        else:
            failing.setdefault(key, ask.since)
    return began


def check_committed_fetches(history: History) -> list[Violation]:
    """CLIENT-005: a consumer's ask for its group's committed offsets (``FetchedCommitted``) never answers "no
    committed offset" for a partition the group had committed before the ask began: a commit the history shows
    returned without error, and not ambiguous, earlier than the ask. An ask that fails (a timeout, a retriable error
    of the coordinator) says nothing about the offset and is not judged here; one that never returns is LIVE-001's
    ``hang``. What offset the answer gives is not judged: another member's commit, or an auto-commit the history
    records only when its callback is served, may have moved it while the ask ran (kconform's choice: only what is
    certain). The ask counts from when the request it was answered from may have begun (``asked_from``): a request
    left in flight by the same consumer's failed asks of the same partitions answers for the moment it was sent."""
    violations: list[Violation] = []
    commits = group_commits(history)
    asks = [e for e in of_kind(history, FetchedCommitted) if isinstance(e, FetchedCommitted)]
    starts = asked_from(asks)
    for event in asks:
        if event.error is not None:
            continue
        began = starts[event.seq]
        for tp, offset in event.offsets:
            if offset is not None:
                continue
            before = [
                c
                for c in commits.get((event.group, tp), [])
                if c.seq < began and c.error is None and not c.ambiguous and committed_offset(c, tp) >= 0
            ]
            if not before:
                continue
            last = before[-1]
            violations.append(
                Violation(
                    "CLIENT-005",
                    "fetched-no-offset",
                    f"{event.client} asked group {event.group}'s committed offset of {tp} and was told it has none; "
                    f"{last.client}'s commit of offset {committed_offset(last, tp)} had returned before the ask began "
                    f"(event {last.seq}, ask from event {event.since}, answered in {event.took_s:.3f} s)",
                    data=tp_fields(tp)
                    | {
                        "client": event.client,
                        "group": event.group,
                        "want": committed_offset(last, tp),
                        "got": None,
                        "committed_by": last.client,
                        "took_s": round(event.took_s, 3),
                    },
                )
            )
    return violations


def check_read_committed(history: History) -> list[Violation]:
    """CLIENT-006: a ``read_committed`` consumer delivers no record of an aborted transaction and none of a
    transaction before its commit returned."""
    violations: list[Violation] = []
    sent = sends(history)
    ends = txn_ends(history)
    for client, events in consumer_events(history).items():
        if setting(history, client, "isolation.level") != "read_committed":
            continue
        for event in events:
            if not isinstance(event, Polled):
                continue
            for tp, offset, value in event.records:
                origin = sent.get(value) if value is not None else None
                end = ends.get((origin.client, origin.txn)) if origin is not None and origin.txn is not None else None
                aborted = offset not in history.log.committed.get(tp, ()) or (
                    end is not None and end.outcome == "abort"
                )
                early = (
                    origin is not None
                    and origin.txn is not None
                    and (end is None or end.seq > event.seq)
                    and not aborted
                )
                if aborted or (early and end is not None):
                    violations.append(
                        Violation(
                            "CLIENT-006",
                            "read-aborted" if aborted else "read-uncommitted",
                            f"{client} (read_committed) delivered {value!r} at {tp}@{offset}, "
                            + (
                                "a record read_committed does not give (an aborted transaction's)"
                                if aborted
                                else "before its transaction's commit returned"
                            ),
                            data=tp_fields(tp) | {"client": client, "offset": offset, "value": value_field(value)},
                        )
                    )
    return violations


def check_commits(history: History) -> list[Violation]:
    """CLIENT-007: a group's committed offset never moves backwards without a seek, never past the log's end, and a
    commit after offsets were stored commits them."""
    violations: list[Violation] = []
    sought = {(history.consumer(e.client).group, e.tp) for e in of_kind(history, Seeked) if isinstance(e, Seeked)}
    for (group, tp), commits in sorted(group_commits(history).items(), key=lambda kv: (kv[0][0], kv[0][1])):
        end = history.log.ends.get(tp)
        highest: tuple[int, Committed] | None = None
        for commit in commits:
            if commit.error is not None:
                continue
            offset = committed_offset(commit, tp)
            if end is not None and offset > end:
                violations.append(
                    Violation(
                        "CLIENT-007",
                        "committed-past-end",
                        f"{commit.client} committed {tp} at {offset}, past its end {end}",
                        data=tp_fields(tp) | {"client": commit.client, "got": offset, "end": end, "group": group},
                    )
                )
            if highest is not None and offset < highest[0] and (group, tp) not in sought:
                violations.append(
                    Violation(
                        "CLIENT-007",
                        "committed-backward",
                        f"{commit.client} committed {tp} at {offset} after {highest[1].client} had committed it at "
                        f"{highest[0]} (no seek moved the group back)",
                        data=tp_fields(tp)
                        | {"client": commit.client, "got": offset, "want": highest[0], "group": group},
                    )
                )
            # an offset past the log's end names no record (committed-past-end says so): a later commit below it moves
            # the group back over nothing, as a consumer reset from it (auto.offset.reset) does
            if (highest is None or offset > highest[0]) and (end is None or offset <= end):
                highest = (offset, commit)
    violations += _stored_not_committed(history)
    return violations


NOTHING_STORED: Final = "_NO_OFFSET"
"""The error a librdkafka commit of the stored offsets fails with when it finds none to commit ("No offset stored"):
of a commit after a store past the committed offset, the client's own account that it left the store out."""


def _stored_not_committed(history: History) -> list[Violation]:
    violations: list[Violation] = []
    confirmed: dict[tuple[str, TopicPartition], int] = {}
    for event in of_kind(history, Committed):
        assert isinstance(event, Committed)
        for tp, stored in event.stored:
            before = confirmed.get((event.group, tp))
            got = dict(event.offsets).get(tp)
            if event.ambiguous or stored == before or got == stored:
                continue
            if event.error is not None and event.error.split(":", 1)[0] != NOTHING_STORED:
                continue  # the commit failed and said so (a rebalance, a lost coordinator): CLIENT-009 judges it
            if before is not None and stored < before:
                # below the group's committed offset: a client commits a stored offset only past the committed one
                # (librdkafka's rd_kafka_topic_partition_list_set_offsets), so a seek back and a store there commit
                # nothing, by design
                continue
            violations.append(
                Violation(
                    "CLIENT-007",
                    "stored-not-committed",
                    f"{event.client} stored {tp} at {stored} and committed: "
                    + (f"the commit failed ({event.error})" if event.error else f"it committed {got}")
                    + f"; the group's offset stays {before}",
                    data=tp_fields(tp) | {"client": event.client, "got": got, "want": stored, "error": event.error},
                )
            )
        if event.error is None:
            for tp, offset in event.offsets:
                confirmed[(event.group, tp)] = offset
    return violations


UNREVOKED: Final = "owned-twice-unrevoked"
"""CLIENT-008's ``owned-twice`` whose earlier owner is an eager member that rejoined its group without revoking the
partition: either its next callback after the overlap handed it a new assignment, with no revoke between
(``_replaced_unrevoked``), or its revocation came only once it stood in the generation that handed the partition to
the other member (``_revoked_after_rejoining``, by the generations the callbacks record). A correct eager member
revokes its whole assignment before it rejoins (rdkafka.h: "exactly one corresponding call to rebalance_cb to
revoke these partitions"; kafka-clients' ``onJoinPrepare``), and one its coordinator dropped is told so (a lost
callback), so the overlap can only come from a member that left its generation with neither: librdkafka does that
while the application's assign call is pending (join-state ``wait-assign-call``), rejoining at once on a metadata
change (``rd_kafka_cgrp_revoke_all_rejoin``) or skipping the heartbeat's UNKNOWN_MEMBER_ID after its session
expired, then hands the application the old generation's assignment, which ``rd_kafka_cgrp_assign`` applies; and
while the application's revoke call is pending (join-state ``wait-unassign-call``: the queued revoke cleared the
group assignment, so a metadata change finds nothing to revoke and rejoins at once), then serves the revoke in the
next generation (fixtures/bugbank.toml, ``[[known]] librdkafka-eager-rejoin-without-revoke``). Its own kind, so
that only this shape of the overlap is known and any other stays ``owned-twice``."""


def _replaced_unrevoked(history: History, owner: str, after: int) -> Assigned | None:
    """The assignment that next replaced eager ``owner``'s one after event ``after``, if its next ownership event
    (a revocation, an assignment, a close, a hang) is an assignment: no revoke came between."""
    if not eager(history, owner):
        return None
    for event in history.events:
        if event.seq > after and event.client == owner and isinstance(event, (Revoked, Assigned, Closed, Hung)):
            return event if isinstance(event, Assigned) else None
    return None


def classic_member(history: History, client: str) -> bool:
    return setting(history, client, "group.protocol").strip().lower() != "consumer"


def _revoked_after_rejoining(history: History, overlap: Overlap) -> tuple[Assigned, Revoked] | None:
    """The owner's assignment and the revocation that show eager ``overlap.owner`` had already joined the generation
    that handed ``overlap.tp`` to ``overlap.to`` when it revoked the partition: the owner's assignment of it was read at
    an older generation than the other member's (``Assigned.generation``, classic members of one group: one
    numbering), and the owner's next ownership event after the overlap (a revocation, an assignment, a close, a
    hang) is a revocation, not a loss, of the partition, read at a generation no lower than the other's. A correct
    eager member revokes before it sends its JoinGroup, in the generation its partitions came from; the generation
    moves on only at the JoinGroup's answer. ``None`` when a generation is unknown (kafka-clients' harness, a
    history recorded before they were), when both assignments read one generation (one of them was served late, and
    which member left its generation unrevoked the numbers do not say), or when the earlier owner revoked in an
    older generation (then it was out of the group when the other was handed the partition: removed, not rejoined)."""
    o = overlap
    handed = o.assigned.generation
    if handed is None or handed < 0 or not eager(history, o.owner):
        return None
    if not (classic_member(history, o.owner) and classic_member(history, o.to)):
        return None  # a consumer-protocol member's number is its own epoch, not the group's generation
    began = next((e for e in history.events if e.seq == o.owned_from and isinstance(e, Assigned)), None)
    if began is None or began.generation is None or began.generation >= handed:
        return None
    for event in history.events:
        if event.seq <= o.assigned.seq or event.client != o.owner:
            continue
        if isinstance(event, (Revoked, Assigned, Closed, Hung)):
            if (
                isinstance(event, Revoked)
                and not event.lost
                and o.tp in event.tps
                and event.generation is not None
                and event.generation >= handed
            ):
                return began, event
            return None
    return None


CONSUMER_PROTOCOL_SESSION_MS: Final = 45_000
"""A ``group.protocol=consumer`` member's session and heartbeat interval, which the broker sets
(``group.consumer.session.timeout.ms`` and ``group.consumer.heartbeat.interval.ms``, 45 s and 5 s by default: Kafka's
``GroupCoordinatorConfig``; the suite's brokers leave them)."""
CONSUMER_PROTOCOL_HEARTBEAT_MS: Final = 5_000


def setting_ms(history: History, client: str, *names: str) -> float:
    """The first of ``names`` the client has a value for (drawn, or its release's or the workload's default), in
    seconds; 0 when it has none."""
    info = history.consumer(client)
    for name in names:
        value = info.settings.get(name) or info.defaults.get(name) or LIBRDKAFKA_DEFAULTS.get(name)
        if value:
            return int(value) / 1000
    return 0.0


def session_and_heartbeat_s(history: History, client: str) -> tuple[float, float]:
    """A group member's session timeout and heartbeat interval, in seconds: its own (drawn, else the workload's or
    its release's default) in a classic group, the broker's in a consumer-protocol one."""
    if setting(history, client, "group.protocol").strip().lower() == "consumer":
        return CONSUMER_PROTOCOL_SESSION_MS / 1000, CONSUMER_PROTOCOL_HEARTBEAT_MS / 1000
    return setting_ms(history, client, "session.timeout.ms"), setting_ms(history, client, "heartbeat.interval.ms")


def zombie_bound_s(history: History, client: str) -> tuple[float, str]:
    """How long after a fault is healed a member the coordinator removed for it may still think it owns its
    partitions, from its own settings: its session timeout (librdkafka declares its own session lost once no
    heartbeat succeeded for that long, ``rd_kafka_cgrp_session_timeout_check``), a heartbeat interval (its next
    heartbeat, answered UNKNOWN_MEMBER_ID or ILLEGAL_GENERATION, makes it drop its assignment as lost,
    ``rd_kafka_cgrp_handle_Heartbeat``; kafka-clients' ``AbstractCoordinator`` and ``ConsumerCoordinator``
    ``onPartitionsLost``), one request's timeout (librdkafka's ``socket.timeout.ms``, kafka-clients'
    ``request.timeout.ms``), the longest wait before it connects again to the healed broker
    (``reconnect.backoff.max.ms``), and ``TIMING_MARGIN_S``; with why."""
    session, heartbeat = session_and_heartbeat_s(history, client)
    request = setting_ms(history, client, "request.timeout.ms", "socket.timeout.ms")
    reconnect = setting_ms(history, client, "reconnect.backoff.max.ms")
    bound = session + heartbeat + request + reconnect + TIMING_MARGIN_S
    return bound, (
        f"session {session:g} s + heartbeat interval {heartbeat:g} s + request timeout {request:g} s "
        f"+ reconnect backoff {reconnect:g} s + {TIMING_MARGIN_S:g} s"
    )


@dataclass(frozen=True)
class Overlap:
    """A partition assigned to a member (``to``, at ``at``) while another member (``owner``), which had polled within
    its poll interval, still owned it: CLIENT-008's subject."""

    tp: TopicPartition
    group: str
    owner: str
    to: str
    assigned: Assigned
    polled_before_s: float
    interval_s: float
    owned_from: int
    """The ``seq`` of the owner's assignment its ownership began with."""


@dataclass(frozen=True)
class Excused:
    """An overlap whose earlier owner was a zombie of a suite fault (``zombie_excuse``): counted as data, not a
    violation."""

    overlap: Overlap
    fault: Fault
    gave_up: Event
    bound_s: float
    why: str

    def describe(self) -> str:
        o = self.overlap
        return (
            f"{o.to} was assigned {o.tp} at {o.assigned.at:.1f} s while {o.owner} still owned it; {o.owner} gave it up "
            f"at {self.gave_up.at:.1f} s, after the broker was {self.fault.what} ({self.fault.began:.1f} s to "
            f"{self.fault.healed:.1f} s), within {self.bound_s:g} s of the heal ({self.why}), committing none of it"
        )


def zombie_excuse(history: History, overlap: Overlap) -> Excused | str:
    """Whether ``overlap`` is the classic protocol's window of a member its coordinator removed for a suite fault,
    which Kafka fences rather than forbids (kconform's choice, spec/clients.md CLIENT-008): the excuse, or why not.

    A coordinator removes a member whose heartbeats stop reaching it for its session timeout
    (``GroupMetadataManager``'s "has failed, removing it from the group", Kafka 4.x;
    ``GroupCoordinator.onExpireHeartbeat`` before), and a restarted coordinator starts every loaded member's session
    anew (``onLoaded``); the member learns it at its next heartbeat or from its own session timer, and until then its
    client still owns what it had. Kafka does not promise that member exclusivity: it fences its commits by
    generation (``ClassicGroup.validateOffsetCommit``: UNKNOWN_MEMBER_ID, ILLEGAL_GENERATION). So the overlap is
    excused only when all hold:

    - a suite fault (a broker restart or a node pause, ``history.faults``) had begun before the partition was
      assigned again and lasted long enough to end the owner's session (its session timeout less a heartbeat
      interval and ``TIMING_MARGIN_S``): the owner's heartbeats could not reach the coordinator for that long;
    - the owner then gave the partition up (a revocation, lost or not, its close, or a call of it that hung, which
      LIVE-001 reports), not a new assignment with no revoke between (``UNREVOKED``) nor nothing;
    - the overlap is bounded: from its ownership's start to its give-up, the owner made no poll later than the
      fault's heal plus ``zombie_bound_s`` (its own session timeout, heartbeat interval and request timeout), so it
      learned of its removal when a correct client must (and an owner handed the partition after that was in the
      group after the fault: not its zombie);
    - fencing held: none of the owner's commits of the partition from the overlap's start on (until it was handed
      the partition again) succeeded. A zombie commit that succeeded stays a violation.

    No fault, no excuse: a member removed while every heartbeat could reach its coordinator is another finding."""
    o = overlap
    began = [f for f in faults(history.events) if f.began <= o.assigned.at]
    if not began:
        return "no suite fault had begun before the partition was assigned again"
    session, heartbeat = session_and_heartbeat_s(history, o.owner)
    silent_s = session - heartbeat - TIMING_MARGIN_S
    long_enough = [f for f in began if f.healed - f.began >= silent_s]
    if not long_enough:
        longest = max(f.healed - f.began for f in began)
        return (
            f"no suite fault before the partition was assigned again kept {o.owner}'s heartbeats from its coordinator "
            f"long enough to end its session (the longest lasted {longest:.1f} s; its session is {session:g} s and "
            f"its heartbeat interval {heartbeat:g} s)"
        )
    fault = long_enough[-1]
    gave_up: Event | None = None
    later_polls: list[Polled] = []
    commits: list[Committed] = []
    bound_s, why = zombie_bound_s(history, o.owner)
    for event in history.events:
        if event.seq <= o.owned_from or event.client != o.owner:
            continue
        if isinstance(event, Polled) and event.at > fault.healed + bound_s and gave_up is None:
            later_polls.append(event)  # it still owned the partition, past when a correct client knows
        if event.seq <= o.assigned.seq:
            continue
        if gave_up is None:
            if (isinstance(event, Revoked) and o.tp in event.tps) or isinstance(event, (Closed, Hung)):
                gave_up = event  # a hung client acts no more (its hang is LIVE-001's)
            elif isinstance(event, Assigned):
                return f"{o.owner}'s next ownership event was {type(event).__name__.lower()}, not a revocation"
        if isinstance(event, Assigned) and o.tp in event.tps:
            break
        if isinstance(event, Committed) and event.error is None and o.tp in dict(event.offsets):
            commits.append(event)
    if gave_up is None:
        return f"{o.owner} never gave {o.tp} up"
    if later_polls:
        return (
            f"{o.owner} polled at {later_polls[0].at:.1f} s and still owned {o.tp}, past the fault's heal at "
            f"{fault.healed:.1f} s plus {bound_s:g} s ({why})"
        )
    if commits:
        return (
            f"{o.owner}'s commit of {o.tp} at {committed_offset(commits[0], o.tp)} succeeded at {commits[0].at:.1f} s "
            "while another member owned it: the zombie was not fenced"
        )
    return Excused(o, fault, gave_up, bound_s, why)


def group_member_events(history: History) -> Iterator[tuple[Event, str]]:
    """The events of consumers that are members of a group (subscribed, not assigned by hand), in order, each with
    its member's group."""
    for event in history.events:
        if event.client.startswith("c"):
            info = history.consumer(event.client)
            if info.subscribe != "assign" and info.group is not None:
                yield event, info.group


def _overlaps(history: History) -> Iterator[Overlap]:
    """Every partition assigned to a member of a group while another member that had polled within its
    ``max.poll.interval.ms`` (less ``TIMING_MARGIN_S``) still owned it, by its callbacks."""
    owners: dict[tuple[str, TopicPartition], str] = {}
    since: dict[tuple[str, TopicPartition], int] = {}
    last_poll: dict[str, float] = {}
    for event, group in group_member_events(history):
        if isinstance(event, Polled):
            last_poll[event.client] = event.at
        elif isinstance(event, (Revoked, Closed, Hung)):
            tps = (
                event.tps if isinstance(event, Revoked) else [tp for (g, tp), c in owners.items() if c == event.client]
            )
            for tp in tps:
                if owners.get((group, tp)) == event.client:
                    del owners[(group, tp)]
        elif isinstance(event, Assigned):
            if eager(history, event.client):
                # librdkafka may hand an eager member a new assignment with no revoke of the one before (a rejoin
                # while the application's assign was pending, rd_kafka_cgrp_revoke_all_rejoin): it replaces it
                for key in [k for k, c in owners.items() if c == event.client and k[1] not in event.tps]:
                    del owners[key]
            for tp in event.tps:
                other = owners.get((group, tp))
                if other is not None and other != event.client:
                    interval = int(setting(history, other, "max.poll.interval.ms")) / 1000
                    polled = last_poll.get(other, float("-inf"))
                    if event.at - polled < interval - TIMING_MARGIN_S:
                        yield Overlap(
                            tp,
                            group,
                            other,
                            event.client,
                            event,
                            event.at - polled,
                            interval,
                            since.get((group, tp), -1),
                        )
                owners[(group, tp)] = event.client
                since[(group, tp)] = event.seq


def zombie_overlaps(history: History) -> list[Excused]:
    """The overlaps ``check_single_owner`` excused (``zombie_excuse``), for the report to count."""
    return [e for o in _overlaps(history) if isinstance(e := zombie_excuse(history, o), Excused)]


def check_single_owner(history: History) -> list[Violation]:
    """CLIENT-008: no partition is assigned to a member of a group while another member that is still in the group
    (it polled within its ``max.poll.interval.ms``) owns it, except a zombie of a suite fault that was fenced and
    gave the partition up in time (``zombie_excuse``; counted by ``zombie_overlaps``). An overlap whose earlier owner
    was an eager member that rejoined without revoking is ``UNREVOKED``'s kind."""
    violations: list[Violation] = []
    for o in _overlaps(history):
        excuse = zombie_excuse(history, o)
        if isinstance(excuse, Excused):
            continue
        evidence = (
            f"{o.to} was assigned {o.tp} while {o.owner} still owned it ({o.owner} had polled "
            f"{o.polled_before_s:.1f} s before, within its max.poll.interval.ms of {o.interval_s:g} s)"
        )
        data = tp_fields(o.tp) | {"clients": [o.owner, o.to], "group": o.group, "not_excused": excuse}
        replaced = _replaced_unrevoked(history, o.owner, o.assigned.seq)
        late = None if replaced is not None else _revoked_after_rejoining(history, o)
        if replaced is not None:
            evidence += (
                f"; {o.owner} never revoked it: {replaced.at - o.assigned.at:.1f} s later it was handed a new "
                f"assignment ({', '.join(map(str, replaced.tps)) or 'none'}) with no revoke between, "
                "an eager member that rejoined without revoking"
            )
            data |= {"replaced_at": round(replaced.at, 3), "replaced_by": list(map(str, replaced.tps))}
        elif late is not None:
            began, revoked = late
            evidence += (
                f"; {o.owner} had been handed it in generation {began.generation}, {o.to} in generation "
                f"{o.assigned.generation}, and {o.owner} revoked it {revoked.at - o.assigned.at:.1f} s later, "
                f"already in generation {revoked.generation}: an eager member that rejoined without revoking, and "
                "revoked only afterwards"
            )
            data |= {
                "owned_in_generation": began.generation,
                "handed_in_generation": o.assigned.generation,
                "revoked_at": round(revoked.at, 3),
                "revoked_in_generation": revoked.generation,
            }
        elif faults(history.events):
            evidence += f"; not a fenced zombie of a fault: {excuse}"
        kind = "owned-twice" if replaced is None and late is None else UNREVOKED
        violations.append(Violation("CLIENT-008", kind, evidence, data=data))
    return violations


def check_delivered_owned(history: History) -> list[Violation]:
    """CLIENT-008: a consumer delivers records only of partitions it owns (its callbacks' assignment, or its manual
    one), and a group member none of a topic its subscription no longer covers once the change took effect.

    A poll's records are judged against every partition the consumer owned at some moment of the poll's call (the
    callbacks it served since its last poll, the one that ended it included): what a revocation inside the call
    removed may have been fetched before it. A subscription change takes effect at the member's first revocation
    after it (an eager member revokes everything; a cooperative one, or one of ``group.protocol=consumer``, revokes
    what the new subscription does not cover, before any fetch for it); a partition a callback handed it since the
    change is its own again, which ``delivered-unowned`` judges, not this."""
    violations: list[Violation] = []
    for client, events in consumer_events(history).items():
        manual = history.consumer(client).subscribe == "assign"
        replaces = manual or eager(history, client)
        owned: set[TopicPartition] = set()
        during: set[TopicPartition] = set()
        """Every partition owned since the last poll returned."""
        subscription: Subscribed | None = None
        effective: int | None = None
        """The ``seq`` of the first revocation since the latest subscription change."""
        started = -1
        """The ``seq`` of the consumer's last poll (the current poll's call began after it)."""
        handed: set[TopicPartition] = set()
        """Partitions assigned since the latest subscription change."""
        for event in events:
            if isinstance(event, Subscribed):
                subscription, effective, handed = event, None, set()
            elif isinstance(event, Assigned):
                owned = set(event.tps) if replaces or event.how == "manual" else owned | set(event.tps)
                handed |= set(event.tps)
                during |= owned
            elif isinstance(event, Revoked):
                owned -= set(event.tps)
                if effective is None and subscription is not None:
                    effective = event.seq
            elif isinstance(event, Polled):  # a closed incarnation polls no more: its next is another client
                unowned = sorted({tp for tp, _, _ in event.records if tp not in during})
                uncovered = sorted(
                    {
                        tp
                        for tp, _, _ in event.records
                        if effective is not None
                        and effective < started
                        and subscription is not None
                        and tp in during
                        and tp not in handed
                        and not subscription.covers(tp.topic)
                    }
                )
                for tp in unowned:
                    offsets = [o for t, o, _ in event.records if t == tp]
                    violations.append(
                        Violation(
                            "CLIENT-008",
                            "delivered-unowned",
                            f"{client} delivered {tp} offsets {shown(offsets)}, a partition it did not own "
                            + (
                                "(its manual assignment lacks it)"
                                if manual
                                else "(no callback had assigned it since it lost it, or ever)"
                            ),
                            data=tp_fields(tp) | {"client": client, "offsets": offsets},
                        )
                    )
                for tp in uncovered:
                    offsets = [o for t, o, _ in event.records if t == tp]
                    assert subscription is not None
                    wanted = subscription.pattern or list(subscription.topics)
                    violations.append(
                        Violation(
                            "CLIENT-008",
                            "delivered-unsubscribed",
                            f"{client} delivered {tp} offsets {shown(offsets)} after it subscribed to {wanted} and "
                            f"revoked partitions for it (event {effective}); {tp.topic} is no longer subscribed and no "
                            "callback handed it the partition since",
                            data=tp_fields(tp) | {"client": client, "offsets": offsets, "subscription": wanted},
                        )
                    )
                during, started = set(owned), event.seq
    return violations


def check_group_read_everything(history: History) -> list[Violation]:
    """CLIENT-004 over a whole group, once the drain finished (the per-ownership checks see only what each member
    delivered, not what no member did), for the partitions a live member read to the end: a group that started from the
    earliest offsets and was never sought delivered every record its isolation gives, once the drain finished."""
    if not history.drained:
        return []
    violations: list[Violation] = []
    members: dict[str, list[str]] = defaultdict(list)
    for client in {e.client for e in history.events if e.client.startswith("c")}:
        group = history.consumer(client).group
        if group is not None:
            members[group].append(client)
    sought = {history.consumer(e.client).group for e in of_kind(history, Seeked)}
    for group, clients in sorted(members.items()):
        resets = {setting(history, c, "auto.offset.reset") for c in clients}
        isolations = {setting(history, c, "isolation.level") for c in clients}
        if group in sought or not resets <= EARLIEST or len(isolations) != 1:
            continue
        (isolation,) = isolations
        owned: set[TopicPartition] = set()
        read: dict[TopicPartition, set[int]] = defaultdict(set)
        for event in history.events:
            if event.client in clients and isinstance(event, Assigned):
                owned |= set(event.tps)
            if event.client in clients and isinstance(event, Polled):
                for tp, offset, _ in event.records:
                    read[tp].add(offset)
        for tp in sorted(owned & history.read_to_end.get(group, frozenset())):
            end = history.drain_ends.get(group, {}).get(tp)
            unread = [o for o in visible(history, tp, isolation) if o not in read[tp] and (end is None or o < end)]
            if unread:
                violations.append(
                    Violation(
                        "CLIENT-004",
                        "unread",
                        f"group {group} read {tp} to its end from the earliest offset, but no member delivered offsets "
                        f"{shown(unread)}",
                        data=tp_fields(tp) | {"group": group, "offsets": unread},
                    )
                )
    return violations


BROKER_HELD_BACK: Final = "the broker's transaction coordinator had neither completed nor aborted it"
"""How ``unjudged`` blames a partition still held back on the broker (the reference's own runs accept only this)."""


def unjudged(history: History) -> dict[str, str]:
    """The ids a history could not be judged on in full, each with why (the suite reports them PARTIAL, never
    PASS): CLIENT-001 for the committed transactions' records at or past a partition's last stable offset, which
    an open transaction still held back when the log was read, after the coordinator had had its time to end it
    (``read_log``'s bound). A transaction whose commit returned and which a restarted coordinator does not finish
    is the broker's; the records' fate is unknown, so it is neither a loss nor a pass. LIVE-001 when the run's admin
    client could not describe a group, so whether the groups converged was not judged (``check_converged``)."""
    left: dict[str, str] = {}
    converging = history.convergence
    if converging is not None and converging.unjudged and not converging.suite_fault:
        left["LIVE-001"] = f"whether the groups converged in the drain was not judged: {converging.unjudged}"
    held = history.log.held_back()
    if not held:
        return left
    where = ", ".join(f"{tp} (stable to {stable}, written to {end})" for tp, (stable, end) in held.items())
    return left | {
        "CLIENT-001": "an open transaction still held back "
        + where
        + " when the log was read, so whether the records of committed transactions there are visible to "
        f"read_committed was not judged ({BROKER_HELD_BACK})"
    }


def check_calls_returned(history: History, broker_answers: bool | None) -> list[Violation]:
    """LIVE-001: every client call returned within its bound (while the broker still answered)."""
    if broker_answers is False:
        return []
    return [
        Violation(
            "LIVE-001",
            "hang",
            f"{e.client}'s {e.call} did not return within {e.bound_s:g} s"
            + ("; the broker still answered" if broker_answers else ""),
            data={"client": e.client, "method": e.call, "timeout_s": e.bound_s, "broker_answers": broker_answers},
        )
        for e in of_kind(history, Hung)
        if isinstance(e, Hung)
    ]


CRASHED: Final = "client-crashed"
STDERR_SHOWN: Final = 3
"""Lines of the dead process's standard error an evidence line quotes (its data keeps the whole tail)."""
STACK_LINE: Final = re.compile(
    r"\s+File \"|Stack \(most recent call first\)|Thread 0x|Current thread 0x|Extension modules:"
)
"""Python's fault-handler stack lines, which an evidence line leaves out for the lines that say why (librdkafka's
failed assertion, ``Fatal Python error: Aborted``)."""


def check_not_crashed(history: History, broker_answers: bool | None) -> list[Violation]:
    """LIVE-001: the process running the schedule's clients does not die under them (``Crashed``: a signal, such as
    librdkafka's failed assertion aborting, or an exit the run did not make). Whether the broker answered does not
    excuse it: no broker's answer, or silence, is a client's reason to end its application's process. The evidence
    names how it died, the call each client was in (or last began) and the end of its standard error."""
    found: list[Violation] = []
    for event in of_kind(history, Crashed):
        if not isinstance(event, Crashed):
            continue
        under_way = [f"{client} in {call} (since {at:.1f} s)" for client, call, busy, at in event.last if busy]
        done = [f"{client} last {call} (returned)" for client, call, busy, _ in event.last if not busy]
        tail = [line.strip() for line in event.stderr.splitlines() if line.strip() and not STACK_LINE.match(line)]
        tail = tail[-STDERR_SHOWN:]
        found.append(
            Violation(
                "LIVE-001",
                CRASHED,
                f"the process running the schedule's clients died of {event.how} after {event.at:.1f} s: "
                + "; ".join(under_way + done or ["no client call had begun"])
                + (f"; its stderr ended: {' | '.join(tail)}" if tail else "")
                + ("; the broker still answered" if broker_answers else ""),
                data={
                    "how": event.how,
                    "signal": event.signal,
                    "exit_code": event.exit_code,
                    "at": round(event.at, 3),
                    "last_calls": [
                        {"client": client, "call": call, "under_way": busy, "began_at": round(at, 3)}
                        for client, call, busy, at in event.last
                    ],
                    "stderr_tail": event.stderr,
                    "broker_answers": broker_answers,
                },
            )
        )
    return found


PRODUCER_FAILED: Final = "producer-failed"
"""LIVE-001's kind for a producer's fatal error (``check_clients_failed``); a consumer's is ``client-failed``."""
FENCE_WORDS: Final = re.compile(r"fenced|producer_?epoch", re.IGNORECASE)
"""How a fence reads in a producer's fatal error: librdkafka's ``_FENCED``, ``PRODUCER_FENCED`` and
``INVALID_PRODUCER_EPOCH``, kafka-clients' ``ProducerFencedException`` and ``InvalidProducerEpochException``."""
TRANSACTION_TIMEOUT_MS: Final = 60_000
"""``transaction.timeout.ms`` where a history states none (librdkafka's and kafka-clients' default alike)."""
TRANSACTION_TIMEOUT_SLACK_S: Final = 1.0
"""How much sooner than its ``transaction.timeout.ms`` after its first send a transaction may have begun on the
coordinator (its AddPartitionsToTxn goes out as the send returns, and the send is recorded after)."""


GAPLESS_WORDS: Final = re.compile(r"gap-less", re.IGNORECASE)
"""How librdkafka's ``_GAPLESS_GUARANTEE`` reads ("Gap-less ordering would not be guaranteed if proceeding", and its
fatal error's "unable to satisfy gap-less guarantee")."""


def gapless_as_asked(history: History, failed: Failed) -> bool:
    """Whether ``failed`` is the fatal error librdkafka raises by design for a producer that asked for
    ``enable.gapless.guarantee`` (with ``enable.idempotence``): a batch failed for good, and going on would leave a
    gap (CONFIGURATION.md: it "will raise a fatal error (ERR__GAPLESS_GUARANTEE) and stop the producer")."""
    info = history.info_of(failed.client)
    if info is None or not GAPLESS_WORDS.search(failed.error):
        return False
    return all(
        str(info.settings.get(name) or info.defaults.get(name) or "false").lower() == "true"
        for name in ("enable.gapless.guarantee", "enable.idempotence")
    )


def fenced_by_later_incarnation(history: History, failed: Failed) -> str | None:
    """The later producer of ``failed``'s transactional id (``ClientInfo.transactional_id``) that may have fenced
    it: one whose first event came after the failed producer's first and before its failure. ``None`` when the
    error reads as no fence or no such producer is in the history."""
    info = history.info_of(failed.client)
    if info is None or not info.transactional_id or not FENCE_WORDS.search(failed.error):
        return None
    firsts: dict[str, int] = {}
    for event in history.events:
        firsts.setdefault(event.client, event.seq)
    mine = firsts.get(failed.client, failed.seq)
    for name, first in firsts.items():
        other = history.info_of(name)
        same = name != failed.client and other is not None and other.transactional_id == info.transactional_id
        if same and mine < first < failed.seq:
            return name
    return None


def timed_out_transaction(history: History, failed: Failed) -> tuple[int, float, float] | None:
    """The transaction ``failed``'s producer had open when it failed with an error that reads as a fence, if it had
    been open (from its first send) at least the producer's ``transaction.timeout.ms``, less
    ``TRANSACTION_TIMEOUT_SLACK_S``: the coordinator may have aborted it and bumped the producer's epoch, which the
    producer then meets as a fence. ``(txn, open for s, timeout s)``, else ``None``."""
    info = history.info_of(failed.client)
    if info is None or not info.transactional or not FENCE_WORDS.search(failed.error):
        return None
    first_sent: dict[int, float] = {}
    ended: set[int] = set()
    last: int | None = None
    for event in history.events:
        if event.seq >= failed.seq:
            break
        if event.client != failed.client:
            continue
        if isinstance(event, Sent) and event.txn is not None:
            first_sent.setdefault(event.txn, event.at)
            last = event.txn
        elif isinstance(event, TxnEnded) and event.error is None:
            ended.add(event.txn)
    if last is None or last in ended:
        return None
    raw = info.settings.get("transaction.timeout.ms") or info.defaults.get("transaction.timeout.ms")
    timeout_s = int(raw or TRANSACTION_TIMEOUT_MS) / 1000
    held = failed.at - first_sent[last]
    return (last, held, timeout_s) if held + TRANSACTION_TIMEOUT_SLACK_S >= timeout_s else None


def check_clients_failed(history: History, broker_answers: bool | None) -> list[Violation]:
    """LIVE-001: no client fails of a fatal error of its own (``Failed``) while the broker still answered: a client
    that must be made anew is the client's counterpart of a query that failed. One violation per client, its first
    fatal error, with the call that reported it.

    A consumer's (librdkafka's fatal error) is ``client-failed``: the workload gives a consumer nothing that may
    legitimately end it so (no static membership, whose fencing is fatal by design).

    A producer's (librdkafka's fatal error; kafka-clients' fatal error state, ``Failed``) is ``producer-failed``,
    except what may legitimately end a producer, which the history must show:

    - a fence by a later incarnation of its own transactional id (``fenced_by_later_incarnation``): the error reads
      as a fence and another producer of the same ``transactional_id`` began after it and before the failure.
      Transactions promise exactly that (KIP 98: a new instance's ``initTransactions`` fences the old one);
    - a transaction the coordinator aborted for exceeding ``transaction.timeout.ms`` (``timed_out_transaction``):
      the error reads as a fence and the producer's open transaction had been open, from its first send, for its
      ``transaction.timeout.ms`` (drawn, else its release's default; less ``TRANSACTION_TIMEOUT_SLACK_S``). The
      coordinator then aborts it and bumps the producer's epoch (KIP 588), which the producer meets as a fence.

    The application may also ask for a fatal error: a librdkafka producer that set ``enable.gapless.guarantee``
    (a drawn setting) is stopped by design when a batch fails for good (``gapless_as_asked``), which is not excused
    otherwise. Nothing else excuses a producer: an idempotent producer's sequence or epoch gone wrong, a batch it cannot
    rebuild, a retriable answer taken for fatal are the client's own failures, broker faults or not (each is judged
    only while the broker still answered at the end, as a consumer's)."""
    if broker_answers is False:
        return []
    first: dict[str, Failed] = {}
    for event in of_kind(history, Failed):
        if isinstance(event, Failed):
            first.setdefault(event.client, event)
    still = "; the broker still answered" if broker_answers else ""
    found: list[Violation] = []
    for e in first.values():
        info = history.info_of(e.client)
        if info is None or not info.producer:
            found.append(
                Violation(
                    "LIVE-001",
                    "client-failed",
                    f"{e.client} failed with a fatal error ({e.error}){still}",
                    data={"client": e.client, "error": e.error, "call": e.call, "broker_answers": broker_answers},
                )
            )
            continue
        if (
            fenced_by_later_incarnation(history, e) is not None
            or timed_out_transaction(history, e) is not None
            or gapless_as_asked(history, e)
        ):
            continue
        found.append(
            Violation(
                "LIVE-001",
                PRODUCER_FAILED,
                f"producer {e.client} failed with a fatal error"
                + (f" in {e.call}" if e.call else "")
                + f" ({e.error}) at {e.at:.1f} s, neither fenced by a later producer of its transactional id nor"
                f" with a transaction open past its transaction.timeout.ms{still}",
                data={
                    "client": e.client,
                    "error": e.error,
                    "call": e.call,
                    "at": e.at,
                    "transactional": None if (info := history.info_of(e.client)) is None else info.transactional,
                    "broker_answers": broker_answers,
                },
            )
        )
    return found


REBALANCED_WITHOUT: Final = "rebalanced-leaving-topics-unassigned"
"""LIVE-001's kind for a group that did not converge because it kept rebalancing, each rebalance completing with
whole topics its live members subscribe to handed to no member (``rebalanced_without``): a leader that assigns
from metadata lacking those topics and then rejoins because its metadata changed. Any other group that did not
converge is ``never-converged``."""
REBALANCES_SEEN: Final = 3
"""How many assignments one live member must have been handed in the drain for ``rebalanced_without`` to call the
group one that kept rebalancing: a group converging late completes a rebalance or two in the drain, not three."""


def rebalanced_without(history: History, view: GroupView, since: float | None) -> tuple[int, list[str]]:
    """A group that did not converge, as the drain saw it from ``since`` on and among its live members at the end:
    how many assignments (rebalances completed) its most often handed live member received, and the topics its
    live members subscribe to, which the broker listed, of which no assignment in that time handed any partition and
    no live member owns one at the end. "That time" begins at the drain's start, or later at the first assignment
    in the drain of the live member handed its first one last (``members_since``): a member that joined in the drain
    (the late member) changes who the leader assigns for, so rebalances before it joined tell nothing of the loop
    after. ``(n, [])`` when any of that is unknown (no drain start, no listing)."""
    if since is None or not view.subscribed:
        return 0, []
    names = {member for member, _ in view.members}
    since = members_since(history, names, since)
    handed = [e for e in history.events if isinstance(e, Assigned) and e.client in names and e.at >= since]
    counts: dict[str, int] = defaultdict(int)
    for event in handed:
        counts[event.client] += 1
    reached = {tp.topic for e in handed for tp in e.tps} | {tp.topic for _, tps in view.members for tp in tps}
    return max(counts.values(), default=0), sorted({tp.topic for tp in view.subscribed} - reached)


def members_since(history: History, names: Collection[str], since: float) -> float:
    """When the group's members ``names`` were first all handed an assignment from ``since`` on: the latest of each
    one's first ``Assigned`` at or after ``since`` (``since`` itself when none of them was handed one)."""
    first: dict[str, float] = {}
    for event in history.events:
        if isinstance(event, Assigned) and event.client in names and event.at >= since:
            first.setdefault(event.client, event.at)
    return max(first.values(), default=since)


def check_converged(history: History, broker_answers: bool | None) -> list[Violation]:
    """LIVE-001: once the schedule's faults are healed and every live consumer polls, each group converges and each
    owner starts its partitions, within the group's own time-outs and the suite's slack (``Convergence``), while
    the broker still answers: ``never-converged`` for a group the broker does not describe as stable with exactly
    the run's live members, each owning what the broker assigned it (a member that never rejoins, a rebalance that
    never completes); ``owned-never-started`` for a partition a live consumer owns, with records past where it
    would start, of which it delivered nothing and has no position (a position fetch that never completes).
    A group that kept rebalancing in the drain (a live member handed ``REBALANCES_SEEN`` assignments or more) while
    no assignment handed a partition of a topic its live members subscribe to is ``REBALANCED_WITHOUT`` instead of
    ``never-converged``: the same failure, told by what the history shows of its cause.
    Nothing when the history could not tell: the drain's wait judged nothing (``Convergence.unjudged``) or the broker
    did not answer; nor for a group one of whose members had failed with a fatal error (``Failed``): such a member can
    no longer take part in its group, which is then waited for in vain, and its failure is already LIVE-001
    ``client-failed`` (``check_clients_failed``), one finding for one cause."""
    converging = history.convergence
    if converging is None or broker_answers is False or converging.suite_fault:
        return []
    answered = "; the broker still answered" if broker_answers else ""
    failed = {e.client for e in of_kind(history, Failed)}
    found: list[Violation] = []
    for view in converging.groups if not converging.unjudged else ():
        if view.converged or failed & {member for member, _ in view.members}:
            continue
        described = {member: [str(tp) for tp in tps] for member, tps in view.described}
        owners = {member: [str(tp) for tp in tps] for member, tps in view.members}
        rebalances, unassigned = rebalanced_without(history, view, converging.began_at)
        looped = rebalances >= REBALANCES_SEEN and bool(unassigned)
        found.append(
            Violation(
                "LIVE-001",
                REBALANCED_WITHOUT if looped else "never-converged",
                (
                    f"group {view.group} kept rebalancing (a member handed {rebalances} assignments in the drain) "
                    f"and no assignment handed any partition of {unassigned}, which its live members subscribe to "
                    "and the broker lists; "
                    if looped
                    else ""
                )
                + f"group {view.group} ({view.protocol} protocol) was {view.state or 'not described'} with "
                f"{len(view.described)} member(s) {described} after {converging.waited_s:g} s of the drain "
                f"(bound {converging.bound_s:g} s: {converging.why}), while its live members owned {owners}"
                + (
                    f"; their callbacks last moved a partition at {view.last_callback_at:g} s"
                    if view.last_callback_at is not None
                    else ""
                )
                + answered,
                data={
                    "group": view.group,
                    "protocol": view.protocol,
                    "state": view.state,
                    "described": described,
                    "owners": owners,
                    "state_changes": [list(c) for c in view.changes],
                    "last_callback_at": view.last_callback_at,
                    "rebalances": rebalances,
                    "unassigned_topics": unassigned,
                    "waited_s": converging.waited_s,
                    "bound_s": converging.bound_s,
                    "broker_answers": broker_answers,
                },
            )
        )
    for unstarted in converging.unstarted:
        found.append(
            Violation(
                "LIVE-001",
                "owned-never-started",
                f"{unstarted.client} owned {unstarted.tp} from {unstarted.owned_since:g} s with records "
                f"{unstarted.start} to {unstarted.end} to read, but delivered none of them and had no position after "
                f"{converging.waited_s:g} s of the drain (bound {converging.bound_s:g} s: {converging.why})" + answered,
                data=tp_fields(unstarted.tp)
                | {
                    "client": unstarted.client,
                    "start": unstarted.start,
                    "end": unstarted.end,
                    "owned_since": unstarted.owned_since,
                    "waited_s": converging.waited_s,
                    "bound_s": converging.bound_s,
                    "broker_answers": broker_answers,
                },
            )
        )
    return found


EXPELLED: Final = "expelled-while-polling"
"""LIVE-001's kind for a group member that lost its partitions (its lost callback: kafka-clients'
``onPartitionsLost``, librdkafka's ``REVOKE_PARTITIONS`` with the assignment lost) while it kept polling and no
fault was near (``check_not_expelled``)."""
WORKLOAD_SESSION_S: Final = 6.0
"""A classic member's session timeout where none is drawn: the workload's own (``driver.SESSION_MS``), the least any
member has (the broker's ``group.min.session.timeout.ms``)."""
CLASSIC_HEARTBEAT_S: Final = 3.0
"""A classic member's heartbeat interval where none is drawn: the clients' default (librdkafka's CONFIGURATION.md,
kafka-clients' ``ConsumerConfig``), above the workload's own 1 s, so a judged member's polls must be the denser."""
CONSUMER_HEARTBEAT_S: Final = 5.0
"""A ``group.protocol=consumer`` member's heartbeat interval, which the broker sets
(``group.consumer.heartbeat.interval.ms``, 5 s by default: ``GroupCoordinatorConfig``; the suite's brokers leave it)."""
CONSUMER_SESSION_S: Final = 45.0
"""A ``group.protocol=consumer`` member's session (``group.consumer.session.timeout.ms``, 45 s by default)."""
MIN_JUDGED_GAP_S: Final = 1.0
"""Below this many seconds between polls allowed, a member's settings leave no room to judge an expulsion."""


def expel_bounds(history: History, client: str) -> tuple[float, float, float, float]:
    """A member's rebalance timeout ``R`` (its ``max.poll.interval.ms``), heartbeat interval ``H`` and session
    ``S`` (drawn, else the least the workload or the broker gives it, else the clients' default), and the longest gap
    ``G`` between two of its polls under which a correct member keeps its membership: ``min((R - H) / 2, S) -
    TIMING_MARGIN_S`` (``check_not_expelled``)."""
    info = history.consumer(client)
    poll = int(setting(history, client, "max.poll.interval.ms")) / 1000
    if setting(history, client, "group.protocol").strip().lower() == "consumer":
        heartbeat, session = CONSUMER_HEARTBEAT_S, CONSUMER_SESSION_S
    else:
        heartbeat = int(info.settings.get("heartbeat.interval.ms") or CLASSIC_HEARTBEAT_S * 1000) / 1000
        session = int(info.settings.get("session.timeout.ms") or WORKLOAD_SESSION_S * 1000) / 1000
    gap = min((poll - heartbeat) / 2, session) - TIMING_MARGIN_S
    return poll, heartbeat, session, gap


def check_not_expelled(history: History, broker_answers: bool | None) -> list[Violation]:
    """LIVE-001: a group member that keeps polling, with no fault near, is never expelled from its group: it loses
    no partition as lost (kafka-clients' ``onPartitionsLost``: "the consumer is being kicked out of the group";
    librdkafka's assignment lost), which only its group's coordinator removing it causes.

    A classic group's coordinator removes a member whose session expired or that did not rejoin within its rebalance
    timeout (its ``max.poll.interval.ms``) of a rebalance's start (``GroupMetadataManager.prepareRebalance``,
    ``maybeCompleteJoinElseSchedule``); a consumer-protocol group's fences one that did not revoke within it. A
    correct member learns of a rebalance by its next heartbeat (``H``) and rejoins, or revokes, on its next poll, and
    its heartbeats run beside its polls; one that polls at least every ``G = min((R - H) / 2, S) - 2 s``
    (``expel_bounds``) therefore rejoins every rebalance in time, at least twice over (a first poll may only send
    the commit a rejoin waits for). The loss is served by a poll after the member learnt of its removal, which its
    heartbeat tells it within ``H`` of the removal, and the removal ends a rebalance that started ``R`` before. So a
    rebalance that removed it started no earlier than ``R + H`` before the call before the one that served the loss
    began, and the member had to rejoin from ``H`` after that: its last poll before the loss less ``R`` and 2 s.
    Judged for a lost callback at ``T`` when, from then to ``T``, the incarnation polled with no gap longer than
    ``G`` (poll returns, so a poll that took long counts as a gap: a driver or machine stalling its polls is no
    expulsion), no broker fault was in force (``history.faults``: from its start to its heal) within that window and
    a session more, the incarnation did not hang, and the broker still answered. Nothing when ``G`` is under
    ``MIN_JUDGED_GAP_S``."""
    if broker_answers is False:
        return []
    run_faults = faults(history.events)
    polls: dict[str, list[float]] = defaultdict(list)
    found: list[Violation] = []
    for event, group in group_member_events(history):
        if isinstance(event, Polled):
            polls[event.client].append(event.at)
            continue
        if not (isinstance(event, Revoked) and event.lost and event.tps):
            continue
        if any(isinstance(e, Hung) and e.client == event.client and e.seq < event.seq for e in history.events):
            continue
        poll, heartbeat, session, gap = expel_bounds(history, event.client)
        if gap < MIN_JUDGED_GAP_S:
            continue
        at, times = event.at, polls[event.client]
        if not times:
            continue
        since = times[-1] - poll - TIMING_MARGIN_S
        if any(f.began <= at and f.healed >= since - session for f in run_faults):
            continue
        before = [t for t in times if t <= since]
        points = [before[-1] if before else times[0], *[t for t in times if t > since], at]
        if not before and any(
            isinstance(e, Revoked | Assigned) and e.client == event.client and e.at < times[0] for e in history.events
        ):
            continue  # it owned partitions before its first poll: its gaps from then are unknown
        widest = max(b - a for a, b in pairwise(points))
        if widest > gap:
            continue
        found.append(
            Violation(
                "LIVE-001",
                EXPELLED,
                f"{event.client} lost {', '.join(map(str, event.tps))} at {at:.1f} s (its group expelled it) though it "
                f"had polled at least every {widest:.1f} s since {max(since, points[0]):.1f} s, which with its "
                f"rebalance timeout (max.poll.interval.ms) of {poll:g} s, heartbeat interval of {heartbeat:g} s and "
                f"session of {session:g} s a member that rejoins when told keeps its membership by (polls every "
                f"{gap:.1f} s at most), and no broker fault came since {since - session:.1f} s"
                + ("; the broker still answered" if broker_answers else ""),
                data={
                    "client": event.client,
                    "group": group,
                    "lost": [str(tp) for tp in event.tps],
                    "at": round(at, 3),
                    "widest_gap_s": round(widest, 3),
                    "allowed_gap_s": round(gap, 3),
                    "polls_judged": len(points) - 1,
                    "since": round(since, 3),
                    "max_poll_interval_s": poll,
                    "heartbeat_s": heartbeat,
                    "session_s": session,
                    "broker_answers": broker_answers,
                },
            )
        )
    return found


SAFETY_CHECKERS: Final = (
    check_acknowledged_in_log,
    check_written_once,
    check_send_order,
    check_consumer_continuity,
    check_start_positions,
    check_committed_fetches,
    check_read_committed,
    check_commits,
    check_commit_answers,
    check_single_owner,
    check_delivered_owned,
    check_group_read_everything,
)


def check_history(history: History, broker_answers: bool | None) -> list[Violation]:
    """Every checker's violations, liveness last."""
    found: list[Violation] = []
    for checker in SAFETY_CHECKERS:
        found += checker(history)
    return (
        found
        + check_calls_returned(history, broker_answers)
        + check_not_crashed(history, broker_answers)
        + check_clients_failed(history, broker_answers)
        + check_converged(history, broker_answers)
        + check_not_expelled(history, broker_answers)
    )
