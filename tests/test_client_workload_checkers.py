"""The client workload's checkers on hand-made histories: each anomaly is caught, and its correct twin passes."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any, Final

import hypothesis
import pytest
from hypothesis import find

from kconform.conformance.checks import client_workload_checkers as cw
from kconform.conformance.workloads.clients.history import (
    Acked,
    Assigned,
    ClientInfo,
    Committed,
    Convergence,
    Crashed,
    Event,
    Failed,
    FetchedCommitted,
    GroupView,
    History,
    Hung,
    Log,
    Note,
    Paused,
    Polled,
    Revoked,
    Seeked,
    Sent,
    Stored,
    Subscribed,
    TxnEnded,
    Unstarted,
    faults,
    rebalances_eagerly,
)
from kconform.conformance.workloads.clients.schedule import (
    MAX_ASSIGNED,
    MAX_MEMBERS,
    ConsumerPlan,
    ProducerPlan,
    Schedule,
    Step,
    StepKind,
    describe,
    schedules,
    step_strategy,
)
from kconform.reference_impl.types import TopicPartition

TP = TopicPartition("t", 0)
TP1 = TopicPartition("t", 1)


class Events:
    """Events in order, ``seq`` and ``at`` (one second apart unless told) given as they are added."""

    def __init__(self) -> None:
        self.events: list[Event] = []
        self.at = 0.0

    def add(self, kind: type[Event], client: str, after_s: float = 1.0, **fields: Any) -> Events:
        self.at += after_s
        self.events.append(kind(seq=len(self.events), client=client, at=self.at, **fields))
        return self


def history(
    events: Events,
    log: dict[TopicPartition, list[int]],
    committed: dict[TopicPartition, set[int]] | None = None,
    clients: dict[str, ClientInfo] | None = None,
    drained: bool = True,
) -> History:
    records = {tp: [(o, f"v{o}".encode()) for o in offsets] for tp, offsets in log.items()}
    visible = committed if committed is not None else {tp: set(offsets) for tp, offsets in log.items()}
    ends = {tp: (max(offsets) + 1 if offsets else 0) for tp, offsets in log.items()}
    info = clients or {
        "p0": ClientInfo({"enable.idempotence": "true"}),
        "c0": ClientInfo({"auto.offset.reset": "earliest"}, "g", "topics"),
        "c1": ClientInfo({"auto.offset.reset": "earliest"}, "g", "topics"),
    }
    log_read = Log(records, {tp: frozenset(v) for tp, v in visible.items()}, ends)
    return History(tuple(events.events), info, log_read, drained, {"g": frozenset(log)})


def polled(*offsets: int, tp: TopicPartition = TP) -> dict[str, Any]:
    return {"records": tuple((tp, o, f"v{o}".encode()) for o in offsets)}


def kinds(violations: list[cw.Violation]) -> list[tuple[str, str]]:
    return sorted({(v.requirement, v.kind) for v in violations})


def test_an_acknowledged_record_missing_from_the_log_is_lost() -> None:
    events = (
        Events().add(Sent, "p0", value=b"v3", topic="t", partition=0).add(Acked, "p0", value=b"v3", tp=TP, offset=3)
    )
    assert kinds(cw.check_acknowledged_in_log(history(events, {TP: [0, 1, 2]}))) == [("CLIENT-001", "lost-write")]
    assert cw.check_acknowledged_in_log(history(events, {TP: [0, 1, 2, 3]})) == []


def test_a_committed_transactions_record_invisible_to_read_committed_is_lost() -> None:
    events = (
        Events()
        .add(Sent, "p0", value=b"v1", topic="t", partition=0, txn=1)
        .add(TxnEnded, "p0", txn=1, outcome="commit")
    )
    assert kinds(cw.check_acknowledged_in_log(history(events, {TP: [1]}, {TP: set()}))) == [
        ("CLIENT-001", "lost-committed-write")
    ]
    assert cw.check_acknowledged_in_log(history(events, {TP: [1]}, {TP: {1}})) == []


def test_a_committed_record_an_open_transaction_still_holds_back_is_not_judged_but_named_partial() -> None:
    """A restarted coordinator that never ends a transaction holds the partition's last stable offset below its
    records: whether they are committed cannot be read, so CLIENT-001 neither fails nor passes on them."""
    events = (
        Events()
        .add(Sent, "p0", value=b"v0", topic="t", partition=0, txn=1)
        .add(Sent, "p0", value=b"v1", topic="t", partition=0, txn=1)
        .add(TxnEnded, "p0", txn=1, outcome="commit")
    )
    read = history(events, {TP: [0, 1]}, {TP: set()})
    held = History(read.events, read.clients, replace(read.log, stable_ends={TP: 1}), read.drained)
    assert held.log.held_back() == {TP: (1, 2)}
    # offset 0 lies below the stable end: read_committed would show it were it committed, so it is lost
    assert [v.data["value"] for v in cw.check_acknowledged_in_log(held)] == ["v0"]
    assert (
        set(cw.unjudged(held)) == {"CLIENT-001"}
        and "t-0 (stable to 1, written to 2)" in cw.unjudged(held)["CLIENT-001"]
    )
    stable = History(read.events, read.clients, replace(read.log, stable_ends={TP: 2}), read.drained)
    assert cw.unjudged(stable) == {} and len(cw.check_acknowledged_in_log(stable)) == 2


def test_an_idempotent_producers_record_twice_in_the_log_is_a_duplicate_and_a_plain_ones_is_not() -> None:
    events = Events().add(Sent, "p0", value=b"v1", topic="t", partition=0)
    log = History((), {}, Log({TP: [(0, b"p0-1"), (1, b"p0-1")]}, {TP: frozenset({0, 1})}), True)
    sent = Events().add(Sent, "p0", value=b"p0-1", topic="t", partition=0)
    idempotent = History(tuple(sent.events), {"p0": ClientInfo({"enable.idempotence": "true"})}, log.log, True)
    plain = History(tuple(sent.events), {"p0": ClientInfo({})}, log.log, True)
    assert kinds(cw.check_written_once(idempotent)) == [("CLIENT-002", "duplicate-write")]
    assert cw.check_written_once(plain) == []
    assert events.events  # the builder itself


def test_an_idempotent_producers_records_out_of_send_order_are_reordered() -> None:
    sent = (
        Events()
        .add(Sent, "p0", value=b"p0-0", topic="t", partition=0)
        .add(Sent, "p0", value=b"p0-1", topic="t", partition=0)
    )
    info = {"p0": ClientInfo({"enable.idempotence": "true"})}
    swapped = History(tuple(sent.events), info, Log({TP: [(0, b"p0-1"), (1, b"p0-0")]}, {TP: frozenset({0, 1})}), True)
    kept = History(tuple(sent.events), info, Log({TP: [(0, b"p0-0"), (1, b"p0-1")]}, {TP: frozenset({0, 1})}), True)
    assert kinds(cw.check_send_order(swapped)) == [("CLIENT-003", "reordered")]
    assert cw.check_send_order(kept) == []


def paused_after_three() -> Events:
    """An assigned consumer that delivered offsets 0-2, then was paused and resumed."""
    return (
        Events()
        .add(Assigned, "c0#0", tps=(TP,), how="manual")
        .add(Polled, "c0#0", **polled(0, 1, 2))
        .add(Paused, "c0#0", tps=(TP,))
        .add(Paused, "c0#0", tps=(TP,), resumed=True)
    )


@pytest.mark.parametrize(
    ("second", "want"),
    [((3, 4), []), ((1, 2), [("CLIENT-004", "redelivered")]), ((4,), [("CLIENT-004", "skipped")])],
)
def test_a_consumer_reads_on_after_a_pause_and_resume_from_the_next_record(second: tuple[int, ...], want: list) -> None:
    events = paused_after_three().add(Polled, "c0#0", **polled(*second))
    assert kinds(cw.check_consumer_continuity(history(events, {TP: [0, 1, 2, 3, 4]}))) == want


@pytest.mark.parametrize(
    ("end", "again", "want"),
    [
        (None, (0, 1, 2), [("CLIENT-004", "redelivered")]),  # read to the last record, then handed it all again
        (3, (2,), [("CLIENT-004", "redelivered")]),  # read to the end it reported, then handed the last record again
        (3, (), []),
    ],
)
def test_a_consumer_that_read_everything_and_is_handed_it_again_redelivered(
    end: int | None, again: tuple[int, ...], want: list
) -> None:
    """Once a consumer delivered every record the final log gives (nothing left to expect next), a record below
    what it delivered, or below the end it reported, is still a redelivery: librdkafka 2.3.0's resume of a partition
    that was not paused refetched from where the fetch had started (librdkafka-4636), which a run meets at the drain's
    resume after reading to the end. Until 2026-12-02 the checker read nothing there."""
    events = Events().add(Assigned, "c0#0", tps=(TP,), how="manual").add(Polled, "c0#0", **polled(0, 1, 2))
    if end is not None:
        events.add(Polled, "c0#0", records=(), eofs=((TP, end),))
    events.add(Polled, "c0#0", **polled(*again))
    found = cw.check_consumer_continuity(history(events, {TP: [0, 1, 2]}))
    assert kinds(found) == want
    if want:
        assert found[0].data["offset"] == again[0] and found[0].data["want"] == 3


def test_a_seek_moves_where_the_consumer_reads_on_and_a_gap_of_aborted_records_is_no_skip() -> None:
    events = (
        Events()
        .add(Assigned, "c0#0", tps=(TP,), how="manual")
        .add(Polled, "c0#0", **polled(0, 1, 4))
        .add(Seeked, "c0#0", tp=TP, offset=1)
        .add(Polled, "c0#0", **polled(1, 4))
    )
    assert cw.check_consumer_continuity(history(events, {TP: [0, 1, 2, 3, 4]}, {TP: {0, 1, 4}})) == []


@pytest.mark.parametrize(
    ("end", "records", "want"),
    [
        (3, (), []),  # everything below the end was delivered
        (5, (), [("CLIENT-004", "skipped")]),  # the end reported past records never delivered
        (5, (3, 4), []),  # the same batch delivered them
        (5, (4,), [("CLIENT-004", "skipped")]),  # 3 skipped in the batch itself
    ],
)
def test_an_end_of_partition_event_past_records_never_delivered_is_a_skip(
    end: int, records: tuple[int, ...], want: list
) -> None:
    """A consumer that delivered 0-2, was paused and resumed, then reports the end at ``end``: the records between
    (a batch a pause dropped, its position saved past them) were skipped. Aborted records are no skip."""
    events = paused_after_three().add(Polled, "c0#0", **polled(*records), eofs=((TP, end),))
    got = cw.check_consumer_continuity(history(events, {TP: [0, 1, 2, 3, 4]}))
    assert kinds(got) == want
    assert all(v.data["offsets"] == [3] or v.data["offsets"] == [3, 4] for v in got)
    aborted = cw.check_consumer_continuity(history(events, {TP: [0, 1, 2, 3, 4]}, {TP: {0, 1, 2}}))
    assert aborted == []


def test_an_end_reported_by_a_consumer_that_has_not_started_reading_is_no_skip() -> None:
    """An assignment at the end (LATEST) reports the end before any record: where it started is not known."""
    events = Events().add(Assigned, "c0#0", tps=(TP,), how="manual").add(Polled, "c0#0", **polled(), eofs=((TP, 5),))
    assert cw.check_consumer_continuity(history(events, {TP: [0, 1, 2, 3, 4]})) == []


@pytest.mark.parametrize(("position", "want"), [(3, []), (4, [("CLIENT-004", "position-past-end")])])
def test_a_position_after_the_end_of_partition_event_is_the_end(position: int, want: list) -> None:
    events = (
        Events()
        .add(Assigned, "c0#0", tps=(TP,), how="manual")
        .add(Polled, "c0#0", **polled(0, 1, 2), eofs=((TP, 3),), positions=((TP, position),))
    )
    assert kinds(cw.check_consumer_continuity(history(events, {TP: [0, 1, 2]}))) == want


@pytest.mark.parametrize(
    ("first", "want"),
    [(2, []), (0, [("CLIENT-005", "started-before-committed")]), (3, [("CLIENT-005", "started-after-committed")])],
)
def test_a_partition_handed_over_starts_at_the_groups_committed_offset(first: int, want: list) -> None:
    events = (
        Events()
        .add(Assigned, "c0#0", tps=(TP,), how="rebalance")
        .add(Polled, "c0#0", **polled(0, 1))
        .add(Committed, "c0#0", group="g", offsets=((TP, 2),))
        .add(Revoked, "c0#0", tps=(TP,))
        .add(Assigned, "c1#0", tps=(TP,), how="rebalance")
        .add(Polled, "c1#0", **polled(first))
    )
    assert kinds(cw.check_start_positions(history(events, {TP: [0, 1, 2, 3]}))) == want


@pytest.mark.parametrize(
    ("reset", "first", "want"),
    [
        ("earliest", 0, []),  # out of range: the reset's first record
        ("earliest", 1, [("CLIENT-005", "started-after-committed")]),  # neither the commit nor the reset
        ("latest", 0, []),  # the end when it started, which the history does not hold: not judged
    ],
)
def test_a_start_from_a_commit_past_the_logs_end_is_where_auto_offset_reset_says(
    reset: str, first: int, want: list
) -> None:
    """librdkafka-5213's commit one past the end (2 of a partition whose end is 1), then a member that joins and is
    handed the partition: the fetch from 2 is out of range and the member resets (seen on confluent-kafka 2.2.0 with
    the late member); the past-end commit is CLIENT-007's."""
    events = (
        Events()
        .add(Assigned, "c0#0", tps=(TP,), how="rebalance")
        .add(Polled, "c0#0", **polled(0))
        .add(Committed, "c0#0", group="g", offsets=((TP, 2),))
        .add(Revoked, "c0#0", tps=(TP,))
        .add(Assigned, "c1#0", tps=(TP,), how="rebalance")
        .add(Polled, "c1#0", **polled(first))
    )
    clients = {
        "c0": ClientInfo({"auto.offset.reset": "earliest"}, "g", "topics"),
        "c1": ClientInfo({"auto.offset.reset": reset}, "g", "topics"),
    }
    assert kinds(cw.check_start_positions(history(events, {TP: [0]}, clients=clients))) == want
    assert kinds(cw.check_commits(history(events, {TP: [0]}, clients=clients))) == [
        ("CLIENT-007", "committed-past-end")
    ]


