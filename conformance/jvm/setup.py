"""``kconform setup``: resolve this release's JVM pieces with Maven into the folder the runtime reads.

The pieces are the modules of ``jvm/pom.xml`` (Apache Kafka, Spark's Kafka connector, the Kafka and
Flink oracles, whose Java sources travel with the poms): a checkout reads its own ``jvm/``, a wheel
the copy it carries as ``kconform.jvm``, so a wheel resolves exactly the versions its release pins.
Planning is pure (which modules, whether the folder is already up to date, Maven's command line,
what a Maven log line means); only ``setup`` and ``run_maven`` touch the disk and start Maven.

Maven writes into a staging folder beside the target, which replaces the target only once every
module has its jars, so a failed or interrupted run leaves the previous pieces in place. The
``.resolved`` stamp records a fingerprint of the poms and sources: a second run with the same
release finds it and starts nothing.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import xml.etree.ElementTree as ET
from collections import deque
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Final

from ..release import kconform_version
from . import INSTALL_MAVEN, JVM_DIR_ENV, JvmArtifactsMissing, java_binary, jvm_dir, jvm_project

STAMP: Final = ".resolved"
"""The file in a jars folder that says which poms it was resolved from (``make setup``'s target too)."""
MAVEN_TIMEOUT_S: Final = 1800
"""A first resolution downloads about 100 MB; half an hour bounds it on a slow link."""
LOG_TAIL: Final = 40
"""Maven's last lines shown when it fails (its error and the module it was building)."""
RELEASE_BUILDS: Final = "releases"
"""The jars folder's folder of oracle builds at other kafka-clients releases (``oracle_at_release``, the bug bank's)."""
CARRIED: Final = ("flink-harness", "spark-release", RELEASE_BUILDS)
"""Folders of ``jvm/`` and of the jars folder resolved on demand, per release (``kconform.conformance.flink.resolve``,
``oracle_at_release``, ``spark_at_release``): not ``kconform setup``'s to resolve, and kept when it replaces the
jars folder."""
ON_DEMAND: Final = (*CARRIED, "client-workload")
"""Folders of ``jvm/`` that ``kconform setup`` neither builds nor fingerprints: the ``CARRIED`` ones and the client
workload's harness, built at a release when a run asks for it (``client_workload_at_release``)."""
POM_NS: Final = "{http://maven.apache.org/POM/4.0.0}"
BUILDING: Final = re.compile(r"\[INFO\] Building (\S+) \S+ +\[(\d+)/(\d+)\]")
DOWNLOADED: Final = re.compile(r"\[INFO\] Downloaded from [^:]+: \S*/([^/\s]+) \(([^)]*)\)")

Say = Callable[[str], None]
MavenRunner = Callable[[Sequence[str], Say], int]
"""Runs Maven's command line, passing each line of its log on; returns its exit code."""


class SetupError(Exception):
    """``kconform setup`` cannot resolve the pieces; the message names the fix."""


@dataclass(frozen=True, slots=True)
class Folder:
    """What a jars folder holds now: its entries, its stamp's text, the modules that have jars."""

    entries: frozenset[str]
    stamp: str | None
    resolved: frozenset[str]


@dataclass(frozen=True, slots=True)
class Plan:
    """What ``setup`` does for ``dest``: nothing when ``up_to_date``, else run Maven for ``modules``."""

    dest: Path
    modules: tuple[str, ...]
    fingerprint: str
    up_to_date: bool


def read_project(root: Traversable, prefix: str = "", skip: Collection[str] = ON_DEMAND) -> dict[str, bytes]:
    """The Maven project's poms and Java sources under ``root``, by path relative to it, without the folders
    in ``skip`` (by default those resolved on demand, which ``kconform setup`` neither builds nor fingerprints)."""
    found: dict[str, bytes] = {}
    for entry in root.iterdir():
        path = f"{prefix}{entry.name}"
        if entry.is_dir() and entry.name in skip:
            continue
        if entry.is_dir():
            found |= read_project(entry, f"{path}/", ())
        elif entry.name == "pom.xml" or entry.name.endswith(".java"):
            found[path] = entry.read_bytes()
    return found


def modules_of(parent_pom: bytes) -> tuple[str, ...]:
    """The ``<modules>`` of the parent pom, in its order: one jars folder each."""
    modules = ET.fromstring(parent_pom).find(f"{POM_NS}modules")
    return tuple(m.text.strip() for m in modules or () if m.text)


def fingerprint(project: Mapping[str, bytes]) -> str:
    """A digest of every pom and source: a folder resolved from other poms is not up to date."""
    digest = hashlib.sha256()
    for path in sorted(project):
        digest.update(path.encode() + b"\0" + project[path] + b"\0")
    return digest.hexdigest()


def stamp_text(plan: Plan, version: str) -> str:
    """What ``setup`` writes into ``.resolved`` once every module has its jars."""
    return json.dumps({"kconform": version, "fingerprint": plan.fingerprint, "modules": list(plan.modules)}) + "\n"


def stamped_fingerprint(stamp: str | None) -> str | None:
    """The fingerprint a stamp records; ``None`` for none or an older ``make setup``'s empty file."""
    try:
        recorded = json.loads(stamp or "")
    except json.JSONDecodeError:
        return None
    return recorded.get("fingerprint") if isinstance(recorded, dict) else None


def plan_setup(project: Mapping[str, bytes], dest: Path, folder: Folder) -> Plan:
    """Resolve unless ``dest`` was stamped from these very poms and every module still has its jars."""
    modules = modules_of(project["pom.xml"])
    digest = fingerprint(project)
    current = stamped_fingerprint(folder.stamp) == digest and set(modules) <= folder.resolved
    return Plan(dest, modules, digest, current)


def foreign_entries(folder: Folder, modules: Sequence[str]) -> list[str]:
    """Entries of the target that ``setup`` did not put there: it replaces the folder, so it refuses."""
    return sorted(folder.entries - {*modules, *CARRIED, STAMP})


def maven_command(
    mvn: str,
    project: Path,
    jars_out: Path,
    build_out: Path,
    pom: str = "pom.xml",
    properties: Mapping[str, str] | None = None,
) -> list[str]:
    """Maven's command line: build the helpers of ``pom`` and copy their runtime jars under ``jars_out``."""
    return [
        mvn,
        "-B",
        "-Dstyle.color=never",
        "-f",
        str(project / pom),
        f"-Dkconform.jvm.dir={jars_out}",
        f"-Dkconform.build.dir={build_out}",
        *(f"-D{key}={value}" for key, value in sorted((properties or {}).items())),
        "package",
        "dependency:copy-dependencies",
    ]


def progress(line: str) -> str | None:
    """The progress a Maven log line reports (a module started, a jar fetched); ``None`` for the rest."""
    if building := BUILDING.match(line):
        name, index, total = building.groups()
        return f"[{index}/{total}] {name}"
    if (downloaded := DOWNLOADED.match(line)) and downloaded.group(1).endswith(".jar"):
        return f"  fetched {downloaded.group(1)} ({downloaded.group(2)})"
    return None


def summary(dest: Path, jar_sizes: Mapping[str, Sequence[int]]) -> list[str]:
    """One line per module: its jars, their size and its folder."""
    width = max(map(len, jar_sizes), default=0)
    return [
        f"  {module:<{width}}  {len(sizes):>3} jars  {sum(sizes) / 1e6:6.1f} MB  {dest / module}"
        for module, sizes in jar_sizes.items()
    ]


def read_folder(dest: Path) -> Folder:
    """What ``dest`` holds now (empty when absent)."""
    if not dest.is_dir():
        return Folder(frozenset(), None, frozenset())
    entries = frozenset(entry.name for entry in dest.iterdir())
    stamp = dest / STAMP
    return Folder(
        entries,
        stamp.read_text() if stamp.is_file() else None,
        frozenset(name for name in entries if any((dest / name).glob("*.jar"))),
    )


def jar_sizes(dest: Path, modules: Sequence[str]) -> dict[str, list[int]]:
    """The size of each jar of each module in ``dest``."""
    return {module: [jar.stat().st_size for jar in sorted((dest / module).glob("*.jar"))] for module in modules}


def maven_tools() -> str:
    """The ``mvn`` to run, once Maven, Java and a compiler for the oracles are all here."""
    mvn = shutil.which("mvn")
    if mvn is None:
        raise SetupError(f"mvn is not on PATH: {INSTALL_MAVEN}, then run `kconform setup` again")
    try:
        java = java_binary()
    except JvmArtifactsMissing as missing:
        raise SetupError(str(missing)) from missing
    if not (java.parent / "javac").is_file() and shutil.which("javac") is None:
        raise SetupError(
            "no javac: Maven compiles the oracle helpers, which needs a JDK 17, not only a JRE "
            "(apt-get install openjdk-17-jdk-headless)"
        )
    return mvn


def run_streaming(command: Sequence[str], on_line: Say, timeout_s: float) -> int:
    """Run ``command``, passing each output line on; killed after ``timeout_s`` (exit code then negative)."""
    with subprocess.Popen(
        command, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    ) as child:
        watchdog = threading.Timer(timeout_s, child.kill)
        watchdog.start()
        try:
            assert child.stdout is not None
            for line in child.stdout:
                on_line(line.rstrip("\n"))
            return child.wait(timeout=timeout_s)
        finally:
            watchdog.cancel()


def run_maven(command: Sequence[str], on_line: Say) -> int:
    """Run Maven, passing each log line on; killed after ``MAVEN_TIMEOUT_S`` (exit code then negative)."""
    return run_streaming(command, on_line, MAVEN_TIMEOUT_S)


def setup(dest: Path, say: Say, maven: MavenRunner = run_maven) -> None:
    """Resolve the JVM pieces into ``dest`` unless it is up to date; say what was fetched and where."""
    project = read_project(jvm_project())
    plan = plan_setup(project, dest, read_folder(dest))
    if plan.up_to_date:
        say(f"kconform setup: {dest} is up to date (resolved from these poms); nothing to fetch")
    else:
        resolve(plan, project, say, maven)
    for line in summary(dest, jar_sizes(dest, plan.modules)):
        say(line)
    if dest.resolve() != jvm_dir().resolve():
        say(f"kconform setup: kconform finds these only with {JVM_DIR_ENV}={dest} in its environment")


def resolve(plan: Plan, project: Mapping[str, bytes], say: Say, maven: MavenRunner) -> None:
    """Run Maven into a staging folder beside ``plan.dest``, then swap it in once every module has jars."""
    foreign = foreign_entries(read_folder(plan.dest), plan.modules)
    if foreign:
        raise SetupError(
            f"{plan.dest} holds files kconform setup did not put there ({', '.join(foreign[:5])}): "
            "it replaces that folder, so choose an empty or new one with --into DIR"
        )
    mvn = maven_tools()
    say(
        f"kconform setup: resolving {len(plan.modules)} JVM modules ({', '.join(plan.modules)}) of kconform "
        f"{kconform_version()} with Maven ({mvn}) into {plan.dest}"
    )
    started = time.monotonic()
    build = StagedBuild(plan.dest, project, "pom.xml", {}, plan.modules, stamp_text(plan, kconform_version()))
    fetched = run_staged(build, mvn, "kconform setup", say, maven)
    say(
        f"kconform setup: done in {time.monotonic() - started:.0f} s: Maven downloaded {fetched} files "
        "(the rest came from its local repository)"
    )


@dataclass(frozen=True, slots=True)
class StagedBuild:
    """One Maven run whose jars replace ``dest`` only once complete: what ``run_staged`` needs."""

    dest: Path
    project: Mapping[str, bytes]
    """The poms and sources Maven reads (a copy is written: a wheel's site-packages may be read-only)."""
    pom: str
    """The pom to run, relative to the project."""
    properties: Mapping[str, str]
    """Extra ``-D`` properties (e.g. the versions a pom leaves open)."""
    jar_folders: Sequence[str]
    """Folders of ``dest``, relative to it (``""``: itself), that must hold jars for the run to count."""
    stamp: str
    """The ``STAMP`` file's text: what ``dest`` was resolved from."""


def run_staged(build: StagedBuild, mvn: str, command: str, say: Say, maven: MavenRunner) -> int:
    """Run Maven into a staging folder beside ``build.dest``, swap it in once every jar folder has jars, and
    stamp it; a failure leaves ``dest`` as it was and names ``command`` to run again. Returns the files fetched.
    ``CARRIED`` entries of an earlier ``dest`` (resolved on demand, not by this run) move into the new one."""
    build.dest.parent.mkdir(parents=True, exist_ok=True)
    tail: deque[str] = deque(maxlen=LOG_TAIL)
    fetched = 0

    def on_line(line: str) -> None:
        nonlocal fetched
        tail.append(line)
        fetched += bool(DOWNLOADED.match(line))
        if (step := progress(line)) is not None:
            say(f"{command}: {step}")

    with tempfile.TemporaryDirectory(prefix="kconform-setup-") as work:
        copy = Path(work) / "jvm"
        for path, content in build.project.items():
            (copy / path).parent.mkdir(parents=True, exist_ok=True)
            (copy / path).write_bytes(content)
        staging = Path(tempfile.mkdtemp(prefix=f".{build.dest.name}-staging-", dir=build.dest.parent))
        try:
            line = maven_command(mvn, copy, staging, Path(work) / "build", build.pom, build.properties)
            code = maven(line, on_line)
            if code != 0:
                why = f"killed by signal {-code}; its limit is {MAVEN_TIMEOUT_S} s" if code < 0 else f"exit {code}"
                raise SetupError(
                    f"Maven failed ({why}); its last lines:\n" + "\n".join(tail) + "\nfix what it names "
                    f"(a proxy or mirror goes in ~/.m2/settings.xml) and run `{command}` again"
                )
            missing = [str(staging / f) for f in build.jar_folders if not any((staging / f).glob("*.jar"))]
            if missing:
                raise SetupError(f"Maven succeeded but left no jars in {', '.join(missing)}: report this as a bug")
            (staging / STAMP).write_text(build.stamp)
            if build.dest.exists():
                for entry in CARRIED:
                    if (build.dest / entry).exists():
                        (build.dest / entry).rename(staging / entry)
                shutil.rmtree(build.dest)
            staging.rename(build.dest)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    return fetched


def build_parser() -> argparse.ArgumentParser:
    """``kconform setup``'s options (``kconform --help`` walks every verb's parser)."""
    parser = argparse.ArgumentParser(
        prog="kconform setup",
        description=(
            "Resolve the JVM pieces this kconform release pins (Apache Kafka's broker jars, Spark's "
            "spark-sql-kafka-0-10 connector, the Kafka and Flink oracle helpers, built from their Java "
            "sources) with Maven, into the folder kconform run reads them from. Needs mvn (Maven 3.8+) and "
            "a JDK 17 on PATH; Maven's own settings (~/.m2/settings.xml) choose where it downloads from. "
            "A second run finds the folder up to date and fetches nothing; delete the folder to fetch again."
        ),
        epilog=(
            f"default folder: ${JVM_DIR_ENV} if set; else, in a source checkout, its .jvm/ (what `make setup` "
            "fills); else the per-user cache $XDG_CACHE_HOME/kconform/<version>/jvm (~/.cache/... when "
            f"XDG_CACHE_HOME is unset). Exit 0 when the pieces are in place, 1 with the fix when not. "
            f"Now: {jvm_dir()}"
        ),
    )
    parser.add_argument(
        "--into",
        metavar="DIR",
        type=Path,
        help=(
            "resolve into DIR instead of the default folder; DIR must be new, empty or an earlier "
            f"`kconform setup --into DIR` (it is replaced); kconform run finds it through {JVM_DIR_ENV}=DIR"
        ),
    )
    return parser


def main(argv: Sequence[str]) -> int:
    """``kconform setup [--into DIR]``: 0 when the pieces are in place, 1 naming the fix when not."""
    args = build_parser().parse_args(argv)
    dest = (args.into or jvm_dir()).absolute()
    try:
        setup(dest, lambda line: print(line, flush=True))
    except SetupError as error:
        print(f"kconform setup: ERROR: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
