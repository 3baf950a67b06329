"""The race mechanics of ``kconform bench``'s Spark figures, without Spark or a broker; its exit when a piece is
missing."""

from __future__ import annotations

import os
from pathlib import Path
from types import SimpleNamespace

import pytest

from kconform.conformance.bench.command import NOT_RUN_EXIT
from kconform.conformance.bench.command import main as bench_main
from kconform.conformance.bench.evidence import goal_verdict, median_interval
from kconform.conformance.bench.process_cpu import TICKS_PER_S, busy_cpu_s, cpu_meter, machine_cpu_meter, stat_cpu_s
from kconform.conformance.bench.real_time_race import FIGURES
from kconform.conformance.bench.spark_races import (
    BROKER_CPU,
    MACHINE_CPU,
    PARALLELISM,
    SPARK_KAFKA_MISSING,
    Comparison,
    Competitor,
    SinkInput,
    Skipped,
    Timing,
    after_the_first,
    race,
    race_rows,
)
from kconform.conformance.brokers.external import ExternalBroker
from kconform.conformance.jvm import JVM_DIR_ENV
from kconform.reference_impl.ports import KafkaError


def test_race_reverses_the_order_every_other_round() -> None:
    """Load drifting during a run falls on every competitor alike."""
    order: list[tuple[int, str]] = []

    def entrant(name: str) -> Competitor:
        def run(round_: int) -> Timing:
            order.append((round_, name))
            return Timing(1.0, 1.0)

        return Competitor(name, "", run)

    timings = race([entrant("a"), entrant("b")], 3)
    assert order == [(0, "a"), (0, "b"), (1, "b"), (1, "a"), (2, "a"), (2, "b")]
    assert [len(t) for t in timings.values()] == [3, 3]


def test_ratios_are_medians_of_paired_rounds_and_a_skipped_competitor_says_why() -> None:
    """One round where the baseline was slowed (9 s) moves no median; a skipped competitor has no ratio."""
    timings = {
        "raw": [Timing(1, 1), Timing(1, 1), Timing(9, 9)],
        "ref": [Timing(2, 2), Timing(4, 2), Timing(2, 2)],
    }
    entrants = [Competitor("raw", "", lambda _: Timing(0, 0)), Competitor("ref", "", lambda _: Timing(0, 0))]
    comparisons = [Comparison("ref", "raw", inside_goal=0.5), Comparison("spark kafka", "raw")]
    rows = race_rows(100, [*entrants, Skipped("spark kafka", SPARK_KAFKA_MISSING)], timings, comparisons)
    assert any("spark kafka" in row and SPARK_KAFKA_MISSING in row for row in rows)
    assert not any("spark kafka /" in row for row in rows)
    inside = next(row for row in rows if "ref / raw, inside the batch" in row)
    assert "50.0%" in inside and "meets goal" in inside and "(rounds: 50%, 50%, 450%)" in inside
    assert "no goal set" in next(row for row in rows if "ref / raw, wall" in row)
    assert any(row.split()[:2] == ["raw", "wall"] and "100 rec/s" in row for row in rows)


