"""Seeded fault schedules for ``kconform soak``: pure data, drawn without I/O.

A ``Schedule`` is a list of ``Segment``s, each one driver process of the source-to-sink query on one
checkpoint. A segment runs at a parallelism (``rescale`` when it differs from the previous one's)
and carries faults in firing order. A fault is anchored to a phase of the driver's micro-batches:
``offsets+k`` fires when the driver's ``k+1``-th new entry appears in the checkpoint's offset log (a
batch planned, its tasks about to run), ``commits+k`` on its ``k+1``-th new commit-log entry (a
batch done), each after ``delay_ms`` more; ``txn+k``, for broker faults only, once the driver has
``k`` new commit-log entries, the first moment the sink holds an open transaction with records (its
high watermark above its last stable offset): inside a task's transactional write, or while its
commit markers are being written. A fault without an anchor fires before the segment's driver starts (between batches).
A segment ends with its driver killed (``driver-kill``, always its last fault) or run to the end of
what was available when it started. The last segment is the
final run: records are no longer produced, it has no anchored faults and must end cleanly.

Schedule ``i`` of seed ``S`` comes from ``random.Random(f"kconform-soak:{S}:{i}")`` alone, so it
can be replayed without drawing the ones before it (``--only-schedule i``). Only the kinds the
run can do are drawn (see ``NEEDS``): ``leader-kill`` needs ``kafka-cluster``, ``executor-kill`` a
standalone Spark cluster (``--spark-master standalone``) with executor JVMs to kill, ``commit-stall``
and the ``txn+k`` anchors an exactly-once sink (an at-least-once one opens no transaction). An
executor-kill is anchored like a ``driver-kill@planned`` (an offset-log entry + delay: the batch's
tasks are running) and names the worker whose executor it kills. A ``commit-stall`` holds back the
answer to the first transaction commit (EndTxn) a task sends after its anchor, longer than the
clients' timeout: the node committed, the task's ``commit_transaction`` timed out.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import Any, Final, Literal

from .guarantee import Guarantee


class FaultKind(StrEnum):
    DRIVER_KILL = "driver-kill"
    BROKER_RESTART_CLEAN = "broker-restart-clean"
    BROKER_KILL = "broker-kill"
    LEADER_KILL = "leader-kill"
    NODE_PAUSE = "node-pause"
    ADD_PARTITIONS = "add-partitions"
    ADD_TOPIC = "add-topic"
    RESCALE = "rescale"
    EXECUTOR_KILL = "executor-kill"
    COMMIT_STALL = "commit-stall"


class Phase(StrEnum):
    """Where in a micro-batch a driver is killed."""

    PLANNED = "planned"
    """After the batch's offset-log entry (+ delay): its tasks are reading and writing."""
    COMMITTED = "committed"
    """After the batch's commit-log entry (+ delay): between batches, or the next one being planned."""
    TORN = "torn"
    """After the tasks committed their transactions, before the commit log recorded the batch: the
    kill lands on the commit-log entry and the entry is removed (it had not been written), so the
    restart replays a batch whose output is already committed. Never applied once the next batch is
    planned (a real crash cannot lose an offset-log entry written before it)."""


Log = Literal["offsets", "commits", "txn"]
PHASE_LOG: Final[dict[Phase, Log]] = {Phase.PLANNED: "offsets", Phase.COMMITTED: "commits", Phase.TORN: "commits"}

BROKER_FAULTS: Final = frozenset(
    {FaultKind.BROKER_RESTART_CLEAN, FaultKind.BROKER_KILL, FaultKind.LEADER_KILL, FaultKind.NODE_PAUSE}
)
TOPOLOGY_FAULTS: Final = frozenset({FaultKind.ADD_PARTITIONS, FaultKind.ADD_TOPIC})
SOAK_BROKERS: Final = ("kafka", "kafka-cluster")
"""Brokers a soak runs on: it restarts, kills and pauses their nodes and adds partitions (Tansu cannot)."""
NODES: Final = {"kafka": 1, "kafka-cluster": 3}

