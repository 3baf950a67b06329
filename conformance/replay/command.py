"""``kconform replay-schedule SCHEDULE``: one client-workload schedule, run again alone, with the clients' own log.

A failing drawn schedule prints its JSON and this command's line (``replay_line``). The replay runs it on a Kafka
broker of its own (``--kafka-version``, else the pinned release), on kafka-clients at ``--release`` (the harness JVM
built at that release, as the suite runs it) or, without ``--release``, on this interpreter's confluent-kafka (in a
child process, as the suite runs it), judges the history with every client checker, and keeps in ``--out`` what a
reader needs to see why: the schedule, the history (one event a line), the clients' log at ``--client-log``'s level
(kafka-clients' loggers through slf4j-simple; librdkafka's ``debug`` contexts), the violations as JSON and the
broker's log tail.

A schedule's run is not deterministic (threads, a broker, timing), so a replay may pass where the drawn run failed:
the line it prints says which, and a replay of a race is worth running more than once.

Exit codes as ``kconform run``: 0 judged in full and nothing violated, 1 a violation, 2 a usage error (a schedule
that does not parse), 3 not judged in full (the harness, broker or run failed; an id left partial).
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import asdict, replace
from pathlib import Path
from typing import Final

from ..release import kconform_version
from ..workloads.clients.schedule import ConsumerPlan, ProducerPlan, Schedule, describe

USAGE_EXIT: Final = 2
ERROR_EXIT: Final = 3
FAIL_EXIT: Final = 1
DEFAULT_OUT: Final = Path("build/replay")
LEVELS: Final = ("quiet", "info", "debug")
JAVA_LOGGERS: Final[Mapping[str, Mapping[str, str]]] = {
    "quiet": {},
    "info": {"org.apache.kafka.clients": "info"},
    "debug": {
        "org.apache.kafka.clients": "info",
        "org.apache.kafka.clients.consumer.internals": "debug",
        "org.apache.kafka.clients.producer.internals": "debug",
    },
}
"""kafka-clients' loggers at each ``--client-log`` level (the rest at ``jvm_clients.QUIET``). At ``info`` a classic
group member logs each join and why it rejoined ("Request joining group due to: ..."); at ``debug`` its
coordinator's requests and metadata snapshots too."""
LIBRDKAFKA_DEBUG: Final[Mapping[str, str]] = {
    "quiet": "",
    "info": "",
    "debug": "cgrp,consumer,topic,fetch,eos",
}
"""librdkafka's ``debug`` contexts at each ``--client-log`` level, given to every client of the schedule (librdkafka
logs its warnings and errors without them)."""
BROKER_LOG_LINES: Final = 400


def replay_line(schedule: Schedule, release: str | None, kafka_version: str | None = None) -> str:
    """The one-line command that replays ``schedule`` alone: on kafka-clients ``release``, else on the
    confluent-kafka of the interpreter that runs it; on Apache Kafka ``kafka_version`` when the run named one."""
    words = ["kconform", "replay-schedule"]
    if release:
        words += ["--release", release]
    if kafka_version:
        words += ["--kafka-version", kafka_version]
    return shlex.join([*words, schedule.dumps()])


def with_debug(schedule: Schedule, contexts: str) -> Schedule:
    """``schedule`` with librdkafka's ``debug`` set to ``contexts`` on every client (its late member too); itself
    when ``contexts`` is empty. Logging only: no setting the run draws is changed."""
    if not contexts:
        return schedule

    def consumer(plan: ConsumerPlan) -> ConsumerPlan:
        return replace(plan, settings={**plan.settings, "debug": contexts})

    def producer(plan: ProducerPlan) -> ProducerPlan:
        return replace(plan, settings={**plan.settings, "debug": contexts})

    late = schedule.late
    return replace(
        schedule,
        consumers=tuple(map(consumer, schedule.consumers)),
        producers=tuple(map(producer, schedule.producers)),
        late=None if late is None else replace(late, plan=consumer(late.plan)),
    )


def read_schedule(text: str) -> Schedule:
    """A schedule from its JSON, or from a file (``-``: standard input) that holds it; ``ValueError`` naming the
    fix when it does not parse."""
    if text == "-":
        text = sys.stdin.read()
    elif not text.lstrip().startswith("{"):
        path = Path(text)
        if not path.is_file():
            raise ValueError(f"{text!r} is neither a schedule's JSON nor a file: pass the JSON a failure printed "
                             "after 'as JSON:', or a file holding it")  # fmt: skip
        text = path.read_text()
    try:
        return Schedule.from_json(json.loads(text))
    except (json.JSONDecodeError, KeyError, TypeError, ValueError) as error:
        raise ValueError(f"the schedule does not parse ({type(error).__name__}: {error}): pass the whole JSON a "
                         "failure printed after 'as JSON:'") from error  # fmt: skip


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="kconform replay-schedule",
        description="Run one client-workload schedule (the JSON a failing draw printed) again alone, judge it, and "
        "keep the clients' log, the history and the broker's log.",
    )
    parser.add_argument("schedule", help="the schedule's JSON, or a file holding it ('-': standard input)")
    parser.add_argument(
        "--release",
        help="the kafka-clients release to run it on (a harness JVM built at it with Maven, cached); without it, "
        "this interpreter's confluent-kafka",
    )
    parser.add_argument("--kafka-version", help="the Apache Kafka release of the broker (default: the pinned one)")
    parser.add_argument(
        "--client-log",
        choices=LEVELS,
        default="info",
        help="how much the clients log (default info: each join and why a member rejoined; debug: their "
        "coordinators' requests too)",
    )
    parser.add_argument(
        "--out", type=Path, default=None, help=f"where to keep what it saw (default {DEFAULT_OUT}/<id>)"
    )
    return parser


