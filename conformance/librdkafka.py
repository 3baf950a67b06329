"""The librdkafka this interpreter's confluent-kafka wraps, however its release reports it: every reader of
``confluent_kafka.libversion()`` (the client workload's driver, the report's ``judged:`` line, the bank's release
check) reads it here. No imports beyond the standard library at module level: the bank's release check imports
this module in a child interpreter of the release it installed."""

from __future__ import annotations

import re


def libversion() -> tuple[str, tuple[int, ...]]:
    """librdkafka's version as text and as (major, minor, revision). ``libversion()`` gives the pair (text, hex
    number whose top three bytes are those), except in confluent-kafka 2.12.0, which gives the text alone (its
    2.12.1 changelog: "``libversion()`` now returns the string/integer tuple" again): its first three numbers then."""
    import confluent_kafka as ck

    found = ck.libversion()
    if isinstance(found, str):
        return found, tuple(int(n) for n in re.findall(r"\d+", found)[:3])
    number = int(found[1])
    return found[0], (number >> 24 & 0xFF, number >> 16 & 0xFF, number >> 8 & 0xFF)
