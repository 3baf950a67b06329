"""The client workload on kafka-clients: the real KafkaProducer and KafkaConsumer, run by a harness JVM.

``jvm/client-workload`` (built at a release by ``kconform.conformance.jvm.client_workload_at_release``) takes one
JSON command a line and runs it on the client's own thread (a KafkaConsumer is not thread-safe). ``JvmClients`` is
the driver's ``Clients`` port over it: its producers and consumers present confluent-kafka's method names and
shapes (messages with ``topic()``, ``partition()``, ``offset()``, ``value()``, ``error()``; partitions as
``confluent_kafka.TopicPartition``; failures as ``confluent_kafka.KafkaException``), so ``driver.Run`` runs a
schedule on them unchanged. Callbacks (rebalance listener, commit, delivery) are served as confluent-kafka serves
them: each answer of the harness carries those the client ran since, and the proxy calls them on the caller's
thread before returning.

Where the two APIs differ, the proxy says so rather than pretends:

- settings: those of the driver and the broker's fast-test defaults are librdkafka's; each is passed on when
  kafka-clients has it (or its named counterpart, ``LIBRDKAFKA_NAMES``) and otherwise dropped. A drawn setting
  kafka-clients' ConfigDef does not have is refused, as librdkafka refuses an unknown property, so the driver's
  refusal loop drops it. The drawn ones come from the clients' own ConfigDef (``catalogue``).
- kafka-clients has no end-of-partition events and no offset store: ``store_offsets`` fails, naming why.
- ``poll`` (one message) takes the first record of a KafkaConsumer.poll and keeps the rest for the next
  ``poll``/``consume``: the consumer's position (and so a commit) is then past records not yet handed over.
  ``consume(n)`` hands over the whole batch, which may hold more than ``n`` (``max.poll.records``).
- a call for a client busy in another call waits for it (one thread per client, in the JVM as in the driver).
- auto-commits (``enable.auto.commit``, on unless told otherwise) get no application callback in kafka-clients: the
  harness reports every commit a consumer of a group completes through an interceptor (``CommitReporter``,
  ``ConsumerInterceptor.onCommit``), so an explicit commit may be reported twice (the same offsets).
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import queue
import re
import subprocess
import tempfile
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from functools import cache
from pathlib import Path
from types import TracebackType
from typing import Any, Final, Literal, Self

import confluent_kafka as ck

from ...jvm import java_binary
from ...paths import PACKAGE_ROOT
from .settings import CAPS, CLASSIC_GROUP_ONLY, FLOORS, Setting, classic_group

MAIN_CLASS: Final = "kconform.ClientWorkload"
JVM_FLAGS: Final = ("-Xmx256m", "-XX:+UseSerialGC")
QUIET: Final = "error"
"""The clients' log level in the harness's log (slf4j-simple, on its stderr) unless a caller asks for more: errors
alone, so a suite run's harness log stays small and ``Harness.stderr_tail`` shows why a harness died."""


def log_flags(levels: Mapping[str, str]) -> list[str]:
    """slf4j-simple's system properties for ``levels``: a logger name (a package or class of kafka-clients) to its
    level (``error``, ``warn``, ``info``, ``debug``, ``trace``); every other logger logs at ``QUIET``."""
    prefix = "-Dorg.slf4j.simpleLogger."
    flags = [f"{prefix}defaultLogLevel={QUIET}", f"{prefix}showDateTime=true", f"{prefix}dateTimeFormat=HH:mm:ss.SSS"]
    return flags + [f"{prefix}log.{name}={level}" for name, level in sorted(levels.items())]


