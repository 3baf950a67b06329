"""``report.html``: the run as one self-contained page (inline CSS and SVG, no script, no external URL).

It says what report.md says, split the way a connector team asks it (is it safe, is it faithful
to Flink), and draws what text describes badly: the task x partition grid of a failing plan,
expected beside actual; the offsets each run of a restart sequence read, restarts and driver
kills marked; the benchmark figures against their goals. The pictures are drawn from the data the
failing tests attached to their failures (``kconform.conformance.checks.evidence``), never re-derived here.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Sequence
from html import escape
from pathlib import Path
from typing import Any

from ..checks.checkers import Picture
from ..redaction import write_text
from ..spec_tools.requirements import CATEGORIES
from .options import broker_used
from .report import (
    REPLAY_NOTE,
    UNCHECKED_HEADING,
    ClassVerdict,
    class_verdicts,
    evidence_text,
    judged_line,
    row_note,
    shorten,
    tally,
    violates,
)
from .results import UNSTRUCTURED, RequirementResult, RunResult, Status, TestResult, skip_cause

BENCH_FILE = "bench.json"
"""Written by ``kconform bench --json DIR/bench.json``; drawn when it is in the report's directory."""
VIOLATIONS_LISTED = 12
VIOLATIONS_FOLDED = 500
GRID_COLUMNS = 24
"""Task columns a grid draws at most: a wide parallelism shows only the tasks some partition names."""
CELL = 18
LABEL_WIDTH = 190
STATUS_CLASS = {
    Status.PASS: "pass",
    Status.XPASS: "fail",
    Status.FAIL: "fail",
    Status.XFAIL: "fail",
    Status.PARTIAL: "partial",
    Status.SKIP: "skip",
    Status.ERROR: "error",
}
STEP_COLOURS = ("#3b7dd8", "#e08a1e", "#7a4fc9", "#2a9d8f", "#c9497a", "#6b8e23")
CSS = """
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; margin: 24px; color: #1d2330; }
h1 { font-size: 22px; margin: 0 0 4px; } h2 { font-size: 18px; margin: 28px 0 8px; border-bottom: 1px solid #d8dde6; }
h3 { font-size: 15px; margin: 18px 0 6px; font-family: ui-monospace, monospace; word-break: break-all; }
.meta { color: #5a6372; margin: 0 0 14px; }
.verdicts { display: flex; gap: 14px; margin: 12px 0; flex-wrap: wrap; }
.verdict { border-radius: 8px; padding: 10px 16px; min-width: 260px; flex: 1; border: 2px solid; }
.verdict b { font-size: 20px; display: block; }
.verdict.yes { background: #e7f6ea; border-color: #2e9d4a; } .verdict.no { background: #fdeaea; border-color: #d23c3c; }
.verdict.unknown { background: #f1f2f5; border-color: #8a93a3; }
.summary { font-weight: 600; margin: 8px 0 16px; }
table { border-collapse: collapse; margin: 6px 0 12px; width: 100%; }
th, td { border: 1px solid #d8dde6; padding: 4px 8px; text-align: left; vertical-align: top; }
td:first-child { white-space: nowrap; }
th { background: #f3f5f8; }
td.status { font-weight: 700; white-space: nowrap; }
td.pass, .verdict .pass { color: #1f7a37; } td.fail { color: #c22f2f; } td.partial { color: #a56500; }
td.skip, td.error { color: #5a6372; }
tr.fail td { background: #fff5f5; } tr.partial td { background: #fffaf0; }
.note { color: #5a6372; font-size: 13px; }
pre, code { font: 12.5px/1.4 ui-monospace, "DejaVu Sans Mono", monospace; }
pre { background: #f6f8fa; border: 1px solid #e1e5eb; padding: 8px; overflow-x: auto; white-space: pre-wrap; }
.replay { background: #1d2330; color: #e8ecf3; padding: 6px 10px; border-radius: 4px; word-break: break-all; }
ul.violations { margin: 4px 0; padding-left: 20px; }
ul.violations li { font-family: ui-monospace, monospace; font-size: 12.5px; }
figure { margin: 10px 0; } figcaption { font-weight: 600; margin-bottom: 4px; }
svg text { font-family: ui-monospace, "DejaVu Sans Mono", monospace; font-size: 11px; fill: #1d2330; }
"""


