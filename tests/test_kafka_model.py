"""Properties of the deterministic Kafka model, one test per KAFKA-xxx requirement of spec/kafka.md.

The model is the oracle of every other test, so it is checked here against Kafka's documented
behaviour with generated inputs, plus a state machine over random operation sequences that
checks the invariants every Kafka log keeps.
"""

from __future__ import annotations

import itertools
from collections import Counter
from dataclasses import dataclass, field

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from kconform.reference_impl.kafka_model import TRANSACTIONAL_ID_EXPIRATION_MS, KafkaModel, ModelProducer
from kconform.reference_impl.ports import (
    InvalidPidMappingError,
    InvalidTxnStateError,
    Isolation,
    KafkaError,
    ProducerFencedError,
    TransactionTimeoutError,
)
from kconform.reference_impl.types import TopicPartition

RC = Isolation.READ_COMMITTED
RU = Isolation.READ_UNCOMMITTED
TP = TopicPartition("t", 0)
values = st.binary(max_size=4)
batches = st.lists(values, min_size=1, max_size=5)


def _model(partitions: int = 1, timeout_ms: int = 1000) -> KafkaModel:
    model = KafkaModel(transaction_timeout_ms=timeout_ms)
    model.create_topic("t", partitions)
    return model


def _values(model: KafkaModel, isolation: Isolation, tp: TopicPartition = TP) -> list[bytes | None]:
    return [r.value for r in model.read(tp, 0, isolation, 10_000)]


def _txn(model: KafkaModel, tid: str, batch: list[bytes], tp: TopicPartition = TP) -> ModelProducer:
    producer = model.init_producer(tid)
    producer.begin_transaction()
    for v in batch:
        producer.produce(tp.topic, tp.partition, None, v)
    return producer


@given(committed=batches, aborted=batches)
def test_required_KAFKA_001_aborted_records_hidden_from_read_committed(
    committed: list[bytes], aborted: list[bytes]
) -> None:
    model = _model()
    _txn(model, "a", aborted).abort_transaction()
    _txn(model, "c", committed).commit_transaction()
    assert _values(model, RC) == committed


@given(before=batches, open_=batches, after=batches)
def test_required_KAFKA_002_last_stable_offset_holds_back_read_committed(
    before: list[bytes], open_: list[bytes], after: list[bytes]
) -> None:
    model = _model()
    for v in before:
        model.produce(TP, None, v)
    producer = _txn(model, "open", open_)
    for v in after:
        model.produce(TP, None, v)
    assert model.latest_offset(TP, RC) == len(before) <= model.latest_offset(TP, RU)
    assert _values(model, RC) == before
    producer.commit_transaction()
    assert model.latest_offset(TP, RC) == model.latest_offset(TP, RU)
    assert _values(model, RC) == [*before, *open_, *after]


@given(batch=batches, commit=st.booleans(), partitions=st.integers(1, 3))
def test_required_KAFKA_003_markers_occupy_offsets_and_offsets_increase(
    batch: list[bytes], commit: bool, partitions: int
) -> None:
    model = _model(partitions)
    producer = model.init_producer("x")
    producer.begin_transaction()
    for i, v in enumerate(batch):
        producer.produce("t", i % partitions, None, v)
    (producer.commit_transaction if commit else producer.abort_transaction)()
    counts = Counter(i % partitions for i in range(len(batch)))
    for p, n in counts.items():
        tp = TopicPartition("t", p)
        assert model.high_watermark(tp) == n + 1  # one marker per partition of the transaction
        assert [r.offset for r in model.read(tp, 0, RU, 100)] == list(range(n))
    assert model.produce(TP, None, b"next") == counts[0] + 1


@given(zombie=batches, fresh=batches)
def test_required_KAFKA_004_init_fences_zombie_and_aborts_its_transaction(
    zombie: list[bytes], fresh: list[bytes]
) -> None:
    model = _model()
    old = _txn(model, "tid", zombie)
    new = model.init_producer("tid")
    assert (new.producer_id, new.epoch) == (old.producer_id, old.epoch + 1)
    assert model.latest_offset(TP, RC) == model.latest_offset(TP, RU)  # the zombie's txn is aborted
    for call in (old.commit_transaction, old.abort_transaction, old.begin_transaction, old.flush):
        with pytest.raises(ProducerFencedError):
            call()
    with pytest.raises(ProducerFencedError):
        old.produce("t", 0, None, b"z")
    new.begin_transaction()
    for v in fresh:
        new.produce("t", 0, None, v)
    new.commit_transaction()
    assert _values(model, RC) == fresh


