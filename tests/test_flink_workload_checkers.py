"""The Flink workload's judgement of a whole life under a start at LATEST: one run's first discovery must explain
every start (DISC-005, RESTORE-003). Pure: histories written by hand, one broken and its twins."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from kconform.conformance.checks.checkers import Violation
from kconform.conformance.checks.flink_workload_checkers import (
    check_discovery_interval,
    check_reader_sink,
    check_sinks,
    check_workload_life,
    open_first_discoveries,
)
from kconform.conformance.checks.pipeline_checkers import ReadRecord
from kconform.conformance.flink.history import RunHistory
from kconform.conformance.workloads.flink.schedule import (
    EVERY_KIND,
    FlinkSchedule,
    Growth,
    Held,
    RunPlan,
    Step,
    stop_first,
)
from kconform.reference_impl.ports import Record
from kconform.reference_impl.types import TopicPartition

LATEST = FlinkSchedule(
    partitions=(2,),
    pattern=True,
    start="latest",
    fallback=None,
    held=(),
    exactly_once=True,
    naming="POOLING",
    checkpoint_ms=100,
    runs=(
        RunPlan(2, (Step("write", 0, 0, 5), Step("write", 0, 1, 5)), stop_after=0),
        RunPlan(
            2,
            (Step("create-topic", 1, count=1), Step("write", 1, 0, 4), Step("write", 0, 0, 7), Step("write", 0, 1, 7)),
        ),
    ),
)
"""A first run at LATEST stopped at once; before the second a topic the pattern matches is created and written to,
and both starting partitions are written to again."""


def tp(cell: tuple[int, int]) -> TopicPartition:
    return TopicPartition(f"in-{cell[0]}", cell[1])


ENDS = {tp((0, 0)): 12, tp((0, 1)): 12, tp((1, 0)): 4}


def reads(cell: tuple[int, int], offsets: range) -> list[ReadRecord]:
    return [ReadRecord(tp(cell), o, f"{cell}-{o}".encode(), cell[1]) for o in offsets]


def no_sink_finding(starts: Mapping[TopicPartition, int]) -> list[Violation]:
    return []


def test_only_a_start_at_latest_leaves_its_first_discovery_open() -> None:
    assert LATEST.resolves_late and list(LATEST.first_discoveries()) == [0, 1]
    assert not EVERY_KIND.resolves_late and list(EVERY_KIND.first_discoveries()) == [0]
    assert open_first_discoveries(LATEST, [False, False]) == [0, 1]
    assert open_first_discoveries(LATEST, [True, False]) == [0]  # a run that read had its first discovery done
    assert open_first_discoveries(EVERY_KIND, [False, False, False, False]) == [0]


def test_starts_follow_the_run_of_the_first_discovery() -> None:
    assert LATEST.starts(0) == {(0, 0): 5, (0, 1): 5, (1, 0): 0}  # the topic created after it: EARLIEST
    assert LATEST.starts(1) == {(0, 0): 12, (0, 1): 12, (1, 0): 4}  # found by it: LATEST, its end then
    assert LATEST.added(0) == {(1, 0): True} and LATEST.added(1) == {}


def test_required_RESTORE_003_a_latest_resolved_again_at_a_restore_is_explained_by_no_first_discovery() -> None:
    """The broken history: the starting partitions' LATEST resolved again when the second run restored (their
    records written between the runs never read), while the topic created between them is read from its first
    record, as a partition found after the first discovery is. Neither run's first discovery explains both."""
    final = reads((1, 0), range(4))
    judged = check_workload_life(LATEST, tp, ENDS, final, [False, True], no_sink_finding)
    assert judged.first == 0
    gaps = {(v.data["partition"], v.data["offset"]) for v in judged.violations if v.kind == "offset-gap"}
    assert gaps == {(p, o) for p in (0, 1) for o in range(5, 12)}
    assert {v.requirement for v in judged.violations} == {"RESTORE-003"}
    below = judged.others[1]  # had the second run done it, the created topic was read below its start
    assert {(v.kind, v.data["offset"]) for v in below} == {("read-before-start", o) for o in range(4)}
    assert "had run 2 done the first discovery: 4 violations" in judged.text()


