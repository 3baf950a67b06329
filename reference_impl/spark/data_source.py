"""The ``kconform-kafka`` data source: the class Spark instantiates for the format, written against pyspark 4's
Python data source API (apart from the package, which imports on any pyspark)."""

from __future__ import annotations

from pyspark.sql.datasource import DataSource, DataSourceStreamReader, DataSourceStreamWriter
from pyspark.sql.types import StructType

from . import FORMAT


class KafkaDataSource(DataSource):
    """``kconform-kafka``: options are checked when the query is defined, Kafka is reached at start."""

    @classmethod
    def name(cls) -> str:
        return FORMAT

    def schema(self) -> StructType:
        from .source import SCHEMA, SourceOptions

        SourceOptions.parse(self.options)
        return SCHEMA

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        from .source import KafkaStreamReader, SourceOptions

        return KafkaStreamReader(SourceOptions.parse(self.options))

    def streamWriter(self, schema: StructType, overwrite: bool) -> DataSourceStreamWriter:
        from .sink import KafkaStreamWriter, SinkOptions

        return KafkaStreamWriter(SinkOptions.parse(self.options), schema)
