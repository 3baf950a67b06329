"""Spark's Kafka connector at a chosen Spark release, so that ``kconform run --spark VERSION`` judges that release's.

``kconform setup`` resolves the connector at the release ``jvm/pom.xml`` pins (``jvm/spark-kafka``); another
release is resolved on demand from ``jvm/spark-release/pom.xml`` into ``<jars folder>/releases/spark-<release>/
spark-kafka/``: spark-sql-kafka-0-10, its token provider, and the kafka-clients and commons-pool2 versions
that release's own poms name. The stamp records the pom's fingerprint and the versions passed: a second call
starts no Maven. ``$KCONFORM_SPARK_VERSION`` tells a run (its session and adapter) which folder to read.
"""

from __future__ import annotations

import json
import re
import time
import xml.etree.ElementTree as ET
from collections.abc import Mapping
from pathlib import Path
from typing import Final

from . import SPARK_KAFKA, jvm_dir, jvm_project
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

SPARK_VERSION_ENV: Final = "KCONFORM_SPARK_VERSION"
"""The Spark release a run judges (its pyspark and its Kafka connector); unset: the one ``jvm/pom.xml`` pins."""
TOKEN_PROVIDER_ENV: Final = "KCONFORM_SPARK_TOKEN_PROVIDER_VERSION"
"""The spark-token-provider-kafka-0-10 release to take when the Maven repository lacks the connector's own."""
SPARK_RELEASE: Final = "spark-release"
"""The ``jvm/`` folder of the pom that resolves the connector at a release."""
RELEASE: Final = re.compile(r"[34]\.\d+\.\d+")
"""A Spark release whose pyspark and Kafka connector are published (3.x on Scala 2.12, 4.x on 2.13)."""


def check_release(release: str) -> str:
    """``release``, or ``ValueError`` for what is not a Spark 3.x or 4.x release version."""
    if not RELEASE.fullmatch(release):
        raise ValueError(f"{release!r} is not a Spark release version (such as 4.0.2 or 3.5.7)")
    return release


def scala_binary(release: str) -> str:
    """The Scala version PyPI's pyspark of ``release`` is built for: its connector's artifact suffix."""
    return "2.12" if check_release(release).startswith("3.") else "2.13"


def pinned_release(parent_pom: bytes) -> str:
    """The Spark release ``jvm/pom.xml`` pins (``kconform setup``'s, and pyproject's pyspark)."""
    found = ET.fromstring(parent_pom).findtext(f"{POM_NS}properties/{POM_NS}spark.version")
    if not found:
        raise ValueError("jvm/pom.xml pins no spark.version")
    return found.strip()


def pinned() -> str:
    """The Spark release this kconform pins."""
    return pinned_release((jvm_project() / "pom.xml").read_bytes())


def connector_module(env: Mapping[str, str]) -> str:
    """The jars folder's folder of the connector a run asks: at ``$KCONFORM_SPARK_VERSION``, else the pinned one."""
    release = env.get(SPARK_VERSION_ENV)
    if not release or release == pinned():
        return SPARK_KAFKA
    return f"{RELEASE_BUILDS}/spark-{check_release(release)}/{SPARK_KAFKA}"


def token_providers(release: str) -> list[str]:
    """The spark-token-provider-kafka-0-10 releases to try for ``release``: its own, then the earlier patch
    releases of its line. A Maven repository may serve the connector of a patch release without its token
    provider (the one here lacks 4.0.1, 4.0.2, 4.1.0, 4.1.2 and 4.1.3); the provider only handles delegation
    tokens, which no run here uses, and keeps its API within a line."""
    line, patch = check_release(release).rsplit(".", 1)
    return [f"{line}.{p}" for p in range(int(patch), -1, -1)]


def maven_properties(release: str, token_provider: str) -> dict[str, str]:
    """What ``jvm/spark-release/pom.xml`` is given for ``release``."""
    return {
        "spark.version": release,
        "scala.binary.version": scala_binary(release),
        "spark.token-provider.version": token_provider,
    }


def resolve_at_release(release: str, env: Mapping[str, str], say: Say, maven: MavenRunner = run_maven) -> Path:
    """The connector's folder at ``release``, resolved with Maven unless these poms and versions already were.

    The token provider is ``$KCONFORM_SPARK_TOKEN_PROVIDER_VERSION`` when set, else the first of
    ``token_providers(release)`` that Maven resolves; the progress line says when it is not the release's own.
    """
    if connector_module({SPARK_VERSION_ENV: release}) == SPARK_KAFKA:
        return jvm_dir() / SPARK_KAFKA
    dest = jvm_dir() / connector_module({SPARK_VERSION_ENV: release})
    project = read_project(jvm_project() / SPARK_RELEASE, skip=())
    named = env.get(TOKEN_PROVIDER_ENV)
    candidates = [named] if named else token_providers(release)

    def digest_of(properties: Mapping[str, str]) -> str:
        return fingerprint({**project, "<versions>": json.dumps(properties, sort_keys=True).encode()})

    stamp = stamped_fingerprint(read_folder(dest).stamp)
    if any(stamp == digest_of(maven_properties(release, c)) for c in candidates) and any(dest.glob("*.jar")):
        return dest
    failures: list[str] = []
    for token_provider in candidates:
        properties = maven_properties(release, token_provider)
        note = f" (its token provider at {token_provider}: Maven served none at {release})" if failures else ""
        note = f" (its token provider at {token_provider}, from ${TOKEN_PROVIDER_ENV})" if named else note
        say(f"resolving Spark {release}'s Kafka connector with Maven into {dest}{note}")
        started = time.monotonic()
        build_stamp = json.dumps({"fingerprint": digest_of(properties), "release": properties}) + "\n"
        build = StagedBuild(dest, project, "pom.xml", properties, ("",), build_stamp)
        try:
            fetched = run_staged(build, maven_tools(), f"kconform run --spark {release}", say, maven)
        except SetupError as error:
            lines = str(error).splitlines()
            failures.append(f"token provider {token_provider}: {next((x for x in lines if 'ERROR' in x), lines[0])}")
            continue
        took = time.monotonic() - started
        say(f"Spark {release}'s Kafka connector: done in {took:.0f} s, {fetched} files downloaded")
        return dest
    raise SetupError(
        f"Spark {release}'s Kafka connector could not be resolved ({'; '.join(failures)}); if Maven lacks its "
        f"token provider, name one that it serves in ${TOKEN_PROVIDER_ENV}"
    )
