"""The mutant registry: mutants are found by name through it, each module's own, and a name is registered once."""

from __future__ import annotations

import pytest

from kconform.conformance.adapter.loader import load_adapter
from kconform.conformance.mutants import registry
from kconform.conformance.mutants.flink import FlinkMutant
from kconform.conformance.mutants.pipeline import FaultOnlyMutant, PipelineMutant, SparkMutant
from kconform.conformance.mutants.protocol import Mutant, SourceMutant
from kconform.reference_impl.adapter import ReferenceAdapter

PROTOCOL = "kconform.conformance.mutants.protocol"
PIPELINE = "kconform.conformance.mutants.pipeline"
FLINK = "kconform.conformance.mutants.flink"


def test_every_registered_mutant_loads_by_its_adapter_spec_from_its_own_module() -> None:
    loaded = registry.load()
    kinds = (Mutant, SparkMutant, FlinkMutant)
    assert {m.name for kind in kinds for m in registry.mutants(kind)} == set(loaded)
    for mutant in registry.mutants(Mutant):
        assert load_adapter(f"{PROTOCOL}:{mutant.name}") == mutant.adapter
        assert mutant.adapter.name == f"mutant:{mutant.name}"
    for spark in registry.mutants(SparkMutant):
        assert load_adapter(f"{PIPELINE}:{spark.name}") is spark.adapter
    for flink in registry.mutants(FlinkMutant):
        adapter = load_adapter(f"{FLINK}:{flink.name}")
        assert adapter is flink.adapter and adapter.job_edit is registry.registered()[flink.name].defined
    assert registry.mutants(PipelineMutant) and registry.mutants(FaultOnlyMutant) and registry.mutants(FlinkMutant)


def test_a_mutant_is_not_an_attribute_of_the_other_module() -> None:
    registry.load()
    with pytest.raises(ValueError, match="has no attribute 'python_mod_no_mask'"):
        load_adapter(f"{PIPELINE}:python_mod_no_mask")
    with pytest.raises(ValueError, match="has no attribute 'spark_sink_forgets_marker'"):
        load_adapter(f"{PROTOCOL}:spark_sink_forgets_marker")
    with pytest.raises(AttributeError):
        registry.find("no_such_mutant", Mutant)


def test_a_name_is_registered_once() -> None:
    taken = registry.find("python_mod_no_mask", Mutant)
    with pytest.raises(ValueError, match="registered twice"):
        registry.register(ReferenceAdapter, Mutant(taken.name, frozenset({"ASSIGN-004"}), "again", ReferenceAdapter()))
    assert registry.find("python_mod_no_mask", Mutant) is taken


def test_the_definition_is_the_line_of_the_class_below_its_registration() -> None:
    """``inspect`` starts a decorated class at its decorator; the definition is its ``class`` line."""
    registry.load()
    entry = registry.registered()["new_partitions_at_latest"]
    where = entry.definition
    lines = where.path.read_text(encoding="utf-8").splitlines()
    assert lines[where.line - 1].startswith(f"class {where.name}(")
    registration = " ".join(lines[where.line - 4 : where.line - 1])
    assert registration.startswith("@source_mutant(") and '"new_partitions_at_latest"' in registration, registration
    adapter = registry.find("new_partitions_at_latest", Mutant).adapter
    assert isinstance(adapter, SourceMutant) and adapter.job_class is entry.defined and adapter.fresh_only