@pytest.mark.integration
def test_without_the_kafka_jars_the_bench_says_it_could_not_run_and_names_the_fix(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A missing piece is exit 3 with the fix named, not a traceback (the exit code says whether it ran)."""
    monkeypatch.setenv(JVM_DIR_ENV, str(tmp_path))
    assert bench_main(["--skip-mutants", "--skip-spark"]) == NOT_RUN_EXIT
    err = capsys.readouterr().err
    assert "'kafka-broker' is not resolved" in err and "kconform setup" in err and "--skip-brokers" in err, err


def test_the_real_time_race_labels_its_rows_and_ratios_with_its_own_figures() -> None:
    """Its figures are the follower's (to the last record, first to last record), not a query's batch time."""
    timings = {"rt": [Timing(2, 1)], "mb": [Timing(4, 1)]}
    entrants = [Competitor("rt", "", lambda _: Timing(0, 0)), Competitor("mb", "", lambda _: Timing(0, 0))]
    rows = race_rows(100, entrants, timings, [Comparison("rt", "mb")], FIGURES)
    assert "200.0%" in next(row for row in rows if "rt / mb, to the last record" in row)
    assert "100.0%" in next(row for row in rows if "rt / mb, first to last record" in row)
    assert not any("wall" in row or "inside the batch" in row for row in rows)


def batch(batch_id: int, rows: int, add_batch_ms: int) -> SimpleNamespace:
    """A progress report as a query's ``recentProgress`` holds it, with the fields the race reads."""
    return SimpleNamespace(batchId=batch_id, numInputRows=rows, durationMs={"addBatch": add_batch_ms})


def test_the_steady_state_figure_times_every_batch_but_the_first_and_counts_their_rows_only() -> None:
    """The first batch initialises each task's transactional id; batches 2-n are the steady state, rated over
    their own rows while the wall rate counts all; an empty trailing report counts for nothing."""
    given = SinkInput(Path("in"), None, [10] * (PARALLELISM * 3), batches=3)  # type: ignore[arg-type]
    per_batch = 10 * PARALLELISM
    progress = [batch(2, per_batch, 30), batch(0, per_batch, 900), batch(1, per_batch, 20), batch(3, 0, 5)]
    assert after_the_first("sink", progress, given) == pytest.approx(0.05)
    assert (given.records, given.timed_records) == (3 * per_batch, 2 * per_batch)
    rows = race_rows(given.timed_records, [Competitor("ref", "", lambda _: Timing(0, 0))], {"ref": [Timing(3, 2)]},
                     [], ("wall", "batches 2-3"), given.records)  # fmt: skip
    assert any(r.split()[:2] == ["ref", "wall"] and f"({3 * per_batch} in 3.00 s" in r for r in rows), rows
    assert any(r.split()[:3] == ["ref", "batches", "2-3"] and f"({2 * per_batch} in 2.00 s" in r for r in rows), rows


def test_a_steady_state_query_whose_batches_differ_from_the_input_is_refused() -> None:
    """Batches of unequal size (Spark took more files per trigger than asked) would time something else."""
    given = SinkInput(Path("in"), None, [10] * (PARALLELISM * 3), batches=3)  # type: ignore[arg-type]
    uneven = [batch(0, 20, 900), batch(1, 40, 20)]
    with pytest.raises(KafkaError, match="batches of \\[20, 40\\] rows, expected 3 of equal size"):
        after_the_first("sink", uneven, given)


def test_a_median_interval_of_15_rounds_is_the_4th_to_the_12th_and_of_5_the_whole_range() -> None:
    """The sign test's order statistics: 96.5 % for 15 rounds; 5 rounds cannot reach 95 % (15/16 is the most)."""
    fifteen = median_interval([float(v) for v in range(15, 0, -1)])
    assert (fifteen.low, fifteen.high, round(fifteen.coverage, 4)) == (4.0, 12.0, 0.9648)
    five = median_interval([3.0, 1.0, 5.0, 2.0, 4.0])
    assert (five.low, five.high, five.coverage) == (1.0, 5.0, 0.9375)
    with pytest.raises(ValueError, match="at least one"):
        median_interval([])


@pytest.mark.parametrize(
    ("ratios", "word"),
    [
        ([1.02, 1.05, 1.10, 1.01, 1.20], "meets goal"),  # every round above: the whole range is
        ([0.71, 0.74, 0.82, 0.86, 0.88, 0.89, 0.89, 0.89, 0.90, 0.93, 0.97, 0.97, 0.99, 1.03, 1.33], "MISSES goal"),
        ([0.73, 0.79, 0.87, 0.88, 0.88, 0.90, 0.93, 0.96, 0.99, 0.99, 1.06, 1.07, 1.14, 1.14, 1.21], "undecided"),
        ([1.11, 1.19, 0.67, 1.02, 0.87], "undecided"),  # a median of 101.8 % that one round's luck decided
    ],
)
def test_a_goal_is_met_or_missed_only_when_the_medians_interval_is_on_one_side(ratios: list[float], word: str) -> None:
    """Rounds from `make bench` runs 8 and 10 and run 5 of the one-batch sink race, whose medians (89.3 %, 95.7 %,
    101.8 %) fell on either side of 100 % by chance."""
    verdict = goal_verdict(ratios, 1.0)
    assert verdict.startswith(f"goal >= 100%  {word}  (median in ")


def test_a_proc_stat_line_gives_user_plus_system_seconds_whatever_the_command_holds() -> None:
    """utime and stime are the 14th and 15th fields, counted after the command's last parenthesis."""
    line = "4242 (java (kafka) x) S 1 4242 4242 0 -1 4194560 100 0 0 0 250 50 7 9 20 0 60 0 1 2 3\n"
    assert stat_cpu_s(line, ticks_per_s=100) == 3.0


def test_a_cpu_meter_reads_running_processes_and_is_none_without_any(tmp_path: Path) -> None:
    assert cpu_meter([]) is None
    assert ExternalBroker("host:9092").local_pids() == []  # a broker the suite did not start: nothing to count
    (tmp_path / "7").mkdir()
    (tmp_path / "7" / "stat").write_text("7 (kafka) S " + " ".join(["0"] * 10) + " 100 20 0 0\n")
    meter = cpu_meter([7], proc=tmp_path)
    assert meter is not None and meter() == 120 / TICKS_PER_S
    (tmp_path / "7" / "stat").unlink()  # the process ended: the meter says it cannot tell
    assert meter() is None
    assert cpu_meter([8], proc=tmp_path) is None
    own = cpu_meter([os.getpid()])
    assert own is not None
    reading = own()
    assert reading is not None and reading > 0  # this test's own process has used CPU by now


def test_the_race_counts_each_meters_cpu_around_each_run_and_prints_its_median() -> None:
    """Each run gets each meter's growth while it ran; a meter that could not read leaves its figure out, the
    others stay."""
    broker = iter([0.0, 0.25, 1.0, 1.5, 2.0, 2.1, 3.0, 3.3])
    machine = iter([10.0, 11.0, 11.0, 13.0, 13.0, 14.0, 14.0, 16.5])
    timings = race(
        [Competitor("a", "", lambda _: Timing(1.0, 1.0)), Competitor("b", "", lambda _: Timing(1.0, 1.0))],
        2,
        {BROKER_CPU: lambda: next(broker), MACHINE_CPU: lambda: next(machine)},
    )
    assert [t.cpu_s[BROKER_CPU] for t in timings["a"]] == [0.25, pytest.approx(0.3)]
    assert [t.cpu_s[BROKER_CPU] for t in timings["b"]] == [0.5, pytest.approx(0.1)]
    assert [t.cpu_s[MACHINE_CPU] for t in timings["a"]] == [1.0, 2.5]
    assert [t.cpu_s[MACHINE_CPU] for t in timings["b"]] == [2.0, 1.0]
    rows = race_rows(100, [Competitor("a", "", lambda _: Timing(0, 0))], timings, [])
    assert any("broker CPU" in row and "275 ms a round (median of 2" in row for row in rows)
    assert any("machine CPU" in row and "1,750 ms a round (median of 2, every process" in row for row in rows)
    unread = race(
        [Competitor("c", "", lambda _: Timing(1.0, 1.0))], 1, {BROKER_CPU: lambda: None, MACHINE_CPU: lambda: 1.0}
    )
    assert unread["c"][0].cpu_s == {MACHINE_CPU: 0.0}
    unread_rows = race_rows(100, [Competitor("c", "", lambda _: Timing(0, 0))], unread, [])
    assert not any("broker CPU" in row for row in unread_rows)
    assert any("machine CPU" in row for row in unread_rows)


def test_a_comparison_prints_the_contenders_machine_cpu_as_a_share_of_the_baselines() -> None:
    """The median of the rounds' paired shares; left out when a round lacks the machine's CPU."""
    timings = {
        "a": [Timing(1.0, 1.0, {MACHINE_CPU: 1.1}), Timing(1.0, 1.0, {MACHINE_CPU: 0.9})],
        "b": [Timing(1.0, 1.0, {MACHINE_CPU: 1.0}), Timing(1.0, 1.0, {MACHINE_CPU: 1.0})],
    }
    entrants = [Competitor("a", "", lambda _: Timing(0, 0)), Competitor("b", "", lambda _: Timing(0, 0))]
    rows = race_rows(100, entrants, timings, [Comparison("a", "b")])
    share = [row for row in rows if "a / b, machine CPU a round" in row]
    assert len(share) == 1 and "100.0%" in share[0] and "(rounds: 110%, 90%)" in share[0]
    timings["b"][1] = Timing(1.0, 1.0)
    assert not any("machine CPU a round" in row for row in race_rows(100, entrants, timings, [Comparison("a", "b")]))


def test_the_machines_busy_cpu_is_every_kind_of_tick_but_idle_and_iowait(tmp_path: Path) -> None:
    """``/proc/stat``'s first line: user nice system idle iowait irq softirq steal (guest after, inside user)."""
    stat = "cpu  100 10 50 9000 40 5 5 30 7 0\ncpu0 1 2 3 4 5 6 7 8 9 10\n"
    assert busy_cpu_s(stat, ticks_per_s=100) == 2.0
    (tmp_path / "stat").write_text(stat)
    meter = machine_cpu_meter(proc=tmp_path)
    assert meter is not None and meter() == 200 / TICKS_PER_S
    assert machine_cpu_meter(proc=tmp_path / "missing") is None
    here = machine_cpu_meter()
    assert here is not None
    reading = here()
    assert reading is not None and reading > 0  # this machine has been busy since it booted
