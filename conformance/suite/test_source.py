"""RESTORE-001..007, 013, 014 and DISC-005: the adapter's source under growth, checkpoints, crashes and rescale.

A Hypothesis state machine produces records into the Kafka model, lets the source discover and
read them, checkpoints, completes checkpoints (committing offsets), crashes and restores at a
random parallelism with a possibly partial metadata view and a possibly narrower subscription.
Completion notifications may be lost, arrive late (after newer checkpoints completed) or arrive
again; group offsets must then follow the newest checkpoint notified so far (RESTORE-007).
The source reads through its own ``poll`` (it resolves its EARLIEST sentinels and owns its
position) from a job started at EARLIEST or LATEST. Downstream is modelled as exactly-once
state: on restore it rolls back to the checkpoint, so after every step each partition's emitted
offsets must be exactly ``start .. next offset - 1``, ``start`` being where the log began when an
EARLIEST partition was first read, or where it ended when a LATEST partition was discovered
(DISC-005: LATEST is resolved at discovery, so a checkpoint never holds it).

That machine writes plain records, so every offset holds one; transactional and odd input (aborted
records, control markers, tombstones, empty values) has its own scenario (RESTORE-013, 014), judged by
what a read_committed reader sees at each offset rather than by a contiguous prefix.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from hypothesis import assume, example, given
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
)

from ...reference_impl.configs import GroupStartConfig, RestoreConfig, SourceConfig
from ...reference_impl.discovery import Subscription
from ...reference_impl.kafka_model import KafkaModel
from ...reference_impl.ports import Isolation, Record
from ...reference_impl.restore import RestoreVariant
from ...reference_impl.types import EARLIEST, LATEST, TopicPartition, is_sentinel
from ..adapter.guard import AdapterError, Guarded
from ..checks.checkers import (
    Picture,
    Violation,
    check_emitted_prefix,
    check_group_start,
    check_new_partition_start,
    check_offset_commits,
    check_poll_moves_only_its_partition,
    check_read_since_discovery,
    check_resolved_before_first_read,
    check_restore,
    check_restored_latest,
    check_single_holder,
    check_split_redistribution,
    check_startup_offsets,
    check_topic_deleted,
    check_zero_partitions,
    fail_on,
)
from ..checks.evidence import offset_step, offset_timeline
from ..checks.input_checkers import check_positions_in_gaps, check_records_read, check_values_as_written
from ..gate.pytest_plugin import requirement
from ..generators.input_classes import (
    INPUT_CLASSES,
    InputWrite,
    input_writes,
    log_view,
    write_input,
    written_values,
)
from ..generators.start_classes import LateStart, drawn_classes, late_starts, start_classes
from ..generators.strategies import InterleavingMix
from . import run_machine

GROUP = "kconform-source"
Checkpoint = tuple[Any, dict[TopicPartition, int], dict[TopicPartition, list[int]], dict[TopicPartition, int]]
"""A completed snapshot with what the suite saw then: the adapter's state, offsets, emitted offsets, origins."""
TOPICS = ("in-a", "in-b", "out-c")
SUBSCRIPTIONS = {"all-in": Subscription.regex("in-.*"), "only-in-a": Subscription.fixed(["in-a"])}
INTERLEAVINGS = (
    "produce",
    "add-partitions",
    "add-matching-topic",
    "discover-full",
    "discover-partial",
    "read",
    "checkpoint-complete",
    "checkpoint-pending",
    "checkpoint-notification-lost",
    "complete-newest-pending",
    "complete-older-pending",
    "notify-late",
    "notify-duplicate",
    "notify-older-than-notified",
    "first-start",
    "restore-full-view",
    "restore-partial-view",
    "restore-narrowed",
    "restore-keep-unsubscribed",
)
"""The interleaving classes the source machine must reach (``InterleavingMix``)."""


# Preconditions are named functions, not lambdas (tests/test_state_machines.py says why).
def checkpoint_pending(machine: SourceMachine) -> bool:
    return bool(machine.pending_checkpoints())


def checkpoint_completed_here(machine: SourceMachine) -> bool:
    return bool(machine.completed_here)


