"""One pipeline run in its own driver process, so a scenario can kill the driver with SIGKILL.

``python -m kconform.conformance.spark.driver '<json>'`` loads the adapter, starts a local session,
runs the query with ``availableNow`` to the end, and exits 0; any failure exits non-zero with
the error on stderr. The JSON carries ``DriverRun``'s fields. The driver leads its own process
group, so a scenario can kill it together with Spark's JVM, where its tasks run (``os.killpg``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path

from kconform.conformance.adapter import PipelineAdapter, load_adapter
from kconform.conformance.spark.pipeline import Pipeline, local_session


@dataclass(frozen=True)
class DriverRun:
    """A source-to-sink query as the killed-driver scenario runs it."""

    adapter: str
    master: str
    bootstrap_servers: str
    source: str
    sink: str
    checkpoint: str
    parallelism: int
    exactly_once: bool
    max_records_per_trigger: int
    client_settings: dict[str, str]
    sink_settings: dict[str, str] = field(default_factory=dict)
    """librdkafka settings for the sink only (``Pipeline.sink_settings``)."""
    subscribe_pattern: str | None = None
    """Subscribe by pattern instead of to ``source`` (``kconform soak`` adds topics while it runs)."""

    def start(self, log: Path) -> subprocess.Popen[bytes]:
        """Start the driver; its output is appended to ``log``. It sees this process's ``sys.path``."""
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
        with log.open("ab") as out:
            return subprocess.Popen(
                [sys.executable, "-m", "kconform.conformance.spark.driver", json.dumps(asdict(self))],
                stdout=out,
                stderr=subprocess.STDOUT,
                env=env,
                start_new_session=True,
            )


def main(argv: list[str]) -> int:
    run = DriverRun(**json.loads(argv[0]))
    adapter = load_adapter(run.adapter)
    assert isinstance(adapter, PipelineAdapter), f"{run.adapter} has no pipeline level"
    spark = local_session(run.master)
    try:
        Pipeline(
            spark,
            run.bootstrap_servers,
            Path(run.checkpoint),
            run.parallelism,
            subscribe=None if run.subscribe_pattern else run.source,
            subscribe_pattern=run.subscribe_pattern,
            sink_topic=run.sink,
            exactly_once=run.exactly_once,
            max_records_per_trigger=run.max_records_per_trigger,
            client_settings=run.client_settings,
            sink_settings=run.sink_settings,
            adapter=adapter,
        ).run_available_now()
    finally:
        spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
