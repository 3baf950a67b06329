"""``kconform run``'s orchestration: load the adapter, run the suite in-process under pytest with the collector,
and judge the run as a whole (levels the adapter does not declare, nothing checked, an interruption).

pytest's own terminal output goes to ``DIR/pytest.log`` (or is shown only if pytest itself fails).
"""

from __future__ import annotations

import contextlib
import io
import os
import random
import sys
import time
from collections.abc import Iterator
from dataclasses import replace
from importlib.resources import files
from importlib.util import find_spec
from pathlib import Path
from typing import IO

import pytest

from ..adapter.interface import CAPABILITIES, ENGINE_CAPABILITIES, PIPELINE_CAPABILITIES, Adapter
from ..adapter.loader import contract_note, default_adapter, load_adapter
from ..brokers import fallback_warning, kafka_unavailable
from ..bugbank.catalogue import SHIPPED as SHIPPED_CATALOGUE
from ..bugbank.catalogue import suite_deviations
from ..errors import CannotCheck
from ..extras import PIPELINE_FIX, needs_pipeline_extra, pipeline_missing
from ..redaction import redacting
from ..spec_tools.requirements import SpecNotFoundError, judged_at, load_requirements, tests_by_id
from .collector import PIPELINE_MARK, SUITE_LEVELS, TOLERATED, WAITS_DEFAULT_PROFILE, Collector
from .expectations import Deviation, load_expectations
from .journal import Journal
from .options import RunOptions, broker_used
from .profiles import hypothesis_profile
from .pytest_plugin import BROKER_CAPABILITIES, BROKER_FACTS, BROKER_VERSION
from .results import RunResult, Status, aggregate, interruption, unchecked_safety

LEVEL_CAPABILITIES = {
    "protocol": frozenset(CAPABILITIES) - frozenset(PIPELINE_CAPABILITIES) - frozenset(ENGINE_CAPABILITIES),
    "pipeline": frozenset(PIPELINE_CAPABILITIES) | frozenset(ENGINE_CAPABILITIES),
}
BROKER_ENV = "KCONFORM_BROKER"


class AdapterLoadError(Exception):
    """The adapter exists but could not be loaded: its module or factory raised, or a module it imports is
    missing. Nothing could be checked (exit 3); a spec naming nothing loadable is a usage error (exit 2)."""


def load(spec: str) -> Adapter:
    """``load_adapter``, telling the adapter's own failure to load (``AdapterLoadError``) from a usage error."""
    module_name = spec.partition(":")[0]
    try:
        return load_adapter(spec)
    except ValueError as exc:
        cause = exc.__cause__
        named = isinstance(cause, ModuleNotFoundError) and cause.name is not None
        if isinstance(cause, ImportError) and needs_pipeline_extra(cause):
            raise AdapterLoadError(
                f"--adapter {spec!r} needs {cause.name}, which the core install leaves out: {PIPELINE_FIX} "
                f"(or a protocol-level adapter, e.g. --adapter {default_adapter('protocol')})"
            ) from exc
        if isinstance(cause, ImportError) and not (named and f"{module_name}.".startswith(f"{cause.name}.")):
            raise AdapterLoadError(str(exc)) from exc
        raise
    except Exception as exc:  # the adapter's own code ran (import, factory) and raised: report it, no traceback
        raise AdapterLoadError(f"--adapter {spec!r} failed to load: {exc!r}") from exc


def with_fallback(options: RunOptions, warn: IO[str]) -> RunOptions:
    """The options of the broker that will run: Tansu instead of an unavailable ``kafka`` only when the
    user allowed it, decided before the header so that the header and every report name it."""
    if not options.allow_fallback or options.broker != "kafka" or options.level == "protocol":
        return options
    cause = kafka_unavailable()
    if cause is None:
        return options
    print(fallback_warning(cause), file=warn, flush=True)
    return replace(options, broker="tansu", fallback_cause=cause)


def crash_count(times: int) -> str:
    return f"the process running the suite died {'once' if times == 1 else f'{times} times'}"


@contextlib.contextmanager
def _environment(name: str, value: str) -> Iterator[None]:
    old = os.environ.get(name)
    os.environ[name] = value
    try:
        yield
    finally:
        if old is None:
            del os.environ[name]
        else:
            os.environ[name] = old


def suite_root(suite: str) -> Path:
    """pytest's rootdir for the suite package, so node ids read ``package/module.py``: the parent of the
    outermost enclosing package whose folder holds the suite's (in a checkout ``kconform.conformance`` is the
    folder ``conformance/``, so ids read ``conformance/suite/...``; from a wheel ``kconform/conformance/suite/...``)."""
    folder = package_folder(suite)
    if folder is None:
        raise ValueError(f"--suite {suite!r}: no such package")
    outermost = folder
    parts = suite.split(".")
    for depth in range(len(parts) - 1, 0, -1):
        enclosing = package_folder(".".join(parts[:depth]))
        if enclosing is None or not folder.is_relative_to(enclosing):
            break
        outermost = enclosing
    return outermost.parent


