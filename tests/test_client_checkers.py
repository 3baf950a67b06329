"""The client scenarios' own checkers (RESTORE-008, RESTORE-012) on hand-made outcomes."""

from __future__ import annotations

from kconform.conformance.checks.client_checkers import check_position_at_end, check_stored_offset_committed
from kconform.reference_impl.types import TopicPartition

TP = TopicPartition("t", 0)


def test_required_RESTORE_008_a_position_one_past_the_end_or_short_of_it_is_named() -> None:
    assert check_position_at_end(TP, 5, 5, "RESTORE-008") == []
    [past] = check_position_at_end(TP, 6, 5, "RESTORE-008")
    [short] = check_position_at_end(TP, 4, 5, "RESTORE-008")
    assert (past.kind, past.data["got"], short.kind) == ("position-past-end", 6, "position-before-end")


def test_required_RESTORE_012_a_stored_offset_the_commit_left_out_or_failed_on_is_named() -> None:
    assert check_stored_offset_committed(TP, 5, 5, None, "RESTORE-012") == []
    [skipped] = check_stored_offset_committed(TP, 5, 3, None, "RESTORE-012")
    [failed] = check_stored_offset_committed(TP, 5, 3, "_NO_OFFSET", "RESTORE-012")
    [failed_after] = check_stored_offset_committed(TP, 5, 5, "_NO_OFFSET", "RESTORE-012")
    assert skipped.kind == failed.kind == failed_after.kind == "stored-offset-not-committed"
    assert (skipped.data["got"], skipped.data["want"], failed.data["error"]) == (3, 5, "_NO_OFFSET")
    assert check_stored_offset_committed(TP, 5, None, None, "RESTORE-012")[0].data["got"] is None
