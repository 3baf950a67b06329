"""The pytest plugin of a ``kconform run``: it selects tests by level and ``--only``, prints one progress line per
test, and keeps what a report needs.

For each test: the requirement ids it checks, its outcome, and for a failure the shrunk counterexample and
``@reproduce_failure`` blob Hypothesis attached to the exception, so that every failure comes with a one-line
replay. A per-test alarm tells an adapter that hangs (ERROR) from a slow suite (a failure).
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import signal
import sys
import threading
import time
from collections.abc import Collection, Iterator, Mapping, Sequence
from pathlib import Path
from types import FrameType
from typing import IO, Any

import hypothesis.errors
import pytest
from hypothesis.errors import FailedHealthCheck, Flaky

from .. import progress
from ..adapter.guard import AdapterHung, Hang, forget_hangs, record_hang
from ..adapter.interface import ENGINE_CAPABILITIES, ENGINE_SPECIFIC
from ..adapters.flink_kafka import ADAPTER_SPEC as FLINK_ADAPTER
from ..adapters.flink_kafka import FLINK_CONNECTOR_ENV
from ..brokers.release_option import KAFKA_KINDS
from ..brokers.versions import DEFAULT_KAFKA_VERSION, KAFKA_VERSION_ENV
from ..checks.checkers import Violation, ViolationError
from ..checks.liveness_checkers import check_call_returned, linked_errors
from ..errors import CannotCheck
from ..jvm import SPARK_KAFKA, JvmArtifactsMissing
from ..jvm.spark_at_release import SPARK_VERSION_ENV, connector_module
from ..spec_tools.requirements import ID_IN_CODE, Requirement, ids_in_test_name, level_of_test_name
from .expectations import Deviation, excusing_deviation, find_deviation, unmatched_tests
from .journal import Journal
from .options import RunOptions
from .pytest_plugin import (
    BROKER_ANSWERS,
    KIND_DEVIATIONS,
    NOT_CHECKED_PROPERTY,
    REQUIREMENT_MARK,
    TOLERATED_PROPERTY,
    UNVERIFIED_PROPERTY,
    CouldNotCheck,
    display_name,
)
from .results import (
    ADDRESS,
    UNSTRUCTURED,
    Counterexample,
    FixtureStart,
    Status,
    TestResult,
    skip_cause,
    strongest,
)
from .supervisor import DIED

SUITE_LEVELS = ("protocol", "pipeline")
PIPELINE_MARK = "pipeline"
"""The marker of a pipeline-level test; a test without it is protocol level."""
WAITS_DEFAULT_MARK = "waits_default"
"""The marker of a test that waits out a component's own default (Flink's five-minute discovery interval): it runs at
``--profile`` ``WAITS_DEFAULT_PROFILE``, or when ``--only`` names it, and is left out of a shorter run, which judges
the effective value the component reports instead (issue 42)."""
WAITS_DEFAULT_PROFILE = "thorough"


def waits_left_out(item: pytest.Item, profile: str, only: str | None) -> bool:
    """Whether ``item`` waits out a default (``WAITS_DEFAULT_MARK``) that this run does not wait for: a profile other
    than ``WAITS_DEFAULT_PROFILE``, and ``--only`` not part of its name (an id or family it checks is not enough)."""
    if item.get_closest_marker(WAITS_DEFAULT_MARK) is None or profile == WAITS_DEFAULT_PROFILE:
        return False
    return only is None or only not in display_name(item.name)


BLOB = re.compile(r"@reproduce_failure\([^)]*\)")
TEST_CASE_DUMP = re.compile(r"^(?:(?:Falsifying|Failing)(?: explicit)? (?:example|test case)|while generating)", re.M)
"""Where Hypothesis's notes start: the test case, kept in the counterexample, never in a one-line message."""
HEARTBEAT_S = 30.0
"""How often a running test is named with its elapsed time, so that a long test does not look like a hung run."""
HEARTBEAT_ENV = "KCONFORM_HEARTBEAT_S"
"""Overrides ``HEARTBEAT_S`` (tests show the heartbeat without waiting 30 s)."""


class TestTimeoutError(BaseException):
    """Raised by the per-test alarm: the test could not check (ERROR), whether an adapter call or the suite hung.

    A ``BaseException``, not pytest-timeout's ``Failed``: Hypothesis catches ``Failed`` as a
    failing example and re-runs it to shrink, which would hang again with no alarm left.
    """


