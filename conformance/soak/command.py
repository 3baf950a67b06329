"""``kconform soak --adapter A --schedules N --seed S``: seeded fault schedules, a progress line each, a summary.

Each adapter is judged by the guarantee its sink declares (``guarantee.JUDGED``): an exactly-once sink
fails on a duplicate, an at-least-once one has its duplicates counted and reported, not failed.

Each schedule reads ``safe`` and ``live`` as ``kconform run``'s verdicts do: ``safe: no`` when it lost, reordered
or skipped records (or duplicated them, under exactly-once), ``live: no`` when its query crashed or hung where it
should have recovered while the broker answered (its final run never finished cleanly: not data loss).

Exit codes as ``kconform run``: 0 every schedule passed and at least one fault was injected; 1 a schedule
reads ``safe: no`` or ``live: no`` (or the broker lost an acknowledged record); 2 a usage error (an adapter without
a sink); 3 nothing could be checked (no Kafka jars, a schedule that could not finish for another cause, such as a
broker that did not come back, or a run that injected no fault at all: that run shows nothing, so it is not a
pass). A failing schedule is saved under ``--out`` with its history,
fault timeline, driver and broker log tails and the one-line command that replays it alone.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import sys
import tempfile
import textwrap
import time
import uuid
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Final

from .. import jvm
from ..adapter.interface import DEFAULT_MASTER
from ..adapter.loader import default_adapter, load_adapter, search_working_directory
from ..brokers import CLUSTER_SIZE, BrokerStartError, KafkaBroker, release_option
from ..brokers.facts import read_facts
from ..brokers.versions import KAFKA_VERSION_ENV
from ..checks.checkers import explain
from ..extras import pipeline_missing
from ..redaction import write_text
from ..spark.cluster import STANDALONE, SparkClusterError, StandaloneCluster, is_local
from .guarantee import DECLARED_BY, JUDGED, Guarantee, declared_guarantee
from .schedule import (
    NEEDS,
    SOAK_BROKERS,
    FaultKind,
    Schedule,
    draw_schedule,
    parse_kinds,
)

if TYPE_CHECKING:  # the runner needs the pipeline extra (the Kafka client, PySpark): imported where a soak runs
    from .runner import Outcome

DEFAULT_OUT: Final = Path("build/soak")
USAGE_EXIT: Final = 2
ERROR_EXIT: Final = 3
LOG_TAIL_LINES: Final = 60
DRIVER_LOG_KEEP_BYTES: Final = 8 << 20
"""How much of each driver's log a failing schedule's folder keeps whole (its end), beside the tails."""
HELP_WIDTH: Final = 100


def build_parser() -> argparse.ArgumentParser:
    needs = "; ".join(f"{kind} needs {what}" for kind, what in NEEDS.items())
    paragraphs = [
        "Each adapter is judged by the guarantee its sink declares:",
        *(f"  {g} (capability {DECLARED_BY[g]}): {JUDGED[g]}." for g in Guarantee),
        f"Fault kinds: {', '.join(FaultKind)}. Drawn only where possible: {needs}.",
    ]
    parser = argparse.ArgumentParser(
        prog="kconform soak",
        description="Seeded fault schedules over a multi-batch source-to-sink query on a real Kafka broker.",
        epilog="\n".join(
            textwrap.fill(text, HELP_WIDTH, subsequent_indent="    ", break_on_hyphens=False) for text in paragraphs
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--adapter", default=default_adapter("pipeline"), help="module:attr of a pipeline adapter")
    parser.add_argument("--schedules", type=int, default=10, help="how many schedules to draw (default 10)")
    parser.add_argument("--seed", type=int, default=None, help="the schedules' seed (default: drawn and printed)")
    parser.add_argument(
        "--broker", choices=SOAK_BROKERS, default="kafka", help="the broker the faults hit (default kafka)"
    )
    release_option.add_option(parser)
    parser.add_argument("--only-schedule", type=int, action="append", default=None, metavar="I",
                        help="run only schedule I of the seed (repeatable): the replay of a failure")  # fmt: skip
    parser.add_argument("--faults", default=None, help="comma-separated fault kinds to draw (default: all available)")
    parser.add_argument("--max-runs", type=int, default=2, help="killable driver runs per schedule, at most")
    parser.add_argument("--rate", type=int, default=20, help="records produced per second during a schedule")
    parser.add_argument("--spark-master", default=DEFAULT_MASTER,
                        help=f"the drivers' master (default {DEFAULT_MASTER}); {STANDALONE}: a standalone master and "
                        "two workers on loopback, started for the soak (adds executor-kill)")  # fmt: skip
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="where failing schedules are saved")
    return parser


def replay_command(args: argparse.Namespace, index: int) -> str:
    """The one line that runs schedule ``index`` of this soak again, alone."""
    words = ["kconform", "soak", "--adapter", args.adapter, "--seed", str(args.seed), "--broker", args.broker]
    words += ["--kafka-version", args.kafka_version] if args.kafka_version else []
    words += ["--only-schedule", str(index), "--max-runs", str(args.max_runs), "--rate", str(args.rate)]
    words += ["--faults", args.faults] if args.faults else []
    words += ["--spark-master", args.spark_master] if args.spark_master != DEFAULT_MASTER else []
    return shlex.join(words)


def judged_line(guarantee: Guarantee) -> str:
    return f"judged by the {guarantee} guarantee: {JUDGED[guarantee]}"


def duplicates_note(outcome: Outcome) -> str:
    """How the duplicates of an at-least-once schedule stand in its verdict (nothing under exactly-once)."""
    return " (counted, not failed: at-least-once)" if outcome.guarantee is Guarantee.AT_LEAST_ONCE else ""


def status(outcome: Outcome) -> str:
    if outcome.passed:
        return "PASS"
    return "FAIL" if outcome.violations or outcome.live is False else "ERROR"


def answer(holds: bool | None) -> str:
    """A verdict as the summary's safe and live columns give it (``?``: not judged in full)."""
    return {True: "yes", False: "no", None: "?"}[holds]


