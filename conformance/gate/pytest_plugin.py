"""pytest plugin (entry point ``pytest11: kconform``): profiles, requirement marks, ``adapter`` and ``partial``.

It changes nothing in a pytest run that does not ask for kconform: it registers kconform's Hypothesis
profiles under their own names (``--hypothesis-profile kconform-quick|kconform-default|kconform-thorough``)
and loads one only for a kconform run (``--kconform-adapter``, ``KCONFORM_PROFILE``, or the suite package
named on the command line), so an unrelated property test keeps Hypothesis's deadline and database.
The suite itself lives in ``kconform.conformance.suite``: ``pytest --pyargs kconform.conformance.suite
--kconform-adapter module:attr`` runs it from any pytest setup, as ``kconform run`` does.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, TypeVar

import pytest
from hypothesis import settings

from ..adapter.guard import guard
from ..adapter.interface import CAPABILITIES, DEFAULT_MASTER, Adapter
from ..adapter.loader import default_adapter, load_adapter
from ..brokers import Broker, BrokerStartError, BrokerUnavailable, broker_from_env
from ..brokers.capability import Capability
from ..brokers.facts import BrokerFacts, read_facts
from ..checks.checkers import Violation, ViolationError, deferring, tolerating
from ..checks.liveness_checkers import check_query_ran, query_failure
from ..spark.cluster import STANDALONE, SparkClusterError, StandaloneCluster
from ..spec_tools.requirements import SpecNotFoundError, load_requirements
from . import collection
from .expectations import Deviation
from .profiles import (
    PROFILE_ENV,
    examples_dir,
    hypothesis_profile,
    profile_from_env,
    register_profiles,
)

SUITE_PACKAGE = "kconform.conformance.suite"
BROKER_CAPABILITIES = pytest.StashKey[list[Capability]]()
"""The probe's measurement of the broker a run used; every report shows it."""
FIDELITY_IDS = pytest.StashKey[dict[str, str]]()
"""The spec's ids judged apart from safety and liveness (fidelity and diagnostics) with their class, read once per
session."""
DEFERRED_CLASSES = ("fidelity", "diagnostics")
"""Classes whose violations a test of a stronger class keeps back until it judged its own ids on every example:
fidelity and diagnostics in a test of a safety (or liveness) id, diagnostics in a test of a fidelity id."""
BROKER_VERSION = pytest.StashKey[str]()
"""The product and version of the broker a run used (``Broker.version``), for the verdict table."""
BROKER_FACTS = pytest.StashKey[BrokerFacts]()
"""The release, transaction.version and group protocols of the broker a run used (``read_facts``), for every report."""
BROKER_ANSWERS = pytest.StashKey[Callable[[], bool]]()
"""Whether the run's broker still answers a metadata request: a hang of the judged code is a liveness violation only
while it does (LIVE-001); set by the fixture that starts the pipeline level's broker (``Broker.answers``)."""

REQUIREMENT_MARK = "requirement"


def display_name(item_name: str) -> str:
    """Test names as reports show them: without ``test_`` (``required_ASSIGN_001_...``)."""
    return item_name.removeprefix("test_")


KIND_DEVIATIONS = pytest.StashKey[list[Deviation]]()
"""The run's deviations by violation kind (``--expectations``, ``kind``), tolerated inside each test."""
TOLERATED_PROPERTY = "kconform.tolerated."
"""User-property prefix of the violations a test tolerated: ``kconform.tolerated.CLIENT-004 position-past-end = 12``."""
UNVERIFIED_PROPERTY = "kconform.unverified."
"""User-property prefix of ``partial``'s declarations: ``kconform.unverified.COMMIT-011 = reason``."""
NOT_CHECKED_PROPERTY = "kconform.not-checked."
"""User-property prefix of ``not_checked``'s declarations: ``kconform.not-checked.LIVE-001 = reason``."""
Partial = Callable[[Sequence[str] | None, str], None]

F = TypeVar("F", bound=Callable[..., Any])


