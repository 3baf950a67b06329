"""Where a scenario's time goes, as data in the report (never asserted on a run): ``QueryTimes`` sums the progress
reports of each query a scenario ran, and ``session_up_at`` reads when a driver process had its session up."""

from __future__ import annotations

from types import SimpleNamespace

from kconform.conformance.spark.driver import SESSION_UP_LINE, session_up_at
from kconform.conformance.spark.pipeline import QueryTimes


def progress(**durations: int) -> SimpleNamespace:
    return SimpleNamespace(durationMs=durations, numInputRows=1)


def test_query_times_sum_the_batches_parts_and_keep_the_rest_of_each_querys_wall_time() -> None:
    times = QueryTimes()
    ran = progress(triggerExecution=1000, latestOffset=100, walCommit=50, addBatch=700, commitOffsets=40, getBatch=10)
    idle = progress(triggerExecution=30, latestOffset=25)  # a trigger that found nothing: no batch
    times.add([ran, idle], wall_s=4.0)
    times.add([progress(triggerExecution=500, addBatch=400, queryPlanning=60)], wall_s=2.0)
    merged = QueryTimes().merged(times)
    metrics = merged.metrics()
    assert (metrics["spark_queries"], metrics["spark_batches"]) == (2, 2)
    assert (metrics["spark_query_s"], metrics["spark_trigger_s"]) == (6.0, 1.5)
    assert metrics["spark_time"] == (
        "batches 1.5 s (latestOffset 0.1, queryPlanning 0.1, walCommit 0.1, addBatch 1.1, commitOffsets 0.0, "
        "other 0.2); outside batches 4.5 s"
    )
    # the first batch's getBatch and unnamed 100 ms, the idle trigger's rest, the second query's rest
    assert times.phases_ms["other"] == 110 + 5 + 40


def test_a_progress_report_without_a_trigger_time_counts_nothing() -> None:
    times = QueryTimes()
    times.add([SimpleNamespace(durationMs={}, numInputRows=0)], wall_s=1.0)
    assert (times.queries, times.batches, sum(times.phases_ms.values())) == (1, 0, 0)


def test_session_up_at_reads_the_drivers_line_among_sparks_output() -> None:
    output = f"WARN NativeCodeLoader: no native library\n{SESSION_UP_LINE}1700000000.250\nkconform driver: query\n"
    assert session_up_at(output) == 1700000000.25
    assert session_up_at("a driver killed before its session was up\n") is None
    assert session_up_at(f"{SESSION_UP_LINE}garbled\n") is None