def verdict_line(outcomes: Sequence[Outcome], label: str, holds: str, what: str) -> str | None:
    """``safe: no in schedules 3, 7 (...)``, naming each schedule whose ``holds`` is False; None when none is."""
    failed = [str(o.schedule.index) for o in outcomes if getattr(o, holds) is False]
    return f"{label}: no in schedule(s) {', '.join(failed)} ({what})" if failed else None


def render_kinds(counts: Counter[str]) -> str:
    return ", ".join(f"{kind} {n}" for kind, n in sorted(counts.items())) or "none"


def render_summary(outcomes: Sequence[Outcome]) -> str:
    """The table of a soak: one row per schedule, then totals and the faults injected per kind."""
    header = ("schedule", "result", "safe", "live", "time", "produced", "lost", "duplicated", "faults injected")
    rows = [
        (str(o.schedule.index), status(o), answer(o.safe), answer(o.live), f"{o.seconds:.0f}s", str(o.produced),
         str(o.lost), str(o.duplicated), render_kinds(o.timeline.injected))
        for o in outcomes
    ]  # fmt: skip
    injected: Counter[str] = sum((o.timeline.injected for o in outcomes), Counter())
    drawn: Counter[str] = sum((Counter(str(k) for k in o.schedule.kinds().elements()) for o in outcomes), Counter())
    totals = (
        "total", f"{sum(o.passed for o in outcomes)}/{len(outcomes)} pass",
        f"{sum(o.safe is False for o in outcomes)} no", f"{sum(o.live is False for o in outcomes)} no",
        f"{sum(o.seconds for o in outcomes):.0f}s",
        str(sum(o.produced for o in outcomes)), str(sum(o.lost for o in outcomes)),
        str(sum(o.duplicated for o in outcomes)), str(sum(injected.values())),
    )  # fmt: skip
    widths = [max(len(r[i]) for r in (header, *rows, totals)) for i in range(len(header))]

    def line(row: Sequence[str]) -> str:
        return "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()

    table = [line(header), line(["-" * w for w in widths]), *map(line, rows), line(totals)]
    kinds = sorted(set(drawn) | set(injected))
    width = max((len(k) for k in kinds), default=4)
    table += ["", f"{'fault kind'.ljust(width)}  drawn  injected"]
    table += [f"{kind.ljust(width)}  {drawn[kind]:5d}  {injected[kind]:8d}" for kind in kinds]
    return "\n".join(table)