def _e(value: object) -> str:
    return escape(str(value), quote=True)


def _verdict_box(v: ClassVerdict) -> str:
    css = {True: "yes", False: "no", None: "unknown"}[v.holds]
    title = {
        "safety": "no record lost, repeated or reordered",
        "liveness": "recovers and gets on: no hang, no failure where it should recover",
        "fidelity": "follows Flink's model exactly",
        "diagnostics": "its failures name what to fix",
    }
    return (
        f'<div class="verdict {css}" id="verdict-{v.category}"><b>{_e(v.label)}: {_e(v.answer)}</b>'
        f'<span class="note">{_e(title[v.category])}</span><div>{_e(v.detail)}</div></div>'
    )


def _requirement_table(rows: Sequence[RequirementResult], strict: bool) -> str:
    head = "<tr><th>id</th><th>level</th><th>title</th><th>status</th><th>tests</th><th>why</th></tr>"
    body = []
    for r in rows:
        css = STATUS_CLASS[r.status]
        body.append(
            f'<tr class="{css}" id="req-{_e(r.id)}"><td><code>{_e(r.id)}</code></td><td>{_e(r.level)}</td>'
            f'<td>{_e(r.title)}</td><td class="status {css}">{_e(r.status)}</td><td>{_e(tally(r))}</td>'
            f'<td class="note">{_e(shorten(row_note(r, strict)))}</td></tr>'
        )
    return f"<table>{head}{''.join(body)}</table>"


def _skipped(rows: Sequence[RequirementResult], strict: bool) -> str:
    """The skipped rows folded, one group per cause: an adapter with few capabilities skips dozens of ids
    for a handful of reasons, which would push everything else out of view."""
    groups: dict[str, list[RequirementResult]] = {}
    for r in rows:
        groups.setdefault(skip_cause(r.reason), []).append(r)
    return "".join(
        f'<details class="skipped"><summary>{len(group)} skipped: {_e(shorten(cause))} '
        f"(<code>{_e(', '.join(r.id for r in group))}</code>)</summary>{_requirement_table(group, strict)}</details>"
        for cause, group in groups.items()
    )


def _grid_columns(picture: Picture) -> list[int]:
    """The task columns of a grid: all of ``0..n-1`` when few, else the tasks the rows name, owner then
    claims, in row order (differences first) until ``GRID_COLUMNS``; out-of-range claims are columns too."""
    n: int = picture["parallelism"]
    named = dict.fromkeys(task for r in picture["rows"] for task in [r["expected"], *r["actual"]])
    if n <= GRID_COLUMNS:
        return sorted(set(range(n)) | set(named))
    return sorted(list(named)[:GRID_COLUMNS])


