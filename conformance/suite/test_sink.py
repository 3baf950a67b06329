"""COMMIT-001..010, COMMIT-012, COMMIT-014 and later: the adapter's exactly-once sink, judged over a recorded history.

A Hypothesis state machine writes, takes barriers (their ids sometimes skipping), completes checkpoints
(sometimes losing the notification, sometimes checkpoint N while N+1 is pending, sometimes after declining a
pre-committed one), delivers notifications late or again,
crashes and recovers at another parallelism (sometimes leaving a zombie), and injects an external
abort of a pre-committed transaction. A notification of N commits every pending transaction up to
N and none after it, so the history says exactly which records may be visible. Every step is
recorded as a Jepsen-style history; after every step a ``read_committed`` read is recorded and the
whole history is checked by ``check_sink_history``.
"""

from __future__ import annotations

from functools import partial
from typing import Any

import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
)

from ...reference_impl.commit import NamingStrategy
from ...reference_impl.configs import RecoveryConfig, SinkConfig
from ...reference_impl.kafka_model import (
    DEFAULT_TRANSACTION_TIMEOUT_MS,
    TRANSACTIONAL_ID_EXPIRATION_MS,
    KafkaModel,
)
from ...reference_impl.ports import Isolation, KafkaError
from ...reference_impl.types import TopicPartition
from ..adapter.guard import AdapterError, Guarded
from ..checks.checkers import check_pooled_ids, check_stopped_sink, fail_on
from ..checks.history import History, Observation, check_sink_history
from ..checks.sink_checkers import (
    check_distinct_ids,
    check_expired_ids_refused,
    check_foreign_transactions_kept,
    check_intervals_committed,
    check_naming_switched,
    check_old_prefix_closed,
    check_prefixes_refused,
    check_recovery_succeeded,
    check_second_recovery,
    check_timeout_outlived,
    check_timeout_surfaced,
)
from ..gate.pytest_plugin import requirement
from ..generators.strategies import InterleavingMix
from . import run_machine

TOPIC = "kconform-sink-out"
PARTITIONS = 3
PREFIX = "kconform-sink"
INTERLEAVINGS = (
    "write",
    "barrier-complete",
    "barrier-pending",
    "barrier-notification-lost",
    "complete-newest-pending",
    "complete-older-pending",
    "notify-covers-several",
    "notify-late-or-again",
    "external-abort",
    "start-over-after-abort",
    "recover",
    "recover-leaving-zombie",
    "crash-with-checkpoint-in-flight",
    "zombie-acts",
    "checkpoint-ids-skipped",
    "checkpoint-declined",
)
"""The interleaving classes the sink machine must reach (``InterleavingMix``); a step may count twice,
e.g. a completed barrier whose notification also commits an earlier, lost one."""


def observe(log: KafkaModel) -> Observation:
    committed: list[bytes] = []
    located: dict[bytes, tuple[int, int]] = {}
    stable: dict[int, int] = {}
    for p in range(PARTITIONS):
        tp = TopicPartition(TOPIC, p)
        committed += [r.value for r in log.read(tp, 0, Isolation.READ_COMMITTED, 1 << 30) if r.value is not None]
        for r in log.read(tp, 0, Isolation.READ_UNCOMMITTED, 1 << 30):
            if r.value is not None:
                located[r.value] = (p, r.offset)
        stable[p] = log.latest_offset(tp, Isolation.READ_COMMITTED)
    return Observation(tuple(committed), located, stable)


# Preconditions are named functions, not lambdas (tests/test_state_machines.py says why).
def unbroken(machine: SinkMachine) -> bool:
    return not machine.broken


def checkpoint_pending(machine: SinkMachine) -> bool:
    return bool(machine.pending) and not machine.broken


def checkpoint_completed_here(machine: SinkMachine) -> bool:
    return bool(machine.completed_here) and not machine.broken


def transaction_to_abort(machine: SinkMachine) -> bool:
    return bool(machine.completed or machine.pending) and not machine.broken


def checkpoint_completed(machine: SinkMachine) -> bool:
    return machine.completed is not None and not machine.broken


def zombie_alive(machine: SinkMachine) -> bool:
    return machine.zombie is not None


