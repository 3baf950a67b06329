"""The conformance suite: pytest modules whose test names carry requirement id and level.

Run with ``kconform run --adapter module:attr`` or ``pytest --pyargs kconform.conformance.suite
--kconform-adapter module:attr``. Each test draws its inputs with Hypothesis, asks the adapter,
and hands the observation to a pure checker in ``kconform.conformance.checks.checkers``.
"""

from __future__ import annotations

from typing import Any

from hypothesis import settings
from hypothesis.stateful import RuleBasedStateMachine, run_state_machine_as_test

STEPS_PER_EXAMPLE = 30


def run_machine(machine: type[RuleBasedStateMachine], adapter: Any) -> None:
    """Run a suite state machine (whose class attribute ``adapter`` is unset) against ``adapter``."""
    bound = type(f"{machine.__name__}UnderTest", (machine,), {"adapter": adapter})
    run_state_machine_as_test(bound, settings=settings(stateful_step_count=STEPS_PER_EXAMPLE))
