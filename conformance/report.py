"""The reports of ``kconform run``: the console summary, ``report.md``, ``report.json``, ``pytest.log``, and
kconform's own verdicts (PARTIAL, ERROR, the ids a failure violates) in pytest's ``junit.xml``.

The summary table is per requirement, because that is what a connector team is asked about; the
failure blocks are per test, because a test is what is replayed. Every rendering is built from
the same rows, so the console, the Markdown and the JSON never disagree.
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from collections import Counter
from dataclasses import asdict
from datetime import UTC, datetime
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

from _pytest.junitxml import mangle_test_address  # how pytest named the testcases it wrote

from conformance.probe import format_table
from conformance.runner import ERROR_EXIT, RequirementResult, RunResult, Status, TestResult, broker_used

TITLE_WIDTH = 60
REPLAY_NOTE = (
    "A replay in the same directory first re-runs the shrunk example saved in .hypothesis/; "
    "the @reproduce_failure blob replays it anywhere (add it as a decorator to the test)."
)
SPEC_DIR = "spec/"


def _tally(row: RequirementResult) -> str:
    counts = Counter(t.status_for(row.id) for t in row.tests)
    return ", ".join(f"{n} {status.lower()}" for status, n in sorted(counts.items()))


def _note(row: RequirementResult, strict: bool) -> str:
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


def _violates(t: TestResult) -> str:
    if not t.ids:
        return "no requirement id"
    rest = [i for i in t.ids if i not in t.violated]
    also = f"; {', '.join(rest)} not verified: the test stopped at this violation" if rest else ""
    return f"violates {', '.join(t.violated)} (counted as {t.level}){also}"


def _evidence(t: TestResult) -> str:
    """The error and, for a Hypothesis test, the shrunk example and blob exactly as Hypothesis printed them."""
    if not t.counterexamples:
        return t.message
    return "\n\n".join("\n".join([c.error, c.example] + ([c.blob] if c.blob else [])) for c in t.counterexamples)


def _verdict(result: RunResult) -> str:
    """The last line: counts by status, every PARTIAL id with its reason (exit 0 must not read as all green),
    and every cause of an ERROR, once (one broker down errs every pipeline test)."""
    counts = Counter(r.status for r in result.requirements)
    head = f"{len(result.requirements)} requirements: {', '.join(f'{n} {s}' for s, n in sorted(counts.items()))}."
    partial = [f"{r.id}: {r.reason}" for r in result.requirements if r.status is Status.PARTIAL]
    if partial:
        head += f" NOT FULLY VERIFIED, so not a pass: {'; '.join(partial)}."
    causes = "; ".join(result.could_not_check)
    if not result.exit_code:
        if partial:
            return f"{head} Nothing failed: exit 0 (--strict fails on PARTIAL)."
        return f"{head} Every result is as expected: exit 0."
    if result.exit_code == ERROR_EXIT:
        return f"{head} Could not check, exit {ERROR_EXIT}: {causes}"
    names = [f"{t.name} ({t.status} {t.level})" for t in result.failing]
    why = ", ".join(names + (["the run was interrupted"] if result.interrupted else []))
    return f"{head} Not as expected, exit 1: {why}" + (f". Could not check: {causes}" if causes else "")


def render_text(result: RunResult) -> str:
    lines = ["", f"{'requirement':<12} {'level':<6} {'title':<{TITLE_WIDTH}} {'status':<7} tests"]
    for row in result.requirements:
        title = row.title if len(row.title) <= TITLE_WIDTH else row.title[: TITLE_WIDTH - 3] + "..."
        lines.append(f"{row.id:<12} {row.level:<6} {title:<{TITLE_WIDTH}} {row.status:<7} {_tally(row)}")
        note = _note(row, result.options.strict)
        if note and row.status is not Status.ERROR:  # its cause ends the summary, once
            lines.append(f"{'':<12} -> {note}")
    for t in (t for t in result.tests if t.status is Status.FAIL):
        lines += ["", f"FAIL {t.name}", f"  {_violates(t)}", *(f"  {line}" for line in _evidence(t).splitlines())]
        lines += [f"  replay: {t.replay}"] if t.replay else []
    if any(t.status is Status.FAIL for t in result.tests):
        lines += ["", REPLAY_NOTE]
    if result.broker:
        lines += ["", "broker capabilities (kconform probe-broker):", format_table(result.broker)]
    metrics = [f"metric {t.name}: {k} = {v}" for t in result.tests for k, v in t.metrics.items()]
    lines += ["", *metrics] if metrics else []
    lines += ["", *(f"note: {n}" for n in result.notes)]
    if result.untested:
        lines.append(f"not checked by any selected test: {', '.join(result.untested)}")
    lines.append(_verdict(result))
    return "\n".join(lines)


def _md(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def render_markdown(result: RunResult) -> str:
    o = result.options
    lines = [
        f"# kconform report: {result.adapter_name}",
        "",
        f"- adapter: `{o.adapter}` (capabilities: {', '.join(result.capabilities)})",
        f"- variants: {', '.join(f'{k}={v}' for k, v in result.variants.items())}",
        f"- level `{o.level}`, {broker_used(o)}, profile `{o.profile}`, seed `{result.seed}`"
        + (", strict" if o.strict else ""),
        "",
        f"**{_verdict(result)}**",
        "",
        "| requirement | level | title | status | tests |",
        "| --- | --- | --- | --- | --- |",
    ]
    for row in result.requirements:
        note = _note(row, o.strict)
        status = f"{row.status} ({_md(note)})" if note else str(row.status)
        lines.append(f"| {row.id} | {row.level} | {_md(row.title)} | {status} | {_tally(row)} |")
    failures = [t for t in result.tests if t.status is Status.FAIL]
    if failures:
        lines += ["", "## Failures", "", REPLAY_NOTE]
    for t in failures:
        lines += ["", f"### `{t.name}`", "", _violates(t), "", "```text", _evidence(t), "```"]
        lines += ["", "Replay:", "", "```sh", t.replay, "```"] if t.replay else []
    if result.broker:
        lines += ["", "## Broker capabilities", "", "```text", format_table(result.broker), "```"]
    if result.notes or result.untested:
        lines += ["", "## Notes", "", *(f"- {n}" for n in result.notes)]
    if result.untested:
        lines.append(f"- not checked by any selected test: {', '.join(result.untested)}")
    return "\n".join(lines) + "\n"


def _kconform_version() -> str:
    try:
        return version("kconform")
    except PackageNotFoundError:
        return "unknown"


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
    }


def to_json(result: RunResult) -> dict[str, Any]:
    o = result.options
    return {
        "kconform_version": _kconform_version(),
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
        "timeout": o.timeout,
        "strict": o.strict,
        "suite": o.suite,
        "only": o.only,
        "expectations": str(o.expectations) if o.expectations else None,
        "started": datetime.fromtimestamp(result.started, UTC).isoformat(),
        "finished": datetime.fromtimestamp(result.finished, UTC).isoformat(),
        "exit_code": result.exit_code,
        "could_not_check": result.could_not_check,
        "requirements": [
            {
                "id": r.id,
                "level": r.level,
                "title": r.title,
                "spec": f"{SPEC_DIR}{r.link}" if r.link else None,
                "status": str(r.status),
                "reason": _note(r, o.strict),
                "tests": [t.name for t in r.tests],
            }
            for r in result.requirements
        ],
        "tests": [_test_json(t) for t in result.tests],
        "untested": result.untested,
        "notes": result.notes,
        "broker_capabilities": [asdict(c) for c in result.broker],
    }


def annotate_junit(result: RunResult, path: Path) -> None:
    """Show kconform's verdicts in pytest's ``junit.xml`` in terms every JUnit consumer understands.

    JUnit has no partial outcome and no verdict per requirement id, and a ``<skipped>`` inside a
    passing testcase makes it a skip (or invalid) to most readers. So each testcase keeps pytest's
    outcome and gets properties: ``kconform.status`` (PARTIAL, ERROR) and ``kconform.violated`` (the
    ids a failure names, when the test checks more). The ids a test did not verify (PARTIAL, or not
    reached before its violation) get a skipped testcase ``NAME (unverified: IDS)`` next to it with
    the reason: CI dashboards count and list skips, where a property alone would go unseen. A test
    that could not check keeps pytest's ``<error>``, with kconform's message; a cause that is the
    whole run's (every test skipped, a level with nothing declared) is an errored testcase of its own.
    """
    tree = ET.parse(path)
    suite = tree.getroot().find("testsuite")
    assert suite is not None, f"{path}: no <testsuite>"
    cases = {(c.get("classname"), c.get("name")): c for c in suite.iter("testcase")}

    def count(kind: str) -> None:
        suite.set(kind, str(int(suite.get(kind, "0")) + 1))

    for t in result.tests:
        unverified = [i for i in t.ids if t.status_for(i) is Status.PARTIAL]
        marks = {"kconform.status": str(t.status)} if t.status in (Status.PARTIAL, Status.ERROR) else {}
        if t.violated != t.ids and t.status in (Status.FAIL, Status.XFAIL):
            marks["kconform.violated"] = ", ".join(t.violated)
        if not (unverified or marks):
            continue
        *module, name = mangle_test_address(t.nodeid)
        classname = ".".join(module)
        case = cases[classname, name]
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
    tree.write(path, encoding="utf-8", xml_declaration=True)


def write_reports(result: RunResult, directory: Path) -> None:
    """``report.json``, ``report.md`` and ``pytest.log``; pytest itself wrote ``junit.xml`` there."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "report.json").write_text(json.dumps(to_json(result), indent=2) + "\n", encoding="utf-8")
    (directory / "report.md").write_text(render_markdown(result), encoding="utf-8")
    (directory / "pytest.log").write_text(result.pytest_log, encoding="utf-8")
    annotate_junit(result, directory / "junit.xml")
