"""Running a client workload's schedule with confluent-kafka on a real broker, and recording its history.

The one I/O module of the workload. One thread carries out the steps in order; every call into a client runs
on that client's own daemon thread and is awaited for a bound (``CALL_SLACK_S`` past what the call itself may
wait), so a call that never returns is recorded as ``Hung`` with its schedule instead of hanging the suite.
A hung client takes no further steps. Callbacks (deliveries, rebalances, commits) are recorded as the client
serves them.

``Clients`` is the port: the real one builds ``confluent_kafka`` producers and consumers; the tests' broken
clients (``kconform.conformance.mutants.clients``) wrap them to show each checker catches its anomaly.
"""

from __future__ import annotations

import contextlib
import queue
import re
import sys
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import partial
from typing import Any, Final, Protocol, TypeVar
from uuid import uuid4

import confluent_kafka as ck

from ....reference_impl.kafka_client import KafkaClient, wait_until
from ....reference_impl.ports import Isolation, KafkaError, Record
from ....reference_impl.types import TopicPartition
from ...librdkafka import libversion
from .history import (
    FAULT_NOTE,
    Acked,
    Assigned,
    ClientInfo,
    Closed,
    Committed,
    Convergence,
    Event,
    Failed,
    FetchedCommitted,
    GroupView,
    History,
    Hung,
    Log,
    Note,
    Paused,
    Polled,
    Revoked,
    Seeked,
    Sent,
    Stored,
    Subscribed,
    TxnEnded,
    Unstarted,
    covers,
    rebalances_eagerly,
)
from .schedule import ConsumerPlan, Late, Schedule, Span, Step, StepKind, asks_bound_ms, span_at
from .settings import CLASSIC_GROUP_ONLY, catalogue, classic_group

T = TypeVar("T")
CALL_SLACK_S: Final = 30.0
"""How much longer than it may wait by itself a client call may take before it counts as hung: a rebalance
callback, a coordinator lookup after a restart, a commit retried through a node pause."""
CLOSE_BOUND_S: Final = 30.0
HEAL_WAIT_S: Final = 150.0
"""How long past a spanning fault's hold (``schedule.Span.bound_ms``) the run waits for it to be healed: a broker
node started again and listed in the metadata (``KafkaBroker``'s start bound, 90 s) with room to spare. A fault not
healed by then is the harness's failure (``BrokerStartError``), never the client's."""
STABLE_WITHIN_S: Final = 75.0
"""How long the log's read waits for every partition's last stable offset to reach its high watermark: a
transaction left open (its producer hung or killed) is aborted by the coordinator at its ``transaction.timeout.ms``
(drawn up to 60 s) on its next scan for expired ones (every 10 s by default)."""
DRAIN_SLACK_S: Final = 25.0
"""The drain may take the longest drawn poll interval or session timeout (a stalled member waited out) and this."""
CONVERGE_SLACK_S: Final = 30.0
"""Past the group's own time-outs (``Run.convergence_bound``), how long the drain still waits for its groups to
converge: a coordinator loading after a restart, a join and a sync round trip or two, a slow machine."""
POLL_INTERVAL_MS: Final = 300_000
"""``max.poll.interval.ms`` where neither the draw nor the client release's stated defaults give one (librdkafka's
and kafka-clients' default: CONFIGURATION.md, ``ConsumerConfig``)."""
CONSUMER_SESSION_MS: Final = 45_000
"""A ``group.protocol=consumer`` member's session, which the broker sets (``group.consumer.session.timeout.ms``,
45 s by default: Kafka's ``GroupCoordinatorConfig``; the suite's brokers leave it)."""
EXAMPLE_BOUND_S: Final = 90.0 + STABLE_WITHIN_S
"""The longest one schedule takes here: its steps (a wait, a node pause, a restart), the drain's bound, the log read
(90 s), and the log read's wait for a transaction left open to be timed out (``driver.STABLE_WITHIN_S``). A drain
whose groups do not converge waits longer (``driver.Run.convergence_bound``: a librdkafka member's default poll
interval alone is 300 s), so the suite test's bound gives that to two schedules (a failing one and Hypothesis's replay
of it: ``CONVERGE_BOUND_S``)."""
CONVERGE_BOUND_S: Final = (POLL_INTERVAL_MS + CONSUMER_SESSION_MS) / 1000 + CONVERGE_SLACK_S
SCHEDULE_BOUND_S: Final = EXAMPLE_BOUND_S + CONVERGE_BOUND_S
"""The longest one schedule's child process may run (``isolated.run_isolated``): one schedule and a drain that
waits its groups out. A child still running then is killed, LIVE-001 ``hang``."""
LATE_BOUND_S: Final = CONVERGE_BOUND_S
"""What a schedule's late member (``Schedule.late``) adds to its bound: the drain waits for the groups to converge
once more after it joined (and, brief, left), as long as before at most. The suite test's bound gives it to two
schedules, as ``CONVERGE_BOUND_S``."""


def schedule_bound_s(schedule: Schedule) -> float:
    """The longest ``schedule``'s run may take (its child process's bound in ``isolated.run_isolated``): one
    schedule and a drain that waits its groups out, and its late member's share."""
    return SCHEDULE_BOUND_S + (LATE_BOUND_S if schedule.late else 0)


DESCRIBE_EVERY_S: Final = 1.0
"""How often the drain asks the broker how its groups stand."""
NO_START: Final = frozenset({"error", "none"})
"""``auto.offset.reset`` values (librdkafka's, kafka-clients') under which a consumer starts nothing the group has
no offset for."""
EARLIEST_RESET: Final = frozenset({"smallest", "earliest", "beginning"})
FETCHED_WAIT_S: Final = 3.0
HELD_MAX: Final = 10
"""At most this many records are written while a ``poll-while-paused`` step's poll waits (fewer than its batch)."""
BESIDE_ASKS: Final = 2_000
"""Most asks a ``committed`` step makes beside the next step (each one an event of the history)."""
PARTITION_EOF: Final = ck.KafkaError._PARTITION_EOF
SESSION_MS: Final = 6_000
CONSUMER_DEFAULTS: Final[Mapping[str, str]] = {"session.timeout.ms": str(SESSION_MS), "heartbeat.interval.ms": "1000"}
"""The workload's own defaults where librdkafka's would stall every draw (a classic group's join waits half the
session timeout, 45 s by default: SUBSTRATE.md); a drawn value replaces them. Not for ``group.protocol=consumer``,
whose session the broker sets (librdkafka refuses both there)."""
AMBIGUOUS: Final = frozenset(
    {ck.KafkaError._TIMED_OUT, ck.KafkaError.REQUEST_TIMED_OUT, ck.KafkaError._TRANSPORT, ck.KafkaError._MSG_TIMED_OUT}
)
"""Commit errors after which the coordinator may or may not have applied the commit."""
NAMED_SETTING: Final = re.compile(r'"([a-z][a-z0-9._]+)"|`([a-z][a-z0-9._]+)`|\b([a-z]+(?:\.[a-z]+)+)\b(?!=)')
"""A setting a client's refusal names; not one it states with its value, which says why the named one is refused
(``group.protocol`` in "`session.timeout.ms` is not supported for `group.protocol=consumer`")."""


class HungCall(Exception):
    """A client call outlived its bound."""


class Worker:
    """A daemon thread that runs one client's calls, each awaited for a bound (a hung call keeps its thread; being
    a daemon, it never keeps the interpreter alive)."""

    def __init__(self, name: str) -> None:
        self._calls: queue.SimpleQueue[tuple[Callable[[], Any], queue.SimpleQueue[tuple[bool, Any]]]] = (
            queue.SimpleQueue()
        )
        threading.Thread(target=self._serve, name=f"kconform-workload-{name}", daemon=True).start()

    def _serve(self) -> None:
        while True:
            call, answer = self._calls.get()
            try:
                answer.put((True, call()))
            except BaseException as error:
                answer.put((False, error))

    def submit(self, call: Callable[[], Any]) -> queue.SimpleQueue[tuple[bool, Any]]:
        """Queue ``call`` on the thread and return where its answer will be, without waiting for it."""
        answer: queue.SimpleQueue[tuple[bool, Any]] = queue.SimpleQueue()
        self._calls.put((call, answer))
        return answer

    def call(self, call: Callable[[], T], bound_s: float) -> T:
        answer = self.submit(call)
        try:
            ok, result = answer.get(timeout=bound_s)
        except queue.Empty:
            raise HungCall from None
        if not ok:
            raise result
        return result  # type: ignore[no-any-return]


class Clients(Protocol):
    """How the driver gets its clients (the real confluent-kafka, or a broken one wrapping it)."""

    def consumer(self, config: dict[str, Any]) -> ck.Consumer: ...

    def producer(self, config: dict[str, Any]) -> ck.Producer: ...


class RealClients:
    def defaults(self, role: str) -> dict[str, str]:
        """librdkafka's defaults, from its property table (``settings.catalogue``)."""
        return {s.name: s.default for s in catalogue() if s.role in (role, "*") and s.default}

    def consumer(self, config: dict[str, Any]) -> ck.Consumer:
        return ck.Consumer(config)

    def producer(self, config: dict[str, Any]) -> ck.Producer:
        return ck.Producer(config)


class Broker(Protocol):
    @property
    def bootstrap_servers(self) -> str: ...

    def client_config(self, role: Any, **overrides: Any) -> dict[str, Any]: ...

    @property
    def nodes(self) -> Sequence[Any]: ...

    def restart(self, node_id: int, clean: bool = True) -> None: ...

    def paused(self, node_id: int) -> Any: ...

    def stop_node(self, node_id: int, clean: bool = True) -> None: ...

    def start_node(self, node_id: int) -> None: ...

    def pause(self, node_id: int) -> None: ...

    def resume(self, node_id: int) -> None: ...


class Watcher(Protocol):
    """Who learns what a run does as it does it (``isolated``'s child streams it to the suite's process, so that what
    happened before a crash of the clients' process is kept): each event as it is recorded, each client's
    ``ClientInfo`` as it opens, and each call a client (or the run, ``run``) begins (``what``) and ends (``None``)."""

    def event(self, event: Event) -> None: ...

    def client(self, name: str, info: ClientInfo) -> None: ...

    def doing(self, client: str, what: str | None) -> None: ...


