"""The bug bank's catalogue as data: one ``[[bug]]`` table per real bug (``fixtures/bugbank.toml``).

Pure: ``parse_catalogue`` reads TOML text and checks every entry against the components the bank
knows and the requirement ids of the spec with their classes, naming the entry in each error, so a catalogue that
loads is one the runner can run (or say why it cannot). An entry's requirements are of one class, which decides
what its buggy release must read: ``safe: no``, ``live: no``, ``Flink-faithful: no`` or ``diagnosable: no``.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Collection, Mapping
from dataclasses import dataclass, replace
from typing import Any, Final

LEVELS: Final = ("protocol", "pipeline", "all")
"""``kconform run --level``'s choices."""
FIX_COMMIT: Final = re.compile(r"[0-9a-f]{40}")
FIX_CHANGE: Final = re.compile(r"https://\S+/pull/\d+")
TEXT_FIELDS: Final = ("id", "link", "component", "buggy", "fixed", "mechanism", "only", "level")
FIELDS: Final = frozenset({*TEXT_FIELDS, "requirements"})
FIX_FIELDS: Final = ("fix_commit", "fix_change")
"""Exactly one: ``fix_commit``, the fix's upstream commit in full, checked with ``git tag --contains`` on the fetched
repository; or ``fix_change``, the pull request of the fix, only where its repository cannot be fetched here (too
large) so its commit cannot be named: the entry's ``mechanism`` then says how the fix was found in the released
artifacts (the same change between the buggy and the fixed release's classes)."""
OPTIONAL: Final = ("could_not_run", "draws", "signature", "tolerate", *FIX_FIELDS)
"""``could_not_run``: a reason the bug cannot be run here (no release runnable on this platform, no scenario of its
component reaches it yet): recorded in the bank rather than dropped, and judged *could not run* without a run.
``draws``: how many schedules a drawn workload draws in each of its runs (``kconform run --workload-draws``), for a
bug the workload reaches in a fraction of its draws; the figure is the evidence of how rare that is.
``signature``: the violations (``"CLIENT-004 position-past-end"``) by which a run shows this bug, for other entries
to tolerate. ``tolerate``: ids of entries whose signatures this entry's runs tolerate (``kconform run
--expectations`` with a deviation per kind): a release of this entry still carries that other bug, which would hide
this one on the buggy release or fail the fixed one (``Bug.tolerated``). A ``[[known]]`` behaviour (no fix) and a
bug of another component are tolerated in both runs; a ``[[bug]]`` of the same component only in the run of a
release older than its fix (``Bug.tolerated_in``), so a bug fixed between this entry's two releases is tolerated on
the buggy one alone and showing on the fixed one is a false alarm. The other bug is judged by its own entry."""
SIGNATURE: Final = re.compile(r"[A-Z]+-\d{3} [a-z][a-z0-9]*(?:-[a-z0-9]+)*")
KNOWN_FIELDS: Final = ("id", "link", "component", "reason")
"""A ``[[known]]`` table: an upstream behaviour that breaks a requirement and that no released fix exists for (so it
cannot be a ``[[bug]]``), with the ``signature`` by which runs show it, for entries whose releases both carry it to
``tolerate``; optionally ``tolerated_in`` (``SUITE_TOLERATED``)."""
SHIPPED: Final = "bugbank.toml"
"""The catalogue in ``kconform.fixtures``."""
RELEASE: Final = re.compile(r"\d+(?:\.\d+)*")


def release_order(release: str) -> tuple[int, ...]:
    """The numbers a release's version starts with (``3.2.0-1.19`` -> ``(3, 2, 0)``, the connector's own part), so
    releases of one component compare as Maven and PyPI order them; ``()`` for a version that starts otherwise."""
    found = RELEASE.match(release)
    return tuple(int(p) for p in found.group(0).split(".")) if found else ()


SUITE_TOLERATED: Final = "tolerated_in"
"""A ``[[known]]`` table's suite tests (substrings of their report names) that drive its component itself, whatever the
adapter (the drawn client workload runs the confluent-kafka this interpreter imports): every ``kconform run``
tolerates the entry's signature there, as ``--expectations`` would (XFAIL naming the entry, the violation shown and
still counted in the verdicts), and nowhere else (``suite_deviations``)."""


class CatalogueError(ValueError):
    """A catalogue entry the bank cannot run as written; the message names the entry and the field."""


