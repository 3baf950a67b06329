"""Pipeline level: an adapter's Spark source (and optionally sink) as a real streaming query.

A ``Pipeline`` is one query definition bound to a checkpoint directory: start it, run it to the
end of what is available, stop it, or simulate a driver crash after the tasks of the last batch
committed but before Spark's commit log recorded it (``forget_last_commit``). Rescale is a new
``Pipeline`` on the same checkpoint with another ``parallelism``. Without a sink topic every
batch's rows are captured with the Spark task that read them, for the pure checkers of
``kconform.conformance.checks.pipeline_checkers``; a replayed batch id replaces its earlier capture, as an idempotent
downstream would. ``TaskFailures`` makes chosen tasks fail their first attempt mid-stream, so
Spark (with task retries, e.g. ``local[2,3]``) runs them again. An adapter that names a real-time
batch duration runs every query in Spark's real-time mode (``kconform.conformance.spark.real_time``).

The query's source and sink come from a ``kconform.conformance.adapter.interface.PipelineAdapter``;
``SPARK_ADAPTER`` is the reference implementation's (format ``kconform-kafka``).
"""

from __future__ import annotations

import importlib
import json
import os
import re
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator, Mapping
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Final

import pyspark
from pyspark.errors import PySparkException
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.streaming.query import StreamingQuery
from pyspark.sql.streaming.readwriter import DataStreamWriter
from pyspark.sql.types import BinaryType, DataType, IntegerType, LongType, StringType

from ...reference_impl.adapter import ReferenceAdapter
from ...reference_impl.configs import CONTRACT_VERSION
from ...reference_impl.credentials import Secret, revealed
from ...reference_impl.kafka_client import KafkaClient, stable_offsets, topic_records
from ...reference_impl.ports import Isolation
from ...reference_impl.spark import FORMAT, TIMEOUT_OPTION, register
from ...reference_impl.spark.offsets import SourceOffsets
from ...reference_impl.types import TopicPartition
from ..adapter.interface import DEFAULT_MASTER, PipelineAdapter, SinkSpec, SourceSpec
from ..checks.checkers import Violation
from ..checks.pipeline_checkers import ReadRecord, check_sink_output
from ..errors import ContractError, HarnessError
from ..jvm import JvmArtifactsMissing, jars, jvm_dir, setup_hint
from ..jvm.spark_at_release import connector_module, pinned
from .cluster import STANDALONE, cluster_settings, is_local
from .failures import StalledOriginal, TaskFailures
from .injections import require_available_now
from .real_time import (
    RowCapture,
    await_committed_to_end,
    batch_duration,
    captured_batches,
    end_offsets,
    require_task_slots,
)

if TYPE_CHECKING:
    from ...reference_impl.spark.data_source import KafkaDataSource

QUERY_TIMEOUT_S: Final = 120
PREFIX_OPTION: Final = "transactionalIdPrefix"
"""The ``kconform-kafka`` sink's option naming its transactional ids (``SinkSpec.transactional_id_prefix``)."""


@dataclass(frozen=True)
class KconformKafkaAdapter:
    """The reference implementation at pipeline level: ``kconform-kafka`` source and sink.

    ``data_source`` is the Python data source registered and used by name: the pipeline mutants
    (``kconform.conformance.mutants.pipeline``) swap in a broken subclass.
    """

    contract_version: ClassVar[int] = CONTRACT_VERSION
    name: str = "spark-kconform-kafka"
    data_source: type[KafkaDataSource] | None = None
    """``None``: the reference's own, imported when a query needs it (pyspark 4's data source API)."""
    capabilities: frozenset[str] = frozenset(
        {
            "pipeline",
            "pipeline-assignment",
            "pipeline-rescale",
            "pipeline-regex",
            "pipeline-sink",
            "pipeline-exactly-once-sink",
            "pipeline-keyed-sink",
            "pipeline-transactional-id-prefix",
            "confluent-kafka-consumer",
        }
    )

    def source_class(self) -> type[KafkaDataSource]:
        """The data source registered and used by name; ``HarnessError`` on a pyspark without the API."""
        require_data_source_api()
        from ...reference_impl.spark.data_source import KafkaDataSource

        return self.data_source or KafkaDataSource

    def read_stream(self, spark: SparkSession, source: SourceSpec) -> DataFrame:
        data_source = self.source_class()
        spark.dataSource.register(data_source)
        reader = (
            spark.readStream.format(data_source.name())
            .option("bootstrap.servers", source.bootstrap_servers)
            .option("parallelism", str(source.parallelism))
            .option("startingOffsets", source.starting_offsets)
            .options(**revealed({f"kafka.{k}": v for k, v in source.client_settings}))
        )
        if source.subscribe:
            reader = reader.option("subscribe", ",".join(source.subscribe))
        if source.subscribe_pattern is not None:
            reader = reader.option("subscribePattern", source.subscribe_pattern)
        if source.max_records_per_trigger is not None:
            reader = reader.option("maxRecordsPerTrigger", str(source.max_records_per_trigger))
        if source.client_timeout_ms is not None:
            reader = reader.option(TIMEOUT_OPTION, str(source.client_timeout_ms))
        return reader.load()

    def write_stream(self, frame: DataFrame, sink: SinkSpec) -> DataStreamWriter:
        data_source = self.source_class()
        frame.sparkSession.dataSource.register(data_source)
        return (
            frame.writeStream.format(data_source.name())
            .option("bootstrap.servers", sink.bootstrap_servers)
            .option("topic", sink.topic)
            .option("deliveryGuarantee", "exactly-once" if sink.exactly_once else "at-least-once")
            .options(**revealed({f"kafka.{k}": v for k, v in sink.client_settings}))
            .options(**({TIMEOUT_OPTION: str(sink.client_timeout_ms)} if sink.client_timeout_ms is not None else {}))
            .options(**({PREFIX_OPTION: sink.transactional_id_prefix} if sink.transactional_id_prefix else {}))
        )


