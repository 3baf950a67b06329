"""The pure checkers of the pipeline level: what tasks read (RESTORE-002/003, a bounded read's end: RESTORE-010,
positions deleted before they were read: RESTORE-015, a start at specific offsets that leave partitions out:
RESTORE-017) and a sink's output
(COMMIT-011 loss and duplication, COMMIT-013 order, STRAT-001 keyed placement).

Properties over generated outputs: any interleaving of input partitions that keeps each one's
order passes, with repeats anywhere after a record's first appearance; swapping two records of
one input partition in one output partition is named ``reordered``.
"""

from __future__ import annotations

from collections import Counter

from hypothesis import given
from hypothesis import strategies as st

from kconform.conformance.checks.checkers import check_order
from kconform.conformance.checks.pipeline_checkers import (
    ReadRecord,
    TaskAttempt,
    Truncated,
    check_bounded_read,
    check_closed_at_stop,
    check_discovered,
    check_foreign_left_open,
    check_gone_position,
    check_listed_reads,
    check_offsets_read_by_one_task,
    check_output,
    check_pattern_reads,
    check_position_past_end,
    check_read_once,
    check_refused_timeout,
    check_rewritten,
    check_single_reader,
    check_sink_output,
    check_timed_out_task,
    check_unblocked,
    check_unmapped_start,
    check_zombie_fenced,
    ends_read,
    overlapping_attempts,
    unslowed_sink,
    write_spans_ms,
)
from kconform.conformance.checks.strategy_checkers import check_sink_placement
from kconform.reference_impl.kafka_strategies import partition_for_key
from kconform.reference_impl.ports import Record
from kconform.reference_impl.types import TopicPartition

Origin = dict[bytes | None, tuple[TopicPartition, int]]


def origin_of(sizes: list[int]) -> Origin:
    return {f"{p}-{o}".encode(): (TopicPartition("in", p), o) for p, n in enumerate(sizes) for o in range(n)}


@st.composite
def ordered_output(draw: st.DrawFn) -> tuple[Origin, list[bytes | None]]:
    """An input of a few partitions and one output partition interleaving them in order, with repeats."""
    sizes = draw(st.lists(st.integers(1, 6), min_size=1, max_size=4))
    queues = [[f"{p}-{o}".encode() for o in range(n)] for p, n in enumerate(sizes)]
    written: list[bytes | None] = []
    while any(queues):
        queue = draw(st.sampled_from([q for q in queues if q]))
        written.append(queue.pop(0))
        if draw(st.booleans()) and written:
            written.append(draw(st.sampled_from(written)))  # a replay repeats a record already written
    return origin_of(sizes), written


@given(ordered_output())
def test_required_COMMIT_013_in_order_interleavings_with_repeats_pass(case: tuple[Origin, list[bytes | None]]) -> None:
    origin, written = case
    assert check_order(origin, {0: written}) == []


@given(ordered_output(), st.data())
def test_required_COMMIT_013_two_records_of_one_partition_swapped_are_reordered(
    case: tuple[Origin, list[bytes | None]], data: st.DataObject
) -> None:
    origin, written = case
    firsts = list(dict.fromkeys(written))
    by_partition: dict[TopicPartition, list[bytes | None]] = {}
    for value in firsts:
        by_partition.setdefault(origin[value][0], []).append(value)
    candidates = [values for values in by_partition.values() if len(values) >= 2]
    if not candidates:
        return
    values = data.draw(st.sampled_from(candidates))
    i, j = sorted(data.draw(st.lists(st.sampled_from(range(len(values))), min_size=2, max_size=2, unique=True)))
    a, b = values[i], values[j]
    swapped = [b if v == a else a if v == b else v for v in firsts]
    violations = check_order(origin, {3: swapped})
    assert violations and {v.kind for v in violations} == {"reordered"}, violations
    assert all(v.requirement == "COMMIT-013" and "output partition 3" in v.evidence for v in violations)


def test_required_COMMIT_013_order_is_per_output_partition() -> None:
    """The same input partition split over two output partitions (a rescale) is not compared across them."""
    origin = origin_of([4])
    assert check_order(origin, {0: [b"0-2", b"0-3"], 1: [b"0-0", b"0-1"]}) == []