def requirement(*ids: str, capability: str | None = None) -> Callable[[F], F]:
    """Tag a suite test with the requirement ids it checks and the capability it needs.

    A test whose capability the adapter does not declare is skipped with that reason.
    """
    if capability is not None and capability not in CAPABILITIES:
        raise ValueError(f"unknown capability {capability!r}")
    return pytest.mark.requirement(*ids, capability=capability)


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("kconform")
    group.addoption(
        "--kconform-adapter",
        default=None,
        help=f"adapter under test, as module:attr (default {default_adapter('protocol')})",
    )
    group.addoption(
        "--kconform-spark-master",
        default=DEFAULT_MASTER,
        help=f"Spark master of pipeline-level tests (default {DEFAULT_MASTER}: 2 cores, 3 attempts per task; "
        f"{STANDALONE}: a standalone master and two workers on loopback, started for the run)",
    )
    group.addoption(
        "--kconform-examples",
        default=None,
        metavar="DIR",
        help="Hypothesis example database (default: .hypothesis/adapters/<adapter>); kconform verdicts uses a "
        "fresh one, so that examples saved by earlier runs cannot change its verdicts",
    )
    group.addoption(
        "--kconform-requirement",
        action="append",
        default=[],
        metavar="ID",
        help="run only suite tests that check this requirement id (repeatable), e.g. RESTORE-003",
    )


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    # Before Hypothesis's own plugin loads ``--hypothesis-profile``: the profiles get this adapter's database.
    register_profiles(_examples(config))
    config.addinivalue_line(
        "markers", f"{REQUIREMENT_MARK}(*ids, capability=None): requirement ids a suite test checks"
    )
    config.addinivalue_line("markers", "pipeline: a pipeline-level suite test (a real streaming query)")
    config.addinivalue_line(
        "markers", "waits_default: a suite test that waits out a component's default (kconform run: --profile thorough)"
    )
    if kconform_asked(config):
        config.pluginmanager.register(collection, "kconform-collection")
        if config.getoption("hypothesis_profile", None) is None:
            settings.load_profile(hypothesis_profile(profile_from_env()))


def kconform_asked(config: pytest.Config) -> bool:
    """Whether this pytest run is a kconform run, whose settings kconform may load."""
    named = any(str(arg).startswith(SUITE_PACKAGE) for arg in config.args)
    return named or config.getoption("kconform_adapter", None) is not None or PROFILE_ENV in os.environ


def adapter_spec(config: pytest.Config) -> str:
    """The adapter of ``--kconform-adapter``, else the default."""
    chosen: str | None = config.getoption("kconform_adapter", None)
    return chosen or default_adapter("protocol")  # the pure one: a core install runs it


def _examples(config: pytest.Config) -> Path:
    """Where this run keeps and replays its failing examples."""
    chosen = config.getoption("kconform_examples", None)
    return Path(chosen) if chosen else examples_dir(adapter_spec(config))


def pytest_report_header(config: pytest.Config) -> str:
    where = _examples(config)
    return f"kconform: failing examples of this adapter are kept in {where}"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    wanted = set(config.getoption("kconform_requirement"))
    if not wanted:
        return
    keep: list[pytest.Item] = []
    drop: list[pytest.Item] = []
    for item in items:
        mark = item.get_closest_marker(REQUIREMENT_MARK)
        (keep if mark and wanted & set(mark.args) else drop).append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep


def _fidelity_ids(config: pytest.Config) -> dict[str, str]:
    if FIDELITY_IDS not in config.stash:
        try:
            requirements = load_requirements()
        except SpecNotFoundError:
            requirements = {}
        config.stash[FIDELITY_IDS] = {i: r.category for i, r in requirements.items() if r.category in DEFERRED_CLASSES}
    return config.stash[FIDELITY_IDS]


