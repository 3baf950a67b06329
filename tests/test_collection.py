"""Suite files are imported by the name of the package their folder belongs to, so each has one name."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kconform.conformance.gate.collection import imported_packages, mapped_name
from kconform.conformance.gate.collector import WAITS_DEFAULT_MARK, applies, waits_left_out

ROOT = Path(__file__).resolve().parents[1]


def package_tree(tmp_path: Path, *folders: str) -> None:
    for folder in folders:
        (tmp_path / folder).mkdir(parents=True, exist_ok=True)
        (tmp_path / folder / "__init__.py").write_text("")


def test_a_file_of_a_mapped_folder_gets_the_package_s_name(tmp_path: Path) -> None:
    package_tree(tmp_path, "conformance", "conformance/suite")
    packages = {(tmp_path / "conformance").resolve(): "kconform.conformance"}
    assert mapped_name(tmp_path / "conformance/suite/test_x.py", packages) == "kconform.conformance.suite.test_x"
    assert mapped_name(tmp_path / "conformance/suite/__init__.py", packages) == "kconform.conformance.suite"


def test_pytest_s_own_name_is_kept_where_it_is_right(tmp_path: Path) -> None:
    package_tree(tmp_path, "mysuite")
    assert mapped_name(tmp_path / "mysuite/test_x.py", {(tmp_path / "mysuite").resolve(): "mysuite"}) is None
    assert mapped_name(tmp_path / "mysuite/test_x.py", {}) is None  # no imported package: pytest decides
    assert mapped_name(tmp_path / "test_alone.py", {}) is None


def test_kconform_s_suite_maps_to_its_installed_name() -> None:
    path = ROOT / "conformance" / "suite" / "test_source.py"
    assert mapped_name(path, imported_packages()) == "kconform.conformance.suite.test_source"


class _Marked:
    """A test item as ``applies`` sees it: its requirement mark."""

    def __init__(self, capability: str | None) -> None:
        self.mark = pytest.mark.requirement(capability=capability).mark

    def get_closest_marker(self, name: str) -> Any:
        return self.mark if name == "requirement" else None


def test_a_test_of_another_engine_is_left_out_not_skipped() -> None:
    """A Spark adapter is not judged by Flink jobs nor by the confluent-kafka client it does not read with, and a
    Flink adapter not by the Spark queries: skipped, those would leave its requirements 'not fully verified'."""
    spark = frozenset({"pipeline", "pipeline-rescale"})
    reference = spark | {"confluent-kafka-consumer"}
    flink = frozenset({"flink-job"})
    flink_test, client_test, spark_test = _Marked("flink-job"), _Marked("confluent-kafka-consumer"), _Marked(None)
    assert [applies(t, True, spark) for t in (flink_test, client_test, spark_test)] == [False, False, True]  # type: ignore[arg-type]
    assert [applies(t, True, reference) for t in (flink_test, client_test, spark_test)] == [False, True, True]  # type: ignore[arg-type]
    assert [applies(t, True, flink) for t in (flink_test, client_test, spark_test)] == [True, False, False]  # type: ignore[arg-type]
    # A protocol test is the protocol level's, whatever the engine.
    assert applies(spark_test, False, flink)  # type: ignore[arg-type]
    # kafka-clients (its assignors at the protocol level, its clients by the workload): only its own workload test.
    java = frozenset({"group-assignment", "kafka-clients-workload"})
    java_test = _Marked("kafka-clients-workload")
    tests = (flink_test, client_test, java_test, spark_test)
    assert [applies(t, True, java) for t in tests] == [False, False, True, False]  # type: ignore[arg-type]
    assert [applies(java_test, True, c) for c in (spark, reference, flink)] == [False, False, False]  # type: ignore[arg-type]
    assert applies(spark_test, False, java)  # type: ignore[arg-type]


class _Waits:
    """A test item as ``waits_left_out`` sees it: its name, and whether it waits out a default."""

    def __init__(self, name: str, waits: bool) -> None:
        self.name = name
        self.mark = getattr(pytest.mark, WAITS_DEFAULT_MARK).mark if waits else None

    def get_closest_marker(self, name: str) -> Any:
        return self.mark if name == WAITS_DEFAULT_MARK else None


def test_a_test_that_waits_out_a_default_runs_at_the_thorough_profile_or_when_named() -> None:
    """Flink's five-minute discovery default is waited out at ``--profile thorough``, or by a run whose ``--only`` is
    part of the test's name; a shorter run leaves it out (and says so), whatever id it selects by. A test without
    the mark runs at every profile."""
    name = "test_required_DISC_009_flink_partitions_added_while_running_are_found_with_default_discovery"
    waits, plain = _Waits(name, True), _Waits("test_required_DISC_009_something_else", False)
    assert [waits_left_out(waits, p, None) for p in ("quick", "default", "thorough")] == [True, True, False]  # type: ignore[arg-type]
    assert waits_left_out(waits, "default", "DISC-009")  # type: ignore[arg-type]  # by id: left out
    assert not waits_left_out(waits, "default", "found_with_default_discovery")  # type: ignore[arg-type]  # named
    assert not any(waits_left_out(plain, p, None) for p in ("quick", "default", "thorough"))  # type: ignore[arg-type]
