"""RESTORE-001..007 and DISC-005 against the reference source job."""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.stateful import run_state_machine_as_test

from kconform.conformance.adapter.guard import guard
from kconform.conformance.checks.checkers import check_offset_commits, check_restore
from kconform.conformance.gate.profiles import PROFILES
from kconform.conformance.generators.strategies import InterleavingMix, metadata_snapshots, parallelisms
from kconform.conformance.suite import STEPS_PER_EXAMPLE
from kconform.conformance.suite.test_source import INTERLEAVINGS, SourceMachine
from kconform.reference_impl.adapter import ADAPTER
from kconform.reference_impl.assignment import owner
from kconform.reference_impl.discovery import Subscription
from kconform.reference_impl.kafka_model import KafkaModel
from kconform.reference_impl.ports import Isolation, Record
from kconform.reference_impl.restore import OffsetRegressionError, RestoreVariant, SourceJob
from kconform.reference_impl.types import EARLIEST, LATEST, TopicPartition

Metadata = dict[str, frozenset[int]]
ALL = Subscription.regex(".*")
variants = st.sampled_from(list(RestoreVariant))


class _LogEndingAt:
    """A ``LogReader`` whose every partition holds ``end`` records: what LATEST resolves to at discovery."""

    def __init__(self, end: int = 0) -> None:
        self.end = end

    def earliest_offset(self, tp: TopicPartition) -> int:
        return 0

    def latest_offset(self, tp: TopicPartition, isolation: Isolation) -> int:
        return self.end

    def read(self, tp: TopicPartition, start: int, isolation: Isolation, max_records: int) -> Sequence[Record]:
        return []


NO_LOG = _LogEndingAt()


def _read_some(job: SourceJob, data: st.DataObject) -> dict[TopicPartition, int]:
    """Advance a random subset of partitions to a random next offset; return the expected offsets."""
    for offsets in job.offsets:
        for tp in sorted(offsets):
            if data.draw(st.booleans()):
                job.advance(tp, data.draw(st.integers(0, 10_000)))
    return {tp: off for offsets in job.offsets for tp, off in offsets.items()}


@given(metadata_snapshots(), parallelisms(8), variants, st.data())
def test_required_RESTORE_001_snapshot_is_the_union_of_all_subtasks(
    metadata: Metadata, n: int, variant: RestoreVariant, data: st.DataObject
) -> None:
    job = SourceJob(ALL, n, variant)
    job.discover(metadata, NO_LOG)
    before_read = job.snapshot(1)
    assert {tp for tp, off in before_read.union()} == {TopicPartition(t, p) for t, ids in metadata.items() for p in ids}
    assert all(off == EARLIEST for _, off in before_read.union())  # sentinels are written too
    expected = _read_some(job, data)
    assert dict(job.snapshot(2).union()) == expected


@given(metadata_snapshots(), parallelisms(8), parallelisms(8), variants, st.data())
def test_required_RESTORE_002_and_003_restore_keeps_every_offset_on_exactly_one_subtask(
    metadata: Metadata, n: int, m: int, variant: RestoreVariant, data: st.DataObject
) -> None:
    job = SourceJob(ALL, n, variant)
    job.discover(metadata, NO_LOG)
    expected = _read_some(job, data)
    restored = SourceJob.restore(job.snapshot(1), m, ALL, metadata, variant)
    entries = [(tp, off) for offsets in restored.offsets for tp, off in offsets.items()]
    assert len(entries) == len({tp for tp, _ in entries})  # no double assignment
    assert dict(entries) == expected  # nothing lost, nothing moved
    if variant is RestoreVariant.UNION_FILTER:
        assert all(owner(tp, m) == i for i, offsets in enumerate(restored.offsets) for tp in offsets)


def test_required_RESTORE_003_offsets_never_move_backwards() -> None:
    job = SourceJob(ALL, 2)
    job.discover({"t": frozenset({0})}, NO_LOG)
    job.advance(TopicPartition("t", 0), 10)
    with pytest.raises(OffsetRegressionError):
        job.advance(TopicPartition("t", 0), 9)


@given(metadata_snapshots(max_topics=3), parallelisms(6), parallelisms(6), variants)
def test_required_RESTORE_004_partition_missing_from_state_starts_at_earliest(
    metadata: Metadata, n: int, m: int, variant: RestoreVariant
) -> None:
    job = SourceJob(ALL, n, variant, initial_offset=LATEST)
    job.discover(metadata, NO_LOG)
    grown = {**metadata, "brand-new-topic": frozenset({0, 1, 2})}
    restored = SourceJob.restore(job.snapshot(1), m, ALL, grown, variant)
    for p in range(3):
        tp = TopicPartition("brand-new-topic", p)
        subtask = restored.owner_of(tp)
        assert subtask is not None
        assert restored.offsets[subtask][tp] == EARLIEST


