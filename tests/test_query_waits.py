"""A micro-batch query the harness runs with ``availableNow`` and that does not finish within its bound judged
nothing: the harness says so (``CannotCheck``: ERROR, exit 3), never a violation by the connector."""

from __future__ import annotations

from pathlib import Path

from kconform.conformance.errors import CannotCheck
from kconform.conformance.spark.pipeline import unfinished_query


def test_an_unfinished_available_now_query_is_could_not_check_naming_how_far_it_got(tmp_path: Path) -> None:
    error = unfinished_query(tmp_path, 120, (3, ['{"a":{"0":9,"1":4}}']))
    assert isinstance(error, CannotCheck)
    message = str(error)
    assert message.startswith(f"the availableNow query on {tmp_path} did not finish within 120 s"), message
    assert 'its last batch was 3, its sources ending at [\'{"a":{"0":9,"1":4}}\']' in message
    assert "could not be judged" in message


def test_an_available_now_query_that_completed_no_batch_says_so(tmp_path: Path) -> None:
    assert "(it completed no batch)" in str(unfinished_query(tmp_path, 1.5, None))