@given(timeout=st.integers(1, 10_000), extra=st.integers(1, 10_000), batch=batches)
def test_required_KAFKA_005_broker_aborts_transaction_after_timeout(
    timeout: int, extra: int, batch: list[bytes]
) -> None:
    model = _model(timeout_ms=timeout)
    producer = _txn(model, "slow", batch)
    model.advance_clock(timeout)
    assert model.latest_offset(TP, RC) == 0  # exactly at the timeout it is still open
    model.advance_clock(extra)
    assert model.latest_offset(TP, RC) == model.latest_offset(TP, RU) == len(batch) + 1
    assert _values(model, RC) == []
    with pytest.raises(TransactionTimeoutError):
        producer.commit_transaction()
    with pytest.raises(TransactionTimeoutError):
        model.resume_producer("slow", producer.producer_id, producer.epoch)
    assert model.init_producer("slow").epoch == producer.epoch + 2  # the broker bumped it once


@given(offset=st.integers(0, 1000), commit=st.booleans())
def test_required_KAFKA_006_sent_offsets_visible_only_on_commit(offset: int, commit: bool) -> None:
    model = _model()
    producer = model.init_producer("tid")
    producer.begin_transaction()
    producer.send_offsets_to_transaction("g", {TP: offset})
    assert model.committed("g") == {}
    (producer.commit_transaction if commit else producer.abort_transaction)()
    assert model.committed("g") == ({TP: offset} if commit else {})


@given(plain=batches, aborted=batches, open_=batches)
def test_required_KAFKA_007_read_uncommitted_returns_everything_below_high_watermark(
    plain: list[bytes], aborted: list[bytes], open_: list[bytes]
) -> None:
    model = _model()
    for v in plain:
        model.produce(TP, None, v)
    _txn(model, "a", aborted).abort_transaction()
    _txn(model, "o", open_)
    assert _values(model, RU) == [*plain, *aborted, *open_]
    assert model.latest_offset(TP, RU) == model.high_watermark(TP) == len(plain) + len(aborted) + 1 + len(open_)


@given(batch=batches)
def test_required_KAFKA_008_latest_offset_is_high_watermark(batch: list[bytes]) -> None:
    model = _model()
    offsets = [model.produce(TP, None, v) for v in batch]
    assert model.latest_offset(TP, RU) == offsets[-1] + 1 == len(batch)
    assert model.earliest_offset(TP) == 0


@given(initial=st.integers(1, 4), grow=st.integers(1, 4))
def test_required_KAFKA_009_create_partitions_adds_empty_partitions(initial: int, grow: int) -> None:
    model = _model(initial)
    model.produce(TP, None, b"x")
    model.create_partitions("t", initial + grow)
    assert model.list_topics()["t"] == frozenset(range(initial + grow))
    assert model.latest_offset(TopicPartition("t", initial), RU) == 0
    assert model.latest_offset(TP, RU) == 1
    with pytest.raises(KafkaError):
        model.create_partitions("t", initial + grow)


@given(offset=st.integers(0, 10**9), metadata=st.text(max_size=20))
def test_should_KAFKA_010_group_offset_metadata_round_trips(offset: int, metadata: str) -> None:
    model = _model()
    model.commit_offsets("g", {TP: offset}, metadata)
    assert model.committed("g") == {TP: offset}
    assert model.committed_metadata("g") == {TP: metadata}


@given(gaps=st.lists(st.integers(0, 50), min_size=1, max_size=8), probe=st.integers(0, 500))
def test_should_KAFKA_011_offset_for_time_finds_first_record_at_or_after(gaps: list[int], probe: int) -> None:
    model = _model()
    stamps = []
    for gap in gaps:
        model.advance_clock(gap)
        stamps.append(model.now_ms)
        model.produce(TP, None, b"x")
    expected = next((o for o, ts in enumerate(stamps) if ts >= probe), None)
    assert model.offset_for_time(TP, probe) == expected


@given(names=st.lists(st.from_regex(r"[a-z]{1,6}", fullmatch=True), unique=True, max_size=5))
def test_required_KAFKA_012_new_topics_are_listed(names: list[str]) -> None:
    model = KafkaModel()
    for i, name in enumerate(names):
        model.create_topic(name, i + 1)
        assert model.list_topics()[name] == frozenset(range(i + 1))
    assert set(model.list_topics()) == set(names)
    if names:
        gone = TopicPartition(names[0], 0)
        model.commit_offsets("g", {gone: 1})
        model.delete_topic(names[0])
        assert names[0] not in model.list_topics()
        assert model.committed("g") == {}  # Kafka drops the group offsets of deleted partitions


