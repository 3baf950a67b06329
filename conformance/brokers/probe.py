"""Measure, on a live broker, each Kafka semantic that spec/kafka.md relies on.

Every capability is observed end to end through ``KafkaClient`` (never read from a version
table), so a broker's deviations are found by the probe itself. A requirement whose check needs
a missing capability is reported as "not verifiable on this broker: <capability>", never as pass.
Every step is bounded by the client's timeout; the transaction-timeout probe starts first and is
judged last, so its wait overlaps the other probes.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict
from importlib.util import find_spec
from pathlib import Path
from typing import TYPE_CHECKING, Final
from uuid import uuid4

from ...reference_impl.ports import (
    Isolation,
    KafkaError,
    ProducerFencedError,
    TransactionTimeoutError,
)
from ...reference_impl.types import TopicPartition
from ..extras import PIPELINE_FIX
from . import (
    BROKER_ENV,
    BROKER_KINDS,
    DEFAULT_BROKER,
    Broker,
    BrokerStartError,
    BrokerUnavailable,
    broker_from_env,
    release_option,
)
from .capability import Capability, format_table
from .facts import BrokerFacts, read_facts

if TYPE_CHECKING:  # the Kafka client (the pipeline extra) is imported where a probe runs, so --help needs none
    from ...reference_impl.kafka_client import KafkaClient, KafkaTransactionalProducer

RC = Isolation.READ_COMMITTED
RU = Isolation.READ_UNCOMMITTED
PROBE_TIMEOUT_S: Final = 5.0
TXN_TIMEOUT_MS: Final = 1000
TXN_TIMEOUT_WAIT_S: Final = 15.0
"""Kafka's coordinator looks for expired transactions every 10 s by default."""
FATAL_TXN_ERRORS: Final = (ProducerFencedError, TransactionTimeoutError)


REQUIREMENTS: Final[Mapping[str, str]] = {
    "abort_hidden_from_read_committed": "KAFKA-001",
    "last_stable_offset": "KAFKA-002",
    "control_markers_occupy_offsets": "KAFKA-003",
    "zombie_fencing": "KAFKA-004",
    "transaction_timeout": "KAFKA-005",
    "send_offsets_to_transaction": "KAFKA-006",
    "read_uncommitted": "KAFKA-007",
    "list_offsets_latest": "KAFKA-008",
    "create_partitions": "KAFKA-009",
    "group_offset_metadata": "KAFKA-010",
    "offsets_for_times": "KAFKA-011",
    "regex_subscription_new_topic": "KAFKA-012",
    "group_offsets": "KAFKA-013",
    "txn_state_errors": "KAFKA-014",
    "resume_transaction": "KAFKA-015",
    "outside_write_refused": "KAFKA-016",
}
"""Capability -> the KAFKA requirement of spec/kafka.md it shows."""


DEPENDENTS: Final[Mapping[str, tuple[str, ...]]] = {
    "abort_hidden_from_read_committed": ("COMMIT-004", "COMMIT-008"),
    "last_stable_offset": ("COMMIT-008",),
    "zombie_fencing": ("COMMIT-006", "COMMIT-012"),
    "transaction_timeout": ("COMMIT-007",),
    "send_offsets_to_transaction": ("COMMIT-011",),
    "create_partitions": ("DISC-001", "DISC-005", "RESTORE-004"),
    "regex_subscription_new_topic": ("DISC-002",),
    "group_offsets": ("RESTORE-007",),
    "resume_transaction": ("COMMIT-003", "COMMIT-009"),
}
"""Requirements of the other spec pages whose check on a live broker needs the capability (see their **Why**)."""


def not_verifiable(capabilities: Sequence[Capability]) -> dict[str, str]:
    """Requirement id -> "not verifiable on this broker: <capability>" for each missing capability.

    Covers the capability's own KAFKA id and the requirements that depend on it (``DEPENDENTS``);
    a requirement needing several missing capabilities names them all.
    """
    missing: dict[str, list[str]] = {}
    for c in capabilities:
        if not c.supported:
            for requirement in (c.requirement_id, *DEPENDENTS.get(c.name, ())):
                missing.setdefault(requirement, []).append(c.name)
    return {req: f"not verifiable on this broker: {', '.join(names)}" for req, names in sorted(missing.items())}


