"""``kconform soak``'s schedules: reproducible one by one, covering every kind the broker can do."""

from __future__ import annotations

from collections import Counter

import pytest

from kconform.conformance.soak.guarantee import Guarantee
from kconform.conformance.soak.schedule import (
    BROKER_FAULTS,
    EXECUTOR_WORKERS,
    NEEDS,
    FaultKind,
    Phase,
    available_kinds,
    draw_schedule,
    draw_schedules,
    parse_kinds,
)
from kconform.conformance.spark.cluster import DEFAULT_SHAPE


@pytest.mark.parametrize("broker", ["kafka", "kafka-cluster"])
def test_schedule_i_of_a_seed_is_the_same_drawn_alone_or_among_others(broker: str) -> None:
    together = draw_schedules(11, 20, broker)
    assert [draw_schedule(11, i, broker) for i in range(20)] == together
    assert draw_schedule(11, 7, broker) == together[7]
    assert draw_schedules(12, 20, broker) != together


@pytest.mark.parametrize(("broker", "executors"), [("kafka", False), ("kafka-cluster", False), ("kafka", True)])
def test_over_100_schedules_every_available_kind_and_phase_appears_at_least_10_times(
    broker: str, executors: bool
) -> None:
    kinds: Counter[FaultKind] = Counter()
    phases: Counter[Phase | None] = Counter()
    for schedule in draw_schedules(1, 100, broker, executors=executors):
        kinds += schedule.kinds()
        phases.update(f.phase for f in schedule.faults() if f.kind is FaultKind.DRIVER_KILL)
    assert set(kinds) == available_kinds(broker, executors)
    assert (FaultKind.EXECUTOR_KILL in kinds) is executors
    assert min(kinds.values()) >= 10, kinds
    assert min(phases[p] for p in Phase) >= 10, phases


def test_a_single_node_never_draws_a_leader_kill_and_only_a_standalone_cluster_draws_an_executor_kill() -> None:
    drawn = {f.kind for s in draw_schedules(3, 100, "kafka") for f in s.faults()}
    assert FaultKind.LEADER_KILL not in drawn
    assert FaultKind.EXECUTOR_KILL not in drawn | {
        f.kind for s in draw_schedules(3, 100, "kafka-cluster") for f in s.faults()
    }
    assert FaultKind.EXECUTOR_KILL in {
        f.kind for s in draw_schedules(3, 100, "kafka-cluster", executors=True) for f in s.faults()
    }
    with pytest.raises(ValueError, match="--spark-master standalone"):
        parse_kinds("executor-kill", "kafka-cluster")
    with pytest.raises(ValueError, match="--spark-master standalone"):
        draw_schedule(3, 0, "kafka", {FaultKind.EXECUTOR_KILL, FaultKind.DRIVER_KILL})
    assert parse_kinds("executor-kill", "kafka", executors=True) == {FaultKind.EXECUTOR_KILL}
    with pytest.raises(ValueError, match="kafka-cluster"):
        parse_kinds("leader-kill", "kafka")
    with pytest.raises(ValueError, match="unknown fault kind"):
        parse_kinds("driver-kil", "kafka")
    assert set(NEEDS) == {FaultKind.EXECUTOR_KILL, FaultKind.LEADER_KILL, FaultKind.COMMIT_STALL}
    with pytest.raises(ValueError, match="tansu"):
        available_kinds("tansu")


def test_an_executor_kill_lands_inside_a_batch_on_a_worker_of_the_cluster() -> None:
    assert DEFAULT_SHAPE.workers == EXECUTOR_WORKERS
    kills = [
        f
        for s in draw_schedules(6, 100, "kafka", executors=True)
        for f in s.faults()
        if f.kind is FaultKind.EXECUTOR_KILL
    ]
    assert len(kills) >= 10
    assert all(f.anchor is not None and f.anchor.log == "offsets" for f in kills)  # as driver-kill@planned
    assert {f.node for f in kills} == set(range(1, EXECUTOR_WORKERS + 1))
    assert kills[0].label() == f"executor-kill(worker {kills[0].node})"


