"""The reference's FLIP-27 enumerator against Flink's own ``KafkaSourceEnumerator`` (the connector ``jvm/pom.xml``
pins, 5.0.0), driven in Flink's own test context (``MockSplitEnumeratorContext``) through the Flink oracle.

Hypothesis draws discovery sequences: topics that appear, partitions added (non-contiguous ids
too, DISC-006), partial metadata views that miss known partitions (DISC-008), parallelism 1..8,
readers that are sometimes not registered, and a startup offset for the first discovery. Each step
runs on Flink's enumerator and on the reference's ``SourceJob`` under ``split-redistribution``
(whose ``Enumerator`` decides what is new and whose checkpoint's ``assigned`` is the enumerator
state); then, from a checkpoint in the middle, both are restored at a drawn parallelism and run
on. They must hand out the same partitions, each once, to the same reader, at the same starting
offset, and checkpoint the same splits at the same starts.

Flink hands a split only to a registered reader and keeps the others pending; the reference has no
readers to register and counts a split as assigned when it is discovered. So the reference's
``assigned`` is Flink's assigned splits plus its unassigned ones, which connector 5.0 checkpoints, each
with its start (``KafkaSourceEnumState``, FLINK-38453), as the reference checkpoints them; connector 3.1
to 4.x checkpointed bare partitions, the unassigned ones of the first discovery only (spec/discovery.md,
DISC-004).

Where they differ by design the tests below pin it (DISC-005, kconform's choice): the reference's
initial phase is its first discovery run, whether or not it finds a partition (connector 3.1 to 4.x);
connector 5.0's is the first discovery that finds one (``handlePartitionSplitChanges`` sets
``initialDiscoveryFinished``, and runs only for a non-empty change). After leading discoveries that find
nothing, Flink starts the partitions of the first that finds some at the configured start, the
reference at EARLIEST; the drawn tests compare Flink with the reference fed from that discovery on
(``from_first_found``) and pin that this is the whole difference.

At LATEST (DISC-005) the cluster's log offsets are drawn too: each partition's end offset and its
earliest one (above 0 after retention), both moving from step to step as records are produced and
deleted. Flink's own ``LatestOffsetsInitializer`` looks the end offsets up, through an offsets
retriever the oracle answers from the step's offsets; the reference's ``SourceJob.discover`` reads
them through a ``LogReader`` over the same offsets. Both must start each partition of the initial
discovery at its end offset as of that discovery (no LATEST sentinel in any split or checkpoint),
every later one at EARLIEST, left to the reader in both (Flink's ``earliest()`` is reader-handled: its
enumerator never looks a beginning offset up), and a restore must keep the end offset the initial
discovery resolved for a split still pending at the checkpoint (connector 4.x resolved it again, to
the end offset at the restore, and skipped the records written in between: FLINK-38453, fixed in 5.0).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

import pytest
from hypothesis import event, given
from hypothesis import strategies as st

from kconform.conformance.generators.strategies import KAFKA_TOPIC_ALPHABET
from kconform.conformance.jvm.flink_oracle import EnumeratorState, EnumeratorStep, FlinkOracle, SplitAssignment
from kconform.reference_impl.assignment import owner
from kconform.reference_impl.discovery import Subscription
from kconform.reference_impl.kafka_model import KafkaModel
from kconform.reference_impl.ports import Isolation, Record
from kconform.reference_impl.restore import RestoreVariant, SourceCheckpoint, SourceJob
from kconform.reference_impl.types import EARLIEST, LATEST, SubtaskIndex, TopicPartition

pytestmark = pytest.mark.flink_oracle

EVERY_TOPIC = Subscription.regex(".*")
"""The oracle's subscriber lists every topic of a step's metadata: subscriptions are not under test here."""

Step = tuple[frozenset[int], dict[str, frozenset[int]]]
"""The readers registered for a step, and the metadata its discovery lists."""


@dataclass(frozen=True)
class Scenario:
    parallelism: int
    start: int
    steps: tuple[Step, ...]
    checkpoint_after: int
    """The step after which the checkpoint that the restore starts from is taken."""
    restored_parallelism: int
    restored_steps: tuple[Step, ...]


topic_names = st.one_of(
    st.sampled_from(["test-topic", "orders", "payments", "a", "polygenelubricants"]),
    st.text(KAFKA_TOPIC_ALPHABET, min_size=1, max_size=20),
)


@st.composite
def discovery_steps(draw: st.DrawFn, parallelism: int, cluster: dict[str, set[int]], count: int) -> tuple[Step, ...]:
    """``count`` steps over a cluster that only grows (``cluster`` is updated): each may create
    topics and add partitions (any ids, not only the next ones), and lists the cluster or a partial
    view of it; most steps register every reader, some leave one out."""
    steps: list[Step] = []
    for _ in range(count):
        for topic in draw(st.lists(topic_names, max_size=2)):
            cluster.setdefault(topic, set())
        for topic in sorted(cluster):
            if draw(st.integers(0, 2)) == 0 or not cluster[topic]:
                cluster[topic] |= draw(st.sets(st.integers(0, 11), max_size=4))
        view = {t: frozenset(ids) for t, ids in cluster.items()}
        if draw(st.integers(0, 4)) == 0:  # a partial view: some known partitions missing (DISC-008)
            view = {
                t: frozenset(draw(st.sets(st.sampled_from(sorted(ids))))) if ids else ids for t, ids in view.items()
            }
        readers = frozenset(range(parallelism))
        if draw(st.integers(0, 3)) == 0:
            readers -= {draw(st.integers(0, parallelism - 1))}
        steps.append((readers, view))
    return tuple(steps)


@st.composite
def scenarios(draw: st.DrawFn) -> Scenario:
    n = draw(st.integers(1, 8))
    cluster: dict[str, set[int]] = {}
    steps = draw(discovery_steps(n, cluster, draw(st.integers(1, 5))))
    m = draw(st.one_of(st.just(n), st.integers(1, 8)))
    restored = draw(discovery_steps(m, cluster, draw(st.integers(1, 4))))
    return Scenario(
        n, draw(st.sampled_from([EARLIEST, 0, 42])), steps, draw(st.integers(0, len(steps) - 1)), m, restored
    )


Offsets = Mapping[TopicPartition, tuple[int, int]]
"""Each partition of the cluster with its earliest and end offset at one step."""


@dataclass(frozen=True)
class LatestScenario:
    """A scenario started at LATEST, with the cluster's log offsets at each step of either run."""

    scenario: Scenario
    offsets: tuple[Offsets, ...]
    restored_offsets: tuple[Offsets, ...]


