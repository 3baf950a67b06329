"""The reference implementation stands alone: nothing under ``reference_impl`` imports the suite.

A connector a user deploys must not pull in the conformance suite (or its test-speed client
settings); the suite depends on the implementation, never the other way round.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SUITE_PACKAGES = ("kconform.conformance", "kconform.fixtures", "tests", "fixtures")
FOLDERS = ("conformance", "reference_impl", "tests", "fixtures")


def imported_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), str(path))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


def test_reference_impl_never_imports_the_suite() -> None:
    offending = {
        f"{path.relative_to(ROOT)}: {name}"
        for path in (ROOT / "reference_impl").rglob("*.py")
        for name in imported_modules(path)
        if any(name == p or name.startswith(f"{p}.") for p in SUITE_PACKAGES)
    }
    assert not offending, sorted(offending)


def test_code_imports_the_folders_by_their_installed_names() -> None:
    """``conformance`` and ``reference_impl`` are importable only as ``kconform.*`` once installed."""
    offending = {
        f"{path.relative_to(ROOT)}: {name}"
        for folder in FOLDERS
        for path in (ROOT / folder).rglob("*.py")
        for name in imported_modules(path)
        if name.split(".")[0] in ("conformance", "reference_impl")
    }
    assert not offending, sorted(offending)


def test_the_check_sees_an_import_of_the_suite(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text("import os\ndef f():\n    from kconform.conformance.brokers import Broker\n")
    assert "kconform.conformance.brokers" in imported_modules(module)