def _capability(name: str, supported: bool, observation: str) -> Capability:
    return Capability(name, REQUIREMENTS[name], supported, observation)


class _Probe:
    """The probes of one run; names are unique per run so an external broker can be probed again."""

    def __init__(self, client: KafkaClient) -> None:
        self.client = client
        self.run = uuid4().hex[:8]

    def topic(self, label: str, partitions: int = 1) -> TopicPartition:
        name = f"kconform-probe-{self.run}-{label}"
        self.client.create_topic(name, partitions)
        return TopicPartition(name, 0)

    def values(self, tp: TopicPartition, isolation: Isolation) -> list[bytes | None]:
        return [r.value for r in self.client.read(tp, 0, isolation, 1000)]

    def settled(self, tp: TopicPartition, want: list[bytes | None]) -> list[bytes | None]:
        """read_committed once it shows ``want``, or as last seen after the probe's timeout.

        Kafka writes a transaction's markers after EndTxn returns, so a read right after a commit
        or an abort may still be held back by the LSO; a broker that never shows ``want`` is
        measured by what it shows when the wait ends.
        """
        deadline = time.monotonic() + self.client.timeout_s
        seen = self.values(tp, RC)
        while seen != want and time.monotonic() < deadline:
            time.sleep(0.05)  # polling interval of a bounded wait for the markers
            seen = self.values(tp, RC)
        return seen

    def open_txn(
        self, tid: str, tp: TopicPartition, value: bytes, timeout_ms: int | None = None
    ) -> KafkaTransactionalProducer:
        producer = self.client.init_producer(f"kconform-probe-{self.run}-{tid}", timeout_ms)
        producer.begin_transaction()
        producer.produce(tp.topic, tp.partition, None, value)
        producer.flush()
        return producer

    # -- the probes --------------------------------------------------------------------------

    def create_partitions(self) -> Capability:
        tp = self.topic("grow")
        try:
            self.client.create_partitions(tp.topic, 2)
        except KafkaError as error:
            return _capability("create_partitions", False, f"CreatePartitions 1 -> 2 failed: {error}")
        offset = self.client.produce(TopicPartition(tp.topic, 1), None, b"new")
        return _capability("create_partitions", offset == 0, f"grew to 2 partitions; first record on p1 at {offset}")

    def list_offsets_latest(self) -> Capability:
        tp = self.topic("latest")
        offsets = self.client.produce_batch(tp, [(None, b"a"), (None, b"b"), (None, b"c")], linger_ms=200)
        latest = self.client.latest_offset(tp, RU)
        expected = max(offsets) + 1
        return _capability(
            "list_offsets_latest",
            latest == expected,
            f"3-record batch at offsets {offsets}: ListOffsets latest = {latest}, high watermark {expected}",
        )

    def offsets_for_times(self) -> Capability:
        tp = self.topic("times")
        base = int(time.time() * 1000) - 60_000
        for i in range(3):
            self.client.produce_batch(tp, [(None, b"t%d" % i)], timestamp_ms=base + 1000 * i)
        found = (self.client.offset_for_time(tp, base + 500), self.client.offset_for_time(tp, base + 50_000))
        return _capability(
            "offsets_for_times",
            found == (1, None),
            f"records at t, t+1s, t+2s; lookup(t+0.5s) = {found[0]} (want 1), lookup(t+50s) = {found[1]} (want None)",
        )

    def aborted_hidden(self) -> Capability:
        tp = self.topic("abort")
        producer = self.client.init_producer(f"kconform-probe-{self.run}-abort")
        producer.begin_transaction()
        producer.produce(tp.topic, 0, None, b"aborted")
        producer.flush()
        producer.abort_transaction()
        self.client.produce(tp, None, b"after")
        seen = self.settled(tp, [b"after"])
        return _capability(
            "abort_hidden_from_read_committed",
            seen == [b"after"],
            f"read_committed after an aborted record and a plain one: {seen}",
        )

    def stable_offset(self) -> list[Capability]:
        tp = self.topic("lso")
        self.client.produce(tp, None, b"before")
        producer = self.open_txn("lso", tp, b"open")
        self.client.produce(tp, None, b"after")
        committed_view, uncommitted_view = self.values(tp, RC), self.values(tp, RU)
        producer.commit_transaction()
        final = self.settled(tp, [b"before", b"open", b"after"])  # the marker is written: "next" comes after it
        marker_offset = self.client.produce(tp, None, b"next")
        return [
            _capability(
                "last_stable_offset",
                committed_view == [b"before"] and final == [b"before", b"open", b"after"],
                f"with a transaction open after 'before': read_committed {committed_view}; after its commit: {final}",
            ),
            _capability(
                "read_uncommitted",
                uncommitted_view == [b"before", b"open", b"after"],
                f"read_uncommitted with the transaction open: {uncommitted_view}",
            ),
            _capability(
                "control_markers_occupy_offsets",
                marker_offset == 4,
                f"3 data records + 1 commit marker, next record at offset {marker_offset} (want 4)",
            ),
        ]

    def zombie_fencing(self) -> Capability:
        tp = self.topic("zombie")
        zombie = self.open_txn("zombie", tp, b"zombie")
        self.client.init_producer(f"kconform-probe-{self.run}-zombie")
        try:
            zombie.commit_transaction()
            outcome = "zombie commit succeeded"
        except FATAL_TXN_ERRORS as error:
            outcome = f"zombie commit fenced ({type(error).__name__})"
        except KafkaError as error:
            outcome = f"zombie commit failed without a fenced error: {error}"
        self.client.produce(tp, None, b"after")
        seen = self.settled(tp, [b"after"])
        return _capability(
            "zombie_fencing",
            outcome.startswith("zombie commit fenced") and seen == [b"after"],
            f"{outcome}; read_committed then sees {seen}",
        )

    def start_transaction_timeout(self) -> Callable[[], Capability]:
        """Open a transaction with a 1 s timeout now; the returned judge waits for the broker's abort."""
        tp = self.topic("timeout")
        producer = self.open_txn("timeout", tp, b"abandoned", TXN_TIMEOUT_MS)
        self.client.produce(tp, None, b"after")
        deadline = time.monotonic() + TXN_TIMEOUT_WAIT_S

        def judge() -> Capability:
            def unblocked() -> list[bytes | None] | None:
                seen = self.values(tp, RC)
                return seen or None

            from ...reference_impl.kafka_client import wait_until

            try:
                seen = wait_until(unblocked, max(0.0, deadline - time.monotonic()), "LSO past the abandoned txn", 0.5)
            except KafkaError:
                return _capability(
                    "transaction_timeout",
                    False,
                    f"a transaction with transaction.timeout.ms={TXN_TIMEOUT_MS} still blocks read_committed "
                    f"after {TXN_TIMEOUT_WAIT_S:.0f} s",
                )
            try:
                producer.commit_transaction()
                late = "its late commit succeeded"
            except KafkaError as error:
                late = f"its late commit failed ({type(error).__name__})"
            return _capability(
                "transaction_timeout",
                seen == [b"after"] and late.startswith("its late commit failed"),
                f"broker aborted the abandoned transaction: read_committed {seen}; {late}",
            )

        return judge

    def send_offsets(self) -> Capability:
        tp = self.topic("offsets")
        group = f"kconform-probe-{self.run}-txn-group"
        producer = self.client.init_producer(f"kconform-probe-{self.run}-offsets")
        views = []
        for offset, commit in ((7, True), (9, False)):
            producer.begin_transaction()
            producer.produce(tp.topic, 0, None, b"x")
            producer.send_offsets_to_transaction(group, {tp: offset})
            views.append(dict(self.client.committed(group, [tp], stable=False)))  # the transaction is open
            (producer.commit_transaction if commit else producer.abort_transaction)()
            views.append(dict(self.client.committed(group, [tp])))
        want = [{}, {tp: 7}, {tp: 7}, {tp: 7}]
        return _capability(
            "send_offsets_to_transaction",
            views == want,
            "group offsets before/after commit(7), before/after abort(9): "
            + ", ".join(str({p.partition: o for p, o in v.items()}) for v in views),
        )

    def group_offsets(self) -> list[Capability]:
        tp = self.topic("group")
        group = f"kconform-probe-{self.run}-group"
        self.client.commit_offsets(group, {tp: 5}, "kconform-metadata")
        first, metadata = self.client.committed(group), self.client.committed_metadata(group)
        self.client.commit_offsets(group, {tp: 6})
        second = self.client.committed(group)
        return [
            _capability(
                "group_offsets",
                first == {tp: 5} and second == {tp: 6},
                f"committed 5 then 6: read back {first.get(tp)} then {second.get(tp)}",
            ),
            _capability(
                "group_offset_metadata",
                metadata == {tp: "kconform-metadata"},
                f"committed metadata 'kconform-metadata', read back {metadata.get(tp)!r}",
            ),
        ]

    def regex_subscription(self) -> Capability:
        import confluent_kafka as ck

        from ...reference_impl.kafka_client import wait_until

        prefix = f"kconform-probe-{self.run}-rx-"
        first = self.topic("rx-a")
        config = self.client.config("consumer", **{"group.id": f"{prefix}group"})
        consumer = ck.Consumer(config)
        try:
            consumer.subscribe([f"^{prefix}.*"])

            def assigned(topic: str) -> bool | None:
                consumer.poll(0.2)
                return any(p.topic == topic for p in consumer.assignment()) or None

            timeout_s = 6 * self.client.timeout_s
            wait_until(lambda: assigned(first.topic), timeout_s, f"assignment of {first.topic}", 0)
            second = self.topic("rx-b")
            started = time.monotonic()
            wait_until(lambda: assigned(second.topic), timeout_s, f"assignment of {second.topic}", 0)
            listed = second.topic in self.client.list_topics()
        except KafkaError as error:
            return _capability("regex_subscription_new_topic", False, str(error))
        finally:
            consumer.close()
        return _capability(
            "regex_subscription_new_topic",
            listed,
            f"a topic created after subscribing to '^{prefix}.*' was assigned after "
            f"{time.monotonic() - started:.1f} s; listed in metadata: {listed}",
        )

    def txn_state_errors(self) -> Capability:
        producer = self.client.init_producer(f"kconform-probe-{self.run}-state")
        outcomes = []
        for call in (producer.commit_transaction, producer.begin_transaction, producer.begin_transaction):
            try:
                call()
                outcomes.append("ok")
            except KafkaError as error:
                outcomes.append(type(error).__name__)
        producer.abort_transaction()
        return _capability(
            "txn_state_errors",
            outcomes == ["InvalidTxnStateError", "ok", "InvalidTxnStateError"],
            f"commit without begin, begin, begin again: {outcomes}",
        )

    def outside_write_refused(self) -> Capability:
        """A transactional batch produced with no AddPartitionsToTxn (raw protocol): refused, the LSO not held."""
        from .outside_write import OutsideWriteError, ask, write_outside_transaction

        tp = self.topic("outside")
        self.client.produce(tp, None, b"before")
        bootstrap = self.client.endpoint.bootstrap_servers.split(",")[0]
        try:
            write = write_outside_transaction(
                bootstrap, self.client.partition_leader(tp), f"kconform-probe-{self.run}-outside", tp.topic,
                tp.partition, b"outside", self.client.timeout_s, int(time.time() * 1000), ask,
            )  # fmt: skip
        except (OutsideWriteError, OSError) as error:
            return _capability("outside_write_refused", False, f"the raw Produce exchange failed: {error}")
        self.client.produce(tp, None, b"after")
        high, stable = self.client.latest_offset(tp, RU), self.client.latest_offset(tp, RC)
        ends = f"then a plain record: high watermark {high}, read_committed end (LSO) {stable}"
        if write.answer is not None and write.accepted and stable <= write.answer.base_offset:
            ends += ": read_committed is held behind the accepted batch (a hanging transaction)"
        return _capability("outside_write_refused", write.refused and stable == high, f"{write.text()}; {ends}")

    def resume_transaction(self) -> Capability:
        try:
            self.client.resume_producer(f"kconform-probe-{self.run}-resume", 0, 0)
        except KafkaError as error:
            return _capability("resume_transaction", False, f"client limitation: {error}")
        return _capability("resume_transaction", True, "resume_producer accepted")