@st.composite
def log_offsets(draw: st.DrawFn, cluster: dict[str, set[int]], before: Offsets) -> Offsets:
    """The offsets of every partition of ``cluster`` after those of ``before``: a new partition
    holds records or none, some maybe deleted already (its earliest offset above 0); records are
    produced to a few others, and retention may delete some of them."""
    offsets = dict(before)
    for tp in (TopicPartition(t, p) for t in sorted(cluster) for p in sorted(cluster[t])):
        if tp not in offsets:
            end = draw(st.integers(0, 1000))
            offsets[tp] = (draw(st.one_of(st.just(0), st.integers(0, end))), end)
    if offsets:
        for tp in sorted(draw(st.sets(st.sampled_from(sorted(offsets)), max_size=3))):
            earliest, end = offsets[tp]
            end += draw(st.integers(1, 20))
            offsets[tp] = (draw(st.one_of(st.just(earliest), st.integers(earliest, end))), end)
    return offsets


@st.composite
def logged_steps(
    draw: st.DrawFn, parallelism: int, cluster: dict[str, set[int]], before: Offsets, count: int
) -> tuple[tuple[Step, ...], tuple[Offsets, ...]]:
    """``discovery_steps``, each with the cluster's offsets when its discovery runs."""
    steps: list[Step] = []
    offsets: list[Offsets] = []
    for _ in range(count):
        steps += draw(discovery_steps(parallelism, cluster, 1))
        offsets.append(draw(log_offsets(cluster, offsets[-1] if offsets else before)))
    return tuple(steps), tuple(offsets)