class AdapterTimeoutError(TestTimeoutError):
    """The alarm went off inside an adapter call: the adapter hangs, and the method is not called again in the run
    (``AdapterHung``). A liveness violation (LIVE-001 ``hang``), unless the broker no longer answers (ERROR)."""

    def __init__(self, message: str, hang: Hang, timeout_s: float) -> None:
        super().__init__(message)
        self.hang = hang
        self.timeout_s = timeout_s


def interrupting_alarm(error: BaseException) -> BaseException | None:
    """The alarm's (or a hung adapter's) exception if ``error`` is it or was raised while it propagated.

    A framework may replace the alarm with an error of its own: Hypothesis 6.100, interrupted inside a
    draw, raises ``Flaky("Inconsistent data generation!")``. Such an error is no evidence of a violation.
    """
    return next((found for found in linked_errors(error) if isinstance(found, (TestTimeoutError, AdapterHung))), None)


def inconsistent_generation(error: BaseException) -> bool:
    """Whether Hypothesis stopped because an input drew differently when run again: no verdict on the adapter.

    Hypothesis 6.1xx raises ``FlakyStrategyDefinition``; 6.100 a bare ``Flaky`` saying so. A test that failed
    once and then passed (``FlakyFailure``, or 6.100's bare ``Flaky`` saying "unreliable") is another matter:
    that failure was seen, and it is judged as one.
    """
    strategy_flaky = getattr(hypothesis.errors, "FlakyStrategyDefinition", None)
    if strategy_flaky is not None and isinstance(error, strategy_flaky):
        return True
    return type(error) is Flaky and "Inconsistent data generation" in str(error)


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


def replay_args(options: RunOptions, seed: int, name: str, pipeline: bool, environ: Mapping[str, str]) -> list[str]:
    """The command that reruns test ``name`` alone as this run ran it: its seed, every option off its default,
    and the release judged (a run at another Spark release, Flink line or Kafka broker replays there, not at the
    default)."""
    level = PIPELINE_MARK if pipeline else "protocol"
    flink_line = environ.get(FLINK_CONNECTOR_ENV)
    prefix = [f"{FLINK_CONNECTOR_ENV}={flink_line}"] if flink_line and options.adapter != FLINK_ADAPTER else []
    adapter = ["--flink-connector", flink_line] if flink_line and options.adapter == FLINK_ADAPTER else []
    args = [*prefix, *kconform_program(), "run", *(adapter or ["--adapter", options.adapter, "--level", level])]
    args += ["--only", name, "--seed", str(seed)]
    defaults = RunOptions(adapter=options.adapter)
    for flag, value, default in (
        ("--profile", options.profile, defaults.profile),
        ("--broker", options.broker, defaults.broker),
        ("--timeout", options.timeout, defaults.timeout),
        ("--suite", options.suite, defaults.suite),
        ("--spark-master", options.spark_master, defaults.spark_master),
    ):
        if value != default:
            args += [flag, f"{value:g}" if isinstance(value, float) else str(value)]
    if connector_module(environ) != SPARK_KAFKA:
        args += ["--spark", environ[SPARK_VERSION_ENV]]
    kafka = environ.get(KAFKA_VERSION_ENV)
    if pipeline and options.broker in KAFKA_KINDS and kafka and kafka != DEFAULT_KAFKA_VERSION:
        args += ["--kafka-version", kafka]  # the broker release the failure was seen on
    return args


TOLERATED = "tolerated: "
"""The metric a test's count of one tolerated kind of violation is reported under (``tolerated: ID kind``)."""


def selected_by(only: str, item: pytest.Item) -> bool:
    """``--only`` picks tests by part of their display name or by a requirement id they check."""
    mark = item.get_closest_marker("requirement")
    return only in display_name(item.name) or (mark is not None and only.upper() in mark.args)


def without_test_case(message: str) -> str:
    """A failure's or skip's message without the test case Hypothesis appended and without object addresses."""
    return ADDRESS.sub("", TEST_CASE_DUMP.split(message, maxsplit=1)[0]).rstrip()


def last_line(text: str) -> str:
    """The last non-empty line of pytest's report text (the exception), without its ``E`` gutter."""
    lines = [line for line in text.splitlines() if line.strip()]
    return lines[-1].removeprefix("E").strip() if lines else ""


