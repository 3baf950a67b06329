"""Reference-core unit cases of the sink that the conformance suite's state machine does not pin down."""

from __future__ import annotations

import pytest
from hypothesis import settings
from hypothesis.stateful import run_state_machine_as_test

from kconform.conformance.adapter.guard import guard
from kconform.conformance.checks.history import History, Observation, check_sink_history
from kconform.conformance.gate.profiles import PROFILES
from kconform.conformance.generators.strategies import InterleavingMix
from kconform.conformance.suite import STEPS_PER_EXAMPLE
from kconform.conformance.suite.test_sink import INTERLEAVINGS, SinkMachine
from kconform.reference_impl.adapter import ADAPTER
from kconform.reference_impl.commit import ExactlyOnceSink, NamingStrategy, transactional_id
from kconform.reference_impl.kafka_model import KafkaModel
from kconform.reference_impl.ports import Isolation, ProducerFencedError
from kconform.reference_impl.types import TopicPartition

TOPIC = "out"


def visible(log: KafkaModel) -> list[bytes | None]:
    return [r.value for r in log.read(TopicPartition(TOPIC, 0), 0, Isolation.READ_COMMITTED, 1000)]


@pytest.fixture
def log() -> KafkaModel:
    model = KafkaModel()
    model.create_topic(TOPIC, 1)
    return model


def test_required_COMMIT_001_one_transaction_per_subtask_per_checkpoint(log: KafkaModel) -> None:
    sink = ExactlyOnceSink(log, "s", 2)
    sink.start()
    sink.write(0, TOPIC, 0, None, b"a")
    sink.write(1, TOPIC, 0, None, b"b")
    cp = sink.checkpoint(1)
    assert [c.transactional_id for c in cp.committables] == ["s-0-1", "s-1-1"]
    assert visible(log) == []  # pre-committed is not committed
    sink.notify_checkpoint_complete(1)
    assert sorted(v or b"" for v in visible(log)) == [b"a", b"b"]


def test_required_COMMIT_005_ids_injective_over_prefix_subtask_and_suffix() -> None:
    ids = {
        transactional_id(prefix, subtask, suffix, naming)
        for prefix in ("a", "a-1", "a-1-2", "b")
        for subtask in range(12)
        for suffix in range(12)
        for naming in NamingStrategy
    }
    assert len(ids) == 4 * 12 * 12 * 2
    with pytest.raises(ValueError, match="prefix"):
        ExactlyOnceSink(KafkaModel(), "", 1)


def test_required_COMMIT_007_fenced_recovery_commit_is_surfaced(log: KafkaModel) -> None:
    sink = ExactlyOnceSink(log, "s", 1)
    sink.start()
    sink.write(0, TOPIC, 0, None, b"a")
    cp = sink.checkpoint(1)
    log.init_producer("s-0-1")  # someone else took the id over: the pre-committed data is gone
    with pytest.raises(ProducerFencedError):
        ExactlyOnceSink.recover(log, "s", 1, cp)


@pytest.mark.parametrize("naming", list(NamingStrategy), ids=lambda n: n.value)
def test_required_COMMIT_010_recovering_twice_from_one_checkpoint_commits_once(
    log: KafkaModel, naming: NamingStrategy
) -> None:
    sink = ExactlyOnceSink(log, "s", 2, naming)
    sink.start()
    sink.write(1, TOPIC, 0, None, b"a")
    cp = sink.checkpoint(1)
    sink.notify_checkpoint_complete(1)
    again = ExactlyOnceSink.recover(log, "s", 2, cp, naming)
    again.write(0, TOPIC, 0, None, b"lost-in-crash")
    ExactlyOnceSink.recover(log, "s", 3, cp, naming)
    assert visible(log) == [b"a"]


def test_required_COMMIT_012_leftover_ids_of_a_larger_parallelism_are_aborted(log: KafkaModel) -> None:
    sink = ExactlyOnceSink(log, "s", 1)
    sink.start()
    sink.write(0, TOPIC, 0, None, b"kept")
    cp = sink.checkpoint(1)
    sink.notify_checkpoint_complete(1)
    wide = ExactlyOnceSink.recover(log, "s", 4, cp)
    wide.write(3, TOPIC, 0, None, b"lingering")  # subtask 3 of a run that never checkpointed
    narrow = ExactlyOnceSink.recover(log, "s", 1, cp)
    narrow.write(0, TOPIC, 0, None, b"new")
    narrow.notify_checkpoint_complete(narrow.checkpoint(2).checkpoint_id)
    assert visible(log) == [b"kept", b"new"]


