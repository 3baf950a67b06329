"""The Flink workload's schedules: valid by construction, replayable from their JSON, described stably. Pure."""

from __future__ import annotations

from collections import Counter
from dataclasses import replace

import pytest
from hypothesis import given, settings

from kconform.conformance.flink.job import Failure
from kconform.conformance.workloads.flink.schedule import (
    EVERY_KIND,
    MAX_PARALLELISM,
    MAX_SINKS,
    MAX_TRANSACTIONS,
    FlinkSchedule,
    Growth,
    Held,
    Reader,
    Refusal,
    RunPlan,
    SinkPlan,
    Step,
    Transaction,
    describe,
    failure_sure,
    flink_schedules,
    with_backfill,
    with_growth,
    with_moment,
    with_reader,
    with_refusal,
)


@settings(max_examples=200)
@given(schedule=flink_schedules())
def test_drawn_schedules_are_valid_and_replay_from_their_json(schedule: FlinkSchedule) -> None:
    assert schedule.problem() is None
    assert 2 <= len(schedule.runs) <= 4 and schedule.runs[-1].stop_after is None
    for k, run in enumerate(schedule.runs):
        assert 1 <= run.parallelism <= MAX_PARALLELISM
        assert run.failure is None or run.failure.subtask < run.parallelism
        assert failure_sure(schedule, k), f"run {k + 1}'s failure may never happen:\n{describe(schedule)}"
    assert FlinkSchedule.loads(schedule.dumps()) == schedule
    assert describe(FlinkSchedule.loads(schedule.dumps())) == describe(schedule)
    assert len(describe(schedule).splitlines()) == len(schedule.runs) + 1 + (schedule.reader is not None)


@settings(max_examples=200)
@given(schedule=flink_schedules())
def test_every_start_is_between_a_partitions_first_record_and_its_end(schedule: FlinkSchedule) -> None:
    """The starts the checkers expect: a held offset below what the first run finds, a partition added after the
    first start at its first record, and the first run has something to read under a group start."""
    written = schedule.written(len(schedule.runs) - 1)
    starts = schedule.starts()
    assert set(starts) == schedule.starting() | set(schedule.added())
    assert all(0 <= starts[cell] <= written.get(cell, 0) for cell in starts)
    assert all(starts[cell] == 0 for cell in schedule.added())
    if schedule.start == "group":
        before = schedule.written(0)
        assert any(starts[(h.topic, h.partition)] < before[(h.topic, h.partition)] for h in schedule.held)


@settings(max_examples=300)
@given(schedule=flink_schedules())
def test_every_start_and_stop_is_drawn_and_a_start_at_latest_draws_no_failure(schedule: FlinkSchedule) -> None:
    """Starts at the earliest, the latest and group offsets, and stops at once, after records and at the end; under
    a start at LATEST no failure (it may be resolved at the failing run's own discovery, after its writes)."""
    DRAWN.update(schedule.counts())
    unset = [sink for sink in schedule.sinks if not sink.prefixed]
    DRAWN.update({"sinks unprefixed at least once:2+": len(unset) >= 2})
    assert 1 <= len(schedule.sinks) <= MAX_SINKS and not any(sink.exactly_once for sink in unset)
    if schedule.start == "latest":
        assert schedule.fallback is None and not schedule.held
        assert all(run.failure is None for run in schedule.runs)
        open_runs = [0] if schedule.empty_at_start else list(range(len(schedule.runs)))
        assert list(schedule.first_discoveries()) == open_runs
    if schedule.empty_at_start:  # a pattern matching nothing at start: every partition is found later, at 0
        assert schedule.pattern and schedule.start != "group" and len(schedule.runs) >= 3
        assert not schedule.runs[0].steps and schedule.starting() == set()
        assert set(schedule.starts().values()) == {0} and all(schedule.added().values())
        created = {(t, p) for t, n in enumerate(schedule.layout(1)) for p in range(n)}
        written_last = {(s.topic, s.partition) for s in schedule.runs[-1].steps if s.kind == "write"}
        assert created and created <= written_last  # written to again: a late start shows as a gap
    for k, refusal in schedule.refusals():  # a fault inside a run whose records written meanwhile surely are read
        assert not schedule.resolves_late and not schedule.empty_at_start
        assert schedule.runs[k].stop_after is None and schedule.runs[k].failure is None
        assert not schedule.sinks[refusal.sink].exactly_once
    grown = [k for k, run in enumerate(schedule.runs) if run.growth is not None]
    if grown:  # only found in time by a short interval, after the first discovery
        assert grown == [len(schedule.runs) - 1] and schedule.discovery_ms is not None
        assert not schedule.resolves_late and not schedule.empty_at_start
    for k, run in enumerate(schedule.runs):  # the savepoint once listed: the first run at a plain LATEST, stopped
        if run.moment == "listed":
            assert k == 0 and schedule.start == "latest" and not schedule.empty_at_start
            assert run.stop_after == 0 and run.failure is None
    assert schedule.reader is not None  # every life ends with a bounded read (READER_ODDS 1)