class SinkMachine(RuleBasedStateMachine):
    """One sink and its recoveries; the history is the evidence of every verdict."""

    adapter: Any
    mix = InterleavingMix(INTERLEAVINGS)

    def __init__(self) -> None:
        super().__init__()
        self.incarnation = 0
        self.seq = 0
        self.next_checkpoint = 1
        self._clean_slate()

    def _clean_slate(self) -> None:
        """A new topic, log and history: a job whose checkpoint was destroyed starts over from nothing."""
        self.log = KafkaModel()
        self.log.create_topic(TOPIC, PARTITIONS)
        self.history = History()
        self.pending: list[tuple[int, Any]] = []
        self.completed: tuple[int, Any] | None = None
        self.completed_here: list[int] = []
        """Checkpoints this attempt completed: the ones it can be notified of, late or again."""
        self.uncommitted: list[int] = []
        """Barriers of this attempt that no notification has covered yet."""
        self.zombie: tuple[str, Any] | None = None
        self.broken = False
        self.faulted = False

    @property
    def process(self) -> str:
        return f"attempt-{self.incarnation}"

    def _guard(self, sink: Any) -> Any:
        return Guarded(sink, "sink", self.adapter.name)

    def _do(self, f: str, value: Any, action: Any, process: str | None = None) -> Any:
        """Invoke, run, and record ok / fail; a Kafka error is a definite failure of that operation."""
        who = process or self.process
        self.history.invoke(who, f, value)
        try:
            action()
        except KafkaError as exc:
            self.history.complete(who, "fail", f, value)
            return exc
        self.history.complete(who, "ok", f, value)
        return None

    @initialize(n=st.integers(1, 3))
    def start(self, n: int) -> None:
        self.parallelism = n
        self.sink = self._guard(self.adapter.sink(SinkConfig(log=self.log, prefix=PREFIX, parallelism=n)))
        self.sink_process = self.process
        self.sink.start()

    @precondition(unbroken)
    @rule(records=st.lists(st.tuples(st.integers(0, 7), st.integers(0, PARTITIONS - 1)), min_size=1, max_size=4))
    def write(self, records: list[tuple[int, int]]) -> None:
        """A few records, each to some subtask and partition."""
        self.mix.step("write")
        self._write(records)

    def _write(self, records: list[tuple[int, int]]) -> None:
        for subtask, partition in records:
            self.seq += 1
            value = f"r{self.seq}".encode()
            writer = subtask % self.parallelism
            self._do("write", (value, writer), partial(self.sink.write, writer, TOPIC, partition, None, value))

    @precondition(unbroken)
    @rule(
        skip=st.integers(0, 2),
        outcome=st.sampled_from(["complete", "pending", "notification-lost", "complete-previous"]),
    )
    def barrier(self, skip: int, outcome: str) -> None:
        """Barrier N (ids may skip, as Flink's do after a declined checkpoint); it may complete at once,
        or stay pending while the checkpoint before it completes (N-1 completes while N is pending).

        Records keep flowing: every writer writes one record just before the barrier.
        """
        previous = outcome == "complete-previous" and bool(self.pending)
        self.mix.step("complete-older-pending" if previous else f"barrier-{outcome.replace('-previous', '')}")
        if skip:
            self.mix.step("checkpoint-ids-skipped")
        self._write([(subtask, subtask % PARTITIONS) for subtask in range(self.parallelism)])
        cid = self.next_checkpoint + skip
        self.next_checkpoint = cid + 1
        state: list[Any] = []
        if self._do("barrier", cid, lambda: state.append(self.sink.checkpoint(cid))) is None:
            self.pending.append((cid, state[0]))
            self.uncommitted.append(cid)
            if previous:
                self._complete(len(self.pending) - 2, notify=True)
            elif outcome != "pending":
                self._complete(len(self.pending) - 1, notify=outcome != "notification-lost")

    @precondition(checkpoint_pending)
    @rule(data=st.data(), notify=st.booleans())
    def complete_pending(self, data: st.DataObject, notify: bool) -> None:
        """A pending checkpoint completes late, perhaps while newer ones stay pending; its notification may
        be lost (COMMIT-009) and commits every pending transaction up to it, none after it (COMMIT-002)."""
        index = data.draw(st.integers(0, len(self.pending) - 1), label="pending checkpoint")
        self.mix.step("complete-newest-pending" if index == len(self.pending) - 1 else "complete-older-pending")
        self._complete(index, notify)

    @precondition(checkpoint_pending)
    @rule(data=st.data())
    def decline_then_complete_the_next(self, data: st.DataObject) -> None:
        """A pending checkpoint is declined after its barrier pre-committed the transactions (a subtask could not
        snapshot, the checkpoint timed out): it never completes, and its id is never used again. Records flow
        on; the next barrier's checkpoint completes, and its notification must commit the declined checkpoint's
        transactions with its own (COMMIT-008's ``lost-write`` if they stay open or are aborted). Drawn as one
        step, so every example can reach it."""
        index = data.draw(st.integers(0, len(self.pending) - 1), label="declined checkpoint")
        self.mix.step("checkpoint-declined")
        cid, _ = self.pending.pop(index)
        self.history.invoke("coordinator", "decline", (cid, self.process))
        self.history.complete("coordinator", "ok", "decline", (cid, self.process))
        self.barrier(0, "complete")

    @precondition(checkpoint_completed_here)
    @rule(data=st.data())
    def late_notification(self, data: st.DataObject) -> None:
        """A completed checkpoint's notification arrives late, perhaps after a newer one's, or again."""
        self.mix.step("notify-late-or-again")
        self._notify(data.draw(st.sampled_from(self.completed_here), label="checkpoint"))

    def _complete(self, index: int, notify: bool) -> None:
        """Checkpoint ``pending[index]`` completes: it subsumes the older pending ones, the newer stay pending."""
        self.completed = self.pending[index]
        self.pending = self.pending[index + 1 :]
        cid = self.completed[0]
        self.completed_here.append(cid)
        self.history.invoke("coordinator", "complete", (cid, self.process))
        self.history.complete("coordinator", "ok", "complete", (cid, self.process))
        if notify:
            self._notify(cid)

    def _notify(self, cid: int) -> None:
        if len([c for c in self.uncommitted if c <= cid]) > 1:
            self.mix.step("notify-covers-several")
        self.uncommitted = [c for c in self.uncommitted if c > cid]
        if self._do("notify", cid, lambda: self.sink.notify_checkpoint_complete(cid)) is not None:
            self.broken = True

    @precondition(transaction_to_abort)
    @rule(then=st.sampled_from(["complete-pending", "recover"]), n=st.integers(1, 4))
    def external_abort(self, then: str, n: int) -> None:
        """A misconfigured twin job initialises every transactional id of the sink; then the sink commits or recovers.

        Either step must fail loudly: the transactions it would commit are gone (COMMIT-007).
        """
        self.mix.step("external-abort")
        self.faulted = True
        self.history.invoke("nemesis", "fault", "init every id of the sink")
        for subtask in range(8):
            for suffix in range(self.next_checkpoint + 2):
                for tid in (f"{PREFIX}-{subtask}-{suffix}", f"{PREFIX}-{subtask}-p{suffix}"):
                    self.log.init_producer(tid)
        self.history.complete("nemesis", "ok", "fault", "init every id of the sink")
        if then == "complete-pending" and self.pending:
            self._complete(len(self.pending) - 1, notify=True)
        else:
            self._recover(n, keep_zombie=False)

    @rule(n=st.integers(1, 4), keep_zombie=st.booleans())
    def crash_and_recover(self, n: int, keep_zombie: bool) -> None:
        """Crash at any point; restore the last completed checkpoint at parallelism n.

        With ``keep_zombie`` the crashed attempt's sink keeps running (a partitioned task manager);
        it only counts as a zombie once a newer attempt has recovered. A job that surfaced an external
        abort cannot recover from its checkpoint (its transactions are gone): it starts over instead of
        failing every step of the rest of the example.
        """
        if self.broken and self.faulted:
            self.mix.step("start-over-after-abort")
            self._clean_slate()
            self.incarnation += 1
            self.start(n)
            return
        self.mix.step("recover-leaving-zombie" if keep_zombie else "recover")
        self._recover(n, keep_zombie)

    @precondition(checkpoint_completed)
    @rule(records=st.lists(st.tuples(st.integers(0, 7), st.integers(0, PARTITIONS - 1)), min_size=1, max_size=3))
    def crash_with_checkpoint_in_flight(self, records: list[tuple[int, int]]) -> None:
        """The commonest crash of a two-phase sink: after a checkpoint completed, the next barrier is taken and
        records flow into the transactions begun then; the job dies before that checkpoint completes and
        recovers from the one before (COMMIT-003/010: what that checkpoint names must still be resumable, what
        came after it must never become visible). Drawn as one step, so every example can reach it."""
        self.mix.step("crash-with-checkpoint-in-flight")
        self.barrier(0, "pending")
        self._write(records)
        self._recover(self.parallelism, keep_zombie=False)

    def _recover(self, n: int, keep_zombie: bool) -> None:
        survivor = (self.sink_process, self.sink) if keep_zombie and self.sink is not None else None
        self.zombie = None
        self.incarnation += 1
        self.parallelism = n
        self.pending = []
        self.completed_here = []
        self.uncommitted = []
        cid, state = self.completed if self.completed else (0, self.adapter.initial_sink_checkpoint(n))
        self._read()  # what was visible before the recovery, so the checker can tell what the recovery made visible
        watermarks = {
            p: self.log.latest_offset(TopicPartition(TOPIC, p), Isolation.READ_UNCOMMITTED) for p in range(PARTITIONS)
        }
        self.history.invoke(self.process, "recover", (watermarks, n))
        try:
            self.sink = self._guard(
                self.adapter.recover_sink(RecoveryConfig(log=self.log, prefix=PREFIX, parallelism=n, checkpoint=state))
            )
        except KafkaError as error:
            self.history.complete(self.process, "fail", "recover", cid)
            self.sink = None
            self.broken = True  # surfaced: the run stops here, as a real job would fail
            fail_on(
                check_recovery_succeeded(cid, str(error), self.faulted),
                detail="\nhistory (last operations):\n" + self.history.render(),
            )
            return
        self.history.complete(self.process, "ok", "recover", cid)
        self.sink_process = self.process
        self.zombie = survivor
        self.broken = False

    @precondition(zombie_alive)
    @rule(partition=st.integers(0, PARTITIONS - 1))
    def zombie_writes_and_commits(self, partition: int) -> None:
        """The zombie of an earlier attempt keeps going (COMMIT-006)."""
        assert self.zombie is not None
        self.mix.step("zombie-acts")
        process, zombie = self.zombie
        self.zombie = None
        self.seq += 1
        value = f"z{self.seq}".encode()
        if self._do("write", (value, 0), lambda: zombie.write(0, TOPIC, partition, None, value), process) is None:
            self._do("barrier", 10**9, lambda: zombie.checkpoint(10**9), process)
            self._do("notify", 10**9, lambda: zombie.notify_checkpoint_complete(10**9), process)

    def _read(self) -> None:
        self.history.invoke("reader", "read")
        self.history.complete("reader", "ok", "read", observe(self.log))

    @invariant()
    def history_has_no_anomaly(self) -> None:
        self._read()
        violations = check_sink_history(self.history.ops)
        fail_on(violations, detail="\nhistory (last operations):\n" + self.history.render())