@given(ordered_output(), st.data())
def test_required_COMMIT_013_a_replay_a_keyless_partitioner_sent_elsewhere_is_a_repeat_not_a_reordering(
    case: tuple[Origin, list[bytes | None]], data: st.DataObject
) -> None:
    """At least once, a replayed record goes through a new producer, whose partitioner may pick another output
    partition: there it follows later records. It was written before, so it is a repeat; records written once
    are still judged (flink-connector-kafka 3.0.x with kafka-clients 3.2.3's sticky partitioner does this)."""
    origin, written = case
    firsts = list(dict.fromkeys(written))
    replayed = data.draw(st.lists(st.sampled_from(firsts), min_size=1, unique=True))
    other = [*firsts[-1:], *replayed]  # the other partition: the newest record first, then the replay
    assert check_order(origin, {0: firsts, 1: other}) == []
    once = [v for v in firsts if v not in set(other)]
    same_partition = [v for v in once if origin[v][0] == origin[once[0]][0]] if once else []
    if len(same_partition) >= 2:  # a reordering among records written once is still caught beside the replay
        a, b = same_partition[0], same_partition[-1]
        swapped = [b if v == a else a if v == b else v for v in firsts]
        assert {v.kind for v in check_order(origin, {0: swapped, 1: other})} == {"reordered"}


def test_required_COMMIT_011_loss_and_duplicates_are_named() -> None:
    expected = Counter({b"a": 1, b"b": 1})
    seen = Counter({b"a": 2})
    assert [(v.kind, v.requirement) for v in check_output(expected, seen, exactly_once=True)] == [
        ("lost-write", "COMMIT-011"),
        ("duplicate", "COMMIT-011"),
    ]
    assert [v.kind for v in check_output(expected, seen, exactly_once=False)] == ["lost-write"]


def read(partition: int, offset: int, task: int) -> ReadRecord:
    return ReadRecord(TopicPartition("in", partition), offset, None, task)


def test_required_RESTORE_002_a_partition_read_by_two_tasks_or_a_task_beyond_n_is_named() -> None:
    assert check_single_reader([read(0, 0, 0), read(0, 1, 0), read(1, 0, 1)], 2) == []
    kinds = [(v.requirement, v.kind) for v in check_single_reader([read(0, 0, 0), read(0, 1, 1), read(1, 0, 2)], 2)]
    assert kinds == [("RESTORE-002", "double-assignment"), ("RESTORE-002", "owner-out-of-range")]


def test_required_ASSIGN_007_disjoint_ranges_of_one_partition_pass_an_offset_read_by_two_tasks_fails() -> None:
    split = [read(0, 0, 0), read(0, 1, 0), read(0, 2, 1), read(0, 3, 1), read(0, 2, 1)]  # a retry re-reads offset 2
    assert check_offsets_read_by_one_task(split) == []
    overlapping = [read(0, 0, 0), read(0, 1, 0), read(0, 1, 1), read(0, 2, 1), read(1, 0, 2)]
    (violation,) = check_offsets_read_by_one_task(overlapping)
    assert (violation.requirement, violation.kind) == ("ASSIGN-007", "double-read")
    assert violation.data == {"topic": "in", "partition": 0, "offsets": [1], "tasks": [0, 1]}


def test_a_failed_query_is_judged_up_to_the_last_offset_it_read_in_each_partition() -> None:
    assert ends_read([read(0, 0, 0), read(0, 4, 1), read(1, 2, 0), read(0, 1, 0)]) == {
        TopicPartition("in", 0): 5,
        TopicPartition("in", 1): 3,
    }
    assert ends_read([]) == {}


def test_required_RESTORE_003_read_once_names_gaps_and_repeats() -> None:
    ends = {TopicPartition("in", 0): 3}
    assert check_read_once([read(0, o, 0) for o in range(3)], ends) == []
    violations = check_read_once([read(0, 0, 0), read(0, 0, 1), read(0, 2, 0)], ends, requirement="DISC-005")
    assert [(v.requirement, v.kind) for v in violations] == [
        ("DISC-005", "offset-gap"),
        ("DISC-005", "offset-duplicate"),
    ]


def test_required_RESTORE_003_read_once_from_a_start_past_zero_names_what_it_skipped_and_read_below_it() -> None:
    """A partition started at offset 2 (a group's offset): 2..4 read once holds; a read of offset 1 is named as
    below its start (``read-before-start`` once, ``offset-duplicate`` twice), and offset 3 not read is a gap; a
    partition without a start still starts at 0."""
    ends, starts = {TopicPartition("in", 0): 5, TopicPartition("in", 1): 2}, {TopicPartition("in", 0): 2}
    held = [*(read(0, o, 0) for o in range(2, 5)), read(1, 0, 1), read(1, 1, 1)]
    assert check_read_once(held, ends, starts=starts) == []
    violations = check_read_once([read(0, 1, 0), read(0, 2, 0), read(0, 4, 0), *held[3:]], ends, starts=starts)
    assert [(v.kind, v.data["offset"]) for v in violations] == [("offset-gap", 3), ("read-before-start", 1)]
    assert violations[1].evidence.endswith("read 1 times, below its start 2")
    twice = check_read_once([read(0, 1, 0), read(0, 1, 0), *held], ends, starts=starts)
    assert [(v.kind, v.data["offset"], v.data["times"]) for v in twice] == [("offset-duplicate", 1, 2)]


