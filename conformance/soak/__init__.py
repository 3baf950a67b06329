"""``kconform soak``: seeded fault schedules over a multi-batch exactly-once query on a real broker.

``schedule`` draws the faults (pure, no I/O); ``faults`` applies them to the broker, the topics and
a driver's checkpoint; ``runner`` runs one schedule end to end and judges its history; ``command``
is the verb (progress, summary table, saved failures). Only ``main`` lives here, importing the
verb lazily, so ``kconform.conformance.soak.schedule`` imports nothing heavy and nothing circular.
"""

from __future__ import annotations


def main(argv: list[str]) -> int:
    """``kconform soak``'s entry point (``kconform.conformance.cli`` delegates here)."""
    from .command import main as soak_main

    return soak_main(argv)
