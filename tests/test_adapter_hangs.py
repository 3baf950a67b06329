"""An adapter call that hangs is named by the method stuck, and is not made again in the run."""

from __future__ import annotations

import sys
from collections.abc import Iterator, Sequence

import pytest

from kconform.conformance.adapter.guard import AdapterHung, Hang, forget_hangs, guard, record_hang


class Stuck:
    """Its ``plan`` calls its own ``assign``, where the runner's alarm goes off (``record_hang`` there)."""

    name = "stuck"
    capabilities = frozenset({"assignment"})

    def __init__(self) -> None:
        self.hangs: list[Hang | None] = []
        self.calls = 0

    def plan(self, topics: Sequence[str], parallelism: int) -> dict[str, int]:
        return {topic: self.assign(topic, 0, parallelism) for topic in topics}

    def assign(self, topic: str, partition: int, parallelism: int) -> int:
        self.calls += 1
        self.hangs.append(record_hang(sys._getframe(), "required_ASSIGN_001_x"))
        return 0


@pytest.fixture(autouse=True)
def fresh_run() -> Iterator[None]:
    forget_hangs()
    yield
    forget_hangs()


def test_the_hang_names_the_adapters_own_method_it_was_stuck_in_and_the_suites_call() -> None:
    adapter = Stuck()
    guard(adapter).plan(["orders"], 3)
    assert adapter.hangs == [Hang("adapter 'stuck'.assign", "assign('orders', 0, 3), called by plan")]


def test_a_method_that_hung_is_not_called_again_until_the_next_run() -> None:
    adapter = Stuck()
    guarded = guard(adapter)
    guarded.assign("orders", 0, 3)
    for again in (lambda: guarded.assign("orders", 1, 3), lambda: guard(adapter).assign("other", 0, 1)):
        with pytest.raises(AdapterHung, match=r"^adapter 'stuck'.assign not called again: assign hung in required_"):
            again()
    assert adapter.calls == 1
    forget_hangs()
    guarded.assign("orders", 1, 3)
    assert adapter.calls == 2


def test_with_no_adapter_call_under_way_there_is_no_hang() -> None:
    assert record_hang(sys._getframe(), "required_ASSIGN_001_x") is None