@dataclass(frozen=True)
class Bug:
    """One real bug: where it is filed, which releases have it and not, and what of the suite catches it."""

    id: str
    link: str
    component: str
    buggy: str
    """The last release with the bug (a version of the component's artifact)."""
    fixed: str
    """The first release with the fix."""
    fix_commit: str | None
    """The fix's upstream commit in full; ``None`` where only ``fix_change`` names it."""
    fix_change: str | None
    """The fix's pull request, where its commit cannot be named here (``FIX_FIELDS``)."""
    requirements: tuple[str, ...]
    """The requirement ids the bug breaks: the buggy release must fail on one of them."""
    category: str
    mechanism: str
    only: str
    """``kconform run --only``: the part of the suite that reaches the bug (a requirement id or a prefix)."""
    level: str
    could_not_run: str | None = None
    draws: int | None = None
    """``kconform run --workload-draws`` of each run; ``None``: the profile's."""
    signature: tuple[str, ...] = ()
    tolerate: tuple[str, ...] = ()
    tolerated: tuple[tuple[str, str, str, str], ...] = ()
    """``(requirement, kind, bug id, link)`` of each violation kind its runs tolerate, from ``tolerate``."""
    fixed_in: tuple[tuple[str, str], ...] = ()
    """``(bug id, its fixed release)`` of each tolerated ``[[bug]]`` of the same component: tolerated only in the run
    of a release older than that (``tolerated_in``)."""

    def carries(self, other: str, release: str) -> bool:
        """Whether ``release`` of this bug's component may carry the tolerated entry ``other``: always for a
        ``[[known]]`` behaviour or another component's bug, else while ``release`` is older than its fix."""
        fix = dict(self.fixed_in).get(other)
        return fix is None or release_order(release) < release_order(fix)

    def tolerated_in(self, release: str) -> tuple[tuple[str, str, str, str], ...]:
        """The kinds the run of ``release`` tolerates (``tolerate``)."""
        return tuple(t for t in self.tolerated if self.carries(t[2], release))

    def expectations(self, release: str | None = None) -> str:
        """The ``--expectations`` file of the run of ``release`` (default: the fixed one): a deviation per tolerated
        kind, naming the bug it belongs to and why this run tolerates it."""
        release = release or self.fixed
        other = self.buggy if release == self.fixed else self.fixed

        def why(owner: str) -> str:
            if self.carries(owner, other):
                return f"which both releases of {self.id} still carry"
            return (
                f"fixed in {dict(self.fixed_in)[owner]}: {self.id}'s {release} still carries it, its {other} does not"
            )

        return "".join(
            f'[[deviation]]\nrequirement = "{requirement}"\nkind = "{kind}"\n'
            f'reason = "{owner}, catalogued in the bank, {why(owner)}"\n'
            f'link = "{link}"\n'
            for requirement, kind, owner, link in self.tolerated_in(release)
        )


