"""Known deviations of an implementation (``kconform run --expectations FILE``).

A team that knows its connector breaks a requirement can still gate CI on everything else: each
deviation names the requirement, why, and the bug that tracks it. A listed failure is reported
as XFAIL when every requirement the failure violated is listed; a listed test that passes is XPASS and
fails the run, so a fixed bug must be removed from the file and the file never hides more than it says.

    [[deviation]]
    requirement = "RESTORE-005"                  # required
    test = "should_RESTORE_005_unsubscribed"     # optional: a substring of the test's display name
    reason = "we keep state of removed topics"   # required
    link = "https://example.org/issues/12"       # required
    kind = "position-past-end"                   # optional: this kind of violation only (see below)

A deviation with a ``kind`` tolerates that kind of violation of its requirement only, inside the test: the test
does not stop at it and goes on judging (a drawn workload keeps drawing, so a known bug that shows on almost every
draw no longer hides the others); any other violation still fails it. A test whose only violations were
tolerated is XFAIL, its other ids verified; one that met none is not XPASS, since a drawn workload may simply not
have reached it (the run's notes say it matched nothing).
"""

from __future__ import annotations

import difflib
import re
import tomllib
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from pathlib import Path

KEYS = {"requirement", "test", "reason", "link", "kind"}
KIND = re.compile(r"[a-z][a-z0-9]*(?:-[a-z0-9]+)*")
"""A violation kind as the checkers name them (``lost-write``, ``position-past-end``)."""


@dataclass(frozen=True)
class Deviation:
    requirement: str
    reason: str
    link: str
    test: str | None = None
    kind: str | None = None
    """Only this kind of violation of ``requirement``, tolerated inside the test (``tolerates``)."""

    def covers(self, display_name: str, ids: Collection[str]) -> bool:
        """Whether a whole test's failure or pass on ``ids`` is this deviation's (never for a kind's deviation,
        which acts on each violation inside the test)."""
        return self.kind is None and self.requirement in ids and (self.test is None or self.test in display_name)

    def tolerates(self, display_name: str, requirement: str, kind: str) -> bool:
        """Whether a violation ``requirement kind`` in test ``display_name`` is this deviation's kind."""
        return (
            self.kind == kind and self.requirement == requirement and (self.test is None or self.test in display_name)
        )


def load_expectations(path: Path, known_ids: Collection[str] | None = None) -> list[Deviation]:
    """Parse and validate ``path``; every problem is a ``ValueError`` naming the file and the entry."""
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ValueError(f"--expectations {path}: cannot read: {exc.strerror or exc}") from exc
    except tomllib.TOMLDecodeError as exc:
        raise ValueError(f"--expectations {path}: not valid TOML: {exc}") from exc
    extra = set(data) - {"deviation"}
    if extra:
        raise ValueError(f"--expectations {path}: unknown top-level keys {sorted(extra)}; use [[deviation]] tables")
    entries = data.get("deviation", [])
    if not isinstance(entries, list):
        raise ValueError(f"--expectations {path}: 'deviation' must be an array of tables ([[deviation]])")
    where = f"--expectations {path}: deviation #"
    return [_deviation(entry, f"{where}{n}", known_ids) for n, entry in enumerate(entries, 1)]


def _deviation(entry: object, where: str, known_ids: Collection[str] | None) -> Deviation:
    if not isinstance(entry, dict):
        raise ValueError(f"{where}: must be a table")
    unknown = set(entry) - KEYS
    if unknown:
        raise ValueError(f"{where}: unknown keys {sorted(unknown)} (allowed: {', '.join(sorted(KEYS))})")
    for key in ("requirement", "reason", "link"):
        value = entry.get(key)
        if not isinstance(value, str) or not value.strip():
            raise ValueError(
                f"{where}: '{key}' is required (a non-empty string): a deviation says why and links its bug"
            )
    test = entry.get("test")
    if test is not None and (not isinstance(test, str) or not test):
        raise ValueError(f"{where}: 'test' must be a non-empty string (a substring of the test's display name)")
    if not entry["link"].startswith(("http://", "https://")):
        raise ValueError(f"{where}: 'link' must be the URL of the bug, got {entry['link']!r}")
    if known_ids is not None and entry["requirement"] not in known_ids:
        raise ValueError(f"{where}: {entry['requirement']!r} is not a requirement id of the spec")
    kind = entry.get("kind")
    if kind is not None and (not isinstance(kind, str) or not KIND.fullmatch(kind)):
        raise ValueError(
            f"{where}: 'kind' must be a violation kind as reports name it (lowercase words joined by '-', such as "
            f"'lost-write'), got {kind!r}"
        )
    return Deviation(entry["requirement"], entry["reason"], entry["link"], test, kind)


def unmatched_tests(deviations: Sequence[Deviation], names: Collection[str]) -> list[str]:
    """A line per deviation whose ``test`` is part of no test's display name among ``names`` (every test the suite
    collected, selected or not), with the closest names: after a test is renamed, a deviation naming its old name
    would tolerate nothing, and the failure it was written for would read as new."""
    wrong = []
    for n, d in enumerate(deviations, 1):
        if d.test is None or any(d.test in name for name in names):
            continue
        close = difflib.get_close_matches(d.test, sorted(names), n=3, cutoff=0.6)
        hint = f"; did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
        wrong.append(
            f"deviation #{n} ({d.requirement}): test {d.test!r} is part of no test's name in this suite, so it would "
            f"tolerate nothing; name the test as the report shows it{hint}"
        )
    return wrong


def find_deviation(deviations: Sequence[Deviation], display_name: str, ids: Collection[str]) -> Deviation | None:
    """The first deviation covering a test, if any."""
    return next((d for d in deviations if d.covers(display_name, ids)), None)


def excusing_deviation(deviations: Sequence[Deviation], display_name: str, violated: Sequence[str]) -> Deviation | None:
    """The deviation that makes a failure XFAIL: only when each id the failure violated is listed for this test,
    so a listed deviation (a fidelity id, say) never hides another violation found with it (a safety id)."""
    listed = [find_deviation(deviations, display_name, [i]) for i in violated]
    return listed[0] if listed and all(listed) else None