def test_required_RESTORE_003_twin_the_first_runs_discovery_explains_its_latest_kept() -> None:
    final = reads((0, 0), range(5, 12)) + reads((0, 1), range(5, 12)) + reads((1, 0), range(4))
    judged = check_workload_life(LATEST, tp, ENDS, final, [False, True], no_sink_finding)
    assert (judged.first, judged.violations, judged.others) == (0, [], {})
    assert judged.judged == {"RESTORE-003", "COMMIT-011", "COMMIT-013", "DISC-005", "DISC-002"}


def test_required_RESTORE_003_twin_a_first_run_stopped_before_its_discovery_leaves_it_to_the_second() -> None:
    """The savepoint taken before the first run's discovery: the second run's is the first, LATEST resolved there
    for every partition it finds, the created topic included; nothing is left to read, nothing lost."""
    judged = check_workload_life(LATEST, tp, ENDS, [], [False, False], no_sink_finding)
    assert (judged.first, judged.violations) == (1, [])


def test_required_RESTORE_003_a_run_that_read_closes_the_later_discoveries() -> None:
    """The same empty final state after a first run that read: its discovery was done, so the second's cannot
    explain the loss."""
    judged = check_workload_life(LATEST, tp, ENDS, [], [True, False], no_sink_finding)
    assert judged.first == 0 and judged.others == {}
    assert {v.kind for v in judged.violations} == {"offset-gap", "never-discovered"}


def test_the_sink_is_judged_from_each_runs_starts() -> None:
    seen: list[dict[TopicPartition, int]] = []

    def sink(starts: Mapping[TopicPartition, int]) -> list[Violation]:
        seen.append(dict(starts))
        return [Violation("COMMIT-011", "lost-write", "stub", data={"value": "x"})] if len(seen) == 1 else []

    judged = check_workload_life(LATEST, tp, ENDS, [], [False, False], sink)
    assert judged.first == 1 and judged.violations == []
    assert seen == [{tp((0, 0)): 5, tp((0, 1)): 5, tp((1, 0)): 0}, {tp((0, 0)): 12, tp((0, 1)): 12, tp((1, 0)): 4}]


def test_a_run_before_the_first_read_under_latest_is_planned_to_stop_at_once() -> None:
    """Until a run read, nothing shows where LATEST was resolved: a run's stop is planned by its own discovery
    (nothing sure to read: at once), after a read by that run's; the last reads what the first discovery left."""
    three = replace(LATEST, runs=(LATEST.runs[0], replace(LATEST.runs[1], stop_after=5), RunPlan(1)))
    assert [stop_first(three, k, [False] * k) for k in range(3)] == [0, 1, 0]
    assert stop_first(three, 1, [True]) == 0
    assert three.starts(stop_first(three, 1, [False])) == {(0, 0): 12, (0, 1): 12, (1, 0): 4}  # nothing left
    assert all(stop_first(EVERY_KIND, k, [False] * k) == 0 for k in range(len(EVERY_KIND.runs)))


def records(topic: str, partition: int, values: list[bytes]) -> list[Record]:
    return [Record(topic, partition, offset, None, value) for offset, value in enumerate(values)]


SOURCE = {0: records("in-0", 0, [b"a", b"b", b"c"]), 1: records("in-0", 1, [b"d"])}
"""The source records from the starts, keyed apart as the workload keys them."""


def test_every_sink_is_judged_on_its_own_and_names_itself() -> None:
    """Three sinks of one job writing every record read: an exactly-once one with each record once, an
    at-least-once one with a repeat (allowed), and a broken twin of each: an at-least-once sink missing a record
    and an exactly-once one with a repeat, each finding naming its sink."""
    whole = {0: records("out", 0, [b"a", b"b", b"c", b"d"])}
    repeated = {0: records("out-1", 0, [b"a", b"b", b"a", b"b", b"c"]), 1: records("out-1", 1, [b"d"])}
    assert check_sinks(SOURCE, [("out", True, whole), ("out-1", False, repeated)]) == []
    missing = {0: records("out-2", 0, [b"a", b"b", b"d"])}
    found = check_sinks(SOURCE, [("out", True, whole), ("out-2", False, missing), ("out-3", True, repeated)])
    assert sorted((v.requirement, v.kind, v.evidence.split(":")[0]) for v in found) == [
        ("COMMIT-011", "duplicate", "sink out-3 (exactly-once)"),
        ("COMMIT-011", "duplicate", "sink out-3 (exactly-once)"),
        ("COMMIT-011", "lost-write", "sink out-2 (at-least-once)"),
    ]


