"""Option mapping of ``kconform.conformance.adapters.spark_kafka`` (no Spark, no broker): what the suite's
source and sink specs become in Spark's own ``format("kafka")`` options."""

from __future__ import annotations

import pytest

from kconform.conformance.adapter.guard import call
from kconform.conformance.adapter.interface import PIPELINE_CAPABILITIES, SinkSpec, SourceSpec
from kconform.conformance.adapter.loader import load_adapter
from kconform.conformance.adapters.spark_kafka import ADAPTER, REAL_TIME, java_settings, sink_options, source_options
from kconform.conformance.jvm import JvmArtifactsMissing
from kconform.reference_impl.credentials import Secret, reveal, revealed


def test_loads_as_a_pipeline_adapter_declaring_only_what_spark_offers() -> None:
    loaded = load_adapter("kconform.conformance.adapters.spark_kafka:ADAPTER")
    assert loaded is ADAPTER
    assert ADAPTER.capabilities <= set(PIPELINE_CAPABILITIES)
    assert "pipeline-exactly-once-sink" not in ADAPTER.capabilities  # the sink is at-least-once
    assert "pipeline-assignment" not in ADAPTER.capabilities  # Spark has no Flink assigner


def test_topics_become_subscribe_and_parallelism_min_partitions() -> None:
    spec = SourceSpec("h:9092", 3, subscribe=("a", "b"), starting_offsets="latest", max_records_per_trigger=25)
    assert source_options(spec) == {
        "kafka.bootstrap.servers": "h:9092",
        "subscribe": "a,b",
        "startingOffsets": "latest",
        "minPartitions": "3",
        "failOnDataLoss": "true",
        "maxOffsetsPerTrigger": "25",
    }


def test_accepting_data_loss_is_fail_on_data_loss_false() -> None:
    assert source_options(SourceSpec("h:9092", 1, subscribe=("a",), accept_data_loss=True))["failOnDataLoss"] == "false"


def test_a_pattern_becomes_subscribe_pattern_without_a_trigger_limit() -> None:
    options = source_options(SourceSpec("h:9092", 2, subscribe_pattern="kc-.*"))
    assert options["subscribePattern"] == "kc-.*"
    assert "subscribe" not in options
    assert "maxOffsetsPerTrigger" not in options


@pytest.mark.parametrize(("topics", "pattern"), [((), None), (("a",), "a.*")])
def test_a_source_needs_topics_or_a_pattern_not_both(topics: tuple[str, ...], pattern: str | None) -> None:
    with pytest.raises(ValueError, match="exactly one"):
        source_options(SourceSpec("h:9092", 2, subscribe=topics, subscribe_pattern=pattern))


def test_client_settings_become_java_kafka_options_on_both_sides() -> None:
    settings = (("security.protocol", "SASL_SSL"), ("sasl.mechanisms", "SCRAM-SHA-256"), ("sasl.username", "u"),
                ("sasl.password", "p"), ("ssl.ca.location", "/ca.pem"), ("linger.ms", "5"))  # fmt: skip
    source = source_options(SourceSpec("h:9092", 2, subscribe=("a",), client_settings=settings))
    sink = sink_options(SinkSpec("h:9092", "out", exactly_once=False, client_settings=settings))
    expected = {
        "kafka.security.protocol": "SASL_SSL",
        "kafka.sasl.mechanism": "SCRAM-SHA-256",
        "kafka.sasl.jaas.config": 'org.apache.kafka.common.security.scram.ScramLoginModule required username="u" '
        'password="p";',
        "kafka.ssl.truststore.location": "/ca.pem",
        "kafka.ssl.truststore.type": "PEM",
        "kafka.linger.ms": "5",
    }
    assert {k: v for k, v in revealed(source).items() if k in expected} == expected
    assert revealed(sink) == {**expected, "kafka.bootstrap.servers": "h:9092", "topic": "out"}
    assert isinstance(sink["kafka.sasl.jaas.config"], Secret), "the JAAS line carries the password: never shown"


def test_bootstrap_servers_of_the_spec_win_over_a_client_setting() -> None:
    spec = SinkSpec("h:9092", "out", exactly_once=False, client_settings=(("bootstrap.servers", "other:1"),))
    assert sink_options(spec)["kafka.bootstrap.servers"] == "h:9092"


def test_plain_sasl_is_the_default_mechanism() -> None:
    jaas = reveal(java_settings([("sasl.username", "u"), ("sasl.password", "p")])["sasl.jaas.config"])
    assert jaas.startswith("org.apache.kafka.common.security.plain.PlainLoginModule required")


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ([("queue.buffering.max.messages", "1")], "no equivalent"),
        ([("sasl.mechanisms", "GSSAPI"), ("sasl.username", "u")], "no JAAS login module"),
    ],
)
def test_a_setting_java_cannot_take_is_an_error_naming_it(settings: list[tuple[str, str]], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        java_settings(settings)


def test_exactly_once_is_refused_the_sink_has_no_transactional_mode() -> None:
    with pytest.raises(ValueError, match="at-least-once only"):
        sink_options(SinkSpec("h:9092", "out", exactly_once=True))


def test_missing_connector_jars_pass_through_the_guard_as_a_setup_error_not_a_violation() -> None:
    """The suite turns an adapter's exception into an ``AdapterError`` (a violation), except a missing
    ``make setup``: that reaches the runner, which reports the test ERROR (could not check)."""

    def missing() -> None:
        raise JvmArtifactsMissing("run `make setup`")

    with pytest.raises(JvmArtifactsMissing, match="make setup"):
        call("spark-sql-kafka-0-10", "read_stream", missing)


def test_real_time_mode_passes_neither_min_partitions_nor_a_trigger_limit() -> None:
    """Spark refuses both there ("... is not compatible with real time mode"): each would fail every query."""
    spec = SourceSpec("h:9092", 3, subscribe=("a",), max_records_per_trigger=25)
    options = source_options(spec, real_time=True)
    expected = {"kafka.bootstrap.servers": "h:9092", "subscribe": "a", "startingOffsets": "earliest"}
    assert options == {**expected, "failOnDataLoss": "true"}
    assert REAL_TIME.real_time_batch is not None and ADAPTER.real_time_batch is None
    assert REAL_TIME.capabilities <= ADAPTER.capabilities
