"""``kconform run``: the conformance suite as a CI gate, with a verdict per requirement.

pytest runs in-process on the suite package; a collector plugin selects tests by level and
``--only``, prints one progress line per test, and keeps what a report needs: the requirement ids
of each test, its outcome, and for a failure the shrunk counterexample and ``@reproduce_failure``
blob Hypothesis attached to the exception, so that every failure comes with a one-line replay.
pytest's own terminal output goes to ``DIR/pytest.log`` (or is shown only if pytest itself fails).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import random
import re
import shlex
import shutil
import signal
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace
from enum import StrEnum
from importlib.util import find_spec
from pathlib import Path
from types import FrameType
from typing import IO, Any

import pytest
from hypothesis.errors import FailedHealthCheck

from ..adapter import (
    CAPABILITIES,
    DEFAULT_MASTER,
    PIPELINE_CAPABILITIES,
    Adapter,
    AdapterHung,
    contract_note,
    forget_hangs,
    load_adapter,
    record_hang,
    search_working_directory,
)
from ..brokers import (
    BOOTSTRAP_ENV,
    BROKER_KINDS,
    DEFAULT_BROKER,
    fallback_warning,
    kafka_unavailable,
)
from ..brokers.base import EXTERNAL_TIMEOUT_ENV, START_TIMEOUT_S
from ..brokers.capability import Capability
from ..checks.checkers import Picture, Violation, ViolationError
from ..errors import CannotCheck
from ..extras import PIPELINE_FIX, needs_pipeline_extra, pipeline_missing
from ..jvm import JvmArtifactsMissing
from ..redaction import redacting
from ..spec_tools.requirements import (
    LEVELS,
    Requirement,
    SpecNotFoundError,
    ids_in_test_name,
    ids_in_text,
    level_of_test_name,
    load_requirements,
)
from .expectations import Deviation, find_deviation, load_expectations
from .profiles import PROFILES, hypothesis_profile, profile_from_env
from .pytest_plugin import (
    BROKER_CAPABILITIES,
    BROKER_VERSION,
    SUITE_PACKAGE,
    UNVERIFIED_PROPERTY,
    CouldNotCheck,
)

DEFAULT_ADAPTER = "kconform.conformance.spark.pipeline:REFERENCE"
DEFAULT_LEVEL = "all"
"""What ``make conformance`` runs: both levels of the reference implementation."""
PROTOCOL_DEFAULT_ADAPTER = "kconform.reference_impl.adapter:ADAPTER"
"""Without ``--adapter``, ``--level protocol`` judges the pure reference implementation: no PySpark, so a core
install (no pipeline extra) gets a verdict."""
DEFAULT_SUITE = SUITE_PACKAGE
DEFAULT_TIMEOUT = 120.0
SUITE_LEVELS = ("protocol", "pipeline")
LEVEL_CAPABILITIES = {
    "protocol": frozenset(CAPABILITIES) - frozenset(PIPELINE_CAPABILITIES),
    "pipeline": frozenset(PIPELINE_CAPABILITIES),
}
PIPELINE_MARK = "pipeline"
BROKER_ENV = "KCONFORM_BROKER"
USAGE_EXIT = 2
ERROR_EXIT = 3
"""Could not check: distinct from a violation (1) and from a usage error (2)."""
BLOB = re.compile(r"@reproduce_failure\([^)]*\)")
SKIP_IDS = re.compile(r"(^|; )[A-Z]+-\d{3}(?:, [A-Z]+-\d{3})*: ")
"""The ids a skip message starts with (the plugin names them); the rest is the cause, shared by many tests."""
VIOLATION_LINE = re.compile(r"^\s*(?P<id>[A-Z]+-\d{3}) (?P<kind>[a-z][a-z0-9-]*): (?P<evidence>.+)$", re.MULTILINE)
"""A violation as ``explain`` prints it, for failures that did not raise ``ViolationError``."""
UNSTRUCTURED = "failure"
"""The kind of a failure that names no violation (a plain ``assert``, a timeout): its message is the evidence."""
TEST_CASE_DUMP = re.compile(r"^(?:(?:Falsifying|Failing)(?: explicit)? (?:example|test case)|while generating)", re.M)
"""Where Hypothesis's notes start: the test case, kept in the counterexample, never in a one-line message."""
ADDRESS = re.compile(r" at 0x[0-9a-f]+")
"""An object's address (``<Guarded object at 0x7f...>``): it differs every run, so two skips for one cause would not."""
HEARTBEAT_S = 30.0
"""How often a running test is named with its elapsed time, so that a long test does not look like a hung run."""
HEARTBEAT_ENV = "KCONFORM_HEARTBEAT_S"
"""Overrides ``HEARTBEAT_S`` (tests show the heartbeat without waiting 30 s)."""