REFERENCE_API: Final = "Python streaming data source API"
REFERENCE_NEEDS: Final[dict[str, tuple[str, ...]]] = {
    "pyspark.sql.datasource": ("DataSource", "DataSourceStreamReader", "InputPartition", "DataSourceStreamArrowWriter"),
    "pyspark.sql.streaming.datasource": ("ReadLimit", "ReadMaxRows", "SupportsTriggerAvailableNow"),
}
"""What of PySpark the reference connector (``kconform.reference_impl.spark``) is written against, by module: the
data source classes (3.5 has none), the Arrow stream writer of its sink (from 4.1), and the admission control and
``Trigger.AvailableNow`` of its source (SPARK-55304, from 4.2). Measured on the pyspark wheels of 3.5.7, 4.0.1,
4.1.1 and 4.2.0."""
REFERENCE_SPARK: Final = "4.2"
"""The first PySpark line holding every name of ``REFERENCE_NEEDS``."""


def missing_reference_api() -> list[str]:
    """The names of ``REFERENCE_NEEDS`` this pyspark lacks (``module.Name``), found without importing the reference."""
    missing: list[str] = []
    for module_name, names in REFERENCE_NEEDS.items():
        try:
            module = importlib.import_module(module_name)
        except ImportError:
            missing += [f"{module_name}.{name}" for name in names]
            continue
        missing += [f"{module_name}.{name}" for name in names if not hasattr(module, name)]
    return missing


def require_data_source_api() -> None:
    """``HarnessError`` naming the way out when this pyspark lacks what of the Python streaming data source API the
    reference connector is written against (an older PySpark installed beside kconform, or ``kconform run
    --spark``): Spark would otherwise fail its queries inside the Python worker, which would read as the reference's
    violation. Only the tests that run the reference connector (its adapter, a paired adapter's reference sink) are
    ERROR; a JVM connector's scenarios never call this."""
    missing = missing_reference_api()
    way_out = (
        f"judge it on PySpark {REFERENCE_SPARK} (kconform run --spark {pinned()}); a JVM connector is judged on this "
        "release without it (e.g. --adapter kconform.conformance.adapters.spark_kafka:ADAPTER)"
    )
    if missing:
        raise HarnessError(
            f"the reference connector needs PySpark {REFERENCE_SPARK}'s {REFERENCE_API} ({', '.join(missing)}), which "
            f"this run's pyspark {pyspark.__version__} lacks, so its test ran nothing ({FORMAT} is the reference's "
            f"format): {way_out}"
        )
    try:
        from ...reference_impl.spark import data_source, sink, source  # noqa: F401
    except ImportError as failed:
        raise HarnessError(
            f"the reference connector ({FORMAT}) does not import on this run's pyspark {pyspark.__version__} "
            f"({failed}): {way_out}"
        ) from failed


SPARK_ADAPTER: Final = KconformKafkaAdapter()
"""``--adapter kconform.conformance.spark.pipeline:SPARK_ADAPTER``: the pipeline level on the reference Spark format."""


