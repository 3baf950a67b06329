"""The docs work as printed: the adapter guide's files load and pass (or fail) as it says.

Every fenced block of ``docs/adapter-guide.md`` preceded by ``<!-- file: NAME -->`` is written to
a fresh folder under that name, and ``kconform run`` is started there as a user would start it.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import shlex
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml  # PyYAML comes with mkdocs, a dev extra

from kconform.conformance import cli
from kconform.conformance.adapter.interface import SinkSpec, SourceSpec, missing_members
from kconform.conformance.adapter.loader import load_adapter
from kconform.conformance.release import kconform_version
from kconform.conformance.spec_tools import site
from kconform.reference_impl.credentials import mark_secrets

REPO_ROOT = Path(__file__).resolve().parents[1]
GUIDE = REPO_ROOT / "docs" / "adapter-guide.md"
FILE_BLOCK = re.compile(r"^<!-- file: (?P<name>[\w.-]+) -->\n```\w+\n(?P<body>.*?)^```$", re.MULTILINE | re.DOTALL)
GUIDE_MODULES = ("my_adapter", "my_buggy_adapter", "my_pipeline_adapter")


def guide_files(text: str) -> dict[str, str]:
    """File name -> content of each block the guide asks the reader to save."""
    return {m.group("name"): m.group("body") for m in FILE_BLOCK.finditer(text)}


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A user's folder holding the guide's files, on the path as ``kconform run`` puts the working directory."""
    for name, body in guide_files(GUIDE.read_text(encoding="utf-8")).items():
        (tmp_path / name).write_text(body, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    yield tmp_path
    for module in GUIDE_MODULES:
        sys.modules.pop(module, None)


def kconform_run(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``kconform run`` in ``cwd``, on this checkout's kconform."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO_ROOT), os.environ.get("PYTHONPATH")]))}
    command = [
        sys.executable,
        "-m",
        "kconform.conformance.cli",
        "run",
        "--level",
        "protocol",
        "--profile",
        "quick",
        *args,
    ]
    return subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=300, check=False)


def test_the_guide_has_the_files_and_commands_it_talks_about() -> None:
    text = GUIDE.read_text(encoding="utf-8")
    assert set(guide_files(text)) == {f"{m}.py" for m in GUIDE_MODULES} | {"expectations.toml"}
    commands = re.findall(r"^kconform run --adapter (\w+):ADAPTER", text, re.MULTILINE)
    assert set(commands) == set(GUIDE_MODULES), commands
    assert "--expectations expectations.toml" in text


def test_the_guide_s_adapters_load_on_the_first_try(workdir: Path) -> None:
    for module in GUIDE_MODULES:
        adapter = load_adapter(f"{module}:ADAPTER")
        assert missing_members(adapter) == [], module
    assert load_adapter("my_adapter:ADAPTER").capabilities == {"assignment", "discovery"}


def test_the_guide_s_adapter_passes_every_protocol_test_it_declares(workdir: Path) -> None:
    run = kconform_run(workdir, "--adapter", "my_adapter:ADAPTER")
    assert run.returncode == 0, run.stdout + run.stderr
    assert re.search(r"^ASSIGN-004 .* PASS ", run.stdout, re.MULTILINE), run.stdout
    assert re.search(r"^DISC-001 .* PASS ", run.stdout, re.MULTILINE), run.stdout
    assert "Every result is as expected: exit 0." in run.stdout


def test_the_guide_s_bug_fails_on_assign_004_with_a_replay_line(workdir: Path) -> None:
    run = kconform_run(workdir, "--adapter", "my_buggy_adapter:ADAPTER", "--only", "ASSIGN_004_edge_names")
    assert run.returncode == 1, run.stdout + run.stderr
    assert re.search(r"^ASSIGN-004 .* FAIL ", run.stdout, re.MULTILINE), run.stdout
    quoted = re.search(r"`(ASSIGN-004 formula-mismatch: [^`]+)`", GUIDE.read_text(encoding="utf-8"))
    assert quoted is not None, "the guide quotes the evidence of the failure"
    assert quoted.group(1) in run.stdout
    assert re.search(r"replay: .* run --adapter my_buggy_adapter:ADAPTER .*--only required_ASSIGN_004_edge", run.stdout)


def test_the_guide_s_expectations_file_turns_the_bug_into_xfail(workdir: Path) -> None:
    run = kconform_run(
        workdir,
        "--adapter",
        "my_buggy_adapter:ADAPTER",
        "--only",
        "ASSIGN_004_edge_names",
        "--expectations",
        "expectations.toml",
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert re.search(r"^ASSIGN-004 .* XFAIL ", run.stdout, re.MULTILINE), run.stdout


class Chain:
    """A stand-in for Spark's DataStreamReader and DataStreamWriter: records each call, returns itself."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, tuple[Any, ...], dict[str, Any]]] = []
        self.readStream = self.writeStream = self

    def __getattr__(self, method: str) -> Any:
        def record(*args: Any, **kwargs: Any) -> Chain:
            self.calls.append((method, args, kwargs))
            return self

        return record

    def options_set(self) -> dict[str, Any]:
        found: dict[str, Any] = {}
        for method, args, kwargs in self.calls:
            if method == "option":
                found[args[0]] = args[1]
            elif method == "options":
                found |= kwargs
        return found


def test_the_guide_s_pipeline_adapter_maps_the_specs_onto_its_options(workdir: Path) -> None:
    adapter: Any = load_adapter("my_pipeline_adapter:ADAPTER")
    spark = Chain()
    source = SourceSpec("broker:9092", 3, subscribe_pattern="orders-.*", max_records_per_trigger=5)
    assert adapter.read_stream(spark, source) is spark
    assert spark.calls[0] == ("format", ("my-kafka",), {})
    assert spark.calls[-1][0] == "load"
    assert spark.options_set() == {
        "bootstrap.servers": "broker:9092",
        "parallelism": "3",
        "startingOffsets": "earliest",
        "subscribePattern": "orders-.*",
        "maxRecordsPerTrigger": "5",
    }
    frame = Chain()
    settings = tuple(mark_secrets({"security.protocol": "SSL", "ssl.key.password": "k3y"}).items())
    sink = SinkSpec("broker:9092", "out", exactly_once=False, client_settings=settings)
    assert adapter.write_stream(frame, sink) is frame
    assert frame.options_set() == {
        "bootstrap.servers": "broker:9092",
        "topic": "out",
        "kafka.security.protocol": "SSL",
        "kafka.ssl.key.password": "k3y",  # the guide's adapter hands the client the credential, not ``***``
    }


CI_EXAMPLE = REPO_ROOT / "docs" / "ci-example.md"
WORKFLOW = REPO_ROOT / "docs" / "github-actions" / "kconform.yml"
CI_RUN = "--adapter my_connector.kconform_adapter:ADAPTER"
GATE = f"kconform run {CI_RUN} --expectations kconform-expectations.toml --report build/report"


def cli_error(argv: list[str]) -> str | None:
    """Why ``kconform`` would reject ``argv`` before running anything (None: it accepts it), judged by the CLI's
    own parsers down to the verb's, so a renamed verb or option is caught."""
    command: cli.Command = cli.KCONFORM
    errors = io.StringIO()
    try:
        with contextlib.redirect_stderr(errors):
            while isinstance(command, cli.Group):
                known, argv = command.parser().parse_known_args(argv)
                command = command.verbs[known.verb]
            command.parser().parse_args(argv)
    except SystemExit:
        return errors.getvalue().strip().splitlines()[-1]
    return None


def kconform_lines(script: str) -> list[list[str]]:
    """Each ``kconform`` command of a step's shell script, as its arguments after ``kconform``."""
    tokens = [shlex.split(line) for line in script.replace("\\\n", " ").splitlines()]
    return [words[1:] for words in tokens if words and words[0] == "kconform"]


def workflow_problems(text: str) -> list[str]:
    """What keeps the workflow from gating a connector as docs/ci-example.md says it does."""
    workflow = yaml.safe_load(text)
    steps: list[dict[str, Any]] = workflow["jobs"]["conformance"]["steps"]
    problems = []

    def step(what: str, found: Callable[[dict[str, Any]], bool]) -> int:
        at = [i for i, s in enumerate(steps) if found(s)]
        if not at:
            problems.append(f"no step {what}")
        return at[0] if at else -1

    def uses(action: str) -> Callable[[dict[str, Any]], bool]:
        return lambda s: str(s.get("uses", "")).startswith(f"actions/{action}@")

    def runs(command: str) -> Callable[[dict[str, Any]], bool]:
        return lambda s: command in str(s.get("run", "")).replace("\n", " ")

    java = step("sets up Java 17", lambda s: uses("setup-java")(s) and s["with"].get("java-version") == "17")
    step("checks Maven", runs("mvn --version"))
    step("sets up Python with pip's cache", lambda s: uses("setup-python")(s) and s["with"].get("cache") == "pip")
    cache = step(
        "caches ~/.cache/kconform by kconform version",
        lambda s: (
            uses("cache")(s)
            and s["with"].get("path") == "~/.cache/kconform"
            and "${{ env.KCONFORM_VERSION }}" in s["with"].get("key", "")
        ),
    )
    install = step("installs kconform[all] from KCONFORM_SOURCE", runs('"kconform[all] @ ${KCONFORM_SOURCE}"'))
    setup = step("runs kconform setup", runs("kconform setup"))
    gate = step("runs the gate", runs(GATE))
    upload = step(
        "uploads build/report/ even when the gate fails",
        lambda s: uses("upload-artifact")(s) and s.get("if") == "always()" and s["with"]["path"] == "build/report/",
    )
    if -1 not in (java, cache, install, setup, gate, upload) and not java < cache < install < setup < gate < upload:
        problems.append("steps out of order: Java, cache, install, setup, gate, upload")
    if gate != -1 and ("continue-on-error" in steps[gate] or "||" in steps[gate]["run"]):
        problems.append("the gate's exit code does not fail the job")
    if str(workflow.get("env", {}).get("KCONFORM_VERSION")) != kconform_version():
        problems.append(f"KCONFORM_VERSION is not this release, {kconform_version()}")
    source = str(workflow.get("env", {}).get("KCONFORM_SOURCE", ""))
    if not (source.startswith("git+") and "@" in source.removeprefix("git+").split("/")[-1]) and ".whl" not in source:
        problems.append(f"KCONFORM_SOURCE is not kconform pinned to a ref (git+URL@REF) or a wheel: {source!r}")
    for s in steps:
        if "secrets." in str(s.get("run", "")):
            problems.append(f"a credential on kconform's command line: {s['run']!r}; pass it in the step's env")
        for argv in kconform_lines(str(s.get("run", ""))):
            if error := cli_error(argv):
                problems.append(f"kconform {shlex.join(argv)}: {error}")
    return problems


def test_the_ci_workflow_installs_kconform_runs_the_gate_and_keeps_the_report() -> None:
    assert workflow_problems(WORKFLOW.read_text(encoding="utf-8")) == []
    assert "(github-actions/kconform.yml)" in CI_EXAMPLE.read_text(encoding="utf-8")


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        (("--report build/report", "--reports build/report"), "unrecognized arguments: --reports"),
        (("kconform setup", "kconform set-up"), "invalid choice: 'set-up'"),
        (
            ("run: >-\n          kconform run", "continue-on-error: true\n        run: >-\n          kconform run"),
            "exit code",
        ),
        (("if: always()", "if: success()"), "uploads build/report/"),
        (('java-version: "17"', 'java-version: "21"'), "Java 17"),
        (("path: ~/.cache/kconform", "path: ~/.m2"), "caches ~/.cache/kconform"),
        (('KCONFORM_VERSION: "', 'KCONFORM_VERSION: "9'), "KCONFORM_VERSION"),
        (("kconform.git@v0.1.0", "kconform.git"), "KCONFORM_SOURCE"),
        (
            ("--report build/report", "--report build/report --password ${{ secrets.KAFKA_SASL_PASSWORD }}"),
            "credential",
        ),
    ],
)
def test_a_broken_workflow_is_caught(change: tuple[str, str], problem: str) -> None:
    text = WORKFLOW.read_text(encoding="utf-8")
    assert change[0] in text
    problems = workflow_problems(text.replace(*change))
    assert any(problem in p for p in problems), problems


