"""Apache Kafka itself, in KRaft mode, started by the suite from the jars ``kconform setup`` resolved, or those of
another release of the version table (``versions.py``: ``--kafka-version``, ``$KCONFORM_KAFKA_VERSION``) resolved
with Maven on first use.

``kafka`` is one process that is broker and controller at once; ``kafka-cluster`` is three such
processes on loopback forming one quorum (replication factor 3, ``min.insync.replicas=2``), with
a test API to SIGKILL, pause (SIGSTOP), resume and restart a node. Every node gets free ports,
storage formatted in a fresh temporary directory, a bounded heap and a log; a start that fails
shows the log's tail; ``stop`` leaves no process and no directory behind.
"""

from __future__ import annotations

import base64
import contextlib
import os
import re
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Final

from ...reference_impl.credentials import Secret, redact
from .. import jvm
from ..jvm.broker_at_release import resolve_at_release
from ..jvm.setup import SetupError
from .base import (
    STOP_TIMEOUT_S,
    Broker,
    BrokerKind,
    BrokerStartError,
    dies_with_parent,
    free_port,
)
from .proxy import ResponseHold, StallingProxy
from .versions import KAFKA_VERSION_ENV, KafkaRelease, kafka_release, settings_for

KAFKA_START_TIMEOUT_S: Final = 90.0
"""A JVM broker on 2 shared cores takes 5-20 s to answer; a cluster's quorum a little longer."""
FORMAT_TIMEOUT_S: Final = 60.0
CLUSTER_SIZE: Final = 3

HEAP: Final = ("-Xms64m", "-Xmx512m")
JVM_FLAGS: Final = (
    *HEAP,
    "-XX:+UseSerialGC",  # small heap, two shared cores: no parallel GC threads
    "-XX:TieredStopAtLevel=1",  # C1 only: starts in about half the time; test loads are small
    "-XX:MaxDirectMemorySize=256m",
    "-Djava.awt.headless=true",
)

SINGLE_NODE_SETTINGS: Final[Mapping[str, str]] = {
    "offsets.topic.replication.factor": "1",
    "transaction.state.log.replication.factor": "1",
    "transaction.state.log.min.isr": "1",
    "share.coordinator.state.topic.replication.factor": "1",
    "share.coordinator.state.topic.min.isr": "1",
    "default.replication.factor": "1",
    "min.insync.replicas": "1",
}
CLUSTER_SETTINGS: Final[Mapping[str, str]] = {
    "offsets.topic.replication.factor": "3",
    "transaction.state.log.replication.factor": "3",
    "transaction.state.log.min.isr": "2",
    "share.coordinator.state.topic.replication.factor": "3",
    "share.coordinator.state.topic.min.isr": "2",
    "default.replication.factor": "3",
    "min.insync.replicas": "2",
}
TEST_SETTINGS: Final[Mapping[str, str]] = {
    "num.partitions": "1",
    # Kafka's defaults (50 partitions each) make the first group or transaction wait seconds.
    "offsets.topic.num.partitions": "4",
    "transaction.state.log.num.partitions": "4",
    "group.initial.rebalance.delay.ms": "0",
    # Abandoned transactions are aborted within a second of their timeout, not a minute.
    "transaction.abort.timed.out.transaction.cleanup.interval.ms": "1000",
    "log.retention.check.interval.ms": "3600000",
}

SASL_USER: Final = "kconform"
JAAS_ENV: Final = "KCONFORM_BROKER_JAAS"
"""The broker reads its SASL/PLAIN JAAS line from this variable (Kafka's ``EnvVarConfigProvider``), so the
generated password is in no file, command line or log of the broker."""
SASL_SETTINGS: Final[Mapping[str, str]] = {
    "sasl.enabled.mechanisms": "PLAIN",
    "sasl.mechanism.inter.broker.protocol": "PLAIN",
    "config.providers": "env",
    "config.providers.env.class": "org.apache.kafka.common.config.provider.EnvVarConfigProvider",
    "listener.name.sasl_plaintext.plain.sasl.jaas.config": f"${{env:{JAAS_ENV}}}",
}