@dataclass(frozen=True)
class ReferenceOnSpark(ReferenceAdapter):
    """Both levels of the reference implementation: the pure core in-process and ``kconform-kafka``
    on Spark. ``make conformance`` runs the whole suite against it."""

    pipeline: KconformKafkaAdapter = SPARK_ADAPTER
    capabilities: frozenset[str] = ReferenceAdapter.capabilities | SPARK_ADAPTER.capabilities

    def read_stream(self, spark: SparkSession, source: SourceSpec) -> DataFrame:
        return self.pipeline.read_stream(spark, source)

    def write_stream(self, frame: DataFrame, sink: SinkSpec) -> DataStreamWriter:
        return self.pipeline.write_stream(frame, sink)


REFERENCE: Final = ReferenceOnSpark()
"""``--adapter kconform.conformance.spark.pipeline:REFERENCE --level all``: what ``make conformance`` checks."""


SOURCE_COLUMNS: Final[dict[str, tuple[type[DataType], ...]]] = {
    "topic": (StringType,),
    "partition": (IntegerType, LongType),
    "offset": (LongType, IntegerType),
    "key": (BinaryType,),
    "value": (BinaryType,),
}
"""The columns the pipeline contract needs of ``read_stream``'s frame, with the Spark types each may have."""
CONTRACT_DOC: Final = "docs/adapter-guide.md"


def check_source_frame(adapter_name: str, frame: DataFrame) -> None:
    """``ContractError`` when the frame lacks a column the suite reads, or has it with another type: the
    scenarios would then judge records they never saw, and report loss where the contract was not met."""
    fields = {f.name: f.dataType for f in frame.schema.fields}
    needs = f"the pipeline contract needs {', '.join(SOURCE_COLUMNS)} ({CONTRACT_DOC})"
    for column, types in SOURCE_COLUMNS.items():
        if column not in fields:
            raise ContractError(
                f"adapter {adapter_name!r}.read_stream returned a frame without column {column!r} "
                f"(columns: {', '.join(fields) or 'none'}): {needs}"
            )
        if not isinstance(fields[column], types):
            allowed = " or ".join(t().simpleString() for t in types)
            raise ContractError(
                f"adapter {adapter_name!r}.read_stream returned a frame whose column {column!r} is "
                f"{fields[column].simpleString()}, not {allowed}: {needs}"
            )


DATA_SOURCE_NOT_FOUND: Final = frozenset({"DATA_SOURCE_NOT_FOUND", "_LEGACY_ERROR_TEMP_1140"})
"""Spark's error conditions for a data source it cannot find: the second is Spark 4's for ``kafka`` and
``avro`` ("Failed to find data source: kafka. Please deploy the application as per ...")."""


def missing_data_source(error: BaseException) -> str | None:
    """The data source Spark could not find (``DATA_SOURCE_NOT_FOUND``) somewhere in ``error``'s causes."""
    seen: BaseException | None = error
    while seen is not None:
        condition, parameters = spark_condition(seen)
        if condition in DATA_SOURCE_NOT_FOUND:
            return parameters.get("provider", "(unnamed)")
        seen = seen.__cause__ or seen.__context__
    return None


def spark_condition(error: BaseException) -> tuple[str | None, Mapping[str, str]]:
    """A Spark error's condition and parameters, raised as pyspark's exception or as the JVM's (py4j:
    Spark 4 raises a data source other than ``kafka`` that it cannot find as ``SparkClassNotFoundException``)."""
    from py4j.protocol import Py4JError  # type: ignore[import-untyped]

    if isinstance(error, PySparkException):
        return error.getCondition(), error.getMessageParameters() or {}
    java = getattr(error, "java_exception", None)
    if java is None:
        return None, {}
    try:
        return java.getCondition(), dict(java.getMessageParameters())
    except Py4JError:  # a JVM exception that is not a SparkThrowable
        return None, {}


def data_source_error(adapter_name: str, member: str, name: str) -> HarnessError:
    """A data source the session cannot find is a missing jar or package, not the connector's violation."""
    fix = (
        f"{setup_hint()}, which resolves spark-sql-kafka-0-10 into {jvm_dir() / connector_module(os.environ)} "
        "(the suite's session puts those jars on spark.jars)"
        if name == "kafka"
        else f"install the package or put the jar that provides {name!r} on spark.jars (a Python data source: "
        "register it on the session in read_stream/write_stream)"
    )
    return HarnessError(
        f"adapter {adapter_name!r}.{member}: Spark cannot find the data source {name!r} (DATA_SOURCE_NOT_FOUND): {fix}"
    )


