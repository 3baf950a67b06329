"""A bug's verdict from its two runs: pure, so every case is a unit test.

A run is read from its ``report.json`` (``outcome_of_report``): the requirement ids that failed, or
why the run could not check. ``judge`` then says *caught* (the buggy release fails on an intended
id and the fixed one passes), *caught off target*, *missed*, *false alarm* (the fixed release
fails) or *could not run*, never a verdict from a run that checked nothing.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Final

FAILED: Final = frozenset({"FAIL", "XPASS"})
"""Requirement statuses of ``kconform run``'s report that are violations."""


class Verdict(StrEnum):
    CAUGHT = "caught"
    OFF_TARGET = "caught off target"
    MISSED = "missed"
    FALSE_ALARM = "false alarm"
    COULD_NOT_RUN = "could not run"


@dataclass(frozen=True)
class Outcome:
    """One release's run: the requirement ids it failed, or ``problem`` when it could not check."""

    failed: frozenset[str] = field(default_factory=frozenset)
    problem: str | None = None


@dataclass(frozen=True)
class Judgement:
    verdict: Verdict
    reason: str


def outcome_of_report(report: Mapping[str, Any]) -> Outcome:
    """What a ``kconform run`` report shows: its failed ids, or why it could not check (exit 2 or 3, or an
    exit 1 with no failed requirement, such as an interruption)."""
    failed = frozenset(r["id"] for r in report.get("requirements", ()) if r.get("status") in FAILED)
    code = report.get("exit_code")
    if code == 0 or (code == 1 and failed):
        return Outcome(failed)
    why = [str(c) for c in report.get("could_not_check", ())] or [
        f"{r['id']}: {r.get('reason') or r.get('status')}"
        for r in report.get("requirements", ())
        if r.get("status") == "ERROR"
    ]
    return Outcome(problem=f"kconform run exited {code}" + (f": {'; '.join(why)}" if why else ""))


def judge(intended: Collection[str], buggy: Outcome, fixed: Outcome) -> Judgement:
    """The verdict of a bug whose ``intended`` ids the ``buggy`` release should fail and ``fixed`` pass."""
    for release, outcome in (("buggy", buggy), ("fixed", fixed)):
        if outcome.problem is not None:
            return Judgement(Verdict.COULD_NOT_RUN, f"the {release} release: {outcome.problem}")
    if fixed.failed:
        return Judgement(Verdict.FALSE_ALARM, f"the fixed release fails {', '.join(sorted(fixed.failed))}")
    if on_target := buggy.failed & set(intended):
        return Judgement(Verdict.CAUGHT, f"the buggy release fails {', '.join(sorted(on_target))}")
    if buggy.failed:
        return Judgement(
            Verdict.OFF_TARGET,
            f"the buggy release fails {', '.join(sorted(buggy.failed))}, not {', '.join(sorted(intended))}",
        )
    return Judgement(Verdict.MISSED, "both releases pass")