DRAWN: Counter[str] = Counter()


def test_the_draws_cover_every_start_and_stop() -> None:
    test_every_start_and_stop_is_drawn_and_a_start_at_latest_draws_no_failure()
    assert {"start:earliest", "start:latest", "start:group, fallback latest", "start:group, fallback earliest"} <= set(
        DRAWN
    )
    assert {"stop:at once", "stop:after records", "stop:to the end"} <= set(DRAWN)
    assert {"sinks:1", "sinks:2", "sinks:3", "prefix:set", "prefix:unset", "guarantee:at-least-once"} <= set(DRAWN)
    assert DRAWN["sinks unprefixed at least once:2+"] > 0  # several sinks leaving the prefix to the release
    assert DRAWN["subscription:pattern, empty at start"] > 0
    assert DRAWN["fault:writes refused"] > 0 and DRAWN["fault:records refused"] > DRAWN["fault:writes refused"]
    assert DRAWN["operator:add-partitions while running"] > 0
    assert DRAWN["reader:transaction committed"] > 0 and DRAWN["reader:transaction aborted"] > 0
    assert DRAWN["stop:once listed, ListOffsets held"] > 0


def test_a_refusal_replays_from_its_json_and_is_described_and_counted() -> None:
    plain = replace(EVERY_KIND, reader=None, runs=tuple(replace(run, refusal=None) for run in EVERY_KIND.runs))
    refused = replace(plain, runs=(*plain.runs[:-1], replace(plain.runs[-1], refusal=Refusal(1, ((0, 0), (1, 0)), 4))))
    assert FlinkSchedule.loads(refused.dumps()) == refused
    assert describe(refused).splitlines()[-1] == (
        "run 4: write 9 to t1[0]; parallelism 1, no failure; the broker refuses sink 1's writes while 2 records are "
        "written (t0[0], t1[0]), then 4 more to each; read to the end"
    )
    assert refused.runs[-1].refusal is not None and refused.runs[-1].refusal.written() == {(0, 0): 5, (1, 0): 5}
    assert refused.counts()["fault:writes refused"] == 1 and refused.counts()["fault:records refused"] == 2


def test_a_refusal_is_drawn_from_the_schedule_itself_in_each_that_may_have_one() -> None:
    """``with_refusal`` leaves every other choice as it was (a seed's schedules stay what they were) and gives the
    same schedule the same refusal; a schedule under a start at LATEST, or with no at-least-once sink, has none."""
    plain = replace(EVERY_KIND, runs=tuple(replace(run, refusal=None) for run in EVERY_KIND.runs))
    faulted = with_refusal(plain)
    assert with_refusal(plain) == faulted and faulted.problem() is None
    ((k, refusal),) = faulted.refusals()
    assert replace(faulted, runs=tuple(replace(run, refusal=None) for run in faulted.runs)) == plain
    assert faulted.sinks[refusal.sink] == SinkPlan(False, prefixed=False) and k in (1, 3)
    assert with_refusal(replace(plain, more_sinks=())).refusals() == []  # exactly-once alone
    latest = replace(
        plain,
        start="latest",
        fallback=None,
        held=(),
        runs=(replace(plain.runs[0], failure=None), *(replace(r, failure=None) for r in plain.runs[1:])),
    )
    assert with_refusal(latest).refusals() == []


