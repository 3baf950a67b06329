"""The capability probe finds Tansu's deviations by itself, and reports every capability of any broker."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from conformance.probe import Capability, format_table, main, not_verifiable
from tests.integration.test_brokers import child_pids

KNOWN_TANSU_DEVIATIONS = {
    "create_partitions": "KAFKA-009",  # _UNSUPPORTED_FEATURE
    "list_offsets_latest": "KAFKA-008",  # last batch's base offset + 1
    "abort_hidden_from_read_committed": "KAFKA-001",  # aborted records visible to read_committed
    "zombie_fencing": "KAFKA-004",  # the fenced producer's records become visible
    "transaction_timeout": "KAFKA-005",  # transactions never time out
    "group_offset_metadata": "KAFKA-010",  # the metadata string is dropped
    "offsets_for_times": "KAFKA-011",  # wrong offsets
    "resume_transaction": "KAFKA-015",  # librdkafka has no KIP-939 (the client, not Tansu)
}
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


def test_probe_cli_on_fresh_embedded_tansu_finds_exactly_the_known_deviations(
    capsys: pytest.CaptureFixture[str],
) -> None:
    before = child_pids()
    assert main(["--broker", "embedded", "--json"]) == 0
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
