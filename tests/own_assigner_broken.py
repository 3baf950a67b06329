"""A connector with its own assigner whose restore is unsafe; protocol level only, so a core install (no PySpark)
loads it too (``make compat`` runs tests/test_safety_apart.py)."""

from __future__ import annotations

from dataclasses import replace

from kconform.conformance.mutants import protocol
from kconform.fixtures.adapters.own_assigner import modulo_owner

OWN_ASSIGNER_RESTORED_TWICE = replace(
    protocol.restored_on_two_subtasks, name="modulo-restored-twice", owner=modulo_owner
)
"""Its own assigner (expected not to be Flink's on RESTORE-002), and a restore that also hands one subtask's
partitions to another: unsafe, however its fidelity deviations are listed."""