@contextmanager
def data_source_found(adapter_name: str, member: str) -> Iterator[None]:
    """Turn Spark's ``DATA_SOURCE_NOT_FOUND`` raised in ``member`` into a ``HarnessError`` naming the fix."""
    try:
        yield
    except Exception as error:
        name = missing_data_source(error)
        if name is None:
            raise
        raise data_source_error(adapter_name, member, name) from error


DRIVER_JVM_FLAGS: Final = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
"""The session JVM's flags (in local mode its executors' too): the client compiler alone, which reaches speed sooner in
a JVM that lives minutes, and the serial collector, as for a cluster's executors (``cluster.EXECUTOR_FLAGS``) and the
suite's brokers: on 2 cores, a 1 GB heap collected by G1 pays for its concurrent threads beside the tasks."""


def local_session(master: str = DEFAULT_MASTER, settings: Mapping[str, str] | None = None) -> SparkSession:
    """A small local session for the pipeline level, with ``kconform-kafka`` registered; ``settings`` over its own
    (Spark's speculation, for one).

    Loopback only, no UI, one shuffle partition; workers run this interpreter, so they import the
    same ``reference_impl`` and confluent-kafka as the driver. Spark's own Kafka connector
    (format ``kafka``) is on the driver's and executors' classpath (``spark.jars``) when
    ``kconform setup`` resolved it; the adapter that needs it says so when it is not.

    On a cluster master (``spark://...``) executors get this interpreter and ``sys.path``, bounded
    cores and memory, and three attempts per task (``kconform.conformance.spark.cluster.cluster_settings``);
    checkpoints stay local paths, which holds while driver and workers share one machine.
    """
    if master == STANDALONE:
        raise ValueError(
            f"{STANDALONE!r} is not a master URL: start a kconform.conformance.spark.cluster.StandaloneCluster "
            "and pass its master_url (the suite's spark_master fixture does)"
        )
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    try:
        connector = ",".join(str(jar) for jar in jars(connector_module(os.environ)))
    except JvmArtifactsMissing:
        connector = ""  # kconform-kafka needs no jar; kconform.conformance.adapters.spark_kafka names the fix
    builder = SparkSession.builder.master(master)
    if connector:
        builder = builder.config("spark.jars", connector)
    for key, value in cluster_settings().items() if not is_local(master) else ():
        builder = builder.config(key, value)
    session = (
        builder.appName("kconform-pipeline")
        .config("spark.ui.enabled", "false")
        .config("spark.python.worker.faulthandler.enabled", "true")
        .config("spark.sql.shuffle.partitions", "1")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.driver.memory", "1g")
        .config("spark.driver.extraJavaOptions", DRIVER_JVM_FLAGS)
        .config(map=dict(settings or {}))
        .getOrCreate()
    )
    with suppress(ImportError):  # pyspark before 4.0: no Python data sources, Spark's own connector only
        register(session)
    return session


def task_attempts(spark: SparkSession) -> int:
    """How many times Spark runs a failing task: ``local[n,f]`` gives f, plain ``local`` 1, clusters their setting."""
    master = spark.sparkContext.master or ""
    local = re.fullmatch(r"local(?:\[(?:\d+|\*)(?:,(\d+))?\])?", master)
    if local is not None:
        return int(local.group(1) or 1)
    return int(spark.conf.get("spark.task.maxFailures", "4") or 4)


def unfinished_query(checkpoint: Path, timeout_s: float, last: tuple[int, list[str]] | None) -> HarnessError:
    """An ``availableNow`` query still running at its bound: the harness could not run it to its end, so nothing was
    judged (ERROR, never a violation: the rows it would have read are what a check needs). ``last`` is the query's
    last batch id and its sources' end offsets, to show how far it got."""
    got = "it completed no batch" if last is None else f"its last batch was {last[0]}, its sources ending at {last[1]}"
    return HarnessError(
        f"the availableNow query on {checkpoint} did not finish within {timeout_s:g} s ({got}), so the run could not "
        "be judged; Spark's log (the test's captured output, in --report's pytest.log) shows whether a source never "
        "reached its end or the machine was too slow"
    )


DRIVER_LOG_PROPERTY: Final = "kconform.driver.log"
"""The driver JVM's system property naming the file its Spark warnings are copied to (``driver_log``)."""
STREAMING_LOGGER: Final = "org.apache.spark.sql.execution.streaming"
"""The loggers of Spark's streaming engine (``MicroBatchExecution`` among them), whose warnings ``driver_log`` keeps."""


