"""Credentials never printed, end to end: a gate pointed at a SASL-secured Apache Kafka with its password in
the environment (as CI passes it) probes the broker and runs a pipeline scenario through it with the reference
adapter, then with an adapter that prints the password and fails showing it; and then no file of the run's
reports or work folders, no broker file and no line of its output holds the password."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from kconform.conformance.brokers import KafkaBroker
from kconform.reference_impl.credentials import MASK, reveal

ROOT = Path(__file__).resolve().parents[2]
RUN_TIMEOUT_S = 300


@pytest.fixture(scope="module")
def secured(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KafkaBroker]:
    with KafkaBroker(sasl=True, tmp_root=tmp_path_factory.mktemp("broker")) as broker:
        yield broker


def password_of(broker: KafkaBroker) -> str:
    return reveal(broker.security["sasl.password"])


def external_env(broker: KafkaBroker, work: Path) -> dict[str, str]:
    """How CI points kconform at a secured cluster: variables, never arguments; ``TMPDIR`` puts the run's
    work folders (pytest's, the Spark checkpoints, the drivers' logs) where the search looks."""
    settings = {k: reveal(v) for k, v in broker.security.items()}
    env = {f"KAFKA_{name.upper().replace('.', '_')}": value for name, value in settings.items()}
    return {**os.environ, **env, "KAFKA_BOOTSTRAP_SERVERS": broker.bootstrap_servers, "TMPDIR": str(work)}


def kconform_run(
    adapter: str, report: Path, env: dict[str, str], only: str = "ASSIGN_001_each_task"
) -> subprocess.CompletedProcess[str]:
    report.mkdir(parents=True)
    return subprocess.run(
        [sys.executable, "-m", "kconform.conformance.cli", "run", "--level", "pipeline", "--broker", "external",
         "--adapter", adapter, "--only", only,
         "--profile", "quick", "--seed", "1", "--report", str(report)],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=RUN_TIMEOUT_S, check=False,
    )  # fmt: skip


def passed(report: Path) -> set[str]:
    """The requirement ids a run's ``report.json`` gives PASS: a scenario ran through the secured broker."""
    found = json.loads((report / "report.json").read_text())
    return {r["id"] for r in found["requirements"] if r["status"] == "PASS"}


def showing(password: str, folders: list[Path], outputs: dict[str, str]) -> list[str]:
    """Every file under ``folders`` and every named output that holds ``password``."""
    files = [p for folder in folders for p in sorted(folder.rglob("*")) if p.is_file()]
    return [str(p) for p in files if password.encode() in p.read_bytes()] + [
        name for name, text in outputs.items() if password in text
    ]


def test_the_search_finds_a_password_written_without_the_redactor(tmp_path: Path) -> None:
    """The zero below means something: the same search sees the password in what the adapter wrote unredacted."""
    (tmp_path / "deep" / "er").mkdir(parents=True)
    (tmp_path / "deep" / "er" / "pytest.log").write_text("RuntimeError('login refused: sasl.password=s3cret-x')")
    assert showing("s3cret-x", [tmp_path], {"stdout": "ok", "stderr": "password s3cret-x"}) == [
        str(tmp_path / "deep" / "er" / "pytest.log"),
        "stderr",
    ]
    assert showing("s3cret-x", [tmp_path], {}) != [] and showing("other", [tmp_path], {"stdout": "ok"}) == []


def test_a_secured_cluster_s_password_is_in_no_file_and_no_output(secured: KafkaBroker, tmp_path: Path) -> None:
    password = password_of(secured)
    work = tmp_path / "work"
    work.mkdir()
    env = external_env(secured, work)
    assert "KAFKA_SASL_PASSWORD" in env and not any(password in arg for arg in sys.argv)

    working = kconform_run("kconform.conformance.spark.pipeline:SPARK_ADAPTER", tmp_path / "report-working", env)
    failing = kconform_run("tests.misbehaving_adapters:FAILS_SHOWING_ITS_PASSWORD", tmp_path / "report-failing", env)
    # Spark's own connector gets the password inside a JAAS line, handed to its JVM
    spark_kafka = kconform_run(
        "kconform.conformance.adapters.spark_kafka:ADAPTER", tmp_path / "report-spark-kafka", env, only="STRAT_001"
    )

    assert working.returncode == 0, working.stdout + working.stderr  # the credentials reached Spark's clients
    assert "ASSIGN-001" in passed(tmp_path / "report-working")
    report = json.loads((tmp_path / "report-working" / "report.json").read_text())
    assert report["broker_capabilities"], "the probe measured the secured broker"
    assert failing.returncode == 1, failing.stdout + failing.stderr
    assert spark_kafka.returncode == 0, spark_kafka.stdout + spark_kafka.stderr
    assert "STRAT-001" in passed(tmp_path / "report-spark-kafka")
    runs = {"working": working, "failing": failing, "spark-kafka": spark_kafka}
    outputs = {
        f"{name} {stream}": getattr(run, stream) for name, run in runs.items() for stream in ("stdout", "stderr")
    }
    broker_files = [node.workdir for node in secured.nodes]
    assert showing(password, [tmp_path, *broker_files], outputs) == []
    assert f"sasl.password={MASK}" in failing.stdout, "the adapter's message was shown, redacted"
    assert f"connecting with sasl.password={MASK}" in (tmp_path / "report-failing" / "pytest.log").read_text()


def test_the_gate_starts_a_secured_node_itself_and_its_clients_log_in(tmp_path: Path) -> None:
    """``--broker kafka-sasl``: kconform starts a node that refuses anonymous clients and hands its generated
    password to the adapter as a ``Secret``; the pipeline scenario passes through it."""
    report = tmp_path / "report"
    report.mkdir()
    run = subprocess.run(
        [sys.executable, "-m", "kconform.conformance.cli", "run", "--level", "pipeline", "--broker", "kafka-sasl",
         "--adapter", "kconform.conformance.spark.pipeline:SPARK_ADAPTER", "--only", "ASSIGN_001_each_task",
         "--profile", "quick", "--seed", "1", "--report", str(report)],
        cwd=ROOT, capture_output=True, text=True, timeout=RUN_TIMEOUT_S, check=False,
    )  # fmt: skip
    assert run.returncode == 0, run.stdout + run.stderr
    assert "broker kafka-sasl" in run.stdout and "ASSIGN-001" in passed(report), run.stdout
