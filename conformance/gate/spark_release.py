"""``--spark VERSION`` of ``kconform run`` and ``kconform verdicts``: a command judges another Spark release by
making it ready (``kconform.conformance.spark.at_release``) and running itself again in that release's venv,
since one interpreter imports one pyspark."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Sequence
from typing import Final

from ..jvm import JvmArtifactsMissing
from ..jvm.setup import SetupError
from ..jvm.spark_at_release import RELEASE, SPARK_VERSION_ENV, check_release, pinned
from ..spark.at_release import ReleaseError, installed_pyspark, make_venv, prepare
from .results import ERROR_EXIT, USAGE_EXIT

RELEASE_RUN_TIMEOUT_S: Final = 4 * 3600
"""Longest a command at another Spark release may take in its venv (the whole suite at the pipeline level included)."""


def say(line: str) -> None:
    """Progress of the downloads and of Maven, as it comes."""
    print(line, flush=True)


def installed_other_line(command: str) -> str | None:
    """The installed pyspark's release when it is of another line than the pinned one (4.1.1 beside a pinned 4.2.0):
    its own Kafka connector jars are then the ones to judge with, since the pinned line's fail on it
    (``NoSuchMethodError``). ``None`` for the pinned line (its patch releases share the pinned jars), no pyspark,
    or a version that names no release."""
    installed = installed_pyspark()
    if installed is None or not RELEASE.fullmatch(installed):
        return None
    if installed.rsplit(".", 1)[0] == pinned().rsplit(".", 1)[0]:
        return None
    say(
        f"kconform {command}: the installed pyspark is {installed}, of another line than the pinned {pinned()}: "
        f"judging with Spark {installed}'s Kafka connector (resolved on demand and cached); --spark VERSION judges "
        "another release"
    )
    return installed


def at_spark_release(command: str, release: str | None, argv: Sequence[str], spark: bool = True) -> int | None:
    """Make ``release`` (else ``$KCONFORM_SPARK_VERSION``; else, for a command that runs Spark (``spark``), the
    installed pyspark's when it is of another line than the pinned one; else nothing to do) ready for
    ``kconform <command> argv``. ``None`` when this interpreter can go on judging it; otherwise the exit code:
    the same command's in the release's venv, ERROR when the release cannot be made ready, usage on a bad one."""
    release = release or os.environ.get(SPARK_VERSION_ENV) or (installed_other_line(command) if spark else None)
    if not release:
        return None
    try:
        os.environ.update(prepare(check_release(release), say))
    except ValueError as exc:
        print(f"kconform {command}: error: {exc}", file=sys.stderr)
        return USAGE_EXIT
    except (SetupError, ReleaseError, JvmArtifactsMissing) as exc:
        print(
            f"kconform {command}: could not check (ERROR): Spark {release} could not be made ready: {exc}",
            file=sys.stderr,
        )
        return ERROR_EXIT
    if installed_pyspark() == release:
        return None
    python = make_venv(release, say)
    print(f"kconform {command}: Spark {release} runs in {python}", flush=True)
    try:
        code = subprocess.run(
            [str(python), "-m", "kconform.conformance.cli", command, *argv],
            env=os.environ | {SPARK_VERSION_ENV: release},
            timeout=RELEASE_RUN_TIMEOUT_S,
        ).returncode
    except subprocess.TimeoutExpired:
        print(
            f"kconform {command}: ERROR: the run at Spark {release} took longer than {RELEASE_RUN_TIMEOUT_S} s",
            file=sys.stderr,
        )
        return ERROR_EXIT
    if code < 0:  # the run there died of a signal: die of it too, so that a supervisor (gate.supervisor) sees it
        signal.signal(-code, signal.SIG_DFL)
        os.kill(os.getpid(), -code)
    return code
