"""Every mutant of the catalogue is killed by the suite, on the requirement its bug violates.

This is the proof that the invariants can fail: a suite that passes every mutant checks
nothing. Each mutant runs only the suite tests of its requirement (a subset of the full run,
so the full run kills it too), with a fixed Hypothesis seed so CI is reproducible.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from conformance.mutants import MUTANTS, Mutant


@pytest.mark.parametrize("mutant", MUTANTS, ids=lambda m: m.name)
def test_required_mutant_is_killed_on_its_requirement(mutant: Mutant) -> None:
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
            "--kconform-requirement",
            mutant.kills_on,
            "--hypothesis-seed",
            "0",
        ],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    output = run.stdout + run.stderr
    assert run.returncode == 1, f"mutant {mutant.name} ({mutant.bug}) survived:\n{output[-3000:]}"
    assert f"{mutant.kills_on} " in output, (
        f"mutant {mutant.name} failed, but not on {mutant.kills_on}:\n{output[-3000:]}"
    )
