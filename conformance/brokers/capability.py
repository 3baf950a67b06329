"""What a broker was measured to show, apart from the measuring (``probe``, which needs a live client).

Reports, the gate and the suite read these results; keeping them here lets the protocol level, which
starts no broker, run without the Kafka client (the ``pipeline`` extra).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Final


@dataclass(frozen=True, slots=True)
class Capability:
    """One measured semantic: its requirement, whether the broker shows it, and what was seen."""

    name: str
    requirement_id: str
    supported: bool
    observation: str


DUPLICATE_VERDICT_NEEDS: Final = ("abort_hidden_from_read_committed", "zombie_fencing")
"""Capabilities without which a duplicate in read_committed output cannot be told from the
broker's own deviation (KAFKA-001, KAFKA-004)."""


def lacking(capabilities: Mapping[str, Capability], needed: tuple[str, ...]) -> list[str]:
    """The ``needed`` capabilities this broker was measured not to have."""
    return [name for name in needed if not capabilities[name].supported]


def format_table(capabilities: Sequence[Capability]) -> str:
    """A plain-text table for terminals and reports."""
    rows = [("requirement", "capability", "supported", "observation")]
    rows += [(c.requirement_id, c.name, "yes" if c.supported else "NO", c.observation) for c in capabilities]
    widths = [max(len(r[i]) for r in rows) for i in range(3)]
    return "\n".join(" | ".join([*(r[i].ljust(widths[i]) for i in range(3)), r[3]]) for r in rows)