"""As the brokers' (``conformance.brokers.kafka``): a bounded heap, the serial collector on a small machine."""
REPLY_BOUND_S: Final = 150.0
"""Longest wait for one answer: longer than any bound of the driver (a hung call is the driver's to report), and
than kafka-clients' own longest default wait (``max.block.ms``, ``default.api.timeout.ms``: 60 s)."""
START_BOUND_S: Final = 60.0
CONSUMER_CLOSE_MS: Final = 20_000
"""How long a KafkaConsumer's close may wait for its last commit and leave-group (``driver.CLOSE_BOUND_S``: 30 s)."""
CONFIGDEF: Final = PACKAGE_ROOT / "fixtures" / "kafka-clients" / "configdef-4.4.0.json"
"""kafka-clients 4.4.0's ConsumerConfig.configDef() and ProducerConfig.configDef() (the release ``jvm/pom.xml`` pins),
as the harness dumps them; ``python -m kconform.conformance.workloads.clients.jvm_clients RELEASE OUT`` writes
another release's (``write_configdef``)."""
LIBRDKAFKA_NAMES: Final[Mapping[str, str]] = {
    "fetch.wait.max.ms": "fetch.max.wait.ms",
    "topic.metadata.refresh.interval.ms": "metadata.max.age.ms",
}
"""librdkafka's name of a setting the driver or the broker sets, and kafka-clients' name of the same setting."""
DRIVER_ONLY: Final = frozenset({"enable.partition.eof", "log_level"})
"""Settings the driver and the broker's defaults give every client that kafka-clients has no counterpart of."""
OFFSET_INVALID: Final = ck.OFFSET_INVALID
CODES: Final[Mapping[str, int]] = {
    "org.apache.kafka.common.errors.TimeoutException": ck.KafkaError._TIMED_OUT,
    "org.apache.kafka.common.config.ConfigException": ck.KafkaError._INVALID_ARG,
    "java.lang.IllegalArgumentException": ck.KafkaError._INVALID_ARG,
    "java.lang.IllegalStateException": ck.KafkaError._STATE,
    "org.apache.kafka.common.errors.ProducerFencedException": ck.KafkaError._FENCED,
    "org.apache.kafka.clients.consumer.CommitFailedException": ck.KafkaError.ILLEGAL_GENERATION,
    "org.apache.kafka.common.errors.RebalanceInProgressException": ck.KafkaError.REBALANCE_IN_PROGRESS,
}
"""The confluent-kafka code a Java exception is reported under (its class and message are the error's text); any
other is ``_FAIL``. A timeout is ``_TIMED_OUT``, which the driver counts as an ambiguous commit."""
FATAL_TXN: Final = frozenset(
    {
        "org.apache.kafka.common.errors.ProducerFencedException",
        "org.apache.kafka.common.errors.InvalidProducerEpochException",
        "org.apache.kafka.common.errors.OutOfOrderSequenceException",
        "org.apache.kafka.common.errors.UnsupportedVersionException",
        "org.apache.kafka.common.errors.AuthorizationException",
        "org.apache.kafka.common.errors.TransactionalIdAuthorizationException",
        "org.apache.kafka.common.errors.TimeoutException",
        "java.lang.IllegalStateException",
    }
)
"""Exceptions of a transaction call after which aborting is no remedy (KafkaProducer's javadoc: close the producer;
a timeout: retry the same call)."""

JAVA_PRODUCER_FATAL: Final = frozenset(
    {
        "org.apache.kafka.common.errors.ProducerFencedException",
        "org.apache.kafka.common.errors.OutOfOrderSequenceException",
        "org.apache.kafka.common.errors.UnsupportedVersionException",
        "org.apache.kafka.common.errors.AuthorizationException",
        "org.apache.kafka.common.errors.TransactionalIdAuthorizationException",
        "org.apache.kafka.common.errors.ClusterAuthorizationException",
    }
)
"""The exceptions KafkaProducer's javadoc calls fatal for the producer ("ProducerFencedException,
OutOfOrderSequenceException, UnsupportedVersionException, or an AuthorizationException ... the only option is to
close the producer"): a producer's failure of one of these classes is its fatal error where the harness could not
read the producer's own state (``kafka_error``'s ``fatal``)."""


class HarnessError(RuntimeError):
    """The harness gave no answer in time or exited."""


class Harness:
    """One running harness JVM (``folder``: its build, ``client_workload_at_release.build_at_release``); use as a
    context manager. Requests from any thread; each waits at most ``bound_s`` for its own answer."""

    def __init__(
        self, folder: Path, bound_s: float = REPLY_BOUND_S, log_levels: Mapping[str, str] | None = None,
        log: Path | None = None,
    ) -> None:  # fmt: skip
        """``log_levels``: the clients' loggers to log at more than ``QUIET`` (``log_flags``); ``log``: where the
        JVM's log (its stderr) goes and stays after ``close`` (else a temporary file, removed then)."""
        self.bound_s = bound_s
        command = [str(java_binary()), *JVM_FLAGS, *log_flags(log_levels or {}), "-cp", str(folder / "*"), MAIN_CLASS]
        self._keep = log is not None
        if log is None:
            handle, log_name = tempfile.mkstemp(prefix="kconform-client-workload-", suffix=".log")
            os.close(handle)
            log = Path(log_name)
        self._log = log
        with self._log.open("ab") as stderr:
            self._process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr)
        self._ids = itertools.count(1)
        self._waiting: dict[int, queue.SimpleQueue[dict[str, Any]]] = {}
        self._lock = threading.Lock()
        threading.Thread(target=self._read, name="kconform-client-workload-reader", daemon=True).start()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self.close()

    def _read(self) -> None:
        stdout = self._process.stdout
        assert stdout is not None
        for line in stdout:
            answer = json.loads(line)
            with self._lock:
                waiting = self._waiting.pop(int(answer.get("id", -1)), None)
            if waiting is not None:
                waiting.put(answer)

    def request(self, op: str, bound_s: float | None = None, **fields: Any) -> dict[str, Any]:
        """Send one command; its answer (``result`` or ``error``, and ``callbacks``) within the bound."""
        answer: queue.SimpleQueue[dict[str, Any]] = queue.SimpleQueue()
        with self._lock:
            ident = next(self._ids)
            self._waiting[ident] = answer
            stdin = self._process.stdin
            if stdin is None or self._process.poll() is not None:
                raise HarnessError(f"the client workload's harness has exited{self.stderr_tail()}")
            try:
                stdin.write(json.dumps({"id": ident, "op": op, **fields}).encode("ascii") + b"\n")
                stdin.flush()
            except BrokenPipeError as exc:
                raise HarnessError(f"the client workload's harness has exited{self.stderr_tail()}") from exc
        bound = self.bound_s if bound_s is None else bound_s
        try:
            return answer.get(timeout=bound)
        except queue.Empty:
            with self._lock:
                self._waiting.pop(ident, None)
            raise HarnessError(f"the client workload's harness gave no answer to {op!r} within {bound:g} s") from None

    def configdef(self) -> dict[str, Any]:
        result: dict[str, Any] = self.request("configdef", START_BOUND_S)["result"]
        return result

    def close(self) -> None:
        """Closing its input ends its loop (clients still open die with the JVM); killed if it does not exit."""
        if self._process.stdin and not self._process.stdin.closed:
            with contextlib.suppress(BrokenPipeError):
                self._process.stdin.close()
        try:
            self._process.wait(30)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait(30)
        if not self._keep:
            self._log.unlink(missing_ok=True)

    def stderr_tail(self) -> str:
        text = self._log.read_bytes()[-2000:].decode("utf-8", "replace").strip() if self._log.exists() else ""
        return f"; it printed:\n{text}" if text else ""