@given(commits=st.lists(st.dictionaries(st.integers(0, 2), st.integers(0, 100)), max_size=5))
def test_required_KAFKA_013_group_offsets_last_commit_wins(commits: list[dict[int, int]]) -> None:
    model = _model(3)
    expected: dict[TopicPartition, int] = {}
    for commit in commits:
        offsets = {TopicPartition("t", p): o for p, o in commit.items()}
        model.commit_offsets("g", offsets)
        expected.update(offsets)
    assert model.committed("g") == expected
    assert model.committed("other") == {}


@given(sent=st.integers(0, 100), other=st.integers(0, 100), other_after=st.booleans(), plain=st.booleans())
def test_required_KAFKA_013_offset_commit_appended_last_wins_over_a_committing_transaction(
    sent: int, other: int, other_after: bool, plain: bool
) -> None:
    """A transaction's offsets are appended when sent, so a commit of the same partition appended after
    them (plain, or another transaction's, even one that commits first) wins when it commits, as in Kafka."""
    model = _model()
    txn, other_txn = model.init_producer("txn"), model.init_producer("other")

    def commit_other() -> None:
        if plain:
            model.commit_offsets("g", {TP: other})
            return
        other_txn.begin_transaction()
        other_txn.send_offsets_to_transaction("g", {TP: other})
        other_txn.commit_transaction()

    if not other_after:
        commit_other()
    txn.begin_transaction()
    txn.send_offsets_to_transaction("g", {TP: sent})
    if other_after:
        commit_other()
    txn.commit_transaction()
    assert model.committed("g") == {TP: other if other_after else sent}


def test_required_KAFKA_014_illegal_transaction_calls_raise_invalid_state() -> None:
    model = _model()
    producer = model.init_producer("tid")
    for call in (producer.commit_transaction, producer.abort_transaction):
        with pytest.raises(InvalidTxnStateError):
            call()
    with pytest.raises(InvalidTxnStateError):
        producer.produce("t", 0, None, b"outside")
    with pytest.raises(InvalidTxnStateError):
        producer.send_offsets_to_transaction("g", {TP: 1})
    producer.begin_transaction()
    with pytest.raises(InvalidTxnStateError):
        producer.begin_transaction()
    assert model.high_watermark(TP) == 0


@given(batch=batches, flushed=st.booleans())
def test_optional_KAFKA_015_resume_takes_over_a_flushed_transaction(batch: list[bytes], flushed: bool) -> None:
    model = _model()
    original = _txn(model, "tid", batch)
    if not flushed:
        with pytest.raises(InvalidTxnStateError):
            model.resume_producer("tid", original.producer_id, original.epoch)
        return
    original.flush()
    resumed = model.resume_producer("tid", original.producer_id, original.epoch)
    resumed.commit_transaction()
    assert _values(model, RC) == batch
    high = model.high_watermark(TP)
    retry = model.resume_producer("tid", original.producer_id, original.epoch)
    retry.commit_transaction()  # EndTxn retried with the same epoch: success, nothing written again
    assert (model.high_watermark(TP), _values(model, RC)) == (high, batch)
    with pytest.raises(InvalidTxnStateError):  # it committed: it cannot be aborted any more
        retry.abort_transaction()
    model.init_producer("tid")
    with pytest.raises(ProducerFencedError):
        model.resume_producer("tid", original.producer_id, original.epoch)


@given(
    before=st.lists(values, max_size=3),
    opened=st.booleans(),
    added=st.booleans(),
    outcome=st.sampled_from(["commit", "abort"]),
    outside=values,
)
def test_required_KAFKA_016_a_transactional_write_outside_the_transaction_is_refused(
    before: list[bytes], opened: bool, added: bool, outcome: str, outside: bytes
) -> None:
    """A batch produced without AddPartitionsToTxn lands only on a partition its open transaction already holds; any
    other is refused and appends nothing, so no batch the coordinator never heard of holds read_committed back."""
    model = _model(partitions=2)
    for v in before:
        model.produce(TP, None, v)
    producer = model.init_producer("writer")
    inside = opened and added
    if opened:
        producer.begin_transaction()
        producer.produce("t", 1, None, b"in")  # the transaction holds partition 1
        if added:
            producer.produce("t", 0, None, b"added")  # ... and partition 0, through AddPartitionsToTxn
    high = model.high_watermark(TP)
    try:
        offset: int | None = producer.produce_without_add("t", 0, None, outside)
    except InvalidTxnStateError:
        offset = None
    if opened:
        (producer.commit_transaction if outcome == "commit" else producer.abort_transaction)()
    model.produce(TP, None, b"after")
    stable, end = model.last_stable_offset(TP), model.high_watermark(TP)
    assert (offset is None, stable) == (not inside, end), (
        f"outside write at {offset} (high watermark before it {high}): LSO {stable}, high watermark {end}"
    )
    txn = [b"added", outside] if inside and outcome == "commit" else []
    assert _values(model, RC) == [*before, *txn, b"after"]
    if not inside:
        assert _values(model, RU) == [*before, b"after"]  # the refused batch was never appended