class Status(StrEnum):
    PASS = "PASS"
    PARTIAL = "PARTIAL"
    """Passed what it could check; part of a requirement could not be verified here (``partial``)."""
    FAIL = "FAIL"
    ERROR = "ERROR"
    """Could not be checked at all (the broker is unreachable or unconfigured): neither a pass nor a violation."""
    SKIP = "SKIP"
    XFAIL = "XFAIL"
    XPASS = "XPASS"


class TestTimeoutError(BaseException):
    """Raised by the per-test alarm.

    A ``BaseException``, not pytest-timeout's ``Failed``: Hypothesis catches ``Failed`` as a
    failing example and re-runs it to shrink, which would hang again with no alarm left.
    """


class AdapterTimeoutError(TestTimeoutError):
    """The alarm went off inside an adapter call: the adapter hangs, so the test could not check (ERROR),
    and the method is not called again in the run (``AdapterHung``)."""


@dataclass(frozen=True)
class RunOptions:
    adapter: str
    level: str = DEFAULT_LEVEL
    profile: str = "default"
    report: Path | None = None
    expectations: Path | None = None
    only: str | None = None
    seed: int | None = None
    broker: str = DEFAULT_BROKER
    timeout: float = DEFAULT_TIMEOUT
    strict: bool = False
    suite: str = DEFAULT_SUITE
    spark_master: str = DEFAULT_MASTER
    examples: Path | None = None
    """Hypothesis's example database; ``None``: the adapter's own under ``.hypothesis/adapters/``."""
    allow_fallback: bool = False
    """``--allow-fallback``: run on Tansu when ``--broker kafka`` cannot start here (else its tests are ERROR)."""
    fallback_cause: str | None = None
    """Set when the fallback happened (``broker`` is then ``tansu``): why Kafka could not start."""


@dataclass(frozen=True)
class Counterexample:
    """One distinct failure as Hypothesis printed it (a run may find several)."""

    error: str
    example: str
    blob: str | None


@dataclass
class TestResult:
    nodeid: str
    name: str
    ids: list[str]
    """The requirements the test checks."""
    level: str
    """The strongest level among ``ids``: a test that checks a MUST fails the run even if a SHOULD failed first."""
    pipeline: bool
    status: Status
    duration: float
    message: str = ""
    counterexamples: list[Counterexample] = field(default_factory=list)
    replay: str | None = None
    deviation: Deviation | None = None
    longrepr: str = ""
    violated: list[str] = field(default_factory=list)
    """For a failure, the ids its message names (a checker's violation does), else all of ``ids``."""
    metrics: dict[str, object] = field(default_factory=dict)
    """What the test recorded with ``record_property`` (e.g. ASSIGN-005's global spread)."""
    unverified: dict[str, str] = field(default_factory=dict)
    """Requirement id -> why the test could not verify it in full (declared with the ``partial`` fixture)."""
    violations: list[Violation] = field(default_factory=list)
    """A failure's violations: those its ``ViolationError`` carried, else read from its message."""
    pictures: list[Picture] = field(default_factory=list)
    """The data of the failure's figures (``kconform.conformance.checks.evidence``), drawn by the HTML report."""
    verified_before_failing: frozenset[str] = frozenset()
    """Of a failure's ids it does not violate, those it checked in full anyway (``fail_on(verified=...)``)."""

    def fails(self, strict: bool) -> bool:
        """MUST failures fail the run, SHOULD failures and PARTIAL only when strict, MAY never; an XPASS always does.

        PARTIAL alone keeps exit 0 so that a user on a limited broker still gets the safety verdict. It
        counts wherever it shows: the ids a failure (even a MAY or an expected one) never got to verify too.
        """
        if self.status is Status.XPASS:
            return True
        if strict and any(self.status_for(i) is Status.PARTIAL for i in self.ids):
            return True
        return self.status is Status.FAIL and (self.level == "MUST" or (strict and self.level == "SHOULD"))

    def status_for(self, req_id: str) -> Status:
        """The test's outcome for one of its ids: a partial test passed the ids it did verify.

        A failed test fails only the ids its violation names (``violated``). Its other ids are PARTIAL,
        not verified: the test stopped at the first violation, so it never showed that they hold (no
        PASS), nor that they are broken (no FAIL); the id's other tests decide the rest of its verdict.
        An id the test says it checked in full before failing passes.
        """
        if self.status is Status.PARTIAL and req_id not in self.unverified:
            return Status.PASS
        if self.status in (Status.FAIL, Status.XFAIL) and req_id not in self.violated:
            return Status.PASS if req_id in self.verified_before_failing else Status.PARTIAL
        return self.status

    def unverified_reason(self, req_id: str) -> str:
        """Why ``status_for(req_id)`` is PARTIAL."""
        if self.status in (Status.FAIL, Status.XFAIL):
            return f"{self.name} stopped at its violation of {', '.join(self.violated)} before verifying it"
        return self.unverified[req_id]


