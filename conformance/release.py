"""Which kconform this is: the installed distribution's version, for ``kconform --version`` and every report."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version


def kconform_version() -> str:
    """The installed distribution's version; ``unknown`` for a source tree that was never installed."""
    try:
        return version("kconform")
    except PackageNotFoundError:
        return "unknown"
