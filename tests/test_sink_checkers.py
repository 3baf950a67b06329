"""The pure checkers of the sink suite's scenarios: each passes what a conforming sink leaves (no error, every
value it must show visible, nothing it must hide) and names each way of breaking its requirement."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from kconform.conformance.checks.checkers import Violation, values_field
from kconform.conformance.checks.sink_checkers import (
    check_distinct_ids,
    check_expired_ids_refused,
    check_foreign_transactions_kept,
    check_intervals_committed,
    check_naming_switched,
    check_old_prefix_closed,
    check_prefixes_refused,
    check_second_recovery,
    check_timeout_outlived,
    check_timeout_surfaced,
)
from kconform.reference_impl.ports import KafkaError

VALUES = st.sets(st.binary(min_size=1, max_size=4), max_size=6)


def kinds(violations: list[Violation]) -> list[tuple[str, str]]:
    return [(v.requirement, v.kind) for v in violations]


@given(VALUES, VALUES)
def test_required_COMMIT_005_every_value_visible_passes_a_lost_one_or_a_fenced_writer_collides(
    written: set[bytes], extra: set[bytes]
) -> None:
    assert check_distinct_ids(written, written | extra, None) == []
    lost = check_distinct_ids(written, extra, None)
    assert kinds(lost) == [("COMMIT-005", "id-collision")] * len(written - extra)
    assert [v.data["value"] for v in lost] == values_field(sorted(written - extra))
    fenced = check_distinct_ids(written, written, "ProducerFencedException('job-0-1')")
    assert kinds(fenced) == [("COMMIT-005", "id-collision")]
    assert fenced[0].data == {"error": "ProducerFencedException('job-0-1')"}


def test_required_COMMIT_007_only_the_logs_error_surfaces_a_timed_out_commit() -> None:
    assert check_timeout_surfaced(KafkaError("transaction timed out")) == []
    other = check_timeout_surfaced(AssertionError("adapter raised ValueError"))
    assert kinds(other) == [("COMMIT-007", "swallowed-error")] and other[0].data["error"] == "adapter raised ValueError"
    success = check_timeout_surfaced(None)
    assert kinds(success) == [("COMMIT-007", "swallowed-error")] and success[0].data["error"] is None


@given(VALUES, VALUES)
def test_required_COMMIT_014_a_failed_step_or_a_lost_interval_is_named(written: set[bytes], extra: set[bytes]) -> None:
    assert check_intervals_committed(written, written | extra, "recover", None) == []
    lost = check_intervals_committed(written, extra, "recover", None)
    assert kinds(lost) == [("COMMIT-014", "interval-lost")] * bool(written - extra)
    failed = check_intervals_committed(written, written, "barrier 2 (writers [0])", "fenced")
    assert kinds(failed) == [("COMMIT-014", "empty-transaction-committed")]
    assert failed[0].evidence == "barrier 2 (writers [0]) failed: fenced"


@given(st.integers(1, 3), st.integers(1, 3), st.data())
def test_required_COMMIT_003_and_010_a_second_recovery_shows_the_checkpoint_and_nothing_after_it(
    n: int, m: int, data: st.DataObject
) -> None:
    first = [f"first-{s}".encode() for s in range(n)]
    after = [f"after-{s}".encode() for s in range(m)]
    assert check_second_recovery(first, after, first, "the second recovery", None) == []
    visible = data.draw(st.sets(st.sampled_from(first + after)), label="visible")
    judged = kinds(check_second_recovery(first, after, visible, "the second recovery", None))
    leaked, missing = bool(visible & set(after)), bool(set(first) - visible)
    assert (
        judged
        == [("COMMIT-010", "recovery-commits-uncheckpointed")] * leaked
        + [("COMMIT-003", "lost-checkpointed")] * missing
    )
    failed = check_second_recovery(first, after, first, "the first recovery", "unknown producer id")
    assert kinds(failed) == [("COMMIT-010", "recovery-failed")] and failed[0].data["step"] == "the first recovery"


@given(VALUES, VALUES)
def test_required_COMMIT_016_the_other_sinks_values_all_visible_pass(written: set[bytes], extra: set[bytes]) -> None:
    assert check_foreign_transactions_kept("job-1", written, written | extra, None) == []
    lost = check_foreign_transactions_kept("job-1", written, extra, None)
    assert kinds(lost) == [("COMMIT-016", "foreign-transaction-aborted")] * bool(written - extra)
    failed = check_foreign_transactions_kept("job-1", written, written, "InvalidTxnState")
    assert kinds(failed) == [("COMMIT-016", "foreign-transaction-aborted")]
    assert failed[0].data == {"prefix": "job-1", "error": "InvalidTxnState"}


@given(VALUES, VALUES)
def test_required_COMMIT_017_a_value_held_back_by_an_open_transaction_is_named(
    expected: set[bytes], extra: set[bytes]
) -> None:
    assert check_old_prefix_closed(expected, expected | extra, {0: 4}) == []
    hidden = check_old_prefix_closed(expected, extra, {1: 2, 0: 4})
    assert kinds(hidden) == [("COMMIT-017", "old-prefix-left-open")] * bool(expected - extra)
    for v in hidden:
        assert v.data["stable"] == [{"partition": 0, "offset": 4}, {"partition": 1, "offset": 2}]


@given(st.booleans())
def test_required_COMMIT_019_025_recovery_of_expired_ids_fails_naming_one(committed: bool) -> None:
    ids = ["kconform-sink-0-1", "kconform-sink-1-1"]
    assert check_expired_ids_refused(ids, committed, "KafkaError: kconform-sink-1-1 is unknown") == []
    unnamed = check_expired_ids_refused(ids, committed, "KafkaError: unknown transactional id")
    assert kinds(unnamed) == [("COMMIT-025", "expired-id-unnamed")]
    swallowed = check_expired_ids_refused(ids, committed, None)
    assert kinds(swallowed) == [("COMMIT-019", "expired-id-swallowed")]
    assert swallowed[0].data["committed"] is committed
    assert ("records are lost" in swallowed[0].evidence) is not committed


def test_required_COMMIT_022_027_a_bad_prefix_refused_before_start_passes_each_other_outcome_is_named() -> None:
    refusal = "ValueError: sinks [0, 1] of the job share the transactional id prefix 'job'"
    assert check_prefixes_refused(["job", "job-1"], None, ["job-0-1", "job-1-0-1"]) == []
    assert check_prefixes_refused(["job", "job"], refusal, []) == []
    assert check_prefixes_refused([""], "ValueError: the transactional id prefix must not be empty", []) == []
    assert kinds(check_prefixes_refused(["job", "job-1"], refusal, [])) == [("COMMIT-022", "valid-prefixes-refused")]
    assert kinds(check_prefixes_refused([""], None, [])) == [("COMMIT-022", "missing-prefix-accepted")]
    assert kinds(check_prefixes_refused(["job", "job"], None, [])) == [("COMMIT-022", "duplicate-prefix-accepted")]
    assert kinds(check_prefixes_refused(["job", "job"], refusal, ["job-0-1"])) == [
        ("COMMIT-022", "refused-after-start")
    ]
    assert kinds(check_prefixes_refused(["job", "job"], "ValueError: no", [])) == [("COMMIT-027", "refusal-unnamed")]


def test_required_COMMIT_023_028_a_switch_with_everything_visible_once_passes_each_breach_is_named() -> None:
    expected = [b"a", b"b"]
    ends = {0: 4, 1: 2}

    def judged(committed: list[bytes], stable: dict[int, int], refused: str | None = None) -> list[tuple[str, str]]:
        return kinds(check_naming_switched("pooling", "incrementing", expected, committed, stable, ends, refused))

    assert judged([b"a", b"b"], dict(ends)) == []
    assert judged([b"a", b"b"], dict(ends), "IllegalStateException: ... back to INCREMENTING ...") == []
    assert judged([b"a", b"b"], dict(ends), "IllegalStateException: no") == [("COMMIT-028", "refusal-unnamed")]
    assert judged([b"a"], {0: 1, 1: 2}) == [("COMMIT-023", "old-naming-left-open")]
    assert judged([b"a"], dict(ends)) == [("COMMIT-023", "switch-lost-write")]
    assert judged([b"a", b"b", b"a"], dict(ends)) == [("COMMIT-023", "switch-duplicate")]


@given(st.integers(0, 20_000), st.integers(0, 20_000), VALUES)
def test_required_COMMIT_021_026_past_the_timeout_only_a_failure_naming_a_timed_out_id_and_the_timeout_passes(
    old: int, young: int, lost: set[bytes]
) -> None:
    ages, timeout_ms, step = {"kconform-sink-0-1": old, "kconform-sink-1-1": young}, 10_000, "the commit"
    expired = sorted(tid for tid, age in ages.items() if age > timeout_ms)
    text = "TransactionTimeoutError: {} open longer than transaction.timeout.ms = 10000 ms"
    if not expired:
        assert check_timeout_outlived(ages, timeout_ms, step, None, []) == []
        early = check_timeout_outlived(ages, timeout_ms, step, text.format("kconform-sink-0-1"), [])
        assert kinds(early) == [("COMMIT-021", "failed-within-timeout")]
        within = check_timeout_outlived(ages, timeout_ms, step, None, lost)
        assert kinds(within) == [("COMMIT-021", "lost-within-timeout")] * bool(lost)
        return
    assert check_timeout_outlived(ages, timeout_ms, step, text.format(expired[-1]), lost) == []
    swallowed = check_timeout_outlived(ages, timeout_ms, step, None, lost)
    assert kinds(swallowed) == [("COMMIT-021", "timeout-swallowed")]
    assert swallowed[0].data["values"] == values_field(sorted(lost))
    assert swallowed[0].data["transactional_ids"] == expired
    unexpired = sorted(set(ages) - set(expired))
    wrong_id = [text.format(unexpired[0])] if unexpired else []
    for error in ["KafkaError: the producer was fenced", f"KafkaError: {expired[0]} fenced", "E: 10000 ms", *wrong_id]:
        unnamed = check_timeout_outlived(ages, timeout_ms, step, error, lost)
        assert kinds(unnamed) == [("COMMIT-026", "timeout-unnamed")], error
        assert unnamed[0].data["error"] == error