def save_failure(out: Path, outcome: Outcome, replay: str, broker: KafkaBroker) -> Path:
    """Write a failing schedule's evidence under ``out/schedule-<i>/``; the folder."""
    folder = out / f"schedule-{outcome.schedule.index}"
    folder.mkdir(parents=True, exist_ok=True)
    write_text(folder / "schedule.json", json.dumps(outcome.schedule.to_json(), indent=2) + "\n")
    write_text(
        folder / "timeline.txt", outcome.schedule.describe() + "\n\n" + "\n".join(outcome.timeline.events) + "\n"
    )
    write_text(folder / "history.jsonl", "".join(json.dumps(op) + "\n" for op in outcome.history))
    verdict = explain(outcome.violations, limit=50) if outcome.violations else "no violation"
    counts = (f"produced {outcome.produced}, lost {outcome.lost}, duplicated {outcome.duplicated}"
              f"{duplicates_note(outcome)}")  # fmt: skip
    error = f"error: {outcome.error}\n" if outcome.error else ""
    classes = f"safe: {answer(outcome.safe)}, live: {answer(outcome.live)}"
    write_text(folder / "verdict.txt", f"{judged_line(outcome.guarantee)}\n{classes}\n{counts}\n{verdict}\n{error}")
    drivers = []
    for number, log in enumerate(outcome.driver_logs, 1):
        lines = log.read_text(errors="replace").splitlines()[-LOG_TAIL_LINES:] if log.exists() else ["(no log)"]
        drivers.append(f"--- driver {number} of the schedule ({log.name}) ---\n" + "\n".join(lines))
        if log.exists() and log.parent != folder:  # the whole log, for what happened before its tail
            keep_end(log, folder / f"driver-{number}.log", DRIVER_LOG_KEEP_BYTES)
    if drivers:
        write_text(folder / "spark-driver-log-tail.txt", "\n".join(drivers) + "\n")
    tails = "\n".join(f"--- node {n.node_id} ---\n{n.log_tail(LOG_TAIL_LINES)}" for n in broker.nodes)
    write_text(folder / "broker-log-tail.txt", tails + "\n")
    write_text(folder / "replay.txt", replay + "\n")
    return folder


def keep_end(source: Path, target: Path, limit: int) -> None:
    """Copy ``source`` to ``target``, only its last ``limit`` bytes when it is longer."""
    with source.open("rb") as read:
        size = read.seek(0, 2)
        read.seek(max(0, size - limit))
        target.write_bytes(read.read())


def _clock(seconds: float) -> str:
    minutes, secs = divmod(int(seconds), 60)
    return f"{minutes}m{secs:02d}s"


