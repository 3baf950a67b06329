"""Another Spark release, made ready without Maven or pip: a stand-in writes the jars where the real command line
says; these check the release names, the versions passed, the stamp and cache, and the venv's ``.pth`` line."""

from __future__ import annotations

import io
import re
import subprocess
from collections.abc import Sequence
from pathlib import Path

import pytest

from kconform.conformance import jvm
from kconform.conformance.gate import run_command, spark_release, verdicts
from kconform.conformance.gate.collector import Collector
from kconform.conformance.gate.options import RunOptions
from kconform.conformance.jvm import setup, spark_at_release
from kconform.conformance.jvm.setup import SetupError
from kconform.conformance.jvm.spark_at_release import (
    SPARK_VERSION_ENV,
    TOKEN_PROVIDER_ENV,
    check_release,
    connector_module,
    maven_properties,
    pinned,
    resolve_at_release,
    scala_binary,
    token_providers,
)
from kconform.conformance.spark.at_release import pth_text

ROOT = Path(__file__).resolve().parents[1]


class FakeMaven:
    """Writes the connector's jar into ``-Dkconform.jvm.dir``; records each command line."""

    def __init__(self) -> None:
        self.commands: list[Sequence[str]] = []

    def __call__(self, command: Sequence[str], on_line: setup.Say) -> int:
        self.commands.append(command)
        (out,) = (Path(arg.split("=", 1)[1]) for arg in command if arg.startswith("-Dkconform.jvm.dir="))
        out.mkdir(parents=True, exist_ok=True)
        (out / "spark-sql-kafka-0-10_2.13-4.0.1.jar").write_bytes(b"jar")
        return 0


