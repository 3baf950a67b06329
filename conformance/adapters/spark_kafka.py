"""Spark's built-in Kafka connector (``spark-sql-kafka-0-10``, format ``kafka``) as a pipeline adapter.

The connector is judged as it ships: the suite's scenarios become its own options, nothing is
patched. What it does not offer is not declared, so those scenarios are skipped with the reason:

- ``pipeline-assignment``: Spark plans one task per Kafka partition with new records, in the order
  of its offset map (more when ``minPartitions`` splits a partition into offset ranges); it has no
  notion of Flink's assigner placing partition p on subtask i.
- ``pipeline-exactly-once-sink``: the sink has no transactional mode; it is at-least-once
  (Spark's Structured Streaming + Kafka guide), so the suite allows its duplicates, never a loss.
- ``pipeline-transactional-id-prefix``: with no transactions it has no transactional ids to name, so the
  scenarios of sinks under chosen prefixes (COMMIT-016, COMMIT-017) skip.

``REAL_TIME`` is the same connector in Spark's real-time mode (``trigger(realTime=...)``, Spark 4.1+):
long-running batches of a fixed duration, one task per Kafka partition. ``minPartitions`` and
``maxOffsetsPerTrigger`` are refused there ("... is not compatible with real time mode",
``KafkaMicroBatchStream``), so it passes neither: its tasks are its partitions and its batches end in time.

``kconform setup`` resolves the connector's jars (``jvm/spark-kafka/pom.xml``) and
``kconform.conformance.spark.pipeline.local_session`` puts them on ``spark.jars``.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Final

from ...reference_impl.configs import CONTRACT_VERSION
from ...reference_impl.credentials import Secret, reveal, revealed
from ..adapter.interface import SinkSpec, SourceSpec
from ..jvm import JvmArtifactsMissing, artifact_version, jvm_dir, setup_hint
from ..jvm.spark_at_release import SPARK_VERSION_ENV, connector_module, pinned, scala_binary

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.streaming.readwriter import DataStreamWriter

FORMAT: Final = "kafka"
PROVIDER: Final = "org.apache.spark.sql.kafka010.KafkaSourceProvider"

RENAMED: Final = {"sasl.mechanisms": "sasl.mechanism"}
"""librdkafka settings the Java client spells differently."""
NO_JAVA_EQUIVALENT: Final = frozenset({"queue.buffering.max.messages", "queue.buffering.max.kbytes"})
"""librdkafka settings a scenario may pass that the Java client has no setting for."""
SASL_LOGIN: Final = {
    "PLAIN": "org.apache.kafka.common.security.plain.PlainLoginModule",
    "SCRAM-SHA-256": "org.apache.kafka.common.security.scram.ScramLoginModule",
    "SCRAM-SHA-512": "org.apache.kafka.common.security.scram.ScramLoginModule",
}


def java_settings(settings: Iterable[tuple[str, str | Secret]]) -> dict[str, str | Secret]:
    """The suite's librdkafka settings as the Java client's (Spark's ``kafka.*`` options take those).

    Most names are shared; SASL credentials become a JAAS line (a ``Secret``) and a PEM CA file a PEM trust store.
    A setting with no Java equivalent is a ``ValueError`` naming it, not silently dropped.
    """
    given = dict(settings)
    unknown = sorted(given.keys() & NO_JAVA_EQUIVALENT)
    if unknown:
        raise ValueError(f"spark-sql-kafka: the Java Kafka client has no equivalent of librdkafka's {unknown}")
    out = {RENAMED.get(k, k): v for k, v in given.items() if k not in ("sasl.username", "sasl.password")}
    if "sasl.username" in given:
        mechanism = reveal(out.get("sasl.mechanism", "PLAIN"))
        if mechanism not in SASL_LOGIN:
            raise ValueError(f"spark-sql-kafka: no JAAS login module for SASL mechanism {mechanism!r}")
        user, password = given["sasl.username"], reveal(given.get("sasl.password", ""))
        out["sasl.jaas.config"] = Secret(f'{SASL_LOGIN[mechanism]} required username="{user}" password="{password}";')
    if "ssl.ca.location" in out:
        out["ssl.truststore.location"] = out.pop("ssl.ca.location")
        out["ssl.truststore.type"] = "PEM"
    return out


def source_options(source: SourceSpec, real_time: bool = False) -> dict[str, str | Secret]:
    """The ``readStream.format("kafka")`` options of a scenario's source.

    ``parallelism`` becomes ``minPartitions``, Spark's only knob on the tasks of a batch: a lower
    bound, not Flink's n (a batch has one task per partition with new records, and splits partitions
    into offset ranges when fewer than n have any). ``maxRecordsPerTrigger`` is ``maxOffsetsPerTrigger``;
    ``accept_data_loss`` is ``failOnDataLoss`` negated, set either way (RESTORE-015).
    In ``real_time`` mode Spark refuses the first two, so neither is passed: a batch there is one task per
    partition, ended by the batch duration, not by a record count.
    """
    if bool(source.subscribe) == (source.subscribe_pattern is not None):
        raise ValueError("spark-sql-kafka: a source subscribes to topics or to a pattern, exactly one of them")
    options: dict[str, str | Secret] = {f"kafka.{k}": v for k, v in java_settings(source.client_settings).items()}
    options |= {
        "kafka.bootstrap.servers": source.bootstrap_servers,
        "startingOffsets": source.starting_offsets,
        "failOnDataLoss": str(not source.accept_data_loss).lower(),
    }
    if not real_time:
        options["minPartitions"] = str(source.parallelism)
    if source.subscribe:
        options["subscribe"] = ",".join(source.subscribe)
    else:
        options["subscribePattern"] = str(source.subscribe_pattern)
    if source.max_records_per_trigger is not None and not real_time:
        options["maxOffsetsPerTrigger"] = str(source.max_records_per_trigger)
    if source.client_timeout_ms is not None:
        options["kafkaConsumer.pollTimeoutMs"] = str(source.client_timeout_ms)
    return options


def sink_options(sink: SinkSpec) -> dict[str, str | Secret]:
    """The ``writeStream.format("kafka")`` options of a scenario's sink; exactly-once is refused (it has none)."""
    if sink.exactly_once:
        raise ValueError("spark-sql-kafka's sink is at-least-once only: it has no transactional (exactly-once) mode")
    options: dict[str, str | Secret] = {f"kafka.{k}": v for k, v in java_settings(sink.client_settings).items()}
    if sink.client_timeout_ms is not None:
        options["kafka.request.timeout.ms"] = str(sink.client_timeout_ms)
    return options | {"kafka.bootstrap.servers": sink.bootstrap_servers, "topic": sink.topic}