def test_unknown_partitions_and_out_of_range_reads_raise() -> None:
    model = _model()
    with pytest.raises(KafkaError):
        model.produce(TopicPartition("t", 1), None, b"x")
    with pytest.raises(KafkaError):
        model.read(TP, 1, RU, 10)
    with pytest.raises(ValueError):
        model.advance_clock(-1)


@dataclass
class _Shadow:
    """What the test itself knows about a transactional id, independent of the model."""

    handles: list[ModelProducer] = field(default_factory=list)
    stale: set[int] = field(default_factory=set)
    """Indexes into ``handles`` of incarnations known to be fenced or timed out."""
    pending: dict[int, list[tuple[TopicPartition, int]]] = field(default_factory=dict)
    """Records of each epoch's open transaction."""


TIDS = ("p", "q")
PARTS = (TopicPartition("a", 0), TopicPartition("a", 1), TopicPartition("b", 0))
TIMEOUT_MS = 100


def topic_b_has_one_partition(machine: KafkaModelMachine) -> bool:
    """A named precondition, not a lambda (tests/test_state_machines.py says why)."""
    return machine.model.list_topics()["b"] == frozenset({0})


class KafkaModelMachine(RuleBasedStateMachine):
    """Random operation sequences; invariants from Kafka's documented guarantees."""

    @initialize()
    def setup(self) -> None:
        self.model = KafkaModel(transaction_timeout_ms=TIMEOUT_MS)
        self.model.create_topic("a", 2)
        self.model.create_topic("b", 1)
        self.shadow = {tid: _Shadow() for tid in TIDS}
        self.committed: set[tuple[TopicPartition, int]] = set()
        self.produced: set[tuple[TopicPartition, int]] = set()
        self.high: dict[TopicPartition, int] = dict.fromkeys(PARTS, 0)

    def _handle(self, tid: str, which: int) -> tuple[_Shadow, int, ModelProducer] | None:
        shadow = self.shadow[tid]
        if not shadow.handles:
            return None
        index = which % len(shadow.handles)
        return shadow, index, shadow.handles[index]

    def _epoch(self, tid: str, which: int) -> int:
        handles = self.shadow[tid].handles
        return handles[which % len(handles)].epoch

    def _call(self, tid: str, which: int, op: str, *args: object) -> bool:
        """Run ``op`` on a handle; a stale handle must fail, a current one is never fenced."""
        found = self._handle(tid, which)
        if found is None:
            return False
        shadow, index, handle = found
        try:
            getattr(handle, op)(*args)
        except TransactionTimeoutError:
            shadow.stale.update(i for i, h in enumerate(shadow.handles) if h.epoch <= handle.epoch)
            shadow.pending.pop(handle.epoch, None)
            return False
        except ProducerFencedError:
            assert index in shadow.stale, "the current incarnation was fenced"
            return False
        except InvalidTxnStateError:
            assert index not in shadow.stale, "a fenced incarnation got past the epoch check"
            return False
        assert index not in shadow.stale, f"a fenced incarnation succeeded at {op}"
        return True

    @rule(part=st.sampled_from(PARTS), value=values)
    def produce_plain(self, part: TopicPartition, value: bytes) -> None:
        offset = self.model.produce(part, None, value)
        assert offset >= self.high[part]
        self.high[part] = offset + 1
        self.committed.add((part, offset))
        self.produced.add((part, offset))

    @rule(tid=st.sampled_from(TIDS))
    def init(self, tid: str) -> None:
        shadow = self.shadow[tid]
        shadow.stale.update(range(len(shadow.handles)))
        shadow.pending.clear()
        shadow.handles.append(self.model.init_producer(tid))

    @rule(tid=st.sampled_from(TIDS), which=st.integers(0, 5))
    def resume(self, tid: str, which: int) -> None:
        found = self._handle(tid, which)
        if found is None:
            return
        shadow, index, handle = found
        try:
            resumed = self.model.resume_producer(tid, handle.producer_id, handle.epoch)
        except (ProducerFencedError, TransactionTimeoutError, InvalidTxnStateError):
            return
        assert index not in shadow.stale
        shadow.handles.append(resumed)

    @rule(tid=st.sampled_from(TIDS), which=st.integers(0, 5))
    def begin(self, tid: str, which: int) -> None:
        self._call(tid, which, "begin_transaction")

    @rule(tid=st.sampled_from(TIDS), which=st.integers(0, 5), part=st.sampled_from(PARTS), value=values)
    def produce_txn(self, tid: str, which: int, part: TopicPartition, value: bytes) -> None:
        before = self.model.high_watermark(part)
        if self._call(tid, which, "produce", part.topic, part.partition, None, value):
            self.shadow[tid].pending.setdefault(self._epoch(tid, which), []).append((part, before))
            self.produced.add((part, before))
            self.high[part] = before + 1
        else:
            assert self.model.high_watermark(part) == before, "a failed produce wrote to the log"

    @rule(tid=st.sampled_from(TIDS), which=st.integers(0, 5), offset=st.integers(0, 9))
    def send_offsets(self, tid: str, which: int, offset: int) -> None:
        self._call(tid, which, "send_offsets_to_transaction", "txn-group", {PARTS[0]: offset})

    @rule(tid=st.sampled_from(TIDS), which=st.integers(0, 5))
    def flush(self, tid: str, which: int) -> None:
        self._call(tid, which, "flush")

    @rule(tid=st.sampled_from(TIDS), which=st.integers(0, 5))
    def commit(self, tid: str, which: int) -> None:
        if self._call(tid, which, "commit_transaction"):
            self.committed.update(self.shadow[tid].pending.pop(self._epoch(tid, which), []))

    @rule(tid=st.sampled_from(TIDS), which=st.integers(0, 5))
    def abort(self, tid: str, which: int) -> None:
        if self._call(tid, which, "abort_transaction"):
            self.shadow[tid].pending.pop(self._epoch(tid, which), None)

    @rule(ms=st.integers(0, 2 * TIMEOUT_MS))
    def advance_clock(self, ms: int) -> None:
        self.model.advance_clock(ms)
        if ms > TIMEOUT_MS:
            for part in PARTS:  # no transaction can still be open: the broker aborted it
                assert self.model.last_stable_offset(part) == self.model.high_watermark(part)

    @precondition(topic_b_has_one_partition)
    @rule()
    def grow(self) -> None:
        self.model.create_partitions("b", 2)
        assert self.model.high_watermark(TopicPartition("b", 1)) == 0

    @invariant()
    def offsets_strictly_increase_and_lso_below_hw(self) -> None:
        for part in PARTS:
            high = self.model.high_watermark(part)
            assert high >= self.high[part]
            assert self.model.last_stable_offset(part) <= high
            for isolation in Isolation:
                offsets = [r.offset for r in self.model.read(part, 0, isolation, 10_000)]
                assert all(a < b for a, b in itertools.pairwise(offsets))
                assert all(o < self.model.latest_offset(part, isolation) for o in offsets)

    @invariant()
    def read_committed_is_committed_data_only(self) -> None:
        for part in PARTS:
            stable = self.model.last_stable_offset(part)
            seen = {(part, r.offset) for r in self.model.read(part, 0, RC, 10_000)}
            assert seen <= self.committed, "read_committed returned uncommitted or aborted data"
            assert {(p, o) for p, o in self.committed if p == part and o < stable} <= seen
            everything = {(part, r.offset) for r in self.model.read(part, 0, RU, 10_000)}
            assert everything == {(p, o) for p, o in self.produced if p == part}


