"""One connector's source paired with another's sink, as one pipeline adapter.

A query is judged end to end, so a sink's guarantee can hide what its source does: Spark's built-in
at-least-once sink makes a record its source reads twice an allowed duplicate. Paired with the
reference exactly-once sink, the same source's repeat becomes a failure (COMMIT-011):

    kconform soak --adapter kconform.conformance.adapters.paired:SPARK_SOURCE_REFERENCE_SINK

The pair declares the source's source capabilities and the sink's sink capabilities, nothing else:
a scenario neither half offers is skipped, as it would be for either alone. A sink's preconditions
on its source are judged too: the reference sink keys exactly-once on the task index, so it needs
every replay of a batch to give task i the same records, which Spark's source does not keep
(docs/soak.md, "Spark's built-in connector").
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar, Final

from ...reference_impl.configs import CONTRACT_VERSION
from ..spark.pipeline import SPARK_ADAPTER
from .spark_kafka import ADAPTER as SPARK_KAFKA

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.streaming.readwriter import DataStreamWriter

    from ..adapter.interface import PipelineAdapter, SinkSpec, SourceSpec

SOURCE_CAPABILITIES: Final = frozenset(
    {"pipeline-assignment", "pipeline-rescale", "pipeline-regex", "confluent-kafka-consumer"}
)
"""What ``read_stream`` alone earns: how a batch's tasks read, across restarts and new topics, and the client
they read with."""
SINK_CAPABILITIES: Final = frozenset(
    {"pipeline-sink", "pipeline-exactly-once-sink", "pipeline-keyed-sink", "pipeline-transactional-id-prefix"}
)
"""What ``write_stream`` alone earns: how the rows reach Kafka."""


@dataclass(frozen=True)
class PairedAdapter:
    """``read_stream`` of ``source``, ``write_stream`` of ``sink``."""

    contract_version: ClassVar[int] = CONTRACT_VERSION
    source: PipelineAdapter
    sink: PipelineAdapter

    @property
    def name(self) -> str:
        return f"{self.source.name}+{self.sink.name}"

    @property
    def capabilities(self) -> frozenset[str]:
        return (
            frozenset({"pipeline"})
            | (self.source.capabilities & SOURCE_CAPABILITIES)
            | (self.sink.capabilities & SINK_CAPABILITIES)
        )

    def versions(self) -> dict[str, str]:
        """Both halves' jars (for ``kconform verdicts``), where a half names them."""
        return {**getattr(self.source, "versions", dict)(), **getattr(self.sink, "versions", dict)()}

    def read_stream(self, spark: SparkSession, source: SourceSpec) -> DataFrame:
        return self.source.read_stream(spark, source)

    def write_stream(self, frame: DataFrame, sink: SinkSpec) -> DataStreamWriter:
        return self.sink.write_stream(frame, sink)


SPARK_SOURCE_REFERENCE_SINK: Final = PairedAdapter(SPARK_KAFKA, SPARK_ADAPTER)
"""Spark's built-in ``format("kafka")`` source writing through the reference exactly-once sink
(``format("kconform-kafka")``): the soak judges it by exactly-once, so a record the source reads twice fails."""
