"""The Flink harness's history, parsed and followed back through restores, without Flink: lines as the harness's
map writes them (``jvm/flink-harness``), in the orders a failure, a region restart and a rescale produce."""

from __future__ import annotations

import json
import subprocess
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from kconform.conformance.checks.checkers import check_group_start
from kconform.conformance.checks.pipeline_checkers import (
    ReadRecord,
    check_bounded_read,
    check_read_once,
    check_rewritten,
)
from kconform.conformance.flink.harness import RunningJob
from kconform.conformance.flink.history import (
    HistoryError,
    checkpointed_to,
    committed_reads,
    left_to_read,
    parse_run,
    parse_segments,
    restarted_or_checkpointed,
    starts_read,
)
from kconform.conformance.flink.versions import RELEASES
from kconform.reference_impl.types import EARLIEST, LATEST, TopicPartition

TP0, TP1 = TopicPartition("in", 0), TopicPartition("in", 1)


def line(event: str, subtask: int, attempt: int, **fields: Any) -> str:
    return json.dumps({"e": event, "subtask": subtask, "attempt": attempt, **fields})


def reads(subtask: int, attempt: int, tp: TopicPartition, offsets: range) -> list[str]:
    return [
        line("read", subtask, attempt, topic=tp.topic, partition=tp.partition, offset=o, value=f"v{o}".encode().hex())
        for o in offsets
    ]


def offsets(records: list[ReadRecord]) -> list[tuple[TopicPartition, int, int]]:
    return sorted((r.tp, r.offset, r.task) for r in records)


def test_a_failed_subtask_keeps_only_what_its_restored_checkpoint_held_then_its_rereads() -> None:
    lines = [
        line("init", 0, 0, restored=None),
        line("init", 1, 0, restored=None),
        *reads(0, 0, TP0, range(0, 3)),
        *reads(1, 0, TP1, range(0, 2)),
        line("snapshot", 0, 0, checkpoint=1),
        line("snapshot", 1, 0, checkpoint=1),
        line("complete", 0, 0, checkpoint=1),
        *reads(0, 0, TP0, range(3, 5)),  # read, then lost with attempt 0
        line("init", 0, 1, restored=1),  # region restart of subtask 0 only
        *reads(0, 1, TP0, range(3, 6)),
        *reads(1, 0, TP1, range(2, 4)),
    ]
    run = parse_run(lines, "finished")
    committed = committed_reads([run])
    assert offsets(committed) == [(TP0, o, 0) for o in range(6)] + [(TP1, o, 1) for o in range(4)]
    assert {r.offset: r.value for r in committed if r.tp == TP0}[0] == b"v0"
    assert not check_read_once(committed, {TP0: 6, TP1: 4})
    assert len(run.reads()) == 12  # the two replayed reads stay in the run's own reads


def test_a_rescaled_run_rests_on_the_savepoint_of_the_run_before_counted_once() -> None:
    first = parse_run(
        [
            line("init", 0, 0, restored=None),
            line("init", 1, 0, restored=None),
            *reads(0, 0, TP0, range(0, 2)),
            *reads(1, 0, TP1, range(0, 1)),
            line("snapshot", 0, 0, checkpoint=4),
            line("snapshot", 1, 0, checkpoint=4),
            line("complete", 0, 0, checkpoint=4),
            line("complete", 1, 0, checkpoint=4),
        ],
        "savepoint",
    )
    assert first.savepoint() == 4
    assert left_to_read({TP0: 3, TP1: 1}, committed_reads([first])) == {TP0: 3}
    second = parse_run(
        [
            *(line("init", s, 0, restored=4) for s in range(3)),
            *reads(2, 0, TP0, range(2, 3)),
            line("snapshot", 2, 0, checkpoint=5),
            line("init", 2, 1, restored=5),
            *reads(2, 1, TP0, range(3, 4)),
            line("snapshot", 0, 0, checkpoint=6),
            line("snapshot", 1, 0, checkpoint=6),
            line("snapshot", 2, 1, checkpoint=6),
            line("complete", 2, 1, checkpoint=6),
        ],
        "savepoint",
    )
    committed = committed_reads([first, second])
    assert offsets(committed) == [(TP0, 0, 0), (TP0, 1, 0), (TP0, 2, 2), (TP0, 3, 2), (TP1, 0, 1)]


def test_reads_after_the_checkpoint_a_restart_went_back_to_are_not_committed_and_show_as_a_gap() -> None:
    """A connector that restarts past its checkpoint (here: at offset 5, not 3) shows as a gap."""
    run = parse_run(
        [
            line("init", 0, 0, restored=None),
            *reads(0, 0, TP0, range(0, 3)),
            line("snapshot", 0, 0, checkpoint=1),
            *reads(0, 0, TP0, range(3, 5)),
            line("init", 0, 1, restored=1),
            *reads(0, 1, TP0, range(5, 6)),
        ],
        "finished",
    )
    violations = check_read_once(committed_reads([run]), {TP0: 6})
    assert [(v.kind, v.data["offset"]) for v in violations] == [("offset-gap", 3), ("offset-gap", 4)]


