"""Client settings drawn from the client release's own definitions, not from a list picked by hand.

librdkafka documents every property in CONFIGURATION.md (name, C/P/*, range, default); the table of the
newest release the project read is kept at ``fixtures/librdkafka/CONFIGURATION-<release>.md``. Every
consumer (C) and producer (P) property with a range is drawn, and every global (*) one with a range that
changes what is delivered, where, when or how it is committed; left out are those whose only effect is on
the transport, security, logging or the harness itself (``NOT_DRAWN``, each with its reason). A property the
release under test does not have is never drawn: ``known_to`` asks the release itself (librdkafka refuses an
unknown property when a client is configured, without connecting).

Values come from the property's own range: an enumeration's values, a number between its bounds. Numbers are
capped (``CAPS``) only where the whole draw must end within its time budget (a timeout or interval the
workload would otherwise wait out) or its memory (a buffer size); the cap is stated, and the default is always
one of the values drawn.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Final, Literal, cast

from hypothesis import strategies as st

from ...paths import PACKAGE_ROOT

Role = Literal["C", "P", "*"]
CONFIGURATION: Final = PACKAGE_ROOT / "fixtures" / "librdkafka" / "CONFIGURATION-v2.15.0.md"
"""librdkafka's property table at v2.15.0 (``git show v2.15.0:CONFIGURATION.md`` in confluentinc/librdkafka)."""
ROW: Final = re.compile(
    r"^(?P<name>[a-z][a-z0-9._]*)\s*\|\s*(?P<role>[CP*])\s*\|\s*(?P<range>[^|]*?)\s*\|\s*"
    r"(?P<default>[^|]*?)\s*\|\s*(?P<importance>\w+)\s*\|\s*(?P<description>.*)$"
)
NUMERIC: Final = re.compile(r"^(?P<low>-?\d+) \.\. (?P<high>-?\d+)$")


@dataclass(frozen=True)
class Setting:
    name: str
    role: Role
    default: str
    choices: tuple[str, ...] = ()
    """An enumeration's values; empty for a number."""
    low: int | None = None
    high: int | None = None
    topic_level: bool = False
    """From the table of topic properties (a producer's or consumer's default topic configuration)."""
    importance: str = "low"
    """The table's importance (high, medium, low): a high one is drawn in about half the clients, the rest a few
    at a time."""
    alias: bool = False
    """Its description says "Alias for" another property, which is drawn under its own name."""


NOT_DRAWN: Final[Mapping[str, str]] = {
    # What the harness sets itself, per client or per schedule.
    "bootstrap.servers|metadata.broker.list|group.id|transactional.id|client.id|group.instance.id|client.rack": (
        "set by the workload (which broker, group, transaction, identity)"
    ),
    "enable.random.seed": "seeds the client's random numbers; the draw is Hypothesis's",
    # Transport, security, logging, metrics: they change how bytes move, not what is delivered or committed.
    "ssl[._].*|sasl[._].*|security.protocol|https.*|enable.ssl.*|enable.sasl.*": "security: the broker is plaintext",
    "socket[._].*|broker.address.*|reconnect.*|connections.max.idle.ms|client.dns.lookup": "transport",
    "debug|log[._].*|statistics.interval.ms|enabled_events|enable.metrics.push|internal.termination.signal": (
        "logging, statistics and signals"
    ),
    "api.version.*|broker.version.fallback|builtin.features|plugin.library.paths|interceptors": (
        "protocol negotiation against a known broker; plugins"
    ),
    "metadata.recovery.*": "re-bootstrap after every broker is lost; the workload's broker keeps its address",
    "message.copy.max.bytes|receive.message.max.bytes|message.max.bytes": "transport buffers",
    "offset.store.method|offset.store.path|offset.store.sync.interval.ms": (
        "deprecated file offset store; the group's offsets are the broker's"
    ),
    "group.protocol.type|share.acknowledgement.mode": "share groups (KIP-932), not consumer groups",
    "queuing.strategy|produce.offset.report|auto.commit.enable|request.required.acks": (
        "deprecated, or the old name of a property drawn under its new one"
    ),
    "consume.callback.max.messages|partitioner|group.remote.assignor": (
        "no range in the table (a callback's, or a free name): drawn where the workload lists the names"
    ),
    "message.timeout.ms|delivery.timeout.ms|transaction.timeout.ms": (
        "bounds a send or a transaction: drawn within the workload's time budget (BOUNDED)"
    ),
}
"""Property-name patterns left out of the draw, each with why."""
NOT_DRAWN_PATTERN: Final = re.compile("|".join(f"(?:{p})" for p in NOT_DRAWN))

