"""COMMIT-001..010 and COMMIT-012: the adapter's exactly-once sink, judged over a recorded history.

A Hypothesis state machine writes, takes barriers, completes checkpoints (sometimes losing the
notification), crashes and recovers at another parallelism (sometimes leaving a zombie), and
injects an external abort of a pre-committed transaction. Every step is recorded as a
Jepsen-style history; after every step a ``read_committed`` read is recorded and the whole
history is checked by ``check_sink_history``.
"""

from __future__ import annotations

from functools import partial
from typing import Any

from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
)

from conformance.adapter import AdapterError, Guarded
from conformance.checkers import Violation, explain, fail_on
from conformance.history import History, Observation, check_sink_history
from conformance.pytest_plugin import requirement
from conformance.suite import run_machine
from reference_impl.kafka_model import KafkaModel
from reference_impl.ports import Isolation, KafkaError
from reference_impl.types import TopicPartition

TOPIC = "kconform-sink-out"
PARTITIONS = 3
PREFIX = "kconform-sink"


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


class SinkMachine(RuleBasedStateMachine):
    """One sink and its recoveries; the history is the evidence of every verdict."""

    adapter: Any

    def __init__(self) -> None:
        super().__init__()
        self.log = KafkaModel()
        self.log.create_topic(TOPIC, PARTITIONS)
        self.history = History()
        self.incarnation = 0
        self.seq = 0
        self.next_checkpoint = 1
        self.pending: list[tuple[int, Any]] = []
        self.completed: tuple[int, Any] | None = None
        self.zombie: tuple[str, Any] | None = None
        self.broken = False

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
        self.sink = self._guard(self.adapter.sink(self.log, PREFIX, n))
        self.sink_process = self.process
        self.sink.start()

    @precondition(lambda self: not self.broken)
    @rule(records=st.lists(st.tuples(st.integers(0, 7), st.integers(0, PARTITIONS - 1)), min_size=1, max_size=4))
    def write(self, records: list[tuple[int, int]]) -> None:
        """A few records, each to some subtask and partition."""
        for subtask, partition in records:
            self.seq += 1
            value = f"r{self.seq}".encode()
            writer = subtask % self.parallelism
            self._do("write", (value, writer), partial(self.sink.write, writer, TOPIC, partition, None, value))

    @precondition(lambda self: not self.broken)
    @rule(skip=st.integers(0, 2), outcome=st.sampled_from(["complete", "pending", "notification-lost"]))
    def barrier(self, skip: int, outcome: str) -> None:
        """Barrier N (ids may skip, as Flink's do after a declined checkpoint); it may complete at once.

        Records keep flowing: every writer writes one record just before the barrier.
        """
        self.write([(subtask, subtask % PARTITIONS) for subtask in range(self.parallelism)])
        cid = self.next_checkpoint + skip
        self.next_checkpoint = cid + 1
        state: list[Any] = []
        if self._do("barrier", cid, lambda: state.append(self.sink.checkpoint(cid))) is None:
            self.pending.append((cid, state[0]))
            if outcome != "pending":
                self._complete(notify=outcome == "complete")

    @precondition(lambda self: self.pending and not self.broken)
    @rule(notify=st.booleans())
    def complete_pending(self, notify: bool) -> None:
        """The newest pending checkpoint completes late; its notification may be lost (COMMIT-009)."""
        self._complete(notify)

    def _complete(self, notify: bool) -> None:
        self.completed = self.pending[-1]
        self.pending = []
        cid = self.completed[0]
        self.history.invoke("coordinator", "complete", (cid, self.process))
        self.history.complete("coordinator", "ok", "complete", (cid, self.process))
        if notify and self._do("notify", cid, lambda: self.sink.notify_checkpoint_complete(cid)) is not None:
            self.broken = True

    @precondition(lambda self: (self.completed or self.pending) and not self.broken)
    @rule(then=st.sampled_from(["complete-pending", "recover"]), n=st.integers(1, 4))
    def external_abort(self, then: str, n: int) -> None:
        """A misconfigured twin job initialises every transactional id of the sink; then the sink commits or recovers.

        Either step must fail loudly: the transactions it would commit are gone (COMMIT-007).
        """
        self.history.invoke("nemesis", "fault", "init every id of the sink")
        for subtask in range(8):
            for suffix in range(self.next_checkpoint + 2):
                for tid in (f"{PREFIX}-{subtask}-{suffix}", f"{PREFIX}-{subtask}-p{suffix}"):
                    self.log.init_producer(tid)
        self.history.complete("nemesis", "ok", "fault", "init every id of the sink")
        if then == "complete-pending" and self.pending:
            self._complete(notify=True)
        else:
            self.crash_and_recover(n, keep_zombie=False)

    @rule(n=st.integers(1, 4), keep_zombie=st.booleans())
    def crash_and_recover(self, n: int, keep_zombie: bool) -> None:
        """Crash at any point; restore the last completed checkpoint at parallelism n.

        With ``keep_zombie`` the crashed attempt's sink keeps running (a partitioned task manager);
        it only counts as a zombie once a newer attempt has recovered.
        """
        survivor = (self.sink_process, self.sink) if keep_zombie and self.sink is not None else None
        self.zombie = None
        self.incarnation += 1
        self.parallelism = n
        self.pending = []
        cid, state = self.completed if self.completed else (0, self.adapter.initial_sink_checkpoint(n))
        watermarks = {
            p: self.log.latest_offset(TopicPartition(TOPIC, p), Isolation.READ_UNCOMMITTED) for p in range(PARTITIONS)
        }
        self.history.invoke(self.process, "recover", watermarks)
        try:
            self.sink = self._guard(self.adapter.recover_sink(self.log, PREFIX, n, state))
        except KafkaError:
            self.history.complete(self.process, "fail", "recover", cid)
            self.sink = None
            self.broken = True  # surfaced: the run stops here, as a real job would fail
            return
        self.history.complete(self.process, "ok", "recover", cid)
        self.sink_process = self.process
        self.zombie = survivor
        self.broken = False

    @precondition(lambda self: self.zombie is not None)
    @rule(partition=st.integers(0, PARTITIONS - 1))
    def zombie_writes_and_commits(self, partition: int) -> None:
        """The zombie of an earlier attempt keeps going (COMMIT-006)."""
        assert self.zombie is not None
        process, zombie = self.zombie
        self.zombie = None
        self.seq += 1
        value = f"z{self.seq}".encode()
        if self._do("write", (value, 0), lambda: zombie.write(0, TOPIC, partition, None, value), process) is None:
            self._do("barrier", 10**9, lambda: zombie.checkpoint(10**9), process)
            self._do("notify", 10**9, lambda: zombie.notify_checkpoint_complete(10**9), process)

    @invariant()
    def history_has_no_anomaly(self) -> None:
        self.history.invoke("reader", "read")
        self.history.complete("reader", "ok", "read", observe(self.log))
        violations = check_sink_history(self.history.ops)
        assert not violations, explain(violations) + "\nhistory (last operations):\n" + self.history.render()


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
def test_required_COMMIT_001_to_012_sink_state_machine(adapter: Any) -> None:
    run_machine(SinkMachine, adapter)


