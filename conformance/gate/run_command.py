"""``kconform run``: the conformance suite as a CI gate, with a verdict per requirement (its command line, and the
reports it writes)."""

from __future__ import annotations

import argparse
import faulthandler
import json
import os
import shutil
import sys
from collections.abc import Sequence
from pathlib import Path

from ...reference_impl.credentials import json_default
from ..adapter.interface import DEFAULT_MASTER
from ..adapter.loader import DEFAULT_ADAPTERS, default_adapter, search_working_directory
from ..adapters.flink_kafka import ADAPTER_SPEC as FLINK_ADAPTER
from ..adapters.flink_kafka import FLINK_CONNECTOR_ENV
from ..brokers import BOOTSTRAP_ENV, BROKER_KINDS, DEFAULT_BROKER, release_option
from ..brokers.base import EXTERNAL_TIMEOUT_ENV, START_TIMEOUT_S
from ..errors import CannotCheck
from ..jvm import JvmArtifactsMissing
from ..jvm.spark_at_release import SPARK_VERSION_ENV
from ..redaction import write_text
from .html_report import write_html
from .journal import Journal
from .options import DEFAULT_LEVEL, DEFAULT_SUITE, DEFAULT_TIMEOUT, RunOptions
from .profiles import PROFILES, WORKLOAD_DRAWS_ENV, profile_from_env
from .report import annotate_junit, judged_components, judged_text, render_markdown, render_text, to_json
from .results import ERROR_EXIT, USAGE_EXIT, RunResult
from .runner import BROKER_ENV, AdapterLoadError, load, run
from .spark_release import at_spark_release


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="kconform run",
        description="run the conformance suite against an adapter (defaults: what `make conformance` runs)",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=f"""exit codes:
  0  every selected requirement verified as expected (PARTIAL allowed, unless --strict)
  1  a violation: a MUST failure, an XPASS, an interruption; with --strict also SHOULD failures
     and PARTIAL (1 wins over 3)
  {USAGE_EXIT}  usage error: bad arguments, an --adapter or --suite naming nothing loadable, no test selected
  {ERROR_EXIT}  could not check (ERROR): the broker is unreachable or unconfigured (--broker kafka without
     its jars: `kconform setup`, or --broker tansu, or --allow-fallback; a --kafka-version Maven cannot
     resolve), the adapter failed to load, a
     test still running at --timeout with no call of the connector under way (an adapter method still running
     then is a liveness violation, LIVE-001, exit 1, unless the broker stopped answering; it is not called again
     in the run: the other tests that need it are ERROR at once), the process running the suite crashed (the
     test it ran; the others go on), an adapter member's signature does not fit the contract, read_stream's frame
     lacks a column the contract needs (topic, partition, offset, key, value) or has it with another
     type, Spark cannot find a data source (kafka: `kconform setup`), a failure injection did not happen,
     the selected level has nothing the adapter declares, or every selected test was skipped; the
     message names the fix

PARTIAL: a test could verify only part of a requirement (e.g. duplicates on a broker that shows
aborted records); it is reported with the reason, never as a pass.""",
    )
    parser.add_argument(
        "--adapter",
        default=None,
        help="the adapter under test, as module:attr (default: the reference implementation; "
        f"{DEFAULT_ADAPTERS['all']} at levels all and pipeline, which need the pipeline extra, "
        f"{DEFAULT_ADAPTERS['protocol']} at level protocol, which a core install runs)",
    )
    parser.add_argument(
        "--level",
        choices=["protocol", "pipeline", "all"],
        default=DEFAULT_LEVEL,
        help="protocol: the in-process checks; pipeline: Spark streaming queries (Flink jobs, for Flink's own "
        "connector) on a broker; all: both (default %(default)s; pipeline with --flink-connector)",
    )
    parser.add_argument(
        "--flink-connector",
        metavar="VERSION",
        help=f"judge Flink's own KafkaSource and KafkaSink at this pinned flink-connector-kafka line (3.1.0-1.18): "
        f"short for --adapter {FLINK_ADAPTER} with ${FLINK_CONNECTOR_ENV}=VERSION, at level pipeline",
    )
    parser.add_argument(
        "--profile",
        choices=list(PROFILES),
        default=None,
        help="Hypothesis profile: how many examples (default: $KCONFORM_PROFILE, else default)",
    )
    parser.add_argument(
        "--report", type=Path, help="write report.html, report.md, report.json, junit.xml and pytest.log here"
    )
    parser.add_argument("--expectations", type=Path, help="TOML file of known deviations ([[deviation]])")
    parser.add_argument(
        "--only", help="run only tests whose display name contains this, or that check this requirement id (DISC-002)"
    )
    parser.add_argument("--seed", type=int, help="Hypothesis seed (default: random, printed)")
    parser.add_argument(
        "--broker",
        choices=BROKER_KINDS,
        default=DEFAULT_BROKER,
        help=f"the pipeline level's broker (default %(default)s; the suite reads ${BROKER_ENV}); kafka-sasl takes "
        "only SASL/PLAIN logins (a password generated per run, never printed); external reads "
        f"${BOOTSTRAP_ENV} and waits ${EXTERNAL_TIMEOUT_ENV} seconds (default {START_TIMEOUT_S:g}) for an answer",
    )
    release_option.add_option(parser)
    parser.add_argument(
        "--allow-fallback",
        action="store_true",
        help="with --broker kafka: run on the embedded Tansu broker when Kafka's jars are missing (the header and "
        "every report then name tansu and why); without it, the pipeline tests are ERROR naming the fix",
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=DEFAULT_TIMEOUT,
        help="per-test seconds (default %(default)g); a test still running then is ERROR (nothing was judged), and an "
        "adapter method still running then is not called again in the run",
    )
    parser.add_argument(
        "--spark",
        metavar="VERSION",
        help=f"judge this Spark release (default: ${SPARK_VERSION_ENV}, else the pinned one): its pyspark, in a venv "
        "made on demand and cached, and its spark-sql-kafka-0-10, resolved with Maven and cached; the reference "
        "connector needs pyspark 4.2's Python streaming data source API (on 3.5, 4.0 and 4.1 it is could-not-check)",
    )
    parser.add_argument(
        "--workload-draws",
        type=int,
        metavar="N",
        help="schedules each drawn workload (the client workload, CLIENT) draws (default: one per twenty examples of "
        "the profile, at least two: 5 at default, 50 at thorough)",
    )
    parser.add_argument(
        "--examples",
        type=Path,
        metavar="DIR",
        help="Hypothesis's example database (default: .hypothesis/adapters/<adapter>, whose examples saved by earlier "
        "runs are replayed first); an empty folder makes what runs depend on --seed alone (kconform bugbank gives each "
        "run its own)",
    )
    parser.add_argument("--strict", action="store_true", help="SHOULD failures and PARTIAL results fail the run too")
    parser.add_argument(
        "--verbose", action="store_true", help="print the metrics and the broker's capabilities too (reports have them)"
    )
    parser.add_argument("--suite", default=DEFAULT_SUITE, help="the suite package (default %(default)s)")
    parser.add_argument(
        "--spark-master",
        default=DEFAULT_MASTER,
        help="Spark master of pipeline-level scenarios (default %(default)s: task retries on, for task failures); "
        "'standalone' starts a standalone master and two workers on loopback for the run",
    )
    return parser