@pytest.mark.parametrize("suite_exit", [0, 1, 3])
def test_the_ci_shell_script_exits_with_the_suite_s_code(tmp_path: Path, suite_exit: int) -> None:
    """The script runs with ``python3`` stubbed: its venv holds a fake ``pip`` and a fake ``kconform`` whose
    ``run`` exits as told."""
    script = tmp_path / "kconform-gate.sh"
    script.write_text(guide_files(CI_EXAMPLE.read_text(encoding="utf-8"))["kconform-gate.sh"])
    stubs = tmp_path / "stubs"
    stubs.mkdir()
    fake_venv = (
        'mkdir -p "$3/bin"\n'
        'printf \'#!/bin/sh\\necho "$@" >> pip-args\\n\' > "$3/bin/pip"\n'
        f'printf \'#!/bin/sh\\necho "$@" >> kconform-args\\n[ "$1" = run ] && exit {suite_exit}\\nexit 0\\n\' '
        '> "$3/bin/kconform"\n'
        'chmod +x "$3/bin/pip" "$3/bin/kconform"'
    )
    (stubs / "python3").write_text(f"#!/bin/sh\n{fake_venv}\n")
    (stubs / "python3").chmod(0o755)
    source = "git+file:///src/kconform@v1"
    env = {**os.environ, "PATH": f"{stubs}{os.pathsep}{os.environ['PATH']}", "KCONFORM_SOURCE": source}
    done = subprocess.run(["bash", str(script)], cwd=tmp_path, env=env, capture_output=True, text=True, check=False)
    assert done.returncode == suite_exit, done.stdout + done.stderr
    assert f"kconform: exit {suite_exit}; reports in build/report" in done.stdout
    assert (tmp_path / "pip-args").read_text().split() == [
        "install",
        "--quiet",
        "-e",
        ".",
        "kconform[all]",
        "@",
        source,
    ]
    setup, run = (line.split() for line in (tmp_path / "kconform-args").read_text().splitlines())
    assert setup == ["setup"]
    assert run == GATE.split()[1:]
    for argv in (setup, run):
        assert cli_error(argv) is None, argv