def parse_catalogue(
    text: str, source: str, components: Collection[str], requirement_classes: Mapping[str, str]
) -> list[Bug]:
    """The bugs of a catalogue's TOML ``text`` (``source`` names it in errors), each checked against the spec's
    requirement ids (``requirement_classes``: id -> its class)."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise CatalogueError(f"{source}: not valid TOML: {error}") from error
    tables = {"bug", "known"}
    if set(data) - tables or not all(isinstance(data.get(name, []), list) for name in tables):
        raise CatalogueError(
            f"{source}: a catalogue holds only [[bug]] and [[known]] tables, found {sorted(set(data) - tables)}"
        )
    bugs = [
        _bug(entry, f"{source}: bug #{n + 1}", components, requirement_classes)
        for n, entry in enumerate(data.get("bug", []))
    ]
    known = [
        _known(entry, f"{source}: known #{n + 1}", components, requirement_classes)
        for n, entry in enumerate(data.get("known", []))
    ]
    entries: list[tuple[str, tuple[str, ...], str]] = [(b.id, b.signature, b.link) for b in bugs]
    entries += [(k.id, k.signature, k.link) for k in known]
    seen: set[str] = set()
    for entry_id, _, _ in entries:
        if entry_id in seen:
            raise CatalogueError(f"{source}: bug {entry_id}: listed twice")
        seen.add(entry_id)
    signatures = {entry_id: (signature, link) for entry_id, signature, link in entries if signature}
    for n, bug in enumerate(bugs):
        for other in bug.tolerate:
            if other == bug.id or other not in signatures:
                raise CatalogueError(
                    f"{source}: bug {bug.id}: tolerate names {other!r}, which is not another entry with a signature"
                )
        kinds = [(other, *item.split(" ", 1)) for other in bug.tolerate for item in signatures[other][0]]
        bugs[n] = replace(bug, tolerated=tuple((i, kind, other, signatures[other][1]) for other, i, kind in kinds))
    by_id = {b.id: b for b in bugs}
    for n, bug in enumerate(bugs):
        same = [by_id[o] for o in bug.tolerate if o in by_id and by_id[o].component == bug.component]
        for carried in same:
            if not release_order(bug.buggy) < release_order(carried.fixed):
                raise CatalogueError(
                    f"{source}: bug {bug.id}: tolerates {carried.id}, fixed in {carried.fixed}, which neither of its "
                    f"releases ({bug.buggy}, {bug.fixed}) carries"
                )
        bugs[n] = replace(bug, fixed_in=tuple((o.id, o.fixed) for o in same))
    return bugs


@dataclass(frozen=True)
class Known:
    """An upstream behaviour with no released fix (``[[known]]``): tolerated by entries that name it, never judged."""

    id: str
    link: str
    component: str
    reason: str
    signature: tuple[str, ...]
    tolerated_in: tuple[str, ...] = ()
    """``SUITE_TOLERATED``."""

    def deviations(self) -> list[tuple[str, str, str, str, str]]:
        """``(requirement, kind, suite test, reason, link)`` per signature kind and suite test it is tolerated in
        (``SUITE_TOLERATED``): what ``kconform run`` makes a deviation of."""
        reason = f"{self.id}, catalogued in the bank as a known {self.component} behaviour with no released fix: "
        return [
            (requirement, kind, test, reason + self.reason, self.link)
            for test in self.tolerated_in
            for requirement, kind in (item.split(" ", 1) for item in self.signature)
        ]


def suite_deviations(text: str) -> list[tuple[str, str, str, str, str]]:
    """``Known.deviations`` of every ``[[known]]`` table of the catalogue's TOML ``text`` (``SUITE_TOLERATED``); the
    bank's own load (``parse_catalogue``) checks each entry in full, and its tests load the shipped catalogue."""
    return [
        d
        for entry in tomllib.loads(text).get("known", [])
        for d in Known(
            **{name: entry[name] for name in KNOWN_FIELDS},
            signature=tuple(entry["signature"]),
            tolerated_in=tuple(entry.get(SUITE_TOLERATED, ())),
        ).deviations()
    ]


def _checked_fields(
    entry: Mapping[str, Any],
    where: str,
    table: str,
    text: Collection[str],
    required: Collection[str],
    optional: Collection[str],
    components: Collection[str],
) -> str:
    """``where`` naming the entry by its id once it has one; raises unless ``entry`` has every ``required`` field and
    no field beyond ``optional``, each ``text`` field a non-empty string, and a component the bank knows."""
    if isinstance(entry.get("id"), str) and entry["id"]:
        where = f"{where.rsplit(': ', 1)[0]}: {table} {entry['id']}"
    missing = sorted(set(required) - entry.keys())
    unknown = sorted(entry.keys() - set(required) - set(optional))
    if missing or unknown:
        raise CatalogueError(f"{where}: missing fields {missing}, unknown fields {unknown}")
    for name in text:
        if not isinstance(entry[name], str) or not entry[name].strip():
            raise CatalogueError(f"{where}: {name} must be a non-empty string, got {entry[name]!r}")
    if entry["component"] not in components:
        raise CatalogueError(f"{where}: unknown component {entry['component']!r} (the bank knows {sorted(components)})")
    return where