def test_required_DISC_009_a_partition_added_while_running_and_never_read_was_never_discovered() -> None:
    """Nothing read of an added partition is DISC-009 alone (not a gap per offset); one read from
    past its start is DISC-005's gap; an added partition without records cannot show either."""
    added = {TopicPartition("in", 0): 3, TopicPartition("in", 1): 2, TopicPartition("in", 2): 0}
    assert check_discovered([*(read(0, o, 0) for o in range(3)), *(read(1, o, 1) for o in range(2))], added) == []
    violations = check_discovered([read(0, o, 0) for o in range(1, 3)], added)
    kinds = [(v.requirement, v.kind) for v in violations]
    assert kinds == [("DISC-009", "never-discovered"), ("DISC-005", "offset-gap")]
    assert violations[0].evidence.startswith("in-1:")
    unfound = check_discovered([read(0, o, 0) for o in range(3)], added, unfound="DISC-002")  # a new topic's
    assert [(v.requirement, v.kind) for v in unfound] == [("DISC-002", "never-discovered")]


def test_required_DISC_005_a_partition_a_discovery_found_and_never_read_was_started_past_its_records() -> None:
    """Where the job's discoveries are known (the Flink harness records what its enumerator listed), an added
    partition none of whose records was read but which a discovery found is DISC-005 ``never-read`` (started at
    its end, as flink-connector-kafka 3.0.x starts a partition found after start at LATEST), not DISC-009."""
    added = {TopicPartition("in", 0): 3, TopicPartition("in", 1): 2}
    found = check_discovered([read(0, o, 0) for o in range(3)], added, listed={TopicPartition("in", 1)})
    assert [(v.requirement, v.kind) for v in found] == [("DISC-005", "never-read")]
    assert "a discovery found it" in found[0].evidence
    unlisted = check_discovered([read(0, o, 0) for o in range(3)], added, listed={TopicPartition("in", 0)})
    assert [(v.requirement, v.kind) for v in unlisted] == [("DISC-009", "never-discovered")]


def test_required_COMMIT_004_a_stable_offset_short_of_the_end_at_the_kill_is_lingering() -> None:
    """Only partitions whose last stable offset has not reached their end from the kill are named."""
    ends = {TopicPartition("out", 0): 5, TopicPartition("out", 1): 3}
    assert check_unblocked({TopicPartition("out", 0): 6, TopicPartition("out", 1): 3}, ends, "after the restart") == []
    violations = check_unblocked({TopicPartition("out", 0): 4}, ends, "after the restart")
    assert [(v.requirement, v.kind) for v in violations] == [("COMMIT-004", "lingering-transaction")] * 2
    assert "out-0" in violations[0].evidence and "after the restart" in violations[0].evidence


ORIGINAL = TaskAttempt(stage=3, task=0, attempt=0, speculative=False, host="127.0.0.1", status="KILLED")
COPY = TaskAttempt(stage=3, task=0, attempt=1, speculative=True, host="127.0.0.2", status="SUCCESS")
OTHER = TaskAttempt(stage=3, task=1, attempt=0, speculative=False, host="127.0.0.2", status="SUCCESS")


def test_two_live_attempts_are_an_original_and_its_speculative_copy_on_another_host() -> None:
    assert overlapping_attempts([COPY, OTHER, ORIGINAL]) == (ORIGINAL, COPY)
    assert overlapping_attempts([ORIGINAL, OTHER]) is None  # no copy: no zombie
    retry = TaskAttempt(stage=3, task=0, attempt=1, speculative=False, host="127.0.0.2", status="SUCCESS")
    assert overlapping_attempts([ORIGINAL, retry]) is None  # a retry runs after its original, never beside it
    same_host = TaskAttempt(stage=3, task=0, attempt=1, speculative=True, host="127.0.0.1", status="SUCCESS")
    assert overlapping_attempts([ORIGINAL, same_host]) is None


