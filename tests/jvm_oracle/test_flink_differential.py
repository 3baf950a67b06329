"""The reference's assigner and transaction naming against Flink's Kafka connector's own classes,
asked through the Flink oracle.

On drawn (topic, partition, parallelism) the reference's ``assign`` and ``java_string_hash`` must
agree exactly with FLIP-27's ``KafkaSourceEnumerator.getSplitOwner`` (the pinned connector, 5.x), the legacy
``KafkaTopicPartitionAssigner.assign`` (3.x) and the JVM's ``String.hashCode``. Topic names are
drawn well beyond what Kafka accepts (any Unicode outside the surrogates, non-BMP characters,
empty and very long names, names built to hit the hash codes where the sign mask and the 32-bit
wrap matter), since the formula, not the broker, is under test. A failure prints the Hypothesis
blob that replays it (``@reproduce_failure``).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from kconform.conformance.generators.strategies import KAFKA_TOPIC_ALPHABET
from kconform.conformance.jvm import JVM_DIR_ENV, JvmArtifactsMissing
from kconform.conformance.jvm.flink_oracle import FLINK_LEGACY, FLINK_ORACLE, FlinkOracle
from kconform.conformance.jvm.kafka_oracle import OracleError
from kconform.reference_impl.assignment import assign, java_string_hash
from kconform.reference_impl.commit import NamingStrategy, transactional_id

pytestmark = pytest.mark.flink_oracle

INT_MAX = 2**31 - 1
MAX_PARALLELISM = 2**15
"""Flink's upper bound on a job's max parallelism (``KeyGroupRangeAssignment.UPPER_BOUND_MAX_PARALLELISM``)."""


def _signed(value: int) -> int:
    """A 32-bit pattern as Java's int."""
    return value - 2**32 if value >= 2**31 else value


EDGE_HASHES = (
    -(2**31),  # Integer.MIN_VALUE: "polygenelubricants"
    -(2**31) + 1,
    INT_MAX,
    0,
    -1,
    # the hashes whose hash * 31 wraps to 0x7FFFFFFF, 0x80000000, 0x80000001, 0xFFFFFFFF: the mask's edges
    *(_signed(t * pow(31, -1, 2**32) % 2**32) for t in (0x7FFFFFFF, 0x80000000, 0x80000001, 0xFFFFFFFF)),
)
_CJK = 0x4E00  # five trailing CJK ideographs (U+4E00..U+602A) steer a name to any hash code


