"""Option parsing of the source and sink: pure, no Spark or broker; every error names its option."""

from __future__ import annotations

import pytest

from kconform.reference_impl.spark import OptionError
from kconform.reference_impl.spark.sink import SinkOptions
from kconform.reference_impl.spark.source import SourceOptions
from kconform.reference_impl.spark.starting import StartingOffsets
from kconform.reference_impl.types import LATEST

BOOTSTRAP = {"bootstrap.servers": "127.0.0.1:9092"}


@pytest.mark.parametrize(
    ("options", "named"),
    [
        ({"subscribe": "a"}, "bootstrap.servers"),
        (BOOTSTRAP, "subscribe"),
        ({**BOOTSTRAP, "subscribe": "a", "subscribePattern": "a.*"}, "subscribe"),
        ({**BOOTSTRAP, "subscribe": " , "}, "subscribe"),
        ({**BOOTSTRAP, "subscribePattern": "("}, "subscribePattern"),
        ({**BOOTSTRAP, "subscribe": "a", "parallelism": "0"}, "parallelism"),
        ({**BOOTSTRAP, "subscribe": "a", "parallelism": "two"}, "parallelism"),
        ({**BOOTSTRAP, "subscribe": "a", "startingOffsets": "middle"}, "startingOffsets"),
        ({**BOOTSTRAP, "subscribe": "a", "startingOffsets": '{"a": {"0": 1'}, "startingOffsets"),
        ({**BOOTSTRAP, "subscribe": "a", "startingOffsets": '{"a": {"x": 1}}'}, "startingOffsets"),
        ({**BOOTSTRAP, "subscribe": "a", "startingOffsets": '{"a": {"0": -3}}'}, "startingOffsets"),
        ({**BOOTSTRAP, "subscribe": "a", "startingOffsets": '{"a": {"0": "5"}}'}, "startingOffsets"),
        ({**BOOTSTRAP, "subscribe": "a", "startingOffsets": '{"a": [1]}'}, "startingOffsets"),
        ({**BOOTSTRAP, "subscribe": "a", "startingOffsets": "{}"}, "startingOffsets"),
        ({**BOOTSTRAP, "subscribe": "a", "maxRecordsPerTrigger": "-1"}, "maxRecordsPerTrigger"),
        ({**BOOTSTRAP, "subscribe": "a", "timeoutMs": "0"}, "timeoutMs"),
    ],
)
def test_wrong_source_option_names_itself(options: dict[str, str], named: str) -> None:
    with pytest.raises(OptionError, match=f"option '{named}'"):
        SourceOptions.parse(options)


@pytest.mark.parametrize(
    ("options", "named"),
    [
        (BOOTSTRAP, "topic"),
        ({**BOOTSTRAP, "topic": "t", "deliveryGuarantee": "at-most-once"}, "deliveryGuarantee"),
        ({**BOOTSTRAP, "topic": "t", "transactionalIdPrefix": ""}, "transactionalIdPrefix"),
    ],
)
def test_wrong_sink_option_names_itself(options: dict[str, str], named: str) -> None:
    with pytest.raises(OptionError, match=f"option '{named}'"):
        SinkOptions.parse(options)


def test_kafka_options_pass_through_without_their_prefix() -> None:
    parsed = SourceOptions.parse({**BOOTSTRAP, "subscribe": "a,b", "kafka.isolation.level": "read_committed"})
    assert dict(parsed.connection.settings) == {
        "isolation.level": "read_committed",
        "log_level": "4",
        "reconnect.backoff.ms": "20",
    }
    assert parsed.subscription.topics == frozenset({"a", "b"})
    assert (parsed.parallelism, parsed.starting, parsed.max_records) == (1, StartingOffsets(LATEST), None)


def test_a_kafka_option_overrides_the_connector_s_client_default() -> None:
    parsed = SourceOptions.parse(
        {**BOOTSTRAP, "subscribe": "a", "kafka.log_level": "7", "kafka.reconnect.backoff.ms": "100"}
    )
    assert dict(parsed.connection.settings) == {"log_level": "7", "reconnect.backoff.ms": "100"}
