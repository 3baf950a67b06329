"""The conformance suite passes on the reference implementation, in every variant of every option.

``make conformance`` runs the default variant at both levels (protocol and Spark pipeline); this
runs it and the other variant through the same CLI a user runs, and checks the reports it writes.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from kconform.conformance.checks.client_workload_checkers import BROKER_HELD_BACK, UNREVOKED

ROOT = Path(__file__).resolve().parents[1]
RUN_BOUND_S = 1500
"""A whole run's bound (the pipeline level takes 6 to 10 minutes here, longer beside another test worker)."""
SEED = 1
"""``make test`` runs the gate at one seed, so that a red CI replays: at a random seed (a user's ``make
conformance``) the drawn client workload reaches real bugs of the confluent-kafka the interpreter imports, as it
did on 2026-12-02 (librdkafka 2.16.0's KIP-848 rejoin refused with INVALID_REQUEST, the bank's [[known]]
``librdkafka-848-rejoin-after-failed-leave``); new seeds are the hunt's and the long targets' to draw."""


@pytest.mark.parametrize(
    ("adapter", "level"),
    [
        ("kconform.reference_impl.adapter:FLIP27_POOLING", "protocol"),
        pytest.param("kconform.conformance.spark.pipeline:REFERENCE", "all", marks=[pytest.mark.spark]),
    ],
)
@pytest.mark.timeout(RUN_BOUND_S + 60)
def test_required_reference_adapter_conforms(adapter: str, level: str, tmp_path: Path) -> None:
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "kconform.conformance.cli",
            "run",
            "--adapter",
            adapter,
            "--level",
            level,
            "--report",
            str(tmp_path),
            "--seed",
            str(SEED),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=RUN_BOUND_S,
        check=False,
    )
    assert run.returncode == 0, run.stdout[-5000:] + run.stderr[-2000:]
    report = json.loads((tmp_path / "report.json").read_text())
    statuses = {r["id"]: r["status"] for r in report["requirements"]}
    assert statuses, "the report lists no requirement"
    if "POOLING" not in adapter:  # COMMIT-018 bounds pooled ids; an incrementing sink is exempt, a skip says so
        assert statuses.pop("COMMIT-018") == "SKIP"
    if level == "all":  # on a local master Spark starts no speculative copy: COMMIT-006's pipeline scenario skips,
        # and the ids it also checks (COMMIT-011/013 under speculation) are partly checked: a skip, never a pass
        reasons = {r["id"]: r["reason"] for r in report["requirements"] if statuses.get(r["id"]) == "SKIP"}
        assert "COMMIT-006" in reasons, statuses
        for req_id, why in reasons.items():
            assert "--spark-master standalone" in why and "tests passed" in why, (req_id, why)
            statuses.pop(req_id)
    # a drawn client schedule may meet the broker's own hang (Kafka 4.4.0's coordinator leaving a committed
    # transaction's markers unwritten after a SIGKILL): CLIENT-001 is then PARTIAL naming it, the reference not at fault
    held = {r["id"]: r.get("reason", "") for r in report["requirements"] if statuses.get(r["id"]) == "PARTIAL"}
    for req_id, why in held.items():
        assert req_id == "CLIENT-001" and BROKER_HELD_BACK in why, held
        statuses.pop(req_id)
    # a drawn client schedule may meet librdkafka's eager rejoin without revoke (the bank's [[known]] entry): the run
    # tolerates that one kind of CLIENT-008 in the confluent-kafka workload, XFAIL naming the entry, never another
    if statuses.get("CLIENT-008") == "XFAIL":
        (known,) = [t for t in report["tests"] if "CLIENT-008" in t["requirements"] and t["status"] == "XFAIL"]
        assert known["deviation"]["reason"].startswith("librdkafka-eager-rejoin-without-revoke"), known
        tolerated = known["message"].removeprefix("only known deviations, tolerated: ")
        assert re.fullmatch(rf"CLIENT-008 {UNREVOKED} x\d+", tolerated), known["message"]
        statuses.pop("CLIENT-008")
    assert set(statuses.values()) == {"PASS"}, statuses
    if level == "all":
        probed = {c["name"]: c["supported"] for c in report["broker_capabilities"]}
        assert "create_partitions" in probed and "zombie_fencing" in probed, probed
        assert not [i for i in report["untested"] if i.startswith("KAFKA-")], "the probe measured these"
    unchecked = {u["id"]: u["reason"] for u in report["unchecked_safety"]}
    assert set(unchecked) <= set(report["untested"]), unchecked  # each with the levels that judge it, see below
    assert all(why.startswith("judged ") for why in unchecked.values()), unchecked
    if level == "protocol":  # a safety id judged only by Spark queries is listed, saying so
        assert unchecked["COMMIT-015"] == "judged at the pipeline level only, through: Spark queries", unchecked
    if level in ("protocol", "all"):
        spread = [t["metrics"] for t in report["tests"] if "ASSIGN-005" in t["requirements"]]
        assert spread and all(f"global_spread_parallelism_{n}" in spread[0] for n in (2, 4, 8, 16)), spread
