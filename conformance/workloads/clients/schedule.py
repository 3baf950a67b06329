"""A client workload's schedule: pure data, drawn by Hypothesis, replayed from its JSON.

A ``Schedule`` names the topics it starts with, its producers and consumers (each with settings drawn from
the client release's own definitions, ``settings``) and a list of ``Step``s that one thread carries out in
order: what applications do (produce, run a transaction, flush, poll, commit, store an offset, pause, resume,
seek, close and reopen, stall), what operators do (add partitions, create a topic a pattern matches) and what
faults do (the broker restarted or killed and started again, a node paused; a fault may hold while the next steps
run, healed after them: ``Span``, derived from the schedule, see ``with_spans``). A drain ends every schedule:
every live consumer reads until it reached the end of what it owns, so the checkers can say what was read.

A member may join the group once the drain found it settled (``Late``, derived from the schedule: see ``with_late``):
another instance of one of its members' applications, started when the group caught up, that stays, or that is shut
down during its start (a rolled-back deploy, a killed pod) and closes before its first assignment; the drain then
waits for the group to converge again. Members may ask for the group's committed offsets of what they own after
each of their polls (``Schedule.asks``, derived from the schedule: see ``with_asks``).

Every step is valid in any state: a step for a closed consumer reopens nothing and is recorded as skipped, a
transaction step for a producer without a transactional id sends plain records. So Hypothesis can shrink a
failing schedule by deleting steps without making it meaningless.
"""

from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from enum import StrEnum
from typing import Any, Final, Literal

from hypothesis import strategies as st

from .settings import Setting, classic_protocol, drawn, values


class StepKind(StrEnum):
    PRODUCE = "produce"
    """``count`` records from producer ``client`` to ``topic`` (partition ``partition``, or the partitioner's
    choice when ``None``; keyed when ``keyed``), then serve its delivery reports without waiting."""
    TRANSACTION = "transaction"
    """A transaction of ``count`` records, committed or aborted (``mode``); plain sends without a transactional
    id."""
    FLUSH = "flush"
    POLL = "poll"
    """``Consumer.consume`` (batch of ``count``) or ``Consumer.poll`` (``mode``), waiting up to ``wait_ms``."""
    POLL_WHILE_PAUSED = "poll-while-paused"
    """A batch poll in a second thread, and from this one, once the consumer fetched more, a pause and resume of
    its partitions while that poll waits (what a source does when its engine backs off)."""
    COMMIT = "commit"
    """``mode``: sync or async commit of the consumed positions, or of the last record polled (``message``)."""
    STORE = "store"
    """``store_offsets`` of the consumer's positions (the offset alone, as a source that tracks them does)."""
    PAUSE = "pause"
    RESUME = "resume"
    """Of the partitions ``partition`` picks among those assigned (``None``: all), paused or not."""
    SEEK = "seek"
    """Partition ``partition`` of those assigned to ``mode``: beginning, end, or ``count`` records back."""
    CLOSE = "close"
    REOPEN = "reopen"
    """A closed consumer comes back as a new incarnation with its settings, group and subscription."""
    STALL = "stall"
    """The consumer stops polling until the next poll step for it (a stalled or dead application)."""
    COMMITTED = "committed"
    """``count`` successive asks for the group's committed offsets of the partitions the consumer owns
    (``Consumer.committed``, ``KafkaConsumer.committed(Set, Duration)``), each bounded by ``wait_ms``, as a lag
    monitor or a source that restores its positions asks; with ``mode`` ``beside``, the asks run on the consumer's
    own thread, one after another, for as long as the run takes to carry out the next step (another member joining
    or leaving, a wait while the group settles), at least ``count`` of them."""
    SUBSCRIBE = "subscribe"
    """A group member subscribes again, with the same callbacks, to ``mode``: ``topics`` (every topic of the run
    that exists now, as a list), ``pattern`` (the run's regex) or ``one`` (topic ``topic`` alone). An ``assign``
    consumer has no subscription: the step is noted as skipped."""
    WAIT = "wait"
    """``wait_ms`` pass while every consumer that is not stalled polls."""
    ADD_PARTITIONS = "add-partitions"
    CREATE_TOPIC = "create-topic"
    BROKER_RESTART = "broker-restart"
    """``mode``: clean (SIGTERM) or kill (SIGKILL), then started again on the same storage."""
    NODE_PAUSE = "node-pause"
    """The broker stopped (SIGSTOP) for ``wait_ms``, then resumed."""


