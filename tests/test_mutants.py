"""Every mutant of the catalogue is killed by the suite, on a requirement its bug violates and no other.

This is the proof that the invariants can fail: a suite that passes every mutant checks
nothing. Each mutant runs only the suite tests of its requirements (a subset of the full run,
so the full run kills it too), with a fixed Hypothesis seed at the default profile (whatever
PROFILE says), so CI is reproducible.
"""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from conformance.mutants import MUTANTS, Mutant

VIOLATION_LINE = re.compile(r"^E\s+([A-Z]+-\d{3}) [a-z-]+:", re.MULTILINE)


@pytest.mark.parametrize("mutant", MUTANTS, ids=lambda m: m.name)
def test_required_mutant_is_killed_on_its_requirement(mutant: Mutant) -> None:
    selected = [arg for rid in sorted(mutant.kills_on) for arg in ("--kconform-requirement", rid)]
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "--pyargs",
            "conformance.suite",
            "-q",
            "-p",
            "no:cacheprovider",
            "--kconform-adapter",
            f"conformance.mutants:{mutant.name}",
            "--hypothesis-seed",
            "0",
            "--hypothesis-profile",
            "default",
            *selected,
        ],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    output = run.stdout + run.stderr
    assert run.returncode == 1, f"mutant {mutant.name} ({mutant.bug}) survived:\n{output[-3000:]}"
    named = set(VIOLATION_LINE.findall(output))
    assert named, f"mutant {mutant.name} failed without a named violation:\n{output[-3000:]}"
    assert named <= mutant.kills_on, (
        f"mutant {mutant.name} blamed on {sorted(named - mutant.kills_on)}:\n{output[-3000:]}"
    )
