"""The mutant registry: each mutant is registered where its bug is written, never in a distant catalogue.

A mutant module registers a mutant with a decorator on the class or function that holds its bug (``register``
underneath), naming the requirements it must fail and the bug in one line. ``load`` imports those modules and
returns what they registered; ``find`` looks one up by name and kind; ``definition`` says where its bug is
written, so the requirement table links each mutant to that line and ``--adapter module:name`` finds it
through the module's ``__getattr__``.
"""

from __future__ import annotations

import importlib
import inspect
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, TypeVar

MODULES = (f"{__package__}.protocol", f"{__package__}.pipeline", f"{__package__}.flink")
"""The modules that register mutants; the pipeline one needs the ``pipeline`` extra (PySpark)."""


class Registered(Protocol):
    """What every kind of mutant record has."""

    @property
    def name(self) -> str: ...

    @property
    def kills_on(self) -> frozenset[str]:
        """The requirements its bug breaks: the suite must fail on one of them and on no other."""

    @property
    def bug(self) -> str: ...


M = TypeVar("M", bound=Registered)
D = TypeVar("D", bound=Callable[..., object])


@dataclass(frozen=True)
class Definition:
    """Where a mutant's bug is written: a source file and the line of the ``class`` or ``def`` that holds it."""

    path: Path
    line: int
    name: str
    """The class or function name found on that line."""


@dataclass(frozen=True)
class Entry:
    mutant: Registered
    defined: Callable[..., object]
    """The class or function holding the bug, decorated where it is written."""

    @property
    def definition(self) -> Definition:
        """``inspect`` starts a decorated definition at its first decorator; the link goes to its name's line."""
        name = self.defined.__name__
        path = inspect.getsourcefile(self.defined)
        assert path is not None, f"mutant {self.mutant.name}: no source file for {name}"
        lines, first = inspect.getsourcelines(self.defined)
        header = re.compile(rf"^\s*(?:class|def)\s+{re.escape(name)}\b")
        offset = next(i for i, text in enumerate(lines) if header.match(text))
        return Definition(Path(path), first + offset, name)


_REGISTRY: dict[str, Entry] = {}


def register(defined: D, mutant: Registered) -> D:
    """Record ``mutant`` with ``defined``, the class or function holding its bug; ``defined`` is returned
    unchanged, so a decorator can call this."""
    if mutant.name in _REGISTRY:
        raise ValueError(f"mutant {mutant.name!r} is registered twice")
    _REGISTRY[mutant.name] = Entry(mutant, defined)
    return defined


def load(modules: Iterable[str] = MODULES) -> Mapping[str, Entry]:
    """Every mutant registered once ``modules`` are imported (importing runs their registrations), by name."""
    for module in modules:
        importlib.import_module(module)
    return registered()


def registered() -> Mapping[str, Entry]:
    """Every mutant registered so far, by name, in registration order."""
    return dict(_REGISTRY)


def find(name: str, kind: type[M]) -> M:
    """The registered mutant ``name`` of ``kind``; otherwise an ``AttributeError``, as a module's ``__getattr__``
    must raise for a name it does not have."""
    entry = _REGISTRY.get(name)
    if entry is None or not isinstance(entry.mutant, kind):
        raise AttributeError(f"no {kind.__name__} named {name!r} is registered")
    return entry.mutant


def mutants(kind: type[M]) -> list[M]:
    """The registered mutants of ``kind``, in the order their modules register them."""
    return [e.mutant for e in _REGISTRY.values() if isinstance(e.mutant, kind)]