class SourceMachine(RuleBasedStateMachine):
    """One source job and its lineage of restores, checked after every step."""

    adapter: Any
    mix = InterleavingMix(INTERLEAVINGS)

    def __init__(self) -> None:
        super().__init__()
        self.log = KafkaModel()
        self.emitted: dict[TopicPartition, list[int]] = {}
        self.checkpoints: dict[int, Checkpoint] = {}
        self.completed: int | None = None
        self.completed_here: list[int] = []
        """Checkpoints the current source took that completed: the ones it can be notified of."""
        self.notified = 0
        """The newest checkpoint whose notification arrived: group offsets are its offsets (RESTORE-007)."""
        self.next_checkpoint = 1
        self.keep_unsubscribed = False
        self.expected_commits: dict[TopicPartition, int] = {}
        self.origins: dict[TopicPartition, int] = {}
        """Where each partition's emitted offsets begin: where the log ended when it was discovered
        (LATEST), or where it began at the partition's first read (EARLIEST)."""
        self.held: dict[int, list[dict[TopicPartition, int]]] = {}
        """Each checkpoint's offsets subtask by subtask, as the source held them at the snapshot."""
        self.runs: list[dict[str, Any]] = []
        """Each incarnation of the source: how it began, where each partition resumes, what it read, where it ended."""

    @initialize(
        partitions=st.lists(st.integers(1, 4), min_size=len(TOPICS), max_size=len(TOPICS)),
        n=st.integers(1, 4),
        startup=st.sampled_from([EARLIEST, LATEST]),
    )
    def start(self, partitions: list[int], n: int, startup: int) -> None:
        self.startup = startup
        for topic, count in zip(TOPICS, partitions, strict=True):
            self.log.create_topic(topic, count)
            for p in range(count):
                for i in range(12):
                    self.log.produce(TopicPartition(topic, p), None, f"{topic}-{p}@{i}".encode())
        self.subscription = SUBSCRIPTIONS["all-in"]
        self._fresh(n, "start")

    def _fresh(self, n: int, event: str) -> None:
        """A fresh job and its first discovery: a LATEST start begins where each partition ends now."""
        self.source = Guarded(
            self.adapter.source(
                SourceConfig(
                    subscription=self.subscription,
                    parallelism=n,
                    initial_offset=self.startup,
                    keep_unsubscribed=self.keep_unsubscribed,
                )
            ),
            "source",
            self.adapter.name,
        )
        self.source.discover(self.log.list_topics(), self.log)
        offsets = self._offsets()
        self.emitted = {}
        self.origins = {}
        if self.startup == LATEST:
            self.origins = {tp: self.log.latest_offset(tp, Isolation.READ_UNCOMMITTED) for tp in offsets}
        label = f"run {len(self.runs) + 1}"
        self.runs.append({"label": label, "event": event, "parallelism": n, "resume": dict(self.origins), "read": []})
        self._fail_on(check_startup_offsets(offsets, self.origins))

    def _offsets(self) -> dict[TopicPartition, int]:
        return {tp: off for offsets in self.source.offsets for tp, off in offsets.items()}

    # -- the cluster -------------------------------------------------------------------------
    @rule(topic=st.sampled_from(TOPICS), partition=st.integers(0, 7), count=st.integers(1, 5))
    def produce(self, topic: str, partition: int, count: int) -> None:
        self.mix.step("produce")
        tp = TopicPartition(topic, partition % len(self.log.list_topics()[topic]))
        for i in range(count):
            self.log.produce(tp, None, f"{tp}@{i}".encode())

    @rule(topic=st.sampled_from(TOPICS), more=st.integers(1, 3))
    def add_partitions(self, topic: str, more: int) -> None:
        self.mix.step("add-partitions")
        self.log.create_partitions(topic, len(self.log.list_topics()[topic]) + more)

    @rule(suffix=st.sampled_from(["x", "y"]))
    def add_matching_topic(self, suffix: str) -> None:
        self.mix.step("add-matching-topic")
        name = f"in-new-{suffix}"
        if name not in self.log.list_topics():
            self.log.create_topic(name, 2)

    # -- the source --------------------------------------------------------------------------
    @rule(partial=st.booleans(), data=st.data())
    def discover(self, partial: bool, data: st.DataObject) -> None:
        """Periodic discovery; partitions found now must start at EARLIEST (DISC-005)."""
        self.mix.step("discover-partial" if partial else "discover-full")
        metadata = self._view(partial, data)
        before = set(self._offsets())
        self.source.discover(metadata, self.log)
        new = set(self._offsets()) - before
        self._fail_on(check_new_partition_start(self._offsets(), new, "DISC-005"))

    @rule(data=st.data(), limit=st.integers(1, 4))
    def read(self, data: st.DataObject, limit: int) -> None:
        self.mix.step("read")
        offsets = self._offsets()
        if not offsets:
            return
        self._read_from(data.draw(st.sampled_from(sorted(offsets)), label="partition"), limit)

    def _read_from(self, tp: TopicPartition, limit: int) -> None:
        """The source polls ``tp``; what it returns is emitted downstream, and nothing else may move."""
        before = self._offsets()
        self._fail_on(check_resolved_before_first_read(tp, before[tp]))
        if before[tp] == EARLIEST:
            self.origins[tp] = self.log.earliest_offset(tp)
        records = self.source.poll(self.log, tp, limit)
        self.emitted.setdefault(tp, []).extend(r.offset for r in records)
        self.runs[-1]["read"].extend((tp, r.offset) for r in records)
        returned = [(r.topic_partition, r.offset) for r in records]
        self._fail_on(check_poll_moves_only_its_partition(tp, returned, before, self._offsets()))

    @rule(outcome=st.sampled_from(["complete", "pending", "notification-lost", "complete-previous"]))
    def checkpoint(self, outcome: str) -> None:
        """Snapshot; most checkpoints complete at once, some stay pending, some lose their notification,
        and some stay pending while the one before them completes."""
        previous = self.pending_checkpoints() if outcome == "complete-previous" else []
        self.mix.step("complete-older-pending" if previous else f"checkpoint-{outcome.replace('-previous', '')}")
        cid = self.next_checkpoint
        self.next_checkpoint += 1
        state = self.source.snapshot(cid, self.log, GROUP)
        emitted = {tp: list(o) for tp, o in self.emitted.items()}
        self.checkpoints[cid] = (state, self._offsets(), emitted, dict(self.origins))
        self.held[cid] = [dict(offsets) for offsets in self.source.offsets]
        self._fail_on(check_offset_commits(self.log.committed(GROUP), self.expected_commits, "after a snapshot"))
        if outcome != "pending":
            for tp in sorted(self._offsets()):  # the source keeps reading while the checkpoint completes
                self._read_from(tp, 1)
            self._complete(previous[-1] if previous else cid, notify=outcome != "notification-lost")

    def pending_checkpoints(self) -> list[int]:
        return sorted(c for c in self.checkpoints if c > (self.completed or 0))

    @precondition(checkpoint_pending)
    @rule(data=st.data(), notify=st.booleans())
    def complete_pending(self, data: st.DataObject, notify: bool) -> None:
        """A pending checkpoint completes late, after newer reads or snapshots, perhaps while a newer one
        is still pending; completing it subsumes the older pending ones (RESTORE-007)."""
        pending = self.pending_checkpoints()
        cid = data.draw(st.sampled_from(pending), label="checkpoint")
        self.mix.step("complete-newest-pending" if cid == pending[-1] else "complete-older-pending")
        self._complete(cid, notify)

    @precondition(checkpoint_completed_here)
    @rule(data=st.data())
    def late_notification(self, data: st.DataObject) -> None:
        """A completed checkpoint's notification arrives late or again, perhaps after a newer one's."""
        cid = data.draw(st.sampled_from(self.completed_here), label="checkpoint")
        kind = "late" if cid > self.notified else "duplicate" if cid == self.notified else "older-than-notified"
        self.mix.step(f"notify-{kind}")
        self._notify(cid)

    def _complete(self, cid: int, notify: bool) -> None:
        self.completed = cid
        self.completed_here.append(cid)
        if notify:
            self._notify(cid)

    def _notify(self, cid: int) -> None:
        """Only a notification newer than every one before commits, and it commits that checkpoint's offsets.

        An older one commits nothing: committed offsets never move backwards (RESTORE-007).
        """
        self.source.notify_checkpoint_complete(cid, self.log, GROUP)
        if cid > self.notified:
            self.notified = cid
            # Group offsets accumulate in Kafka: partitions no longer read keep their last commit.
            self.expected_commits.update({tp: o for tp, o in self.checkpoints[cid][1].items() if not is_sentinel(o)})
        self._fail_on(check_offset_commits(self.log.committed(GROUP), self.expected_commits, f"after notify {cid}"))

    @rule(m=st.integers(1, 5), partial=st.booleans(), narrow=st.booleans(), keep=st.booleans(), data=st.data())
    def crash_and_restore(self, m: int, partial: bool, narrow: bool, keep: bool, data: st.DataObject) -> None:
        """Restore the last completed checkpoint at parallelism m (RESTORE-002..006)."""
        if narrow:
            self.subscription = SUBSCRIPTIONS["only-in-a"]
        self.keep_unsubscribed = keep
        self.completed_here = []
        self.runs[-1]["end"] = self._offsets()
        if self.completed is None:
            self.mix.step("first-start")
            self.checkpoints = {}
            self._fresh(m, "crash")
            return
        if narrow:
            self.mix.step("restore-keep-unsubscribed" if keep else "restore-narrowed")
        else:
            self.mix.step("restore-partial-view" if partial else "restore-full-view")
        self.checkpoints = {c: v for c, v in self.checkpoints.items() if c <= self.completed}
        state, offsets, emitted, origins = self.checkpoints[self.completed]
        metadata = self._view(partial, data)
        self.source = Guarded(
            self.adapter.restore_source(
                RestoreConfig(
                    checkpoint=state,
                    parallelism=m,
                    subscription=self.subscription,
                    metadata=metadata,
                    keep_unsubscribed=keep,
                    initial_offset=self.startup,
                )
            ),
            "source",
            self.adapter.name,
        )
        label = f"run {len(self.runs) + 1} from checkpoint {self.completed}"
        resumed = {tp: self._resolved(tp, off) for tp, off in self._offsets().items()}
        run = {"label": label, "event": "crash", "parallelism": m, "resume": dict(offsets), "read": []}
        self.runs.append(run | {"resumed": resumed})
        variant = self.adapter.restore_variant
        violations = check_restore(offsets, self.source.offsets, self.subscription, keep, metadata, variant, m)
        if partial and violations:
            # Tell RESTORE-006 from a bug that loses partitions whatever the view: restore again, fully informed.
            full = dict(self.log.list_topics())
            probe = self.adapter.restore_source(
                RestoreConfig(
                    checkpoint=state,
                    parallelism=m,
                    subscription=self.subscription,
                    metadata=full,
                    keep_unsubscribed=keep,
                    initial_offset=self.startup,
                )
            )
            violations = check_restore(offsets, probe.offsets, self.subscription, keep, full, variant, m) or violations
        kept_all = keep or all(self.subscription.matches(tp.topic) for tp in offsets)
        if not violations and variant is RestoreVariant.SPLIT_REDISTRIBUTION and kept_all:
            violations = check_split_redistribution(self.held[self.completed], self.source.offsets)
        self._fail_on(violations)
        new = set(self._offsets()) - set(offsets)
        self._fail_on(check_new_partition_start(self._offsets(), new, "RESTORE-004"))
        self.emitted = {tp: list(o) for tp, o in emitted.items() if tp in self._offsets()}
        self.origins = {tp: o for tp, o in origins.items() if not is_sentinel(self._offsets().get(tp, EARLIEST))}

    def _fail_on(self, violations: list[Violation]) -> None:
        """``fail_on``, with the offsets every run of the lineage read beside those it should have."""
        fail_on(violations, [self._timeline()] if violations else [])

    def _resolved(self, tp: TopicPartition, offset: int) -> int:
        if offset == EARLIEST:
            return self.log.earliest_offset(tp)
        return self.log.latest_offset(tp, Isolation.READ_UNCOMMITTED) if offset == LATEST else offset

    def _timeline(self) -> Picture:
        """Each run should read from where its checkpoint resumes each partition (its first offset if
        absent) up to where the run ended or now stands; what it read is what it emitted."""
        steps = []
        for run in self.runs:
            end = run.get("end", self._offsets())
            expected = {}
            for tp, off in end.items():
                start = self._resolved(tp, run["resume"].get(tp, EARLIEST))
                expected[tp] = (start, max(start, self._resolved(tp, off)))
            resumed = run.get("resumed")
            steps.append(offset_step(run["label"], run["event"], run["parallelism"], run["read"], expected, resumed))
        return offset_timeline(
            steps, "offsets per partition, run by run (crashes restore the last completed checkpoint)"
        )

    def _view(self, partial: bool, data: st.DataObject) -> dict[str, frozenset[int]]:
        full = dict(self.log.list_topics())
        if not partial:
            return full
        return {
            t: frozenset(data.draw(st.sets(st.sampled_from(sorted(ids))), label=f"view of {t}"))
            for t, ids in full.items()
        }

    # -- invariants --------------------------------------------------------------------------
    @invariant()
    def each_partition_on_at_most_one_subtask(self) -> None:
        self._fail_on(check_single_holder(self.source.offsets))

    @invariant()
    def emitted_offsets_are_exactly_the_prefix(self) -> None:
        """No gap, no duplicate, no regression: emitted == start .. next-1 for every partition (RESTORE-003)."""
        self._fail_on(check_emitted_prefix(self.emitted, self._offsets(), self.origins))


