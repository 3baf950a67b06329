"""Every violation carries its evidence as data (``Violation.data``, report.json's ``fields``).

A ``Violation`` cannot be built without a non-empty ``data``; every call site under conformance/
passes it by keyword; and the checkers, fed observations that break every rule they judge (and
generated sink histories), give fields that are JSON-ready and of the types docs/report-json.md's
vocabulary (docs/report.schema.json) names.
"""

from __future__ import annotations

import ast
import json
from collections import Counter
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from hypothesis import given
from hypothesis import strategies as st

from kconform.conformance.checks import (
    checkers,
    input_checkers,
    liveness_checkers,
    pipeline_checkers,
    sink_checkers,
    strategy_checkers,
)
from kconform.conformance.checks.checkers import Violation
from kconform.conformance.checks.history import History, Observation, check_sink_history
from kconform.conformance.checks.pipeline_checkers import ReadRecord
from kconform.reference_impl.discovery import Subscription, ZeroPartitionsPolicy
from kconform.reference_impl.kafka_strategies import Group, Member
from kconform.reference_impl.restore import RestoreVariant
from kconform.reference_impl.types import EARLIEST, LATEST, TopicPartition

ROOT = Path(__file__).resolve().parents[1]
SCHEMA = json.loads((ROOT / "docs" / "report.schema.json").read_text())
VIOLATION = jsonschema.Draft202012Validator({"$defs": SCHEMA["$defs"], "$ref": "#/$defs/violation"})


def tp(topic: str, partition: int) -> TopicPartition:
    return TopicPartition(topic, partition)


def assert_documented(violations: list[Violation]) -> None:
    """Each violation's JSON is plain JSON (no ``default=``) and valid against the schema's ``violation``."""
    for v in violations:
        as_json = json.loads(json.dumps(v.to_json()))
        errors = [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in VIOLATION.iter_errors(as_json)]
        assert not errors, f"{v}: {errors}"


def test_a_violation_without_data_cannot_be_built() -> None:
    with pytest.raises(TypeError, match="data"):
        Violation("ASSIGN-004", "formula-mismatch", "t-0 at parallelism 2: got 1, Flink 0")  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="non-empty mapping"):
        Violation("ASSIGN-004", "formula-mismatch", "t-0", data={})
    with pytest.raises(TypeError, match="non-empty mapping"):
        Violation("ASSIGN-004", "formula-mismatch", "t-0", data=["topic"])  # type: ignore[arg-type]


def _calls_without_data(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(), str(path))
    return [
        f"{path.relative_to(ROOT)}:{node.lineno}"
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "Violation"
        and not any(k.arg == "data" for k in node.keywords)
    ]


def test_every_violation_built_under_conformance_passes_data_by_keyword() -> None:
    missing = [site for path in sorted((ROOT / "conformance").rglob("*.py")) for site in _calls_without_data(path)]
    assert not missing, f"Violation( without data=: {missing}"


