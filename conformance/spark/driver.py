"""One pipeline run in its own driver process, so a scenario can kill the driver with SIGKILL.

``python -m kconform.conformance.spark.driver <master>`` starts a local session on ``master``, then
reads one line of JSON carrying ``DriverRun``'s fields from standard input, loads the adapter, runs
the query with ``availableNow`` to the end, and exits 0; any failure exits non-zero with the error
on stderr; a ``CannotCheck`` (a contract or harness fault) exits ``CANNOT_CHECK_EXIT`` with its
message on a line of its own, so the scenario that started the driver raises it as ERROR too.
Standard input closed without a line ends it with 0, having run nothing. The driver leads its own
process group, so a scenario can kill it together with Spark's JVM, where its tasks run
(``os.killpg``).

Reading the run after the session is up lets ``StandbyDrivers`` keep one driver started ahead:
a soak that kills and restarts drivers all the time then waits for the JVM and the session (about
7 s here) only once, not at every restart.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
import traceback
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Final

from pyspark.sql import SparkSession
from pyspark.sql.streaming.listener import (
    QueryProgressEvent,
    QueryStartedEvent,
    QueryTerminatedEvent,
    StreamingQueryListener,
)

from ...reference_impl.credentials import Secret, mark_secrets, reveal
from ..adapter.interface import PipelineAdapter
from ..adapter.loader import load_adapter
from ..checks.liveness_checkers import failure_line, query_failure
from ..errors import CannotCheck
from .failures import StalledOriginal
from .kill_points import PROGRESS_LINE
from .pipeline import QUERY_TIMEOUT_S, Pipeline, local_session

STOP_WAIT_S: Final = 30.0
CANNOT_CHECK_EXIT: Final = 3
CANNOT_CHECK_LINE: Final = "kconform driver: could not check: "
QUERY_FAILED_EXIT: Final = 1
"""A driver's exit when its query failed (the code an uncaught error exits with, too)."""
SESSION_UP_LINE: Final = "kconform driver: session up at "
"""How a driver starts the line it prints once its session is up (and, for a standby, warmed up), before it reads its
run: the wall clock then (``time.time``), so a scenario can tell how long it waited for a driver (``session_up_at``)."""
WARM_UP_FLAG: Final = "--warm-up"
"""A driver started with it runs ``kconform.conformance.spark.warm_up``'s query before it reads its run (standbys)."""
WARM_UP_QUERY: Final = "kconform-warm-up"
"""The warm-up query's name, which ``ProgressLines`` leaves out."""
WARM_UP_LINE: Final = "kconform driver: warm-up "
"""How a driver starts the line saying what its warm-up took, or why it did not run to its end."""


@dataclass(frozen=True)
class DriverRun:
    """A source-to-sink query as the killed-driver scenario runs it."""

    adapter: str
    master: str
    bootstrap_servers: str
    source: str
    sink: str
    checkpoint: str
    parallelism: int
    exactly_once: bool
    max_records_per_trigger: int
    client_settings: Mapping[str, str | Secret]
    sink_settings: Mapping[str, str | Secret] = field(default_factory=dict)
    """librdkafka settings for the sink only (``Pipeline.sink_settings``)."""
    subscribe_pattern: str | None = None
    """Subscribe by pattern instead of to ``source`` (``kconform soak`` adds topics while it runs)."""
    client_timeout_ms: int | None = None
    """``Pipeline.client_timeout_ms``."""
    transactional_id_prefix: str | None = None
    """``Pipeline.transactional_id_prefix``."""
    query_timeout_s: int = QUERY_TIMEOUT_S
    """How long the ``availableNow`` query may run before the run is could-not-check (``run_available_now``)."""
    log_progress: bool = False
    """Print a ``PROGRESS_LINE`` per progress event of the query (a ``StreamingQueryListener``: Spark posts one when a
    batch has run), so a scenario can kill the driver at the k-th; off by default, as the listener starts Py4J's
    callback server."""

    def start(self, log: Path) -> subprocess.Popen[bytes]:
        """Start a driver and hand it this run; its output is appended to ``log``."""
        return hand_over(spawn(self.master, log), self)

    def pipeline(self, spark: SparkSession, stall: StalledOriginal | None = None) -> Pipeline:
        """The run's query in ``spark``, through its adapter (loaded here, in the driver process)."""
        adapter = load_adapter(self.adapter)
        assert isinstance(adapter, PipelineAdapter), f"{self.adapter} has no pipeline level"
        return Pipeline(
            spark,
            self.bootstrap_servers,
            Path(self.checkpoint),
            self.parallelism,
            subscribe=None if self.subscribe_pattern else self.source,
            subscribe_pattern=self.subscribe_pattern,
            sink_topic=self.sink,
            exactly_once=self.exactly_once,
            max_records_per_trigger=self.max_records_per_trigger,
            client_settings=mark_secrets(self.client_settings),
            sink_settings=mark_secrets(self.sink_settings),
            client_timeout_ms=self.client_timeout_ms,
            transactional_id_prefix=self.transactional_id_prefix,
            adapter=adapter,
            stall=stall,
        )