def fresh_all_in(adapter: Any, n: int, startup: int, isolation: Isolation = Isolation.READ_UNCOMMITTED) -> Any:
    """A fresh source job of every topic at parallelism ``n``, its calls guarded."""
    config = SourceConfig(
        subscription=SUBSCRIPTIONS["all-in"],
        parallelism=n,
        initial_offset=startup,
        keep_unsubscribed=False,
        isolation=isolation,
    )
    return Guarded(adapter.source(config), "source", adapter.name)


def restored_all_in(
    adapter: Any, state: Any, m: int, metadata: Any, startup: int, isolation: Isolation = Isolation.READ_UNCOMMITTED
) -> Any:
    """That job restored from ``state`` at parallelism ``m``, its calls guarded."""
    config = RestoreConfig(
        checkpoint=state,
        parallelism=m,
        subscription=SUBSCRIPTIONS["all-in"],
        metadata=metadata,
        keep_unsubscribed=False,
        initial_offset=startup,
        isolation=isolation,
    )
    return Guarded(adapter.restore_source(config), "source", adapter.name)


@requirement(
    "RESTORE-001",
    "RESTORE-002",
    "RESTORE-003",
    "RESTORE-004",
    "RESTORE-005",
    "RESTORE-006",
    "RESTORE-007",
    "DISC-005",
    "ASSIGN-007",
    capability="source-state",
)
def test_required_RESTORE_001_to_007_source_state_machine(adapter: Any, record_property: Any) -> None:
    """The interleavings the run reached are recorded as metrics (``source_mix_*``)."""
    mix = InterleavingMix(INTERLEAVINGS)
    try:
        run_machine(type("SourceMachine", (SourceMachine,), {"mix": mix}), adapter)
    finally:
        mix.record(record_property, "source_mix")