@st.composite
def latest_scenarios(draw: st.DrawFn) -> LatestScenario:
    """``scenarios`` at LATEST, with log offsets: a topic with partitions from the start, so that the
    first discovery mostly finds some for LATEST to resolve, and often the owner of one of those
    left out of every step up to the checkpoint, so that its split is pending at the checkpoint."""
    n = draw(st.integers(1, 8))
    cluster = {draw(topic_names): draw(st.sets(st.integers(0, 11), min_size=1, max_size=4))}
    steps, offsets = draw(logged_steps(n, cluster, {}, draw(st.integers(1, 5))))
    c = draw(st.integers(0, len(steps) - 1))
    initial = sorted(TopicPartition(t, p) for t, ids in steps[0][1].items() for p in ids)
    if draw(st.booleans()) and initial:
        late = owner(draw(st.sampled_from(initial)), n)
        steps = tuple(
            (readers - {late}, view) if k <= c else (readers, view) for k, (readers, view) in enumerate(steps)
        )
    m = draw(st.one_of(st.just(n), st.integers(1, 8)))
    restored, restored_offsets = draw(logged_steps(m, cluster, offsets[-1], draw(st.integers(1, 4))))
    return LatestScenario(Scenario(n, LATEST, steps, c, m, restored), offsets, restored_offsets)


@dataclass(frozen=True)
class Log:
    """The reference's ``LogReader`` over one step's drawn offsets: where each partition starts and
    ends (read_uncommitted; no transactions here). Nothing is read."""

    offsets: Offsets

    def earliest_offset(self, tp: TopicPartition) -> int:
        return self.offsets[tp][0]

    def latest_offset(self, tp: TopicPartition, isolation: Isolation) -> int:
        return self.offsets[tp][1]

    def read(self, tp: TopicPartition, start: int, isolation: Isolation, max_records: int) -> Sequence[Record]:
        raise AssertionError(f"the enumerator differential reads nothing, yet {tp} was read from {start}")


def handed_out(flink: Sequence[EnumeratorStep], upto: int) -> dict[TopicPartition, SplitAssignment]:
    """Every split Flink's enumerator assigned in steps ``0..upto`` and those pending after ``upto``;
    a partition assigned twice is an assertion error."""
    out: dict[TopicPartition, SplitAssignment] = {}
    for step in flink[: upto + 1]:
        for split in step.assigned:
            assert split.partition not in out, f"{split.partition} assigned twice: {out[split.partition]}, {split}"
            out[split.partition] = split
    for split in flink[upto].pending:
        assert split.partition not in out, f"{split.partition} assigned and still pending: {split}"
        out[split.partition] = split
    return out


def reference_offsets(job: SourceJob) -> dict[TopicPartition, tuple[SubtaskIndex, int]]:
    """Each partition of the reference job with its subtask and next offset (nothing is read here:
    the offset it started at)."""
    return {tp: (SubtaskIndex(i), off) for i, offsets in enumerate(job.offsets) for tp, off in offsets.items()}


def checkpointed(checkpoint: SourceCheckpoint) -> dict[TopicPartition, int]:
    return {tp: off for entries in checkpoint.by_subtask for tp, off in entries}


def lists_nothing(step: Step) -> bool:
    return not any(step[1].values())


def first_found_at(steps: Sequence[Step]) -> int:
    """The first step whose discovery finds a partition: connector 5.0's initial discovery (``len(steps)`` if none)."""
    return next((k for k, step in enumerate(steps) if not lists_nothing(step)), len(steps))


def check_step(flink: Sequence[EnumeratorStep], k: int, job: SourceJob, checkpoint: SourceCheckpoint) -> None:
    """Flink's step ``k`` against the reference job after the same discoveries: the same splits handed out (or
    pending), at the same readers and starts, and Flink's checkpoint the reference's, split for split."""
    step = flink[k]
    theirs = handed_out(flink, k)
    assert {tp: (s.reader, s.starting_offset) for tp, s in theirs.items()} == reference_offsets(job)
    pending = {s.partition: s.starting_offset for s in step.pending}
    assert step.state.unassigned == pending
    assert step.state.assigned == {tp: s.starting_offset for tp, s in theirs.items() if tp not in pending}
    assert {**step.state.assigned, **step.state.unassigned} == checkpointed(checkpoint)
    assert set(step.state.assigned) | set(step.state.unassigned) == checkpoint.assigned