NEEDS: Final[dict[FaultKind, str]] = {
    FaultKind.LEADER_KILL: "--broker kafka-cluster (a multi-node broker)",
    FaultKind.EXECUTOR_KILL: (
        "--spark-master standalone (executor JVMs to kill; on local[n] the executor is the driver's JVM, "
        "which driver-kill already kills)"
    ),
    FaultKind.COMMIT_STALL: "an adapter with an exactly-once sink (it holds back a transaction's commit; "
    "an at-least-once sink commits none)",
}
"""Fault kinds drawn only on some runs, with what they need; ``kconform soak --help`` prints it."""
EXECUTOR_WORKERS: Final = 2
"""The standalone cluster's workers (``kconform.conformance.spark.cluster.DEFAULT_SHAPE``), one executor each."""

CLIENT_TIMEOUT_MS: Final = 10_000
"""The drivers' client timeout (``SourceSpec.client_timeout_ms``, ``SinkSpec.client_timeout_ms``)."""
PAUSE_MS: Final = (CLIENT_TIMEOUT_MS + 1_000, CLIENT_TIMEOUT_MS + 5_000)
"""A paused node stays stopped, and a commit's answer is held back, longer than the clients' timeout."""
NEEDS_A_RUNNING_DRIVER: Final = frozenset({FaultKind.DRIVER_KILL, FaultKind.EXECUTOR_KILL, FaultKind.COMMIT_STALL})
"""Kinds that act on the running query: not injected when its driver ended before their anchor."""
LEADER_DOWN_MS: Final = (2_000, 6_000)
MAX_PARALLELISM: Final = 4
MAX_ENTRY: Final = 3
MAX_DELAY_MS: Final = 1_500
IN_TRANSACTION_SHARE: Final = 0.5
"""The share of broker faults anchored inside a transactional write (``txn+k``) rather than at a batch's edge."""


def available_kinds(
    broker: str, executors: bool = False, guarantee: Guarantee = Guarantee.EXACTLY_ONCE
) -> frozenset[FaultKind]:
    """The kinds a schedule on ``broker`` may draw (``executors``: a standalone cluster's executor JVMs to kill;
    ``guarantee``: the sink's, whose transactions a ``commit-stall`` needs)."""
    if broker not in SOAK_BROKERS:
        raise ValueError(f"a soak runs on {' or '.join(SOAK_BROKERS)}, not {broker!r}")
    kinds = set(FaultKind) - {FaultKind.EXECUTOR_KILL, FaultKind.LEADER_KILL, FaultKind.COMMIT_STALL}
    if broker == "kafka-cluster":
        kinds.add(FaultKind.LEADER_KILL)
    if executors:
        kinds.add(FaultKind.EXECUTOR_KILL)
    if guarantee is Guarantee.EXACTLY_ONCE:
        kinds.add(FaultKind.COMMIT_STALL)
    return frozenset(kinds)


@dataclass(frozen=True, order=True)
class Anchor:
    """The ``entry + 1``-th new entry of a driver's ``log`` (``txn``: the sink's first open transaction after
    ``entry`` new commit-log entries), then ``delay_ms``."""

    entry: int
    log: Log
    delay_ms: int

    def __str__(self) -> str:
        return f"{self.log}+{self.entry}+{self.delay_ms}ms"


@dataclass(frozen=True)
class Fault:
    kind: FaultKind
    anchor: Anchor | None = None
    """None: before the segment's driver starts."""
    phase: Phase | None = None
    """driver-kill only."""
    node: int | None = None
    """The node a broker fault hits (leader-kill: None, the sink partition's leader at that moment);
    executor-kill: the worker whose executor of the running application is killed."""
    duration_ms: int = 0
    """node-pause: how long the node stays stopped; leader-kill: how long it stays down; commit-stall: how
    long the answer to the commit is held back."""
    amount: int = 0
    """add-partitions: partitions added to a source topic; add-topic: the new topic's partitions;
    rescale: the new parallelism."""

    def label(self) -> str:
        """``driver-kill@torn``, ``rescale->3``, ``node-pause(node 2, 12000ms)``, ..."""
        if self.kind is FaultKind.DRIVER_KILL:
            return f"{self.kind}@{self.phase}"
        if self.kind is FaultKind.RESCALE:
            return f"{self.kind}->{self.amount}"
        if self.kind in TOPOLOGY_FAULTS:
            return f"{self.kind}(+{self.amount})"
        if self.kind is FaultKind.EXECUTOR_KILL:
            return f"{self.kind}(worker {self.node})"
        if self.kind is FaultKind.COMMIT_STALL:
            return f"{self.kind}({self.duration_ms}ms)"
        detail = [f"node {self.node}"] if self.node is not None else []
        detail += [f"{self.duration_ms}ms"] if self.duration_ms else []
        return f"{self.kind}({', '.join(detail)})" if detail else str(self.kind)

    def describe(self) -> str:
        return f"{self.label()} at {self.anchor or 'start'}"

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": str(self.kind),
            "anchor": None if self.anchor is None else str(self.anchor),
            "phase": None if self.phase is None else str(self.phase),
            "node": self.node,
            "duration_ms": self.duration_ms,
            "amount": self.amount,
        }