def package_folder(name: str) -> Path | None:
    """The folder a package is imported from, or ``None`` if there is no such package."""
    try:
        spec = find_spec(name)
    except ModuleNotFoundError:
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations))).resolve()


def pytest_args(options: RunOptions, seed: int, journal: Journal | None = None) -> list[str]:
    """The pytest command line of a run: an empty ini file and no ``conftest.py``, so the suite runs the same from
    any directory (pytest would otherwise load the ``conftest.py`` of the ``test*`` folders of the directory it is
    started in, a project's own: kconform's ``tests/conftest.py`` put the longest-bounded tests first, which split
    a module's tests and started its broker and SparkSession again for each part). A supervised run keeps its own
    faulthandler (on the journal's crash log), which pytest's would replace."""
    args = [
        *(["-p", "no:faulthandler"] if journal is not None else []),
        "--pyargs",
        options.suite,
        f"--rootdir={suite_root(options.suite)}",
        f"--config-file={os.devnull}",
        "--noconftest",
        "-p",
        "no:cacheprovider",
        "-o",
        "junit_suite_name=kconform",
        "-o",
        "junit_family=xunit1",  # xunit2 drops (and warns about) the properties tests record: ids, metrics
        "--continue-on-collection-errors",
        f"--kconform-adapter={options.adapter}",
        f"--hypothesis-profile={hypothesis_profile(options.profile)}",
        f"--hypothesis-seed={seed}",
        f"--timeout={options.timeout:g}",
        f"--kconform-spark-master={options.spark_master}",
    ]
    if options.report is not None:
        args.append(f"--junitxml={options.report / 'junit.xml'}")
    if options.examples is not None:
        args.append(f"--kconform-examples={options.examples}")
    return args


def known_upstream() -> list[Deviation]:
    """The bank's known upstream behaviours that every run tolerates in the suite tests that drive their component
    itself (``catalogue.SUITE_TOLERATED``), from the shipped catalogue."""
    text = files("kconform.fixtures").joinpath(SHIPPED_CATALOGUE).read_text()
    return [
        Deviation(requirement, reason, link, test=test, kind=kind)
        for requirement, kind, test, reason, link in suite_deviations(text)
    ]