@requirement(
    "COMMIT-001",
    "COMMIT-002",
    "COMMIT-003",
    "COMMIT-004",
    "COMMIT-006",
    "COMMIT-007",
    "COMMIT-008",
    "COMMIT-009",
    "COMMIT-010",
    "COMMIT-012",
    capability="exactly-once-sink",
)
def test_required_COMMIT_001_to_012_sink_state_machine(adapter: Any, record_property: Any) -> None:
    """The interleavings the run reached are recorded as metrics (``sink_mix_*``)."""
    mix = InterleavingMix(INTERLEAVINGS)
    try:
        run_machine(type("SinkMachine", (SinkMachine,), {"mix": mix}), adapter)
    finally:
        mix.record(record_property, "sink_mix")


@requirement("COMMIT-005", capability="exactly-once-sink")
def test_required_COMMIT_005_two_sinks_and_their_subtasks_never_share_an_id(adapter: Any) -> None:
    """Two sinks on one log, prefixes chosen to collide under naive concatenation; both must deliver."""
    log = KafkaModel()
    log.create_topic(TOPIC, PARTITIONS)
    sinks = [
        Guarded(adapter.sink(SinkConfig(log=log, prefix=prefix, parallelism=4)), "sink", adapter.name)
        for prefix in ("job", "job-1")
    ]
    for sink in sinks:
        sink.start()
    expected = set()
    fenced = None
    try:
        for i, sink in enumerate(sinks):
            for subtask in range(4):
                value = f"s{i}-{subtask}".encode()
                sink.write(subtask, TOPIC, 0, None, value)
                expected.add(value)
        for sink in sinks:
            sink.checkpoint(1)
        for sink in sinks:
            sink.notify_checkpoint_complete(1)
    except KafkaError as exc:
        fenced = repr(exc)
    fail_on(check_distinct_ids(expected, observe(log).committed, fenced))


