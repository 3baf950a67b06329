"""No run ends without a report: ``kconform run`` runs the suite in a child process, and a crash of that process
(a segfault in the judged code or a client library) is ERROR naming the signal and its stacks, the run going on
with the tests left (``kconform.conformance.gate.supervisor``, ``journal``)."""

from __future__ import annotations

import json
import os
import pickle
import select
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from kconform.conformance.cli import KCONFORM
from kconform.conformance.gate import results, supervisor
from kconform.conformance.gate.journal import Journal, _first_frames
from kconform.conformance.gate.results import Status
from kconform.conformance.gate.supervisor import JOURNAL_ENV, MAX_CRASHES, Crash, record_crash

ROOT = Path(__file__).resolve().parents[1]
FAULTHANDLER_DUMP = """Fatal Python error: Segmentation fault

Thread 0x00007f0000000001 (most recent call first):
  File "/x/threading.py", line 320 in wait

Current thread 0x00007f0000000002 (most recent call first):
  File "/x/ctypes/__init__.py", line 519 in string_at
  File "/t/misbehaving_adapters.py", line 9 in _segfault
  File "/t/misbehaving_adapters.py", line 20 in assign
  File "/s/suite.py", line 50 in test_x

Extension modules: numpy (total: 1)
"""


def kconform_run(adapter: str, tmp_path: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "kconform.conformance.cli", "run", "--adapter", f"tests.misbehaving_adapters:{adapter}",
         "--level", "protocol", "--only", "ASSIGN", "--profile", "quick", "--seed", "3",
         "--report", str(tmp_path / "report"), *extra],
        cwd=ROOT, env={**os.environ, "CRASH_MARK": str(tmp_path / "crashed")},
        capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip


def test_a_segfault_of_the_suites_process_is_error_naming_it_and_the_run_goes_on(tmp_path: Path) -> None:
    """The first ``assign`` call segfaults: that test is ERROR with SIGSEGV and the adapter's frame, every other
    ASSIGN test runs in a new process and passes, and every report is written (exit 3: one test could not check)."""
    run = kconform_run("CRASHES_ONCE", tmp_path)
    assert run.returncode == 3, run.stdout + run.stderr
    assert "died of SIGSEGV (signal 11)" in run.stderr and "in assign" in run.stderr, run.stderr
    report = json.loads((tmp_path / "report" / "report.json").read_text())
    tests = report["tests"]
    errors = [t for t in tests if t["status"] == "ERROR"]
    assert len(errors) == 1, errors
    assert "died of SIGSEGV" in errors[0]["message"] and "misbehaving_adapters.py" in errors[0]["message"]
    (crash,) = report["crashes"]  # the crash as data, beside the message
    assert (crash["signal"], crash["signal_name"], crash["test"]) == (11, "SIGSEGV", errors[0]["nodeid"]), crash
    assert crash["test_name"] == errors[0]["name"] and crash["pid"] > 0
    assert any("misbehaving_adapters.py" in frame for frame in crash["first_frames"]), crash
    assert len(tests) > 3 and all(t["status"] == "PASS" for t in tests if t not in errors), tests
    assert len({t["nodeid"] for t in tests}) == len(tests)  # nothing ran twice
    assert "in assign" in (tmp_path / "report" / "crash.log").read_text()
    assert "died once" in (tmp_path / "report" / "report.md").read_text()
    header = [line for line in run.stdout.splitlines() if line.startswith("kconform:")]
    assert len(header) == 2 and "resumed after" in header[1] and "seed 3" in header[1], header


def test_a_run_whose_process_keeps_crashing_stops_starting_tests_and_still_reports(tmp_path: Path) -> None:
    run = kconform_run("CRASHES_ALWAYS", tmp_path)
    assert run.returncode == 3, run.stdout + run.stderr
    tests = json.loads((tmp_path / "report" / "report.json").read_text())["tests"]
    crashed = [t for t in tests if "while this test ran" in t["message"]]
    crashes = json.loads((tmp_path / "report" / "report.json").read_text())["crashes"]
    assert [c["test"] for c in crashes] == [t["nodeid"] for t in crashed], crashes  # each death with its test
    not_run = [t for t in tests if t["message"].startswith("not run: the process running the suite died 3 times")]
    assert len(crashed) == MAX_CRASHES and not_run and all(t["status"] == "ERROR" for t in crashed + not_run), tests
    assert all(t["status"] == "PASS" for t in tests if t not in crashed + not_run), tests  # ASSIGN-007: no assign