def driver_log(spark: SparkSession) -> Path | None:
    """The file where the driver JVM of ``spark`` copies the warnings of Spark's streaming engine, attached once per JVM
    (a log4j2 file appender on ``STREAMING_LOGGER`` with a WARN threshold, whatever the session's log level): the
    evidence a scenario reads for what Spark did to its query (``kconform.conformance.spark.injections``). A driver
    process's console is its log too (``DriverRun``), so a killed driver's warnings are read there. ``None`` when the
    JVM's logging is not log4j2 (a session kconform did not configure): nothing can be read then."""
    from py4j.protocol import Py4JError

    jvm: Any = spark.sparkContext._jvm
    try:
        named = jvm.java.lang.System.getProperty(DRIVER_LOG_PROPERTY)
        if named:
            return Path(named)
        path = Path(tempfile.mkdtemp(prefix="kconform-driver-log-")) / "streaming.log"
        log4j = jvm.org.apache.logging.log4j
        layout = log4j.core.layout.PatternLayout.newBuilder().withPattern("%d{ISO8601} %p %c: %m%n").build()
        builder = log4j.core.appender.FileAppender.newBuilder()
        builder.withFileName(str(path))
        builder.setName("kconform-driver-log")
        builder.setLayout(layout)
        # WARN and above pass (null onMatch: NEUTRAL), the rest is denied (null onMismatch: DENY)
        builder.setFilter(log4j.core.filter.ThresholdFilter.createFilter(log4j.Level.WARN, None, None))
        appender = builder.build()
        appender.start()
        logger = log4j.LogManager.getLogger(STREAMING_LOGGER)
        if not logger.isWarnEnabled():
            log4j.core.config.Configurator.setLevel(STREAMING_LOGGER, log4j.Level.WARN)
        logger.addAppender(appender)
        jvm.java.lang.System.setProperty(DRIVER_LOG_PROPERTY, str(path))
    except Py4JError:
        return None
    return path


def log_lines_since(log: Path | None, start: int) -> list[str]:
    """The lines written to ``log`` from byte ``start`` on (none when there is no log)."""
    if log is None or not log.exists():
        return []
    with log.open("rb") as out:
        out.seek(start)
        return out.read().decode("utf-8", "replace").splitlines()


def log_size(log: Path | None) -> int:
    """Where the next line of ``log`` will start."""
    return log.stat().st_size if log is not None and log.exists() else 0


QUERY_PHASES: Final = ("latestOffset", "queryPlanning", "walCommit", "addBatch", "commitOffsets")
"""The parts of a micro-batch Spark times in each progress report (``durationMs``) that ``QueryTimes`` lists, in the
order a batch runs them; the rest of ``triggerExecution`` (``getBatch``, the progress report's own making) is summed
as ``other``."""


@dataclass
class QueryTimes:
    """Where the queries of one scenario spent their time, from Spark's own progress reports (data for the report's
    metrics, never asserted): how many queries and batches, each query's wall time from ``Pipeline.start`` to its end
    (its definition, the data source's lookup, its start, its batches and its stop), the sum of the batches'
    ``triggerExecution`` and of its parts."""

    queries: int = 0
    batches: int = 0
    wall_s: float = 0.0
    phases_ms: Counter[str] = field(default_factory=Counter)

    def add(self, progress: list[Any], wall_s: float) -> None:
        """One query that ran ``wall_s`` and reported ``progress`` (``StreamingQuery.recentProgress``)."""
        self.queries += 1
        self.wall_s += wall_s
        for report in progress:
            durations = {k: int(v) for k, v in (report.durationMs or {}).items()}
            if "triggerExecution" not in durations:
                continue
            self.batches += int("addBatch" in durations)
            self.phases_ms["triggerExecution"] += durations["triggerExecution"]
            for phase in QUERY_PHASES:
                self.phases_ms[phase] += durations.get(phase, 0)
            self.phases_ms["other"] += durations["triggerExecution"] - sum(durations.get(p, 0) for p in QUERY_PHASES)

    def merged(self, other: QueryTimes) -> QueryTimes:
        return QueryTimes(
            self.queries + other.queries,
            self.batches + other.batches,
            self.wall_s + other.wall_s,
            self.phases_ms + other.phases_ms,
        )

    def metrics(self) -> dict[str, Any]:
        """The report's metrics: ``spark_queries``, ``spark_batches``, ``spark_query_s`` (the queries' wall time),
        ``spark_trigger_s`` (their batches'), and ``spark_time``, the batches' parts and the rest of the queries' wall
        time (``outside batches``: definition, start, the triggers that found nothing new, stop) in one line."""
        trigger_s = self.phases_ms["triggerExecution"] / 1000
        parts = ", ".join(f"{p} {self.phases_ms[p] / 1000:.1f}" for p in (*QUERY_PHASES, "other"))
        return {
            "spark_queries": self.queries,
            "spark_batches": self.batches,
            "spark_query_s": round(self.wall_s, 1),
            "spark_trigger_s": round(trigger_s, 1),
            "spark_time": f"batches {trigger_s:.1f} s ({parts}); outside batches {self.wall_s - trigger_s:.1f} s",
        }