def test_required_COMMIT_007_a_refused_record_missing_from_its_sink_is_told_from_a_record_lost_otherwise() -> None:
    """A refusal of sink out-1's writes while ``c`` was written: ``c`` missing from out-1 is COMMIT-007 (the sink
    took the refused write for a done one), ``a`` missing there COMMIT-011 (lost otherwise); ``c`` missing from
    out-2, whose writes were not refused, is COMMIT-011. The twin: the refused record written again (a sink that
    failed and replayed it, a repeat included) is no finding."""
    refused = {"out-1": [b"c"]}
    lost = {0: records("out-1", 0, [b"b", b"d"])}
    other = {0: records("out-2", 0, [b"a", b"b", b"d"])}
    found = check_sinks(SOURCE, [("out-1", False, lost), ("out-2", False, other)], refused)
    assert sorted((v.requirement, v.kind, v.data["value"], v.evidence.split(":")[0]) for v in found) == [
        ("COMMIT-007", "lost-write", "c", "sink out-1 (at-least-once)"),
        ("COMMIT-011", "lost-write", "a", "sink out-1 (at-least-once)"),
        ("COMMIT-011", "lost-write", "c", "sink out-2 (at-least-once)"),
    ]
    assert "refused the sink's writes" in next(v for v in found if v.requirement == "COMMIT-007").evidence
    replayed = {0: records("out-1", 0, [b"a", b"b", b"c", b"c", b"d"])}
    assert check_sinks(SOURCE, [("out-1", False, replayed)], refused) == []
    # a refused record the job need not read (before its start) is judged by nothing
    assert check_sinks(SOURCE, [("out-1", False, replayed)], {"out-1": [b"z"]}) == []


EMPTY = FlinkSchedule(
    partitions=(),
    pattern=True,
    start="latest",
    fallback=None,
    held=(),
    exactly_once=False,
    naming="POOLING",
    checkpoint_ms=100,
    runs=(
        RunPlan(1, stop_after=0),
        RunPlan(1, (Step("create-topic", 0, count=1), Step("write", 0, 0, 6))),
        RunPlan(1, (Step("write", 0, 0, 4),)),
    ),
)
"""A pattern that matches nothing at start, at LATEST: the first run stops once its enumerator listed the (empty)
subscription; a topic created and written to before the second run, written to again before the third."""


def test_required_DISC_005_a_topic_found_after_an_empty_first_discovery_started_at_latest_is_a_gap() -> None:
    """flink-connector-kafka 5.0.0's ``checkPartitionChanges`` returns before marking the first discovery done
    when it found nothing, so the topic found later is started as an initial partition, at LATEST (its end when
    the second run restored): its first six records never read, the four after read."""
    ends = {tp((0, 0)): 10}
    judged = check_workload_life(EMPTY, tp, ends, reads((0, 0), range(6, 10)), [False, False, True], no_sink_finding)
    assert list(EMPTY.first_discoveries()) == [0] and judged.first == 0 and judged.others == {}
    assert {(v.requirement, v.kind) for v in judged.violations} == {("DISC-005", "offset-gap")}
    assert {v.data["offset"] for v in judged.violations} == set(range(6))


def test_required_DISC_005_twin_a_topic_found_after_an_empty_first_discovery_read_from_its_first_record() -> None:
    ends = {tp((0, 0)): 10}
    judged = check_workload_life(EMPTY, tp, ends, reads((0, 0), range(10)), [False, True, False], no_sink_finding)
    assert (judged.first, judged.violations) == (0, [])
    assert {"DISC-005", "DISC-002"} <= judged.judged


def test_an_empty_first_discovery_plans_every_run_from_the_first() -> None:
    assert [stop_first(EMPTY, k, [False] * k) for k in range(3)] == [0, 0, 0]
    assert EMPTY.starts() == {(0, 0): 0} and EMPTY.added() == {(0, 0): True}


