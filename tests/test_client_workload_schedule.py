"""The client workload's schedules draw their step kinds as ``WEIGHTS`` says, and each group's protocol with the
settings that protocol takes."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import replace
from typing import Final

import pytest
from hypothesis import HealthCheck, Phase, given, seed, settings
from hypothesis import strategies as st

from kconform.conformance.workloads.clients import schedule as schedule_module
from kconform.conformance.workloads.clients.jvm_clients import catalogue as java_catalogue
from kconform.conformance.workloads.clients.schedule import (
    ASK_BOUNDS_MS,
    ASKER_SHARE,
    ASKS_IN_LOOP,
    BRIEF_MS,
    BRIEF_SHARE,
    GROUP_SETTINGS,
    LATE_BRIEF,
    LATE_JOIN,
    LATE_SHARE,
    MAX_SPANNED,
    OUTAGE_MS,
    SPAN_SHARE,
    SPANNING,
    WEIGHTS,
    ConsumerPlan,
    Discipline,
    Late,
    ProducerPlan,
    Schedule,
    Span,
    Step,
    StepKind,
    as_drawn,
    asks_bound_ms,
    describe,
    group_settings,
    schedules,
    with_asks,
    with_discipline,
    with_late,
    with_spans,
)
from kconform.conformance.workloads.clients.settings import catalogue

DRAWN = 300


def test_step_kinds_follow_their_weights_with_polls_first() -> None:
    """Each kind WEIGHTS times as likely as a kind of weight 1 (polls a little more: Hypothesis leans to the first
    of a list, and polls are first). Drawn with st.one_of over repeated strategies, the weights did nothing
    (Hypothesis keeps one of identical branches) and produce, the first branch, took what polls were to have."""
    kinds: Counter[StepKind] = Counter()

    @settings(max_examples=DRAWN, database=None, deadline=None, suppress_health_check=list(HealthCheck))
    @given(schedules(catalogue()))
    def draw(schedule: Schedule) -> None:
        kinds.update(step.kind for step in schedule.steps)

    draw()
    ones = [k for k in StepKind if WEIGHTS.get(k, 1) == 1]
    assert all(kinds[k] > 0 for k in StepKind), f"a kind never drawn in {DRAWN} schedules: {kinds}"
    mean_one = sum(kinds[k] for k in ones) / len(ones)
    assert kinds.most_common(1)[0][0] == StepKind.POLL, kinds
    for kind, weight in WEIGHTS.items():  # at least half its weight's share, never less than a weight-1 kind
        assert kinds[kind] >= weight * mean_one / 2, (kind, kinds[kind], mean_one)


def group_of(schedule: Schedule) -> dict[str, str]:
    """The settings the schedule's consumers share (``group_settings``), from its first consumer."""
    first = schedule.consumers[0].settings
    return {name: first[name] for name in GROUP_SETTINGS if name in first}


@pytest.mark.parametrize("release", ["librdkafka", "kafka-clients"])
def test_a_consumer_protocol_group_has_no_client_side_assignor_and_a_classic_group_always_has_one(release: str) -> None:
    """Both protocols are drawn; a classic group draws its assignors, a group of ``group.protocol=consumer`` none (the
    broker assigns, and both clients refuse the setting there, which made every drawn consumer group classic)."""
    drawn_from = catalogue() if release == "librdkafka" else java_catalogue()
    seen: Counter[str] = Counter()

    @settings(max_examples=DRAWN, database=None, deadline=None, suppress_health_check=list(HealthCheck))
    @given(schedules(drawn_from))
    def draw(schedule: Schedule) -> None:
        group = group_of(schedule)
        protocol = group["group.protocol"]
        seen[protocol] += 1
        assert ("partition.assignment.strategy" in group) == (protocol == "classic"), group
        assert all(group_of(replace(schedule, consumers=(c,))) == group for c in schedule.consumers)

    draw()
    assert seen["classic"] > DRAWN / 5 and seen["consumer"] > DRAWN / 5, seen