@given(st.booleans(), variants, parallelisms(6))
def test_should_RESTORE_005_unsubscribed_topics_filtered_unless_kept(
    keep: bool, variant: RestoreVariant, m: int
) -> None:
    job = SourceJob(ALL, 2, variant)
    job.discover({"keep-me": frozenset({0}), "drop-me": frozenset({0})}, NO_LOG)
    only_keep = Subscription.fixed(["keep-me"])
    restored = SourceJob.restore(
        job.snapshot(1), m, only_keep, {"keep-me": frozenset({0})}, variant, keep_unsubscribed=keep
    )
    topics = {tp.topic for offsets in restored.offsets for tp in offsets}
    assert topics == ({"keep-me", "drop-me"} if keep else {"keep-me"})


@given(metadata_snapshots(max_topics=4), parallelisms(6), parallelisms(6), variants, st.data())
def test_required_RESTORE_006_partial_metadata_view_never_drops_state(
    metadata: Metadata, n: int, m: int, variant: RestoreVariant, data: st.DataObject
) -> None:
    job = SourceJob(ALL, n, variant)
    job.discover(metadata, NO_LOG)
    expected = _read_some(job, data)
    partial = {t: data.draw(st.frozensets(st.sampled_from(sorted(ids)))) for t, ids in metadata.items()}
    restored = SourceJob.restore(job.snapshot(1), m, ALL, partial, variant)
    assert {tp: off for o in restored.offsets for tp, off in o.items()} == expected
    assert restored.discover(metadata, NO_LOG) == {}  # reappearing partitions are not re-reported


def test_required_RESTORE_007_offsets_committed_only_when_their_checkpoint_completes() -> None:
    log = KafkaModel()
    tp = TopicPartition("t", 0)
    job = SourceJob(Subscription.fixed(["t"]), 1)
    job.discover({"t": frozenset({0})}, NO_LOG)
    job.advance(tp, 5)
    job.snapshot(1)
    job.advance(tp, 9)
    job.snapshot(2)
    assert log.committed("g") == {}
    job.notify_checkpoint_complete(1, log, "g")
    assert log.committed("g") == {tp: 5}
    job.notify_checkpoint_complete(2, log, "g")
    assert log.committed("g") == {tp: 9}
    job.notify_checkpoint_complete(1, log, "g")  # late duplicate notification: nothing moves back
    assert log.committed("g") == {tp: 9}


def test_required_DISC_005_initial_partitions_use_startup_mode_later_ones_earliest() -> None:
    job = SourceJob(ALL, 2, initial_offset=LATEST)
    job.discover({"a": frozenset({0})}, _LogEndingAt(7))
    job.discover({"a": frozenset({0, 1}), "b": frozenset({0})}, _LogEndingAt(9))
    offsets = {tp: off for o in job.offsets for tp, off in o.items()}
    assert offsets == {
        TopicPartition("a", 0): 7,  # LATEST, resolved at the discovery that found it
        TopicPartition("a", 1): EARLIEST,
        TopicPartition("b", 0): EARLIEST,
    }


def test_should_RESTORE_005_a_kept_topic_dropped_on_restore_is_blamed_on_RESTORE_005() -> None:
    """Not on RESTORE-002: the partition is unsubscribed, and only the keep option wanted it back."""
    tp = TopicPartition("drop-me", 0)
    keep_me, metadata = Subscription.fixed(["keep-me"]), {"drop-me": frozenset({0})}
    violations = check_restore({tp: 7}, [{}], keep_me, True, metadata, RestoreVariant.UNION_FILTER, 1)
    assert [(v.requirement, v.kind) for v in violations] == [("RESTORE-005", "kept-topic-dropped")]


