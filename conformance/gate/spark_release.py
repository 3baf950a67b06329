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
from ..jvm.spark_at_release import SPARK_VERSION_ENV, check_release
from ..spark.at_release import ReleaseError, installed_pyspark, make_venv, prepare
from .results import ERROR_EXIT, USAGE_EXIT

RELEASE_RUN_TIMEOUT_S: Final = 4 * 3600
"""Longest a command at another Spark release may take in its venv (the whole suite at the pipeline level included)."""


def say(line: str) -> None:
    """Progress of the downloads and of Maven, as it comes."""
    print(line, flush=True)


def at_spark_release(command: str, release: str | None, argv: Sequence[str]) -> int | None:
    """Make ``release`` (else ``$KCONFORM_SPARK_VERSION``; neither: the pinned one, nothing to do) ready for
    ``kconform <command> argv``. ``None`` when this interpreter can go on judging it; otherwise the exit code:
    the same command's in the release's venv, ERROR when the release cannot be made ready, usage on a bad one."""
    release = release or os.environ.get(SPARK_VERSION_ENV)
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