def test_a_release_without_group_protocol_draws_its_assignors_for_every_group() -> None:
    """A release older than KIP 848 (kafka-clients 3.1, no ``group.protocol``) has classic groups alone: every
    schedule draws their assignors, as before the protocol came."""
    older = tuple(s for s in java_catalogue() if s.name != "group.protocol")

    @settings(max_examples=100, database=None, deadline=None, suppress_health_check=list(HealthCheck))
    @given(group_settings(older))
    def draw(group: dict[str, str]) -> None:
        assert set(group) == {"partition.assignment.strategy"}, group

    draw()


def test_a_late_member_is_derived_from_the_rest_of_its_schedule_as_a_copy_of_one_of_its_members() -> None:
    """``with_late``: a schedule with a group member gets a late member in about ``LATE_SHARE`` of draws, in about
    ``BRIEF_SHARE`` of those brief; a schedule with none never. The late member is the schedule without it given to
    ``with_late`` again (nothing else in the draw decides it), its plan a member's (never ``assign``), its brief
    time within ``BRIEF_MS``; the schedule's JSON gives it back, and without one the JSON has no ``late`` at all
    (the seed of ``with_late``, and what it was before late members existed); counts and description name it."""
    seen: Counter[str] = Counter()

    @settings(max_examples=DRAWN, database=None, deadline=None, suppress_health_check=list(HealthCheck))
    @given(schedules(catalogue()))
    def draw(schedule: Schedule) -> None:
        before = as_drawn(schedule)  # each derivation starts from it
        assert "late" not in before.to_json() and with_late(before).late == (
            None if schedule.late is None else replace(schedule.late, plan=before.consumers[schedule.late.of])
        )
        assert Schedule.from_json(json.loads(schedule.dumps())) == schedule
        members = [c for c in schedule.consumers if c.subscribe != "assign"]
        late = schedule.late
        seen["group"] += bool(members)
        if late is None:
            assert LATE_JOIN not in schedule.counts() and LATE_BRIEF not in schedule.counts()
            return
        assert members and late.plan == schedule.consumers[late.of] and late.plan.subscribe != "assign"
        assert "late" in schedule.to_json() and f"as c{late.of}, joins in the drain" in describe(schedule)
        if late.brief_ms is None:
            seen["stays"] += 1
            assert schedule.counts()[LATE_JOIN] == 1 and LATE_BRIEF not in schedule.counts()
        else:
            seen["brief"] += 1
            assert BRIEF_MS[0] <= late.brief_ms <= BRIEF_MS[1] and schedule.counts()[LATE_BRIEF] == 1

    draw()
    late = seen["stays"] + seen["brief"]
    assert abs(late / seen["group"] - LATE_SHARE) < 0.12, seen
    assert abs(seen["brief"] / late - BRIEF_SHARE) < 0.15, seen


@pytest.mark.parametrize("brief_ms", [None, 0, 1500])
def test_a_schedule_s_json_replays_its_late_member(brief_ms: int | None) -> None:
    """Stay or brief, the late member comes back from the schedule's JSON with its plan, the member it copies and
    its time; a JSON written before late members existed (no ``late``) reads as a schedule without one."""
    member = ConsumerPlan({"partition.assignment.strategy": "cooperative-sticky"}, "topics", (1,))
    plain = Schedule((1, 2), (ProducerPlan({}),), (ConsumerPlan({}, "assign"), member), ())
    late = replace(plain, late=Late(member, 1, brief_ms))
    assert Schedule.from_json(json.loads(late.dumps())) == late
    assert Schedule.from_json(json.loads(plain.dumps())) == plain and "late" not in json.loads(plain.dumps())
    assert json.loads(late.dumps())["late"] == {"plan": json.loads(plain.dumps())["consumers"][1], "of": 1,
                                                "brief_ms": brief_ms}  # fmt: skip