def test_assignment_discovery_and_restore_checkers_give_documented_fields() -> None:
    a0, a1, a2, b0 = tp("a", 0), tp("a", 1), tp("a", 2), tp("b", 0)
    out = checkers.check_single_owner({a0: [0, 1], a1: [], a2: [5]}, 2)
    out += checkers.check_plan({a0: None, a1: 7, a2: 0, b0: 0, tp("b", 1): 0, tp("b", 2): 0}, 2)
    out += checkers.check_formula({a0: 1, a1: 1, tp("c", 3): 0}, 2)
    out += checkers.check_determinism({a0: 0}, {a0: 1})
    rounds = [
        ({"a": frozenset({0, 1}), "x": frozenset({0})}, {0: [a0, tp("x", 0), tp("a", 5)], 1: [a0]}),
        ({"a": frozenset({0, 1, 3})}, {0: [a0]}),
    ]
    out += checkers.check_discovery(rounds, Subscription.fixed(["a"]), 2)
    out += checkers.check_new_partition_start({a0: 5}, [a0, a1], "DISC-005")
    out += checkers.check_startup_offsets({a0: LATEST, a1: 3}, {a0: 4, a1: 5})
    state = {a0: 5, a1: 7, a2: EARLIEST, b0: 2, tp("gone", 0): 1}
    restored = [{a0: 6, a1: EARLIEST, b0: 2}, {a0: 5}]
    out += checkers.check_restore(
        state, restored, Subscription.fixed(["a"]), False, {"a": frozenset({0, 1, 2})}, RestoreVariant.UNION_FILTER, 3
    )
    out += checkers.check_restore(
        {b0: 2}, [{}], Subscription.fixed(["a"]), True, {"b": frozenset({0})}, RestoreVariant.UNION_FILTER, 1
    )
    out += checkers.check_split_redistribution([{a0: 1}, {a1: 2}], [{a1: 2}, {a0: 1}])
    out += checkers.check_split_redistribution([{a0: 1, a1: 1, a2: 1}], [{a0: 1, a1: 1, a2: 1}, {}])
    out += checkers.check_offset_continuity(a0, 5, LATEST) + checkers.check_offset_continuity(a0, 5, 3)
    out += checkers.check_offset_commits({a0: 3}, {a0: 5}, "after checkpoint 2")
    out += checkers.check_single_holder([{a0: 1}, {a0: 1, a1: 2}])
    out += checkers.check_emitted_prefix({a0: [0, 1, 1], a1: [3]}, {a0: 2, a1: 5, a2: EARLIEST}, {a1: 3})
    out += checkers.check_zero_partitions(ZeroPartitionsPolicy.FAIL, "gone", [a0], None)
    out += checkers.check_zero_partitions(ZeroPartitionsPolicy.FAIL, "gone", [], ValueError("none"))
    out += checkers.check_zero_partitions(ZeroPartitionsPolicy.IGNORE, "gone", [], ValueError("gone"))
    out += checkers.check_resolved_before_first_read(a0, LATEST)
    out += checkers.check_restored_latest({a0: LATEST}, {a0: 2}, {a0: 5})
    out += checkers.check_read_since_discovery({a0: [2, 2, 3], a1: [4]}, {a0: 2, a1: 3}, {a0: 5, a1: 5})
    out += checkers.check_poll_moves_only_its_partition(
        a0, [(a1, 3)], {a0: 0, a1: EARLIEST, b0: 4}, {a0: 1, a1: 0, b0: 5}
    )
    out += checkers.check_topic_deleted({a0: 3, b0: 4}, {a0: 3}, "b", 1)
    out += checkers.check_group_start([a0, a1], {a0: 3}, None, None, "no offset for some partitions")
    out += checkers.check_group_start([a0, a1, b0], {a0: 3, b0: 1}, None, {a0: 2, a1: LATEST, b0: 1}, None)
    out += checkers.check_group_start([a1], {}, EARLIEST, {a1: LATEST}, None)
    kinds = {v.kind for v in out}
    assert {"double-assignment", "unassigned", "owner-out-of-range", "per-topic-skew", "formula-mismatch"} <= kinds
    assert {"unsubscribed-partition", "foreign-partition", "re-reported", "missed-partition"} <= kinds
    assert {"lost-partition", "wrong-owner", "split-moved", "uneven-split", "offset-changed"} <= kinds
    assert {"unsubscribed-restored", "kept-topic-dropped", "offset-commit-backwards", "latest-unresolved"} <= kinds
    assert {"offset-duplicate", "offset-gap"} <= {v.kind for v in out if v.requirement == "RESTORE-003"}
    assert {"failed-on-zero", "unclear-error", "idle-on-zero", "foreign-record", "sentinel-resolved-early"} <= kinds
    assert {"moved-without-read", "forgotten", "stalled"} <= kinds
    assert {"uncommitted-unnamed", "committed-offset-ignored", "silent-start", "fallback-ignored"} <= kinds
    assert_documented(out)