def differs_only_at_the_initial_discovery(
    job: SourceJob, from_first_found: SourceJob, initial: Collection[TopicPartition], start: int
) -> None:
    """The difference by design (DISC-005): the reference fed every discovery starts the partitions of the first
    one that finds some at EARLIEST when an earlier one found nothing; fed from that one on (connector 5.0's
    initial discovery), at ``start``. Nothing else differs."""
    ours, fives = reference_offsets(job), reference_offsets(from_first_found)
    assert ours.keys() == fives.keys()
    for tp, (subtask, offset) in fives.items():
        expected = (subtask, EARLIEST) if tp in initial else (subtask, offset)
        assert ours[tp] == expected


@given(scenarios())
def test_required_DISC_003_and_004_and_005_flinks_enumerator_hands_out_what_the_reference_does(
    flink_oracle: FlinkOracle, scenario: Scenario
) -> None:
    """Per step: every partition the reference discovers is assigned or pending in Flink, once in
    the whole sequence, to the reader the formula names, at the initial discovery's start or at
    EARLIEST after it; Flink's checkpoint (assigned and unassigned splits, each with its start) is the
    reference's. The initial discovery is the first that finds a partition (connector 5.0); where that is
    not the first one run, the reference differs by design at that discovery's partitions only."""
    n = scenario.parallelism
    flink = flink_oracle.enumerator(n, scenario.steps, scenario.start)
    e = first_found_at(scenario.steps)
    job = SourceJob(EVERY_TOPIC, n, RestoreVariant.SPLIT_REDISTRIBUTION, initial_offset=scenario.start)
    fives = SourceJob(EVERY_TOPIC, n, RestoreVariant.SPLIT_REDISTRIBUTION, initial_offset=scenario.start)
    log = KafkaModel()
    for k, (readers, metadata) in enumerate(scenario.steps):
        job.discover(metadata, log)
        if k >= e:
            fives.discover(metadata, log)
        check_step(flink, k, fives, fives.snapshot(k + 1))
        assert all(split.reader not in readers for split in flink[k].pending)
        for tp, split in handed_out(flink, k).items():
            assert split.reader == owner(tp, n)
        assert flink[k].state.initial_discovery_finished == (k >= e)
    # the partitions the reference, fed every discovery, starts at EARLIEST where Flink starts them at the start
    moved = 0 < e < len(scenario.steps)
    initial = {TopicPartition(t, p) for t, ids in scenario.steps[e][1].items() for p in ids} if moved else set()
    differs_only_at_the_initial_discovery(job, fives, initial, scenario.start)
    event("discoveries that find nothing before the first that finds some", str(min(e, 2)))