# -- errors and values ---------------------------------------------------------------------------------------------


def kafka_error(error: Mapping[str, Any], transactional: bool = False) -> ck.KafkaError:
    """A Java exception as confluent-kafka's error: its class and message as the text. A producer's (the harness
    gives its errors ``fatal``) is ``fatal()`` when the harness read the producer's TransactionManager in its fatal
    error state after it, or, where it could not read it (``null``), when its class is one KafkaProducer's javadoc
    calls fatal (``JAVA_PRODUCER_FATAL``); a fatal error requires no abort (none would help)."""
    cls = str(error["class"])
    said = error.get("fatal")
    fatal = bool(said) if said is not None else "fatal" in error and cls in JAVA_PRODUCER_FATAL
    return ck.KafkaError(
        CODES.get(cls, ck.KafkaError._FAIL),
        f"{cls}: {error['message']}",
        fatal=fatal,
        retriable=bool(error.get("retriable")),
        txn_requires_abort=transactional and cls not in FATAL_TXN and not fatal,
    )


def hex_of(data: bytes | str | None) -> str | None:
    if data is None:
        return None
    return (data.encode() if isinstance(data, str) else bytes(data)).hex()


def from_hex(text: str | None) -> bytes | None:
    return None if text is None else bytes.fromhex(text)


class JvmMessage:
    """A record (or a delivery report) in confluent-kafka's ``Message`` shape."""

    def __init__(
        self,
        topic: str,
        partition: int,
        offset: int,
        key: bytes | None,
        value: bytes | None,
        error: ck.KafkaError | None = None,
    ) -> None:
        self._topic, self._partition, self._offset = topic, partition, offset
        self._key, self._value, self._error = key, value, error

    def topic(self) -> str:
        return self._topic

    def partition(self) -> int:
        return self._partition

    def offset(self) -> int:
        return self._offset

    def key(self) -> bytes | None:
        return self._key

    def value(self) -> bytes | None:
        return self._value

    def error(self) -> ck.KafkaError | None:
        return self._error

    def __repr__(self) -> str:
        return f"JvmMessage({self._topic}[{self._partition}]@{self._offset}, {self._value!r})"


def tp_rows(partitions: Iterable[ck.TopicPartition]) -> list[list[Any]]:
    return [[p.topic, p.partition] for p in partitions]


# -- settings ------------------------------------------------------------------------------------------------------


Role = Literal["C", "P"]


