"""``make test`` hands out the tests with the longest declared bounds first (tests/conftest.py): a long test handed
out last would run alone at the end while the other worker sits idle."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, cast

import pytest

from .conftest import declared_bound, pytest_collection_modifyitems


@dataclass
class Item:
    name: str
    mark: pytest.Mark | None

    def get_closest_marker(self, name: str) -> pytest.Mark | None:
        return self.mark if name == "timeout" else None


def timeout(*args: Any, **kwargs: Any) -> pytest.Mark:
    return pytest.mark.timeout(*args, **kwargs).mark


def test_the_longest_declared_bounds_go_first_and_the_rest_keep_their_order() -> None:
    items = [
        Item("a", None),
        Item("b", timeout(600)),
        Item("c", None),
        Item("d", timeout(timeout=1800)),
        Item("e", timeout(600)),
    ]
    collected = cast(list[pytest.Item], items)
    pytest_collection_modifyitems(collected)
    assert [i.name for i in items] == ["d", "b", "e", "a", "c"]
    assert [declared_bound(i) for i in collected] == [1800.0, 600.0, 600.0, 0.0, 0.0]