CONSUMER_STEPS: Final = frozenset(
    {
        StepKind.POLL,
        StepKind.POLL_WHILE_PAUSED,
        StepKind.COMMIT,
        StepKind.STORE,
        StepKind.PAUSE,
        StepKind.RESUME,
        StepKind.SEEK,
        StepKind.CLOSE,
        StepKind.REOPEN,
        StepKind.STALL,
        StepKind.SUBSCRIBE,
        StepKind.COMMITTED,
    }
)
PRODUCER_STEPS: Final = frozenset({StepKind.PRODUCE, StepKind.TRANSACTION, StepKind.FLUSH})
FAULTS: Final = frozenset({StepKind.BROKER_RESTART, StepKind.NODE_PAUSE})
OPERATOR_STEPS: Final = frozenset({StepKind.ADD_PARTITIONS, StepKind.CREATE_TOPIC})


@dataclass(frozen=True)
class Step:
    kind: StepKind
    client: int = 0
    topic: int = 0
    partition: int | None = None
    count: int = 1
    mode: str = ""
    wait_ms: int = 0
    keyed: bool = False

    def text(self) -> str:
        fields = {k: v for k, v in asdict(self).items() if k != "kind" and v not in (None, "", False, 0)}
        return f"{self.kind.value}({', '.join(f'{k}={v}' for k, v in fields.items())})"


STORES: Final = ("", "message", "offset")
"""How a consumer's application stores offsets after each poll (``Discipline.store``): not at all (its ``store`` steps
alone), ``store_offsets(message=...)`` of the last record each partition delivered (the record's leader epoch with
it), or ``store_offsets(offsets=[TopicPartition(t, p, o + 1)])`` (the offset alone, as a source that tracks its
offsets does)."""
COMMITS: Final = ("", "sync", "async", "message")
"""How a consumer's application commits after each poll (``Discipline.commit``): not at all (its ``commit`` steps
alone), ``commit()`` synchronous or asynchronous (what it stored, else its positions), or from the last record
delivered (``commit(message=...)``)."""
OF_STORED: Final = ("sync", "async")
"""The commits that commit what the application stored (``commit()``): a consumer that stores offsets with auto-commit
off commits after each poll by one of them, else its stores would never reach the group."""
BACKOFF_ODDS: Final = 2
"""Of a backing-off consumer's plain batch polls, one in this many waits while it pauses and resumes (``backoff``)."""


@dataclass(frozen=True)
class Discipline:
    """What a consumer's application does around its polls, derived from the schedule (``with_discipline``), not
    drawn by Hypothesis: after each ``poll`` or ``poll-while-paused`` step that delivered records, it stores offsets
    (``store``) and then commits (``commit``); and some of its plain batch polls (``backoff``: indices into the
    schedule's steps) are carried out as a ``poll-while-paused`` of all it owns, as a source that backs off pauses
    and resumes its partitions while its poll thread waits."""

    store: str = ""
    commit: str = ""
    backoff: tuple[int, ...] = ()

    def text(self) -> str:
        parts = [f"store by {self.store}" if self.store else "", f"commit {self.commit}" if self.commit else ""]
        if self.backoff:
            steps = ", ".join(str(n + 1) for n in self.backoff)
            parts.append(f"back off at step{'s' if len(self.backoff) > 1 else ''} {steps}")
        return "; ".join(p for p in parts if p)

    def kinds(self) -> list[str]:
        """What it counts for in the report's coverage (``Schedule.counts``)."""
        return [
            *([f"store-{self.store}"] if self.store else []),
            *([f"commit-{self.commit}"] if self.commit else []),
            *(["backoff"] if self.backoff else []),
        ]


@dataclass(frozen=True)
class ConsumerPlan:
    settings: Mapping[str, str]
    subscribe: Literal["topics", "pattern", "assign"]
    """A group member subscribed to the schedule's topics or to its pattern, or a consumer assigned every
    partition of the first topic from its own group's stored offsets (no group membership). What a member starts
    with: a ``subscribe`` step changes it (the history's ``Subscribed`` events say what it was subscribed to when)."""
    topics: tuple[int, ...] = ()
    """Of a ``topics`` member: the schedule's starting topics it subscribes to first, by index (empty: every one).
    Members of one group may so start with different subscriptions, as applications that share a group id do."""
    discipline: Discipline = field(default_factory=Discipline)
    """What its application does around its polls (``with_discipline``); left out of the JSON when it does nothing."""

    def starts_with(self, topics: Sequence[str]) -> list[str]:
        """The topic names a ``topics`` member first subscribes to, of the schedule's ``topics``."""
        return [topics[i] for i in self.topics if i < len(topics)] or list(topics)


@dataclass(frozen=True)
class ProducerPlan:
    settings: Mapping[str, str]
    transactional: bool = False


def consumer_plan(data: Mapping[str, Any]) -> ConsumerPlan:
    """A consumer's plan from its JSON (``Schedule.to_json``), with its discipline when it has one."""
    discipline = data.get("discipline")
    return ConsumerPlan(
        dict(data["settings"]),
        data["subscribe"],
        tuple(data.get("topics", ())),
        Discipline() if discipline is None else Discipline(**{**discipline, "backoff": tuple(discipline["backoff"])}),
    )


