"""``--kafka-version V`` of ``kconform run``, ``probe-broker`` and ``soak``: the Apache Kafka release the suite starts.

The option (else ``$KCONFORM_KAFKA_VERSION``) names a release of the version table (``versions.py``); the command
resolves it with Maven before anything starts (cached under the jars folder's ``releases/``) and passes it on in
``$KCONFORM_KAFKA_VERSION``, which every Kafka broker the run starts reads. An unknown release is a usage error
(exit 2) naming the known ones; one Maven cannot resolve is could-not-check (exit 3) naming the fix.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence
from typing import Final

from ..jvm import JvmArtifactsMissing
from ..jvm.broker_at_release import pinned, resolve_at_release
from ..jvm.setup import SetupError
from .versions import DEFAULT_KAFKA_VERSION, KAFKA_VERSION_ENV, UnknownKafkaVersion, kafka_release, known_versions

KAFKA_KINDS: Final = ("kafka", "kafka-cluster", "kafka-sasl")
"""The broker kinds the suite starts from Apache Kafka's jars: the ones a release applies to."""
USAGE_EXIT: Final = 2
ERROR_EXIT: Final = 3
Say = Callable[[str], None]


def add_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--kafka-version",
        metavar="V",
        default=None,
        help="the Apache Kafka release of the kafka, kafka-cluster and kafka-sasl brokers (default: "
        f"${KAFKA_VERSION_ENV}, else {DEFAULT_KAFKA_VERSION}, the pinned one); known: {', '.join(known_versions())} "
        "(conformance/brokers/versions.py); another than the pinned one is resolved with Maven on first use and cached",
    )


def prepare(
    command: str, version: str | None, kinds: Sequence[str], starts: bool = True, say: Say | None = None
) -> int | None:
    """Make the release ``version`` (else ``$KCONFORM_KAFKA_VERSION``) ready for brokers of ``kinds`` and name it in
    ``$KCONFORM_KAFKA_VERSION``; ``None`` to go on, else the exit code (after printing why, naming the fix).
    ``starts``: the command starts a broker at all (``kconform run --level protocol`` does not: the release is
    checked, not resolved)."""
    chosen = version or os.environ.get(KAFKA_VERSION_ENV)
    kafka = [k for k in kinds if k in KAFKA_KINDS]
    if not chosen:
        return None
    if version and not kafka:
        print(f"kconform {command}: error: --kafka-version picks the release of the brokers the suite starts "
              f"({', '.join(KAFKA_KINDS)}), not of --broker {', '.join(kinds)}", file=sys.stderr)  # fmt: skip
        return USAGE_EXIT
    try:
        release = kafka_release(chosen).version
    except UnknownKafkaVersion as error:
        print(f"kconform {command}: error: {error}", file=sys.stderr)
        return USAGE_EXIT
    if not kafka or not starts:  # a broker it does not apply to ($KCONFORM_KAFKA_VERSION, make BROKER=tansu), or none
        return None
    os.environ[KAFKA_VERSION_ENV] = release
    if release == pinned():  # `kconform setup`'s: a run without its jars says so as it always does (--allow-fallback)
        return None
    try:
        resolve_at_release(release, say or (lambda line: print(f"kconform {command}: {line}", file=sys.stderr)))
    except (SetupError, JvmArtifactsMissing) as error:
        print(f"kconform {command}: could not check (ERROR): Apache Kafka {release} could not be resolved: {error}",
              file=sys.stderr)  # fmt: skip
        return ERROR_EXIT
    return None