Step = Callable[[], Capability | list[Capability]]


def _guarded(step: Step, measures: Sequence[str]) -> list[Capability]:
    """Run one probe; if the broker errors or hangs past the timeout, its capabilities are unsupported."""
    try:
        result = step()
    except KafkaError as error:
        return [_capability(name, False, f"probe failed: {error}") for name in measures]
    return result if isinstance(result, list) else [result]


def probe(broker: Broker, timeout_s: float = PROBE_TIMEOUT_S) -> list[Capability]:
    """Run every probe on ``broker`` and return the capabilities sorted by requirement id."""
    from ...reference_impl.kafka_client import KafkaClient

    with KafkaClient(broker, timeout_s=timeout_s) as client:
        run = _Probe(client)
        timeout_measure = ("transaction_timeout",)
        judges: list[Step] = []

        def start_timeout() -> list[Capability]:
            judges.append(run.start_transaction_timeout())
            return []

        started = _guarded(start_timeout, timeout_measure)
        steps: list[tuple[Step, tuple[str, ...]]] = [
            (run.aborted_hidden, ("abort_hidden_from_read_committed",)),
            (
                run.stable_offset,
                ("last_stable_offset", "read_uncommitted", "control_markers_occupy_offsets"),
            ),
            (run.zombie_fencing, ("zombie_fencing",)),
            (run.send_offsets, ("send_offsets_to_transaction",)),
            (run.list_offsets_latest, ("list_offsets_latest",)),
            (run.create_partitions, ("create_partitions",)),
            (run.group_offsets, ("group_offsets", "group_offset_metadata")),
            (run.offsets_for_times, ("offsets_for_times",)),
            (run.regex_subscription, ("regex_subscription_new_topic",)),
            (run.txn_state_errors, ("txn_state_errors",)),
            (run.resume_transaction, ("resume_transaction",)),
            (run.outside_write_refused, ("outside_write_refused",)),
            *((judge, timeout_measure) for judge in judges),
        ]
        found = [*started, *(c for step, measures in steps for c in _guarded(step, measures))]
        return sorted(found, key=lambda c: c.requirement_id)


