"""The ``kconform`` command line.

Each verb is a thin shell over a module that does the work, so the same behaviour is
reachable from Python and from pytest. A usage error exits 2, never 0: a CI gate must never
mistake a command that checked nothing for a pass.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from types import ModuleType

from .gate import supervisor
from .redaction import redacting
from .release import kconform_version


@dataclass(frozen=True)
class Delegate:
    """A verb served by ``kconform.conformance.<module>``'s ``build_parser()`` and ``main(argv)``, imported
    only when the verb is used: ``kconform --help`` must not pay for pyspark."""

    summary: str
    module: str

    def _module(self) -> ModuleType:
        return importlib.import_module(f"kconform.conformance.{self.module}")

    def parser(self) -> argparse.ArgumentParser:
        build: Callable[[], argparse.ArgumentParser] = self._module().build_parser
        return build()

    def __call__(self, argv: list[str]) -> int:
        main: Callable[[list[str]], int] = self._module().main
        return main(argv)


@dataclass(frozen=True)
class Group:
    """A command whose first argument names a verb of its own (``kconform``, ``kconform spec``); the rest of
    the line, ``--help`` included, goes to that verb's parser."""

    prog: str
    summary: str
    verbs: dict[str, Command]
    version: str | None = None

    def parser(self) -> argparse.ArgumentParser:
        parser = argparse.ArgumentParser(prog=self.prog, description=self.summary)
        if self.version:
            parser.add_argument("--version", action="version", version=self.version)
        verbs = parser.add_subparsers(
            title="verbs", dest="verb", metavar="{" + ",".join(self.verbs) + "}", required=True
        )
        for name, command in self.verbs.items():
            verbs.add_parser(name, help=command.summary, description=command.summary, add_help=False)
        return parser

    def __call__(self, argv: list[str]) -> int:
        args, rest = self.parser().parse_known_args(argv)  # a missing or unknown verb exits 2, naming the verbs
        return self.verbs[args.verb](rest)


@dataclass(frozen=True)
class Supervised(Delegate):
    """A verb that runs judged code in this process (``kconform run``): started from the command line, it runs in a
    child process that ``gate.supervisor`` watches, so that a crash of that process still ends in a report.

    The verb's own parser reads the line here first, so that ``--help`` (or ``--he``, as argparse takes it) and a
    usage error are answered by this process, and only a line the verb accepts starts a child (which parses it
    again: the parse has no side effects)."""

    def __call__(self, argv: list[str]) -> int:
        if not supervisor.needed():
            return super().__call__(argv)
        self.parser().parse_args(argv)  # exits here, 0 for --help and 2 for a usage error, as the verb would
        return supervisor.main(argv)


Command = Delegate | Group

KCONFORM = Group(
    "kconform",
    "Conformance suite for Flink-style Kafka connector semantics on Spark.",
    {
        "setup": Delegate(
            "fetch the JVM pieces (Apache Kafka, Spark's Kafka connector, oracles) with Maven", "jvm.setup"
        ),
        "run": Supervised("run the conformance suite against an adapter", "gate.run_command"),
        "probe-broker": Delegate("measure what the Kafka broker can show", "brokers.probe"),
        "requirements": Delegate(
            "list requirement ids with their spec, checker, tests and TLA+ property", "spec_tools.requirements"
        ),
        "spec": Group(
            "kconform spec",
            "TLA+ model checking of spec/tla/: correct models hold, buggy variants fail on their requirement",
            {"check": Delegate("run TLC over the models", "spec_tools.tlc")},
        ),
        "verdicts": Delegate("write an adapter's verdict per requirement id (fixed seed) as Markdown", "gate.verdicts"),
        "matrix": Delegate("write the verdict pages' matrix: connector release x broker release", "gate.matrix"),
        "soak": Delegate("seeded fault schedules on real Kafka, judged by the sink's guarantee", "soak.command"),
        "bugbank": Delegate(
            "run real bugs of released connectors and clients: the buggy release must fail, the fixed one pass",
            "bugbank.command",
        ),
        "replay-schedule": Delegate(
            "run one client-workload schedule (a failure's JSON) again alone, with the clients' own log",
            "replay.command",
        ),
        "bench": Delegate("run the benchmarks and print ratios against their goals", "bench.command"),
        "site": Delegate("build the spec and docs as a static site with MkDocs (build/site)", "spec_tools.site"),
    },
    version=f"kconform {kconform_version()}",
)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``kconform`` console script; whatever a verb prints passes the redactor."""
    with contextlib.redirect_stdout(redacting(sys.stdout)), contextlib.redirect_stderr(redacting(sys.stderr)):
        return KCONFORM(list(sys.argv[1:] if argv is None else argv))


if __name__ == "__main__":
    raise SystemExit(main())
