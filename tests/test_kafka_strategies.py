"""The reference's Kafka strategies on known answers, and the STRAT checkers on observations that break them.

Kafka's own answers (its test vectors and Javadoc examples) pin the reference here without a JVM;
``tests/jvm_oracle`` compares it with kafka-clients on drawn inputs. Each checker is shown to
name the violation a known bug produces, so no STRAT check passes vacuously.
"""

from __future__ import annotations

import random
import zlib
from pathlib import Path

import pytest

from kconform.conformance.checks.checkers import Violation
from kconform.conformance.checks.strategy_checkers import (
    check_balance,
    check_cooperative,
    check_exact_assignment,
    check_group_assignment,
    check_keyed_placement,
    check_keyless_spread,
    check_settles,
    check_stickiness,
    minimal_moves,
    spread,
)
from kconform.conformance.jvm import JVM_DIR_ENV, JvmArtifactsMissing
from kconform.conformance.jvm.kafka_oracle import KafkaOracle
from kconform.reference_impl.kafka_strategies import (
    Group,
    Member,
    RoundRobinKeylessPartitioner,
    StickyPartitioner,
    cooperative_sticky_assign,
    java_order,
    kept_ownership,
    member_order,
    murmur2,
    next_generation,
    owners,
    partition_for_key,
    range_assign,
    round_robin_assign,
    sticky_assign,
    to_positive,
)
from kconform.reference_impl.types import TopicPartition

KAFKA_UTILS_TEST_MURMUR2 = {
    b"21": -973932308,
    b"foobar": -790332482,
    b"a-little-bit-long-string": -985981536,
    b"a-little-bit-longer-string": -1486304829,
    b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8": -58897971,
    b"abc": 479470107,
}
"""``org.apache.kafka.common.utils.UtilsTest.testMurmur2``."""


def tp(name: str) -> TopicPartition:
    topic, _, partition = name.rpartition("-")
    return TopicPartition(topic, int(partition))


def tps(*names: str) -> list[TopicPartition]:
    return [tp(n) for n in names]


def member(member_id: str, topics: str, owned: tuple[str, ...] = (), instance: str | None = None) -> Member:
    return Member(member_id, frozenset(topics.split()), frozenset(tps(*owned)), 1 if owned else -1, instance)


def kinds(violations: list[Violation]) -> set[tuple[str, str]]:
    return {(v.requirement, v.kind) for v in violations}


# -- the partitioner ---------------------------------------------------------------------------


def test_required_STRAT_001_murmur2_gives_kafka_s_test_vectors() -> None:
    assert {key: murmur2(key) for key in KAFKA_UTILS_TEST_MURMUR2} == KAFKA_UTILS_TEST_MURMUR2
    assert murmur2(b"") == 275646681  # the empty key is hashed (from kafka-clients 4.1.1)


def test_required_STRAT_001_to_positive_masks_the_sign_bit() -> None:
    """Not ``abs``: with 10 partitions ``foobar`` goes to 6; ``abs`` would give 2, librdkafka's CRC32 9."""
    assert to_positive(-1) == 0x7FFFFFFF and to_positive(-(2**31)) == 0
    assert partition_for_key(b"foobar", 10) == 6
    assert abs(murmur2(b"foobar")) % 10 == 2 and zlib.crc32(b"foobar") % 10 == 9


def test_required_STRAT_001_and_002_checker_names_crc32_placement_and_an_ignored_partition() -> None:
    placements = [(None, b"foobar", 10, zlib.crc32(b"foobar") % 10), (3, b"foobar", 10, 6), (None, b"foobar", 10, 6)]
    assert kinds(check_keyed_placement(placements)) == {
        ("STRAT-001", "keyed-placement-mismatch"),
        ("STRAT-002", "explicit-partition-ignored"),
    }


def test_required_STRAT_002_an_explicit_partition_wins() -> None:
    assert StickyPartitioner().partition("t", 5, b"foobar", None, 10) == 5


def test_required_STRAT_003_sticky_switches_after_batch_size_bytes() -> None:
    partitioner = StickyPartitioner(batch_size=100, rng=random.Random(7))
    first = [partitioner.partition("t", None, None, bytes(40), 1000) for _ in range(3)]
    assert len(set(first)) == 1  # 40, 80, 120 bytes: the third one still goes there, then it switches
    assert partitioner.partition("t", None, None, bytes(40), 1000) != first[0]


def test_required_STRAT_003_round_robin_variant_cycles_from_a_random_start() -> None:
    partitioner = RoundRobinKeylessPartitioner(rng=random.Random(3))
    placed = [partitioner.partition("t", None, None, b"v", 5) for _ in range(10)]
    assert sorted(placed[:5]) == [0, 1, 2, 3, 4] and placed[5:] == placed[:5]