class ProgressLines(StreamingQueryListener):
    """Prints ``PROGRESS_LINE`` and the batch id for each progress event, flushed at once."""

    def onQueryStarted(self, event: QueryStartedEvent) -> None:
        pass

    def onQueryProgress(self, event: QueryProgressEvent) -> None:
        if event.progress.name != WARM_UP_QUERY:  # a standby's warm-up is no batch of the run
            print(f"{PROGRESS_LINE}{event.progress.batchId}", flush=True)

    def onQueryTerminated(self, event: QueryTerminatedEvent) -> None:
        pass


def spawn(master: str, log: Path, warm_up: bool = False) -> subprocess.Popen[bytes]:
    """A driver process starting its session on ``master`` (and, with ``warm_up``, running the warm-up query) and
    then waiting for its run on standard input; its output is appended to ``log``. It sees this process's
    ``sys.path``."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    with log.open("ab") as out:
        return subprocess.Popen(
            [sys.executable, "-m", "kconform.conformance.spark.driver", master, *([WARM_UP_FLAG] if warm_up else [])],
            stdin=subprocess.PIPE,
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env,
            start_new_session=True,
        )


def hand_over(driver: subprocess.Popen[bytes], run: DriverRun) -> subprocess.Popen[bytes]:
    """Give a spawned driver its run (a driver that died meanwhile exits with its error, in its log)."""
    assert driver.stdin is not None
    with contextlib.suppress(BrokenPipeError):
        driver.stdin.write(json.dumps(asdict(run), default=reveal).encode() + b"\n")  # a pipe, never a file
    with contextlib.suppress(BrokenPipeError):
        driver.stdin.close()
    return driver


class StandbyDrivers:
    """Hands out drivers whose session is already up: one is always being started for the next run.

    Only on a local master: on a cluster each standby would register an application and hold
    executors the running query needs (and ``executor-kill`` picks the newest application's). With ``warm_up`` (the
    suite's killed-driver scenarios) each also runs the warm-up query (``kconform.conformance.spark.warm_up``) before
    it reads its run; ``kconform soak``'s do not.
    """

    def __init__(self, master: str, folder: Path, warm_up: bool = False) -> None:
        self._master = master
        self._folder = folder
        self._warm_up = warm_up
        self._count = 0
        self._ready: tuple[subprocess.Popen[bytes], Path] | None = None

    def _spawn(self) -> tuple[subprocess.Popen[bytes], Path]:
        self._count += 1
        log = self._folder / f"driver-{self._count}.log"
        return spawn(self._master, log, warm_up=self._warm_up), log

    @property
    def master(self) -> str:
        return self._master

    def prime(self) -> None:
        """Start the first driver's session now, ahead of the first ``take`` (idempotent): a run whose scenarios kill
        drivers late starts the first while the scenarios before them run, instead of waiting for it then."""
        if self._ready is None:
            self._ready = self._spawn()

    def take(self) -> tuple[subprocess.Popen[bytes], Path]:
        """A driver whose session is up (or still starting), not yet given a run (``hand_over`` gives it one), and its
        log, which holds its own output alone; the next one starts its session meanwhile."""
        driver, log = self._ready if self._ready is not None else self._spawn()
        self._ready = self._spawn()
        return driver, log

    def start(self, run: DriverRun) -> tuple[subprocess.Popen[bytes], Path]:
        """A driver running ``run``, and its log; the next one starts its session meanwhile."""
        if run.master != self._master:
            raise ValueError(f"standby drivers run on {self._master}, not {run.master}")
        driver, log = self.take()
        return hand_over(driver, run), log

    def close(self) -> None:
        """End the waiting driver (standard input closed: it exits having run nothing), bounded."""
        if self._ready is None:
            return
        driver, _ = self._ready
        self._ready = None
        assert driver.stdin is not None
        with contextlib.suppress(BrokenPipeError):
            driver.stdin.close()
        try:
            driver.wait(timeout=STOP_WAIT_S)
        except subprocess.TimeoutExpired:
            kill_group(driver)


def kill_group(driver: subprocess.Popen[bytes]) -> bool:
    """SIGKILL a driver's process group (the driver and Spark's JVM, whose executor threads run the
    tasks), bounded; whether it was still running."""
    running = driver.poll() is None
    with contextlib.suppress(ProcessLookupError):
        os.killpg(driver.pid, signal.SIGKILL)
    driver.wait(timeout=STOP_WAIT_S)
    return running


def log_end(log: Path) -> int:
    """Where the next driver's output will start in ``log`` (drivers of one scenario append to one log)."""
    return log.stat().st_size if log.exists() else 0


