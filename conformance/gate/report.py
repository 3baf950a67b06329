"""The reports of ``kconform run``: the console summary, ``report.md``, ``report.json``, ``report.html``
(``kconform.conformance.gate.html_report``), ``pytest.log``, and
kconform's own verdicts (PARTIAL, ERROR, the ids a failure violates) in pytest's ``junit.xml``.

The summary table is per requirement, because that is what a connector team is asked about; the
failure blocks are per test, because a test is what is replayed. Every rendering is built from
the same rows, so the console, the Markdown and the JSON never disagree.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections import Counter
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from importlib.metadata import version
from importlib.util import find_spec
from pathlib import Path
from typing import Any, Final

from _pytest.junitxml import mangle_test_address  # how pytest named the testcases it wrote

from ..adapter.interface import ENGINE_CAPABILITIES
from ..brokers.capability import format_table
from ..librdkafka import libversion
from ..redaction import write_text
from ..release import kconform_version
from ..spec_tools.requirements import CATEGORIES, LEVELS
from .options import broker_used
from .results import (
    ADDRESS,
    ERROR_EXIT,
    UNSTRUCTURED,
    RequirementResult,
    RunResult,
    Status,
    TestResult,
    skip_cause,
)

TITLE_WIDTH = 60
NAME_WIDTH = 64
"""Longer words (a 249-character topic name) are cut in the middle on the console."""
VIOLATIONS_SHOWN = 10
FAILURES_ON_CONSOLE = 3
VIOLATIONS_ON_CONSOLE = 2
EVIDENCE_ON_CONSOLE = 6
"""Lines of each failure the console shows, so that the failures and the verdicts fit a CI log's last 40 lines;
report.md has all of them."""
REPORT_FILES = "report.md, report.json, junit.xml, pytest.log"
UNCHECKED_HEADING = "safety ids not checked at level %s, and why"
"""Heads the run's ``unchecked`` connector safety ids in every report."""
CLASS_LABEL = {"safety": "safe", "liveness": "live", "fidelity": "Flink-faithful", "diagnostics": "diagnosable"}
VIOLATED = (Status.FAIL, Status.XFAIL)
"""A listed deviation (XFAIL) is still a violation: the verdicts say what the connector does, not what is known."""
LONG_WORD = re.compile(rf"[^\s'\"\[\](){{}},:]{{{NAME_WIDTH + 1},}}")
HYPOTHESIS_EXPLANATION = "Explanation:"
"""Hypothesis's explain phase: the lines only failing examples ran, useful in report.md, noise on a console."""
REPLAY_NOTE = (
    "A replay in the same directory first re-runs the shrunk example saved in .hypothesis/; "
    "the @reproduce_failure blob replays it anywhere (add it as a decorator to the test)."
)
SPEC_DIR = "spec/"


@dataclass(frozen=True)
class ClassVerdict:
    """The adapter's verdict on one class of requirements (``safe``, ``Flink-faithful``)."""

    category: str
    violated: list[str]
    unverified: list[str]
    """``ID STATUS`` of ids checked in part (PARTIAL) or not at all (SKIP, ERROR)."""
    verified: list[str]
    interrupted: str = ""
    """Why the run stopped early, if it did: what it did not run may break the class, so it cannot hold."""

    @property
    def label(self) -> str:
        return CLASS_LABEL[self.category]

    @property
    def holds(self) -> bool | None:
        """False on any violation; None when the run was interrupted, an id of the class could not be checked
        (ERROR: a setup or contract fault, a hang) or none was verified in full; else True."""
        if self.violated:
            return False
        return True if self.verified and not self.interrupted and not self.errored else None

    @property
    def errored(self) -> list[str]:
        return [u for u in self.unverified if u.endswith(f" {Status.ERROR}")]

    @property
    def answer(self) -> str:
        return {False: "no", None: "not verified", True: "yes"}[self.holds]

    @property
    def detail(self) -> str:
        """Why the answer: the ids violated, or those not (fully) verified, or how many were."""
        if self.holds is False:
            return f"violated: {', '.join(self.violated)}"
        if self.holds is None and self.interrupted:
            return self.interrupted
        if self.holds is None and self.errored and self.verified:
            return f"could not check: {', '.join(self.errored)}"
        if self.holds is None:
            why = f"not verified: {', '.join(self.unverified)}" if self.unverified else "none selected"
            return f"no {self.category} requirement verified in full; {why}"
        if self.unverified:
            return f"as far as checked; not fully verified: {', '.join(self.unverified)}"
        plural = "" if len(self.verified) == 1 else "s"
        return f"{len(self.verified)} {self.category} requirement{plural} verified"

    def text(self) -> str:
        return f"{self.label}: {self.answer} ({self.detail})"

    def to_json(self) -> dict[str, Any]:
        return {
            "holds": self.holds,
            "text": self.text(),
            "violated": self.violated,
            "unverified": self.unverified,
            "verified": self.verified,
        }


