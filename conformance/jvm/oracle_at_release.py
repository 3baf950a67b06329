"""The Kafka oracle built at a chosen kafka-clients release, so that a release is put under the suite by its version.

``kconform setup`` builds the oracle at the release ``jvm/pom.xml`` pins; the bug bank needs it at the
buggy and the fixed release of a bug. ``build_at_release`` runs Maven on the same ``jvm/kafka-oracle``
module with ``-Dkafka.version=<release>`` into ``<jars folder>/releases/kafka-clients-<release>/kafka-oracle/``
and stamps it with the fingerprint of the module's sources: a second call with the same sources starts
no Maven. ``$KCONFORM_KAFKA_CLIENTS_VERSION`` tells a run (its adapter) which build to ask.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Final

from . import jvm_dir, jvm_project
from .kafka_oracle import KAFKA_ORACLE
from .setup import (
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

KAFKA_CLIENTS_VERSION_ENV: Final = "KCONFORM_KAFKA_CLIENTS_VERSION"
"""The kafka-clients release whose oracle build a run asks; unset: the one ``jvm/pom.xml`` pins."""
RELEASE: Final = re.compile(r"\d+(?:\.\d+)+(?:[-.][A-Za-z0-9]+)*")
"""A Maven release version; anything else could name a path outside the jars folder."""


def release_folder(release: str) -> str:
    """The jars folder's folder for ``release``, or ``ValueError`` for what is not a release version."""
    if not RELEASE.fullmatch(release):
        raise ValueError(f"{release!r} is not a kafka-clients release version (such as 3.4.1)")
    return f"{RELEASE_BUILDS}/kafka-clients-{release}"


def oracle_module(env: Mapping[str, str]) -> str:
    """The oracle build a run asks: the one at ``$KCONFORM_KAFKA_CLIENTS_VERSION``, else the pinned one."""
    release = env.get(KAFKA_CLIENTS_VERSION_ENV)
    return f"{release_folder(release)}/{KAFKA_ORACLE}" if release else KAFKA_ORACLE


def oracle_sources(project: Mapping[str, bytes]) -> dict[str, bytes]:
    """What a build at a release depends on: the parent pom and the oracle module's pom and Java sources."""
    return {path: text for path, text in project.items() if path == "pom.xml" or path.startswith(f"{KAFKA_ORACLE}/")}


def build_at_release(release: str, say: Say, maven: MavenRunner = run_maven) -> Path:
    """The oracle's folder at ``release``, built with Maven unless a build from these sources is there."""
    dest = jvm_dir() / release_folder(release)
    sources = oracle_sources(read_project(jvm_project()))
    digest = fingerprint(sources)
    folder = read_folder(dest)
    if stamped_fingerprint(folder.stamp) == digest and KAFKA_ORACLE in folder.resolved:
        return dest / KAFKA_ORACLE
    say(f"building the Kafka oracle at kafka-clients {release} with Maven into {dest}")
    stamp = json.dumps({"kafka-clients": release, "fingerprint": digest}) + "\n"
    build = StagedBuild(dest, sources, f"{KAFKA_ORACLE}/pom.xml", {"kafka.version": release}, (KAFKA_ORACLE,), stamp)
    run_staged(build, maven_tools(), f"kconform bugbank (the oracle at kafka-clients {release})", say, maven)
    if not (dest / KAFKA_ORACLE / f"kafka-clients-{release}.jar").is_file():
        raise SetupError(f"Maven built the Kafka oracle but not at kafka-clients {release}: report this as a bug")
    return dest / KAFKA_ORACLE