def run(options: RunOptions, out: IO[str] = sys.stdout, journal: Journal | None = None) -> RunResult:
    """Run the suite; ``ValueError`` for anything that makes the run meaningless (a usage error),
    ``AdapterLoadError`` for an adapter that fails to load, ``CannotCheck`` for a level not installed.

    With a ``journal`` (a supervised run) every test's start and result is recorded, and a run resumed after its
    process died keeps the results and the seed of the processes before it and runs only the tests left."""
    out = redacting(out)
    unavailable = pipeline_missing() if options.level != "protocol" else None
    if unavailable is not None and options.level == "pipeline":
        raise CannotCheck(unavailable)
    adapter = load(options.adapter)
    options = with_fallback(options, sys.stderr)
    seed = options.seed if options.seed is not None else random.SystemRandom().randrange(2**32)
    started = time.time()
    if journal is not None and journal.seed is not None:
        seed, started = journal.seed, journal.started_at or started
    elif journal is not None:
        journal.record_seed(seed, started)
    args = pytest_args(options, seed, journal)  # a missing suite package is a usage error before anything runs
    notes: list[str] = [note] if (note := contract_note(adapter)) else []
    try:
        requirements = load_requirements()
    except SpecNotFoundError as exc:
        requirements = {}
        notes.append(f"{exc}; levels are taken from test names")
    expected = load_expectations(options.expectations, set(requirements) or None) if options.expectations else []
    deviations = expected + known_upstream()
    if journal is not None and journal.resumed:
        crash = journal.crashes[-1]
        notes.append(
            f"{crash_count(len(journal.crashes))}: {', '.join(c.cause() for c in journal.crashes)}; the test each "
            f"ran is ERROR, the others ran on in a new process; {journal.crash_log.name} beside the reports holds the "
            "stacks Python's faulthandler wrote"
        )
        print(f"kconform: resumed after {crash.cause()}, seed {seed}", file=out, flush=True)
    else:
        print(
            f"kconform: adapter {adapter.name!r} ({options.adapter}), level {options.level}, {broker_used(options)}, "
            f"profile {options.profile}, seed {seed} (replay this run with --seed {seed})",
            file=out,
            flush=True,
        )
    collector = Collector(options, seed, requirements, deviations, out, adapter.capabilities, journal, expected)
    log = io.StringIO()
    with _environment(BROKER_ENV, options.broker), contextlib.redirect_stdout(log):
        code = pytest.main(args, plugins=[collector])
    if collector.usage_error is not None:
        raise ValueError(collector.usage_error)
    if code in (pytest.ExitCode.INTERNAL_ERROR, pytest.ExitCode.USAGE_ERROR):
        raise ValueError(f"pytest could not run the suite (exit {int(code)}):\n{log.getvalue()}")
    empty = [
        f"level {level}: the suite {options.suite!r} has no {level} tests yet"
        for level in SUITE_LEVELS
        if options.level in ("all", level)
        and not collector.per_level[level]
        and not (level == PIPELINE_MARK and unavailable)
    ]
    interrupted = code == pytest.ExitCode.INTERRUPTED
    waits = ""  # the note on tests left out because they wait out a default, when there are any
    if collector.waits_left_out:
        waits = (
            f"{len(collector.waits_left_out)} test(s) left out at profile {options.profile}: each waits out a "
            f"component's own default, which shorter runs judge by the effective value it reports "
            f"({', '.join(sorted(collector.waits_left_out))}); run them with --profile {WAITS_DEFAULT_PROFILE}, or "
            f"one alone with --only and its name"
        )
    if not collector.results and not interrupted:
        why = empty or [f"no test at level {options.level} matches --only {options.only!r}"]
        why += [waits] if waits else []
        raise ValueError("; ".join(why) + "; nothing was checked")
    notes += [f"{note}; it was not checked" for note in empty]
    if collector.other_engine:
        notes.append(
            f"{collector.other_engine} tests left out: they run on an engine or client (Spark queries, Flink jobs, "
            f"the confluent-kafka consumer) that adapter {adapter.name!r} does not run on, so they say nothing of it"
        )
    if waits:
        notes.append(waits)
    if interrupted:
        notes.append(interruption(len(collector.results), collector.selected))
    undeclared = [
        f"level {level}: adapter {adapter.name!r} declares no {level} capability, so none of its tests can run"
        for level in (SUITE_LEVELS if options.level == "all" else (options.level,))
        if not set(adapter.capabilities) & LEVEL_CAPABILITIES[level]
    ]
    # At level all, one level the adapter does not declare is a note (a protocol-only adapter is
    # checked in full at its level); a selected level with nothing to check is an ERROR.
    partly = options.level == "all" and len(undeclared) == 1
    notes += undeclared if partly else []
    errors = [] if partly else undeclared
    # A protocol-only adapter asks nothing of the pipeline level, installed or not.
    pipeline_asked = bool(set(adapter.capabilities) & LEVEL_CAPABILITIES["pipeline"])
    errors += [f"level pipeline: {unavailable}"] if unavailable and pipeline_asked else []
    if not errors and not interrupted and all(t.status is Status.SKIP for t in collector.results):
        errors.append(f"all {len(collector.results)} selected tests were skipped, so nothing was checked")
    rows, untested = aggregate(collector.results, requirements)
    broker = collector.config.stash.get(BROKER_CAPABILITIES, [])
    probed = {c.requirement_id for c in broker}
    untested = [i for i in untested if i not in probed]  # the broker table shows what the probe measured
    judged = {i: judged_at(tests) for i, tests in tests_by_id().items()} if requirements else {}
    if options.only is None:
        used = {id(t.deviation) for t in collector.results}
        met = {k.removeprefix(TOLERATED) for t in collector.results for k in t.metrics if k.startswith(TOLERATED)}
        notes += [
            f"expectation {d.requirement} ({d.link}) matched no result"
            for d in expected
            if d.kind is None and id(d) not in used
        ]
        notes += [
            f"expectation {d.requirement} {d.kind} ({d.link}) met no such violation (a drawn workload may not have "
            "reached it)"
            for d in expected
            if d.kind is not None and f"{d.requirement} {d.kind}" not in met
        ]
    declared = {key: getattr(adapter, key, "-") for key in ("restore_variant", "naming", "discovery_of_zero")}
    variants = {key: str(getattr(value, "value", value)) for key, value in declared.items()}
    return RunResult(
        options=options,
        seed=seed,
        adapter_name=adapter.name,
        capabilities=sorted(adapter.capabilities),
        variants=variants,
        tests=collector.results,
        requirements=rows,
        untested=untested if options.only is None else [],
        notes=notes,
        started=started,
        finished=time.time(),
        pytest_log=log.getvalue(),
        interrupted=interrupted,
        broker=broker,
        errors=errors,
        broker_version=collector.config.stash.get(BROKER_VERSION, None),
        broker_facts=collector.config.stash.get(BROKER_FACTS, None),
        selected=collector.selected,
        unchecked=unchecked_safety(untested, requirements, judged, options.level) if options.only is None else {},
        crashes=journal.crash_records() if journal is not None else [],
        collected=collector.collected,
        fixtures=collector.fixtures,
    )