RUN_NAME: Final = re.compile(r"kconform-probe-[0-9a-f]{8}")
"""The probe's per-run topic and id prefix, masked in the docs so a regenerated table differs only by behaviour."""
KIP: Final = re.compile(r"\bKIP-(\d+)")
"""Kafka proposal numbers in a broker's messages, written ``KIP 195`` in the docs: ``AREA-nnn`` is a requirement id."""
PROBE_TABLE_BEGIN: Final = "<!-- probe-table:begin (generated by: make docs) -->"
PROBE_TABLE_END: Final = "<!-- probe-table:end -->"


def format_comparison(measured: Sequence[tuple[str, Sequence[Capability]]]) -> str:
    """A Markdown table with one column per broker: ``yes``, or ``**NO**`` with what was seen."""
    names = [where for where, _ in measured]
    by_broker = [{c.name: c for c in capabilities} for _, capabilities in measured]
    rows = ["| requirement | capability | " + " | ".join(names) + " |", "| --- | --- |" + " --- |" * len(names)]
    for capability in measured[0][1]:
        cells = []
        for found in by_broker:
            seen = found[capability.name]
            observation = KIP.sub(r"KIP \1", RUN_NAME.sub("kconform-probe-…", seen.observation)).replace("|", "\\|")
            cells.append("yes" if seen.supported else f"**NO**: {observation}")
        rows.append(f"| {capability.requirement_id} | `{capability.name}` | " + " | ".join(cells) + " |")
    return "\n".join(rows)


