"""The ``kconform`` command as a CI user first meets it: ``--version`` and every verb's ``--help`` answer, exit 0."""

from __future__ import annotations

import pytest

from kconform.conformance import cli
from kconform.conformance.release import kconform_version

VERBS = ["run", "probe-broker", "requirements", "spec", "verdicts", "soak", "bench", "site"]


def test_version_names_the_installed_release(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as done:
        cli.main(["--version"])
    assert done.value.code == 0
    assert capsys.readouterr().out.strip() == f"kconform {kconform_version()}"
    assert kconform_version() != "unknown"  # the test environment installs kconform


@pytest.mark.parametrize("verb", VERBS)
def test_every_verb_explains_itself_on_help(verb: str, capsys: pytest.CaptureFixture[str]) -> None:
    try:
        code = cli.main([verb, "--help"])
    except SystemExit as done:  # argparse's own --help
        code = int(done.code or 0)
    out = capsys.readouterr().out
    assert code == 0, out
    assert out.startswith("usage: kconform"), out
    assert len(out.splitlines()) > 3, f"{verb} --help prints only a usage line:\n{out}"


def test_spec_without_its_verb_is_a_usage_error_that_says_what_to_type(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["spec"]) == cli.USAGE_EXIT
    assert "usage: kconform spec check" in capsys.readouterr().err
