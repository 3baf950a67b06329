"""LIVE-001 (spec/liveness.md): a hang of the judged code and a query that fails where it should recover are
liveness violations with the call or the exception as evidence, never lost records; a stopped broker is no
evidence (could not check)."""

from __future__ import annotations

import pytest

from kconform.conformance.checks.liveness_checkers import (
    Failure,
    check_call_returned,
    check_driver_exit,
    check_query_ran,
    check_restarted_reads,
    driver_failure,
    failure_line,
    flink_job_failure,
    query_failure,
)
from kconform.conformance.checks.pipeline_checkers import ReadRecord
from kconform.reference_impl.types import TopicPartition

SPARK_55271_TRACE = """org.apache.spark.sql.streaming.StreamingQueryException: [STREAM_FAILED] Query [id = 1] terminated
\tat org.apache.spark.sql.execution.streaming.StreamExecution.runStream(StreamExecution.scala:360)
Caused by: java.lang.NullPointerException: Cannot invoke "scala.collection.immutable.Map.get(Object)" because ...
\tat org.apache.spark.sql.kafka010.KafkaMicroBatchStream.metrics(KafkaMicroBatchStream.scala:340)
\tat org.apache.spark.sql.execution.streaming.ProgressReporter.extractSourceProgress(ProgressReporter.scala:91)
"""


class StreamingQueryException(Exception):  # PySpark's, as the gate knows it: by name
    def __init__(self, desc: str, trace: str) -> None:
        super().__init__(desc)
        self._stackTrace = trace


def test_a_failed_query_is_found_with_its_innermost_cause_and_frames_wherever_it_was_raised() -> None:
    failed = StreamingQueryException("[STREAM_FAILED] Query [id = 1] terminated with exception: NPE", SPARK_55271_TRACE)
    found = query_failure(failed)
    assert found == Failure(
        "StreamingQueryException",
        "[STREAM_FAILED] Query [id = 1] terminated with exception: NPE",
        (
            "org.apache.spark.sql.kafka010.KafkaMicroBatchStream.metrics(KafkaMicroBatchStream.scala:340)",
            "org.apache.spark.sql.execution.streaming.ProgressReporter.extractSourceProgress(ProgressReporter.scala:91)",
        ),
        'java.lang.NullPointerException: Cannot invoke "scala.collection.immutable.Map.get(Object)" because ...',
    )
    try:
        raise AssertionError("the scenario's own check") from failed
    except AssertionError as wrapped:
        assert query_failure(wrapped) == found
    assert query_failure(ExceptionGroup("hypothesis", [ValueError("x"), failed])) == found
    assert query_failure(RuntimeError("an adapter's own error")) is None


def test_required_LIVE_001_a_failed_query_is_a_liveness_violation_with_its_exception() -> None:
    assert check_query_ran(None, "that x") == []
    failure = Failure("StreamingQueryException", "terminated", ("a.b(c:1)",), "java.lang.NullPointerException: m")
    (violation,) = check_query_ran(failure, "that required_RESTORE_003_x")
    assert (violation.requirement, violation.kind) == ("LIVE-001", "query-failed")
    assert violation.evidence == (
        "a query that required_RESTORE_003_x ran to its end failed: StreamingQueryException: terminated "
        "(caused by java.lang.NullPointerException: m)"
    )
    assert violation.data == {
        "exception": "StreamingQueryException",
        "message": "terminated",
        "cause": "java.lang.NullPointerException: m",
        "frames": ["a.b(c:1)"],
    }


def test_required_LIVE_001_a_hang_counts_only_in_the_judged_code_and_while_the_broker_answers() -> None:
    assert check_call_returned(None, "", 3.0, None) == []  # no call of the connector under way: the harness hung
    assert check_call_returned("adapter 'a'.read_stream", "read_stream(...)", 3.0, False) == []  # broker gone: ERROR
    (protocol,) = check_call_returned("adapter 'a'.assign", "assign('t', 0, 1)", 3.0, None)
    assert (protocol.requirement, protocol.kind) == ("LIVE-001", "hang")
    assert protocol.evidence == (
        "adapter 'a'.assign did not return within --timeout 3s (still running: assign('t', 0, 1)); raise --timeout "
        "if it is only slow"
    )
    (pipeline,) = check_call_returned("adapter 'a'.read_stream", "read_stream(...)", 3.0, True)
    assert "; the broker still answered;" in pipeline.evidence and pipeline.data["broker_answers"] is True


