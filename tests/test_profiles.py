"""Each adapter keeps its own Hypothesis examples, so one adapter's failures never replay against another."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from kconform.conformance.gate.profiles import examples_dir


def test_examples_dir_is_one_folder_per_adapter_spec() -> None:
    first, second = (
        examples_dir("kconform.conformance.mutants.protocol:python_mod_no_mask"),
        examples_dir("my.pkg:ADAPTER"),
    )
    assert first != second
    assert first.parent == second.parent == Path(".hypothesis") / "adapters"
    assert "/" not in first.name and ":" not in first.name


def test_a_failing_adapter_saves_its_examples_in_its_own_folder(tmp_path: Path) -> None:
    def run(adapter: str) -> None:
        subprocess.run(
            [sys.executable, "-m", "pytest", "--pyargs", "kconform.conformance.suite", "-k", "ASSIGN_004_and_006", "-q",
             "-p", "no:cacheprovider", "--kconform-adapter", adapter],
            cwd=tmp_path, capture_output=True, timeout=300, check=False,
        )  # fmt: skip

    run("kconform.conformance.mutants.protocol:python_mod_no_mask")
    run("kconform.reference_impl.adapter:ADAPTER")
    saved = sorted(p.name for p in (tmp_path / ".hypothesis" / "adapters").iterdir())
    assert saved == [examples_dir("kconform.conformance.mutants.protocol:python_mod_no_mask").name], saved
    assert not (tmp_path / ".hypothesis" / "examples").exists(), "an example was saved in the shared database"
