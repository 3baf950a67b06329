"""A bug's verdict from its two runs: pure, so every case is a unit test.

A run is read from its ``report.json`` (``outcome_of_report``): the requirement ids that failed, the run's verdict
on each class (safe, live, Flink-faithful, diagnosable) with the ids that broke it, or why the run could not check.
``judge`` then says, in the terms of the class of the bug's requirements: *caught* (the buggy release reads ``no``
on that class, on an intended id: ``safe: no`` for a safety bug, ``live: no`` for a liveness bug, ``Flink-faithful:
no`` or ``diagnosable: no`` for the others, and the fixed release fails nothing), *caught off target*, *missed*,
*false alarm* (the fixed release fails, e.g. reads ``safe: no`` or ``live: no``) or *could not run*, never a
verdict from a run that checked nothing.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Final

FAILED: Final = frozenset({"FAIL", "XPASS"})
"""Requirement statuses of ``kconform run``'s report that are violations."""
CLASSES: Final = ("safety", "liveness", "fidelity", "diagnostics")
"""The report's verdict classes (its ``verdicts`` keys), in the order the bank names them."""
LABEL: Final = {"safety": "safe", "liveness": "live", "fidelity": "Flink-faithful", "diagnostics": "diagnosable"}
"""How a report names each class's verdict (``safe: no``), as ``kconform run`` prints it."""


class Verdict(StrEnum):
    CAUGHT = "caught"
    OFF_TARGET = "caught off target"
    MISSED = "missed"
    FALSE_ALARM = "false alarm"
    COULD_NOT_RUN = "could not run"


@dataclass(frozen=True)
class Outcome:
    """One release's run: the requirement ids it failed and the ids that broke each class, or ``problem`` when it
    could not check."""

    failed: frozenset[str] = field(default_factory=frozenset)
    problem: str | None = None
    violated: Mapping[str, frozenset[str]] = field(default_factory=dict)
    """Class -> the ids that make the run read ``no`` on it (the report's ``verdicts.<class>.violated``)."""

    def reads(self) -> str:
        """What the run reads on each class it fails (``live: no (LIVE-001)``), then ids failed outside them."""
        said = [f"{LABEL[c]}: no ({', '.join(sorted(self.violated[c]))})" for c in CLASSES if self.violated.get(c)]
        classed = frozenset().union(*self.violated.values()) if self.violated else frozenset()
        rest = sorted(self.failed - classed)
        return "; ".join(said + ([f"fails {', '.join(rest)}"] if rest else [])) or "passes"


@dataclass(frozen=True)
class Judgement:
    verdict: Verdict
    reason: str


def outcome_of_report(report: Mapping[str, Any]) -> Outcome:
    """What a ``kconform run`` report shows: its failed ids and class verdicts, or why it could not check (exit 2 or
    3, or an exit 1 with no failed requirement, such as an interruption)."""
    failed = frozenset(r["id"] for r in report.get("requirements", ()) if r.get("status") in FAILED)
    code = report.get("exit_code")
    if code == 0 or (code == 1 and failed):
        verdicts = report.get("verdicts", {})
        violated = {c: frozenset(verdicts[c].get("violated", ())) for c in CLASSES if c in verdicts}
        return Outcome(failed, violated={c: ids for c, ids in violated.items() if ids})
    why = [str(c) for c in report.get("could_not_check", ())] or [
        f"{r['id']}: {r.get('reason') or r.get('status')}"
        for r in report.get("requirements", ())
        if r.get("status") == "ERROR"
    ]
    return Outcome(problem=f"kconform run exited {code}" + (f": {'; '.join(why)}" if why else ""))


def judge(category: str, intended: Collection[str], buggy: Outcome, fixed: Outcome) -> Judgement:
    """The verdict of a bug of class ``category`` whose ``intended`` ids the ``buggy`` release should break (reading
    ``no`` on that class) and the ``fixed`` release pass."""
    for release, outcome in (("buggy", buggy), ("fixed", fixed)):
        if outcome.problem is not None:
            return Judgement(Verdict.COULD_NOT_RUN, f"the {release} release: {outcome.problem}")
    if fixed.failed:
        return Judgement(Verdict.FALSE_ALARM, f"the fixed release reads {fixed.reads()}")
    target = f"{LABEL[category]}: no on {', '.join(sorted(intended))}"
    # failed, not just violated: an id a run read XFAIL on (a kind its entry tolerates) is another bug's
    on_target = buggy.violated.get(category, frozenset()) & set(intended) & buggy.failed
    if on_target:
        said = f"the buggy release reads {LABEL[category]}: no ({', '.join(sorted(on_target))})"
        others = Outcome(buggy.failed - on_target, violated={c: ids - on_target for c, ids in buggy.violated.items()})
        return Judgement(Verdict.CAUGHT, said + (f"; also {others.reads()}" if others.failed else ""))
    if buggy.failed:
        return Judgement(Verdict.OFF_TARGET, f"the buggy release reads {buggy.reads()}, not {target}")
    return Judgement(Verdict.MISSED, f"both releases pass (the buggy one was to read {target})")