def _known(
    entry: Mapping[str, Any], where: str, components: Collection[str], requirement_classes: Mapping[str, str]
) -> Known:
    where = _checked_fields(
        entry, where, "known", KNOWN_FIELDS, {*KNOWN_FIELDS, "signature"}, (SUITE_TOLERATED,), components
    )
    tolerated_in = entry.get(SUITE_TOLERATED, [])
    if not isinstance(tolerated_in, list) or not all(isinstance(t, str) and t.strip() for t in tolerated_in):
        raise CatalogueError(f"{where}: {SUITE_TOLERATED} must be a list of suite test names, got {tolerated_in!r}")
    signature = entry["signature"]
    if (
        not isinstance(signature, list)
        or not signature
        or not all(isinstance(s, str) and SIGNATURE.fullmatch(s) for s in signature)
    ):
        raise CatalogueError(
            f'{where}: signature must be a non-empty list of "ID kind" strings ("RESTORE-003 offset-gap"), '
            f"got {signature!r}"
        )
    unknown_ids = sorted({s.split(" ", 1)[0] for s in signature} - set(requirement_classes))
    if unknown_ids:
        raise CatalogueError(f"{where}: signature ids {unknown_ids} are not in the spec's requirement registry")
    return Known(
        **{name: entry[name] for name in KNOWN_FIELDS}, signature=tuple(signature), tolerated_in=tuple(tolerated_in)
    )


def _bug(
    entry: Mapping[str, Any], where: str, components: Collection[str], requirement_classes: Mapping[str, str]
) -> Bug:
    where = _checked_fields(entry, where, "bug", TEXT_FIELDS, FIELDS, OPTIONAL, components)
    if entry["level"] not in LEVELS:
        raise CatalogueError(f"{where}: level {entry['level']!r} is not one of {list(LEVELS)}")
    fixes = [name for name in FIX_FIELDS if name in entry]
    if len(fixes) != 1:
        raise CatalogueError(
            f"{where}: name the fix by exactly one of fix_commit (its commit in full) and fix_change (its pull "
            f"request, where the repository cannot be fetched), got {fixes or 'neither'}"
        )
    if "fix_commit" in entry and not (
        isinstance(entry["fix_commit"], str) and FIX_COMMIT.fullmatch(entry["fix_commit"])
    ):
        raise CatalogueError(f"{where}: fix_commit must be a full 40-hex commit id, got {entry['fix_commit']!r}")
    if "fix_change" in entry and not (
        isinstance(entry["fix_change"], str) and FIX_CHANGE.fullmatch(entry["fix_change"])
    ):
        raise CatalogueError(f"{where}: fix_change must be the fix's pull request URL, got {entry['fix_change']!r}")
    ids = entry["requirements"]
    if not isinstance(ids, list) or not ids or not all(isinstance(i, str) for i in ids):
        raise CatalogueError(f"{where}: requirements must be a non-empty list of requirement ids, got {ids!r}")
    unknown_ids = sorted(set(ids) - set(requirement_classes))
    if unknown_ids:
        raise CatalogueError(f"{where}: requirement ids {unknown_ids} are not in the spec's requirement registry")
    classes = sorted({requirement_classes[i] for i in ids})
    if len(classes) != 1:
        raise CatalogueError(
            f"{where}: requirements {ids} are of the classes {classes}: a bug's requirements are of one class, which "
            "decides what its buggy release must read (safe: no, live: no, Flink-faithful: no or diagnosable: no)"
        )
    if entry["buggy"] == entry["fixed"]:
        raise CatalogueError(f"{where}: the buggy and the fixed release are both {entry['buggy']!r}")
    why = entry.get("could_not_run")
    if why is not None and (not isinstance(why, str) or not why.strip()):
        raise CatalogueError(f"{where}: could_not_run must be a non-empty reason, got {why!r}")
    draws = entry.get("draws")
    if draws is not None and (not isinstance(draws, int) or isinstance(draws, bool) or draws < 1):
        raise CatalogueError(f"{where}: draws must be a positive whole number of schedules, got {draws!r}")
    lists: dict[str, tuple[str, ...]] = {}
    for name, pattern in (("signature", SIGNATURE), ("tolerate", None)):
        value = entry.get(name, [])
        if not isinstance(value, list) or not all(
            isinstance(v, str) and (pattern.fullmatch(v) if pattern else v.strip()) for v in value
        ):
            shape = '"ID kind" strings ("CLIENT-004 position-past-end")' if pattern else "bug ids of this catalogue"
            raise CatalogueError(f"{where}: {name} must be a list of {shape}, got {value!r}")
        lists[name] = tuple(value)
    return Bug(
        **{name: entry[name] for name in TEXT_FIELDS},
        fix_commit=entry.get("fix_commit"),
        fix_change=entry.get("fix_change"),
        requirements=tuple(ids),
        category=classes[0],
        could_not_run=why,
        draws=draws,
        signature=lists["signature"],
        tolerate=lists["tolerate"],
    )
