"""Checkers of the Kafka consumer a source reads with: pure functions over what the client reported.

The suite's client scenarios (``kconform.conformance.suite.test_client``) drive the consumer and record
its deliveries (``ReadRecord``, ``task`` standing for the consumer's incarnation) and positions; these
judge them. What was read once is ``check_read_once``'s; the position the consumer would store or
commit, and what a commit of a stored offset left, are judged here.
"""

from __future__ import annotations

from ...reference_impl.types import TopicPartition
from .checkers import Violation, tp_fields


def check_position_at_end(tp: TopicPartition, position: int, end: int, requirement: str) -> list[Violation]:
    """RESTORE-008: a consumer that reached the end of ``tp`` (an end-of-partition event, not a record)
    reports the end offset as its position; one past it skips the next record written once committed."""
    if position == end:
        return []
    return [
        Violation(
            requirement,
            "position-past-end" if position > end else "position-before-end",
            f"{tp}: position {position} after the end-of-partition event at {end}",
            data=tp_fields(tp) | {"got": position, "want": end, "end": end},
        )
    ]


def check_stored_offset_committed(
    tp: TopicPartition, stored: int, committed: int | None, error: str | None, requirement: str
) -> list[Violation]:
    """RESTORE-012: a commit after the source stored ``stored`` (an offset alone, no leader epoch)
    succeeds and leaves the group's offset there, whatever leader epoch the offset it replaces carried."""
    if committed == stored and error is None:
        return []
    outcome = f"the commit failed ({error})" if error is not None else "the commit succeeded"
    return [
        Violation(
            requirement,
            "stored-offset-not-committed",
            f"{tp}: offset {stored} stored, {outcome}, the group's offset is {committed}",
            data=tp_fields(tp) | {"got": committed, "want": stored, "error": error},
        )
    ]