@requirement("DISC-005", capability="partition-growth")
@given(st.just(LATEST) | st.integers(0, 3))
@example(startup=LATEST)
@example(startup=1)
def test_required_DISC_005_startup_mode_only_for_the_first_discovery(adapter: Any, startup: int) -> None:
    """The startup mode for the first discovery's partitions (LATEST resolved then to their end, a
    specific offset as given, as Flink's ``OffsetsInitializer.offsets``); EARLIEST for later ones."""
    log = KafkaModel()
    log.create_topic("a", 1)
    for i in range(3):
        log.produce(TopicPartition("a", 0), None, f"a-0@{i}".encode())
    source = Guarded(
        adapter.source(
            SourceConfig(
                subscription=Subscription.regex(".*"), parallelism=2, initial_offset=startup, keep_unsubscribed=False
            )
        ),
        "source",
        adapter.name,
    )
    source.discover(log.list_topics(), log)
    log.produce(TopicPartition("a", 0), None, b"after the first discovery")
    log.create_partitions("a", 2)
    log.create_topic("b", 1)
    source.discover(log.list_topics(), log)
    offsets = {tp: off for o in source.offsets for tp, off in o.items()}
    violations = check_startup_offsets(offsets, {TopicPartition("a", 0): 3 if startup == LATEST else startup})
    violations += check_new_partition_start(offsets, [TopicPartition("a", 1), TopicPartition("b", 0)], "DISC-005")
    fail_on(violations)


