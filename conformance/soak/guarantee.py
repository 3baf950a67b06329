"""The delivery guarantee a soak judges an adapter by, read from the capabilities it declares.

A soak holds a connector to what it promises, not more: an exactly-once sink must show every record
once; an at-least-once sink promises no loss, not no repeat, so its duplicates are counted and
reported, never a failure, while a loss, a reordering or a skipped source offset fails it as any other.
"""

from __future__ import annotations

from collections.abc import Iterable
from enum import StrEnum
from typing import Final


class Guarantee(StrEnum):
    EXACTLY_ONCE = "exactly-once"
    AT_LEAST_ONCE = "at-least-once"


DECLARED_BY: Final = {
    Guarantee.EXACTLY_ONCE: "pipeline-exactly-once-sink",
    Guarantee.AT_LEAST_ONCE: "pipeline-sink",
}
"""The capability that declares each guarantee, strongest first."""
JUDGED: Final = {
    Guarantee.EXACTLY_ONCE: "nothing lost and nothing duplicated (COMMIT-011), order kept per input partition "
    "(COMMIT-013), every source offset read once (RESTORE-003)",
    Guarantee.AT_LEAST_ONCE: "nothing lost (COMMIT-011), order kept per input partition (COMMIT-013), no source "
    "offset skipped (RESTORE-003); duplicates are counted and reported, not failed",
}
"""How a schedule is judged under each guarantee (``kconform soak --help``, its output, docs/soak.md)."""


def declared_guarantee(capabilities: Iterable[str]) -> Guarantee | None:
    """The strongest guarantee ``capabilities`` declare; None when they declare no sink (nothing to soak)."""
    declared = set(capabilities)
    return next((g for g, capability in DECLARED_BY.items() if capability in declared), None)
