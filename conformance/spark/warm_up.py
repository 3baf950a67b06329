"""A standby driver's warm-up: one small ``availableNow`` query through a Python data source of its own, run after the
driver's session is up and before it is given its run (``StandbyDrivers``), so that the run it is then given does not
pay a fresh JVM's first query: Spark's streaming classes loaded and compiled, the Python daemon started, its workers
forked, and in them the reference connector's modules imported (a worker Spark reuses for the run's tasks has them).

Nothing of it is judged, and it touches no broker: its source yields a few rows of its own, its sink drops them. Its
query is named (``driver.WARM_UP_QUERY``) so that a driver's progress lines (``ProgressLines``) leave it out, and its
source supports ``Trigger.AvailableNow``, so Spark's single-batch fallback warning, which the scenarios read in a
driver's log (``kconform.conformance.spark.injections.require_available_now``), never comes from it. A warm-up that
fails or does not end within ``WARM_UP_TIMEOUT_S`` is stopped and reported in one line of the driver's log; the
driver then waits for its run as it would have without one.
"""

from __future__ import annotations

import importlib
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import suppress
from typing import TYPE_CHECKING, Any, Final

from pyspark.sql import SparkSession
from pyspark.sql.datasource import (
    DataSource,
    DataSourceStreamArrowWriter,
    DataSourceStreamReader,
    InputPartition,
    WriterCommitMessage,
)
from pyspark.sql.streaming.datasource import ReadLimit, SupportsTriggerAvailableNow

if TYPE_CHECKING:
    import pyarrow as pa  # type: ignore[import-untyped]
    from pyspark.sql.types import StructType

WARM_UP_FORMAT: Final = "kconform-warm-up"
WARM_UP_PARTITIONS: Final = 2
"""As many as the scenarios' queries run tasks at once on ``local[2,3]``: each task slot gets its worker."""
WARM_UP_ROWS: Final = 8
WARM_UP_TIMEOUT_S: Final = 60
PRELOADED: Final = ("kconform.reference_impl.spark.source", "kconform.reference_impl.spark.sink")
"""What the reference connector's tasks import in their Python workers (confluent-kafka and pyarrow with them)."""


def preload() -> None:
    """Import ``PRELOADED`` in this Python worker, where it is there (a build without the reference: nothing)."""
    for module in PRELOADED:
        with suppress(ImportError):
            importlib.import_module(module)


class WarmUpSource(DataSource):
    """``kconform-warm-up``: a stream of ``WARM_UP_ROWS`` rows per partition, once; a sink that drops its rows."""

    @classmethod
    def name(cls) -> str:
        return WARM_UP_FORMAT

    def schema(self) -> str:
        return "key binary, value binary"

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        return WarmUpReader()

    def streamWriter(self, schema: StructType, overwrite: bool) -> DataSourceStreamArrowWriter:
        return WarmUpWriter()


class WarmUpReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """Offsets ``{"rows": 0}`` to ``{"rows": WARM_UP_ROWS}``: one batch, then nothing new."""

    def initialOffset(self) -> dict[str, Any]:
        return {"rows": 0}

    def prepareForTriggerAvailableNow(self) -> None:
        pass

    def latestOffset(self, start: dict[str, Any], limit: ReadLimit) -> dict[str, Any]:
        return {"rows": WARM_UP_ROWS}

    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> Sequence[InputPartition]:
        return [InputPartition(i) for i in range(WARM_UP_PARTITIONS)] if end["rows"] > start["rows"] else []

    def read(self, partition: InputPartition) -> Iterator[tuple[bytes, bytes]]:
        preload()
        for i in range(WARM_UP_ROWS):
            yield f"warm-up-{partition.value}-{i}".encode(), b""

    def commit(self, end: dict[str, Any]) -> None:
        pass


class WarmUpWriter(DataSourceStreamArrowWriter):
    """Reads every row it is given, writes none."""

    def write(self, iterator: Iterator[pa.RecordBatch]) -> WriterCommitMessage:
        preload()
        for _ in iterator:
            pass
        return WriterCommitMessage()

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        pass

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        pass


def warm_up(spark: SparkSession, name: str) -> str:
    """Run the warm-up query, named ``name``, to its end, bounded: what it took, or why it did not run to its end
    (the driver prints it after ``driver.WARM_UP_LINE``)."""
    started = time.monotonic()
    try:
        with tempfile.TemporaryDirectory(prefix="kconform-warm-up-") as checkpoint:
            spark.dataSource.register(WarmUpSource)
            query = (
                spark.readStream.format(WARM_UP_FORMAT)
                .load()
                .writeStream.format(WARM_UP_FORMAT)
                .queryName(name)
                .option("checkpointLocation", checkpoint)
                .trigger(availableNow=True)
                .start()
            )
            try:
                finished = query.awaitTermination(WARM_UP_TIMEOUT_S)
            finally:
                query.stop()
    except Exception as error:  # a warm-up that fails leaves the driver as it would be without one
        first = (str(error).strip().splitlines() or [type(error).__name__])[0]
        return f"failed after {time.monotonic() - started:.1f} s: {type(error).__name__}: {first}"
    if not finished:
        return f"stopped unfinished at {WARM_UP_TIMEOUT_S} s"
    return f"took {time.monotonic() - started:.1f} s"