@dataclass(frozen=True)
class Late:
    """A member that joins the group once the drain finds it settled: every partition owned and read to its end,
    every group converged. What a user does when an application's group has caught up and one more instance of it
    starts: the same settings and subscription as member ``of`` (``plan``, a copy of its drawn plan, so a schedule's
    JSON replays it alone). With ``brief_ms`` it is shut down during its start (a deploy rolled back, a pod killed):
    it opens, subscribes and polls, with every other member, until it is handed an assignment or ``brief_ms`` pass,
    then closes. The drain then goes on until the group has converged again (``driver.Run.drain``). No step
    addresses it; it is consumer ``len(consumers)`` of the run."""

    plan: ConsumerPlan
    of: int
    brief_ms: int | None = None

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Late:
        return cls(consumer_plan(data["plan"]), data["of"], data.get("brief_ms"))


@dataclass(frozen=True)
class Span:
    """A fault step (``FAULTS``) whose fault holds while later steps run, derived from the schedule (``with_spans``):
    the broker stopped (``broker-restart``) or paused (``node-pause``) at step ``step`` (an index into the schedule's
    steps), then started or resumed once the ``after`` steps that follow it are done, or once ``bound_ms`` passed since
    it began if that comes first (a step may wait on the broker: a synchronous commit, a close that leaves the group).
    So what applications do through an outage runs while the broker or the coordinator is down: a commit, a close, a
    subscribe, a poll, a send, a transaction. A fault step without a span is healed within its own step, as before."""

    step: int
    after: int
    bound_ms: int

    @property
    def last(self) -> int:
        """The index of the last step carried out while the fault holds; it is healed right after it."""
        return self.step + self.after


@dataclass(frozen=True)
class Schedule:
    partitions: Sequence[int]
    """Partitions of each topic created before the first step."""
    producers: Sequence[ProducerPlan]
    consumers: Sequence[ConsumerPlan]
    steps: Sequence[Step]
    faults: bool = True
    """Whether fault steps act (a broker the run may restart); recorded so a replay does the same."""
    late: Late | None = None
    """A member joining once the group settled (``Late``), derived from the rest (``with_late``)."""
    asks: Sequence[tuple[int, int]] = ()
    """Group members that ask for the group's committed offsets of what they own after each of their polls, each
    with its ask's bound in ms (``(consumer, bound_ms)``), derived from the rest (``with_asks``)."""
    spans: Sequence[Span] = ()
    """Fault steps whose fault holds while later steps run (``Span``), derived from the rest (``with_spans``)."""

    def to_json(self) -> dict[str, Any]:
        """Its fields; ``late`` only when there is one, and a consumer's ``discipline`` only when it does something,
        so a schedule without them keeps the JSON it had before either existed (``with_late`` and ``with_discipline``
        are seeded with it)."""
        found = asdict(self)
        if self.late is None:
            del found["late"]
        plans = [*found["consumers"], *([found["late"]["plan"]] if self.late is not None else [])]
        for consumer in plans:
            if consumer["discipline"] == asdict(Discipline()):
                del consumer["discipline"]
            else:
                consumer["discipline"]["backoff"] = list(consumer["discipline"]["backoff"])
        if not self.asks:
            del found["asks"]
        if not self.spans:
            del found["spans"]
        return found

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Schedule:
        return cls(
            tuple(data["partitions"]),
            tuple(ProducerPlan(dict(p["settings"]), p["transactional"]) for p in data["producers"]),
            tuple(consumer_plan(c) for c in data["consumers"]),
            tuple(Step(**{**s, "kind": StepKind(s["kind"])}) for s in data["steps"]),
            data.get("faults", True),
            None if data.get("late") is None else Late.from_json(data["late"]),
            tuple((int(c), int(b)) for c, b in data.get("asks", ())),
            tuple(Span(int(s["step"]), int(s["after"]), int(s["bound_ms"])) for s in data.get("spans", ())),
        )

    def dumps(self) -> str:
        return json.dumps(self.to_json(), sort_keys=True)

    def counts(self) -> dict[str, int]:
        """What the schedule draws, for the report's coverage: ``step:``/``operator:``/``fault:`` kinds (a fault
        step with a ``Span`` also as ``fault:<kind>-spanning``), ``setting:`` names and ``discipline:`` kinds
        (consumers with each; ``discipline:backoff-polls``, the polls carried out backing off), with counts."""
        found: dict[str, int] = {}
        for step in self.steps:
            group = "fault" if step.kind in FAULTS else "operator" if step.kind in OPERATOR_STEPS else "step"
            found[f"{group}:{step.kind.value}"] = found.get(f"{group}:{step.kind.value}", 0) + 1
        if self.late is not None:  # its settings are a member's, counted once
            found[LATE_BRIEF if self.late.brief_ms is not None else LATE_JOIN] = 1
        if self.asks:
            found[ASKS_IN_LOOP] = len(self.asks)
        for span in self.spans:
            key = f"fault:{self.steps[span.step].kind.value}-{SPANNING}"
            found[key] = found.get(key, 0) + 1
        plans: list[ProducerPlan | ConsumerPlan] = [*self.producers, *self.consumers]
        for plan in plans:
            for name in plan.settings:
                found[f"setting:{name}"] = found.get(f"setting:{name}", 0) + 1
        for consumer in self.consumers:
            for key in consumer.discipline.kinds():
                found[f"discipline:{key}"] = found.get(f"discipline:{key}", 0) + 1
            if consumer.discipline.backoff:
                found["discipline:backoff-polls"] = found.get("discipline:backoff-polls", 0) + len(
                    consumer.discipline.backoff
                )
        return found


