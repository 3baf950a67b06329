"""The reference's Kafka client names the transaction timeout in an error met after a transaction outlived it
(COMMIT-021): librdkafka reports the broker's abort as a fenced producer, naming neither the setting nor the age."""

from __future__ import annotations

import threading
import time
from types import SimpleNamespace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kconform.reference_impl.kafka_client import returned_within, timeout_named
from kconform.reference_impl.ports import InvalidTxnStateError, KafkaError, ProducerFencedError

ERRORS = st.sampled_from([KafkaError, ProducerFencedError, InvalidTxnStateError])


@given(ERRORS, st.none() | st.integers(0, 10_000))
def test_required_COMMIT_026_an_error_past_the_timeout_names_it_keeping_its_type(
    kind: type[KafkaError], open_ms: int | None
) -> None:
    error = kind("commit_transaction (q-0): _FENCED: Producer fenced by newer instance")
    named = timeout_named(error, "commit_transaction (q-0)", open_ms, 2000)
    if open_ms is None or open_ms <= 2000:
        assert named is error
        return
    assert type(named) is kind
    assert f"open {open_ms} ms, longer than transaction.timeout.ms = 2000 ms" in str(named)
    assert str(named).startswith("commit_transaction (q-0): ") and str(error) in str(named)


def test_a_transactional_call_that_outlives_its_timeout_and_one_request_is_abandoned_as_failed() -> None:
    """librdkafka waits for a transactional call's answer without limit; the reference bounds that wait."""
    release = threading.Event()
    try:
        started = time.monotonic()
        with pytest.raises(KafkaError, match=r"send_offsets_to_transaction \(q-0\): librdkafka had not returned 0.3 s"):
            returned_within("send_offsets_to_transaction (q-0)", lambda: release.wait(30), 0.1, 0.2)
        assert time.monotonic() - started < 5
    finally:
        release.set()


def test_a_transactional_call_within_its_bound_returns_or_raises_its_own_error() -> None:
    calls: list[int] = []
    returned_within("commit_transaction (q-0)", lambda: calls.append(1), 1.0, 1.0)
    assert calls == [1]

    def fenced() -> None:
        raise ProducerFencedError("commit_transaction (q-0): _FENCED")

    with pytest.raises(ProducerFencedError, match="_FENCED"):
        returned_within("commit_transaction (q-0)", fenced, 1.0, 1.0)


def consumer_class(*methods: str) -> type:
    """A stand-in for a release's ``confluent_kafka.Consumer`` that has just ``methods``."""
    return type("Consumer", (), dict.fromkeys(methods, lambda *_args, **_kwargs: None))


def test_a_release_without_admin_list_offsets_lists_them_through_a_consumer() -> None:
    """confluent-kafka before 2.3.0 has no ``admin.OffsetSpec`` nor ``IsolationLevel`` (2.0.2, 2.2.0): offsets are
    listed through a consumer's watermark and timestamp queries, which those releases have; 2.3.0 on, through the
    AdminClient's ListOffsets."""
    from kconform.reference_impl.kafka_client import offset_listing

    old = SimpleNamespace(Consumer=consumer_class("get_watermark_offsets", "offsets_for_times"))
    new = SimpleNamespace(Consumer=old.Consumer, IsolationLevel=object())
    assert offset_listing(old, SimpleNamespace()) == "consumer"
    assert offset_listing(new, SimpleNamespace(OffsetSpec=object())) == "admin"
    assert offset_listing(old, SimpleNamespace(OffsetSpec=object())) == "consumer"  # 2.3.0's spec needs its levels
    assert offset_listing(new, SimpleNamespace()) == "consumer"


def test_a_release_that_can_list_no_offsets_is_a_missing_feature_not_a_crash(monkeypatch: pytest.MonkeyPatch) -> None:
    """Only a release with neither way (no ``admin.OffsetSpec``, no consumer ``offsets_for_times``) cannot list
    offsets: that raises the ports' ``UnsupportedFeatureError`` (the workload reports could-not-check), never an
    ``AttributeError`` a test would show as a violation."""
    from kconform.reference_impl import kafka_client
    from kconform.reference_impl.ports import UnsupportedFeatureError

    watermarks_only = SimpleNamespace(Consumer=consumer_class("get_watermark_offsets"))
    assert kafka_client.offset_listing(watermarks_only, SimpleNamespace()) is None
    monkeypatch.setattr(kafka_client, "offset_listing", lambda *_modules: None)
    with pytest.raises(UnsupportedFeatureError, match="can list no partition's offsets") as raised:
        kafka_client._offset_way()
    assert isinstance(raised.value, KafkaError)


def test_offset_listing_of_the_imported_release_follows_its_own_api() -> None:
    """The imported release's way is the one its own modules offer: the admin's where it has ``OffsetSpec``."""
    import confluent_kafka as ck
    from confluent_kafka import admin

    from kconform.reference_impl import kafka_client

    assert kafka_client._offset_way() == ("admin" if hasattr(admin, "OffsetSpec") else "consumer")
    assert kafka_client._offset_way() == kafka_client.offset_listing(ck, admin)


def test_listing_the_offsets_of_a_partition_no_leader_is_known_for_yet_asks_again_within_its_bound(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """librdkafka's admin answers ListOffsets of a partition added moments ago with _NOENT "No leaders found" until
    its metadata has the leader: asked again until the client's bound, then the error."""
    import confluent_kafka as ck

    from kconform.reference_impl import kafka_client
    from kconform.reference_impl.ports import Isolation
    from kconform.reference_impl.types import TopicPartition

    monkeypatch.setattr(kafka_client, "_offset_way", lambda: "admin")
    answers: list[object] = [ck.KafkaError(ck.KafkaError._NOENT, "No leaders found")] * 2 + [7]

    def admin_offset(*_args: object) -> int:
        answer = answers.pop(0)
        if isinstance(answer, ck.KafkaError):
            raise ck.KafkaException(answer)
        return int(str(answer))

    client = SimpleNamespace(timeout_s=5.0, _admin_offset=admin_offset, list_topics=lambda: ["t"])
    tp = TopicPartition("t", 4)
    assert kafka_client.KafkaClient._list_offset(client, tp, "latest", Isolation.READ_UNCOMMITTED) == 7  # type: ignore[arg-type]
    answers[:] = [ck.KafkaError(ck.KafkaError._NOENT, "No leaders found")] * 1000
    client.timeout_s = 0.2
    with pytest.raises(KafkaError, match="No leaders found"):
        kafka_client.KafkaClient._list_offset(client, tp, "latest", Isolation.READ_UNCOMMITTED)  # type: ignore[arg-type]