@given(scenarios())
def test_required_RESTORE_004_and_006_flinks_restored_enumerator_hands_out_what_the_reference_does(
    flink_oracle: FlinkOracle, scenario: Scenario
) -> None:
    """From a checkpoint taken after step ``c``, restored at parallelism ``m``: Flink never hands out
    a split of its restored assigned ones again, even one a partial view missed (RESTORE-006); it hands
    out its restored unassigned ones at their checkpointed starts, listed or not; each partition new
    since the checkpoint goes to the formula's owner at ``m``, at EARLIEST (RESTORE-004); and every
    start is the reference's. A checkpoint taken before any discovery found a partition holds an
    unfinished initial phase (connector 5.0), so the restored Flink runs as a fresh job would: pinned,
    the partitions of its first discovery that finds some start at the configured start, the reference's
    at EARLIEST."""
    n, m, c = scenario.parallelism, scenario.restored_parallelism, scenario.checkpoint_after
    before = flink_oracle.enumerator(n, scenario.steps, scenario.start)
    e = first_found_at(scenario.steps)
    # fed from connector 5.0's initial discovery on: the difference at it is the test above's
    job = SourceJob(EVERY_TOPIC, n, RestoreVariant.SPLIT_REDISTRIBUTION, initial_offset=scenario.start)
    log = KafkaModel()
    for k, (_, metadata) in enumerate(scenario.steps[: c + 1]):
        if k >= e:
            job.discover(metadata, log)
    checkpoint = job.snapshot(1)
    saved = before[c].state
    assert saved.initial_discovery_finished == (e <= c)

    after = flink_oracle.enumerator(m, scenario.restored_steps, scenario.start, restore=saved)
    (_, first), *later = scenario.restored_steps
    restored = SourceJob.restore(
        checkpoint, m, EVERY_TOPIC, first, RestoreVariant.SPLIT_REDISTRIBUTION, initial_offset=scenario.start
    )
    for _, metadata in later:
        restored.discover(metadata, log)

    found = handed_out(after, len(after) - 1)
    assert not saved.assigned.keys() & found.keys()  # RESTORE-006: restored splits are never handed out again
    assert saved.unassigned.keys() <= found.keys()  # handed out at the restore, listed or not
    ours = reference_offsets(restored)
    if saved.initial_discovery_finished:
        theirs = {tp: s.starting_offset for tp, s in found.items()} | dict(saved.assigned)
        assert theirs == {tp: off for tp, (_, off) in ours.items()}
        final = after[-1].state
        assert {**final.assigned, **final.unassigned} == checkpointed(restored.snapshot(2))
    else:  # the difference by design: nothing was found before the checkpoint, so none was restored
        assert not checkpoint.assigned and not saved.assigned and not saved.unassigned
        r = first_found_at(scenario.restored_steps)
        fresh = SourceJob(EVERY_TOPIC, m, RestoreVariant.SPLIT_REDISTRIBUTION, initial_offset=scenario.start)
        for _, metadata in scenario.restored_steps[r:]:
            fresh.discover(metadata, log)
        assert {tp: (s.reader, s.starting_offset) for tp, s in found.items()} == reference_offsets(fresh)
        initial = (
            {TopicPartition(t, p) for t, ids in scenario.restored_steps[r][1].items() for p in ids}
            if r < len(scenario.restored_steps)
            else set()
        )
        differs_only_at_the_initial_discovery(restored, fresh, initial, scenario.start)
    for tp, split in found.items():
        if tp not in checkpoint.assigned and saved.initial_discovery_finished:
            # new since the checkpoint: the formula's owner at m, from EARLIEST
            assert (split.reader, split.starting_offset) == (owner(tp, m), EARLIEST) == ours[tp]
    event("checkpoint before any partition was found", str(not saved.initial_discovery_finished))


def test_required_DISC_004_flink_5_checkpoints_a_split_pending_for_an_unregistered_reader_with_its_start(
    flink_oracle: FlinkOracle,
) -> None:
    """Reader 0 of 2 is not registered: Flink keeps its splits pending and checkpoints them as unassigned
    splits with their starts, the first discovery's and a later one's (connector 5.0, FLINK-38453; 3.1 to
    4.x kept the first discovery's as bare partitions and the later one not at all); the reference counts
    every discovered partition as assigned and checkpoints it with its start. Restored, Flink hands the
    pending ones out where the reference restores them."""
    topic = "test-topic"
    tp0, tp1, tp2 = (TopicPartition(topic, p) for p in range(3))
    assert [owner(tp, 2) for tp in (tp0, tp1, tp2)] == [0, 1, 0]
    steps: list[Step] = [(frozenset({1}), {topic: frozenset({0, 1})}), (frozenset({1}), {topic: frozenset({0, 1, 2})})]
    first, second = flink_oracle.enumerator(2, steps, start=42)
    assert first.assigned == (SplitAssignment(SubtaskIndex(1), tp1, 42),)
    assert first.pending == (SplitAssignment(SubtaskIndex(0), tp0, 42),)
    assert first.state == EnumeratorState({tp1: 42}, {tp0: 42}, True)
    assert second.pending == (
        SplitAssignment(SubtaskIndex(0), tp0, 42),
        SplitAssignment(SubtaskIndex(0), tp2, EARLIEST),
    )
    assert second.state == EnumeratorState({tp1: 42}, {tp0: 42, tp2: EARLIEST}, True)

    job = SourceJob(EVERY_TOPIC, 2, RestoreVariant.SPLIT_REDISTRIBUTION, initial_offset=42)
    for _, metadata in steps:
        job.discover(metadata, KafkaModel())
    checkpoint = job.snapshot(1)
    assert checkpoint.assigned == {tp0, tp1, tp2}
    assert checkpoint.by_subtask == (((tp0, 42), (tp2, EARLIEST)), ((tp1, 42),))

    (again,) = flink_oracle.enumerator(2, [(frozenset({0, 1}), steps[1][1])], start=42, restore=second.state)
    assert again.assigned == (
        SplitAssignment(SubtaskIndex(0), tp0, 42),
        SplitAssignment(SubtaskIndex(0), tp2, EARLIEST),
    )
    assert again.state == EnumeratorState({tp0: 42, tp1: 42, tp2: EARLIEST}, {}, True)