STATED_SOURCE_SETTINGS: Final = {"isolation.level": Isolation.READ_UNCOMMITTED.value}
"""Settings every scenario states in its ``SourceSpec`` rather than leaving them to the connector's client: the
scenarios expect read_uncommitted unless one asks for read_committed, and librdkafka's default is read_committed
(Kafka's Java client's and Spark's connectors' is read_uncommitted)."""


@dataclass
class Pipeline:
    """A source subscription at ``parallelism``, optionally writing to ``sink_topic``, on ``checkpoint``."""

    spark: SparkSession
    bootstrap_servers: str
    checkpoint: Path
    parallelism: int
    subscribe: str | None = None
    subscribe_pattern: str | None = None
    starting_offsets: str = "earliest"
    sink_topic: str | None = None
    exactly_once: bool = True
    max_records_per_trigger: int | None = None
    client_settings: Mapping[str, str | Secret] = field(default_factory=dict)
    sink_settings: Mapping[str, str | Secret] = field(default_factory=dict)
    """librdkafka settings for the sink only, over ``client_settings`` (e.g. ``transaction.timeout.ms``)."""
    client_timeout_ms: int | None = None
    """``SourceSpec.client_timeout_ms`` and ``SinkSpec.client_timeout_ms``; None: the adapter's default."""
    accept_data_loss: bool = False
    """``SourceSpec.accept_data_loss``."""
    transactional_id_prefix: str | None = None
    """``SinkSpec.transactional_id_prefix``; None: the adapter's default."""
    adapter: PipelineAdapter = SPARK_ADAPTER
    failures: TaskFailures | None = None
    stall: StalledOriginal | None = None
    """A stalled first attempt of one task, so Spark speculates (``kconform.conformance.spark.speculation``)."""
    batches: dict[int, list[ReadRecord]] = field(default_factory=dict)
    query: StreamingQuery | None = None
    capture: Path | None = None
    """Where a real-time query's ``RowCapture`` writes its rows (``batches`` is read from it on ``stop``)."""
    times: QueryTimes = field(default_factory=QueryTimes)
    """Where this pipeline's queries spent their time (data, never judged)."""
    _started: float | None = field(default=None, init=False, repr=False)

    def source(self) -> DataFrame:
        spec = SourceSpec(
            bootstrap_servers=self.bootstrap_servers,
            parallelism=self.parallelism,
            subscribe=tuple(self.subscribe.split(",")) if self.subscribe else (),
            subscribe_pattern=self.subscribe_pattern,
            starting_offsets=self.starting_offsets,
            max_records_per_trigger=self.max_records_per_trigger,
            client_settings=tuple(sorted(({**STATED_SOURCE_SETTINGS, **self.client_settings}).items())),
            client_timeout_ms=self.client_timeout_ms,
            accept_data_loss=self.accept_data_loss,
        )
        with data_source_found(self.adapter.name, "read_stream"):
            frame = self.adapter.read_stream(self.spark, spec)
        check_source_frame(self.adapter.name, frame)
        if self.stall is not None:
            frame = self.stall.inject(frame)
        if self.failures is None or batch_duration(self.adapter) is not None:  # real-time: RowCapture injects them
            return frame
        return self.failures.inject(frame)

    def start(self, available_now: bool = False) -> StreamingQuery:
        """Start the query; ``available_now`` reads what exists now and then terminates (micro-batches only)."""
        real_time = batch_duration(self.adapter)
        assert real_time is None or not available_now, "real-time mode has no availableNow: run_available_now"
        self._started = time.monotonic()
        frame = self.source()
        if self.sink_topic is None:
            rows = frame.withColumn("task", F.spark_partition_id()).writeStream
            writer = rows.foreachBatch(self._capture) if real_time is None else rows.foreach(self._row_capture())
        else:
            settings = {**self.client_settings, **self.sink_settings}
            spec = SinkSpec(
                self.bootstrap_servers, self.sink_topic, self.exactly_once, tuple(sorted(settings.items())),
                self.client_timeout_ms, self.transactional_id_prefix,
            )  # fmt: skip
            with data_source_found(self.adapter.name, "write_stream"):
                writer = self.adapter.write_stream(frame.select("key", "value"), spec)
        writer = writer.option("checkpointLocation", str(self.checkpoint))
        writer = writer.trigger(availableNow=True) if available_now else writer
        if real_time is not None:
            self.end_offsets()  # refused before it starts when a partition would find no task slot
            writer = writer.outputMode("update")  # real-time mode's only output mode
            writer = writer.trigger(realTime=real_time)  # type: ignore[call-overload]  # pyspark 4.2 stubs lack it
        with data_source_found(self.adapter.name, "write_stream" if self.sink_topic else "read_stream"):
            self.query = writer.start()
        return self.query

    def _capture(self, frame: DataFrame, batch_id: int) -> None:
        self.batches[batch_id] = [
            ReadRecord(TopicPartition(r["topic"], r["partition"]), r["offset"], r["value"], r["task"])
            for r in frame.select("topic", "partition", "offset", "value", "task").collect()
        ]

    def _row_capture(self) -> RowCapture:
        """A real-time query's ``ForeachWriter``, writing into a folder of this run (a restart on the same
        checkpoint is another ``Pipeline``, with its own rows)."""
        self.checkpoint.parent.mkdir(parents=True, exist_ok=True)
        self.capture = Path(tempfile.mkdtemp(prefix=f"{self.checkpoint.name}-rows-", dir=self.checkpoint.parent))
        return RowCapture(self.capture, self.failures)

    def end_offsets(self) -> dict[TopicPartition, int]:
        """The end offset of every partition the query subscribes to, now; in real-time mode ``HarnessError`` when
        the session has fewer task slots than there are partitions."""
        topics = self.subscribe.split(",") if self.subscribe else ()
        ends = end_offsets(self.bootstrap_servers, self.client_settings, topics, self.subscribe_pattern)
        require_task_slots(self.spark, len(ends))
        return ends

    def run_available_now(self, timeout_s: int = QUERY_TIMEOUT_S) -> None:
        """Start with ``availableNow`` and wait, bounded, for the query to finish; its error is raised.

        Real-time mode has no ``availableNow``: the query runs until it processed what was there, then stops."""
        if batch_duration(self.adapter) is not None:
            self.start()
            try:
                self.process_all_available(timeout_s)
            finally:
                self.stop()
            return
        log = driver_log(self.spark)
        start = log_size(log)
        query = self.start(available_now=True)
        try:
            finished = query.awaitTermination(timeout_s)
        except Exception:  # the query failed: its time counts too
            self._ended()
            raise
        last = None if finished else query.lastProgress
        if not finished:
            query.stop()
        self._ended()
        where = f"adapter {self.adapter.name!r}'s availableNow query on {self.checkpoint}"
        require_available_now(log_lines_since(log, start), where)
        if not finished:
            got = None if last is None else (last.batchId, [source.endOffset for source in last.sources])
            raise unfinished_query(self.checkpoint, timeout_s, got)
        self._raise_failure()

    def process_all_available(self, timeout_s: int = QUERY_TIMEOUT_S) -> None:
        """Wait until the running query has processed everything its source reports now; in real-time mode, bounded,
        until a committed batch took every partition to its end now (``kconform.conformance.spark.real_time``)."""
        query = self.query
        assert query is not None, "start the pipeline first"
        if batch_duration(self.adapter) is None:
            query.processAllAvailable()
            return
        await_committed_to_end(self.checkpoint, self.end_offsets(), lambda: bool(query.isActive), timeout_s)
        self._raise_failure()

    def progress(self) -> list[Any]:
        """The last query's progress reports (``StreamingQueryProgress``), oldest first."""
        assert self.query is not None, "start the pipeline first"
        return list(self.query.recentProgress)

    def failed_task_attempts(self) -> int:
        """Task attempts that failed in the jobs of this pipeline's last query."""
        return sum(stage.numFailedTasks for stage in self._stages())

    def _stages(self) -> list[Any]:
        """The stages (``SparkStageInfo``) of the last query's jobs: its run id is their job group."""
        assert self.query is not None, "start the pipeline first"
        tracker = self.spark.sparkContext.statusTracker()
        return [
            stage_info
            for job in tracker.getJobIdsForGroup(str(self.query.runId))
            if (info := tracker.getJobInfo(job)) is not None
            for stage in info.stageIds
            if (stage_info := tracker.getStageInfo(stage)) is not None
        ]

    def require_injected_failures(self) -> int:
        """The failed task attempts of the last query; ``HarnessError`` when there were none although
        ``failures`` were injected: such a run shows nothing about retries, and is not the adapter's fault."""
        assert self.query is not None and self.failures is not None, "run the pipeline with failures first"
        failed = self.failed_task_attempts()
        if failed:
            return failed
        tasks = sorted(self.failures.tasks)
        ran = max((stage.numTasks for stage in self._stages()), default=0)
        raise HarnessError(
            f"the failure injection did not happen: no task attempt failed, though the suite makes the first "
            f"attempt of task(s) {tasks} fail after {self.failures.after_rows} rows, so this run shows nothing "
            f"about retries. The query's stages ran at most {ran} task(s) on master {self.spark.sparkContext.master}: "
            f"the injection needs task {tasks[-1]} to exist (the adapter's read_stream frame must have at least "
            f"{tasks[-1] + 1} partitions per batch, each with more than {self.failures.after_rows} rows) and a master "
            "that retries tasks (--spark-master local[2,3]); if both hold, re-run it"
        )

    def _ended(self) -> None:
        """Count the query that just ended in ``times``."""
        if self.query is not None and self._started is not None:
            self.times.add(list(self.query.recentProgress), time.monotonic() - self._started)
            self._started = None

    def stop(self) -> None:
        if self.query is not None:
            self.query.stop()
            self._ended()
            if self.capture is not None:
                self.batches.update(captured_batches(self.capture))
            self._raise_failure()

    def _raise_failure(self) -> None:
        assert self.query is not None
        error = self.query.exception()
        if error is not None:
            raise error

    # -- the checkpoint, as evidence ---------------------------------------------------------

    def offset_log(self) -> dict[int, SourceOffsets]:
        """Batch id -> the source's end offsets logged for it (the union-state analogue)."""
        logged = {}
        for path in (self.checkpoint / "offsets").iterdir():
            if path.name.isdigit():
                source_line = path.read_text().splitlines()[2]
                logged[int(path.name)] = SourceOffsets.from_json(json.loads(source_line))
        return dict(sorted(logged.items()))

    def forget_last_commit(self) -> int:
        """Drop the last commit-log entry: on restart Spark replays that batch (a driver crash after
        the tasks committed, before the commit log was written). Returns the batch id."""
        commits = self.checkpoint / "commits"
        last = max(int(p.name) for p in commits.iterdir() if p.name.isdigit())
        for path in (commits / str(last), commits / f".{last}.crc"):
            path.unlink(missing_ok=True)
        return last

    def records(self) -> Iterator[ReadRecord]:
        """Every captured record, by batch id (a replayed batch counts once)."""
        for batch in self.batches.values():
            yield from batch


