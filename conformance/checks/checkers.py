"""Invariants as pure functions over observations, returning named violations with evidence.

Each checker takes what the suite observed of an implementation (a plan, discovery reports,
offsets before and after a restore) and returns a list of ``Violation``s; an empty list means
the observation conforms. They never call the implementation, so a failure is always about
data the report can show.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

from ...reference_impl.assignment import assign
from ...reference_impl.discovery import Metadata, Subscription, ZeroPartitionsPolicy
from ...reference_impl.restore import RestoreVariant
from ...reference_impl.types import EARLIEST, LATEST, TopicPartition, is_sentinel


@dataclass(frozen=True, order=True, slots=True)
class Violation:
    """One breach of a requirement, with the evidence that shows it: as text (``evidence``, what the
    console and report.md print) and as fields (``data``, report.json's ``fields``).

    ``data`` is required, by keyword, and must not be empty: every checker says which records,
    offsets, partitions, subtasks, tasks, transactional ids or checkpoints its violation is about,
    under the field names of docs/report-json.md ("Violation fields"), JSON-ready (bytes through
    ``value_field``, partitions through ``tp_fields`` / ``tps_field``).
    """

    requirement: str
    kind: str
    evidence: str
    data: Mapping[str, Any] = field(compare=False, kw_only=True)
    """The evidence as fields (topic, partition, offset, subtasks, got, want, ...), JSON-ready, for reports."""

    def __post_init__(self) -> None:
        if not isinstance(self.data, Mapping) or not self.data:
            raise TypeError(
                f"Violation {self.requirement} {self.kind}: data must be a non-empty mapping of the evidence's "
                f"fields (docs/report-json.md), got {self.data!r}"
            )

    def __str__(self) -> str:
        return f"{self.requirement} {self.kind}: {self.evidence}"

    def to_json(self) -> dict[str, Any]:
        return {"id": self.requirement, "kind": self.kind, "evidence": self.evidence, "fields": dict(self.data)}


def tp_fields(tp: TopicPartition) -> dict[str, Any]:
    """A partition as violation fields: ``{"topic": ..., "partition": ...}``."""
    return {"topic": tp.topic, "partition": tp.partition}


def tps_field(tps: Iterable[TopicPartition]) -> list[dict[str, Any]]:
    """Partitions as one violation field (``partitions``): a sorted list of ``tp_fields``."""
    return [tp_fields(tp) for tp in sorted(tps)]


def offsets_field(offsets: Mapping[TopicPartition, int]) -> list[dict[str, Any]]:
    """Partition -> offset as one violation field: a sorted list of ``{"topic", "partition", "offset"}``."""
    return [tp_fields(tp) | {"offset": offset} for tp, offset in sorted(offsets.items())]


def value_field(value: bytes | None) -> str | None:
    """A record's value (or key) as a violation field: its text, undecodable bytes as ``\\xNN`` escapes."""
    return None if value is None else value.decode("utf-8", "backslashreplace")


def values_field(values: Iterable[bytes | None]) -> list[str | None]:
    """Record values as one violation field (``values``), in the order given."""
    return [value_field(v) for v in values]


Picture = dict[str, Any]
"""A figure's data (``kconform.conformance.checks.evidence`` builds them), JSON-ready: the HTML report draws it."""


class ViolationError(AssertionError):
    """A suite test's failure that keeps its violations (and pictures) as objects, not only as text.

    Hypothesis re-raises the exception of the shrunk example, so ``kconform run`` finds these on
    the failure it reports and writes them structured into report.json and the HTML report.
    """

    def __init__(
        self,
        violations: Sequence[Violation],
        pictures: Sequence[Picture] = (),
        detail: str = "",
        verified: Iterable[str] = (),
    ) -> None:
        super().__init__(explain(violations) + detail)
        self.violations = list(violations)
        self.pictures = list(pictures)
        self.verified = frozenset(verified) - {v.requirement for v in violations}
        """Ids of the test it checked in full before failing: they pass, not PARTIAL."""


def explain(violations: Sequence[Violation], limit: int = 10) -> str:
    """A readable assertion message: the first ``limit`` violations, one per line."""
    shown = "\n".join(f"  {v}" for v in violations[:limit])
    more = f"\n  ... and {len(violations) - limit} more" if len(violations) > limit else ""
    return f"{len(violations)} violation(s):\n{shown}{more}"


@dataclass
class Deferral:
    """Violations of some ids kept back while a test goes on, so that its other ids are judged in full.

    A suite test of a safety requirement must not stop at a fidelity violation (a connector may
    legitimately differ from Flink) before its safety requirement was judged on every example, nor a test
    of a fidelity requirement at a diagnostics violation (what an error message names):
    ``fail_on`` keeps violations that name only ``ids`` here, and the pytest plugin raises those of the
    test's own requirements (``checked``) when the test has finished. A fidelity violation of an id the
    test does not check (a discovery checker also sees whose partitions are foreign) is that id's own
    tests' to report.
    """

    ids: frozenset[str]
    checked: frozenset[str]
    first: ViolationError | None = None
    examples: int = 0

    def keeps(self, violations: Sequence[Violation]) -> bool:
        return all(v.requirement in self.ids for v in violations)

    def keep(self, error: ViolationError) -> None:
        own = [v for v in error.violations if v.requirement in self.checked]
        if own:
            self.examples += 1
            self.first = self.first or ViolationError(own, error.pictures)

    def raise_kept(self) -> None:
        """Fail with the first kept violations of the test's own ids; its other ids held throughout."""
        if self.first is None:
            return
        more = f" (and in {self.examples - 1} later example(s))" if self.examples > 1 else ""
        note = f"\n  kept back until the test ended{more}, so that its other requirements were judged on every example"
        raise ViolationError(self.first.violations, self.first.pictures, note, self.checked)


_DEFERRAL: ContextVar[Deferral | None] = ContextVar("kconform_deferral", default=None)


@dataclass
class Tolerance:
    """Violations a run's expectations list by kind (``--expectations``, a deviation with ``kind``): ``fail_on``
    counts them in ``seen`` instead of failing, so the test goes on judging everything else."""

    covers: Callable[[Violation], bool]
    seen: Counter[tuple[str, str]] = field(default_factory=Counter)

    def split(self, violations: Sequence[Violation]) -> list[Violation]:
        """The violations not tolerated; the tolerated ones are counted."""
        rest = []
        for violation in violations:
            if self.covers(violation):
                self.seen[(violation.requirement, violation.kind)] += 1
            else:
                rest.append(violation)
        return rest


_TOLERANCE: ContextVar[Tolerance | None] = ContextVar("kconform_tolerance", default=None)


def tolerated(violations: Sequence[Violation]) -> list[Violation]:
    """Those of ``violations`` the running test's expectations tolerate by kind (``tolerating``), uncounted."""
    tolerance = _TOLERANCE.get()
    return [] if tolerance is None else [v for v in violations if tolerance.covers(v)]


@contextmanager
def tolerating(covers: Callable[[Violation], bool]) -> Iterator[Tolerance]:
    """While inside, ``fail_on`` counts the violations ``covers`` instead of raising them (see ``Tolerance``)."""
    tolerance = Tolerance(covers)
    token = _TOLERANCE.set(tolerance)
    try:
        yield tolerance
    finally:
        _TOLERANCE.reset(token)


@contextmanager
def deferring(ids: Iterable[str], checked: Iterable[str]) -> Iterator[Deferral]:
    """While inside, ``fail_on`` keeps back violations that name only ``ids`` (see ``Deferral``)."""
    deferral = Deferral(frozenset(ids), frozenset(checked))
    token = _DEFERRAL.set(deferral)
    try:
        yield deferral
    finally:
        _DEFERRAL.reset(token)


def fail_on(
    violations: Sequence[Violation], pictures: Sequence[Picture] = (), detail: str = "", verified: Iterable[str] = ()
) -> None:
    """Fail the calling suite test with the violations as its message (one ``ID kind: evidence`` per line),
    then ``detail`` (e.g. the history). ``verified``: the test's other ids, checked in full before it
    failed (a test that checks everything before failing says so; the runner then passes them).

    Inside ``deferring`` (the plugin's, for a test of a safety or a fidelity requirement) violations that name
    only ids of a weaker class (fidelity, diagnostics) are kept back instead of raised.

    A ``ViolationError``, not a bare ``assert``: pytest's assertion rewriting would append the
    list's repr (``assert not [Violation(...)]``) to every failure, and the reports need the objects.
    """
    tolerance = _TOLERANCE.get()
    if tolerance is not None:
        violations = tolerance.split(violations)
    if not violations:
        return
    error = ViolationError(violations, pictures, detail, verified)
    deferral = _DEFERRAL.get()
    if deferral is not None and deferral.keeps(violations):
        deferral.keep(error)
        return
    raise error


def all_partitions(metadata: Metadata) -> set[TopicPartition]:
    return {TopicPartition(t, p) for t, ids in metadata.items() for p in ids}


# -- assignment ------------------------------------------------------------------------------


def check_single_owner(
    claims: Mapping[TopicPartition, Sequence[int]], parallelism: int, requirement: str = "ASSIGN-007"
) -> list[Violation]:
    """ASSIGN-007 over ``partition -> subtasks that claim it`` (every partition listed), whatever the assigner:
    no partition claimed twice, none by no subtask, none by a subtask that does not exist. Flink's model asks
    the same of the tasks of one Spark batch (one task per partition): ``requirement`` names whose rule it is."""
    out: list[Violation] = []
    for tp, owners in sorted(claims.items()):
        facts = tp_fields(tp) | {"subtasks": sorted(owners), "parallelism": parallelism}
        bad = [o for o in owners if not (isinstance(o, int) and 0 <= o < parallelism)]
        if bad:
            out.append(
                Violation(
                    requirement, "owner-out-of-range", f"{tp} -> {bad} with parallelism {parallelism}", data=facts
                )
            )
        if len(owners) > 1:
            where = f"{tp} claimed by subtasks {sorted(owners)}"
            out.append(Violation(requirement, "double-assignment", where, data=facts))
        if not owners:
            out.append(Violation(requirement, "unassigned", f"{tp} is owned by no subtask", data=facts))
    return out


def check_plan(owners: Mapping[TopicPartition, int | None], parallelism: int) -> list[Violation]:
    """ASSIGN-001 and ASSIGN-002 over the assigner's plan, ``partition -> subtask`` (``None``: it gave none)."""
    out: list[Violation] = []
    for tp, owner in sorted(owners.items()):
        facts = tp_fields(tp) | {"owner": owner, "parallelism": parallelism}
        if owner is None:
            out.append(Violation("ASSIGN-001", "unassigned", f"{tp}: the assigner gives it no subtask", data=facts))
        elif not (isinstance(owner, int) and 0 <= owner < parallelism):
            where = f"{tp} -> {owner!r} with parallelism {parallelism}"
            out.append(Violation("ASSIGN-001", "owner-out-of-range", where, data=facts))
    by_topic: dict[str, list[TopicPartition]] = defaultdict(list)
    for tp in owners:
        by_topic[tp.topic].append(tp)
    for topic, tps in sorted(by_topic.items()):
        if sorted(tp.partition for tp in tps) != list(range(len(tps))):
            continue  # uniform spread is promised for contiguous ids only
        counts = Counter(owners[tp] for tp in tps if owners[tp] is not None)
        sizes = [counts.get(i, 0) for i in range(parallelism)]
        if max(sizes) - min(sizes) > 1:
            out.append(
                Violation(
                    "ASSIGN-002",
                    "per-topic-skew",
                    f"{topic!r} ({len(tps)} partitions) per subtask: {sizes}",
                    data={
                        "topic": topic,
                        "partition_count": len(tps),
                        "per_subtask": sizes,
                        "parallelism": parallelism,
                    },
                )
            )
    return out


def check_formula(owners: Mapping[TopicPartition, int], parallelism: int) -> list[Violation]:
    """ASSIGN-004 (contiguous ids of a topic) and ASSIGN-006 (others): Flink's formula exactly."""
    out = []
    topics: dict[str, set[int]] = defaultdict(set)
    for tp in owners:
        topics[tp.topic].add(tp.partition)
    for tp, got in sorted(owners.items()):
        want = assign(tp.topic, tp.partition, parallelism)
        if got != want:
            contiguous = topics[tp.topic] == set(range(len(topics[tp.topic])))
            requirement = "ASSIGN-004" if contiguous else "ASSIGN-006"
            out.append(
                Violation(
                    requirement,
                    "formula-mismatch",
                    f"{tp} at parallelism {parallelism}: got {got}, Flink {want}",
                    data=tp_fields(tp) | {"parallelism": parallelism, "got": got, "want": want},
                )
            )
    return out


def check_determinism(first: Mapping[TopicPartition, int], second: Mapping[TopicPartition, int]) -> list[Violation]:
    """ASSIGN-003: two observations of the same partitions (other order, other company) agree."""
    return [
        Violation(
            "ASSIGN-003",
            "order-dependent",
            f"{tp}: subtask {first[tp]} in one view, {second[tp]} in another",
            data=tp_fields(tp) | {"first": first[tp], "second": second[tp]},
        )
        for tp in sorted(first.keys() & second.keys())
        if first[tp] != second[tp]
    ]


def global_spread(owners: Mapping[TopicPartition, int], parallelism: int) -> int:
    """ASSIGN-005 metric: max - min partitions per subtask over all topics."""
    counts = Counter(owners.values())
    sizes = [counts.get(i, 0) for i in range(parallelism)]
    return max(sizes) - min(sizes)


# -- discovery -------------------------------------------------------------------------------


def check_discovery(
    rounds: Sequence[tuple[Metadata, Mapping[int, Sequence[TopicPartition]]]],
    subscription: Subscription,
    parallelism: int,
) -> list[Violation]:
    """DISC-001..004, 006, 008 over discovery rounds: each round's metadata and what each subtask reported."""
    subscribed_id = "DISC-002" if subscription.pattern is not None else "DISC-001"
    out: list[Violation] = []
    reported: dict[TopicPartition, int] = {}
    ever_seen: set[TopicPartition] = set()
    absent_once: set[TopicPartition] = set()
    for number, (metadata, reports) in enumerate(rounds, 1):
        visible = all_partitions(metadata)
        absent_once |= ever_seen - visible
        ever_seen |= {tp for tp in visible if subscription.matches(tp.topic)}
        for subtask, tps in sorted(reports.items()):
            for tp in tps:
                if tp not in visible or not subscription.matches(tp.topic):
                    out.append(
                        Violation(
                            subscribed_id,
                            "unsubscribed-partition",
                            f"round {number}: subtask {subtask} reported {tp}, not in the "
                            f"subscription ({subscription.describe()}) or the metadata",
                            data={"round": number, "subtask": subtask, **tp_fields(tp)}
                            | {"subscription": subscription.describe()},
                        )
                    )
                owner = assign(tp.topic, tp.partition, parallelism)
                if owner != subtask:
                    facts = {"round": number, "subtask": subtask, "topic": tp.topic, "partition": tp.partition}
                    evidence = (
                        f"round {number}: subtask {subtask} reported {tp}; Flink's assigner gives it to subtask {owner}"
                    )
                    out.append(Violation("DISC-004", "foreign-partition", evidence, data=facts | {"want": owner}))
                if tp in reported:
                    requirement = "DISC-008" if tp in absent_once else "DISC-003"
                    out.append(
                        Violation(
                            requirement,
                            "re-reported",
                            f"round {number}: {tp} reported again (first in round {reported[tp]})",
                            data={"round": number, "subtask": subtask, **tp_fields(tp), "first_round": reported[tp]},
                        )
                    )
                reported.setdefault(tp, number)
        for tp in sorted(visible - reported.keys()):
            if subscription.matches(tp.topic):
                contiguous = set(metadata[tp.topic]) == set(range(len(set(metadata[tp.topic]))))
                requirement = "DISC-003" if contiguous else "DISC-006"
                where = f"round {number}: {tp} reported by no subtask"
                out.append(Violation(requirement, "missed-partition", where, data={"round": number, **tp_fields(tp)}))
                reported[tp] = number  # report a miss once
    return out


def check_zero_partitions(
    policy: ZeroPartitionsPolicy, topic: str, found: Sequence[TopicPartition], error: BaseException | None
) -> list[Violation]:
    """DISC-007: a discovery whose subscription (``topic``) matches nothing follows ``policy``: under
    ``ignore`` it reports nothing and raises nothing; under ``fail`` it raises (``error``) an error of
    any type, which names the subscription (DISC-010, diagnostics: what the failure says, judged apart from
    whether it failed). ``found``: what it reported, when it returned."""
    if error is not None:
        if policy is ZeroPartitionsPolicy.IGNORE:
            where = f"policy ignore, yet discover raised {error!r}"
            return [Violation("DISC-007", "failed-on-zero", where, data={"policy": policy.value, "error": repr(error)})]
        if topic not in str(error):
            where = f"error does not name the subscription: {error!r}"
            facts = {"policy": policy.value, "error": repr(error), "topic": topic}
            return [Violation("DISC-010", "unclear-error", where, data=facts)]
        return []
    out = []
    if policy is ZeroPartitionsPolicy.FAIL:
        where = "policy fail, yet discover returned normally"
        out.append(Violation("DISC-007", "idle-on-zero", where, data={"policy": policy.value, "error": None}))
    if found:
        facts = {"policy": policy.value, "partitions": tps_field(found)}
        out.append(Violation("DISC-007", "unsubscribed-partition", f"reported {list(found)}", data=facts))
    return out


def check_new_partition_start(
    offsets: Mapping[TopicPartition, int], new: Iterable[TopicPartition], requirement: str
) -> list[Violation]:
    """DISC-005 / RESTORE-004: partitions found after start, or missing from the state, start at EARLIEST."""
    return [
        Violation(
            requirement,
            "new-partition-not-earliest",
            f"{tp} starts at {offsets.get(tp)!r}, not EARLIEST",
            data=tp_fields(tp) | {"start": offsets.get(tp), "want": EARLIEST},
        )
        for tp in sorted(new)
        if offsets.get(tp) != EARLIEST
    ]


def check_startup_offsets(offsets: Mapping[TopicPartition, int], ends: Mapping[TopicPartition, int]) -> list[Violation]:
    """DISC-005: after the first discovery, each partition it found holds where the startup mode puts it
    (``ends``): under LATEST its end offset as of that discovery, resolved then, never the LATEST
    sentinel, which a checkpoint taken before the partition's first read would store and a restore
    resolve past the records written in between (FLINK-28303); under a specific offset, that offset."""
    out = []
    for tp in sorted(ends):
        start, end = offsets.get(tp), ends[tp]
        facts = tp_fields(tp) | {"start": start, "want": end}
        if start == LATEST:
            where = f"{tp} holds the LATEST sentinel after discovery, not its end offset then ({end})"
            out.append(Violation("DISC-005", "latest-unresolved", where, data=facts))
        elif start != end:
            where = f"{tp} starts at {start!r}, not where the startup mode puts it when discovered ({end})"
            out.append(Violation("DISC-005", "startup-mode-ignored", where, data=facts))
    return out


def check_resolved_before_first_read(tp: TopicPartition, start: int) -> list[Violation]:
    """DISC-005 as the source first reads ``tp``: its ``start`` is no longer the LATEST sentinel, which
    the discovery that found it resolves (a checkpoint taken before this read would store it)."""
    if start != LATEST:
        return []
    where = f"{tp}: still at the LATEST sentinel at its first read, not resolved when it was discovered"
    return [Violation("DISC-005", "latest-unresolved", where, data=tp_fields(tp) | {"start": LATEST})]


def check_restored_latest(
    resumed: Mapping[TopicPartition, int], ends: Mapping[TopicPartition, int], now: Mapping[TopicPartition, int]
) -> list[Violation]:
    """DISC-005 after a restore from a checkpoint taken before any read of a job started at LATEST: no
    partition resumes at the LATEST sentinel, which would skip what was produced between its discovery
    (when it ended at ``ends``) and the restore (``now``) (FLINK-28303)."""
    return [
        Violation(
            "DISC-005",
            "latest-unresolved",
            f"{tp}: checkpoint 1, taken before its first read, holds LATEST; restored, it starts at {now[tp]}, "
            f"past offsets {ends[tp]}..{now[tp] - 1} produced after discovery",
            data=tp_fields(tp) | {"checkpoint": 1, "start": LATEST, "end": ends[tp], "restored": now[tp]},
        )
        for tp in sorted(ends)
        if resumed.get(tp) == LATEST
    ]


# -- restore ---------------------------------------------------------------------------------


def names_partition(text: str, tp: TopicPartition) -> bool:
    """Whether ``text`` names ``tp`` as Kafka's Java client (``t-1``) or the reference (``t [1]``) prints it."""
    return re.search(rf"{re.escape(tp.topic)}(?:-| ?\[){tp.partition}(?!\d)", text) is not None


def check_group_start(
    partitions: Iterable[TopicPartition],
    committed: Mapping[TopicPartition, int],
    fallback: int | None,
    started: Mapping[TopicPartition, int] | None,
    error: str | None,
) -> list[Violation]:
    """RESTORE-018 on a fresh start from a consumer group's ``committed`` offsets: the start failed (``error``: its
    text) naming every partition the group holds no offset for; or it went on (``started``: each partition's
    start, an offset or a sentinel), each partition at its committed offset and each without one at the
    configured ``fallback``, which there must be: with none, going on starts somewhere the user did not ask for."""
    wanted = sorted(partitions)
    missing = [tp for tp in wanted if tp not in committed]
    if error is not None:
        return [
            Violation(
                "RESTORE-021",
                "uncommitted-unnamed",
                f"{tp}: the start failed without naming this partition, which the group has no offset for: {error}",
                data=tp_fields(tp) | {"error": error[:300]},
            )
            for tp in missing
            if not names_partition(error, tp)
        ]
    starts = started or {}
    out = []
    for tp in wanted:
        start, want = starts.get(tp), committed.get(tp, fallback)
        facts = tp_fields(tp) | {"start": start, "want": want}
        if want is None:
            where = f"{tp} started at {start!r} although the group has no offset for it and no fallback is set"
            out.append(Violation("RESTORE-018", "silent-start", where, data=facts))
        elif start != want:
            kind, why = (
                ("committed-offset-ignored", "its committed offset")
                if tp in committed
                else ("fallback-ignored", "the configured fallback")
            )
            out.append(Violation("RESTORE-018", kind, f"{tp} started at {start!r}, not at {want} ({why})", data=facts))
    return out


def check_restore(
    state: Mapping[TopicPartition, int],
    restored: Sequence[Mapping[TopicPartition, int]],
    subscription: Subscription,
    keep_unsubscribed: bool,
    metadata: Metadata,
    variant: RestoreVariant,
    parallelism: int,
) -> list[Violation]:
    """RESTORE-002, 003, 005, 006 and ASSIGN-007: ``state`` is the checkpointed union; ``restored`` each new
    subtask's offsets after a restore at ``parallelism``, which must give exactly that many subtasks.

    Which subtask and how many subtasks are fidelity (RESTORE-002); a partition restored on two subtasks (read
    twice) or on none while it is visible and subscribed (never read again) is unsafe whatever the assigner
    (ASSIGN-007), and a partition kept but with its offset forgotten loses or repeats records (RESTORE-003)."""
    out: list[Violation] = []
    if len(restored) != parallelism:
        where = f"restored onto {len(restored)} subtasks, asked for parallelism {parallelism}"
        facts = {"subtask_count": len(restored), "parallelism": parallelism}
        out.append(Violation("RESTORE-002", "wrong-parallelism", where, data=facts))
    holders: dict[TopicPartition, list[int]] = defaultdict(list)
    for subtask, offsets in enumerate(restored):
        for tp in offsets:
            holders[tp].append(subtask)
    visible = all_partitions(metadata)
    for tp, offset in sorted(state.items()):
        subscribed = subscription.matches(tp.topic)
        subtasks = holders.get(tp, [])
        facts = tp_fields(tp) | {"checkpointed": offset, "subtasks": subtasks}
        if not (keep_unsubscribed or subscribed):
            if subtasks:
                out.append(
                    Violation("RESTORE-005", "unsubscribed-restored", f"{tp} restored on {subtasks}", data=facts)
                )
            continue
        lost_state = bool(subtasks) and is_sentinel(restored[subtasks[0]][tp]) and not is_sentinel(offset)
        if not subscribed and (not subtasks or lost_state):
            where = f"{tp}: keep-unsubscribed=true, yet dropped"
            out.append(Violation("RESTORE-005", "kept-topic-dropped", where, data=facts))
            continue
        if not subtasks or lost_state:
            requirement = "RESTORE-006" if tp not in visible else "RESTORE-003" if lost_state else "ASSIGN-007"
            got = restored[subtasks[0]][tp] if lost_state else None
            how = f"only rediscovered at {got}" if lost_state else "restored nowhere"
            lost = facts | {"restored": got}
            out.append(Violation(requirement, "lost-partition", f"{tp} (next offset {offset}) {how}", data=lost))
            continue
        if len(subtasks) > 1:
            where = f"{tp} restored on subtasks {subtasks}"
            out.append(Violation("ASSIGN-007", "double-assignment", where, data=facts))
        flink_owner = assign(tp.topic, tp.partition, parallelism)
        if variant is RestoreVariant.UNION_FILTER and subtasks[0] != flink_owner:
            out.append(
                Violation(
                    "RESTORE-002",
                    "wrong-owner",
                    f"{tp} restored on {subtasks[0]}, Flink's assigner gives {flink_owner}",
                    data=facts | {"subtask": subtasks[0], "want": flink_owner, "parallelism": parallelism},
                )
            )
        got = restored[subtasks[0]][tp]
        out += check_offset_continuity(tp, offset, got)
    return out


def check_read_since_discovery(
    read: Mapping[TopicPartition, Sequence[int]], ends: Mapping[TopicPartition, int], now: Mapping[TopicPartition, int]
) -> list[Violation]:
    """RESTORE-003 after such a restore: each partition's reads are exactly what was produced after its
    discovery, ``ends[tp]`` up to ``now[tp]``, each offset once, in order."""
    return [
        Violation(
            "RESTORE-003",
            "offset-duplicate" if len(set(got)) < len(got) else "offset-gap",
            f"{tp}: read {list(got)} after the restore, want {ends[tp]}..{now[tp] - 1} "
            "(what was produced after discovery)",
            data=tp_fields(tp) | {"offsets": list(got), "want": list(range(ends[tp], now[tp]))},
        )
        for tp, got in sorted(read.items())
        if list(got) != list(range(ends[tp], now[tp]))
    ]


def check_poll_moves_only_its_partition(
    tp: TopicPartition,
    returned: Sequence[tuple[TopicPartition, int]],
    before: Mapping[TopicPartition, int],
    after: Mapping[TopicPartition, int],
) -> list[Violation]:
    """A poll of ``tp`` returns only ``tp``'s records (``returned``: partition and offset of each) and moves
    no other partition's position (``before`` and ``after`` the poll): RESTORE-003; an EARLIEST sentinel
    stays until its own partition's first read (DISC-005)."""
    out = [
        Violation(
            "RESTORE-003",
            "foreign-record",
            f"a poll of {tp} returned {other}@{offset}",
            data=tp_fields(other) | {"offset": offset, "polled": tp_fields(tp)},
        )
        for other, offset in returned
        if other != tp
    ]
    for other in sorted(before.keys() & after.keys() - {tp}):
        if before[other] == after[other]:
            continue
        if before[other] == EARLIEST:
            where = f"{other}: EARLIEST resolved to {after[other]} by a poll of {tp}, before its own first read"
            facts = tp_fields(other) | {"start": EARLIEST, "got": after[other], "polled": tp_fields(tp)}
            out.append(Violation("DISC-005", "sentinel-resolved-early", where, data=facts))
        else:
            where = f"{other}: position {before[other]} -> {after[other]} during a poll of {tp}"
            facts = tp_fields(other) | {"start": before[other], "got": after[other], "polled": tp_fields(tp)}
            out.append(Violation("RESTORE-003", "moved-without-read", where, data=facts))
    return out


def check_topic_deleted(
    before: Mapping[TopicPartition, int], now: Mapping[TopicPartition, int], deleted: str, produced: int
) -> list[Violation]:
    """DISC-008 after topic ``deleted`` is deleted while the source runs: its partitions keep the offsets
    they had (``before``), and every other partition read on past the ``produced`` records written to it
    since (``now``: the offsets after)."""
    out = [
        Violation(
            "DISC-008",
            "forgotten",
            f"{tp}: offset {before[tp]} before {deleted} was deleted, {now.get(tp)} after",
            data=tp_fields(tp) | {"got": now.get(tp), "want": before[tp]},
        )
        for tp in sorted(before)
        if tp.topic == deleted and now.get(tp) != before[tp]
    ]
    return out + [
        Violation(
            "DISC-008",
            "stalled",
            f"{tp}: at {now.get(tp)} after {deleted} was deleted, want {before[tp] + produced}",
            data=tp_fields(tp) | {"got": now.get(tp), "want": before[tp] + produced},
        )
        for tp in sorted(before)
        if tp.topic != deleted and now.get(tp) != before[tp] + produced
    ]


def check_single_holder(offsets: Sequence[Mapping[TopicPartition, int]]) -> list[Violation]:
    """ASSIGN-007 over each subtask's offsets (index = subtask): no partition is held by two subtasks, whatever
    the assigner (two holders read it twice)."""
    holders: dict[TopicPartition, list[int]] = {}
    for subtask, held in enumerate(offsets):
        for tp in held:
            holders.setdefault(tp, []).append(subtask)
    return [
        Violation("ASSIGN-007", "double-assignment", f"{tp} on {s}", data=tp_fields(tp) | {"subtasks": s})
        for tp, s in holders.items()
        if len(s) > 1
    ]


def check_emitted_prefix(
    emitted: Mapping[TopicPartition, Sequence[int]],
    offsets: Mapping[TopicPartition, int],
    origins: Mapping[TopicPartition, int],
) -> list[Violation]:
    """RESTORE-003 over a source's run: per partition the offsets it emitted are exactly ``origin .. next - 1``
    (``offsets``: its next offsets now; ``origins``: where each partition started in this run, 0 if unknown;
    a partition still at a sentinel emitted nothing). No gap, no duplicate, no regression."""
    out = []
    for tp, next_offset in sorted(offsets.items()):
        got = list(emitted.get(tp, []))
        want = [] if is_sentinel(next_offset) else list(range(origins.get(tp, 0), next_offset))
        if got != want:
            kind = "offset-duplicate" if len(set(got)) < len(got) else "offset-gap"
            out.append(
                Violation(
                    "RESTORE-003",
                    kind,
                    f"{tp}: emitted {got[:20]}, next offset {next_offset}",
                    data=tp_fields(tp) | {"offsets": got, "want": want, "next_offset": next_offset},
                )
            )
    return out


def check_split_redistribution(
    before: Sequence[Mapping[TopicPartition, int]], restored: Sequence[Mapping[TopicPartition, int]]
) -> list[Violation]:
    """RESTORE-002 under ``split-redistribution``: the shares Flink's list-state repartitioning gives.

    ``before`` is each old subtask's state, ``restored`` each new subtask's offsets (partitions the
    restore's discovery found anew are not counted). Flink's ``RoundRobinOperatorStateRepartitioner``
    leaves every subtask its own entries when the parallelism is unchanged; otherwise it cuts the
    entries, in old subtask order, into contiguous chunks whose sizes differ by at most one, the
    longer ones first. The order inside one subtask's list is the connector's, so a rescale is judged
    by chunk sizes only. Call it only when the restore kept every entry (nothing unsubscribed dropped).
    """
    stated = {tp for offsets in before for tp in offsets}
    shares = [sorted(tp for tp in offsets if tp in stated) for offsets in restored]
    if len(before) == len(restored):
        return [
            Violation(
                "RESTORE-002",
                "split-moved",
                f"subtask {i} kept {share}, it held {sorted(old)}",
                data={"subtask": i, "got": tps_field(share), "want": tps_field(old)},
            )
            for i, (old, share) in enumerate(zip(before, shares, strict=True))
            if share != sorted(old)
        ]
    base, extra = divmod(len(stated), len(restored))
    expected = [base + 1 if i < extra else base for i in range(len(restored))]
    got = [len(share) for share in shares]
    if got == expected:
        return []
    return [
        Violation(
            "RESTORE-002",
            "uneven-split",
            f"entries per new subtask {got}, Flink's repartitioner gives {expected}",
            data={"per_subtask": got, "want": expected, "parallelism": len(restored)},
        )
    ]


def check_offset_continuity(tp: TopicPartition, before: int, after: int) -> list[Violation]:
    """RESTORE-003: a restored next offset equals the checkpointed one (sentinels stay sentinels)."""
    if after == before:
        return []
    facts = tp_fields(tp) | {"checkpointed": before, "restored": after}
    if is_sentinel(before) or is_sentinel(after):
        where = f"{tp}: checkpointed {before}, restored {after}"
        return [Violation("RESTORE-003", "offset-changed", where, data=facts)]
    kind = "offset-gap" if after > before else "offset-duplicate"
    return [Violation("RESTORE-003", kind, f"{tp}: checkpointed next offset {before}, restored {after}", data=facts)]


def check_offset_commits(
    committed: Mapping[TopicPartition, int], expected: Mapping[TopicPartition, int], when: str
) -> list[Violation]:
    """RESTORE-007: the group's committed offsets are exactly those of the newest checkpoint notified so far.

    A late notification of an older checkpoint commits nothing, so a committed offset below the
    expected one is a move backwards (``offset-commit-backwards``).
    """
    if dict(committed) == dict(expected):
        return []
    backwards = any(tp in committed and committed[tp] < off for tp, off in expected.items())
    kind = "offset-commit-backwards" if backwards else "offset-commit-mismatch"
    facts = {"when": when, "committed": offsets_field(committed), "want": offsets_field(expected)}
    return [
        Violation("RESTORE-007", kind, f"{when}: committed {dict(committed)}, expected {dict(expected)}", data=facts)
    ]


# -- sink output -----------------------------------------------------------------------------


def check_order(
    source: Mapping[bytes | None, tuple[TopicPartition, int]], output: Mapping[int, Sequence[bytes | None]]
) -> list[Violation]:
    """COMMIT-013 over ``input value -> (partition, offset)`` and ``output partition -> values in log order``.

    Within each output partition, the first appearances of one input partition's records must
    follow its offsets; repeats (replays, visible aborted attempts) and values not in ``source``
    are left to the loss and duplicate checks. A value written to more than one output partition is
    such a repeat too: a replay that a keyless partitioner sent elsewhere lands after later records
    there, which says nothing about order (which of its copies came first, no log shows).
    """
    partitions_of: dict[bytes | None, set[int]] = defaultdict(set)
    for partition, values in output.items():
        for value in values:
            partitions_of[value].add(partition)
    out: list[Violation] = []
    for partition, values in sorted(output.items()):
        last: dict[TopicPartition, int] = {}
        seen: set[bytes | None] = set()
        for value in values:
            if value in seen or value not in source or len(partitions_of[value]) > 1:
                continue
            seen.add(value)
            tp, offset = source[value]
            if offset < last.get(tp, -1):
                out.append(
                    Violation(
                        "COMMIT-013",
                        "reordered",
                        f"output partition {partition}: {tp} offset {offset} appears after offset {last[tp]}",
                        data={
                            "output_partition": partition,
                            **tp_fields(tp),
                            "offset": offset,
                            "after": last[tp],
                            "value": value_field(value),
                        },
                    )
                )
            last[tp] = max(offset, last.get(tp, -1))
    return out


def check_pooled_ids(ids: Sequence[str], prefix: str, max_pending: int) -> list[Violation]:
    """COMMIT-018 over every transactional id of ``prefix`` the cluster holds after a run under pooled naming.

    ``max_pending`` is the most checkpoints the run ever had taken and not yet committed at once. Each
    subtask may use ``2 * max_pending + 1`` ids: one open transaction, the pending ones, and as many
    again kept for the last completed checkpoint (kconform's reuse rule; Flink's ``POOLING`` needs only
    ``max_pending + 1``). More means the pool grows with the checkpoints taken, as ``incrementing`` does.
    """
    by_subtask: dict[str, list[str]] = {}
    for tid in ids:
        subtask, _, _ = tid.removeprefix(f"{prefix}-").partition("-")
        by_subtask.setdefault(subtask, []).append(tid)
    bound = 2 * max_pending + 1
    return [
        Violation(
            "COMMIT-018",
            "unbounded-ids",
            f"subtask {subtask} used {len(used)} transactional ids ({', '.join(sorted(used)[:4])}, ...) with at "
            f"most {max_pending} checkpoints pending at once; pooled naming allows {bound}",
            data={
                "subtask": subtask,
                "transactional_ids": sorted(used),
                "id_count": len(used),
                "max_pending": max_pending,
                "bound": bound,
            },
        )
        for subtask, used in sorted(by_subtask.items())
        if len(used) > bound
    ]


def check_stopped_sink(open_at_stop: Iterable[str], pending: Iterable[str], stable: str) -> list[Violation]:
    """COMMIT-020 on the transactions a sink leaves open when the job stops without a restart.

    ``pending`` are the ids holding transactions pre-committed for checkpoints not yet committed (a
    restart from them commits them); ``open_at_stop`` the ids still open right after ``close()``. Any
    other id left open holds records no checkpoint covers, which nothing will ever commit: it blocks
    ``read_committed`` readers until the broker's timeout. A pending one aborted at the stop loses
    records its checkpoint covers. ``stable`` (the partitions' last stable offsets and ends) is evidence.
    """
    left, kept = set(open_at_stop), set(pending)
    out = [
        Violation(
            "COMMIT-020",
            "open-after-stop",
            f"{tid} still open after close(), though no checkpoint covers its records; read_committed: {stable}",
            data={"transactional_id": tid, "stable": stable},
        )
        for tid in sorted(left - kept)
    ]
    out += [
        Violation(
            "COMMIT-020",
            "pending-aborted-at-stop",
            f"{tid} was pre-committed for a pending checkpoint and is no longer open after close(): "
            "a restart from that checkpoint cannot commit it",
            data={"transactional_id": tid},
        )
        for tid in sorted(kept - left)
    ]
    return out
