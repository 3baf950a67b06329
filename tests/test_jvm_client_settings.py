"""The kafka-clients settings the client workload draws come from the clients' own ConfigDef (a harness dump)."""

from __future__ import annotations

import re

import confluent_kafka as ck
import pytest

from kconform.conformance.workloads.clients.driver import CALL_SLACK_S
from kconform.conformance.workloads.clients.jvm_clients import (
    ASSIGNORS,
    JAVA_BOUNDED,
    JAVA_CAPS,
    JAVA_WORKLOAD_DEFAULTS,
    catalogue,
    parse_configdef,
    parse_setting,
    translate,
)


def row(name: str, kind: str, validator: str | None, default: str | None = None, importance: str = "LOW") -> dict:
    return {"name": name, "type": kind, "validator": validator, "default": default, "importance": importance}


def test_a_configdef_key_becomes_a_setting_with_its_own_range() -> None:
    assert parse_setting(row("fetch.min.bytes", "INT", "[0,...]", "1", "HIGH"), "C") is not None
    fetch = parse_setting(row("fetch.min.bytes", "INT", "[0,...]", "1", "HIGH"), "C")
    assert fetch and (fetch.low, fetch.high, fetch.default, fetch.importance) == (0, 2**31 - 1, "1", "high")
    level = parse_setting(row("compression.zstd.level", "INT", "[-131072,...,22]", "3"), "P")
    assert level and (level.low, level.high) == (-131072, 22)
    capped = parse_setting(row("session.timeout.ms", "INT", None, "45000"), "C")
    assert capped and (capped.low, capped.high) == (6_000, 10_000)  # settings.FLOORS and CAPS
    protocol = parse_setting(row("group.protocol", "STRING", "(case insensitive) [CONSUMER, CLASSIC]", "classic"), "C")
    assert protocol and protocol.choices == ("consumer", "classic")
    reset = parse_setting(row("auto.offset.reset", "STRING", "[latest, earliest, none, by_duration:PnDTnHnMn.nS]"), "C")
    assert reset and reset.choices == ("latest", "earliest")
    flag = parse_setting(row("enable.idempotence", "BOOLEAN", None, "true"), "P")
    assert flag and flag.choices == ("true", "false")
    for free in (
        row("group.id", "STRING", None),
        row("interceptor.classes", "LIST", "non-null string"),
        row("sasl.login.refresh.window.factor", "DOUBLE", "[0.5,...,1.0]"),
    ):
        assert parse_setting(free, "C") is None


def test_the_catalogue_draws_neither_what_the_workload_sets_nor_transport_and_security() -> None:
    dump = {
        "consumer": [row("group.id", "STRING", None), row("retry.backoff.ms", "LONG", "[0,...]", "100")],
        "producer": [
            row("ssl.protocol", "STRING", "[TLSv1.2, TLSv1.3]"),
            row("retry.backoff.ms", "LONG", "[0,...]", "100"),
            row("delivery.timeout.ms", "INT", "[0,...]", "120000"),
        ],
    }
    found = {s.name: s for s in parse_configdef(dump)}
    assert set(found) == {"retry.backoff.ms", "delivery.timeout.ms", "partition.assignment.strategy"}
    assert found["retry.backoff.ms"].role == "*"
    assert (found["delivery.timeout.ms"].low, found["delivery.timeout.ms"].high) == (30_500, 60_000)
    assert found["partition.assignment.strategy"].choices == ASSIGNORS


def test_the_pinned_kafka_clients_catalogue() -> None:
    names = {s.name for s in catalogue()}
    assert {"isolation.level", "enable.auto.commit", "acks", "enable.idempotence", "max.poll.records"} <= names
    assert not names & {"bootstrap.servers", "group.id", "ssl.protocol", "security.protocol", "key.deserializer"}


def test_a_setting_kafka_clients_lacks_is_refused_by_name_unless_the_harness_set_it() -> None:
    known = frozenset({"session.timeout.ms", "fetch.max.wait.ms", "group.protocol"})
    settings, callbacks, dropped = translate(
        {"session.timeout.ms": 6000, "fetch.wait.max.ms": 100, "log_level": 0, "on_commit": print},
        known,
        frozenset({"session.timeout.ms", "fetch.wait.max.ms"}),
        "4.1.1",
    )
    assert settings == {"session.timeout.ms": "6000", "fetch.max.wait.ms": "100"}
    assert set(callbacks) == {"on_commit"} and dropped == ["log_level"]
    with pytest.raises(
        ck.KafkaException, match=re.escape('No such configuration property: "enable.auto.offset.store"')
    ):
        translate({"enable.auto.offset.store": False}, known, frozenset(), "4.1.1")


def test_a_producer_that_draws_no_delivery_timeout_flushes_within_the_driver_s_bound() -> None:
    """KafkaProducer.flush() takes no timeout: it returns once every record sent before it is acknowledged or failed,
    each within the producer's delivery.timeout.ms. kafka-clients' default (120 s) let a flush that waited out a
    record's delivery look hung at the driver's flush bound (30 s + CALL_SLACK_S); the workload's own default is
    the lowest value the draw takes, which kafka-clients accepts with every capped linger.ms and request.timeout.ms."""
    delivery = int(JAVA_WORKLOAD_DEFAULTS["delivery.timeout.ms"])
    assert delivery / 1000 < 30.0 + CALL_SLACK_S
    assert delivery == JAVA_BOUNDED["delivery.timeout.ms"][0]
    assert delivery >= JAVA_CAPS["linger.ms"] + JAVA_CAPS["request.timeout.ms"]
    settings, _, _ = translate({}, frozenset({"delivery.timeout.ms", "linger.ms"}), frozenset(), "4.4.0")
    assert settings["delivery.timeout.ms"] == "30500"
    drawn, _, _ = translate({"delivery.timeout.ms": 45000}, frozenset({"delivery.timeout.ms"}), frozenset(), "4.4.0")
    assert drawn["delivery.timeout.ms"] == "45000"  # a drawn value stays
    consumer, _, _ = translate({}, frozenset({"fetch.min.bytes"}), frozenset(), "4.4.0")
    assert "delivery.timeout.ms" not in consumer  # a producer's setting: a consumer that lacks it is not given it