def test_the_site_source_has_the_pages_and_the_files_they_link_to(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    for path, text in {
        "README.md": "[spec](spec/a.md), [checker](conformance/x.py), [gone](conformance/gone.py)",
        "spec/a.md": "[test](../tests/test_x.py#L3), [web](https://example.org/a.py), [up](../../outside.py)",
        "docs/b.md": "[a](../spec/a.md#heading)",
        "conformance/x.py": "",
        "conformance/unlinked.py": "",
        "tests/test_x.py": "",
    }.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text)
    out = tmp_path / "site-src"
    (out / "stale.md").parent.mkdir(parents=True)
    (out / "stale.md").write_text("left by an earlier build")
    assert site.prepare(out, root) == [Path("conformance/x.py"), Path("tests/test_x.py")]
    files = {p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file()}
    assert files == {"README.md", "spec/a.md", "docs/b.md", "conformance/x.py", "tests/test_x.py"}


def test_site_without_mkdocs_names_the_install(monkeypatch: pytest.MonkeyPatch, capsys: Any) -> None:
    monkeypatch.setattr(site, "mkdocs_installed", lambda: False)
    assert site.main([]) == 2
    assert "pip install -e .[dev]" in capsys.readouterr().err


@pytest.fixture
def site_source(tmp_path: Path) -> Path:
    if not site.mkdocs_installed():
        pytest.skip("MkDocs is not installed: pip install -e .[dev]")
    source = tmp_path / "site-src"
    site.prepare(source)
    return source