TestKafkaModelMachine = KafkaModelMachine.TestCase
TestKafkaModelMachine.settings = settings(max_examples=200, stateful_step_count=40, deadline=None)


def test_an_idle_transactional_id_expires_and_its_producer_id_is_then_unknown() -> None:
    """TransactionStateManager.shouldExpire: an id with no transaction in progress is forgotten after
    transactional.id.expiration.ms; EndTxn for it is then INVALID_PRODUCER_ID_MAPPING, also once the id
    is initialised again (under a new producer id). An open transaction times out before it can expire."""
    model = _model()
    done = _txn(model, "done", [b"a"])
    done.flush()
    done.commit_transaction()
    open_ = _txn(model, "open", [b"b"])
    open_.flush()
    model.advance_clock(TRANSACTIONAL_ID_EXPIRATION_MS - 1)
    assert "done" in model.transactional_ids()  # not yet
    model.advance_clock(1)
    assert model.transactional_ids() == ["open"]  # it timed out a moment ago: expires only a week from now
    with pytest.raises(InvalidPidMappingError, match="'done'"):
        model.resume_producer("done", done.producer_id, done.epoch)
    model.init_producer("done")
    with pytest.raises(InvalidPidMappingError):
        model.resume_producer("done", done.producer_id, done.epoch)