@dataclass
class RequirementResult:
    id: str
    level: str
    title: str
    link: str
    status: Status
    tests: list[TestResult]
    reason: str = ""
    category: str = ""
    """``safety`` or ``fidelity``, as the spec tags the id; empty for an id the spec does not know."""


@dataclass
class RunResult:
    options: RunOptions
    seed: int
    adapter_name: str
    capabilities: list[str]
    variants: dict[str, str]
    tests: list[TestResult]
    requirements: list[RequirementResult]
    untested: list[str]
    notes: list[str]
    started: float
    finished: float
    pytest_log: str
    interrupted: bool
    """pytest stopped early (Ctrl-C, ``pytest.exit``): the results are incomplete and the run fails."""
    broker: list[Capability] = field(default_factory=list)
    """What the run's broker can show, as the probe measured it (pipeline level only)."""
    errors: list[str] = field(default_factory=list)
    """Why the run as a whole checked nothing (every test skipped, a level the adapter declares nothing of)."""
    broker_version: str | None = None
    """The product and version of the broker the pipeline level ran on (``None``: no broker was started)."""
    selected: int = 0
    """How many tests the run selected: an interrupted one finished fewer."""

    @property
    def interruption(self) -> str:
        """Why no class verdict can hold, if the run stopped early: the tests it never ran proved nothing."""
        return interruption(len(self.tests), self.selected) if self.interrupted else ""

    @property
    def failing(self) -> list[TestResult]:
        return [t for t in self.tests if t.fails(self.options.strict)]

    @property
    def could_not_check(self) -> list[str]:
        """Every cause of an ERROR, once: those of the tests (e.g. the broker), then the run's own."""
        return list(dict.fromkeys([t.message for t in self.tests if t.status is Status.ERROR] + self.errors))

    @property
    def exit_code(self) -> int:
        """1 for a result that fails the run (a violation is news even where part could not be checked),
        else 3 if anything could not be checked, else 0."""
        if self.failing or self.interrupted:
            return 1
        return ERROR_EXIT if self.could_not_check else 0


class AdapterLoadError(Exception):
    """The adapter exists but could not be loaded: its module or factory raised, or a module it imports is
    missing. Nothing could be checked (exit 3); a spec naming nothing loadable is a usage error (exit 2)."""


def interruption(done: int, selected: int) -> str:
    return f"the run was interrupted after {done} of {selected} tests"


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
                f"(or a protocol-level adapter, e.g. --adapter {PROTOCOL_DEFAULT_ADAPTER})"
            ) from exc
        if isinstance(cause, ImportError) and not (named and f"{module_name}.".startswith(f"{cause.name}.")):
            raise AdapterLoadError(str(exc)) from exc
        raise
    except Exception as exc:  # the adapter's own code ran (import, factory) and raised: report it, no traceback
        raise AdapterLoadError(f"--adapter {spec!r} failed to load: {exc!r}") from exc


def kconform_program() -> list[str]:
    """How to call this kconform from a shell, so a printed replay line works as printed.

    ``kconform`` when the one on ``PATH`` is this interpreter's, else that script by its path (a
    venv that is not activated), else this interpreter with ``-m kconform.conformance.cli``.
    """
    script = Path(sys.executable).parent / "kconform"
    on_path = shutil.which("kconform")
    if on_path and script.exists() and Path(on_path).resolve() == script.resolve():
        return ["kconform"]
    return [str(script)] if script.exists() else [sys.executable, "-m", "kconform.conformance.cli"]


def broker_used(options: RunOptions) -> str:
    """The run's broker as reports name it: the protocol level has none, whatever ``--broker`` says, and a
    fallback names the broker that ran and why."""
    if options.level == "protocol":
        return f"no broker (the protocol level runs in-process; --broker {options.broker} is not used)"
    if options.fallback_cause is not None:
        return f"broker {options.broker} (--allow-fallback: Apache Kafka cannot start here: {options.fallback_cause})"
    return f"broker {options.broker}"


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


def display_name(item_name: str) -> str:
    """Test names as reports show them: without ``test_`` (``required_ASSIGN_001_...``)."""
    return item_name.removeprefix("test_")