def test_a_commit_below_one_past_the_end_is_not_backward_and_below_one_in_range_is() -> None:
    """The group recovering from a commit past the end (a member reset commits the true end) moves back over no
    record; a commit below one the log has still does."""
    events = (
        Events()
        .add(Committed, "c0#0", group="g", offsets=((TP, 6),))
        .add(Committed, "c1#0", group="g", offsets=((TP, 5),))
        .add(Committed, "c1#0", group="g", offsets=((TP, 4),))
    )
    assert kinds(cw.check_commits(history(events, {TP: [0, 1, 2, 3, 4]}))) == [
        ("CLIENT-007", "committed-backward"),
        ("CLIENT-007", "committed-past-end"),
    ]
    got = cw.check_commits(history(events, {TP: [0, 1, 2, 3, 4]}))
    backward = [v for v in got if v.kind == "committed-backward"]
    assert [(v.data["got"], v.data["want"]) for v in backward] == [(4, 5)]


STALE = "STALE_MEMBER_EPOCH: Broker: The member epoch is stale"


@pytest.mark.parametrize(
    ("answer", "want"),
    [
        # librdkafka #5199's shape: c0's commit of offset 3 was answered STALE_MEMBER_EPOCH, yet c1 starts at 3
        ("definite", [("CLIENT-009", "commit-misreported")]),
        # the same error on a commit of another partition explains nothing: a start at 3 is a skip
        ("other-partition", [("CLIENT-005", "started-after-committed")]),
        # a history from before failures were kept (the partition dropped from the answer): read as a skip
        ("dropped", [("CLIENT-005", "started-after-committed")]),
        # a timeout leaves it open whether the commit applied: a start there is allowed, and no misreport
        ("ambiguous", []),
        # the group then held what was committed before (2): the failure was true, nothing to say
        ("held-before", []),
        # a commit of the same offset answered success, its callback served after the start: it may be what held it
        ("success-later", []),
    ],
)
def test_a_start_at_a_commit_the_client_said_failed_is_a_misreported_commit_not_a_skip(answer: str, want: list) -> None:
    """CLIENT-009 apart from CLIENT-005: the client answered a commit's partition with an error, but the group held
    its offset, as the next owner's start there shows. Without the failure kept in the history, the same start reads
    as a skip (started-after-committed), redder than the evidence; with it, the skip is gone and the answer is
    judged."""
    failed = {
        "definite": ((TP, 3, STALE, False),),
        "other-partition": ((TP1, 3, STALE, False),),
        "dropped": (),
        "ambiguous": ((TP, 3, "_TIMED_OUT: Local: Timed out", True),),
        "held-before": ((TP, 3, STALE, False),),
        "success-later": ((TP, 3, STALE, False),),
    }[answer]
    first = 2 if answer == "held-before" else 3
    events = (
        Events()
        .add(Assigned, "c0#0", tps=(TP,), how="rebalance")
        .add(Polled, "c0#0", **polled(0, 1))
        .add(Committed, "c0#0", group="g", offsets=((TP, 2),))
        .add(Polled, "c0#0", **polled(2))
        .add(Committed, "c0#0", group="g", offsets=(), error=None if answer == "dropped" else STALE, failed=failed)
        .add(Revoked, "c0#0", tps=(TP,))
        .add(Assigned, "c1#0", tps=(TP,), how="rebalance")
        .add(Polled, "c1#0", **polled(first))
    )
    if answer == "success-later":
        events.add(Committed, "c0#0", group="g", offsets=((TP, 3),))
    judged = history(events, {TP: [0, 1, 2, 3], TP1: [0, 1, 2, 3]})
    found = cw.check_start_positions(judged) + cw.check_commit_answers(judged)
    assert kinds(found) == want
    if answer == "definite":
        (misreported,) = found
        assert misreported.data["offset"] == 3 and misreported.data["error"] == STALE
        assert misreported.data["committed_before"] == 2 and misreported.data["held_by"] == "c1#0"


def test_a_commit_answer_keeps_each_failed_partition_with_its_offset_and_error() -> None:
    """The driver's reading of a commit's answer (``on_commit``, a sync commit's result): a partition with an error is
    kept apart, with the offset asked and whether the error leaves the outcome open, not dropped; a call that failed as
    a whole with no per-partition error (kafka-clients' ``commitAsync``, as the harness hands it over) fails each."""
    from types import SimpleNamespace

    import confluent_kafka as ck

    from kconform.conformance.workloads.clients.driver import commit_answer

    def part(partition: int, offset: int, error: ck.KafkaError | None = None) -> Any:
        return SimpleNamespace(topic="t", partition=partition, offset=offset, error=error)

    stale, timeout = ck.KafkaError(ck.KafkaError.STALE_MEMBER_EPOCH), ck.KafkaError(ck.KafkaError._TIMED_OUT)
    offsets, failed = commit_answer(None, [part(0, 2), part(1, 3, stale), part(2, -1001, stale)])
    assert offsets == ((TP, 2),)
    assert [(tp, o, ambiguous) for tp, o, _, ambiguous in failed] == [(TP1, 3, False)]
    assert failed[0][2].startswith("STALE_MEMBER_EPOCH")
    offsets, failed = commit_answer(timeout, [part(0, 2), part(1, 3)])
    assert offsets == () and [(tp, o, ambiguous) for tp, o, _, ambiguous in failed] == [(TP, 2, True), (TP1, 3, True)]
    retriable = ck.KafkaError(ck.KafkaError._FAIL, "RetriableCommitFailedException: retry", retriable=True)
    refused = ck.KafkaError(ck.KafkaError._FAIL, "CommitFailedException: not a member")
    assert [f[3] for f in commit_answer(retriable, [part(0, 2)])[1] + commit_answer(refused, [part(0, 2)])[1]] == [
        True,
        False,
    ]


def test_a_read_committed_consumer_that_delivers_an_aborted_record_is_caught() -> None:
    events = (
        Events()
        .add(Sent, "p0", value=b"v1", topic="t", partition=0, txn=1)
        .add(TxnEnded, "p0", txn=1, outcome="abort")
        .add(Assigned, "c0#0", tps=(TP,), how="manual")
        .add(Polled, "c0#0", **polled(0, 1))
    )
    got = cw.check_read_committed(history(events, {TP: [0, 1]}, {TP: {0}}))
    assert kinds(got) == [("CLIENT-006", "read-aborted")]
    clients = {"p0": ClientInfo({}), "c0": ClientInfo({"isolation.level": "read_uncommitted"}, "g", "assign")}
    assert cw.check_read_committed(history(events, {TP: [0, 1]}, {TP: {0}}, clients)) == []


def test_commits_past_the_end_backwards_or_dropping_a_stored_offset_are_caught() -> None:
    events = (
        Events()
        .add(Committed, "c0#0", group="g", offsets=((TP, 3),))
        .add(Committed, "c0#0", group="g", offsets=((TP, 2),))
        .add(Committed, "c0#0", group="g", offsets=((TP, 9),))
        .add(Stored, "c0#0", offsets=((TP1, 2),))
        .add(Committed, "c0#0", group="g", offsets=(), error="_NO_OFFSET: Local: No offset stored", stored=((TP1, 2),))
    )
    got = kinds(cw.check_commits(history(events, {TP: [0, 1, 2, 3, 4], TP1: [0, 1, 2]})))
    assert got == [
        ("CLIENT-007", "committed-backward"),
        ("CLIENT-007", "committed-past-end"),
        ("CLIENT-007", "stored-not-committed"),
    ]


