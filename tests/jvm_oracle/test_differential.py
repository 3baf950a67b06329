"""The reference's Kafka strategies against kafka-clients' own classes, asked through the Kafka oracle.

murmur2, keyed placement, Range and RoundRobin must agree exactly with Kafka on drawn inputs; the
sticky assignors are judged by invariants (after Kafka's ``AbstractStickyAssignorTest``), which
must hold on Kafka's ``StickyAssignor`` / ``CooperativeStickyAssignor`` and on the reference alike.
A failure prints the Hypothesis blob that replays it (``@reproduce_failure``).
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from kconform.conformance.checks.checkers import Violation, explain
from kconform.conformance.checks.strategy_checkers import (
    check_balance,
    check_cooperative,
    check_group_assignment,
    check_settles,
    check_stickiness,
    revoked,
)
from kconform.conformance.generators.group_strategies import groups, keys, partition_counts
from kconform.conformance.jvm.kafka_oracle import KafkaOracle, OracleError
from kconform.reference_impl.kafka_strategies import (
    ASSIGNORS,
    STICKY_STRATEGIES,
    Assignment,
    Group,
    Member,
    murmur2,
    next_generation,
    partition_for_key,
)

pytestmark = pytest.mark.kafka_oracle

MAX_REBALANCES = 4


@given(st.lists(st.tuples(keys(), partition_counts()), min_size=1, max_size=50))
@example([(b"", 1), (b"21", 10), (bytes(range(256)), 2**31 - 1), ("😀".encode(), 7)])
def test_required_STRAT_001_murmur2_and_keyed_placement_agree_with_java(
    kafka_oracle: KafkaOracle, batch: list[tuple[bytes, int]]
) -> None:
    hashes, placed = kafka_oracle.keyed([k for k, _ in batch], [n for _, n in batch])
    ours = [(murmur2(k), partition_for_key(k, n)) for k, n in batch]
    assert ours == list(zip(hashes, placed, strict=True)), [
        (k, n, mine, java)
        for (k, n), mine, java in zip(batch, ours, zip(hashes, placed, strict=True), strict=True)
        if mine != java
    ]


@pytest.mark.parametrize(("requirement", "strategy"), [("STRAT-005", "range"), ("STRAT-006", "roundrobin")])
@given(st.lists(groups(), min_size=1, max_size=5))
def test_required_STRAT_005_and_006_range_and_roundrobin_agree_with_kafka(
    kafka_oracle: KafkaOracle, requirement: str, strategy: str, batch: list[Group]
) -> None:
    for group, kafka in zip(batch, kafka_oracle.assign(strategy, batch), strict=True):
        assert ASSIGNORS[strategy](group) == kafka, f"{requirement}: {group}"


@pytest.mark.parametrize("strategy", STICKY_STRATEGIES)
@pytest.mark.parametrize("implementation", ["kafka", "reference"])
@given(group=groups())
def test_required_STRAT_004_and_008_and_009_and_010_sticky_invariants_hold_on_kafka_and_reference(
    kafka_oracle: KafkaOracle, implementation: str, strategy: str, group: Group
) -> None:
    """Valid, sticky and (cooperative) never revoking and assigning at once; after the follow-up
    rebalances a cooperative assignor needs, valid and balanced (``verifyValidityAndBalance``)."""

    def assign(g: Group) -> Assignment:
        return kafka_oracle.assign(strategy, [g])[0] if implementation == "kafka" else ASSIGNORS[strategy](g)

    cooperative = strategy == "cooperative-sticky"
    rounds = _rebalances(assign, group, cooperative)
    violations: list[Violation] = check_stickiness(group, rounds[0][1])
    for g, a in rounds:
        violations += check_group_assignment(g, a, cooperative)
        violations += check_cooperative(g, a) if cooperative else []
    violations += check_settles(rounds) if cooperative else []
    violations += check_group_assignment(*rounds[-1]) + check_balance(*rounds[-1])
    assert not violations, f"{implementation} {strategy}: {explain(violations)}\n{group}"


def _rebalances(
    assign: Callable[[Group], Assignment], group: Group, cooperative: bool
) -> list[tuple[Group, Assignment]]:
    rounds = [(group, assign(group))]
    while cooperative and len(rounds) < MAX_REBALANCES and revoked(*rounds[-1]):
        group = next_generation(*rounds[-1])
        rounds.append((group, assign(group)))
    return rounds


def test_a_request_the_oracle_cannot_answer_is_an_error(kafka_oracle: KafkaOracle) -> None:
    with pytest.raises(OracleError, match=r"could not answer 'assign': .*unknown strategy nope"):
        kafka_oracle.assign("nope", [Group((Member("m", frozenset({"t"})),), {"t": 1})])
    assert kafka_oracle.keyed([b"21"], [10]) == ([-973932308], [0])  # and it still answers


def test_an_oracle_that_does_not_answer_in_time_is_stopped() -> None:
    with KafkaOracle(timeout_s=0.001) as oracle:
        with pytest.raises(OracleError, match=r"gave no answer within 0.001 s"):
            oracle.keyed([b"21"], [10])
        with pytest.raises(OracleError, match=r"has exited"):
            oracle.keyed([b"21"], [10])