SPARK_55271 = Failure(
    "StreamingQueryException",
    "[STREAM_FAILED] Query [id = 1] terminated with exception: Cannot invoke "
    '"scala.collection.IterableOps.map(scala.Function1)" because the return value of "scala.Option.get()" is null',
    (
        "org.apache.spark.sql.kafka010.KafkaMicroBatchStream.metrics(KafkaMicroBatchStream.scala:340)",
        "org.apache.spark.sql.execution.streaming.ProgressReporter.extractSourceProgress(ProgressReporter.scala:91)",
    ),
    'java.lang.NullPointerException: Cannot invoke "scala.collection.IterableOps.map(scala.Function1)" because the '
    'return value of "scala.Option.get()" is null',
)
"""Spark 4.1.1's failure on a restart onto a batch planned but not committed, as ``query_failure`` records it."""
T0, T1, ADDED = TopicPartition("t", 0), TopicPartition("t", 1), TopicPartition("t", 2)
ENDS = {T0: 10, T1: 10, ADDED: 4}
"""The RESTORE-003 scenario's topic after its restart's input was written: two partitions the checkpoint held,
one added while the query was stopped."""
BY_ID = {"RESTORE-003": range(2), "RESTORE-004": [2]}


def reads(tp: TopicPartition, offsets: range) -> list[ReadRecord]:
    return [ReadRecord(tp, o, None, 0) for o in offsets]


def test_required_LIVE_001_a_restart_that_fails_is_a_liveness_violation_and_loses_nothing() -> None:
    """Spark 4.1.1 (SPARK-55271): the restarted query read its first run's batches, then died replaying the batch
    that was planned but not committed, before the added partition was read. One violation: LIVE-001's, with the
    exception; not 15 ``offset-gap`` of RESTORE-003 and RESTORE-004 for the records it never got to."""
    before = reads(T0, range(6)) + reads(T1, range(6))
    found = check_restarted_reads(SPARK_55271, "that the scenario restarted on batch 1", before, ENDS, BY_ID)
    assert [(v.requirement, v.kind) for v in found] == [("LIVE-001", "query-failed")]
    assert found[0].data["exception"] == "StreamingQueryException"
    assert found[0].data["cause"].startswith("java.lang.NullPointerException")
    assert found[0].data["frames"][0].startswith("org.apache.spark.sql.kafka010.KafkaMicroBatchStream.metrics")
    # what it did read is still judged: an offset read twice or skipped below one read is still an anomaly
    skipped = before[:2] + before[3:] + before[:1]
    judged = check_restarted_reads(SPARK_55271, "that x", skipped, ENDS, BY_ID)
    assert [(v.requirement, v.kind) for v in judged] == [
        ("LIVE-001", "query-failed"),
        ("RESTORE-003", "offset-gap"),
        ("RESTORE-003", "offset-duplicate"),
    ]
    # a restart that finished is judged to the ends: what it did not read there is lost
    assert [(v.requirement, v.kind) for v in check_restarted_reads(None, "that x", before, ENDS, BY_ID)] == (
        [("RESTORE-003", "offset-gap")] * 8 + [("RESTORE-004", "offset-gap")] * 4
    )
    every = before + reads(T0, range(6, 10)) + reads(T1, range(6, 10)) + reads(ADDED, range(4))
    assert check_restarted_reads(None, "that x", every, ENDS, BY_ID) == []


def test_required_LIVE_001_a_driver_that_fails_of_its_own_accord_is_a_liveness_violation() -> None:
    """A restarted driver whose query failed recorded the failure in its output (``serve``): LIVE-001's
    ``query-failed`` with that exception, not COMMIT-011's loss; a driver that ended otherwise with an error is
    ``driver-failed`` with its last line; one that runs or ended at the end of its input is not judged."""
    log = f"Traceback (most recent call last):\n  ...\nStreamingQueryException: ...\n{failure_line(SPARK_55271)}\n"
    assert driver_failure(log) == SPARK_55271
    assert driver_failure("batch 2\n") is None
    (failed,) = check_driver_exit(1, "the restarted driver", log)
    assert (failed.requirement, failed.kind) == ("LIVE-001", "query-failed")
    assert failed.evidence.startswith("a query that the restarted driver ran to its end failed: StreamingQuery")
    assert failed.data["cause"] == SPARK_55271.cause
    assert check_driver_exit(None, "the restarted driver", log) == check_driver_exit(0, "d", log) == []
    (other,) = check_driver_exit(1, "the restarted driver", "batch 2\nValueError: the adapter's own error\n")
    assert (other.requirement, other.kind) == ("LIVE-001", "driver-failed")
    assert other.evidence == (
        "the restarted driver failed of its own accord (exit 1): ValueError: the adapter's own error"
    )
    (crashed,) = check_driver_exit(-11, "the speculation driver", "")
    assert crashed.evidence == "the speculation driver failed of its own accord (signal SIGSEGV): (it printed nothing)"


