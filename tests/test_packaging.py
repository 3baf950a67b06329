"""One import package built from real folders: no symlinks, and every package folder mapped in pyproject.toml.

A Windows clone checks symlinks out as text files, and a module reachable by two paths has two names
(tracebacks, coverage and linters disagree), so the folders are mapped to ``kconform.<folder>`` by the build
configuration instead.
"""

from __future__ import annotations

import subprocess
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def pyproject() -> dict[str, object]:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())


def test_no_symlink_is_tracked() -> None:
    listing = subprocess.run(
        ["git", "ls-files", "--stage"], cwd=ROOT, capture_output=True, text=True, check=True, timeout=60
    ).stdout
    links = [line.split("\t", 1)[1] for line in listing.splitlines() if line.startswith("120000 ")]
    assert not links, links


def folder_of(package: str, mapping: dict[str, str]) -> Path:
    """Where setuptools takes ``package`` from: the longest mapped prefix, then the rest as folders."""
    parts = package.split(".")
    for cut in range(len(parts), 0, -1):
        prefix = ".".join(parts[:cut])
        if prefix in mapping:
            return ROOT.joinpath(mapping[prefix], *parts[cut:])
    return ROOT.joinpath(*parts)


def test_every_package_folder_is_listed_and_every_listed_package_is_a_folder() -> None:
    setuptools = pyproject()["tool"]["setuptools"]  # type: ignore[index]
    mapping: dict[str, str] = setuptools["package-dir"]
    listed: list[str] = setuptools["packages"]
    folders = {folder_of(name, mapping) for name in listed}
    missing = [str(f.relative_to(ROOT)) for f in folders if not (f / "__init__.py").is_file()]
    assert not missing, f"listed packages without an __init__.py: {missing}"
    on_disk = {
        init.parent
        for top in mapping.values()
        for init in (ROOT / top).rglob("__init__.py")
        if "suite_sample" not in init.parts and "__pycache__" not in init.parts
    }
    unlisted = sorted(str(f.relative_to(ROOT)) for f in on_disk - folders)
    assert not unlisted, f"package folders missing from [tool.setuptools] packages: {unlisted}"