@pytest.mark.parametrize(
    ("stored", "error", "got", "want"),
    [
        (5, None, 3, [("CLIENT-007", "stored-not-committed")]),  # committed, but not what was stored
        (5, "_NO_OFFSET: Local: No offset stored", None, [("CLIENT-007", "stored-not-committed")]),  # librdkafka-4442
        (5, "REBALANCE_IN_PROGRESS: Broker: Group rebalance in progress", None, []),  # failed, and said so
        (5, "ILLEGAL_GENERATION: Broker: Specified group generation id is not valid", None, []),
        (2, "_NO_OFFSET: Local: No offset stored", None, []),  # below the committed 3: never committed, by design
        (3, "_NO_OFFSET: Local: No offset stored", None, []),  # the committed one already
    ],
)
def test_a_stored_offset_past_the_committed_one_is_what_a_commit_that_succeeds_or_finds_nothing_stored_commits(
    stored: int, error: str | None, got: int | None, want: list
) -> None:
    """CLIENT-007 ``stored-not-committed``: after a store past the group's committed offset (3), a commit that
    succeeded commits it, and one that answered "No offset stored" (librdkafka-4442: an offset stored without a leader
    epoch counted older than one committed with it) broke that. A commit that failed with a group error told the
    application so (CLIENT-009 judges that answer); a store at or below the committed offset commits nothing, as
    librdkafka commits a stored offset only past the committed one (a seek back, then a store)."""
    events = (
        Events()
        .add(Committed, "c0#0", group="g", offsets=((TP, 3),))
        .add(Stored, "c0#0", offsets=((TP, stored),), by="offset")
        .add(
            Committed,
            "c0#0",
            group="g",
            offsets=() if got is None else ((TP, got),),
            error=error,
            stored=((TP, stored),),
        )
    )
    assert kinds(cw.check_commits(history(events, {TP: [0, 1, 2, 3, 4, 5]}))) == want


@pytest.mark.parametrize(("quiet_s", "want"), [(1.0, [("CLIENT-008", "owned-twice")]), (400.0, [])])
def test_a_partition_assigned_while_a_member_that_still_polls_owns_it_is_owned_twice(
    quiet_s: float, want: list
) -> None:
    events = (
        Events()
        .add(Assigned, "c0#0", tps=(TP,), how="rebalance")
        .add(Polled, "c0#0", **polled(0))
        .add(Assigned, "c1#0", after_s=quiet_s, tps=(TP,), how="rebalance")
    )
    assert kinds(cw.check_single_owner(history(events, {TP: [0]}))) == want


@pytest.mark.parametrize(
    ("strategy", "want"),
    [("range,roundrobin", []), ("cooperative-sticky", [("CLIENT-008", "owned-twice")])],
)
def test_an_eager_members_new_assignment_replaces_its_last_one_and_a_cooperative_ones_adds_to_it(
    strategy: str, want: list
) -> None:
    """librdkafka may call an eager member's assignment callback twice with no revoke between (a rejoin while the
    first assign was pending): the second sets its whole assignment, so TP is no longer its when c1 gets it; a
    cooperative member's second callback adds TP1 to what it owns, so c1 getting TP is owned twice."""
    info = {
        name: ClientInfo({"partition.assignment.strategy": strategy, "max.poll.interval.ms": "300000"}, "g", "topics")
        for name in ("c0", "c1")
    }
    events = (
        Events()
        .add(Assigned, "c0#0", tps=(TP,), how="rebalance")
        .add(Assigned, "c0#0", after_s=0.001, tps=(TP1,), how="rebalance")
        .add(Polled, "c0#0", **polled(0, tp=TP1))
        .add(Assigned, "c1#0", after_s=0.2, tps=(TP,), how="rebalance")
    )
    assert kinds(cw.check_single_owner(history(events, {TP: [0], TP1: [0]}, clients=info))) == want


@pytest.mark.parametrize(
    ("eager", "want"),
    [(True, []), (None, [("CLIENT-008", "owned-twice")]), (False, [("CLIENT-008", "owned-twice")])],
)
def test_a_consumer_protocol_member_is_read_as_its_driver_recorded_its_release_rebalancing(
    eager: bool | None, want: list
) -> None:
    """librdkafka 2.4.0 (KIP 848's early access), seed 1 of librdkafka-4636's trial: c0, of group.protocol=consumer
    at the default assignors, was handed t0-0..2, then t0-0 and t0-1 with no revoke (its release rebalances such a
    member eagerly: ``LIBRDKAFKA_CONSUMER_PROTOCOL_COOPERATIVE``), and c1 then t0-2. Read as the driver recorded
    it (eager), c0 no longer owns t0-2; read as cooperative (from the settings alone, as before), it is owned twice."""
    info = {
        name: ClientInfo({"group.protocol": "consumer", "max.poll.interval.ms": "300000"}, "g", "topics", eager=eager)
        for name in ("c0", "c1")
    }
    events = (
        Events()
        .add(Assigned, "c0#0", tps=(TP, TP1), how="rebalance")
        .add(Assigned, "c0#0", after_s=5.0, tps=(TP1,), how="rebalance")
        .add(Polled, "c0#0", **polled(0, tp=TP1))
        .add(Assigned, "c1#0", after_s=4.0, tps=(TP,), how="rebalance")
    )
    assert kinds(cw.check_single_owner(history(events, {TP: [0], TP1: [0]}, clients=info))) == want


@pytest.mark.parametrize(
    ("protocol", "strategy", "librdkafka", "want"),
    [
        ("consumer", "range,roundrobin", None, False),  # kafka-clients, or a release not stated
        ("consumer", "range,roundrobin", (2, 16, 0), False),
        ("consumer", "range,roundrobin", (2, 10, 0), False),
        ("consumer", "range,roundrobin", (2, 8, 0), True),  # by its own assignors, as a classic member
        ("consumer", "cooperative-sticky", (2, 4, 0), False),
        ("classic", "range,roundrobin", (2, 16, 0), True),
        ("classic", "cooperative-sticky", (2, 4, 0), False),
    ],
)
def test_a_consumer_protocol_member_rebalances_by_its_assignors_before_librdkafka_2_10(
    protocol: str, strategy: str, librdkafka: tuple[int, ...] | None, want: bool
) -> None:
    assert rebalances_eagerly(protocol, strategy, librdkafka) is want


@pytest.mark.parametrize(
    ("strategy", "then", "want"),
    [
        # c0 rejoined without revoking: its stale assignment of TP was replaced by the next one, no revoke between
        ("range,roundrobin", "assigned", ("CLIENT-008", cw.UNREVOKED)),
        # c0 revoked TP, but only after c1 had it: a real overlap of two members, whatever came after
        ("range,roundrobin", "revoked", ("CLIENT-008", "owned-twice")),
        ("range,roundrobin", "lost", ("CLIENT-008", "owned-twice")),
        ("range,roundrobin", "nothing", ("CLIENT-008", "owned-twice")),
        # a cooperative member's later assignment adds to what it owns: it never gave TP up either way
        ("cooperative-sticky", "assigned", ("CLIENT-008", "owned-twice")),
    ],
)
def test_an_overlap_is_the_unrevoked_kind_only_when_the_eager_owner_was_next_handed_a_new_assignment(
    strategy: str, then: str, want: tuple[str, str]
) -> None:
    """The shape the reference run met at seeds 1 and 2026 (librdkafka 2.16.0): eager c0 is handed a generation's
    assignment after it had already rejoined without revoking, c1 is handed TP by the next generation, then c0 its
    new assignment.
    Only that sequence is ``owned-twice-unrevoked``; an owner that revoked or lost TP late, or said nothing more,
    owned it at once with c1 and stays ``owned-twice``."""
    info = {
        name: ClientInfo({"partition.assignment.strategy": strategy, "max.poll.interval.ms": "300000"}, "g", "topics")
        for name in ("c0", "c1")
    }
    events = (
        Events()
        .add(Assigned, "c0#0", tps=(TP, TP1), how="rebalance")
        .add(Polled, "c0#0", after_s=0.1, **polled(0))
        .add(Assigned, "c1#0", after_s=0.2, tps=(TP,), how="rebalance")
    )
    if then == "assigned":
        events.add(Assigned, "c0#0", after_s=0.4, tps=(TP1,), how="rebalance")
    elif then in ("revoked", "lost"):
        events.add(Revoked, "c0#0", after_s=0.4, tps=(TP, TP1), lost=then == "lost")
        events.add(Assigned, "c0#0", after_s=0.1, tps=(TP1,), how="rebalance")
    found = cw.check_single_owner(history(events, {TP: [0], TP1: [0]}, clients=info))
    assert kinds(found) == [want]
    if want[1] == cw.UNREVOKED:
        assert found[0].data["replaced_by"] == [str(TP1)] and "no revoke between" in found[0].evidence


@pytest.mark.parametrize(
    ("shape", "want"),
    [
        # c0 revoked TP in generation 2, the one that had handed TP to c1: it had joined that generation without
        # revoking first (librdkafka's rejoin while the assign call was pending), and revoked only afterwards
        ("revoked-in-the-new-generation", cw.UNREVOKED),
        ("revoked-in-a-later-generation", cw.UNREVOKED),
        # c0 revoked TP while still in generation 1: the coordinator formed generation 2 without it (removed, not
        # rejoined); no generation shows c0's client broke the eager order, so the overlap stays a plain one
        ("revoked-in-the-old-generation", "owned-twice"),
        # the coordinator told c0 it was out (a lost callback), whatever its generation read
        ("lost-in-the-new-generation", "owned-twice"),
        # a generation not known (kafka-clients' harness, a history from before they were recorded) proves nothing
        ("revoke-generation-unknown", "owned-twice"),
        ("handed-generation-unknown", "owned-twice"),
        ("owned-generation-unknown", "owned-twice"),
        # c0's assignment of TP read generation 2 too: one of the two was served late, and the numbers do not say
        # which member left its generation unrevoked
        ("owned-in-the-same-generation", "owned-twice"),
        # c0's next event revoked another partition only: it did not give TP up there
        ("revoked-another-partition", "owned-twice"),
        # a cooperative member keeps what it is not told to revoke: it owned TP with c1 whatever the numbers say
        ("cooperative", "owned-twice"),
        # a consumer-protocol member's number is its own epoch, not the group's generation
        ("consumer-protocol", "owned-twice"),
    ],
)
def test_an_overlap_whose_eager_owner_revoked_only_in_the_generation_that_handed_it_on_is_the_unrevoked_kind(
    shape: str, want: str
) -> None:
    """The shape confluent-kafka 2.13.2 showed with no fault near (seed 1's 4th schedule of librdkafka-5213's entry,
    seen once, not kept): eager c0 is handed TP in generation 1, c1 is handed TP in generation 2, and c0 revokes TP
    only after that, its callback reading generation 2. A correct eager member revokes before it sends its JoinGroup,
    so its revocation reads the generation its partitions came from; one that reads the next generation had rejoined
    without revoking, as ``_replaced_unrevoked``'s member did. Only that reading is ``owned-twice-unrevoked``."""
    strategy = "cooperative-sticky" if shape == "cooperative" else "range"
    protocol = "consumer" if shape == "consumer-protocol" else "classic"
    settings = {"partition.assignment.strategy": strategy, "group.protocol": protocol, "max.poll.interval.ms": "15000"}
    eager = True if shape == "consumer-protocol" else None  # librdkafka before 2.10 rebalances it by its assignors
    info = {name: ClientInfo(settings, "g", "topics", eager=eager) for name in ("c0", "c1")}
    revoked_in = {"revoked-in-a-later-generation": 3, "revoked-in-the-old-generation": 1}.get(shape, 2)
    owned_in = {"owned-generation-unknown": None, "owned-in-the-same-generation": 2}.get(shape, 1)
    events = (
        Events()
        .add(Assigned, "c0#0", tps=(TP, TP1), how="rebalance", generation=owned_in)
        .add(Polled, "c0#0", after_s=0.8, **polled(0))
        .add(Assigned, "c1#0", after_s=0.5, tps=(TP,), how="rebalance", generation=None if "handed-" in shape else 2)
        .add(
            Revoked,
            "c0#0",
            after_s=0.1,
            tps=(TP1,) if shape == "revoked-another-partition" else (TP, TP1),
            lost=shape.startswith("lost"),
            generation=None if shape == "revoke-generation-unknown" else revoked_in,
        )
        .add(Assigned, "c0#0", after_s=0.001, tps=(TP1,), how="rebalance", generation=revoked_in)
    )
    found = cw.check_single_owner(history(events, {TP: [0], TP1: [0]}, clients=info))
    assert kinds(found) == [("CLIENT-008", want)]
    if want == cw.UNREVOKED:
        assert found[0].data["owned_in_generation"] == 1 and found[0].data["handed_in_generation"] == 2
        assert found[0].data["revoked_in_generation"] == revoked_in
        assert "rejoined without revoking" in found[0].evidence