GROUP_SETTINGS: Final = frozenset({"group.protocol", "partition.assignment.strategy"})
"""Drawn once per schedule for every consumer: the members of a group must agree on its protocol (Kafka refuses a
member whose assignors share none with the group's, INCONSISTENT_GROUP_PROTOCOL). Each is drawn in every schedule
(the release's default is one of the values), not in half of them as another setting is: they decide every
assignment the group makes, so each assignor meets every shape of group the draw makes (``group_settings``)."""
CLASSIC_GROUP_SETTINGS: Final = frozenset({"partition.assignment.strategy"})
"""Of ``GROUP_SETTINGS``, those of the classic protocol alone: its client-side assignors. A group of
``group.protocol=consumer`` (KIP 848) is assigned by the broker, and both clients refuse the setting there
(librdkafka: "`partition.assignment.strategy` is not supported for `group.protocol=consumer`"; kafka-clients 4.1:
"partition.assignment.strategy cannot be set when group.protocol=CONSUMER"), so it is drawn for classic groups only.
Drawn for every group, it had each release refuse the consumer protocol and the workload fall back to classic."""
WEIGHTS: Final[dict[StepKind, int]] = {
    StepKind.POLL: 6,
    StepKind.PRODUCE: 4,
    StepKind.TRANSACTION: 2,
    StepKind.COMMIT: 2,
    StepKind.WAIT: 2,
}
"""How much likelier than the other steps (1) a step is drawn: applications poll and produce far more often than
they seek, close or pause."""
SUBSCRIPTIONS: Final = ("topics", "pattern", "one")
"""What a ``subscribe`` step subscribes a member to (``StepKind.SUBSCRIBE``)."""
MIN_STEPS: Final = 6
MAX_TOPICS: Final = 3
MAX_PARTITIONS: Final = 3
MAX_MEMBERS: Final = 6
"""Group members of a schedule, drawn from none to this many with even odds: enough for a group where most members
own one partition each and the assignor weighs members of different subscriptions against each other. A member
starts subscribed to every topic, to the pattern, to one topic or to some of them (``ConsumerPlan.topics``).
Besides them, up to ``MAX_ASSIGNED`` consumers assigned by hand, at least one when the group has no member."""
MAX_ASSIGNED: Final = 1
MAX_STEPS: Final = 24
MAX_RECORDS: Final = 20
WAIT_MS: Final = (0, 3_000)
COMMITTED_BOUND_MS: Final = (0, 5_000)
"""A ``committed`` step's bound for each ask: none (0, an answer only if the client has one at once) to seconds."""
MAX_COMMITTED_ASKS: Final = 3
PAUSE_NODE_MS: Final = (500, 4_000)
"""Shorter than every drawn request timeout's floor, so a paused node delays clients and fails none of them."""


