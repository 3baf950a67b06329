"""report.json, as a real run writes it, is valid against docs/report.schema.json (described in
docs/report-json.md): a mutant's run, so that it holds failures, violations with fields, and pictures."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import asdict
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from kconform.conformance.gate.results import CrashRecord

ROOT = Path(__file__).resolve().parents[1]
SCHEMA_PATH = ROOT / "docs" / "report.schema.json"
MUTANT = "kconform.conformance.mutants.protocol:python_mod_no_mask"
"""Breaks Flink's assignment formula: ASSIGN-004 fails with hundreds of formula-mismatch violations."""


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    cwd = tmp_path_factory.mktemp("schema")
    env = {k: v for k, v in os.environ.items() if k != "KCONFORM_PROFILE"}
    command = [sys.executable, "-m", "kconform.conformance.cli", "run", "--adapter", MUTANT, "--level", "protocol"]
    command += ["--profile", "quick", "--seed", "1", "--only", "ASSIGN-004", "--report", "report"]
    proc = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 1, proc.stdout[-3000:] + proc.stderr[-3000:]
    loaded: dict[str, Any] = json.loads((cwd / "report" / "report.json").read_text())
    return loaded


def test_the_schema_is_a_valid_json_schema() -> None:
    jsonschema.Draft202012Validator.check_schema(json.loads(SCHEMA_PATH.read_text()))


def test_a_real_report_with_violations_is_valid_against_the_schema(report: dict[str, Any]) -> None:
    schema = json.loads(SCHEMA_PATH.read_text())
    validator = jsonschema.Draft202012Validator(schema, format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER)
    errors = [f"/{'/'.join(map(str, e.absolute_path))}: {e.message[:300]}" for e in validator.iter_errors(report)]
    assert not errors, "\n".join(errors[:20])
    violations = [v for t in report["tests"] for v in t["violations"]]
    assert violations and all(v["fields"] for v in violations), "the mutant's run should hold violations with fields"
    assert {v["kind"] for v in violations} == {"formula-mismatch"}
    assert any(t["pictures"] for t in report["tests"])


def test_the_doc_names_every_top_level_key_of_the_schema() -> None:
    schema = json.loads(SCHEMA_PATH.read_text())
    doc = (ROOT / "docs" / "report-json.md").read_text()
    assert not [key for key in schema["required"] if f"`{key}`" not in doc]
    assert not [key for key in schema["$defs"]["fields"]["properties"] if f"`{key}`" not in doc]


def test_a_crash_as_the_report_writes_it_is_valid_against_the_schema(report: dict[str, Any]) -> None:
    """The real report never crashed (``crashes`` empty); one crash record as ``to_json`` writes it, and one of a death
    outside any test, fit the schema too."""
    assert report["crashes"] == []
    crashed = {
        **report,
        "crashes": [
            asdict(CrashRecord(7, 11, "SIGSEGV", "suite.py::test_x", "test_x", ['File "a.py", line 9 in f'])),
            asdict(CrashRecord(8, 9, "SIGKILL", None, None, [])),
        ],
    }
    validator = jsonschema.Draft202012Validator(json.loads(SCHEMA_PATH.read_text()))
    assert not [e.message for e in validator.iter_errors(crashed)]
