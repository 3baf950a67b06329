"""KAFKA-016 on real brokers: a transactional batch produced with no AddPartitionsToTxn is refused by a broker that
verifies it with the coordinator (4.4.0's default), and accepted by one that does not (3.9.2, and 4.4.0 too, with
``transaction.partition.verification.enable=false``: the probe's Produce v8 is a transactions v1 client's request,
which transaction.version=2 does not make a 4.x broker verify), where it then holds read_committed: the probe's
capability ``outside_write_refused`` says which, and fails on the broken broker."""

from __future__ import annotations

import re

import pytest

from kconform.conformance.brokers import KafkaBroker
from kconform.conformance.brokers.facts import read_facts
from kconform.conformance.brokers.probe import _Probe
from kconform.reference_impl.kafka_client import KafkaClient

VERIFICATION = "transaction.partition.verification.enable"
ENDS = re.compile(r"high watermark (\d+), read_committed end \(LSO\) (\d+)")


def _measure(kafka_version: str, settings: dict[str, str]) -> tuple[bool, str, int, int]:
    """The capability on a fresh broker of ``kafka_version``: supported, observation, high watermark, LSO."""
    with (
        KafkaBroker(settings=settings, kafka_version=kafka_version) as broker,
        KafkaClient(broker, timeout_s=10.0) as client,
    ):
        capability = _Probe(client).outside_write_refused()
        facts = read_facts(broker)
    assert (facts.source, facts.transaction_version) == ("broker", 2 if kafka_version.startswith("4.") else 0), facts
    assert capability.requirement_id == "KAFKA-016"
    found = ENDS.search(capability.observation)
    assert found, capability.observation
    return capability.supported, capability.observation, int(found[1]), int(found[2])


def test_required_KAFKA_016_the_default_broker_refuses_a_write_outside_the_transaction() -> None:
    supported, observation, high, stable = _measure("4.4.0", {})
    assert supported, observation
    assert "INVALID_TXN_STATE" in observation
    assert (high, stable) == (2, 2), observation  # the two plain records only: nothing appended, nothing held


@pytest.mark.parametrize("kafka_version", ["3.9.2", "4.4.0"])  # 4.4.0 at transaction.version=2 verifies v12+ only
def test_required_KAFKA_016_a_broker_without_verification_accepts_it_and_hangs(kafka_version: str) -> None:
    supported, observation, high, stable = _measure(kafka_version, {VERIFICATION: "false"})
    assert not supported, observation
    assert "accepted at offset 1" in observation
    assert (high, stable) == (3, 1), observation  # the batch at 1 holds the LSO below the plain record after it
    assert "hanging transaction" in observation