@requirement("DISC-005", "RESTORE-003", "ASSIGN-007", capability="source-state")
@given(st.integers(1, 4), st.integers(1, 3), st.integers(1, 3), st.integers(1, 4))
def test_required_DISC_005_latest_checkpointed_before_the_first_read_loses_nothing(
    adapter: Any, partitions: int, n: int, m: int, produced: int
) -> None:
    """Start at LATEST, discover, checkpoint before any read, produce, restore, read: every record
    produced after discovery is read (FLINK-28303: a checkpoint that stores LATEST loses them)."""
    log = _small_log(partitions)
    source = fresh_all_in(adapter, n, LATEST)
    source.discover(log.list_topics(), log)
    found = [TopicPartition(t, p) for t, ids in log.list_topics().items() for p in ids]
    ends = {tp: log.latest_offset(tp, Isolation.READ_UNCOMMITTED) for tp in sorted(found)}
    offsets = {tp: off for o in source.offsets for tp, off in o.items()}
    state = source.snapshot(1, log, GROUP)
    source.notify_checkpoint_complete(1, log, GROUP)
    for tp in sorted(ends):
        for i in range(produced):
            log.produce(tp, None, f"{tp}@after-checkpoint-{i}".encode())
    metadata = dict(log.list_topics())
    restored = restored_all_in(adapter, state, m, metadata, LATEST)
    resumed = {tp: off for o in restored.offsets for tp, off in o.items()}
    now = {tp: log.latest_offset(tp, Isolation.READ_UNCOMMITTED) for tp in ends}
    fail_on(check_restored_latest(resumed, ends, now))
    fail_on(
        check_restore(offsets, restored.offsets, SUBSCRIPTIONS["all-in"], False, metadata, adapter.restore_variant, m)
    )
    read: dict[TopicPartition, list[int]] = {tp: [] for tp in ends}
    for tp in sorted(ends):
        while records := restored.poll(log, tp, 3):
            read[tp].extend(r.offset for r in records)
    fail_on(check_read_since_discovery(read, ends, now))


@requirement("DISC-005", "DISC-007", "DISC-010", "RESTORE-013", capability="source-state")
def test_required_DISC_005_007_a_source_started_at_latest_before_its_topics_exist_reads_what_is_written_after(
    adapter: Any, record_property: Any
) -> None:
    """A fresh source at LATEST on a pattern that matches none of the cluster's topics (near misses of the name to
    come): under the adapter's ``discovery_of_zero`` its first discovery fails (naming the pattern: DISC-010), or
    finds nothing (DISC-007). Then the matching topics are created and written (every input class), discovery finds
    them, and, drawn, a checkpoint is taken and restored before any read; more input arrives and it reads to the end.
    The topics it found after its first discovery start at EARLIEST (DISC-005), so every record written since their
    creation is read once (RESTORE-013). The classes drawn are the run's ``source_start_*`` metrics."""
    policy = adapter.discovery_of_zero
    mix = InterleavingMix(start_classes((policy,)), kind="start")

    @given(
        start=late_starts((policy,)),
        before=input_writes(LATE_PARTITIONS),
        after=input_writes(LATE_PARTITIONS),
        n=st.integers(1, 3),
        m=st.integers(1, 3),
        restore_before_read=st.booleans(),
    )
    def scenario(
        start: LateStart, before: list[InputWrite], after: list[InputWrite], n: int, m: int, restore_before_read: bool
    ) -> None:
        for name in drawn_classes(start):
            mix.step(name)
        _start_before_topics_exist(adapter, start, before, after, n, m if restore_before_read else None)

    try:
        scenario()
    finally:
        mix.record(record_property, "source_start")


LATE_PARTITIONS = 3
"""The most partitions a topic created after start has; its writes land on the partitions it has."""


def _start_before_topics_exist(
    adapter: Any, start: LateStart, before: list[InputWrite], after: list[InputWrite], n: int, restore_at: int | None
) -> None:
    log = KafkaModel()
    for topic in start.at_start:
        log.create_topic(topic, 1)
        log.produce(TopicPartition(topic, 0), None, b"a near miss: never read")
    subscription = Subscription.regex(start.pattern)
    config = SourceConfig(subscription=subscription, parallelism=n, initial_offset=LATEST, keep_unsubscribed=False)
    source = Guarded(adapter.source(config), "source", adapter.name)
    found: Sequence[TopicPartition] = []
    error: Exception | None = None
    try:
        found = list(source.discover(log.list_topics(), log))
    except Exception as exc:  # the adapter's own error, which the guard wraps: it must name the pattern
        error = exc.__cause__ if isinstance(exc.__cause__, Exception) else exc
    fail_on(check_zero_partitions(start.policy, start.pattern, found, error))
    if error is not None:
        return
    for topic, partitions in start.created.items():
        log.create_topic(topic, partitions)
        write_input(log, topic, _on_partitions(before, partitions), f"{topic}-before")
    source.discover(log.list_topics(), log)
    created = [TopicPartition(t, p) for t, k in start.created.items() for p in range(k)]
    found_later = {tp: off for offsets in source.offsets for tp, off in offsets.items()}
    fail_on(check_new_partition_start(found_later, created, "DISC-005"))
    if restore_at is not None:
        state = source.snapshot(1, log, GROUP)
        source.notify_checkpoint_complete(1, log, GROUP)
        metadata = dict(log.list_topics())
        restored = RestoreConfig(
            checkpoint=state,
            parallelism=restore_at,
            subscription=subscription,
            metadata=metadata,
            keep_unsubscribed=False,
            initial_offset=LATEST,
        )
        source = Guarded(adapter.restore_source(restored), "source", adapter.name)
    for topic, partitions in start.created.items():
        write_input(log, topic, _on_partitions(after, partitions), f"{topic}-after")
    source.discover(log.list_topics(), log)
    emitted: dict[TopicPartition, list[int]] = {tp: [] for tp in created}
    for tp in sorted({tp for offsets in source.offsets for tp in offsets}):
        while records := source.poll(log, tp, 3):
            emitted.setdefault(tp, []).extend(r.offset for r in records)
    views = {tp: log_view(log, tp, Isolation.READ_UNCOMMITTED) for tp in created}
    fail_on(check_records_read(views, emitted, "since the topics were created after a start at LATEST"))


