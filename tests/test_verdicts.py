"""``kconform verdicts``: the page it writes holds the versions, the seed and a verdict per id, and
nothing that differs between two identical runs; the run it makes cannot replay saved examples."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from kconform.conformance.adapters.flink_kafka import FlinkKafkaAdapter
from kconform.conformance.checks.checkers import Violation
from kconform.conformance.flink.versions import release
from kconform.conformance.gate import report, results, verdicts
from kconform.conformance.gate.expectations import Deviation
from kconform.conformance.gate.options import RunOptions
from kconform.conformance.gate.results import RequirementResult, RunResult, Status
from kconform.conformance.gate.runner import pytest_args


def result(started: float) -> RunResult:
    deviation = Deviation("RESTORE-002", "one task per partition", "https://example.org/src")
    failed = results.TestResult("n", "rescale", ["RESTORE-002"], "MUST", True, Status.XFAIL, 1.0, deviation=deviation)
    failed.violated = ["RESTORE-002"]
    rows = [
        RequirementResult("RESTORE-002", "MUST", "One owner", "", Status.XFAIL, [failed], "one task", "fidelity"),
        RequirementResult("DISC-005", "MUST", "New | earliest", "", Status.PASS, [], category="safety"),
    ]
    options = RunOptions(adapter="m:A", level="pipeline", seed=7, expectations=Path("x.toml"))
    return RunResult(
        options=options,
        seed=7,
        adapter_name="spark-sql-kafka-0-10",
        capabilities=["pipeline"],
        variants={},
        tests=[failed],
        requirements=rows,
        untested=["ASSIGN-003"],
        notes=[],
        started=started,
        finished=started + 60,
        pytest_log="",
        interrupted=False,
        broker_version="Apache Kafka 4.1.1",
        unchecked={"COMMIT-010": "not observable from outside: which producer | committed"},
    )


def test_the_page_names_versions_seed_and_each_verdict_and_nothing_that_varies() -> None:
    command, versions = "kconform verdicts --adapter m:A", {"spark-sql-kafka-0-10_2.13": "4.2.0"}
    page = verdicts.render(result(1.0), command, versions)
    assert page == verdicts.render(result(99.0), command, versions)
    for expected in (
        "seed `7`",
        "spark-sql-kafka-0-10_2.13 4.2.0",
        "PySpark ",
        "Apache Kafka 4.1.1",
        "**safe: yes (1 safety requirement verified)**",
        "**Flink-faithful: no (violated: RESTORE-002)**",
        "| RESTORE-002 | MUST | fidelity | One owner | XFAIL | 1 xfail | one task |",
        "| DISC-005 | MUST | safety | New \\| earliest | PASS |  |  |",
        "Not checked at this level: ASSIGN-003.",
        "| COMMIT-010 | not observable from outside: which producer \\| committed |",
        "kconform verdicts --adapter m:A",
    ):
        assert expected in page, expected


def test_a_run_can_be_given_its_own_example_database(tmp_path: Path) -> None:
    args = pytest_args(RunOptions(adapter="m:A", examples=tmp_path), seed=3)
    assert f"--kconform-examples={tmp_path}" in args
    assert not any(a.startswith("--kconform-examples") for a in pytest_args(RunOptions(adapter="m:A"), seed=3))


def test_a_flink_page_names_the_connector_and_flink_and_no_pyspark() -> None:
    flink = replace(result(1.0), adapter_name="flink-connector-kafka 5.0.0-2.2", capabilities=["flink-job"])
    versions = FlinkKafkaAdapter(release("5.0.0-2.2")).versions()
    page = verdicts.render(flink, "kconform verdicts --adapter f:adapter", versions)
    assert "- judged: flink-connector-kafka 5.0.0-2.2; Flink 2.2.0\n" in page and "PySpark" not in page
    assert "seed `7`\n" in page and "Spark master" not in page


def test_a_failed_row_shows_its_first_violation_with_the_exception_and_no_id_of_the_run() -> None:
    """Spark 4.1.1's restart failure (SPARK-55271) on its page: the LIVE-001 row says which exception, where, and
    nothing that differs between two runs (the query's ids); the ids the test left not verified show no evidence."""
    crashed = Violation(
        "LIVE-001",
        "query-failed",
        "a query that the scenario restarted on its uncommitted batch 2 ran to its end failed: "
        "StreamingQueryException: [STREAM_FAILED] Query [id = 0b1c2d3e-aaaa-4bbb-8ccc-0123456789ab, runId = "
        "9f8e7d6c-aaaa-4bbb-8ccc-0123456789ab] terminated with exception: boom (caused by java.lang."
        "NullPointerException: boom)",
        data={"frames": ["org.apache.spark.sql.kafka010.KafkaMicroBatchStream.metrics(KafkaMicroBatchStream.scala:1)"]},
    )
    test = results.TestResult("n", "restart", ["RESTORE-003", "RESTORE-004"], "MUST", True, Status.FAIL, 1.0)
    test.violated, test.violations = ["LIVE-001"], [crashed, crashed]
    live = RequirementResult("LIVE-001", "MUST", "Gets to its end", "", Status.FAIL, [test], category="liveness")
    partial = RequirementResult("RESTORE-003", "MUST", "Read once", "", Status.PARTIAL, [test], "stopped", "safety")
    run = replace(result(1.0), tests=[test], requirements=[live, partial])
    page = verdicts.render(run, "kconform verdicts --adapter m:A", {})
    row = next(line for line in page.splitlines() if line.startswith("| LIVE-001 "))
    assert "| FAIL | 1 fail | query-failed: a query that the scenario restarted on its uncommitted batch 2" in row
    assert "Query [id = <id>, runId = <id>] terminated" in row
    assert "(caused by java.lang.NullPointerException: boom) at org.apache.spark.sql.kafka010." in row
    assert row.endswith("(and 1 more violation) |")
    assert "| RESTORE-003 | MUST | safety | Read once | PARTIAL | 1 partial | not verified in full: stopped |" in page
    assert "**safe: not verified" in page and "**live: no (violated: LIVE-001)**" in page


def test_a_row_failed_by_two_tests_shows_the_first_violation_of_each() -> None:
    """Two scenarios break LIVE-001 two ways (a killed driver's restart, an available-now restart naming the upstream
    bug): the page shows both, so the one that names SPARK-55271 is not hidden behind "1 more violation"."""

    def failed(name: str, evidence: str) -> results.TestResult:
        test = results.TestResult(name, name, ["RESTORE-003"], "MUST", True, Status.FAIL, 1.0)
        test.violated = ["LIVE-001"]
        test.violations = [Violation("LIVE-001", "query-failed", evidence, data={"exception": "x"})] * 2
        return test

    killed, restarted = failed("killed", "the restarted driver failed"), failed("restart", "SPARK-55271 in 4.1.1")
    live = RequirementResult("LIVE-001", "MUST", "Ends", "", Status.FAIL, [killed, restarted], category="liveness")
    row = verdicts.failure_evidence(live)
    assert row == (
        "query-failed: the restarted driver failed; in another test: query-failed: SPARK-55271 in 4.1.1 "
        "(and 2 more violations)"
    )


def test_kconform_run_names_what_it_judged_as_the_page_does(monkeypatch: pytest.MonkeyPatch) -> None:
    """A team's venv picks the connector jars of its own pyspark: the run's summary says which it judged, in the
    page's words, above the broker's line; the protocol level (``judged=None``) adds no line."""
    monkeypatch.setattr(report, "version", lambda name: {"pyspark": "4.1.1"}[name])
    ran = replace(result(1.0), broker_facts=None)
    judged = report.judged_text(ran, {"spark-sql-kafka-0-10_2.13": "4.1.1", "kafka-clients": "3.9.1"})
    assert judged == "PySpark 4.1.1; spark-sql-kafka-0-10_2.13 4.1.1; kafka-clients 3.9.1"
    assert f"- judged: {judged}\n" in verdicts.render(
        ran, "kconform verdicts", {"spark-sql-kafka-0-10_2.13": "4.1.1", "kafka-clients": "3.9.1"}
    )
    assert f"\njudged: {judged}\n" in report.render_text(ran, judged=judged)
    assert "judged:" not in report.render_text(ran)


def test_a_run_loads_no_conftest_of_the_directory_it_is_started_in(tmp_path: Path) -> None:
    """pytest loads the ``conftest.py`` of the ``test*`` folders of the directory it starts in when its arguments
    are package names (``--pyargs``): a project's own (kconform's ``tests/conftest.py`` reorders the tests) would
    change what a run does. Here such a conftest fails the run at once if it is loaded."""
    suite = tmp_path / "packages" / "kc_conftest_probe"
    suite.mkdir(parents=True)
    (suite / "__init__.py").write_text("")
    (suite / "test_one.py").write_text("def test_runs() -> None:\n    pass\n")
    project = tmp_path / "project"
    (project / "tests").mkdir(parents=True)
    (project / "tests" / "conftest.py").write_text(
        "def pytest_configure(config):\n    raise SystemExit('the project conftest was loaded')\n"
    )
    code = (
        "import sys, pytest\n"
        f"sys.path.insert(0, {str(suite.parent)!r})\n"
        "from kconform.conformance.gate.options import RunOptions\n"
        "from kconform.conformance.gate.runner import pytest_args\n"
        "options = RunOptions(adapter='m:A', suite='kc_conftest_probe')\n"
        "sys.exit(pytest.main(pytest_args(options, seed=1)))\n"
    )
    run = subprocess.run([sys.executable, "-c", code], cwd=project, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0 and "1 passed" in run.stdout, run.stdout + run.stderr


def test_every_report_names_the_kafka_clients_release_it_judged(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The kafka-clients adapter names the release of the oracle build it loads (the pinned one, read off the jar,
    when the run names none), and report.json, report.md, report.html and the console state it, at the protocol
    level too, where no PySpark runs: a report says which release its verdict holds for (issue 44)."""
    from kconform.conformance.adapters.kafka_clients import KafkaClientsAdapter
    from kconform.conformance.gate.html_report import render_html
    from kconform.conformance.jvm import JVM_DIR_ENV

    monkeypatch.setenv(JVM_DIR_ENV, str(tmp_path))
    (tmp_path / "kafka-oracle").mkdir()
    (tmp_path / "kafka-oracle" / "kafka-clients-4.4.0.jar").write_bytes(b"")
    pinned = KafkaClientsAdapter("kafka-oracle")
    assert pinned.versions() == {"kafka-clients": "4.4.0"}
    at_release = KafkaClientsAdapter("releases/kafka-clients-3.4.1/kafka-oracle", release="3.4.1")
    assert at_release.versions() == {"kafka-clients": "3.4.1"}

    plain = result(1.0)
    ran = replace(plain, options=replace(plain.options, level="protocol"), broker_facts=None)
    ran.judged = report.judged_components(ran, pinned.versions())
    assert ran.judged == {"kafka-clients": "4.4.0"}
    assert report.to_json(ran)["judged"] == {"kafka-clients": "4.4.0"}
    assert "\n- judged: kafka-clients 4.4.0\n" in report.render_markdown(ran)
    assert '<p class="meta">judged: kafka-clients 4.4.0</p>' in render_html(ran)
    assert "\njudged: kafka-clients 4.4.0\n" in report.render_text(ran)
    assert report.to_json(plain)["judged"] is None  # nothing named: null, and no line
    assert "judged:" not in report.render_markdown(plain)


def test_a_run_whose_adapter_reads_with_confluent_kafka_names_it_and_its_librdkafka(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The client tests judge this interpreter's confluent-kafka for an adapter of capability
    ``confluent-kafka-consumer`` (the reference pipeline): the run names it and the librdkafka it wraps, at the
    pipeline level; not at the protocol level, which starts no client."""
    monkeypatch.setattr(report, "on_spark", lambda result: False)
    monkeypatch.setattr(report, "confluent_versions", lambda: {"confluent-kafka": "2.16.1", "librdkafka": "2.16.0"})
    plain = result(1.0)
    reads = replace(plain, capabilities=["pipeline", "confluent-kafka-consumer"])
    assert report.judged_components(reads, {}) == {"confluent-kafka": "2.16.1", "librdkafka": "2.16.0"}
    assert report.judged_components(plain, {}) == {}
    at_protocol = replace(reads, options=replace(reads.options, level="protocol"))
    assert report.judged_components(at_protocol, {}) == {}
