"""Reference-core unit cases of the sink that the conformance suite's state machine does not pin down."""

from __future__ import annotations

import pytest

from reference_impl.commit import ExactlyOnceSink, NamingStrategy, transactional_id
from reference_impl.kafka_model import KafkaModel
from reference_impl.ports import Isolation, ProducerFencedError
from reference_impl.types import TopicPartition

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