def _on_partitions(writes: list[InputWrite], partitions: int) -> list[InputWrite]:
    """``writes`` onto a topic of ``partitions`` partitions: each lands on those of its partitions that exist."""
    return [replace(w, partitions=tuple(sorted({p % partitions for p in w.partitions}))) for w in writes]


def _read_everything(source: Any, log: KafkaModel) -> dict[TopicPartition, int]:
    """Poll every partition of ``source`` until it returns nothing; its offsets after."""
    for tp in sorted(tp for offsets in source.offsets for tp in offsets):
        while source.poll(log, tp, 5):
            pass
    return {tp: off for offsets in source.offsets for tp, off in offsets.items()}


def _small_log(partitions: int) -> KafkaModel:
    log = KafkaModel()
    for topic in ("in-a", "in-b"):
        log.create_topic(topic, partitions)
        for p in range(partitions):
            for i in range(p % 3):
                log.produce(TopicPartition(topic, p), None, f"{topic}-{p}@{i}".encode())
    return log


@requirement("RESTORE-002", "RESTORE-003", "ASSIGN-007", capability="source-state")
@given(st.integers(1, 12), st.integers(257, 320))
def test_required_RESTORE_002_003_restore_onto_subtasks_above_256(adapter: Any, partitions: int, m: int) -> None:
    """Subtask indexes past CPython's small-int cache: an owner compared with ``is`` drops their state."""
    log = _small_log(partitions)
    source = fresh_all_in(adapter, 1, EARLIEST)
    source.discover(log.list_topics(), log)
    offsets = _read_everything(source, log)
    state = source.snapshot(1, log, GROUP)
    metadata = dict(log.list_topics())
    restored = restored_all_in(adapter, state, m, metadata, EARLIEST)
    fail_on(
        check_restore(offsets, restored.offsets, SUBSCRIPTIONS["all-in"], False, metadata, adapter.restore_variant, m)
    )


def _restore_and_judge_shares(adapter: Any, partitions: int, n: int, m: int) -> None:
    """Read everything at parallelism ``n``, checkpoint, restore at ``m``: every partition on one subtask
    with its offset (``check_restore``) and, for split state, the shares Flink's repartitioner gives."""
    log = _small_log(partitions)
    source = fresh_all_in(adapter, n, EARLIEST)
    source.discover(log.list_topics(), log)
    offsets = _read_everything(source, log)
    held = [dict(o) for o in source.offsets]
    state = source.snapshot(1, log, GROUP)
    metadata = dict(log.list_topics())
    restored = restored_all_in(adapter, state, m, metadata, EARLIEST)
    variant = adapter.restore_variant
    violations = check_restore(offsets, restored.offsets, SUBSCRIPTIONS["all-in"], False, metadata, variant, m)
    if not violations and variant is RestoreVariant.SPLIT_REDISTRIBUTION:
        violations = check_split_redistribution(held, restored.offsets)
    fail_on(violations)


@requirement("RESTORE-002", "RESTORE-003", "ASSIGN-007", capability="source-state")
@given(st.integers(1, 5), st.integers(2, 4) | st.integers(257, 300))
@example(partitions=2, n=4)  # subtasks hold 1, 0, 1 and 2 entries: not the even chunks a re-cut would give
@example(partitions=3, n=300)  # past CPython's small-int cache: a parallelism compared with 'is' re-cuts
def test_required_RESTORE_002_003_restore_at_an_unchanged_parallelism_keeps_each_subtask_its_own(
    adapter: Any, partitions: int, n: int
) -> None:
    """Restored at the parallelism it ran with, every subtask gets back what it held: Flink's
    repartitioner leaves each list-state subtask its own entries, union state filters by the assigner."""
    _restore_and_judge_shares(adapter, partitions, n, n)


@requirement("RESTORE-002", "RESTORE-003", "ASSIGN-007", capability="rescale")
@given(st.integers(1, 5), st.integers(1, 4), st.integers(1, 5))
@example(partitions=5, n=1, m=3)  # 10 entries onto 3 subtasks: chunks of 4, 3 and 3, no other cut
def test_required_RESTORE_002_003_a_rescale_cuts_split_state_into_even_chunks(
    adapter: Any, partitions: int, n: int, m: int
) -> None:
    """Restored at another parallelism, split state is cut as Flink's repartitioner cuts it: contiguous
    chunks whose sizes differ by at most one, the longer ones first; union state by the assigner."""
    assume(m != n)
    _restore_and_judge_shares(adapter, partitions, n, m)


