"""CLIENT-001 to CLIENT-009 and LIVE-001: a drawn workload of real producers and consumers (spec/clients.md).

An adapter that declares ``confluent-kafka-consumer`` reads Kafka with the confluent-kafka this interpreter
imports; one that declares ``kafka-clients-workload`` is kafka-clients at a release (its ``release``), whose
KafkaProducer and KafkaConsumer a harness JVM runs (``workloads.clients.jvm_clients``). The suite drives that
release's clients with schedules Hypothesis draws from what applications, operators and faults do, with settings
drawn from the release's own property table (librdkafka's CONFIGURATION.md; kafka-clients' ConfigDef, as the
harness dumps it), and judges each history with the pure checkers. Each example runs for seconds (a group's join,
the drain), so Hypothesis draws few; ``kconform run --profile thorough`` draws fifty.
"""

from __future__ import annotations

import os
import traceback
from collections import Counter
from collections.abc import Callable, Iterator
from functools import cache
from typing import Any, Final, cast

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from ..extras import pipeline_missing

if (missing := pipeline_missing()) is not None:  # a core install: every test here is skipped, naming the fix
    pytest.skip(missing, allow_module_level=True)

import confluent_kafka as ck

from ...reference_impl.ports import KafkaError
from .. import progress
from ..brokers import Broker
from ..brokers.base import BrokerStartError
from ..brokers.kafka import KafkaBroker
from ..brokers.versions import KAFKA_VERSION_ENV
from ..checks.checkers import fail_on
from ..checks.client_workload_checkers import check_history, unjudged, zombie_overlaps
from ..gate.profiles import workload_draws
from ..gate.pytest_plugin import CouldNotCheck, Partial, requirement, stated_broker
from ..jvm import JvmArtifactsMissing, artifact_version
from ..jvm.client_workload_at_release import build_at_release
from ..jvm.setup import SetupError
from ..replay.command import replay_line
from ..workloads.clients import settings as client_settings
from ..workloads.clients.driver import (
    CONVERGE_BOUND_S,
    EXAMPLE_BOUND_S,
    LATE_BOUND_S,
    Clients,
    accepts,
)
from ..workloads.clients.history import FetchedCommitted, History
from ..workloads.clients.isolated import IsolatedCouldNotCheck, run_schedule
from ..workloads.clients.jvm_clients import HarnessError, JvmClients, harness_settings, parse_configdef
from ..workloads.clients.schedule import Schedule, describe, schedules

pytestmark = pytest.mark.pipeline

CAPABILITY: Final = "confluent-kafka-consumer"
JAVA_CAPABILITY: Final = "kafka-clients-workload"
IDS: Final = tuple(f"CLIENT-{n:03}" for n in range(1, 10))


HARNESS_BOUND_S: Final = 240.0
"""A kafka-clients harness built with Maven (on a release's first use) and started, within the test's bound."""


def examples() -> int:
    """``kconform run --workload-draws``, else one drawn schedule per twenty examples of the loaded profile."""
    return workload_draws(settings().max_examples)


def workload_settings() -> settings:
    """Drawn, not shrunk: every shrink step runs real clients for seconds, so a failure prints its whole schedule
    (steps and settings) and the line that runs it again alone (``replay.command.replay_line``:
    ``kconform replay-schedule`` with its JSON), and Hypothesis's database replays it with the run's ``--seed``."""
    return settings(
        max_examples=examples(),
        deadline=None,
        phases=[Phase.explicit, Phase.reuse, Phase.generate],
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.function_scoped_fixture],
    )


@pytest.fixture(scope="module")
def workload_broker(adapter_under_test: Any, request: pytest.FixtureRequest) -> Iterator[Broker]:
    """The run's broker, started only for an adapter whose clients the workload drives; its release,
    transaction.version and group protocols go in the run's reports."""
    if not {CAPABILITY, JAVA_CAPABILITY} & set(adapter_under_test.capabilities):
        pytest.skip(f"adapter {adapter_under_test.name!r} declares neither {CAPABILITY!r} nor {JAVA_CAPABILITY!r}")
    yield from stated_broker(request.config)


@pytest.fixture(scope="module")
def java_clients(workload_broker: Broker, adapter_under_test: Any) -> Iterator[JvmClients]:
    """kafka-clients at the adapter's release (the pinned one when it names none), in one harness JVM for the
    module's schedules, built with Maven on first use; a harness that cannot be built or started is could-not-check."""
    if JAVA_CAPABILITY not in adapter_under_test.capabilities:
        pytest.skip(f"adapter {adapter_under_test.name!r} does not declare capability {JAVA_CAPABILITY!r}")
    try:
        release = adapter_under_test.release or artifact_version("kafka-oracle", "kafka-clients")
        folder = build_at_release(release, print)
        clients = JvmClients(folder, release, harness_settings(workload_broker))
    except (JvmArtifactsMissing, SetupError, HarnessError, OSError) as failed:
        raise CouldNotCheck(f"the client workload's kafka-clients harness could not start: {failed}") from failed
    with clients:
        yield clients


