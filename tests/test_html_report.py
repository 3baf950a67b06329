"""``report.html``: self-contained, drawn from the failures' own evidence, and readable in a real browser.

The run is ``kconform run`` against a mutant whose assigner returns negative owners (Java's
``%`` without the mask), assignment tests only, quick profile: a few seconds; a second run gives the
same mutant only the ``assignment`` capability, so that most of the protocol level is skipped. The
browser tests render the pages in headless Chromium (Debian's ``chromium``; ``.ci/run`` installs it):
the screenshot is not blank, the DOM has the grid, and the first failure of the few-capabilities run
is in the first viewport; without Chromium they are skipped, saying so (failed under ``.ci/run``,
which must check it).
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import struct
import subprocess
import sys
import tempfile
import zlib
from pathlib import Path
from typing import Any

import pytest

from kconform.conformance.bench.command import Figure, write_json
from kconform.conformance.checks.evidence import assignment_grid, offset_step, offset_timeline
from kconform.conformance.gate.collector import kconform_program
from kconform.conformance.gate.html_report import BENCH_FILE, assignment_grid_svg, bench_svg, offset_timeline_svg
from kconform.conformance.gate.results import skip_cause
from kconform.reference_impl.assignment import assign
from kconform.reference_impl.types import TopicPartition

MUTANT = "kconform.conformance.mutants.protocol:java_remainder_no_mask"
REQUIRE_BROWSER = "KCONFORM_REQUIRE_BROWSER"
"""Set by ``.ci/run``: there a missing Chromium fails the browser test instead of skipping it."""
FEW_CAPABILITIES = """from dataclasses import replace

from kconform.conformance.mutants.protocol import java_remainder_no_mask

ADAPTER = replace(java_remainder_no_mask, name="few-capabilities", capabilities=frozenset({"assignment"}))
"""
"""The mutant with only the assignment capability: the rest of the protocol level is skipped."""
VIEWPORT = (1200, 900)
FAILURE_TOP = """<script>
document.body.dataset.failureTop = document.querySelector("section.failure").getBoundingClientRect().top;
</script>"""
"""Added to a copy of the page (report.html itself has no script): where the first failure starts."""
CHROMIUM_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
)


@pytest.fixture(scope="module")
def mutant_report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The report directory of a run of the assignment tests against the mutant, with benchmark figures
    there beforehand, as ``make bench`` leaves them."""
    cwd = tmp_path_factory.mktemp("html")
    write_json(cwd / "report" / BENCH_FILE, [Figure("plan", 2.0, 1.0), Figure("discovery diff", 0.01, 0.05)])
    env = {k: v for k, v in os.environ.items() if k != "KCONFORM_PROFILE"}
    args = ["run", "--adapter", MUTANT, "--level", "protocol", "--only", "ASSIGN_001_and_002", "--profile", "quick"]
    command = [sys.executable, "-m", "kconform.conformance.cli", *args, "--seed", "7", "--report", "report"]
    proc = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    return cwd / "report"