@pytest.mark.parametrize(
    ("shape", "want"),
    [
        # c0's heartbeats could not reach the restarted coordinator, which removed it; c1 got TP; c0 lost it at its
        # next poll, within its bound of the heal, and committed nothing of it: Kafka's fenced zombie, excused
        ("zombie", []),
        # the same with c0's commit of TP in the overlap refused (ILLEGAL_GENERATION): fencing held, excused
        ("zombie-commit-refused", []),
        # a history from before a restart's start was noted (only its heal): how long it kept c0 silent is not shown
        ("heal-noted-only", [("CLIENT-008", "owned-twice")]),
        # no fault at all: a member removed while its heartbeats could reach the coordinator is not excused
        ("no-fault", [("CLIENT-008", "owned-twice")]),
        # c0's commit of TP succeeded while c1 owned it: the zombie was not fenced
        ("zombie-commit-succeeded", [("CLIENT-008", "owned-twice")]),
        # c0 polled past the heal plus its bound (session 6 + heartbeat 1 + request 10 + reconnect 1 + 2 s), owning TP
        ("beyond-bound", [("CLIENT-008", "owned-twice")]),
        # c0 never gave TP up
        ("never-gave-up", [("CLIENT-008", "owned-twice")]),
        # c0's next ownership event was a new assignment with no revoke: the known eager rejoin, not a zombie's loss
        ("reassigned", [("CLIENT-008", cw.UNREVOKED)]),
        # the fault began only after c1 was handed TP: it cannot have removed c0 before that
        ("fault-after", [("CLIENT-008", "owned-twice")]),
        # a 2 s pause cannot end a 6 s session whose heartbeats go every second: no fault removed c0
        ("short-fault", [("CLIENT-008", "owned-twice")]),
    ],
)
def test_an_overlap_is_excused_only_for_a_fenced_zombie_of_a_fault_that_gave_the_partition_up_in_time(
    shape: str, want: list
) -> None:
    """CLIENT-008 across a fault (the false alarm seen on confluent-kafka 2.13.2 and 2.10.1: an eager range group, a
    broker kill, c1 still owning ten partitions others were handed): the classic protocol removes a member whose
    heartbeats the fault kept from its coordinator and fences its commits; it does not promise exclusivity to that
    zombie. The overlap is excused only with the fault, a give-up within the member's own bound, and no zombie
    commit that succeeded; every other shape stays a violation."""
    settings = {
        "partition.assignment.strategy": "range",
        "max.poll.interval.ms": "300000",
        "session.timeout.ms": "6000",
        "heartbeat.interval.ms": "1000",
        "socket.timeout.ms": "10000",
        "reconnect.backoff.max.ms": "1000",
    }
    info = {name: ClientInfo(settings, "g", "topics") for name in ("c0", "c1")}
    events = Events().add(Assigned, "c0#0", tps=(TP, TP1), how="rebalance").add(Polled, "c0#0", **polled(0))
    if shape not in ("no-fault", "heal-noted-only", "fault-after", "short-fault"):
        events.add(Note, "run", text="broker restarting (kill)")
    if shape not in ("no-fault", "fault-after", "short-fault"):
        events.add(Note, "run", after_s=10.0, text="broker restarted (kill)")  # healed at 13 s
    if shape == "short-fault":
        events.add(Note, "run", text="broker paused for 2000 ms").add(Note, "run", after_s=2.0, text="broker resumed")
    events.add(Polled, "c0#0", **polled(1))
    events.add(Assigned, "c1#0", after_s=6.0, tps=(TP,), how="rebalance")
    if shape == "fault-after":
        events.add(Note, "run", after_s=0.1, text="broker paused for 2000 ms")
        events.add(Note, "run", after_s=2.0, text="broker resumed")
    if shape in ("zombie-commit-refused", "zombie-commit-succeeded"):
        refused = shape == "zombie-commit-refused"
        events.add(
            Committed,
            "c0#0",
            after_s=0.2,
            group="g",
            offsets=() if refused else ((TP, 2),),
            error="ILLEGAL_GENERATION: Broker: Specified group generation id is not valid" if refused else None,
            failed=((TP, 2, "ILLEGAL_GENERATION", False),) if refused else (),
        )
    if shape == "beyond-bound":
        events.add(Polled, "c0#0", after_s=20.0, **polled(2))
    if shape == "reassigned":
        events.add(Assigned, "c0#0", after_s=0.5, tps=(TP1,), how="rebalance")
    elif shape != "never-gave-up":
        events.add(Revoked, "c0#0", after_s=0.5, tps=(TP, TP1), lost=True)
    judged = history(events, {TP: [0, 1, 2], TP1: [0]}, clients=info)
    assert kinds(cw.check_single_owner(judged)) == want
    excused = cw.zombie_overlaps(judged)
    assert len(excused) == (0 if want else 1)
    if not want:
        assert excused[0].overlap.owner == "c0#0" and excused[0].bound_s == 6 + 1 + 10 + 1 + cw.TIMING_MARGIN_S
        assert "gave it up" in excused[0].describe()


@pytest.mark.parametrize(("handed_after_s", "want"), [(1.0, []), (30.0, [("CLIENT-008", "owned-twice")])])
def test_an_owner_that_polled_past_the_faults_bound_was_in_the_group_after_it_and_is_no_zombie(
    handed_after_s: float, want: list
) -> None:
    """c0 was handed TP after a restart healed at 11 s: 1 s later it may still be the fault's zombie; 30 s later,
    polling all along, it was a member after the fault, and c1 being handed TP while it owned it is an overlap no
    fault excuses, whatever c0 did next (its bound is 6 + 1 + 10 + 1 + 2 s)."""
    settings = {"max.poll.interval.ms": "300000", "session.timeout.ms": "6000", "heartbeat.interval.ms": "1000"}
    info = {
        name: ClientInfo(settings | {"socket.timeout.ms": "10000", "reconnect.backoff.max.ms": "1000"}, "g", "topics")
        for name in ("c0", "c1")
    }
    events = (
        Events()
        .add(Note, "run", text="broker restarting (kill)")
        .add(Note, "run", after_s=10.0, text="broker restarted (kill)")
        .add(Assigned, "c0#0", after_s=handed_after_s, tps=(TP,), how="rebalance")
        .add(Polled, "c0#0", after_s=0.1, **polled(0))
        .add(Assigned, "c1#0", after_s=0.2, tps=(TP,), how="rebalance")
        .add(Revoked, "c0#0", after_s=0.3, tps=(TP,), lost=True)
    )
    assert kinds(cw.check_single_owner(history(events, {TP: [0]}, clients=info))) == want


def test_the_runs_faults_are_read_from_its_notes() -> None:
    events = (
        Events()
        .add(Note, "run", text="broker restarting (kill)")
        .add(Note, "run", after_s=5.0, text="broker restarted (kill)")
        .add(Note, "c0#0", text="broker said something")  # a client's note is no fault
        .add(Note, "run", text="broker restarted (clean)")  # no start noted: began when healed
        .add(Note, "run", text="broker paused for 2000 ms")
    )
    assert [(f.began, f.healed) for f in faults(events.events)] == [(1.0, 6.0), (8.0, 8.0), (9.0, float("inf"))]


def test_a_group_that_read_to_the_end_from_the_earliest_offset_delivered_everything() -> None:
    events = Events().add(Assigned, "c0#0", tps=(TP,), how="rebalance").add(Polled, "c0#0", **polled(0, 2))
    assert kinds(cw.check_group_read_everything(history(events, {TP: [0, 1, 2]}))) == [("CLIENT-004", "unread")]
    assert cw.check_group_read_everything(history(events, {TP: [0, 1, 2]}, drained=False)) == []
    closed = history(events, {TP: [0, 1, 2]})
    nobody_at_the_end = History(closed.events, closed.clients, closed.log, True, {})
    assert cw.check_group_read_everything(nobody_at_the_end) == []  # no live member read it to its end
    closed = history(events, {TP: [0, 1, 2]})
    nobody_at_the_end = History(closed.events, closed.clients, closed.log, True, {})
    assert cw.check_group_read_everything(nobody_at_the_end) == []  # no live member read it to its end


def test_a_group_need_not_have_read_what_became_visible_after_it_found_its_end() -> None:
    """A transaction whose markers a restarted broker wrote after the drain: its records are in the log read after,
    but the group found the partition's end before them; what lay below that end must still have been read."""
    events = Events().add(Assigned, "c0#0", tps=(TP,), how="rebalance").add(Polled, "c0#0", **polled(0))
    read = history(events, {TP: [0, 1, 2]})
    found_end_at_1 = History(read.events, read.clients, read.log, True, read.read_to_end, {"g": {TP: 1}})
    assert cw.check_group_read_everything(found_end_at_1) == []
    found_end_at_2 = History(read.events, read.clients, read.log, True, read.read_to_end, {"g": {TP: 2}})
    assert [v.data["offsets"] for v in cw.check_group_read_everything(found_end_at_2)] == [[1]]


def test_a_setting_not_drawn_is_read_at_the_client_releases_own_default() -> None:
    """kafka-clients reads read_uncommitted by default, librdkafka read_committed: an aborted record delivered by a
    client whose release defaults to read_uncommitted is no violation."""
    events = (
        Events()
        .add(Sent, "p0", value=b"v1", topic="t", partition=0, txn=1)
        .add(TxnEnded, "p0", txn=1, outcome="abort")
        .add(Assigned, "c0#0", tps=(TP,), how="manual")
        .add(Polled, "c0#0", **polled(0, 1))
    )
    java = {"p0": ClientInfo({}), "c0": ClientInfo({}, "g", "assign", defaults={"isolation.level": "read_uncommitted"})}
    assert cw.check_read_committed(history(events, {TP: [0, 1]}, {TP: {0}}, java)) == []
    librdkafka = {"p0": ClientInfo({}), "c0": ClientInfo({}, "g", "assign")}
    assert kinds(cw.check_read_committed(history(events, {TP: [0, 1]}, {TP: {0}}, librdkafka))) == [
        ("CLIENT-006", "read-aborted")
    ]