def test_required_COMMIT_006_a_superseded_attempts_open_transaction_or_second_commit_is_a_zombies() -> None:
    """After a speculative copy ran beside its original: a partition whose last stable offset is short of its end
    is a transaction the copy did not fence; a value visible more often than written, both attempts' commit."""
    a, b = TopicPartition("out", 0), TopicPartition("out", 1)
    written = Counter([b"x", b"y"])
    assert check_zombie_fenced(ORIGINAL, COPY, {a: 7, b: 4}, {a: 7, b: 4}, written, Counter([b"x", b"y"])) == []
    held = check_zombie_fenced(ORIGINAL, COPY, {a: 2, b: 4}, {a: 7, b: 4}, written, Counter([b"x"]))
    assert [(v.requirement, v.kind, v.data["stable"], v.data["end"]) for v in held] == [
        ("COMMIT-006", "zombie-transaction-open", 2, 7)
    ]
    assert held[0].data["attempts"] == {"original": ORIGINAL.fields(), "copy": COPY.fields()}
    twice = check_zombie_fenced(ORIGINAL, COPY, {a: 9}, {a: 9}, written, Counter([b"x", b"x", b"y", b"other"]))
    assert [(v.requirement, v.kind, v.data["value"], v.data["times"]) for v in twice] == [
        ("COMMIT-006", "zombie-write", "x", 2)
    ]
    assert "127.0.0.2" in twice[0].evidence and "both committed" in twice[0].evidence


def test_required_COMMIT_017_a_stable_offset_short_of_the_end_after_a_prefix_change_is_named_on_017() -> None:
    violations = check_unblocked({TopicPartition("out", 0): 4}, {TopicPartition("out", 0): 5}, "now", "COMMIT-017")
    assert [(v.requirement, v.kind, v.data["stable"], v.data["end"]) for v in violations] == [
        ("COMMIT-017", "lingering-transaction", 4, 5)
    ]


def test_required_COMMIT_016_a_held_partition_whose_stable_offset_moved_while_another_query_ran_is_named() -> None:
    """Only a partition the kill left held below its end, whose last stable offset then moved, is named."""
    a, b, c = (TopicPartition("out", p) for p in range(3))
    left, ends = {a: 3, b: 7, c: 0}, {a: 7, b: 7, c: 4}
    assert check_foreign_left_open(left, {a: 3, b: 7, c: 0}, ends, "while job ran") == []
    wrong = check_foreign_left_open(left, {a: 7, b: 7, c: 0}, ends, "while job ran")
    assert [(v.requirement, v.kind, v.data["partition"], v.data["left"], v.data["stable"]) for v in wrong] == [
        ("COMMIT-016", "foreign-transaction-aborted", 0, 3, 7)
    ]
    assert "while job ran" in wrong[0].evidence


def test_required_COMMIT_007_records_of_a_timed_out_transaction_must_be_written_again() -> None:
    timed_out = Counter({b"a": 1, b"b": 1})
    cause = "was in a transaction the broker timed out"
    assert check_rewritten(timed_out, Counter({b"a": 1, b"b": 1, b"c": 1}), cause) == []
    violations = check_rewritten(timed_out, Counter({b"a": 1}), cause)
    assert [(v.requirement, v.kind, v.evidence) for v in violations] == [
        ("COMMIT-007", "lost-write", f"b'b' {cause}, never written again")
    ]
    assert violations[0].data["cause"] == cause


@given(st.lists(st.none() | st.binary(max_size=12), max_size=20), st.integers(1, 64))
def test_required_STRAT_001_sink_output_placed_by_murmur2_passes(keys: list[bytes | None], partitions: int) -> None:
    """Keyed records in their murmur2 partition pass; keyless ones pass wherever they are."""
    written: dict[int, list[bytes | None]] = {}
    for i, key in enumerate(keys):
        written.setdefault(i % partitions if key is None else partition_for_key(key, partitions), []).append(key)
    assert check_sink_placement(written, partitions) == []


def test_required_STRAT_001_a_key_placed_by_librdkafkas_crc32_is_named() -> None:
    """``foobar`` of 10 partitions: Java's producer writes it to 6, librdkafka's default to 9."""
    violations = check_sink_placement({9: [b"foobar", None], 6: [b"foobar"]}, 10)
    assert [(v.requirement, v.kind) for v in violations] == [("STRAT-001", "keyed-placement-mismatch")]
    assert "went to 9" in violations[0].evidence and "writes it to 6" in violations[0].evidence


