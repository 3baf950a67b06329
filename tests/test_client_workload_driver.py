"""The client workload's ``subscribe`` step on stand-in clients (no broker): what each member subscribes to, with
which callbacks, and what the history records."""

from __future__ import annotations

from typing import Any

import pytest

from kconform.conformance.workloads.clients import driver
from kconform.conformance.workloads.clients.history import Note, Subscribed
from kconform.conformance.workloads.clients.schedule import ConsumerPlan, ProducerPlan, Schedule, Step, StepKind


class StandIn:
    """A consumer that only remembers what it was asked to subscribe to or assign."""

    def __init__(self) -> None:
        self.subscriptions: list[tuple[list[str], dict[str, Any]]] = []
        self.assigned: list[Any] = []

    def subscribe(self, topics: list[str], **callbacks: Any) -> None:
        self.subscriptions.append((list(topics), callbacks))

    def assign(self, partitions: list[Any]) -> None:
        self.assigned.append(partitions)

    def close(self) -> None:
        pass


class StandIns:
    def __init__(self) -> None:
        self.made: list[StandIn] = []

    def consumer(self, _config: dict[str, Any]) -> StandIn:
        self.made.append(StandIn())
        return self.made[-1]

    def producer(self, _config: dict[str, Any]) -> Any:
        raise AssertionError("no producer here")


class NoBroker:
    bootstrap_servers = "unused"
    nodes: tuple[Any, ...] = ()

    def client_config(self, _role: Any, **_overrides: Any) -> dict[str, Any]:
        return {}


@pytest.fixture
def run(monkeypatch: pytest.MonkeyPatch) -> driver.Run:
    monkeypatch.setattr(driver, "KafkaClient", lambda _broker: None)
    schedule = Schedule((2, 1), (ProducerPlan({}),), (ConsumerPlan({}, "topics"), ConsumerPlan({}, "assign")), ())
    made = driver.Run(schedule, NoBroker(), StandIns(), prefix="kcw-x")  # type: ignore[arg-type]
    for i, plan in enumerate(schedule.consumers):
        made.consumers.append(driver.ConsumerSlot(i, plan, f"kcw-x-g{i}"))
        made._open_consumer(made.consumers[-1])
    made.extra_topics.append("kcw-x-x0")
    return made


def subscribed(run: driver.Run) -> list[Subscribed]:
    return [e for e in run.recorder.events if isinstance(e, Subscribed)]


@pytest.mark.parametrize(
    ("mode", "topics"),
    [
        ("one", ["kcw-x-t1"]),
        ("topics", ["kcw-x-t0", "kcw-x-t1", "kcw-x-x0"]),
        ("pattern", ["^kcw\\-x-.*"]),
    ],
)
def test_a_subscribe_step_subscribes_the_member_again_with_its_callbacks(
    run: driver.Run, mode: str, topics: list[str]
) -> None:
    client = run.consumers[0].client
    assert isinstance(client, StandIn)
    run.step(Step(StepKind.SUBSCRIBE, 0, 1, mode=mode))
    (first, first_callbacks), (now, callbacks) = client.subscriptions
    assert first == ["kcw-x-t0", "kcw-x-t1"] and now == topics
    assert callbacks == first_callbacks and set(callbacks) == {"on_assign", "on_revoke", "on_lost"}
    initial, latest = subscribed(run)
    assert initial.topics == ("kcw-x-t0", "kcw-x-t1") and latest.client == "c0#0"
    assert latest.covers("kcw-x-x0") == (mode != "one") and latest.covers("kcw-x-t1")
    assert (latest.pattern is not None) == (mode == "pattern")


def test_a_reopened_member_subscribes_to_its_latest_subscription(run: driver.Run) -> None:
    run.step(Step(StepKind.SUBSCRIBE, 0, 1, mode="one"))
    run.step(Step(StepKind.CLOSE, 0))
    run.step(Step(StepKind.REOPEN, 0))
    reopened = run.consumers[0].client
    assert isinstance(reopened, StandIn) and reopened.subscriptions[0][0] == ["kcw-x-t1"]
    assert subscribed(run)[-1].client == "c0#1" and subscribed(run)[-1].topics == ("kcw-x-t1",)


def test_a_consumer_assigned_by_hand_skips_the_step_and_says_so(run: driver.Run) -> None:
    client = run.consumers[1].client
    assert isinstance(client, StandIn)
    run.step(Step(StepKind.SUBSCRIBE, 1, mode="topics"))
    assert client.subscriptions == [] and len(client.assigned) == 1
    assert not subscribed(run)[1:]
    assert any(isinstance(e, Note) and "subscribe skipped" in e.text for e in run.recorder.events)


def test_a_member_starts_subscribed_to_the_topics_its_plan_names(monkeypatch: pytest.MonkeyPatch) -> None:
    """A ``topics`` member whose plan names some of the schedule's topics subscribes to those first (and a reopened
    incarnation to them again); one whose plan names none subscribes to every topic."""
    monkeypatch.setattr(driver, "KafkaClient", lambda _broker: None)
    plans = (ConsumerPlan({}, "topics", (2, 0)), ConsumerPlan({}, "topics"), ConsumerPlan({}, "topics", (1,)))
    made = driver.Run(Schedule((1, 2, 3), (ProducerPlan({}),), plans, ()), NoBroker(), StandIns(), prefix="kcw-y")  # type: ignore[arg-type]
    for i, plan in enumerate(plans):
        made.consumers.append(driver.ConsumerSlot(i, plan, "kcw-y-g"))
        made._open_consumer(made.consumers[-1])
    made.step(Step(StepKind.CLOSE, 2))
    made.step(Step(StepKind.REOPEN, 2))
    assert [e.topics for e in subscribed(made)] == [
        ("kcw-y-t2", "kcw-y-t0"),
        ("kcw-y-t0", "kcw-y-t1", "kcw-y-t2"),
        ("kcw-y-t1",),
        ("kcw-y-t1",),
    ]
