"""A real Spark cluster on one machine: a standalone master and two workers on loopback.

``--spark-master standalone`` runs the pipeline level on it instead of ``local[2,3]``: tasks run
in executor processes the workers launched, so no driver-side state reaches them, their Python
workers and Kafka clients live there, and a killed driver leaves executors the master has to
clean up, as on a real cluster. The daemons are started from PyPI pyspark's own jars (its
``sbin`` lacks ``start-master.sh``), with bounded heaps, free ports, and their logs and work
directories in one temporary directory; ``stop`` kills every process of the cluster (executors
and their Python daemons included) and removes the directory.

Everything runs on this machine, so executors run this interpreter, import the same modules,
and read and write checkpoints and ``spark.jars`` by the driver's local paths.
"""

from __future__ import annotations

import atexit
import contextlib
import importlib.util
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any, Final, Self

from ...reference_impl.credentials import redact
from .. import jvm
from ..brokers.base import dies_with_parent, free_port

STANDALONE: Final = "standalone"
"""``--spark-master standalone``: start a local standalone cluster for the run and use it."""

START_TIMEOUT_S: Final = 90.0
"""Master and workers are JVMs on two shared cores: 5-20 s until both workers are registered."""
STOP_TIMEOUT_S: Final = 10.0
TASK_ATTEMPTS: Final = 3
"""``spark.task.maxFailures`` on a cluster: as ``local[2,3]``, so a failed task is retried."""

DAEMON_FLAGS: Final = ("-Xms32m", "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1")
EXECUTOR_FLAGS: Final = "-XX:+UseSerialGC -XX:TieredStopAtLevel=1"


@dataclass(frozen=True)
class ClusterShape:
    """How big the cluster is and how much of it one application takes.

    Two applications fit at once (``workers * worker_cores >= 2 * app_cores``): the suite's own
    session holds its executors for the whole run while a driver it starts and kills
    (``kconform.conformance.spark.driver``) gets its own. Cores are task slots, not physical cores.
    """

    workers: int = 2
    worker_cores: int = 4
    worker_memory: str = "2g"
    executor_cores: int = 2
    app_cores: int = 4
    """``spark.cores.max``: one executor of ``executor_cores`` on each of two workers."""
    executor_memory: str = "768m"


DEFAULT_SHAPE: Final = ClusterShape()


class SparkClusterError(Exception):
    """The standalone cluster did not start; the message names the cause and the fix, with log tails."""


def spark_home() -> Path:
    """PyPI pyspark's directory, which holds Spark's ``jars/`` (found without importing pyspark)."""
    spec = importlib.util.find_spec("pyspark")
    if spec is None or spec.origin is None:
        raise SparkClusterError("pyspark is not installed in this interpreter (pip install 'pyspark[sql]')")
    home = Path(spec.origin).parent
    scala_version(home)
    return home


def scala_version(home: Path) -> str:
    """Spark's Scala version, read off its core jar (``spark-core_2.13-4.2.0.jar``): a worker's launcher
    needs it (``SPARK_SCALA_VERSION``) in a distribution without Spark's build directories, as pip's."""
    for jar in sorted((home / "jars").glob("spark-core_*-*.jar")):
        return jar.name.removeprefix("spark-core_").partition("-")[0]
    raise SparkClusterError(f"{home / 'jars'} holds no spark-core jar: reinstall pyspark")


def is_local(master: str) -> bool:
    """Whether ``master`` runs tasks inside the driver's JVM (``local``, ``local[2,3]``, ...)."""
    return master == "local" or master.startswith("local[")


def daemon_command(java: Path, home: Path, main: str, args: Sequence[str]) -> list[str]:
    """The JVM command of a standalone daemon (``Master`` or ``Worker``), as ``spark-class`` would run it."""
    return [
        str(java), *DAEMON_FLAGS,
        "-Dspark.master.rest.enabled=false",  # its fixed port 6066 would collide between runs
        "-Dspark.port.maxRetries=0",  # a busy port is an error, not a silent move to the next one
        "-cp", str(home / "jars" / "*"),
        f"org.apache.spark.deploy.{main}", *args,
    ]  # fmt: skip


def master_args(port: int, webui_port: int) -> list[str]:
    return ["--host", "127.0.0.1", "--port", str(port), "--webui-port", str(webui_port)]


def worker_host(n: int) -> str:
    """Worker ``n``'s own loopback address (``127.0.0.<n>``; Linux routes all of 127/8 to ``lo``): Spark then
    sees one host per worker, as on a real cluster, and may run a speculative copy of a task on the other
    (never on the host of the original)."""
    return f"127.0.0.{n}"


