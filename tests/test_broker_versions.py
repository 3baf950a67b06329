"""Broker versions as data: the table of Apache Kafka releases, the ``--kafka-version`` option of ``kconform run``,
``probe-broker`` and ``soak`` (an unknown release is a usage error naming the known ones; one Maven cannot resolve is
could-not-check, exit 3, naming the fix), the ApiVersions codec the reports read the broker's facts with, and those
facts as reports state them. No broker, no Maven: a stand-in ``mvn`` plays the one that fails."""

from __future__ import annotations

import html
import inspect
import json
import os
import stat
import struct
import subprocess
import sys
from pathlib import Path

import pytest

from kconform.conformance import jvm
from kconform.conformance.brokers import api_versions, release_option
from kconform.conformance.brokers.facts import BrokerFacts, from_answer, from_table, offered_protocols
from kconform.conformance.brokers.kafka import logged_version
from kconform.conformance.brokers.versions import (
    DEFAULT_KAFKA_VERSION,
    KAFKA_VERSION_ENV,
    KNOWN_RELEASES,
    RELEASES,
    UnknownKafkaVersion,
    chosen_version,
    kafka_release,
    settings_for,
)
from kconform.conformance.jvm.broker_at_release import broker_module, pinned, pinned_release

ROOT = Path(__file__).resolve().parents[1]
SCHEMA = json.loads((ROOT / "docs" / "report.schema.json").read_text())


def version_key(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in version.split("."))


def test_the_table_knows_the_newest_3x_today_s_former_pin_and_the_newest_release_oldest_first() -> None:
    versions = [r.version for r in KNOWN_RELEASES]
    assert versions == sorted(versions, key=version_key) and len(set(versions)) == len(versions)
    assert {"4.1.1", "4.4.0"} <= set(versions) and any(v.startswith("3.9.") for v in versions)
    assert DEFAULT_KAFKA_VERSION == versions[-1] == "4.4.0"


def test_the_default_is_the_release_jvm_pom_pins_for_kconform_setup() -> None:
    assert pinned() == DEFAULT_KAFKA_VERSION
    assert pinned_release((ROOT / "jvm" / "pom.xml").read_bytes()) == DEFAULT_KAFKA_VERSION
    assert "${kafka.broker.version}" in (ROOT / "jvm" / "kafka-broker" / "pom.xml").read_text()


def test_each_row_states_kafka_s_transactions_and_group_protocols_by_line() -> None:
    for row in KNOWN_RELEASES:
        if row.line.startswith("3."):
            assert row.transaction_version == 0 and row.group_protocols == ("classic",), row
            assert "share.coordinator." in row.unknown_settings, row  # KIP-932's settings came with 4.x
        else:
            assert row.transaction_version == 2 and row.group_protocols[:2] == ("classic", "consumer"), row


def test_a_release_runs_without_the_settings_it_does_not_know() -> None:
    settings = {"share.coordinator.state.topic.min.isr": "1", "min.insync.replicas": "1"}
    assert settings_for(RELEASES["3.9.2"], settings) == {"min.insync.replicas": "1"}
    assert settings_for(RELEASES["4.4.0"], settings) == settings


def test_the_release_is_the_environment_s_else_the_default() -> None:
    assert kafka_release(None).version == kafka_release("").version == DEFAULT_KAFKA_VERSION
    assert chosen_version({}) == DEFAULT_KAFKA_VERSION
    assert chosen_version({KAFKA_VERSION_ENV: "3.9.2"}) == "3.9.2"


def test_an_unknown_release_names_the_known_ones_and_the_fix() -> None:
    with pytest.raises(UnknownKafkaVersion) as refused:
        kafka_release("3.7.0")
    text = str(refused.value)
    assert all(r.version in text for r in KNOWN_RELEASES) and f"default {DEFAULT_KAFKA_VERSION}" in text
    assert "conformance/brokers/versions.py" in text and "kconform probe-broker --kafka-version 3.7.0" in text
    assert isinstance(refused.value, ValueError)  # broker_from_env's callers treat it as a usage error


def test_another_release_has_its_own_jars_folder_beside_the_other_on_demand_builds() -> None:
    assert broker_module("4.4.0", "4.4.0") == "kafka-broker"
    assert broker_module("3.9.2", "4.4.0") == "releases/kafka-3.9.2/kafka-broker"
    with pytest.raises(ValueError, match="not an Apache Kafka release version"):
        broker_module("../4.4.0", "4.4.0")