def seed_1_schedules() -> list[Schedule]:
    """Seed 1's first 20 schedules, drawn as the suite test draws them."""
    found: list[Schedule] = []

    @seed(1)
    @settings(
        max_examples=20,
        database=None,
        deadline=None,
        phases=[Phase.explicit, Phase.reuse, Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @given(data=st.data())
    def draw(data: st.DataObject) -> None:
        found.append(data.draw(schedules(catalogue()), label="schedule"))

    draw()
    return found


def without_disciplines(schedule: Schedule) -> Schedule:
    plain = tuple(replace(c, discipline=Discipline()) for c in schedule.consumers)
    late = schedule.late
    return replace(
        schedule, consumers=plain, late=late and replace(late, plan=replace(late.plan, discipline=Discipline()))
    )


DERIVED: Final = {
    "with_late": (lambda s: replace(s, late=None), lambda s: s.late is not None),
    "with_discipline": (without_disciplines, lambda s: any(c.discipline != Discipline() for c in s.consumers)),
    "with_asks": (lambda s: replace(s, asks=()), lambda s: bool(s.asks)),
    "with_spans": (lambda s: replace(s, spans=()), lambda s: bool(s.spans)),
}
"""Each derivation of ``schedules``: the schedule without what it derives, and whether a schedule has any of it."""


@pytest.mark.parametrize("derivation", sorted(DERIVED))
def test_a_seed_draws_the_schedules_it_drew_before_each_derivation_existed(
    monkeypatch: pytest.MonkeyPatch, derivation: str
) -> None:
    """Seed 1's schedules are the same with and without each derivation (the late member, the consumers'
    disciplines, the asks) but for what it derives, the others' included: it is derived, not drawn, so no schedule
    of a seed moves (one more draw at each schedule's end kept seed 1's first 3 of 10 alone)."""
    without, has = DERIVED[derivation]
    now = seed_1_schedules()
    with monkeypatch.context() as patched:
        patched.setattr(schedule_module, derivation, lambda schedule: schedule)
        before = seed_1_schedules()
    assert [without(s) for s in now] == before
    assert any(has(s) for s in now) and not any(has(s) for s in before)


@pytest.mark.parametrize("release", ["librdkafka", "kafka-clients"])
def test_disciplines_are_derived_from_the_schedule_where_its_settings_make_them_meaningful(release: str) -> None:
    """Each consumer's discipline is what ``with_discipline`` derives from the schedule as drawn, which keeps its
    JSON (a discipline that does nothing is left out), so a seed's schedules stay what they were; a schedule's JSON
    replays it with its disciplines. A store only with enable.auto.offset.store=false (never for kafka-clients, which
    has no offset store), a commit after each poll only with enable.auto.commit=false, a back-off only at that
    consumer's own plain batch polls. Over the draws each discipline occurs (store only for librdkafka)."""
    drawn_from = catalogue() if release == "librdkafka" else java_catalogue()
    seen: Counter[str] = Counter()

    @settings(max_examples=DRAWN, database=None, deadline=None, suppress_health_check=list(HealthCheck))
    @given(schedules(drawn_from))
    def draw(schedule: Schedule) -> None:
        plain = as_drawn(schedule)  # each derivation starts from it
        assert with_discipline(plain) == replace(schedule, late=None, asks=(), spans=())
        assert with_discipline(schedule) == schedule  # whatever else was derived before it
        assert all("discipline" not in c for c in plain.to_json()["consumers"])
        assert Schedule.from_json(json.loads(schedule.dumps())) == schedule
        for index, consumer in enumerate(schedule.consumers):
            discipline = consumer.discipline
            if discipline.store:
                assert consumer.settings.get("enable.auto.offset.store") == "false", consumer.settings
            if discipline.commit:
                assert consumer.settings.get("enable.auto.commit") == "false", consumer.settings
            if discipline.store and consumer.settings.get("enable.auto.commit") == "false":
                assert discipline.commit in ("sync", "async"), discipline  # its stores reach the group
            for n in discipline.backoff:
                step = schedule.steps[n]
                assert (step.kind, step.client % len(schedule.consumers), step.mode) == (
                    StepKind.POLL,
                    index,
                    "consume",
                )
        seen.update(k for k in schedule.counts() if k.startswith("discipline:"))

    draw()
    kinds = {f"discipline:{k}" for k in ("commit-sync", "commit-async", "commit-message", "backoff")}
    stores = {"discipline:store-message", "discipline:store-offset"}
    assert kinds <= set(seen), seen
    assert (stores <= set(seen)) if release == "librdkafka" else not (stores & set(seen)), seen


def test_a_discipline_moves_with_the_schedule_it_is_derived_from_and_is_counted() -> None:
    """The derivation is the schedule's: the same schedule derives the same disciplines, and a schedule that differs
    in one step derives its own (a generator seeded with its JSON, not a fixed choice); each discipline is counted."""
    member = ConsumerPlan({"enable.auto.offset.store": "false", "enable.auto.commit": "false"}, "topics")
    polls = tuple(Step(StepKind.POLL, 0, count=n, mode="consume") for n in range(1, 9))
    derived = [with_discipline(Schedule((1,), (), (member,) * 4, polls[:k])) for k in range(1, 9)]
    assert with_discipline(Schedule((1,), (), (member,) * 4, polls)) == derived[-1]
    assert len({tuple(c.discipline for c in s.consumers) for s in derived}) > 1
    for schedule in derived:
        counts = schedule.counts()
        for consumer in schedule.consumers:
            for kind in consumer.discipline.kinds():
                assert counts[f"discipline:{kind}"] >= 1
        assert counts.get("discipline:backoff-polls", 0) == sum(len(c.discipline.backoff) for c in schedule.consumers)


def test_members_that_ask_in_their_poll_loop_are_derived_from_the_rest_of_their_schedule() -> None:
    """``with_asks``: about ``ASKER_SHARE`` of group members ask after each poll, never a consumer assigned by hand;
    each bound lies in one of ``ASK_BOUNDS_MS``'s ranges, and each range is drawn. The asks are the schedule without
    them given to ``with_asks`` again (its late member does not decide them), the JSON gives them back and has no
    ``asks`` without them; a late member asks as the member it copies; counts and description name them."""
    seen: Counter[str] = Counter()
    ranges: Counter[int] = Counter()

    @settings(max_examples=DRAWN, database=None, deadline=None, suppress_health_check=list(HealthCheck))
    @given(schedules(catalogue()))
    def draw(schedule: Schedule) -> None:
        before = replace(schedule, asks=())
        assert "asks" not in before.to_json() and with_asks(before) == schedule
        assert with_asks(replace(before, late=None)).asks == schedule.asks
        assert Schedule.from_json(json.loads(schedule.dumps())) == schedule
        members = [i for i, c in enumerate(schedule.consumers) if c.subscribe != "assign"]
        seen["members"] += len(members)
        if not schedule.asks:
            assert ASKS_IN_LOOP not in schedule.counts()
            return
        askers = [c for c, _ in schedule.asks]
        assert askers and set(askers) <= set(members) and len(set(askers)) == len(askers)
        seen["askers"] += len(askers)
        for c, bound in schedule.asks:
            (which,) = [n for n, (low, high) in enumerate(ASK_BOUNDS_MS) if low <= bound <= high]
            ranges[which] += 1
            assert asks_bound_ms(schedule, c) == bound
            assert f"c{c}: asks for the committed offsets of what it owns after each poll" in describe(schedule)
        assert schedule.counts()[ASKS_IN_LOOP] == len(askers)
        late = schedule.late
        if late is not None:
            assert asks_bound_ms(schedule, len(schedule.consumers)) == asks_bound_ms(schedule, late.of)

    draw()
    assert abs(seen["askers"] / seen["members"] - ASKER_SHARE) < 0.1, seen
    assert all(ranges[n] > 0 for n in range(len(ASK_BOUNDS_MS))), ranges


def test_a_schedule_s_json_replays_its_asking_members() -> None:
    """The asks come back from the schedule's JSON; a JSON written before them (no ``asks``) reads as none."""
    member = ConsumerPlan({}, "topics")
    plain = Schedule((1,), (ProducerPlan({}),), (member, member), ())
    asking = replace(plain, asks=((1, 7),), late=Late(member, 1))
    assert Schedule.from_json(json.loads(asking.dumps())) == asking and json.loads(asking.dumps())["asks"] == [[1, 7]]
    assert "asks" not in json.loads(plain.dumps()) and Schedule.from_json(json.loads(plain.dumps())).asks == ()
    assert asks_bound_ms(asking, 0) is None and asks_bound_ms(asking, 1) == 7 and asks_bound_ms(asking, 2) == 7


def test_fault_steps_span_the_steps_after_them_as_derived_from_the_schedule_and_are_healed_before_the_drain() -> None:
    """``with_spans``: about ``SPAN_SHARE`` of fault steps that can span hold their fault over the next 1 to
    ``MAX_SPANNED`` steps, never past the last step (healed before the drain) nor onto the next fault step, each held
    at most a bound in ``OUTAGE_MS``. The spans are the schedule without them given to ``with_spans`` again (nothing
    else derived decides them), a schedule without a fault step or without faults has none and keeps its JSON, the
    JSON gives them back, and counts and description name them."""
    seen: Counter[str] = Counter()
    lengths: Counter[int] = Counter()

    @settings(max_examples=DRAWN, database=None, deadline=None, suppress_health_check=list(HealthCheck))
    @given(schedules(catalogue()))
    def draw(schedule: Schedule) -> None:
        unfaulted = replace(as_drawn(schedule), faults=False)  # a broker the run may not restart: no span
        assert with_spans(unfaulted) == unfaulted and "spans" not in unfaulted.to_json()
        before = replace(schedule, spans=())
        assert "spans" not in before.to_json() and with_spans(before) == schedule
        assert with_spans(as_drawn(schedule)).spans == schedule.spans
        assert Schedule.from_json(json.loads(schedule.dumps())) == schedule
        at = [n for n, s in enumerate(schedule.steps) if s.kind in schedule_module.FAULTS]
        room = [n for n, m in zip(at, [*at[1:], len(schedule.steps)], strict=False) if m - n > 1]
        seen["fault steps with room"] += len(room)
        for span in schedule.spans:
            assert span.step in at and 1 <= span.after <= MAX_SPANNED
            assert span.last < len(schedule.steps), "healed by the end of the steps, before the drain"
            assert not [n for n in at if span.step < n <= span.last], "onto the next fault"
            assert OUTAGE_MS[0] <= span.bound_ms <= OUTAGE_MS[1]
            kind = schedule.steps[span.step].kind.value
            assert schedule.counts()[f"fault:{kind}-{SPANNING}"] >= 1
            assert f"healed after step {span.last + 1} or {span.bound_ms} ms" in describe(schedule)
            seen[kind] += 1
            lengths[span.after] += 1
        seen["spans"] += len(schedule.spans)

    draw()
    assert abs(seen["spans"] / seen["fault steps with room"] - SPAN_SHARE) < 0.12, seen
    assert seen["broker-restart"] and seen["node-pause"], seen
    assert set(lengths) == set(range(1, MAX_SPANNED + 1)), lengths


def test_a_schedule_s_json_replays_its_spanning_faults() -> None:
    """The spans come back from the schedule's JSON; a JSON written before them (no ``spans``) reads as none."""
    steps = (Step(StepKind.BROKER_RESTART, mode="kill"), Step(StepKind.CLOSE, 0), Step(StepKind.POLL, 0))
    plain = Schedule((1,), (ProducerPlan({}),), (ConsumerPlan({}, "topics"),), steps)
    spanning = replace(plain, spans=(Span(0, 2, 4_000),))
    assert Schedule.from_json(json.loads(spanning.dumps())) == spanning
    assert json.loads(spanning.dumps())["spans"] == [{"step": 0, "after": 2, "bound_ms": 4_000}]
    assert "spans" not in json.loads(plain.dumps()) and Schedule.from_json(json.loads(plain.dumps())).spans == ()
    assert spanning.counts()["fault:broker-restart-spanning"] == 1 and "fault:broker-restart-spanning" not in (
        plain.counts()
    )
