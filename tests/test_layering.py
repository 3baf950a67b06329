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


def conformance_imports() -> dict[str, set[str]]:
    """Which of ``conformance/``'s concerns (its subpackages and top-level modules) each one imports."""
    root = ROOT / "conformance"
    graph: dict[str, set[str]] = {}
    for path in root.rglob("*.py"):
        unit = path.relative_to(root).parts[0].removesuffix(".py")
        tree = ast.parse(path.read_text(), str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module == "kconform.conformance":
                names = [f"kconform.conformance.{alias.name}" for alias in node.names]
            else:
                names = sorted(imported_modules_of(node))
            for name in names:
                parts = name.split(".")
                if parts[:2] == ["kconform", "conformance"] and len(parts) > 2 and parts[2] != unit:
                    graph.setdefault(unit, set()).add(parts[2])
    return graph


def imported_modules_of(node: ast.AST) -> set[str]:
    if isinstance(node, ast.Import):
        return {alias.name for alias in node.names}
    if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
        return {node.module}
    return set()


def find_circle(graph: dict[str, set[str]]) -> list[str]:
    """A path of imports that comes back to where it started, or ``[]``."""
    done: set[str] = set()

    def visit(unit: str, path: list[str]) -> list[str]:
        if unit in path:
            return [*path[path.index(unit) :], unit]
        if unit in done:
            return []
        for used in sorted(graph.get(unit, ())):
            if circle := visit(used, [*path, unit]):
                return circle
        done.add(unit)
        return []

    for unit in sorted(graph):
        if circle := visit(unit, []):
            return circle
    return []


def test_the_concerns_of_conformance_import_each_other_without_a_circle() -> None:
    """The folder layout shows the design only if its dependencies run one way."""
    graph = conformance_imports()
    assert {"gate", "spark", "mutants", "suite"} <= set(graph), graph  # the walk sees the imports
    assert graph["brokers"] == {"jvm"}, graph["brokers"]  # ``from kconform.conformance import jvm`` counts
    assert find_circle(graph) == [], " -> ".join(find_circle(graph))


def test_the_circle_check_finds_a_circle() -> None:
    assert find_circle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == ["a", "b", "c", "a"]
    assert find_circle({"a": {"b", "c"}, "b": {"c"}}) == []