class Recorder:
    def __init__(self, watcher: Watcher | None = None) -> None:
        self._lock = threading.Lock()
        self._start = time.monotonic()
        self.events: list[Event] = []
        self.watcher = watcher

    def add(self, kind: type[Event], client: str, **fields: Any) -> None:
        with self._lock:
            event = kind(seq=len(self.events), client=client, at=time.monotonic() - self._start, **fields)
            self.events.append(event)
            if self.watcher is not None:  # under the lock: the watcher learns the events in their order
                self.watcher.event(event)

    def note(self, text: str, client: str = "run") -> None:
        self.add(Note, client, text=text)

    def now(self) -> float:
        """The run's clock, as events' ``at`` reads it."""
        return time.monotonic() - self._start


def librdkafka_version() -> tuple[int, ...]:
    """The librdkafka this confluent-kafka runs, as (major, minor, revision) (``librdkafka.libversion``)."""
    return libversion()[1]


LIBRDKAFKA_DESCRIBES_CONSUMER_GROUPS: Final = (2, 10, 0)
"""The first librdkafka whose ``rd_kafka_DescribeConsumerGroups`` describes a ``group.protocol=consumer`` group
(ConsumerGroupDescribe; CHANGELOG v2.10.0: "now supports KIP-848-style consumer groups"). Before it the admin sends
the classic DescribeGroups, which the broker answers for such a group as DEAD with no members."""


def describes_consumer_groups(protocol: str, librdkafka: tuple[int, ...]) -> bool:
    """Whether an admin client on ``librdkafka`` can tell how a group of ``protocol`` (``classic``, ``consumer``)
    stands (``LIBRDKAFKA_DESCRIBES_CONSUMER_GROUPS``)."""
    return protocol != "consumer" or librdkafka >= LIBRDKAFKA_DESCRIBES_CONSUMER_GROUPS


CGMD_MAGIC: Final = b"CGMDv2:"
"""How librdkafka's serialized consumer group metadata begins (``rd_kafka_consumer_group_metadata_write``, the same
from v2.0.2 to v2.15.0): the magic, then the generation as a 32-bit integer in the host's byte order, then the group
id and the member id, each ending in NUL."""


def generation_of(metadata: object) -> int | None:
    """The generation in a consumer's group metadata as confluent-kafka gives it (``consumer_group_metadata()``:
    librdkafka's serialized form, ``CGMD_MAGIC``); ``None`` for anything else."""
    if not isinstance(metadata, bytes) or not metadata.startswith(CGMD_MAGIC):
        return None
    at = len(CGMD_MAGIC)
    if len(metadata) < at + 4:
        return None
    return int.from_bytes(metadata[at : at + 4], sys.byteorder, signed=True)


def member_generation(consumer: Any) -> int | None:
    """The group generation ``consumer`` stands in now, as its client's group thread answers
    (``rd_kafka_consumer_group_metadata``: the cgrp's ``rkcg_generation_id``); ``None`` where the client has no such
    call (kafka-clients' harness) or cannot say. Read in each rebalance callback, it shows which generation a member
    had joined when it was told to assign or revoke: an eager member revokes before it sends its JoinGroup, so a
    correct one's revocation reads the generation its partitions came from (CLIENT-008, ``owned-twice-unrevoked``)."""
    read = getattr(consumer, "consumer_group_metadata", None)
    if read is None:
        return None
    try:
        return generation_of(read())
    except (ck.KafkaException, RuntimeError, TypeError, ValueError):
        return None


def tp_of(p: ck.TopicPartition) -> TopicPartition:
    return TopicPartition(p.topic, p.partition)


def message_tp(message: ck.Message) -> TopicPartition:
    return TopicPartition(str(message.topic()), int(message.partition() or 0))


def message_offset(message: ck.Message) -> int:
    offset = message.offset()
    return -1 if offset is None else int(offset)


def error_text(error: BaseException | ck.KafkaError) -> str:
    if isinstance(error, ck.KafkaException) and error.args and isinstance(error.args[0], ck.KafkaError):
        error = error.args[0]
    if isinstance(error, ck.KafkaError):
        return f"{error.name()}: {error.str()}"
    return f"{type(error).__name__}: {error}"


def commit_answer(
    err: ck.KafkaError | None, partitions: Sequence[ck.TopicPartition]
) -> tuple[tuple[tuple[TopicPartition, int], ...], tuple[tuple[TopicPartition, int, str, bool], ...]]:
    """A commit's answer as the history keeps it (``Committed.offsets`` and ``Committed.failed``): the partitions it
    gave no error for, and those it gave one for, each with the offset asked, the error and whether that error leaves
    the commit's fate open (``AMBIGUOUS``). A call that failed as a whole (``err``) with no error on its partitions
    (kafka-clients' failed ``commitAsync``, as the harness hands it over) failed each of them with that error."""
    offsets: list[tuple[TopicPartition, int]] = []
    failed: list[tuple[TopicPartition, int, str, bool]] = []
    for p in partitions:
        error = p.error if p.error is not None else err
        if p.offset < 0:
            continue
        if error is None:
            offsets.append((tp_of(p), p.offset))
        else:
            # kafka-clients' retriable commit failure (a lost coordinator, a request timed out) comes through the
            # harness as a generic _FAIL: whether the coordinator applied it is open, as for AMBIGUOUS's
            open_ended = error.code() in AMBIGUOUS or (error.code() == ck.KafkaError._FAIL and error.retriable())
            failed.append((tp_of(p), p.offset, error_text(error), open_ended))
    return tuple(offsets), tuple(failed)


def fatal(error: ck.KafkaError) -> bool:
    """Whether librdkafka says the client can no longer be used (its fatal error, or the ``_FATAL`` event that
    announces one)."""
    return bool(error.fatal()) or error.code() == ck.KafkaError._FATAL


def fatal_raised(error: BaseException) -> bool:
    """Whether a failed call's exception carries a fatal error (``fatal``)."""
    return (
        isinstance(error, ck.KafkaException)
        and bool(error.args)
        and isinstance(error.args[0], ck.KafkaError)
        and fatal(error.args[0])
    )


def error_code(error: BaseException) -> int | None:
    if isinstance(error, ck.KafkaException) and error.args and isinstance(error.args[0], ck.KafkaError):
        return int(error.args[0].code())
    return None


@dataclass
class ConsumerSlot:
    index: int
    plan: ConsumerPlan
    group: str
    incarnation: int = 0
    client: ck.Consumer | None = None
    worker: Worker | None = None
    assigned: set[TopicPartition] = field(default_factory=set)
    last: ck.Message | None = None
    stored: dict[TopicPartition, int] = field(default_factory=dict)
    stalled: bool = False
    hung: bool = False
    settings: dict[str, str] = field(default_factory=dict)
    ended: dict[TopicPartition, int] = field(default_factory=dict)
    """The offset of each owned partition's latest end-of-partition event."""
    subscription: list[str] = field(default_factory=list)
    """A group member's latest subscription (topic names, or one regex starting with ``^``), which a reopened
    incarnation subscribes to again; set when it first opens."""
    callbacks: dict[str, Callable[..., None]] = field(default_factory=dict)
    """The current incarnation's rebalance callbacks, which a ``subscribe`` step passes again."""
    delivered: list[Any] = field(default_factory=list)
    """The records (messages without an error) its latest poll delivered, which its discipline stores and commits."""

    @property
    def name(self) -> str:
        return f"c{self.index}#{self.incarnation}"

    @property
    def live(self) -> bool:
        return self.client is not None and not self.hung

    def wait_bound(self, wait_ms: int) -> float:
        return wait_ms / 1000 + CALL_SLACK_S


@dataclass
class ProducerSlot:
    index: int
    client: ck.Producer | None
    worker: Worker
    transactional: bool
    settings: dict[str, str]
    sent: int = 0
    txns: int = 0
    hung: bool = False
    broken: bool = False

    @property
    def name(self) -> str:
        return f"p{self.index}"


def forget_stored(slot: ConsumerSlot, tps: Sequence[TopicPartition]) -> None:
    """A revoked or lost partition's stored offset is gone with it: a commit of the consumer's stored offsets commits
    those of what it owns (librdkafka's ``rd_kafka_cgrp_assigned_offsets_commit``), so the driver no longer expects
    it committed."""
    for tp in tps:
        slot.stored.pop(tp, None)


def typed(settings: Mapping[str, str]) -> dict[str, Any]:
    """Drawn values as confluent-kafka takes them: a boolean property as a bool (it refuses "true")."""
    return {k: {"true": True, "false": False}.get(v, v) for k, v in settings.items()}


def member_config(config: Mapping[str, Any], classic: bool) -> dict[str, Any]:
    """The broker's settings for a consumer (``Broker.client_config``) as a group member of its protocol takes them:
    a member of ``group.protocol=consumer`` without the classic session settings (``CLASSIC_GROUP_ONLY``)."""
    return {k: v for k, v in config.items() if classic or k not in CLASSIC_GROUP_ONLY}


def without_named(settings: Mapping[str, str], error: str) -> dict[str, str]:
    """``settings`` minus those a configuration error names (all of them when it names none)."""
    named = {next(g for g in m.groups() if g) for m in NAMED_SETTING.finditer(error)}
    kept = {k: v for k, v in settings.items() if k not in named}
    return kept if len(kept) < len(settings) else {}


@dataclass
class Outage:
    """A fault that spans steps (``schedule.Span``), under way: begun at ``began`` (the monotonic clock), healed by a
    thread of its own once the run says the steps it spans are done (``spanned``) or its hold passed, whichever comes
    first, which then sets ``healed`` (with ``healed_at``, and ``failed`` if the heal raised)."""

    span: Span
    began: float
    spanned: threading.Event = field(default_factory=threading.Event)
    healed: threading.Event = field(default_factory=threading.Event)
    healed_at: float | None = None
    failed: BaseException | None = None

    @property
    def heal_by(self) -> float:
        """When the run stops waiting for its heal (``HEAL_WAIT_S`` past its hold)."""
        return self.began + self.span.bound_ms / 1000 + HEAL_WAIT_S