def selected_by(only: str, item: pytest.Item) -> bool:
    """``--only`` picks tests by part of their display name or by a requirement id they check."""
    mark = item.get_closest_marker("requirement")
    return only in display_name(item.name) or (mark is not None and only.upper() in mark.args)


def skip_cause(message: str) -> str:
    """A skip's reason without the ids it starts with, each cause once: tests skipped for one cause share it."""
    return "; ".join(dict.fromkeys(SKIP_IDS.sub(r"\1", message).split("; ")))


def without_test_case(message: str) -> str:
    """A failure's or skip's message without the test case Hypothesis appended and without object addresses."""
    return ADDRESS.sub("", TEST_CASE_DUMP.split(message, maxsplit=1)[0]).rstrip()


def last_line(text: str) -> str:
    """The last non-empty line of pytest's report text (the exception), without its ``E`` gutter."""
    lines = [line for line in text.splitlines() if line.strip()]
    return lines[-1].removeprefix("E").strip() if lines else ""


def strongest(levels: Sequence[str]) -> str:
    return min(levels, key=LEVELS.index)


def violation_errors(exc: BaseException) -> list[ViolationError]:
    """The ``ViolationError``s of a failure, one per distinct failure of a group."""
    if isinstance(exc, BaseExceptionGroup):
        return [e for sub in exc.exceptions for e in violation_errors(sub)]
    return [exc] if isinstance(exc, ViolationError) else []


def violations_in_text(text: str, ids: Sequence[str]) -> list[Violation]:
    """The ``ID kind: evidence`` lines of a failure message, else the message as one violation of ``ids``."""
    found = [
        Violation(m["id"], m["kind"], m["evidence"], data={"text": m["evidence"]})
        for m in VIOLATION_LINE.finditer(text)
    ]
    return found or [Violation(", ".join(ids), UNSTRUCTURED, text, data={"text": text})]


def counterexamples(exc: BaseException) -> list[Counterexample]:
    """The notes Hypothesis attached to a failure, one entry per distinct failure of a group."""
    if isinstance(exc, BaseExceptionGroup):
        return [c for sub in exc.exceptions for c in counterexamples(sub)]
    notes: list[str] = getattr(exc, "__notes__", [])
    if not notes:
        return []
    blobs = [m.group(0) for n in notes if (m := BLOB.search(n))]
    example = "\n".join(n.strip("\n") for n in notes if not BLOB.search(n))
    return [Counterexample(f"{type(exc).__name__}: {exc}".strip(), example, blobs[0] if blobs else None)]


def uncaptured(out: IO[str]) -> IO[str]:
    """A stream to ``out``'s file that pytest's capture of file descriptors 1 and 2 during a test does not take
    (a copy of its descriptor, made before pytest starts); ``out`` itself when it has no descriptor."""
    try:
        fd = out.fileno()
    except (OSError, ValueError):  # io.UnsupportedOperation: a StringIO
        return out
    return os.fdopen(os.dup(fd), "w", encoding=getattr(out, "encoding", None))


class Heartbeat:
    """While a test runs, names it with its elapsed time every ``interval`` seconds: on a terminal as one line
    rewritten in place (cleared before the test's result line), else (a CI log) as a line each time."""

    def __init__(self, out: IO[str], interval: float) -> None:
        self.out = uncaptured(out)
        self._owns_out = self.out is not out
        self.interval = interval
        self.in_place = out.isatty()
        self._stopped = threading.Event()
        self._thread: threading.Thread | None = None
        self._shown = 0  # the width of the in-place line now on the terminal, to clear

    def start(self, name: str) -> None:
        self._stopped.clear()  # the previous test's thread has ended: stop() joined it
        self._thread = threading.Thread(
            target=self._beat, args=(name, time.monotonic()), name="kconform-heartbeat", daemon=True
        )  # a daemon: a test stuck for good must not keep the process from exiting
        self._thread.start()

    def stop(self) -> None:
        if self._thread is None:
            return
        self._stopped.set()
        self._thread.join()
        self._thread = None
        if self._shown:
            self.out.write(f"\r{' ' * self._shown}\r")
            self.out.flush()  # before the result line, which goes to the other stream
            self._shown = 0

    def close(self) -> None:
        self.stop()
        if self._owns_out:
            self.out.close()

    def _beat(self, name: str, started: float) -> None:
        while not self._stopped.wait(self.interval):
            line = f"... still running: {name} ({time.monotonic() - started:.0f} s)"
            if self.in_place:
                self.out.write(f"\r{line:<{self._shown}}")
                self._shown = max(self._shown, len(line))
            else:
                self.out.write(line + "\n")
            self.out.flush()