@requirement("DISC-008", capability="source-state")
@given(st.integers(1, 3), st.integers(1, 3))
def test_required_DISC_008_a_deleted_topic_stops_nothing_else_and_keeps_its_state(
    adapter: Any, partitions: int, n: int
) -> None:
    """A topic the pattern matches is deleted while the source runs: discovery goes on, the other topic's
    partitions are still read, and the deleted ones keep their offsets (Flink's enumerator only logs
    removed partitions; their splits stay, so nothing re-reads them if the topic comes back)."""
    log = _small_log(partitions)
    source = fresh_all_in(adapter, n, EARLIEST)
    source.discover(log.list_topics(), log)
    before = _read_everything(source, log)
    log.delete_topic("in-b")
    for _ in range(2):
        source.discover(log.list_topics(), log)
    for p in range(partitions):
        log.produce(TopicPartition("in-a", p), None, b"after in-b was deleted")
    for tp in sorted(tp for offsets in source.offsets for tp in offsets if tp.topic == "in-a"):
        while source.poll(log, tp, 5):
            pass
    now = {tp: off for offsets in source.offsets for tp, off in offsets.items()}
    fail_on(check_topic_deleted(before, now, "in-b", produced=1))


@requirement("RESTORE-007", capability="source-state")
@given(st.integers(1, 4), st.integers(1, 3))
def test_required_RESTORE_007_notifications_in_order_commit_each_checkpoint(
    adapter: Any, partitions: int, n: int
) -> None:
    """Two checkpoints pending, then notified oldest first: the group ends at the newer one's offsets."""
    log = _small_log(partitions)
    source = fresh_all_in(adapter, n, EARLIEST)
    source.discover(log.list_topics(), log)
    first = _read_everything(source, log)
    source.snapshot(1, log, GROUP)
    for tp in sorted(first):
        log.produce(tp, None, b"after checkpoint 1")
    second = _read_everything(source, log)
    source.snapshot(2, log, GROUP)
    source.notify_checkpoint_complete(1, log, GROUP)
    violations = check_offset_commits(log.committed(GROUP), first, "after notify 1")
    source.notify_checkpoint_complete(2, log, GROUP)
    fail_on(violations + check_offset_commits(log.committed(GROUP), second, "after notify 2"))


@requirement("RESTORE-004", capability="source-state")
@given(st.integers(1, 3), st.integers(1, 3), st.integers(1, 4), st.booleans())
def test_required_RESTORE_004_partitions_new_at_a_restore_start_at_earliest_whatever_the_startup_mode(
    adapter: Any, partitions: int, more: int, m: int, new_topic: bool
) -> None:
    """A job started at LATEST checkpoints; partitions (or a matching topic) appear while it is down: the
    restored job must read them from their first record, not from the startup mode's LATEST."""
    log = _small_log(partitions)
    source = fresh_all_in(adapter, 1, LATEST)
    source.discover(log.list_topics(), log)
    state = source.snapshot(1, log, GROUP)
    before = {tp for offsets in source.offsets for tp in offsets}
    if new_topic:
        log.create_topic("in-new-x", more)
    else:
        log.create_partitions("in-a", partitions + more)
    restored = restored_all_in(adapter, state, m, dict(log.list_topics()), LATEST)
    offsets = {tp: off for o in restored.offsets for tp, off in o.items()}
    # the restore's own discovery found them: each must be there, at EARLIEST, before any later discovery
    subscribed = SUBSCRIPTIONS["all-in"]
    found = {TopicPartition(t, p) for t, ids in log.list_topics().items() if subscribed.matches(t) for p in ids}
    fail_on(check_new_partition_start(offsets, found - before, "RESTORE-004"))


TXN_TOPIC = "in-txn"
"""The transactional input's topic: ``SUBSCRIPTIONS["all-in"]`` reads it."""
TXN_PARTITIONS = 2
GAPS_BEFORE_A_RECORD = [
    InputWrite("aborted-transaction", (0, 1), 2),
    InputWrite("committed-transaction", (0,), 2),
    InputWrite("plain", (0, 1), 1),
    InputWrite("tombstone", (1,), 1),
    InputWrite("empty-value", (0,), 1),
]
"""Aborted records and two markers before committed records (a position that is not an offset shows), and a
tombstone and an empty value after them."""


@requirement("RESTORE-013", "RESTORE-014", "ASSIGN-007", capability="source-state")
def test_required_RESTORE_013_014_source_over_transactional_input_restored_at_a_gap(
    adapter: Any, record_property: Any
) -> None:
    """A source (read_uncommitted, Kafka's default) on drawn input (``INPUT_CLASSES``: plain records, tombstones,
    empty values, committed and aborted transactions, so control markers and aborted records between the records)
    polls a drawn number of times, checkpoints wherever that left it (often inside a gap), has the checkpoint's
    offsets committed, reads on, more input arrives, and it is restored from the checkpoint at a drawn parallelism
    and reads to the end. Downstream rolls back to the checkpoint, as exactly-once state does. Its emitted records
    must be those its isolation reads, each once, with the values written (RESTORE-014); its checkpointed and
    committed positions must lie in the gap after its last emitted record (RESTORE-013). The input classes drawn
    are the run's ``source_input_*`` metrics."""
    transactional_input_scenario(adapter, record_property, Isolation.READ_UNCOMMITTED)


@requirement("RESTORE-013", "RESTORE-014", "ASSIGN-007", capability="read-committed-source")
def test_required_RESTORE_013_014_read_committed_source_over_transactional_input_restored_at_a_gap(
    adapter: Any, record_property: Any
) -> None:
    """The same at read_committed, asked through ``SourceConfig.isolation`` and ``RestoreConfig.isolation``: no
    aborted record is emitted, and the positions still lie in the gaps. Only an adapter that declares it honours
    the field is judged on it (an adapter written before the field existed reads as it always did)."""
    transactional_input_scenario(adapter, record_property, Isolation.READ_COMMITTED)