LATEST = replace(
    EVERY_KIND,
    start="latest",
    fallback=None,
    held=(),
    reader=None,
    runs=(replace(EVERY_KIND.runs[0], stop_after=0), *(replace(r, failure=None) for r in EVERY_KIND.runs[1:])),
)
"""The explicit example under a plain start at LATEST, its first run stopped at once, with no failure."""


def test_a_savepoint_moment_is_drawn_from_the_schedule_itself_under_a_plain_start_at_latest() -> None:
    """``with_moment`` gives some schedules at LATEST (and only those) a first run stopped once listed, the same one
    each time, changing nothing else; a first run at today's moment keeps its JSON."""
    moments: Counter[str] = Counter()
    for n in range(60):
        plain = replace(LATEST, checkpoint_ms=100 + n)
        drawn = with_moment(plain)
        assert with_moment(plain) == drawn and drawn.problem() is None
        assert replace(drawn, runs=(replace(drawn.runs[0], moment="start"), *drawn.runs[1:])) == plain
        assert all(run.moment == "start" for run in drawn.runs[1:])
        moments[drawn.runs[0].moment] += 1
        assert with_moment(replace(plain, start="earliest")) == replace(plain, start="earliest")
        group = replace(EVERY_KIND, fallback="latest", checkpoint_ms=100 + n)
        assert with_moment(group) == group  # a group's fallback is resolved by the reader: no ListOffsets to hold
    assert set(moments) == {"start", "listed"}
    assert all("moment" not in run for run in LATEST.to_json()["runs"])


def test_a_savepoint_once_listed_replays_from_its_json_and_is_described_and_counted() -> None:
    listed = replace(LATEST, runs=(replace(LATEST.runs[0], moment="listed"), *LATEST.runs[1:]))
    assert listed.to_json()["runs"][0]["moment"] == "listed"
    assert FlinkSchedule.loads(listed.dumps()) == listed
    assert describe(listed).splitlines()[1] == (
        "run 1: write 12 to t0[0], write 6 to t0[1], write 5 to t1[0]; parallelism 2, no failure; stop once the "
        "enumerator listed the subscription, the answer to its first ListOffsets request held until the savepoint "
        "is written"
    )
    assert listed.counts()["stop:once listed, ListOffsets held"] == 1 and "stop:at once" not in listed.counts()
    assert LATEST.counts()["stop:at once"] == 1


def test_the_explicit_example_draws_every_kind() -> None:
    counts = EVERY_KIND.counts()
    assert {"operator:write", "operator:add-partitions", "operator:create-topic", "failure:record"} <= set(counts)
    assert {"stop:to the end", "stop:after records"} <= set(counts)
    assert {"sinks:2", "prefix:set", "prefix:unset", "guarantee:at-least-once", "guarantee:exactly-once"} <= set(counts)
    assert all(failure_sure(EVERY_KIND, k) for k in range(len(EVERY_KIND.runs)))
    assert EVERY_KIND.added() == {(0, 2): False, (2, 0): True, (2, 1): True}
    assert EVERY_KIND.starts() == {(0, 0): 4, (0, 1): 0, (1, 0): 0, (0, 2): 0, (2, 0): 0, (2, 1): 0}


