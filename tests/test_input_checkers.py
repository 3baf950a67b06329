"""RESTORE-013's and RESTORE-014's checkers and the input classes they are fed: each checker passes what a
read_committed reader of the Kafka model returns, and names each way of breaking its requirement; the
generator draws every input class at the default profile, and writes each as the class says."""

from __future__ import annotations

from hypothesis import given, settings

from kconform.conformance.checks.checkers import Violation
from kconform.conformance.checks.input_checkers import (
    LogView,
    check_positions_in_gaps,
    check_records_read,
    check_values_as_written,
)
from kconform.conformance.gate.profiles import PROFILES
from kconform.conformance.generators.input_classes import (
    INPUT_CLASSES,
    InputWrite,
    input_writes,
    log_view,
    write_input,
    written_values,
)
from kconform.conformance.generators.strategies import InterleavingMix
from kconform.reference_impl.kafka_model import KafkaModel
from kconform.reference_impl.ports import Isolation
from kconform.reference_impl.types import EARLIEST, TopicPartition

TP = TopicPartition("in", 0)
VIEW = LogView(records=(0, 4, 5), hidden=(1, 2), end=7)
"""0 committed, 1-2 aborted, 3 their abort marker, 4-5 committed, 6 their commit marker."""


def kinds(violations: list[Violation]) -> list[tuple[str, str]]:
    return [(v.requirement, v.kind) for v in violations]


def written(writes: list[InputWrite]) -> tuple[KafkaModel, LogView]:
    log = KafkaModel()
    log.create_topic("in", 2)
    write_input(log, "in", writes, "t")
    return log, log_view(log, TP, Isolation.READ_COMMITTED)


def test_required_RESTORE_013_each_input_class_is_written_as_it_says() -> None:
    log, view = written(
        [
            InputWrite("plain", (0,), 1),
            InputWrite("aborted-transaction", (0, 1), 2),
            InputWrite("tombstone", (0,), 1),
            InputWrite("committed-transaction", (0,), 1),
            InputWrite("empty-value", (0,), 1),
        ]
    )
    assert view == LogView(records=(0, 4, 5, 7), hidden=(1, 2), end=8)
    values = [r.value for r in log.read(TP, 0, Isolation.READ_COMMITTED, 10)]
    assert values == [b"t-plain-0-0-0", None, b"t-committed-transaction-3-0-0", b""]
    p1 = TopicPartition("in", 1)
    assert log_view(log, p1, Isolation.READ_COMMITTED) == LogView(records=(), hidden=(0, 1), end=3)
    assert log_view(log, p1, Isolation.READ_UNCOMMITTED) == LogView(records=(0, 1), hidden=(), end=3)


def test_required_RESTORE_013_the_committed_records_once_pass_from_any_position_in_their_gap() -> None:
    assert check_records_read({TP: VIEW}, {TP: [0, 4, 5]}, "at the end") == []
    for position in (1, 2, 3, 4):  # after record 0: anywhere up to the next committed record, 4
        assert check_positions_in_gaps({TP: VIEW}, {TP: [0]}, {TP: position}, "in checkpoint 1") == []
    for position in (6, 7):  # after record 5: past the commit marker too, up to the end
        assert check_positions_in_gaps({TP: VIEW}, {TP: [0, 4, 5]}, {TP: position}, "at the end") == []
    assert check_positions_in_gaps({TP: VIEW}, {TP: []}, {TP: EARLIEST}, "before the first read") == []


def test_required_RESTORE_013_aborted_records_markers_skips_and_repeats_are_named() -> None:
    emitted = {TP: [0, 1, 3, 5, 5]}
    assert kinds(check_records_read({TP: VIEW}, emitted, "at the end")) == [
        ("RESTORE-013", "aborted-emitted"),
        ("RESTORE-013", "marker-emitted"),
        ("RESTORE-013", "record-repeated"),
        ("RESTORE-013", "record-skipped"),
    ]
    skipped = check_records_read({TP: VIEW}, {TP: [0]}, "before checkpoint 1", read_to={TP: 5})
    assert [(v.kind, v.data["offset"]) for v in skipped] == [("record-skipped", 4)]
    assert check_records_read({TP: VIEW}, {TP: [0]}, "before checkpoint 1", read_to={TP: 4}) == []