def test_flink_gives_a_split_pending_at_the_checkpoint_to_the_formulas_owner_after_a_rescale(
    flink_oracle: FlinkOracle,
) -> None:
    """Where the two differ by design (RESTORE-002): a split pending at the checkpoint is in no
    reader's state, so after a restore at another parallelism Flink's enumerator gives it to its
    owner by the formula there; the reference checkpointed it in its subtask's list, which the
    list-state repartitioning (``redistribute_splits``) cuts into contiguous chunks."""
    topic = "test-topic"
    tp0, tp2 = TopicPartition(topic, 0), TopicPartition(topic, 2)
    metadata = {topic: frozenset({0, 1, 2})}
    (first,) = flink_oracle.enumerator(2, [(frozenset({1}), metadata)])
    assert first.pending == (
        SplitAssignment(SubtaskIndex(0), tp0, EARLIEST),
        SplitAssignment(SubtaskIndex(0), tp2, EARLIEST),
    )
    (again,) = flink_oracle.enumerator(3, [(frozenset(range(3)), metadata)], restore=first.state)
    assert again.assigned == (
        SplitAssignment(SubtaskIndex(0), tp0, EARLIEST),
        SplitAssignment(SubtaskIndex(2), tp2, EARLIEST),
    )

    job = SourceJob(EVERY_TOPIC, 2, RestoreVariant.SPLIT_REDISTRIBUTION)
    job.discover(metadata, KafkaModel())
    restored = SourceJob.restore(job.snapshot(1), 3, EVERY_TOPIC, metadata, RestoreVariant.SPLIT_REDISTRIBUTION)
    assert reference_offsets(restored)[tp2] == (1, EARLIEST)


def test_flink_5_starts_the_first_discovery_that_finds_a_partition_at_the_configured_start_the_reference_at_earliest(
    flink_oracle: FlinkOracle,
) -> None:
    """Where the two differ by design (DISC-005, kconform's choice is connector 3.1 to 4.x's): the first
    discovery run ends the reference's initial phase even when it finds nothing, so a partition found
    later starts at EARLIEST; connector 5.0's initial phase ends at the first discovery that finds a
    partition (``handlePartitionSplitChanges``), which starts it at the configured start. At LATEST that
    start skips what was written to the partition before the discovery found it: 5 records here."""
    steps: list[Step] = [(frozenset({0}), {}), (frozenset({0}), {"orders": frozenset({0})})]
    orders = TopicPartition("orders", 0)
    empty, found = flink_oracle.enumerator(1, steps, start=42)
    assert (empty.assigned, empty.state) == ((), EnumeratorState({}, {}, False))
    assert found.assigned == (SplitAssignment(SubtaskIndex(0), orders, 42),)
    assert found.state == EnumeratorState({orders: 42}, {}, True)
    _, at_latest = flink_oracle.enumerator(1, steps, LATEST, offsets=[{}, {orders: (0, 5)}])
    assert at_latest.assigned == (SplitAssignment(SubtaskIndex(0), orders, 5),)
    for start in (42, LATEST):
        job = SourceJob(EVERY_TOPIC, 1, RestoreVariant.SPLIT_REDISTRIBUTION, initial_offset=start)
        for _, metadata in steps:
            job.discover(metadata, Log({orders: (0, 5)}))
        assert job.offsets == [{orders: EARLIEST}]