def translate(
    config: Mapping[str, Any], known: frozenset[str], harness_keys: frozenset[str], release: str
) -> tuple[dict[str, str], dict[str, Any], list[str]]:
    """(kafka-clients settings, callbacks, dropped harness settings) of a confluent-kafka config: a callable is a
    callback; a harness setting (``harness_keys``) is renamed or dropped; any other setting kafka-clients does not
    have is refused with the message librdkafka gives an unknown property, naming it."""
    settings: dict[str, str] = {}
    callbacks: dict[str, Any] = {}
    dropped: list[str] = []
    for name, value in config.items():
        if callable(value):
            callbacks[name] = value
            continue
        text = {True: "true", False: "false"}.get(value, str(value)) if isinstance(value, bool) else str(value)
        if name in known:
            settings[name] = text
        elif name in harness_keys or name in DRIVER_ONLY:
            if LIBRDKAFKA_NAMES.get(name) in known:
                settings.setdefault(LIBRDKAFKA_NAMES[name], text)
            else:
                dropped.append(name)
        else:
            raise ck.KafkaException(
                ck.KafkaError(
                    ck.KafkaError._INVALID_ARG,
                    f'No such configuration property: "{name}" (kafka-clients {release} has no such setting)',
                )
            )
    for name, value in JAVA_WORKLOAD_DEFAULTS.items():
        if name in known:
            settings.setdefault(name, value)
    if not classic_group(settings):
        for name in CLASSIC_GROUP_ONLY:
            if name in settings:  # the broker sets them for a group.protocol=consumer member: kafka-clients refuses
                del settings[name]
                dropped.append(name)
    return settings, callbacks, dropped


class JvmClients:
    """The driver's ``Clients`` port on kafka-clients: one harness JVM for every client of a run.

    ``folder``: the harness built at the release under test; ``harness_keys``: the settings the driver and the
    broker give every client (``harness_settings``), passed on or dropped rather than refused."""

    def __init__(
        self, folder: Path, release: str, harness_keys: Iterable[str] = (), log_levels: Mapping[str, str] | None = None,
        log: Path | None = None,
    ) -> None:  # fmt: skip
        """``log_levels`` and ``log``: the harness's (``Harness``), for a replay with the clients' own log."""
        self.release = release
        self.harness = Harness(folder, log_levels=log_levels, log=log)
        self.harness_keys = frozenset(harness_keys)
        dump = self.harness.configdef()
        self.known: dict[Role, frozenset[str]] = {
            "C": frozenset(s["name"] for s in dump["consumer"]),
            "P": frozenset(s["name"] for s in dump["producer"]),
        }
        self.dump = dump
        self.names = itertools.count()
        self.dropped: list[str] = []

    def defaults(self, role: str) -> dict[str, str]:
        """What ``role`` (C or P) runs with where nothing is drawn: kafka-clients' own defaults from its ConfigDef,
        under the workload's own (``JAVA_WORKLOAD_DEFAULTS``, given to every client that has the setting)."""
        rows = self.dump["consumer" if role == "C" else "producer"]
        own = {str(r["name"]): str(r["default"]) for r in rows if r.get("default") not in (None, "")}
        known = self.known["C" if role == "C" else "P"]
        return own | {name: value for name, value in JAVA_WORKLOAD_DEFAULTS.items() if name in known}

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self.close()

    def close(self) -> None:
        self.harness.close()

    def consumer(self, config: dict[str, Any]) -> JvmConsumer:
        settings, callbacks, dropped = translate(config, self.known["C"], self.harness_keys, self.release)
        self.dropped += dropped
        return JvmConsumer(self.harness, f"c{next(self.names)}", settings, callbacks.get("on_commit"))

    def producer(self, config: dict[str, Any]) -> JvmProducer:
        settings, _callbacks, dropped = translate(config, self.known["P"], self.harness_keys, self.release)
        self.dropped += dropped
        return JvmProducer(self.harness, f"p{next(self.names)}", settings)


def harness_settings(broker: Any) -> frozenset[str]:
    """Every setting the driver gives a client whatever the schedule drew: the broker's and the driver's own."""
    from .driver import CONSUMER_DEFAULTS

    return frozenset(
        {*broker.client_config("consumer"), *broker.client_config("producer"), *CONSUMER_DEFAULTS, *DRIVER_ONLY}
    )


class _Proxy:
    def __init__(self, harness: Harness, name: str) -> None:
        self._harness, self._name = harness, name

    def _call(self, op: str, transactional: bool = False, **fields: Any) -> Any:
        answer = self._harness.request(op, client=self._name, **fields)
        self._serve(answer.get("callbacks", ()))
        if "error" in answer:
            raise ck.KafkaException(kafka_error(answer["error"], transactional))
        return answer.get("result")

    def _serve(self, callbacks: Sequence[Mapping[str, Any]]) -> None:
        raise NotImplementedError