def class_verdicts(result: RunResult) -> list[ClassVerdict]:
    """Safety, liveness, fidelity and diagnostics apart: a connector can lose no record and still fail to restart,
    not follow Flink's model, or fail without saying what to fix."""
    verdicts = []
    for category in CATEGORIES:
        rows = [r for r in result.requirements if r.category == category]
        verdicts.append(
            ClassVerdict(
                category,
                [r.id for r in rows if r.status in VIOLATED],
                [f"{r.id} {r.status}" for r in rows if r.status in (Status.PARTIAL, Status.SKIP, Status.ERROR)],
                [r.id for r in rows if r.status in (Status.PASS, Status.XPASS)],
                result.interruption,
            )
        )
    return verdicts


def shorten(text: str, width: int = NAME_WIDTH) -> str:
    """Every word longer than ``width`` cut in the middle (``kkkk...kkkk``), so its ends stay readable."""
    keep = (width - 3) // 2
    return LONG_WORD.sub(lambda m: f"{m.group(0)[:keep]}...{m.group(0)[-keep:]}", text)


def _violation_lines(t: TestResult, limit: int = VIOLATIONS_SHOWN) -> list[str]:
    """One line per distinct violation (a shrunk example may repeat one), the first ``limit`` of them taken a kind
    at a time (the first of each kind, then the second of each, ...), so that 33 ``lost-write`` violations do not
    hide the ``duplicate`` after them."""
    by_kind: dict[str, list[str]] = {}
    for v in t.violations:
        by_kind.setdefault(v.kind, []).append(v.evidence if v.kind == UNSTRUCTURED else str(v))
    columns = [list(dict.fromkeys(lines)) for lines in by_kind.values()]
    lines = [column[i] for i in range(max(map(len, columns), default=0)) for column in columns if i < len(column)]
    more = len(lines) - limit
    return lines[:limit] + ([f"... and {more} more (all of them in report.json)"] if more > 0 else [])


def anomaly_counts(t: TestResult) -> str:
    """How many violations of each kind a failure holds (``33 lost-write, 33 duplicate``), most first."""
    counts = Counter(v.kind for v in t.violations if v.kind != UNSTRUCTURED)
    return ", ".join(f"{n} {kind}" for kind, n in counts.most_common())


def triage_key(t: TestResult, classes: dict[str, str], strict: bool) -> tuple[int, int, int]:
    """Failures in the order a reader must see them: those that fail the run, then by the class of the ids they
    violate (safety, liveness, fidelity, then the rest), then by level."""
    order = [*CATEGORIES, ""]
    rank = min((order.index(classes.get(i, "")) for i in t.violated), default=len(order))
    return (not t.fails(strict), rank, LEVELS.index(t.level) if t.level in LEVELS else len(LEVELS))