def test_required_ASSIGN_007_a_partition_restored_twice_or_nowhere_is_unsafe_not_a_fidelity_deviation() -> None:
    """Two subtasks holding a partition read it twice and none reads it never again, whatever the assigner: safety
    (ASSIGN-007), which a connector's expected RESTORE-002 deviation (its own owner) must not hide. A partition
    kept with its offset forgotten is RESTORE-003; which subtask holds it stays RESTORE-002."""
    a, b = TopicPartition("in-a", 0), TopicPartition("in-a", 1)
    metadata, union = {"in-a": frozenset({0, 1})}, RestoreVariant.UNION_FILTER
    twice = check_restore({a: 3, b: 4}, [{a: 3, b: 4}, {a: 3}], ALL, False, metadata, union, 2)
    assert ("ASSIGN-007", "double-assignment") in [(v.requirement, v.kind) for v in twice]
    nowhere = check_restore({a: 3, b: 4}, [{a: 3}, {}], ALL, False, metadata, union, 2)
    assert [(v.requirement, v.kind) for v in nowhere if v.kind == "lost-partition"] == [
        ("ASSIGN-007", "lost-partition")
    ]
    forgotten = check_restore({a: 3}, [{a: EARLIEST}], ALL, False, {"in-a": frozenset({0})}, union, 1)
    assert [(v.requirement, v.kind) for v in forgotten] == [("RESTORE-003", "lost-partition")]


def test_required_RESTORE_007_a_commit_below_the_newest_notified_checkpoint_moved_backwards() -> None:
    tp = TopicPartition("t", 0)
    assert [v.kind for v in check_offset_commits({tp: 5}, {tp: 9}, "late notify 1")] == ["offset-commit-backwards"]
    assert [v.kind for v in check_offset_commits({}, {tp: 9}, "notify 2")] == ["offset-commit-mismatch"]
    assert check_offset_commits({tp: 9}, {tp: 9}, "late notify 1") == []


def test_required_RESTORE_007_the_source_machine_reaches_every_interleaving_at_the_default_profile() -> None:
    """Late, repeated and out-of-order notifications and every kind of restore occur (issue 15's generator gaps)."""
    mix = InterleavingMix(INTERLEAVINGS)
    machine = type("SourceMachineOnReference", (SourceMachine,), {"mix": mix, "adapter": guard(ADAPTER)})
    run_state_machine_as_test(
        machine,
        settings=settings(
            max_examples=PROFILES["default"], stateful_step_count=STEPS_PER_EXAMPLE, derandomize=True, database=None
        ),
    )
    assert not mix.missing(), f"never reached: {mix.missing()} ({dict(mix.counts)})"


@pytest.mark.parametrize(("startup", "first_read"), [(EARLIEST, [0, 1]), (LATEST, [3])])
def test_required_DISC_005_earliest_resolved_at_its_own_first_read_latest_at_discovery(
    startup: int, first_read: list[int]
) -> None:
    log = KafkaModel()
    log.create_topic("t", 2)
    a, b = TopicPartition("t", 0), TopicPartition("t", 1)
    for tp in (a, b):
        for i in range(3):
            log.produce(tp, None, f"{tp}@{i}".encode())
    job = SourceJob(ALL, 1, initial_offset=startup)
    job.discover(log.list_topics(), log)
    log.produce(a, None, b"after discovery, before the first read")
    assert [r.offset for r in job.poll(log, a, 2)] == first_read
    assert job.offsets[0][a] == (2 if startup == EARLIEST else 4), "the resolved position is kept, read or not"
    assert job.offsets[0][b] == (EARLIEST if startup == EARLIEST else 3), (
        "EARLIEST stays a sentinel until the partition's own first read; LATEST was resolved at discovery"
    )


def test_required_DISC_005_a_checkpoint_before_the_first_read_keeps_the_end_at_discovery() -> None:
    """FLINK-28303: records produced between such a checkpoint and a restore are read after it."""
    log = KafkaModel()
    log.create_topic("t", 1)
    tp = TopicPartition("t", 0)
    log.produce(tp, None, b"before discovery")
    job = SourceJob(ALL, 1, initial_offset=LATEST)
    job.discover(log.list_topics(), log)
    checkpoint = job.snapshot(1)
    log.produce(tp, None, b"after the checkpoint")
    restored = SourceJob.restore(checkpoint, 2, ALL, log.list_topics(), initial_offset=LATEST)
    assert [r.offset for r in restored.poll(log, tp, 5)] == [1]


def test_required_RESTORE_003_poll_continues_from_the_position_and_never_past_the_log() -> None:
    log = KafkaModel()
    log.create_topic("t", 1)
    tp = TopicPartition("t", 0)
    for i in range(5):
        log.produce(tp, None, bytes([i]))
    job = SourceJob(ALL, 2)
    job.discover(log.list_topics(), log)
    batches = [[r.offset for r in job.poll(log, tp, 2)] for _ in range(4)]
    assert batches == [[0, 1], [2, 3], [4], []]
    assert {o[tp] for o in job.offsets if tp in o} == {5}
