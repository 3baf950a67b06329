"""The reports of ``kconform run``: the console summary, ``report.md``, ``report.json`` and ``pytest.log``.

The summary table is per requirement, because that is what a connector team is asked about; the
failure blocks are per test, because a test is what is replayed. Every rendering is built from
the same rows, so the console, the Markdown and the JSON never disagree.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import asdict
from datetime import UTC, datetime
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

from conformance.probe import format_table
from conformance.runner import RequirementResult, RunResult, Status, TestResult

TITLE_WIDTH = 60
REPLAY_NOTE = (
    "A replay in the same directory first re-runs the shrunk example saved in .hypothesis/; "
    "the @reproduce_failure blob replays it anywhere (add it as a decorator to the test)."
)
SPEC_DIR = "spec/"


def _tally(tests: list[TestResult]) -> str:
    counts = Counter(t.status for t in tests)
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
    return row.reason


def _violates(t: TestResult) -> str:
    also = f"; the test checks {', '.join(t.ids)}" if t.violated != t.ids else ""
    return f"violates {', '.join(t.violated)} (counted as {t.level}{also})" if t.ids else "no requirement id"


def _evidence(t: TestResult) -> str:
    """The error and, for a Hypothesis test, the shrunk example and blob exactly as Hypothesis printed them."""
    if not t.counterexamples:
        return t.message
    return "\n\n".join("\n".join([c.error, c.example] + ([c.blob] if c.blob else [])) for c in t.counterexamples)


def _verdict(result: RunResult) -> str:
    counts = Counter(r.status for r in result.requirements)
    summary = ", ".join(f"{n} {s}" for s, n in sorted(counts.items()))
    if not result.exit_code:
        return f"{len(result.requirements)} requirements: {summary}. Every result is as expected: exit 0."
    names = [f"{t.name} ({t.status} {t.level})" for t in result.failing]
    why = ", ".join(names + (["the run was interrupted"] if result.interrupted else []))
    return f"{len(result.requirements)} requirements: {summary}. Not as expected, exit 1: {why}"


def render_text(result: RunResult) -> str:
    lines = ["", f"{'requirement':<12} {'level':<6} {'title':<{TITLE_WIDTH}} {'status':<6} tests"]
    for row in result.requirements:
        title = row.title if len(row.title) <= TITLE_WIDTH else row.title[: TITLE_WIDTH - 3] + "..."
        lines.append(f"{row.id:<12} {row.level:<6} {title:<{TITLE_WIDTH}} {row.status:<6} {_tally(row.tests)}")
        note = _note(row, result.options.strict)
        if note:
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
        f"- level `{o.level}`, profile `{o.profile}`, seed `{result.seed}`, broker `{o.broker}`"
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
        lines.append(f"| {row.id} | {row.level} | {_md(row.title)} | {status} | {_tally(row.tests)} |")
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
        "broker": o.broker,
        "timeout": o.timeout,
        "strict": o.strict,
        "suite": o.suite,
        "only": o.only,
        "expectations": str(o.expectations) if o.expectations else None,
        "started": datetime.fromtimestamp(result.started, UTC).isoformat(),
        "finished": datetime.fromtimestamp(result.finished, UTC).isoformat(),
        "exit_code": result.exit_code,
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


def write_reports(result: RunResult, directory: Path) -> None:
    """``report.json``, ``report.md`` and ``pytest.log``; pytest itself wrote ``junit.xml`` there."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "report.json").write_text(json.dumps(to_json(result), indent=2) + "\n", encoding="utf-8")
    (directory / "report.md").write_text(render_markdown(result), encoding="utf-8")
    (directory / "pytest.log").write_text(result.pytest_log, encoding="utf-8")