@requirement("COMMIT-007", capability="exactly-once-sink")
def test_required_COMMIT_007_timeout_is_surfaced(adapter: Any) -> None:
    log = KafkaModel(transaction_timeout_ms=1000)
    log.create_topic(TOPIC, PARTITIONS)
    sink = Guarded(adapter.sink(SinkConfig(log=log, prefix=PREFIX, parallelism=1)), "sink", adapter.name)
    sink.start()
    sink.write(0, TOPIC, 0, None, b"late")
    sink.checkpoint(1)
    log.advance_clock(1001)
    raised: Exception | None = None
    try:
        sink.notify_checkpoint_complete(1)
    except (KafkaError, AdapterError) as exc:
        raised = exc
    fail_on(check_timeout_surfaced(raised))


@requirement("COMMIT-014", capability="exactly-once-sink")
@given(
    st.integers(1, 4),
    st.lists(st.sets(st.integers(0, 3), max_size=2), min_size=1, max_size=4),
    st.integers(1, 4),
    st.booleans(),
)
def test_required_COMMIT_014_intervals_without_records_commit_and_recover(
    adapter: Any, n: int, intervals: list[set[int]], m: int, notify_last: bool
) -> None:
    """Some subtasks (often all) write nothing between two barriers; each checkpoint still commits, and a
    recovery from the last one (its notification perhaps lost) commits what it holds without an error."""
    log = KafkaModel()
    log.create_topic(TOPIC, PARTITIONS)
    sink = Guarded(adapter.sink(SinkConfig(log=log, prefix=PREFIX, parallelism=n)), "sink", adapter.name)
    sink.start()
    written: list[bytes] = []
    step = "start"
    error = None
    try:
        state = None
        for cid, writers in enumerate(intervals, start=1):
            for subtask in sorted(w % n for w in writers):
                written.append(f"c{cid}-s{subtask}".encode())
                sink.write(subtask, TOPIC, subtask % PARTITIONS, None, written[-1])
            step = f"barrier {cid} (writers {sorted(w % n for w in writers)})"
            state = sink.checkpoint(cid)
            if cid < len(intervals) or notify_last:
                step = f"notify {cid}"
                sink.notify_checkpoint_complete(cid)
        step = f"recover checkpoint {len(intervals)} at parallelism {m}"
        adapter.recover_sink(RecoveryConfig(log=log, prefix=PREFIX, parallelism=m, checkpoint=state))
    except KafkaError as exc:
        error = str(exc)
    fail_on(check_intervals_committed(written, observe(log).committed, step, error))