def test_required_RESTORE_013_a_position_behind_the_last_record_or_past_the_next_is_named() -> None:
    behind = check_positions_in_gaps({TP: VIEW}, {TP: [0, 4]}, {TP: 3}, "in checkpoint 1")
    assert kinds(behind) == [("RESTORE-013", "position-behind-read")]
    assert behind[0].data["last_emitted"] == 4
    past = check_positions_in_gaps({TP: VIEW}, {TP: [0]}, {TP: 5}, "committed for checkpoint 1")
    assert kinds(past) == [("RESTORE-013", "position-past-record")]
    assert past[0].data["next_record"] == 4
    beyond = check_positions_in_gaps({TP: VIEW}, {TP: [0, 4, 5]}, {TP: 8}, "at the end")
    assert kinds(beyond) == [("RESTORE-013", "position-past-record")]


def test_required_RESTORE_014_a_tombstone_an_empty_value_and_a_changed_one_are_named() -> None:
    written = {TP: {0: b"v", 1: None, 2: b""}}
    assert check_values_as_written(written, [(TP, 0, b"v"), (TP, 1, None), (TP, 2, b"")], "at the end") == []
    emitted = [(TP, 0, b"w"), (TP, 1, b""), (TP, 2, None), (TP, 9, b"no record here: RESTORE-013's")]
    violations = check_values_as_written(written, emitted, "at the end")
    assert kinds(violations) == [
        ("RESTORE-014", "value-changed"),
        ("RESTORE-014", "tombstone-not-null"),
        ("RESTORE-014", "empty-became-null"),
    ]
    assert [(v.data["got"], v.data["want"]) for v in violations] == [("w", "v"), ("", None), (None, "")]


@given(input_writes(2), input_writes(2))
def test_required_RESTORE_013_a_reader_of_any_drawn_input_passes_at_its_own_isolation(
    before: list[InputWrite], after: list[InputWrite]
) -> None:
    log, view = written([*before, *after])
    emitted = [r.offset for r in log.read(TP, 0, Isolation.READ_COMMITTED, 1000)]
    assert check_records_read({TP: view}, {TP: emitted}, "at the end") == []
    assert check_positions_in_gaps({TP: view}, {TP: emitted}, {TP: view.end}, "at the end") == []
    uncommitted = [r.offset for r in log.read(TP, 0, Isolation.READ_UNCOMMITTED, 1000)]
    aborted = any(w.kind == "aborted-transaction" and 0 in w.partitions for w in [*before, *after])
    named = {v.kind for v in check_records_read({TP: view}, {TP: uncommitted}, "at the end")}
    assert named == ({"aborted-emitted"} if aborted else set())
    everything = log_view(log, TP, Isolation.READ_UNCOMMITTED)
    assert check_records_read({TP: everything}, {TP: uncommitted}, "read_uncommitted, at the end") == []
    read = [(TP, r.offset, r.value) for r in log.read(TP, 0, Isolation.READ_COMMITTED, 1000)]
    assert check_values_as_written({TP: written_values(log, TP)}, read, "at the end") == []


def test_required_RESTORE_013_every_input_class_is_drawn_at_the_default_profile() -> None:
    """The generator gap issue 28 names: each class of what real pipelines write occurs in a default run."""
    mix = InterleavingMix(INPUT_CLASSES, kind="input")

    @settings(max_examples=PROFILES["default"], derandomize=True, database=None)
    @given(input_writes(2))
    def draw(writes: list[InputWrite]) -> None:
        for write in writes:
            mix.step(write.kind)

    draw()
    assert not mix.missing(), f"never drawn: {mix.missing()} ({dict(mix.counts)})"
