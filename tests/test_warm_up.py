"""A standby driver's warm-up query is nothing the scenarios read: its source runs one batch and then has nothing new
(so an ``availableNow`` query over it ends), and a driver's progress lines leave its progress out."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from kconform.conformance.spark.driver import PROGRESS_LINE, WARM_UP_QUERY, ProgressLines
from kconform.conformance.spark.warm_up import WARM_UP_PARTITIONS, WARM_UP_ROWS, WarmUpReader, WarmUpSource


def test_the_warm_up_source_plans_one_batch_of_every_partition_then_nothing() -> None:
    reader = WarmUpSource(options={}).streamReader(schema=None)  # type: ignore[arg-type]
    assert isinstance(reader, WarmUpReader)
    start = reader.initialOffset()
    end = reader.latestOffset(start, None)  # type: ignore[arg-type]
    partitions = reader.partitions(start, end)
    assert [p.value for p in partitions] == list(range(WARM_UP_PARTITIONS))
    rows = [row for p in partitions for row in reader.read(p)]
    assert len(rows) == WARM_UP_PARTITIONS * WARM_UP_ROWS
    assert reader.latestOffset(end, None) == end  # nothing new: availableNow ends after the one batch
    assert reader.partitions(end, end) == []


def test_progress_lines_leave_the_warm_up_query_out(capsys: pytest.CaptureFixture[str]) -> None:
    lines = ProgressLines()
    for name, batch in ((WARM_UP_QUERY, 0), (None, 3)):
        lines.onQueryProgress(SimpleNamespace(progress=SimpleNamespace(name=name, batchId=batch)))  # type: ignore[arg-type]
    assert capsys.readouterr().out.splitlines() == [f"{PROGRESS_LINE}3"]
