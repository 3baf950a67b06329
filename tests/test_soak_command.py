"""``kconform soak``'s summary, replay line and exit codes, on outcomes built by hand (no broker, no Spark)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from kconform.conformance.checks.checkers import Violation
from kconform.conformance.soak import command
from kconform.conformance.soak.command import build_parser, render_summary, replay_command
from kconform.conformance.soak.faults import tear_last_commit
from kconform.conformance.soak.guarantee import Guarantee
from kconform.conformance.soak.runner import Outcome, Timeline
from kconform.conformance.soak.schedule import draw_schedule


def outcome(
    index: int, injected: dict[str, int], lost: int = 0, duplicated: int = 0, error: str | None = None,
    guarantee: Guarantee = Guarantee.EXACTLY_ONCE,
) -> Outcome:  # fmt: skip
    violations = [
        Violation("COMMIT-011", "lost-write", f"b'x-{i}' missing", data={"value": f"x-{i}"}) for i in range(lost)
    ]
    violations += [
        Violation("COMMIT-011", "duplicate", f"b'y-{i}' visible 2 times", data={"value": f"y-{i}", "times": 2})
        for i in range(duplicated)
        if guarantee is Guarantee.EXACTLY_ONCE
    ]
    timeline = Timeline(injected=Counter(injected))
    schedule = draw_schedule(4, index, "kafka")
    return Outcome(
        schedule, violations, timeline, produced=100, lost=lost, duplicated=duplicated, error=error, seconds=61,
        guarantee=guarantee,
    )  # fmt: skip


def test_the_summary_has_a_row_per_schedule_totals_and_faults_per_kind() -> None:
    text = render_summary([outcome(0, {"driver-kill": 2, "rescale": 1}), outcome(1, {"broker-kill": 1}, lost=3)])
    lines = text.splitlines()
    assert lines[0].split() == ["schedule", "result", "time", "produced", "lost", "duplicated", "faults", "injected"]
    assert lines[2].split()[:6] == ["0", "PASS", "61s", "100", "0", "0"]
    assert lines[3].split()[:6] == ["1", "FAIL", "61s", "100", "3", "0"]
    assert lines[4].split()[:7] == ["total", "1/2", "pass", "122s", "200", "3", "0"]
    kinds = {line.split()[0]: line.split()[1:] for line in lines[lines.index("") + 2 :]}
    assert kinds["driver-kill"][1] == "2" and kinds["broker-kill"][1] == "1" and kinds["rescale"][1] == "1"


def test_the_replay_line_runs_one_schedule_of_the_same_seed_alone() -> None:
    args = build_parser().parse_args(
        ["--seed", "9", "--schedules", "5", "--faults", "driver-kill", "--broker", "kafka"]
    )
    line = replay_command(args, 3)
    assert line.startswith(
        "kconform soak --adapter kconform.conformance.spark.pipeline:REFERENCE --seed 9 --broker kafka"
    )
    assert "--only-schedule 3" in line and "--faults driver-kill" in line
    replayed = build_parser().parse_args(line.split()[2:])
    assert (replayed.seed, replayed.only_schedule, replayed.faults) == (9, [3], "driver-kill")


def test_exit_codes_pass_only_with_faults_injected_and_nothing_wrong(capsys: pytest.CaptureFixture[str]) -> None:
    assert command._finish([outcome(0, {"driver-kill": 1})]) == 0
    assert command._finish([outcome(0, {})]) == 3
    assert "no fault was injected" in capsys.readouterr().out
    assert command._finish([outcome(0, {"driver-kill": 1}, duplicated=1)]) == 1
    assert command._finish([outcome(0, {"driver-kill": 1}, error="final driver failed")]) == 3


def test_usage_errors_exit_2_naming_the_fix(capsys: pytest.CaptureFixture[str]) -> None:
    assert command.main(["--faults", "leader-kill", "--seed", "1"]) == 2
    assert "kafka-cluster" in capsys.readouterr().err
    assert command.main(["--faults", "executor-kill", "--seed", "1"]) == 2
    assert "standalone" in capsys.readouterr().err
    assert command.main(["--adapter", "kconform.conformance.mutants.protocol:python_mod_no_mask", "--seed", "1"]) == 2
    assert "declares no sink ('pipeline-exactly-once-sink' or 'pipeline-sink')" in capsys.readouterr().err
    spark_kafka = "kconform.conformance.adapters.spark_kafka:ADAPTER"
    assert command.main(["--adapter", spark_kafka, "--faults", "commit-stall", "--seed", "1"]) == 2
    assert "commit-stall needs an adapter with an exactly-once sink" in capsys.readouterr().err


def test_an_at_least_once_soak_passes_with_its_duplicates_reported_and_says_how_it_was_judged(
    capsys: pytest.CaptureFixture[str],
) -> None:
    at_least_once = [
        outcome(i, {"driver-kill": 1}, duplicated=4 * i, guarantee=Guarantee.AT_LEAST_ONCE) for i in (1, 2)
    ]
    assert command._finish(at_least_once) == 0
    printed = capsys.readouterr().out
    assert "judged by the at-least-once guarantee: nothing lost (COMMIT-011)" in printed
    assert printed.splitlines()[-1] == (
        "kconform soak: PASS: 2 schedule(s), 2 fault(s) injected, 12 duplicated (counted, not failed: at-least-once)"
    )
    assert command._finish([outcome(0, {"driver-kill": 1}, lost=1, guarantee=Guarantee.AT_LEAST_ONCE)]) == 1
    assert command._finish([outcome(0, {"driver-kill": 1})]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == "kconform soak: PASS: 1 schedule(s), 1 fault(s) injected"


def test_the_help_says_how_each_guarantee_is_judged() -> None:
    text = " ".join(build_parser().format_help().split())
    assert "exactly-once (capability pipeline-exactly-once-sink): nothing lost and nothing duplicated" in text
    assert "at-least-once (capability pipeline-sink): nothing lost (COMMIT-011)" in text
    assert "duplicates are counted and reported, not failed" in text


def test_a_torn_commit_removes_the_last_entry_only_while_the_next_batch_is_unplanned(tmp_path: Path) -> None:
    for log, ids in (("offsets", (0, 1, 2)), ("commits", (0, 1))):
        (tmp_path / log).mkdir()
        for i in ids:
            (tmp_path / log / str(i)).write_text("v1")
    assert "already planned" in tear_last_commit(tmp_path)
    assert (tmp_path / "commits" / "1").exists()
    (tmp_path / "commits" / "2").write_text("v1")
    assert "entry 2 removed" in tear_last_commit(tmp_path)
    assert sorted(p.name for p in (tmp_path / "commits").iterdir()) == ["0", "1"]
