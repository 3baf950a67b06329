"""The result model of ``kconform run`` and its exit policy.

A test's outcome (``TestResult``), each requirement's verdict from its tests (``aggregate``), and the run's
(``RunResult``), whose ``exit_code`` tells a violation (1) from a usage error (2) and from a run that could not
check (3). The reports render these; the collector builds them.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum

from ..brokers.capability import Capability
from ..brokers.facts import BrokerFacts
from ..checks.checkers import Picture, Violation
from ..spec_tools.requirements import HIDDEN, LEVELS, UNJUDGED, Requirement
from .expectations import Deviation
from .options import RunOptions

USAGE_EXIT = 2
ERROR_EXIT = 3
"""Could not check: distinct from a violation (1) and from a usage error (2)."""
SKIP_IDS = re.compile(r"(^|; )[A-Z]+-\d{3}(?:, [A-Z]+-\d{3})*: ")
"""The ids a skip message starts with (the plugin names them); the rest is the cause, shared by many tests."""
UNSTRUCTURED = "failure"
"""The kind of a failure that names no violation (a plain ``assert``, a timeout): its message is the evidence."""
ADDRESS = re.compile(r" at 0x[0-9a-f]+")
"""An object's address (``<Guarded object at 0x7f...>``): it differs every run, so two skips for one cause would not."""


class Status(StrEnum):
    PASS = "PASS"
    PARTIAL = "PARTIAL"
    """Passed what it could check; part of a requirement could not be verified here (``partial``)."""
    FAIL = "FAIL"
    ERROR = "ERROR"
    """Could not be checked at all (the broker is unreachable or unconfigured): neither a pass nor a violation."""
    SKIP = "SKIP"
    XFAIL = "XFAIL"
    XPASS = "XPASS"


@dataclass(frozen=True)
class Counterexample:
    """One distinct failure as Hypothesis printed it (a run may find several)."""

    error: str
    example: str
    blob: str | None


@dataclass
class TestResult:
    nodeid: str
    name: str
    ids: list[str]
    """The requirements the test checks."""
    level: str
    """The strongest level among ``ids``: a test that checks a MUST fails the run even if a SHOULD failed first."""
    pipeline: bool
    status: Status
    duration: float
    message: str = ""
    counterexamples: list[Counterexample] = field(default_factory=list)
    replay: str | None = None
    deviation: Deviation | None = None
    longrepr: str = ""
    violated: list[str] = field(default_factory=list)
    """For a failure, the ids its message names (a checker's violation does), else all of ``ids``."""
    metrics: dict[str, object] = field(default_factory=dict)
    """What the test recorded with ``record_property`` (e.g. ASSIGN-005's global spread)."""
    unverified: dict[str, str] = field(default_factory=dict)
    """Requirement id -> why the test could not verify it in full (declared with the ``partial`` fixture)."""
    not_checked: dict[str, str] = field(default_factory=dict)
    """Requirement id -> why the test could not check it at all, while it judged its other ids (declared with the
    ``not_checked`` fixture): ERROR for that id alone."""
    violations: list[Violation] = field(default_factory=list)
    """A failure's violations: those its ``ViolationError`` carried, else read from its message."""
    pictures: list[Picture] = field(default_factory=list)
    """The data of the failure's figures (``kconform.conformance.checks.evidence``), drawn by the HTML report."""
    verified_before_failing: frozenset[str] = frozenset()
    """Of a failure's ids it does not violate, those it checked in full anyway (``fail_on(verified=...)``)."""
    phases: dict[str, float] = field(default_factory=dict)
    """Seconds of each of pytest's phases (``setup``, ``call``, ``teardown``) that ran: ``duration`` is their sum;
    ``setup`` includes the starts of the module and session fixtures the test was the first to need."""
    started: float | None = None
    """When the test started (epoch seconds; ``None`` for a result no test run made, such as a module that does not
    import)."""

    def fails(self, strict: bool) -> bool:
        """MUST failures fail the run, SHOULD failures and PARTIAL only when strict, MAY never; an XPASS always does.

        PARTIAL alone keeps exit 0 so that a user on a limited broker still gets the safety verdict. It
        counts wherever it shows: the ids a failure (even a MAY or an expected one) never got to verify too.
        """
        if self.status is Status.XPASS:
            return True
        if strict and any(self.status_for(i) is Status.PARTIAL for i in self.ids):
            return True
        return self.status is Status.FAIL and (self.level == "MUST" or (strict and self.level == "SHOULD"))

    def status_for(self, req_id: str) -> Status:
        """The test's outcome for one of its ids: a partial test passed the ids it did verify.

        A failed test fails only the ids its violation names (``violated``). Its other ids are PARTIAL,
        not verified: the test stopped at the first violation, so it never showed that they hold (no
        PASS), nor that they are broken (no FAIL); the id's other tests decide the rest of its verdict.
        An id the test says it checked in full before failing passes. An id it could not check at all
        (``not_checked``) is ERROR, whatever the others' outcome, unless a violation names it.
        """
        if req_id in self.not_checked and req_id not in (self.violated if self.status is Status.FAIL else ()):
            return Status.ERROR
        if self.status is Status.PARTIAL and req_id not in self.unverified:
            return Status.PASS
        if self.status in (Status.FAIL, Status.XFAIL) and req_id not in self.violated:
            return Status.PASS if req_id in self.verified_before_failing else Status.PARTIAL
        return self.status

    def unverified_reason(self, req_id: str) -> str:
        """Why ``status_for(req_id)`` is PARTIAL."""
        if self.status in (Status.FAIL, Status.XFAIL):
            return f"{self.name} stopped at its violation of {', '.join(self.violated)} before verifying it"
        return self.unverified[req_id]