def step_strategy(producers: int, consumers: int, topics: int, faults: bool) -> st.SearchStrategy[Step]:
    producer = st.integers(0, producers - 1)
    consumer = st.integers(0, consumers - 1)
    topic = st.integers(0, topics - 1)
    partition = st.none() | st.integers(0, MAX_PARTITIONS - 1)
    choices: list[st.SearchStrategy[Step]] = [
        st.builds(
            Step,
            st.just(StepKind.PRODUCE),
            producer,
            topic,
            partition,
            st.integers(1, MAX_RECORDS),
            keyed=st.booleans(),
        ),
        st.builds(
            Step,
            st.just(StepKind.TRANSACTION),
            producer,
            topic,
            partition,
            st.integers(1, MAX_RECORDS),
            st.sampled_from(["commit", "abort"]),
        ),
        st.builds(Step, st.just(StepKind.FLUSH), producer),
        st.builds(
            Step,
            st.just(StepKind.POLL),
            consumer,
            count=st.integers(1, 100),
            mode=st.sampled_from(["consume", "poll"]),
            wait_ms=st.integers(0, 1_000),
        ),
        st.builds(Step, st.just(StepKind.POLL_WHILE_PAUSED), consumer, partition=partition, count=st.integers(1, 100)),
        st.builds(Step, st.just(StepKind.COMMIT), consumer, mode=st.sampled_from(["sync", "async", "message"])),
        st.builds(Step, st.just(StepKind.STORE), consumer),
        st.builds(Step, st.just(StepKind.PAUSE), consumer, partition=partition),
        st.builds(Step, st.just(StepKind.RESUME), consumer, partition=partition),
        st.builds(
            Step,
            st.just(StepKind.SEEK),
            consumer,
            partition=partition,
            count=st.integers(0, 5),
            mode=st.sampled_from(["beginning", "end", "back"]),
        ),
        st.builds(Step, st.just(StepKind.CLOSE), consumer),
        st.builds(Step, st.just(StepKind.REOPEN), consumer),
        st.builds(Step, st.just(StepKind.STALL), consumer),
        st.builds(Step, st.just(StepKind.SUBSCRIBE), consumer, topic, mode=st.sampled_from(SUBSCRIPTIONS)),
        st.builds(
            Step,
            st.just(StepKind.COMMITTED),
            consumer,
            count=st.integers(1, MAX_COMMITTED_ASKS),
            mode=st.sampled_from(["", "beside"]),
            wait_ms=st.integers(*COMMITTED_BOUND_MS),
        ),
        st.builds(Step, st.just(StepKind.WAIT), wait_ms=st.integers(*WAIT_MS)),
        st.builds(Step, st.just(StepKind.ADD_PARTITIONS), topic=topic, count=st.integers(1, 2)),
        st.builds(Step, st.just(StepKind.CREATE_TOPIC), count=st.integers(1, MAX_PARTITIONS)),
    ]
    if faults:
        choices += [
            st.builds(Step, st.just(StepKind.BROKER_RESTART), mode=st.sampled_from(["clean", "kill"])),
            st.builds(Step, st.just(StepKind.NODE_PAUSE), wait_ms=st.integers(*PAUSE_NODE_MS)),
        ]
    kinds = [StepKind.PRODUCE, StepKind.TRANSACTION, StepKind.FLUSH, StepKind.POLL, StepKind.POLL_WHILE_PAUSED,
             StepKind.COMMIT, StepKind.STORE, StepKind.PAUSE, StepKind.RESUME, StepKind.SEEK, StepKind.CLOSE,
             StepKind.REOPEN, StepKind.STALL, StepKind.SUBSCRIBE, StepKind.COMMITTED, StepKind.WAIT,
             StepKind.ADD_PARTITIONS, StepKind.CREATE_TOPIC, StepKind.BROKER_RESTART, StepKind.NODE_PAUSE]  # fmt: skip
    by_kind = dict(zip(kinds, choices, strict=False))  # without faults, the last kinds have no strategy
    # A kind is drawn first, from a list that holds it WEIGHTS times, then its step: st.one_of over repeats of one
    # strategy would not weigh it (Hypothesis drops a branch it already has, by identity). Hypothesis leans to a
    # list's first element (its simplest), so the heaviest kinds come first and that lean falls on a poll.
    ordered = sorted(by_kind, key=lambda kind: -WEIGHTS.get(kind, 1))
    weighted = [kind for kind in ordered for _ in range(WEIGHTS.get(kind, 1))]
    return st.sampled_from(weighted).flatmap(by_kind.__getitem__)


def group_settings(catalogue: Sequence[Setting]) -> st.SearchStrategy[dict[str, str]]:
    """The settings every member of a schedule's group shares (``GROUP_SETTINGS`` the release has): the protocol,
    then, for a classic group, its assignors (``CLASSIC_GROUP_SETTINGS``); a release without ``group.protocol`` has
    classic groups alone and draws its assignors in every schedule."""
    chosen = {s.name: s for s in catalogue if s.name in GROUP_SETTINGS}
    protocol = chosen.pop("group.protocol", None)
    if protocol is None:
        return st.fixed_dictionaries({name: values(s) for name, s in chosen.items()})

    def rest(value: str) -> st.SearchStrategy[dict[str, str]]:
        classic = classic_protocol(value)
        return st.fixed_dictionaries(
            {
                protocol.name: st.just(value),
                **{name: values(s) for name, s in chosen.items() if classic or name not in CLASSIC_GROUP_SETTINGS},
            }
        )

    return values(protocol).flatmap(rest)


