"""``kconform site``: the spec, the guides and the requirement table as a static site (MkDocs).

MkDocs reads one folder, so ``prepare`` copies ``README.md``, ``spec/`` and ``docs/`` into
``build/site-src`` in the repository's own layout, together with every repository file those pages
link to (a checker, a test, a TLA+ model): a relative link then works the same on GitHub and on the
site. ``main`` builds it with ``mkdocs build --strict`` (``mkdocs.yml``): a broken link or anchor,
or a page missing from the nav, fails the build.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

from .requirements import REPO_ROOT

PAGES = ("README.md", "spec", "docs")
SOURCE_ENV = "KCONFORM_SITE_SRC"
"""Read by ``mkdocs.yml``'s ``docs_dir``."""
LINK = re.compile(r"\]\((?P<target>[^)#\s]+)(?:#[^)\s]*)?\)")
USAGE_EXIT = 2


def linked_files(page: Path, site: Path) -> list[Path]:
    """The relative link targets of ``page`` (a file under ``site``), as paths relative to ``site``."""
    found = []
    for match in LINK.finditer(page.read_text(encoding="utf-8")):
        target = match.group("target")
        if "://" in target or target.startswith("mailto:"):
            continue
        resolved = Path(os.path.normpath(page.parent.relative_to(site) / target))
        if not resolved.as_posix().startswith("../"):
            found.append(resolved)
    return found


def prepare(out: Path, root: Path = REPO_ROOT) -> list[Path]:
    """Fill ``out`` (emptied first) with the pages and the repository files they link to; returns the latter."""
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    for name in PAGES:
        source = root / name
        if source.is_dir():
            shutil.copytree(source, out / name)
        else:
            shutil.copy2(source, out / name)
    copied = []
    for page in sorted(out.rglob("*.md")):
        for target in linked_files(page, out):
            if not (out / target).exists() and (root / target).is_file():
                (out / target).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(root / target, out / target)
                copied.append(target)
    return sorted(set(copied))


def mkdocs_installed() -> bool:
    return importlib.util.find_spec("mkdocs") is not None


def build(source: Path, out: Path) -> int:
    """``mkdocs build --strict`` of the prepared ``source`` into ``out``; MkDocs' exit code."""
    command = [sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file", str(REPO_ROOT / "mkdocs.yml")]
    command += ["--site-dir", str(out.resolve())]
    env = {**os.environ, SOURCE_ENV: str(source.resolve())}
    return subprocess.run(command, env=env, check=False).returncode


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="kconform site",
        description="build the spec, the docs and the requirement table as a static site (mkdocs build --strict: "
        "a broken link fails it)",
    )
    parser.add_argument(
        "--source",
        type=Path,
        default=REPO_ROOT / "build" / "site-src",
        help="where the pages are gathered before the build (default %(default)s)",
    )
    parser.add_argument(
        "--out", type=Path, default=REPO_ROOT / "build" / "site", help="where the site is written (default %(default)s)"
    )
    return parser


def main(argv: Sequence[str]) -> int:
    """``kconform site [--source DIR] [--out DIR]``: prepare the pages, then ``mkdocs build --strict``."""
    args = build_parser().parse_args(argv)
    if not mkdocs_installed():
        print("kconform site: error: MkDocs is not installed: pip install -e .[dev]", file=sys.stderr)
        return USAGE_EXIT
    prepare(args.source)
    code = build(args.source, args.out)
    if code == 0:
        print(f"kconform site: wrote {args.out / 'index.html'}")
    return code