class Collector:
    """The pytest plugin of a run: selection, progress lines and the evidence of each test."""

    def __init__(
        self,
        options: RunOptions,
        seed: int,
        requirements: dict[str, Requirement],
        deviations: Sequence[Deviation],
        out: IO[str],
    ) -> None:
        self.options = options
        self.seed = seed
        self.requirements = requirements
        self.deviations = deviations
        self.out = out
        self.results: list[TestResult] = []
        self.per_level = dict.fromkeys(SUITE_LEVELS, 0)
        self.selected = 0
        self._items: dict[str, pytest.Item] = {}
        self._reports: dict[str, list[pytest.TestReport]] = {}
        self._evidence: dict[str, list[Counterexample]] = {}
        self._raised: dict[str, list[ViolationError]] = {}
        self._not_checked: dict[str, str] = {}
        self._collect_errors: list[TestResult] = []
        self.heartbeat = Heartbeat(out, float(os.environ.get(HEARTBEAT_ENV, HEARTBEAT_S)))

    def pytest_configure(self, config: pytest.Config) -> None:
        self.config = config
        forget_hangs()
        config.addinivalue_line("markers", f"{PIPELINE_MARK}: a pipeline-level test (a real streaming query)")

    def pytest_collection_modifyitems(self, config: pytest.Config, items: list[pytest.Item]) -> None:
        keep, drop = [], []
        for item in items:
            level = PIPELINE_MARK if item.get_closest_marker(PIPELINE_MARK) else "protocol"
            self.per_level[level] += 1
            wanted = self.options.level in ("all", level)
            if wanted and (self.options.only is None or selected_by(self.options.only, item)):
                keep.append(item)
            else:
                drop.append(item)
        if drop:
            config.hook.pytest_deselected(items=drop)
        items[:] = keep
        self.selected = len(keep) + len(self._collect_errors)
        self._items = {item.nodeid: item for item in keep}
        for error in self._collect_errors:
            self._finish(error)

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        """A suite module that does not import is not a smaller suite: its tests checked nothing (ERROR)."""
        if report.failed:
            error = TestResult(report.nodeid, report.nodeid, [], "MUST", False, Status.ERROR, 0.0)
            error.message = f"suite module does not import: {last_line(report.longreprtext)}"
            error.longrepr = report.longreprtext
            self._collect_errors.append(error)

    @pytest.hookimpl(tryfirst=True)
    def pytest_timeout_set_timer(self, item: pytest.Item, settings: Any) -> bool | None:
        """Arm a SIGALRM that raises ``TestTimeoutError`` (pytest-timeout's own timer in other threads)."""
        if threading.current_thread() is not threading.main_thread():
            return None
        timeout = settings.timeout

        def expire(_signum: int, frame: FrameType | None) -> None:
            hang = record_hang(frame, display_name(item.name))
            if hang is None:
                raise TestTimeoutError(
                    f"no result within --timeout {timeout:g}s, with no adapter call under way: the suite or the "
                    "broker is slow (raise --timeout if that is expected)"
                )
            raise AdapterTimeoutError(
                f"{hang.method} did not return within --timeout {timeout:g}s (still running: {hang.running}); "
                "raise --timeout if it is only slow"
            )

        def cancel() -> None:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, signal.SIG_DFL)

        item.cancel_timeout = cancel  # type: ignore[attr-defined]  # pytest-timeout's cancel hook calls it
        signal.signal(signal.SIGALRM, expire)
        signal.setitimer(signal.ITIMER_REAL, timeout)
        return True

    def pytest_runtest_makereport(self, item: pytest.Item, call: pytest.CallInfo[None]) -> None:
        if call.excinfo is not None and call.excinfo.errisinstance((CouldNotCheck, CannotCheck, JvmArtifactsMissing)):
            self._not_checked[item.nodeid] = str(call.excinfo.value)
        elif call.excinfo is not None and call.excinfo.errisinstance((AdapterTimeoutError, AdapterHung)):
            self._not_checked[item.nodeid] = str(call.excinfo.value)  # a hang is no answer, so no violation
        elif call.excinfo is not None and call.excinfo.errisinstance(FailedHealthCheck):
            # Hypothesis could not draw enough inputs: the suite's generator failed, not the adapter.
            first_line = str(call.excinfo.value).strip().splitlines()[0]
            self._not_checked[item.nodeid] = (
                f"kconform's input generator failed ({first_line}): a kconform bug, please report it"
            )
        elif call.excinfo is not None and not call.excinfo.errisinstance(pytest.skip.Exception):
            self._evidence.setdefault(item.nodeid, []).extend(counterexamples(call.excinfo.value))
            self._raised.setdefault(item.nodeid, []).extend(violation_errors(call.excinfo.value))

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        self._reports.setdefault(report.nodeid, []).append(report)

    def pytest_runtest_logstart(self, nodeid: str) -> None:
        self.heartbeat.start(display_name(self._items[nodeid].name))

    def pytest_runtest_logfinish(self, nodeid: str) -> None:
        self.heartbeat.stop()
        self._finish(self._result(self._items[nodeid], self._reports.pop(nodeid, [])))

    def pytest_unconfigure(self) -> None:
        self.heartbeat.close()  # also stops it after a Ctrl-C, which ends the run without the test's logfinish

    def _result(self, item: pytest.Item, reports: list[pytest.TestReport]) -> TestResult:
        name = display_name(item.name)
        evidence = self._evidence.pop(item.nodeid, [])
        raised = self._raised.pop(item.nodeid, [])
        not_checked = self._not_checked.pop(item.nodeid, None)
        mark = item.get_closest_marker("requirement")
        ids = list(mark.args) if mark and mark.args else ids_in_test_name(getattr(item, "originalname", item.name))
        known = [self.requirements[i].level for i in ids if i in self.requirements]
        level = strongest(known) if known else level_of_test_name(item.name) or "MUST"
        pipeline = item.get_closest_marker(PIPELINE_MARK) is not None
        duration = sum(r.duration for r in reports)
        failed = [r for r in reports if r.failed]
        skipped = [r for r in reports if r.skipped]
        result = TestResult(item.nodeid, name, ids, level, pipeline, Status.PASS, duration)
        properties = dict.fromkeys((k, v) for r in reports for k, v in r.user_properties)  # phases repeat them
        result.metrics = {k: v for k, v in properties if not k.startswith(UNVERIFIED_PROPERTY)}
        for k, v in properties:
            if k.startswith(UNVERIFIED_PROPERTY):
                req_id = k.removeprefix(UNVERIFIED_PROPERTY)
                result.unverified[req_id] = "; ".join(filter(None, [result.unverified.get(req_id), str(v)]))
        if failed and not_checked is not None:
            result.status = Status.ERROR
            first, _, rest = not_checked.partition("\n")  # e.g. a Kafka node's log tail: not for a summary line
            result.message = first + (" (the rest is in --report's pytest.log)" if rest.strip() else "")
            result.longrepr = "\n\n".join(r.longreprtext for r in failed)
        elif failed:
            result.status = Status.FAIL
            result.longrepr = "\n\n".join(r.longreprtext for r in failed)
            crash = getattr(failed[0].longrepr, "reprcrash", None)
            where = "" if failed[0].when == "call" else f"error in {failed[0].when}: "
            result.message = where + without_test_case(crash.message if crash else last_line(failed[0].longreprtext))
            result.counterexamples = evidence
            told = "\n".join([c.error for c in result.counterexamples] or [result.message])
            result.violations = [v for e in raised for v in e.violations]
            named = ids_in_text(told) | {v.requirement for v in result.violations}  # the message shows only the first
            result.violated = [i for i in ids if i in named] or ids
            result.violations = result.violations or violations_in_text(told, result.violated)
            result.pictures = [p for e in raised for p in e.pictures]
            if raised:
                result.verified_before_failing = frozenset.intersection(*(e.verified for e in raised))
            result.replay = self.replay_command(name, pipeline)
        elif skipped:
            result.status = Status.SKIP
            longrepr = skipped[0].longrepr
            result.message = longrepr[2] if isinstance(longrepr, tuple) else str(longrepr)
            result.message = without_test_case(result.message.removeprefix("Skipped: "))
        elif result.unverified:
            result.status = Status.PARTIAL
            result.message = "; ".join(f"{i} not verified: {why}" for i, why in result.unverified.items())
        # Only what the test verified can show that a listed deviation is gone (XPASS).
        verified = [i for i in ids if i not in result.unverified]
        deviation = find_deviation(self.deviations, name, result.violated or verified)
        if deviation is not None and result.status in (Status.PASS, Status.PARTIAL, Status.FAIL):
            result.deviation = deviation
            result.status = Status.XFAIL if result.status is Status.FAIL else Status.XPASS
        return result

    def replay_command(self, name: str, pipeline: bool) -> str:
        o = self.options
        level = PIPELINE_MARK if pipeline else "protocol"
        args = [*kconform_program(), "run", "--adapter", o.adapter, "--level", level, "--only", name]
        args += ["--seed", str(self.seed)]
        defaults = RunOptions(adapter=o.adapter)
        for flag, value, default in (
            ("--profile", o.profile, defaults.profile),
            ("--broker", o.broker, defaults.broker),
            ("--timeout", o.timeout, defaults.timeout),
            ("--suite", o.suite, defaults.suite),
            ("--spark-master", o.spark_master, defaults.spark_master),
        ):
            if value != default:
                args += [flag, f"{value:g}" if isinstance(value, float) else str(value)]
        return shlex.join(args)

    def _finish(self, result: TestResult) -> None:
        seen = [t.message for t in self.results if t.status is Status.ERROR]
        self.results.append(result)
        shown = f"{result.status} ({result.duration:.1f}s)"
        if result.status is Status.ERROR:  # one cause (a broker down) errs many tests: say it once
            shown = f"ERROR (could not check: {'as above' if result.message in seen else result.message})"
        elif result.status is Status.SKIP:
            cause = skip_cause(result.message)
            same = [
                n
                for n, t in enumerate(self.results[:-1], 1)
                if t.status is Status.SKIP and skip_cause(t.message) == cause
            ]
            shown = f"SKIP (same reason as [{same[0]}])" if same else f"SKIP ({result.message})"
        elif result.status is Status.PARTIAL:
            shown = f"PARTIAL ({result.duration:.1f}s; {result.message})"
        elif result.deviation is not None:
            shown = f"{result.status} (expected: {result.deviation.link}) ({result.duration:.1f}s)"
        width = len(str(self.selected))
        print(f"[{len(self.results):>{width}}/{self.selected}] {result.name} ... {shown}", file=self.out, flush=True)


