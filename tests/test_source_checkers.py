"""The pure checkers of the source and discovery suite's scenarios (DISC-005, -007, -008, -010, RESTORE-003, -018):
each passes what the reference's source does and names each way of breaking its requirement."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kconform.conformance.checks.checkers import (
    Violation,
    check_group_start,
    check_poll_moves_only_its_partition,
    check_read_since_discovery,
    check_resolved_before_first_read,
    check_restored_latest,
    check_topic_deleted,
    check_zero_partitions,
)
from kconform.reference_impl.discovery import ZeroPartitionsPolicy
from kconform.reference_impl.group_start import NoCommittedOffsetError, committed_start
from kconform.reference_impl.types import EARLIEST, LATEST, TopicPartition

A0, A1, B0 = TopicPartition("in-a", 0), TopicPartition("in-a", 1), TopicPartition("in-b", 0)
POSITIONS = st.dictionaries(st.sampled_from([A0, A1, B0]), st.integers(0, 9) | st.just(EARLIEST), min_size=1)


def kinds(violations: list[Violation]) -> list[tuple[str, str]]:
    return [(v.requirement, v.kind) for v in violations]


@pytest.mark.parametrize("policy", list(ZeroPartitionsPolicy), ids=lambda p: p.value)
def test_required_DISC_007_010_each_policy_has_its_one_conforming_outcome(policy: ZeroPartitionsPolicy) -> None:
    """Under ``fail``, failing is DISC-007's and naming the subscription DISC-010's: an unnamed failure breaks
    DISC-010 alone."""
    named = ValueError("no partition matches kconform-missing")
    ignore = policy is ZeroPartitionsPolicy.IGNORE
    assert check_zero_partitions(policy, "kconform-missing", [], None if ignore else named) == []
    if ignore:
        assert kinds(check_zero_partitions(policy, "kconform-missing", [], named)) == [("DISC-007", "failed-on-zero")]
    else:
        assert kinds(check_zero_partitions(policy, "kconform-missing", [], None)) == [("DISC-007", "idle-on-zero")]
        unclear = check_zero_partitions(policy, "kconform-missing", [], ValueError("nothing found"))
        assert kinds(unclear) == [("DISC-010", "unclear-error")]
    reported = check_zero_partitions(policy, "kconform-missing", [A0], None)
    assert ("DISC-007", "unsubscribed-partition") in kinds(reported)
    assert reported[-1].data["partitions"] == [{"topic": "in-a", "partition": 0}]


@given(st.integers(0, 9) | st.just(EARLIEST))
def test_required_DISC_005_a_first_read_at_the_latest_sentinel_is_unresolved(start: int) -> None:
    assert check_resolved_before_first_read(A0, start) == []
    assert kinds(check_resolved_before_first_read(A0, LATEST)) == [("DISC-005", "latest-unresolved")]


@given(st.dictionaries(st.sampled_from([A0, A1, B0]), st.integers(0, 5), min_size=1), st.integers(0, 4))
def test_required_DISC_005_and_RESTORE_003_a_restore_resumes_and_reads_what_came_after_discovery(
    ends: dict[TopicPartition, int], produced: int
) -> None:
    now = {tp: end + produced for tp, end in ends.items()}
    assert check_restored_latest(ends, ends, now) == []
    restored = check_restored_latest(dict.fromkeys(ends, LATEST), ends, now)
    assert kinds(restored) == [("DISC-005", "latest-unresolved")] * len(ends)
    read = {tp: list(range(end, now[tp])) for tp, end in ends.items()}
    assert check_read_since_discovery(read, ends, now) == []
    tp = min(ends)
    if produced:
        skipped = check_read_since_discovery(read | {tp: read[tp][1:]}, ends, now)
        assert kinds(skipped) == [("RESTORE-003", "offset-gap")]
    again = check_read_since_discovery(read | {tp: [*read[tp], ends[tp]]}, ends, now)
    assert kinds(again) == [("RESTORE-003", "offset-duplicate" if produced else "offset-gap")]


@given(POSITIONS, st.integers(1, 3))
def test_required_RESTORE_003_a_poll_moves_only_its_own_partition(before: dict[TopicPartition, int], n: int) -> None:
    polled = min(before)
    start = 0 if before[polled] == EARLIEST else before[polled]
    returned = [(polled, start + i) for i in range(n)]
    after = before | {polled: start + n}
    assert check_poll_moves_only_its_partition(polled, returned, before, after) == []
    foreign = check_poll_moves_only_its_partition(polled, [*returned, (TopicPartition("out", 0), 3)], before, after)
    assert kinds(foreign) == [("RESTORE-003", "foreign-record")]
    for other in sorted(set(before) - {polled}):
        moved = check_poll_moves_only_its_partition(polled, returned, before, after | {other: 11})
        want = (
            ("DISC-005", "sentinel-resolved-early")
            if before[other] == EARLIEST
            else ("RESTORE-003", "moved-without-read")
        )
        assert kinds(moved) == [want]


@given(st.dictionaries(st.sampled_from([A0, A1, B0]), st.integers(0, 9), min_size=1), st.integers(1, 3))
def test_required_DISC_008_a_deleted_topic_keeps_its_offsets_and_stalls_no_other(
    before: dict[TopicPartition, int], produced: int
) -> None:
    now = {tp: off if tp.topic == "in-b" else off + produced for tp, off in before.items()}
    assert check_topic_deleted(before, now, "in-b", produced) == []
    dropped = {tp: off for tp, off in now.items() if tp.topic != "in-b"}
    assert kinds(check_topic_deleted(before, dropped, "in-b", produced)) == [("DISC-008", "forgotten")] * (B0 in before)
    stalled = check_topic_deleted(before, dict(before), "in-b", produced)
    assert kinds(stalled) == [("DISC-008", "stalled")] * sum(tp.topic == "in-a" for tp in before)


def test_required_RESTORE_018_021_the_reference_starts_from_group_offsets_or_fails_naming_each_partition_without() -> (
    None
):
    """The reference's start from a group's committed offsets passes the checker in each case it can meet."""
    held = {A0: 3}
    for fallback in (EARLIEST, LATEST):
        started = committed_start("g", [A0, A1], held, fallback)
        assert started == {A0: 3, A1: fallback}
        assert check_group_start([A0, A1], held, fallback, started, None) == []
    with pytest.raises(NoCommittedOffsetError) as failed:
        committed_start("g", [A0, A1, B0], held, None)
    assert failed.value.partitions == [A1, B0]
    assert check_group_start([A0, A1, B0], held, None, None, str(failed.value)) == []
    assert committed_start("g", [A0], held, None) == {A0: 3}, "every partition held: no fallback needed"


def test_required_RESTORE_018_021_a_failed_start_must_name_each_partition_without_a_committed_offset() -> None:
    kafka = "Undefined offset with no reset policy for partitions: [in-a-1]"  # Kafka's NoOffsetForPartitionException
    assert check_group_start([A0, A1], {A0: 3}, None, None, kafka) == []
    [unnamed] = check_group_start([A0, A1, B0], {A0: 3}, None, None, kafka)
    assert (unnamed.kind, unnamed.data["topic"], unnamed.data["partition"]) == ("uncommitted-unnamed", "in-b", 0)


@given(
    start=st.integers(0, 9) | st.sampled_from([EARLIEST, LATEST]), fallback=st.sampled_from([None, EARLIEST, LATEST])
)
def test_required_RESTORE_018_a_start_going_on_puts_each_partition_where_it_was_asked_to(
    start: int, fallback: int | None
) -> None:
    """A0 has committed offset 3, A1 none: A0 must start at 3; A1 at the fallback, and with none the start must
    not go on at all."""
    assert kinds(check_group_start([A0], {A0: 3}, fallback, {A0: start}, None)) == (
        [] if start == 3 else [("RESTORE-018", "committed-offset-ignored")]
    )
    want = [] if start == fallback else [("RESTORE-018", "fallback-ignored" if fallback else "silent-start")]
    assert kinds(check_group_start([A1], {A0: 3}, fallback, {A1: start}, None)) == want