def test_the_node_log_names_the_release_the_jvm_runs() -> None:
    log = (
        "[2026-11-29 12:38:30,228] INFO Kafka version: 3.9.2 (org.apache.kafka.common.utils.AppInfoParser)\n"
        "[x] INFO Kafka version: 4.4.0 (org.apache.kafka.common.utils.internals.AppInfoParser)\n"
    )
    assert logged_version(log) == "3.9.2" and logged_version("nothing") is None


# -- ApiVersions -----------------------------------------------------------------------------------------------


def compact_string(text: str) -> bytes:
    return api_versions.uvarint(len(text) + 1) + text.encode()


def answer_frame(
    correlation_id: int, apis: dict[int, tuple[int, int]], finalized: dict[str, int], error: int = 0
) -> bytes:
    """An ApiVersions v3 answer as a broker writes it (header v0, then the body with its tagged fields)."""
    body = struct.pack(">ih", correlation_id, error) + api_versions.uvarint(len(apis) + 1)
    body += b"".join(struct.pack(">hhh", key, low, high) + b"\0" for key, (low, high) in apis.items())
    body += struct.pack(">i", 0)
    supported = api_versions.uvarint(2) + compact_string("metadata.version") + struct.pack(">hh", 7, 33) + b"\0"
    final = api_versions.uvarint(len(finalized) + 1) + b"".join(
        compact_string(name) + struct.pack(">hh", level, level) + b"\0" for name, level in finalized.items()
    )
    epoch = struct.pack(">q", 9)
    tags = [(0, supported), (1, epoch), (2, final)]
    body += api_versions.uvarint(len(tags))
    body += b"".join(api_versions.uvarint(t) + api_versions.uvarint(len(v)) + v for t, v in tags)
    return body


def test_the_request_is_an_api_versions_v3_frame_with_its_size() -> None:
    frame = api_versions.encode_request(7)
    (size,) = struct.unpack(">i", frame[:4])
    assert size == len(frame) - 4
    assert struct.unpack(">hhi", frame[4:12]) == (api_versions.API_VERSIONS, 3, 7)
    assert frame.endswith(b"\0")  # the body's empty tagged fields


def test_the_answer_gives_apis_features_and_group_protocols() -> None:
    apis = {11: (0, 9), 68: (0, 1), 88: (0, 0), 26: (0, 5)}
    answer = api_versions.decode_response(answer_frame(1, apis, {"transaction.version": 2, "group.version": 1}), 1)
    assert answer.apis == apis and answer.supported_features == {"metadata.version": (7, 33)}
    assert answer.feature_level("transaction.version") == 2 and answer.feature_level("kraft.version") == 0
    assert answer.group_protocols() == ("classic", "consumer", "streams")
    # streams needs streams.version finalized, consumer group.version: a 3.9 broker lists the API yet runs classic
    assert offered_protocols(answer) == ("classic", "consumer")
    facts = from_answer("Apache Kafka 4.4.0", "4.4.0", answer)
    assert (facts.transaction_version, facts.group_protocols, facts.source) == (2, ("classic", "consumer"), "broker")


def test_a_broken_answer_is_an_error_not_a_guess() -> None:
    frame = answer_frame(1, {11: (0, 9)}, {})
    with pytest.raises(api_versions.ApiVersionsError, match="ends early"):
        api_versions.decode_response(frame[:-3], 1)
    with pytest.raises(api_versions.ApiVersionsError, match="request 1, not 2"):
        api_versions.decode_response(frame, 2)
    with pytest.raises(api_versions.ApiVersionsError, match="error code 35"):
        api_versions.decode_response(answer_frame(1, {}, {}, error=35), 1)


# -- the facts reports state ------------------------------------------------------------------------------------


def test_the_table_stands_in_when_the_broker_cannot_be_asked_and_says_so() -> None:
    facts = from_table("Apache Kafka 3.9.2", "3.9.2", "a SASL_SSL listener is not asked ApiVersions")
    assert (facts.transaction_version, facts.group_protocols, facts.source) == (0, ("classic",), "table")
    assert facts.text() == (
        "Apache Kafka 3.9.2: transaction.version 0 (the classic transaction protocol), group protocols classic "
        "(from kconform's version table: a SASL_SSL listener is not asked ApiVersions)"
    )
    unknown = from_table("external broker", None, "the broker did not answer ApiVersions (refused)")
    assert unknown.source == "unknown" and "unknown (the broker did not answer" in unknown.text()


def test_the_facts_as_json_are_what_the_report_schema_describes() -> None:
    import jsonschema

    schema = {"$defs": SCHEMA.get("$defs", {}), **SCHEMA["properties"]["broker_release"]}
    facts = BrokerFacts("Apache Kafka 4.4.0", "4.4.0", 2, ("classic", "consumer", "streams"), "broker")
    jsonschema.validate(facts.to_json(), schema)
    jsonschema.validate(from_table("x", None, "why").to_json(), schema)
    assert "broker_release" in SCHEMA["required"]


