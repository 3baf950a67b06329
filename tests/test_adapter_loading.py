"""Loading an adapter: only what its capabilities need, and errors that name what is missing and why."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from kconform.conformance.adapter import interface
from kconform.conformance.adapter.interface import AdapterBase, missing_members
from kconform.conformance.adapter.loader import load_adapter
from kconform.reference_impl.assignment import assign

ASSIGNMENT_ONLY = """
from kconform.conformance.adapter.interface import AdapterBase
from kconform.reference_impl.assignment import assign


class MyAssigner(AdapterBase):
    name = "my-assigner"
    capabilities = frozenset({"assignment"})

    def assign(self, topic, partition, parallelism):
        return assign(topic, partition, parallelism)


ADAPTER = MyAssigner()


class Incomplete(AdapterBase):
    name = "incomplete"
    capabilities = frozenset({"assignment", "exactly-once-sink"})

    def assign(self, topic, partition, parallelism):
        return 0


INCOMPLETE = Incomplete()
"""


@pytest.fixture
def user_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A user's adapter module in its own folder, on the path as a user's package would be."""
    (tmp_path / "kconform_user_adapter.py").write_text(ASSIGNMENT_ONLY)
    monkeypatch.syspath_prepend(str(tmp_path))
    yield "kconform_user_adapter"
    sys.modules.pop("kconform_user_adapter", None)


def test_an_adapter_of_one_capability_defines_only_that_capabilitys_method(user_module: str) -> None:
    adapter = load_adapter(f"{user_module}:ADAPTER")
    assert adapter.name == "my-assigner"
    assert getattr(adapter, "assign")("t", 1, 3) == assign("t", 1, 3)  # noqa: B009  # the protocol union lacks it


def test_a_class_is_instantiated(user_module: str) -> None:
    assert load_adapter(f"{user_module}:MyAssigner").name == "my-assigner"


def test_missing_members_are_named_with_their_signatures(user_module: str) -> None:
    with pytest.raises(ValueError) as error:
        load_adapter(f"{user_module}:INCOMPLETE")
    message = str(error.value)
    assert "for the capabilities it declares (assignment, exactly-once-sink)" in message
    assert "sink(config: SinkConfig); recover_sink(config: RecoveryConfig)" in message
    assert "missing: sink, recover_sink, initial_sink_checkpoint;" in message
    assert "naming" not in missing_members(AdapterBase())  # the base class has the variants


def test_an_engine_capability_added_within_a_contract_asks_only_the_adapters_that_declare_it() -> None:
    """``kafka-clients-workload`` came within contract 4: an adapter written before it is asked for nothing new, and
    one that declares it without ``release`` is told the member it lacks."""

    class Earlier(AdapterBase):
        name = "earlier"
        capabilities = frozenset({"group-assignment"})
        assignment_strategies = frozenset({"range"})

        def assign_group(self, strategy: str, group: object) -> object:
            return None

    class Declares(Earlier):
        capabilities = frozenset({"group-assignment", "kafka-clients-workload"})

    assert missing_members(Earlier()) == []
    assert missing_members(Declares()) == ["release"]


def test_a_module_not_on_the_path_gets_told_how_to_put_it_there() -> None:
    with pytest.raises(ValueError) as error:
        load_adapter("kconform_no_such_user_module:ADAPTER")
    message = str(error.value)
    assert "'kconform_no_such_user_module' is not on the Python path" in message
    assert "add that folder to PYTHONPATH" in message


def test_an_adapter_importing_a_removed_name_is_told_what_replaced_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``SourceCheckpointLike`` left the interface module (it typed nothing the suite passes): an adapter written
    when it was there fails to load with an error naming the removal and what to write instead."""
    (tmp_path / "kconform_old_adapter.py").write_text(
        "from kconform.conformance.adapter.interface import AdapterBase, SourceCheckpointLike\n"
        "ADAPTER = AdapterBase()\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        with pytest.raises(ValueError) as error:
            load_adapter("kconform_old_adapter:ADAPTER")
    finally:
        sys.modules.pop("kconform_old_adapter", None)
    message = str(error.value)
    assert "cannot import 'kconform_old_adapter'" in message
    assert "SourceCheckpointLike was removed from kconform" in message
    current = max(interface.CONTRACT_CHANGES)
    assert "annotate it as Any" in message
    assert f"changed no contract (contract_version = 3 when it went; the current contract is {current})" in message
    monkeypatch.setitem(interface.CONTRACT_CHANGES, current + 1, "a later change")  # the numbers follow the data
    assert f"the current contract is {current + 1})" in interface.removal_message("SourceCheckpointLike")
    with pytest.raises(AttributeError, match="no attribute 'NoSuchName'"):
        getattr(interface, "NoSuchName")  # noqa: B009  # any other missing name is the usual AttributeError