def test_a_driver_records_its_failed_query_for_the_scenario_and_exits_1(capsys: pytest.CaptureFixture[str]) -> None:
    from kconform.conformance.spark.driver import QUERY_FAILED_EXIT, serve

    stopped = []

    class Session:
        def stop(self) -> None:
            stopped.append(True)

    def run_query() -> None:
        raise StreamingQueryException(
            "[STREAM_FAILED] Query [id = 1] terminated with exception: NPE", SPARK_55271_TRACE
        )

    assert serve(Session(), run_query) == QUERY_FAILED_EXIT == 1  # type: ignore[arg-type]
    recorded = driver_failure(capsys.readouterr().err)
    assert recorded is not None and recorded.cause.startswith("java.lang.NullPointerException")
    assert stopped == [True]

    def other() -> None:
        raise ValueError("the adapter's own error")

    with pytest.raises(ValueError, match="own error"):
        serve(Session(), other)  # type: ignore[arg-type]
    assert driver_failure(capsys.readouterr().err) is None


FLINK_JOB_FAILED = """14:02:11 WARN some log line
Caused by: java.lang.RuntimeException: a logged trace before the harness's own
java.lang.IllegalStateException: the job ended before it was stopped
\tat kconform.FlinkHarness$Recorder.awaitStop(FlinkHarness.java:480)
Caused by: java.util.concurrent.ExecutionException: org.apache.flink.runtime.client.JobExecutionException: failed
\tat java.base/java.util.concurrent.CompletableFuture.reportGet(CompletableFuture.java:396)
Caused by: org.apache.flink.runtime.client.JobExecutionException: Job execution failed.
\t... 3 more
Caused by: org.apache.flink.runtime.JobException: Recovery is suppressed by FixedDelayRestartBackoffTimeStrategy
\tat org.apache.flink.runtime.executiongraph.failover.ExecutionFailureHandler.handleFailure(X.java:1)
Caused by: java.lang.IllegalStateException: Found duplicate transactionalIdPrefix for multiple Kafka sinks: null.
\tat org.apache.flink.connector.kafka.sink.internal.BackchannelFactory.getBackchannel(BackchannelFactory.java:110)
\tat org.apache.flink.connector.kafka.sink.KafkaSink.createCommitter(KafkaSink.java:114)
Caused by: java.lang.IllegalStateException: Writable backchannel already exists.
\tat org.apache.flink.connector.kafka.sink.internal.BackchannelImpl.createWritableBackchannel(BackchannelImpl.java:1)
"""


def test_required_LIVE_001_a_flink_job_that_failed_is_named_by_the_connectors_own_exception() -> None:
    found = flink_job_failure(FLINK_JOB_FAILED)
    assert found == Failure(
        "java.lang.IllegalStateException",
        "Found duplicate transactionalIdPrefix for multiple Kafka sinks: null.",
        (
            "org.apache.flink.connector.kafka.sink.internal.BackchannelFactory.getBackchannel(BackchannelFactory.java:110)",
            "org.apache.flink.connector.kafka.sink.KafkaSink.createCommitter(KafkaSink.java:114)",
        ),
        "java.lang.IllegalStateException: Writable backchannel already exists.",
    )
    (violation,) = check_query_ran(found, "that run 1 of the drawn schedule")
    assert (violation.requirement, violation.kind) == ("LIVE-001", "query-failed")
    assert "Found duplicate transactionalIdPrefix" in violation.evidence


@pytest.mark.parametrize(
    "stderr",
    [
        "",  # the JVM printed nothing
        "java.io.FileNotFoundException: /run.json (No such file or directory)\n\tat kconform.FlinkHarness.main(X:1)",
        FLINK_JOB_FAILED.split("Caused by: java.lang.IllegalStateException: Found")[0]
        + "Caused by: java.lang.IllegalStateException: kconform: injected failure of subtask 0 after 3 records\n",
    ],
    ids=["nothing", "the harness's own error", "the harness's injected failure"],
)
def test_a_flink_harness_failure_of_its_own_is_no_job_failure(stderr: str) -> None:
    """Broken twins: no job failure printed, or the job ended by the harness's own injected failure: the harness's
    fault (could not check), never the connector's LIVE-001."""
    assert flink_job_failure(stderr) is None