def transactional_input_scenario(adapter: Any, record_property: Any, isolation: Isolation) -> None:
    """Draws the input, the polls and both parallelisms of ``_read_across_a_restore`` at ``isolation``, recording
    the input classes drawn."""
    mix = InterleavingMix(INPUT_CLASSES, kind="input")

    @given(
        before=input_writes(TXN_PARTITIONS),
        after=input_writes(TXN_PARTITIONS),
        polls=st.integers(0, 12),
        limit=st.integers(1, 3),
        n=st.integers(1, 3),
        m=st.integers(1, 3),
    )
    @example(before=GAPS_BEFORE_A_RECORD, after=GAPS_BEFORE_A_RECORD, polls=3, limit=1, n=1, m=2)
    def scenario(before: list[InputWrite], after: list[InputWrite], polls: int, limit: int, n: int, m: int) -> None:
        for write in [*before, *after]:
            mix.step(write.kind)
        _read_across_a_restore(adapter, isolation, before, after, polls, limit, n, m)

    try:
        scenario()
    finally:
        mix.record(record_property, "source_input")


def _read_across_a_restore(
    adapter: Any,
    isolation: Isolation,
    before: list[InputWrite],
    after: list[InputWrite],
    polls: int,
    limit: int,
    n: int,
    m: int,
) -> None:
    log = KafkaModel()
    log.create_topic(TXN_TOPIC, TXN_PARTITIONS)
    write_input(log, TXN_TOPIC, before, "before")
    source = fresh_all_in(adapter, n, EARLIEST, isolation)
    source.discover(log.list_topics(), log)
    tps = [TopicPartition(TXN_TOPIC, p) for p in range(TXN_PARTITIONS)]
    emitted: dict[TopicPartition, list[int]] = {tp: [] for tp in tps}
    values: list[tuple[TopicPartition, int, bytes | None]] = []

    def emit(records: Sequence[Record]) -> None:
        for r in records:
            emitted[r.topic_partition].append(r.offset)
            values.append((r.topic_partition, r.offset, r.value))

    for i in range(polls):
        emit(source.poll(log, tps[i % TXN_PARTITIONS], limit))
    views = {tp: log_view(log, tp, isolation) for tp in tps}
    state = source.snapshot(1, log, GROUP)
    checkpointed = {tp: off for offsets in source.offsets for tp, off in offsets.items()}
    source.notify_checkpoint_complete(1, log, GROUP)
    resolved = {tp: 0 if is_sentinel(off) else off for tp, off in checkpointed.items()}
    violations = check_records_read(views, emitted, "before checkpoint 1", read_to=resolved)
    violations += check_positions_in_gaps(views, emitted, checkpointed, "in checkpoint 1")
    violations += check_positions_in_gaps(views, emitted, log.committed(GROUP), "committed for checkpoint 1")
    fail_on(violations)
    for tp in tps:  # read on past the checkpoint: a crash takes this back downstream
        source.poll(log, tp, limit)
    write_input(log, TXN_TOPIC, after, "after")
    restored = restored_all_in(adapter, state, m, dict(log.list_topics()), EARLIEST, isolation)
    fail_on(check_single_holder(restored.offsets))  # a partition's position is its one holder's
    for tp in tps:
        while records := restored.poll(log, tp, limit):
            emit(records)
    views = {tp: log_view(log, tp, isolation) for tp in tps}
    ended = {tp: off for offsets in restored.offsets for tp, off in offsets.items()}
    written = {tp: written_values(log, tp) for tp in tps}
    fail_on(
        check_records_read(views, emitted, "after a restore from checkpoint 1")
        + check_positions_in_gaps(views, emitted, ended, "after reading to the end")
        + check_values_as_written(written, values, "before or after the restore")
    )


@requirement("RESTORE-018", "RESTORE-021", capability="group-offsets-start")
@given(
    st.lists(st.none() | st.integers(0, 5), min_size=1, max_size=4),
    st.sampled_from([None, EARLIEST, LATEST]),
)
@example(committed=[3, None], fallback=None)
@example(committed=[3, None], fallback=EARLIEST)
@example(committed=[None, 2], fallback=LATEST)
def test_required_RESTORE_018_a_start_from_group_offsets_without_one_fails_named_or_starts_at_the_fallback(
    adapter: Any, committed: list[int | None], fallback: int | None
) -> None:
    """A fresh source told to start from its group's committed offsets (Flink's ``committedOffsets(strategy)``),
    the group holding offsets for some partitions only: each of those starts at its offset, each other one at the
    configured fallback, or, with none, the start fails naming it; never at a start nobody asked for."""
    partitions = tuple(TopicPartition("a", p) for p in range(len(committed)))
    held = {tp: offset for tp, offset in zip(partitions, committed, strict=True) if offset is not None}
    config = GroupStartConfig(group=GROUP, partitions=partitions, committed=held, fallback=fallback)
    try:
        started, error = dict(adapter.group_start(config)), None
    except AdapterError as failed:  # the start failed: the adapter's own message is what the user reads
        started, error = None, str(failed.__cause__ or failed)
    fail_on(check_group_start(partitions, held, fallback, started, error))