def test_input_checkers_give_documented_fields() -> None:
    a0 = tp("a", 0)
    view = input_checkers.LogView(records=(0, 4), hidden=(1, 2), end=6)
    out = input_checkers.check_records_read({a0: view}, {a0: [1, 3, 4, 4]}, "at the end")
    out += input_checkers.check_positions_in_gaps({a0: view}, {a0: [0, 4]}, {a0: 3}, "in checkpoint 1")
    out += input_checkers.check_positions_in_gaps({a0: view}, {a0: []}, {a0: 5}, "in checkpoint 1")
    out += input_checkers.check_positions_in_gaps({a0: view}, {a0: [0, 4]}, {a0: 7}, "at the end")
    out += input_checkers.check_values_as_written({a0: {0: None, 4: b""}}, [(a0, 0, b""), (a0, 4, None)], "now")
    assert len({v.kind for v in out}) == 8  # every kind but value-changed, whose fields are those of the other two
    assert_documented(out)


def test_sink_and_pipeline_checkers_give_documented_fields() -> None:
    a0, a1 = tp("in", 0), tp("in", 1)
    out = checkers.check_order({b"x": (a0, 0), b"y": (a0, 1)}, {0: [b"y", b"x"]})
    out += checkers.check_pooled_ids([f"p-0-{i}" for i in range(9)], "p", 1)
    out += checkers.check_stopped_sink(["p-0-1"], ["p-0-2"], "in-0: 3 < 5")
    batch = [ReadRecord(a0, 0, b"x", 0), ReadRecord(a0, 0, b"x", 1), ReadRecord(a0, 2, b"\xff", 0)]
    out += pipeline_checkers.check_read_once(batch, {a0: 3})
    out += pipeline_checkers.check_bounded_read(batch + batch, {a0: [0, 2], a1: [1]}, {a0: 2, a1: 3}, idle_ms=31_000)
    out += pipeline_checkers.check_discovered(batch, {a1: 4})
    out += pipeline_checkers.check_single_reader(batch, 1)
    out += pipeline_checkers.check_offsets_read_by_one_task(batch)
    out += pipeline_checkers.check_task_plan(batch, 2)
    out += pipeline_checkers.check_output(Counter([b"x", b"y"]), Counter([b"x", b"x"]), exactly_once=True)
    out += pipeline_checkers.check_unblocked({a0: 2}, {a0: 5}, "after the restart")
    original = pipeline_checkers.TaskAttempt(1, 0, 0, False, "127.0.0.1", "KILLED")
    copy = pipeline_checkers.TaskAttempt(1, 0, 1, True, "127.0.0.2", "SUCCESS")
    out += pipeline_checkers.check_zombie_fenced(original, copy, {a0: 2}, {a0: 5}, Counter([b"x"]), Counter([b"x"] * 2))
    out += pipeline_checkers.check_foreign_left_open({a0: 2}, {a0: 5}, {a0: 5}, "while another query ran")
    out += pipeline_checkers.check_rewritten(Counter([None, b"z"]), Counter(), "was refused")
    out += pipeline_checkers.check_pattern_reads([a0, tp("x", 1)], "in")
    out += pipeline_checkers.check_refused_timeout(None, "out", 0, 7)
    out += liveness_checkers.check_driver_exit(1, "the restarted driver", "Traceback\nError: boom")
    out += pipeline_checkers.check_timed_out_task(None, 2000, 3)
    out += pipeline_checkers.check_timed_out_task("KafkaError: fenced", 2000, 0)
    out += pipeline_checkers.check_refused_timeout("failed", "out", 0, 7)
    out += pipeline_checkers.check_refused_timeout("transaction.timeout.ms transaction.max.timeout.ms", "out", 2, 7)
    truncated = {a0: pipeline_checkers.Truncated(1, 3, 5)}
    out += pipeline_checkers.check_gone_position(None, batch, truncated, loss_accepted=False)
    out += pipeline_checkers.check_gone_position("failed", batch, truncated, loss_accepted=False)
    past_end = {a0: pipeline_checkers.Truncated(7, 0, 3), a1: pipeline_checkers.Truncated(1, 0, 4)}
    out += pipeline_checkers.check_position_past_end(None, batch, past_end, loss_accepted=False)
    out += pipeline_checkers.check_position_past_end("failed", batch, past_end, loss_accepted=False)
    out += pipeline_checkers.check_unmapped_start("failed", batch, {a0: 1}, {a0: 3, a1: 2})
    out += pipeline_checkers.check_unmapped_start(None, batch, {a0: 1}, {a0: 3, a1: 2})
    out += sink_checkers.check_distinct_ids([b"x", b"\xff"], [], None) + sink_checkers.check_distinct_ids([], [], "e")
    out += sink_checkers.check_timeout_surfaced(None) + sink_checkers.check_timeout_surfaced(ValueError("other"))
    out += sink_checkers.check_intervals_committed([b"x"], [], "s", None)
    out += sink_checkers.check_intervals_committed([], [], "notify 1", "fenced")
    out += sink_checkers.check_second_recovery([b"first-0"], [b"after-0"], [b"after-0"], "s", None)
    out += sink_checkers.check_second_recovery([], [], [], "the first recovery", "fenced")
    out += sink_checkers.check_foreign_transactions_kept("job-1", [b"x"], [], None)
    out += sink_checkers.check_foreign_transactions_kept("job-1", [], [], "aborted")
    out += sink_checkers.check_old_prefix_closed([b"new-0"], [], {0: 1})
    out += sink_checkers.check_expired_ids_refused(["p-0-1"], False, None)
    out += sink_checkers.check_expired_ids_refused(["p-0-1"], True, "KafkaError: unknown")
    out += sink_checkers.check_prefixes_refused(["job", "job"], None, []) + sink_checkers.check_prefixes_refused(
        [""], None, []
    )
    out += sink_checkers.check_prefixes_refused(["job", "job"], "ValueError: 'job'", ["job-0-1"])
    out += sink_checkers.check_prefixes_refused(["job", "job"], "ValueError: no", [])
    out += sink_checkers.check_prefixes_refused(["job"], "ValueError: no", [])
    ends = {0: 3, 1: 2}
    out += sink_checkers.check_naming_switched("pooling", "incrementing", [b"x"], [], {0: 1, 1: 2}, ends, "no")
    out += sink_checkers.check_naming_switched("incrementing", "pooling", [b"x", b"y"], [b"y", b"y"], ends, ends, None)
    out += sink_checkers.check_timeout_outlived({"p-0-1": 2}, 1, "the commit", None, [b"x"])
    out += sink_checkers.check_timeout_outlived({"p-0-1": 2}, 1, "the commit", "KafkaError: fenced", [])
    out += sink_checkers.check_timeout_outlived({"p-0-1": 1}, 1, "the commit", "KafkaError: fenced", [])
    out += sink_checkers.check_timeout_outlived({"p-0-1": 1}, 1, "the commit", None, [b"\xff"])
    kinds = {v.kind for v in out}
    assert {"silent-past-end", "unread-record-skipped", "past-end-unnamed"} <= kinds
    assert {"reordered", "unbounded-ids", "open-after-stop", "pending-aborted-at-stop", "offset-gap"} <= kinds
    assert {"offset-duplicate", "never-discovered", "double-read", "lost-write", "duplicate"} <= kinds
    assert {
        "driver-failed",
        "lingering-transaction",
        "unsubscribed-read",
        "refused-timeout-ignored",
        "unclear-error",
    } <= kinds
    assert {
        "written-anyway",
        "id-collision",
        "swallowed-error",
        "interval-lost",
        "empty-transaction-committed",
    } <= kinds
    assert {"recovery-commits-uncheckpointed", "lost-checkpointed", "recovery-failed"} <= kinds
    assert {"silent-skip", "existing-record-skipped", "loss-unnamed", "unmapped-unnamed"} <= kinds
    assert "log-start-unnamed" in kinds
    assert {"unmapped-not-earliest", "specified-offset-ignored"} <= kinds
    assert {
        "foreign-transaction-aborted",
        "old-prefix-left-open",
        "expired-id-swallowed",
        "expired-id-unnamed",
    } <= kinds
    assert {"duplicate-prefix-accepted", "missing-prefix-accepted", "refused-after-start", "refusal-unnamed"} <= kinds
    assert {"valid-prefixes-refused", "old-naming-left-open", "switch-lost-write", "switch-duplicate"} <= kinds
    assert_documented(out)