@st.composite
def schedules(
    draw: st.DrawFn, catalogue: Sequence[Setting], faults: bool = True, max_steps: int = MAX_STEPS
) -> Schedule:
    """A schedule over the settings ``catalogue`` (the release's, ``settings.known_to``); fault steps only when
    ``faults`` (a broker the run may restart and pause)."""
    partitions = draw(st.lists(st.integers(1, MAX_PARTITIONS), min_size=1, max_size=MAX_TOPICS))
    producers = draw(st.lists(st.builds(ProducerPlan, drawn("P", catalogue), st.booleans()), min_size=1, max_size=2))
    group = draw(group_settings(catalogue))
    member = [s for s in catalogue if s.name not in GROUP_SETTINGS]
    own = drawn("C", member).map(lambda own: {**own, **group})
    topic = st.integers(0, len(partitions) - 1)
    some = st.lists(topic, min_size=1, max_size=len(partitions), unique=True).map(lambda chosen: tuple(sorted(chosen)))
    starts = st.just(()) | topic.map(lambda one: (one,)) | some
    member_plan = st.builds(ConsumerPlan, own, st.just("topics"), starts) | st.builds(
        ConsumerPlan, own, st.just("pattern")
    )
    size = draw(st.integers(0, MAX_MEMBERS), label="group members")
    members = draw(st.lists(member_plan, min_size=size, max_size=size))
    assigned = draw(
        st.lists(st.builds(ConsumerPlan, own, st.just("assign")), min_size=0 if size else 1, max_size=MAX_ASSIGNED)
    )
    consumers = draw(st.permutations([*members, *assigned]))
    steps = draw(
        st.lists(
            step_strategy(len(producers), len(consumers), len(partitions), faults),
            min_size=min(MIN_STEPS, max_steps),
            max_size=max_steps,
        )
    )
    base = Schedule(tuple(partitions), tuple(producers), tuple(consumers), tuple(steps), faults)
    # each derived from the drawn schedule alone, so that none moves another
    disciplined, late, asks = with_discipline(base), with_late(base).late, with_asks(base).asks
    spans = with_spans(base).spans
    if late is not None:
        late = replace(late, plan=disciplined.consumers[late.of])  # its discipline too
    return replace(disciplined, late=late, asks=asks, spans=spans)


def as_drawn(schedule: Schedule) -> Schedule:
    """The schedule as Hypothesis drew it, without what is derived from it (its consumers' disciplines, its late
    member, its members' asks, its faults' spans): what seeds each derivation, so that none moves another and each
    gives the same whether the others were derived before it or not."""
    plain = tuple(replace(c, discipline=Discipline()) for c in schedule.consumers)
    return replace(schedule, consumers=plain, late=None, asks=(), spans=())


LATE_SALT: Final = b"late member\n"
"""Prefixed to the schedule's JSON as drawn (``as_drawn``) to seed ``with_late``."""
LATE_SHARE: Final = 3 / 4
"""The share of schedules with a group that get a late member (``with_late``)."""
BRIEF_SHARE: Final = 1 / 2
"""Of those, the share whose late member is shut down during its start (``Late.brief_ms``)."""
BRIEF_MS: Final = (0, 3_000)
"""A brief late member's longest start: from a close right after its subscribe to about as long as a new member's
first join into a settled group takes (every member rejoins at its next heartbeat, 1 s at the workload's default,
and a cooperative group rebalances twice)."""
LATE_JOIN: Final = "step:late-join"
LATE_BRIEF: Final = "step:late-brief"
"""``Schedule.counts``'s names for a late member that stays and one shut down during its start."""


def with_late(schedule: Schedule) -> Schedule:
    """``schedule``, in ``LATE_SHARE`` of those with a group member, with a ``Late`` member: a copy of a member's
    plan (the same settings and subscription, as another instance of that application is), in ``BRIEF_SHARE`` of
    them brief, closing within 0 to ``BRIEF_MS`` of its start.

    Derived from the schedule itself (a generator seeded with ``LATE_SALT`` and its JSON), as the Flink workload's
    ``with_refusal`` is, not drawn from Hypothesis's choices: one more ``draw`` at the end of a schedule moves every
    later schedule of a seed (seed 1 kept its first 3 of 10 on kafka-clients 3.2.1), and the
    bank's entries and ``make test`` rest on a seed's early schedules. So a seed draws the schedules it drew before,
    some now with a late member; a schedule's JSON replays it with its late member. The seed is the JSON: a field
    added to ``Schedule`` changes it and so moves every late member, unless a schedule without the new choice keeps
    its JSON (leave the field out of ``to_json`` at its default)."""
    members = [i for i, c in enumerate(schedule.consumers) if c.subscribe != "assign"]
    if not members or schedule.late is not None:
        return schedule
    rng = random.Random(hashlib.sha256(LATE_SALT + as_drawn(schedule).dumps().encode()).digest())
    if rng.random() >= LATE_SHARE:
        return schedule
    of = rng.choice(members)
    brief = rng.randint(*BRIEF_MS) if rng.random() < BRIEF_SHARE else None
    return replace(schedule, late=Late(schedule.consumers[of], of, brief))


DISCIPLINE_SALT: Final = b"application discipline\n"
"""Prefixed to the schedule's JSON as drawn (``as_drawn``) to seed ``with_discipline``."""