CAPS: Final[Mapping[str, int]] = {
    "session.timeout.ms": 10_000,
    "heartbeat.interval.ms": 3_000,
    "max.poll.interval.ms": 15_000,
    "coordinator.query.interval.ms": 10_000,
    "auto.commit.interval.ms": 5_000,
    "fetch.wait.max.ms": 1_000,
    "fetch.queue.backoff.ms": 1_000,
    "fetch.error.backoff.ms": 1_000,
    "queue.buffering.max.ms": 500,
    "linger.ms": 500,
    "sticky.partitioning.linger.ms": 500,
    "retry.backoff.ms": 1_000,
    "retry.backoff.max.ms": 1_000,
    "request.timeout.ms": 30_000,
    "topic.metadata.refresh.interval.ms": 10_000,
    "topic.metadata.refresh.fast.interval.ms": 1_000,
    "topic.metadata.propagation.max.ms": 30_000,
    "metadata.max.age.ms": 30_000,
    "socket.timeout.ms": 30_000,
}
"""Upper bounds on a drawn time: a draw must end within its budget (a session or poll interval is waited out
when a member stalls). Every other number is drawn from its own range, sizes up to ``SIZE_CAP``."""
SIZE_CAP: Final = 4 * 1024 * 1024
"""Counts and byte sizes are drawn up to this (or the range's top): bigger buffers change nothing a small
workload can show and cost memory."""
FLOORS: Final[Mapping[str, int]] = {"session.timeout.ms": 6_000, "max.poll.interval.ms": 6_000}
"""The broker refuses a session timeout below its ``group.min.session.timeout.ms`` (6 s), and librdkafka a poll
interval below the session timeout: such a draw would only show the refusal."""
BOUNDED: Final[Mapping[str, tuple[int, int]]] = {
    "message.timeout.ms": (5_000, 30_000),
    "delivery.timeout.ms": (5_000, 30_000),
    "transaction.timeout.ms": (10_000, 60_000),
}
"""Settings that bound a call the workload waits for, drawn within its budget."""
ACKS: Final = ("-1", "0", "1")
"""``acks``: the table's range is -1 .. 1000, the broker accepts these (Kafka's ``ProducerConfig``: all, -1, 0, 1)."""
PARTITIONERS: Final = (
    "random",
    "consistent",
    "consistent_random",
    "murmur2",
    "murmur2_random",
    "fnv1a",
    "fnv1a_random",
)
"""The producer's ``partitioner`` values (CONFIGURATION.md lists them in the description, not the range)."""
ASSIGNORS: Final = ("range", "roundrobin", "cooperative-sticky", "range,roundrobin")
"""``partition.assignment.strategy``'s values (classic groups; ``group.protocol=consumer`` assigns on the broker)."""


CLASSIC_GROUP_ONLY: Final = ("session.timeout.ms", "heartbeat.interval.ms")
"""A consumer's session settings, which a member of ``group.protocol=consumer`` (KIP 848) does not take: the broker
sets its session, and both clients refuse them there."""


def classic_protocol(value: object) -> bool:
    """Whether a ``group.protocol`` value is the classic protocol (either client reads it without regard to case)."""
    return str(value).strip().lower() == "classic"


def classic_group(settings: Mapping[str, object]) -> bool:
    """Whether a consumer of ``settings`` joins its group by the classic protocol (the default of both clients)."""
    return classic_protocol(settings.get("group.protocol", "classic"))


def parse_configuration(text: str) -> list[Setting]:
    """Every property row of a CONFIGURATION.md, the topic table's marked ``topic_level``."""
    found: list[Setting] = []
    topic_level = False
    for line in text.splitlines():
        if line.startswith("## Topic configuration properties"):
            topic_level = True
        match = ROW.match(line)
        if match is None or match["name"] == "property":
            continue
        span = match["range"].strip()
        numeric = NUMERIC.match(span)
        low: int | None = None
        high: int | None = None
        choices: tuple[str, ...] = ()
        if numeric is not None:
            low, high = int(numeric["low"]), int(numeric["high"])
        else:
            choices = tuple(c.strip() for c in span.split(",") if c.strip())
        alias = match["description"].lstrip().startswith("Alias for")
        found.append(
            Setting(
                match["name"],
                cast(Role, match["role"]),
                match["default"].strip(),
                choices,
                low,
                high,
                topic_level,
                match["importance"],
                alias,
            )
        )
    return found


