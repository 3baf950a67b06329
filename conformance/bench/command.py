"""``kconform bench``: speed goals measured in one run and printed next to their goals.

Timed tests are not used anywhere in kconform: a loaded CI machine would make them flaky, and
a pass/fail on a number hides the number. Here every figure is measured, printed with its goal
and the ratio, and the exit code says only whether the benchmarks ran.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import Phase, settings

from ...reference_impl.assignment import plan
from ...reference_impl.discovery import PartitionDiscoverer, Subscription, ZeroPartitionsPolicy
from ...reference_impl.types import SubtaskIndex, TopicPartition
from ..brokers.base import BrokerUnavailable
from ..gate.profiles import PROFILES, hypothesis_profile, register_profiles
from ..gate.verdicts import DEFAULT_SEED
from ..jvm import JvmArtifactsMissing
from ..mutants import registry
from ..mutants.protocol import Mutant
from . import verdict_times as gate

KILL_PROFILE = "kconform-bench-kill"
NOT_RUN_EXIT = 3
"""The benchmarks could not run here (kconform run's ERROR code): a piece they need is missing."""


@dataclass(frozen=True)
class Figure:
    name: str
    seconds: float
    goal_seconds: float

    def row(self) -> str:
        """The figure beside its goal, in ms for goals under ten seconds, else in s."""
        ratio = self.seconds / self.goal_seconds
        verdict = "meets goal" if ratio <= 1 else "MISSES goal"
        scale, unit = (1000, "ms") if self.goal_seconds < 10 else (1, "s ")
        measured, goal = self.seconds * scale, self.goal_seconds * scale
        return f"{self.name:<58} {measured:>10.1f} {unit}  goal {goal:>8.1f} {unit}  x{ratio:5.2f}  {verdict}"


def best_of(repeat: int, fn: Callable[[], object]) -> float:
    """Fastest of ``repeat`` runs: the figure least disturbed by other load on the machine."""
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def bench_plan() -> Figure:
    partitions = [TopicPartition(f"topic-{t}", p) for t in range(1000) for p in range(1000)]
    return Figure("plan 1,000,000 partitions onto 10,000 subtasks", best_of(3, lambda: plan(partitions, 10_000)), 1.0)


def bench_discovery_diff() -> Figure:
    metadata = {f"topic-{t}": frozenset(range(100)) for t in range(1000)}
    grown = {**metadata, "topic-new": frozenset(range(10))}

    def diff() -> None:
        d = PartitionDiscoverer(Subscription.regex("topic-.*"), SubtaskIndex(0), 100, ZeroPartitionsPolicy.IGNORE)
        d.seen.add(TopicPartition(t, p) for t, ids in metadata.items() for p in ids)
        start = time.perf_counter()
        d.discover(grown)
        timings.append(time.perf_counter() - start)

    timings: list[float] = []
    for _ in range(5):
        diff()
    return Figure("discovery diff over 100,000 known partitions (+10 new)", min(timings), 0.05)


class _KillTimer:
    """Records how long the failing suite tests ran until Hypothesis reported the kill."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self.failed = False

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.when == "call":
            self.seconds += report.duration
            self.failed |= report.failed


def time_to_kill(mutant: Mutant) -> tuple[float, bool]:
    """Seconds the suite's tests of the mutant's requirements take to fail it (no shrinking, no example database)."""
    timer = _KillTimer()
    selected = [arg for rid in sorted(mutant.kills_on) for arg in ("--kconform-requirement", rid)]
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        pytest.main(
            [
                "--pyargs",
                "kconform.conformance.suite",
                "-q",
                "-p",
                "no:cacheprovider",
                "--no-header",
                "-o",
                "addopts=",
                "--kconform-adapter",
                f"kconform.conformance.mutants.protocol:{mutant.name}",
                "--hypothesis-profile",
                KILL_PROFILE,
                *selected,
            ],
            plugins=[timer],
        )
    return timer.seconds, timer.failed


def bench_broker_start() -> list[str]:
    """How long each broker the suite starts itself takes to answer its first metadata request."""
    from ..brokers import CLUSTER_SIZE, KafkaBroker, TansuBroker

    seconds: dict[str, float] = {}
    brokers = {"tansu": TansuBroker(), "kafka": KafkaBroker(), "kafka-cluster": KafkaBroker(CLUSTER_SIZE)}
    for name, broker in brokers.items():
        began = time.perf_counter()
        with broker:
            seconds[name] = time.perf_counter() - began
            version = broker.version
        print(f"  {name:<14} {seconds[name]:6.1f} s  {version}", flush=True)
    return [
        f"  kafka / tansu start x{seconds['kafka'] / seconds['tansu']:.1f}, "
        f"kafka-cluster / kafka x{seconds['kafka-cluster'] / seconds['kafka']:.1f} (no goal set)"
    ]


def write_json(path: Path | None, figures: Sequence[Figure], gate: Sequence[dict[str, Any]] = ()) -> None:
    """The figures that have goals, for the HTML report's chart (``{"figures": [{name, seconds, goal_seconds}]}``),
    and with ``--gate`` each part's run and where its time went (``"gate"``: ``gate.gate_json``)."""
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        data: dict[str, Any] = {"figures": [asdict(f) for f in figures]}
        if gate:
            data["gate"] = list(gate)
        path.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")


def gate_figures(runs: Sequence[gate.PartRun], selection: gate.Selection) -> tuple[list[Figure], list[str]]:
    """Each part that reached an end (not stopped at its bound) as a figure; the lines printed for every part: its
    figure, its goal's source, its command and exit, and where its time went."""
    figures, lines = [], ["", "time to a verdict (kconform bench --gate; each part a kconform command, start to exit):"]
    for r in runs:
        part = gate.PARTS[r.part]
        narrowed = selection.narrowed(r.part)
        figure = Figure(part.title + (" [narrowed]" if narrowed else ""), r.seconds, part.goal_seconds)
        if r.exit_code is not None:
            figures.append(figure)
        lines.append(figure.row())
        lines += [f"  narrowed by {narrowed}: not the goal's run"] if narrowed else []
        lines += [f"  goal set by {part.goal_source}; {gate.outcome(r)}; reports in {r.folder}"]
        lines += [f"  command: kconform {' '.join(r.command)}", *gate.render(r.attribution)]
    return figures, lines


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="kconform bench",
        description="measure the speed goals in one run and print each figure next to its goal and the ratio; "
        "the exit code says only whether the benchmarks ran",
    )
    parser.add_argument("--skip-mutants", action="store_true", help="skip the time-to-kill figures")
    parser.add_argument("--skip-brokers", action="store_true", help="skip the broker start times")
    parser.add_argument(
        "--skip-spark", action="store_true", help="skip the Spark source, sink and real-time throughput figures"
    )
    parser.add_argument(
        "--gate",
        action="store_true",
        help="also time each verdict kconform gives as a real command, start to exit, with where its time went: "
        f"the parts {', '.join(gate.PARTS)} (--gate-parts chooses)",
    )
    parser.add_argument(
        "--gate-parts",
        metavar="PARTS",
        help=f"comma-separated parts of --gate (implies it): {', '.join(gate.PARTS)} (default all)",
    )
    parser.add_argument(
        "--gate-out", type=Path, default=Path("build/bench-gate"), help="each part's reports go to DIR/<part>"
    )
    parser.add_argument(
        "--only", help="run only these tests in the kconform run parts (a name or requirement id): a short run"
    )
    parser.add_argument("--bank-only", metavar="ID", help="run only this bug of the bank (its upstream id)")
    parser.add_argument(
        "--profile",
        choices=list(PROFILES),
        default="default",
        help="Hypothesis profile of the gate's parts (default %(default)s)",
    )
    parser.add_argument(
        "--seed", type=int, default=DEFAULT_SEED, help="seed of the kconform run parts (default %(default)s)"
    )
    parser.add_argument(
        "--flink-connector", metavar="LINE", help="the Flink part's flink-connector-kafka line (default the newest)"
    )
    parser.add_argument(
        "--json",
        type=Path,
        help="also write the figures with goals here; kconform run's report.html draws DIR/bench.json as a chart",
    )
    return parser


