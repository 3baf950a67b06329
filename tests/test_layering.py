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


def module_file(name: str, root: Path = ROOT) -> Path | None:
    """The source file of a module of the package (``kconform.conformance.gate`` -> its ``__init__.py``), if any."""
    parts = name.split(".")
    if parts[0] != "kconform":
        return None
    folder = root.joinpath(*(parts[1:] if len(parts) > 1 and parts[1] in PACKAGE_FOLDERS else parts))
    for candidate in (folder.with_suffix(".py"), folder / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def _package_modules(node: ast.AST, package: list[str], root: Path) -> set[str]:
    """The package's modules an import statement loads: ``from ..gate import report`` loads the module ``report``."""
    names = imported_modules_of(node, package)
    if isinstance(node, ast.ImportFrom) and node.module:
        names |= {f"{name}.{alias.name}" for name in set(names) for alias in node.names}
    return {name for name in names if module_file(name, root) is not None}


def _is_type_checking(node: ast.AST) -> bool:
    test = node.test if isinstance(node, ast.If) else None
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def import_sites(path: Path, root: Path = ROOT) -> tuple[set[str], list[tuple[int, set[str]]]]:
    """The package's modules ``path`` loads when it is imported (not under ``if TYPE_CHECKING``, not in a function),
    and those its functions import when called, by line."""
    package = module_name(path, root).split(".")
    if path.name != "__init__.py":
        package = package[:-1]
    at_import: set[str] = set()
    in_functions: list[tuple[int, set[str]]] = []

    def walk(node: ast.AST, in_function: bool) -> None:
        if _is_type_checking(node):
            return
        if isinstance(node, ast.Import | ast.ImportFrom):
            names = _package_modules(node, package, root)
            if in_function:
                in_functions.append((node.lineno, names))
            else:
                at_import.update(names)
        inside = in_function or isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda)
        for child in ast.iter_child_nodes(node):
            walk(child, inside)

    walk(ast.parse(path.read_text(), str(path)), False)
    return at_import, in_functions


def loaded_with(name: str, root: Path = ROOT) -> set[str]:
    """Every module of the package that importing ``name`` imports: its imports, theirs, and so on, and those of the
    packages that hold them, which run first. A package is not counted for holding the module (its ``__init__``
    loading a submodule lazily closes no circle), only where an import names it."""
    named, ran = {name}, set()
    todo = [name]
    while todo:
        parts = todo.pop().split(".")
        for module in (".".join(parts[:depth]) for depth in range(1, len(parts) + 1)):
            path = module_file(module, root)
            if module in ran or path is None:
                continue
            ran.add(module)
            imports = import_sites(path, root)[0]
            named |= imports
            todo += sorted(imports)
    return named


def circle_dodging_imports(root: Path = ROOT) -> list[str]:
    """Imports inside a function of a module that the imported module loads in turn: at the top they would close an
    import circle, so the function hides one. A function may import lazily what needs an optional extra (PySpark,
    confluent_kafka) to keep the core install light; that module does not import the caller back."""
    found = []
    for folder in PACKAGE_FOLDERS:
        for path in sorted((root / folder).rglob("*.py")):
            caller = module_name(path, root)
            for line, names in import_sites(path, root)[1]:
                found += [
                    f"{path.relative_to(root)}:{line}: {name}"
                    for name in sorted(names)
                    if caller in loaded_with(name, root)
                ]
    return found


def test_no_function_imports_a_module_to_dodge_an_import_circle() -> None:
    assert circle_dodging_imports() == []


def test_the_gate_imports_its_own_modules_at_the_top() -> None:
    """The gate needs no optional extra, so none of its functions has a reason to import another part of the package."""
    offending = [
        f"{path.relative_to(ROOT)}:{line}: {sorted(names)}"
        for path in sorted((ROOT / "conformance" / "gate").rglob("*.py"))
        for line, names in import_sites(path)[1]
        if names
    ]
    assert offending == []


def test_the_dodge_check_finds_a_hidden_circle_and_allows_a_lazy_extra(tmp_path: Path) -> None:
    gate = tmp_path / "conformance" / "gate"
    gate.mkdir(parents=True)
    (tmp_path / "conformance" / "__init__.py").write_text("")
    (gate / "__init__.py").write_text("def lazy():\n    from .heavy import session\n")  # its own submodule
    (gate / "results.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .extra import spark\n"
    )
    (gate / "runner.py").write_text("from .results import TYPE_CHECKING\n\ndef main():\n    from . import report\n")
    (gate / "report.py").write_text("from .runner import main\n")  # so runner's main hides a circle
    (gate / "extra.py").write_text("from . import results\n\ndef spark():\n    from .heavy import session\n")
    (gate / "heavy.py").write_text("import pyspark\nfrom .results import TYPE_CHECKING\n")  # an optional extra
    assert circle_dodging_imports(tmp_path) == ["conformance/gate/runner.py:4: kconform.conformance.gate.report"]
