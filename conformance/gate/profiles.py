"""Hypothesis profiles shared by the project's tests, the conformance suite and the pytest plugin.

Deadlines are off in every profile: speed is measured by ``make bench``, never by a timed test,
and a loaded 2-core CI machine must not turn a slow example into a failure. Every profile
prints the ``@reproduce_failure`` blob so that any failure can be replayed exactly.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Final

from hypothesis import HealthCheck, settings
from hypothesis.database import DirectoryBasedExampleDatabase

PROFILES: Final = {"quick": 25, "default": 100, "thorough": 1000}
"""Profile name -> ``max_examples``."""
PREFIX: Final = "kconform-"
"""Hypothesis knows them as ``kconform-quick`` ...: ``default`` is Hypothesis's own, and a user's may be ``quick``."""

DEFAULT_PROFILE: Final = "default"
PROFILE_ENV: Final = "KCONFORM_PROFILE"


WORKLOAD_DRAWS_ENV: Final = "KCONFORM_WORKLOAD_DRAWS"
"""``kconform run --workload-draws``: how many schedules each drawn workload draws."""
WORKLOAD_SHARE: Final = 20
"""A drawn schedule runs real clients for seconds: one is drawn per this many examples of the profile."""


def workload_draws(max_examples: int) -> int:
    """Schedules a drawn workload draws: ``$KCONFORM_WORKLOAD_DRAWS`` when set, else one per ``WORKLOAD_SHARE``
    examples of the loaded profile (``max_examples``), at least two (5 at default, 50 at thorough)."""
    chosen = os.environ.get(WORKLOAD_DRAWS_ENV, "").strip()
    if chosen:
        if not chosen.isdigit() or int(chosen) < 1:
            raise ValueError(f"${WORKLOAD_DRAWS_ENV}={chosen!r} is not a positive whole number of schedules")
        return int(chosen)
    return max(2, max_examples // WORKLOAD_SHARE)


def examples_dir(adapter: str) -> Path:
    """Where the failing examples of ``adapter`` (``module:attr``) are kept: one folder per adapter, so
    one adapter's counterexamples never replay against the next adapter judged from the same place."""
    return Path(".hypothesis") / "adapters" / re.sub(r"[^A-Za-z0-9_.-]", "_", adapter)


def hypothesis_profile(name: str) -> str:
    """The name Hypothesis knows kconform's profile ``name`` by."""
    return PREFIX + name


def register_profiles(database_dir: Path | None = None) -> None:
    """Register ``kconform-quick``, ``kconform-default`` and ``kconform-thorough``, sharing one example
    database; none is loaded here."""
    database = DirectoryBasedExampleDatabase(str(database_dir or Path(".hypothesis") / "examples"))
    for name, examples in PROFILES.items():
        settings.register_profile(
            hypothesis_profile(name),
            max_examples=examples,
            deadline=None,
            print_blob=True,
            database=database,
            suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
        )


def profile_from_env() -> str:
    """The profile named by ``KCONFORM_PROFILE`` (set by ``make ... PROFILE=...``), else the default."""
    name = os.environ.get(PROFILE_ENV, DEFAULT_PROFILE)
    if name not in PROFILES:
        raise ValueError(f"{PROFILE_ENV}={name!r} is not a profile; choose one of {', '.join(PROFILES)}")
    return name