def test_required_DISC_005_a_partition_listed_by_a_discovery_and_never_read_is_a_late_start() -> None:
    """The created topic of LATEST (found by the second run's discovery as the first run's restored state had it)
    none of whose records was read: with the enumerator's listings known it was found, so started past its
    records (DISC-005 ``never-read``); without them, as before, never discovered (DISC-002)."""
    final = reads((0, 0), range(5, 12)) + reads((0, 1), range(5, 12))
    listed = {tp((0, 0)), tp((0, 1)), tp((1, 0))}
    judged = check_workload_life(LATEST, tp, ENDS, final, [False, True], no_sink_finding, listed)
    assert [(v.requirement, v.kind) for v in judged.violations] == [("DISC-005", "never-read")]
    unknown = check_workload_life(LATEST, tp, ENDS, final, [False, True], no_sink_finding)
    assert [(v.requirement, v.kind) for v in unknown.violations] == [("DISC-002", "never-discovered")]


def test_required_DISC_009_discovery_off_where_the_job_asked_for_it_or_left_it_to_a_default_that_is_on() -> None:
    """FLINK-36780's history: an unbounded source that set no interval, on a release whose default is five minutes
    (3.1.0 on), reads -1 (the builder set it): discovery off, DISC-009. Its twins pass: the default honoured, an
    interval set and honoured, and a release with no default (3.0.x: off unless set) is not judged at all."""
    (off,), judged = check_discovery_interval(2, None, -1, 300_000)
    assert judged and (off.requirement, off.kind) == ("DISC-009", "discovery-off")
    assert off.data["got"] == -1 and off.data["want"] == 300_000 and "run 2" in off.evidence
    (unset,), _ = check_discovery_interval(1, 1000, None, 300_000)  # asked for 1 s, none read
    assert unset.kind == "discovery-off" and unset.data["want"] == 1000
    assert check_discovery_interval(1, None, 300_000, 300_000) == ([], True)
    assert check_discovery_interval(1, 1000, 1000, None) == ([], True)
    assert check_discovery_interval(1, None, -1, None) == ([], False)  # 3.0.x: no default, off as documented
    assert check_discovery_interval(1, None, None, None) == ([], False)


GROWN = FlinkSchedule(
    partitions=(1,),
    pattern=False,
    start="earliest",
    fallback=None,
    held=(),
    exactly_once=False,
    naming="POOLING",
    checkpoint_ms=100,
    runs=(RunPlan(1, (Step("write", 0, 0, 3),)), RunPlan(1, growth=Growth(0, 1, 4))),
    discovery_ms=1000,
)
"""Two runs from the earliest offsets, discovery every second; a partition added while the second run runs."""
GROWN_ENDS = {tp((0, 0)): 3, tp((0, 1)): 4}


def test_required_DISC_009_a_partition_added_while_the_job_ran_and_never_found_is_never_discovered() -> None:
    """The broken history: the partition added to the topic while the last run ran, with four records, none read
    and no discovery listing it (periodic discovery off: FLINK-36780's class). Its twins: found and started past its
    records (DISC-005 never-read), and found and read from its first record (passes)."""
    assert GROWN.added() == {(0, 1): False} and GROWN.starts() == {(0, 0): 0, (0, 1): 0}
    final = reads((0, 0), range(3))
    unfound = check_workload_life(GROWN, tp, GROWN_ENDS, final, [True, True], no_sink_finding, {tp((0, 0))})
    assert [(v.requirement, v.kind) for v in unfound.violations] == [("DISC-009", "never-discovered")]
    assert {"DISC-009", "DISC-005"} <= unfound.judged
    listed = {tp((0, 0)), tp((0, 1))}
    late = check_workload_life(GROWN, tp, GROWN_ENDS, final, [True, True], no_sink_finding, listed)
    assert [(v.requirement, v.kind) for v in late.violations] == [("DISC-005", "never-read")]
    read = check_workload_life(GROWN, tp, GROWN_ENDS, final + reads((0, 1), range(4)), [True, True], no_sink_finding)
    assert read.violations == []


LATEST_MARKER, COMMITTED = -1, -3
"""What the starting offsets initializer hands the enumerator for a start its reader resolves (the harness's
``resolved`` record): ``KafkaPartitionSplit.LATEST_OFFSET`` and ``COMMITTED_OFFSET``."""
STARTED = {tp((0, 0)): LATEST_MARKER, tp((0, 1)): LATEST_MARKER}
"""The first run's initializer starting both partitions of the subscription there was then."""