def hanging_run(stderr: int) -> subprocess.Popen[str]:
    """``kconform run`` on an adapter whose ``assign`` hangs, once its child has started the suite."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "kconform.conformance.cli", "run", "--adapter", "tests.misbehaving_adapters:HANGS",
         "--level", "protocol", "--only", "ASSIGN", "--timeout", "300"],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=stderr, text=True,
    )  # fmt: skip
    assert proc.stdout is not None
    header = proc.stdout.readline()
    assert header.startswith("kconform: adapter 'hangs'"), header
    return proc


def test_a_ctrl_c_is_not_a_crash_and_is_not_resumed(tmp_path: Path) -> None:
    """A signal that is not a crash (here SIGTERM sent to the command) ends the run as it ended the process."""
    proc = hanging_run(subprocess.PIPE)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 128 + signal.SIGTERM, err
    assert "resum" not in err


def stub(nodeid: str, status: Status = Status.ERROR) -> results.TestResult:
    return results.TestResult(nodeid, nodeid, ["ASSIGN-001"], "MUST", False, status, 0.0)


def test_the_journal_gives_the_test_running_at_a_crash_the_crash_and_keeps_the_rest(tmp_path: Path) -> None:
    journal = Journal(tmp_path)
    journal.record_seed(7, 1.0)
    journal.record_start(stub("a"))
    journal.record_end(stub("a", Status.PASS))
    journal.record_start(stub("b"))
    broker = results.FixtureStart("pipeline_broker", "module", 9.5, 2.0, "b")
    journal.record_fixture(broker)
    record_crash(tmp_path, Crash(signal.SIGSEGV, 42, FAULTHANDLER_DUMP))
    with open(tmp_path / "records.pickle", "ab") as records:
        records.write(pickle.dumps(("finished", stub("b", Status.PASS)))[:40])  # a record the death cut short
    again = Journal.read(tmp_path)
    assert (again.seed, again.started_at) == (7, 1.0)
    assert again.fixtures == [broker]  # the next process's report keeps the dead one's fixture starts
    assert [t.status for t in again.finished] == [Status.PASS] and again.seen() == {"a", "b"}
    (crashed,) = again.crashed_results()
    assert crashed.nodeid == "b" and crashed.status is Status.ERROR
    assert "(pid 42) died of SIGSEGV (signal 11) while this test ran" in crashed.message
    assert 'misbehaving_adapters.py", line 9 in _segfault' in crashed.message and "threading" not in crashed.message
    assert crashed.longrepr == FAULTHANDLER_DUMP
    assert [c.test for c in again.crash_records()] == [None]  # no process has judged the death yet
    for interrupted, crash in again.deaths():
        again.record_interrupted(crash, interrupted)
    (record,) = Journal.read(tmp_path).crash_records()  # as the next process reads it back
    assert (record.pid, record.signal, record.signal_name) == (42, 11, "SIGSEGV")
    assert (record.test, record.test_name) == ("b", "b")
    assert record.first_frames == [
        'File "/x/ctypes/__init__.py", line 519 in string_at',
        'File "/t/misbehaving_adapters.py", line 9 in _segfault',
        'File "/t/misbehaving_adapters.py", line 20 in assign',
    ]


def test_first_frames_are_the_crashing_threads_innermost() -> None:
    assert _first_frames(FAULTHANDLER_DUMP, 2) == (
        'File "/x/ctypes/__init__.py", line 519 in string_at; File "/t/misbehaving_adapters.py", line 9 in _segfault'
    )
    assert _first_frames("") == ""


def test_the_suites_process_dies_with_a_command_killed_outright() -> None:
    """A CI job's timeout SIGKILLs the command: its child, which runs the suite, must not run on unwatched."""
    proc = hanging_run(subprocess.DEVNULL)
    (child,) = (int(pid) for pid in Path(f"/proc/{proc.pid}/task/{proc.pid}/children").read_text().split())
    ended = os.pidfd_open(child)
    try:
        proc.kill()
        proc.wait(timeout=60)
        assert select.select([ended], [], [], 60)[0], f"the suite's process {child} outlived the killed command"
    finally:
        os.close(ended)


def test_help_and_a_usage_error_are_answered_by_the_command_without_starting_the_suites_process(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``kconform run``'s own parser reads the line first: ``--he`` is argparse's ``--help`` too, and a bad value a
    usage error (2); only a line it accepts is run supervised."""
    monkeypatch.delenv(JOURNAL_ENV, raising=False)
    started: list[list[str]] = []
    monkeypatch.setattr(supervisor, "main", lambda argv: started.append(argv) or 0)
    for argv, code in ((["run", "--he"], 0), (["run", "--level", "nope"], 2)):
        with pytest.raises(SystemExit) as ended:
            KCONFORM(argv)
        assert ended.value.code == code, argv
    assert "usage: kconform run" in capsys.readouterr().out
    assert started == []
    assert KCONFORM(["run", "--level", "protocol"]) == 0 and started == [["--level", "protocol"]]