def _recovered(history: History, n: int, watermarks: dict[int, int]) -> None:
    history.invoke("attempt-1", "recover", (watermarks, n))
    history.complete("attempt-1", "ok", "recover", 0)


def test_required_COMMIT_006_an_idle_zombie_s_visible_write_is_a_zombie_write() -> None:
    """An attempt that did nothing before a newer one recovered is still a zombie (not COMMIT-002's)."""
    history = History()
    _recovered(history, 1, {})
    history.complete("attempt-0", "ok", "write", (b"z", 0))
    history.complete("attempt-0", "ok", "barrier", 10**9)
    history.complete("attempt-0", "ok", "notify", 10**9)
    history.complete("reader", "ok", "read", Observation((b"z",), {b"z": (0, 0)}, {0: 1}))
    assert [(v.requirement, v.kind) for v in check_sink_history(history.ops)] == [("COMMIT-006", "zombie-write")]


@pytest.mark.parametrize(("subtask", "expected"), [(1, "COMMIT-012"), (0, "COMMIT-004")])
def test_required_COMMIT_012_a_transaction_of_a_subtask_beyond_the_new_parallelism_is_a_leftover(
    subtask: int, expected: str
) -> None:
    history = History()
    history.complete("attempt-0", "ok", "write", (b"open", subtask))
    _recovered(history, 1, {0: 1})
    history.complete("reader", "ok", "read", Observation((), {b"open": (0, 0)}, {0: 0}))
    assert [v.requirement for v in check_sink_history(history.ops)] == [expected]


def test_required_COMMIT_002_the_sink_machine_reaches_every_interleaving_at_the_default_profile() -> None:
    """N completes while N+1 is pending, notifications cover several checkpoints or come late (issue 15)."""
    mix = InterleavingMix(INTERLEAVINGS)
    machine = type("SinkMachineOnReference", (SinkMachine,), {"mix": mix, "adapter": guard(ADAPTER)})
    run_state_machine_as_test(
        machine,
        settings=settings(
            max_examples=PROFILES["default"], stateful_step_count=STEPS_PER_EXAMPLE, derandomize=True, database=None
        ),
    )
    assert not mix.missing(), f"never reached: {mix.missing()} ({dict(mix.counts)})"
    assert mix.counts["recover"] + mix.counts["recover-leaving-zombie"] < 0.35 * sum(mix.counts.values())


def test_required_COMMIT_003_a_repeated_notification_frees_no_pooled_id_the_completed_checkpoint_names() -> None:
    """Checkpoint 1 names the pooled id it committed; a second notification of 1 must not free it, or the next
    transaction reuses it and a recovery from checkpoint 1 is fenced when it resumes the id (the reference's own
    bug until the sink machine judged a failed recovery)."""
    log = KafkaModel()
    log.create_topic("out", 1)
    sink = ExactlyOnceSink(log, "pool", 1, NamingStrategy.POOLING)
    sink.start()
    sink.write(0, "out", 0, None, b"a")
    first = sink.checkpoint(1)
    sink.notify_checkpoint_complete(1)
    sink.notify_checkpoint_complete(1)  # late, again
    sink.write(0, "out", 0, None, b"b")
    sink.checkpoint(2)
    sink.write(0, "out", 0, None, b"c")
    assert [c.transactional_id for c in first.committables] == ["pool-0-p0"]
    recovered = ExactlyOnceSink.recover(log, "pool", 1, first, NamingStrategy.POOLING)  # raised ProducerFencedError
    recovered.close()
    assert [r.value for r in log.read(TopicPartition("out", 0), 0, Isolation.READ_COMMITTED, 10)] == [b"a"]


@pytest.mark.parametrize("naming", list(NamingStrategy), ids=lambda n: n.value)
def test_required_COMMIT_009_a_declined_checkpoint_is_committed_by_the_next_completed_one(
    naming: NamingStrategy,
) -> None:
    """Checkpoint 1 pre-commits and is declined (never completes); checkpoint 2 completes, and its notification
    commits both, as Flink's committer commits every pending checkpoint up to the notified one."""
    log = KafkaModel()
    log.create_topic("out", 1)
    sink = ExactlyOnceSink(log, "declined", 1, naming)
    sink.start()
    sink.write(0, "out", 0, None, b"a")
    sink.checkpoint(1)
    sink.write(0, "out", 0, None, b"b")
    sink.checkpoint(2)
    sink.write(0, "out", 0, None, b"c")
    assert [r.value for r in log.read(TopicPartition("out", 0), 0, Isolation.READ_COMMITTED, 10)] == []
    sink.notify_checkpoint_complete(2)
    assert [r.value for r in log.read(TopicPartition("out", 0), 0, Isolation.READ_COMMITTED, 10)] == [b"a", b"b"]
