"""The JVM pieces kconform runs (the Kafka broker, the kafka-clients oracle, Spark's Kafka connector):
where ``make setup`` put their jars.

``jvm/pom.xml`` pins every version; ``make setup`` asks Maven to copy each module's dependencies
into ``.jvm/<module>/``. Nothing here downloads anything: a missing folder is an error that names
the command that fills it.
"""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path
from typing import Final

JVM_DIR_ENV: Final = "KCONFORM_JVM_DIR"
DEFAULT_JVM_DIR: Final = Path(__file__).resolve().parents[2] / ".jvm"
KAFKA_BROKER: Final = "kafka-broker"
"""The module whose classpath runs Apache Kafka (``jvm/kafka-broker/pom.xml``)."""
SPARK_KAFKA: Final = "spark-kafka"
"""Spark's built-in Kafka connector and the jars pyspark lacks for it (``jvm/spark-kafka/pom.xml``)."""

INSTALL_MAVEN: Final = "install Maven 3.8+ (apt-get install maven), then run `make setup`"


class JvmArtifactsMissing(Exception):
    """The jars of a JVM module are not on this machine; the message names how to get them."""


def jvm_dir() -> Path:
    """Where ``make setup`` resolved the modules (``$KCONFORM_JVM_DIR`` overrides)."""
    return Path(os.environ.get(JVM_DIR_ENV) or DEFAULT_JVM_DIR)


def classpath(module: str) -> str:
    """The Java classpath of ``module``: a wildcard over its resolved jars."""
    jars(module)
    return str(jvm_dir() / module / "*")


def jars(module: str) -> list[Path]:
    """Every resolved jar of ``module``, sorted (Spark's ``spark.jars`` takes files, not a wildcard)."""
    folder = jvm_dir() / module
    found = sorted(folder.glob("*.jar"))
    if not found:
        how = "run `make setup`" if shutil.which("mvn") else INSTALL_MAVEN
        raise JvmArtifactsMissing(f"the JVM module {module!r} is not resolved (no jars in {folder}): {how}")
    return found


def artifact_version(module: str, artifact: str) -> str:
    """The version of ``artifact`` (e.g. ``kafka_2.13``) resolved into ``module``, read off its jar name."""
    pattern = re.compile(rf"{re.escape(artifact)}-(\d[\w.\-]*)\.jar")
    for jar in sorted((jvm_dir() / module).glob(f"{artifact}-*.jar")):
        if match := pattern.fullmatch(jar.name):
            return match.group(1)
    raise JvmArtifactsMissing(f"{artifact} is not among the jars of {jvm_dir() / module}: run `make setup`")


def java_binary() -> Path:
    """``$JAVA_HOME/bin/java`` if set, else ``java`` on PATH."""
    home = os.environ.get("JAVA_HOME")
    found = str(Path(home) / "bin" / "java") if home else shutil.which("java")
    if not found or not Path(found).is_file():
        raise JvmArtifactsMissing("no Java runtime: install Java 17 (apt-get install openjdk-17-jre-headless)")
    return Path(found)