@given(latest_scenarios())
def test_required_DISC_005_flinks_enumerator_at_latest_starts_the_first_discovery_at_its_end_offsets_as_the_reference(
    flink_oracle: FlinkOracle, drawn: LatestScenario
) -> None:
    """Started at LATEST: per step, Flink hands out the reference's partitions, to the same readers,
    each partition of the initial discovery at its end offset as of that discovery (resolved in the
    enumerator: no split holds LATEST), each later one at EARLIEST, which neither resolves before
    the reader does (however far retention has moved the earliest offset); Flink's checkpoint holds
    exactly the reference's starts. The initial discovery is the first that finds a partition (connector
    5.0; the reference fed from it on, as in the test above)."""
    scenario = drawn.scenario
    n = scenario.parallelism
    flink = flink_oracle.enumerator(n, scenario.steps, LATEST, offsets=drawn.offsets)
    e = first_found_at(scenario.steps)
    job = SourceJob(EVERY_TOPIC, n, RestoreVariant.SPLIT_REDISTRIBUTION, initial_offset=LATEST)
    initial = (
        {TopicPartition(t, p) for t, ids in scenario.steps[e][1].items() for p in ids}
        if e < len(scenario.steps)
        else set()
    )
    for k, (_, metadata) in enumerate(scenario.steps):
        if k >= e:
            job.discover(metadata, Log(drawn.offsets[k]))
        checkpoint = job.snapshot(k + 1)
        check_step(flink, k, job, checkpoint)
        starts = {tp: drawn.offsets[e][tp][1] if tp in initial else EARLIEST for tp in handed_out(flink, k)}
        assert {tp: s.starting_offset for tp, s in handed_out(flink, k).items()} == starts == checkpointed(checkpoint)
        # LATEST is looked up by Flink's starting offsets initializer only, once, at the initial discovery, for
        # its partitions; no beginning offset is ever looked up: EARLIEST is the reader's to resolve
        assert flink[k].end_offsets_asked == (initial if k == e else frozenset())
        assert not flink[k].beginning_offsets_asked
    event("first discovery finds partitions", str(e == 0))
    event("an empty partition at the initial discovery", str(any(drawn.offsets[e][tp][1] == 0 for tp in initial)))
    event("an earliest offset above 0 at the initial discovery", str(any(drawn.offsets[e][tp][0] for tp in initial)))
    event("partitions found later", str(len(handed_out(flink, len(flink) - 1)) > len(initial)))


@given(latest_scenarios())
def test_required_RESTORE_004_and_DISC_005_flinks_restored_enumerator_at_latest_hands_out_what_the_reference_does(
    flink_oracle: FlinkOracle, drawn: LatestScenario
) -> None:
    """Started at LATEST, checkpointed after step ``c``, restored at parallelism ``m``, with records
    produced and deleted all along: a partition new since the checkpoint starts at EARLIEST, not
    LATEST, at the formula's owner at ``m`` (RESTORE-004); a split handed out before the checkpoint is
    not handed out again; a split of the initial discovery pending at the checkpoint keeps the end offset
    that discovery resolved, however much was written since (connector 5.0 checkpoints it; 4.x resolved
    LATEST again: FLINK-38453), and no end offset is looked up after the restore; every start is the
    reference's. A checkpoint before any discovery found a partition is left to the drawn test above."""
    scenario = drawn.scenario
    n, m, c = scenario.parallelism, scenario.restored_parallelism, scenario.checkpoint_after
    before = flink_oracle.enumerator(n, scenario.steps, LATEST, offsets=drawn.offsets)
    e = first_found_at(scenario.steps)
    job = SourceJob(EVERY_TOPIC, n, RestoreVariant.SPLIT_REDISTRIBUTION, initial_offset=LATEST)
    for k, (_, metadata) in enumerate(scenario.steps[: c + 1]):
        if k >= e:
            job.discover(metadata, Log(drawn.offsets[k]))
    event("checkpoint before any partition was found", str(e > c))
    if e > c:
        return  # a restored fresh job, compared in test_required_RESTORE_004_and_006_*
    checkpoint = job.snapshot(1)
    saved = before[c].state
    initial = {TopicPartition(t, p) for t, ids in scenario.steps[e][1].items() for p in ids}
    assert {**saved.assigned, **saved.unassigned} == checkpointed(checkpoint)

    after = flink_oracle.enumerator(m, scenario.restored_steps, LATEST, restore=saved, offsets=drawn.restored_offsets)
    (_, first), *later = scenario.restored_steps
    restored = SourceJob.restore(
        checkpoint, m, EVERY_TOPIC, first, RestoreVariant.SPLIT_REDISTRIBUTION, initial_offset=LATEST
    )
    for k, (_, metadata) in enumerate(later, 1):
        restored.discover(metadata, Log(drawn.restored_offsets[k]))

    found = handed_out(after, len(after) - 1)
    assert not saved.assigned.keys() & found.keys()  # restored splits are never handed out again (RESTORE-006)
    ours = {tp: off for tp, (_, off) in reference_offsets(restored).items()}
    kept = {tp: drawn.offsets[e][tp][1] for tp in saved.unassigned.keys() & initial}
    for tp, end in kept.items():
        assert found[tp].starting_offset == end == ours[tp]
    moved = any(end != drawn.restored_offsets[0][tp][1] for tp, end in kept.items())
    event("an initial split pending at the checkpoint", "no" if not kept else "written to since" if moved else "yes")
    assert {tp: s.starting_offset for tp, s in found.items()} | dict(saved.assigned) == ours
    for tp, split in found.items():
        if tp not in checkpoint.assigned:  # new since the checkpoint: the formula's owner at m, from EARLIEST
            assert (split.reader, split.starting_offset) == (owner(tp, m), EARLIEST)
            assert reference_offsets(restored)[tp] == (owner(tp, m), EARLIEST)
    assert LATEST not in {s.starting_offset for s in found.values()} | set(checkpointed(restored.snapshot(2)).values())
    for step in after:  # nothing is resolved again after the restore
        assert not step.end_offsets_asked
        assert not step.beginning_offsets_asked
    final = after[-1].state
    assert {**final.assigned, **final.unassigned} == checkpointed(restored.snapshot(2))