def test_describe_is_stable() -> None:
    assert describe(EVERY_KIND) == "\n".join(
        [
            "topics t0 (2 partitions), t1 (1 partition) by pattern; start at group offsets (t0[0]@4; fallback "
            "earliest); sink exactly-once, then at-least-once (no prefix set) (naming POOLING where the release "
            "has it); checkpoint every 200 ms; discovery as the release sets it",
            "run 1: write 12 to t0[0], write 6 to t0[1], write 5 to t1[0]; parallelism 2, no failure; stop after 4 "
            "records",
            "run 2: add 1 partition to t0, create t2 (2 partitions, matching the pattern), write 7 to t0[2], write 5 "
            "to t2[0], write 4 to t2[1], write 15 to t0[0], write 15 to t0[1], write 15 to t1[0]; parallelism 2, "
            "subtask 1 fails after 6 records (at record); read to the end",
            "run 3: write 10 to t0[1], write 3 to t2[1]; parallelism 3, no failure; stop after 8 records",
            "run 4: write 9 to t1[0]; parallelism 1, no failure; read to the end",
            "then transactions (5 to each of t1[0], t0[1], aborted; 3 to each of t0[1], aborted; 5 to each of t2[1], "
            "t0[0], committed); a fresh bounded job from the earliest offsets to the ends after the first "
            "transaction, parallelism 1, isolation.level not set, in BATCH mode, its sink exactly-once",
        ]
    )


def test_a_bounded_reader_is_drawn_from_the_schedule_itself_and_left_out_of_the_json_when_absent() -> None:
    """``with_reader`` changes nothing else (a seed's schedules and their refusals stay what they were), gives the
    same schedule the same reader, and a schedule without one has the JSON it had before readers existed (no
    ``reader`` key), which seeds ``with_refusal`` and ``with_reader``."""
    plain = replace(EVERY_KIND, reader=None)
    assert "reader" not in plain.to_json() and "reader" in EVERY_KIND.to_json()
    drawn = with_reader(plain)
    assert drawn.reader is not None and EVERY_KIND.reader is not None
    assert replace(drawn.reader, mode="BATCH", guarantee="exactly-once") == EVERY_KIND.reader  # run as a backfill
    assert replace(with_reader(plain), reader=None) == plain
    assert FlinkSchedule.loads(EVERY_KIND.dumps()) == EVERY_KIND
    reader = EVERY_KIND.reader
    assert reader is not None and 1 <= len(reader.transactions) <= MAX_TRANSACTIONS
    faulted = with_refusal(plain)
    assert with_reader(faulted).runs == faulted.runs  # the refusal is drawn before, from the JSON without a reader
    counts = EVERY_KIND.counts()
    assert counts["reader:stop at offsets"] == 1 and counts["reader:isolation unset"] == 1
    assert counts["reader:transaction aborted"] == 2 and counts["reader:transaction committed"] == 1


def test_partitions_added_while_running_are_drawn_from_the_schedule_only_at_a_short_interval() -> None:
    """``with_growth`` puts a ``Growth`` in the last run of a schedule whose source sets a short discovery interval
    (never one left to the release's five minutes), changes nothing else, and a run without one keeps its JSON."""
    plain = replace(EVERY_KIND, reader=None)
    assert with_growth(plain) == plain  # discovery left to the release
    assert all("growth" not in run for run in plain.to_json()["runs"])
    short = replace(plain, discovery_ms=1000)
    grown = with_growth(short)
    growth = grown.runs[-1].growth
    assert growth is not None and grown.problem() is None and with_growth(short) == grown
    assert replace(grown, runs=(*grown.runs[:-1], replace(grown.runs[-1], growth=None))) == short
    assert FlinkSchedule.loads(grown.dumps()) == grown
    t = growth.topic
    before = [3, 1, 2]  # t0 grew by one partition between runs, t2 was created
    assert grown.layout(3) == before and grown.layout(len(grown.runs))[t] == before[t] + growth.count
    assert set(grown.added()) >= {(t, p) for p in range(before[t], before[t] + growth.count)}
    assert grown.counts()["operator:add-partitions while running"] == 1
    assert f"added to t{t} while the job runs" in describe(grown).splitlines()[-1]