def replace_generated(text: str, table: str) -> str:
    """``text`` with the block between the probe-table markers replaced by ``table``."""
    try:
        head, rest = text.split(PROBE_TABLE_BEGIN, 1)
        _, tail = rest.split(PROBE_TABLE_END, 1)
    except ValueError:
        raise ValueError(f"no {PROBE_TABLE_BEGIN} ... {PROBE_TABLE_END} block to replace") from None
    return f"{head}{PROBE_TABLE_BEGIN}\n{table}\n{PROBE_TABLE_END}{tail}"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="kconform probe-broker",
        description="measure what the Kafka broker can and cannot show (aborted records, fencing, timeouts, ...), and "
        "state its release, its transaction.version and the group protocols it offers; exit 0 when every broker was "
        "measured, 1 when one could not start or the Kafka client is not installed, 2 on a usage error (an unknown "
        "--kafka-version names the known ones), 3 when the --kafka-version release could not be resolved with Maven",
    )
    parser.add_argument(
        "--broker", choices=BROKER_KINDS, action="append", default=None,
        help="the broker to probe; repeat to compare several side by side (default: $KCONFORM_BROKER or kafka)",
    )  # fmt: skip
    release_option.add_option(parser)
    output = parser.add_mutually_exclusive_group()
    output.add_argument("--json", action="store_true", help="print JSON instead of a table")
    output.add_argument("--markdown", action="store_true", help="print one Markdown table, a column per broker")
    parser.add_argument("--update", metavar="FILE", help="with --markdown: write the table into FILE's generated block")
    return parser