@cache
def catalogue(path: Path = CONFIGURATION) -> tuple[Setting, ...]:
    """The properties the workload draws, from ``path``: those with a range, minus ``NOT_DRAWN``; a property that
    is in both tables (global and topic) is drawn once, as the global table has it."""
    chosen: dict[str, Setting] = {}
    for setting in parse_configuration(path.read_text(encoding="utf-8")):
        if NOT_DRAWN_PATTERN.fullmatch(setting.name) or not (setting.choices or setting.low is not None):
            continue
        if setting.alias:
            continue
        if setting.name in chosen:  # in both tables: the global property (the topic table's is the legacy consumer's)
            continue
        chosen[setting.name] = setting
    chosen["acks"] = Setting("acks", "P", "-1", ACKS, topic_level=True, importance="high")
    chosen["partitioner"] = Setting("partitioner", "P", "consistent_random", PARTITIONERS, topic_level=True)
    chosen["partition.assignment.strategy"] = Setting(
        "partition.assignment.strategy", "C", "range,roundrobin", ASSIGNORS, importance="high"
    )
    for name, (low, high) in BOUNDED.items():
        chosen[name] = Setting(name, "P", str(low), (), low, high, importance="medium")
    return tuple(sorted(chosen.values(), key=lambda s: s.name))


def for_role(role: Literal["C", "P"], settings: Iterable[Setting]) -> list[Setting]:
    return [s for s in settings if s.role in (role, "*")]


SIZE: Final = re.compile(r".*(?:bytes|size|memory)$")
"""Settings that are byte sizes (librdkafka's and kafka-clients' names end so)."""
RECORD_SIZE: Final = 256
"""The top of the small sizes drawn: one of the workload's records with a batch's framing is under 100 bytes (a value
of a few bytes, a v2 batch header of 61), so sizes up to this hold both sizes no record fits (a class of its own:
every send refused or split) and sizes just above one record. A bound chosen here, not measured."""


def values(setting: Setting) -> st.SearchStrategy[str]:
    """A value from the setting's own range (capped per ``CAPS``/``SIZE_CAP``, floored per ``FLOORS``), its
    default among them; a byte size as often up to ``RECORD_SIZE`` (around one record's size) as anywhere in its
    range, since a size that no record fits changes what the client does with every record it is given."""
    if setting.choices:
        return st.sampled_from(setting.choices)
    assert setting.low is not None and setting.high is not None
    cap = CAPS.get(setting.name, SIZE_CAP if setting.name not in BOUNDED else setting.high)
    low = max(setting.low, FLOORS.get(setting.name, setting.low))
    high = max(low, min(setting.high, cap))
    numbers = st.integers(low, high) | st.sampled_from(sorted({low, high}))
    if SIZE.fullmatch(setting.name) and low < RECORD_SIZE < high:
        numbers = numbers | st.integers(low, RECORD_SIZE)
    if setting.default.lstrip("-").isdigit() and low <= int(setting.default) <= high:
        numbers = numbers | st.just(int(setting.default))
    return numbers.map(str)


Probe = Callable[[Literal["C", "P"], str, str], bool]
"""Whether the client release accepts ``name=value`` for a role (``known_to``'s question)."""


def known_to(probe: Probe, settings: Sequence[Setting]) -> tuple[Setting, ...]:
    """The settings the release under test has: each asked once, with its default."""
    return tuple(s for s in settings if probe("P" if s.role == "P" else "C", s.name, s.default or "0"))


@st.composite
def drawn(draw: st.DrawFn, role: Literal["C", "P"], settings: Sequence[Setting], others: int = 4) -> dict[str, str]:
    """Some of the role's settings, each with a value from its range (the rest keep the release's defaults): each
    high-importance one with even odds, and up to ``others`` of the rest."""
    candidates = for_role(role, settings)
    high = [s for s in candidates if s.importance == "high"]
    rest = [s for s in candidates if s.importance != "high"]
    chosen = [s for s in high if draw(st.booleans())]
    if rest:
        chosen += draw(st.lists(st.sampled_from(rest), max_size=others, unique_by=lambda s: s.name))
    return {s.name: draw(values(s)) for s in chosen}