def test_drawn_readers_cover_both_stops_isolations_outcomes_modes_and_guarantees() -> None:
    seen: Counter[str] = Counter()
    for n in range(200):
        schedule = with_reader(replace(EVERY_KIND, reader=None, checkpoint_ms=100 + n))
        assert schedule.reader is not None and schedule.problem() is None
        assert FlinkSchedule.loads(schedule.dumps()) == schedule
        seen.update(k for k in schedule.counts() if k.startswith("reader:"))
    assert set(seen) == {
        "reader:stop at latest", "reader:stop at offsets", "reader:read_committed", "reader:isolation unset",
        "reader:transaction committed", "reader:transaction aborted", "reader:STREAMING", "reader:BATCH",
        *(f"reader:{m} sink {g}" for m in ("STREAMING", "BATCH") for g in ("none", "at-least-once", "exactly-once")),
    }  # fmt: skip
    assert 60 <= seen["reader:BATCH"] <= 140  # one in BATCH_ODDS = 2


def test_a_readers_mode_and_sink_are_drawn_last_and_a_default_reader_keeps_its_json() -> None:
    """``with_backfill`` draws only the reader's runtime mode and sink guarantee, from the schedule's JSON without
    its reader: the same schedule gets the same ones, the reader's other draws are what they were before it existed
    (its transactions, parallelism, isolation, stop), and a STREAMING at-least-once reader has no ``mode`` nor
    ``guarantee`` key, so its JSON is what it was."""
    plain = replace(EVERY_KIND, reader=None)
    reader = EVERY_KIND.reader
    assert reader is not None
    default = replace(reader, mode="STREAMING", guarantee="at-least-once")
    assert with_backfill(plain, default) == with_backfill(plain, default)
    assert replace(with_backfill(plain, default), mode="STREAMING", guarantee="at-least-once") == default
    kept = replace(EVERY_KIND, reader=default).to_json()["reader"]
    assert "mode" not in kept and "guarantee" not in kept
    assert set(kept) == {"transactions", "parallelism", "isolation", "stop"}
    batch = EVERY_KIND.to_json()["reader"]
    assert batch["mode"] == "BATCH" and batch["guarantee"] == "exactly-once"
    assert FlinkSchedule.loads(EVERY_KIND.dumps()) == EVERY_KIND
    none = replace(EVERY_KIND, reader=replace(reader, guarantee="none"))
    assert FlinkSchedule.loads(none.dumps()) == none and none.counts()["reader:BATCH sink none"] == 1
    assert EVERY_KIND.counts()["reader:BATCH"] == 1 and EVERY_KIND.counts()["reader:BATCH sink exactly-once"] == 1


BASE = EVERY_KIND


