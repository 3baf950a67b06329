"""The ``kconform`` command as a CI user first meets it: ``--version`` and every command's ``--help`` answer,
exit 0, and describe the command and each of its options."""

from __future__ import annotations

import argparse
import re
from collections.abc import Iterator

import pytest

from kconform.conformance import cli
from kconform.conformance.release import kconform_version


def commands(command: cli.Command = cli.KCONFORM, path: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    """Every command line the tree serves, nested verbs (``spec check``) included, from ``kconform`` itself."""
    yield path
    if isinstance(command, cli.Group):
        for name, verb in command.verbs.items():
            yield from commands(verb, (*path, name))


def command_at(path: tuple[str, ...]) -> cli.Command:
    command: cli.Command = cli.KCONFORM
    for name in path:
        assert isinstance(command, cli.Group)
        command = command.verbs[name]
    return command


DEFAULT_CLAUSE = re.compile(r"\(?\bdefault\b(?:[^()]|\([^()]*\))*\)?|%\(default\)\w")


def undescribed(parser: argparse.ArgumentParser) -> list[str]:
    """What ``--help`` leaves unexplained: no description, a verb without a summary, an option whose help is
    missing or says no more than its default."""
    gaps = [] if parser.description else [f"{parser.prog}: no description"]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            summarised = {verb.dest for verb in action._choices_actions if verb.help}
            gaps += [f"{parser.prog} {name}: no summary" for name in action.choices if name not in summarised]
        elif action.help is not argparse.SUPPRESS and len(DEFAULT_CLAUSE.sub("", action.help or "").split()) < 2:
            gaps.append(f"{parser.prog} {'/'.join(action.option_strings) or action.dest}: help {action.help!r}")
    return gaps


COMMANDS = list(commands())


def test_the_walk_reaches_every_verb_and_the_nested_ones() -> None:
    assert {("run",), ("spec",), ("spec", "check"), ("soak",), ("bench",)} <= set(COMMANDS)


def test_version_names_the_installed_release(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as done:
        cli.main(["--version"])
    assert done.value.code == 0
    assert capsys.readouterr().out.strip() == f"kconform {kconform_version()}"
    assert kconform_version() != "unknown"  # the test environment installs kconform


@pytest.mark.parametrize("path", COMMANDS, ids=lambda path: " ".join(("kconform", *path)))
def test_every_command_explains_itself_on_help(path: tuple[str, ...], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as done:  # argparse's own --help exits
        cli.main([*path, "--help"])
    out = capsys.readouterr().out
    assert done.value.code == 0, out
    assert out.startswith(f"usage: {' '.join(('kconform', *path))} "), out
    assert undescribed(command_at(path).parser()) == []


def test_an_option_without_help_or_with_only_its_default_is_caught() -> None:
    parser = argparse.ArgumentParser(prog="kconform demo")
    parser.add_argument("--bare")
    parser.add_argument("--defaulted", default=3, help="default %(default)s")
    parser.add_argument("--described", default=3, help="how many examples (default %(default)s)")
    parser.add_subparsers().add_parser("verb")
    assert undescribed(parser) == [
        "kconform demo: no description",
        "kconform demo --bare: help None",
        "kconform demo --defaulted: help 'default %(default)s'",
        "kconform demo verb: no summary",
    ]


def test_spec_without_its_verb_is_a_usage_error_that_says_what_to_type(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as done:
        cli.main(["spec"])
    assert done.value.code == 2
    assert "usage: kconform spec [-h] {check}" in capsys.readouterr().err
