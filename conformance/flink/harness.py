"""The Flink harness from Python: run one ``JobRun`` of a connector release and read back what it did.

The thin shell around ``jvm/flink-harness``: resolve the release's build (``resolve``), write the run description
(``job``), start the JVM with a bounded heap, wait for it (bounded: killed on expiry, its stderr's tail in the
error), and parse the history its subtasks recorded (``history``). What became visible downstream is the sink
topic read back by a ``read_committed`` consumer (``kconform.reference_impl.kafka_client.topic_records``).
"""

from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from ...reference_impl.kafka_client import KafkaClient, topic_records
from ...reference_impl.ports import Isolation, Record
from ..errors import HarnessError
from ..jvm import java_binary
from ..jvm.setup import Say
from .history import Ended, RunHistory, parse_run
from .job import JobRun, description
from .resolve import MAIN_CLASS, resolve
from .versions import ConnectorRelease

HEAP: Final = "-Xmx512m"
"""The MiniCluster, Kafka and the suite share two cores and a few GB: a 1,000-record job with a failure peaked at
290 MB resident on Flink 1.18 and 350 MB on 2.0 with this heap (``/usr/bin/time -v``, 2026-11-25)."""
STARTUP_S: Final = 60.0
"""The JVM's start and the MiniCluster's, on top of the run's own bound."""
STDERR_TAIL: Final = 3000


@dataclass(frozen=True, slots=True)
class RunResult:
    """What one job run did: its end, the savepoint it stopped with, and its history."""

    job_id: str
    ended: Ended
    savepoint: str | None
    stop_met: bool | None
    """Whether an unbounded run's stop condition held before its deadline (``None`` for a bounded run)."""
    wall_ms: int
    history: RunHistory


class FlinkHarness:
    """The harness of one ``flink-connector-kafka`` release, resolved (built on first use) on creation."""

    def __init__(self, release: ConnectorRelease, say: Say) -> None:
        self.release = release
        self.folder = resolve(release, say)

    def command(self, run_file: Path) -> list[str]:
        """The JVM's command line: bounded heap, the release's JVM options and classpath, the run description."""
        options = self.release.java_options
        return [str(java_binary()), HEAP, *options, "-cp", f"{self.folder}/*", MAIN_CLASS, str(run_file)]

    def run(self, job: JobRun, work: Path) -> RunResult:
        """Run ``job`` with its files in the new folder ``work``; ``HarnessError`` when the JVM fails or overruns."""
        work.mkdir(parents=True)
        history, run_file, log = work / "history.jsonl", work / "run.json", work / "stderr.log"
        run_file.write_text(json.dumps(description(job, history, work / "savepoints"), indent=1))
        limit = STARTUP_S + 3 * job.timeout_ms / 1000  # the job's end, a savepoint and its end after it
        with log.open("wb") as stderr:
            process = subprocess.Popen(
                self.command(run_file), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=stderr
            )
            try:
                out, _ = process.communicate(timeout=limit)
            except subprocess.TimeoutExpired:
                process.kill()
                process.communicate()
                raise HarnessError(f"the Flink harness did not end within {limit:g} s; {self._tail(log)}") from None
        if process.returncode != 0:
            raise HarnessError(f"the Flink harness failed (exit {process.returncode}); {self._tail(log)}")
        answer = json.loads(out.decode().strip().splitlines()[-1])
        with history.open(encoding="utf-8") as lines:
            recorded = parse_run(lines, answer["ended"])
        return RunResult(
            answer["job_id"], answer["ended"], answer["savepoint"], answer["stop_met"], answer["wall_ms"], recorded
        )

    def _tail(self, log: Path) -> str:
        text = log.read_bytes()[-STDERR_TAIL:].decode("utf-8", "replace").strip()
        return f"flink-connector-kafka {self.release.connector} printed:\n{text}" if text else "it printed nothing"


def visible_output(client: KafkaClient, topic: str) -> dict[int, list[Record]]:
    """Partition -> the records of the sink topic a ``read_committed`` consumer sees, in log order."""
    return topic_records(client, topic, Isolation.READ_COMMITTED)