@requirement("COMMIT-005", capability="exactly-once-sink")
def test_required_COMMIT_005_two_sinks_and_their_subtasks_never_share_an_id(adapter: Any) -> None:
    """Two sinks on one log, prefixes chosen to collide under naive concatenation; both must deliver."""
    log = KafkaModel()
    log.create_topic(TOPIC, PARTITIONS)
    sinks = [Guarded(adapter.sink(log, prefix, 4), "sink", adapter.name) for prefix in ("job", "job-1")]
    for sink in sinks:
        sink.start()
    expected = set()
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
        fail_on([Violation("COMMIT-005", "id-collision", f"a writer was fenced by another: {exc!r}")])
    seen = set(observe(log).committed)
    fail_on([Violation("COMMIT-005", "id-collision", f"lost {v!r}") for v in sorted(expected - seen)])


@requirement("COMMIT-007", capability="exactly-once-sink")
def test_required_COMMIT_007_timeout_is_surfaced(adapter: Any) -> None:
    log = KafkaModel(transaction_timeout_ms=1000)
    log.create_topic(TOPIC, PARTITIONS)
    sink = Guarded(adapter.sink(log, PREFIX, 1), "sink", adapter.name)
    sink.start()
    sink.write(0, TOPIC, 0, None, b"late")
    sink.checkpoint(1)
    log.advance_clock(1001)
    try:
        sink.notify_checkpoint_complete(1)
    except KafkaError:
        return
    except AdapterError as exc:
        fail_on([Violation("COMMIT-007", "swallowed-error", f"the timeout became another error: {exc}")])
    fail_on([Violation("COMMIT-007", "swallowed-error", "committing a timed-out transaction reported success")])