LOG4J2: Final = """\
rootLogger.level = INFO
rootLogger.appenderRef.out.ref = OUT
appender.out.type = Console
appender.out.name = OUT
appender.out.layout.type = PatternLayout
appender.out.layout.pattern = [%d] %p %m (%c)%n
logger.request.name = kafka.request.logger
logger.request.level = WARN
"""


def cluster_id() -> str:
    """A KRaft cluster id: a random UUID in URL-safe base64 without padding, as ``kafka-storage random-uuid``.

    Like Kafka's ``Uuid.randomUuid``, never one that starts with ``-``: the storage tool's argument
    parser would read it as an option (seen here: "argument --cluster-id/-t: expected one argument").
    """
    while (found := base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")).startswith("-"):
        pass
    return found


LOGGED_VERSION: Final = re.compile(r"Kafka version: (\S+) \(")
"""The line Kafka's ``AppInfoParser`` logs at start: which release the JVM really runs."""


def logged_version(log: str) -> str | None:
    """The release a node's log says it runs (its first ``Kafka version:`` line), or ``None``."""
    found = LOGGED_VERSION.search(log)
    return found.group(1) if found else None


def plain_jaas(password: Secret) -> Secret:
    """The broker's JAAS line for SASL/PLAIN: it logs in to other brokers as ``SASL_USER`` and accepts that user."""
    text = password.reveal()
    return Secret(
        f'org.apache.kafka.common.security.plain.PlainLoginModule required username="{SASL_USER}" '
        f'password="{text}" user_{SASL_USER}="{text}";'
    )


class KafkaNode:
    """One KRaft node (broker and controller in one JVM) with its ports, directory and process."""

    def __init__(self, node_id: int, workdir: Path, classpath: str, jaas: Secret | None = None) -> None:
        """``classpath``: the broker release's jars; ``jaas``: the broker's SASL/PLAIN JAAS line, its client listener
        then takes SASL_PLAINTEXT only."""
        self.node_id = node_id
        self.workdir = workdir
        self._classpath = classpath
        self._jaas = jaas
        self.port = free_port()
        self.controller_port = free_port()
        self._process: subprocess.Popen[bytes] | None = None
        self.proxy: StallingProxy | None = None
        """Set before ``configure``: the node advertises the proxy, so every client goes through it."""

    @property
    def address(self) -> str:
        """Where clients reach the node: its proxy's address if it has one."""
        return self.proxy.address if self.proxy is not None else f"127.0.0.1:{self.port}"

    @property
    def pid(self) -> int | None:
        return None if self._process is None else self._process.pid

    @property
    def log_path(self) -> Path:
        return self.workdir / "server.log"

    @property
    def running(self) -> bool:
        return self._process is not None and self._process.poll() is None

    def configure(self, voters: str, settings: Mapping[str, str]) -> None:
        """Write ``server.properties`` and the log configuration."""
        listener = "PLAINTEXT" if self._jaas is None else "SASL_PLAINTEXT"
        properties = {
            "process.roles": "broker,controller",
            "node.id": str(self.node_id),
            "controller.quorum.voters": voters,
            "listeners": f"{listener}://127.0.0.1:{self.port},CONTROLLER://127.0.0.1:{self.controller_port}",
            "advertised.listeners": f"{listener}://{self.address}",
            "controller.listener.names": "CONTROLLER",
            "listener.security.protocol.map": f"{listener}:{listener},CONTROLLER:PLAINTEXT",
            "inter.broker.listener.name": listener,
            "log.dirs": str(self.workdir / "data"),
            **(SASL_SETTINGS if self._jaas is not None else {}),
            **settings,
        }
        (self.workdir / "server.properties").write_text("".join(f"{k}={v}\n" for k, v in properties.items()))
        (self.workdir / "log4j2.properties").write_text(LOG4J2)

    def _java(self, main: str, *args: str, heap: Sequence[str] = JVM_FLAGS) -> list[str]:
        return [
            str(jvm.java_binary()), *heap,
            f"-Dlog4j2.configurationFile={self.workdir / 'log4j2.properties'}",
            f"-Dkafka.logs.dir={self.workdir}",
            "-cp", self._classpath, main, *args,
        ]  # fmt: skip

    def format(self, cluster: str) -> None:
        """Format the node's storage for ``cluster`` (Kafka's ``kafka-storage format``)."""
        command = self._java(
            "kafka.tools.StorageTool", "format", "-t", cluster, "-c", str(self.workdir / "server.properties"),
            heap=("-Xmx256m", "-XX:TieredStopAtLevel=1"),
        )  # fmt: skip
        try:
            done = subprocess.run(
                command, capture_output=True, text=True, timeout=FORMAT_TIMEOUT_S, check=False, env=self._env()
            )
        except subprocess.TimeoutExpired:
            raise BrokerStartError(f"formatting node {self.node_id}'s storage took over {FORMAT_TIMEOUT_S} s") from None
        if done.returncode != 0:
            tail = redact("\n".join((done.stdout + done.stderr).splitlines()[-20:]))
            raise BrokerStartError(f"formatting node {self.node_id}'s storage failed ({done.returncode}):\n{tail}")

    def start(self) -> None:
        """Start the JVM; the caller waits for it to answer."""
        if self.running:
            return
        command = dies_with_parent(self._java("kafka.Kafka", str(self.workdir / "server.properties")))
        with self.log_path.open("ab") as log:
            self._process = subprocess.Popen(
                command, cwd=self.workdir, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                env=self._env(),
                start_new_session=True,  # a Ctrl-C in the terminal reaches the suite, which stops us in order
            )  # fmt: skip

    def _env(self) -> dict[str, str]:
        """The JVM's environment: the few variables it needs, and the JAAS line the broker's config refers to."""
        env = {k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "LANG", "TMPDIR", "JAVA_HOME")}
        return env if self._jaas is None else {**env, JAAS_ENV: self._jaas.reveal()}

    def check_alive(self) -> None:
        """Fail fast, with the log's tail, when the JVM exited while we wait for it."""
        if self._process is not None and (code := self._process.poll()) is not None:
            raise BrokerStartError(f"Kafka node {self.node_id} exited with code {code} during start")

    def signal(self, sig: signal.Signals) -> None:
        if not self.running:
            raise BrokerStartError(f"Kafka node {self.node_id} is not running")
        assert self._process is not None
        self._process.send_signal(sig)

    def kill(self) -> None:
        """SIGKILL: no controlled shutdown, no flush; the log is recovered on restart."""
        if self._process is not None:
            if self._process.poll() is None:
                self._process.send_signal(signal.SIGCONT)  # a paused JVM still dies, but be explicit
                self._process.kill()
            self._process.wait(STOP_TIMEOUT_S)
            self._process = None

    def stop(self, timeout_s: float = 30.0) -> None:
        """SIGTERM (Kafka's controlled shutdown), then SIGKILL after ``timeout_s``."""
        if self._process is not None and self._process.poll() is None:
            self._process.send_signal(signal.SIGCONT)
            self._process.terminate()
            try:
                self._process.wait(timeout_s)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait(STOP_TIMEOUT_S)
        self._process = None

    def log_tail(self, lines: int = 40) -> str:
        if not self.log_path.exists():
            return "(no log)"
        return redact("\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:]))


class KafkaBroker(Broker):
    """Apache Kafka on loopback: one combined node (``kafka``) or a three-node quorum (``kafka-cluster``)."""

    def __init__(
        self, nodes: int = 1, start_timeout_s: float = KAFKA_START_TIMEOUT_S, tmp_root: Path | None = None,
        settings: Mapping[str, str] | None = None, proxied: bool = False, sasl: bool = False,
        kafka_version: str | None = None,
    ) -> None:  # fmt: skip
        """``kafka_version``: the release of the version table to run (default ``$KCONFORM_KAFKA_VERSION``, else the
        pinned one; ``UnknownKafkaVersion``, a ``ValueError``, for one the table lacks); ``settings`` override the
        broker properties (tests); ``tmp_root`` holds the nodes' directory,
        kept there with its logs when the start fails; ``proxied``: every node behind a ``StallingProxy``
        (``hold_next_answer``); ``sasl``: clients must log in with SASL/PLAIN as ``kconform`` with a password
        generated here (in ``security``, as a ``Secret``), as on a secured cluster."""
        password = Secret(secrets.token_urlsafe(18)) if sasl else None
        super().__init__(
            None if password is None else
            {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanisms": "PLAIN", "sasl.username": SASL_USER,
             "sasl.password": password}
        )  # fmt: skip
        self._jaas = None if password is None else plain_jaas(password)
        self._release: KafkaRelease = kafka_release(kafka_version or os.environ.get(KAFKA_VERSION_ENV))
        self.release = self._release.version
        self._classpath: str | None = None
        if nodes < 1:
            raise ValueError("a Kafka cluster needs at least one node")
        self.kind: BrokerKind = "kafka-cluster" if nodes > 1 else "kafka-sasl" if sasl else "kafka"
        self._size = nodes
        self._start_timeout_s = start_timeout_s
        self._tmp_root = tmp_root
        self._settings = dict(settings or {})
        self._proxied = proxied
        self._workdir: Path | None = None
        self._nodes: list[KafkaNode] = []
        self.version = f"Apache Kafka {self.release}"
        self.start_seconds: float | None = None
        """How long the last ``start`` took, to the first answered metadata request (``make bench``)."""

    @property
    def nodes(self) -> Sequence[KafkaNode]:
        return tuple(self._nodes)

    def local_pids(self) -> list[int]:
        return [n.pid for n in self._nodes if n.pid is not None]

    def describe(self) -> str:
        shape = "1 node" if self._size == 1 else f"{self._size} nodes"
        return f"{self.version} (KRaft, {shape}, pids {self.local_pids()}) at {self.bootstrap_servers}"

    def jars(self) -> str:
        """The release's classpath, resolved with Maven on first use: ``BrokerStartError`` naming the fix when Maven
        fails, ``JvmArtifactsMissing`` naming `kconform setup` when the pinned release's jars are missing."""
        if self._classpath is None:
            release = self._release.version
            try:
                folder = resolve_at_release(release, lambda line: print(f"kconform: {line}", file=sys.stderr))
            except SetupError as error:
                raise BrokerStartError(
                    f"{self.kind} broker: Apache Kafka {release} could not be resolved: {error}"
                ) from None
            self._classpath = str(folder / "*")
        return self._classpath

    def start(self) -> None:
        began = time.monotonic()
        self.jars()
        self._workdir = Path(tempfile.mkdtemp(prefix=f"kconform-{self.kind}-", dir=self._tmp_root))
        with self._starting(lambda: f"{self._log_tails()}\n(logs kept in {self._workdir})"):
            self._nodes = [self._new_node(i) for i in range(1, self._size + 1)]
            voters = ",".join(f"{n.node_id}@127.0.0.1:{n.controller_port}" for n in self._nodes)
            shape = SINGLE_NODE_SETTINGS if self._size == 1 else CLUSTER_SETTINGS
            settings = settings_for(self._release, {**TEST_SETTINGS, **shape})
            cluster = cluster_id()
            for node in self._nodes:
                if self._proxied:
                    node.proxy = StallingProxy(node.port, f"node {node.node_id}")
                    node.proxy.start()
                node.configure(voters, {**settings, **self._settings})
                node.format(cluster)
            for node in self._nodes:
                node.start()
            self._bootstrap = ",".join(n.address for n in self._nodes)
            self._await_nodes(time.monotonic() + self._start_timeout_s, self._nodes)
        self.start_seconds = time.monotonic() - began

    def _new_node(self, node_id: int) -> KafkaNode:
        assert self._workdir is not None
        workdir = self._workdir / f"node-{node_id}"
        workdir.mkdir()
        return KafkaNode(node_id, workdir, self.jars(), self._jaas)

    def _await_nodes(self, deadline: float, nodes: Sequence[KafkaNode]) -> None:
        """Wait until metadata lists every one of ``nodes`` as a live broker."""

        def alive() -> None:
            for node in nodes:
                node.check_alive()

        self._wait_healthy(deadline, alive)
        from confluent_kafka.admin import AdminClient  # once a broker starts, like ``_wait_healthy``'s client

        admin = AdminClient(self.client_config("admin"))
        wanted = {n.node_id for n in nodes}
        seen: set[int] = set()
        while time.monotonic() < deadline:
            alive()
            with contextlib.suppress(Exception):  # transport errors while nodes come up
                seen = set(admin.list_topics(timeout=1.0).brokers)
                if wanted <= seen:
                    return
            time.sleep(0.1)  # polling metadata, bounded by the deadline
        raise BrokerStartError(f"metadata lists brokers {sorted(seen)}, not all of {sorted(wanted)}, in time")

    def _log_tails(self) -> str:
        return "\n".join(f"--- node {n.node_id}: {n.log_path} ---\n{n.log_tail()}" for n in self._nodes)

    # -- the test API for faults -----------------------------------------------------------------

    def node(self, node_id: int) -> KafkaNode:
        for node in self._nodes:
            if node.node_id == node_id:
                return node
        raise ValueError(f"no node {node_id}; nodes are {[n.node_id for n in self._nodes]}")

    def kill(self, node_id: int) -> None:
        """SIGKILL one node."""
        self.node(node_id).kill()

    def pause(self, node_id: int) -> None:
        """SIGSTOP one node: it holds its sockets open and answers nothing."""
        self.node(node_id).signal(signal.SIGSTOP)

    def resume(self, node_id: int) -> None:
        """SIGCONT a paused node."""
        self.node(node_id).signal(signal.SIGCONT)

    def restart(self, node_id: int, clean: bool = True) -> None:
        """Stop one node (controlled shutdown, or SIGKILL if not ``clean``), start it on its ports and
        directory again, and return once metadata lists it among the brokers."""
        self.stop_node(node_id, clean)
        self.start_node(node_id)

    def stop_node(self, node_id: int, clean: bool = True) -> None:
        """Stop one node (controlled shutdown, or SIGKILL if not ``clean``) and leave it stopped until ``start_node``:
        a fault that holds while clients go on calling (the client workload's spanning faults)."""
        node = self.node(node_id)
        if clean:
            node.stop()
        else:
            node.kill()

    def start_node(self, node_id: int) -> None:
        """Start a stopped node on its ports and directory again (nothing for one running), and return once
        metadata lists it among the brokers."""
        node = self.node(node_id)
        node.start()
        try:
            self._await_nodes(time.monotonic() + self._start_timeout_s, [node])
        except BrokerStartError as error:
            raise BrokerStartError(f"{error}\n--- node {node_id} ---\n{node.log_tail()}") from None

    @contextlib.contextmanager
    def paused(self, node_id: int) -> Iterator[KafkaNode]:
        """A node paused for the ``with`` block, resumed even if the block raises."""
        self.pause(node_id)
        try:
            yield self.node(node_id)
        finally:
            self.resume(node_id)

    def hold_next_answer(self, api_key: int, seconds: float) -> ResponseHold:
        """Arm every node's proxy: the answer to the next request of ``api_key`` is held for ``seconds``."""
        proxies = [n.proxy for n in self._nodes if n.proxy is not None]
        if not proxies:
            raise BrokerStartError("holding an answer needs a broker started with proxied=True")
        hold = ResponseHold(api_key, seconds)
        for proxy in proxies:
            proxy.arm(hold)
        return hold

    def stop(self) -> None:
        self._halt(keep=False)

    def _halt(self, keep: bool) -> None:
        """Stop every node (SIGKILL: its data is thrown away anyway) and its proxy, then remove the directory."""
        nodes, self._nodes = self._nodes, []
        for node in nodes:
            node.kill()
            if node.proxy is not None:
                node.proxy.close()
        if self._workdir is not None and not keep:
            shutil.rmtree(self._workdir, ignore_errors=True)
        self._workdir = None
        self._bootstrap = None