def _console_evidence(t: TestResult) -> list[str]:
    """What the console shows of a failure in at most ``EVIDENCE_ON_CONSOLE`` lines: its first violations,
    then as much of each shrunk example as fits, then every ``@reproduce_failure`` blob (a replay needs it)."""
    told = [line for v in _violation_lines(t, VIOLATIONS_ON_CONSOLE) or [t.message] for line in v.splitlines()]
    example = [
        line for c in t.counterexamples for line in c.example.split(HYPOTHESIS_EXPLANATION)[0].rstrip().splitlines()
    ]
    blobs = [c.blob for c in t.counterexamples if c.blob]
    room = max(EVIDENCE_ON_CONSOLE - len(blobs) - len(told), 2)
    if len(example) > room:
        example = [*example[: room - 1], f"... and {len(example) - room + 1} more lines of the example in report.md"]
    return [shorten(ADDRESS.sub("", line)) for line in [*told, *example]] + blobs


def _console_failures(result: RunResult) -> list[str]:
    """The first ``FAILURES_ON_CONSOLE`` failures (those that fail the run first) with their evidence and
    replay line; the others by name."""
    failures = triaged(result)
    if not failures:
        return []
    lines = ["", REPLAY_NOTE]
    for t in failures[:FAILURES_ON_CONSOLE]:
        counts = anomaly_counts(t)
        lines += ["", f"FAIL {t.name}", f"  {violates(t)}" + (f": {counts}" if counts else "")]
        lines += [f"  {line}" for line in _console_evidence(t)]
        lines += [f"  replay: {t.replay}"] if t.replay else []
    rest = [f"{t.name} ({t.level})" for t in failures[FAILURES_ON_CONSOLE:]]
    return lines + ([f"{len(rest)} more failures in report.md: {', '.join(rest)}"] if rest else [])


def triaged(result: RunResult) -> list[TestResult]:
    """The failed tests in ``triage_key`` order (a stable sort: the run's order within a rank)."""
    classes = {r.id: r.category for r in result.requirements}
    failed = [t for t in result.tests if t.status is Status.FAIL]
    return sorted(failed, key=lambda t: triage_key(t, classes, result.options.strict))


def tally(row: RequirementResult) -> str:
    counts = Counter(t.status_for(row.id) for t in row.tests)
    return ", ".join(f"{n} {status.lower()}" for status, n in sorted(counts.items()))


def row_note(row: RequirementResult, strict: bool) -> str:
    """Why a row's status does or does not fail the run, when that is not obvious."""
    counted = row.status is Status.FAIL and any(t.fails(strict) for t in row.tests)
    if row.status is Status.FAIL and row.level == "MAY" and not counted:
        return "MAY: reported, never fails the run"
    if row.status is Status.FAIL and row.level == "SHOULD" and not counted:
        return "SHOULD: fails the run only with --strict"
    if row.status is Status.XPASS:
        return f"expected to fail but passes: remove it from the expectations file ({row.reason})"
    if row.status is Status.PARTIAL:
        return f"not verified in full: {row.reason}"
    if row.status is Status.ERROR:
        return f"could not check: {row.reason}"
    return row.reason


def skip_groups(rows: list[RequirementResult]) -> dict[str, list[str]]:
    """Skipped ids by cause: one missing capability or broker feature skips many ids for one reason."""
    groups: dict[str, list[str]] = {}
    for row in rows:
        if row.status is Status.SKIP:
            groups.setdefault(skip_cause(row.reason), []).append(row.id)
    return groups


def violates(t: TestResult) -> str:
    if not t.ids:
        return "no requirement id"
    verified = [i for i in t.ids if i not in t.violated and i in t.verified_before_failing]
    rest = [i for i in t.ids if i not in t.violated and i not in t.verified_before_failing]
    also = f"; {', '.join(verified)} verified in full before it" if verified else ""
    also += f"; {', '.join(rest)} not verified: the test stopped at this violation" if rest else ""
    return f"violates {', '.join(t.violated)} (counted as {t.level}){also}"


def evidence_text(t: TestResult) -> str:
    """The error and, for a Hypothesis test, the shrunk example and blob exactly as Hypothesis printed them."""
    if not t.counterexamples:
        return t.message
    return "\n\n".join("\n".join([c.error, c.example] + ([c.blob] if c.blob else [])) for c in t.counterexamples)


