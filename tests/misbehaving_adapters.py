"""Adapters that misbehave the ways user adapters do; tests/test_misbehaving_adapter.py runs the suite on them."""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from typing import Any

from pyspark.sql.datasource import DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import ReadLimit
from pyspark.sql.types import StructType

from kconform.conformance.spark.pipeline import KconformKafkaAdapter
from kconform.reference_impl.adapter import ReferenceAdapter
from kconform.reference_impl.credentials import reveal
from kconform.reference_impl.spark.data_source import KafkaDataSource


@dataclass(frozen=True)
class Raises(ReferenceAdapter):
    def assign(self, topic: str, partition: int, parallelism: int) -> int:
        raise RuntimeError("connector bug: lookup table not loaded")


@dataclass(frozen=True)
class NegativeIndex(ReferenceAdapter):
    def assign(self, topic: str, partition: int, parallelism: int) -> int:
        return -1


@dataclass(frozen=True)
class Hangs(ReferenceAdapter):
    def assign(self, topic: str, partition: int, parallelism: int) -> int:
        threading.Event().wait()  # blocks forever, as a deadlocked client would
        return 0


RAISES = Raises(name="raises")
NEGATIVE_INDEX = NegativeIndex(name="negative-index")
HANGS = Hangs(name="hangs")


@dataclass(frozen=True)
class ReadStreamRaises(KconformKafkaAdapter):
    def read_stream(self, spark: Any, source: Any) -> Any:
        raise RuntimeError("connector bug: no such format 'kafka2'")


@dataclass(frozen=True)
class PipelineWithoutMethods:
    """Declares the pipeline level but implements neither level."""

    name: str = "pipeline-without-methods"
    capabilities: frozenset[str] = frozenset({"pipeline"})


READ_STREAM_RAISES = ReadStreamRaises(name="read-stream-raises")
PIPELINE_WITHOUT_METHODS = PipelineWithoutMethods()


@dataclass(frozen=True)
class AssignWithoutParallelism(ReferenceAdapter):
    """A contract fault: ``assign`` lacks ``parallelism``, so the suite cannot call it at all."""

    def assign(self, topic: str, partition: int) -> int:  # type: ignore[override]
        return partition


@dataclass(frozen=True)
class ReadStreamWithoutSource(KconformKafkaAdapter):
    def read_stream(self, spark: Any) -> Any:  # type: ignore[override]
        raise AssertionError("never called: the suite checks the signature first")


@dataclass(frozen=True)
class FrameWithoutOffset(KconformKafkaAdapter):
    def read_stream(self, spark: Any, source: Any) -> Any:
        return super().read_stream(spark, source).drop("offset")


@dataclass(frozen=True)
class SparkKafkaFormatUnchecked(KconformKafkaAdapter):
    """Reads Spark's ``kafka`` format without checking that the session can load it."""

    def read_stream(self, spark: Any, source: Any) -> Any:
        return spark.readStream.format("kafka").option("kafka.bootstrap.servers", source.bootstrap_servers).load()


@dataclass(frozen=True)
class OneTaskPerBatch(KconformKafkaAdapter):
    """Reads every batch in one task, so an injection into task 1 has nothing to fail."""

    def read_stream(self, spark: Any, source: Any) -> Any:
        return super().read_stream(spark, source).coalesce(1)


@dataclass(frozen=True)
class OverridesSinkSettings(KconformKafkaAdapter):
    """Sets its sink producer's own batching over what the suite passed (a fast linger, an ample queue), as a
    connector tuned for throughput does: the suite's slow-down of the sink never happens."""

    def write_stream(self, frame: Any, sink: Any) -> Any:
        kept = tuple((k, v) for k, v in sink.client_settings if k not in ("linger.ms", "queue.buffering.max.messages"))
        tuned = (("linger.ms", "5"), ("queue.buffering.max.messages", "100000"))
        return super().write_stream(frame, replace(sink, client_settings=kept + tuned))


OVERRIDES_SINK_SETTINGS = OverridesSinkSettings(name="overrides-sink-settings")