def assignment_grid_svg(picture: Picture) -> str:
    """Two grids with aligned rows, partitions down and tasks across: Flink's owner (left) and the tasks
    that claimed it (right); a claim on the wrong task is red, a missed owner a dashed red box."""
    rows: list[dict[str, Any]] = picture["rows"]
    columns = _grid_columns(picture)
    n: int = picture["parallelism"]
    width = max(len(columns) * CELL, 130)  # room for the grid's heading
    gap = 36
    wide = max(len(str(c)) for c in columns) > 2  # labels of a large parallelism are turned to fit their column
    top = 70 if wide else 44
    total_width = max(LABEL_WIDTH + 2 * width + gap + 10, 700)  # room for the legend
    height = top + len(rows) * CELL + 34
    out = [
        f'<svg class="assignment-grid" xmlns="http://www.w3.org/2000/svg" width="{total_width}" height="{height}" '
        f'viewBox="0 0 {total_width} {height}" role="img" aria-label="{_e(picture["title"])}">'
    ]
    left, right = LABEL_WIDTH, LABEL_WIDTH + width + gap
    out.append(f'<text x="{left}" y="14" font-weight="bold">expected (Flink)</text>')
    out.append(f'<text x="{right}" y="14" font-weight="bold">actual</text>')
    for x0 in (left, right):
        for i, task in enumerate(columns):
            outside = not 0 <= task < n
            colour = ' fill="#c22f2f"' if outside else ""
            cx = x0 + i * CELL + CELL / 2
            turn = f' transform="rotate(-60 {cx} {top - 8})" text-anchor="start"' if wide else ' text-anchor="middle"'
            out.append(f'<text x="{cx}" y="{top - 8}"{turn}{colour}>{task}</text>')
    out.append(f'<text x="4" y="{top - 8}">partition \\ task</text>')
    for y_index, row in enumerate(rows):
        y = top + y_index * CELL
        actual: list[int] = row["actual"]
        differs = actual != [row["expected"]]
        if differs:
            out.append(f'<rect class="diff-row" x="0" y="{y}" width="{total_width}" height="{CELL}" fill="#fde3e3"/>')
            out.append(f'<text x="{left + width + gap / 2}" y="{y + 13}" text-anchor="middle" fill="#c22f2f">≠</text>')
        label = shorten(f"{row['topic']}-{row['partition']}", 26)
        out.append(f'<text x="4" y="{y + 13}">{_e(label)}</text>')
        for i, task in enumerate(columns):
            for x0 in (left, right):
                out.append(
                    f'<rect x="{x0 + i * CELL}" y="{y}" width="{CELL}" height="{CELL}" fill="none" stroke="#d8dde6"/>'
                )
            x_left, x_right = left + i * CELL, right + i * CELL
            if task == row["expected"]:
                out.append(
                    f'<rect x="{x_left + 3}" y="{y + 3}" width="{CELL - 6}" height="{CELL - 6}" fill="#3b7dd8"/>'
                )
                if task not in actual:
                    out.append(
                        f'<rect class="missed" x="{x_right + 2}" y="{y + 2}" width="{CELL - 4}" height="{CELL - 4}" '
                        f'fill="none" stroke="#c22f2f" stroke-width="2" stroke-dasharray="3 2"/>'
                    )
            if task in actual:
                fill = "#2e9d4a" if task == row["expected"] else "#c22f2f"
                out.append(
                    f'<rect x="{x_right + 3}" y="{y + 3}" width="{CELL - 6}" height="{CELL - 6}" fill="{fill}"/>'
                )
    legend_y = top + len(rows) * CELL + 22
    out.append(
        f'<rect x="4" y="{legend_y - 10}" width="12" height="12" fill="#3b7dd8"/>'
        f'<text x="20" y="{legend_y}">Flink\'s owner</text>'
        f'<rect x="130" y="{legend_y - 10}" width="12" height="12" fill="#2e9d4a"/>'
        f'<text x="146" y="{legend_y}">claimed by the owner</text>'
        f'<rect x="310" y="{legend_y - 10}" width="12" height="12" fill="#c22f2f"/>'
        f'<text x="326" y="{legend_y}">claimed by another task</text>'
        f'<rect x="510" y="{legend_y - 10}" width="12" height="12" fill="none" stroke="#c22f2f" '
        'stroke-dasharray="3 2"/>'
        f'<text x="526" y="{legend_y}">owner did not claim it</text>'
    )
    out.append("</svg>")
    return "".join(out)


