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
    guarantee: Guarantee = Guarantee.EXACTLY_ONCE, stuck: bool = False,
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
        guarantee=guarantee, stuck=error if stuck else None,
    )  # fmt: skip


def test_the_summary_has_a_row_per_schedule_totals_and_faults_per_kind() -> None:
    text = render_summary([outcome(0, {"driver-kill": 2, "rescale": 1}), outcome(1, {"broker-kill": 1}, lost=3)])
    lines = text.splitlines()
    header = ["schedule", "result", "safe", "live", "time", "produced", "lost", "duplicated", "faults", "injected"]
    assert lines[0].split() == header
    assert lines[2].split()[:8] == ["0", "PASS", "yes", "yes", "61s", "100", "0", "0"]
    assert lines[3].split()[:8] == ["1", "FAIL", "no", "yes", "61s", "100", "3", "0"]
    assert lines[4].split()[:11] == ["total", "1/2", "pass", "1", "no", "0", "no", "122s", "200", "3", "0"]
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


def test_a_schedule_whose_query_crashed_or_hung_is_live_no_not_data_loss(capsys: pytest.CaptureFixture[str]) -> None:
    """The final run never finished cleanly while the broker answered: ``live: no`` (exit 1, LIVE-001), its records
    not counted lost; one that lost a record is ``safe: no``; one stopped by the broker or the harness is neither."""
    hung = outcome(0, {"driver-kill": 1}, error="the final driver did not finish cleanly in 3 attempts", stuck=True)
    lost = outcome(1, {"driver-kill": 1}, lost=2)
    broker = outcome(2, {"broker-kill": 1}, error="KafkaError: the broker did not come back")
    assert [(o.safe, o.live) for o in (hung, lost, broker)] == [(None, False), (False, True), (None, None)]
    rows = render_summary([hung, lost, broker]).splitlines()[2:5]
    assert [row.split()[:4] for row in rows] == [["0", "FAIL", "?", "no"], ["1", "FAIL", "no", "yes"],
                                                 ["2", "ERROR", "?", "?"]]  # fmt: skip
    assert command._finish([hung]) == 1
    said = capsys.readouterr().out.splitlines()[-1]
    assert (
        said.startswith("kconform soak: FAIL: live: no in schedule(s) 0 (the query crashed or hung")
        and "safe" not in said
    )
    assert command._finish([hung, lost]) == 1
    said = capsys.readouterr().out.splitlines()[-1]
    assert "safe: no in schedule(s) 1 (records lost" in said and "live: no in schedule(s) 0" in said
    assert command._finish([broker]) == 3
    assert "FAIL" not in capsys.readouterr().out


def test_a_record_the_broker_lost_is_not_the_connectors_safety_but_still_fails_the_soak(
    capsys: pytest.CaptureFixture[str],
) -> None:
    lost_by_broker = outcome(0, {"broker-kill": 1})
    lost_by_broker.violations.append(
        Violation("BROKER", "acknowledged-record-missing", "b'x' at t-0@3", data={"offset": 3})
    )
    assert lost_by_broker.safe is None
    assert command._finish([lost_by_broker]) == 1
    assert "the broker lost an acknowledged record in schedule(s) 0" in capsys.readouterr().out