def verdict_line(result: RunResult) -> str:
    """The last line: counts by status, every PARTIAL id (exit 0 must not read as all green; the reasons are in
    the table), and every cause of an ERROR, once (one broker down errs every pipeline test)."""
    counts = Counter(r.status for r in result.requirements)
    head = f"{len(result.requirements)} requirements: {', '.join(f'{n} {s}' for s, n in sorted(counts.items()))}."
    partial = [r.id for r in result.requirements if r.status is Status.PARTIAL]
    if partial:
        head += f" NOT FULLY VERIFIED, so not a pass: {', '.join(partial)} (see report.md for why)."
    causes = "; ".join(result.could_not_check)
    if not result.exit_code:
        if partial:
            return f"{head} Nothing failed: exit 0 (--strict fails on PARTIAL)."
        return f"{head} Every result is as expected: exit 0."
    if result.exit_code == ERROR_EXIT:
        return f"{head} Could not check, exit {ERROR_EXIT}: {causes}"
    names = [f"{t.name} ({t.status} {t.level})" for t in result.failing]
    more = len(names) - FAILURES_ON_CONSOLE
    names = names[:FAILURES_ON_CONSOLE] + ([f"{more} more failing tests"] if more > 0 else [])
    why = ", ".join(names + (["the run was interrupted"] if result.interrupted else []))
    return f"{head} Not as expected, exit 1: {why}" + (f". Could not check: {causes}" if causes else "")


def on_spark(result: RunResult) -> bool:
    """Whether ``result`` judged through PySpark: not a core install, not an engine the suite runs itself (Flink)."""
    return find_spec("pyspark") is not None and not ENGINE_CAPABILITIES.keys() & set(result.capabilities)


CONFLUENT_CLIENT: Final = "confluent-kafka-consumer"
"""The capability of an adapter that reads with this interpreter's confluent-kafka (``adapter.interface``)."""


def confluent_versions() -> dict[str, str]:
    """This interpreter's confluent-kafka and the librdkafka it wraps (none on a core install without it)."""
    if find_spec("confluent_kafka") is None:
        return {}
    return {"confluent-kafka": version("confluent-kafka"), "librdkafka": libversion()[0]}


def judged_components(result: RunResult, versions: dict[str, str]) -> dict[str, str]:
    """What a run judged, component -> release: the PySpark it ran on (not at the protocol level, which runs no
    Spark), then what the adapter names (``versions``: its ``versions()``, read from the folder its session loads
    the jars from, e.g. ``spark-sql-kafka-0-10_2.13``, ``kafka-clients``, ``flink-connector-kafka``), then the
    confluent-kafka and librdkafka the client tests ran, for an adapter that reads with them."""
    pipeline = result.options.level != "protocol"
    pyspark = {"PySpark": version("pyspark")} if pipeline and on_spark(result) else {}
    clients = confluent_versions() if pipeline and CONFLUENT_CLIENT in result.capabilities else {}
    return {**pyspark, **versions, **clients}


def judged_text(result: RunResult, versions: dict[str, str]) -> str:
    """What a run judged, on one line (``judged_components``), e.g. ``PySpark 4.1.1; spark-sql-kafka-0-10_2.13
    4.1.1`` or ``kafka-clients 4.4.0``."""
    judged = judged_components(result, versions)
    return "; ".join(f"{name} {v}" for name, v in judged.items()) or "the protocol level only"


def judged_line(result: RunResult) -> str:
    """``result.judged`` on one line: ``kafka-clients 4.4.0``, ``PySpark 4.2.0; spark-sql-kafka-0-10_2.13 4.2.0``."""
    return "; ".join(f"{name} {v}" for name, v in result.judged.items())