def output_since(log: Path, start: int) -> str:
    """What the drivers wrote to ``log`` from ``start`` (``log_end`` before a driver started: its own output)."""
    with log.open("rb") as out:
        out.seek(start)
        return out.read().decode("utf-8", "replace")


def session_up_at(output: str) -> float | None:
    """When the driver whose ``output`` this is had its session up (``SESSION_UP_LINE``), if it printed it."""
    for line in output.splitlines():
        if line.startswith(SESSION_UP_LINE):
            with contextlib.suppress(ValueError):
                return float(line.removeprefix(SESSION_UP_LINE))
    return None


def raise_if_cannot_check(driver: subprocess.Popen[bytes], log: Path) -> None:
    """Raise, in the scenario, the ``CannotCheck`` a driver exited with (the last reason in its log)."""
    if driver.poll() != CANNOT_CHECK_EXIT:
        return
    reasons = [line for line in log.read_text().splitlines() if line.startswith(CANNOT_CHECK_LINE)]
    raise CannotCheck(reasons[-1].removeprefix(CANNOT_CHECK_LINE) if reasons else f"see the driver's log {log}")


def serve(spark: SparkSession, run_query: Callable[[], object]) -> int:
    """A driver process's shell around ``run_query``: 0 when it returns, ``CANNOT_CHECK_EXIT`` and the line
    ``raise_if_cannot_check`` reads on a ``CannotCheck``, ``QUERY_FAILED_EXIT`` after the traceback and the line
    ``driver_failure`` reads when its query failed; the session stopped in every case."""
    try:
        run_query()
    except CannotCheck as error:
        print(f"{CANNOT_CHECK_LINE}{error}", file=sys.stderr, flush=True)
        return CANNOT_CHECK_EXIT
    except Exception as error:  # a query's failure is recorded, any other error exits as it is
        failure = query_failure(error)
        if failure is None:
            raise
        traceback.print_exc()
        print(failure_line(failure), file=sys.stderr, flush=True)
        return QUERY_FAILED_EXIT
    finally:
        spark.stop()
    return 0


def run_warm_up(spark: SparkSession) -> str:
    """The warm-up query's line for the log (``kconform.conformance.spark.warm_up``): what it took, or why it did not
    run (a pyspark without the data source API it uses)."""
    try:
        from .warm_up import warm_up
    except ImportError as missing:
        return f"{WARM_UP_LINE}skipped: {missing}"
    return WARM_UP_LINE + warm_up(spark, WARM_UP_QUERY)


def main(argv: list[str]) -> int:
    master, *flags = argv
    spark = local_session(master)
    if WARM_UP_FLAG in flags:
        print(run_warm_up(spark), flush=True)
    print(f"{SESSION_UP_LINE}{time.time():.3f}", flush=True)

    def run_query() -> None:
        line = sys.stdin.readline()
        if not line.strip():
            return
        run = DriverRun(**json.loads(line))
        assert run.master == master, f"the run is for {run.master}, this driver's session is on {master}"
        if run.log_progress:
            spark.streams.addListener(ProgressLines())
        run.pipeline(spark).run_available_now(run.query_timeout_s)

    return serve(spark, run_query)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