def deferred_ids(ids: frozenset[str], classes: dict[str, str]) -> frozenset[str]:
    """The ids whose violations a test of ``ids`` keeps back: those of every deferred class weaker than the
    strongest class among ``ids`` (``classes``: the deferred classes' ids; any other id is of the strongest)."""
    rank = {category: n + 1 for n, category in enumerate(DEFERRED_CLASSES)}
    strongest = min((rank.get(classes.get(i, ""), 0) for i in ids), default=len(DEFERRED_CLASSES))
    return frozenset(i for i, category in classes.items() if rank[category] > strongest)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    """Safety judged apart from fidelity and diagnostics, and fidelity apart from diagnostics: in a test of a safety
    requirement, a fidelity or diagnostics violation (what an error message names) is kept back
    (``kconform.conformance.checks.checkers.Deferral``) until the test has judged its safety ids on every example;
    then it fails the test if it is one of the test's own ids, and the other ids count as verified in full. In a
    test of a fidelity requirement a diagnostics violation is kept back the same way. A test of diagnostics ids
    alone stops at its first violation, as any test does."""
    mark = item.get_closest_marker(REQUIREMENT_MARK)
    ids = frozenset(mark.args) if mark else frozenset()
    kept = deferred_ids(ids, _fidelity_ids(item.config))
    name, kinds = display_name(item.name), item.config.stash.get(KIND_DEVIATIONS, [])

    def known(violation: Violation) -> bool:
        return any(d.tolerates(name, violation.requirement, violation.kind) for d in kinds)

    try:
        with tolerating(known) as tolerance:
            try:
                if not kept:
                    return (yield)
                with deferring(kept, checked=ids) as deferral:
                    outcome = yield
                deferral.raise_kept()
                return outcome
            finally:
                for (requirement_id, kind), count in sorted(tolerance.seen.items()):
                    item.user_properties.append((f"{TOLERATED_PROPERTY}{requirement_id} {kind}", count))
    except ViolationError:
        raise
    except Exception as error:  # a query the scenario ran to its end failed: LIVE-001, not whatever else it checks
        failure = query_failure(error)
        if failure is None:
            raise
        raise ViolationError(check_query_ran(failure, f"that {item.name.removeprefix('test_')}")) from error


class CouldNotCheck(Exception):
    """What the tests that need it get when the run's broker is unconfigured, cannot run here or does not start.

    Not a skip, which would let a run that checked nothing pass, and not a failure, which would blame
    the connector under test: ``kconform run`` reports these tests ERROR and exits 3.
    """


def live_broker(kind: str | None = None) -> Iterator[Broker]:
    """Start the broker ``KCONFORM_BROKER`` (or ``kind``) names, yield it, stop it; ``CouldNotCheck`` if it can't.

    The message names the broker (the kind is prefixed when the broker's own message does not say it).
    """
    try:
        running = broker_from_env(kind)
    except BrokerUnavailable as unavailable:  # e.g. kafka without its jars: the message names the broker and the fix
        raise CouldNotCheck(str(unavailable)) from unavailable
    try:
        running.start()
    except (BrokerUnavailable, BrokerStartError) as error:
        text = str(error)
        raise CouldNotCheck(text if running.kind in text.lower() else f"{running.kind} broker: {text}") from error
    try:
        yield running
    finally:
        running.stop()


def stated_broker(config: pytest.Config, kind: str | None = None) -> Iterator[Broker]:
    """``live_broker``, its release, transaction.version and group protocols recorded for the run's reports
    (``BROKER_VERSION``, ``BROKER_FACTS``): every fixture that starts the run's broker states it this way, so a run
    whose only broker is the client tests' names it as a pipeline run does."""
    for running in live_broker(kind):
        config.stash[BROKER_VERSION] = running.version
        config.stash[BROKER_FACTS] = read_facts(running)
        yield running


@pytest.fixture(scope="session")
def shared_broker(pytestconfig: pytest.Config) -> Iterator[Broker]:
    """One broker (``stated_broker``: its release, transaction.version and group protocols go in the run's reports)
    for the suite modules that need none of their own, the client scenarios and the pipeline scenarios (each
    isolated by its topics, groups and transactional ids): started when the first of them asks, stopped at the run's
    end. A module whose scenarios restart or pause their broker (the drawn client workload) or run it beside an engine
    of their own (Flink's) starts its own."""
    yield from stated_broker(pytestconfig)