def main(argv: list[str]) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    parts: list[str] = []
    if args.gate or args.gate_parts:
        try:
            parts = gate.parse_parts(args.gate_parts or ",".join(gate.PARTS))
        except ValueError as error:
            parser.error(str(error))
    figures = [bench_plan(), bench_discovery_diff()]
    print("\n".join(f.row() for f in figures))
    try:
        if not args.skip_brokers:
            print("\nbroker start, to the first answered metadata request:")
            print("\n".join(bench_broker_start()))
        if not args.skip_spark:
            from .spark_run import bench_spark  # pyspark is imported only when needed

            print()
            bench_spark()
    except (JvmArtifactsMissing, BrokerUnavailable) as missing:
        print(
            f"kconform bench: could not run: {missing}; or leave these figures out with --skip-brokers --skip-spark",
            file=sys.stderr,
        )
        return NOT_RUN_EXIT
    if not args.skip_mutants:
        figures += bench_mutants()
    if not parts:
        write_json(args.json, figures)
        return 0
    selection = gate.Selection(args.profile, args.seed, args.only, args.bank_only, args.flink_connector)
    runs = gate.run_gate(parts, args.gate_out, selection, sys.stdout)
    timed, lines = gate_figures(runs, selection)
    print("\n".join(lines))
    write_json(args.json, figures + timed, gate.gate_json(runs, selection))
    unjudged = [r.part for r in runs if r.exit_code is None or not r.attribution.runs]
    if unjudged:
        print(f"kconform bench: no report from the part(s) {', '.join(unjudged)}", file=sys.stderr)
        return NOT_RUN_EXIT
    return 0


def bench_mutants() -> list[Figure]:
    """Each mutant's time to kill, and the median and worst of them as figures."""
    register_profiles()
    settings.register_profile(
        KILL_PROFILE,
        parent=settings.get_profile(hypothesis_profile("default")),
        database=None,
        phases=[Phase.explicit, Phase.generate],
    )
    kills = []
    print("\ntime to kill each mutant (suite tests of its requirements, default profile, no shrinking):")
    for mutant in registry.mutants(Mutant):
        seconds, killed = time_to_kill(mutant)
        kills.append(seconds)
        print(f"  {mutant.name:<42} {seconds:7.2f} s  {'killed' if killed else 'SURVIVED'}")
    figures = [
        Figure("median time to kill", statistics.median(kills), 1.0),
        Figure("worst time to kill", max(kills), 10.0),
    ]
    print("\n".join(f.row() for f in figures))
    return figures