@requirement("COMMIT-003", "COMMIT-010", capability="exactly-once-sink")
@given(st.integers(1, 3), st.integers(1, 3))
def test_required_COMMIT_003_and_010_a_second_recovery_commits_nothing_the_first_one_wrote(
    adapter: Any, n: int, m: int
) -> None:
    """FLINK-8132's sequence: checkpoint 1 completes, its notification is lost; the job recovers (committing
    checkpoint 1's transactions), writes, takes barrier 2, and fails before checkpoint 2 completes; it
    recovers from checkpoint 1 again. What it wrote after the first recovery was never checkpointed as
    complete: committing checkpoint 1's transactions again must not make it visible."""
    log = KafkaModel()
    log.create_topic(TOPIC, PARTITIONS)
    sink = Guarded(adapter.sink(SinkConfig(log=log, prefix=PREFIX, parallelism=n)), "sink", adapter.name)
    sink.start()
    for subtask in range(n):
        sink.write(subtask, TOPIC, subtask % PARTITIONS, None, f"first-{subtask}".encode())
    state = sink.checkpoint(1)  # completes; its notification is lost
    step = "the first recovery"
    error = None
    try:
        again = Guarded(
            adapter.recover_sink(RecoveryConfig(log=log, prefix=PREFIX, parallelism=m, checkpoint=state)),
            "sink",
            adapter.name,
        )
        for subtask in range(m):
            again.write(subtask, TOPIC, subtask % PARTITIONS, None, f"after-{subtask}".encode())
        again.checkpoint(2)  # never completes
        step = "the second recovery"
        adapter.recover_sink(RecoveryConfig(log=log, prefix=PREFIX, parallelism=m, checkpoint=state))
    except KafkaError as exc:
        error = str(exc)
    checkpointed = [f"first-{s}".encode() for s in range(n)]
    after = [f"after-{s}".encode() for s in range(m)]
    fail_on(check_second_recovery(checkpointed, after, observe(log).committed, step, error))


@requirement("COMMIT-016", capability="exactly-once-sink")
@given(st.integers(1, 3), st.integers(1, 3), st.sampled_from([("job", "job-1"), ("job", "job-10"), ("a", "a-0")]))
def test_required_COMMIT_016_recovery_aborts_no_transaction_of_a_sink_whose_prefix_starts_with_its_own(
    adapter: Any, n: int, m: int, prefixes: tuple[str, str]
) -> None:
    """Two sinks on one cluster, one prefix the start of the other's ids (``job`` and ``job-1``): the first
    recovers while the second's checkpoint is pending; the second then commits, and every record it
    wrote must be visible (listing open transactions by prefix would have aborted them)."""
    mine, theirs = prefixes
    log = KafkaModel()
    log.create_topic(TOPIC, PARTITIONS)
    crashed, other = (
        Guarded(adapter.sink(SinkConfig(log=log, prefix=p, parallelism=n)), "sink", adapter.name)
        for p in (mine, theirs)
    )
    crashed.start()
    other.start()
    written = []
    for subtask in range(n):
        crashed.write(subtask, TOPIC, subtask % PARTITIONS, None, f"{mine}-{subtask}".encode())
        written.append(f"{theirs}-{subtask}".encode())
        other.write(subtask, TOPIC, subtask % PARTITIONS, None, written[-1])
    other.checkpoint(1)
    error = None
    try:
        adapter.recover_sink(
            RecoveryConfig(log=log, prefix=mine, parallelism=m, checkpoint=adapter.initial_sink_checkpoint(m))
        )
        other.notify_checkpoint_complete(1)
    except KafkaError as exc:
        error = str(exc)
    fail_on(check_foreign_transactions_kept(theirs, written, observe(log).committed, error))


@requirement("COMMIT-017", capability="exactly-once-sink")
@given(st.integers(1, 3), st.integers(1, 3), st.booleans())
def test_required_COMMIT_017_a_prefix_changed_between_runs_leaves_no_transaction_open(
    adapter: Any, n: int, m: int, notified: bool
) -> None:
    """A job under prefix ``old`` completes checkpoint 1 (its notification perhaps lost), writes on, and
    fails; it is restarted from checkpoint 1 under prefix ``new``. What ``old`` left open must be aborted,
    so every record the new run commits is visible: none stays behind an open transaction."""
    log = KafkaModel()
    log.create_topic(TOPIC, PARTITIONS)
    first = Guarded(adapter.sink(SinkConfig(log=log, prefix="old", parallelism=n)), "sink", adapter.name)
    first.start()
    for subtask in range(n):
        first.write(subtask, TOPIC, subtask % PARTITIONS, None, f"old-{subtask}".encode())
    state = first.checkpoint(1)
    if notified:
        first.notify_checkpoint_complete(1)
    for subtask in range(n):  # after checkpoint 1: open when the job fails
        first.write(subtask, TOPIC, subtask % PARTITIONS, None, f"lost-{subtask}".encode())
    second = Guarded(
        adapter.recover_sink(RecoveryConfig(log=log, prefix="new", parallelism=m, checkpoint=state)),
        "sink",
        adapter.name,
    )
    expected = {f"old-{s}".encode() for s in range(n)}
    for subtask in range(m):
        expected.add(f"new-{subtask}".encode())
        second.write(subtask, TOPIC, subtask % PARTITIONS, None, f"new-{subtask}".encode())
    second.checkpoint(2)
    second.notify_checkpoint_complete(2)
    seen = observe(log)
    fail_on(check_old_prefix_closed(expected, seen.committed, seen.stable))