# -- the option -----------------------------------------------------------------------------------------------


def kconform(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "kconform.conformance.cli", *args]
    merged = {k: v for k, v in os.environ.items() if k != KAFKA_VERSION_ENV} | (env or {})
    return subprocess.run(command, capture_output=True, text=True, timeout=120, env=merged)


@pytest.mark.parametrize(
    "command",
    [
        ("probe-broker", "--broker", "kafka"),
        ("run", "--level", "pipeline", "--broker", "kafka-cluster"),
        ("soak", "--broker", "kafka", "--schedules", "1"),
    ],
)
def test_an_unknown_kafka_version_is_a_usage_error_naming_the_known_ones(command: tuple[str, ...]) -> None:
    done = kconform(*command, "--kafka-version", "2.8.2")
    assert done.returncode == 2, done.stdout + done.stderr
    assert "Apache Kafka '2.8.2' is not a broker release kconform knows; known: 3.9.2, 4.1.1, 4.4.0" in done.stderr
    assert "conformance/brokers/versions.py" in done.stderr and "Traceback" not in done.stderr


def test_the_environment_s_unknown_release_is_refused_too() -> None:
    done = kconform("probe-broker", "--broker", "kafka", env={KAFKA_VERSION_ENV: "9.9.9"})
    assert done.returncode == 2 and "'9.9.9' is not a broker release kconform knows" in done.stderr, done.stderr


def test_a_kafka_version_for_a_broker_the_suite_does_not_start_is_a_usage_error() -> None:
    done = kconform("probe-broker", "--broker", "tansu", "--kafka-version", "3.9.2")
    assert done.returncode == 2 and "--kafka-version picks the release of the brokers the suite starts" in done.stderr


def test_a_release_maven_cannot_resolve_is_could_not_check_naming_the_fix(tmp_path: Path) -> None:
    """A stand-in ``mvn`` that fails as Maven does offline: ERROR, exit 3, Maven's words and the fix, no traceback."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    mvn = bin_dir / "mvn"
    mvn.write_text(
        "#!/bin/sh\necho '[ERROR] Failed to execute goal on project kafka-broker: Could not resolve dependencies "
        "for project kconform:kafka-broker:pom:0.1.0: org.apache.kafka:kafka_2.13:jar:3.9.2 was not found'\nexit 1\n"
    )
    mvn.chmod(mvn.stat().st_mode | stat.S_IXUSR)
    env = {jvm.JVM_DIR_ENV: str(tmp_path / "jars"), "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}
    done = kconform("probe-broker", "--broker", "kafka", "--kafka-version", "3.9.2", env=env)
    assert done.returncode == 3, done.stdout + done.stderr
    assert "could not check (ERROR): Apache Kafka 3.9.2 could not be resolved: Maven failed (exit 1)" in done.stderr
    assert "kafka_2.13:jar:3.9.2 was not found" in done.stderr and "~/.m2/settings.xml" in done.stderr
    assert "Traceback" not in done.stderr
    assert not (tmp_path / "jars" / "releases" / "kafka-3.9.2").exists()  # nothing half-resolved left behind


def test_the_option_is_checked_before_the_pinned_release_is_looked_for(monkeypatch: pytest.MonkeyPatch) -> None:
    """The pinned release is ``kconform setup``'s: ``prepare`` names it and leaves its absence to the run."""
    monkeypatch.delenv(KAFKA_VERSION_ENV, raising=False)
    monkeypatch.setenv(jvm.JVM_DIR_ENV, "/nonexistent/kconform-jars")
    assert release_option.prepare("run", DEFAULT_KAFKA_VERSION, ["kafka"]) is None
    assert os.environ[KAFKA_VERSION_ENV] == DEFAULT_KAFKA_VERSION
    monkeypatch.delenv(KAFKA_VERSION_ENV)
    assert release_option.prepare("run", "3.9.2", ["kafka"], starts=False) is None  # the protocol level: no broker
    assert KAFKA_VERSION_ENV not in os.environ


# -- the reports ----------------------------------------------------------------------------------------------