def not_checking(exc: BaseException) -> BaseException | None:
    """The could-not-check error a failure is (``CouldNotCheck``, ``CannotCheck``, missing JVM artifacts), also
    inside an exception group whose every failure is one: Hypothesis wraps a failure its replay did not repeat in
    ``FlakyFailure``, and a harness that failed once is still no evidence against the judged code."""
    if isinstance(exc, (CouldNotCheck, CannotCheck, JvmArtifactsMissing)):
        return exc
    if isinstance(exc, BaseExceptionGroup):
        found = [not_checking(sub) for sub in exc.exceptions]
        return found[0] if found and all(found) else None
    return None


def violation_errors(exc: BaseException) -> list[ViolationError]:
    """The ``ViolationError``s of a failure, one per distinct failure of a group."""
    if isinstance(exc, BaseExceptionGroup):
        return [e for sub in exc.exceptions for e in violation_errors(sub)]
    return [exc] if isinstance(exc, ViolationError) else []


def unstructured_failure(text: str, ids: Sequence[str]) -> list[Violation]:
    """A failure that raised no violation (an adapter's error, a timeout): its message, one violation of ``ids``."""
    return [Violation(", ".join(ids), UNSTRUCTURED, text, data={"text": text})]


def blamed(ids: Sequence[str], named: Sequence[str]) -> list[str]:
    """The ids a failure violates: those its violations name, the test's own first (in its mark's order), then any
    other id a checker reported (a test of DISC-001 that saw a DISC-008 anomaly fails DISC-008 alone); every id of
    the test for a failure that names none (a plain ``assert``, an adapter's exception)."""
    named_ids = list(dict.fromkeys(m.group(0).replace("_", "-") for n in named for m in ID_IN_CODE.finditer(n)))
    return [i for i in ids if i in named_ids] + [i for i in named_ids if i not in ids] or list(ids)


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
        progress.clear()  # the previous test's line is not this one's
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
            doing = progress.now()
            line = f"... still running: {name} ({time.monotonic() - started:.0f} s{'; ' + doing if doing else ''})"
            if self.in_place:
                self.out.write(f"\r{line:<{self._shown}}")
                self._shown = max(self._shown, len(line))
            else:
                self.out.write(line + "\n")
            self.out.flush()


def applies(item: pytest.Item, pipeline: bool, capabilities: frozenset[str]) -> bool:
    """Whether a test can say anything of an adapter declaring ``capabilities``: one that needs an engine or client
    the adapter does not run on (``ENGINE_SPECIFIC``) does not, and an adapter of an engine the suite runs itself
    (a Flink job) is judged at the pipeline level by that engine's scenarios alone. Such a test is left out, not
    skipped: a skip would count its requirements as not fully verified for an adapter it can never apply to."""
    mark = item.get_closest_marker(REQUIREMENT_MARK)
    capability = mark.kwargs.get("capability") if mark else None
    if capability in ENGINE_SPECIFIC:
        return capability in capabilities
    return not (pipeline and capabilities & ENGINE_CAPABILITIES.keys())