def main(argv: Sequence[str]) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)  # --help answers here, before anything needs the pipeline extra
    missing = pipeline_missing()
    if missing is not None:
        print(f"kconform soak: could not check (ERROR): {missing}", file=sys.stderr)
        return ERROR_EXIT
    from ..spark.driver import StandbyDrivers
    from .runner import Outcome, SoakContext, Timeline, run_schedule

    search_working_directory()
    if args.seed is None:
        args.seed = int.from_bytes(os.urandom(4), "big")
    try:
        standalone = args.spark_master == STANDALONE
        adapter = load_adapter(args.adapter)
        guarantee = declared_guarantee(adapter.capabilities)
        if guarantee is None:
            raise ValueError(
                f"adapter {adapter.name!r} declares no sink ({' or '.join(map(repr, DECLARED_BY.values()))}): "
                "the soak judges what a query writes"
            )
        kinds = None if args.faults is None else parse_kinds(args.faults, args.broker, standalone, guarantee)
        if args.schedules < 1 or args.max_runs < 1 or args.rate < 1:
            raise ValueError("--schedules, --max-runs and --rate must be at least 1")
        indices = args.only_schedule or list(range(args.schedules))
        schedules: list[Schedule] = [
            draw_schedule(args.seed, i, args.broker, kinds, args.max_runs, standalone, guarantee) for i in indices
        ]
    except ValueError as error:
        print(f"kconform soak: error: {error}", file=sys.stderr)
        return USAGE_EXIT
    if (refused := release_option.prepare("soak", args.kafka_version, [args.broker])) is not None:
        return refused
    args.kafka_version = os.environ.get(KAFKA_VERSION_ENV)  # the replay line names the release that ran
    try:
        KafkaBroker().jars()
    except jvm.JvmArtifactsMissing as missing:
        print(f"kconform soak: could not check (ERROR): {missing}; the soak restarts and kills Apache Kafka "
              "nodes, which the embedded Tansu broker cannot stand in for", file=sys.stderr)  # fmt: skip
        return ERROR_EXIT
    print(f"kconform soak: {len(schedules)} schedule(s) of seed {args.seed} on {args.broker}, adapter {args.adapter}, "
          f"master {args.spark_master}; {judged_line(guarantee)}", flush=True)  # fmt: skip
    outcomes: list[Outcome] = []
    began = time.monotonic()
    workdir = Path(tempfile.mkdtemp(prefix="kconform-soak-"))
    broker = KafkaBroker(nodes=CLUSTER_SIZE if args.broker == "kafka-cluster" else 1, proxied=True)
    try:
        broker.start()
    except BrokerStartError as error:
        print(f"kconform soak: could not check (ERROR): {args.broker} broker did not start: {error}", file=sys.stderr)
        shutil.rmtree(workdir, ignore_errors=True)
        return ERROR_EXIT
    print(f"kconform soak: broker {read_facts(broker).text()}, started in {broker.start_seconds or 0:.0f}s", flush=True)
    context = SoakContext(broker, args.adapter, args.spark_master, workdir, uuid.uuid4().hex[:6], guarantee)
    cluster = StandaloneCluster() if standalone else None
    if is_local(args.spark_master):
        (workdir / "drivers").mkdir()
        context.standby = StandbyDrivers(args.spark_master, workdir / "drivers")
    try:
        if cluster is not None:  # one for the whole soak, stopped in the finally with every process it began
            try:
                cluster.start()
            except SparkClusterError as error:
                print(f"kconform soak: could not check (ERROR): Spark standalone cluster: {error}", file=sys.stderr)
                return ERROR_EXIT
            print(f"kconform soak: {cluster.describe()}, started in {cluster.start_seconds or 0:.0f}s", flush=True)
            context.master, context.cluster = cluster.master_url, cluster
        for number, schedule in enumerate(schedules, 1):
            where = f"schedule {schedule.index} ({number}/{len(schedules)})"
            print(f"{where}: " + schedule.describe().replace("\n", " | "), flush=True)

            def progress(text: str, where: str = where) -> None:
                print(f"  {where}: {text}", flush=True)

            try:
                outcome = run_schedule(context, schedule, progress)
            except Exception as failure:  # a schedule that cannot even be judged is an ERROR row, with its cause
                outcome = Outcome(
                    schedule, [], Timeline(), error=f"{type(failure).__name__}: {failure}", guarantee=guarantee
                )
            outcomes.append(outcome)
            elapsed = time.monotonic() - began
            eta = elapsed / number * (len(schedules) - number)
            faults = render_kinds(outcome.timeline.injected)
            print(f"{where}: {status(outcome)} (safe: {answer(outcome.safe)}, live: {answer(outcome.live)}) in "
                  f"{outcome.seconds:.0f}s; faults {faults}; "
                  f"produced {outcome.produced}, lost {outcome.lost}, duplicated {outcome.duplicated}"
                  f"{duplicates_note(outcome)}; "
                  f"elapsed {_clock(elapsed)}, ETA {_clock(eta)}", flush=True)  # fmt: skip
            if not outcome.passed:
                for violation in outcome.violations[:5]:
                    print(f"    {violation}", flush=True)
                if outcome.error:
                    print(f"    error: {outcome.error}", flush=True)
                saved = save_failure(args.out, outcome, replay_command(args, schedule.index), broker)
                print(f"    saved {saved}; replay: {replay_command(args, schedule.index)}", flush=True)
            if outcome.cannot_check:  # a contract or harness fault: every later schedule would meet it again
                print(f"kconform soak: {outcome.cannot_check} (ERROR); the remaining schedules were not run")
                return _finish(outcomes)
    except KeyboardInterrupt:
        context.stop.set()
        print("kconform soak: interrupted", file=sys.stderr)
        return ERROR_EXIT if not outcomes else _finish(outcomes, interrupted=True)
    finally:
        try:
            if context.standby is not None:
                context.standby.close()
            if cluster is not None:
                cluster.stop()
        finally:
            broker.stop()
            shutil.rmtree(workdir, ignore_errors=True)
    return _finish(outcomes)


def _finish(outcomes: Sequence[Outcome], interrupted: bool = False) -> int:
    print()
    print(judged_line(outcomes[0].guarantee))  # the guarantee is the soak's: every outcome has the same
    print(render_summary(outcomes))
    injected = sum(sum(o.timeline.injected.values()) for o in outcomes)
    failed = [
        line
        for line in (
            verdict_line(outcomes, "safe", "safe", "records lost, duplicated under exactly-once, out of order or "
                         "skipped"),
            verdict_line(outcomes, "live", "live", "the query crashed or hung where it should have recovered, the "
                         "broker answering: LIVE-001, not data loss"),
        )
        if line
    ]  # fmt: skip
    broker_lost = [str(o.schedule.index) for o in outcomes if o.violations and o.safe is not False]
    if broker_lost:
        failed.append(f"the broker lost an acknowledged record in schedule(s) {', '.join(broker_lost)}")
    if failed:
        print(f"kconform soak: FAIL: {'; '.join(failed)} (see the saved schedules)")
        return 1
    if any(o.error for o in outcomes) or interrupted:
        print("kconform soak: could not check (ERROR): a schedule did not finish")
        return ERROR_EXIT
    if injected == 0:
        print("kconform soak: could not check (ERROR): no fault was injected, so this run shows nothing (not a pass)")
        return ERROR_EXIT
    counted = duplicates_note(outcomes[0])
    duplicated = f", {sum(o.duplicated for o in outcomes)} duplicated{counted}" if counted else ""
    print(f"kconform soak: PASS: {len(outcomes)} schedule(s), {injected} fault(s) injected{duplicated}")
    return 0
