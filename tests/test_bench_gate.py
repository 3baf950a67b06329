"""``kconform bench --gate``: the time to each verdict and where it went. The attribution and the printing over small
fabricated reports, the parts' command lines, the command's flow with a fake part runner, and one short live run
(the protocol part on one requirement id)."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

import pytest

from kconform.conformance.bench import command
from kconform.conformance.bench import verdict_times as vt
from kconform.conformance.flink.versions import NEWEST


def iso(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, UTC).isoformat()


def a_test(name: str, started: float | None, metrics: dict[str, Any] | None = None, **phases: float) -> dict[str, Any]:
    return {
        "name": name,
        "duration": sum(phases.values()),
        "phases": phases,
        "started": None if started is None else iso(started),
        "metrics": metrics or {},
    }


def pipeline_report() -> dict[str, Any]:
    """A run launched at 1000 s: its suite from 1002 to 1070, two tests; the first starts a broker and a session."""
    return {
        "started": iso(1002),
        "finished": iso(1070),
        "tests": [
            a_test("first", 1004, setup=10.5, call=20, teardown=1),
            a_test(
                "second", 1036, {"discovery_wait_s": 25.0, "failed_task_attempts": 3}, setup=0.5, call=30, teardown=2
            ),
        ],
        "timings": {
            "collected": iso(1003),
            "fixtures": [
                {"name": "pipeline_broker", "scope": "module", "seconds": 8.0, "started": iso(1004), "test": "first"},
                {"name": "spark", "scope": "module", "seconds": 1.5, "started": iso(1012), "test": "first"},
            ],
        },
    }


OUTSIDE = "outside the suites"


def shares(a: vt.Attribution) -> dict[str, float]:
    return {s.label.split(" (")[0]: round(s.seconds, 6) for s in a.shares}


def test_the_shares_of_one_run_add_up_to_its_wall_time_each_where_it_went() -> None:
    a = vt.attribute([("", pipeline_report())], 1000.0, 1072.0, OUTSIDE)
    assert a.total == 72.0 and a.to_first_test == 4.0
    assert shares(a) == {
        OUTSIDE: 4.0,  # 1000 -> 1002 and 1070 -> 1072
        "suite start to its first test": 2.0,
        "fixture starts": 9.5,
        "tests' other setup": 1.5,
        "scenarios' own work": 50.0,
        "teardown": 3.0,
        "between tests": 0.5,  # 1035.5 -> 1036
        "after the last test": 1.5,  # 1068.5 -> 1070
    }
    assert sum(s.seconds for s in a.shares) == pytest.approx(a.total)
    assert a.fixtures == [("pipeline_broker", 1, 8.0), ("spark", 1, 1.5)]
    assert a.waits == {"discovery_wait_s": 25.0}  # only the metrics named as waits
    assert a.top_tests == [("second", 32.5), ("first", 31.5)]
    assert (a.runs, a.tests) == (1, 2)


def test_the_bank_sums_its_runs_and_counts_what_ran_between_them_outside() -> None:
    """Two runs; one from a report with no phases (its duration is the call) and a result no test made (a module that
    does not import: no start); the bank's wall time beyond the runs' suites is its releases made ready and processes
    started."""
    older = {
        "started": iso(2000),
        "finished": iso(2010),
        "tests": [
            {"name": "old", "duration": 6.0, "started": iso(2001), "metrics": {}},
            a_test("broken module", None, call=0.0),
        ],
    }
    a = vt.attribute([("KAFKA-1/3.0.0", pipeline_report()), ("KAFKA-1/3.1.0", older)], 900.0, 2020.0, "outside runs")
    assert a.total == 1120.0 and a.to_first_test == 104.0 and (a.runs, a.tests) == (2, 4)
    got = shares(a)
    assert got["outside runs"] == 1120.0 - 68.0 - 10.0
    assert got["scenarios' own work"] == 56.0 and got["suite start to its first test"] == 3.0
    assert got["after the last test"] == 1.5 + 3.0  # 2007 -> 2010
    assert sum(s.seconds for s in a.shares) == pytest.approx(a.total)
    assert a.top_tests[0] == ("KAFKA-1/3.0.0: second", 32.5)


def test_a_part_that_wrote_no_report_is_all_outside_and_says_so() -> None:
    a = vt.attribute([], 0.0, 30.0, OUTSIDE)
    assert a.to_first_test is None and shares(a)[OUTSIDE] == 30.0
    assert a.notes == ["no report.json was written: the whole time is outside any suite"]


def test_the_printed_attribution_names_the_fixtures_the_waits_and_the_longest_tests() -> None:
    lines = vt.render(vt.attribute([("", pipeline_report())], 1000.0, 1072.0, OUTSIDE))
    text = "\n".join(lines)
    assert "1 kconform run, 2 tests; where the 72.0 s went:" in lines[0]
    assert "process start to the first test" in text and "4.0 s" in text
    assert "pipeline_broker x1" in text and "spark x1" in text
    assert "of which known waits: 25.0 s (discovery_wait_s 25.0 s)" in text
    assert text.index("32.5 s  second") < text.index("31.5 s  first")
    bare = pipeline_report()
    bare["tests"][1]["metrics"] = {}
    assert "known waits: none recorded" in "\n".join(vt.render(vt.attribute([("", bare)], 1000.0, 1072.0, OUTSIDE)))


def test_readable_times_switch_to_minutes_from_ten() -> None:
    assert (vt.readable(75.25), vt.readable(725.0)) == ("75.2 s", "12 min 5 s")


def part_run(part: str, seconds: float, code: int | None = 0) -> vt.PartRun:
    attribution = vt.attribute([("", pipeline_report())], 1000.0, 1000.0 + seconds, OUTSIDE)
    return vt.PartRun(part, ["run", "--level", part], seconds, code, Path("out") / part, attribution)


def test_each_part_is_printed_beside_its_goal_and_a_narrowed_run_says_it_is_not_the_goals() -> None:
    runs = [part_run("protocol", 72.0), part_run("pipeline", 200.0, 1), part_run("flink", 1200.0, None)]
    figures, lines = command.gate_figures(runs, vt.Selection(only="DISC-001"))
    text = "\n".join(lines)
    assert [f.goal_seconds for f in figures] == [60.0, 180.0]  # the part stopped at its bound reached no verdict
    assert "goal set by kconform's choice" in text and "goal set by issue 42, warm" in text
    pipeline = next(line for line in lines if line.startswith("pipeline level"))
    assert pipeline.startswith("pipeline level on the reference, to a verdict [narrowed]")
    assert "200.0 s   goal    180.0 s   x 1.11  MISSES goal" in pipeline
    assert "  narrowed by --only DISC-001: not the goal's run" in text
    assert "exit 1: verdict reached, with a violation" in text
    assert "stopped at its bound (20 min 0 s): no verdict" in text
    whole = command.gate_figures([part_run("pipeline", 170.0)], vt.Selection())[1][2]
    assert "narrowed" not in whole and whole.endswith("meets goal")


def test_a_short_figure_stays_in_milliseconds() -> None:
    assert "  12.0 ms  goal     50.0 ms" in command.Figure("diff", 0.012, 0.05).row()


def test_the_parts_run_what_make_conformance_verdicts_and_bugbank_run(tmp_path: Path) -> None:
    whole = vt.Selection()
    pipeline = vt.part_command("pipeline", tmp_path, whole)
    assert pipeline[:7] == ["run", "--adapter", vt.REFERENCE, "--level", "pipeline", "--broker", "kafka"]
    assert "--only" not in pipeline and ["--examples", str(tmp_path / "examples")] == pipeline[-2:]
    assert vt.part_command("protocol", tmp_path, whole)[4] == "protocol"
    flink = vt.part_command("flink", tmp_path, whole)
    assert flink[:3] == ["run", "--flink-connector", NEWEST] and flink[flink.index("--seed") + 1] == "2026"
    assert vt.part_command("bank", tmp_path, whole) == ["bugbank", "--profile", "default", "--reports", str(tmp_path)]
    short = vt.Selection(profile="quick", only="DISC-001", bank_only="KAFKA-1")
    assert vt.part_command("pipeline", tmp_path, short)[-2:] == ["--only", "DISC-001"]
    assert vt.part_command("bank", tmp_path, short)[-2:] == ["--only", "KAFKA-1"]
    assert vt.parse_parts("bank, protocol") == ["protocol", "bank"]
    with pytest.raises(ValueError, match="unknown gate part soak"):
        vt.parse_parts("protocol,soak")


def test_bench_gate_runs_the_chosen_parts_and_writes_them_to_the_json(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    ran: list[tuple[str, Path, vt.Selection]] = []

    def fake(part: str, folder: Path, selection: vt.Selection, out: IO[str]) -> vt.PartRun:
        ran.append((part, folder, selection))
        return part_run(part, 100.0)

    monkeypatch.setattr(command, "bench_plan", lambda: command.Figure("plan", 0.5, 1.0))
    monkeypatch.setattr(command, "bench_discovery_diff", lambda: command.Figure("diff", 0.01, 0.05))
    monkeypatch.setattr(vt, "run_part", fake)
    skips = ["--skip-mutants", "--skip-brokers", "--skip-spark", "--gate-out", str(tmp_path)]
    argv = ["--gate-parts", "pipeline,protocol", "--only", "DISC-001", "--json", str(tmp_path / "b.json"), *skips]
    assert command.main(argv) == 0
    assert [(p, f) for p, f, _ in ran] == [("protocol", tmp_path / "protocol"), ("pipeline", tmp_path / "pipeline")]
    assert ran[0][2] == vt.Selection(only="DISC-001")
    written = json.loads((tmp_path / "b.json").read_text())
    assert [f["goal_seconds"] for f in written["figures"]] == [1.0, 0.05, 60.0, 180.0]
    assert [(g["part"], g["narrowed"], g["attribution"]["runs"]) for g in written["gate"]] == [
        ("protocol", "--only DISC-001", 1),
        ("pipeline", "--only DISC-001", 1),
    ]
    assert "time to a verdict" in capsys.readouterr().out
    monkeypatch.setattr(
        vt, "run_part", lambda part, *_: vt.PartRun(part, [], 1.0, 3, tmp_path, vt.attribute([], 0, 1, ""))
    )
    assert command.main(["--gate-parts", "protocol", *skips]) == command.NOT_RUN_EXIT  # no report: no figure to trust


@pytest.mark.slow
def test_a_short_gate_run_times_the_protocol_part_from_its_reports(tmp_path: Path) -> None:
    """The whole path on a short case: ``kconform bench --gate-parts protocol --only ASSIGN-001`` runs ``kconform
    run`` as a child, reads its report.json and prints the figure beside its goal with where the time went."""
    argv = ["bench", "--gate-parts", "protocol", "--only", "ASSIGN-001", "--profile", "quick"]
    argv += ["--skip-mutants", "--skip-brokers", "--skip-spark", "--gate-out", str(tmp_path / "gate")]
    argv += ["--json", str(tmp_path / "bench.json")]
    proc = subprocess.run(
        [sys.executable, "-m", "kconform.conformance.cli", *argv], capture_output=True, text=True, timeout=180
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    (part,) = json.loads((tmp_path / "bench.json").read_text())["gate"]
    assert (part["part"], part["exit_code"], part["narrowed"]) == ("protocol", 0, "--only ASSIGN-001")
    attribution = part["attribution"]
    assert attribution["runs"] == 1 and attribution["tests"] >= 1 and 0 < attribution["to_first_test"] < part["seconds"]
    assert "adapter_under_test" in [name for name, _, _ in attribution["fixtures"]]
    assert sum(s["seconds"] for s in attribution["shares"]) == pytest.approx(part["seconds"], abs=0.01)
    assert "goal set by kconform's choice; exit 0: verdict reached, as expected" in proc.stdout
    assert (tmp_path / "gate" / "protocol" / "report.json").exists()


def test_a_part_still_running_at_its_bound_is_stopped_with_its_session_and_gives_no_exit_code(tmp_path: Path) -> None:
    """The bound ends the child and what it started (a grandchild here); a child that ends in time gives its exit."""
    grandchild = tmp_path / "grandchild.pid"
    script = (
        "import subprocess, sys, time; "
        f"p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)']); open({str(grandchild)!r}, 'w')"
        ".write(str(p.pid)); print('started', flush=True); time.sleep(60)"
    )
    out = tmp_path / "out.txt"
    with out.open("w") as shown:
        launched, ended, code = vt.timed_child([sys.executable, "-c", script], tmp_path / "log", shown, "[x] ", 3.0)
    assert code is None and 3.0 <= ended - launched < 3.0 + vt.STOP_GRACE_S
    assert "started" in (tmp_path / "log").read_text() and "[x] started" in out.read_text()
    pid = int(grandchild.read_text())
    deadline = time.monotonic() + 10  # SIGTERM is sent; the grandchild's exit follows within moments
    while alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not alive(pid), "the bound left a process of the part's session running"
    with out.open("w") as shown:
        assert vt.timed_child([sys.executable, "-c", "raise SystemExit(1)"], tmp_path / "log", shown, "", 30.0)[2] == 1


def alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie waiting for its reaper does not)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, ProcessLookupError):
        return False


def test_a_fixture_started_inside_another_s_setup_counts_its_seconds_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """A module fixture that takes a session fixture with ``request.getfixturevalue`` (the pipeline scenarios'
    broker takes the run's shared one) is timed around the inner one's start: each start's seconds in
    ``timings.fixtures`` are its own, so the fixture starts add up to no more than the setup they happened in."""
    import io
    from types import SimpleNamespace

    from kconform.conformance.gate import collector as collector_module
    from kconform.conformance.gate.collector import Collector
    from kconform.conformance.gate.options import RunOptions

    clock = iter([10.0, 11.0, 16.0, 18.0, 30.0, 30.5])  # outer in, inner in, inner out, outer out; a function one
    monkeypatch.setattr(collector_module.time, "perf_counter", lambda: next(clock))
    collector = Collector(RunOptions(adapter="m:A"), 1, {}, [], io.StringIO())

    def fixture(name: str, scope: str) -> Any:
        return collector.pytest_fixture_setup(SimpleNamespace(argname=name, scope=scope))

    outer = fixture("pipeline_broker", "module")
    next(outer)
    inner = fixture("shared_broker", "session")
    next(inner)
    for hook in (inner, outer):
        with pytest.raises(StopIteration):
            next(hook)
    alone = fixture("spark", "module")
    next(alone)
    with pytest.raises(StopIteration):
        next(alone)
    assert [(f.name, f.seconds) for f in collector.fixtures] == [
        ("shared_broker", 5.0),
        ("pipeline_broker", 3.0),
        ("spark", 0.5),
    ]
