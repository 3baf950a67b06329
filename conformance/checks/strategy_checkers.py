"""Checkers of Kafka's strategies (STRAT-001..010): pure functions over what a partitioner or an
assignor answered, returning named violations in ``kconform.conformance.checks.checkers``' style.

They never call the implementation; where the spec pins an exact answer (murmur2 placement,
Range, RoundRobin) they compare with the reference in ``kconform.reference_impl.kafka_strategies``, which
the JVM oracle pins to kafka-clients' own classes.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence

from ...reference_impl.kafka_strategies import (
    Group,
    kept_ownership,
    owners,
    partition_for_key,
    range_assign,
    round_robin_assign,
)
from ...reference_impl.types import TopicPartition
from .checkers import Violation, tp_fields, tps_field, value_field

Observed = Mapping[str, Sequence[TopicPartition]]
"""An assignor's answer as observed: member id -> its partitions."""

Placement = tuple[int | None, bytes | None, int, int]
"""One written record as observed: (explicit partition, key, number of partitions, partition it went to)."""


# -- the producer's partitioner ----------------------------------------------------------------


def check_keyed_placement(placements: Sequence[Placement]) -> list[Violation]:
    """STRAT-001 and STRAT-002 over records written without (keyed) or with an explicit partition."""
    out = []
    for explicit, key, partitions, got in placements:
        if explicit is not None:
            if got != explicit:
                out.append(
                    Violation(
                        "STRAT-002",
                        "explicit-partition-ignored",
                        f"record for partition {explicit} went to {got}",
                        data={"key": value_field(key), "partition_count": partitions, "got": got, "want": explicit},
                    )
                )
        elif key is not None and got != (want := partition_for_key(key, partitions)):
            out.append(
                Violation(
                    "STRAT-001",
                    "keyed-placement-mismatch",
                    f"key {key!r} with {partitions} partitions went to {got}, a Java producer writes it to {want}",
                    data={"key": value_field(key), "partition_count": partitions, "got": got, "want": want},
                )
            )
    return out


def check_keyless_spread(placed: Sequence[int], num_partitions: int) -> list[Violation]:
    """STRAT-003 over the partitions a stream of keyless records went to: in range, and every one used."""
    bad = sorted({p for p in placed if not (isinstance(p, int) and 0 <= p < num_partitions)})
    if bad:
        where = f"partitions {bad} of a topic with {num_partitions}"
        facts = {"got": bad, "partition_count": num_partitions}
        return [Violation("STRAT-003", "keyless-out-of-range", where, data=facts)]
    unused = sorted(set(range(num_partitions)) - set(placed))
    if unused:
        return [
            Violation(
                "STRAT-003",
                "keyless-not-spread",
                f"{len(placed)} keyless records left partitions {unused} of {num_partitions} empty "
                f"(used: {dict(sorted(Counter(placed).items()))})",
                data={
                    "record_count": len(placed),
                    "partition_count": num_partitions,
                    "unused": unused,
                    "per_partition": [placed.count(p) for p in range(num_partitions)],
                },
            )
        ]
    return []


# -- consumer-group assignors ------------------------------------------------------------------