def test_the_site_builds_strict_with_the_requirement_table_linked(site_source: Path, tmp_path: Path) -> None:
    out = tmp_path / "site"
    assert site.build(site_source, out) == 0
    for page in ("index.html", "spec/index.html", "docs/adapter-guide.html", "docs/ci-example.html"):
        assert (out / page).is_file(), page
    table = (out / "spec" / "REQUIREMENTS.html").read_text(encoding="utf-8")
    anchor = "assign-001-must-fidelity-the-assigner-gives-every-partition-exactly-one-subtask"
    assert f'href="assignment.html#{anchor}"' in table
    assert f'id="{anchor}"' in (out / "spec" / "assignment.html").read_text(encoding="utf-8")
    assert (
        'href="../conformance/checks/checkers.py"' in table
        and (out / "conformance" / "checks" / "checkers.py").is_file()
    )
    assert 'href="tla/TwoPhaseCommitSink.tla"' in table and (out / "spec" / "tla" / "TwoPhaseCommitSink.tla").is_file()


@pytest.mark.parametrize(
    "broken", ["[gone](no-such-page.md)", "[gone](adapter-guide.md#no-such-heading)", "[gone](../no_such_file.py)"]
)
def test_a_broken_link_fails_the_site_build(site_source: Path, tmp_path: Path, broken: str) -> None:
    page = site_source / "docs" / "ci-example.md"
    page.write_text(page.read_text(encoding="utf-8") + f"\n{broken}\n", encoding="utf-8")
    assert site.build(site_source, tmp_path / "site") != 0