@dataclass(frozen=True)
class Segment:
    """One driver process: its parallelism and its faults in firing order (a driver-kill last)."""

    parallelism: int
    faults: tuple[Fault, ...] = ()

    @property
    def kill(self) -> Fault | None:
        last = self.faults[-1] if self.faults else None
        return last if last is not None and last.kind is FaultKind.DRIVER_KILL else None


@dataclass(frozen=True)
class Schedule:
    seed: int
    index: int
    broker: str
    segments: tuple[Segment, ...]
    """The last one is the final run (no records produced, no anchored faults, no kill)."""
    records_per_s: int = 20
    source_partitions: int = 3
    sink_partitions: int = 2
    max_records_per_trigger: int = 40
    notes: tuple[str, ...] = field(default=())

    def faults(self) -> Iterator[Fault]:
        for segment in self.segments:
            yield from segment.faults

    def kinds(self) -> Counter[FaultKind]:
        return Counter(f.kind for f in self.faults())

    def describe(self) -> str:
        """One line per segment: ``run 1 (n=2): add-topic(+2) at start; driver-kill@planned at offsets+1+300ms``."""
        lines = []
        for number, segment in enumerate(self.segments, 1):
            what = "; ".join(f.describe() for f in segment.faults) or "no faults"
            final = ", final: to the end" if number == len(self.segments) else ""
            lines.append(f"run {number} (n={segment.parallelism}{final}): {what}")
        return "\n".join(lines)

    def to_json(self) -> dict[str, Any]:
        return {
            "seed": self.seed,
            "index": self.index,
            "broker": self.broker,
            "records_per_s": self.records_per_s,
            "source_partitions": self.source_partitions,
            "sink_partitions": self.sink_partitions,
            "max_records_per_trigger": self.max_records_per_trigger,
            "segments": [
                {"parallelism": s.parallelism, "faults": [f.to_json() for f in s.faults]} for s in self.segments
            ],
        }


def schedule_rng(seed: int, index: int) -> random.Random:
    """The generator of schedule ``index`` of ``seed``, independent of every other schedule's."""
    return random.Random(f"kconform-soak:{seed}:{index}")


def draw_schedule(
    seed: int, index: int, broker: str = "kafka", kinds: Iterable[FaultKind] | None = None, max_segments: int = 2,
    executors: bool = False, guarantee: Guarantee = Guarantee.EXACTLY_ONCE,
) -> Schedule:  # fmt: skip
    """Schedule ``index`` of ``seed`` on ``broker``, drawing only ``kinds`` (default: all the run can do).

    ``max_segments`` bounds the killable driver runs before the final one (each costs a Spark start);
    ``executors``: the drivers run on a standalone cluster, whose executors ``executor-kill`` kills;
    ``guarantee``: the sink's (at-least-once: no ``commit-stall``, no ``txn+k`` anchor, there is no transaction).
    """
    possible = available_kinds(broker, executors, guarantee)
    allowed = possible if kinds is None else frozenset(kinds)
    unknown = allowed - possible
    if unknown:
        needs = "; ".join(f"{kind} needs {NEEDS[kind]}" for kind in sorted(unknown))
        raise ValueError(f"this run cannot do {', '.join(sorted(unknown))}: {needs}")
    rng = schedule_rng(seed, index)
    extras = sorted(allowed - {FaultKind.DRIVER_KILL, FaultKind.RESCALE})
    segments: list[Segment] = []
    parallelism = rng.randint(1, MAX_PARALLELISM)
    count = rng.randint(1, max(1, max_segments))
    for number in range(count + 1):
        final = number == count
        faults: list[Fault] = []
        if number and FaultKind.RESCALE in allowed and rng.random() < 0.45:
            parallelism = rng.choice([n for n in range(1, MAX_PARALLELISM + 1) if n != parallelism])
            faults.append(Fault(FaultKind.RESCALE, amount=parallelism))
        if not final:
            anchored: list[Fault] = []
            for kind in rng.sample(extras, k=min(len(extras), rng.choice((0, 1, 1, 2, 2)))):
                fault = _draw_extra(rng, kind, broker, guarantee is Guarantee.EXACTLY_ONCE)
                (anchored if fault.anchor is not None else faults).append(fault)
            faults += sorted(anchored, key=lambda f: f.anchor or Anchor(-1, "offsets", 0))
            if FaultKind.DRIVER_KILL in allowed and (rng.random() < 0.8 or not faults):
                faults.append(_draw_kill(rng, max((f.anchor.entry for f in anchored if f.anchor), default=0)))
        segments.append(Segment(parallelism, tuple(faults)))
    return Schedule(seed, index, broker, tuple(segments))