def check_group_assignment(group: Group, assignment: Observed, cooperative: bool = False) -> list[Violation]:
    """STRAT-004: every partition of a subscribed topic to exactly one member that subscribes to it.

    ``cooperative``: a partition another member owned may stay unassigned for this rebalance
    (it is being revoked, STRAT-010); every other partition must still be assigned.
    """
    out: list[Violation] = []
    members = {m.member_id: m for m in group.members}
    for missing in sorted(members.keys() - assignment.keys()):
        where = f"member {missing!r} is not in the assignment"
        out.append(Violation("STRAT-004", "missing-member", where, data={"member": missing}))
    owners: dict[TopicPartition, list[str]] = defaultdict(list)
    for member_id, tps in sorted(assignment.items()):
        member = members.get(member_id)
        if member is None:
            facts = {"member": member_id, "partitions": tps_field(tps)}
            where = f"{list(tps)} assigned to {member_id!r}, no member"
            out.append(Violation("STRAT-004", "unknown-member", where, data=facts))
            continue
        for tp in tps:
            owners[tp].append(member_id)
            if not group.exists(tp):
                where = f"{tp} assigned to {member_id!r}"
                out.append(
                    Violation("STRAT-004", "nonexistent-partition", where, data=tp_fields(tp) | {"member": member_id})
                )
            elif tp.topic not in member.topics:
                out.append(
                    Violation(
                        "STRAT-004",
                        "unsubscribed-topic",
                        f"{tp} assigned to {member_id!r}, not subscribed",
                        data=tp_fields(tp) | {"member": member_id},
                    )
                )
    for tp, holders in sorted(owners.items()):
        if len(holders) > 1:
            facts = tp_fields(tp) | {"members": sorted(holders)}
            out.append(Violation("STRAT-004", "double-assignment", f"{tp} assigned to {sorted(holders)}", data=facts))
    revoked = {tp for m in group.members for tp in m.owned} if cooperative else set()
    for tp in group.assignable():
        if tp not in owners and tp not in revoked:
            out.append(Violation("STRAT-004", "unassigned", f"{tp} is assigned to no member", data=tp_fields(tp)))
    return out


def check_exact_assignment(group: Group, assignment: Observed, strategy: str) -> list[Violation]:
    """STRAT-005 (``range``) and STRAT-006 (``roundrobin``): the member-for-member answer of Kafka's class."""
    requirement, expected = {
        "range": ("STRAT-005", range_assign),
        "roundrobin": ("STRAT-006", round_robin_assign),
    }[strategy]
    want = expected(group)
    return [
        Violation(
            requirement,
            f"{strategy}-mismatch",
            f"member {member!r}: got {sorted(map(str, assignment.get(member, ())))}, "
            f"Kafka's assignor gives {[str(tp) for tp in want[member]]}",
            data={"member": member, "got": tps_field(assignment.get(member, ())), "want": tps_field(want[member])},
        )
        for member in sorted(want)
        if sorted(assignment.get(member, ())) != want[member]
    ]


def spread(assignment: Observed) -> int:
    """STRAT-007 metric: max - min partitions per member."""
    sizes = [len(tps) for tps in assignment.values()]
    return max(sizes) - min(sizes) if sizes else 0


def check_balance(group: Group, assignment: Observed) -> list[Violation]:
    """STRAT-008: no partition can move to a member that subscribes to its topic and has two fewer.

    With identical subscriptions that is ``max - min <= 1``.
    """
    sizes = {m.member_id: len(assignment.get(m.member_id, ())) for m in group.members}
    out = []
    for member_id, tps in sorted(assignment.items()):
        for tp in sorted(tps):
            lighter = [
                m.member_id
                for m in group.members
                if tp.topic in m.topics and sizes.get(member_id, 0) >= sizes[m.member_id] + 2
            ]
            if lighter:
                kind = "unbalanced" if group.identical_subscriptions else "movable-partition"
                out.append(
                    Violation(
                        "STRAT-008",
                        kind,
                        f"{tp} of {member_id!r} ({sizes[member_id]} partitions) could go to "
                        f"{lighter[0]!r} ({sizes[lighter[0]]}), which subscribes to {tp.topic!r}",
                        data=tp_fields(tp)
                        | {
                            "member": member_id,
                            "partition_count": sizes[member_id],
                            "to_member": lighter[0],
                            "to_partition_count": sizes[lighter[0]],
                        },
                    )
                )
                break
    return out


def minimal_moves(group: Group) -> int:
    """With identical subscriptions, the fewest kept partitions any balanced assignment takes from their owner.

    ``r = P mod N`` members may keep ``P // N + 1``, the others ``P // N``; a member keeping more
    loses the excess, and each of the ``r`` larger quotas saves one move when it goes to a member
    that kept more than ``P // N``.
    """
    counts = [len(tps) for tps in kept_ownership(group).values()]
    quota, extra = divmod(len(group.assignable()), len(group.members))
    excess = sum(max(0, c - quota) for c in counts)
    return excess - min(extra, sum(1 for c in counts if c > quota))


