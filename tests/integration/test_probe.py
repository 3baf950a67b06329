"""The capability probe finds Tansu's deviations by itself, and reports every capability of any broker."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from kconform.conformance.brokers import Broker, KafkaBroker
from kconform.conformance.brokers.capability import Capability, format_table
from kconform.conformance.brokers.probe import (
    PROBE_TABLE_BEGIN,
    PROBE_TABLE_END,
    main,
    not_verifiable,
)
from kconform.conformance.brokers.tansu import TANSU_CANNOT_SHOW
from tests.integration.test_brokers import child_pids

CLIENT_LIMITS = {"resume_transaction": "KAFKA-015"}  # librdkafka has no KIP-939, on every broker
KNOWN_TANSU_DEVIATIONS = {**TANSU_CANNOT_SHOW, **CLIENT_LIMITS}
SPEC = Path(__file__).parents[2] / "spec" / "kafka.md"


def spec_ids() -> dict[str, str]:
    """KAFKA id -> the capability named in its **Probe.** paragraph of spec/kafka.md."""
    text = SPEC.read_text()
    sections = re.split(r"^### (KAFKA-\d{3}) ", text, flags=re.MULTILINE)[1:]
    return {
        ident: re.search(r"\*\*Probe\.\*\* `(\w+)`", body).group(1)  # type: ignore[union-attr]
        for ident, body in zip(sections[::2], sections[1::2], strict=True)
    }


def test_every_spec_requirement_is_probed(capabilities: dict[str, Capability]) -> None:
    assert {c.requirement_id: c.name for c in capabilities.values()} == spec_ids()
    assert all(c.observation for c in capabilities.values())


def test_on_apache_kafka_every_capability_is_supported_but_the_clients_limits(
    broker: Broker, capabilities: dict[str, Capability]
) -> None:
    if not isinstance(broker, KafkaBroker):
        pytest.skip(f"the session broker is {broker.kind}, not Apache Kafka (KCONFORM_BROKER=kafka)")
    assert {c.name: c.requirement_id for c in capabilities.values() if not c.supported} == CLIENT_LIMITS


def test_spec_probe_table_matches_what_the_probe_measures(
    broker: Broker, capabilities: dict[str, Capability], capsys: pytest.CaptureFixture[str]
) -> None:
    """spec/kafka.md's generated table (``make docs``) says what today's brokers do, column by column."""
    text = SPEC.read_text()
    block = text.split(PROBE_TABLE_BEGIN, 1)[1].split(PROBE_TABLE_END, 1)[0].strip().splitlines()
    header = [cell.strip() for cell in block[0].strip("|").split("|")]
    rows = {row.split("|")[2].strip().strip("`"): [c.strip() for c in row.strip("|").split("|")] for row in block[2:]}
    assert main(["--broker", "tansu", "--json"]) == 0
    tansu = {c["name"]: c["supported"] for c in json.loads(capsys.readouterr().out)["capabilities"]}
    measured = {"tansu": tansu, "Apache Kafka": {c.name: c.supported for c in capabilities.values()}}
    for column, name in enumerate(header[2:], start=2):
        product = "tansu" if name.startswith("tansu") else "Apache Kafka"
        if product == "Apache Kafka" and not isinstance(broker, KafkaBroker):
            continue
        documented = {cap: cells[column] == "yes" for cap, cells in rows.items()}
        assert documented == measured[product], f"spec/kafka.md's {name} column is stale: run `make docs`"


def test_probe_cli_on_fresh_tansu_finds_exactly_the_known_deviations(
    capsys: pytest.CaptureFixture[str],
) -> None:
    before = child_pids()
    assert main(["--broker", "tansu", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert child_pids() <= before, "the probe left a broker process behind"
    found = [Capability(**c) for c in report["capabilities"]]
    assert {c.name: c.requirement_id for c in found if not c.supported} == KNOWN_TANSU_DEVIATIONS
    unverifiable = not_verifiable(found)
    assert unverifiable["KAFKA-001"] == "not verifiable on this broker: abort_hidden_from_read_committed"
    assert unverifiable["COMMIT-008"] == "not verifiable on this broker: abort_hidden_from_read_committed"
    assert unverifiable["COMMIT-003"] == "not verifiable on this broker: resume_transaction"
    assert "KAFKA-002" not in unverifiable and "DISC-002" not in unverifiable
    table = format_table(found)
    assert all(c.observation in table for c in found)