class JvmConsumer(_Proxy):
    """A KafkaConsumer with confluent-kafka's Consumer methods (those the workload's driver calls)."""

    def __init__(
        self, harness: Harness, name: str, settings: Mapping[str, str], on_commit: Callable[..., Any] | None
    ) -> None:
        super().__init__(harness, name)
        self._on_commit = on_commit
        self._listeners: dict[str, Callable[..., Any] | None] = {}
        self._kept: list[JvmMessage] = []
        self._call("consumer", config=dict(settings))

    def _serve(self, callbacks: Sequence[Mapping[str, Any]]) -> None:
        for event in callbacks:
            kind = event["kind"]
            if kind == "committed":
                if self._on_commit is not None:
                    error = None if event["error"] is None else kafka_error(event["error"])
                    parts = [ck.TopicPartition(t, p, o) for t, p, o in event["offsets"]]
                    self._on_commit(error, parts)
                continue
            parts = [ck.TopicPartition(t, p) for t, p in event["partitions"]]
            listener = self._listeners.get("on_lost") if kind == "lost" else None
            if kind == "lost" and listener is None:
                listener = self._listeners.get("on_revoke")  # as confluent-kafka does without on_lost
            elif kind != "lost":
                listener = self._listeners.get("on_assign" if kind == "assigned" else "on_revoke")
            if listener is not None:
                listener(self, parts)

    def subscribe(
        self,
        topics: Sequence[str],
        on_assign: Callable[..., Any] | None = None,
        on_revoke: Callable[..., Any] | None = None,
        on_lost: Callable[..., Any] | None = None,
    ) -> None:
        self._listeners = {"on_assign": on_assign, "on_revoke": on_revoke, "on_lost": on_lost}
        patterns = [t for t in topics if t.startswith("^")]
        if patterns and len(topics) > 1:
            raise ValueError("kafka-clients subscribes to one pattern or to a list of topics, not both")
        if patterns:
            self._call("subscribe", pattern=patterns[0])
        else:
            self._call("subscribe", topics=list(topics))

    def assign(self, partitions: Sequence[ck.TopicPartition]) -> None:
        self._call("assign", partitions=tp_rows(partitions))
        for p in partitions:
            if p.offset not in (ck.OFFSET_STORED, OFFSET_INVALID):
                self.seek(p)

    def _fetch(self, timeout: float) -> list[JvmMessage]:
        rows = self._call("fetch", timeout_ms=max(0, int(timeout * 1000)))
        return [JvmMessage(t, p, o, from_hex(k), from_hex(v)) for t, p, o, k, v in rows]

    def consume(self, num_messages: int = 1, timeout: float = -1) -> list[JvmMessage]:
        if self._kept:
            got, self._kept = self._kept, []
            return got
        return self._fetch(timeout if timeout >= 0 else 3600.0)

    def poll(self, timeout: float = -1) -> JvmMessage | None:
        if not self._kept:
            self._kept = self._fetch(timeout if timeout >= 0 else 3600.0)
        return self._kept.pop(0) if self._kept else None

    def commit(
        self,
        message: JvmMessage | None = None,
        offsets: Sequence[ck.TopicPartition] | None = None,
        asynchronous: bool = True,
    ) -> list[ck.TopicPartition] | None:
        explicit: list[list[Any]] | None = None
        if message is not None:
            explicit = [[message.topic(), message.partition(), message.offset() + 1]]
        elif offsets is not None:
            explicit = [[p.topic, p.partition, p.offset] for p in offsets]
        if asynchronous:
            if explicit is not None:
                raise ValueError("the harness commits given offsets synchronously only")
            self._call("commit_async")
            return None
        rows = self._call("commit_sync", offsets=explicit)
        return [ck.TopicPartition(t, p, o) for t, p, o in rows]

    def store_offsets(self, *_args: Any, **_kwargs: Any) -> None:
        raise ck.KafkaException(
            ck.KafkaError(
                ck.KafkaError._NOT_IMPLEMENTED,
                "kafka-clients has no offset store (store_offsets and enable.auto.offset.store are librdkafka's)",
            )
        )

    def pause(self, partitions: Sequence[ck.TopicPartition]) -> None:
        self._call("pause", partitions=tp_rows(partitions))

    def resume(self, partitions: Sequence[ck.TopicPartition]) -> None:
        self._call("resume", partitions=tp_rows(partitions))

    def seek(self, partition: ck.TopicPartition) -> None:
        fields: dict[str, Any] = {"topic": partition.topic, "partition": partition.partition}
        if partition.offset == ck.OFFSET_BEGINNING:
            fields["to"] = "beginning"
        elif partition.offset == ck.OFFSET_END:
            fields["to"] = "end"
        else:
            fields["offset"] = partition.offset
        self._call("seek", **fields)

    def position(self, partitions: Sequence[ck.TopicPartition]) -> list[ck.TopicPartition]:
        rows = self._call("position", partitions=tp_rows(partitions))
        return [ck.TopicPartition(t, p, o) for t, p, o in rows]

    def committed(self, partitions: Sequence[ck.TopicPartition], timeout: float = -1) -> list[ck.TopicPartition]:
        """``KafkaConsumer.committed(Set, Duration)`` with ``timeout`` (seconds; none given: the release's
        ``default.api.timeout.ms``, as confluent-kafka's waits for good): each partition's committed offset, -1001
        (``OFFSET_INVALID``) where the group has none, as confluent-kafka's ``committed`` answers."""
        fields: dict[str, Any] = {"partitions": tp_rows(partitions)}
        if timeout >= 0:
            fields["timeout_ms"] = int(timeout * 1000)
        rows = self._call("committed", **fields)
        return [ck.TopicPartition(t, p, o) for t, p, o in rows]

    def get_watermark_offsets(
        self, partition: ck.TopicPartition, timeout: float | None = None, cached: bool = False
    ) -> tuple[int, int]:
        """(unknown, position + ``currentLag``): what the consumer knows of the partition's end without asking the
        broker (as ``cached=True`` asks of librdkafka); unknown (-1001) when it has no lag for it yet."""
        ((_t, _p, lag),) = self._call("lag", partitions=tp_rows([partition]))
        if lag < 0:
            return OFFSET_INVALID, OFFSET_INVALID
        (position,) = self.position([partition])
        return OFFSET_INVALID, (position.offset + lag if position.offset >= 0 else OFFSET_INVALID)

    def assignment(self) -> list[ck.TopicPartition]:
        return [ck.TopicPartition(t, p) for t, p in self._call("assignment")]

    def close(self) -> None:
        """``KafkaConsumer.close`` bounded below the driver's bound for a close (its own default is 30 s, the
        driver's bound itself: a close that waited its default out would count as hung)."""
        self._call("close", timeout_ms=CONSUMER_CLOSE_MS)


