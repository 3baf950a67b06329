"""A sink on PySpark's Python data source API that reads its input and writes nothing: the bench's floor.

It pays what every sink on that API pays and nothing else (the JVM feeding each task's rows to a Python worker as
Arrow batches, the driver's Python calls that create and commit the writer), so its rate bounds what any Python
sink, the reference one included, can reach in the same race."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Final

import pyarrow as pa  # type: ignore[import-untyped]
from pyspark.sql import SparkSession
from pyspark.sql.datasource import DataSource, DataSourceStreamArrowWriter, DataSourceStreamWriter, WriterCommitMessage
from pyspark.sql.types import StructType

FLOOR_FORMAT: Final = "kconform-bench-floor"


class ReadingWriter(DataSourceStreamArrowWriter):
    """Reads every batch Spark feeds a task, as a sink must, and keeps none."""

    def write(self, iterator: Iterator[pa.RecordBatch]) -> WriterCommitMessage:
        for _ in iterator:  # the bench counts the rows from the batch's progress report
            pass
        return WriterCommitMessage()

    def commit(self, messages: Sequence[WriterCommitMessage | None], batchId: int) -> None:
        """Nothing was written, so nothing commits."""

    def abort(self, messages: Sequence[WriterCommitMessage | None], batchId: int) -> None:
        """Nothing was written, so nothing aborts."""


class FloorDataSource(DataSource):
    @classmethod
    def name(cls) -> str:
        return FLOOR_FORMAT

    def streamWriter(self, schema: StructType, overwrite: bool) -> DataSourceStreamWriter:
        return ReadingWriter()


def register_floor(spark: SparkSession) -> None:
    spark.dataSource.register(FloorDataSource)