@pytest.fixture(scope="module")
def few_capabilities_report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The report directory of the protocol level against the mutant declaring only ``assignment``."""
    cwd = tmp_path_factory.mktemp("few")
    (cwd / "few_capabilities.py").write_text(FEW_CAPABILITIES)
    env = {k: v for k, v in os.environ.items() if k != "KCONFORM_PROFILE"}
    args = ["run", "--adapter", "few_capabilities:ADAPTER", "--level", "protocol", "--profile", "quick"]
    command = [sys.executable, "-m", "kconform.conformance.cli", *args, "--seed", "7", "--report", "report"]
    proc = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    return cwd / "report"


def test_failures_come_before_the_tables_and_skips_fold_into_one_group_per_cause(few_capabilities_report: Path) -> None:
    html = (few_capabilities_report / "report.html").read_text()
    report: dict[str, Any] = json.loads((few_capabilities_report / "report.json").read_text())
    skipped = [r for r in report["requirements"] if r["status"] == "SKIP"]
    assert len(skipped) > 20
    first_failure = html.index('<section class="failure"')
    assert html.index('id="verdict-safety"') < html.index('<p class="summary">') < first_failure
    assert first_failure < html.index("<h2>Fidelity requirements</h2>") < html.index("<h2>Skipped</h2>")
    groups = re.findall(r'<details class="skipped">(.*?)</details>', html[html.index("<h2>Skipped</h2>") :])
    assert len(groups) == len({skip_cause(r["reason"]) for r in skipped}) < len(skipped)
    for row in skipped:  # every SKIP row is still there, in its cause's group, and only there
        [group] = [g for g in groups if f'id="req-{row["id"]}"' in g]
        assert '<td class="status skip">SKIP</td>' in group
        assert html.count(f'id="req-{row["id"]}"') == 1


def test_report_html_is_self_contained(mutant_report: Path) -> None:
    html = (mutant_report / "report.html").read_text()
    assert html.startswith("<!DOCTYPE html>")
    assert not re.search(r"<script|<link|<img|<iframe|\bsrc=|\bhref=\"(?!#)|url\(|@import", html, re.IGNORECASE)
    assert '<a href="#test-required_ASSIGN_001_and_002_every_partition_one_owner_spread_uniformly">' in html
    assert set(re.findall(r"https?://[^\s\"'<>]+", html)) == {"http://www.w3.org/2000/svg"}  # a namespace, not a fetch


def test_report_html_gives_both_verdicts_and_the_failing_plan_as_a_grid(mutant_report: Path) -> None:
    html = (mutant_report / "report.html").read_text()
    assert '<div class="verdict no" id="verdict-fidelity"><b>Flink-faithful: no</b>' in html
    assert '<div class="verdict unknown" id="verdict-safety"><b>safe: not verified</b>' in html
    assert "<h2>Fidelity requirements</h2>" in html
    assert html.count('<svg class="assignment-grid"') == 1
    assert 'class="diff-row"' in html  # the partition with a negative owner is marked
    program = shlex.join(kconform_program())  # ``kconform`` when this venv is activated, else its path
    assert f"{program} run --adapter kconform.conformance.mutants.protocol:java_remainder_no_mask" in html
    assert html.count('<svg class="bench-chart"') == 1


def test_report_json_has_structured_violations_and_the_grid_data(mutant_report: Path) -> None:
    report: dict[str, Any] = json.loads((mutant_report / "report.json").read_text())
    [failure] = [t for t in report["tests"] if t["status"] == "FAIL"]
    [violation] = failure["violations"]
    assert (violation["id"], violation["kind"]) == ("ASSIGN-001", "owner-out-of-range")
    assert violation["fields"]["parallelism"] == 2 and violation["fields"]["owner"] < 0
    [grid] = failure["pictures"]
    [row] = [r for r in grid["rows"] if r["topic"] == violation["fields"]["topic"]]
    assert row["actual"] == [violation["fields"]["owner"]]
    assert row["expected"] == assign(row["topic"], row["partition"], 2)
    assert (report["safe"], report["flink_faithful"]) == (None, False)
    assert {r["id"]: r["class"] for r in report["requirements"]} == {"ASSIGN-001": "fidelity", "ASSIGN-002": "fidelity"}


def test_grid_puts_topics_with_a_difference_first_and_marks_misses() -> None:
    n = 3
    claims = {TopicPartition("fine", p): [assign("fine", p, n)] for p in range(3)}
    claims[TopicPartition("wrong", 0)] = [(assign("wrong", 0, n) + 1) % n]
    claims[TopicPartition("wrong", 1)] = []
    grid = assignment_grid(claims, n, "demo")
    assert [r["topic"] for r in grid["rows"]] == ["wrong", "wrong", "fine", "fine", "fine"]
    svg = assignment_grid_svg(grid)
    assert svg.count('class="diff-row"') == 2
    assert svg.count('class="missed"') == 2  # neither wrong partition is claimed by its owner


def test_offset_timeline_marks_restarts_kills_and_reads_that_differ() -> None:
    tp = TopicPartition("t", 0)
    steps = [
        offset_step("run 1", "start", 2, [(tp, o) for o in range(0, 10)], {tp: (0, 10)}),
        offset_step("run 2", "driver-kill", 3, [(tp, o) for o in range(8, 20)], {tp: (10, 20)}, {tp: 8}),
    ]
    assert steps[1]["ranges"] == [{"topic": "t", "partition": 0, "read": [8, 20], "expected": [10, 20], "resumed": 8}]
    svg = offset_timeline_svg(offset_timeline(steps, "demo"))
    assert svg.count('class="read"') == 2
    assert "✕ run 2: driver-kill at parallelism 3" in svg
    assert svg.count('stroke="#c22f2f"') == 1  # only run 2 read other offsets than it should
    assert "<title>resumed at 8, should resume at 10</title>" in svg


def test_bench_chart_draws_each_figure_against_its_goal() -> None:
    svg = bench_svg(
        {
            "figures": [
                {"name": "fast", "seconds": 0.5, "goal_seconds": 1.0},
                {"name": "slow", "seconds": 3.0, "goal_seconds": 1.0},
                {"name": "to a verdict", "seconds": 150.0, "goal_seconds": 180.0},
            ]
        }
    )
    assert "x0.50 (500 of 1000 ms)" in svg and "x3.00 (3000 of 1000 ms)" in svg
    assert "x0.83 (150 of 180 s)" in svg  # a goal of minutes in seconds, as kconform bench prints it
    assert svg.count('fill="#2e9d4a"') == 2 and svg.count('fill="#c22f2f"') == 1


def png_rows(png: bytes) -> list[bytes]:
    """The raw scanlines of a PNG (each with its filter byte): enough to tell a blank page from a drawn one."""
    assert png[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, data, width, height = 8, b"", 0, 0
    while pos < len(png):
        (length,) = struct.unpack(">I", png[pos : pos + 4])
        kind, body = png[pos + 4 : pos + 8], png[pos + 8 : pos + 8 + length]
        if kind == b"IHDR":
            width, height = struct.unpack(">II", body[:8])
        elif kind == b"IDAT":
            data += body
        pos += 12 + length
    raw = zlib.decompress(data)
    stride = len(raw) // height
    assert stride >= width * 3, "fewer than 3 bytes a pixel"
    return [raw[i * stride : (i + 1) * stride] for i in range(height)]


def chromium() -> list[str]:
    """The headless browser command, or a skip (a failure where ``.ci/run`` requires it) without one."""
    if shutil.which("chromium") is None:
        why = "chromium is not installed (apt-get install -y chromium), so report.html is not checked in a browser"
        if os.environ.get(REQUIRE_BROWSER):
            pytest.fail(f"{why}; {REQUIRE_BROWSER} is set (.ci/run sets it)")
        pytest.skip(why)
    return ["chromium", *CHROMIUM_FLAGS]


def test_report_html_renders_in_headless_chromium(mutant_report: Path) -> None:
    browser = chromium()
    page = (mutant_report / "report.html").resolve().as_uri()
    shot = mutant_report / "report.png"
    with tempfile.TemporaryDirectory() as profile:
        browser += [f"--user-data-dir={profile}"]
        dom = subprocess.run(
            [*browser, "--dump-dom", page], capture_output=True, text=True, timeout=120, check=True
        ).stdout
        subprocess.run(
            [*browser, f"--screenshot={shot}", "--window-size=1200,1600", page],
            capture_output=True,
            timeout=120,
            check=True,
        )
    assert '<svg class="assignment-grid"' in dom
    assert 'id="verdict-fidelity"' in dom
    rows = png_rows(shot.read_bytes())
    assert len(rows) == 1600
    assert len(set(rows)) > 100, "the screenshot is (nearly) blank"


def test_the_first_failure_is_in_the_first_viewport_even_with_few_capabilities(few_capabilities_report: Path) -> None:
    browser = chromium()
    measured = few_capabilities_report / "measured.html"
    measured.write_text(
        (few_capabilities_report / "report.html").read_text().replace("</body>", f"{FAILURE_TOP}</body>")
    )
    with tempfile.TemporaryDirectory() as profile:
        width, height = VIEWPORT
        command = [*browser, f"--user-data-dir={profile}", f"--window-size={width},{height}", "--dump-dom"]
        dom = subprocess.run(
            [*command, measured.resolve().as_uri()], capture_output=True, text=True, timeout=120, check=True
        ).stdout
    [top] = re.findall(r'data-failure-top="([-0-9.e]+)"', dom)
    assert float(top) < height, f"the first failure starts {top} px down, below the first {height} px"
