"""The suite's state machines take named preconditions: Hypothesis before 6.1xx (6.100 is the oldest kconform
supports) describes every precondition on every draw, and describing a lambda re-parses its source file; the
sink machine then ran past the per-test timeout (over 120 s where it takes 2.5 s)."""

from __future__ import annotations

import contextlib
import importlib
import inspect
import pkgutil
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis.stateful import INVARIANT_MARKER, PRECONDITIONS_MARKER, RULE_MARKER, RuleBasedStateMachine

import kconform.conformance.suite as suite
from tests import test_kafka_model


def machines() -> list[type[RuleBasedStateMachine]]:
    """Every state machine of the suite's modules, and the Kafka model's."""
    modules = [test_kafka_model]
    for found in pkgutil.iter_modules(suite.__path__):
        with contextlib.suppress(pytest.skip.Exception):  # a pipeline module without the pipeline extra
            modules.append(importlib.import_module(f"{suite.__name__}.{found.name}"))
    return [
        value
        for module in modules
        for value in vars(module).values()
        if inspect.isclass(value) and issubclass(value, RuleBasedStateMachine) and value.__module__ == module.__name__
    ]


def preconditions(method: Any) -> tuple[Callable[[Any], bool], ...]:
    """The preconditions Hypothesis keeps on a machine's method: on its rule, its invariant, or bare."""
    marked = [getattr(method, marker, None) for marker in (RULE_MARKER, INVARIANT_MARKER)]
    return (
        *(c for mark in marked if mark is not None for c in mark.preconditions),
        *getattr(method, PRECONDITIONS_MARKER, ()),
    )


def test_no_state_machine_rule_has_a_lambda_precondition() -> None:
    found = machines()
    assert {m.__name__ for m in found} >= {"SinkMachine", "SourceMachine", "KafkaModelMachine"}
    assert sum(len(preconditions(method)) for m in found for method in vars(m).values()) >= 11, "none found"
    lambdas = [
        f"{machine.__name__}.{name}"
        for machine in found
        for name, method in vars(machine).items()
        for condition in preconditions(method)
        if condition.__name__ == "<lambda>"
    ]
    assert not lambdas, f"name these preconditions (a def), not lambdas: {lambdas}"