@requirement("COMMIT-018", capability="exactly-once-sink")
@given(st.integers(1, 3), st.lists(st.tuples(st.booleans(), st.booleans()), min_size=6, max_size=20))
@example(n=2, steps=[(True, True)] * 8)  # eight checkpoints, each committed before the next: three ids at most
def test_required_COMMIT_018_pooled_ids_are_bounded_by_the_checkpoints_pending(
    adapter: Any, n: int, steps: list[tuple[bool, bool]]
) -> None:
    """Many checkpoints, few pending at once (each step writes or not, and is committed at once or stays
    pending until a later one is): under pooled naming the ids each subtask uses stay few, however many
    checkpoints the run takes (FLINK-34554: a new id per checkpoint fills the transaction coordinator)."""
    if adapter.naming is not NamingStrategy.POOLING:
        pytest.skip(
            f"COMMIT-018 bounds pooled naming; {adapter.name!r} names ids {adapter.naming.value!r} "
            "(a new id per checkpoint, as Flink's default INCREMENTING does)"
        )
    log = KafkaModel()
    log.create_topic(TOPIC, PARTITIONS)
    sink = Guarded(adapter.sink(SinkConfig(log=log, prefix=PREFIX, parallelism=n)), "sink", adapter.name)
    sink.start()
    pending = 0
    max_pending = 0
    for cid, (write, commit) in enumerate(steps, start=1):
        if write:
            for subtask in range(n):
                sink.write(subtask, TOPIC, subtask % PARTITIONS, None, f"c{cid}-s{subtask}".encode())
        sink.checkpoint(cid)
        pending += 1
        max_pending = max(max_pending, pending)
        if commit:
            sink.notify_checkpoint_complete(cid)
            pending = 0
    ids = [tid for tid in log.transactional_ids() if tid.startswith(f"{PREFIX}-")]
    fail_on(check_pooled_ids(ids, PREFIX, max_pending))


@requirement("COMMIT-019", "COMMIT-025", capability="exactly-once-sink")
@given(st.integers(1, 3), st.integers(1, 3), st.booleans())
def test_required_COMMIT_019_a_checkpoint_whose_ids_expired_fails_recovery_naming_the_id(
    adapter: Any, n: int, m: int, committed: bool
) -> None:
    """FLINK-39072's sequence: checkpoint 1 is taken and committed (as a stop with a savepoint does) or
    not (its transactions then time out); the job stays down past ``transactional.id.expiration.ms``, so
    the broker forgets the ids; restored from checkpoint 1, the sink meets ids the broker no longer knows.
    Recovery must fail with that error, naming an id, not report checkpoint 1 committed."""
    log = KafkaModel()
    log.create_topic(TOPIC, PARTITIONS)
    sink = Guarded(adapter.sink(SinkConfig(log=log, prefix=PREFIX, parallelism=n)), "sink", adapter.name)
    sink.start()
    for subtask in range(n):
        sink.write(subtask, TOPIC, subtask % PARTITIONS, None, f"checkpoint-1-{subtask}".encode())
    state = sink.checkpoint(1)
    if committed:
        sink.notify_checkpoint_complete(1)
    ids = [tid for tid in log.transactional_ids() if tid.startswith(f"{PREFIX}-")]
    log.advance_clock(DEFAULT_TRANSACTION_TIMEOUT_MS + 1)  # what is still open times out ...
    log.advance_clock(TRANSACTIONAL_ID_EXPIRATION_MS + 1)  # ... and then every id expires
    error = None
    try:
        adapter.recover_sink(RecoveryConfig(log=log, prefix=PREFIX, parallelism=m, checkpoint=state))
    except KafkaError as exc:
        error = f"{type(exc).__name__}: {exc}"
    fail_on(check_expired_ids_refused(ids, committed, error))


@requirement("COMMIT-020", capability="sink-close")
@given(st.integers(1, 3), st.integers(0, 3), st.booleans(), st.booleans())
@example(n=2, barriers=2, completed=False, written_after=True)
def test_required_COMMIT_020_a_stopped_sink_leaves_open_only_what_a_checkpoint_may_still_commit(
    adapter: Any, n: int, barriers: int, completed: bool, written_after: bool
) -> None:
    """The job takes ``barriers`` checkpoints, the last one completed or still pending (or its
    notification lost: the same to the sink); it writes on after the last barrier (or not) and is
    stopped, not restarted
    (``close()``). Right after the stop, exactly the transactions pre-committed for checkpoints not yet
    committed may stay open (a restart commits them; the broker's timeout ends them if none comes):
    what was written after the last barrier must no longer hold back ``read_committed`` readers."""
    log = KafkaModel()
    log.create_topic(TOPIC, PARTITIONS)
    sink = Guarded(adapter.sink(SinkConfig(log=log, prefix=PREFIX, parallelism=n)), "sink", adapter.name)
    sink.start()
    for cid in range(1, barriers + 1):
        for subtask in range(n):
            sink.write(subtask, TOPIC, subtask % PARTITIONS, None, f"checkpoint-{cid}-{subtask}".encode())
        sink.checkpoint(cid)
    if barriers and completed:
        sink.notify_checkpoint_complete(barriers)
    pending = set(log.open_transactional_ids())  # only pre-committed ones: nothing written since the barrier
    if written_after:
        for subtask in range(n):
            sink.write(subtask, TOPIC, subtask % PARTITIONS, None, f"after-{subtask}".encode())
    sink.close()
    seen = observe(log)
    ends = {p: log.latest_offset(TopicPartition(TOPIC, p), Isolation.READ_UNCOMMITTED) for p in range(PARTITIONS)}
    stable = f"last stable offsets {seen.stable}, ends {ends}"
    fail_on(check_stopped_sink(log.open_transactional_ids(), pending, stable))


