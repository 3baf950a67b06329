"""The ``kconform`` command line.

Each verb is a thin shell over a module that does the work, so the same behaviour is
reachable from Python and from pytest. A usage error exits 2, never 0: a CI gate must never
mistake a command that checked nothing for a pass.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Callable, Sequence

from kconform.conformance.release import kconform_version

USAGE_EXIT = 2

Handler = Callable[[argparse.Namespace, list[str]], int]


def _delegate(module: str) -> Handler:
    """A handler that passes the verb's arguments to ``conformance.<module>.main``, imported only when used."""

    def handler(_args: argparse.Namespace, rest: list[str]) -> int:
        main: Callable[[list[str]], int] = importlib.import_module(f"kconform.conformance.{module}").main
        return main(rest)

    return handler


SPEC_HELP = """usage: kconform spec check [--profile ci|thorough] [--only NAME] [--workers N] [--root ROOT]

TLA+ model checking of spec/tla/: every correct model must hold and every buggy variant must be
rejected on the property its requirement id names (spec/tla/models.toml).

verbs:
  check  run TLC over the models (`kconform spec check --help` lists its options)"""


def _spec(_args: argparse.Namespace, rest: list[str]) -> int:
    """``kconform spec`` has one verb, ``check``; ``--help`` says so and what it does."""
    if rest[:1] in (["-h"], ["--help"]):
        print(SPEC_HELP)
        return 0
    if not rest or rest[0] != "check":
        print(SPEC_HELP, file=sys.stderr)
        return USAGE_EXIT
    return _delegate("spec_tools.tlc")(_args, rest[1:])


def _build_parser() -> tuple[argparse.ArgumentParser, dict[str, Handler]]:
    parser = argparse.ArgumentParser(
        prog="kconform",
        description="Conformance suite for Flink-style Kafka connector semantics on Spark.",
    )
    parser.add_argument("--version", action="version", version=f"kconform {kconform_version()}")
    verbs = parser.add_subparsers(dest="verb", metavar="VERB", required=True)
    handlers: dict[str, Handler] = {}

    def verb(name: str, help_text: str, handler: Handler) -> argparse.ArgumentParser:
        sub = verbs.add_parser(name, help=help_text, description=help_text, add_help=False)
        handlers[name] = handler
        return sub

    verb(
        "setup",
        "fetch the JVM pieces (Apache Kafka, Spark's Kafka connector, oracles) with Maven",
        _delegate("jvm.setup"),
    )
    verb("run", "run the conformance suite against an adapter", _delegate("gate.runner"))
    verb("probe-broker", "measure what the Kafka broker can show", _delegate("brokers.probe"))
    verb(
        "requirements",
        "list requirement ids with their spec, checker, tests and TLA+ property",
        _delegate("spec_tools.requirements"),
    )
    verb("spec", "TLA+ model checking ('kconform spec check')", _spec)
    verb(
        "verdicts", "write an adapter's verdict per requirement id (fixed seed) as Markdown", _delegate("gate.verdicts")
    )
    verb("soak", "seeded fault schedules on real Kafka: nothing lost, nothing duplicated", _delegate("soak"))
    verb("bench", "run the benchmarks and print ratios against their goals", _delegate("bench.command"))
    verb("site", "build the spec and docs as a static site with MkDocs (build/site)", _delegate("spec_tools.site"))
    return parser, handlers


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``kconform`` console script; verb arguments go to the verb's own parser."""
    parser, handlers = _build_parser()
    args, rest = parser.parse_known_args(list(sys.argv[1:] if argv is None else argv))
    return handlers[args.verb](args, rest)


if __name__ == "__main__":
    raise SystemExit(main())
