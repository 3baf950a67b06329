"""The core install's promise (``test_core_install``, on the wheel, in ``make test``), kept in seconds.

Without the pipeline extra (the Kafka client, PySpark) every verb still explains itself: a module-level import of
either on a verb's import path breaks the core install, and this catches it before the slow wheel test does.
"""

from __future__ import annotations

import subprocess
import sys

from kconform.conformance.cli import KCONFORM

BLOCK_EXTRAS = """
import sys
class Absent:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in {extras}:
            raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
        return None
sys.meta_path.insert(0, Absent())
from kconform.conformance.cli import main
raise SystemExit(main([{verb!r}, "--help"]))
"""
"""A Python that cannot import the pipeline extra's modules, then ``kconform VERB --help``."""


def test_every_verb_builds_its_parser_without_the_pipeline_extra() -> None:
    extras = sorted({"confluent_kafka", "pyspark"})
    for verb in KCONFORM.verbs:
        shown = subprocess.run(
            [sys.executable, "-c", BLOCK_EXTRAS.format(extras=extras, verb=verb)],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert shown.returncode == 0, f"kconform {verb} --help without the pipeline extra:\n{shown.stderr[-2000:]}"
        assert shown.stdout.startswith("usage: kconform"), shown.stdout
