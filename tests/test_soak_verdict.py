"""``verdict``: a soak schedule's history judged without a broker (COMMIT-011, COMMIT-013, RESTORE-003)."""

from __future__ import annotations

from kconform.conformance.checks.checkers import Violation
from kconform.conformance.soak.guarantee import Guarantee
from kconform.conformance.soak.runner import Produced, Timeline, verdict
from kconform.conformance.soak.schedule import Schedule, Segment
from kconform.reference_impl.ports import Record
from kconform.reference_impl.types import TopicPartition

SRC = TopicPartition("src", 0)
SCHEDULE = Schedule(1, 0, "kafka", (Segment(1),))


def source(*values: str) -> dict[TopicPartition, list[Record]]:
    return {SRC: [Record(SRC.topic, 0, offset, None, v.encode()) for offset, v in enumerate(values)]}


def sink(*values: str) -> dict[int, list[Record]]:
    return {0: [Record("out", 0, offset, None, v.encode()) for offset, v in enumerate(values)]}


def produced(*values: str) -> list[Produced]:
    return [Produced(v.encode(), SRC, offset) for offset, v in enumerate(values)]


def kinds(violations: list[Violation]) -> list[tuple[str, str]]:
    return sorted({(v.requirement, v.kind) for v in violations})


def test_everything_once_in_order_passes() -> None:
    outcome = verdict(source("a", "b", "c"), sink("a", "b", "c"), produced("a", "b", "c"), SCHEDULE, Timeline(), None)
    assert outcome.passed and (outcome.produced, outcome.lost, outcome.duplicated) == (3, 0, 0)


def test_a_lost_a_duplicated_and_a_reordered_record_are_each_named() -> None:
    lost = verdict(source("a", "b", "c"), sink("a", "c"), produced("a", "b", "c"), SCHEDULE, Timeline(), None)
    assert ("COMMIT-011", "lost-write") in kinds(lost.violations) and lost.lost == 1
    doubled = verdict(source("a", "b"), sink("a", "b", "b"), produced("a", "b"), SCHEDULE, Timeline(), None)
    assert ("COMMIT-011", "duplicate") in kinds(doubled.violations) and doubled.duplicated == 1
    swapped = verdict(source("a", "b"), sink("b", "a"), produced("a", "b"), SCHEDULE, Timeline(), None)
    assert [v.requirement for v in swapped.violations] == ["COMMIT-013"]


def test_an_acknowledged_record_the_broker_lost_is_the_brokers_violation() -> None:
    outcome = verdict(source("a"), sink("a"), produced("a", "b"), SCHEDULE, Timeline(), None)
    assert kinds(outcome.violations) == [("BROKER", "acknowledged-record-missing")]


def test_an_unfinished_final_run_is_an_error_not_a_loss_but_a_duplicate_still_fails() -> None:
    unfinished = verdict(source("a", "b", "c"), sink("a"), produced("a", "b", "c"), SCHEDULE, Timeline(), "timed out")
    assert not unfinished.violations and unfinished.lost == 0 and not unfinished.passed
    doubled = verdict(source("a", "b", "c"), sink("a", "a"), produced("a", "b", "c"), SCHEDULE, Timeline(), "timed out")
    assert ("COMMIT-011", "duplicate") in kinds(doubled.violations)
    assert all(v.kind not in ("lost-write", "offset-gap") for v in doubled.violations)


def test_at_least_once_counts_and_reports_duplicates_without_failing_on_them() -> None:
    """A replayed batch (``b``, ``c`` again) is what an at-least-once sink may write: counted, not failed,
    neither as COMMIT-011's duplicate nor as RESTORE-003's source offset covered twice."""
    outcome = verdict(
        source("a", "b", "c"), sink("a", "b", "c", "b", "c"), produced("a", "b", "c"), SCHEDULE, Timeline(), None,
        guarantee=Guarantee.AT_LEAST_ONCE,
    )  # fmt: skip
    assert outcome.passed, outcome.violations
    assert (outcome.produced, outcome.lost, outcome.duplicated) == (3, 0, 2)
    assert outcome.guarantee is Guarantee.AT_LEAST_ONCE
    same = verdict(source("a", "b", "c"), sink("a", "b", "c", "b", "c"), produced("a", "b", "c"), SCHEDULE, Timeline(),
                   None)  # fmt: skip
    assert {("COMMIT-011", "duplicate"), ("RESTORE-003", "offset-duplicate")} <= set(kinds(same.violations))
    assert same.duplicated == 2 and same.guarantee is Guarantee.EXACTLY_ONCE


def test_at_least_once_still_fails_a_loss_a_reordering_and_a_skipped_offset() -> None:
    lost = verdict(source("a", "b", "c"), sink("a", "a", "c"), produced("a", "b", "c"), SCHEDULE, Timeline(), None,
                   guarantee=Guarantee.AT_LEAST_ONCE)  # fmt: skip
    assert kinds(lost.violations) == [("COMMIT-011", "lost-write"), ("RESTORE-003", "offset-gap")]
    assert not lost.passed and (lost.lost, lost.duplicated) == (1, 1)
    swapped = verdict(source("a", "b"), sink("b", "a", "b"), produced("a", "b"), SCHEDULE, Timeline(), None,
                      guarantee=Guarantee.AT_LEAST_ONCE)  # fmt: skip
    assert kinds(swapped.violations) == [("COMMIT-013", "reordered")] and swapped.duplicated == 1


def test_at_least_once_with_an_unfinished_final_run_is_an_error_even_with_duplicates() -> None:
    unfinished = verdict(source("a", "b", "c"), sink("a", "a"), produced("a", "b", "c"), SCHEDULE, Timeline(),
                         "timed out", guarantee=Guarantee.AT_LEAST_ONCE)  # fmt: skip
    assert not unfinished.violations and not unfinished.passed
    assert (unfinished.lost, unfinished.duplicated) == (0, 1)
