"""``kconform.conformance.adapters.paired``: one connector's source with another's sink (no Spark, no broker)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kconform.conformance.adapter.guard import guard
from kconform.conformance.adapter.interface import PIPELINE_CAPABILITIES, PipelineAdapter, SinkSpec, SourceSpec
from kconform.conformance.adapter.loader import load_adapter
from kconform.conformance.adapters.paired import (
    SINK_CAPABILITIES,
    SOURCE_CAPABILITIES,
    SPARK_SOURCE_REFERENCE_SINK,
    PairedAdapter,
)
from kconform.conformance.adapters.spark_kafka import ADAPTER as SPARK_KAFKA
from kconform.conformance.soak.guarantee import Guarantee, declared_guarantee
from kconform.conformance.spark.pipeline import SPARK_ADAPTER


@dataclass(frozen=True)
class Recorder:
    """A pipeline adapter that answers with what it was asked, so a test sees which half answered."""

    name: str
    capabilities: frozenset[str]
    calls: list[tuple[str, Any]] = field(default_factory=list)

    def read_stream(self, spark: Any, source: SourceSpec) -> Any:
        self.calls.append(("read_stream", source))
        return f"{self.name} frame"

    def write_stream(self, frame: Any, sink: SinkSpec) -> Any:
        self.calls.append(("write_stream", frame))
        return f"{self.name} writer"


def test_every_pipeline_capability_belongs_to_the_source_or_the_sink() -> None:
    """A capability added to the contract must be placed, or a pair would silently never declare it."""
    assert {"pipeline"} | SOURCE_CAPABILITIES | SINK_CAPABILITIES == set(PIPELINE_CAPABILITIES)
    assert not SOURCE_CAPABILITIES & SINK_CAPABILITIES


def test_the_pair_reads_with_the_source_writes_with_the_sink_and_declares_each_halfs_own() -> None:
    source = Recorder("src", frozenset({"pipeline", "pipeline-regex", "pipeline-exactly-once-sink"}))
    sink = Recorder("snk", frozenset({"pipeline", "pipeline-assignment", "pipeline-sink"}))
    pair = PairedAdapter(source, sink)
    assert isinstance(pair, PipelineAdapter) and pair.name == "src+snk"
    assert pair.capabilities == {"pipeline", "pipeline-regex", "pipeline-sink"}
    spec = SourceSpec("h:9092", 2, subscribe=("a",))
    guarded = guard(pair)
    assert guarded.read_stream("spark", spec) == "src frame"
    assert guarded.write_stream("src frame", SinkSpec("h:9092", "out", exactly_once=False)) == "snk writer"
    assert source.calls == [("read_stream", spec)] and sink.calls == [("write_stream", "src frame")]


def test_spark_source_with_the_reference_sink_is_soaked_as_exactly_once() -> None:
    loaded = load_adapter("kconform.conformance.adapters.paired:SPARK_SOURCE_REFERENCE_SINK")
    assert loaded is SPARK_SOURCE_REFERENCE_SINK
    assert loaded.capabilities == {
        "pipeline", "pipeline-rescale", "pipeline-regex", "pipeline-sink", "pipeline-exactly-once-sink",
        "pipeline-keyed-sink", "pipeline-transactional-id-prefix",
    }  # fmt: skip
    assert "pipeline-assignment" not in loaded.capabilities  # Spark's source has no Flink assigner
    assert declared_guarantee(loaded.capabilities) is Guarantee.EXACTLY_ONCE
    assert declared_guarantee(SPARK_KAFKA.capabilities) is Guarantee.AT_LEAST_ONCE
    assert SPARK_SOURCE_REFERENCE_SINK.source is SPARK_KAFKA and SPARK_SOURCE_REFERENCE_SINK.sink is SPARK_ADAPTER


@dataclass(frozen=True)
class Versioned(Recorder):
    def versions(self) -> dict[str, str]:
        return {f"{self.name}.jar": "1.0"}


def test_the_pair_names_the_jars_of_each_half_that_names_them() -> None:
    """``kconform verdicts`` prints what was judged: a half without ``versions()`` adds nothing."""
    jarless = Recorder("ref", frozenset({"pipeline"}))
    assert PairedAdapter(Versioned("spark", frozenset({"pipeline"})), jarless).versions() == {"spark.jar": "1.0"}
    assert PairedAdapter(jarless, Versioned("snk", frozenset({"pipeline"}))).versions() == {"snk.jar": "1.0"}
