"""The source's offsets JSON: the Spark counterpart of Flink's union list state (RESTORE-001).

Spark stores whatever dict the source returns in its offset log and compares offsets *as JSON
text*, so the encoding must be canonical (sorted keys at every level, partition ids as strings as
JSON gives them back). The entry carries the parallelism it was planned with, so a batch replayed
from the log is planned exactly as it first was, and a new ``parallelism`` option takes effect at
the next batch boundary (rescale). ``first`` holds the resolved start of partitions discovered in
this batch, so their EARLIEST is resolved once and replayed identically (DISC-005, RESTORE-004).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from ..types import TopicPartition

VERSION: Final = 1


class OffsetsFormatError(ValueError):
    """An offsets JSON this version cannot read (another version, or a malformed entry)."""


@dataclass(frozen=True, slots=True)
class SourceOffsets:
    """Next offsets of every partition read so far, the parallelism, and this batch's new partitions."""

    parallelism: int
    offsets: Mapping[TopicPartition, int]
    first: Mapping[TopicPartition, int] = field(default_factory=dict)

    def start_of(self, tp: TopicPartition, previous: SourceOffsets) -> int:
        """Where this batch reads ``tp`` from: the previous end, else the start resolved at discovery."""
        if tp in previous.offsets:
            return previous.offsets[tp]
        return self.first[tp]

    def to_json(self) -> dict[str, Any]:
        """The canonical dict: its key order is ``json.dumps(..., sort_keys=True)``'s."""
        raw = {
            "version": VERSION,
            "parallelism": self.parallelism,
            "offsets": _nest(self.offsets),
            "first": _nest(self.first),
        }
        canonical: dict[str, Any] = json.loads(json.dumps(raw, sort_keys=True))
        return canonical

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> SourceOffsets:
        version = data.get("version")
        if version != VERSION:
            raise OffsetsFormatError(f"offsets JSON version {version!r} is not supported (expected {VERSION})")
        try:
            parallelism = int(data["parallelism"])
            return cls(parallelism, _flat(data["offsets"]), _flat(data.get("first", {})))
        except (KeyError, TypeError, ValueError, AttributeError) as error:
            raise OffsetsFormatError(f"malformed offsets JSON {dict(data)!r}: {error}") from error

    def same_progress(self, other: SourceOffsets) -> bool:
        """Whether both describe the same read position (``first`` and parallelism do not count)."""
        return dict(self.offsets) == dict(other.offsets)


def _nest(offsets: Mapping[TopicPartition, int]) -> dict[str, dict[str, int]]:
    nested: dict[str, dict[str, int]] = {}
    for tp, offset in offsets.items():
        nested.setdefault(tp.topic, {})[str(tp.partition)] = offset
    return nested


def _flat(nested: Mapping[str, Mapping[str, int]]) -> dict[TopicPartition, int]:
    return {TopicPartition(topic, int(p)): int(o) for topic, parts in nested.items() for p, o in parts.items()}