def raised_by_adapter(error: AdapterError) -> str:
    """What the adapter itself raised (``Type: message``): the guard's text also shows the call's arguments,
    which name every prefix and would make any refusal look as if it named them."""
    cause = error.__cause__ or error
    return f"{type(cause).__name__}: {cause}"


@requirement("COMMIT-022", "COMMIT-027", capability="exactly-once-sink")
@given(st.integers(1, 3), st.booleans())
def test_required_COMMIT_022_a_sink_without_a_prefix_is_refused_at_start(
    adapter: Any, n: int, recovering: bool
) -> None:
    """An exactly-once sink given an empty transactional-id prefix, fresh or recovered from the initial
    state: it must refuse before it initialises any id (FLINK-37380: connector 3.x silently took the
    default ``kafka-sink``, which every such sink of a cluster then shares)."""
    log = KafkaModel()
    log.create_topic(TOPIC, PARTITIONS)
    error = None
    try:
        if recovering:
            state = adapter.initial_sink_checkpoint(n)
            made = adapter.recover_sink(RecoveryConfig(log=log, prefix="", parallelism=n, checkpoint=state))
        else:
            made = adapter.sink(SinkConfig(log=log, prefix="", parallelism=n))
        sink = Guarded(made, "sink", adapter.name)
        sink.start()
        for subtask in range(n):
            sink.write(subtask, TOPIC, subtask % PARTITIONS, None, f"unprefixed-{subtask}".encode())
    except AdapterError as exc:
        error = raised_by_adapter(exc)
    fail_on(check_prefixes_refused([""], error, log.transactional_ids()))


@requirement("COMMIT-022", "COMMIT-027", capability="sink-job")
@given(st.lists(st.sampled_from(["job", "job-1", "orders", ""]), min_size=1, max_size=4))
@example(prefixes=["job", "job"])
@example(prefixes=["job", "job-1", "orders"])
def test_required_COMMIT_022_a_job_whose_sinks_share_a_prefix_or_lack_one_is_refused_at_start(
    adapter: Any, prefixes: list[str]
) -> None:
    """A job's exactly-once sinks started together (``sinks``): with an empty prefix or one shared by two
    sinks, the job is refused before any id is initialised, naming the prefix; with distinct prefixes,
    even ones extending each other (``job``, ``job-1``), it starts."""
    log = KafkaModel()
    log.create_topic(TOPIC, PARTITIONS)
    error = None
    try:
        configs = [SinkConfig(log=log, prefix=prefix, parallelism=2) for prefix in prefixes]
        for made in adapter.sinks(configs):
            Guarded(made, "sink", adapter.name).start()
    except AdapterError as exc:
        error = raised_by_adapter(exc)
    fail_on(check_prefixes_refused(prefixes, error, log.transactional_ids()))


@requirement("COMMIT-023", "COMMIT-028", capability="naming-switch")
@given(st.sampled_from(list(NamingStrategy)), st.integers(1, 3), st.integers(1, 3), st.booleans())
@example(old=NamingStrategy.INCREMENTING, n=2, m=2, notified=False)
@example(old=NamingStrategy.POOLING, n=2, m=1, notified=True)
def test_required_COMMIT_023_a_restore_under_the_other_naming_loses_nothing_and_leaves_nothing_open(
    adapter: Any, old: NamingStrategy, n: int, m: int, notified: bool
) -> None:
    """A job under naming ``old`` completes checkpoint 1 (its notification perhaps lost), writes on, and
    fails; it is restored from checkpoint 1 under the other naming (Flink 4.0+: INCREMENTING <-> POOLING).
    The checkpoint's records and the new run's must be visible once each, and nothing the old run left
    open may hold readers back. A sink may refuse the switch at start, as Flink refuses POOLING ->
    INCREMENTING; a restore under ``old`` must then still commit the checkpoint."""
    new = next(naming for naming in NamingStrategy if naming is not old)
    log = KafkaModel()
    log.create_topic(TOPIC, PARTITIONS)
    first = Guarded(adapter.sink(SinkConfig(log=log, prefix=PREFIX, parallelism=n, naming=old)), "sink", adapter.name)
    first.start()
    for subtask in range(n):
        first.write(subtask, TOPIC, subtask % PARTITIONS, None, f"checkpoint-1-{subtask}".encode())
    state = first.checkpoint(1)
    if notified:
        first.notify_checkpoint_complete(1)
    for subtask in range(n):  # after checkpoint 1: open when the job fails
        first.write(subtask, TOPIC, subtask % PARTITIONS, None, f"lost-{subtask}".encode())
    refused = None
    try:
        made = adapter.recover_sink(RecoveryConfig(log=log, prefix=PREFIX, parallelism=m, checkpoint=state, naming=new))
    except AdapterError as exc:
        refused = raised_by_adapter(exc)
        made = adapter.recover_sink(RecoveryConfig(log=log, prefix=PREFIX, parallelism=m, checkpoint=state, naming=old))
    second = Guarded(made, "sink", adapter.name)
    expected = {f"checkpoint-1-{subtask}".encode() for subtask in range(n)}
    for subtask in range(m):
        expected.add(f"run-2-{subtask}".encode())
        second.write(subtask, TOPIC, subtask % PARTITIONS, None, f"run-2-{subtask}".encode())
    second.checkpoint(2)
    second.notify_checkpoint_complete(2)
    seen = observe(log)
    ends = {p: log.latest_offset(TopicPartition(TOPIC, p), Isolation.READ_UNCOMMITTED) for p in range(PARTITIONS)}
    fail_on(check_naming_switched(old.value, new.value, expected, seen.committed, seen.stable, ends, refused))