@given(
    st.lists(st.sampled_from(["kc-1-first", "kc-1-while-running", "kc-1x-lookalike", "kc-1", "kc-10-x"]), min_size=1)
)
def test_required_DISC_002_reads_of_topics_the_pattern_does_not_match_in_full_are_named(topics: list[str]) -> None:
    read = [TopicPartition(t, 0) for t in topics]
    wrong = check_pattern_reads(read, "kc-1-.*")
    assert [(v.data["topic"], v.kind) for v in wrong] == [
        (t, "unsubscribed-read") for t in sorted(set(topics)) if t in ("kc-1x-lookalike", "kc-1", "kc-10-x")
    ]


def test_required_DISC_001_reads_of_topics_not_listed_by_exact_name_are_named() -> None:
    read = [TopicPartition(t, p) for t in ("kc-a", "kc-A", "kc-ab", "kc-b", "kc-ab") for p in (0, 1)]
    wrong = check_listed_reads(read, ["kc-b", "kc-a"])
    assert [(v.data["topic"], v.data["partition"], v.kind) for v in wrong] == [
        (t, p, "unsubscribed-read") for t in ("kc-A", "kc-ab") for p in (0, 1)
    ]
    assert wrong[0].data["topics"] == ["kc-a", "kc-b"]
    assert check_listed_reads(read[:2] + read[6:8], ["kc-a", "kc-b"]) == []


def test_required_COMMIT_020_a_partition_held_below_its_end_after_the_stop_is_named() -> None:
    a, b = TopicPartition("sink", 0), TopicPartition("sink", 1)
    wrong = check_closed_at_stop({a: 9, b: 5}, {a: 9, b: 7}, 30.04)
    assert [(v.requirement, v.kind, v.data["partition"], v.data["stable"], v.data["end"]) for v in wrong] == [
        ("COMMIT-020", "open-after-stop", 1, 5, 7)
    ]
    assert wrong[0].data["waited_s"] == 30.0
    assert check_closed_at_stop({a: 10, b: 7}, {a: 9, b: 7}, 1.0) == []


def test_required_COMMIT_015_024_only_a_failure_naming_both_settings_with_nothing_committed_passes() -> None:
    both = "org.apache.kafka...\nInvalidTxnTimeout: transaction.timeout.ms above transaction.max.timeout.ms\n"
    assert check_refused_timeout(both, "sink", 0, 7) == []
    assert [v.kind for v in check_refused_timeout(both, "sink", 3, 7)] == ["written-anyway"]
    unclear = check_refused_timeout("trace\nInvalidTxnTimeout: transaction.timeout.ms too large\n\n", "sink", 0, 7)
    assert [v.kind for v in unclear] == ["unclear-error"]
    assert unclear[0].data == {"error": "InvalidTxnTimeout: transaction.timeout.ms too large",
                               "unnamed": ["transaction.max.timeout.ms"]}  # fmt: skip
    ignored = check_refused_timeout(None, "sink", 5, 7)
    assert [(v.kind, v.data["transaction_timeout_ms"]) for v in ignored] == [("refused-timeout-ignored", 7)]


MARKED = {TopicPartition("in", 0): [0, 1, 2, 7, 8], TopicPartition("in", 1): [0, 4]}
"""Committed offsets of logs committed, aborted, committed (in-0: markers at 3, 6, 9) or committed, committed
(in-1: markers at 1, 5): each ends in a commit marker."""
MARKED_STOP = {TopicPartition("in", 0): 10, TopicPartition("in", 1): 6}


def test_required_RESTORE_010_a_bounded_read_that_read_every_committed_record_once_and_ended_passes() -> None:
    reads = [read(tp.partition, o, tp.partition) for tp, offsets in MARKED.items() for o in offsets]
    assert check_bounded_read(reads, MARKED, MARKED_STOP, idle_ms=None) == []


@given(idle_ms=st.integers(0, 10**6), missing=st.booleans())
def test_required_RESTORE_010_a_bounded_read_given_up_on_is_unfinished_whatever_it_read(
    idle_ms: int, missing: bool
) -> None:
    reads = [read(tp.partition, o, 0) for tp, offsets in MARKED.items() for o in offsets][: -1 if missing else None]
    violations = check_bounded_read(reads, MARKED, MARKED_STOP, idle_ms)
    assert [v.kind for v in violations] == ["record-missed"] * missing + ["unfinished"]
    assert violations[-1].data["idle_ms"] == idle_ms and violations[-1].data["complete"] is not missing


def test_required_RESTORE_010_missed_repeated_aborted_and_past_the_stop_reads_are_named() -> None:
    reads = [read(0, o, 0) for o in (0, 1, 1, 4, 7, 8, 10)] + [read(1, o, 1) for o in (0, 4)]
    violations = check_bounded_read(reads, MARKED, MARKED_STOP, idle_ms=None)
    assert [(v.kind, v.data["offset"]) for v in violations] == [
        ("record-missed", 2),
        ("record-duplicate", 1),
        ("unexpected-read", 4),
        ("unexpected-read", 10),
    ]
    assert {v.requirement for v in violations} == {"RESTORE-010"}


