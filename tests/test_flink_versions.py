"""Which pinned connector releases the Flink harness tests run: the newest by default (``make test``), every one
on ``all`` (``make flink-versions``), or those named; an unknown name is refused, never skipped. A line whose
Flink needs JVM options on Java 17 has them on its harness's command line."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from kconform.conformance.flink import harness
from kconform.conformance.flink.versions import EVERY, NEWEST, RELEASES, chosen


def test_the_newest_line_alone_by_default() -> None:
    assert NEWEST == list(RELEASES)[-1] == "5.0.0-2.2"
    assert [r.connector for r in chosen(None)] == [r.connector for r in chosen("  ")] == [NEWEST]


def test_all_is_every_pinned_line_oldest_first() -> None:
    assert [r.connector for r in chosen(EVERY)] == list(RELEASES)
    assert len(RELEASES) >= 6 and next(iter(RELEASES)) == "3.0.0-1.17"


def test_named_lines_in_the_order_named() -> None:
    assert [r.connector for r in chosen("4.0.1-2.0, 3.0.2-1.18")] == ["4.0.1-2.0", "3.0.2-1.18"]
    assert chosen("3.2.0-1.19")[0].flink == "1.19.1"


def test_an_unknown_line_is_refused() -> None:
    with pytest.raises(ValueError, match=r"'2\.9\.0-1\.16' is not pinned"):
        chosen("5.0.0-2.2,2.9.0-1.16")


def test_each_line_runs_on_its_own_flink_line() -> None:
    for name, entry in RELEASES.items():
        assert name.rsplit("-", 1)[1] == ".".join(entry.flink.split(".")[:2]), name


def test_a_release_s_java_options_reach_its_jvm_before_the_classpath(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(harness, "resolve", lambda release, say: tmp_path)
    old, new = RELEASES["3.0.0-1.17"], RELEASES[NEWEST]
    command = harness.FlinkHarness(old, lambda _: None).command(tmp_path / "run.json")
    assert command[2] == "--add-opens=java.base/java.lang=ALL-UNNAMED" and command[3] == "-cp"
    assert harness.FlinkHarness(new, lambda _: None).command(tmp_path / "run.json")[2] == "-cp"


def test_a_run_s_jvm_gets_its_own_temporary_folder_removed_once_it_ended(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Each MiniCluster unpacks a 22 MB RPC jar and its working folders into the JVM's temporary folder and its exit
    leaves them: the harness gives each run a folder of its own and removes it when the JVM ended (answered or
    killed), so a verdict run no longer leaves about a gigabyte in the system's."""
    release = RELEASES[NEWEST]
    tmp = tmp_path / "tmp"
    monkeypatch.setattr(harness, "resolve", lambda release, say: tmp_path)
    flink = harness.FlinkHarness(release, lambda _: None)
    line = flink.command(tmp_path / "run.json", tmp)
    assert line[2] == f"-Djava.io.tmpdir={tmp}" and line.index("-cp") == 3 + len(release.java_options)
    assert "-Djava.io.tmpdir" not in " ".join(flink.command(tmp_path / "run.json"))

    answer = {"job_id": "j", "ended": "savepoint", "savepoint": "s", "stop_met": True, "wall_ms": 1}
    for ending in ("finish", "kill"):
        work = tmp_path / ending
        (work / harness.JVM_TMP).mkdir(parents=True)
        (work / harness.JVM_TMP / "flink-rpc-akka.jar").write_bytes(b"x")
        (work / "history.jsonl").write_text("", encoding="utf-8")
        (work / "stderr.log").write_text("", encoding="utf-8")
        script = f"import json, time; print(json.dumps({answer!r})); time.sleep({0 if ending == 'finish' else 30})"
        process = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE)
        running = harness.RunningJob(release, process, work, time.monotonic() + 60)
        if ending == "finish":
            assert running.finish().savepoint == "s"
        else:
            running.kill()
        assert not (work / harness.JVM_TMP).exists() and (work / "history.jsonl").exists()