TIMEOUT_MS = 10_000
"""``transaction.timeout.ms`` of COMMIT-021's log: the drawn phases straddle it."""
PHASE_MS = st.integers(0, 2 * TIMEOUT_MS)


@requirement("COMMIT-021", "COMMIT-026", capability="exactly-once-sink")
@given(st.integers(1, 3), st.integers(1, 3), st.integers(0, TIMEOUT_MS), PHASE_MS, PHASE_MS, st.none() | PHASE_MS)
@example(n=2, m=1, stagger=0, interval=TIMEOUT_MS + 1, checkpointing=0, downtime=None)  # before its barrier
@example(n=2, m=1, stagger=0, interval=TIMEOUT_MS // 2, checkpointing=TIMEOUT_MS // 2 + 1, downtime=None)  # slow
@example(n=1, m=2, stagger=0, interval=1, checkpointing=1, downtime=TIMEOUT_MS)  # down longer than the timeout left
@example(n=3, m=2, stagger=TIMEOUT_MS // 2, interval=0, checkpointing=0, downtime=1)  # only the oldest
@example(n=2, m=2, stagger=0, interval=TIMEOUT_MS // 2, checkpointing=0, downtime=TIMEOUT_MS // 2)  # at it: commits
def test_required_COMMIT_021_a_transaction_that_outlived_its_timeout_fails_its_commit_naming_id_and_timeout(
    adapter: Any, n: int, m: int, stagger: int, interval: int, checkpointing: int, downtime: int | None
) -> None:
    """Subtask ``s`` writes the first record of its checkpoint-1 transaction ``s * stagger`` ms in; ``interval``
    ms after the last one the barrier comes, ``checkpointing`` ms later the checkpoint completes, and its
    notification commits it, or is lost in a crash (``downtime`` set) and a recovery at parallelism ``m``
    commits it that long after. Kafka counts each transaction's age from its first record: the broker has
    aborted those past ``transaction.timeout.ms``, and the step that finds out must fail naming one of them
    and the timeout; within it, the checkpoint commits whole."""
    log = KafkaModel(transaction_timeout_ms=TIMEOUT_MS)
    log.create_topic(TOPIC, PARTITIONS)
    sink = Guarded(adapter.sink(SinkConfig(log=log, prefix=PREFIX, parallelism=n)), "sink", adapter.name)
    sink.start()
    written = [f"checkpoint-1-{subtask}".encode() for subtask in range(n)]
    started: dict[str, int] = {}
    step, error = "the writes", None
    try:
        for subtask, value in enumerate(written):
            log.advance_clock(stagger if subtask else 0)
            sink.write(subtask, TOPIC, subtask % PARTITIONS, None, value)
            opened = set(log.open_transactional_ids()) - set(started)
            started |= {tid: log.now_ms for tid in opened if tid.startswith(f"{PREFIX}-")}
        step = "barrier 1"
        log.advance_clock(interval)
        state = sink.checkpoint(1)
        log.advance_clock(checkpointing)
        if downtime is None:
            step = "the commit of checkpoint 1"
            sink.notify_checkpoint_complete(1)
        else:
            log.advance_clock(downtime)
            step = f"the recovery of checkpoint 1 at parallelism {m}, {downtime} ms after the crash"
            adapter.recover_sink(RecoveryConfig(log=log, prefix=PREFIX, parallelism=m, checkpoint=state))
    except (KafkaError, AdapterError) as exc:
        error = f"{type(exc).__name__}: {exc}"
    ages = {tid: log.now_ms - at for tid, at in started.items()}
    lost = set(written) - set(observe(log).committed)
    fail_on(check_timeout_outlived(ages, TIMEOUT_MS, step, error, lost))
