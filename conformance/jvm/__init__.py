"""The JVM pieces kconform runs (the Kafka broker, the kafka-clients oracle, Spark's Kafka connector):
where ``kconform setup`` put their jars.

``jvm/pom.xml`` pins every version; ``kconform setup`` (``kconform.conformance.jvm.setup``, which
``make setup`` runs) asks Maven to copy each module's dependencies into ``<jvm dir>/<module>/``.
Nothing here downloads anything: a missing folder is an error that names the command that fills it.
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Mapping
from importlib.resources import files
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Final

from ..paths import PACKAGE_ROOT, checkout_root
from ..release import kconform_version

JVM_DIR_ENV: Final = "KCONFORM_JVM_DIR"
"""An explicit jars folder: where the runtime looks and ``kconform setup`` writes, before any default."""
CHECKOUT: Final = PACKAGE_ROOT
"""Where this kconform's ``jvm/`` is (``paths.PACKAGE_ROOT``): a checkout's root, or a wheel's ``kconform/``,
which holds ``jvm/`` too (as ``kconform.jvm``) but is no checkout."""
KAFKA_BROKER: Final = "kafka-broker"
"""The module whose classpath runs Apache Kafka (``jvm/kafka-broker/pom.xml``)."""
SPARK_KAFKA: Final = "spark-kafka"
"""Spark's built-in Kafka connector and the jars pyspark lacks for it (``jvm/spark-kafka/pom.xml``)."""

INSTALL_MAVEN: Final = "install Maven 3.8+ (apt-get install maven)"


def in_checkout() -> bool:
    """Whether this kconform runs from a source checkout (its ``jvm/`` beside the code), not a wheel."""
    return checkout_root(CHECKOUT) is not None


def user_cache(env: Mapping[str, str], home: Path, version: str) -> Path:
    """The per-user jars folder of kconform ``version``: ``$XDG_CACHE_HOME/kconform/<version>/jvm``.

    Per version, because each release pins its own jars; under the XDG cache, because it can be
    fetched again (``~/.cache`` when ``XDG_CACHE_HOME`` is unset or empty, as the XDG spec says).
    """
    cache = Path(env.get("XDG_CACHE_HOME") or home / ".cache")
    return cache / "kconform" / version / "jvm"


def choose_jvm_dir(env: Mapping[str, str], checkout: Path | None, cache: Path) -> Path:
    """Where the jars are: ``$KCONFORM_JVM_DIR``, else a checkout's ``.jvm/``, else the per-user ``cache``.

    One rule for the runtime and for ``kconform setup``'s default target, so that what setup fills is
    what a run reads.
    """
    if explicit := env.get(JVM_DIR_ENV):
        return Path(explicit)
    if checkout is not None:
        return checkout / ".jvm"
    return cache


def jvm_dir() -> Path:
    """Where the runtime finds the modules (``choose_jvm_dir`` on this process and machine)."""
    checkout = CHECKOUT if in_checkout() else None
    return choose_jvm_dir(os.environ, checkout, user_cache(os.environ, Path.home(), kconform_version()))


def jvm_project() -> Traversable:
    """The Maven project (``jvm/``: poms and the oracles' Java sources): a checkout's own, else the wheel's."""
    return CHECKOUT / "jvm" if in_checkout() else files("kconform.jvm")


def setup_hint() -> str:
    """The command that fills ``jvm_dir()``, with Maven's installation first when ``mvn`` is absent.

    ``make setup`` fills a checkout's ``.jvm/``, so it is named only when that is the folder read.
    """
    if os.environ.get(JVM_DIR_ENV):
        command = f"run `kconform setup` (it resolves into ${JVM_DIR_ENV})"
    elif in_checkout():
        command = "run `make setup` (or `kconform setup`)"
    else:
        command = "run `kconform setup`"
    return command if shutil.which("mvn") else f"{INSTALL_MAVEN}, then {command}"


class JvmArtifactsMissing(Exception):
    """The jars of a JVM module are not on this machine; the message names how to get them."""


def classpath(module: str) -> str:
    """The Java classpath of ``module``: a wildcard over its resolved jars."""
    jars(module)
    return str(jvm_dir() / module / "*")


def jars(module: str) -> list[Path]:
    """Every resolved jar of ``module``, sorted (Spark's ``spark.jars`` takes files, not a wildcard)."""
    folder = jvm_dir() / module
    found = sorted(folder.glob("*.jar"))
    if not found:
        raise JvmArtifactsMissing(f"the JVM module {module!r} is not resolved (no jars in {folder}): {setup_hint()}")
    return found


def artifact_version(module: str, artifact: str) -> str:
    """The version of ``artifact`` (e.g. ``kafka_2.13``) resolved into ``module``, read off its jar name."""
    pattern = re.compile(rf"{re.escape(artifact)}-(\d[\w.\-]*)\.jar")
    for jar in sorted((jvm_dir() / module).glob(f"{artifact}-*.jar")):
        if match := pattern.fullmatch(jar.name):
            return match.group(1)
    raise JvmArtifactsMissing(f"{artifact} is not among the jars of {jvm_dir() / module}: {setup_hint()}")


def java_binary() -> Path:
    """``$JAVA_HOME/bin/java`` if set, else ``java`` on PATH."""
    home = os.environ.get("JAVA_HOME")
    found = str(Path(home) / "bin" / "java") if home else shutil.which("java")
    if not found or not Path(found).is_file():
        raise JvmArtifactsMissing("no Java runtime: install Java 17 (apt-get install openjdk-17-jre-headless)")
    return Path(found)