def worker_args(master_url: str, work_dir: Path, host: str, shape: ClusterShape = DEFAULT_SHAPE) -> list[str]:
    """A worker on loopback ``host``, ephemeral ports, ``shape``'s cores and memory, executors under ``work_dir``."""
    return [
        "--host", host, "--port", "0", "--webui-port", "0",
        "--cores", str(shape.worker_cores), "--memory", shape.worker_memory,
        "--work-dir", str(work_dir), master_url,
    ]  # fmt: skip


def daemon_env(home: Path, host: str = "127.0.0.1", base: Mapping[str, str] = os.environ) -> dict[str, str]:
    """A daemon's environment: its loopback ``host`` only, Spark's home (where workers find executors' jars)."""
    kept = {k: v for k, v in base.items() if k in ("PATH", "HOME", "LANG", "TMPDIR", "JAVA_HOME")}
    return {**kept, "SPARK_HOME": str(home), "SPARK_SCALA_VERSION": scala_version(home), "SPARK_LOCAL_IP": host}


def cluster_settings(
    python: str = sys.executable, path: Iterable[str] = sys.path, shape: ClusterShape = DEFAULT_SHAPE
) -> dict[str, str]:
    """A session's settings on a cluster master: executors run ``python`` with the driver's ``path``
    (so they import the adapter under test and ``reference_impl``), bounded executors, and task
    retries stated, so ``kconform.conformance.spark.pipeline.task_attempts`` reads what the cluster does."""
    python_path = os.pathsep.join(dict.fromkeys(os.path.abspath(p) for p in path if p))
    return {
        "spark.task.maxFailures": str(TASK_ATTEMPTS),
        "spark.executorEnv.PYSPARK_PYTHON": python,
        "spark.executorEnv.PYTHONPATH": python_path,
        "spark.executor.cores": str(shape.executor_cores),
        "spark.cores.max": str(shape.app_cores),
        "spark.executor.memory": shape.executor_memory,
        "spark.executor.extraJavaOptions": EXECUTOR_FLAGS,
    }


def process_tree(roots: Iterable[int]) -> set[int]:
    """``roots`` and every live descendant (by parent pid in ``/proc``), whatever process group it chose."""
    parents: dict[int, int] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError, ValueError, IndexError):
            # "pid (comm) state ppid ...": comm may hold spaces and parentheses
            parents[int(stat.parent.name)] = int(stat.read_text().rpartition(")")[2].split()[1])
    tree = {r for r in roots if alive(r)}
    grew = True
    while grew:
        found = {pid for pid, parent in parents.items() if parent in tree} - tree
        tree |= found
        grew = bool(found)
    return tree