def aggregate(
    tests: Sequence[TestResult], requirements: dict[str, Requirement]
) -> tuple[list[RequirementResult], list[str]]:
    """Per-requirement verdicts (in spec order), and the spec ids no selected test checked."""
    by_id: dict[str, list[TestResult]] = {}
    for t in tests:
        for req_id in t.ids:
            by_id.setdefault(req_id, []).append(t)
    order = [*requirements, *sorted(set(by_id) - set(requirements))]
    rows = []
    for req_id in order:
        if req_id not in by_id:
            continue
        ts = by_id[req_id]
        req = requirements.get(req_id)
        status, reason = _verdict(req_id, ts)
        level = req.level if req else strongest([t.level for t in ts])
        title = req.title if req else "(not in the spec)"
        link, category = (req.link, req.category) if req else ("", "")
        rows.append(RequirementResult(req_id, level, title, link, status, ts, reason, category))
    return rows, [r for r in requirements if r not in by_id]


def _verdict(req_id: str, tests: Sequence[TestResult]) -> tuple[Status, str]:
    """Worst outcome wins; a requirement with a test that could not check is an ERROR, one with any
    skipped test a skip, and one that a test could verify only in part is PARTIAL: never a pass."""
    statuses = [t.status_for(req_id) for t in tests]
    for status in (Status.FAIL, Status.XPASS, Status.XFAIL):
        if status in statuses:
            deviation = next((t.deviation for t in tests if t.status is status and t.deviation), None)
            return status, f"{deviation.reason} ({deviation.link})" if deviation else ""
    passed = statuses.count(Status.PASS)
    if Status.ERROR in statuses:
        causes = "; ".join(sorted({t.message for t in tests if t.status is Status.ERROR}))
        return Status.ERROR, causes + (f" ({passed} of {len(tests)} tests passed)" if passed else "")
    partial = sorted({t.unverified_reason(req_id) for t in tests if t.status_for(req_id) is Status.PARTIAL})
    if Status.SKIP in statuses:
        skipped_for = sorted({skip_cause(t.message) for t in tests if t.status is Status.SKIP})  # the row names its id
        reasons = skipped_for + [f"partial: {p}" for p in partial]
        return Status.SKIP, "; ".join(reasons) + (f" ({passed} of {len(tests)} tests passed)" if passed else "")
    if partial:
        fully = f" ({passed} of {len(tests)} tests verified it fully)" if passed else ""
        return Status.PARTIAL, "; ".join(partial) + fully
    return Status.PASS, ""


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