def check_stickiness(group: Group, assignment: Observed) -> list[Violation]:
    """STRAT-009: partitions stay with their previous owner unless balance needs them elsewhere.

    Identical subscriptions: no more partitions move than ``minimal_moves``. Otherwise: an
    ownership that is still valid, complete and balanced is kept exactly.
    """
    kept = kept_ownership(group)
    moved = {m: sorted(tps - set(assignment.get(m, ()))) for m, tps in kept.items()}
    count = sum(len(tps) for tps in moved.values())
    shown = {m: [str(tp) for tp in tps] for m, tps in sorted(moved.items()) if tps}
    moved_field = [{"member": m, "partitions": tps_field(tps)} for m, tps in sorted(moved.items()) if tps]
    if group.identical_subscriptions:
        fewest = minimal_moves(group)
        if count > fewest:
            return [
                Violation(
                    "STRAT-009",
                    "needless-move",
                    f"{count} partitions taken from their owners where balance needs {fewest}: {shown}",
                    data={"moved_count": count, "want": fewest, "moved": moved_field},
                )
            ]
        return []
    previous = {m: sorted(tps) for m, tps in kept.items()}
    settled = not check_group_assignment(group, previous) and not check_balance(group, previous)
    if settled and count:
        return [
            Violation(
                "STRAT-009",
                "needless-move",
                f"the previous ownership was valid, complete and balanced, yet {count} partitions moved: {shown}",
                data={"moved_count": count, "want": 0, "moved": moved_field},
            )
        ]
    return []


def check_cooperative(group: Group, assignment: Observed) -> list[Violation]:
    """STRAT-010: no partition goes to a new reader in the rebalance that revokes it from another member (its
    owner: the claim of the newest generation, ``owners``). A member that claims the partition itself, in an
    older generation or twice in one, reads it already: keeping it there adds no reader, so that is no
    violation (the claims were inconsistent before the rebalance; STRAT-004 judges how they are settled)."""
    owned_by = owners(group)
    claimers = {tp: {m.member_id for m in group.members if tp in m.owned} for tp in owned_by}
    return [
        Violation(
            "STRAT-010",
            "revoked-and-assigned",
            f"{tp} assigned to {member_id!r} in the rebalance that revokes it from {sorted(others)}",
            data=tp_fields(tp) | {"member": member_id, "members": sorted(others)},
        )
        for member_id, tps in sorted(assignment.items())
        for tp in sorted(tps)
        if (others := owned_by.get(tp, set()) - {member_id}) and member_id not in claimers[tp]
    ]


def revoked(group: Group, assignment: Observed) -> set[TopicPartition]:
    """The partitions members owned before and no longer have: what this rebalance revokes."""
    return {tp for m in group.members for tp in m.owned - set(assignment.get(m.member_id, ()))}


def check_settles(rounds: Sequence[tuple[Group, Observed]]) -> list[Violation]:
    """STRAT-010: the follow-up rebalances of a cooperative assignor end, the last one revoking nothing."""
    group, assignment = rounds[-1]
    left = sorted(revoked(group, assignment))
    if not left:
        return []
    return [
        Violation(
            "STRAT-010",
            "unsettled",
            f"{len(rounds)} rebalances in a row revoke partitions; the last revokes {[str(tp) for tp in left]}",
            data={"rebalances": len(rounds), "partitions": tps_field(left)},
        )
    ]


def check_sink_placement(written: Mapping[int, Sequence[bytes | None]], num_partitions: int) -> list[Violation]:
    """STRAT-001 on a sink's output read back from the broker (partition -> the keys of its records, rows
    written without a partition column): each keyed record sits where a Java producer puts its key.

    Keyless records are not judged here: their placement is free within STRAT-003's bounds.
    """
    return check_keyed_placement(
        [(None, key, num_partitions, partition) for partition, keys in sorted(written.items()) for key in keys]
    )
