"""Integration tests: every test here needs the live broker of ``tests/conftest.py``."""

from __future__ import annotations

import os

import pytest


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Every test under tests/integration needs a live broker (marker ``integration``)."""
    here = os.path.dirname(__file__)
    for item in items:
        if str(item.path).startswith(here):
            item.add_marker(pytest.mark.integration)
