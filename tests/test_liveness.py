"""LIVE-001 (spec/liveness.md): a hang of the judged code and a query that fails where it should recover are
liveness violations with the call or the exception as evidence, never lost records; a stopped broker is no
evidence (could not check)."""

from __future__ import annotations

from kconform.conformance.checks.liveness_checkers import Failure, check_call_returned, check_query_ran, query_failure

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