def test_a_seed_replays_as_pinned_and_no_kinds_given_means_every_available_one() -> None:
    """Pinned as drawn when ``commit-stall`` was added: a generator change must re-pin it knowingly,
    since it changes what every saved replay line runs."""
    assert draw_schedule(8, 3, "kafka-cluster").describe().splitlines() == [
        "run 1 (n=1): leader-kill(4281ms) at offsets+3+13ms; driver-kill@planned at offsets+4+689ms",
        "run 2 (n=2, final: to the end): rescale->2 at start",
    ]
    assert draw_schedules(8, 30, "kafka") == draw_schedules(8, 30, "kafka", available_kinds("kafka"))


def test_schedules_are_well_formed() -> None:
    for schedule in draw_schedules(5, 100, "kafka-cluster"):
        *runs, final = schedule.segments
        assert runs, "a schedule has at least one killable run before the final one"
        assert all(f.anchor is None for f in final.faults) and final.kill is None
        previous = None
        for segment in schedule.segments:
            kills = [f for f in segment.faults if f.kind is FaultKind.DRIVER_KILL]
            assert kills in ([], list(segment.faults[-1:]))
            rescales = [f.amount for f in segment.faults if f.kind is FaultKind.RESCALE]
            assert rescales == ([segment.parallelism] if previous not in (None, segment.parallelism) else [])
            assert 1 <= segment.parallelism <= 4
            previous = segment.parallelism
            anchors = [f.anchor for f in segment.faults if f.anchor is not None and f.kind is not FaultKind.DRIVER_KILL]
            assert anchors == sorted(anchors)
        torn = [f for f in schedule.faults() if f.phase is Phase.TORN]
        assert all(f.anchor is not None and f.anchor.log == "commits" and f.anchor.delay_ms == 0 for f in torn)


def test_restricted_kinds_draw_only_those() -> None:
    kinds = parse_kinds("driver-kill, rescale", "kafka")
    drawn = {f.kind for s in draw_schedules(2, 50, "kafka", kinds) for f in s.faults()}
    assert drawn == kinds
    one = draw_schedule(2, 0, "kafka", kinds, max_segments=1)
    assert len(one.segments) == 2
    assert "final: to the end" in one.describe()


def test_about_half_the_broker_faults_land_inside_a_transactional_write_and_nothing_else_does() -> None:
    faults = [f for s in draw_schedules(1, 100, "kafka-cluster") for f in s.faults() if f.anchor is not None]
    inside = [f for f in faults if f.anchor is not None and f.anchor.log == "txn"]
    assert {f.kind for f in inside} == BROKER_FAULTS
    assert all(f.anchor is not None and f.anchor.delay_ms == 0 for f in inside)
    broker = [f for f in faults if f.kind in BROKER_FAULTS]
    assert 0.35 < len(inside) / len(broker) < 0.65, (len(inside), len(broker))
    assert "txn+" in draw_schedule(1, 1, "kafka", parse_kinds("node-pause", "kafka")).describe()


def test_an_at_least_once_sink_draws_no_commit_stall_and_no_transactional_anchor_and_is_told_why() -> None:
    """Its sink opens no transaction: a ``commit-stall`` would wait for a commit that never comes, a ``txn+k``
    anchor for one that never opens (the fault would land after the driver ended)."""
    at_least_once = draw_schedules(1, 100, "kafka-cluster", guarantee=Guarantee.AT_LEAST_ONCE)
    kinds: Counter[FaultKind] = sum((s.kinds() for s in at_least_once), Counter())
    assert set(kinds) == available_kinds("kafka-cluster") - {FaultKind.COMMIT_STALL}
    assert min(kinds.values()) >= 10, kinds
    assert not [f for s in at_least_once for f in s.faults() if f.anchor is not None and f.anchor.log == "txn"]
    assert draw_schedule(1, 4, "kafka", guarantee=Guarantee.AT_LEAST_ONCE) == draw_schedule(
        1, 4, "kafka", guarantee=Guarantee.AT_LEAST_ONCE
    )
    with pytest.raises(ValueError, match="exactly-once sink"):
        parse_kinds("commit-stall", "kafka", guarantee=Guarantee.AT_LEAST_ONCE)
    with pytest.raises(ValueError, match="exactly-once sink"):
        draw_schedule(1, 0, "kafka", {FaultKind.COMMIT_STALL}, guarantee=Guarantee.AT_LEAST_ONCE)