INSTALL_DOCS = (REPO_ROOT / "README.md", *sorted((REPO_ROOT / "docs").glob("*.md")))
PIP_INSTALL = re.compile(r"pip install ([^`\n]*)")
INDEX_REQUIREMENT = re.compile(r"""^['"]?kconform(\[[\w,]*\])?(==\S*)?['"]?$""")
"""kconform asked of a package index (``kconform``, ``'kconform[all]'``, ``kconform==0.1.0``), not a wheel, a checkout
or a git URL (``"kconform[all] @ $KCONFORM_SOURCE"``)."""


def index_installs(text: str) -> list[str]:
    """Each ``pip install`` of ``text`` that asks a package index for kconform."""
    found = []
    for match in PIP_INSTALL.finditer(text):
        with contextlib.suppress(ValueError):  # an unbalanced quote: a command cut by a line break
            words = shlex.split(match.group(1), posix=False)
            if any(INDEX_REQUIREMENT.match(w) and words[i + 1 : i + 2] != ["@"] for i, w in enumerate(words)):
                found.append(match.group(0))
    return found


def test_no_doc_installs_kconform_from_a_package_index_where_no_release_is_published() -> None:
    """The docs say how to install kconform today (a wheel, a checkout, a git URL), never a release not published;
    the twin: the commands they replaced are caught."""
    assert index_installs("`pip install kconform` and `pip install 'kconform[all]'`, pip install kconform==0.1.0") == [
        "pip install kconform",
        "pip install 'kconform[all]'",
        "pip install kconform==0.1.0",
    ]
    fine = "pip install \"$(ls dist/kconform-*.whl)[pipeline]\"\npip install -e 'path/to/kconform[all]'\n"
    assert index_installs(fine + 'pip install --quiet -e . "kconform[all] @ $KCONFORM_SOURCE"') == []
    found = {str(doc.relative_to(REPO_ROOT)): index_installs(doc.read_text()) for doc in INSTALL_DOCS}
    assert not {doc: commands for doc, commands in found.items() if commands}