@pytest.mark.parametrize(
    ("lines", "message"),
    [
        ([line("read", 0, 0, topic="in", partition=0, offset=0, value=None)], "before it started"),
        ([line("init", 0, 0, restored=None), line("resume", 0, 0)], "unknown event"),
    ],
)
def test_a_line_no_harness_writes_is_a_history_error(lines: list[str], message: str) -> None:
    with pytest.raises(HistoryError, match=message):
        parse_run(lines, "finished")


def test_a_first_run_restored_from_nowhere_is_a_history_error() -> None:
    run = parse_run([line("init", 0, 0, restored=9)], "finished")
    with pytest.raises(HistoryError, match="restored from 9"):
        committed_reads([run])


def test_required_RESTORE_010_a_bounded_job_that_read_all_then_never_finished_is_unfinished() -> None:
    """FLINK-34470 as the harness records it: a bounded job read every committed record of logs that end in a
    commit marker (in-0: 0-2 committed, 4-5 aborted, 7-8 committed, markers 3, 6, 9; in-1: 0-3, marker 4), then
    ran on, reading nothing, until the harness gave up on it 40 s later."""
    lines = [
        line("init", 0, 0, restored=None),
        line("init", 1, 0, restored=None),
        *reads(0, 0, TP0, range(0, 3)),
        *reads(1, 0, TP1, range(0, 4)),
        line("snapshot", 0, 0, checkpoint=1),
        line("snapshot", 1, 0, checkpoint=1),
        line("complete", 0, 0, checkpoint=1),
        *reads(0, 0, TP0, range(7, 9)),
        line("snapshot", 0, 0, checkpoint=2),
        line("snapshot", 1, 0, checkpoint=2),
        line("complete", 1, 0, checkpoint=2),
    ]
    committed, stopping = {TP0: [0, 1, 2, 7, 8], TP1: [0, 1, 2, 3]}, {TP0: 10, TP1: 5}
    run = parse_run(lines, "unfinished")
    (violation,) = check_bounded_read(committed_reads([run]), committed, stopping, idle_ms=40_000)
    assert (violation.requirement, violation.kind) == ("RESTORE-010", "unfinished")
    assert violation.data["complete"] is True and violation.data["record_count"] == 9
    assert violation.data["stopping"] == [
        {"topic": "in", "partition": 0, "offset": 10},
        {"topic": "in", "partition": 1, "offset": 5},
    ]
    assert violation.data["last_records"] == [
        {"topic": "in", "partition": 0, "offset": 8},
        {"topic": "in", "partition": 1, "offset": 3},
    ]
    assert check_bounded_read(committed_reads([parse_run(lines, "finished")]), committed, stopping, None) == []


def test_required_RESTORE_018_021_a_group_start_is_judged_on_where_each_partition_was_first_read() -> None:
    """Flink's ``committedOffsets(LATEST)`` as the harness records it: partition 0 from the group's offset 7,
    partition 1 (no offset; 20 records at start) from the probes written after its end; its mutant twin, asked
    without a fallback, goes on the same way (``silent-start``); one that starts partition 1 at its first record
    ignores the fallback; a failure is judged on the partition it names."""
    held, ends, firsts = {TP0: 7}, {TP0: 20, TP1: 20}, {TP0: 0, TP1: 0}
    lines = [line("init", 0, 0, restored=None), *reads(0, 0, TP1, range(22, 24)), *reads(0, 0, TP0, range(7, 20))]
    started = starts_read(parse_run(lines, "savepoint").reads(), firsts, ends)
    assert started == {TP0: 7, TP1: LATEST}
    assert check_group_start(ends, held, LATEST, started, None) == []
    (silent,) = check_group_start(ends, held, None, started, None)
    assert (silent.kind, silent.data["partition"], silent.data["start"]) == ("silent-start", 1, LATEST)
    from_first = [line("init", 0, 0, restored=None), *reads(0, 0, TP1, range(0, 3)), *reads(0, 0, TP0, range(7, 9))]
    started = starts_read(parse_run(from_first, "savepoint").reads(), firsts, ends)
    assert started == {TP0: 7, TP1: EARLIEST}
    assert [v.kind for v in check_group_start(ends, held, LATEST, started, None)] == ["fallback-ignored"]
    unread = starts_read(parse_run(lines[:1] + lines[3:], "savepoint").reads(), firsts, ends)
    assert unread == {TP0: 7}  # never read: where it started is unknown, and the checker says so
    assert [v.kind for v in check_group_start(ends, held, LATEST, unread, None)] == ["fallback-ignored"]
    named = "NoOffsetForPartitionException: Undefined offset with no reset policy for partitions: [in-1]"
    assert check_group_start(ends, held, None, None, named) == []
    (unnamed,) = check_group_start(ends, held, None, None, "IllegalStateException: the job ended (FAILED)")
    assert (unnamed.kind, unnamed.data["partition"]) == ("uncommitted-unnamed", 1)