def render_text(result: RunResult, verbose: bool = False, judged: str | None = None) -> str:
    """The console summary, the answer last, where a CI log is read: the requirement table, skips and notes,
    then the failures, then the verdicts. Metrics and the broker's capabilities only when ``verbose``: the
    reports always have them. ``judged``: ``judged_text``'s line, above the broker's."""
    header = f"{'requirement':<12} {'level':<6} {'class':<8} {'title':<{TITLE_WIDTH}} {'status':<7} tests"
    lines = ["", header]
    for row in result.requirements:
        title = row.title if len(row.title) <= TITLE_WIDTH else row.title[: TITLE_WIDTH - 3] + "..."
        category = row.category or "-"
        lines.append(f"{row.id:<12} {row.level:<6} {category:<8} {title:<{TITLE_WIDTH}} {row.status:<7} {tally(row)}")
        note = row_note(row, result.options.strict)
        if note and row.status not in (Status.ERROR, Status.SKIP):  # their causes are listed once, below
            lines.append(f"{'':<12} -> {note}")
    skips = skip_groups(result.requirements)
    lines += ["", "skipped:"] if skips else []
    lines += [f"  {', '.join(ids)}: {cause}" for cause, ids in skips.items()]
    if verbose and result.broker:
        lines += ["", "broker capabilities (kconform probe-broker):", format_table(result.broker)]
    metrics = [f"metric {t.name}: {k} = {v}" for t in result.tests for k, v in t.metrics.items()]
    lines += ["", *metrics] if verbose and metrics else []
    lines += ["", *(f"note: {n}" for n in result.notes)]
    if result.untested:
        lines.append(f"not checked by any selected test: {', '.join(result.untested)}")
    if result.unchecked:
        lines.append(f"{UNCHECKED_HEADING % result.options.level}:")
        lines += [f"  {req_id}: {why}" for req_id, why in result.unchecked.items()]
    judged = judged or (judged_line(result) if result.judged else None)
    lines += [f"judged: {judged}"] if judged else []
    lines += [f"broker: {result.broker_facts.text()}"] if result.broker_facts else []
    report = result.options.report
    lines += [f"reports: {report / 'report.html'}, {REPORT_FILES}"] if report is not None else []
    lines += _console_failures(result)
    lines += ["", *(v.text() for v in class_verdicts(result)), verdict_line(result)]
    return "\n".join(lines)


def md_cell(text: str) -> str:
    """``text`` as one cell of a Markdown table."""
    return text.replace("|", "\\|").replace("\n", " ")


def _partial_lines(result: RunResult) -> list[str]:
    """Every PARTIAL verdict with its reasons (each test's that could not verify the id in full)."""
    return [f"- **{r.id}** PARTIAL: {md_cell(r.reason)}" for r in result.requirements if r.status is Status.PARTIAL]