def test_strategy_checkers_give_documented_fields() -> None:
    t0, t1, t2, t9 = tp("t", 0), tp("t", 1), tp("t", 2), tp("t", 9)
    same = Group(
        (Member("m1", frozenset({"t"}), frozenset({t0, t1})), Member("m2", frozenset({"t"}))), {"t": 3, "u": 1}
    )
    out = strategy_checkers.check_keyed_placement([(1, None, 3, 2), (None, b"k\xfe", 3, 2), (None, b"k", 3, 0)])
    out += strategy_checkers.check_keyless_spread([0, 0, 7], 3) + strategy_checkers.check_keyless_spread([0, 0], 3)
    out += strategy_checkers.check_group_assignment(same, {"m1": [t0, t0, t9, tp("u", 0)], "ghost": [t1]})
    out += strategy_checkers.check_exact_assignment(same, {"m1": [t2]}, "range")
    out += strategy_checkers.check_balance(same, {"m1": [t0, t1, t2], "m2": []})
    out += strategy_checkers.check_stickiness(same, {"m1": [], "m2": [t0, t1, t2]})
    out += strategy_checkers.check_cooperative(same, {"m2": [t0]})
    out += strategy_checkers.check_settles([(same, {"m2": [t0, t1, t2]})])
    kinds = {v.kind for v in out}
    assert {"explicit-partition-ignored", "keyed-placement-mismatch", "keyless-out-of-range"} <= kinds
    assert {"keyless-not-spread", "missing-member", "unknown-member", "nonexistent-partition"} <= kinds
    assert {"unsubscribed-topic", "double-assignment", "unassigned", "range-mismatch", "unbalanced"} <= kinds
    assert {"needless-move", "revoked-and-assigned", "unsettled"} <= kinds
    assert_documented(out)