def test_required_STRAT_003_checker_names_pinned_and_out_of_range_keyless_records() -> None:
    pinned = [partition_for_key(b"", 4)] * 256
    assert kinds(check_keyless_spread(pinned, 4)) == {("STRAT-003", "keyless-not-spread")}
    assert kinds(check_keyless_spread([0, 1, 4], 4)) == {("STRAT-003", "keyless-out-of-range")}
    assert check_keyless_spread([0, 1, 2, 3], 4) == []


# -- the assignors -----------------------------------------------------------------------------

RANGE_JAVADOC = Group((member("C0", "t0 t1"), member("C1", "t0 t1")), {"t0": 3, "t1": 3})
ROUND_ROBIN_JAVADOC = Group(
    (member("C0", "t0"), member("C1", "t0 t1"), member("C2", "t0 t1 t2")), {"t0": 1, "t1": 2, "t2": 3}
)


def test_required_STRAT_005_and_006_member_order_is_java_s() -> None:
    """Static members first by instance id, then member ids by UTF-16 code unit (not code point)."""
    assert java_order("\U0001f600") < java_order("\uff21") and "\U0001f600" > "\uff21"
    members = [
        member("\uff21", "t"),
        member("\U0001f600", "t"),
        member("z", "t", instance="b"),
        member("y", "t", instance="a"),
    ]
    assert [m.member_id for m in sorted(members, key=member_order)] == ["y", "z", "\U0001f600", "\uff21"]


def test_required_STRAT_005_range_gives_the_javadoc_example() -> None:
    assert range_assign(RANGE_JAVADOC) == {"C0": tps("t0-0", "t0-1", "t1-0", "t1-1"), "C1": tps("t0-2", "t1-2")}


def test_required_STRAT_006_and_007_roundrobin_gives_the_javadoc_examples_and_their_skew() -> None:
    assert round_robin_assign(RANGE_JAVADOC) == {"C0": tps("t0-0", "t0-2", "t1-1"), "C1": tps("t0-1", "t1-0", "t1-2")}
    skewed = round_robin_assign(ROUND_ROBIN_JAVADOC)
    assert skewed == {"C0": tps("t0-0"), "C1": tps("t1-0"), "C2": tps("t1-1", "t2-0", "t2-1", "t2-2")}
    assert spread(skewed) == 3


def test_required_STRAT_005_checker_names_a_range_in_another_member_order() -> None:
    group = Group((member("b", "t"), member("a", "t")), {"t": 3})
    wrong = {"b": tps("t-0", "t-1"), "a": tps("t-2")}
    assert kinds(check_exact_assignment(group, wrong, "range")) == {("STRAT-005", "range-mismatch")}
    assert check_exact_assignment(group, range_assign(group), "range") == []


def test_required_STRAT_004_checker_names_every_invalid_shape() -> None:
    group = Group((member("a", "t"), member("b", "t u"), member("c", "t")), {"t": 2, "u": 1})
    observed = {"a": tps("t-0", "u-0", "t-5"), "b": tps("t-0"), "x": tps("t-1")}
    assert kinds(check_group_assignment(group, observed)) == {
        ("STRAT-004", "missing-member"),
        ("STRAT-004", "unknown-member"),
        ("STRAT-004", "unsubscribed-topic"),
        ("STRAT-004", "nonexistent-partition"),
        ("STRAT-004", "double-assignment"),
        ("STRAT-004", "unassigned"),
    }


def test_required_STRAT_004_a_cooperative_rebalance_may_hold_back_only_what_it_revokes() -> None:
    group = Group((member("a", "t", owned=("t-0", "t-1")), member("b", "t")), {"t": 3})
    held_back = {"a": tps("t-0"), "b": tps("t-2")}
    assert check_group_assignment(group, held_back, cooperative=True) == []
    assert kinds(check_group_assignment(group, {"a": tps("t-0", "t-1"), "b": []}, cooperative=True)) == {
        ("STRAT-004", "unassigned")
    }


def claims(member_id: str, owned: tuple[str, ...], generation: int) -> Member:
    return Member(member_id, frozenset({"t"}), frozenset(tps(*owned)), generation)


def test_required_STRAT_004_a_partition_claimed_in_three_generations_goes_to_the_newest_claim_alone() -> None:
    """Claims of generations 3, 1 and 2 in that order: the newest keeps t-0, whatever the order (KAFKA-15106
    gave it to the members of generations 3 and 2 both)."""
    group = Group((claims("a", ("t-0",), 3), claims("c", ("t-0",), 1), claims("b", ("t-0",), 2)), {"t": 3})
    assert owners(group) == {tp("t-0"): {"a"}}
    assert kept_ownership(group) == {"a": {tp("t-0")}, "b": set(), "c": set()}
    assert check_group_assignment(group, sticky_assign(group)) == []
    released_3_5_1 = {"a": tps("t-0"), "b": tps("t-0"), "c": tps("t-1")}
    assert kinds(check_group_assignment(group, released_3_5_1)) == {
        ("STRAT-004", "double-assignment"),
        ("STRAT-004", "unassigned"),
    }
    twice_in_the_newest = Group((*group.members, claims("d", ("t-0",), 3)), {"t": 3})
    assert owners(twice_in_the_newest) == {tp("t-0"): {"a", "d"}}
    assert kept_ownership(twice_in_the_newest)["a"] == set()


