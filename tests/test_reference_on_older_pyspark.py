"""On a PySpark older than 4.2 (a team's 4.1.1 or 3.5.7, which kconform installs beside), the tests that run the
reference connector are ERROR naming the 4.2 API it lacks, and Spark's own connector is still judged. Simulated in
this interpreter by hiding what 4.1 and 4.0 lack (measured on their wheels): no Spark, no broker."""

from __future__ import annotations

import sys
from unittest.mock import MagicMock

import pyspark
import pyspark.sql.datasource
import pytest

from kconform.conformance.adapter.guard import guard
from kconform.conformance.adapter.interface import SinkSpec, SourceSpec
from kconform.conformance.adapters import spark_kafka
from kconform.conformance.adapters.paired import SPARK_SOURCE_REFERENCE_SINK
from kconform.conformance.errors import CannotCheck, HarnessError
from kconform.conformance.spark import pipeline
from kconform.conformance.spark.pipeline import REFERENCE, SPARK_ADAPTER, missing_reference_api

ADMISSION_CONTROL = [
    "pyspark.sql.streaming.datasource.ReadLimit",
    "pyspark.sql.streaming.datasource.ReadMaxRows",
    "pyspark.sql.streaming.datasource.SupportsTriggerAvailableNow",
]
"""What 4.1.1 lacks (SPARK-55304, in 4.2.0)."""
SINK = SinkSpec("h:9092", "out", exactly_once=True)


@pytest.fixture
def pyspark_4_1(monkeypatch: pytest.MonkeyPatch) -> None:
    """This interpreter's pyspark, as 4.1.1 has it: no ``pyspark.sql.streaming.datasource``."""
    monkeypatch.setitem(sys.modules, "pyspark.sql.streaming.datasource", None)  # the import fails
    monkeypatch.setattr(pyspark, "__version__", "4.1.1")


def test_the_installed_pyspark_lacks_nothing_the_reference_needs() -> None:
    """The twin: on the pinned 4.2 every name is there, and the reference's adapter goes on."""
    assert missing_reference_api() == []
    SPARK_ADAPTER.source_class()  # raises nothing


@pytest.mark.usefixtures("pyspark_4_1")
def test_on_pyspark_4_1_the_reference_adapter_and_a_paired_reference_sink_are_error_naming_the_api() -> None:
    assert missing_reference_api() == ADMISSION_CONTROL
    expected = "the reference connector needs PySpark 4.2's Python streaming data source API (" + ", ".join(
        ADMISSION_CONTROL
    )
    for call in (
        lambda: guard(REFERENCE).read_stream(MagicMock(), SourceSpec("h:9092", 1, subscribe=("t",))),
        lambda: guard(REFERENCE).write_stream(MagicMock(), SINK),
        lambda: guard(SPARK_SOURCE_REFERENCE_SINK).write_stream(MagicMock(), SINK),
    ):
        with pytest.raises(HarnessError) as refused:  # CannotCheck: the run reports the test ERROR, exits 3
            call()
        assert isinstance(refused.value, CannotCheck)
        assert str(refused.value).startswith(expected), refused.value
        assert "which this run's pyspark 4.1.1 lacks" in str(refused.value)
        assert "--adapter kconform.conformance.adapters.spark_kafka:ADAPTER" in str(refused.value)


@pytest.mark.usefixtures("pyspark_4_1")
def test_on_pyspark_4_1_spark_s_own_connector_and_a_pair_s_spark_source_are_still_called(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The scenarios that judge a team's connector alone never reach the reference's check."""
    monkeypatch.setattr(spark_kafka, "connector_missing", lambda spark: None)  # the session has the jars
    spark = MagicMock()
    source = SourceSpec("h:9092", 1, subscribe=("t",))
    guard(spark_kafka.ADAPTER).read_stream(spark, source)
    guard(spark_kafka.ADAPTER).write_stream(MagicMock(), SinkSpec("h:9092", "out", exactly_once=False))
    guard(SPARK_SOURCE_REFERENCE_SINK).read_stream(spark, source)
    assert [c.args for c in spark.readStream.format.call_args_list] == [("kafka",), ("kafka",)]


def test_on_pyspark_4_0_the_sink_s_arrow_writer_is_named_too(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pyspark.sql.streaming.datasource", None)
    monkeypatch.delattr(pyspark.sql.datasource, "DataSourceStreamArrowWriter")
    assert missing_reference_api() == ["pyspark.sql.datasource.DataSourceStreamArrowWriter", *ADMISSION_CONTROL]


def test_on_pyspark_3_5_every_name_is_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pyspark.sql.datasource", None)
    monkeypatch.setitem(sys.modules, "pyspark.sql.streaming.datasource", None)
    named = [f"{module}.{name}" for module, names in pipeline.REFERENCE_NEEDS.items() for name in names]
    assert missing_reference_api() == named
    with pytest.raises(HarnessError, match=r"^the reference connector needs PySpark 4\.2's "):
        SPARK_ADAPTER.source_class()