@cache
def release_catalogue() -> tuple[client_settings.Setting, ...]:
    """The settings this confluent-kafka has, from librdkafka's table (``settings.known_to``)."""
    return client_settings.known_to(accepts, client_settings.catalogue())


DREW: Final[dict[int, Counter[str]]] = {}
"""What the draws of one test call covered, keyed by its ``record_property`` (one per call, shared by its examples)."""


def drew(key: object, schedule: Schedule) -> dict[str, str]:
    """The report's coverage after this schedule: schedules, steps by kind, settings by name, consumers by discipline
    (and the polls carried out backing off), drawn so far."""
    seen = DREW.setdefault(id(key), Counter())
    seen["schedules"] += 1
    seen.update(schedule.counts())

    def line(prefix: str) -> str:
        found = sorted(
            ((k.removeprefix(prefix), n) for k, n in seen.items() if k.startswith(prefix)), key=lambda kv: -kv[1]
        )
        return ", ".join(f"{k} {n}" for k, n in found) or "none"

    return {
        "drew: schedules": str(seen["schedules"]),
        "drew: steps": line("step:"),
        "drew: operator steps": line("operator:"),
        "drew: faults": line("fault:"),
        "drew: settings": line("setting:"),
        "drew: disciplines": line("discipline:"),
    }


def asked(key: object, history: History) -> str:
    """The report's line on the ``committed`` steps' asks so far: how many, how many answered, how many answered
    "none" for some partition, and the failed ones by their error's first words (a timeout, STALE_MEMBER_EPOCH)."""
    seen = DREW.setdefault(id(key), Counter())
    for event in history.events:
        if isinstance(event, FetchedCommitted):
            seen["asked"] += 1
            if event.error is None:
                seen["asked: answered"] += 1
                seen["asked: none for some partition"] += any(o is None for _, o in event.offsets)
            else:
                seen[f"asked: failed {event.error.split(':', 1)[0]}"] += 1
    parts = [f"{k.removeprefix('asked: ')} {n}" for k, n in sorted(seen.items()) if k.startswith("asked: ")]
    return f"{seen['asked']} asks" + (f" ({', '.join(parts)})" if parts else "")


def excused(key: object, history: History) -> str:
    """The report's line on CLIENT-008 overlaps excused as fenced zombies of a fault (``zombie_overlaps``) so far:
    how many, in how many schedules, and the last one's account, so a reader sees what was not counted a violation."""
    seen = DREW.setdefault(id(key), Counter())
    found = zombie_overlaps(history)
    seen["excused"] += len(found)
    seen["excused: schedules"] += bool(found)
    if found:
        LAST_EXCUSED[id(key)] = found[-1].describe()
    last = LAST_EXCUSED.get(id(key))
    return f"{seen['excused']} in {seen['excused: schedules']} schedule(s)" + (f"; the last: {last}" if last else "")


LAST_EXCUSED: Final[dict[int, str]] = {}


@st.composite
def drawn_schedules(draw: st.DrawFn, catalogue: tuple[client_settings.Setting, ...], faults: bool) -> Schedule:
    return draw(schedules(catalogue, faults=faults))


@requirement(*IDS, "LIVE-001", capability=CAPABILITY)
@pytest.mark.timeout((examples() + 1) * EXAMPLE_BOUND_S + 2 * (CONVERGE_BOUND_S + LATE_BOUND_S))
@workload_settings()
@given(data=st.data())
def test_required_CLIENT_001_to_009_a_drawn_client_workload_keeps_every_promise(
    workload_broker: Broker,
    record_property: Callable[[str, object], None],
    partial: Partial,
    not_checked: Partial,
    data: st.DataObject,
) -> None:
    """A drawn schedule of producers, consumers, operators and (on a broker the suite started) faults, run on the
    release's clients and judged by every client checker: nothing acknowledged lost, nothing written or delivered
    twice or out of order, every start at the committed offset, no aborted record read, no commit backwards or past
    the end, no partition owned twice, every call returned."""
    judge_drawn(workload_broker, None, release_catalogue(), record_property, partial, not_checked, data)