GONE, KEPT = TopicPartition("t", 0), TopicPartition("t", 1)
TRUNCATED = {GONE: Truncated(position=1013, log_start=1029, end=1054), KEPT: Truncated(1013, 1013, 1054)}
"""Partition 0 lost [1013, 1029) before the restart read it; partition 1 was truncated exactly at its position."""


def reads_from(starts: dict[TopicPartition, int]) -> list[ReadRecord]:
    return [ReadRecord(tp, o, None, 0) for tp, start in starts.items() for o in range(start, TRUNCATED[tp].end)]


@given(loss_accepted=st.booleans())
def test_required_RESTORE_015_016_019_a_failure_naming_the_partition_position_and_log_start_passes(
    loss_accepted: bool,
) -> None:
    named = "PositionGone: t-0: position 1013 is below the partition's log start 1029: records [1013, 1029) deleted"
    assert check_gone_position(named + "\n  at Foo.scala:12", [], TRUNCATED, loss_accepted) == []
    spark = "[KAFKA_DATA_LOSS.COULD_NOT_READ_OFFSET_RANGE] Could not read records in offset [1013, 1054) for topic " \
        "partition t-0 with consumer group spark-kafka-source\n\tat KafkaDataConsumer.scala:1029)"  # fmt: skip
    [unnamed] = check_gone_position(spark, [], TRUNCATED, loss_accepted)
    assert (unnamed.requirement, unnamed.kind, unnamed.data["partition"]) == ("RESTORE-016", "log-start-unnamed", 0)
    assert unnamed.data["error"].startswith("[KAFKA_DATA_LOSS")
    other = check_gone_position("broker down", [], TRUNCATED, loss_accepted)
    assert [(v.kind, v.data.get("unnamed")) for v in other] == [
        ("loss-unnamed", ["partition", "position"]),
        ("log-start-unnamed", None),
    ]
    wrong = check_gone_position("t-10 at 10130 from 1029.5", [], TRUNCATED, False)
    assert [v.kind for v in wrong] == ["loss-unnamed", "log-start-unnamed"]


def test_required_RESTORE_015_going_on_is_a_silent_skip_unless_loss_was_accepted() -> None:
    from_log_start = reads_from({GONE: 1029, KEPT: 1013})
    assert check_gone_position(None, from_log_start, TRUNCATED, loss_accepted=True) == []
    [silent] = check_gone_position(None, from_log_start, TRUNCATED, loss_accepted=False)
    assert (silent.kind, silent.data) == (
        "silent-skip",
        {"topic": "t", "partition": 0, "start": 1013, "log_start": 1029, "record_count": 16},
    )


@given(loss_accepted=st.booleans(), reset_to=st.integers(1030, 1054))
def test_required_RESTORE_015_a_reset_past_records_that_still_exist_is_named(
    loss_accepted: bool, reset_to: int
) -> None:
    reset = check_gone_position(None, reads_from({GONE: reset_to, KEPT: 1013}), TRUNCATED, loss_accepted)
    [skipped] = [v for v in reset if v.kind == "existing-record-skipped"]
    assert (skipped.data["partition"], skipped.data["record_count"]) == (0, reset_to - 1029)
    assert skipped.data["offsets"][0] == 1029
    assert [v.kind for v in reset if v.kind != "existing-record-skipped"] == ["silent-skip"] * (not loss_accepted)
    [kept_skipped] = check_gone_position(None, reads_from({GONE: 1029, KEPT: 1014}), TRUNCATED, True)
    assert (kept_skipped.data["partition"], kept_skipped.data["offsets"]) == (1, [1013])


RECREATED, LEFT_ALONE = TopicPartition("r", 0), TopicPartition("o", 0)
PAST_END = {RECREATED: Truncated(position=1013, log_start=0, end=308), LEFT_ALONE: Truncated(1013, 0, 1045)}
"""Topic ``r`` was deleted and created again with 308 records, below the query's position 1013 (RESTORE-022); topic
``o`` was left alone and grew from 1013 to 1045."""


def reads_past_end(starts: dict[TopicPartition, int]) -> list[ReadRecord]:
    return [ReadRecord(tp, o, None, 0) for tp, start in starts.items() for o in range(start, PAST_END[tp].end)]


