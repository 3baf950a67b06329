"""``kconform setup`` and where the runtime finds the JVM pieces, without Maven.

Maven itself is replaced by a stand-in that writes one jar per module where the real command line
says, so these check the plan, the stamp, the swap and the messages; the wheel test and the README's
measured run show the real Maven.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path

import pytest

from kconform.conformance import jvm
from kconform.conformance.cli import main as cli_main
from kconform.conformance.jvm import setup
from kconform.conformance.jvm.setup import (
    STAMP,
    Folder,
    SetupError,
    fingerprint,
    foreign_entries,
    maven_command,
    modules_of,
    plan_setup,
    progress,
    read_project,
)

MODULES = ("kafka-broker", "kafka-oracle", "spark-kafka", "flink-legacy", "flink-oracle")


class FakeMaven:
    """Writes ``<module>-1.0.jar`` into each module folder of ``-Dkconform.jvm.dir``; counts its runs."""

    def __init__(self, code: int = 0) -> None:
        self.runs = 0
        self.code = code

    def __call__(self, command: Sequence[str], on_line: setup.Say) -> int:
        self.runs += 1
        (out,) = (Path(arg.split("=", 1)[1]) for arg in command if arg.startswith("-Dkconform.jvm.dir="))
        on_line("[INFO] Building kafka-broker 0.1.0                        [2/6]")
        on_line("[INFO] Downloaded from repo: https://example.invalid/k/kafka_2.13-4.1.1.jar (6.5 MB at 3 MB/s)")
        if self.code == 0:
            for module in MODULES:
                (out / module).mkdir(parents=True)
                (out / module / f"{module}-1.0.jar").write_bytes(b"jar")
        else:
            on_line("[ERROR] Failed to execute goal: could not resolve dependencies")
        return self.code


@pytest.fixture
def tools(monkeypatch: pytest.MonkeyPatch) -> None:
    """Maven, Java and javac count as installed, whatever this machine has."""
    monkeypatch.setattr(setup, "maven_tools", lambda: "/usr/bin/mvn")


def test_the_runtime_looks_at_the_explicit_folder_then_the_checkout_then_the_user_cache(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    checkout = tmp_path / "repo"
    assert jvm.choose_jvm_dir({jvm.JVM_DIR_ENV: "/x/jars"}, checkout, cache) == Path("/x/jars")
    assert jvm.choose_jvm_dir({}, checkout, cache) == checkout / ".jvm"
    assert jvm.choose_jvm_dir({jvm.JVM_DIR_ENV: ""}, None, cache) == cache


def test_the_user_cache_is_per_version_under_xdg_cache_home() -> None:
    home = Path("/home/u")
    assert jvm.user_cache({}, home, "0.1.0") == home / ".cache" / "kconform" / "0.1.0" / "jvm"
    assert jvm.user_cache({"XDG_CACHE_HOME": ""}, home, "0.1.0") == home / ".cache" / "kconform" / "0.1.0" / "jvm"
    assert jvm.user_cache({"XDG_CACHE_HOME": "/c"}, home, "0.2.0") == Path("/c/kconform/0.2.0/jvm")


def test_from_this_checkout_the_runtime_reads_its_jvm_folder(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(jvm.JVM_DIR_ENV, raising=False)
    assert jvm.in_checkout()
    assert jvm.jvm_dir() == jvm.CHECKOUT / ".jvm"
    assert "make setup" in jvm.setup_hint() and "kconform setup" in jvm.setup_hint()
    monkeypatch.setenv(jvm.JVM_DIR_ENV, "/x/jars")  # make setup fills .jvm/, not this folder
    assert "make setup" not in jvm.setup_hint() and f"kconform setup` (it resolves into ${jvm.JVM_DIR_ENV})" in (
        jvm.setup_hint()
    )


def test_outside_a_checkout_the_missing_error_names_kconform_setup(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    (tmp_path / "jvm").mkdir()
    (tmp_path / "jvm" / "pom.xml").write_text("<project/>")  # as in a wheel's kconform/: poms, no pyproject.toml
    monkeypatch.setattr(jvm, "CHECKOUT", tmp_path)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv(jvm.JVM_DIR_ENV, raising=False)
    assert jvm.jvm_dir().is_relative_to(tmp_path / "cache" / "kconform")
    with pytest.raises(jvm.JvmArtifactsMissing, match=r"kconform setup") as missing:
        jvm.jars(jvm.KAFKA_BROKER)
    assert "make setup" not in str(missing.value)


def test_the_project_is_the_five_modules_of_jvm_pom_with_the_oracles_sources() -> None:
    project = read_project(jvm.jvm_project())
    assert modules_of(project["pom.xml"]) == MODULES
    assert {"kafka-oracle/src/main/java/kconform/KafkaOracle.java", "flink-oracle/pom.xml"} <= set(project)


def test_a_folder_is_up_to_date_only_when_stamped_from_the_same_poms_with_every_module_resolved(
    tmp_path: Path,
) -> None:
    project = read_project(jvm.jvm_project())
    stamp = json.dumps({"fingerprint": fingerprint(project)})
    assert plan_setup(project, tmp_path, Folder(frozenset(), stamp, frozenset(MODULES))).up_to_date
    assert not plan_setup(project, tmp_path, Folder(frozenset(), stamp, frozenset(MODULES[1:]))).up_to_date
    assert not plan_setup(project, tmp_path, Folder(frozenset(), "", frozenset(MODULES))).up_to_date
    pinned = re.search(rb"<kafka.version>([^<]+)</kafka.version>", project["pom.xml"])
    assert pinned is not None
    changed = {**project, "pom.xml": project["pom.xml"].replace(pinned[0], b"<kafka.version>0.0.1</kafka.version>")}
    assert changed != project  # a pin changed, whichever release jvm/pom.xml pins today
    assert not plan_setup(changed, tmp_path, Folder(frozenset(), stamp, frozenset(MODULES))).up_to_date


def test_setup_replaces_only_a_folder_it_made() -> None:
    assert foreign_entries(Folder(frozenset({"kafka-broker", STAMP}), None, frozenset()), MODULES) == []
    assert foreign_entries(Folder(frozenset({"kafka-broker", "notes.txt"}), None, frozenset()), MODULES) == [
        "notes.txt"
    ]


def test_maven_writes_the_jars_and_the_build_where_it_is_told(tmp_path: Path) -> None:
    command = maven_command("mvn", tmp_path / "jvm", tmp_path / "out", tmp_path / "build")
    assert command[-2:] == ["package", "dependency:copy-dependencies"]
    assert f"-Dkconform.jvm.dir={tmp_path / 'out'}" in command and "-B" in command


def test_progress_reports_each_module_and_each_fetched_jar_only() -> None:
    assert progress("[INFO] Building spark-kafka 0.1.0                      [4/6]") == "[4/6] spark-kafka"
    fetched = "[INFO] Downloaded from central: https://h/x/commons-pool2-2.13.1.jar (150 kB at 1 MB/s)"
    assert progress(fetched) == "  fetched commons-pool2-2.13.1.jar (150 kB at 1 MB/s)"
    assert progress("[INFO] Downloaded from central: https://h/x/commons-pool2-2.13.1.pom (9 kB at 1 MB/s)") is None
    assert progress("[INFO] Copying kafka_2.13-4.1.1.jar to /x") is None


def test_setup_into_a_tmp_cache_is_idempotent(tmp_path: Path, tools: None) -> None:
    dest = tmp_path / "cache" / "kconform" / "0.1.0" / "jvm"
    maven = FakeMaven()
    said: list[str] = []
    setup.setup(dest, said.append, maven)
    assert maven.runs == 1 and (dest / STAMP).is_file()
    assert any("resolving 5 JVM modules" in line for line in said)
    assert "kconform setup: [2/6] kafka-broker" in said
    assert any("Maven downloaded 1 files" in line for line in said)
    assert sum(f"{dest / 'spark-kafka'}" in line for line in said) == 1
    assert [p.name for p in dest.parent.iterdir()] == ["jvm"]  # no staging folder left behind
    again: list[str] = []
    setup.setup(dest, again.append, maven)
    assert maven.runs == 1
    assert "is up to date" in again[0] and sum("1 jars" in line for line in again) == len(MODULES)


def test_a_failed_maven_leaves_the_previous_pieces_and_names_its_error(tmp_path: Path, tools: None) -> None:
    dest = tmp_path / "jvm"
    setup.setup(dest, lambda _: None, FakeMaven())
    (dest / STAMP).write_text("")  # as an older make setup left it: resolve again
    with pytest.raises(SetupError, match=r"(?s)Maven failed \(exit 1\).*could not resolve dependencies"):
        setup.setup(dest, lambda _: None, FakeMaven(code=1))
    assert (dest / "kafka-broker" / "kafka-broker-1.0.jar").is_file()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["jvm"]


def test_setup_refuses_a_folder_with_files_of_its_own(tmp_path: Path, tools: None) -> None:
    (tmp_path / "mine.txt").write_text("keep me")
    with pytest.raises(SetupError, match=r"mine\.txt.*--into DIR"):
        setup.setup(tmp_path, lambda _: None, FakeMaven())
    assert (tmp_path / "mine.txt").read_text() == "keep me"


def test_without_mvn_setup_exits_1_naming_maven(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    assert cli_main(["setup", "--into", str(tmp_path / "jvm")]) == 1
    assert "mvn is not on PATH: install Maven 3.8+" in capsys.readouterr().err


def test_setup_help_describes_every_option(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        cli_main(["setup", "--help"])
    assert exit_.value.code == 0
    text = capsys.readouterr().out
    assert "--into DIR" in text and jvm.JVM_DIR_ENV in text and "XDG_CACHE_HOME" in text
