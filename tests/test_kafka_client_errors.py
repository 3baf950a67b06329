"""The reference's Kafka client names the transaction timeout in an error met after a transaction outlived it
(COMMIT-021): librdkafka reports the broker's abort as a fenced producer, naming neither the setting nor the age."""

from __future__ import annotations

import threading
import time

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


def test_a_release_without_offset_listing_is_a_missing_feature_not_a_crash(monkeypatch: pytest.MonkeyPatch) -> None:
    """confluent-kafka before 2.3.0 has no ``admin.OffsetSpec``: listing offsets there raises the ports'
    ``UnsupportedFeatureError`` naming the release it needs (the workload reports could-not-check), never an
    ``AttributeError`` a test would show as a violation."""
    from kconform.reference_impl import kafka_client
    from kconform.reference_impl.ports import UnsupportedFeatureError

    monkeypatch.delattr(kafka_client.ck_admin, "OffsetSpec")
    with pytest.raises(UnsupportedFeatureError, match=r"2\.3\.0") as raised:
        kafka_client._offset_spec()
    assert isinstance(raised.value, KafkaError)


def test_offset_listing_uses_the_release_s_offset_spec() -> None:
    """Where the release has it, the listing's spec is confluent-kafka's own."""
    from kconform.reference_impl import kafka_client

    assert kafka_client._offset_spec() is kafka_client.ck_admin.OffsetSpec