@given(loss_accepted=st.booleans())
def test_required_RESTORE_022_023_a_failure_naming_the_partition_position_and_end_passes(loss_accepted: bool) -> None:
    reference = "PositionPastEnd: positions past their partition's end (r-0: position 1013, end 308): the topic was"
    spark = "[KAFKA_DATA_LOSS.PARTITION_OFFSET_CHANGED] Partition r-0's offset was changed from 1013 to 308.\n" \
        "This could be ... 2) the kafka topic-partition is deleted and re-created."  # fmt: skip
    for named in (reference, spark):
        assert check_position_past_end(named + "\n  at Foo.scala:12", [], PAST_END, loss_accepted) == []
    kafka = "OffsetOutOfRangeException: Fetch position FetchPosition{offset=1013, offsetEpoch=Optional[0]} is out " \
        "of range for partition r-0"  # fmt: skip
    [unnamed] = check_position_past_end(kafka, [], PAST_END, loss_accepted)
    assert (unnamed.requirement, unnamed.kind, unnamed.data["unnamed"]) == ("RESTORE-023", "past-end-unnamed", ["end"])
    [other] = check_position_past_end("broker down at 3080 of r-10", [], PAST_END, loss_accepted)
    assert other.data["unnamed"] == ["partition", "position", "end"] and other.data["partition"] == 0


def test_required_RESTORE_022_going_on_past_the_end_is_silent_unless_loss_was_accepted() -> None:
    new_log_read = reads_past_end({RECREATED: 0, LEFT_ALONE: 1013})
    assert check_position_past_end(None, new_log_read, PAST_END, loss_accepted=True) == []
    [silent] = check_position_past_end(None, new_log_read, PAST_END, loss_accepted=False)
    assert (silent.requirement, silent.kind, silent.data) == (
        "RESTORE-022",
        "silent-past-end",
        {"topic": "r", "partition": 0, "start": 1013, "log_start": 0, "end": 308},
    )


@given(loss_accepted=st.booleans(), reset_to=st.integers(1, 308))
def test_required_RESTORE_022_a_reset_past_records_of_the_new_log_is_named(loss_accepted: bool, reset_to: int) -> None:
    """The broken twin: reading the new log from its end (Spark with ``failOnDataLoss=false``, ``latest``) or from
    anywhere above its start skips records nobody read; a partition left alone read from past its position too."""
    reset = check_position_past_end(
        None, reads_past_end({RECREATED: reset_to, LEFT_ALONE: 1013}), PAST_END, loss_accepted
    )
    [skipped] = [v for v in reset if v.kind == "unread-record-skipped"]
    assert (skipped.data["topic"], skipped.data["record_count"], skipped.data["offsets"][0]) == ("r", reset_to, 0)
    assert [v.kind for v in reset if v.kind != "unread-record-skipped"] == ["silent-past-end"] * (not loss_accepted)
    [other_skipped] = check_position_past_end(None, reads_past_end({RECREATED: 0, LEFT_ALONE: 1014}), PAST_END, True)
    assert (other_skipped.data["topic"], other_skipped.data["offsets"]) == ("o", [1013])
    assert (
        check_position_past_end(None, [], {LEFT_ALONE: PAST_END[LEFT_ALONE]}, False)[0].kind == "unread-record-skipped"
    )


SPECIFIED, UNMAPPED = TopicPartition("s", 0), TopicPartition("s", 1)
STARTING_ENDS = {SPECIFIED: 10, UNMAPPED: 10}


def reads_between(starts: dict[TopicPartition, int]) -> list[ReadRecord]:
    return [ReadRecord(tp, o, None, 0) for tp, start in starts.items() for o in range(start, STARTING_ENDS[tp])]


def test_required_RESTORE_017_020_a_start_failing_names_the_partition_left_out() -> None:
    spark = "assertion failed: If startingOffsets contains specific offsets, you must specify all TopicPartitions.\n" \
        "Specified: Set(s-0) Assigned: Set(s-0, s-1)"  # fmt: skip
    reference = "option 'startingOffsets' gives no offset for s [1]; name every subscribed partition"
    for named in (spark, reference):
        assert check_unmapped_start(named, [], {SPECIFIED: 4}, STARTING_ENDS) == []
    [unnamed] = check_unmapped_start("Specified: Set(s-0) Assigned: Set(s-0, s-10)", [], {SPECIFIED: 4}, STARTING_ENDS)
    assert (unnamed.kind, unnamed.data["partition"]) == ("unmapped-unnamed", 1)
    assert unnamed.data["error"] == "Specified: Set(s-0) Assigned: Set(s-0, s-10)"


