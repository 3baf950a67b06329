"""``kconform replay-schedule``: a failure's one-line replay reads back the schedule it printed, whole; the clients'
log is asked for without changing what the schedule draws; a schedule that does not parse is a usage error naming
the fix. (Its run on a real broker: tests/integration/test_jvm_client_workload.py.)"""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest

from kconform.conformance.replay import command as replay
from kconform.conformance.workloads.clients.jvm_clients import QUIET, log_flags
from kconform.conformance.workloads.clients.schedule import (
    ConsumerPlan,
    Late,
    ProducerPlan,
    Schedule,
    Step,
    StepKind,
)

SCHEDULE = Schedule(
    partitions=(2, 1),
    producers=(ProducerPlan({"linger.ms": "5"}, transactional=True),),
    consumers=(
        ConsumerPlan({"enable.auto.commit": "false"}, "pattern"),
        ConsumerPlan({}, "topics", (1,)),
    ),
    steps=(Step(StepKind.PRODUCE, count=3, keyed=True), Step(StepKind.POLL, client=1, count=2, mode="poll")),
    late=Late(ConsumerPlan({"enable.auto.commit": "false"}, "pattern"), of=0, brief_ms=900),
    asks=((1, 8),),
)


@pytest.mark.parametrize(("release", "kafka"), [("3.9.1", "4.1.1"), (None, None)])
def test_the_replay_line_carries_the_whole_schedule_and_where_it_ran(release: str | None, kafka: str | None) -> None:
    words = shlex.split(replay.replay_line(SCHEDULE, release, kafka))
    assert words[:2] == ["kconform", "replay-schedule"]
    assert replay.read_schedule(words[-1]) == SCHEDULE
    assert ("--release" in words) == (release is not None) and ("--kafka-version" in words) == (kafka is not None)
    if release is not None:
        assert words[words.index("--release") + 1] == release
        assert words[words.index("--kafka-version") + 1] == kafka


def test_a_schedule_is_read_from_its_json_a_file_or_standard_input(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    held = tmp_path / "schedule.json"
    held.write_text(SCHEDULE.dumps())
    assert replay.read_schedule(str(held)) == SCHEDULE
    assert replay.read_schedule("  " + SCHEDULE.dumps()) == SCHEDULE
    monkeypatch.setattr("sys.stdin", held.open())
    assert replay.read_schedule("-") == SCHEDULE


@pytest.mark.parametrize("text", ["no-such-file.json", '{"steps": []}', "{not json"])
def test_a_schedule_that_does_not_parse_is_a_usage_error_naming_the_fix(
    text: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert replay.main([text]) == replay.USAGE_EXIT
    err = capsys.readouterr().err
    assert err.startswith("kconform replay-schedule: error: ") and "a failure printed" in err


def test_librdkafka_s_debug_log_is_asked_of_every_client_and_changes_no_drawn_setting() -> None:
    debugged = replay.with_debug(SCHEDULE, "cgrp,fetch")
    plans = [*debugged.consumers, *debugged.producers, *([debugged.late.plan] if debugged.late else [])]
    assert plans and all(p.settings["debug"] == "cgrp,fetch" for p in plans)
    before = [*SCHEDULE.consumers, *SCHEDULE.producers, *([SCHEDULE.late.plan] if SCHEDULE.late else [])]
    for old, new in zip(before, plans, strict=True):
        assert {k: v for k, v in new.settings.items() if k != "debug"} == dict(old.settings)
    assert debugged.steps == SCHEDULE.steps and debugged.asks == SCHEDULE.asks
    assert replay.with_debug(SCHEDULE, "") is SCHEDULE


def test_kafka_clients_loggers_are_quiet_unless_asked() -> None:
    quiet = log_flags({})
    assert f"-Dorg.slf4j.simpleLogger.defaultLogLevel={QUIET}" in quiet
    assert not [f for f in quiet if ".log." in f]
    debug = log_flags(replay.JAVA_LOGGERS["debug"])
    assert "-Dorg.slf4j.simpleLogger.log.org.apache.kafka.clients.consumer.internals=debug" in debug
    assert set(replay.JAVA_LOGGERS) == set(replay.LEVELS) == set(replay.LIBRDKAFKA_DEBUG)
