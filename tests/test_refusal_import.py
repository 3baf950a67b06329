"""The write-refusal nemesis imports with every confluent-kafka the client workload runs: the suite's modules are all
imported by every ``kconform run``, and releases before 2.2.0 have no ``AlterConfigOpType``."""

from __future__ import annotations

import importlib

import confluent_kafka.admin
import pytest

from kconform.conformance.brokers import refusal


def test_the_nemesis_module_imports_without_incremental_config_changes_and_its_use_names_the_fix(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delattr(confluent_kafka.admin, "AlterConfigOpType")
    try:
        old = importlib.reload(refusal)
        with pytest.raises(RuntimeError, match=r"needs confluent-kafka 2\.2\.0 or later"):
            old._operations()
    finally:
        monkeypatch.undo()
        importlib.reload(refusal)
    assert refusal._operations().SET.name == "SET"
