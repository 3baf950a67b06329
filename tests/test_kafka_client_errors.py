"""The reference's Kafka client names the transaction timeout in an error met after a transaction outlived it
(COMMIT-021): librdkafka reports the broker's abort as a fenced producer, naming neither the setting nor the age."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from kconform.reference_impl.kafka_client import timeout_named
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
