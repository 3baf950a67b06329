"""The Kafka oracle: kafka-clients' own partitioner and assignors, asked through a helper JVM.

``jvm/kafka-oracle`` is a small Java program (built by ``kconform setup`` into ``kafka-oracle/`` of the jars folder)
that reads JSON requests, one a line, and answers each with what Kafka's classes compute:
``Utils.murmur2``, ``BuiltInPartitioner.partitionForKey`` and the ``RangeAssignor``,
``RoundRobinAssignor``, ``StickyAssignor`` and ``CooperativeStickyAssignor`` of a group. The
differential tests start it once per session and send whole batches, so the JVM's start is paid
once; every wait is bounded and a dead helper is an error that shows what it printed.
``JvmHelper`` is that machinery for any such helper (``kconform.conformance.jvm.flink_oracle`` runs the other).
"""

from __future__ import annotations

import contextlib
import json
import os
import selectors
import subprocess
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType
from typing import Any, Final, Self

from ...reference_impl.kafka_strategies import Assignment, Group
from ...reference_impl.types import TopicPartition
from . import JvmArtifactsMissing, classpath, java_binary, jvm_dir, setup_hint

KAFKA_ORACLE: Final = "kafka-oracle"
"""The module whose jar and classpath run the helper (``jvm/kafka-oracle/pom.xml``)."""
MAIN_CLASS: Final = "kconform.KafkaOracle"
HEAP: Final = "-Xmx256m"
TIMEOUT_S: Final = 60.0
"""Longest wait for one answer, JVM start and class loading included."""


class OracleError(RuntimeError):
    """The helper answered with an error, gave no answer in time, or exited."""


class OracleRefused(OracleError):
    """The helper answered with an error: the class it asked threw (an assignor that cannot assign a group)."""


def oracle_jar(module: str = KAFKA_ORACLE, name: str = "the Kafka oracle") -> Path:
    """The jar of the helper built by ``module``, or ``JvmArtifactsMissing`` naming ``kconform setup``.

    ``module`` is a folder of the jars folder; a nested one (``kafka-clients-3.4.0/kafka-oracle``, a build at
    another release) holds the jar of its last part's name.
    """
    jars = sorted((jvm_dir() / module).glob(f"{Path(module).name}-*.jar"))
    if not jars:
        raise JvmArtifactsMissing(f"{name} is not built (no {module}-*.jar in {jvm_dir() / module}): {setup_hint()}")
    return jars[-1]


class JvmHelper:
    """One running helper JVM that answers JSON lines; use as a context manager, or ``close()`` it.

    ``module`` is the ``jvm/`` module whose jar and classpath run ``main_class`` (with ``args``);
    ``name`` is what its errors call it.
    """

    def __init__(self, module: str, main_class: str, args: Sequence[str], name: str, timeout_s: float) -> None:
        oracle_jar(module, name)
        self.name = name
        self.timeout_s = timeout_s
        command = [str(java_binary()), HEAP, "-cp", classpath(module), main_class, *args]
        handle, log_name = tempfile.mkstemp(prefix="kconform-oracle-", suffix=".log")
        os.close(handle)
        self._log = Path(log_name)  # the helper's stderr, shown when it fails
        with self._log.open("ab") as log:
            self._process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log)
        self._pending = b""

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self.close()

    def close(self) -> None:
        """End the helper: closing its input ends its loop; it is killed if it does not exit in time."""
        if self._process.stdin and not self._process.stdin.closed:
            with contextlib.suppress(BrokenPipeError):  # it has exited already
                self._process.stdin.close()
        try:
            self._process.wait(self.timeout_s)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait(TIMEOUT_S)
        if self._process.stdout:
            self._process.stdout.close()
        self._log.unlink(missing_ok=True)

    def request(self, payload: dict[str, Any]) -> dict[str, Any]:
        """Send one request line and wait, at most ``timeout_s``, for its answer line."""
        stdin = self._process.stdin
        if stdin is None or self._process.poll() is not None:
            raise OracleError(f"{self.name} has exited{self._stderr_tail()}")
        try:
            stdin.write(json.dumps(payload).encode("ascii") + b"\n")
            stdin.flush()
        except BrokenPipeError as exc:
            raise OracleError(f"{self.name} has exited{self._stderr_tail()}") from exc
        answer: dict[str, Any] = json.loads(self._read_line())
        if "error" in answer:
            raise OracleRefused(f"{self.name} could not answer {payload.get('op')!r}: {answer['error']}")
        return answer

    def _read_line(self) -> bytes:
        stdout = self._process.stdout
        assert stdout is not None
        deadline = time.monotonic() + self.timeout_s
        with selectors.DefaultSelector() as selector:
            selector.register(stdout, selectors.EVENT_READ)
            while b"\n" not in self._pending:
                left = deadline - time.monotonic()
                if left <= 0 or not selector.select(left):
                    self._process.kill()  # a late answer must never be read as the next request's
                    self._process.wait(TIMEOUT_S)
                    raise OracleError(f"{self.name} gave no answer within {self.timeout_s:g} s")
                chunk = os.read(stdout.fileno(), 1 << 16)
                if not chunk:
                    raise OracleError(f"{self.name} exited before answering{self._stderr_tail()}")
                self._pending += chunk
        line, _, self._pending = self._pending.partition(b"\n")
        return line

    def _stderr_tail(self) -> str:
        text = self._log.read_bytes()[-2000:].decode("utf-8", "replace").strip()
        return f"; it printed:\n{text}" if text else ""


class KafkaOracle(JvmHelper):
    """kafka-clients' partitioner and assignors in one running helper JVM.

    ``module``: the build to run, ``kafka-oracle`` (the release ``jvm/pom.xml`` pins) by default, or one at
    another release (``kconform.conformance.jvm.oracle_at_release``).
    """

    def __init__(self, timeout_s: float = TIMEOUT_S, module: str = KAFKA_ORACLE) -> None:
        super().__init__(module, MAIN_CLASS, (), "the Kafka oracle", timeout_s)

    def keyed(self, keys: Sequence[bytes], num_partitions: Sequence[int]) -> tuple[list[int], list[int]]:
        """(``Utils.murmur2(key)``, ``BuiltInPartitioner.partitionForKey(key, n)``) for each key and count."""
        answer = self.request({"op": "hash", "keys": [k.hex() for k in keys], "partitions": list(num_partitions)})
        return list(answer["murmur2"]), list(answer["partition"])

    def assign(self, strategy: str, groups: Sequence[Group]) -> list[Assignment]:
        """Kafka's assignor named ``strategy`` (``range``, ``roundrobin``, ``sticky``, ...) on each group."""
        answer = self.request({"op": "assign", "strategy": strategy, "groups": [_group_json(g) for g in groups]})
        return [
            {member: sorted(TopicPartition(t, p) for t, p in tps) for member, tps in assigned.items()}
            for assigned in answer["assignments"]
        ]


def _group_json(group: Group) -> dict[str, Any]:
    return {
        "partitions": dict(group.partitions),
        "members": [
            {
                "id": m.member_id,
                "instance": m.instance_id,
                "topics": sorted(m.topics),
                "owned": [[tp.topic, tp.partition] for tp in sorted(m.owned)],
                "generation": m.generation,
            }
            for m in group.members
        ],
    }
