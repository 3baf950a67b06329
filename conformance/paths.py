"""Where kconform's own files are: one answer for the modules that read spec/, jvm/ or a checkout's files."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Final

PACKAGE_ROOT: Final = Path(__file__).resolve().parents[1]
"""The folder that holds kconform's package folders (conformance/, reference_impl/, spec/, fixtures/, jvm/):
a source checkout's root, where pyproject's package-dir maps each folder to ``kconform.<folder>``, or the
installed ``kconform/`` of a wheel, which holds the same folders but none of the checkout's own files
(pyproject.toml, docs/, tests/, build/)."""


def checkout_root(root: Path = PACKAGE_ROOT) -> Path | None:
    """``root`` when it is a source checkout (pyproject.toml and jvm/pom.xml beside the package folders),
    ``None`` when it is an installed wheel's ``kconform/``."""
    return root if (root / "pyproject.toml").is_file() and (root / "jvm" / "pom.xml").is_file() else None


RELEASES_DIR_ENV: Final = "KCONFORM_RELEASES_DIR"
"""Where releases installed from PyPI are kept (confluent-kafka's for the bug bank, pyspark's for ``--spark``),
before any default."""


def releases_dir(env: Mapping[str, str], checkout: Path | None, home: Path) -> Path:
    """``$KCONFORM_RELEASES_DIR``, else a checkout's ``.releases/`` (git-ignored), else
    ``$XDG_CACHE_HOME/kconform/releases``."""
    if explicit := env.get(RELEASES_DIR_ENV):
        return Path(explicit)
    if checkout is not None:
        return checkout / ".releases"
    return Path(env.get("XDG_CACHE_HOME") or home / ".cache") / "kconform" / "releases"
