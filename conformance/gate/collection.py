"""Suite files are imported by their package names, never by a name pytest derives from folders.

kconform's subpackages are folders mapped into one import package (``conformance/`` is
``kconform.conformance``), so the name pytest would build from a file's folders
(``conformance.suite.test_source``) would load a second copy of the project under another name, and
relative imports in it would reach beyond its top. Where a file's folder belongs to an imported
package of another name, the suite's modules and packages are imported by that name instead.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Mapping
from pathlib import Path
from types import ModuleType
from typing import TypeVar

import pytest


def imported_packages() -> dict[Path, str]:
    """Each folder of an imported package, with the package's name."""
    found: dict[Path, str] = {}
    for name, module in list(sys.modules.items()):
        for folder in getattr(module, "__path__", None) or ():
            found.setdefault(Path(folder).resolve(), name)
    return found


def mapped_name(path: Path, packages: Mapping[Path, str]) -> str | None:
    """The import name of ``path`` (a module, or a package's ``__init__.py``) when its folders are a package
    imported under another name; ``None`` where pytest's own name is the right one."""
    parts = [] if path.name == "__init__.py" else [path.stem]
    folder = path.resolve().parent
    mapped: str | None = None
    while (folder / "__init__.py").is_file():
        if mapped is None and folder in packages:
            mapped = ".".join([packages[folder], *reversed(parts)])
        parts.append(folder.name)
        folder = folder.parent
    return None if mapped in (None, ".".join(reversed(parts))) else mapped


class PackagedModule(pytest.Module):
    """A suite module imported by its package name."""

    import_name = ""

    def _getobj(self) -> ModuleType:
        return importlib.import_module(self.import_name)


class PackagedPackage(pytest.Package):
    """A suite package imported by its package name (``setup_module`` in its ``__init__`` still runs)."""

    import_name = ""

    def setup(self) -> None:
        package = importlib.import_module(self.import_name)
        setup_module = getattr(package, "setup_module", None)
        if callable(setup_module):
            setup_module()
        teardown_module = getattr(package, "teardown_module", None)
        if callable(teardown_module):
            self.addfinalizer(teardown_module)


Node = TypeVar("Node", PackagedModule, PackagedPackage)


def packaged(kind: type[Node], file: Path, path: Path, parent: pytest.Collector) -> Node | None:
    """A node of ``kind`` for ``path`` that imports ``file`` by its package name, if it is mapped."""
    name = mapped_name(file, imported_packages())
    if name is None:
        return None
    node = kind.from_parent(parent, path=path)
    node.import_name = name
    return node


@pytest.hookimpl(tryfirst=True)
def pytest_pycollect_makemodule(module_path: Path, parent: pytest.Collector) -> pytest.Module | None:
    return packaged(PackagedModule, module_path, module_path, parent)


@pytest.hookimpl(tryfirst=True)
def pytest_collect_directory(path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    init = path / "__init__.py"
    return packaged(PackagedPackage, init, path, parent) if init.is_file() else None
