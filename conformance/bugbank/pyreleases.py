"""confluent-kafka at a chosen release, so that the bug bank puts a librdkafka release under the suite by its version.

The release's wheel (its librdkafka inside) is installed once with pip ``--target`` into
``<releases folder>/confluent-kafka-<release>/`` and stamped; a later call finds the stamp and
installs nothing. A child ``kconform run`` whose ``PYTHONPATH`` starts with that folder imports the
release instead of the installed confluent-kafka and keeps everything else of this interpreter,
kconform included; Spark's Python workers inherit the path, so the reference source reads with it
too. Pure helpers say where and how; ``install_release`` is the thin shell that runs pip, bounded.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Final

from ..jvm import in_checkout
from ..paths import PACKAGE_ROOT, RELEASES_DIR_ENV, releases_dir

Say = Callable[[str], None]

DISTRIBUTION: Final = "confluent-kafka"
RELEASE: Final = re.compile(r"\d+(?:\.\d+)+")
"""A PyPI release of confluent-kafka (2.13.0); anything else could name a path outside the releases folder."""
STAMP: Final = ".kconform-installed"
PIP_TIMEOUT_S: Final = 600
"""Longest one release's download and install may take."""
CHECK_TIMEOUT_S: Final = 60


class ReleaseInstallError(ValueError):
    """A release that could not be made ready; the message names the release and the fix."""


def release_folder(root: Path, release: str) -> Path:
    """The folder of ``release`` under ``root``, or ``ReleaseInstallError`` for what is not a release version."""
    if not RELEASE.fullmatch(release):
        raise ReleaseInstallError(f"{release!r} is not a {DISTRIBUTION} release version (such as 2.13.2)")
    return root / f"{DISTRIBUTION}-{release}"


def pip_command(python: str, release: str, target: Path) -> list[str]:
    """pip installing the release's wheel alone (no build from source, no dependencies) into ``target``."""
    return [
        *(python, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", "--no-deps"),
        *("--only-binary", ":all:", "--target", str(target), f"{DISTRIBUTION}=={release}"),
    ]


def child_env(folder: Path, inherited: Mapping[str, str]) -> dict[str, str]:
    """The environment entries that make a child Python import confluent-kafka from ``folder`` first."""
    rest = inherited.get("PYTHONPATH")
    return {"PYTHONPATH": os.pathsep.join([str(folder), *([rest] if rest else [])])}


PIP_FIX: Final = (
    "the package index (pip's own settings, e.g. PIP_INDEX_URL, choose it) must be reachable and serve a wheel of "
    f"{DISTRIBUTION} for Python {sys.version_info.major}.{sys.version_info.minor}; or point ${RELEASES_DIR_ENV} at a "
    "folder where the release is installed"
)
VERSION_CHECK: Final = (
    "import confluent_kafka as ck; from kconform.conformance.librdkafka import libversion; "
    "print(ck.__version__, libversion()[0])"
)
"""What the installed release says it is, and the librdkafka it wraps (``librdkafka.libversion``)."""


def install_release(release: str, say: Say) -> Mapping[str, str]:
    """Install ``release`` unless its stamped folder is there; the child run's environment that imports it.

    The wheel goes into a staging folder that is renamed into place only once pip succeeded, so an
    interrupted install is never taken for a finished one.
    """
    root = releases_dir(os.environ, PACKAGE_ROOT if in_checkout() else None, Path.home())
    folder = release_folder(root, release)
    env = child_env(folder, os.environ)
    if not (folder / STAMP).is_file():
        staging = folder.with_name(f"{folder.name}.staging-{os.getpid()}")
        shutil.rmtree(staging, ignore_errors=True)
        say(f"installing {DISTRIBUTION}=={release} (its wheel, librdkafka inside) with pip into {folder}")
        try:
            _run(
                pip_command(sys.executable, release, staging),
                f"pip install {DISTRIBUTION}=={release}",
                PIP_TIMEOUT_S,
                PIP_FIX,
            )
            (staging / STAMP).write_text(f"{DISTRIBUTION}=={release}\n")
            shutil.rmtree(folder, ignore_errors=True)
            staging.rename(folder)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    check = [sys.executable, "-c", VERSION_CHECK]
    fix = f"delete {folder} and run again"
    versions = _run(check, f"import {DISTRIBUTION} {release}", CHECK_TIMEOUT_S, fix, os.environ | env).split()
    if versions[:1] != [release]:
        raise ReleaseInstallError(f"{folder} holds {DISTRIBUTION} {versions}, not {release}: {fix}")
    say(f"{DISTRIBUTION} {release} ready (librdkafka {versions[-1]}) in {folder}")
    return env


def _run(command: list[str], what: str, timeout_s: int, fix: str, env: Mapping[str, str] | None = None) -> str:
    """``command``'s output; a ``ReleaseInstallError`` naming ``what`` and ``fix`` when it fails or hangs."""
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout_s, env=env)
    except subprocess.TimeoutExpired as error:
        raise ReleaseInstallError(f"{what}: no answer within {timeout_s} s: {fix}") from error
    if done.returncode != 0:
        tail = " ".join((done.stderr or done.stdout).strip().splitlines()[-3:])
        raise ReleaseInstallError(f"{what} failed ({tail}): {fix}")
    return done.stdout