@pytest.fixture
def jars(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    monkeypatch.setenv(jvm.JVM_DIR_ENV, str(tmp_path / "jvm"))
    monkeypatch.delenv(TOKEN_PROVIDER_ENV, raising=False)
    monkeypatch.setattr(spark_at_release, "maven_tools", lambda: "/usr/bin/mvn")
    return tmp_path / "jvm"


def test_a_release_names_its_scala_line_and_nothing_else_is_a_release() -> None:
    assert (scala_binary("3.5.7"), scala_binary("4.0.2")) == ("2.12", "2.13")
    for bad in ("4.0", "5.0.0", "4.0.1/../x", "latest"):
        with pytest.raises(ValueError, match="not a Spark release version"):
            check_release(bad)


def test_the_pinned_release_is_the_pyspark_constraints_pin() -> None:
    pin = re.search(r"^pyspark==(\S+)$", (ROOT / "constraints.txt").read_text(), re.MULTILINE)
    assert pin is not None and pinned() == pin.group(1)


def test_a_run_reads_the_pinned_connector_unless_told_another_release() -> None:
    assert connector_module({}) == connector_module({SPARK_VERSION_ENV: pinned()}) == jvm.SPARK_KAFKA
    assert connector_module({SPARK_VERSION_ENV: "4.0.1"}) == "releases/spark-4.0.1/spark-kafka"


def test_the_token_provider_is_the_releases_own_then_the_earlier_patches_of_its_line() -> None:
    assert maven_properties("3.5.7", "3.5.7") == {
        "spark.version": "3.5.7",
        "scala.binary.version": "2.12",
        "spark.token-provider.version": "3.5.7",
    }
    assert token_providers("4.0.2") == ["4.0.2", "4.0.1", "4.0.0"] and token_providers("4.1.0") == ["4.1.0"]


def test_a_release_is_resolved_once_with_its_versions_then_found(jars: Path) -> None:
    maven, said = FakeMaven(), list[str]()
    folder = resolve_at_release("4.0.1", {}, said.append, maven)
    assert folder == jars / "releases" / "spark-4.0.1" / "spark-kafka" and any(folder.glob("*.jar"))
    (command,) = maven.commands
    assert {"-Dspark.version=4.0.1", "-Dscala.binary.version=2.13", "-Dspark.token-provider.version=4.0.1"} <= set(
        command
    )
    assert resolve_at_release("4.0.1", {}, said.append, maven) == folder and len(maven.commands) == 1
    resolve_at_release("4.0.1", {TOKEN_PROVIDER_ENV: "4.0.0"}, said.append, maven)  # other versions: again
    assert len(maven.commands) == 2 and any("its token provider at 4.0.0" in line for line in said)


class MavenWithoutTokenProvider(FakeMaven):
    """A repository that serves the connector of 4.0.2 but its token provider only at 4.0.0."""

    def __call__(self, command: Sequence[str], on_line: setup.Say) -> int:
        if "-Dspark.token-provider.version=4.0.0" not in command:
            self.commands.append(command)
            on_line("[ERROR] Could not find artifact spark-token-provider-kafka-0-10_2.13")
            return 1
        return super().__call__(command, on_line)


def test_a_token_provider_maven_lacks_falls_back_to_an_earlier_patch_of_the_line_and_says_so(jars: Path) -> None:
    maven, said = MavenWithoutTokenProvider(), list[str]()
    folder = resolve_at_release("4.0.2", {}, said.append, maven)
    assert any(folder.glob("*.jar")) and len(maven.commands) == 3
    assert any("its token provider at 4.0.0: Maven served none at 4.0.2" in line for line in said)
    assert resolve_at_release("4.0.2", {}, said.append, maven) == folder and len(maven.commands) == 3  # cached
    with pytest.raises(SetupError, match=r"token provider 4\.1\.0: \[ERROR\] Could not find .*KCONFORM_SPARK_TOKEN"):
        resolve_at_release("4.1.0", {}, said.append, MavenWithoutTokenProvider())


def test_the_pinned_release_starts_no_maven(jars: Path) -> None:
    maven = FakeMaven()
    assert resolve_at_release(pinned(), {}, lambda _: None, maven) == jars / jvm.SPARK_KAFKA
    assert maven.commands == []


def test_the_venvs_pth_adds_the_parents_site_dirs_with_their_own_pth_files() -> None:
    added: list[str] = []

    class Site:
        addsitedir = staticmethod(added.append)

    line = pth_text(["/a/site-packages", "/b/site-packages"])
    assert line.startswith("import site; ") and line.endswith("\n") and line.count("\n") == 1
    exec(line.removeprefix("import site; "), {"site": Site})
    assert added == ["/a/site-packages", "/b/site-packages"]


def test_run_refuses_what_is_not_a_spark_release(capsys: pytest.CaptureFixture[str]) -> None:
    assert run_command.main(["--spark", "4.0"]) == 2
    assert "kconform run: error: '4.0' is not a Spark release version" in capsys.readouterr().err


def test_a_replay_line_of_a_run_at_another_release_names_it(monkeypatch: pytest.MonkeyPatch) -> None:
    collector = Collector(RunOptions(adapter="m:A"), 1, {}, [], io.StringIO())
    monkeypatch.delenv(SPARK_VERSION_ENV, raising=False)
    assert "--spark" not in collector.replay_command("required_X", pipeline=True)
    monkeypatch.setenv(SPARK_VERSION_ENV, pinned())
    assert "--spark" not in collector.replay_command("required_X", pipeline=True)
    monkeypatch.setenv(SPARK_VERSION_ENV, "4.0.1")
    assert collector.replay_command("required_X", pipeline=True).endswith(" --spark 4.0.1")


def test_verdicts_refuses_what_is_not_a_spark_release(capsys: pytest.CaptureFixture[str]) -> None:
    assert verdicts.main(["--spark", "4.0", "--adapter", "m:A", "--out", "x.md"]) == 2
    assert "kconform verdicts: error: '4.0' is not a Spark release version" in capsys.readouterr().err


@pytest.mark.parametrize("command", ["run", "verdicts"])
def test_a_command_at_another_release_runs_itself_again_in_that_releases_venv(
    command: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    ran: list[tuple[list[str], str | None]] = []

    def child(argv: list[str], env: dict[str, str], timeout: float) -> subprocess.CompletedProcess[str]:
        ran.append((argv, env.get(SPARK_VERSION_ENV)))
        return subprocess.CompletedProcess(argv, 1)

    monkeypatch.setenv(SPARK_VERSION_ENV, "")  # undone after the test: the command sets it for its run
    monkeypatch.setattr(spark_release, "prepare", lambda release, say: {SPARK_VERSION_ENV: release})
    monkeypatch.setattr(spark_release, "installed_pyspark", lambda: pinned())
    monkeypatch.setattr(spark_release, "make_venv", lambda release, say: Path(f"/venvs/pyspark-{release}/bin/python"))
    monkeypatch.setattr(spark_release.subprocess, "run", child)
    assert spark_release.at_spark_release(command, None, ["--only", "X"]) is None  # the pinned one: nothing to do
    assert spark_release.at_spark_release(command, "4.0.1", ["--spark", "4.0.1"]) == 1  # the child's exit code
    cli = ["/venvs/pyspark-4.0.1/bin/python", "-m", "kconform.conformance.cli", command, "--spark", "4.0.1"]
    assert ran == [(cli, "4.0.1")]
    monkeypatch.setattr(spark_release, "installed_pyspark", lambda: "4.0.1")  # already in that venv: go on here
    assert spark_release.at_spark_release(command, "4.0.1", ["--spark", "4.0.1"]) is None and len(ran) == 1


def test_a_pyspark_of_another_line_is_judged_with_its_own_connector_without_spark(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A team's venv holds pyspark 4.1.1 beside a kconform pinned to 4.2: the pinned line's jars die of
    NoSuchMethodError there, so a run (not at the protocol level) takes 4.1.1's connector and goes on in this
    interpreter; a patch release of the pinned line keeps the pinned jars."""
    prepared: list[str] = []
    monkeypatch.setenv(SPARK_VERSION_ENV, "")  # undone after the test: the command sets it for its run

    def prepare(release: str, say: object) -> dict[str, str]:
        prepared.append(release)
        return {SPARK_VERSION_ENV: release}

    monkeypatch.setattr(spark_release, "prepare", prepare)
    line = pinned().rsplit(".", 1)[0]
    monkeypatch.setattr(spark_release, "installed_pyspark", lambda: f"{line}.99")
    assert spark_release.at_spark_release("run", None, []) is None and prepared == []
    monkeypatch.setattr(spark_release, "installed_pyspark", lambda: "4.1.1")
    assert spark_release.at_spark_release("run", None, [], spark=False) is None and prepared == []  # protocol
    assert spark_release.at_spark_release("run", None, []) is None and prepared == ["4.1.1"]
    monkeypatch.setenv(SPARK_VERSION_ENV, "")
    assert "the installed pyspark is 4.1.1, of another line than the pinned" in capsys.readouterr().out
