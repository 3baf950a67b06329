"""CPU time on this machine, read from ``/proc``: how ``kconform bench`` counts, beside each competitor's rate, the
broker's work and the whole machine's. The races run Spark, the broker and the clients on the same cores, so a
rate includes the broker's work the competitor causes (an exactly-once sink's transactions, say) and competes with
everything else the competitor makes the machine do (PySpark's Python workers, say); these show how much."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Final

TICKS_PER_S: Final = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100

CpuMeter = Callable[[], "float | None"]
"""The processes' summed CPU seconds so far, or ``None`` once one cannot be read (it ended)."""


def stat_cpu_s(stat: str, ticks_per_s: int = TICKS_PER_S) -> float:
    """User plus system CPU seconds of one ``/proc/<pid>/stat`` line: its 14th and 15th fields, counted after the
    command's closing parenthesis (the command may hold spaces and parentheses)."""
    fields = stat.rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / ticks_per_s


def _meter(count: Callable[[], float]) -> CpuMeter | None:
    """``count`` as a meter that reads ``None`` once ``/proc`` cannot tell (a process ended), or ``None`` when it
    cannot tell from the start."""

    def read() -> float | None:
        try:
            return count()
        except (OSError, IndexError, ValueError):
            return None

    return read if read() is not None else None


def cpu_meter(pids: Sequence[int], proc: Path = Path("/proc")) -> CpuMeter | None:
    """A meter of ``pids``' CPU, or ``None`` when there are none (an external broker) or ``/proc`` cannot tell."""
    if not pids:
        return None
    return _meter(lambda: sum(stat_cpu_s((proc / str(pid) / "stat").read_text()) for pid in pids))


def busy_cpu_s(stat: str, ticks_per_s: int = TICKS_PER_S) -> float:
    """The machine's busy CPU seconds since boot from ``/proc/stat``: its first line's ticks of every kind but idle
    and iowait, over all cores (user, nice, system, irq, softirq, steal; guest time is inside user already)."""
    ticks = [int(t) for t in stat.split("\n", 1)[0].split()[1:9]]
    return (sum(ticks) - ticks[3] - ticks[4]) / ticks_per_s


def machine_cpu_meter(proc: Path = Path("/proc")) -> CpuMeter | None:
    """A meter of every process's CPU on this machine, or ``None`` when ``/proc/stat`` cannot tell."""
    return _meter(lambda: busy_cpu_s((proc / "stat").read_text()))