def pytest_args(options: RunOptions, seed: int) -> list[str]:
    """The pytest command line of a run: an empty ini file, so the suite runs the same from any directory."""
    args = [
        "--pyargs",
        options.suite,
        f"--rootdir={suite_root(options.suite)}",
        f"--config-file={os.devnull}",
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


def run(options: RunOptions, out: IO[str] = sys.stdout) -> RunResult:
    """Run the suite; ``ValueError`` for anything that makes the run meaningless (a usage error),
    ``AdapterLoadError`` for an adapter that fails to load, ``CannotCheck`` for a level not installed."""
    out = redacting(out)
    unavailable = pipeline_missing() if options.level != "protocol" else None
    if unavailable is not None and options.level == "pipeline":
        raise CannotCheck(unavailable)
    adapter = load(options.adapter)
    options = with_fallback(options, sys.stderr)
    seed = options.seed if options.seed is not None else random.SystemRandom().randrange(2**32)
    args = pytest_args(options, seed)  # a missing suite package is a usage error before anything runs
    notes: list[str] = [note] if (note := contract_note(adapter)) else []
    try:
        requirements = load_requirements()
    except SpecNotFoundError as exc:
        requirements = {}
        notes.append(f"{exc}; levels are taken from test names")
    deviations = load_expectations(options.expectations, set(requirements) or None) if options.expectations else []
    print(
        f"kconform: adapter {adapter.name!r} ({options.adapter}), level {options.level}, {broker_used(options)}, "
        f"profile {options.profile}, seed {seed} (replay this run with --seed {seed})",
        file=out,
        flush=True,
    )
    collector = Collector(options, seed, requirements, deviations, out)
    log = io.StringIO()
    started = time.time()
    with _environment(BROKER_ENV, options.broker), contextlib.redirect_stdout(log):
        code = pytest.main(args, plugins=[collector])
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
    if not collector.results and not interrupted:
        why = empty or [f"no test at level {options.level} matches --only {options.only!r}"]
        raise ValueError("; ".join(why) + "; nothing was checked")
    notes += [f"{note}; it was not checked" for note in empty]
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
    if options.only is None:
        used = {id(t.deviation) for t in collector.results}
        notes += [f"expectation {d.requirement} ({d.link}) matched no result" for d in deviations if id(d) not in used]
    declared = {key: getattr(adapter, key, "-") for key in ("restore_variant", "naming", "discovery_of_zero")}
    variants = {key: str(getattr(value, "value", value)) for key, value in declared.items()}
    return RunResult(
        options,
        seed,
        adapter.name,
        sorted(adapter.capabilities),
        variants,
        collector.results,
        rows,
        untested if options.only is None else [],
        notes,
        started,
        time.time(),
        log.getvalue(),
        interrupted,
        broker,
        errors,
        collector.config.stash.get(BROKER_VERSION, None),
        collector.selected,
    )


def default_adapter(level: str) -> str:
    """The adapter ``kconform run --level LEVEL`` judges without ``--adapter``."""
    return PROTOCOL_DEFAULT_ADAPTER if level == "protocol" else DEFAULT_ADAPTER


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
     its jars: `kconform setup`, or --broker tansu, or --allow-fallback), the adapter failed to load, an
     adapter method hung past --timeout (not called again in the run: the other tests that need it
     are ERROR at once), an adapter member's signature does not fit the contract, read_stream's frame
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
        help=f"the adapter under test, as module:attr (default: the reference implementation; {DEFAULT_ADAPTER} "
        f"at levels all and pipeline, which need the pipeline extra, {PROTOCOL_DEFAULT_ADAPTER} at level protocol, "
        "which a core install runs)",
    )
    parser.add_argument(
        "--level",
        choices=["protocol", "pipeline", "all"],
        default=DEFAULT_LEVEL,
        help="protocol: the in-process checks; pipeline: Spark streaming queries on a broker; all: both "
        "(default %(default)s)",
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
        help=f"the pipeline level's broker (default %(default)s; the suite reads ${BROKER_ENV}); external reads "
        f"${BOOTSTRAP_ENV} and waits ${EXTERNAL_TIMEOUT_ENV} seconds (default {START_TIMEOUT_S:g}) for an answer",
    )
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
        help="per-test seconds (default %(default)g); an adapter method still running then is ERROR and is not "
        "called again in the run; a test slow elsewhere (the suite, the broker) fails",
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
    from . import report  # here, not at the top: report imports this module's result types

    parser = build_parser()
    args = parser.parse_args(argv)
    if args.timeout <= 0:
        parser.error("--timeout must be positive")
    search_working_directory()
    try:
        options = RunOptions(
            adapter=args.adapter or default_adapter(args.level),
            level=args.level,
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
        )
        result = run(options)
    except ValueError as exc:
        print(f"kconform run: error: {exc}", file=sys.stderr)
        return USAGE_EXIT
    except (AdapterLoadError, CannotCheck) as exc:
        print(f"kconform run: could not check (ERROR): {exc}", file=sys.stderr)
        return ERROR_EXIT
    if options.report is not None:
        report.write_reports(result, options.report)
    print(report.render_text(result, verbose=args.verbose))
    return result.exit_code