class ReaderWithoutAvailableNow(DataSourceStreamReader):
    """The reference's stream reader without ``SupportsTriggerAvailableNow``, as a Python data source written before
    PySpark 4.2 is: Spark runs its ``availableNow`` queries as one batch (Spark's own fallback, not a bug of ours)."""

    def __init__(self, reader: Any) -> None:
        self._reader = reader

    def initialOffset(self) -> dict[str, Any]:
        offset: dict[str, Any] = self._reader.initialOffset()
        return offset

    def latestOffset(self, start: dict[str, Any], limit: ReadLimit) -> dict[str, Any]:
        offset: dict[str, Any] = self._reader.latestOffset(start, limit)
        return offset

    def getDefaultReadLimit(self) -> ReadLimit:
        limit: ReadLimit = self._reader.getDefaultReadLimit()
        return limit

    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> Sequence[InputPartition]:
        planned: Sequence[InputPartition] = self._reader.partitions(start, end)
        return planned

    def read(self, partition: InputPartition) -> Iterator[Any]:
        rows: Iterator[Any] = self._reader.read(partition)
        return rows

    def commit(self, end: dict[str, Any]) -> None:
        self._reader.commit(end)

    def stop(self) -> None:
        self._reader.stop()


class KafkaWithoutAvailableNow(KafkaDataSource):
    @classmethod
    def name(cls) -> str:
        return "kc-misbehaving-without-available-now"

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        return ReaderWithoutAvailableNow(super().streamReader(schema))


WITHOUT_AVAILABLE_NOW = KconformKafkaAdapter(name="without-available-now", data_source=KafkaWithoutAvailableNow)
ASSIGN_WITHOUT_PARALLELISM = AssignWithoutParallelism(name="assign-without-parallelism")
READ_STREAM_WITHOUT_SOURCE = ReadStreamWithoutSource(name="read-stream-without-source")
FRAME_WITHOUT_OFFSET = FrameWithoutOffset(name="frame-without-offset")
SPARK_KAFKA_FORMAT_UNCHECKED = SparkKafkaFormatUnchecked(name="spark-kafka-format-unchecked")
ONE_TASK_PER_BATCH = OneTaskPerBatch(name="one-task-per-batch")


def password_of(source: Any) -> str:
    return reveal(dict(source.client_settings).get("sasl.password", ""))


@dataclass(frozen=True)
class FailsShowingItsPassword(KconformKafkaAdapter):
    """Prints the password it was given to stdout and stderr, as a careless debug line would, and fails with it
    in its message, as a client's login error may."""

    def read_stream(self, spark: Any, source: Any) -> Any:
        line = f"connecting with sasl.password={password_of(source)}"
        print(line, flush=True)
        print(line, file=sys.stderr, flush=True)
        raise RuntimeError(f"login refused: sasl.password={password_of(source)}")


FAILS_SHOWING_ITS_PASSWORD = FailsShowingItsPassword(name="fails-showing-its-password")


class _StuckIndex(int):
    """A task index the suite hangs on when it compares it: the adapter call returned, the suite is what is stuck."""

    def __eq__(self, other: object) -> bool:
        threading.Event().wait()  # blocks forever, as a stuck broker or Spark query would hold the suite
        return int(self) == other

    def __ne__(self, other: object) -> bool:
        return not self == other

    __hash__ = int.__hash__


@dataclass(frozen=True)
class StuckAfterReturning(ReferenceAdapter):
    def assign(self, topic: str, partition: int, parallelism: int) -> int:
        return _StuckIndex(super().assign(topic, partition, parallelism))


STUCK_AFTER_RETURNING = StuckAfterReturning(name="stuck-after-returning")


def _segfault() -> None:
    """Dies as native code that dereferences a null pointer does (SIGSEGV), as a segfaulting client library would."""
    import ctypes

    ctypes.string_at(0)


@dataclass(frozen=True)
class CrashesOnce(ReferenceAdapter):
    """Its ``assign`` kills the process running the suite the first time it is called in a folder (``$CRASH_MARK``,
    made then), and answers as the reference does after."""

    def assign(self, topic: str, partition: int, parallelism: int) -> int:
        mark = os.environ["CRASH_MARK"]
        if not os.path.exists(mark):
            open(mark, "w").close()
            _segfault()
        return super().assign(topic, partition, parallelism)


@dataclass(frozen=True)
class CrashesAlways(ReferenceAdapter):
    def assign(self, topic: str, partition: int, parallelism: int) -> int:
        _segfault()
        return 0


CRASHES_ONCE = CrashesOnce(name="crashes-once")
CRASHES_ALWAYS = CrashesAlways(name="crashes-always")