def connector_missing(spark: SparkSession) -> str | None:
    """Why ``spark`` cannot load the connector, naming the fix; ``None`` when its classes load."""
    from py4j.protocol import Py4JJavaError  # type: ignore[import-untyped]

    jvm: Any = spark.sparkContext._jvm
    try:
        jvm.java.lang.Class.forName(PROVIDER, False, jvm.org.apache.spark.util.Utils.getContextOrSparkClassLoader())
    except Py4JJavaError:
        return (
            f"this SparkSession cannot load Spark's Kafka connector ({PROVIDER}): {setup_hint()} to resolve "
            f"jvm/spark-kafka into {jvm_dir() / connector_module(os.environ)} and start the session with "
            "kconform.conformance.spark.pipeline.local_session (it sets spark.jars), "
            "or put spark-sql-kafka-0-10 on spark.jars yourself"
        )
    return None


def require_connector(spark: SparkSession) -> None:
    """Fail naming the fix when the session cannot load the connector (Spark's own error names no command)."""
    missing = connector_missing(spark)
    if missing is not None:
        raise JvmArtifactsMissing(missing)


@dataclass(frozen=True)
class SparkKafkaAdapter:
    """``format("kafka")`` source and at-least-once sink, as Spark ships them."""

    contract_version: ClassVar[int] = CONTRACT_VERSION
    name: str = "spark-sql-kafka-0-10"
    capabilities: frozenset[str] = frozenset(
        {"pipeline", "pipeline-rescale", "pipeline-regex", "pipeline-sink", "pipeline-keyed-sink"}
    )
    real_time_batch: str | None = None
    """The batch duration of Spark's real-time trigger, which the suite's queries then run under;
    ``None``: micro-batches (``kconform.conformance.spark.real_time.batch_duration`` reads it)."""

    def versions(self) -> dict[str, str]:
        """The connector's jars judged (for ``kconform verdicts``), as ``kconform setup`` resolved them."""
        module = connector_module(os.environ)
        connector = f"spark-sql-kafka-0-10_{scala_binary(os.environ.get(SPARK_VERSION_ENV) or pinned())}"
        return {jar: artifact_version(module, jar) for jar in (connector, "kafka-clients")}

    def read_stream(self, spark: SparkSession, source: SourceSpec) -> DataFrame:
        require_connector(spark)
        options = source_options(source, real_time=self.real_time_batch is not None)
        return spark.readStream.format(FORMAT).options(**revealed(options)).load()

    def write_stream(self, frame: DataFrame, sink: SinkSpec) -> DataStreamWriter:
        options = sink_options(sink)
        require_connector(frame.sparkSession)
        return frame.writeStream.format(FORMAT).options(**revealed(options))


ADAPTER: Final = SparkKafkaAdapter()
"""``--adapter kconform.conformance.adapters.spark_kafka:ADAPTER``."""

REAL_TIME_BATCH: Final = "5 seconds"
"""Short, as each run of a scenario waits for a batch to end (one run: about 10 s here), and accepted by Spark
4.2.0's ``spark.sql.streaming.realTimeMode.minBatchDuration`` (the mode's documented default is 5 minutes)."""

REAL_TIME: Final = SparkKafkaAdapter(
    name="spark-sql-kafka-0-10 (real-time mode)",
    capabilities=ADAPTER.capabilities,
    real_time_batch=REAL_TIME_BATCH,
)
"""``--adapter kconform.conformance.adapters.spark_kafka:REAL_TIME``: the same connector, every query in
Spark's real-time mode."""