class JvmProducer(_Proxy):
    """A KafkaProducer with confluent-kafka's Producer methods (those the workload's driver calls)."""

    def __init__(self, harness: Harness, name: str, settings: Mapping[str, str]) -> None:
        super().__init__(harness, name)
        self._refs = itertools.count()
        self._sent: dict[int, tuple[Callable[..., Any] | None, bytes | None, bytes | None]] = {}
        self._lock = threading.Lock()
        self._call("producer", config=dict(settings))

    def _serve(self, callbacks: Sequence[Mapping[str, Any]]) -> None:
        for event in callbacks:
            with self._lock:
                callback, key, value = self._sent.pop(int(event["ref"]), (None, None, None))
            if callback is None:
                continue
            error = None if event["error"] is None else kafka_error(event["error"])
            callback(error, JvmMessage(event["topic"], event["partition"], event["offset"], key, value, error))

    def produce(
        self,
        topic: str,
        value: bytes | str | None = None,
        key: bytes | str | None = None,
        partition: int = -1,
        on_delivery: Callable[..., Any] | None = None,
        callback: Callable[..., Any] | None = None,
    ) -> None:
        ref = next(self._refs)
        value_bytes = None if value is None else bytes.fromhex(hex_of(value) or "")
        key_bytes = None if key is None else bytes.fromhex(hex_of(key) or "")
        with self._lock:
            self._sent[ref] = (on_delivery or callback, key_bytes, value_bytes)
        self._call(
            "send",
            ref=ref,
            topic=topic,
            partition=None if partition is None or partition < 0 else partition,
            key=hex_of(key),
            value=hex_of(value),
        )

    def poll(self, timeout: float = -1) -> int:
        self._call("poll")
        return 0

    def flush(self, timeout: float = -1) -> int:
        self._call("flush")
        return 0

    def init_transactions(self, timeout: float = -1) -> None:
        self._call("init_transactions", transactional=True)

    def begin_transaction(self) -> None:
        self._call("begin_transaction", transactional=True)

    def commit_transaction(self, timeout: float = -1) -> None:
        self._call("commit_transaction", transactional=True)

    def abort_transaction(self, timeout: float = -1) -> None:
        self._call("abort_transaction", transactional=True)

    def close(self, timeout: float = 30.0) -> None:
        self._call("close", timeout_ms=int(timeout * 1000))


# -- the drawn settings, from the ConfigDef ------------------------------------------------------------------------

