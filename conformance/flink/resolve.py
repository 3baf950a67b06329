"""The Flink harness for one connector release, resolved on demand into ``<jvm dir>/flink-harness/<connector>/``.

``make setup`` never fetches Flink: the first run that asks for a release builds ``jvm/flink-harness`` against its
versions (``kconform.conformance.flink.versions``) with Maven, through ``kconform setup``'s staging folder and
stamp (``kconform.conformance.jvm.setup.run_staged``); a later run finds the stamp's fingerprint (the harness's
pom and source and the release's versions) and starts no Maven.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Final

from ..jvm import jvm_dir, jvm_project
from ..jvm.setup import (
    STAMP,
    MavenRunner,
    Say,
    StagedBuild,
    fingerprint,
    maven_tools,
    read_project,
    run_maven,
    run_staged,
    stamped_fingerprint,
)
from .versions import ConnectorRelease

HARNESS: Final = "flink-harness"
"""The ``jvm/`` folder of the harness's pom and source, and the jars folder's folder of its builds."""
MAIN_CLASS: Final = "kconform.FlinkHarness"


def harness_fingerprint(project: dict[str, bytes], release: ConnectorRelease) -> str:
    """What a build of ``release`` was made from: the harness's pom and source and the versions passed to it."""
    versions = json.dumps(release.maven_properties(), sort_keys=True).encode()
    return fingerprint({**project, "<versions>": versions})


def harness_dir(release: ConnectorRelease) -> Path:
    """Where the harness of ``release`` lives: its jar and its classpath, one folder."""
    return jvm_dir() / HARNESS / release.connector


def is_current(dest: Path, digest: str) -> bool:
    """Whether ``dest`` holds a harness jar stamped with ``digest``."""
    stamp = dest / STAMP
    built = any(dest.glob(f"{HARNESS}-*.jar"))
    return built and stamp.is_file() and stamped_fingerprint(stamp.read_text()) == digest


def resolve(release: ConnectorRelease, say: Say, maven: MavenRunner = run_maven) -> Path:
    """The folder of ``release``'s harness, built with Maven first unless already current; says what it does."""
    project = read_project(jvm_project() / HARNESS, skip=())
    digest = harness_fingerprint(project, release)
    dest = harness_dir(release)
    if is_current(dest, digest):
        return dest
    say(f"kconform flink: resolving flink-connector-kafka {release.connector} (Flink {release.flink}) into {dest}")
    started = time.monotonic()
    stamp = json.dumps({"fingerprint": digest, "release": release.maven_properties()}) + "\n"
    build = StagedBuild(dest, project, "pom.xml", release.maven_properties(), ("",), stamp)
    fetched = run_staged(build, maven_tools(), "kconform flink", say, maven)
    say(f"kconform flink: done in {time.monotonic() - started:.0f} s: Maven downloaded {fetched} files")
    return dest