class Run:
    """One schedule on one broker: ``history()`` after ``run()``."""

    def __init__(
        self,
        schedule: Schedule,
        broker: Broker,
        clients: Clients | None = None,
        prefix: str = "",
        watcher: Watcher | None = None,
    ) -> None:
        self.schedule = schedule
        self.broker = broker
        self.clients_port = clients or RealClients()
        self.prefix = prefix or f"kcw-{uuid4().hex[:8]}"
        self.watcher = watcher
        self.recorder = Recorder(watcher)
        self.topics = [f"{self.prefix}-t{i}" for i in range(len(schedule.partitions))]
        self.extra_topics: list[str] = []
        self.group = f"{self.prefix}-g"
        self.consumers: list[ConsumerSlot] = []
        self.producers: list[ProducerSlot] = []
        self.info: dict[str, ClientInfo] = {}
        self.drained = True
        self.read_to_end: dict[str, frozenset[TopicPartition]] = {}
        self.drain_ends: dict[str, dict[TopicPartition, int]] = {}
        """By group: where each partition's reader found its end (at its isolation level) in the drain."""
        self.kafka = KafkaClient(broker)
        self.convergence: Convergence | None = None
        """How the groups stood when the drain ended (``drain``)."""
        self.beside: list[tuple[ConsumerSlot, str, queue.SimpleQueue[tuple[bool, Any]], threading.Event, float]] = []
        """Calls under way on a consumer's thread while the run carries out the next step (a ``committed`` step's
        ``beside``): the slot, the call, its answer, what tells it the step is done, and its bound from then on."""
        self.at_step: int | None = None
        """The index in the schedule's steps of the step being carried out (a discipline's ``backoff`` names them)."""
        self.outage: Outage | None = None
        """The fault that spans steps under way, if one is (``schedule.Span``)."""
        self.outages: list[Outage] = []
        """Every spanning fault of the run so far, the one under way included: a call that met one is bounded from
        its heal on (``_await``)."""

    # -- clients ---------------------------------------------------------------------------------

    def _defaults(self, role: str) -> dict[str, str]:
        """The client release's defaults for ``role`` as its port states them (none when it states none)."""
        stated = getattr(self.clients_port, "defaults", None)
        return dict(stated(role)) if stated is not None else {}

    def _configured(
        self, name: str, base: dict[str, Any], drawn: Mapping[str, str], build: Callable[[dict[str, Any]], T]
    ) -> tuple[T, dict[str, str]]:
        """Build a client with the drawn settings; those the release refuses are dropped (and noted) until it
        accepts the rest."""
        settings = dict(drawn)
        while True:
            try:
                return build({**base, **typed(settings)}), settings
            except (ck.KafkaException, ValueError, TypeError) as refused:
                text = error_text(refused)
                kept = without_named(settings, text) if settings else None
                if kept is None:
                    raise
                self.recorder.note(f"{name}: the release refused {dict(settings)}: {text}; kept {kept}", name)
                settings = kept

    def _open_consumer(self, slot: ConsumerSlot) -> None:
        recorder = self.recorder

        def on_commit(err: ck.KafkaError | None, partitions: Sequence[ck.TopicPartition]) -> None:
            offsets, failed = commit_answer(err, partitions)
            ambiguous = err is not None and err.code() in AMBIGUOUS
            recorder.add(
                Committed,
                slot.name,
                group=slot.group,
                offsets=offsets,
                error=None if err is None else error_text(err),
                ambiguous=ambiguous,
                failed=failed,
            )

        classic = classic_group(slot.plan.settings)
        base: dict[str, Any] = {
            **member_config(self.broker.client_config("consumer"), classic),
            **(CONSUMER_DEFAULTS if classic else {}),
            "group.id": slot.group,
            "enable.partition.eof": True,  # the workload's default (positions are checked at these events); drawn too
            "on_commit": on_commit,
            "error_cb": lambda error: self._client_error(slot, error),
        }
        if slot.incarnation == 0:
            client, slot.settings = self._configured(slot.name, base, slot.plan.settings, self.clients_port.consumer)
        else:
            client = self.clients_port.consumer({**base, **typed(slot.settings)})
        slot.client, slot.worker, slot.assigned, slot.last, slot.stored = client, Worker(slot.name), set(), None, {}
        slot.ended = {}
        if slot.plan.subscribe == "assign":
            tps = [TopicPartition(self.topics[0], p) for p in range(self.schedule.partitions[0])]
            client.assign([ck.TopicPartition(tp.topic, tp.partition, ck.OFFSET_STORED) for tp in tps])
            slot.assigned = set(tps)
            recorder.add(Assigned, slot.name, tps=tuple(tps), how="manual")
            return

        eager = self._eager(slot)

        def on_assign(c: ck.Consumer, partitions: list[ck.TopicPartition]) -> None:
            tps = tuple(tp_of(p) for p in partitions)
            slot.assigned = set(tps) if eager else slot.assigned | set(tps)
            for tp in tps:
                slot.ended.pop(tp, None)
            recorder.add(Assigned, slot.name, tps=tps, how="rebalance", generation=member_generation(c))

        def on_revoke(c: ck.Consumer, partitions: list[ck.TopicPartition]) -> None:
            tps = tuple(tp_of(p) for p in partitions)
            slot.assigned -= set(tps)
            forget_stored(slot, tps)
            recorder.add(Revoked, slot.name, tps=tps, generation=member_generation(c))

        def on_lost(c: ck.Consumer, partitions: list[ck.TopicPartition]) -> None:
            tps = tuple(tp_of(p) for p in partitions)
            slot.assigned -= set(tps)
            forget_stored(slot, tps)
            recorder.add(Revoked, slot.name, tps=tps, lost=True, generation=member_generation(c))

        if not slot.subscription:
            slot.subscription = (
                [self.pattern] if slot.plan.subscribe == "pattern" else slot.plan.starts_with(self.topics)
            )
        slot.callbacks = {"on_assign": on_assign, "on_revoke": on_revoke, "on_lost": on_lost}
        client.subscribe(slot.subscription, **slot.callbacks)
        self._subscribed(slot)

    @staticmethod
    def _eager(slot: ConsumerSlot) -> bool:
        """Whether the member's callbacks hand it whole assignments, at this librdkafka (``rebalances_eagerly``)."""
        return rebalances_eagerly(
            str(slot.settings.get("group.protocol", "classic")),
            str(slot.settings.get("partition.assignment.strategy", "range,roundrobin")),
            librdkafka_version(),
        )

    @property
    def pattern(self) -> str:
        """The regex every topic of the run matches (those created by a step too)."""
        return f"^{re.escape(self.prefix)}-.*"

    def _subscribed(self, slot: ConsumerSlot) -> None:
        if slot.subscription[0].startswith("^"):
            self.recorder.add(Subscribed, slot.name, pattern=slot.subscription[0])
        else:
            self.recorder.add(Subscribed, slot.name, topics=tuple(slot.subscription))

    def _client_error(self, slot: ConsumerSlot, error: ck.KafkaError) -> None:
        """A consumer's ``error_cb``: noted, and a fatal one recorded as ``Failed``."""
        self.recorder.note(f"error: {error_text(error)}", slot.name)
        if fatal(error):
            self.recorder.add(Failed, slot.name, error=error_text(error), call="error_cb")

    def _producer_error(self, name: str, error: ck.KafkaError) -> None:
        """A producer's ``error_cb`` (librdkafka's; kafka-clients' producers have none): noted, and a fatal one
        recorded as ``Failed`` (confluent-kafka raises a fatal error from ``poll`` or ``flush`` instead, ``_serve``;
        kept for a release that hands it over)."""
        self.recorder.note(f"error: {error_text(error)}", name)
        if fatal(error):
            self.recorder.add(Failed, name, error=error_text(error), call="error_cb")

    def _serve(self, producer: ProducerSlot, what: str, call: Callable[[], T], bound_s: float) -> T | None:
        """A producer's ``poll`` or ``flush`` (``_call``): confluent-kafka raises a fatal error from it, in place of
        calling the ``error_cb`` (its ``error_cb`` trampoline: "If the client raised a fatal error we'll raise an
        exception rather than calling the error callback"), so the failure is noted and a fatal one recorded as
        ``Failed`` with the call, and the run goes on."""
        try:
            return self._call(producer, what, call, bound_s)
        except ck.KafkaException as failed:
            self.recorder.note(f"{what} failed: {error_text(failed)}", producer.name)
            self._producer_failed(producer.name, what.split("(", 1)[0], failed)
            return None

    def _producer_failed(self, name: str, call: str, error: BaseException | ck.KafkaError) -> None:
        """A producer's call (or delivery report, ``call`` ``delivery``) failed: a fatal error recorded as
        ``Failed`` with the call."""
        if fatal(error) if isinstance(error, ck.KafkaError) else fatal_raised(error):
            self.recorder.add(Failed, name, error=error_text(error), call=call)

    def _open_producer(self, index: int, transactional: bool, drawn: Mapping[str, str]) -> ProducerSlot:
        name = f"p{index}"
        base: dict[str, Any] = {
            **self.broker.client_config("producer"),
            "error_cb": lambda error: self._producer_error(name, error),
        }
        if transactional:
            base["transactional.id"] = f"{self.prefix}-p{index}"
        client, settings = self._configured(f"p{index}", base, drawn, self.clients_port.producer)
        slot = ProducerSlot(index, client, Worker(f"p{index}"), transactional, settings)
        if transactional:
            try:
                slot.worker.call(lambda: client.init_transactions(10.0), 10.0 + CALL_SLACK_S)
            except HungCall:
                slot.hung = True
                self.recorder.add(Hung, slot.name, call="init_transactions", bound_s=10.0 + CALL_SLACK_S)
            except ck.KafkaException as failed:
                slot.broken = True
                self.recorder.note(f"init_transactions failed: {error_text(failed)}", slot.name)
                self._producer_failed(slot.name, "init_transactions", failed)
        return slot

    # -- the run ---------------------------------------------------------------------------------

    def _doing(self, client: str, what: str | None) -> None:
        if self.watcher is not None:
            self.watcher.doing(client, what)

    def _opened(self, name: str, info: ClientInfo) -> None:
        self.info[name] = info
        if self.watcher is not None:
            self.watcher.client(name, info)

    def run(self) -> History:
        self._doing("run", "creating the topics")
        for topic, count in zip(self.topics, self.schedule.partitions, strict=True):
            self.kafka.create_topic(topic, count)
        try:
            self._doing("run", "opening the clients")
            for i, plan in enumerate(self.schedule.producers):
                self.producers.append(self._open_producer(i, plan.transactional, plan.settings))
                self._opened(
                    f"p{i}",
                    ClientInfo(
                        self.producers[-1].settings,
                        transactional=plan.transactional,
                        transactional_id=f"{self.prefix}-p{i}" if plan.transactional else "",
                        defaults=self._defaults("P"),
                    ),
                )
            for i, cplan in enumerate(self.schedule.consumers):
                group = group_of(self.group, cplan, i)
                # A fresh broker's first group meets a coordinator still loading; a consumer assigned from the
                # stored offset then never fetches them again (NOT_COORDINATOR, seen with librdkafka 2.16.0): the
                # run waits the coordinator out first, as the suite's client scenarios do.
                self.kafka.committed(group, [TopicPartition(self.topics[0], 0)])
                slot = ConsumerSlot(i, cplan, group)
                self.consumers.append(slot)
                self._open_consumer(slot)
                self._opened(
                    f"c{i}",
                    ClientInfo(
                        slot.settings,
                        group,
                        cplan.subscribe,
                        # what a classic member runs with where nothing is drawn: the workload's own session settings
                        # over the release's (``CONSUMER_DEFAULTS``, given in ``_open_consumer``)
                        defaults=self._defaults("C")
                        | (dict(CONSUMER_DEFAULTS) if classic_group(slot.settings) else {}),
                        eager=None if cplan.subscribe == "assign" else self._eager(slot),
                        discipline=cplan.discipline.text(),
                    ),
                )
            for n, step in enumerate(self.schedule.steps, 1):
                self._doing("run", f"step {n} of {len(self.schedule.steps)}: {step.text()}")
                earlier = list(self.beside)
                self.at_step = n - 1
                self.step(step)
                self._settle(among=earlier)  # what ran beside this step; a committed step's own asks go on
                if self.outage is not None and self.outage.span.last <= n - 1:
                    self._heal()  # the steps it spans are done
            self._heal()  # by the end of the steps at the latest, before the drain
            self._doing("run", "the drain")
            self._settle()
            self.drain()
            self._doing("run", "reading the log")
            log = self.read_log()
        finally:
            if self.outage is not None:  # the run failed with a fault under way: the broker answers again first
                with contextlib.suppress(Exception):
                    self._heal()
            self._doing("run", "closing every client")
            self.close_all()
            self.kafka.close()
            self._doing("run", None)
        return History(
            tuple(self.recorder.events),
            dict(self.info),
            log,
            self.drained,
            self.read_to_end,
            dict(self.drain_ends),
            self.convergence,
        )

    def step(self, step: Step) -> None:
        kind = step.kind
        if kind in (StepKind.PRODUCE, StepKind.TRANSACTION, StepKind.FLUSH):
            producer = self.producers[step.client % len(self.producers)]
            if producer.hung or producer.client is None:
                return
            acts: dict[StepKind, Callable[[ProducerSlot, Step], None]] = {
                StepKind.PRODUCE: self.produce,
                StepKind.TRANSACTION: self.transaction,
                StepKind.FLUSH: self.flush,
            }
            acts[kind](producer, step)
            return
        if kind in (
            StepKind.WAIT,
            StepKind.ADD_PARTITIONS,
            StepKind.CREATE_TOPIC,
            StepKind.BROKER_RESTART,
            StepKind.NODE_PAUSE,
        ):
            {
                StepKind.WAIT: self.wait,
                StepKind.ADD_PARTITIONS: self.add_partitions,
                StepKind.CREATE_TOPIC: self.create_topic,
                StepKind.BROKER_RESTART: self.broker_restart,
                StepKind.NODE_PAUSE: self.node_pause,
            }[kind](step)
            return
        slot = self.consumers[step.client % len(self.consumers)]
        self._settle(slot)  # a call still under way beside the last step goes first: one call at a time per client
        if slot.hung:
            return
        if kind is StepKind.REOPEN:
            if slot.client is None:
                slot.incarnation += 1
                self._open_consumer(slot)
            return
        if slot.client is None:
            return
        handlers: dict[StepKind, Callable[[ConsumerSlot, Step], None]] = {
            StepKind.POLL: self.poll,
            StepKind.POLL_WHILE_PAUSED: self.poll_while_paused,
            StepKind.COMMIT: self.commit,
            StepKind.STORE: self.store,
            StepKind.PAUSE: self.pause,
            StepKind.RESUME: self.pause,
            StepKind.SEEK: self.seek,
            StepKind.CLOSE: self.close,
            StepKind.STALL: self.stall,
            StepKind.SUBSCRIBE: self.subscribe,
            StepKind.COMMITTED: self.committed,
        }
        if kind in (StepKind.POLL, StepKind.POLL_WHILE_PAUSED):
            slot.delivered = []  # what this poll delivers, for the discipline after it (none if it fails or hangs)
        if kind is StepKind.POLL and self.at_step in slot.plan.discipline.backoff and step.mode in ("", "consume"):
            self.backoff(slot, step)
        else:
            handlers[kind](slot, step)
        if kind in (StepKind.POLL, StepKind.POLL_WHILE_PAUSED):
            self.after_poll(slot)

    def _call(self, slot: ConsumerSlot | ProducerSlot, what: str, call: Callable[[], T], bound_s: float) -> T | None:
        """``call`` on the client's thread; ``None`` and the client marked hung (``slot.hung``) when it outlived
        ``bound_s``."""
        assert slot.worker is not None
        self._doing(slot.name, what)
        started = time.monotonic()
        try:
            ok, answer = self._await(slot.worker.submit(call), bound_s)
        except HungCall:
            slot.hung = True
            self.recorder.add(Hung, slot.name, call=what, bound_s=round(max(bound_s, time.monotonic() - started), 1))
            return None
        finally:
            if not slot.hung:
                self._doing(slot.name, None)
        if not ok:
            raise answer
        return answer  # type: ignore[no-any-return]

    def _await(self, answer: queue.SimpleQueue[T], bound_s: float) -> T:
        """A call's answer (whether it returned, and what it returned or raised), awaited for ``bound_s``; or, for a
        call that met a fault spanning steps (under way when the call began, or begun while it waited), until
        ``CALL_SLACK_S`` past that fault's heal if that is later: a client may rightly wait for a broker that is down,
        as long as it answers once the broker is back. ``HungCall`` when it has not answered by then."""
        started = time.monotonic()
        deadline = started + bound_s
        while True:
            try:
                return answer.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                later = self._past_outage(started)
                if later is None or later <= time.monotonic():
                    raise HungCall from None
                deadline = later

    def _past_outage(self, since: float) -> float | None:
        """``CALL_SLACK_S`` past the heal of the latest spanning fault under way at or begun after ``since`` (one
        under way now is awaited first, within its ``heal_by``); ``None`` if no fault met that time."""
        met = [o for o in self.outages if o.healed_at is None or o.healed_at >= since]
        if not met:
            return None
        last = met[-1]
        last.healed.wait(max(0.0, last.heal_by - time.monotonic()))
        return None if last.healed_at is None else last.healed_at + CALL_SLACK_S

    # producers

    def _send(self, producer: ProducerSlot, step: Step, txn: int | None) -> None:
        client = producer.client
        assert client is not None
        recorder, name = self.recorder, producer.name
        topic = self.topics[step.topic % len(self.topics)]

        def delivered(error: ck.KafkaError | None, message: ck.Message) -> None:
            offset = message.offset()
            partition = message.partition()
            tp = message_tp(message) if partition is not None and partition >= 0 else None
            recorder.add(
                Acked,
                name,
                value=message.value(),
                tp=tp,
                offset=offset if error is None and offset is not None and offset >= 0 else None,
                error=None if error is None else error_text(error),
            )
            if error is not None:
                self._producer_failed(name, "delivery", error)

        for _ in range(step.count):
            value = f"{name}-{producer.sent}".encode()
            producer.sent += 1
            partition = None if step.partition is None else step.partition
            kwargs: dict[str, Any] = {"value": value, "on_delivery": delivered}
            if partition is not None:
                kwargs["partition"] = partition
            if step.keyed:
                kwargs["key"] = f"k{producer.sent % 7}".encode()
            try:
                # On the client's thread and bounded: kafka-clients' send blocks (metadata, a full buffer) up to
                # max.block.ms, and one that never returns is a hang, not a stuck run.
                self._call(producer, f"produce({value!r})", partial(client.produce, topic, **kwargs), CALL_SLACK_S)
            except (BufferError, ck.KafkaException) as refused:
                recorder.note(f"produce of {value!r} refused: {error_text(refused)}", name)
                self._producer_failed(name, "produce", refused)
                continue
            if producer.hung:
                return
            recorder.add(Sent, name, value=value, topic=topic, partition=partition, txn=txn)
        self._serve(producer, "poll(0)", lambda: client.poll(0), CALL_SLACK_S)

    def produce(self, producer: ProducerSlot, step: Step) -> None:
        """Plain sends; a transactional producer sends only inside a transaction, so it commits one of them."""
        if producer.transactional:
            self.transaction(
                producer,
                Step(
                    StepKind.TRANSACTION,
                    step.client,
                    step.topic,
                    step.partition,
                    step.count,
                    "commit",
                    keyed=step.keyed,
                ),
            )
            return
        self._send(producer, step, None)

    def transaction(self, producer: ProducerSlot, step: Step) -> None:
        client = producer.client
        assert client is not None
        if not producer.transactional:
            self._send(producer, step, None)
            return
        if producer.broken:
            return
        producer.txns += 1
        txn = producer.txns
        try:
            client.begin_transaction()
        except ck.KafkaException as failed:
            self.recorder.note(f"begin_transaction failed: {error_text(failed)}", producer.name)
            self._producer_failed(producer.name, "begin_transaction", failed)
            producer.broken = True
            return
        self._send(producer, step, txn)
        if producer.hung:
            return
        timeout = 30.0
        if step.mode == "abort":  # sent first, as an application that gives up after an error has: the log keeps them
            self._serve(producer, "flush", lambda: client.flush(timeout), timeout + CALL_SLACK_S)
            if producer.hung:
                return
        end = client.commit_transaction if step.mode == "commit" else client.abort_transaction
        try:
            self._call(producer, f"{step.mode}_transaction", lambda: end(timeout), timeout + CALL_SLACK_S)
            if producer.hung:
                return
            self.recorder.add(TxnEnded, producer.name, txn=txn, outcome=step.mode)
        except ck.KafkaException as failed:
            self._producer_failed(producer.name, f"{step.mode}_transaction", failed)
            error = failed.args[0]
            if isinstance(error, ck.KafkaError) and error.txn_requires_abort():
                try:
                    self._call(
                        producer, "abort_transaction", lambda: client.abort_transaction(timeout), timeout + CALL_SLACK_S
                    )
                except ck.KafkaException as unaborted:  # its fate unknown: no outcome recorded, the producer given up
                    self.recorder.note(f"abort_transaction failed: {error_text(unaborted)}", producer.name)
                    self._producer_failed(producer.name, "abort_transaction", unaborted)
                    producer.broken = True
                    return
                if not producer.hung:  # a hung abort leaves the transaction's fate unknown: no outcome recorded
                    self.recorder.add(TxnEnded, producer.name, txn=txn, outcome="abort", error=error_text(failed))
            else:
                self.recorder.add(TxnEnded, producer.name, txn=txn, outcome=step.mode, error=error_text(failed))
                producer.broken = True

    def flush(self, producer: ProducerSlot, _step: Step | None = None) -> None:
        client = producer.client
        assert client is not None
        self._serve(producer, "flush", lambda: client.flush(30.0), 30.0 + CALL_SLACK_S)

    # consumers

    def _consume(self, slot: ConsumerSlot, count: int, wait_s: float, mode: str = "consume") -> None:
        client = slot.client
        assert client is not None

        def poll() -> tuple[list[ck.Message], list[ck.TopicPartition]]:
            if mode == "poll":
                message = client.poll(wait_s)
                messages = [] if message is None else [message]
            else:
                messages = client.consume(count, timeout=wait_s)
            ended = {message_tp(m) for m in messages if (e := m.error()) is not None and e.code() == PARTITION_EOF}
            positions = (
                client.position([ck.TopicPartition(tp.topic, tp.partition) for tp in sorted(ended)]) if ended else []
            )
            return messages, positions

        got = self._call(slot, f"{mode}({count}, {wait_s:g})", poll, wait_s + CALL_SLACK_S)
        if got is None:
            return
        self._record_poll(slot, *got)
        self._ask_after_poll(slot)

    def _record_poll(self, slot: ConsumerSlot, messages: list[ck.Message], positions: list[ck.TopicPartition]) -> None:
        records, eofs, errors = [], [], []
        slot.delivered = []
        for m in messages:
            error = m.error()
            if error is None:
                records.append((message_tp(m), message_offset(m), m.value()))
                slot.last = m
                slot.delivered.append(m)
            elif error.code() == ck.KafkaError._PARTITION_EOF:
                eofs.append((message_tp(m), message_offset(m)))
                slot.ended[message_tp(m)] = message_offset(m)
            else:
                errors.append(error_text(error))
                if fatal(error):
                    self.recorder.add(Failed, slot.name, error=error_text(error), call="poll")
        self.recorder.add(
            Polled,
            slot.name,
            records=tuple(records),
            eofs=tuple(eofs),
            positions=tuple((tp_of(p), p.offset) for p in positions),
            errors=tuple(errors),
        )

    def poll(self, slot: ConsumerSlot, step: Step) -> None:
        slot.stalled = False
        self._consume(slot, step.count, step.wait_ms / 1000, step.mode or "consume")

    def _fetched(self, slot: ConsumerSlot) -> bool | None:
        client = slot.client
        assert client is not None
        for tp in list(slot.assigned):
            low_high = client.get_watermark_offsets(ck.TopicPartition(tp.topic, tp.partition), cached=True)
            (position,) = client.position([ck.TopicPartition(tp.topic, tp.partition)])
            if low_high[1] >= 0 and position.offset >= 0 and low_high[1] > position.offset:
                return True
        return None

    def _fetched_to(self, slot: ConsumerSlot, tp: TopicPartition, end: int) -> bool | None:
        """Whether the consumer's last fetch of ``tp`` reported a high watermark of ``end`` or more: records up to
        there reached it, whatever its position says (a batch poll may move the position as it takes them)."""
        client = slot.client
        assert client is not None
        high = client.get_watermark_offsets(ck.TopicPartition(tp.topic, tp.partition), cached=True)[1]
        return True if high >= end else None

    def _write_during(self, tp: TopicPartition, count: int) -> int:
        """``count`` records to ``tp`` from the schedule's first producer that can send (a transactional one commits
        them), as data arriving while a consumer waits; how many it sent."""
        producer = next((p for p in self.producers if p.client is not None and not p.hung), None)
        if producer is None or count < 1 or tp.topic not in self.topics:
            return 0
        sent = producer.sent
        self.produce(producer, Step(StepKind.PRODUCE, producer.index, self.topics.index(tp.topic), tp.partition, count))
        if not producer.transactional and producer.client is not None and not producer.hung:
            self.flush(producer)
        return producer.sent - sent

    def poll_while_paused(self, slot: ConsumerSlot, step: Step) -> None:
        """A batch poll of ``count`` records on the client's thread; from this one, fewer records than that written
        to the first chosen partition while the poll waits (so the poll's fetch brings them in and it waits on), and
        once the consumer fetched them (or ``FETCHED_WAIT_S`` passed) a pause and resume of the chosen partitions."""
        slot.stalled = False
        client, worker = slot.client, slot.worker
        assert client is not None and worker is not None
        wait_s = 1.0
        answer: queue.SimpleQueue[Any] = queue.SimpleQueue()
        tps = self._chosen(slot, step.partition)
        start: int | None = None
        if tps:
            low_high = client.get_watermark_offsets(ck.TopicPartition(tps[0].topic, tps[0].partition), cached=True)
            start = low_high[1] if low_high[1] >= 0 else None

        def poll() -> None:
            try:
                answer.put(client.consume(step.count, timeout=wait_s))
            except BaseException as error:
                answer.put(error)

        threading.Thread(target=poll, name=f"kconform-workload-{slot.name}-poll", daemon=True).start()
        written = self._write_during(tps[0], min(step.count - 1, HELD_MAX)) if tps and start is not None else 0
        deadline = time.monotonic() + FETCHED_WAIT_S
        while time.monotonic() < deadline and not (
            self._fetched_to(slot, tps[0], start + written) if written and start is not None else self._fetched(slot)
        ):
            threading.Event().wait(0.002)
        tps = self._chosen(slot, step.partition)
        if tps:
            parts = [ck.TopicPartition(tp.topic, tp.partition) for tp in tps]
            client.pause(parts)
            self.recorder.add(Paused, slot.name, tps=tuple(tps))
            client.resume(parts)
            self.recorder.add(Paused, slot.name, tps=tuple(tps), resumed=True)
        try:
            got = self._await(answer, wait_s + CALL_SLACK_S)
        except HungCall:
            slot.hung = True
            self.recorder.add(
                Hung, slot.name, call=f"consume({step.count}, {wait_s:g}) during pause", bound_s=wait_s + CALL_SLACK_S
            )
            return
        if isinstance(got, BaseException):
            self.recorder.note(f"consume failed: {error_text(got)}", slot.name)
            return
        self._record_poll(slot, got, [])

    def _chosen(self, slot: ConsumerSlot, which: int | None) -> list[TopicPartition]:
        owned = sorted(slot.assigned)
        if not owned:
            return []
        return owned if which is None else [owned[which % len(owned)]]

    def commit(self, slot: ConsumerSlot, step: Step) -> None:
        client = slot.client
        assert client is not None
        stored = tuple(sorted((tp, offset) for tp, offset in slot.stored.items() if tp in slot.assigned))
        message = None
        if step.mode == "message":
            message = slot.last
            if message is None:
                return
            call: Callable[[], Any] = lambda: client.commit(message=message, asynchronous=False)  # noqa: E731
        elif step.mode == "async":
            call = lambda: client.commit(asynchronous=True)  # noqa: E731
        else:
            call = lambda: client.commit(asynchronous=False)  # noqa: E731
        try:
            result = self._call(slot, f"commit({step.mode})", call, CALL_SLACK_S)
        except ck.KafkaException as failed:
            code = error_code(failed)
            asked = (
                # the one offset a commit from a record asks for; a commit of the positions names none before it runs
                ((message_tp(message), message_offset(message) + 1, error_text(failed), code in AMBIGUOUS),)
                if step.mode == "message" and message is not None
                else ()
            )
            self.recorder.add(
                Committed,
                slot.name,
                group=slot.group,
                offsets=(),
                error=error_text(failed),
                ambiguous=code in AMBIGUOUS,
                stored=stored if step.mode == "sync" else (),
                failed=asked,
            )
            return
        if step.mode == "async" or slot.hung or result is None:
            return
        committed, failed_parts = commit_answer(None, result)
        errors = [f"{tp}: {error}" for tp, _, error, _ in failed_parts]
        self.recorder.add(
            Committed,
            slot.name,
            group=slot.group,
            offsets=committed,
            error="; ".join(errors) or None,
            stored=stored if step.mode == "sync" else (),
            failed=failed_parts,
        )
        if step.mode == "sync":
            slot.stored = {}

    def store(self, slot: ConsumerSlot, _step: Step) -> None:
        client = slot.client
        assert client is not None
        owned = [ck.TopicPartition(tp.topic, tp.partition) for tp in sorted(slot.assigned)]
        if not owned:
            return
        positions = self._call(slot, "position", lambda: client.position(owned), CALL_SLACK_S)
        if positions is None:
            return
        offsets = [p for p in positions if p.offset >= 0]
        if not offsets:
            return
        try:
            client.store_offsets(offsets=[ck.TopicPartition(p.topic, p.partition, p.offset) for p in offsets])
        except ck.KafkaException as refused:
            self.recorder.add(Stored, slot.name, offsets=(), error=error_text(refused))
            return
        stored = tuple((tp_of(p), p.offset) for p in offsets)
        slot.stored.update(stored)
        self.recorder.add(Stored, slot.name, offsets=stored)

    # a consumer's discipline (schedule.Discipline): what its application does around its polls

    def backoff(self, slot: ConsumerSlot, step: Step) -> None:
        """A plain batch poll the consumer's discipline carries out backing off: a ``poll-while-paused`` of the same
        batch over all it owns (``poll_while_paused``), as a source whose engine backs off pauses and resumes its
        partitions while its poll thread waits."""
        self.recorder.note(f"discipline: {step.text()} backing off (poll-while-paused of all it owns)", slot.name)
        self.poll_while_paused(slot, Step(StepKind.POLL_WHILE_PAUSED, step.client, count=step.count))

    def after_poll(self, slot: ConsumerSlot) -> None:
        """After a poll that delivered records, what the consumer's discipline does: store their offsets, then
        commit."""
        discipline = slot.plan.discipline
        if not slot.delivered or not (discipline.store or discipline.commit):
            return
        if discipline.store and slot.client is not None and not slot.hung:
            self.store_polled(slot, discipline.store)
        if discipline.commit and slot.client is not None and not slot.hung:
            self.commit(slot, Step(StepKind.COMMIT, slot.index, mode=discipline.commit))

    def store_polled(self, slot: ConsumerSlot, by: str) -> None:
        """``store_offsets`` of what the last poll delivered, past the last record of each partition it still owns:
        ``by`` ``message``, each such record (``store_offsets(message=...)``, its leader epoch with it); ``offset``, the
        offsets alone (``store_offsets(offsets=[TopicPartition(t, p, o + 1)])``, as a source that tracks them)."""
        client = slot.client
        assert client is not None
        last: dict[TopicPartition, Any] = {}
        for message in slot.delivered:
            if message_tp(message) in slot.assigned:
                last[message_tp(message)] = message
        if not last:
            return
        stored = tuple((tp, message_offset(m) + 1) for tp, m in sorted(last.items()))

        def store() -> None:
            if by == "message":
                for message in last.values():
                    client.store_offsets(message=message)
            else:
                client.store_offsets(offsets=[ck.TopicPartition(tp.topic, tp.partition, o) for tp, o in stored])

        try:
            self._call(slot, f"store_offsets(by {by})", store, CALL_SLACK_S)
        except ck.KafkaException as refused:
            self.recorder.add(Stored, slot.name, offsets=(), error=error_text(refused), by=by)
            return
        if slot.hung:
            return
        slot.stored.update(stored)
        self.recorder.add(Stored, slot.name, offsets=stored, by=by)

    def pause(self, slot: ConsumerSlot, step: Step) -> None:
        client = slot.client
        assert client is not None
        tps = self._chosen(slot, step.partition)
        if not tps:
            return
        parts = [ck.TopicPartition(tp.topic, tp.partition) for tp in tps]
        resume = step.kind is StepKind.RESUME
        try:
            (client.resume if resume else client.pause)(parts)
        except ck.KafkaException as refused:
            self.recorder.note(f"{step.kind.value} refused: {error_text(refused)}", slot.name)
            return
        self.recorder.add(Paused, slot.name, tps=tuple(tps), resumed=resume)

    def seek(self, slot: ConsumerSlot, step: Step) -> None:
        client = slot.client
        assert client is not None
        tps = self._chosen(slot, step.partition if step.partition is not None else 0)
        if not tps:
            return
        (tp,) = tps
        part = ck.TopicPartition(tp.topic, tp.partition)
        target: int | None
        if step.mode == "beginning":
            offset, target = ck.OFFSET_BEGINNING, ck.OFFSET_BEGINNING
        elif step.mode == "end":
            offset, target = ck.OFFSET_END, None
        else:
            positions = self._call(slot, "position", lambda: client.position([part]), CALL_SLACK_S)
            if not positions or positions[0].offset < 0:
                return
            offset = target = max(0, positions[0].offset - step.count)
        try:
            client.seek(ck.TopicPartition(tp.topic, tp.partition, offset))
        except ck.KafkaException as refused:
            self.recorder.add(Seeked, slot.name, tp=tp, offset=target, error=error_text(refused))
            return
        slot.ended.pop(tp, None)
        self.recorder.add(Seeked, slot.name, tp=tp, offset=target)

    def close(self, slot: ConsumerSlot, _step: Step | None = None) -> None:
        client = slot.client
        assert client is not None
        try:
            self._call(slot, "close", client.close, CLOSE_BOUND_S)
            if slot.hung:
                return
        except ck.KafkaException as failed:
            self.recorder.note(f"close failed: {error_text(failed)}", slot.name)
        self.recorder.add(Closed, slot.name)
        slot.client = None
        slot.assigned = set()

    def subscribe(self, slot: ConsumerSlot, step: Step) -> None:
        """The member subscribes again, to what ``step.mode`` says, with the callbacks it has."""
        client = slot.client
        assert client is not None
        if slot.plan.subscribe == "assign":
            self.recorder.note("subscribe skipped: a consumer assigned by hand has no subscription", slot.name)
            return
        if step.mode == "pattern":
            topics = [self.pattern]
        elif step.mode == "one":
            topics = [self.topics[step.topic % len(self.topics)]]
        else:
            topics = [*self.topics, *self.extra_topics]
        try:
            self._call(slot, f"subscribe({topics})", lambda: client.subscribe(topics, **slot.callbacks), CALL_SLACK_S)
        except (ck.KafkaException, ValueError) as refused:
            self.recorder.note(f"subscribe({topics}) refused: {error_text(refused)}", slot.name)
            return
        if slot.hung:
            return
        slot.subscription = topics
        self._subscribed(slot)

    def committed(self, slot: ConsumerSlot, step: Step) -> None:
        """``step.count`` asks for the group's committed offsets of the partitions the consumer owns, each bounded by
        ``step.wait_ms`` and recorded as it returns (``FetchedCommitted``), on the consumer's thread; the whole is
        bounded by their bounds and ``CALL_SLACK_S``. With ``beside``, the asks go on, one after another, while the
        run carries out the next step (at least ``step.count``, at most ``BESIDE_ASKS``), and are awaited after it
        (``_settle``): an application that keeps asking while its group changes."""
        client = slot.client
        assert client is not None and slot.worker is not None
        tps = tuple(sorted(slot.assigned))
        if not tps:
            return
        parts = [ck.TopicPartition(tp.topic, tp.partition) for tp in tps]
        bound_s = step.wait_ms / 1000
        recorder, group, name = self.recorder, slot.group, slot.name

        def ask() -> None:
            since, started = len(recorder.events), time.monotonic()
            fields: dict[str, Any] = {"group": group, "tps": tps, "since": since, "bound_s": bound_s}
            try:
                answer = client.committed(parts, timeout=bound_s)
            except ck.KafkaException as failed:
                error = failed.args[0] if failed.args and isinstance(failed.args[0], ck.KafkaError) else None
                recorder.add(
                    FetchedCommitted,
                    name,
                    **fields,
                    error=error_text(failed),
                    retriable=bool(error is not None and error.retriable()),
                    took_s=time.monotonic() - started,
                )
                return
            offsets = tuple((tp_of(p), p.offset if p.offset >= 0 else None) for p in answer if p.error is None)
            failed_tps = tuple((tp_of(p), error_text(p.error)) for p in answer if p.error is not None)
            recorder.add(
                FetchedCommitted, name, **fields, offsets=offsets, failed=failed_tps, took_s=time.monotonic() - started
            )

        least = max(1, step.count)
        if step.mode == "beside":
            done = threading.Event()

            def beside() -> None:
                for n in range(BESIDE_ASKS):
                    if n >= least and done.is_set():
                        return
                    ask()

            what = f"committed({len(tps)} partitions, {bound_s:g}) repeated beside the next step"
            self.beside.append((slot, what, slot.worker.submit(beside), done, least * bound_s + CALL_SLACK_S))
            return

        def asks() -> None:
            for _ in range(least):
                ask()

        self._call(
            slot, f"committed({len(tps)} partitions, {bound_s:g}) x{least}", asks, least * bound_s + CALL_SLACK_S
        )

    def _ask_after_poll(self, slot: ConsumerSlot) -> None:
        """A member that asks in its poll loop (``Schedule.asks``) asks once for the group's committed offsets of what
        it owns now, right after its poll, bounded by its drawn bound (a ``committed`` step of one ask)."""
        bound_ms = asks_bound_ms(self.schedule, slot.index)
        if bound_ms is None or not slot.live or not slot.assigned:
            return
        self.committed(slot, Step(StepKind.COMMITTED, slot.index, count=1, wait_ms=bound_ms))

    def _settle(self, slot: ConsumerSlot | None = None, among: Sequence[Any] | None = None) -> None:
        """Tell the calls under way beside a step that it is done and await them (those of ``slot``, or ``among``
        these, alone when given), each within its bound: one that outlives it is ``Hung``, as a call awaited at once
        would be."""
        for pending in [
            p for p in self.beside if (slot is None or p[0] is slot) and (among is None or any(p is q for q in among))
        ]:
            self.beside.remove(pending)
            owner, what, answer, done, bound_s = pending
            done.set()
            started = time.monotonic()
            try:
                ok, result = self._await(answer, bound_s)
            except HungCall:
                owner.hung = True
                self.recorder.add(
                    Hung, owner.name, call=what, bound_s=round(max(bound_s, time.monotonic() - started), 1)
                )
                continue
            if not ok:
                raise result

    def stall(self, slot: ConsumerSlot, _step: Step) -> None:
        slot.stalled = True
        self.recorder.note("stalls (polls no more until its next poll step)", slot.name)

    # the run's own steps

    def _poll_round(self, wait_s: float) -> None:
        busy = {id(p[0]) for p in self.beside}  # its thread still runs a call beside this step: not queued behind it
        for slot in self.consumers:
            if slot.live and not slot.stalled and id(slot) not in busy:
                self._consume(slot, 100, wait_s)

    def wait(self, step: Step) -> None:
        deadline = time.monotonic() + step.wait_ms / 1000
        while True:
            self._poll_round(0.1)
            if time.monotonic() >= deadline:
                return

    def _operator_waits(self, step: Step) -> bool:
        """Whether an operator's step is skipped (and noted) because a fault that spans it holds the broker down: an
        operator's admin call cannot reach it, and the run's own admin calls are the harness's, whose failure would
        judge nothing."""
        if self.outage is None:
            return False
        self.recorder.note(f"{step.text()} skipped: the broker is down (a fault spans this step)")
        return True

    def add_partitions(self, step: Step) -> None:
        if self._operator_waits(step):
            return
        topic = self.topics[step.topic % len(self.topics)]
        total = len(self.kafka.list_topics().get(topic, ())) + step.count
        self.kafka.create_partitions(topic, total)
        self.recorder.note(f"{topic} now has {total} partitions")

    def create_topic(self, step: Step) -> None:
        if self._operator_waits(step):
            return
        topic = f"{self.prefix}-x{len(self.extra_topics)}"
        self.kafka.create_topic(topic, step.count)
        self.extra_topics.append(topic)
        self.recorder.note(f"created {topic} with {step.count} partitions (the pattern matches it)")

    def _node(self) -> int:
        """The node a fault acts on: the first (the only one of ``--broker kafka``)."""
        return int(self.broker.nodes[0].node_id)

    def broker_restart(self, step: Step) -> None:
        """The broker stopped (SIGTERM, or SIGKILL with ``kill``) and started again on the same storage: within the
        step, or, for a fault step with a span (``schedule.Span``), once the steps it spans are done or its hold
        passed (``_hold``), while the run carries out those steps."""
        if not self.schedule.faults:
            return
        span = self._span()
        node, clean = self._node(), step.mode == "clean"
        if span is None:
            self.recorder.note(f"{FAULT_NOTE}restarting ({step.mode})")
            self.broker.restart(node, clean=clean)
            self.recorder.note(f"{FAULT_NOTE}restarted ({step.mode})")
            return
        self.recorder.note(f"{FAULT_NOTE}restarting ({step.mode}), {self._until(span)}")
        self.broker.stop_node(node, clean=clean)
        self._hold(span, lambda: self.broker.start_node(node), f"{FAULT_NOTE}restarted ({step.mode})")

    def node_pause(self, step: Step) -> None:
        """The broker paused (SIGSTOP) for the step's ``wait_ms``, or, for a fault step with a span, until the steps
        it spans are done or its hold passed, while the run carries them out."""
        if not self.schedule.faults:
            return
        span = self._span()
        node = self._node()
        if span is None:
            with self.broker.paused(node):
                self.recorder.note(f"{FAULT_NOTE}paused for {step.wait_ms} ms")
                threading.Event().wait(step.wait_ms / 1000)  # the fault's drawn duration, not a synchronisation
            self.recorder.note(f"{FAULT_NOTE}resumed")
            return
        self.broker.pause(node)
        self.recorder.note(f"{FAULT_NOTE}paused, {self._until(span)}")
        self._hold(span, lambda: self.broker.resume(node), f"{FAULT_NOTE}resumed")

    def _span(self) -> Span | None:
        """The span of the fault step being carried out, if it has one. One fault at a time: any under way is healed
        first (``with_spans`` never lets one span onto the next; a schedule's JSON edited by hand may)."""
        if self.outage is not None:
            self._heal()
        return None if self.at_step is None else span_at(self.schedule, self.at_step)

    @staticmethod
    def _until(span: Span) -> str:
        return (
            f"until the next {span.after} step{'s' if span.after > 1 else ''} ran (to step {span.last + 1}) or "
            f"{span.bound_ms} ms passed"
        )

    def _hold(self, span: Span, heal: Callable[[], None], healed: str) -> None:
        """The fault just begun held while the run goes on: a thread of its own heals it (``heal``, then the note
        ``healed``, once the broker answers again) when the run says the steps it spans are done (``_heal``) or its
        hold (``Span.bound_ms``) passed, whichever comes first."""
        outage = Outage(span, time.monotonic())

        def hold() -> None:
            try:
                outage.spanned.wait(max(0.0, outage.began + span.bound_ms / 1000 - time.monotonic()))  # bounded
                heal()
                self.recorder.note(healed)
            except BaseException as failed:
                outage.failed = failed
            finally:
                outage.healed_at = time.monotonic()
                outage.healed.set()

        self.outage = outage
        self.outages.append(outage)
        threading.Thread(target=hold, name="kconform-workload-fault", daemon=True).start()

    def _heal(self) -> None:
        """The fault under way, if any, healed now (its spanned steps are done) and awaited, within its ``heal_by``;
        a heal that failed or did not come in time is the harness's (``BrokerStartError``)."""
        outage, self.outage = self.outage, None
        if outage is None:
            return
        self._doing("run", "healing the fault")
        outage.spanned.set()
        outage.healed.wait(max(0.0, outage.heal_by - time.monotonic()))
        from ...brokers.base import BrokerStartError

        if not outage.healed.is_set():
            raise BrokerStartError(f"the fault begun at step {outage.span.step + 1} was not healed in time")
        if outage.failed is not None:
            raise BrokerStartError(
                f"the fault begun at step {outage.span.step + 1} could not be healed: {outage.failed}"
            )

    # the end

    def _owned_everywhere(self) -> bool:
        """Whether every partition the groups subscribe to is owned by a live member, and every live consumer
        reached the end of each partition it owns."""
        topics = self.kafka.list_topics()
        members = [s for s in self.consumers if s.live and s.plan.subscribe != "assign"]
        wanted: set[TopicPartition] = set()
        for slot in members:
            names = [t for t in topics if covers(slot.subscription, t)]
            wanted |= {TopicPartition(t, p) for t in names for p in topics[t]}
        owned = set().union(*(s.assigned for s in members)) if members else set()
        if not wanted <= owned:
            return False
        for slot in self.consumers:
            if not slot.live or slot.settings.get("auto.offset.reset") == "error":
                continue  # a consumer whose reset is an error reads nothing the group has no offset for
            isolation = Isolation(slot.settings.get("isolation.level", "read_committed"))
            consumer = slot.client
            assert consumer is not None
            parts = [ck.TopicPartition(tp.topic, tp.partition) for tp in sorted(slot.assigned)]
            positions = self._call(slot, "position", lambda c=consumer, o=parts: c.position(o), CALL_SLACK_S)  # type: ignore[misc]
            if positions is None:
                return False
            for position in positions:
                tp = tp_of(position)
                end = self.kafka.latest_offset(tp, isolation)
                if max(slot.ended.get(tp, -1), position.offset) < end:
                    return False
                self.drain_ends.setdefault(slot.group, {})[tp] = end
        return True

    def drain(self) -> None:
        """Every producer flushed; every consumer resumed, unstalled, and polled until the groups own every
        partition and every live consumer reached the end of what it owns, and every live group converged
        (``Convergence``), within bounds: the end of what it owns within the longest drawn poll interval or session
        timeout and ``DRAIN_SLACK_S``; while a group has not converged or a partition is not started, the drain waits
        on to ``convergence_bound``."""
        for producer in self.producers:
            if not producer.hung and producer.client is not None:
                self.flush(producer)
        for slot in self.consumers:
            slot.stalled = False
            if slot.live and slot.assigned:
                client = slot.client
                assert client is not None
                client.resume([ck.TopicPartition(tp.topic, tp.partition) for tp in slot.assigned])

        def bounds(start: float) -> tuple[int, float, float, str, float]:
            """The drain's bounds from ``start`` over the consumers then: the longest drawn wait, the deadline for
            reaching the end, the convergence bound and why, and the time groups must have converged by."""
            longest = self._longest_wait_ms()
            bound_s, why = self.convergence_bound()
            return longest, start + longest / 1000 + DRAIN_SLACK_S, bound_s, why, start + bound_s

        began, began_at = time.monotonic(), self.recorder.now()
        longest, deadline, bound_s, why, converge_by = bounds(began)
        changes: dict[str, list[tuple[float, str, int]]] = defaultdict(list)
        views: list[GroupView] = []
        problem: tuple[str, bool] | None = None
        described_at = 0.0
        gap, last = 0.0, began
        owned = False
        unstarted: list[Unstarted] = []
        late = self.schedule.late
        while True:
            now = time.monotonic()
            gap, last = max(gap, now - last), now
            self._poll_round(0.2)
            owned = self._owned_everywhere()
            if time.monotonic() - described_at >= DESCRIBE_EVERY_S or owned:
                views, problem = self._describe_groups(changes)
                described_at = time.monotonic()
            # a group no admin call can judge (the admin client lacks the call) is not waited for
            settled = all(v.converged for v in views) if problem is None else not problem[1]
            if owned and settled and late is not None:
                # the group settled: one more instance of a member's application starts (and, brief, stops), and
                # the drain starts over for the group it leaves
                self._join_late(late)  # a brief one polls every member while it starts: no gap in their polls
                late, owned, described_at, last = None, False, 0.0, time.monotonic()
                longest, deadline, bound_s, why, converge_by = bounds(last)  # counted from its join
                continue
            if owned and settled:
                unstarted = []
                break
            now = time.monotonic()
            if now >= deadline and not owned:
                unstarted = self._unstarted()
                if settled and not unstarted:
                    break  # nothing left but reading to the end: the drain's own bound, as before
            if now >= max(deadline, converge_by):
                if owned:
                    unstarted = []
                break
        if late is not None:
            self.recorder.note(f"c{len(self.consumers)} did not join late: the drain never found the group settled")
        if owned:
            self._poll_round(0.2)  # the end-of-partition events at the end, for the positions they carry
            for slot in self.consumers:
                if slot.live and slot.settings.get("auto.offset.reset") != "error":
                    self.read_to_end[slot.group] = self.read_to_end.get(slot.group, frozenset()) | slot.assigned
        else:
            self.drained = False
            self.recorder.note(f"the drain did not reach the end within {longest / 1000 + DRAIN_SLACK_S:g} s")
        self.convergence = replace(
            self._judged_convergence(views, problem, unstarted, bound_s, why, began, gap), began_at=began_at
        )

    def _longest_wait_ms(self) -> int:
        """The longest drawn poll interval or session timeout of the run's consumers (45 s at least): the drain's
        bound for reaching the end of what every consumer owns, less ``DRAIN_SLACK_S``."""
        return max(
            [
                int(s.settings.get(k, "0"))
                for s in self.consumers
                for k in ("max.poll.interval.ms", "session.timeout.ms")
            ]
            + [45_000]
        )

    def _join_late(self, late: Late) -> None:
        """The schedule's late member (``Schedule.late``) opens and subscribes, one more member of the run's group
        with the plan of the member it copies; a brief one (``Late.brief_ms``) then polls with every other live
        consumer until it is handed an assignment or ``brief_ms`` passed, and closes."""
        slot = ConsumerSlot(len(self.consumers), late.plan, self.group)
        self.consumers.append(slot)
        brief = "" if late.brief_ms is None else f", and closes within {late.brief_ms} ms or at its first assignment"
        self.recorder.note(f"c{slot.index} joins group {self.group} late, as c{late.of}: the group settled{brief}")
        self._doing("run", f"the drain: c{slot.index} joins late")
        self._open_consumer(slot)
        self._opened(
            f"c{slot.index}",
            ClientInfo(
                slot.settings,
                self.group,
                late.plan.subscribe,
                defaults=self._defaults("C") | (dict(CONSUMER_DEFAULTS) if classic_group(slot.settings) else {}),
                eager=self._eager(slot),
            ),
        )
        if late.brief_ms is None:
            return
        until, seen = time.monotonic() + late.brief_ms / 1000, 0
        while slot.live:
            fresh = self.recorder.events[seen:]  # a copy of what was recorded since the last look, never all again
            seen += len(fresh)
            handed = any(isinstance(e, Assigned) and e.client == slot.name for e in fresh)
            if handed or time.monotonic() >= until:
                self.close(slot)
                return
            self._poll_round(min(0.1, max(0.0, until - time.monotonic())))

    def convergence_bound(self) -> tuple[float, str]:
        """How long the drain waits for its groups to converge, and why: the longest, over every group member of
        the run, of its rebalance timeout (the ``max.poll.interval.ms`` a classic member joins with, and the time
        a consumer-protocol member has to revoke) and its session timeout, both of which the broker may wait out
        for a member that does not rejoin before the group is stable again, plus ``CONVERGE_SLACK_S``. Never
        shorter than the drain's own bound. Each setting as drawn, else as the workload or the release sets it."""
        longest, which = 0, ""
        defaults = self._defaults("C")
        for slot in self.consumers:
            if slot.plan.subscribe == "assign":
                continue
            poll = int(
                slot.settings.get("max.poll.interval.ms") or defaults.get("max.poll.interval.ms") or POLL_INTERVAL_MS
            )
            if classic_group(slot.settings):
                session = int(slot.settings.get("session.timeout.ms") or CONSUMER_DEFAULTS["session.timeout.ms"])
            else:
                session = CONSUMER_SESSION_MS
            if poll + session > longest:
                longest, which = (
                    poll + session,
                    f"c{slot.index}'s poll interval {poll / 1000:g} s and session {session / 1000:g} s",
                )
        if not longest:
            return 0.0, "no group member"
        return longest / 1000 + CONVERGE_SLACK_S, f"{which}, plus {CONVERGE_SLACK_S:g} s"

    def _describe_groups(
        self, changes: dict[str, list[tuple[float, str, int]]]
    ) -> tuple[list[GroupView], tuple[str, bool] | None]:
        """Each group with a live member as the broker describes it, beside what its live members own; and why the
        groups could not be described (with whether that is the broker's or the suite's doing), if so."""
        views: list[GroupView] = []
        problem: tuple[str, bool] | None = None
        groups = sorted({s.group for s in self.consumers if s.live and s.plan.subscribe != "assign"})
        topics: Mapping[str, frozenset[int]] = {}
        if groups:  # unlisted, the judge reads the group's shape without them (never-converged)
            with contextlib.suppress(KafkaError, ck.KafkaException):
                topics = self.kafka.list_topics()
        for group in groups:
            live = [s for s in self.consumers if s.live and s.group == group and s.plan.subscribe != "assign"]
            members = tuple((s.name, tuple(sorted(s.assigned))) for s in live)
            subscribed = tuple(
                TopicPartition(t, p)
                for t in sorted(topics)
                if any(covers(s.subscription, t) for s in live)
                for p in sorted(topics[t])
            )
            protocol = "classic" if classic_group(live[0].settings) else "consumer"
            names = {s.name for s in live}
            moved = [
                e.at for e in list(self.recorder.events) if e.client in names and isinstance(e, (Assigned, Revoked))
            ]
            state = ""
            described: tuple[tuple[str, tuple[TopicPartition, ...]], ...] = ()
            version = librdkafka_version()
            if not describes_consumer_groups(protocol, version):
                problem = (
                    f"the run's admin client (librdkafka {'.'.join(map(str, version))}) cannot describe group "
                    f"{group} of the consumer protocol: librdkafka describes such groups from "
                    f"{'.'.join(map(str, LIBRDKAFKA_DESCRIBES_CONSUMER_GROUPS))}",
                    False,
                )
                continue
            try:
                state, found = self.kafka.describe_group(group)
                described = tuple(found)
            except AttributeError as missing:
                problem = (f"the run's admin client cannot describe consumer groups ({missing})", False)
            except (KafkaError, ck.KafkaException) as failed:
                problem = (f"the broker did not describe group {group}: {error_text(failed)}", True)
            at = self.recorder.now()
            seen = changes[group]
            if state and (not seen or seen[-1][1:] != (state, len(described))):
                seen.append((round(at, 1), state, len(described)))
            views.append(
                GroupView(group, protocol, state, described, members, tuple(seen), max(moved, default=None), subscribed)
            )
        return views, problem

    def _unstarted(self) -> list[Unstarted]:
        """The partitions live consumers own with records past where each would start, of which each delivered
        nothing, got no end-of-partition event and has no position since it was handed it, and which it has not
        sought (``Unstarted``)."""
        events = list(self.recorder.events)
        found: list[Unstarted] = []
        defaults = self._defaults("C")
        for slot in self.consumers:
            reset = str(slot.settings.get("auto.offset.reset") or defaults.get("auto.offset.reset") or "largest")
            if not slot.live or not slot.assigned or reset in NO_START:
                continue
            client = slot.client
            assert client is not None
            parts = [ck.TopicPartition(tp.topic, tp.partition) for tp in sorted(slot.assigned)]
            positions = self._call(slot, "position", lambda c=client, o=parts: c.position(o), CALL_SLACK_S)  # type: ignore[misc]
            if positions is None:
                continue
            isolation = Isolation(
                slot.settings.get("isolation.level") or defaults.get("isolation.level") or "read_committed"
            )
            for position in positions:
                tp = tp_of(position)
                if position.offset >= 0 or tp in slot.ended:
                    continue
                since = max(
                    (e.at for e in events if e.client == slot.name and isinstance(e, Assigned) and tp in e.tps),
                    default=0.0,
                )
                touched = any(
                    e.client == slot.name
                    and e.at >= since
                    and (
                        (isinstance(e, Polled) and any(t == tp for t, _, _ in e.records))
                        or (isinstance(e, Seeked) and e.tp == tp)
                    )
                    for e in events
                )
                if touched:
                    continue
                committed = self.kafka.committed(slot.group, [tp]).get(tp, -1)
                if committed >= 0:
                    start = committed
                elif reset in EARLIEST_RESET:
                    start = self.kafka.earliest_offset(tp)
                else:
                    continue  # at the latest offset: nothing known to be past where it starts
                end = self.kafka.latest_offset(tp, isolation)
                if end > start:
                    found.append(Unstarted(slot.name, tp, start, end, round(since, 1)))
        return found

    def _judged_convergence(
        self,
        views: list[GroupView],
        problem: tuple[str, bool] | None,
        unstarted: list[Unstarted],
        bound_s: float,
        why: str,
        began: float,
        gap: float,
    ) -> Convergence:
        """The drain's ``Convergence``: what it found, or why it judged nothing (the admin could not describe a
        group; the driver polled a member more seldom than its poll interval lets a member stay in its group)."""
        waited = round(time.monotonic() - began, 1)
        unjudged, suite_fault = "", False
        if problem is not None or not all(v.converged for v in views) or unstarted:
            defaults = self._defaults("C")
            intervals = [
                int(s.settings.get("max.poll.interval.ms") or defaults.get("max.poll.interval.ms") or POLL_INTERVAL_MS)
                for s in self.consumers
                if s.live and s.plan.subscribe != "assign"
            ]
            unknown = [v.group for v in views if not v.converged and v.state == "UNKNOWN"]
            if problem is not None:
                unjudged, suite_fault = problem
            elif unknown:
                # librdkafka's admin API names no state of a consumer-protocol group but its own six: RECONCILING
                # and ASSIGNING read UNKNOWN, which tells a group still settling from one that never will nothing
                unjudged = f"the run's admin client described group(s) {unknown} in a state it names UNKNOWN"
            elif intervals and gap >= min(intervals) / 1000 - 2.0:
                unjudged, suite_fault = (
                    f"the driver polled its members only every {gap:.1f} s at worst in the drain, which a poll "
                    f"interval of {min(intervals) / 1000:g} s does not allow",
                    True,
                )
            if unjudged:
                self.recorder.note(f"whether the groups converged was not judged: {unjudged}")
            else:
                self.recorder.note(f"the groups had not converged after {waited:g} s (bound {bound_s:g} s: {why})")
        return Convergence(round(bound_s, 1), why, waited, tuple(views), tuple(unstarted), unjudged, suite_fault)

    def read_log(self) -> Log:
        """Every record of the run's partitions and what the groups committed (``read_log``), with a note of a
        partition an open transaction still held back."""
        log, held = read_log(self.kafka, self.prefix, sorted({s.group for s in self.consumers}))
        if held:
            self.recorder.note(held)
        return log

    def close_all(self) -> None:
        for slot in self.consumers:
            if slot.live:
                self.close(slot)
        for producer in self.producers:
            if not producer.hung and producer.client is not None:
                client = producer.client
                self._serve(producer, "flush", lambda client=client: client.flush(10.0), 10.0 + CALL_SLACK_S)  # type: ignore[misc]


