"""What a Flink job lets a workload choose that the harness also runs: a subtask's planned failure and the
exactly-once sink's transaction naming strategies. Pure data: ``conformance/flink`` (the harness) imports it from
here, so that a drawn workload stays data that neither the harness nor the checkers need to be imported to read.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Literal


@dataclass(frozen=True, slots=True)
class Failure:
    """Subtask ``subtask``'s first attempt fails once after ``after_records`` records: in the map that reads
    (``record``), or in the first checkpoint it takes after them (``checkpoint``: after the sink flushed them)."""

    subtask: int
    after_records: int
    at: Literal["record", "checkpoint"] = "record"


NAMING: Final = ("INCREMENTING", "POOLING")
"""``TransactionNamingStrategy``'s values: a new id per checkpoint (the 3.x behaviour), or ids reused from a pool."""