def main(argv: list[str]) -> int:
    """``kconform probe-broker [--broker KIND]... [--json | --markdown [--update FILE]]``.

    Exit 0 when every broker was measured, 1 when one could not start or the Kafka client is not installed.
    """
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.update and not args.markdown:
        parser.error("--update needs --markdown")
    if find_spec("confluent_kafka") is None:
        print(f"kconform probe-broker: the probe needs the Kafka client (confluent-kafka): {PIPELINE_FIX}",
              file=sys.stderr)  # fmt: skip
        return 1
    kinds = args.broker or [os.environ.get(BROKER_ENV) or DEFAULT_BROKER]
    if (refused := release_option.prepare("probe-broker", args.kafka_version, kinds)) is not None:
        return refused
    measured: list[tuple[str, list[Capability]]] = []
    releases: list[BrokerFacts] = []
    for kind in kinds:
        try:
            with broker_from_env(kind) as broker:
                releases.append(read_facts(broker))
                started = getattr(broker, "start_seconds", None)
                print(f"kconform probe-broker: {releases[-1].text()}"
                      + (f"; started in {started:.1f} s" if started is not None else ""), file=sys.stderr)  # fmt: skip
                measured.append((broker.version, probe(broker)))
                print(f"kconform probe-broker: measured the {broker.describe()}", file=sys.stderr)
        except (BrokerUnavailable, BrokerStartError) as error:
            print(f"kconform probe-broker: {error}", file=sys.stderr)
            return 1
    if args.json:
        report = [
            {"broker": where, "release": facts.to_json(), "capabilities": [asdict(c) for c in found]}
            for (where, found), facts in zip(measured, releases, strict=True)
        ]
        print(json.dumps(report[0] if len(report) == 1 else report, indent=2))
    elif args.markdown:
        table = format_comparison(measured)
        if args.update:
            path = Path(args.update)
            path.write_text(replace_generated(path.read_text(), table))
            print(f"wrote the probe table into {path}", file=sys.stderr)
        else:
            print(table)
    else:
        for where, found in measured:
            print(f"Capabilities of {where}:\n{format_table(found)}")
    return 0