def group_of(group: str, plan: ConsumerPlan, index: int) -> str:
    """The group consumer ``index`` of a run whose group is ``group`` commits to: the run's group for a member, one
    of its own for a consumer assigned by hand."""
    return group if plan.subscribe != "assign" else f"{group}-m{index}"


def read_log(kafka: KafkaClient, prefix: str, groups: Sequence[str]) -> tuple[Log, str]:
    """Every record of the partitions of the run of ``prefix``, and those ``read_committed`` returns, once no
    transaction holds back a partition's last stable offset (within ``STABLE_WITHIN_S``): a transaction committed
    just before a broker was killed is visible only once the restarted coordinator has written its markers, and a
    log read before that would show its records as never committed. With it, what ``groups`` committed, and a note
    naming the partitions still held back when the bound passed (empty when none)."""
    topics = kafka.list_topics()
    tps = [TopicPartition(t, p) for t in sorted(topics) if t.startswith(f"{prefix}-") for p in sorted(topics[t])]

    deadline = time.monotonic() + STABLE_WITHIN_S
    held: list[TopicPartition] = []

    def read() -> (
        tuple[
            dict[TopicPartition, list[Record]],
            dict[TopicPartition, int],
            dict[TopicPartition, list[Record]],
            dict[TopicPartition, int],
        ]
        | None
    ):
        everything, ends = kafka.read_partitions(tps, Isolation.READ_UNCOMMITTED)
        visible, stable_ends = kafka.read_partitions(tps, Isolation.READ_COMMITTED)
        held[:] = [tp for tp in tps if stable_ends[tp] < ends[tp]]
        if held and time.monotonic() < deadline:
            return None
        return everything, ends, visible, stable_ends

    everything, ends, committed_read, stable_ends = wait_until(
        read, STABLE_WITHIN_S + 2 * kafka.timeout_s + 5.0, "the run's partitions read", step_s=0.2
    )
    records = {tp: [(r.offset, r.value) for r in everything[tp]] for tp in tps}
    committed = {tp: frozenset(r.offset for r in committed_read[tp]) for tp in tps}
    group_offsets = {g: dict(kafka.committed(g, tps)) for g in sorted(groups)}
    note = f"still held back by an open transaction after {STABLE_WITHIN_S:g} s: {held}" if held else ""
    return Log(records, committed, ends, group_offsets, stable_ends), note


def accepts(role: str, name: str, value: str) -> bool:
    """Whether the confluent-kafka this interpreter imports has property ``name`` for ``role`` (C or P): librdkafka
    refuses an unknown one when the client is configured, before it connects to anything."""
    build: Callable[[dict[str, Any]], Any] = ck.Consumer if role == "C" else ck.Producer
    config: dict[str, Any] = {name: typed({name: value})[name], "log_level": 0}
    if role == "C":
        config["group.id"] = "kconform-probe"
    try:
        client = build(config)
    except ck.KafkaException as refused:
        return "No such configuration property" not in error_text(refused)
    except (TypeError, ValueError):
        return True  # a value of the wrong type for a property the release has
    if role == "C":
        client.close()
    return True