REFUSED = b"v3"
"""The value of offset 3 (``reads``): the record written while the broker refused the sink's writes."""
SWALLOWED = [  # FLINK-35749's run: the send of offset 3 failed, the error was swallowed, checkpoint 2 completed
    line("init", 0, 0, restored=None),
    *reads(0, 0, TP0, range(0, 3)),
    line("snapshot", 0, 0, checkpoint=1),
    line("complete", 0, 0, checkpoint=1),
    *reads(0, 0, TP0, range(3, 4)),
    line("snapshot", 0, 0, checkpoint=2),
    line("complete", 0, 0, checkpoint=2),
]
SURFACED = [  # the fixed release: the failed send failed the task, which read offset 3 again from checkpoint 1
    *SWALLOWED[:5],
    line("init", 0, 1, restored=1),
]


def test_a_refused_write_settles_once_a_checkpoint_holding_its_read_completes_or_the_job_restarts() -> None:
    """The refusal holds until the job went on past the refused record (``write_refused``): a snapshot alone,
    a completed checkpoint without it, or another record's read in a checkpoint is not that."""
    assert restarted_or_checkpointed(parse_segments(SWALLOWED), {REFUSED})
    assert restarted_or_checkpointed(parse_segments(SURFACED), {REFUSED})
    assert not restarted_or_checkpointed(parse_segments(SURFACED[:-1]), {REFUSED})  # read, not yet checkpointed
    assert not restarted_or_checkpointed(parse_segments(SWALLOWED[:-1]), {REFUSED})  # snapshot, not completed
    assert not restarted_or_checkpointed(parse_segments(SWALLOWED), {b"v9"})


def test_a_refusal_begins_once_what_the_run_had_to_read_is_in_a_completed_checkpoint() -> None:
    """The workload's refusal waits for the job to be idle: every partition read to its end and a checkpoint holding
    that last read completed (a snapshot alone is not that); with nothing to read, one completed checkpoint."""
    segments = parse_segments(SWALLOWED)
    assert checkpointed_to(segments, {TP0: 3}) and checkpointed_to(segments, {TP0: 4})
    assert not checkpointed_to(segments, {TP0: 5})  # offset 4 never read
    assert not checkpointed_to(parse_segments(SWALLOWED[:-1]), {TP0: 4})  # checkpoint 2 not completed
    assert checkpointed_to(segments, {}) and not checkpointed_to(parse_segments(SWALLOWED[:4]), {})


def test_required_COMMIT_007_a_checkpoint_completed_over_a_refused_write_that_never_came_out_is_caught() -> None:
    """The recorded run of a sink that swallowed the refusal: its checkpoint holds the refused read, the output
    lacks the record (COMMIT-007); the sink that surfaced it wrote the record after its restart (at least once:
    a second copy is no violation)."""
    run = parse_run(SWALLOWED, "finished")
    assert REFUSED in {r.value for r in committed_reads([run])}
    output = Counter([b"v0", b"v1", b"v2"])
    violations = check_rewritten(Counter([REFUSED]), output, "was refused")
    assert [(v.requirement, v.kind, v.data["value"]) for v in violations] == [("COMMIT-007", "lost-write", "v3")]
    assert check_rewritten(Counter([REFUSED]), output + Counter([b"v2", REFUSED]), "was refused") == []


def test_a_running_job_s_history_so_far_leaves_out_a_line_still_being_written(tmp_path: Path) -> None:
    """``RunningJob.segments_so_far`` reads while the harness appends: a last line without its newline is not
    parsed (it would be a half-written JSON object); a job that has not opened its history yet has none."""
    running = RunningJob(RELEASES["3.3.0-1.20"], subprocess.Popen(["true"]), tmp_path, deadline=0.0)
    running.process.wait()
    assert running.segments_so_far() == ()
    (tmp_path / "history.jsonl").write_text("\n".join(SWALLOWED[:7]) + "\n" + SWALLOWED[7][:10])
    [segment] = running.segments_so_far()
    assert [r.value for r in segment.reads()] == [b"v0", b"v1", b"v2", REFUSED] and segment.checkpoints() == [1]


def test_the_enumerators_listings_are_kept_apart_from_the_subtasks_events() -> None:
    """A run that asked for them records each listing of the subscription (``listed``, subtask -1): the
    partitions each found, in order; the subtasks' segments are as without them."""
    lines = [
        line("listed", -1, 0, partitions=[]),
        line("init", 0, 0, restored=None),
        line("listed", -1, 0, partitions=[["in", 0], ["in", 1]]),
        line("read", 0, 0, topic="in", partition=0, offset=0, value=None),
    ]
    run = parse_run(lines, "savepoint")
    assert run.listings == (frozenset(), frozenset({TP0, TP1}))
    assert run.segments == parse_run(lines[1:2] + lines[3:], "savepoint").segments
    assert parse_run(lines[1:2], "savepoint").listings == ()
