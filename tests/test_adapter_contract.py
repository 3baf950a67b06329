"""The adapter contract states its version: contract 2 passes one config object per member; an adapter written
for contract 1 still runs, told what changed; one written for a newer contract is an ERROR naming the upgrade."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import kconform.conformance.adapter as package
from kconform.conformance.adapter import interface
from kconform.conformance.adapter.interface import CONTRACT_CHANGES, SinkSpec, SourceSpec
from kconform.conformance.adapter.loader import (
    ContractOne,
    PlainSettings,
    contract_note,
    for_this_contract,
    load_adapter,
)
from kconform.reference_impl.adapter import ADAPTER
from kconform.reference_impl.configs import CONTRACT_VERSION, SinkConfig
from kconform.reference_impl.credentials import Secret
from kconform.reference_impl.kafka_model import KafkaModel

CONTRACT_ONE = "kconform.fixtures.adapters.contract_one:ADAPTER"


def test_the_reference_speaks_this_contract_and_every_version_says_what_changed() -> None:
    assert ADAPTER.contract_version == CONTRACT_VERSION == max(CONTRACT_CHANGES)
    assert for_this_contract(ADAPTER, "ref") is ADAPTER


def test_an_adapter_of_contract_one_is_translated_and_told_how_to_update() -> None:
    adapter = load_adapter(CONTRACT_ONE)
    assert isinstance(adapter, ContractOne)
    sink = adapter.sink(SinkConfig(log=KafkaModel(), prefix="p", parallelism=2))
    assert sink.parallelism == 2
    note = contract_note(adapter)
    assert note is not None and "contract 1" in note and "SinkConfig" in note and "contract_version = 2" in note
    assert contract_note(ADAPTER) is None


def test_contract_one_s_plan_is_used_as_before_if_it_has_one() -> None:
    class WithPlan:
        name = "with-plan"
        capabilities = frozenset({"assignment"})

        def plan(self, partitions: object, parallelism: int) -> dict[object, int]:
            return {}

    assert "assignment-plan" in ContractOne(WithPlan()).capabilities
    assert "assignment-plan" not in ContractOne(load_adapter(CONTRACT_ONE).adapter).capabilities


def test_an_adapter_without_a_changed_member_is_called_as_it_is() -> None:
    """Every contract calls ``assign`` alike: nothing to translate, nothing to say."""

    class AssignOnly:
        name = "assign-only"
        capabilities = frozenset({"assignment"})

        def assign(self, topic: str, partition: int, parallelism: int) -> int:
            return 0

    adapter = AssignOnly()
    assert for_this_contract(adapter, "m:A") is adapter
    assert contract_note(adapter) is None


@pytest.mark.parametrize("written_for", [1, 2])
def test_a_pipeline_adapter_of_an_older_contract_gets_plain_settings_and_is_told_of_secrets(written_for: int) -> None:
    """Contract 3 hands credentials as ``Secret``s; an adapter written before it still gets their text, as it did,
    and the run names the change."""
    seen: list[object] = []

    class PipelineOnly:
        name = "pipeline-only"
        capabilities = frozenset({"pipeline"})
        contract_version = written_for

        def read_stream(self, spark: object, source: SourceSpec) -> None:
            seen.append(dict(source.client_settings)["sasl.password"])

        def write_stream(self, frame: object, sink: SinkSpec) -> None:
            seen.append(dict(sink.client_settings)["sasl.password"])

    password = "contract-3-password-9e4f"  # every Secret made is redacted for the process: a name no test uses
    settings = (("sasl.password", Secret(password)),)
    adapter = for_this_contract(PipelineOnly(), "m:P")
    assert isinstance(adapter, PlainSettings)
    adapter.read_stream(
        None, SourceSpec(bootstrap_servers="b", parallelism=1, subscribe=("t",), client_settings=settings)
    )
    adapter.write_stream(None, SinkSpec(bootstrap_servers="b", topic="t", exactly_once=True, client_settings=settings))
    assert seen == [password, password]
    note = contract_note(adapter)
    assert note is not None and f"adapter contract {written_for}" in note and "contract 3: " in note, note
    assert "Secret" in note and "revealed" in note and "contract_version = 3" in note, note
    assert ("contract 2: " in note) == (written_for == 1), note
    current = PipelineOnly()
    current.contract_version = CONTRACT_VERSION  # type: ignore[misc]
    assert for_this_contract(current, "m:P") is current


def test_a_pipeline_adapter_of_contract_three_runs_as_it_is_and_is_told_of_the_stated_isolation() -> None:
    """Contract 4 states isolation.level in every SourceSpec: a contract-3 source is called as before (nothing
    changed shape), and the run names the change, so an adapter that overrides the isolation learns it must not."""

    class ContractThree:
        name = "contract-three"
        capabilities = frozenset({"pipeline"})
        contract_version = 3

        def read_stream(self, spark: object, source: SourceSpec) -> None:
            return None

        def write_stream(self, frame: object, sink: SinkSpec) -> None:
            return None

    adapter = ContractThree()
    assert for_this_contract(adapter, "m:P") is adapter
    note = contract_note(adapter)
    assert note is not None and "adapter contract 3" in note and "contract 4: " in note, note
    assert "isolation.level" in note and "overriding none" in note and "contract 3: " not in note, note


@pytest.mark.parametrize("version", [CONTRACT_VERSION + 1, 0, "2", True])
def test_a_contract_this_kconform_does_not_speak_is_refused(version: object) -> None:
    class Future:
        name = "future"
        capabilities = frozenset({"assignment"})
        contract_version = version

    newer = version == CONTRACT_VERSION + 1
    with pytest.raises(ValueError, match="upgrade kconform" if newer else "must be a positive int"):
        for_this_contract(Future(), "m:FUTURE")


def test_a_run_on_a_contract_one_adapter_passes_and_says_how_to_update(tmp_path: Path) -> None:
    """The suite's source, restore, sink and discovery tests reach contract 1's members through the translation."""
    command = [sys.executable, "-m", "kconform.conformance.cli", "run", "--adapter", CONTRACT_ONE,
               "--level", "protocol", "--profile", "quick", "--seed", "1", "--only", "RESTORE-003"]  # fmt: skip
    run = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=600, check=False)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "written for adapter contract 1" in run.stdout, run.stdout
    assert "PASS" in run.stdout


def test_an_adapters_api_is_importable_from_the_package_as_the_guide_says() -> None:
    """The names the adapter guide lists stay at ``kconform.conformance.adapter``, whatever module defines them."""
    guide = (Path(__file__).resolve().parents[1] / "docs" / "adapter-guide.md").read_text(encoding="utf-8")
    for name in package.__all__:
        assert getattr(package, name) is getattr(interface, name), name
        assert f"`{name}`" in guide, f"the guide does not name {name}"
    assert "from kconform.conformance.adapter import AdapterBase" in guide