def test_every_report_states_the_broker_s_release_transactions_and_group_protocols() -> None:
    from dataclasses import replace

    from kconform.conformance.gate import verdicts
    from kconform.conformance.gate.html_report import render_html
    from kconform.conformance.gate.report import render_markdown, render_text, to_json
    from tests.test_verdicts import result

    facts = BrokerFacts("Apache Kafka 3.9.2", "3.9.2", 0, ("classic",), "broker")
    ran = replace(result(1.0), broker_version=facts.name, broker_facts=facts)
    line = (
        "Apache Kafka 3.9.2: transaction.version 0 (the classic transaction protocol), group protocols classic "
        "(read from the broker)"
    )
    assert f"\n- broker: {line}\n" in render_markdown(ran)
    assert f"\nbroker: {line}\n" in render_text(ran)
    assert f'<p class="meta">broker: {line}</p>' in html.unescape(render_html(ran))
    page = verdicts.render(ran, "kconform verdicts --adapter m:A", {})
    assert "- broker: Apache Kafka 3.9.2 (`--broker kafka`); transaction.version 0 (the classic" in page
    assert to_json(ran)["broker_release"] == facts.to_json()
    assert to_json(result(1.0))["broker_release"] is None  # no broker started: no facts, as before


def test_the_client_tests_state_their_broker_in_the_reports_as_the_pipeline_does(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A run of the client tests alone (``--only CLIENT``, the kafka-clients adapter) starts its broker through
    ``stated_broker``, which records its release, transaction.version and group protocols for the reports; with
    ``live_broker`` alone its report.json said ``broker_release: null`` on Apache Kafka 4.4.0 (2026-11-30)."""
    from types import SimpleNamespace

    from kconform.conformance.gate import pytest_plugin
    from kconform.conformance.suite import test_client, test_client_workload

    facts = BrokerFacts("Apache Kafka 4.4.0", "4.4.0", 2, ("classic", "consumer", "streams"), "broker")
    running = SimpleNamespace(version="Apache Kafka 4.4.0")
    monkeypatch.setattr(pytest_plugin, "live_broker", lambda kind=None: iter([running]))
    monkeypatch.setattr(pytest_plugin, "read_facts", lambda broker: facts)
    config = SimpleNamespace(stash=pytest.Stash())
    assert list(pytest_plugin.stated_broker(config)) == [running]  # type: ignore[arg-type]
    assert config.stash[pytest_plugin.BROKER_FACTS] == facts
    assert config.stash[pytest_plugin.BROKER_VERSION] == "Apache Kafka 4.4.0"
    starts = {  # the fixtures that start the client tests' broker: the workload's own, the others' the shared one
        test_client_workload: "yield from stated_broker(request.config)",
        test_client: 'request.getfixturevalue("shared_broker")',
        pytest_plugin: "def shared_broker(pytestconfig: pytest.Config) -> Iterator[Broker]:",
    }
    for module, start in starts.items():
        source = Path(str(module.__file__)).read_text(encoding="utf-8")
        assert start in source and "live_broker()" not in source.replace("def live_broker(", "")
    shared = inspect.getsource(pytest_plugin.shared_broker)
    assert "yield from stated_broker(pytestconfig)" in shared


def test_a_jars_folder_resolved_from_older_poms_is_not_taken_for_the_pinned_release(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A ``.jvm/kafka-broker`` of an earlier pin would run that release under the pinned one's name."""
    from kconform.conformance.brokers import kafka_unavailable
    from kconform.conformance.jvm.broker_at_release import resolve_at_release

    monkeypatch.setenv(jvm.JVM_DIR_ENV, str(tmp_path))
    monkeypatch.delenv(KAFKA_VERSION_ENV, raising=False)
    (tmp_path / "kafka-broker").mkdir()
    (tmp_path / "kafka-broker" / "kafka_2.13-4.1.1.jar").write_bytes(b"")
    with pytest.raises(
        jvm.JvmArtifactsMissing, match=f"holds Apache Kafka 4.1.1, not the pinned {DEFAULT_KAFKA_VERSION}"
    ):
        resolve_at_release(DEFAULT_KAFKA_VERSION, print)
    assert "kconform setup" in (kafka_unavailable() or "")


def test_a_replay_line_names_the_broker_release_the_failure_was_seen_on() -> None:
    from kconform.conformance.gate.collector import replay_args
    from kconform.conformance.gate.options import RunOptions
    from kconform.conformance.soak.command import build_parser, replay_command

    options = RunOptions(adapter="m:A", level="pipeline")
    at = {KAFKA_VERSION_ENV: "3.9.2"}
    assert replay_args(options, 1, "required_X", True, at)[-2:] == ["--kafka-version", "3.9.2"]
    assert "--kafka-version" not in replay_args(options, 1, "required_X", False, at)  # the protocol level: no broker
    assert "--kafka-version" not in replay_args(options, 1, "required_X", True, {KAFKA_VERSION_ENV: "4.4.0"})
    soak = build_parser().parse_args(["--seed", "9", "--kafka-version", "3.9.2"])
    assert "--kafka-version 3.9.2" in replay_command(soak, 0)
