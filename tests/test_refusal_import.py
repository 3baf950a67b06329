"""The write-refusal nemesis imports with every confluent-kafka the client workload runs: the suite's modules are all
imported by every ``kconform run``, and releases before 2.2.0 have no ``AlterConfigOpType``."""

from __future__ import annotations

import importlib
from concurrent.futures import Future
from types import SimpleNamespace

import confluent_kafka.admin
import pytest
from confluent_kafka.admin import ConfigResource, ConfigSource

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


class _Broker:
    """A topic's ``max.message.bytes`` as a broker keeps it, behind confluent-kafka's admin calls: the override set
    or deleted by ``incremental_alter_configs``, described by ``describe_configs``; futures answered at once."""

    def __init__(self, own: str | None) -> None:
        self.own = own
        self.changes: list[tuple[str, str]] = []

    def __call__(self, _config: object) -> _Broker:  # the module's AdminClient(config)
        return self

    @staticmethod
    def _done(value: object) -> Future[object]:
        future: Future[object] = Future()
        future.set_result(value)
        return future

    def describe_configs(self, resources: list[ConfigResource]) -> dict[ConfigResource, Future[object]]:
        source = ConfigSource.DYNAMIC_TOPIC_CONFIG if self.own is not None else ConfigSource.DEFAULT_CONFIG
        entry = SimpleNamespace(value=self.own or "1048588", source=source.value)
        return {r: self._done({refusal.LIMIT: entry}) for r in resources}

    def incremental_alter_configs(self, resources: list[ConfigResource]) -> dict[ConfigResource, Future[object]]:
        for resource in resources:
            for entry in resource.incremental_configs:
                operation = entry.incremental_operation.name
                self.changes.append((operation, entry.value))
                self.own = None if operation == "DELETE" else entry.value
        return {r: self._done(None) for r in resources}


@pytest.mark.parametrize(("own", "restored"), [(None, ("DELETE", "")), ("2000000", ("SET", "2000000"))])
def test_the_nemesis_refuses_writes_inside_its_block_and_restores_the_topics_own_limit_after_a_raise(
    monkeypatch: pytest.MonkeyPatch, own: str | None, restored: tuple[str, str]
) -> None:
    """The nemesis itself, run against an admin that keeps the topic's config: its own limit (none, or an
    override) is what the topic has again after the block, even one that raised; each change is waited for as
    the broker describes it. (Its healed check once named a class imported for types alone: a NameError that
    only a live run met.)"""
    broker = _Broker(own)
    monkeypatch.setattr(refusal, "AdminClient", broker)
    endpoint = SimpleNamespace(client_config=lambda _role: {})
    with pytest.raises(KeyError), refusal.refused_writes(endpoint, "t", timeout_s=1.0):  # type: ignore[arg-type]
        assert broker.own == refusal.REFUSING
        raise KeyError("the block's own failure")
    assert broker.changes == [("SET", refusal.REFUSING), restored]
    assert broker.own == own