def test_a_schedule_printed_as_json_is_read_back_as_the_same_schedule() -> None:
    """A failure prints its schedule as JSON: ``Schedule.from_json`` reads it back whole, for a replay by hand."""
    drawn = Schedule(
        (2, 1),
        (ProducerPlan({"acks": "1"}, True),),
        (ConsumerPlan({"isolation.level": "read_uncommitted"}, "pattern"), ConsumerPlan({}, "assign")),
        (
            Step(StepKind.TRANSACTION, 0, 1, None, 3, "abort"),
            Step(StepKind.SEEK, 1, partition=0, count=2, mode="back"),
            Step(StepKind.NODE_PAUSE, wait_ms=700),
            Step(StepKind.SUBSCRIBE, 1, 1, mode="one"),
        ),
        faults=False,
    )
    assert Schedule.from_json(json.loads(drawn.dumps())) == drawn
    assert describe(drawn).endswith("subscribe(client=1, topic=1, count=1, mode=one)")


def test_a_drawn_schedule_may_change_a_members_subscription() -> None:
    """The ``subscribe`` step is drawn, with each of its modes, and survives the JSON round trip."""
    quick = hypothesis.settings(max_examples=2000, database=None, phases=[hypothesis.Phase.generate], derandomize=True)
    found = find(
        schedules([], faults=False), lambda s: any(t.kind is StepKind.SUBSCRIBE for t in s.steps), settings=quick
    )
    assert Schedule.from_json(json.loads(found.dumps())) == found
    for mode in ("topics", "pattern", "one"):
        find(
            step_strategy(1, 2, 2, False),
            lambda t, m=mode: t.kind is StepKind.SUBSCRIBE and t.mode == m,
            settings=quick,
        )


def test_a_drawn_group_may_be_large_and_its_members_start_with_different_subscriptions() -> None:
    """The draw reaches groups of up to ``MAX_MEMBERS`` members, some starting with a subset of the topics, beside at
    most ``MAX_ASSIGNED`` consumers assigned by hand; every schedule has a consumer, and a member's subset names only
    the schedule's own topics."""
    quick = hypothesis.settings(max_examples=1000, database=None, derandomize=True, phases=[hypothesis.Phase.generate])

    def members(s: Schedule) -> list[ConsumerPlan]:
        return [c for c in s.consumers if c.subscribe != "assign"]

    def starts(s: Schedule) -> set[tuple[int, ...]]:
        return {c.topics or tuple(range(len(s.partitions))) for c in members(s) if c.subscribe == "topics"}

    large = find(
        schedules([], faults=False),
        lambda s: len(members(s)) == MAX_MEMBERS and len(starts(s)) >= 2,
        settings=quick,
    )
    assert Schedule.from_json(json.loads(large.dumps())) == large
    assert any(f"c{i}: topics t" in describe(large) for i in range(len(large.consumers)))

    @hypothesis.given(schedules([], faults=False))
    @hypothesis.settings(max_examples=200, database=None, deadline=None)
    def bounded(s: Schedule) -> None:
        assert len(s.consumers) >= 1 and len(members(s)) <= MAX_MEMBERS
        assert len(s.consumers) - len(members(s)) <= MAX_ASSIGNED
        for c in s.consumers:
            assert all(0 <= i < len(s.partitions) for i in c.topics) and len(set(c.topics)) == len(c.topics)
            assert not c.topics or c.subscribe == "topics"

    bounded()


def test_a_schedule_written_before_members_had_starting_topics_reads_as_every_topic() -> None:
    """A schedule's JSON from before ``ConsumerPlan.topics`` (a failure printed then) replays with every member
    subscribed to every topic, as it ran."""
    old = {
        "partitions": [1, 2],
        "producers": [{"settings": {}, "transactional": False}],
        "consumers": [{"settings": {}, "subscribe": "topics"}],
        "steps": [],
    }
    (member,) = Schedule.from_json(old).consumers
    assert member.topics == () and member.starts_with(["a", "b"]) == ["a", "b"]
    assert ConsumerPlan({}, "topics", (1,)).starts_with(["a", "b"]) == ["b"]


UP = TopicPartition("u", 0)
COOPERATIVE = {"partition.assignment.strategy": "cooperative-sticky"}


def members(strategy: str = "cooperative-sticky", subscribe: str = "topics") -> dict[str, ClientInfo]:
    return {"c0": ClientInfo({"partition.assignment.strategy": strategy}, "g", subscribe)}


@pytest.mark.parametrize(("delivered", "want"), [(TP1, [("CLIENT-008", "delivered-unowned")]), (TP, [])])
def test_a_member_delivers_only_partitions_it_was_assigned(delivered: TopicPartition, want: list) -> None:
    events = Events().add(Assigned, "c0#0", tps=(TP,), how="rebalance").add(Polled, "c0#0", **polled(0, tp=delivered))
    assert kinds(cw.check_delivered_owned(history(events, {TP: [0], TP1: [0]}, clients=members()))) == want


@pytest.mark.parametrize(("same_call", "want"), [(False, [("CLIENT-008", "delivered-unowned")]), (True, [])])
def test_a_revoked_partition_is_delivered_no_more_after_the_call_that_revoked_it(same_call: bool, want: list) -> None:
    """Records a poll's call fetched before a revocation inside the call may still come out of it; in a later poll
    they are another member's."""
    events = Events().add(Assigned, "c0#0", tps=(TP, TP1), how="rebalance").add(Polled, "c0#0", **polled(0))
    events.add(Revoked, "c0#0", tps=(TP,))
    if not same_call:
        events.add(Polled, "c0#0", **polled(0, tp=TP1))
    events.add(Polled, "c0#0", **polled(1))
    assert kinds(cw.check_delivered_owned(history(events, {TP: [0, 1], TP1: [0]}, clients=members()))) == want


@pytest.mark.parametrize(
    ("strategy", "want"), [("range,roundrobin", [("CLIENT-008", "delivered-unowned")]), ("cooperative-sticky", [])]
)
def test_an_eager_members_assignment_replaces_what_it_owned(strategy: str, want: list) -> None:
    events = (
        Events()
        .add(Assigned, "c0#0", tps=(TP,), how="rebalance")
        .add(Polled, "c0#0", **polled(0))
        .add(Assigned, "c0#0", tps=(TP1,), how="rebalance")
        .add(Polled, "c0#0", records=())
        .add(Polled, "c0#0", **polled(1))
    )
    found = cw.check_delivered_owned(history(events, {TP: [0, 1], TP1: []}, clients=members(strategy)))
    assert kinds(found) == want


@pytest.mark.parametrize(("delivered", "want"), [(TP1, [("CLIENT-008", "delivered-unowned")]), (TP, [])])
def test_a_consumer_assigned_by_hand_delivers_only_its_manual_assignment(delivered: TopicPartition, want: list) -> None:
    events = Events().add(Assigned, "c0#0", tps=(TP,), how="manual").add(Polled, "c0#0", **polled(0, tp=delivered))
    found = cw.check_delivered_owned(history(events, {TP: [0], TP1: [0]}, clients=members(subscribe="assign")))
    assert kinds(found) == want


def unsubscribed(
    revoked: tuple[TopicPartition, ...], handed_again: bool, same_call: bool = False, now: tuple[str, ...] = ("t",)
) -> Events:
    """c0 (cooperative) owns t-0 and u-0, subscribes to ``now`` (t alone), revokes ``revoked`` in its next poll's
    call, then delivers u-0's records (in that call's poll when ``same_call``)."""
    events = (
        Events()
        .add(Subscribed, "c0#0", topics=("t", "u"))
        .add(Assigned, "c0#0", tps=(TP, UP), how="rebalance")
        .add(Polled, "c0#0", **polled(0))
        .add(Subscribed, "c0#0", topics=now)
        .add(Revoked, "c0#0", tps=revoked)
    )
    if handed_again:
        events.add(Assigned, "c0#0", tps=(UP,), how="rebalance")
    if not same_call:
        events.add(Polled, "c0#0", **polled(1))
    return events.add(Polled, "c0#0", **polled(0, tp=UP))


@pytest.mark.parametrize(
    ("revoked", "handed_again", "same_call", "want"),
    [
        ((TP,), False, False, [("CLIENT-008", "delivered-unsubscribed")]),  # kept u-0 past the change's revocation
        ((TP,), False, True, []),  # fetched before the revocation, in the call that made it
        ((TP,), True, False, []),  # a callback handed u-0 to it again: its own (delivered-unowned judges that)
        ((TP, UP), False, False, [("CLIENT-008", "delivered-unowned")]),  # revoked, then delivered anyway
        ((TP, UP), False, True, []),
    ],
)
def test_a_member_delivers_nothing_of_a_topic_it_unsubscribed_once_the_change_took_effect(
    revoked: tuple[TopicPartition, ...], handed_again: bool, same_call: bool, want: list
) -> None:
    events = unsubscribed(revoked, handed_again, same_call)
    assert kinds(cw.check_delivered_owned(history(events, {TP: [0, 1], UP: [0]}, clients=members()))) == want


@pytest.mark.parametrize(
    ("now", "want"), [(("t",), [("CLIENT-008", "delivered-unsubscribed")]), (("u", "t"), []), (("u",), [])]
)
def test_a_new_subscription_that_still_covers_a_topic_keeps_it(now: tuple[str, ...], want: list) -> None:
    events = unsubscribed((TP,), handed_again=False, now=now)
    assert kinds(cw.check_delivered_owned(history(events, {TP: [0, 1], UP: [0]}, clients=members()))) == want


@pytest.mark.parametrize(("subscribed", "want"), [(True, [("CLIENT-008", "delivered-unsubscribed")]), (False, [])])
def test_a_member_that_never_changed_its_subscription_is_judged_by_ownership_alone(
    subscribed: bool, want: list
) -> None:
    """A revocation with no subscription change before it does not make a kept partition unsubscribed."""
    events = unsubscribed((TP,), handed_again=False)
    if not subscribed:
        events.events = [e for e in events.events if not isinstance(e, Subscribed)]
    assert kinds(cw.check_delivered_owned(history(events, {TP: [0, 1], UP: [0]}, clients=members()))) == want


def test_a_pattern_subscription_covers_the_topics_it_matches() -> None:
    assert Subscribed(0, "c0#0", 0.0, pattern="^kcw-1-.*").covers("kcw-1-x0")
    assert not Subscribed(0, "c0#0", 0.0, pattern="^kcw-1-.*").covers("kcw-2-t0")
    assert not Subscribed(0, "c0#0", 0.0, topics=("kcw-1-t0",)).covers("kcw-1-t1")


@pytest.mark.parametrize(
    ("failed", "broker_answers", "want"),
    [
        (True, True, [("LIVE-001", "client-failed")]),
        (True, None, [("LIVE-001", "client-failed")]),  # whether the broker answered could not be asked
        (True, False, []),  # the broker did not answer at the end: the failure may be the fault's, not judged
        (False, True, []),
    ],
)
def test_a_consumer_that_fails_of_a_fatal_error_of_its_own_breaks_liveness(
    failed: bool, broker_answers: bool | None, want: list[tuple[str, str]]
) -> None:
    """librdkafka's fatal error ends a consumer for good (a KIP 848 member refused on its rejoin, librdkafka #5488):
    LIVE-001 ``client-failed``, once per consumer, with the error; the same history without it passes."""
    events = Events().add(Assigned, "c0", tps=(TP,), how="rebalance")
    events.add(Polled, "c0", **polled(0, 1)).add(Polled, "c0", **polled(2))
    if failed:
        fatal = "_FATAL: Fatal consumer error: Broker: Invalid request"
        events.add(Failed, "c0", error=fatal).add(Failed, "c0", error=fatal)
    violations = cw.check_history(history(events, {TP: [0, 1, 2]}), broker_answers)
    assert kinds(violations) == want
    assert len(violations) == len(want)  # one per consumer, not one per report of it
    if want:
        assert violations[0].data["client"] == "c0" and "Invalid request" in violations[0].evidence


