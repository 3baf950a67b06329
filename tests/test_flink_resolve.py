"""The Flink harness of a connector release, resolved on demand, without Maven: a stand-in writes the jars where
the real command line says, so these check the versions passed, the stamp, the cache and the setup swap."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from kconform.conformance import jvm
from kconform.conformance.flink import resolve
from kconform.conformance.flink.versions import RELEASES, ConnectorRelease, release
from kconform.conformance.jvm import setup


class FakeMaven:
    """Writes the harness jar into ``-Dkconform.jvm.dir``; records each command line and the pom it ran."""

    def __init__(self) -> None:
        self.commands: list[Sequence[str]] = []
        self.poms: list[str] = []

    def __call__(self, command: Sequence[str], on_line: setup.Say) -> int:
        self.commands.append(command)
        self.poms.append(Path(command[command.index("-f") + 1]).read_text())
        (out,) = (Path(arg.split("=", 1)[1]) for arg in command if arg.startswith("-Dkconform.jvm.dir="))
        (out / "flink-harness-0.1.0.jar").write_bytes(b"jar")
        return 0


@pytest.fixture
def jars(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    monkeypatch.setenv(jvm.JVM_DIR_ENV, str(tmp_path / "jvm"))
    monkeypatch.setattr(resolve, "maven_tools", lambda: "/usr/bin/mvn")
    return tmp_path / "jvm"


def test_a_release_is_built_once_with_its_versions_then_found(jars: Path) -> None:
    maven = FakeMaven()
    line = release("4.0.1-2.0")
    said: list[str] = []
    folder = resolve.resolve(line, said.append, maven)
    assert folder == jars / "flink-harness" / "4.0.1-2.0" and (folder / "flink-harness-0.1.0.jar").is_file()
    (command,) = maven.commands
    assert {"-Dconnector.version=4.0.1-2.0", "-Dflink.version=2.0.0"} <= set(command)
    assert "<artifactId>flink-harness</artifactId>" in maven.poms[0]
    assert any("resolving flink-connector-kafka 4.0.1-2.0 (Flink 2.0.0)" in s for s in said)
    assert resolve.resolve(line, said.append, maven) == folder and len(maven.commands) == 1


def test_other_versions_are_another_build(jars: Path) -> None:
    maven = FakeMaven()
    pinned = ConnectorRelease("3.1.0-1.18", "1.18.1", kafka_clients="3.4.0")
    resolve.resolve(release("3.1.0-1.18"), lambda _: None, maven)
    resolve.resolve(pinned, lambda _: None, maven)  # same folder, other versions: built again
    assert len(maven.commands) == 2 and "-Dkafka.clients.version=3.4.0" in maven.commands[1]


def test_kconform_setup_neither_fingerprints_nor_drops_the_harness_builds(
    jars: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = setup.read_project(jvm.jvm_project())
    assert not any(path.startswith("flink-harness/") for path in project)
    resolve.resolve(release("3.1.0-1.18"), lambda _: None, FakeMaven())

    def modules(command: Sequence[str], on_line: setup.Say) -> int:
        (out,) = (Path(arg.split("=", 1)[1]) for arg in command if arg.startswith("-Dkconform.jvm.dir="))
        for module in setup.modules_of(project["pom.xml"]):
            (out / module).mkdir()
            (out / module / "x.jar").write_bytes(b"jar")
        return 0

    monkeypatch.setattr(setup, "maven_tools", lambda: "/usr/bin/mvn")
    setup.setup(jars, lambda _: None, modules)
    assert (jars / "flink-harness" / "3.1.0-1.18" / "flink-harness-0.1.0.jar").is_file()


def test_an_unknown_release_names_the_pinned_ones() -> None:
    with pytest.raises(ValueError, match=r"'9\.9\.9-3\.0' is not pinned .*3\.1\.0-1\.18"):
        release("9.9.9-3.0")
    assert all(key == entry.connector for key, entry in RELEASES.items())