@requirement(*IDS, "LIVE-001", capability=JAVA_CAPABILITY)
@pytest.mark.timeout((examples() + 1) * EXAMPLE_BOUND_S + 2 * (CONVERGE_BOUND_S + LATE_BOUND_S) + HARNESS_BOUND_S)
@workload_settings()
@given(data=st.data())
def test_required_CLIENT_001_to_009_kafka_clients_keep_every_promise_of_a_drawn_workload(
    workload_broker: Broker,
    java_clients: JvmClients,
    java_catalogue: tuple[client_settings.Setting, ...],
    record_property: Callable[[str, object], None],
    partial: Partial,
    not_checked: Partial,
    data: st.DataObject,
) -> None:
    """The same drawn workload and checkers on kafka-clients' KafkaProducer and KafkaConsumer at the adapter's
    release, with settings drawn from that release's ConfigDef."""
    # its proxies present confluent-kafka's methods and shapes (duck-typed, not subclasses): the driver's port
    clients = cast(Clients, java_clients)
    judge_drawn(workload_broker, clients, java_catalogue, record_property, partial, not_checked, data)


@pytest.fixture(scope="module")
def java_catalogue(java_clients: JvmClients) -> tuple[client_settings.Setting, ...]:
    """The kafka-clients settings the workload draws at the harness's release, from its own ConfigDef dump (read
    once per module, as ``release_catalogue`` is for confluent-kafka)."""
    return parse_configdef(java_clients.dump)


def judge_drawn(
    broker: Broker,
    clients: Clients | None,
    catalogue: tuple[client_settings.Setting, ...],
    record_property: Callable[[str, object], None],
    partial: Partial,
    not_checked: Partial,
    data: st.DataObject,
) -> None:
    """Draw a schedule from ``catalogue``, run it on ``clients`` (this interpreter's confluent-kafka when
    ``None``, in a child process of its own: ``isolated``, so that a crash of librdkafka is LIVE-001
    ``client-crashed`` with its schedule, not a dead suite) and fail on what the checkers find; a harness failure is
    could-not-check."""
    schedule = data.draw(drawn_schedules(catalogue, isinstance(broker, KafkaBroker)), label="schedule")
    counts = drew(record_property, schedule)
    progress.say(f"drawn schedule {counts['drew: schedules']} of {examples()}")
    for name, value in counts.items():
        record_property(name, value)  # the report's metrics: what the workload drew so far, the last example's count
    try:
        history = run_schedule(schedule, broker, clients)
    except (KafkaError, ck.KafkaException, BrokerStartError, OSError, HarnessError, IsolatedCouldNotCheck) as failed:
        # The run's own admin calls, topic changes or a restart of the broker failed, or the child's driver raised
        # (``IsolatedRunFailed``, an IsolatedCouldNotCheck): nothing was judged.
        raise CouldNotCheck(f"the workload's harness failed, so this schedule judged nothing: {failed}") from failed
    except Exception as bug:  # the in-process driver's own bug: its client's answers come as data, never raised
        raise CouldNotCheck(
            "the workload's driver raised, a bug of kconform and not a finding of the client judged (please report "
            f"it with this schedule), so this schedule judged nothing: {traceback.format_exc()}"
        ) from bug
    record_property("asked: committed", asked(record_property, history))
    record_property("excused: CLIENT-008 fenced zombies of a fault", excused(record_property, history))
    violations = check_history(history, broker.answers())
    violated = {v.requirement for v in violations}
    release = getattr(clients, "release", None)  # kafka-clients' harness names its release; confluent-kafka is ours
    detail = (
        f"schedule:\n{describe(schedule)}\nthis schedule alone, with the clients' log (a race may pass a replay): "
        + replay_line(schedule, release, os.environ.get(KAFKA_VERSION_ENV))
    )
    left = unjudged(history)
    for requirement_id, why in left.items():
        partial([requirement_id], f"{why}; {detail}")  # PARTIAL, never PASS, whatever the other examples show
    converging = history.convergence
    if converging is not None and converging.suite_fault:
        # the drain could not give the groups their bound (the broker did not describe them, the driver polled too
        # seldom): LIVE-001 could not be checked on this schedule (ERROR for it alone), CLIENT-001..009 were judged
        left = {**left, "LIVE-001": converging.unjudged}
        not_checked(["LIVE-001"], f"whether the groups converged was not judged: {converging.unjudged}; {detail}")
    fail_on(
        sorted(set(violations), key=lambda v: (v.requirement, v.kind, v.evidence)),
        detail=detail,
        verified=[i for i in (*IDS, "LIVE-001") if i not in violated | set(left)],  # judged in full before failing
    )