VALUES = [b"v0", b"v1", b"v2", b"\xff3"]


@st.composite
def sink_histories(draw: Any) -> History:
    """Random sink histories: writes, barriers, completions, notifications, recoveries and reads that see any
    subset of the values, in any order, some twice, with any stable offsets."""
    history = History()
    attempt = 0
    for _ in range(draw(st.integers(1, 14))):
        process = f"attempt-{attempt}"
        step = draw(st.sampled_from(["write", "barrier", "complete", "notify", "recover", "fault", "read"]))
        if step == "write":
            kind = draw(st.sampled_from(["ok", "fail"]))
            history.complete(process, kind, "write", (draw(st.sampled_from(VALUES)), draw(st.integers(0, 2))))
        elif step in ("barrier", "notify"):
            history.complete(process, "ok", step, draw(st.integers(1, 4)))
        elif step == "complete":
            history.complete(process, "ok", "complete", (draw(st.integers(1, 4)), process))
        elif step == "recover":
            attempt += 1
            watermarks = draw(st.dictionaries(st.integers(0, 1), st.integers(0, 5), max_size=2))
            history.invoke(f"attempt-{attempt}", "recover", (watermarks, draw(st.integers(1, 3))))
            history.complete(f"attempt-{attempt}", "ok", "recover", draw(st.integers(0, 4)))
        elif step == "fault":
            history.complete("nemesis", "ok", "fault", "kill")
        else:
            committed = tuple(draw(st.lists(st.sampled_from(VALUES), max_size=6)))
            located = {v: (i % 2, i) for i, v in enumerate(VALUES)}
            stable = draw(st.dictionaries(st.integers(0, 1), st.integers(0, 5), max_size=2))
            history.complete("reader", "ok", "read", Observation(committed, located, stable))
    return history


@given(sink_histories())
def test_every_anomaly_of_a_generated_sink_history_gives_documented_fields(history: History) -> None:
    assert_documented(check_sink_history(history.ops))
