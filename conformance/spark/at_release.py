"""A Spark release other than the pinned one, made ready for ``kconform run --spark VERSION``.

A run imports one pyspark, so a release runs in a child interpreter: a venv per release
(``<releases folder>/pyspark-<release>/``, ``kconform.conformance.paths.releases_dir``) that holds only that
release's pyspark and py4j, installed with pip, and reaches everything else (kconform itself, confluent-kafka,
pytest, ...) through a ``.pth`` line that adds this interpreter's site-packages after its own. Its Kafka
connector comes from ``kconform.conformance.jvm.spark_at_release``. Both are made once and reused: the venv
is complete only once its stamp is written.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Final

from ..jvm import CHECKOUT, in_checkout
from ..jvm.setup import run_streaming
from ..jvm.spark_at_release import SPARK_VERSION_ENV, check_release, resolve_at_release
from ..paths import releases_dir

Say = Callable[[str], None]
PIP_TIMEOUT_S: Final = 1800
"""pyspark is a 300-450 MB download; half an hour bounds it on a slow link."""
STAMP: Final = ".kconform-release"
"""The venv's stamp: the release and the site-packages its ``.pth`` reaches."""
PTH: Final = "kconform-parent.pth"
PIP_PROGRESS: Final = ("Collecting", "Downloading", "Using cached", "Installing", "Successfully")
LOG_TAIL: Final = 20


class ReleaseError(Exception):
    """A release's venv cannot be made; the message names the fix."""


def installed_pyspark() -> str | None:
    """The pyspark this interpreter imports (read without importing it), or ``None``."""
    try:
        return version("pyspark")
    except PackageNotFoundError:
        return None


def parent_site_dirs() -> list[str]:
    """This interpreter's site-packages, which the release venv reaches after its own."""
    paths = sysconfig.get_paths()
    return list(dict.fromkeys((paths["purelib"], paths["platlib"])))


def pth_text(site_dirs: Sequence[str]) -> str:
    """A ``.pth`` whose line runs ``site.addsitedir``, so the parent's own ``.pth`` files (an editable kconform)
    count too; it comes after the venv's site-packages, so the venv's pyspark and py4j win."""
    return "import site; " + "; ".join(f"site.addsitedir({d!r})" for d in site_dirs) + "\n"


def stamp_text(release: str, site_dirs: Sequence[str]) -> str:
    return json.dumps({"pyspark": release, "parent": list(site_dirs)}) + "\n"


def venv_python(venv: Path) -> Path:
    return venv / "bin" / "python"


def run_bounded(command: Sequence[str], say: Say, what: str) -> None:
    """Run ``command``, passing pip's progress lines on; killed after ``PIP_TIMEOUT_S``; ``ReleaseError`` on failure."""
    tail: deque[str] = deque(maxlen=LOG_TAIL)

    def on_line(line: str) -> None:
        tail.append(line.rstrip())
        if line.lstrip().startswith(PIP_PROGRESS):
            say(f"  {line.strip()}")

    code = run_streaming(command, on_line, PIP_TIMEOUT_S)
    if code != 0:
        why = f"killed after {PIP_TIMEOUT_S} s" if code < 0 else f"exit {code}"
        raise ReleaseError(f"{what} failed ({why}); its last lines:\n" + "\n".join(tail))


def make_venv(release: str, say: Say) -> Path:
    """The venv of pyspark ``release`` (its python), made with pip unless its stamp says it is there."""
    root = releases_dir(os.environ, CHECKOUT if in_checkout() else None, Path.home())
    venv = root / f"pyspark-{check_release(release)}"
    site_dirs = parent_site_dirs()
    stamp = venv / STAMP
    if stamp.is_file() and stamp.read_text() == stamp_text(release, site_dirs) and venv_python(venv).exists():
        return venv_python(venv)
    say(f"kconform run --spark {release}: making {venv} (pyspark {release} from the package index, pip's cache)")
    shutil.rmtree(venv, ignore_errors=True)
    run_bounded([sys.executable, "-m", "venv", "--without-pip", str(venv)], say, f"python -m venv {venv}")
    install = [sys.executable, "-m", "pip", "--python", str(venv_python(venv)), "install", "--no-input"]
    try:
        run_bounded([*install, f"pyspark=={release}"], say, f"pip install pyspark=={release}")
    except ReleaseError as error:
        shutil.rmtree(venv, ignore_errors=True)
        raise ReleaseError(
            f"{error}\nfix what pip names (is {release} a pyspark release? `pip index versions pyspark`; can pip "
            f"reach its index? `pip config list`), then run `kconform run --spark {release}` again"
        ) from error
    purelib = subprocess.run(
        [str(venv_python(venv)), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True, text=True, timeout=60, check=True,
    ).stdout.strip()  # fmt: skip
    (Path(purelib) / PTH).write_text(pth_text(site_dirs))
    seen = subprocess.run(
        [str(venv_python(venv)), "-c", "import importlib.metadata as m, kconform; print(m.version('pyspark'))"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    if seen.stdout.strip() != release:  # else the run would start its venv again and again
        raise ReleaseError(f"{venv} imports pyspark {seen.stdout.strip() or seen.stderr.strip()[-300:]}, not {release}")
    stamp.write_text(stamp_text(release, site_dirs))
    return venv_python(venv)


def prepare(release: str, say: Say) -> Mapping[str, str]:
    """Make ``release`` ready (its Kafka connector, and its venv unless this interpreter has its pyspark); the
    environment that makes ``kconform run`` judge it."""
    resolve_at_release(release, os.environ, say)
    if installed_pyspark() != release:
        make_venv(release, say)
    return {SPARK_VERSION_ENV: release}