def test_required_RESTORE_003_a_restored_split_resolving_its_latest_again_is_a_gap_once_the_first_run_started_it() -> (
    None
):
    """The second run restored splits the first run's initializer had started (at the LATEST marker) and resolved
    LATEST again: what was written between the runs never read. Without the record the second run's discovery
    would explain it; with it, the second run's initializer started only the topic created since, so the first
    discovery was the first run's, and the records its LATEST stood before are lost."""
    unrecorded = check_workload_life(LATEST, tp, ENDS, [], [False, False], no_sink_finding)
    assert (unrecorded.first, unrecorded.violations) == (1, [])
    handed, started = [STARTED, {tp((1, 0)): LATEST_MARKER}], [True, False]
    assert open_first_discoveries(LATEST, [False, False], started) == [0]
    judged = check_workload_life(LATEST, tp, ENDS, [], [False, False], no_sink_finding, handed=handed, started=started)
    assert judged.first == 0 and judged.others == {}
    gaps = {(v.data["partition"], v.data["offset"]) for v in judged.violations if v.kind == "offset-gap"}
    assert gaps >= {(p, o) for p in (0, 1) for o in range(5, 12)}


def test_required_RESTORE_003_twin_a_second_run_that_started_every_partition_again_did_a_first_discovery() -> None:
    """The second run's initializer started every partition of the subscription again (its enumerator's state did
    not hold the first run's splits): its discovery may be the first, and explains the history as before."""
    handed, started = [STARTED, {tp((0, 0)): 12, tp((0, 1)): 12, tp((1, 0)): 4}], [True, True]
    assert open_first_discoveries(LATEST, [False, False], started) == [0, 1]
    judged = check_workload_life(LATEST, tp, ENDS, [], [False, False], no_sink_finding, handed=handed, started=started)
    assert (judged.first, judged.violations) == (1, [])


def test_required_RESTORE_003_a_savepoint_between_the_listing_and_the_splits_restored_with_latest_resolved_again() -> (
    None
):
    """The history a savepoint once listed leaves (the enumerator's ListOffsets answer held until it was written):
    the first run's initializer resolved LATEST to the ends then (5), after the savepoint; the second run's restored
    enumerator (connector 4.0.1: the listed partitions checkpointed bare, the first discovery marked done) resolved
    them again at the restore (12) and started the topic created since at EARLIEST, handing it nothing. Measured
    with 4.0.1-2.0 and a scratch probe of the harness, 2026-12-02. The second run did not start every partition its
    listing found: the first discovery was the first run's, and what was written between the runs is lost."""
    handed = [{tp((0, 0)): 5, tp((0, 1)): 5}, {tp((0, 0)): 12, tp((0, 1)): 12}]
    final = reads((1, 0), range(4))
    judged = check_workload_life(
        LATEST, tp, ENDS, final, [False, True], no_sink_finding, handed=handed, started=[True, False]
    )
    assert judged.first == 0 and judged.others == {}
    gaps = {(v.data["partition"], v.data["offset"]) for v in judged.violations if v.kind == "offset-gap"}
    assert gaps == {(p, o) for p in (0, 1) for o in range(5, 12)}
    assert {v.requirement for v in judged.violations} == {"RESTORE-003"}


def test_required_RESTORE_003_twin_a_savepoint_between_the_listing_and_the_splits_restored_as_no_discovery() -> None:
    """Its twin (connector 5.0.0: no split checkpointed, the first discovery not done): the second run's enumerator
    does the whole first discovery, every partition at LATEST, the created topic included; nothing lost."""
    handed = [{tp((0, 0)): 5, tp((0, 1)): 5}, {tp((0, 0)): 12, tp((0, 1)): 12, tp((1, 0)): 4}]
    judged = check_workload_life(
        LATEST, tp, ENDS, [], [False, False], no_sink_finding, handed=handed, started=[True, True]
    )
    assert (judged.first, judged.violations) == (1, [])


def test_a_record_that_leaves_no_run_open_is_judged_as_without_it() -> None:
    assert open_first_discoveries(LATEST, [False, False], [False, False]) == [0, 1]
    assert open_first_discoveries(LATEST, [True, False], [False, True]) == [0]


