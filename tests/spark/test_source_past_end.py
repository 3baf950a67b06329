"""The source's driver on a partition whose end lies below its offset (RESTORE-022, RESTORE-023): pure, a fake broker.

The live scenario (``test_required_RESTORE_022_*`` in the suite) deletes and creates a topic again; this shows the
rule the reference's driver applies, and that an end that lags for a moment (KAFKA-7703) is asked again, not failed.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import pytest

from kconform.conformance.checks.pipeline_checkers import Truncated, check_position_past_end
from kconform.reference_impl.ports import Isolation
from kconform.reference_impl.spark import source
from kconform.reference_impl.spark.offsets import SourceOffsets
from kconform.reference_impl.spark.source import KafkaStreamReader, PositionPastEnd, SourceOptions
from kconform.reference_impl.types import TopicPartition

RECREATED, OTHER = TopicPartition("r", 0), TopicPartition("o", 0)


@dataclass
class FakeBroker:
    """``list_topics`` and ``latest_offset`` as the driver asks them; each answer of ``ends`` once, the last kept."""

    ends: dict[TopicPartition, list[int]]
    asked: list[TopicPartition] = field(default_factory=list)

    def list_topics(self) -> Mapping[str, frozenset[int]]:
        return {tp.topic: frozenset({tp.partition}) for tp in self.ends}

    def latest_offset(self, tp: TopicPartition, isolation: Isolation) -> int:
        self.asked.append(tp)
        answers = self.ends[tp]
        return answers.pop(0) if len(answers) > 1 else answers[0]

    def earliest_offset(self, tp: TopicPartition) -> int:
        return 0


def reader(broker: FakeBroker) -> KafkaStreamReader:
    options = SourceOptions.parse({"bootstrap.servers": "127.0.0.1:9", "subscribe": "r,o"})
    read = KafkaStreamReader(options)
    read._client = broker  # type: ignore[assignment]  # the driver's only client, faked
    return read


PREVIOUS = SourceOffsets(1, {RECREATED: 1013, OTHER: 1013}).to_json()


def test_required_RESTORE_022_023_an_end_below_the_offset_fails_the_trigger_naming_all_three(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(source, "PAST_END_ASK_INTERVAL_S", 0.0)
    broker = FakeBroker({RECREATED: [308], OTHER: [1045]})
    with pytest.raises(PositionPastEnd) as failed:
        reader(broker).latestOffset(PREVIOUS, None)  # type: ignore[arg-type]
    found = {RECREATED: Truncated(1013, 0, 308), OTHER: Truncated(1013, 0, 1045)}
    assert check_position_past_end(str(failed.value), [], found, loss_accepted=False) == []
    assert broker.asked.count(RECREATED) == source.PAST_END_ASKS  # asked again before failing


def test_required_RESTORE_022_an_end_that_lags_for_a_moment_is_asked_again_not_failed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(source, "PAST_END_ASK_INTERVAL_S", 0.0)
    broker = FakeBroker({RECREATED: [1010, 1020], OTHER: [1045]})
    latest = SourceOffsets.from_json(reader(broker).latestOffset(PREVIOUS, None))  # type: ignore[arg-type]
    assert latest.offsets == {RECREATED: 1020, OTHER: 1045}
