"""The Apache Kafka broker at a chosen release, so that ``--kafka-version V`` starts that release's broker.

``kconform setup`` resolves the broker ``jvm/pom.xml`` pins (``kafka.broker.version``) into ``<jars folder>/
kafka-broker/``; another release is resolved on first use from the same module (``jvm/kafka-broker/pom.xml``:
``kafka_2.13`` and the log4j2 binding, everything a KRaft node needs) with ``-Dkafka.broker.version=V`` into
``<jars folder>/releases/kafka-<V>/kafka-broker/``, beside the oracle builds of the bug bank. The stamp records
the fingerprint of the poms and the version: a second call starts no Maven.
"""

from __future__ import annotations

import json
import re
import time
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Final

from . import KAFKA_BROKER, JvmArtifactsMissing, artifact_version, jars, jvm_dir, jvm_project, setup_hint
from .setup import (
    POM_NS,
    RELEASE_BUILDS,
    MavenRunner,
    Say,
    SetupError,
    StagedBuild,
    fingerprint,
    maven_tools,
    read_folder,
    read_project,
    run_maven,
    run_staged,
    stamped_fingerprint,
)

VERSION_PROPERTY: Final = "kafka.broker.version"
RELEASE: Final = re.compile(r"\d+\.\d+\.\d+")
"""An Apache Kafka release version; anything else could name a path outside the jars folder."""


def pinned_release(parent_pom: bytes) -> str:
    """The broker release ``jvm/pom.xml`` pins (``kconform setup``'s)."""
    found = ET.fromstring(parent_pom).findtext(f"{POM_NS}properties/{POM_NS}{VERSION_PROPERTY}")
    if not found:
        raise ValueError(f"jvm/pom.xml pins no {VERSION_PROPERTY}")
    return found.strip()


def pinned() -> str:
    """The broker release this kconform pins."""
    return pinned_release((jvm_project() / "pom.xml").read_bytes())


def broker_module(release: str, pinned_version: str) -> str:
    """The jars folder's folder of the broker at ``release``: ``kafka-broker`` for the pinned one."""
    if not RELEASE.fullmatch(release):
        raise ValueError(f"{release!r} is not an Apache Kafka release version (such as 4.4.0)")
    return KAFKA_BROKER if release == pinned_version else f"{RELEASE_BUILDS}/kafka-{release}/{KAFKA_BROKER}"


def broker_sources(project: dict[str, bytes]) -> dict[str, bytes]:
    """What a build at a release depends on: the parent pom and the broker module's pom."""
    return {path: text for path, text in project.items() if path in ("pom.xml", f"{KAFKA_BROKER}/pom.xml")}


def resolved(release: str) -> Path | None:
    """The broker's jars folder at ``release`` when it is there (resolved from these poms), else ``None``."""
    module = broker_module(release, pinned())
    if module == KAFKA_BROKER:
        folder = jvm_dir() / KAFKA_BROKER
        return folder if (folder / f"kafka_2.13-{release}.jar").is_file() else None
    dest = jvm_dir() / module.removesuffix(f"/{KAFKA_BROKER}")
    state = read_folder(dest)
    current = stamped_fingerprint(state.stamp) == _digest(release) and KAFKA_BROKER in state.resolved
    return dest / KAFKA_BROKER if current else None


def _digest(release: str) -> str:
    sources = broker_sources(read_project(jvm_project()))
    return fingerprint({**sources, "<version>": release.encode()})


def resolve_at_release(release: str, say: Say, maven: MavenRunner = run_maven) -> Path:
    """The broker's jars folder at ``release``, resolved with Maven unless it is there; ``SetupError`` naming the fix.

    The pinned release is ``kconform setup``'s to resolve: missing, it is ``JvmArtifactsMissing`` naming that
    command."""
    found = resolved(release)
    if found is not None:
        return found
    module = broker_module(release, pinned())
    if module == KAFKA_BROKER:  # JvmArtifactsMissing, naming `kconform setup`, for no jars or another release's
        folder = jars(KAFKA_BROKER)[0].parent
        raise JvmArtifactsMissing(
            f"{folder} holds Apache Kafka {artifact_version(KAFKA_BROKER, 'kafka_2.13')}, not the pinned {release} "
            f"(resolved from older poms): {setup_hint()}"
        )
    dest = jvm_dir() / module.removesuffix(f"/{KAFKA_BROKER}")
    say(f"resolving Apache Kafka {release} (org.apache.kafka:kafka_2.13:{release}) with Maven into {dest}")
    started = time.monotonic()
    stamp = json.dumps({"kafka_2.13": release, "fingerprint": _digest(release)}) + "\n"
    sources = broker_sources(read_project(jvm_project()))
    build = StagedBuild(dest, sources, f"{KAFKA_BROKER}/pom.xml", {VERSION_PROPERTY: release}, (KAFKA_BROKER,), stamp)
    fetched = run_staged(build, maven_tools(), f"kconform probe-broker --kafka-version {release}", say, maven)
    if not (dest / KAFKA_BROKER / f"kafka_2.13-{release}.jar").is_file():
        raise SetupError(f"Maven resolved the broker module but not kafka_2.13 {release}: report this as a bug")
    say(f"Apache Kafka {release}: done in {time.monotonic() - started:.0f} s, {fetched} files downloaded")
    return dest / KAFKA_BROKER