def _anchor(rng: random.Random, log: Log, at_least: int = 0) -> Anchor:
    return Anchor(rng.randint(at_least, max(at_least, MAX_ENTRY)), log, rng.randint(0, MAX_DELAY_MS))


def _draw_kill(rng: random.Random, at_least: int) -> Fault:
    phase = rng.choice(list(Phase))
    anchor = _anchor(rng, PHASE_LOG[phase], at_least + 1 if at_least else 0)
    if phase is Phase.TORN:
        anchor = Anchor(anchor.entry, anchor.log, 0)  # the kill must land on the entry
    return Fault(FaultKind.DRIVER_KILL, anchor, phase=phase)


def _draw_extra(rng: random.Random, kind: FaultKind, broker: str, transactional: bool) -> Fault:
    log: Log = rng.choice(("offsets", "commits"))
    if kind is FaultKind.EXECUTOR_KILL:  # as driver-kill@planned: inside a batch, its tasks running
        return Fault(kind, _anchor(rng, PHASE_LOG[Phase.PLANNED]), node=rng.randint(1, EXECUTOR_WORKERS))
    if kind in TOPOLOGY_FAULTS:
        anchor = None if rng.random() < 0.35 else _anchor(rng, log)
        return Fault(kind, anchor, amount=rng.randint(1, 2))
    if kind is FaultKind.COMMIT_STALL:  # the next commit after the anchor, whenever a task sends it
        return Fault(kind, _anchor(rng, log), duration_ms=rng.randint(*PAUSE_MS))
    node = rng.randint(1, NODES[broker])
    if kind is FaultKind.NODE_PAUSE:
        fault = Fault(kind, _anchor(rng, log), node=node, duration_ms=rng.randint(*PAUSE_MS))
    elif kind is FaultKind.LEADER_KILL:
        fault = Fault(kind, _anchor(rng, log), duration_ms=rng.randint(*LEADER_DOWN_MS))
    else:
        fault = Fault(kind, _anchor(rng, log), node=node)
    if transactional and rng.random() < IN_TRANSACTION_SHARE:
        assert fault.anchor is not None
        fault = replace(fault, anchor=Anchor(fault.anchor.entry, "txn", 0))
    return fault


def draw_schedules(
    seed: int, count: int, broker: str = "kafka", kinds: Iterable[FaultKind] | None = None, max_segments: int = 2,
    executors: bool = False, guarantee: Guarantee = Guarantee.EXACTLY_ONCE,
) -> list[Schedule]:  # fmt: skip
    chosen = None if kinds is None else frozenset(kinds)
    return [draw_schedule(seed, i, broker, chosen, max_segments, executors, guarantee) for i in range(count)]


def parse_kinds(
    text: str, broker: str, executors: bool = False, guarantee: Guarantee = Guarantee.EXACTLY_ONCE
) -> frozenset[FaultKind]:
    """``driver-kill,rescale`` -> the kinds; an unknown or impossible one is a ``ValueError`` naming what it needs."""
    kinds: set[FaultKind] = set()
    for name in filter(None, (part.strip() for part in text.split(","))):
        try:
            kind = FaultKind(name)
        except ValueError:
            raise ValueError(f"unknown fault kind {name!r}; kinds: {', '.join(FaultKind)}") from None
        if kind not in available_kinds(broker, executors, guarantee):
            raise ValueError(f"{kind} needs {NEEDS[kind]}")
        kinds.add(kind)
    if not kinds:
        raise ValueError("--faults names no fault kind")
    return frozenset(kinds)