TXN_PRODUCERS: dict[str, ClientInfo] = {
    "p0": ClientInfo({"transaction.timeout.ms": "10000"}, transactional=True, transactional_id="kcw-1-p0"),
    "p1": ClientInfo({}, transactional=True, transactional_id="kcw-1-p1"),
    "c0": ClientInfo({"auto.offset.reset": "earliest"}, "g", "topics"),
}
"""Two transactional producers of their own ids (p0's transactions time out after 10 s) and a consumer."""
SEQUENCE_DESYNC: Final = (
    "_FATAL: Local: Fatal error: Local: Inconsistent state: "
    "ProduceRequest for t [0] with 2 message(s) failed due to sequence desynchronization with broker 1"
)
FENCED: Final = (
    "PRODUCER_FENCED: Broker: There is a newer producer with the same transactionalId which fences the current one"
)


@pytest.mark.parametrize(
    ("call", "broker_answers", "want"),
    [
        ("delivery", True, [("LIVE-001", "producer-failed")]),
        ("error_cb", None, [("LIVE-001", "producer-failed")]),  # whether the broker answered could not be asked
        ("produce", False, []),  # the broker did not answer at the end: the failure may be the fault's, not judged
        ("", True, []),  # no fatal error recorded
    ],
)
def test_a_producer_that_fails_of_a_fatal_error_of_its_own_breaks_liveness(
    call: str, broker_answers: bool | None, want: list[tuple[str, str]]
) -> None:
    """An idempotent producer's fatal error (librdkafka #4438's sequence desynchronisation) ends the producer for
    good: LIVE-001 ``producer-failed``, once per producer, with the call that reported it; the same history without
    it passes. A consumer's is still ``client-failed``."""
    events = (
        Events().add(Sent, "p0", value=b"v0", topic="t", partition=0).add(Acked, "p0", value=b"v0", tp=TP, offset=0)
    )
    events.add(Sent, "p0", value=b"v1", topic="t", partition=0)
    if call:
        events.add(Failed, "p0", error=SEQUENCE_DESYNC, call=call).add(
            Failed, "p0", error=SEQUENCE_DESYNC, call="produce"
        )
    violations = cw.check_clients_failed(history(events, {TP: [0]}), broker_answers)
    assert kinds(violations) == want
    assert len(violations) == len(want)
    if want:
        assert violations[0].data["client"] == "p0" and violations[0].data["call"] == call
        assert "sequence desynchronization" in violations[0].evidence


def txn_then_failed(error: str, open_s: float, ended: bool = False) -> Events:
    """p0 sends in its transaction 1 (after p1 sent in its own), commits it when ``ended``, and fails with ``error``
    ``open_s`` after its first send."""
    events = Events().add(Sent, "p1", value=b"q0", topic="t", partition=0, txn=1)
    events.add(Sent, "p0", value=b"v0", topic="t", partition=0, txn=1)
    if ended:
        events.add(TxnEnded, "p0", txn=1, outcome="commit", after_s=0.5)
    return events.add(Failed, "p0", error=error, call="commit_transaction", after_s=open_s - (0.5 if ended else 0.0))


@pytest.mark.parametrize(
    ("error", "open_s", "ended", "want"),
    [
        (FENCED, 11.0, False, []),  # open past its 10 s timeout: the coordinator aborted it and bumped the epoch
        (FENCED, 9.5, False, []),  # within TRANSACTION_TIMEOUT_SLACK_S of it
        (FENCED, 4.0, False, [("LIVE-001", "producer-failed")]),  # open 4 s of 10: no timeout
        (FENCED, 11.0, True, [("LIVE-001", "producer-failed")]),  # committed: nothing was open to time out
        (SEQUENCE_DESYNC, 11.0, False, [("LIVE-001", "producer-failed")]),  # not a fence, whatever the time
    ],
)
def test_a_producer_fenced_after_its_transaction_timed_out_is_excused(
    error: str, open_s: float, ended: bool, want: list[tuple[str, str]]
) -> None:
    """A transaction open past ``transaction.timeout.ms`` is aborted by its coordinator, which bumps the producer's
    epoch (KIP 588): the producer's fence that follows is the broker's due, not the client's failure. Only then."""
    events = txn_then_failed(error, open_s, ended)
    assert kinds(cw.check_clients_failed(history(events, {TP: [0, 1]}, clients=TXN_PRODUCERS), True)) == want
    found = cw.timed_out_transaction(history(events, {TP: [0, 1]}, clients=TXN_PRODUCERS), events.events[-1])
    assert (found is not None) == (not want)
    if found is not None:
        assert found[0] == 1 and found[2] == 10.0


@pytest.mark.parametrize(
    ("same_id", "later", "want"),
    [
        (True, True, []),  # a later producer of p0's own transactional id fenced it, as transactions promise
        (False, True, [("LIVE-001", "producer-failed")]),  # a producer of another id fences no one
        (True, False, [("LIVE-001", "producer-failed")]),  # the same id, but it began before p0: not a later one
    ],
)
def test_a_producer_fenced_by_a_later_incarnation_of_its_transactional_id_is_excused(
    same_id: bool, later: bool, want: list[tuple[str, str]]
) -> None:
    """KIP 98: a new producer's ``initTransactions`` with the same transactional id fences the old one, which can
    then only close. The history must show that later producer; any other fence is the producer's failure."""
    clients = {
        **TXN_PRODUCERS,
        "p2": ClientInfo({}, transactional=True, transactional_id="kcw-1-p0" if same_id else "kcw-1-p2"),
    }
    events = Events() if later else Events().add(Sent, "p2", value=b"w0", topic="t", partition=0, txn=1)
    events.add(Sent, "p0", value=b"v0", topic="t", partition=0, txn=1).add(TxnEnded, "p0", txn=1, outcome="commit")
    events.add(Sent, "p0", value=b"v1", topic="t", partition=0, txn=2)
    if later:
        events.add(Sent, "p2", value=b"w0", topic="t", partition=0, txn=1)
    events.add(Failed, "p0", error=FENCED, call="commit_transaction")
    assert kinds(cw.check_clients_failed(history(events, {TP: [0, 1, 2]}, clients=clients), True)) == want
    assert cw.fenced_by_later_incarnation(history(events, {TP: [0, 1, 2]}, clients=clients), events.events[-1]) == (
        "p2" if not want else None
    )


GAPLESS_FATAL: Final = (
    "_FATAL: Fatal error: Local: Gap-less ordering would not be guaranteed if proceeding: ProduceRequest for t [0] "
    "with 3 message(s) failed: Broker: Request timed out (broker 1 PID{Id:1,Epoch:0}, base seq 0): unable to "
    "satisfy gap-less guarantee"
)


@pytest.mark.parametrize(
    ("settings", "error", "want"),
    [
        ({"enable.idempotence": "true", "enable.gapless.guarantee": "true"}, GAPLESS_FATAL, []),
        ({"enable.idempotence": "true"}, GAPLESS_FATAL, [("LIVE-001", "producer-failed")]),  # not asked for
        (
            {"enable.idempotence": "true", "enable.gapless.guarantee": "true"},
            SEQUENCE_DESYNC,
            [("LIVE-001", "producer-failed")],  # asked for, but this is another fatal error
        ),
    ],
)
def test_a_gapless_producer_stopped_as_it_asked_is_excused(
    settings: dict[str, str], error: str, want: list[tuple[str, str]]
) -> None:
    """librdkafka stops a producer that set ``enable.gapless.guarantee`` when a batch fails for good, by design: the
    application asked for that fatal error, and that one alone."""
    clients = {"p0": ClientInfo(settings), "c0": ClientInfo({}, "g", "topics")}
    events = (
        Events().add(Sent, "p0", value=b"v0", topic="t", partition=0).add(Failed, "p0", error=error, call="error_cb")
    )
    assert kinds(cw.check_clients_failed(history(events, {TP: []}, clients=clients), True)) == want


def fetch_after_commit(got: int | None, **fetched: Any) -> Events:
    """c0 commits offset 2 of TP; then c1's ask for the group's committed offsets answers ``got``."""
    events = Events().add(Committed, "c0#0", group="g", offsets=((TP, 2),))
    since = len(events.events)
    asked = {"group": "g", "tps": (TP,), "since": since, "offsets": ((TP, got),), **fetched}
    return events.add(FetchedCommitted, "c1#0", **asked)


@pytest.mark.parametrize(
    ("got", "fetched", "want"),
    [
        (2, {}, []),
        (None, {}, [("CLIENT-005", "fetched-no-offset")]),
        # a failed ask says nothing of the offset: a retriable error (the coordinator's STALE_MEMBER_EPOCH, a
        # timeout) within its bound is what the client may answer
        (None, {"error": "_TIMED_OUT: Failed to get offsets by times in 100ms", "retriable": True}, []),
        (None, {"group": "g2"}, []),  # another group's offsets
        (7, {}, []),  # another value is not judged: a commit recorded late may have moved it
    ],
)
def test_an_ask_for_committed_offsets_never_reads_a_committed_partition_as_having_none(
    got: int | None, fetched: dict[str, Any], want: list
) -> None:
    violations = cw.check_committed_fetches(history(fetch_after_commit(got, **fetched), {TP: [0, 1, 2]}))
    assert kinds(violations) == want
    if want:
        wanted = {"client": "c1#0", "want": 2, "got": None, "committed_by": "c0#0", "topic": "t", "partition": 0}
        assert {k: violations[0].data[k] for k in wanted} == wanted


def test_a_commit_that_had_not_returned_before_the_ask_or_was_ambiguous_does_not_count() -> None:
    """Only a commit that returned without error before the ask began makes "none" wrong: one whose answer came
    during the ask, or that timed out (the coordinator may not have applied it), leaves the ask free to say none."""
    during = (
        Events()
        .add(Committed, "c0#0", group="g", offsets=((TP, 2),))
        .add(FetchedCommitted, "c1#0", group="g", tps=(TP,), since=0, offsets=((TP, None),))
    )
    assert cw.check_committed_fetches(history(during, {TP: [0, 1, 2]})) == []
    timed_out = (
        Events()
        .add(Committed, "c0#0", group="g", offsets=((TP, 2),), error="_TIMED_OUT", ambiguous=True)
        .add(FetchedCommitted, "c1#0", group="g", tps=(TP,), since=1, offsets=((TP, None),))
    )
    assert cw.check_committed_fetches(history(timed_out, {TP: [0, 1, 2]})) == []