def main(argv: Sequence[str]) -> int:
    args = build_parser().parse_args(argv)
    try:
        schedule = read_schedule(args.schedule)
    except ValueError as error:
        print(f"kconform replay-schedule: error: {error}", file=sys.stderr)
        return USAGE_EXIT
    from ..extras import pipeline_missing

    if (missing := pipeline_missing()) is not None:
        print(f"kconform replay-schedule: could not check (ERROR): {missing}", file=sys.stderr)
        return ERROR_EXIT
    from ..brokers import release_option

    if (refused := release_option.prepare("replay-schedule", args.kafka_version, ["kafka"])) is not None:
        return refused
    out: Path = args.out or DEFAULT_OUT / uuid.uuid4().hex[:8]
    out.mkdir(parents=True, exist_ok=True)
    return replay(schedule, args.release, args.client_log, out)


def replay(schedule: Schedule, release: str | None, level: str, out: Path) -> int:
    """Run ``schedule`` once (module docstring), keep what it saw in ``out``, print the verdict; the exit code."""
    import confluent_kafka as ck

    from ...reference_impl.ports import KafkaError
    from ..brokers.base import BrokerStartError
    from ..brokers.kafka import KafkaBroker
    from ..checks.client_workload_checkers import check_history, unjudged
    from ..jvm import JvmArtifactsMissing
    from ..jvm.client_workload_at_release import build_at_release
    from ..jvm.setup import SetupError
    from ..workloads.clients.driver import schedule_bound_s
    from ..workloads.clients.isolated import IsolatedCouldNotCheck, run_schedule
    from ..workloads.clients.jvm_clients import HarnessError, JvmClients, harness_settings

    def say(line: str) -> None:
        print(f"kconform replay-schedule: {line}", file=sys.stderr, flush=True)

    (out / "schedule.json").write_text(schedule.dumps() + "\n")
    clients_log = out / "clients.log"
    librdkafka = f"confluent-kafka {ck.version()[0]} (librdkafka {ck.libversion()[0]})"
    on = f"kafka-clients {release}" if release else librdkafka
    print(f"kconform {kconform_version()} replaying a client-workload schedule on {on}:\n{describe(schedule)}")
    broker = KafkaBroker()
    began = time.monotonic()
    try:
        broker.start()
    except (BrokerStartError, JvmArtifactsMissing, OSError) as failed:
        say(f"could not check (ERROR): the broker did not start: {failed}")
        return ERROR_EXIT
    try:
        say(f"{broker.version} started; running the schedule (at most {schedule_bound_s(schedule):g} s)")
        if release:
            folder = build_at_release(release, say)
            with JvmClients(
                folder, release, harness_settings(broker), log_levels=JAVA_LOGGERS[level], log=clients_log
            ) as clients:
                history = run_schedule(schedule, broker, clients)
        else:
            history = run_schedule(with_debug(schedule, LIBRDKAFKA_DEBUG[level]), broker, stderr_to=clients_log)
        violations = check_history(history, broker.answers())
    except (KafkaError, ck.KafkaException, BrokerStartError, OSError, HarnessError, IsolatedCouldNotCheck,
            JvmArtifactsMissing, SetupError) as failed:  # fmt: skip
        say(f"could not check (ERROR): the run judged nothing: {failed}")
        return ERROR_EXIT
    finally:
        for node in broker.nodes:
            (out / f"broker-{node.node_id}.log.tail").write_text(node.log_tail(BROKER_LOG_LINES) + "\n")
        broker.stop()
    (out / "history.txt").write_text("".join(f"{event!r}\n" for event in history.events))
    (out / "violations.json").write_text(json.dumps([asdict(v) for v in violations], indent=1, default=str) + "\n")
    left = unjudged(history)
    took = time.monotonic() - began
    for violation in violations:
        print(f"  {violation}")
    for requirement, why in left.items():
        print(f"  {requirement} not judged in full: {why}")
    kept = f"kept in {out}: schedule.json, history.txt, clients.log, violations.json, broker logs"
    if violations:
        print(f"FAIL: {len(violations)} violation(s) in {took:.0f} s; {kept}")
        return FAIL_EXIT
    if left:
        print(f"ERROR: not judged in full ({', '.join(sorted(left))}) in {took:.0f} s; {kept}")
        return ERROR_EXIT
    print(f"PASS: judged in full, nothing violated, in {took:.0f} s (a race may still fail another replay); {kept}")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main(sys.argv[1:]))
