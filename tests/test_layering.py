"""The import graph of the project, read from its source files alone.

The reference implementation stands alone: nothing under ``reference_impl`` imports the suite. A connector
a user deploys must not pull in the conformance suite (or its test-speed client settings); the suite
depends on the implementation, never the other way round. Inside the package the folders import each other
relatively (``from ..checks.checkers import ...``), so a reader, an editor or this test resolves every import
to a file by the path alone; ``pyproject.toml`` maps each top-level folder to ``kconform.<folder>``.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE_FOLDERS = ("conformance", "reference_impl", "spec", "fixtures")
SUITE_PACKAGES = ("kconform.conformance", "kconform.fixtures", "tests", "fixtures")
FOLDERS = ("conformance", "reference_impl", "tests", "fixtures")


def module_name(path: Path, root: Path = ROOT) -> str:
    """The name a file of the package is imported by: its folder mapped to ``kconform.<folder>``."""
    parts = path.relative_to(root).with_suffix("").parts
    if parts[0] in PACKAGE_FOLDERS:
        parts = ("kconform", *parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported_modules(path: Path, root: Path = ROOT) -> set[str]:
    """Every module ``path`` imports, relative imports resolved against its package."""
    tree = ast.parse(path.read_text(), str(path))
    package = module_name(path, root).split(".")
    if path.name != "__init__.py":
        package = package[:-1]
    names: set[str] = set()
    for node in ast.walk(tree):
        names |= imported_modules_of(node, package)
    return names


def imported_modules_of(node: ast.AST, package: list[str]) -> set[str]:
    if isinstance(node, ast.Import):
        return {alias.name for alias in node.names}
    if not isinstance(node, ast.ImportFrom):
        return set()
    if node.level == 0:
        return {node.module} if node.module else set()
    base = package[: len(package) - node.level + 1]
    if node.module:
        return {".".join([*base, node.module])}
    return {".".join([*base, alias.name]) for alias in node.names}  # ``from .. import jvm``: jvm is a module


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
    module = tmp_path / "reference_impl" / "spark" / "m.py"
    module.parent.mkdir(parents=True)
    module.write_text(
        "import os\nfrom .. import kafka_client\ndef f():\n    from ...conformance.brokers import Broker\n"
    )
    seen = imported_modules(module, tmp_path)
    assert {"kconform.conformance.brokers", "kconform.reference_impl.kafka_client"} <= seen, seen


def test_the_package_s_folders_import_each_other_by_path() -> None:
    """Inside the package, one part imports another relatively, so the source alone shows which file it is."""
    offending = {
        f"{path.relative_to(ROOT)}: {name}"
        for folder in PACKAGE_FOLDERS
        for path in (ROOT / folder).rglob("*.py")
        if "suite_sample" not in path.parts  # sample suites are distributions of their own, imported by name
        for node in ast.walk(ast.parse(path.read_text(), str(path)))
        for name in imported_modules_of(node, [])
        if name == "kconform" or name.startswith("kconform.")
    }
    assert not offending, sorted(offending)


def conformance_imports() -> dict[str, set[str]]:
    """Which of ``conformance/``'s concerns (its subpackages and top-level modules) each one imports."""
    root = ROOT / "conformance"
    graph: dict[str, set[str]] = {}
    for path in root.rglob("*.py"):
        unit = path.relative_to(root).parts[0].removesuffix(".py")
        for name in imported_modules(path):
            parts = name.split(".")
            if parts[:2] == ["kconform", "conformance"] and len(parts) > 2 and parts[2] != unit:
                graph.setdefault(unit, set()).add(parts[2])
    return graph


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
    assert graph["brokers"] == {"extras", "jvm"}, graph["brokers"]  # ``from .. import jvm`` counts
    assert find_circle(graph) == [], " -> ".join(find_circle(graph))


def test_the_circle_check_finds_a_circle() -> None:
    assert find_circle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == ["a", "b", "c", "a"]
    assert find_circle({"a": {"b", "c"}, "b": {"c"}}) == []
