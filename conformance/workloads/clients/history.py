"""What a client workload's run records: events in the order they happened, then what the log holds.

Clients are named ``p<i>`` (producers) and ``c<i>#<incarnation>`` (consumers; a reopened consumer is a new
incarnation). Every record a producer sends carries a value unique in the run (``p<i>-<n>``), so a record read
anywhere is known by its value. ``seq`` orders events across clients: one thread runs the steps, and callbacks
(deliveries, rebalances, commits) are recorded as the client serves them, each under one lock.

The ``Log`` is read after the drain by a fresh consumer per isolation level: every data record of every
partition from its log start, and which offsets ``read_committed`` returns.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Final

from ....reference_impl.types import TopicPartition

Offsets = tuple[tuple[TopicPartition, int], ...]


@dataclass(frozen=True)
class Event:
    seq: int
    client: str
    at: float
    """Seconds since the run started (the run's monotonic clock)."""


@dataclass(frozen=True)
class Sent(Event):
    value: bytes
    topic: str
    partition: int | None
    txn: int | None = None
    """The producer's transaction number, for a record sent inside one."""


@dataclass(frozen=True)
class Acked(Event):
    value: bytes
    tp: TopicPartition | None
    offset: int | None
    """``None`` when the broker acknowledged without an offset (``acks=0``) or the send failed."""
    error: str | None = None


@dataclass(frozen=True)
class TxnEnded(Event):
    txn: int
    outcome: str
    """``commit`` or ``abort``: what the application asked."""
    error: str | None = None
    """The call failed: the transaction's fate is unknown to the application (``abortable``: it then aborted)."""


@dataclass(frozen=True)
class Polled(Event):
    records: tuple[tuple[TopicPartition, int, bytes | None], ...]
    eofs: tuple[tuple[TopicPartition, int], ...] = ()
    positions: Offsets = ()
    """The consumer's position, right after the poll, of each partition that reported its end in it."""
    errors: tuple[str, ...] = ()


@dataclass(frozen=True)
class Assigned(Event):
    tps: tuple[TopicPartition, ...]
    how: str
    """``assign`` (eager), ``incremental`` (cooperative or the consumer protocol) or ``manual``."""
    generation: int | None = None
    """The member's group generation as its client stood when it served this callback (``member_generation``);
    ``None`` where the client does not say (kafka-clients' harness, a manual assignment)."""


@dataclass(frozen=True)
class Revoked(Event):
    tps: tuple[TopicPartition, ...]
    lost: bool = False
    generation: int | None = None
    """As ``Assigned.generation``."""


@dataclass(frozen=True)
class Subscribed(Event):
    """A group member's ``subscribe`` call (its first one when it opens, and each ``subscribe`` step's): it now
    wants ``topics`` or, when ``pattern`` is set, every topic the regex matches. Its group hands it partitions of
    these from its next rebalance on."""

    topics: tuple[str, ...] = ()
    pattern: str | None = None

    def covers(self, topic: str) -> bool:
        return covers((self.pattern,) if self.pattern is not None else self.topics, topic)


def covers(subscription: Sequence[str], topic: str) -> bool:
    """Whether a subscription (topic names, or one regex starting with ``^``, as ``subscribe`` takes it) takes in
    ``topic``."""
    if subscription and subscription[0].startswith("^"):
        return re.match(subscription[0], topic) is not None
    return topic in subscription


@dataclass(frozen=True)
class Seeked(Event):
    tp: TopicPartition
    offset: int | None
    """The offset sought; ``None`` for the end (resolved by the client)."""
    error: str | None = None


@dataclass(frozen=True)
class Committed(Event):
    group: str
    offsets: Offsets
    """What the commit asked for (a sync commit's answer, or an ``on_commit`` callback's partitions)."""
    error: str | None = None
    ambiguous: bool = False
    """The commit failed in a way that does not say whether the coordinator applied it (a timeout)."""
    stored: Offsets = ()
    """For a commit of stored offsets: the offsets stored since the group's last commit, which it must commit."""
    failed: tuple[tuple[TopicPartition, int, str, bool], ...] = ()
    """The partitions the commit's answer gave an error for, kept as data (not in ``offsets``): each with the offset
    the commit asked for, the error, and whether that error leaves it open whether the coordinator applied the commit
    (a timeout, a lost connection). A commit that failed as a whole with no per-partition answer (kafka-clients'
    exception, confluent-kafka's error for the call) lists each partition it asked for with that error where the
    offsets asked are known."""


@dataclass(frozen=True)
class FetchedCommitted(Event):
    """A consumer's ask for its group's committed offsets of the partitions it owned (a ``committed`` step), recorded
    when the ask returned: what it said of each partition, or the error the whole ask failed with."""

    group: str
    tps: tuple[TopicPartition, ...]
    """The partitions asked for."""
    offsets: tuple[tuple[TopicPartition, int | None], ...] = ()
    """Each partition's committed offset as the answer gave it; ``None`` where it said the group has none
    (confluent-kafka's ``OFFSET_INVALID``, kafka-clients' ``null``). A partition the answer failed is in ``failed``."""
    failed: tuple[tuple[TopicPartition, str], ...] = ()
    """Partitions the answer gave an error for instead of an offset."""
    error: str | None = None
    """The ask failed as a whole (a timeout, the coordinator's error)."""
    retriable: bool = False
    """The whole ask's error says the ask may be retried (``KafkaError.retriable()``, ``RetriableException``)."""
    since: int = 0
    """The ``seq`` the next event had when the ask began: events with a lower one happened before it."""
    bound_s: float = 0.0
    """The ask's own bound (its ``timeout``)."""
    took_s: float = 0.0


@dataclass(frozen=True)
class Stored(Event):
    offsets: Offsets
    error: str | None = None
    by: str = ""
    """How the application stored them: ``""`` the positions, by a ``store`` step; ``message`` or ``offset`` its
    discipline after a poll (``schedule.Discipline.store``: the record, with its leader epoch, or the offset alone)."""


@dataclass(frozen=True)
class Paused(Event):
    tps: tuple[TopicPartition, ...]
    resumed: bool = False


@dataclass(frozen=True)
class Closed(Event):
    pass


@dataclass(frozen=True)
class Hung(Event):
    call: str
    bound_s: float


@dataclass(frozen=True)
class Crashed(Event):
    """The process that ran the schedule's clients died before the run ended (``isolated``): killed by a signal
    (librdkafka's failed assertion aborts, a bad access segfaults) or exited on its own. Recorded by the suite's
    process, client ``run``, after the last event the dead one streamed (``at`` is that event's: the death came
    after). Every client of the run died with it; the events before it are all that happened, the log was read
    after it."""

    how: str
    """``SIGABRT (signal 6)``, or ``exit code 3``."""
    signal: int | None
    exit_code: int | None
    last: tuple[tuple[str, str, bool, float], ...] = ()
    """Each client's (and the run's, ``run``) last call as the process began it: the client, the call, whether it
    was still under way when the process died, and when it began (the run's clock)."""
    stderr: str = ""
    """The end of what the process wrote to its standard error (a failed assertion's line, Python's stack of the
    thread that died)."""


@dataclass(frozen=True)
class Failed(Event):
    """A client's fatal error, after which the client instance cannot go on and must be made anew.

    A consumer's: librdkafka raised one (``KafkaError.fatal()``, delivered to its ``error_cb`` or as a consumed error
    event; rdkafka.h, ``rd_kafka_fatal_error``). kafka-clients' consumer exceptions carry no such flag, so its
    consumers record none.

    A producer's: librdkafka's, which confluent-kafka raises from ``poll`` or ``flush`` in place of calling the
    ``error_cb``, or a call or a delivery report that failed with an error ``fatal()`` says is one (an idempotent or
    transactional producer's, ``rd_kafka_idemp_set_fatal_error``, ``rd_kafka_txn_set_fatal_error``). kafka-clients':
    a call or a delivery report that failed while the producer's ``TransactionManager`` was in its fatal error state,
    as the harness reads it after the failure (the state in which KafkaProducer's javadoc says the only option is to
    close the producer), or, where the harness cannot read it, an exception of the classes that javadoc calls fatal
    (``jvm_clients.JAVA_PRODUCER_FATAL``)."""

    error: str
    call: str = ""
    """Which call reported it: ``error_cb``, ``poll`` (a consumer's error event, a producer's raised fatal error),
    ``flush``, ``delivery`` (a delivery report), or the call that failed (``produce``, ``init_transactions``,
    ``commit_transaction``, ...); empty in a history from before it was recorded."""


@dataclass(frozen=True)
class Note(Event):
    """What the run did that is not a client's (a fault, a topic change) or what it could not do (a step skipped,
    settings the release refused), for the report's timeline."""

    text: str


FAULT_NOTE: Final = "broker "
"""How a ``Note`` of the run begins that says a fault began ("broker restarting (kill)", "broker paused for 2000 ms")
or was healed ("broker restarted (kill)", "broker resumed"): the checkers read the faults' times from these."""
HEALED_WORDS: Final = ("restarted", "resumed")


@dataclass(frozen=True)
class Fault:
    """A suite fault of the run, from its notes: when it began and when it was healed (the broker answered again)."""

    began: float
    healed: float
    what: str


def faults(events: Sequence[Event]) -> list[Fault]:
    """The run's faults in order. A restart noted only when it was done (a history from before its start was noted)
    began, as far as the history shows, when it was healed."""
    found: list[Fault] = []
    began: tuple[float, str] | None = None
    for event in events:
        if not isinstance(event, Note) or event.client != "run" or not event.text.startswith(FAULT_NOTE):
            continue
        words = event.text.removeprefix(FAULT_NOTE)
        if words.startswith(HEALED_WORDS):
            start, what = began if began is not None else (event.at, words)
            found.append(Fault(start, event.at, what))
            began = None
        elif words.startswith(("restarting", "paused")):
            began = (event.at, words)
    if began is not None:  # never healed as far as the history shows: in force to its end
        found.append(Fault(began[0], float("inf"), began[1]))
    return found


@dataclass(frozen=True)
class ClientInfo:
    settings: Mapping[str, str]
    group: str | None = None
    subscribe: str = ""
    """``topics``, ``pattern`` or ``assign`` for a consumer (what it starts with: ``Subscribed`` events say what a
    member is subscribed to over time); empty for a producer."""
    transactional: bool = False
    """A producer with a transactional id (and so idempotent)."""
    transactional_id: str = ""
    """That id (empty in a history from before it was recorded): a later producer with the same one fences this."""
    defaults: Mapping[str, str] = field(default_factory=dict)
    """The client release's own defaults, for the settings not drawn (librdkafka's and kafka-clients' differ:
    ``isolation.level`` is read_committed in one, read_uncommitted in the other)."""
    eager: bool | None = None
    """Of a group member: whether its release's rebalance callbacks hand it whole assignments (``rebalances_eagerly``
    at its release), as the driver that ran it knew; ``None``: read from its settings alone."""
    discipline: str = ""
    """Of a consumer: what its application does around its polls (``schedule.Discipline.text``), empty for none."""

    @property
    def producer(self) -> bool:
        """Whether this is a producer: one with no ``subscribe`` (every consumer starts with topics, a pattern or an
        assignment)."""
        return not self.subscribe


LIBRDKAFKA_CONSUMER_PROTOCOL_COOPERATIVE: Final = (2, 10, 0)
"""The first librdkafka whose ``group.protocol=consumer`` members always rebalance cooperatively. Before it
(2.4.0, KIP 848's early access, to 2.8.0), ``rd_kafka_cgrp_rebalance_protocol`` answered such a member by its own
``partition.assignment.strategy`` (``rk_conf.partition_assignors_cooperative``): EAGER at the default
``range,roundrobin``, so confluent-kafka handed it whole assignments (``assign``, clearing the one before) with no
revoke. cb9fb3672 (#4993, first in v2.10.0) dropped the setting for that protocol and answers COOPERATIVE."""


def rebalances_eagerly(group_protocol: str, strategies: str, librdkafka: tuple[int, ...] | None = None) -> bool:
    """Whether a group member rebalances eagerly: a classic group (``group.protocol``) whose assignors
    (``partition.assignment.strategy``, librdkafka's names or kafka-clients' classes) are not all cooperative. Its
    assignment callback hands it its whole new assignment, which replaces the one before (librdkafka's
    ``rd_kafka_cgrp_assign`` clears the old one; rdkafka.h: an eager assignor's application "must use
    rd_kafka_assign() to set or clear the entire assignment"; kafka-clients' ``onPartitionsAssigned`` gets "the full
    assignment" under the classic protocol). A cooperative member's callbacks add and remove partitions. A member of
    ``group.protocol=consumer`` is cooperative, except on a ``librdkafka`` (version) before
    ``LIBRDKAFKA_CONSUMER_PROTOCOL_COOPERATIVE``, where its assignors decide as in a classic group."""
    if group_protocol.strip().lower() == "consumer" and (
        librdkafka is None or librdkafka >= LIBRDKAFKA_CONSUMER_PROTOCOL_COOPERATIVE
    ):
        return False
    names = [s.strip().lower() for s in strategies.split(",") if s.strip()]
    return not names or not all("cooperative" in s for s in names)


@dataclass(frozen=True)
class Log:
    records: Mapping[TopicPartition, Sequence[tuple[int, bytes | None]]]
    """Every data record (``read_uncommitted``) of every partition, from its log start, by offset."""
    committed: Mapping[TopicPartition, frozenset[int]]
    """The offsets of those ``read_committed`` returns."""
    ends: Mapping[TopicPartition, int] = field(default_factory=dict)
    """Each partition's high watermark when the log was read."""
    group_offsets: Mapping[str, Mapping[TopicPartition, int]] = field(default_factory=dict)
    """Each group's committed offsets after the drain."""
    stable_ends: Mapping[TopicPartition, int] = field(default_factory=dict)
    """Each partition's last stable offset when the log was read (``read_committed``'s end): below its high
    watermark, an open transaction still held the partition back, and whether the records from there on are
    committed could not be read (a partition it lacks is read as stable up to its high watermark)."""

    def held_back(self) -> dict[TopicPartition, tuple[int, int]]:
        """The partitions an open transaction still held back when the log was read: ``(stable end, end)``."""
        return {
            tp: (stable, self.ends[tp])
            for tp, stable in sorted(self.stable_ends.items())
            if tp in self.ends and stable < self.ends[tp]
        }


@dataclass(frozen=True)
class GroupView:
    """A consumer group at the end of the drain: what the broker said of it (an admin's describe) beside what its
    live members' own callbacks gave each of them."""

    group: str
    protocol: str
    """``classic`` or ``consumer`` (its members' ``group.protocol``)."""
    state: str
    """The state the broker described (``STABLE``, ``PREPARING_REBALANCE``, ...; ``RECONCILING`` and
    ``ASSIGNING`` of a consumer-protocol group as the admin names them), or empty when it could not describe it."""
    described: tuple[tuple[str, tuple[TopicPartition, ...]], ...] = ()
    """Each member the broker described: its client and member id, and its assignment."""
    members: tuple[tuple[str, tuple[TopicPartition, ...]], ...] = ()
    """Each live member of the run: its name and the partitions its callbacks left it owning."""
    changes: tuple[tuple[float, str, int], ...] = ()
    """Each change of the described state over the drain: when (the run's clock), the state, how many members."""
    last_callback_at: float | None = None
    """When a live member's callback last changed what it owns (the group's last progress its members saw)."""
    subscribed: tuple[TopicPartition, ...] = ()
    """Every partition of the topics its live members subscribe to (names, or the pattern's matches), as the broker
    listed them when the drain last described the group."""

    @property
    def converged(self) -> bool:
        """The broker says the group is stable, with exactly the run's live members, each with what it owns."""
        return self.state == "STABLE" and sorted(sorted(a) for _, a in self.described) == sorted(
            sorted(a) for _, a in self.members
        )


@dataclass(frozen=True)
class Unstarted:
    """A partition a live consumer owned at the end of the drain, with records past where it would start (the
    group's committed offset, else the log start at an earliest reset), of which it had delivered nothing, had no
    position and no end-of-partition event since it was handed it, and which it had not sought."""

    client: str
    tp: TopicPartition
    start: int
    """Where the consumer would start: the group's committed offset, else the partition's log start."""
    end: int
    """The partition's end at the consumer's isolation level."""
    owned_since: float
    """When the consumer was handed the partition (the run's clock)."""


@dataclass(frozen=True)
class Convergence:
    """How the drain ended for the groups (LIVE-001 ``never-converged``, ``owned-never-started``): within
    ``bound_s``, the group's own time-outs and the suite's slack, every live group stable with its live members
    (``GroupView.converged``) and every owned partition with records to read started by its owner."""

    bound_s: float
    why: str
    """How ``bound_s`` follows from the members' settings."""
    waited_s: float
    groups: tuple[GroupView, ...] = ()
    unstarted: tuple[Unstarted, ...] = ()
    unjudged: str = ""
    """Why the wait judged nothing (the admin could not describe a group, the broker did not answer, the driver
    polled a member more seldom than its poll interval allows); empty when it judged."""
    suite_fault: bool = False
    """``unjudged`` is the suite's or the broker's doing for this schedule (could-not-check: ERROR), not a lack of
    the run's admin client (PARTIAL)."""
    began_at: float | None = None
    """When the drain began (the run's clock): the callbacks from then on are the rebalances the drain saw."""

    @property
    def converged(self) -> bool:
        return all(g.converged for g in self.groups) and not self.unstarted


@dataclass(frozen=True)
class History:
    events: Sequence[Event]
    clients: Mapping[str, ClientInfo]
    """Producers by name (``p0``) and consumers by name without incarnation (``c0``)."""
    log: Log
    drained: bool = True
    """The drain reached the end of every partition the live consumers own (otherwise the checkers that need a
    finished read say nothing)."""
    read_to_end: Mapping[str, frozenset[TopicPartition]] = field(default_factory=dict)
    """By group: the partitions a live member owned and had read to the end when the drain finished."""
    drain_ends: Mapping[str, Mapping[TopicPartition, int]] = field(default_factory=dict)
    """By group: where each partition's reader found its end (at its isolation level) when the drain finished; a
    transaction that ended after that (its markers written late, after a broker restart) is not what it read to."""
    convergence: Convergence | None = None
    """How the groups stood when the drain ended (``None``: a history from before it was recorded)."""

    def info_of(self, client: str) -> ClientInfo | None:
        """What was recorded of ``client`` (an incarnation, ``c0#1``, or a client, ``p0``) when it opened."""
        return self.clients.get(client.split("#", 1)[0])

    def consumer(self, client: str) -> ClientInfo:
        return self.clients[client.split("#", 1)[0]]