def with_discipline(schedule: Schedule) -> Schedule:
    """``schedule`` with each consumer's ``Discipline``, each part only where its drawn settings make it meaningful:
    a ``store`` (by message or by offset) only with ``enable.auto.offset.store=false`` (librdkafka's; kafka-clients
    has no offset store, so never there), a ``commit`` after each poll (sync, async, from the record) only with
    ``enable.auto.commit=false`` (and then, after a store, one that commits the stored offsets: ``OF_STORED``), and
    for one consumer in two a ``backoff`` at each of its plain batch polls
    (``consume``) with odds ``1/BACKOFF_ODDS``. Each choice may also be none, so a discipline also leaves a consumer
    to its drawn steps alone.

    Derived from the schedule itself (a generator seeded with ``DISCIPLINE_SALT`` and its JSON), not from Hypothesis's
    choices, as the Flink workload's ``with_refusal`` is: a choice more at the end of a schedule would move every later
    schedule of a seed, and the bank's entries and ``make test`` rest on a seed's early schedules. So a seed draws the
    schedules it drew before, some consumers now with a discipline; a schedule's JSON replays it with its
    disciplines (``to_json`` leaves a consumer's out when it does nothing, so the seed is the JSON as drawn). Every
    choice is drawn whatever the settings allow, so one consumer's settings never move another's discipline."""
    rng = random.Random(hashlib.sha256(DISCIPLINE_SALT + as_drawn(schedule).dumps().encode()).digest())
    consumers = []
    for index, plan in enumerate(schedule.consumers):
        store, commit, backs_off = rng.choice(STORES), rng.choice(COMMITS), rng.randrange(2) == 0
        of_stored = rng.choice(OF_STORED)
        polls = [
            n
            for n, step in enumerate(schedule.steps)
            if step.kind is StepKind.POLL
            and step.client % len(schedule.consumers) == index
            and step.mode in ("", "consume")
        ]
        chosen = tuple(n for n in polls if rng.randrange(BACKOFF_ODDS) == 0)
        store = store if plan.settings.get("enable.auto.offset.store") == "false" else ""
        if plan.settings.get("enable.auto.commit") != "false":
            commit = ""  # auto-commit commits (what it stored)
        elif store and commit not in OF_STORED:
            commit = of_stored  # a store is for a commit of the stored offsets: with auto-commit off, its own
        discipline = Discipline(store, commit, chosen if backs_off else ())
        consumers.append(replace(plan, discipline=discipline))
    return replace(schedule, consumers=tuple(consumers))


ASKS_SALT: Final = b"asks in the poll loop\n"
"""Prefixed to the schedule's JSON as drawn (``as_drawn``) to seed ``with_asks``."""
ASKER_SHARE: Final = 1 / 2
"""The share of group members that ask in their poll loop (``with_asks``), each decided on its own: as likely as
not, an application checks its lag or restores its positions from the group's offsets."""
ASK_BOUNDS_MS: Final = ((0, 0), (1, 10), (100, 1_000))
"""An asking member's bound for each ask, from one of these ranges with even odds: none (an answer only if the
client has one at once, the request left in flight), a few milliseconds (the answer of a local broker, or the
request left in flight when it is slower), or long enough for any answer."""
ASKS_IN_LOOP: Final = "step:committed-in-poll-loop"
"""``Schedule.counts``'s name for the members that ask in their poll loop."""


def with_asks(schedule: Schedule) -> Schedule:
    """``schedule`` with members that ask for the group's committed offsets of what they own right after each of
    their polls (``Schedule.asks``): an application that checks its lag in its poll loop, or a source that restores
    its positions from the group's whenever it is handed partitions. Each group member asks with odds
    ``ASKER_SHARE``, with a bound drawn from ``ASK_BOUNDS_MS``; a late member asks as the member it copies does.

    So a request for the committed offsets is in flight at every moment a member's polls meet: just after a poll
    that served an assignment (when the client fetches the new partitions' committed offsets itself, to start
    them), and while the group's epoch or generation moves (the late member's join and leave, a subscription
    change, partitions added), which a ``committed`` step, drawn at a step of its own, meets rarely.

    Derived as ``with_late`` is, from a generator seeded with ``ASKS_SALT`` and the schedule's JSON as drawn
    (``as_drawn``: without its disciplines, late member and asks), not drawn from Hypothesis's choices: a seed
    draws the schedules it drew before, each with the late member it had, some now with members that ask; a
    schedule without asks keeps its JSON."""
    members = [i for i, c in enumerate(schedule.consumers) if c.subscribe != "assign"]
    if not members or schedule.asks:
        return schedule
    rng = random.Random(hashlib.sha256(ASKS_SALT + as_drawn(schedule).dumps().encode()).digest())
    askers = [i for i in members if rng.random() < ASKER_SHARE]
    return replace(schedule, asks=tuple((i, rng.randint(*rng.choice(ASK_BOUNDS_MS))) for i in askers))