JAVA_NOT_DRAWN: Final[Mapping[str, str]] = {
    "bootstrap.servers|group.id|client.id|transactional.id|group.instance.id|client.rack": (
        "set by the workload (which broker, group, transaction, identity)"
    ),
    "ssl[._].*|sasl[._].*|security[._].*": "security: the broker is plaintext",
    "socket[._].*|send.buffer.bytes|receive.buffer.bytes|reconnect[._].*|connections.max.idle.ms|client.dns.lookup": (
        "transport"
    ),
    "metadata.recovery.*|bootstrap.*": "re-bootstrap after every broker is lost",
    "metrics?[._].*|enable.metrics.push|auto.include.jmx.reporter": "metrics",
    "internal[._].*": "kafka-clients' internal settings, not an application's",
    "delivery.timeout.ms|transaction.timeout.ms": "bounds a send or a transaction: drawn within the budget (BOUNDED)",
    "allow.auto.create.topics|exclude.internal.topics": "which topics exist is the workload's, not the client's",
    "share[._].*": "share groups (KIP-932), not consumer groups",
    "transaction.two.phase.commit.enable": "two-phase commit (KIP-939), off on the broker",
}
"""kafka-clients setting-name patterns left out of the draw, each with why (classes and lists have no range and
are left out anyway, but ``partition.assignment.strategy``, drawn from ``ASSIGNORS``)."""
JAVA_NOT_DRAWN_PATTERN: Final = re.compile("|".join(f"(?:{p})" for p in JAVA_NOT_DRAWN))
JAVA_CAPS: Final[Mapping[str, int]] = {
    **CAPS,
    "max.block.ms": 10_000,
    "default.api.timeout.ms": 20_000,
    "fetch.max.wait.ms": 1_000,
    "metadata.max.idle.ms": 30_000,
}
"""``settings.CAPS`` and kafka-clients' own waits the workload would otherwise wait out, each below the driver's
bound for the calls it bounds (``driver.CALL_SLACK_S``, 30 s): a call that waited its own bound out is not hung."""
JAVA_WORKLOAD_DEFAULTS: Final[Mapping[str, str]] = {
    "max.block.ms": str(JAVA_CAPS["max.block.ms"]),
    "default.api.timeout.ms": str(JAVA_CAPS["default.api.timeout.ms"]),
    "max.poll.interval.ms": str(JAVA_CAPS["max.poll.interval.ms"]),
    "delivery.timeout.ms": "30500",
}
"""The workload's own values where none is drawn, as ``driver.CONSUMER_DEFAULTS`` for librdkafka: kafka-clients'
defaults (60 s each) would make a send, ``initTransactions`` or ``commitSync`` that waits them out look hung at
the driver's bound. ``max.poll.interval.ms`` at its cap (15 s, not 300 s) puts every member's group time-outs
(its poll interval, and the rebalance timeout a classic member joins with) inside a schedule's span, so a stall,
a slow rebalance callback or a rebalance that does not finish is met by an eviction in every draw, not only in
those that draw the setting. ``delivery.timeout.ms`` (kafka-clients' default 120 s, the longest a record may take
to be acknowledged or failed after ``send`` returns) bounds ``KafkaProducer.flush()``, which takes no timeout and
waits for every record sent before it: at 120 s, a flush that waited out a record's delivery time looked hung at
the driver's 60 s bound (``driver.flush``: 30 s + ``CALL_SLACK_S``). 30.5 s is the lowest value the draw takes
(``JAVA_BOUNDED``: kafka-clients refuses less than ``linger.ms`` + ``request.timeout.ms`` as capped), so a flush
over the driver's bound is past kafka-clients' own."""
JAVA_FLOORS: Final[Mapping[str, int]] = {
    **FLOORS,
    "heartbeat.interval.ms": 100,
    "max.block.ms": 1_000,
    "default.api.timeout.ms": 1_000,
    "request.timeout.ms": 1_000,
}
"""``settings.FLOORS`` and waits of zero that make every call of the workload time out at once."""
JAVA_BOUNDED: Final[Mapping[str, tuple[int, int]]] = {
    "delivery.timeout.ms": (30_500, 60_000),
    "transaction.timeout.ms": (10_000, 60_000),
}
"""kafka-clients refuses a ``delivery.timeout.ms`` below ``linger.ms + request.timeout.ms`` (drawn up to 500 and
30 000 ms)."""
ASSIGNORS: Final = (
    "org.apache.kafka.clients.consumer.RangeAssignor,org.apache.kafka.clients.consumer.CooperativeStickyAssignor",
    "org.apache.kafka.clients.consumer.RangeAssignor",
    "org.apache.kafka.clients.consumer.RoundRobinAssignor",
    "org.apache.kafka.clients.consumer.StickyAssignor",
    "org.apache.kafka.clients.consumer.CooperativeStickyAssignor",
)
"""``partition.assignment.strategy`` (a list of classes, no range in the ConfigDef): kafka-clients' assignors."""
NOT_A_CHOICE: Final[Mapping[str, frozenset[str]]] = {
    "auto.offset.reset": frozenset({"none"}),
}
"""Values left out of a range: ``none`` throws on every partition the group has no offset for, which the driver
knows only under librdkafka's name (``error``) and would wait out in the drain."""
TYPE_BOUNDS: Final[Mapping[str, tuple[int, int]]] = {
    "SHORT": (-(2**15), 2**15 - 1),
    "INT": (-(2**31), 2**31 - 1),
    "LONG": (-(2**63), 2**63 - 1),
}
RANGE: Final = re.compile(r"^\[(?P<low>-?\d+|\.\.\.)?,\.\.\.(?:,(?P<high>-?\d+))?\]$")
CHOICES: Final = re.compile(r"^(?P<ci>\(case insensitive\) )?\[(?P<values>[^\]]*)\]$")


