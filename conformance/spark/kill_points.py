"""Where the killed-driver scenario kills a driver: points drawn from what any connector shows from outside.

A kill point is data, ``(source, k, delay_ms)``: wait for the ``k+1``-th new event of ``source`` after the driver
started, then ``delay_ms`` more, then SIGKILL the driver's process group. The sources are what Spark and Kafka
show of any connector, not steps of the reference's own design, so a connector with a step the reference lacks
(a driver that commits its progress marker after its tasks' transactions) is killed inside it too:

- ``offsets``, ``commits``: a new entry in the checkpoint's offset log (a batch planned, its tasks about to run) or
  commit log (a batch done);
- ``sink-written``: the sink topic's high watermark moved (records written, committed or not, or a transaction's
  marker);
- ``sink-committed``: its read_committed end (the last stable offset) moved: a transaction ended, almost always a
  commit (an abort of one a killed driver left open moves it too, when the restart fences it);
- ``progress``: the driver printed a line for a progress event of its query (``DriverRun.log_progress``: a
  ``StreamingQueryListener``; Spark posts one when a batch has run);
- ``clock``: no event; the kill lands ``delay_ms`` after the driver's start, drawn over the span a driver's run
  takes (its session's start included).

The sink's ends are polled every ``SINK_POLL_S``; an advance is a poll that sees any partition's end past where the
last poll saw it, so two transactions ending between two polls are one advance. A point the driver never reaches
(it finished first) is counted, not failed. Everything here but ``SinkEnds`` is pure.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

from ...reference_impl.ports import Isolation
from ...reference_impl.types import TopicPartition

if TYPE_CHECKING:  # the pure part imports nothing of the pipeline extra (confluent-kafka)
    from ...reference_impl.kafka_client import KafkaClient

CHECKPOINT_LOGS: Final = ("offsets", "commits")
"""Spark checkpoint logs a kill waits on: a batch planned (tasks about to run) or a batch committed."""
SINK_WRITTEN: Final = "sink-written"
SINK_COMMITTED: Final = "sink-committed"
SINK_ENDS: Final = (SINK_WRITTEN, SINK_COMMITTED)
"""The sink topic's ends a kill waits on: the high watermark, and the read_committed end."""
PROGRESS: Final = "progress"
PROGRESS_LINE: Final = "kconform driver: query progress, batch "
"""How a driver with ``DriverRun.log_progress`` starts the line it prints for each of its query's progress events."""
CLOCK: Final = "clock"
EVENT_SOURCES: Final = (*CHECKPOINT_LOGS, *SINK_ENDS, PROGRESS)
"""The sources a kill waits on the ``k+1``-th new event of."""
KILL_SOURCES: Final = (*EVENT_SOURCES, CLOCK)
EVENT_DELAY_MS: Final = 1500
"""The longest delay drawn after an event: about a batch's tasks, so a kill lands anywhere inside them."""
CLOCK_SPAN_MS: Final = 25_000
"""The longest delay drawn from a driver's start: its session's start (about 7 s here) and the query's batches."""
SINK_POLL_S: Final = 0.02
"""How often the sink's ends are asked for, or the driver's log read, while a kill waits on them (one ListOffsets
per partition each); a checkpoint log is listed every 10 ms."""

KillPoint = tuple[str, int, int]
"""``(source, k, delay_ms)``: see the module docstring."""


def check_kill_point(point: KillPoint) -> KillPoint:
    """``point`` if it is well formed, else a ``ValueError`` naming what is wrong (a clock point waits on no event)."""
    source, k, delay_ms = point
    if source not in KILL_SOURCES:
        raise ValueError(f"kill point {point}: source {source!r} is none of {KILL_SOURCES}")
    if k < 0 or delay_ms < 0:
        raise ValueError(f"kill point {point}: k and delay_ms must not be negative")
    if source == CLOCK and k != 0:
        raise ValueError(f"kill point {point}: a clock point waits on no event, so its k is 0")
    limit = CLOCK_SPAN_MS if source == CLOCK else EVENT_DELAY_MS
    if delay_ms > limit:
        raise ValueError(f"kill point {point}: delay_ms above {limit}")
    return point


def progress_lines(output: str) -> int:
    """How many progress events a driver's ``output`` reports (its lines that start with ``PROGRESS_LINE``)."""
    return sum(line.startswith(PROGRESS_LINE) for line in output.splitlines())


def events_reached(seen: int, now: int, k: int) -> bool:
    """Whether the ``k+1``-th new event after ``seen`` (events counted when the driver started) has happened."""
    return now > seen + k


@dataclass(frozen=True)
class Advances:
    """What a watcher of a topic's ends has seen: the ends at its last poll and how many polls saw them move."""

    ends: Mapping[int, int]
    count: int = 0

    def observe(self, ends: Mapping[int, int]) -> Advances:
        """The watcher after a poll that found ``ends`` (partition -> end offset): one advance when any partition's
        end is past where the last poll saw it (a partition new since counts from 0); ends seen lower (a reading
        from a lagging replica) are not advances and are kept as the highest seen."""
        moved = any(end > self.ends.get(p, 0) for p, end in ends.items())
        merged = {**self.ends, **{p: max(end, self.ends.get(p, 0)) for p, end in ends.items()}}
        return Advances(merged, self.count + moved)

    def reached(self, k: int) -> bool:
        """Whether the ``k+1``-th advance since the watch began has been seen."""
        return events_reached(0, self.count, k)


def landed_by_source(
    points: Iterable[KillPoint], landed: Iterable[bool], before: Mapping[str, Mapping[str, int]] | None = None
) -> dict[str, dict[str, int]]:
    """Per source of ``points``: how many kills landed (the driver was running when killed) and how many were never
    reached (the driver finished first), added to ``before`` (the counts of a test's earlier examples), for the
    test's ``record_property``; every source appears, 0 where none."""
    tally: Counter[tuple[str, bool]] = Counter((p[0], hit) for p, hit in zip(points, landed, strict=True))
    earlier = before or {}
    return {
        s: {
            "landed": tally[(s, True)] + earlier.get(s, {}).get("landed", 0),
            "not_reached": tally[(s, False)] + earlier.get(s, {}).get("not_reached", 0),
        }
        for s in KILL_SOURCES
    }


class SinkEnds:
    """Polls a topic's ends at one isolation level through the suite's Kafka client (ListOffsets latest: the high
    watermark at read_uncommitted, the last stable offset at read_committed)."""

    def __init__(self, kafka: KafkaClient, topic: str, isolation: Isolation) -> None:
        self._kafka = kafka
        self._partitions = [TopicPartition(topic, p) for p in sorted(kafka.list_topics().get(topic, ()))]
        self._isolation = isolation

    def __call__(self) -> dict[int, int]:
        return {tp.partition: self._kafka.latest_offset(tp, self._isolation) for tp in self._partitions}

    @classmethod
    def of(cls, kafka: KafkaClient, topic: str, source: str) -> SinkEnds:
        """The ends ``source`` (``sink-written`` or ``sink-committed``) waits on."""
        return cls(kafka, topic, Isolation.READ_UNCOMMITTED if source == SINK_WRITTEN else Isolation.READ_COMMITTED)