def test_a_run_started_every_partition_only_when_its_initializer_answered_for_each_its_first_listing_found() -> None:
    """A restored run lists every partition and starts only those added since: not a first discovery. One that
    started every partition its first listing found is, even when a later listing found more."""
    old, new = frozenset({tp((0, 0)), tp((0, 1))}), frozenset({tp((0, 0)), tp((0, 1)), tp((1, 0))})
    run = RunHistory((), "savepoint", (new,), {tp((1, 0)): LATEST_MARKER})
    assert not run.started_all()
    assert replace(run, listings=(old, new), handed=STARTED).started_all()
    assert not replace(run, listings=(), handed=STARTED).started_all()
    assert not replace(run, listings=(frozenset(),), handed={}).started_all()


GROUP = replace(LATEST, start="group", fallback="latest", held=(Held(0, 1, 2),))
"""``LATEST`` started from the group's committed offsets (one held, at 2 of t0[1]) with LATEST as their fallback."""


def test_required_RESTORE_003_a_gap_from_its_start_at_a_partition_started_at_the_committed_marker_is_its_own_kind() -> (
    None
):
    """The committed-offset marker handed out, and nothing of the partition read from its start on: the known
    shape (``committed-start-gap``). The same gap behind a LATEST marker, or after records read from the start,
    stays ``offset-gap``."""
    assert GROUP.resolves_late
    final = reads((1, 0), range(4)) + reads((0, 1), range(2, 7))
    handed = [{tp((0, 0)): COMMITTED, tp((0, 1)): COMMITTED}, {}]
    judged = check_workload_life(GROUP, tp, ENDS, final, [False, True], no_sink_finding, handed=handed, started=[True])
    kinds = {(v.data["partition"], v.data["offset"]): v.kind for v in judged.violations}
    assert kinds == {
        **{(0, o): "committed-start-gap" for o in range(5, 12)},
        **{(1, o): "offset-gap" for o in range(7, 12)},
    }
    behind_latest = [{tp((0, 0)): LATEST_MARKER, tp((0, 1)): COMMITTED}, {}]
    judged = check_workload_life(
        GROUP, tp, ENDS, final, [False, True], no_sink_finding, handed=behind_latest, started=[True]
    )
    assert {v.kind for v in judged.violations if v.data["partition"] == 0} == {"offset-gap"}


def test_required_COMMIT_011_a_batch_readers_exactly_once_sink_that_committed_nothing_lost_every_record() -> None:
    """The bounded reader run as a backfill (BATCH) into an exactly-once sink: every record it read committed once
    passes; the same job whose writer aborted at its close the transaction it had handed its committer (FLINK-37622)
    leaves nothing visible to read_committed, each record COMMIT-011 ``lost-write``, the finding naming the sink,
    its guarantee and the mode; a repeat is a ``duplicate`` there, and allowed at least once."""
    whole = {0: records("out-reader", 0, [b"a", b"b", b"c", b"d"])}
    found, judged = check_reader_sink("exactly-once", "BATCH", "out-reader", SOURCE, whole)
    assert found == [] and judged == {"COMMIT-011", "COMMIT-013"}
    found, _ = check_reader_sink("exactly-once", "BATCH", "out-reader", SOURCE, {})
    assert sorted((v.requirement, v.kind) for v in found) == [("COMMIT-011", "lost-write")] * 4
    assert all(v.evidence.startswith("the bounded reader's exactly-once sink out-reader (BATCH mode): ") for v in found)
    repeated = {0: records("out-reader", 0, [b"a", b"b", b"a", b"b", b"c", b"d"])}
    found, _ = check_reader_sink("exactly-once", "BATCH", "out-reader", SOURCE, repeated)
    assert {(v.requirement, v.kind) for v in found} == {("COMMIT-011", "duplicate")}
    judged = {"COMMIT-011", "COMMIT-013"}
    assert check_reader_sink("at-least-once", "BATCH", "out-reader", SOURCE, repeated) == ([], judged)
    found, _ = check_reader_sink("at-least-once", "STREAMING", "out-reader", SOURCE, {0: whole[0][:3]})
    assert [(v.requirement, v.kind) for v in found] == [("COMMIT-011", "lost-write")]
    assert "(STREAMING mode)" in found[0].evidence


def test_a_readers_sink_without_a_guarantee_is_not_judged() -> None:
    """DeliveryGuarantee.NONE promises nothing of the output: an empty sink is no finding, and no id is judged."""
    assert check_reader_sink("none", "BATCH", "out-reader", SOURCE, {}) == ([], set())