def parse_setting(row: Mapping[str, Any], role: Literal["C", "P", "*"]) -> Setting | None:
    """One ConfigDef key as a ``Setting``: a boolean's two values, a number's range (its type's bounds where the
    validator leaves a side open, or where it has none), a string's valid values; ``None`` for what has no range
    (a class, a list, a password, a free string, a double)."""
    name, kind, validator = str(row["name"]), str(row["type"]), row.get("validator")
    default = "" if row.get("default") is None else str(row["default"])
    importance = str(row.get("importance", "LOW")).lower()
    if kind == "BOOLEAN":
        return Setting(name, role, default, ("true", "false"), importance=importance)
    if kind in TYPE_BOUNDS:
        low, high = TYPE_BOUNDS[kind]
        if validator is None:
            low = 0  # any number of the type: a negative time or size would only show the refusal
        else:
            span = RANGE.match(str(validator))
            if span is None:
                return None
            if span["low"] not in (None, "..."):
                low = int(span["low"])
            if span["high"] is not None:
                high = int(span["high"])
        low = max(low, JAVA_FLOORS.get(name, low))
        high = max(low, min(high, JAVA_CAPS.get(name, high)))
        return Setting(name, role, default, (), low, high, importance=importance)
    if kind == "STRING" and validator is not None and (found := CHOICES.match(str(validator))):
        values = [v.strip() for v in found["values"].split(",") if v.strip()]
        if found["ci"]:
            values = [v.lower() for v in values]
            default = default.lower()
        values = [v for v in values if ":" not in v and v not in NOT_A_CHOICE.get(name, frozenset())]
        return Setting(name, role, default, tuple(values), importance=importance) if values else None
    return None


def parse_configdef(dump: Mapping[str, Sequence[Mapping[str, Any]]]) -> tuple[Setting, ...]:
    """The settings of a harness's ConfigDef dump (``{"consumer": [...], "producer": [...]}``) that the workload
    draws: those with a range, minus ``JAVA_NOT_DRAWN``, with ``JAVA_BOUNDED`` and the assignors; a setting of both
    clients is role ``*``."""
    consumer = {str(r["name"]): r for r in dump["consumer"]}
    producer = {str(r["name"]): r for r in dump["producer"]}
    chosen: dict[str, Setting] = {}
    for name in sorted(consumer.keys() | producer.keys()):
        if JAVA_NOT_DRAWN_PATTERN.fullmatch(name):
            continue
        both = name in consumer and name in producer
        role: Literal["C", "P", "*"] = "*" if both else "C" if name in consumer else "P"
        setting = parse_setting(consumer.get(name) or producer[name], role)
        if setting is not None:
            chosen[name] = setting
    chosen["partition.assignment.strategy"] = Setting(
        "partition.assignment.strategy", "C", ASSIGNORS[0], ASSIGNORS, importance="high"
    )
    for name, (low, high) in JAVA_BOUNDED.items():
        if name in producer:
            chosen[name] = Setting(name, "P", str(low), (), low, high, importance="medium")
    return tuple(sorted(chosen.values(), key=lambda s: s.name))


@cache
def catalogue(path: Path = CONFIGDEF) -> tuple[Setting, ...]:
    """The kafka-clients settings the workload draws, from a ConfigDef dump (the pinned release's by default; a
    harness at another release dumps its own: ``parse_configdef(JvmClients(...).dump)``)."""
    return parse_configdef(json.loads(path.read_text(encoding="utf-8")))


def configdef_text(dump: Mapping[str, Any]) -> str:
    """A ConfigDef dump as the fixtures hold it (``CONFIGDEF``): keys sorted, one space of indent, the clients'
    own order of settings."""
    return json.dumps(dump, indent=1, sort_keys=True)


def write_configdef(release: str, out: Path, say: Callable[[str], None] = print) -> int:
    """Build the harness at kafka-clients ``release`` (Maven, unless built already), dump its clients' ConfigDef
    to ``out`` as the fixtures hold it; the count of settings written. No broker is needed."""
    from ...jvm.client_workload_at_release import build_at_release  # Maven's tooling: only when writing one

    with Harness(build_at_release(release, say)) as harness:
        dump = harness.configdef()
    out.write_text(configdef_text(dump), encoding="utf-8")
    return sum(len(rows) for rows in dump.values())


def main(argv: Sequence[str] | None = None) -> None:
    import argparse

    parser = argparse.ArgumentParser(description="Write a kafka-clients release's ConfigDef dump (the fixtures').")
    parser.add_argument("release", help="the kafka-clients release, such as 4.4.0")
    parser.add_argument("out", type=Path, help="the JSON to write, such as fixtures/kafka-clients/configdef-4.4.0.json")
    args = parser.parse_args(argv)
    print(f"wrote {write_configdef(args.release, args.out)} settings of kafka-clients {args.release} to {args.out}")


__all__ = [
    "JvmClients",
    "JvmConsumer",
    "JvmProducer",
    "catalogue",
    "harness_settings",
    "parse_configdef",
    "write_configdef",
]


if __name__ == "__main__":
    main()