def with_java_hash(prefix: str, target: int) -> str:
    """``prefix`` and five CJK characters, chosen so that Java's ``hashCode`` of the result is ``target``."""
    weights = [31**k for k in range(4, -1, -1)]
    rest = (target - java_string_hash(prefix) * 31**5 - _CJK * sum(weights)) % 2**32
    digits = []
    for weight in weights:
        digits.append(rest // weight)
        rest %= weight
    return prefix + "".join(chr(_CJK + d) for d in digits)


unicode_text = st.text(st.characters(exclude_categories=("Cs",)), max_size=40)
topics = st.one_of(
    unicode_text,  # any Unicode but the surrogates, non-BMP included; empty too
    st.text(KAFKA_TOPIC_ALPHABET, min_size=1, max_size=249),
    st.sampled_from(["", " ", "\x00", "\uffff", "\U0010ffff", "😀", "polygenelubricants", "Aa", "BB"]),
    st.builds(with_java_hash, unicode_text, st.sampled_from(EDGE_HASHES)),
    st.builds(lambda c, k: c * k, st.characters(exclude_categories=("Cs",)), st.integers(249, 5000)),
)
parallelisms = st.one_of(st.integers(1, 64), st.integers(1, MAX_PARALLELISM), st.sampled_from([1, INT_MAX]))


@st.composite
def owner_cases(draw: st.DrawFn) -> tuple[str, int, int]:
    """(topic, partition, parallelism) with ``startIndex + partition`` inside Java's int, since
    ``startIndex < n`` and ``partition <= 2**31 - n`` (the overflow test below shows what lies past it)."""
    n = draw(parallelisms)
    partition = draw(st.one_of(st.integers(0, min(1000, 2**31 - n)), st.integers(0, 2**31 - n)))
    return draw(topics), partition, n


def test_the_edge_names_have_their_hash_codes() -> None:
    for target in EDGE_HASHES:
        assert -(2**31) <= target <= INT_MAX
        for prefix in ("", "orders", "😀", "x" * 300):
            assert java_string_hash(with_java_hash(prefix, target)) == target


@given(st.lists(owner_cases(), min_size=1, max_size=50))
@example([("test-topic", p, n) for n in (5, 6) for p in range(11)])  # seed 002's worked example
@example([(t, 0, n) for t in ("polygenelubricants", "", "😀-emoji-surrogate-pair") for n in (1, 7, MAX_PARALLELISM)])
def test_required_ASSIGN_004_and_006_flinks_split_owner_and_legacy_assigner_agree_with_the_reference(
    flink_oracle: FlinkOracle, batch: list[tuple[str, int, int]]
) -> None:
    flink = flink_oracle.owners(batch)
    ours = [(java_string_hash(t), assign(t, p, n)) for t, p, n in batch]
    assert ours == [(f.hash_code, f.split_owner) for f in flink], [
        (case, mine, java) for case, mine, java in zip(batch, ours, flink, strict=True) if mine[1] != java.split_owner
    ]
    assert [f.legacy_owner for f in flink] == [f.split_owner for f in flink]


def test_flinks_owner_wraps_below_zero_past_integer_max_value_and_the_references_does_not(
    flink_oracle: FlinkOracle,
) -> None:
    """Both Flink assigners add ``startIndex + partition`` in Java's int: for a partition id within
    ``n`` of ``Integer.MAX_VALUE`` the sum wraps and the owner is negative, a subtask that does not
    exist. Kafka never has such partition ids; the reference (Python integers) stays in range."""
    (flink,) = flink_oracle.owners([("test-topic", INT_MAX, 5)])  # startIndex 1: 1 + MAX_VALUE wraps to MIN_VALUE
    assert (flink.split_owner, flink.legacy_owner) == (-3, -3)  # MIN_VALUE % 5 in Java
    assert assign("test-topic", INT_MAX, 5) == 3


prefixes = st.one_of(unicode_text.filter(bool), st.text(KAFKA_TOPIC_ALPHABET, min_size=1, max_size=40))
subtasks = st.integers(0, MAX_PARALLELISM - 1)


@given(st.lists(st.tuples(prefixes, subtasks, st.integers(1, 2**63 - 1)), min_size=1, max_size=50))
@example([("kconform", 0, 1), ("a-1", 2, 3), ("😀", 7, 2**63 - 1)])
def test_required_COMMIT_005_incrementing_ids_are_flinks_transactional_ids(
    flink_oracle: FlinkOracle, batch: list[tuple[str, int, int]]
) -> None:
    """``{prefix}-{subtask}-{n}`` is ``TransactionalIdFactory.buildTransactionalId`` of both connector lines."""
    ours = [transactional_id(s, i, n, NamingStrategy.INCREMENTING) for s, i, n in batch]
    assert flink_oracle.transactional_ids(batch) == [(t, t) for t in ours]


@given(prefixes, subtasks, st.integers(1, 10_000))
def test_required_COMMIT_005_incrementing_names_the_next_checkpoints_transaction_as_flink_does(
    flink_oracle: FlinkOracle, prefix: str, subtask: int, n: int
) -> None:
    """With no checkpoint skipped, Flink's ``INCREMENTING`` asks for exactly the id the reference
    uses for transaction ``n``: the reference counts barriers, Flink names checkpoint ids."""
    assert flink_oracle.incrementing(prefix, subtask, n - 1, n) == [
        transactional_id(prefix, subtask, n, NamingStrategy.INCREMENTING)
    ]


def test_flinks_incrementing_initialises_the_ids_of_skipped_checkpoints(flink_oracle: FlinkOracle) -> None:
    """Where the two differ by design: after checkpoint 3, the next being 6, Flink names the new
    transaction by the checkpoint id (6) and first initialises the ids of 4 and 5, so that its probing
    aborter finds no gap; the reference counts barriers densely (its next id ends in 4) instead."""
    assert flink_oracle.incrementing("tx", 2, 3, 6) == ["tx-2-4", "tx-2-5", "tx-2-6"]


@given(prefixes, subtasks, st.sets(st.integers(0, 30), max_size=20))
def test_required_COMMIT_005_pooling_takes_the_smallest_free_slot_as_flink_does_under_its_own_name(
    flink_oracle: FlinkOracle, prefix: str, subtask: int, used: set[int]
) -> None:
    """Flink's ``POOLING`` takes the smallest offset whose id no ongoing transaction holds, as the
    reference takes the smallest free slot; Flink names it ``{prefix}-{subtask}-{slot}``, the reference
    ``{prefix}-{subtask}-p{slot}`` (spec/commit.md): the same slot, spelt differently."""
    free = min(set(range(len(used) + 1)) - used)
    ongoing = [transactional_id(prefix, subtask, s, NamingStrategy.INCREMENTING) for s in sorted(used)]
    (chosen,) = flink_oracle.pooling(prefix, subtask, ongoing)
    assert chosen == f"{prefix}-{subtask}-{free}"
    assert transactional_id(prefix, subtask, free, NamingStrategy.POOLING) == f"{prefix}-{subtask}-p{free}"


def test_a_request_the_flink_oracle_cannot_answer_is_an_error(flink_oracle: FlinkOracle) -> None:
    with pytest.raises(OracleError, match=r"the Flink oracle could not answer 'nope': .*unknown op nope"):
        flink_oracle.request({"op": "nope"})
    (answer,) = flink_oracle.owners([("test-topic", 0, 5)])  # and it still answers
    assert (answer.hash_code, answer.split_owner, answer.legacy_owner) == (639758388, 1, 1)


@pytest.mark.parametrize("built", [(), (FLINK_ORACLE,), (FLINK_LEGACY,), (FLINK_ORACLE, FLINK_LEGACY)])
def test_the_flink_oracle_without_its_jars_names_kconform_setup(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, built: tuple[str, ...]
) -> None:
    for module in built:
        (tmp_path / module).mkdir()
        (tmp_path / module / f"{module}-0.1.0.jar").write_bytes(b"")
    monkeypatch.setenv(JVM_DIR_ENV, str(tmp_path))
    with pytest.raises(JvmArtifactsMissing, match=r"run `kconform setup`"):  # the last: no flink-core-*-tests.jar
        FlinkOracle()
