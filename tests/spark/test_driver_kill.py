"""The driver is killed with SIGKILL in the middle of a run, then restarted from its checkpoint.

The killed driver takes its Python workers with it, mid-batch: some tasks may have committed their
transaction, some may leave one open. The restart must fence the open ones (same transactional
ids: the query id lives in the checkpoint), skip the tasks whose marker shows they committed, and
finish the run. Whether the output is then exactly the input needs a broker that hides aborted
records and fences zombies; on one that does not (see ``conformance.probe``) only "nothing lost"
is asserted, and the report says why.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
from collections import Counter
from pathlib import Path

import pytest

from conformance.brokers import Broker
from conformance.checkers import fail_on
from conformance.pipeline import check_output, fill, topic_values
from conformance.probe import Capability
from reference_impl.kafka_client import KafkaClient, wait_until
from reference_impl.ports import Isolation
from tests.spark.test_source import topic_name

ROOT = Path(__file__).resolve().parents[2]
DRIVER = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from conformance.pipeline import Pipeline, local_session

    servers, source, sink, checkpoint = sys.argv[1:5]
    spark = local_session()
    pipeline = Pipeline(spark, servers, Path(checkpoint), parallelism=2, subscribe=source, sink_topic=sink,
                        extra_options={"maxRecordsPerTrigger": "30"})
    pipeline.run_available_now()
    spark.stop()
    """
)
EXACTLY_ONCE_NEEDS = ("abort_hidden_from_read_committed", "zombie_fencing")


def driver(broker: Broker, source: str, sink: str, checkpoint: Path, log: Path) -> subprocess.Popen[bytes]:
    with log.open("ab") as out:
        return subprocess.Popen(
            [sys.executable, "-c", DRIVER, broker.bootstrap_servers, source, sink, str(checkpoint)],
            cwd=ROOT,
            stdout=out,
            stderr=subprocess.STDOUT,
        )


@pytest.fixture(scope="module")
def killed_and_restarted(
    broker: Broker, capabilities: dict[str, Capability], tmp_path_factory: pytest.TempPathFactory
) -> tuple[Counter[bytes | None], Counter[bytes | None]]:
    """Run the scenario once: (values produced to the input, values read_committed from the output)."""
    tmp_path = tmp_path_factory.mktemp("driver-kill")
    source, sink = topic_name("kill-in"), topic_name("kill-out")
    with KafkaClient(broker) as client:
        client.create_topic(source, 3)
        client.create_topic(sink, 2)
        fill(client, source, 3, 100, "k")
        checkpoint, log = tmp_path / "checkpoint", tmp_path / "drivers.log"

        first = driver(broker, source, sink, checkpoint, log)
        try:
            wait_until(
                lambda: True if len(list((checkpoint / "commits").glob("[0-9]*"))) >= 3 else None,
                timeout_s=240,
                what=f"three committed batches before the kill (driver log: {log})",
            )
        finally:
            first.send_signal(signal.SIGKILL)
            first.wait(timeout=30)
        assert first.returncode == -signal.SIGKILL, "the first driver finished before it could be killed mid-run"

        second = driver(broker, source, sink, checkpoint, log)
        assert second.wait(timeout=300) == 0, f"the restarted driver failed; its log:\n{log.read_text()[-4000:]}"
        return (
            topic_values(client, source, Isolation.READ_UNCOMMITTED),
            topic_values(client, sink, Isolation.READ_COMMITTED),
        )


@pytest.mark.spark
def test_required_COMMIT_011_driver_killed_mid_run_then_restarted_loses_nothing(
    killed_and_restarted: tuple[Counter[bytes | None], Counter[bytes | None]],
) -> None:
    fail_on(check_output(*killed_and_restarted, exactly_once=False))


@pytest.mark.spark
def test_required_COMMIT_011_driver_killed_mid_run_then_restarted_duplicates_nothing(
    killed_and_restarted: tuple[Counter[bytes | None], Counter[bytes | None]],
    capabilities: dict[str, Capability],
) -> None:
    missing = [name for name in EXACTLY_ONCE_NEEDS if not capabilities[name].supported]
    if missing:
        pytest.skip(f"not verifiable on this broker: {', '.join(missing)}")
    fail_on(check_output(*killed_and_restarted, exactly_once=True))
