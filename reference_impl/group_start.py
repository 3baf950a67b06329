"""Where a fresh source starts when told to start from its consumer group's committed offsets (RESTORE-018).

Flink's ``OffsetsInitializer.committedOffsets(strategy)``: each partition at the group's committed offset; a
partition the group has none for at the strategy (EARLIEST or LATEST), or, with none (``NONE``, the default),
the start fails naming it, as Kafka's consumer does with ``auto.offset.reset=none``. Never a silent default.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from .types import EARLIEST, LATEST, TopicPartition

FALLBACKS = (EARLIEST, LATEST)
"""The start positions a partition without a committed offset may be told to take instead of failing."""


class NoCommittedOffsetError(ValueError):
    """The start from group offsets failed: some partitions have no committed offset and no fallback is set."""

    def __init__(self, group: str, partitions: Iterable[TopicPartition]) -> None:
        self.partitions = sorted(partitions)
        names = ", ".join(str(tp) for tp in self.partitions)
        super().__init__(
            f"group {group!r} has no committed offset for partitions {names} and no fallback is configured: "
            "commit offsets for them, or start with a fallback (earliest or latest)"
        )


def committed_start(
    group: str,
    partitions: Iterable[TopicPartition],
    committed: Mapping[TopicPartition, int],
    fallback: int | None,
) -> dict[TopicPartition, int]:
    """Each partition's start: its committed offset, else ``fallback`` (the EARLIEST or LATEST sentinel, resolved
    at the first read as any start is); ``NoCommittedOffsetError`` naming every partition without one when
    ``fallback`` is ``None``."""
    if fallback is not None and fallback not in FALLBACKS:
        raise ValueError(f"a fallback is EARLIEST ({EARLIEST}) or LATEST ({LATEST}), got {fallback}")
    wanted = list(partitions)
    missing = [tp for tp in wanted if tp not in committed]
    if not missing:
        return {tp: committed[tp] for tp in wanted}
    if fallback is None:
        raise NoCommittedOffsetError(group, missing)
    return {tp: committed.get(tp, fallback) for tp in wanted}