def render_markdown(result: RunResult) -> str:
    o = result.options
    lines = [
        f"# kconform report: {result.adapter_name}",
        "",
        f"- adapter: `{o.adapter}` (capabilities: {', '.join(result.capabilities)})",
        f"- variants: {', '.join(f'{k}={v}' for k, v in result.variants.items())}",
        f"- level `{o.level}`, {broker_used(o)}, profile `{o.profile}`, seed `{result.seed}`"
        + (", strict" if o.strict else ""),
        *([f"- judged: {judged_line(result)}"] if result.judged else []),
        *([f"- broker: {result.broker_facts.text()}"] if result.broker_facts else []),
        "",
        *(f"- **{v.text()}**" for v in class_verdicts(result)),
        "",
        f"**{verdict_line(result)}**",
        "",
        "| requirement | level | class | title | status | tests |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for row in result.requirements:
        note = row_note(row, o.strict)
        status = f"{row.status} ({md_cell(note)})" if note else str(row.status)
        title = md_cell(row.title)
        lines.append(f"| {row.id} | {row.level} | {row.category or '-'} | {title} | {status} | {tally(row)} |")
    partial = _partial_lines(result)
    if partial:
        lines += ["", "## Partial verdicts", "", "Not a pass: what each could not verify, and why.", "", *partial]
    metrics = [(t.name, k, v) for t in result.tests for k, v in t.metrics.items()]
    if metrics:
        lines += ["", "## Metrics", "", "| test | metric | value |", "| --- | --- | --- |"]
        lines += [f"| `{name}` | {md_cell(key)} | {md_cell(str(value))} |" for name, key, value in metrics]
    failures = triaged(result)
    if failures:
        lines += ["", "## Failures", "", REPLAY_NOTE]
    for t in failures:
        counts = anomaly_counts(t)
        lines += ["", f"### `{t.name}`", "", violates(t) + (f": {counts}" if counts else ""), ""]
        lines += [f"- {md_cell(line)}" for line in _violation_lines(t)]
        lines += ["", "```text", evidence_text(t), "```"]
        lines += ["", "Replay:", "", "```sh", t.replay, "```"] if t.replay else []
    if result.broker:
        lines += ["", "## Broker capabilities", "", "```text", format_table(result.broker), "```"]
    if result.notes or result.untested:
        lines += ["", "## Notes", "", *(f"- {n}" for n in result.notes)]
    if result.untested:
        lines.append(f"- not checked by any selected test: {', '.join(result.untested)}")
    if result.unchecked:
        lines += ["", f"## {UNCHECKED_HEADING % f'`{result.options.level}`'}", ""]
        lines += [f"- **{req_id}**: {md_cell(why)}" for req_id, why in result.unchecked.items()]
    return "\n".join(lines) + "\n"


def _test_json(t: TestResult) -> dict[str, Any]:
    return {
        "nodeid": t.nodeid,
        "name": t.name,
        "requirements": t.ids,
        "violated": t.violated,
        "level": t.level,
        "pipeline": t.pipeline,
        "status": str(t.status),
        "duration": round(t.duration, 3),
        "message": t.message,
        "counterexamples": [{"error": c.error, "example": c.example, "blob": c.blob} for c in t.counterexamples],
        "replay": t.replay,
        "deviation": vars(t.deviation) if t.deviation else None,
        "evidence": t.longrepr,
        "metrics": t.metrics,
        "unverified": t.unverified,
        "not_checked": t.not_checked,
        "violations": [v.to_json() for v in t.violations],
        "pictures": t.pictures,
        "phases": {when: round(seconds, 3) for when, seconds in t.phases.items()},
        "started": _iso(t.started),
    }


def _iso(epoch: float | None) -> str | None:
    return None if epoch is None else datetime.fromtimestamp(epoch, UTC).isoformat()


def timings_json(result: RunResult) -> dict[str, Any]:
    """``report.json``'s ``timings``: when collection ended, and each start of a fixture wider than a test."""
    return {
        "collected": _iso(result.collected),
        "fixtures": [
            {
                "name": f.name,
                "scope": f.scope,
                "seconds": round(f.seconds, 3),
                "started": _iso(f.started),
                "test": f.test,
            }
            for f in result.fixtures
        ],
    }


def to_json(result: RunResult) -> dict[str, Any]:
    o = result.options
    verdicts = {v.category: v for v in class_verdicts(result)}
    return {
        "kconform_version": kconform_version(),
        "safe": verdicts["safety"].holds,
        "live": verdicts["liveness"].holds,
        "flink_faithful": verdicts["fidelity"].holds,
        "diagnosable": verdicts["diagnostics"].holds,
        "verdicts": {category: v.to_json() for category, v in verdicts.items()},
        "adapter": {
            "spec": o.adapter,
            "name": result.adapter_name,
            "capabilities": result.capabilities,
            "variants": result.variants,
        },
        "seed": result.seed,
        "profile": o.profile,
        "level": o.level,
        "broker": None if o.level == "protocol" else o.broker,
        "broker_release": result.broker_facts.to_json() if result.broker_facts else None,
        "judged": result.judged or None,
        "timeout": o.timeout,
        "strict": o.strict,
        "suite": o.suite,
        "only": o.only,
        "expectations": str(o.expectations) if o.expectations else None,
        "started": datetime.fromtimestamp(result.started, UTC).isoformat(),
        "finished": datetime.fromtimestamp(result.finished, UTC).isoformat(),
        "exit_code": result.exit_code,
        "could_not_check": result.could_not_check,
        "crashes": [asdict(c) for c in result.crashes],
        "requirements": [
            {
                "id": r.id,
                "level": r.level,
                "class": r.category or None,
                "title": r.title,
                "spec": f"{SPEC_DIR}{r.link}" if r.link else None,
                "status": str(r.status),
                "reason": row_note(r, o.strict),
                "tests": [t.name for t in r.tests],
            }
            for r in result.requirements
        ],
        "tests": [_test_json(t) for t in result.tests],
        "untested": result.untested,
        "unchecked_safety": [{"id": req_id, "reason": why} for req_id, why in result.unchecked.items()],
        "notes": result.notes,
        "broker_capabilities": [asdict(c) for c in result.broker],
        "timings": timings_json(result),
    }


def annotate_junit(result: RunResult, path: Path) -> None:
    """Show kconform's verdicts in pytest's ``junit.xml`` in terms every JUnit consumer understands.

    JUnit has no partial outcome and no verdict per requirement id, and a ``<skipped>`` inside a
    passing testcase makes it a skip (or invalid) to most readers. So each testcase keeps pytest's
    outcome and gets properties: ``kconform.requirements`` (the ids it checks), ``kconform.status``
    (PARTIAL, ERROR), ``kconform.violated`` (the ids a failure names, when the test checks more) and
    ``kconform.replay`` (a failure's one-line replay). The ids a test did not verify (PARTIAL, or not
    reached before its violation) get a skipped testcase ``NAME (unverified: IDS)`` next to it with
    the reason: CI dashboards count and list skips, where a property alone would go unseen. A test
    that could not check keeps pytest's ``<error>``, with kconform's message; a cause that is the
    whole run's (every test skipped, a level with nothing declared) is an errored testcase of its own.
    """
    tree = ET.parse(path)
    suite = tree.getroot().find("testsuite")
    assert suite is not None, f"{path}: no <testsuite>"
    _drop_hypothesis_statistics(suite)
    cases = {(c.get("classname"), c.get("name")): c for c in suite.iter("testcase")}

    def count(kind: str) -> None:
        suite.set(kind, str(int(suite.get(kind, "0")) + 1))

    for t in result.tests:
        unverified = [i for i in t.ids if t.status_for(i) is Status.PARTIAL]
        marks = {"kconform.requirements": ", ".join(t.ids)} if t.ids else {}
        if t.status in (Status.PARTIAL, Status.ERROR):
            marks["kconform.status"] = str(t.status)
        if t.violated != t.ids and t.status in (Status.FAIL, Status.XFAIL):
            marks["kconform.violated"] = ", ".join(t.violated)
        if t.replay:
            marks["kconform.replay"] = t.replay
        *module, name = mangle_test_address(t.nodeid)
        classname = ".".join(module)
        case = cases.get((classname, name))
        if case is None or not (unverified or marks):  # a module that failed to import has no testcase of its own
            continue
        properties = case.find("properties")  # pytest wrote the test's user properties (partial's) there
        if properties is None:
            properties = ET.Element("properties")
            case.insert(0, properties)
        for key, value in marks.items():
            ET.SubElement(properties, "property", name=key, value=value)
        for error in case.iter("error") if t.status is Status.ERROR else ():
            error.set("type", "kconform.error")
            error.set("message", f"could not check: {t.message}")
        if unverified:
            label = f"{name} (unverified: {', '.join(unverified)})"
            companion = ET.Element("testcase", classname=classname, name=label)
            why = "; ".join(f"{i} not verified: {t.unverified_reason(i)}" for i in unverified)
            ET.SubElement(companion, "skipped", type="kconform.partial", message=f"PARTIAL: {why}")
            suite.insert(list(suite).index(case) + 1, companion)
            count("tests")
            count("skipped")
    for cause in result.errors:
        case = ET.SubElement(suite, "testcase", classname="kconform", name="kconform: could not check")
        ET.SubElement(case, "error", type="kconform.error", message=cause)
        count("tests")
        count("errors")
    write_text(path, ET.tostring(tree.getroot(), encoding="unicode", xml_declaration=True) + "\n")


def _drop_hypothesis_statistics(suite: ET.Element) -> None:
    """Hypothesis's plugin adds each test's statistics as a base64 suite property: noise to every JUnit
    reader (pytest.log has them readable)."""
    for properties in suite.findall("properties"):
        for prop in properties.findall("property"):
            if prop.get("name", "").startswith("hypothesis-statistics-"):
                properties.remove(prop)
        if not len(properties):
            suite.remove(properties)
