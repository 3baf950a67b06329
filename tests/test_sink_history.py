"""The sink history's detectors, each alone on one read: what the history established (``Read``) and what
the read saw. Each passes a read a conforming sink gives and names each anomaly of its family."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kconform.conformance.checks.history import (
    Anomaly,
    History,
    Observation,
    Read,
    WrittenValue,
    duplicates,
    lost_writes,
    open_transactions,
    reads_of,
    visible_too_early,
)

COMMITTED = WrittenValue("attempt-0", 0, checkpoint=1, covered=True)
NONE: frozenset[str] = frozenset()


def read_of(
    committed: tuple[bytes, ...],
    values: Mapping[bytes, WrittenValue],
    *,
    located: Mapping[bytes, tuple[int, int]] | None = None,
    stable: Mapping[int, int] | None = None,
    durable: tuple[int, str] = (1, "notify"),
    watermarks: Mapping[int, int] | None = None,
    hidden_before_recovery: frozenset[bytes] = frozenset(),
    crashed: frozenset[str] = frozenset(),
    faulted: bool = False,
) -> Read:
    located = located if located is not None else {v: (0, i) for i, v in enumerate(values)}
    seen = Observation(committed, located, stable if stable is not None else {0: len(values)})
    return Read(7, seen, values, crashed, *durable, watermarks or {}, 1, hidden_before_recovery, faulted)


def kinds(anomalies: list[Anomaly]) -> list[str]:
    return [a.kind for a in anomalies]


@given(st.lists(st.sampled_from([b"a", b"b", b"c"]), max_size=8))
def test_required_COMMIT_008_a_value_visible_twice_is_a_duplicate(committed: list[bytes]) -> None:
    found = duplicates(read_of(tuple(committed), {}))
    twice = {v for v, n in Counter(committed).items() if n > 1}
    assert {a.key for a in found} == twice and kinds(found) == ["duplicate"] * len(twice)
    assert all(a.data["times"] == committed.count(a.key) for a in found)


@pytest.mark.parametrize(
    ("written", "hidden_before_recovery", "crashed", "anomaly"),
    [
        (COMMITTED, NONE, NONE, None),
        (COMMITTED, frozenset({b"v"}), NONE, None),
        (WrittenValue("attempt-0", 0, checkpoint=1), frozenset({b"v"}), frozenset(), "recovery-commits-uncheckpointed"),
        (WrittenValue("attempt-0", 0, checkpoint=1, covered=True, failed=True), NONE, NONE, "zombie-write"),
        (WrittenValue("attempt-0", 0, covered=True, superseded=True), NONE, NONE, "zombie-write"),
        (WrittenValue("attempt-0", 0), NONE, NONE, "uncommitted-read"),
        (WrittenValue("attempt-0", 0, checkpoint=2), NONE, frozenset({"attempt-0"}), "aborted-read"),
        (WrittenValue("attempt-0", 0, checkpoint=2), NONE, NONE, "precommitted-read"),
    ],
)
def test_required_COMMIT_001_002_006_008_010_a_visible_value_no_completed_checkpoint_covers_is_named(
    written: WrittenValue, hidden_before_recovery: frozenset[bytes], crashed: frozenset[str], anomaly: str | None
) -> None:
    found = visible_too_early(
        read_of((b"v",), {b"v": written}, hidden_before_recovery=hidden_before_recovery, crashed=crashed)
    )
    assert kinds(found) == ([anomaly] if anomaly else [])
    assert visible_too_early(read_of((b"unknown",), {}, hidden_before_recovery=hidden_before_recovery)) == []


@pytest.mark.parametrize(
    ("stable", "holder", "anomaly"), [(2, 0, None), (1, 0, "lingering-transaction"), (1, 3, "leftover-transaction")]
)
def test_required_COMMIT_004_012_a_stable_offset_below_the_watermark_at_recovery_is_an_open_transaction(
    stable: int, holder: int, anomaly: str | None
) -> None:
    values = {b"done": COMMITTED, b"open": WrittenValue("attempt-0", holder, checkpoint=2)}
    read = read_of((b"done",), values, stable={0: stable}, watermarks={0: 2})
    found = open_transactions(read)
    assert kinds(found) == ([anomaly] if anomaly else [])
    assert all(a.key == 0 and a.data["subtask"] == holder for a in found)
    assert open_transactions(read_of((b"done",), values, stable={0: 0})) == []  # no recovery: nothing to compare


@pytest.mark.parametrize(
    ("durable", "faulted", "anomaly"),
    [
        ((1, "notify"), False, "notification-lost-write"),
        ((1, "recover"), False, "lost-write"),
        ((1, "notify"), True, "swallowed-error"),
    ],
)
def test_required_COMMIT_003_007_009_a_committed_value_not_visible_is_lost(
    durable: tuple[int, str], faulted: bool, anomaly: str
) -> None:
    values = {b"v": COMMITTED}
    assert lost_writes(read_of((b"v",), values, durable=durable, faulted=faulted)) == []
    assert kinds(lost_writes(read_of((), values, durable=durable, faulted=faulted))) == [anomaly]
    assert lost_writes(read_of((), values, durable=(0, "start"))) == []  # not yet reported committed
    assert lost_writes(read_of((), {b"v": WrittenValue("attempt-0", 0, checkpoint=1)}, durable=durable)) == []
    hidden = read_of((), values, durable=durable, stable={0: 0}, watermarks={0: 1})
    assert lost_writes(hidden) == []  # behind an open transaction: open_transactions names it


def test_the_replay_gives_each_read_the_state_of_its_moment() -> None:
    history = History()
    history.complete("attempt-0", "ok", "write", (b"v", 0))
    history.complete("reader", "ok", "read", Observation((), {}, {}))
    history.complete("attempt-0", "ok", "barrier", 1)
    history.complete("attempt-0", "ok", "complete", (1, "attempt-0"))
    history.complete("attempt-0", "ok", "notify", 1)
    history.complete("reader", "ok", "read", Observation((b"v",), {}, {}))
    history.invoke("attempt-1", "recover", ({0: 1}, 2))
    history.complete("attempt-1", "ok", "recover", 1)
    history.complete("reader", "ok", "read", Observation((b"v",), {}, {}))
    first, second, third = reads_of(history.ops)
    assert first.values[b"v"] == WrittenValue("attempt-0", 0) and first.durable_by == "start"
    assert second.values[b"v"] == COMMITTED and (second.durable_upto, second.durable_by) == (1, "notify")
    assert (third.hidden_before_recovery, third.crashed, third.parallelism_at_recover) == (
        frozenset(),
        {"attempt-0"},
        2,
    )
    assert third.watermarks_at_recover == {0: 1} and (third.durable_upto, third.durable_by) == (1, "recover")


@pytest.mark.parametrize("read_before_recovery", [True, False])
def test_required_COMMIT_002_010_a_recovery_is_blamed_only_for_what_a_read_just_before_it_saw_hidden(
    read_before_recovery: bool,
) -> None:
    """A sink that commits at the barrier, then crashes: without a read between the barrier and the
    recovery, the history cannot say the recovery made the value visible (CI, stop 33)."""
    history = History()
    history.complete("attempt-0", "ok", "write", (b"v", 0))
    history.complete("attempt-0", "ok", "barrier", 1)
    if read_before_recovery:
        history.complete("reader", "ok", "read", Observation((), {b"v": (0, 0)}, {0: 0}))
    history.invoke("attempt-1", "recover", ({0: 2}, 1))
    history.complete("attempt-1", "ok", "recover", 0)
    history.complete("reader", "ok", "read", Observation((b"v",), {b"v": (0, 0)}, {0: 2}))
    *_, last = reads_of(history.ops)
    assert last.hidden_before_recovery == (frozenset({b"v"}) if read_before_recovery else frozenset())
    assert kinds(visible_too_early(last)) == (
        ["recovery-commits-uncheckpointed"] if read_before_recovery else ["aborted-read"]
    )