def test_required_DISC_005_flink_5_restores_the_end_offset_its_first_discovery_resolved_as_the_reference_does(
    flink_oracle: FlinkOracle,
) -> None:
    """Started at LATEST with reader 0 of 2 not registered: the first discovery resolves both partitions,
    ``tp0`` to 5 and ``tp1`` to 7, and keeps ``tp0``'s split pending; its checkpoint holds that split at 5
    (connector 5.0, FLINK-38453). Restored after 4 more records were written to ``tp0``, Flink hands it
    out at 5 and looks no end offset up: nothing is skipped (connector 4.x checkpointed the bare partition,
    resolved LATEST again, to 9, and skipped the 4). The reference checkpoints 5, and restores 5."""
    topic = "test-topic"
    tp0, tp1 = TopicPartition(topic, 0), TopicPartition(topic, 1)
    assert [owner(tp, 2) for tp in (tp0, tp1)] == [0, 1]
    metadata = {topic: frozenset({0, 1})}
    at_start: Offsets = {tp0: (0, 5), tp1: (3, 7)}  # tp1's first 3 records deleted by retention
    written: Offsets = {tp0: (0, 9), tp1: (3, 7)}
    first, second = flink_oracle.enumerator(
        2, [(frozenset({1}), metadata), (frozenset({0, 1}), metadata)], LATEST, offsets=[at_start, written]
    )
    assert first.assigned == (SplitAssignment(SubtaskIndex(1), tp1, 7),)
    assert first.pending == (SplitAssignment(SubtaskIndex(0), tp0, 5),)
    assert (first.end_offsets_asked, first.beginning_offsets_asked) == (frozenset({tp0, tp1}), frozenset())
    assert first.state == EnumeratorState({tp1: 7}, {tp0: 5}, True)
    assert second.assigned == (SplitAssignment(SubtaskIndex(0), tp0, 5),)

    (again,) = flink_oracle.enumerator(
        2, [(frozenset({0, 1}), metadata)], LATEST, restore=first.state, offsets=[written]
    )
    assert again.assigned == (SplitAssignment(SubtaskIndex(0), tp0, 5),)
    assert again.end_offsets_asked == frozenset()

    job = SourceJob(EVERY_TOPIC, 2, RestoreVariant.SPLIT_REDISTRIBUTION, initial_offset=LATEST)
    job.discover(metadata, Log(at_start))
    checkpoint = job.snapshot(1)
    assert checkpoint.by_subtask == (((tp0, 5),), ((tp1, 7),))
    restored = SourceJob.restore(
        checkpoint, 2, EVERY_TOPIC, metadata, RestoreVariant.SPLIT_REDISTRIBUTION, initial_offset=LATEST
    )
    assert reference_offsets(restored) == {tp0: (0, 5), tp1: (1, 7)}