@pytest.fixture(scope="session")
def spark_master(pytestconfig: pytest.Config) -> Iterator[str]:
    """The master URL of ``--kconform-spark-master``; for ``standalone`` a cluster started for the run,
    stopped after it with every process it began (``CouldNotCheck`` if it cannot start)."""
    master: str = pytestconfig.getoption("kconform_spark_master")
    if master != STANDALONE:
        yield master
        return
    cluster = StandaloneCluster()
    try:
        cluster.start()
    except SparkClusterError as error:
        raise CouldNotCheck(f"Spark standalone cluster: {error}") from error
    try:
        yield cluster.master_url
    finally:
        cluster.stop()


@pytest.fixture(scope="session")
def adapter_under_test(pytestconfig: pytest.Config) -> Adapter:
    """The adapter named by ``--kconform-adapter``, loaded once per run."""
    spec = adapter_spec(pytestconfig)
    try:
        return load_adapter(spec)
    except ValueError as exc:
        raise pytest.UsageError(str(exc)) from exc


@pytest.fixture
def adapter(request: pytest.FixtureRequest, adapter_under_test: Adapter) -> Any:
    """The adapter as the suite sees it (guarded), after the capability check of the test's mark."""
    mark = request.node.get_closest_marker(REQUIREMENT_MARK)
    capability = mark.kwargs.get("capability") if mark else None
    if capability and capability not in adapter_under_test.capabilities:
        ids = ", ".join(mark.args) if mark else ""
        pytest.skip(f"{ids}: adapter {adapter_under_test.name!r} does not declare capability {capability!r}")
    return guard(adapter_under_test)


@pytest.fixture
def partial(request: pytest.FixtureRequest) -> Partial:
    """``partial(ids, reason)``: this test could not verify ``ids`` (``None``: every id of its mark) in full.

    ``kconform run`` then reports those ids PARTIAL with ``reason``, never PASS, so a check the broker
    at hand cannot support is not mistaken for one that held. The declaration travels as user
    properties (the channel ``record_property`` uses, builtins only), so a plain pytest run's
    junit.xml shows it too.
    """
    return _declarer(request, "partial", UNVERIFIED_PROPERTY)


@pytest.fixture
def not_checked(request: pytest.FixtureRequest) -> Partial:
    """``not_checked(ids, reason)``: this test could not check ``ids`` at all (the suite's or the broker's doing, as
    ``CouldNotCheck`` says for a whole test), while it judged its other ids in full.

    ``kconform run`` reports those ids ERROR with ``reason`` (and exits 3 unless something failed), and the test's
    other ids by what it found: could-not-check stays ERROR for the id that could not be checked, and only for it.
    The declaration travels as user properties, as ``partial``'s does."""
    return _declarer(request, "not_checked", NOT_CHECKED_PROPERTY)


def _declarer(request: pytest.FixtureRequest, name: str, prefix: str) -> Partial:
    """``name(ids, reason)`` for the test of ``request``: each of ``ids`` (default: every id the test checks) as a
    user property ``prefix + id`` = ``reason``, once, though each Hypothesis example declares it."""
    mark = request.node.get_closest_marker(REQUIREMENT_MARK)
    checked: tuple[str, ...] = mark.args if mark else ()

    def declare(ids: Sequence[str] | None, reason: str) -> None:
        named = list(checked if ids is None else ids)
        unknown = [i for i in named if i not in checked]
        if not named or unknown or not reason.strip():
            raise ValueError(
                f"{name}({ids!r}, {reason!r}): name some of the test's requirement ids {list(checked)} "
                f"(unknown: {unknown}) and a non-empty reason"
            )
        for entry in ((prefix + i, reason) for i in named):
            if entry not in request.node.user_properties:
                request.node.user_properties.append(entry)

    return declare