def test_required_STRAT_008_checker_names_skew_a_sticky_assignor_could_fix() -> None:
    identical = Group((member("a", "t"), member("b", "t")), {"t": 4})
    assert kinds(check_balance(identical, {"a": tps("t-0", "t-1", "t-2"), "b": tps("t-3")})) == {
        ("STRAT-008", "unbalanced")
    }
    differing = Group((member("a", "t u"), member("b", "u")), {"t": 3, "u": 1})
    assert check_balance(differing, {"a": tps("t-0", "t-1", "t-2"), "b": tps("u-0")}) == []
    assert kinds(check_balance(differing, {"a": tps("t-0", "t-1", "t-2", "u-0"), "b": []})) == {
        ("STRAT-008", "movable-partition")
    }


def test_should_STRAT_009_minimal_moves_and_the_checker() -> None:
    """a owns all 5 of t, b joins: balance needs 2 moves (a keeps 3, the larger quota), not 3."""
    group = Group((member("a", "t", owned=("t-0", "t-1", "t-2", "t-3", "t-4")), member("b", "t")), {"t": 5})
    assert minimal_moves(group) == 2
    assert check_stickiness(group, sticky_assign(group)) == []
    needless = {"a": tps("t-0", "t-1"), "b": tps("t-2", "t-3", "t-4")}
    assert kinds(check_stickiness(group, needless)) == {("STRAT-009", "needless-move")}


def test_should_STRAT_009_a_settled_assignment_with_differing_subscriptions_is_kept() -> None:
    group = Group((member("a", "t u", owned=("t-0", "u-0")), member("b", "t", owned=("t-1",))), {"t": 2, "u": 1})
    assert sticky_assign(group) == {"a": tps("t-0", "u-0"), "b": tps("t-1")}
    assert kinds(check_stickiness(group, {"a": tps("t-1", "u-0"), "b": tps("t-0")})) == {("STRAT-009", "needless-move")}


def test_required_STRAT_010_cooperative_holds_back_what_it_revokes_then_settles() -> None:
    group = Group((member("a", "t", owned=("t-0", "t-1", "t-2", "t-3")), member("b", "t")), {"t": 4})
    first = cooperative_sticky_assign(group)
    assert first == {"a": tps("t-0", "t-1"), "b": []}
    assert check_cooperative(group, first) == []
    follow_up = next_generation(group, first)
    second = cooperative_sticky_assign(follow_up)
    assert second == {"a": tps("t-0", "t-1"), "b": tps("t-2", "t-3")}
    assert check_settles([(group, first), (follow_up, second)]) == []


def test_required_STRAT_010_checker_names_revoke_and_assign_and_no_settling() -> None:
    group = Group((member("a", "t", owned=("t-0", "t-1")), member("b", "t")), {"t": 2})
    eager = sticky_assign(group)
    assert kinds(check_cooperative(group, eager)) == {("STRAT-010", "revoked-and-assigned")}
    assert kinds(check_settles([(group, {"a": tps("t-0"), "b": []})])) == {("STRAT-010", "unsettled")}


def test_required_STRAT_010_an_overridden_older_claim_is_not_ownership() -> None:
    """b missed a rebalance and still claims t-0, which a (newer) owns: a keeping it revokes nothing; c, which
    reads nothing, getting it is assigned what a owns; b getting it adds no reader (it still reads t-0), so
    the claims are settled the other way, which STRAT-010 leaves to STRAT-004."""
    group = Group((claims("a", ("t-0",), 2), claims("b", ("t-0",), 1), claims("c", (), 2)), {"t": 2})
    assert check_cooperative(group, {"a": tps("t-0"), "b": tps("t-1")}) == []
    assert cooperative_sticky_assign(group)["a"] == tps("t-0")
    assert kinds(check_cooperative(group, {"a": tps("t-1"), "c": tps("t-0")})) == {
        ("STRAT-010", "revoked-and-assigned")
    }
    assert check_cooperative(group, {"a": tps("t-1"), "b": tps("t-0")}) == []


# -- the oracle --------------------------------------------------------------------------------


def test_the_oracle_without_its_jar_names_kconform_setup(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(JVM_DIR_ENV, str(tmp_path))
    with pytest.raises(JvmArtifactsMissing, match=r"the Kafka oracle is not built .*: run `kconform setup`"):
        KafkaOracle()