@pytest.mark.parametrize(
    ("changed", "named"),
    [
        ({"runs": (RunPlan(1),)}, "runs"),
        ({"runs": (*BASE.runs[:-1], RunPlan(1, stop_after=3))}, "last run"),
        ({"runs": (RunPlan(2, failure=Failure(2, 1)), *BASE.runs[1:])}, "failure of subtask 2"),
        ({"runs": (RunPlan(1, (Step("add-partitions", 0, count=1),)), *BASE.runs[1:])}, "add and create after"),
        ({"pattern": False}, "list subscription"),
        ({"held": (Held(0, 0, 12),)}, "not between"),
        ({"held": ()}, "holds an offset"),
        ({"start": "earliest", "fallback": None}, "held for a start at the earliest"),
        ({"start": "latest", "fallback": None}, "held for a start at the latest"),
        ({"start": "latest"}, "a group start has a fallback"),
        ({"runs": (RunPlan(2, BASE.runs[0].steps, stop_after=-1), *BASE.runs[1:])}, "stop after -1"),
        ({"fallback": None}, "a group start has a fallback"),
        ({"prefixed": False}, "every exactly-once one prefixed"),
        ({"more_sinks": (SinkPlan(True, prefixed=False),)}, "every exactly-once one prefixed"),
        ({"more_sinks": (SinkPlan(False),) * MAX_SINKS}, f"1 to {MAX_SINKS}"),
        ({"runs": (*BASE.runs[:-1], replace(BASE.runs[-1], refusal=Refusal(0, ((0, 0),), 3)))}, "not at-least-once"),
        ({"runs": (*BASE.runs[:-1], replace(BASE.runs[-1], refusal=Refusal(1, ((2, 0),), 3)))}, "partition the job"),
        ({"runs": (*BASE.runs[:-1], replace(BASE.runs[-1], refusal=Refusal(1, (), 3)))}, "partition the job"),
        ({"runs": (*BASE.runs[:-1], replace(BASE.runs[-1], refusal=Refusal(1, ((0, 0),), 0)))}, "records after"),
        (
            {"runs": (*BASE.runs[:2], replace(BASE.runs[2], refusal=Refusal(1, ((0, 0),), 3)), BASE.runs[3])},
            "reads to the end",
        ),
        (
            {"runs": (BASE.runs[0], replace(BASE.runs[1], refusal=Refusal(1, ((0, 0),), 3)), *BASE.runs[2:])},
            "no failure",
        ),
        (
            {"fallback": "latest", "runs": (*BASE.runs[:-1], replace(BASE.runs[-1], refusal=Refusal(1, ((0, 0),), 3)))},
            "not under a start at LATEST",
        ),
        ({"reader": Reader((), 1, None, "latest")}, "0 transactions: 1 to 3"),
        ({"runs": (*BASE.runs[:-1], replace(BASE.runs[-1], growth=Growth(0, 1, 3)))}, "short discovery interval"),
        (
            {"discovery_ms": 1000, "runs": (replace(BASE.runs[0], growth=Growth(0, 1, 3)), *BASE.runs[1:])},
            "in the last run alone",
        ),
        (
            {"discovery_ms": 1000, "runs": (*BASE.runs[:-1], replace(BASE.runs[-1], growth=Growth(0, 4, 3)))},
            "past 6 partitions",
        ),
        ({"reader": Reader((Transaction(((3, 0),), 2, True),), 1, None, "latest")}, "distinct partitions"),
        ({"reader": Reader((Transaction(((0, 0), (0, 0)), 2, True),), 1, None, "latest")}, "distinct partitions"),
        ({"reader": Reader((Transaction(((0, 0),), 0, True),), 1, None, "latest")}, "records each"),
        ({"reader": Reader((Transaction(((0, 0),), 2, True),), 5, None, "latest")}, "parallelism 5"),
        (
            {"reader": Reader((Transaction(((0, 0),), 2, True),), 1, None, "latest", "BULK")},  # type: ignore[arg-type]
            "mode 'BULK'",
        ),
        (
            {"reader": Reader((Transaction(((0, 0),), 2, True),), 1, None, "latest", "BATCH", "twice")},  # type: ignore[arg-type]
            "guarantee 'twice'",
        ),
        ({"runs": (replace(BASE.runs[0], moment="listed"), *BASE.runs[1:])}, "plain start at LATEST"),
        (
            {
                "start": "latest",
                "fallback": None,
                "held": (),
                "runs": (
                    *LATEST.runs[:2],
                    replace(LATEST.runs[2], moment="listed"),
                    LATEST.runs[3],
                ),
            },
            "the first run alone",
        ),
        ({"runs": (replace(BASE.runs[0], moment="soon"), *BASE.runs[1:])}, "moment 'soon'"),  # type: ignore[arg-type]
    ],
)
def test_a_schedule_the_runner_cannot_carry_out_is_refused_naming_why(changed: dict[str, object], named: str) -> None:
    fields = {name: getattr(BASE, name) for name in BASE.__dataclass_fields__}
    with pytest.raises(ValueError, match=named):
        FlinkSchedule(**(fields | changed))  # type: ignore[arg-type]