@given(unmapped_start=st.integers(0, 10), specified_start=st.integers(3, 5))
def test_required_RESTORE_017_a_start_going_on_reads_left_out_partitions_from_earliest(
    unmapped_start: int, specified_start: int
) -> None:
    reads = reads_between({SPECIFIED: specified_start, UNMAPPED: unmapped_start})
    judged = {(v.kind, v.data["start"]) for v in check_unmapped_start(None, reads, {SPECIFIED: 4}, STARTING_ENDS)}
    want = {("unmapped-not-earliest", unmapped_start)} if unmapped_start else set()
    want |= {("specified-offset-ignored", specified_start)} if specified_start != 4 else set()
    assert judged == want


def test_required_COMMIT_021_026_only_a_failure_naming_transaction_timeout_ms_passes() -> None:
    named = "StreamingQueryException: ...\nProducerFencedError: commit_transaction (q-0): its transaction was open " \
        "5210 ms, longer than transaction.timeout.ms = 2000 ms, so the broker has aborted it\n"  # fmt: skip
    assert check_timed_out_task(named, 2000, 0) == []
    swallowed = check_timed_out_task(None, 2000, 57)
    assert [(v.requirement, v.kind, v.data["record_count"]) for v in swallowed] == [
        ("COMMIT-021", "timeout-swallowed", 57)
    ]
    bare = "x" * 5000 + "\nKafkaError: commit_transaction (q-0): _FENCED: Producer fenced by newer instance\n"
    unnamed = check_timed_out_task(bare, 2000, 0)
    assert [(v.requirement, v.kind) for v in unnamed] == [("COMMIT-026", "timeout-unnamed")]
    assert unnamed[0].data["error"] == bare[-2000:]
    planned = bare + "=== Streaming Query ===\nWriteToMicroBatchDataSource Map(kafka.transaction.timeout.ms -> 2000)"
    assert [v.kind for v in check_timed_out_task(planned, 2000, 0)] == ["timeout-unnamed"]


def test_required_COMMIT_004_a_value_held_behind_an_open_transaction_is_hidden_not_lost() -> None:
    """The sink wrote ``b`` and ``c`` inside a transaction still open at offsets 1 and 2 (last stable offset 1): a
    read_committed reader misses them, but they are COMMIT-004's hidden writes, not COMMIT-011's lost ones; ``d``,
    written nowhere, is lost."""
    produced = {0: [Record("in", 0, o, None, v) for o, v in enumerate([b"a", b"b", b"c", b"d"])]}
    written = {0: [Record("out", 0, 0, None, b"a")]}
    held = {0: [Record("out", 0, 1, None, b"b"), Record("out", 0, 2, None, b"c")]}
    found = check_sink_output(produced, written, True, held, {0: 1})
    assert [(v.requirement, v.kind, v.data.get("value")) for v in found] == [
        ("COMMIT-004", "hidden-write", "b"),
        ("COMMIT-004", "hidden-write", "c"),
        ("COMMIT-011", "lost-write", "d"),
    ]
    assert found[0].data["offset"] == 1 and found[0].data["stable"] == 1
    lost = check_sink_output(produced, written, True)  # without the sink's uncommitted records: all lost
    assert [(v.requirement, v.kind) for v in lost] == [("COMMIT-011", "lost-write")] * 3


def test_a_slow_down_that_did_not_happen_is_named_before_commit_021_is_judged() -> None:
    """The spans come from the sink's records (aborted ones too) by the source partition their value names; a
    partition written in milliseconds, or with no timestamped record, means no task outlived its timeout."""

    def rec(value: str, ms: int | None) -> Record:
        return Record("sink", 0, 0, None, value.encode(), ms)

    slowed = [rec("slow-0-0", 1_000), rec("slow-0-9", 3_900), rec("slow-1-0", 1_100), rec("slow-1-5", 2_400)]
    assert write_spans_ms([*slowed, rec("other-0-1", 9_999), rec("slow-1-6", None)], "slow") == {0: 2_900, 1: 1_300}
    assert unslowed_sink(write_spans_ms(slowed, "slow"), 2, 2_000) is None  # both at least half the timeout
    fast = [rec("slow-0-0", 1_000), rec("slow-0-59", 1_012), *slowed[2:]]
    missed = unslowed_sink(write_spans_ms(fast, "slow"), 2, 2_000)
    assert missed is not None and "partition 0: 12 ms" in missed and "client_settings" in missed
    assert "partition 1" not in missed
    untimed = unslowed_sink(write_spans_ms(slowed[:2], "slow"), 2, 2_000)
    assert untimed is not None and "partition 1: no timestamped record" in untimed