def asks_bound_ms(schedule: Schedule, consumer: int) -> int | None:
    """The bound of consumer ``consumer``'s asks after each of its polls, or ``None`` when it does not ask; the
    late member (consumer ``len(consumers)``) asks as the member it copies."""
    late = schedule.late
    if late is not None and consumer == len(schedule.consumers):
        consumer = late.of
    return dict(schedule.asks).get(consumer)


SPANS_SALT: Final = b"faults that span steps\n"
"""Prefixed to the schedule's JSON as drawn (``as_drawn``) to seed ``with_spans``."""
SPAN_SHARE: Final = 3 / 4
"""The share of fault steps whose fault holds while later steps run (``Span``); the rest heal within their step."""
MAX_SPANNED: Final = 4
"""Most steps a fault spans (``Span.after``), drawn from 1 to this, fewer where the steps end or the next fault
comes first."""
OUTAGE_MS: Final = (1_000, 10_000)
"""A spanning fault's longest hold (``Span.bound_ms``) before it is healed whatever the steps do: long enough for a
request to time out (librdkafka's LeaveGroup waits 5 s; the drawn request timeouts start at 1 s), short enough that
a call waiting on the broker returns well within the driver's bound past the heal (``driver.CALL_SLACK_S``)."""
SPANNING: Final = "spanning"
"""``Schedule.counts``'s suffix for a fault step with a span (``fault:broker-restart-spanning``)."""


def with_spans(schedule: Schedule) -> Schedule:
    """``schedule`` with ``SPAN_SHARE`` of its fault steps spanning the next 1 to ``MAX_SPANNED`` steps (``Span``),
    each held at most ``OUTAGE_MS``: never past the last step (every fault is healed before the drain) nor onto the
    next fault step (one fault at a time: the next begins once this one is healed), so a fault step that is last, or
    right before another, spans nothing. Only where the schedule's faults act (``Schedule.faults``).

    Derived as ``with_late`` is, from a generator seeded with ``SPANS_SALT`` and the schedule's JSON as drawn
    (``as_drawn``), not drawn from Hypothesis's choices: a seed draws the schedules it drew before, and those with a
    fault step now may hold its fault over the steps after it; a schedule without a fault step, or without faults,
    keeps its JSON (no ``spans``). Every choice is made for every fault step, so one's clamp never moves another's."""
    if schedule.spans or not schedule.faults:
        return schedule
    at = [n for n, step in enumerate(schedule.steps) if step.kind in FAULTS]
    if not at:
        return schedule
    rng = random.Random(hashlib.sha256(SPANS_SALT + as_drawn(schedule).dumps().encode()).digest())
    spans = []
    for n, following in zip(at, [*at[1:], len(schedule.steps)], strict=True):
        spans_it, after, bound_ms = rng.random() < SPAN_SHARE, rng.randint(1, MAX_SPANNED), rng.randint(*OUTAGE_MS)
        after = min(after, following - n - 1)
        if spans_it and after > 0:
            spans.append(Span(n, after, bound_ms))
    return replace(schedule, spans=tuple(spans))


def span_at(schedule: Schedule, step: int) -> Span | None:
    """The span of the fault step at index ``step``, if it spans any."""
    return next((s for s in schedule.spans if s.step == step), None)


def describe(schedule: Schedule) -> str:
    """The schedule as a reader follows it: clients with their drawn settings, then the steps in order."""
    lines = [f"topics: {', '.join(f't{i} ({n} partitions)' for i, n in enumerate(schedule.partitions))}"]
    for i, p in enumerate(schedule.producers):
        kind = "transactional producer" if p.transactional else "producer"
        lines.append(f"p{i}: {kind} {dict(p.settings)}")
    for i, c in enumerate(schedule.consumers):
        start = f" t{', t'.join(map(str, c.topics))}" if c.topics else ""
        how = c.discipline.text()
        lines.append(f"c{i}: {c.subscribe}{start} {dict(c.settings)}" + (f"; discipline: {how}" if how else ""))
    if schedule.late is not None:
        late, n = schedule.late, len(schedule.consumers)
        when = f"closes after {late.brief_ms} ms or its first assignment" if late.brief_ms is not None else "stays"
        lines.append(f"c{n}: as c{late.of}, joins in the drain once the group settled, {when}")
    lines += [
        f"c{c}: asks for the committed offsets of what it owns after each poll, bounded by {b} ms"
        for c, b in schedule.asks
    ]
    for n, step in enumerate(schedule.steps, 1):
        span = span_at(schedule, n - 1)
        lines.append(f"{n:3}. {step.text()}")
        if span is not None:
            lines[-1] += (
                f", held over the next {span.after} step{'s' if span.after > 1 else ''}: healed after step "
                f"{span.last + 1} or {span.bound_ms} ms, whichever comes first"
            )
    return "\n".join(lines)
