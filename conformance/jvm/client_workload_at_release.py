"""The client workload's JVM harness (``jvm/client-workload``) built at a chosen kafka-clients release.

As the Kafka oracle at a release (``oracle_at_release``): Maven runs on the ``jvm/client-workload`` module alone
with ``-Dkafka.version=<release>`` into ``<jars folder>/releases/client-workload-<release>/client-workload/``, and the
folder is stamped with the fingerprint of the module's sources, so a second call with the same sources starts no
Maven. ``kconform setup`` does not build it (``setup.ON_DEMAND``): only a run of the kafka-clients workload needs it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Final

from . import jvm_dir, jvm_project
from .oracle_at_release import release_folder
from .setup import (
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

CLIENT_WORKLOAD: Final = "client-workload"
"""The module (``jvm/client-workload/pom.xml``) and the folder of its build in a release's folder."""


def harness_sources(project: Mapping[str, bytes]) -> dict[str, bytes]:
    """What the build depends on: the parent pom and the harness module's pom and Java sources."""
    return {p: t for p, t in project.items() if p == "pom.xml" or p.startswith(f"{CLIENT_WORKLOAD}/")}


def release_build(release: str) -> str:
    """The jars folder's folder of the build at ``release`` (beside the oracle's, which a build of the oracle
    replaces whole), or ``ValueError`` for what is not a release version."""
    return release_folder(release).replace("/kafka-clients-", f"/{CLIENT_WORKLOAD}-", 1)


def build_at_release(release: str, say: Say, maven: MavenRunner = run_maven) -> Path:
    """The harness's folder at ``release``, built with Maven unless a build from these sources is there."""
    dest = jvm_dir() / release_build(release)
    sources = harness_sources(read_project(jvm_project(), skip=()))
    digest = fingerprint(sources)
    folder = read_folder(dest)
    if stamped_fingerprint(folder.stamp) == digest and CLIENT_WORKLOAD in folder.resolved:
        return dest / CLIENT_WORKLOAD
    say(f"building the client workload's JVM harness at kafka-clients {release} with Maven into {dest}")
    stamp = json.dumps({"kafka-clients": release, "fingerprint": digest}) + "\n"
    build = StagedBuild(
        dest, sources, f"{CLIENT_WORKLOAD}/pom.xml", {"kafka.version": release}, (CLIENT_WORKLOAD,), stamp
    )
    run_staged(build, maven_tools(), f"the client workload's harness at kafka-clients {release}", say, maven)
    if not (dest / CLIENT_WORKLOAD / f"kafka-clients-{release}.jar").is_file():
        raise SetupError(f"Maven built the client harness but not at kafka-clients {release}: report this as a bug")
    return dest / CLIENT_WORKLOAD