@dataclass(frozen=True)
class CrashRecord:
    """One death of the process running the suite, as report.json's ``crashes`` gives it."""

    pid: int
    signal: int
    signal_name: str
    test: str | None
    """The node id of the test that was running (ERROR for it), None when the process died outside a test."""
    test_name: str | None
    first_frames: list[str]
    """The crashing thread's innermost frames, as Python's faulthandler wrote them (empty: it wrote nothing)."""


@dataclass(frozen=True)
class FixtureStart:
    """One start of a fixture wider than a test (module, package or session scope: a broker, a SparkSession, the
    Flink harness), as ``report.json``'s ``timings.fixtures`` gives it: the time goes to the setup of the first test
    that needs it."""

    name: str
    scope: str
    seconds: float
    started: float
    """Epoch seconds."""
    test: str | None
    """The node id of the test whose setup started it."""


@dataclass
class RequirementResult:
    id: str
    level: str
    title: str
    link: str
    status: Status
    tests: list[TestResult]
    reason: str = ""
    category: str = ""
    """``safety`` or ``fidelity``, as the spec tags the id; empty for an id the spec does not know."""


@dataclass
class RunResult:
    options: RunOptions
    seed: int
    adapter_name: str
    capabilities: list[str]
    variants: dict[str, str]
    tests: list[TestResult]
    requirements: list[RequirementResult]
    untested: list[str]
    notes: list[str]
    started: float
    finished: float
    pytest_log: str
    interrupted: bool
    """pytest stopped early (Ctrl-C, ``pytest.exit``): the results are incomplete and the run fails."""
    broker: list[Capability] = field(default_factory=list)
    """What the run's broker can show, as the probe measured it (pipeline level only)."""
    errors: list[str] = field(default_factory=list)
    """Why the run as a whole checked nothing (every test skipped, a level the adapter declares nothing of)."""
    broker_version: str | None = None
    """The product and version of the broker the pipeline level ran on (``None``: no broker was started)."""
    broker_facts: BrokerFacts | None = None
    """Its release, transaction.version and group protocols, as every report states them (``None``: no broker)."""
    judged: dict[str, str] = field(default_factory=dict)
    """What the run judged, component -> release, as every report states it (``report.judged_components``: the
    PySpark it ran on, then what the adapter names, e.g. ``kafka-clients 4.4.0``); empty when nothing is named."""
    selected: int = 0
    """How many tests the run selected: an interrupted one finished fewer."""
    unchecked: dict[str, str] = field(default_factory=dict)
    """Connector safety ids no selected test checked, in spec order, each with why (``unchecked_safety``)."""
    crashes: list[CrashRecord] = field(default_factory=list)
    """Each death of the process running the suite (a supervised run goes on after one), in order."""
    collected: float | None = None
    """When pytest had collected and selected the tests (epoch seconds; in a run resumed after a crash, the last
    process's); ``None`` when it never got that far."""
    fixtures: list[FixtureStart] = field(default_factory=list)
    """Every start of a module, package or session fixture, in order (every process of a resumed run)."""

    @property
    def interruption(self) -> str:
        """Why no class verdict can hold, if the run stopped early: the tests it never ran proved nothing."""
        return interruption(len(self.tests), self.selected) if self.interrupted else ""

    @property
    def failing(self) -> list[TestResult]:
        return [t for t in self.tests if t.fails(self.options.strict)]

    @property
    def could_not_check(self) -> list[str]:
        """Every cause of an ERROR, once: those of the tests (e.g. the broker), then the run's own."""
        return list(
            dict.fromkeys(
                [t.message for t in self.tests if t.status is Status.ERROR]
                + [f"{i}: {why}" for t in self.tests for i, why in t.not_checked.items()]
                + self.errors
            )
        )

    @property
    def exit_code(self) -> int:
        """1 for a result that fails the run (a violation is news even where part could not be checked),
        else 3 if anything could not be checked, else 0."""
        if self.failing or self.interrupted:
            return 1
        return ERROR_EXIT if self.could_not_check else 0