def main(argv: Sequence[str]) -> int:
    """``kconform run``: 0 when every result is expected (PARTIAL is, unless strict), 1 for a violation,
    2 on usage errors, 3 when something could not be checked."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.timeout <= 0:
        parser.error("--timeout must be positive")
    if args.workload_draws is not None:
        if args.workload_draws < 1:
            parser.error("--workload-draws must be at least 1")
        os.environ[WORKLOAD_DRAWS_ENV] = str(args.workload_draws)  # the suite reads it (and a supervised run's child)
    if args.flink_connector is not None:
        if args.adapter not in (None, FLINK_ADAPTER):
            parser.error(f"--flink-connector judges {FLINK_ADAPTER}; it takes no other --adapter")
        args.adapter = FLINK_ADAPTER
        os.environ[FLINK_CONNECTOR_ENV] = args.flink_connector
    flink_default = args.flink_connector is not None and args.level == DEFAULT_LEVEL
    level = "pipeline" if flink_default else args.level  # the Flink adapter has no protocol level
    search_working_directory()
    starts = level != "protocol"  # the protocol level starts no broker
    if (refused := release_option.prepare("run", args.kafka_version, [args.broker], starts)) is not None:
        return refused
    released = at_spark_release("run", args.spark, argv, spark=level != "protocol")
    if released is not None:
        return released
    try:
        options = RunOptions(
            adapter=args.adapter or default_adapter(level),
            level=level,
            profile=args.profile or profile_from_env(),
            report=args.report,
            expectations=args.expectations,
            only=args.only,
            seed=args.seed,
            broker=args.broker,
            timeout=args.timeout,
            strict=args.strict,
            suite=args.suite,
            spark_master=args.spark_master,
            allow_fallback=args.allow_fallback,
            examples=args.examples,
        )
        journal = Journal.from_environment()
        if journal is not None:  # supervised (kconform.conformance.gate.supervisor): a crash leaves every stack
            crash_log = open(journal.crash_log, "a")  # noqa: SIM115  # open until the process ends, as it may crash
            faulthandler.enable(crash_log, all_threads=True)
        result = run(options, journal=journal)
    except ValueError as exc:
        print(f"kconform run: error: {exc}", file=sys.stderr)
        return USAGE_EXIT
    except (AdapterLoadError, CannotCheck) as exc:
        print(f"kconform run: could not check (ERROR): {exc}", file=sys.stderr)
        return ERROR_EXIT
    # What it judged (the adapter's releases), in every report as the broker is; at the protocol level only what
    # the adapter names (kafka-clients' assignors at a release, say): no PySpark runs there.
    versions = adapter_versions(options.adapter)
    result.judged = judged_components(result, versions)
    if options.report is not None:
        write_reports(result, options.report)
        if journal is not None and journal.resumed:
            shutil.copyfile(journal.crash_log, options.report / journal.crash_log.name)
    judged = judged_text(result, versions) if level != "protocol" or versions else None
    print(render_text(result, verbose=args.verbose, judged=judged))
    return result.exit_code


def adapter_versions(spec: str) -> dict[str, str]:
    """The jars the adapter names (``versions()``, as ``kconform verdicts`` shows them), or none when it names none
    or they cannot be read (a run whose jars were missing says so in its ERROR)."""
    try:
        return dict(getattr(load(spec), "versions", dict)())
    except (AdapterLoadError, ValueError, CannotCheck, JvmArtifactsMissing):
        return {}


def write_reports(result: RunResult, directory: Path) -> None:
    """``report.json``, ``report.md``, ``report.html`` and ``pytest.log``; pytest itself wrote ``junit.xml`` there."""
    directory.mkdir(parents=True, exist_ok=True)
    write_html(result, directory)
    write_text(directory / "report.json", json.dumps(to_json(result), indent=2, default=json_default) + "\n")
    write_text(directory / "report.md", render_markdown(result))
    write_text(directory / "pytest.log", result.pytest_log)
    annotate_junit(result, directory / "junit.xml")