def alive(pid: int) -> bool:
    """Whether ``pid`` is a running process (a zombie, dead but not yet reaped, is not)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
    except (OSError, IndexError):
        return False
    return state not in ("Z", "X")


class StandaloneCluster:
    """A standalone master and ``shape.workers`` workers on loopback; a context manager.

    ``master_url`` is ``spark://127.0.0.1:<port>``; ``pids`` every process of the cluster now
    (daemons, executors, their Python daemons and workers).
    """

    def __init__(
        self, shape: ClusterShape = DEFAULT_SHAPE, start_timeout_s: float = START_TIMEOUT_S,
        tmp_root: Path | None = None,
    ) -> None:  # fmt: skip
        self.shape = shape
        self._start_timeout_s = start_timeout_s
        self._tmp_root = tmp_root
        self._workdir: Path | None = None
        self._daemons: dict[str, subprocess.Popen[bytes]] = {}
        self._port = 0
        self._webui_port = 0
        self.start_seconds: float | None = None

    @property
    def master_url(self) -> str:
        if not self._port:
            raise SparkClusterError("the standalone cluster is not started (use it as a context manager)")
        return f"spark://127.0.0.1:{self._port}"

    @property
    def workdir(self) -> Path:
        """Where the daemons' logs and the workers' directories are; an executor's is
        ``worker-<n>/<app id>/<executor id>``, the working directory of its Python workers too."""
        if self._workdir is None:
            raise SparkClusterError("the standalone cluster is not started (use it as a context manager)")
        return self._workdir

    @property
    def webui_url(self) -> str:
        return f"http://127.0.0.1:{self._webui_port}"

    @property
    def pids(self) -> set[int]:
        return process_tree(p.pid for p in self._daemons.values())

    def describe(self) -> str:
        return (
            f"Spark standalone cluster at {self.master_url} ({self.shape.workers} workers x "
            f"{self.shape.worker_cores} cores, pids {sorted(p.pid for p in self._daemons.values())})"
        )

    def start(self) -> None:
        """Start the master, then the workers; return once the master lists every worker as alive."""
        began = time.monotonic()
        try:
            java = jvm.java_binary()
        except jvm.JvmArtifactsMissing as missing:
            raise SparkClusterError(f"a Spark standalone cluster needs Java: {missing}") from None
        home = spark_home()
        self._workdir = Path(tempfile.mkdtemp(prefix="kconform-spark-", dir=self._tmp_root))
        atexit.register(self.stop)
        try:
            self._port, self._webui_port = free_port(), free_port()
            self._launch("master", java, home, "master.Master", master_args(self._port, self._webui_port), "127.0.0.1")
            deadline = time.monotonic() + self._start_timeout_s
            self._await(deadline, lambda state: state.get("status") == "ALIVE", "the master to answer")
            for n in range(1, self.shape.workers + 1):
                work = self._workdir / f"worker-{n}"
                work.mkdir()
                host = worker_host(n)
                args = worker_args(self.master_url, work, host, self.shape)
                self._launch(f"worker-{n}", java, home, "worker.Worker", args, host)
            wanted = self.shape.workers
            self._await(deadline, lambda state: state.get("aliveworkers", 0) >= wanted, f"{wanted} workers to register")
        except SparkClusterError as error:
            message = f"{error}\n{self.log_tails()}\n(logs kept in {self._workdir})"
            self._halt(keep=True)
            raise SparkClusterError(message) from None
        except BaseException:
            self._halt(keep=False)
            raise
        self.start_seconds = time.monotonic() - began

    def _launch(self, name: str, java: Path, home: Path, main: str, args: Sequence[str], host: str) -> None:
        assert self._workdir is not None
        command = dies_with_parent(daemon_command(java, home, main, args))
        with (self._workdir / f"{name}.log").open("ab") as log:
            self._daemons[name] = subprocess.Popen(
                command, cwd=self._workdir, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                env=daemon_env(home, host), start_new_session=True,  # its own group: executors join it, Ctrl-C does not
            )  # fmt: skip

    def state(self) -> dict[str, Any]:
        """The master's JSON status page (workers, cores, applications)."""
        with urllib.request.urlopen(f"{self.webui_url}/json/", timeout=2) as answer:
            state: dict[str, Any] = json.load(answer)
            return state

    def _await(self, deadline: float, reached: Callable[[dict[str, Any]], bool], what: str) -> None:
        """Poll the master's status page until ``reached(state)``; fail fast if a daemon exits."""
        state: dict[str, Any] = {}
        while True:
            self._check_alive()
            with contextlib.suppress(OSError, ValueError):  # not listening yet, or a partial answer
                state = self.state()
                if reached(state):
                    return
            if time.monotonic() >= deadline:
                seen = f"{state.get('aliveworkers', 0)} workers alive" if state else "no answer from its web UI"
                raise SparkClusterError(f"timed out after {self._start_timeout_s:g} s waiting for {what} ({seen})")
            time.sleep(0.2)  # polling interval of a bounded wait

    def _check_alive(self) -> None:
        for name, process in self._daemons.items():
            if (code := process.poll()) is not None:
                log = self._log(name)
                cause = ""
                if "Address already in use" in log or "could not bind" in log.lower():
                    cause = ": a port it was given is busy (another process took it after it was chosen); run again"
                raise SparkClusterError(f"the Spark {name} exited with code {code} during start{cause}")

    def _log(self, name: str) -> str:
        path = (self._workdir or Path("/nonexistent")) / f"{name}.log"
        return path.read_text(errors="replace") if path.exists() else ""

    def log_tails(self, lines: int = 30) -> str:
        """The last ``lines`` of every daemon's log and of every executor's stderr."""
        parts = [f"--- {name}.log ---\n" + "\n".join(self._log(name).splitlines()[-lines:]) for name in self._daemons]
        for stderr in sorted((self._workdir or Path("/nonexistent")).glob("worker-*/app-*/*/stderr")):
            tail = "\n".join(stderr.read_text(errors="replace").splitlines()[-lines:])
            parts.append(f"--- executor {stderr.parent.relative_to(stderr.parents[2])} ---\n{tail}")
        return redact("\n".join(parts))

    def stop(self) -> None:
        """Kill every process of the cluster and remove its directory; safe to call twice."""
        self._halt(keep=False)

    def _halt(self, keep: bool) -> None:
        atexit.unregister(self.stop)
        daemons, self._daemons = self._daemons, {}
        tree = process_tree(p.pid for p in daemons.values())
        for process in daemons.values():  # the group: executors started a moment ago too
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(process.pid, signal.SIGKILL)
        for pid in tree:  # Python daemons lead their own groups
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        for process in daemons.values():
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(STOP_TIMEOUT_S)
        deadline = time.monotonic() + STOP_TIMEOUT_S
        while (left := {pid for pid in tree if alive(pid)}) and time.monotonic() < deadline:
            time.sleep(0.05)  # polling interval of a bounded wait for the kernel to end them
        if self._workdir is not None and not keep:
            shutil.rmtree(self._workdir, ignore_errors=True)
        self._workdir = None
        self._port = 0
        if left:
            raise SparkClusterError(f"processes {sorted(left)} of the Spark cluster survived SIGKILL")

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()
