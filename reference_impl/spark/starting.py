"""Where a fresh query starts: option ``startingOffsets`` (pure; the source supplies the broker's answers).

``earliest`` or ``latest`` for every partition found at start, or a JSON object of per-partition
next offsets in the notation of Spark's own Kafka source: ``{"orders": {"0": 42, "1": -2}}``, with
``-2`` for earliest and ``-1`` for latest. As in Spark, the JSON must name every partition the
subscription finds at start and nothing else, and a named offset must exist (between the
partition's earliest and latest offsets): a mistyped offset fails the query at start instead of
silently skipping or re-reading data. Partitions discovered later always start at EARLIEST
(DISC-005), whatever this option says. Flink's counterpart is ``OffsetsInitializer``
(``earliest()``, ``latest()``, ``offsets(map)``).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Final

from ..types import EARLIEST, LATEST, TopicPartition

OPTION: Final = "startingOffsets"
NAMED: Final = {"earliest": EARLIEST, "latest": LATEST}
Lookup = Callable[[TopicPartition], int]
"""The broker's earliest (or latest) offset of a partition."""


class StartingOffsetsError(ValueError):
    """``startingOffsets`` is malformed or does not fit the partitions found; the message says how."""


@dataclass(frozen=True, slots=True)
class StartingOffsets:
    """Every partition at ``default`` (EARLIEST or LATEST), or exactly the ``specific`` ones."""

    default: int | None
    specific: Mapping[TopicPartition, int] = field(default_factory=dict)

    @classmethod
    def parse(cls, raw: str) -> StartingOffsets:
        if raw in NAMED:
            return cls(NAMED[raw])
        if not raw.lstrip().startswith("{"):
            raise StartingOffsetsError(f"option {OPTION!r} must be earliest, latest or a JSON object, got {raw!r}")
        try:
            data = json.loads(raw)
        except json.JSONDecodeError as error:
            raise StartingOffsetsError(f"option {OPTION!r} is not valid JSON: {error}") from None
        specific: dict[TopicPartition, int] = {}
        for topic, partitions in data.items() if isinstance(data, dict) else ():
            if not isinstance(partitions, dict):
                raise StartingOffsetsError(f"option {OPTION!r}: {topic!r} must map partition ids to offsets")
            for partition, offset in partitions.items():
                if not partition.isdigit() or type(offset) is not int or offset < EARLIEST:
                    raise StartingOffsetsError(
                        f"option {OPTION!r}: {topic!r} [{partition}] -> {offset!r}; want a partition id and "
                        f"an offset >= 0, or {EARLIEST} (earliest) / {LATEST} (latest)"
                    )
                specific[TopicPartition(topic, int(partition))] = offset
        if not specific:
            raise StartingOffsetsError(f"option {OPTION!r}: the JSON names no partition: {raw!r}")
        return cls(None, specific)

    def resolve(
        self,
        found: set[TopicPartition],
        earliest: Lookup,
        latest: Lookup,
    ) -> dict[TopicPartition, int]:
        """The next offset of every partition in ``found``, given the broker's earliest and latest."""
        if self.default is not None:
            return {tp: self._bound(self.default, tp, earliest, latest) for tp in found}
        missing, extra = sorted(found - self.specific.keys()), sorted(self.specific.keys() - found)
        if missing:
            raise StartingOffsetsError(
                f"option {OPTION!r} gives no offset for {_names(missing)}; name every subscribed partition "
                f"({EARLIEST} for earliest, {LATEST} for latest)"
            )
        if extra:
            raise StartingOffsetsError(f"option {OPTION!r} names {_names(extra)}, which the subscription did not find")
        resolved = {tp: self._bound(o, tp, earliest, latest) for tp, o in self.specific.items()}
        for tp, offset in sorted(resolved.items()):
            low, high = earliest(tp), latest(tp)
            if not low <= offset <= high:
                raise StartingOffsetsError(
                    f"option {OPTION!r}: offset {offset} of {tp} is outside its log [{low}, {high}]"
                )
        return resolved

    @staticmethod
    def _bound(
        offset: int,
        tp: TopicPartition,
        earliest: Callable[[TopicPartition], int],
        latest: Callable[[TopicPartition], int],
    ) -> int:
        return earliest(tp) if offset == EARLIEST else latest(tp) if offset == LATEST else offset


def _names(partitions: list[TopicPartition]) -> str:
    return ", ".join(f"{tp.topic} [{tp.partition}]" for tp in partitions)