def offset_timeline_svg(picture: Picture) -> str:
    """One row per partition, offsets across: each run's read range as a coloured bar over the range it
    should have read (grey); a gap or an overlap between runs is a lost or repeated record."""
    steps: list[dict[str, Any]] = picture["steps"]
    partitions = sorted({(r["topic"], r["partition"]) for s in steps for r in s["ranges"]})
    ends = [x for s in steps for r in s["ranges"] for span in (r["read"], r["expected"]) if span for x in span]
    ends += [r["resumed"] for s in steps for r in s["ranges"] if r.get("resumed") is not None]
    most = max(ends, default=1) or 1
    plot = 560
    lane = 8
    row_height = lane * len(steps) + 14  # room for a resume marker above the first lane
    top = 30
    legend_top = top + len(partitions) * row_height + 26
    height = legend_top + 18 * len(steps) + 8
    width = LABEL_WIDTH + plot + 40

    def x(offset: int) -> float:
        return LABEL_WIDTH + plot * offset / most

    out = [
        f'<svg class="offset-timeline" xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" role="img" aria-label="{_e(picture["title"])}">'
    ]
    for tick in sorted({0, most // 2, most}):
        out.append(f'<line x1="{x(tick)}" y1="{top - 6}" x2="{x(tick)}" y2="{legend_top - 20}" stroke="#e1e5eb"/>')
        out.append(f'<text x="{x(tick)}" y="{top - 10}" text-anchor="middle">{tick}</text>')
    out.append(f'<text x="4" y="{top - 10}">partition \\ offset</text>')
    for p_index, (topic, partition) in enumerate(partitions):
        y0 = top + p_index * row_height
        out.append(f'<text x="4" y="{y0 + row_height / 2 + 3}">{_e(shorten(f"{topic}-{partition}", 26))}</text>')
        for s_index, step in enumerate(steps):
            found = next((r for r in step["ranges"] if (r["topic"], r["partition"]) == (topic, partition)), None)
            if found is None:
                continue
            y = y0 + s_index * lane
            if found["expected"]:
                lo, hi = found["expected"]
                out.append(
                    f'<rect x="{x(lo)}" y="{y}" width="{max(x(hi) - x(lo), 1)}" height="{lane - 2}" fill="#dde2ea"/>'
                )
            resumed = found.get("resumed")
            if resumed is not None:
                should = found["expected"][0] if found["expected"] else resumed
                colour = "#1d2330" if resumed == should else "#c22f2f"
                out.append(
                    f'<path class="resumed" d="M{x(resumed)} {y - 1} l-4 -5 h8 z" fill="{colour}">'
                    f"<title>resumed at {resumed}, should resume at {should}</title></path>"
                )
            if found["read"]:
                lo, hi = found["read"]
                colour = STEP_COLOURS[s_index % len(STEP_COLOURS)]
                out.append(
                    f'<rect class="read" x="{x(lo)}" y="{y + 1}" width="{max(x(hi) - x(lo), 1)}" height="{lane - 4}" '
                    f'fill="{colour}"/>'
                )
                wrong = found["expected"] and list(found["read"]) != list(found["expected"])
                if wrong:
                    out.append(
                        f'<rect x="{x(lo)}" y="{y}" width="{max(x(hi) - x(lo), 1)}" height="{lane - 2}" fill="none" '
                        f'stroke="#c22f2f" stroke-width="1.5"/>'
                    )
    marks = {"start": "▶", "restart": "⟳", "driver-kill": "✕", "crash": "✕"}
    for s_index, step in enumerate(steps):
        y = legend_top + s_index * 18
        colour = STEP_COLOURS[s_index % len(STEP_COLOURS)]
        kill = ' fill="#c22f2f"' if step["event"] in ("driver-kill", "crash") else ""
        out.append(f'<rect x="4" y="{y - 10}" width="12" height="12" fill="{colour}"/>')
        out.append(
            f'<text x="22" y="{y}"{kill}>'
            f"{marks.get(step['event'], '•')} {_e(step['label'])}: {_e(step['event'])} at parallelism "
            f"{step['parallelism']}</text>"
        )
    out.append(
        f'<text x="{LABEL_WIDTH + plot - 330}" y="{legend_top}">grey: should read; red box: read otherwise</text>'
        f'<text x="{LABEL_WIDTH + plot - 330}" y="{legend_top + 18}">▼ where a run resumed (red: not where it '
        "should)</text>"
    )
    out.append("</svg>")
    return "".join(out)


def bench_svg(bench: dict[str, Any]) -> str:
    """Each figure as a bar of measured / goal, the goal a line at 1: left of it meets the goal."""
    figures: list[dict[str, Any]] = bench.get("figures", [])
    scale = max([2.0, *(f["seconds"] / f["goal_seconds"] for f in figures)])
    plot, label, row = 360, 380, 24
    height = 30 + row * len(figures)
    width = label + plot + 140
    out = [
        f'<svg class="bench-chart" xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" role="img" aria-label="benchmarks against their goals">'
    ]
    goal_x = label + plot / scale
    out.append(f'<line x1="{goal_x}" y1="8" x2="{goal_x}" y2="{height - 4}" stroke="#1d2330" stroke-dasharray="4 3"/>')
    out.append(f'<text x="{goal_x + 4}" y="16">goal</text>')
    for i, f in enumerate(figures):
        y = 24 + i * row
        ratio = f["seconds"] / f["goal_seconds"]
        colour = "#2e9d4a" if ratio <= 1 else "#c22f2f"
        out.append(f'<text x="4" y="{y + 12}">{_e(f["name"])}</text>')
        out.append(f'<rect x="{label}" y="{y}" width="{max(plot * ratio / scale, 1)}" height="16" fill="{colour}"/>')
        scale, unit = (1000, "ms") if f["goal_seconds"] < 10 else (1, "s")  # as kconform bench prints it
        out.append(
            f'<text x="{label + plot + 8}" y="{y + 12}">x{ratio:.2f} ({f["seconds"] * scale:.0f} of '
            f"{f['goal_seconds'] * scale:.0f} {unit})</text>"
        )
    out.append("</svg>")
    return "".join(out)


DRAW = {"assignment-grid": assignment_grid_svg, "offset-timeline": offset_timeline_svg}


def _pictures(pictures: Iterable[Picture]) -> str:
    return "".join(
        f"<figure><figcaption>{_e(p['title'])}"
        + (
            f" ({p['partitions']} partitions, first {len(p['rows'])} shown)"
            if len(p.get("rows", ())) < p.get("partitions", 0)
            else ""
        )
        + f"</figcaption>{DRAW[p['kind']](p)}</figure>"
        for p in pictures
        if p.get("kind") in DRAW
    )


def _violation_list(t: TestResult) -> str:
    """The first violations in view, the others (up to ``VIOLATIONS_FOLDED``) folded."""
    lines = [shorten(v.evidence if v.kind == UNSTRUCTURED else str(v)) for v in t.violations]
    shown = "".join(f"<li>{_e(line)}</li>" for line in lines[:VIOLATIONS_LISTED])
    html = f'<ul class="violations">{shown}</ul>'
    folded = lines[VIOLATIONS_LISTED:VIOLATIONS_FOLDED]
    if folded:
        rest = "".join(f"<li>{_e(line)}</li>" for line in folded)
        beyond = len(lines) - VIOLATIONS_FOLDED
        rest += f"<li>... and {beyond} more (report.json lists them all)</li>" if beyond > 0 else ""
        summary = f"<summary>{len(lines) - VIOLATIONS_LISTED} more violations</summary>"
        html += f'<details>{summary}<ul class="violations">{rest}</ul></details>'
    return html


def _failure(t: TestResult) -> str:
    parts = [
        f'<section class="failure" id="test-{_e(t.name)}"><h3>{_e(t.name)}</h3>',
        f"<p>{_e(violates(t))}</p>",
        _violation_list(t),
        _pictures(t.pictures),
        f"<details><summary>counterexample and traceback</summary><pre>{_e(evidence_text(t))}</pre></details>",
    ]
    if t.replay:
        parts.append(f'<p>replay:</p><pre class="replay">{_e(t.replay)}</pre>')
    return "".join(parts) + "</section>"


def _broker_table(result: RunResult) -> str:
    head = "<tr><th>requirement</th><th>capability</th><th>supported</th><th>observation</th></tr>"
    rows = "".join(
        f"<tr><td><code>{_e(c.requirement_id)}</code></td><td>{_e(c.name)}</td>"
        f'<td class="{"pass" if c.supported else "fail"}">{"yes" if c.supported else "NO"}</td>'
        f'<td class="note">{_e(c.observation)}</td></tr>'
        for c in result.broker
    )
    return f'<table class="broker">{head}{rows}</table>'


def _bench(directory: Path) -> dict[str, Any] | None:
    path = directory / BENCH_FILE
    if not path.exists():
        return None
    loaded: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return loaded


def _summary(result: RunResult) -> str:
    """Counts by status and the exit code, the failing tests linked to their sections (the tables below give
    each PARTIAL's reason)."""
    counts = Counter(str(r.status) for r in result.requirements)
    head = f"{len(result.requirements)} requirements: {', '.join(f'{n} {s}' for s, n in sorted(counts.items()))}"
    failing = ", ".join(f'<a href="#test-{_e(t.name)}">{_e(t.name)}</a>' for t in result.failing)
    causes = "; ".join(result.could_not_check)
    parts = [f"{_e(head)}; exit {result.exit_code}"]
    parts += [f"Not as expected: {failing}"] if failing else []
    parts += [f"Could not check: {_e(causes)}"] if causes else []
    return f'<p class="summary">{". ".join(parts)}.</p>'


def render_html(result: RunResult, bench: dict[str, Any] | None = None) -> str:
    o = result.options
    verdicts = class_verdicts(result)
    body = [
        f"<h1>kconform report: {_e(result.adapter_name)}</h1>",
        f'<p class="meta">adapter <code>{_e(o.adapter)}</code>, level {_e(o.level)}, {_e(broker_used(o))}, '
        f"profile {_e(o.profile)}, seed {result.seed}{', strict' if o.strict else ''}</p>",
        *([f'<p class="meta">judged: {_e(judged_line(result))}</p>'] if result.judged else []),
        *([f'<p class="meta">broker: {_e(result.broker_facts.text())}</p>'] if result.broker_facts else []),
        f'<div class="verdicts">{"".join(_verdict_box(v) for v in verdicts)}</div>',
        _summary(result),
    ]
    failures = [t for t in result.tests if t.status in (Status.FAIL, Status.XFAIL)]
    if failures:
        body += ["<h2>Failures</h2>", f'<p class="note">{_e(REPLAY_NOTE)}</p>', *map(_failure, failures)]
    checked = [r for r in result.requirements if r.status is not Status.SKIP]
    for category in CATEGORIES:
        rows = [r for r in checked if r.category == category]
        if rows:
            body += [f"<h2>{category.capitalize()} requirements</h2>", _requirement_table(rows, o.strict)]
    others = [r for r in checked if r.category not in CATEGORIES]
    if others:
        body += ["<h2>Requirements of no class</h2>", _requirement_table(others, o.strict)]
    skipped = [r for r in result.requirements if r.status is Status.SKIP]
    if skipped:
        body += ["<h2>Skipped</h2>", _skipped(skipped, o.strict)]
    metrics = [(t.name, k, v) for t in result.tests for k, v in t.metrics.items()]
    if metrics:
        rows_html = "".join(
            f"<tr><td><code>{_e(n)}</code></td><td>{_e(k)}</td><td>{_e(v)}</td></tr>" for n, k, v in metrics
        )
        body += ["<h2>Metrics</h2>", f"<table><tr><th>test</th><th>metric</th><th>value</th></tr>{rows_html}</table>"]
    if result.broker:
        body += ["<h2>Broker capabilities</h2>", _broker_table(result)]
    if bench:
        body += ["<h2>Benchmarks</h2>", bench_svg(bench)]
    if result.unchecked:
        rows_html = "".join(f"<tr><td>{_e(i)}</td><td>{_e(why)}</td></tr>" for i, why in result.unchecked.items())
        heading = UNCHECKED_HEADING % result.options.level
        body += [
            f"<h2>{_e(heading[0].upper() + heading[1:])}</h2>",
            f"<table><tr><th>id</th><th>why</th></tr>{rows_html}</table>",
        ]
    notes = [*result.notes] + (
        [f"not checked by any selected test: {', '.join(result.untested)}"] if result.untested else []
    )
    if notes:
        body += ["<h2>Notes</h2>", "<ul>" + "".join(f"<li>{_e(n)}</li>" for n in notes) + "</ul>"]
    return (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        f"<title>kconform report: {_e(result.adapter_name)}</title><style>{CSS}</style></head>"
        f"<body>{''.join(body)}</body></html>\n"
    )


def write_html(result: RunResult, directory: Path) -> Path:
    """``report.html`` in ``directory``, with the benchmarks of ``bench.json`` if it is there."""
    path = directory / "report.html"
    write_text(path, render_html(result, _bench(directory)))
    return path