def interruption(done: int, selected: int) -> str:
    return f"the run was interrupted after {done} of {selected} tests"


def strongest(levels: Sequence[str]) -> str:
    return min(levels, key=LEVELS.index)


def skip_cause(message: str) -> str:
    """A skip's reason without the ids it starts with, each cause once: tests skipped for one cause share it."""
    return "; ".join(dict.fromkeys(SKIP_IDS.sub(r"\1", message).split("; ")))


def aggregate(
    tests: Sequence[TestResult], requirements: dict[str, Requirement]
) -> tuple[list[RequirementResult], list[str]]:
    """Per-requirement verdicts (in spec order), and the spec ids no selected test checked."""
    by_id: dict[str, list[TestResult]] = {}
    for t in tests:
        for req_id in dict.fromkeys([*t.ids, *t.violated]):  # a failure is counted at every id it violates
            by_id.setdefault(req_id, []).append(t)
    order = [*requirements, *sorted(set(by_id) - set(requirements))]
    rows = []
    for req_id in order:
        if req_id not in by_id:
            continue
        ts = by_id[req_id]
        req = requirements.get(req_id)
        status, reason = _verdict(req_id, ts)
        level = req.level if req else strongest([t.level for t in ts])
        title = req.title if req else "(not in the spec)"
        link, category = (req.link, req.category) if req else ("", "")
        rows.append(RequirementResult(req_id, level, title, link, status, ts, reason, category))
    return rows, [r for r in requirements if r not in by_id]


def unchecked_safety(
    untested: Sequence[str], requirements: Mapping[str, Requirement], judged: Mapping[str, Sequence[str]], level: str
) -> dict[str, str]:
    """Each connector safety id of ``untested`` with why the run's ``level`` did not check it: beyond the protocol
    level, the spec's "From outside." (the observation that is missing, or what a judge would look at); else where
    the suite does judge it (``judged``: id -> ``judged_at``): the pipeline level seen from the protocol level, or,
    at the pipeline level, the engines and clients (Spark queries, Flink jobs, its consumer) the run left out."""
    reasons = {}
    for req_id in untested:
        req = requirements.get(req_id)
        if req is None or not req.connector_safety:
            continue
        outside = [where for where in judged.get(req_id, []) if where != "protocol"]
        if level != "protocol" and req.outside in (UNJUDGED, HIDDEN):
            reasons[req_id] = f"{req.outside} from outside: {req.outside_why}"
        elif outside and level == "protocol":
            reasons[req_id] = f"judged at the pipeline level only, through: {', '.join(outside)}"
        elif outside:
            reasons[req_id] = f"judged only through: {', '.join(outside)}, which this run left out"
        else:
            reasons[req_id] = "no selected test judges it"
    return reasons


def _verdict(req_id: str, tests: Sequence[TestResult]) -> tuple[Status, str]:
    """Worst outcome wins; a requirement with a test that could not check is an ERROR, one with any
    skipped test a skip, and one that a test could verify only in part is PARTIAL: never a pass."""
    statuses = [t.status_for(req_id) for t in tests]
    for status in (Status.FAIL, Status.XPASS, Status.XFAIL):
        if status in statuses:
            deviation = next((t.deviation for t in tests if t.status_for(req_id) is status and t.deviation), None)
            return status, f"{deviation.reason} ({deviation.link})" if deviation else ""
    passed = statuses.count(Status.PASS)
    if Status.ERROR in statuses:
        causes = "; ".join(
            sorted(
                {t.message for t in tests if t.status is Status.ERROR}
                | {t.not_checked[req_id] for t in tests if req_id in t.not_checked}
            )
        )
        return Status.ERROR, causes + (f" ({passed} of {len(tests)} tests passed)" if passed else "")
    partial = sorted({t.unverified_reason(req_id) for t in tests if t.status_for(req_id) is Status.PARTIAL})
    if Status.SKIP in statuses:
        skipped_for = sorted({skip_cause(t.message) for t in tests if t.status is Status.SKIP})  # the row names its id
        reasons = skipped_for + [f"partial: {p}" for p in partial]
        return Status.SKIP, "; ".join(reasons) + (f" ({passed} of {len(tests)} tests passed)" if passed else "")
    if partial:
        fully = f" ({passed} of {len(tests)} tests verified it fully)" if passed else ""
        return Status.PARTIAL, "; ".join(partial) + fully
    return Status.PASS, ""