class Collector:
    """The pytest plugin of a run: selection, progress lines and the evidence of each test."""

    def __init__(
        self,
        options: RunOptions,
        seed: int,
        requirements: dict[str, Requirement],
        deviations: Sequence[Deviation],
        out: IO[str],
        capabilities: Collection[str] = (),
        journal: Journal | None = None,
        expected: Sequence[Deviation] = (),
    ) -> None:
        self.options = options
        self.expected = expected
        """The user's own deviations (``--expectations``), whose test names must name a test of the suite."""
        self.usage_error: str | None = None
        """Why the run stopped before any test ran (``unmatched_tests``)."""
        self.journal = journal
        """A supervised run's record (``journal``): what earlier processes of the run did, and where to add to it."""
        self.capabilities = frozenset(capabilities)
        self.other_engine = 0
        """Tests left out because they judge through an engine or client the adapter does not run on."""
        self.waits_left_out: list[str] = []
        """Tests left out because they wait out a component's default this run's profile does not wait for."""
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
        self._liveness: dict[str, list[Violation]] = {}
        self._not_checked: dict[str, str] = {}
        self._collect_errors: list[TestResult] = []
        self._started: dict[str, float] = {}
        self._running: str | None = None
        self.collected: float | None = None
        """When collection and selection ended (epoch seconds)."""
        self.fixtures: list[FixtureStart] = list(journal.fixtures) if journal is not None else []
        """Every start of a fixture wider than a test, earlier processes' of a resumed run first; each one's seconds
        without those of the fixtures it started itself (``request.getfixturevalue``), which have their own."""
        self._nested: list[float] = []
        """Per wider fixture being set up, innermost last: the seconds of the fixtures it started so far."""
        self.heartbeat = Heartbeat(out, float(os.environ.get(HEARTBEAT_ENV, HEARTBEAT_S)))

    def pytest_configure(self, config: pytest.Config) -> None:
        self.config = config
        config.stash[KIND_DEVIATIONS] = [d for d in self.deviations if d.kind is not None]
        forget_hangs()
        config.addinivalue_line("markers", f"{PIPELINE_MARK}: a pipeline-level test (a real streaming query)")

    def pytest_collection_modifyitems(self, config: pytest.Config, items: list[pytest.Item]) -> None:
        wrong = unmatched_tests(self.expected, {display_name(item.name) for item in items})
        if wrong:
            self.usage_error = f"--expectations {self.options.expectations}: " + "; ".join(wrong)
            pytest.exit(self.usage_error, returncode=pytest.ExitCode.USAGE_ERROR)
        keep, drop = [], []
        for item in items:
            level = PIPELINE_MARK if item.get_closest_marker(PIPELINE_MARK) else "protocol"
            self.per_level[level] += 1
            wanted = self.options.level in ("all", level)
            if wanted and (self.options.only is None or selected_by(self.options.only, item)):
                if waits_left_out(item, self.options.profile, self.options.only):
                    self.waits_left_out.append(display_name(item.name))
                    drop.append(item)
                elif applies(item, level == PIPELINE_MARK, self.capabilities):
                    keep.append(item)
                else:
                    self.other_engine += 1
                    drop.append(item)
            else:
                drop.append(item)
        if drop:
            config.hook.pytest_deselected(items=drop)
        kept: list[TestResult] = []  # results an earlier process of a resumed run printed and journalled
        new: list[TestResult] = []  # what the deaths of those processes made of the tests they left
        if self.journal is not None:
            seen = self.journal.seen()
            kept, new = self.journal.finished, self.journal.crashed_results()
            for stub, crash in self.journal.deaths():
                self.journal.record_interrupted(crash, stub)
            keep = [item for item in keep if item.nodeid not in seen]
            if self.journal.give_up:
                new += [self._not_run(item) for item in keep]
                keep = []
        items[:] = keep
        self.selected = len(keep) + len(self._collect_errors) + len(kept) + len(new)
        self._items = {item.nodeid: item for item in keep}
        for result in kept:
            self._finish(result, echo=False, journal=False)
        for error in self._collect_errors:  # every process of the run collects them again: printed by the first
            self._finish(error, echo=self.journal is None or not self.journal.resumed, journal=False)
        for result in new:
            self._finish(result, journal=True)

    def pytest_collection_finish(self) -> None:
        self.collected = time.time()

    @pytest.hookimpl(hookwrapper=True)
    def pytest_fixture_setup(self, fixturedef: Any) -> Iterator[None]:
        """Time each start of a module, package or session fixture (a broker, a SparkSession, the Flink harness):
        report.json's ``timings.fixtures``, which ``kconform bench --gate`` reads to say where a run's time goes."""
        if fixturedef.scope == "function":
            yield
            return
        started, began = time.time(), time.perf_counter()
        self._nested.append(0.0)
        try:
            yield
        finally:
            inner = self._nested.pop()
        took = time.perf_counter() - began
        if self._nested:  # started by a wider fixture's own setup (request.getfixturevalue): not its seconds
            self._nested[-1] += took
        start = FixtureStart(fixturedef.argname, fixturedef.scope, took - inner, started, self._running)
        self.fixtures.append(start)
        if self.journal is not None:
            self.journal.record_fixture(start)

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
                    f"no result within --timeout {timeout:g}s, with no adapter call under way: the suite, the broker "
                    "or Spark is slow or stuck, so nothing was judged (raise --timeout if that is expected)"
                )
            raise AdapterTimeoutError(
                f"{hang.method} did not return within --timeout {timeout:g}s (still running: {hang.running}); "
                "raise --timeout if it is only slow",
                hang,
                float(timeout),
            )

        def cancel() -> None:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, signal.SIG_DFL)

        item.cancel_timeout = cancel  # type: ignore[attr-defined]  # pytest-timeout's cancel hook calls it
        signal.signal(signal.SIGALRM, expire)
        signal.setitimer(signal.ITIMER_REAL, timeout)
        return True

    def pytest_runtest_makereport(self, item: pytest.Item, call: pytest.CallInfo[None]) -> None:
        if call.excinfo is not None and (cause := not_checking(call.excinfo.value)) is not None:
            self._not_checked[item.nodeid] = str(cause)
        elif call.excinfo is not None and (alarm := interrupting_alarm(call.excinfo.value)) is not None:
            hung = self._hang_violations(item, alarm)
            if hung:
                self._liveness[item.nodeid] = hung
            else:  # no call of the judged code under way, or a broker that stopped answering: no answer, no verdict
                self._not_checked[item.nodeid] = str(alarm)
        elif call.excinfo is not None and call.excinfo.errisinstance(FailedHealthCheck):
            # Hypothesis could not draw enough inputs: the suite's generator failed, not the adapter.
            first_line = str(call.excinfo.value).strip().splitlines()[0]
            self._not_checked[item.nodeid] = (
                f"kconform's input generator failed ({first_line}): a kconform bug, please report it"
            )
        elif call.excinfo is not None and inconsistent_generation(call.excinfo.value):
            self._not_checked[item.nodeid] = (
                "Hypothesis drew differently when it ran an input again (inconsistent data generation): the suite's "
                "generator, or an adapter whose answers differ run to run, changed what was drawn, so nothing was "
                "judged; replay the run with its --seed, and report it if it recurs"
            )
        elif call.excinfo is not None and not call.excinfo.errisinstance(pytest.skip.Exception):
            self._evidence.setdefault(item.nodeid, []).extend(counterexamples(call.excinfo.value))
            self._raised.setdefault(item.nodeid, []).extend(violation_errors(call.excinfo.value))

    def _hang_violations(self, item: pytest.Item, alarm: BaseException) -> list[Violation]:
        """LIVE-001 for an adapter call still running at ``--timeout``: at the pipeline level only if the broker still
        answers (a stopped broker hangs a correct connector too); none for a hang outside the judged code."""
        if not isinstance(alarm, AdapterTimeoutError):
            return []
        answers: bool | None = None
        if item.get_closest_marker(PIPELINE_MARK) is not None:
            check = self.config.stash.get(BROKER_ANSWERS, None)
            if check is None:
                return []
            answers = check()
        return check_call_returned(alarm.hang.method, alarm.hang.running, alarm.timeout_s, answers)

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        self._reports.setdefault(report.nodeid, []).append(report)

    def pytest_runtest_logstart(self, nodeid: str) -> None:
        item = self._items[nodeid]
        self._started[nodeid], self._running = time.time(), nodeid
        if self.journal is not None:
            self.journal.record_start(self._stub(item, Status.ERROR))
        self.heartbeat.start(display_name(item.name))

    def pytest_runtest_logfinish(self, nodeid: str) -> None:
        self.heartbeat.stop()
        self._running = None
        self._finish(self._result(self._items[nodeid], self._reports.pop(nodeid, [])))

    def pytest_unconfigure(self) -> None:
        self.heartbeat.close()  # also stops it after a Ctrl-C, which ends the run without the test's logfinish

    def _stub(self, item: pytest.Item, status: Status, duration: float = 0.0) -> TestResult:
        """A result of ``item`` with its name, ids, level and class, and nothing judged yet."""
        mark = item.get_closest_marker("requirement")
        ids = list(mark.args) if mark and mark.args else ids_in_test_name(getattr(item, "originalname", item.name))
        known = [self.requirements[i].level for i in ids if i in self.requirements]
        level = strongest(known) if known else level_of_test_name(item.name) or "MUST"
        pipeline = item.get_closest_marker(PIPELINE_MARK) is not None
        result = TestResult(item.nodeid, display_name(item.name), ids, level, pipeline, status, duration)
        result.started = self._started.get(item.nodeid)
        return result

    def _not_run(self, item: pytest.Item) -> TestResult:
        """A test a run that kept crashing did not start (ERROR)."""
        assert self.journal is not None
        result = self._stub(item, Status.ERROR)
        deaths = ", ".join(f"{c.signal_name} (pid {c.pid})" for c in self.journal.crashes)
        result.message = (
            f"not run: {DIED} died {len(self.journal.crashes)} times ({deaths}), so the run "
            "stopped starting tests; --report's crash.log holds the stacks"
        )
        return result

    def _result(self, item: pytest.Item, reports: list[pytest.TestReport]) -> TestResult:
        evidence = self._evidence.pop(item.nodeid, [])
        raised = self._raised.pop(item.nodeid, [])
        liveness = self._liveness.pop(item.nodeid, [])
        not_checked = self._not_checked.pop(item.nodeid, None)
        failed = [r for r in reports if r.failed]
        skipped = [r for r in reports if r.skipped]
        result = self._stub(item, Status.PASS, sum(r.duration for r in reports))
        for r in reports:
            result.phases[r.when] = result.phases.get(r.when, 0.0) + r.duration
        name, ids, pipeline = result.name, result.ids, result.pipeline
        properties = dict.fromkeys((k, v) for r in reports for k, v in r.user_properties)  # phases repeat them
        result.metrics = {
            k: v
            for k, v in properties
            if not k.startswith((UNVERIFIED_PROPERTY, TOLERATED_PROPERTY, NOT_CHECKED_PROPERTY))
        }
        tolerated = {
            k.removeprefix(TOLERATED_PROPERTY): int(str(v)) for k, v in properties if k.startswith(TOLERATED_PROPERTY)
        }
        result.metrics |= {f"{TOLERATED}{what}": n for what, n in tolerated.items()}
        for k, v in properties:
            if k.startswith(UNVERIFIED_PROPERTY):
                req_id = k.removeprefix(UNVERIFIED_PROPERTY)
                result.unverified[req_id] = "; ".join(filter(None, [result.unverified.get(req_id), str(v)]))
            elif k.startswith(NOT_CHECKED_PROPERTY):
                req_id = k.removeprefix(NOT_CHECKED_PROPERTY)
                result.not_checked[req_id] = "; ".join(filter(None, [result.not_checked.get(req_id), str(v)]))
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
            if liveness and not raised:  # the violation says it without the exception's class
                result.message = "; ".join(v.evidence for v in liveness)
            result.counterexamples = evidence
            told = "\n".join([c.error for c in result.counterexamples] or [result.message])
            result.violations = [v for e in raised for v in e.violations] or liveness
            result.violated = blamed(ids, [v.requirement for v in result.violations])
            outside = [i for i in result.violated if i not in ids and i in self.requirements]
            if outside:  # a violation of an id the test's mark does not list counts at that id's level too
                result.level = strongest([result.level, *(self.requirements[i].level for i in outside)])
            result.violations = result.violations or unstructured_failure(told, result.violated)
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
        if result.not_checked and result.status in (Status.PASS, Status.PARTIAL):
            result.message = "; ".join(
                [f"{i} could not be checked: {why}" for i, why in result.not_checked.items()]
                + ([result.message] if result.message else [])
            )
        if tolerated and result.status in (Status.PASS, Status.PARTIAL):
            # every violation it met was one the expectations list by kind: XFAIL on those ids, the rest judged
            seen = sorted({what.split(" ", 1)[0] for what in tolerated})
            result.status, result.violated = Status.XFAIL, seen
            result.verified_before_failing = frozenset(i for i in ids if i not in result.unverified and i not in seen)
            result.deviation = next(
                d for d in self.deviations if d.kind is not None and f"{d.requirement} {d.kind}" in tolerated
            )
            result.message = "only known deviations, tolerated: " + ", ".join(
                f"{what} x{n}" for what, n in sorted(tolerated.items())
            )
            return result
        # Only what the test verified can show that a listed deviation is gone (XPASS).
        verified = [i for i in ids if i not in result.unverified and i not in result.not_checked]
        if result.status is Status.FAIL:
            deviation = excusing_deviation(self.deviations, name, result.violated)
        else:
            deviation = find_deviation(self.deviations, name, verified)
        if deviation is not None and result.status in (Status.PASS, Status.PARTIAL, Status.FAIL):
            result.deviation = deviation
            result.status = Status.XFAIL if result.status is Status.FAIL else Status.XPASS
        return result

    def replay_command(self, name: str, pipeline: bool) -> str:
        return shlex.join(replay_args(self.options, self.seed, name, pipeline, os.environ))

    def _finish(self, result: TestResult, echo: bool = True, journal: bool | None = None) -> None:
        """Keep a result and print its line (``echo``: not for a result an earlier process of the run printed);
        a supervised run journals a test's result (``journal``: default, a test this process ran) so that a process
        started after a crash keeps it."""
        seen = [t.message for t in self.results if t.status is Status.ERROR]
        self.results.append(result)
        if self.journal is not None and (result.nodeid in self._items if journal is None else journal):
            self.journal.record_end(result)
        if not echo:
            return
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
