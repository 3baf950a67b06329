"""On a pyspark without the Python data source API (3.5), the harness still imports and Spark's own connector can
be judged; only the reference connector's queries are could-not-check, naming the way out. Simulated here by
hiding ``pyspark.sql.datasource`` in a child interpreter (``make verdicts`` runs the real 3.5.7)."""

from __future__ import annotations

import subprocess
import sys

CHILD = """
import sys
sys.modules["pyspark.sql.datasource"] = None  # as on pyspark 3.5: the import fails
from kconform.conformance.errors import HarnessError
from kconform.conformance.spark.pipeline import SPARK_ADAPTER
from kconform.conformance.adapters.spark_kafka import ADAPTER
try:
    SPARK_ADAPTER.source_class()
except HarnessError as error:
    print("refused:", error)
"""


def test_the_harness_imports_without_the_data_source_api_and_the_reference_says_it_cannot_run() -> None:
    child = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True, timeout=120)
    assert child.returncode == 0, child.stderr
    assert "refused: the reference connector needs PySpark 4.2's Python streaming data source API" in child.stdout
    assert "--adapter kconform.conformance.adapters.spark_kafka:ADAPTER" in child.stdout