@pytest.mark.parametrize(
    ("between", "want"),
    [
        ([], [("CLIENT-005", "fetched-no-offset")]),
        (["failed"], []),  # answered from the request the failed ask left in flight, sent before the commit
        (["failed", "failed"], []),
        (["answered"], [("CLIENT-005", "fetched-no-offset")]),  # that request was answered: a new one was sent
        (["failed", "answered"], [("CLIENT-005", "fetched-no-offset")]),
        (["other partitions"], [("CLIENT-005", "fetched-no-offset")]),  # not the same request
    ],
)
def test_an_ask_answered_from_a_request_a_failed_ask_left_in_flight_counts_from_that_request(
    between: list[str], want: list
) -> None:
    """kafka-clients answers an ask from a fetch of the same partitions still in flight (a 0 ms ask that timed out
    leaves one): an ask that followed the same consumer's failed asks of the same partitions counts from the first
    of them, so a commit that returned between that first ask and this one is not one its answer must show (a false
    alarm on kafka-clients 4.4.0, seed 1, until 2026-12-01, in KAFKA-20765's trial). An answered ask of
    the same partitions in between, or failed asks of other partitions, leave the ask counting from its own start."""
    events = Events()
    failed = {"error": "TimeoutException: Timeout of 0ms expired", "retriable": True}
    early: list[tuple[str, dict[str, Any]]] = []
    for what in between:
        if what == "answered":
            early.append((what, {"tps": (TP,), "offsets": ((TP, None),)}))
        elif what == "other partitions":
            early.append((what, {"tps": (TP, TopicPartition("t", 1)), **failed}))
        else:
            early.append((what, {"tps": (TP,), **failed}))
    # the first failed ask begins before c0's commit; the rest of them and the judged ask come after it
    for n, (_, fields) in enumerate(early):
        if n == 0:
            events.add(FetchedCommitted, "c1#0", group="g", since=0, **fields)
            events.add(Committed, "c0#0", group="g", offsets=((TP, 2),))
        else:
            events.add(FetchedCommitted, "c1#0", group="g", since=len(events.events), **fields)
    if not early:
        events.add(Committed, "c0#0", group="g", offsets=((TP, 2),))
    since = len(events.events)
    events.add(FetchedCommitted, "c1#0", group="g", tps=(TP,), since=since, offsets=((TP, None),))
    assert kinds(cw.check_committed_fetches(history(events, {TP: [0, 1, 2]}))) == want


@pytest.mark.parametrize(("broker_answers", "want"), [(True, [("LIVE-001", "hang")]), (False, [])])
def test_an_ask_for_committed_offsets_that_never_returns_is_a_hang_not_a_safety_violation(
    broker_answers: bool, want: list
) -> None:
    """An ask that outlived its bound (the loop of KAFKA-20765 keeps kafka-clients' future from ever completing)
    is LIVE-001's ``hang`` while the broker answered; CLIENT-005 says nothing of an answer that never came."""
    events = Events().add(Committed, "c0#0", group="g", offsets=((TP, 2),))
    events.add(Hung, "c1#0", call="committed(1 partitions, 0.5) x1", bound_s=30.5)
    found = cw.check_history(history(events, {TP: [0, 1, 2]}), broker_answers)
    assert kinds(found) == want
    assert all(v.data["method"].startswith("committed(") for v in found)


def converging(*groups: GroupView, unstarted: tuple[Unstarted, ...] = (), **fields: Any) -> Convergence:
    return Convergence(51.0, "c0's poll interval 15 s and session 6 s, plus 30 s", 51.2, groups, unstarted, **fields)


STABLE_PAIR = GroupView(
    "g", "classic", "STABLE", (("a/m1", (TP,)), ("b/m2", (TP1,))), (("c0#0", (TP,)), ("c1#0", (TP1,)))
)
"""The broker's description of a group beside its live members' own views, agreeing."""
LEFT_BEHIND = GroupView(
    "g",
    "classic",
    "STABLE",
    (("b/m2", (TP, TP1)),),
    (("c0#0", (TP,)), ("c1#0", (TP, TP1))),
    ((40.0, "PREPARING_REBALANCING", 2), (55.0, "STABLE", 1)),
    12.0,
)
"""KAFKA-14024's end: the rebalance timeout removed c0, which never rejoined and still owns what it had."""
STUCK = GroupView("g", "consumer", "RECONCILING", (("a/m1", (TP,)), ("b/m2", ())), (("c0#0", (TP,)), ("c1#0", ())))


@pytest.mark.parametrize(
    ("convergence", "broker_answers", "want"),
    [
        (converging(STABLE_PAIR), True, []),
        (converging(LEFT_BEHIND), True, [("LIVE-001", "never-converged")]),
        (converging(STUCK), None, [("LIVE-001", "never-converged")]),
        (converging(LEFT_BEHIND), False, []),  # the broker did not answer: no liveness finding
        (converging(LEFT_BEHIND, unjudged="the admin lacks it"), True, []),  # could not describe: unjudged
        (converging(LEFT_BEHIND, unjudged="the driver polled only every 20 s", suite_fault=True), True, []),
        (
            converging(STABLE_PAIR, unstarted=(Unstarted("c1#0", TP1, 3, 9, 20.0),)),
            True,
            [("LIVE-001", "owned-never-started")],
        ),
        # a partition not started is judged without the groups' description, not when the suite was at fault
        (
            converging(unstarted=(Unstarted("c1#0", TP1, 3, 9, 20.0),), unjudged="no describe"),
            True,
            [("LIVE-001", "owned-never-started")],
        ),
        (converging(unstarted=(Unstarted("c1#0", TP1, 3, 9, 20.0),), unjudged="slow", suite_fault=True), True, []),
        (None, True, []),  # a history from before the drain recorded it
    ],
)
def test_a_group_that_never_converges_or_a_partition_never_started_is_a_liveness_finding(
    convergence: Convergence | None, broker_answers: bool | None, want: list[tuple[str, str]]
) -> None:
    """LIVE-001 ``never-converged``: the broker describes the group not stable, or stable without one of the run's
    live members (or with other assignments than its members own); ``owned-never-started``: a partition owned with
    records to read of which nothing was delivered and no position taken. Neither while the broker does not answer,
    nor when the drain's wait could not be judged; the groups' part alone when only the admin could not describe."""
    events = (
        Events()
        .add(Assigned, "c0#0", tps=(TP,), how="rebalance")
        .add(Assigned, "c1#0", tps=(TP1,), how="rebalance")
        .add(Polled, "c0#0", **polled(0, 1, 2))
    )
    judged = replace(history(events, {TP: [0, 1, 2]}), convergence=convergence)
    found = cw.check_history(judged, broker_answers)
    assert kinds(found) == want, [str(v) for v in found]
    for violation in found:
        assert violation.data["bound_s"] == 51.0 and violation.data["waited_s"] == 51.2
    if want == [("LIVE-001", "never-converged")] and convergence is not None and convergence.groups[0] is LEFT_BEHIND:
        (violation,) = found
        assert violation.data["described"] == {"b/m2": [str(TP), str(TP1)]}
        assert violation.data["owners"]["c0#0"] == [str(TP)]
        assert violation.data["state_changes"][-1] == [55.0, "STABLE", 1]


@pytest.mark.parametrize("failed", ["c0#0", "p0", None])
def test_a_group_whose_member_failed_fatally_is_that_failure_not_also_never_converged(failed: str | None) -> None:
    """A member that failed with a fatal error (librdkafka 2.16.0's KIP-848 member, its rejoin refused with
    INVALID_REQUEST) can no longer take part in its group: the group is not judged for convergence, and the failure
    is LIVE-001 ``client-failed`` alone. A failure of a client outside the group changes nothing."""
    events = (
        Events().add(Assigned, "c0#0", tps=(TP,), how="rebalance").add(Assigned, "c1#0", tps=(TP, TP1), how="rebalance")
    )
    if failed is not None:
        events.add(
            Failed, failed, error="_FATAL: ConsumerGroupHeartbeat fatal error: Broker: Invalid request", call="error_cb"
        )
    judged = replace(history(events, {TP: []}), convergence=converging(LEFT_BEHIND))
    found = kinds(cw.check_history(judged, True))
    if failed == "c0#0":
        assert found == [("LIVE-001", "client-failed")]
    elif failed is None:
        assert found == [("LIVE-001", "never-converged")]
    else:
        assert sorted(found) == [("LIVE-001", "never-converged"), ("LIVE-001", "producer-failed")]


def test_a_group_converged_only_stable_with_every_live_member_owning_what_the_broker_assigned_it() -> None:
    """The convergence a drain waits for: stable, and the broker's assignments and the members' own the same
    multiset (a member left out, one more member, another assignment, or a state short of stable all differ)."""
    assert STABLE_PAIR.converged
    assert not LEFT_BEHIND.converged
    assert not STUCK.converged
    assert not replace(STABLE_PAIR, state="COMPLETING_REBALANCING").converged
    assert not replace(STABLE_PAIR, described=(*STABLE_PAIR.described, ("c/m3", ()))).converged
    assert not replace(STABLE_PAIR, members=(("c0#0", (TP, TP1)), ("c1#0", ()))).converged
    assert replace(STABLE_PAIR, members=(("c1#0", (TP1,)), ("c0#0", (TP,)))).converged  # order does not matter


U0 = TopicPartition("u", 0)
"""A partition of a second topic the group subscribes to."""


def rebalancing(rounds: int, handed: tuple[TopicPartition, ...] = (TP,), before: int = 0) -> Events:
    """c0 and c1 of an eager group handed assignments in ``rounds`` rebalances after the drain began (at 10 s),
    c0 ``handed`` each time and c1 nothing, and ``before`` such rebalances before it, handing every partition."""
    events = Events()
    for _ in range(before):
        events.add(Assigned, "c0#0", after_s=0.5, tps=(TP, TP1), how="assign")
        events.add(Assigned, "c1#0", after_s=0.1, tps=(U0,), how="assign")
    events.at = 10.0
    events.add(Note, "run", after_s=0.0, text="the drain begins")
    for _ in range(rounds):
        events.add(Revoked, "c0#0", after_s=2.0, tps=handed)
        events.add(Assigned, "c0#0", after_s=0.3, tps=handed, how="assign")
        events.add(Assigned, "c1#0", after_s=0.1, tps=(), how="assign")
    return events


def joined_then_rebalancing(rounds: int, handed_after: tuple[TopicPartition, ...] = (TP,)) -> Events:
    """Two rebalances in the drain (from 10 s) that hand c0 t's partitions and c1 u's, then a late member c2 joins
    and ``rounds`` rebalances hand c0 ``handed_after``, c1 and c2 nothing."""
    events = Events()
    events.at = 10.0
    events.add(Note, "run", after_s=0.0, text="the drain begins")
    for _ in range(2):
        events.add(Assigned, "c0#0", after_s=1.0, tps=(TP, TP1), how="assign")
        events.add(Assigned, "c1#0", after_s=0.1, tps=(U0,), how="assign")
    for _ in range(rounds):
        events.add(Revoked, "c0#0", after_s=2.0, tps=handed_after)
        events.add(Assigned, "c0#0", after_s=0.3, tps=handed_after, how="assign")
        events.add(Assigned, "c1#0", after_s=0.1, tps=(), how="assign")
        events.add(Assigned, "c2#0", after_s=0.1, tps=(), how="assign")
    return events


LOOPING = GroupView(
    "g",
    "classic",
    "COMPLETING_REBALANCING",
    (("a/m1", (TP,)), ("b/m2", ())),
    (("c0#0", ()), ("c1#0", ())),
    ((12.0, "PREPARING_REBALANCING", 2), (13.6, "COMPLETING_REBALANCING", 2)),
    70.0,
    (TP, TP1, U0),
)
"""A group of two whose live members subscribe to t and u (three partitions), not converged at the drain's end."""
WITH_LATE = replace(LOOPING, members=(("c0#0", ()), ("c1#0", ()), ("c2#0", ())))
"""``LOOPING`` with a third live member, c2, which joined in the drain."""


