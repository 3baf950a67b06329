"""Suite files are imported by the name of the package their folder belongs to, so each has one name."""

from __future__ import annotations

from pathlib import Path

from kconform.conformance.gate.collection import imported_packages, mapped_name

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