# -- evidence for the checkers -------------------------------------------------------------------


def fill(client: KafkaClient, topic: str, partitions: int, per_partition: int, tag: str) -> dict[TopicPartition, int]:
    """Produce ``per_partition`` records, then a single-record sentinel, on each partition; the end offsets.

    The sentinel keeps ListOffsets(latest) right on brokers where it is wrong after a
    multi-record batch (Tansu, KAFKA-008).
    """
    ends = {}
    for p in range(partitions):
        tp = TopicPartition(topic, p)
        client.produce_batch(tp, [(None, f"{tag}-{p}-{i}".encode()) for i in range(per_partition)], linger_ms=5)
        ends[tp] = client.produce(tp, None, f"{tag}-{p}-sentinel".encode()) + 1
    return ends


def topic_values(client: KafkaClient, topic: str, isolation: Isolation) -> Counter[bytes | None]:
    """Every value on every partition of ``topic`` as a consumer at ``isolation`` sees it."""
    return Counter(r.value for records in topic_records(client, topic, isolation).values() for r in records)


def judge_sink(client: KafkaClient, source: str, sink: str, exactly_once: bool) -> list[Violation]:
    """COMMIT-011 and COMMIT-013 end to end: the sink topic read ``read_committed`` against the input; for an
    exactly-once sink, what it holds behind a transaction still open is told apart (COMMIT-004, hidden, not lost)."""
    produced = topic_records(client, source, Isolation.READ_UNCOMMITTED)
    written = topic_records(client, sink, Isolation.READ_COMMITTED)
    stable = {tp.partition: lso for tp, (lso, _) in stable_offsets(client, sink).items()}
    everything = topic_records(client, sink, Isolation.READ_UNCOMMITTED) if exactly_once else {}
    held = {p: [r for r in records if r.offset >= stable.get(p, 0)] for p, records in everything.items()}
    return check_sink_output(produced, written, exactly_once, held, stable)