@pytest.mark.parametrize(
    ("events", "view", "want"),
    [
        # every rebalance in the drain handed t's partitions and never u's: the loop's own kind
        (rebalancing(25), LOOPING, cw.REBALANCED_WITHOUT),
        (rebalancing(cw.REBALANCES_SEEN), LOOPING, cw.REBALANCED_WITHOUT),
        # fewer rebalances than that: a group converging late, or stuck, is never-converged
        (rebalancing(cw.REBALANCES_SEEN - 1), LOOPING, "never-converged"),
        # no rebalance in the drain at all (a member that never rejoins, a leader that never syncs): never-converged
        (rebalancing(0, before=20), LOOPING, "never-converged"),
        # rebalancing without end but handing every subscribed topic: not this shape, never-converged
        (rebalancing(25, handed=(TP, U0)), LOOPING, "never-converged"),
        # a topic handed before the drain only does not count; one a member still owns at the end does
        (rebalancing(25, before=3), LOOPING, cw.REBALANCED_WITHOUT),
        (rebalancing(25), replace(LOOPING, members=(("c0#0", ()), ("c1#0", (U0,)))), "never-converged"),
        # no listing of the subscribed partitions (an older history, a listing that failed): never-converged
        (rebalancing(25), replace(LOOPING, subscribed=()), "never-converged"),
        # u handed in the drain before a late member joined, never after: the loop among the members at the end
        (joined_then_rebalancing(25), WITH_LATE, cw.REBALANCED_WITHOUT),
        (joined_then_rebalancing(cw.REBALANCES_SEEN - 1), WITH_LATE, "never-converged"),
        (joined_then_rebalancing(25, handed_after=(TP, U0)), WITH_LATE, "never-converged"),
    ],
)
def test_a_group_that_kept_rebalancing_without_a_subscribed_topic_is_told_apart_from_one_stuck(
    events: Events, view: GroupView, want: str
) -> None:
    """LIVE-001 either way: a group that kept completing rebalances in the drain (a member handed
    ``REBALANCES_SEEN`` assignments or more) with a topic its live members subscribe to handed to nobody is
    ``REBALANCED_WITHOUT`` (kafka-clients' leader assigning from metadata without that topic, then rejoining because
    its metadata changed); a group stuck (no rebalance completing), converging late, or churning with every topic
    handed stays ``never-converged``. The kind never makes a group that did not converge pass."""
    judged = replace(history(events, {TP: [0]}), convergence=converging(view, began_at=10.0))
    found = cw.check_converged(judged, True)
    assert kinds(found) == [("LIVE-001", want)], [str(v) for v in found]
    (violation,) = found
    assert violation.data["state_changes"][-1] == [13.6, "COMPLETING_REBALANCING", 2]
    if want == cw.REBALANCED_WITHOUT:
        assert violation.data["unassigned_topics"] == ["u"] and violation.data["rebalances"] >= cw.REBALANCES_SEEN
        assert "kept rebalancing" in violation.evidence and "['u']" in violation.evidence


def test_a_loop_read_without_the_drain_start_is_never_converged() -> None:
    """A history without the drain's start (recorded before it was) cannot tell the drain's rebalances apart from
    the run's: the group is ``never-converged``, as it was."""
    judged = replace(history(rebalancing(25), {TP: [0]}), convergence=converging(LOOPING))
    assert kinds(cw.check_converged(judged, True)) == [("LIVE-001", "never-converged")]


def test_a_convergence_the_admin_could_not_judge_is_partial_not_pass() -> None:
    """The run's admin client without the call (or describing the group UNKNOWN): LIVE-001 is reported PARTIAL
    with why; a fault of the suite's own is could-not-check (``test_client_workload.judge_drawn``), not PARTIAL."""
    events = Events().add(Assigned, "c0#0", tps=(TP,), how="rebalance")
    base = history(events, {TP: [0]})
    lacking = replace(base, convergence=converging(STABLE_PAIR, unjudged="the admin client cannot describe"))
    assert "LIVE-001" in cw.unjudged(lacking) and "cannot describe" in cw.unjudged(lacking)["LIVE-001"]
    faulted = replace(base, convergence=converging(STABLE_PAIR, unjudged="slow", suite_fault=True))
    assert "LIVE-001" not in cw.unjudged(faulted)
    assert cw.unjudged(replace(base, convergence=converging(STABLE_PAIR))) == {}


MEMBER = {"max.poll.interval.ms": "15000", "partition.assignment.strategy": "cooperative-sticky"}


def expelled(gaps_s: list[float], fault_at: int | None = None, lost: bool = True, hung: bool = False) -> Events:
    """c0 assigned, then polling at ``gaps_s`` apart (a broker pause of 2 s after the ``fault_at``-th poll), then given
    up its partition: as lost (its group expelled it) or revoked."""
    events = Events().add(Assigned, "c0#0", tps=(TP,), how="rebalance").add(Polled, "c0#0", **polled(0))
    for n, gap in enumerate(gaps_s):
        events.add(Polled, "c0#0", after_s=gap, records=())
        if n == fault_at:
            events.add(Note, "run", after_s=0.1, text="broker paused for 2000 ms")
            events.add(Note, "run", after_s=2.0, text="broker resumed")
    if hung:
        events.add(Hung, "c0#0", after_s=0.1, call="commit(sync)", bound_s=30.0)
    return events.add(Revoked, "c0#0", after_s=0.5, tps=(TP,), lost=lost)


@pytest.mark.parametrize(
    ("events", "broker_answers", "want"),
    [
        (expelled([1.0] * 40), True, [("LIVE-001", cw.EXPELLED)]),
        (expelled([1.0] * 40), None, [("LIVE-001", cw.EXPELLED)]),
        (expelled([1.0] * 40), False, []),  # the broker did not answer at the end: not judged
        (expelled([1.0] * 40, lost=False), True, []),  # a revocation is how a rebalance takes a partition back
        (expelled([1.0] * 28 + [9.0] + [1.0] * 12), True, []),  # a gap a correct member may be removed across
        (expelled([1.0] * 40 + [9.0]), True, []),  # even the gap before the poll that served the loss
        (expelled([1.0] * 10 + [9.0] + [1.0] * 30), True, [("LIVE-001", cw.EXPELLED)]),  # long before: not judged
        (expelled([1.0] * 40, fault_at=30), True, []),  # a broker fault near: its doing, not judged
        (expelled([1.0] * 40, fault_at=0), True, [("LIVE-001", cw.EXPELLED)]),  # over a window and session before
        (expelled([1.0] * 40, hung=True), True, [("LIVE-001", "hang")]),  # the hang is the finding
    ],
)
def test_a_member_that_kept_polling_with_no_fault_near_is_never_expelled_from_its_group(
    events: Events, broker_answers: bool | None, want: list
) -> None:
    """LIVE-001 ``expelled-while-polling`` (KAFKA-14024's class: a member that never rejoins though it polls): c0 of a
    15 s poll interval, 3 s heartbeat and 6 s session may go 4 s between polls (``expel_bounds``); over the 17 s
    before its last poll before the loss (its rebalance timeout and a margin) it polled every second, and no fault
    came within that and a session more. A gap wider than 4 s in the window, a fault in it, a hang, a revocation
    that is not a loss, or a broker that did not answer leave it unjudged."""
    clients = {"c0": ClientInfo(dict(MEMBER), "g", "topics")}
    violations = cw.check_history(history(events, {TP: [0]}, clients=clients), broker_answers)
    assert kinds(violations) == want
    if want == [("LIVE-001", cw.EXPELLED)]:
        (found,) = violations
        assert found.data["client"] == "c0#0" and found.data["allowed_gap_s"] == 4.0
        assert found.data["widest_gap_s"] <= 1.0 and "lost t-0" in found.evidence


@pytest.mark.parametrize(
    ("settings", "want"),
    [
        ({"max.poll.interval.ms": "15000"}, (15.0, 3.0, 6.0, 4.0)),  # the workload's session, the clients' heartbeat
        ({"max.poll.interval.ms": "15000", "heartbeat.interval.ms": "1000", "session.timeout.ms": "30000"},
         (15.0, 1.0, 30.0, 5.0)),
        ({"max.poll.interval.ms": "6000", "session.timeout.ms": "6000"}, (6.0, 3.0, 6.0, -0.5)),  # too tight to judge
        ({"max.poll.interval.ms": "20000", "group.protocol": "consumer"}, (20.0, 5.0, 45.0, 5.5)),  # the broker's
    ],
)  # fmt: skip
def test_how_often_a_member_must_poll_to_keep_its_membership_follows_its_own_settings(
    settings: dict[str, str], want: tuple[float, ...]
) -> None:
    events = Events().add(Polled, "c0#0", records=())
    clients = {"c0": ClientInfo(settings, "g", "topics")}
    assert cw.expel_bounds(history(events, {TP: [0]}, clients=clients), "c0#0") == want


def test_the_checkers_classic_session_is_the_workloads_own() -> None:
    from kconform.conformance.workloads.clients.driver import SESSION_MS

    assert cw.WORKLOAD_SESSION_S * 1000 == SESSION_MS


def crashed_after_reading_part(crash: bool) -> History:
    """A member that read 0..2 of a partition holding 0..5, then (``crash``) its process died of SIGABRT in a poll;
    the drain never ran."""
    events = (
        Events()
        .add(Assigned, "c0#0", tps=(TP,), how="rebalance")
        .add(Polled, "c0#0", records=tuple((TP, o, f"v{o}".encode()) for o in range(3)))
    )
    if crash:
        events.add(
            Crashed,
            "run",
            how="SIGABRT (signal 6)",
            signal=6,
            exit_code=None,
            last=(("c0#0", "consume(100, 1)", True, 3.5), ("p0", "poll(0)", False, 1.0)),
            stderr="python: rdkafka_queue.c:42: rd_kafka_q_x: Assertion `x' failed.\nFatal Python error: Aborted\n\n"
            'Stack (most recent call first):\n  File "driver.py", line 126 in _serve\n',
        )
    return history(events, {TP: list(range(6))}, drained=False)


def test_a_process_that_died_under_its_clients_is_a_liveness_finding_and_what_it_had_not_read_is_not_lost() -> None:
    """LIVE-001 ``client-crashed`` names the signal, the call each client was in and the assertion line; the records
    the consumer had not read when its process died (3..5) are no CLIENT finding, the drain never having run."""
    found = cw.check_history(crashed_after_reading_part(True), True)
    assert kinds(found) == [("LIVE-001", "client-crashed")], [str(v) for v in found]
    (crash,) = found
    assert "died of SIGABRT (signal 6)" in crash.evidence and "c0#0 in consume(100, 1) (since 3.5 s)" in crash.evidence
    assert "p0 last poll(0) (returned)" in crash.evidence
    assert crash.evidence.endswith("Assertion `x' failed. | Fatal Python error: Aborted; the broker still answered")
    assert crash.data["signal"] == 6 and crash.data["last_calls"][0]["under_way"] is True
    assert cw.check_history(crashed_after_reading_part(False), True) == []
