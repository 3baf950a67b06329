"""The bug bank: its catalogue loader, its verdicts, its page, the oracle built at a release, and a bug added
to a catalogue of one's own running with no code change."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Sequence
from pathlib import Path

import pytest

from kconform.conformance.bugbank import command
from kconform.conformance.bugbank.catalogue import (
    Bug,
    CatalogueError,
    parse_catalogue,
    release_order,
    suite_deviations,
)
from kconform.conformance.bugbank.command import bank, exit_code, load, run_command
from kconform.conformance.bugbank.components import COMPONENTS
from kconform.conformance.bugbank.page import fix, render_page
from kconform.conformance.bugbank.pyreleases import (
    ReleaseInstallError,
    child_env,
    pip_command,
    release_folder,
)
from kconform.conformance.bugbank.verdict import Judgement, Outcome, Verdict, judge, outcome_of_report
from kconform.conformance.checks.client_workload_checkers import UNREVOKED
from kconform.conformance.gate.expectations import load_expectations
from kconform.conformance.gate.runner import known_upstream
from kconform.conformance.jvm import oracle_at_release
from kconform.conformance.jvm.oracle_at_release import KAFKA_CLIENTS_VERSION_ENV, build_at_release, oracle_module
from kconform.conformance.jvm.setup import Folder, foreign_entries
from kconform.conformance.paths import releases_dir

ROOT = Path(__file__).resolve().parents[1]
ENTRY = """
[[bug]]
id = "KAFKA-14639"
link = "https://issues.apache.org/jira/browse/KAFKA-14639"
component = "kafka-clients"
buggy = "3.4.0"
fixed = "3.4.1"
fix_commit = "ae7225702889311ba3577ba8ad602c03b1dfdaf2"
requirements = ["STRAT-010"]
only = "STRAT-010"
level = "protocol"
mechanism = "a member that missed a rebalance loses its claims"
"""
IDS = {"STRAT-004": "fidelity", "STRAT-010": "fidelity", "ASSIGN-007": "safety", "LIVE-001": "liveness"}
RECORDED = Path(__file__).resolve().parent / "bugbank_reports"
"""report.json of real ``kconform run``s at the protocol level, cut to what the bank reads: ``live-no`` (an adapter
whose assign hangs, tests.misbehaving_adapters:HANGS, --only ASSIGN-001 --timeout 5), ``passes`` (the reference,
--only ASSIGN-001) and ``safe-no`` (mutant overlapping_range_discoverers, --only ASSIGN-007); seed 1, quick."""


def parse(text: str) -> list[Bug]:
    return parse_catalogue(text, "bank.toml", COMPONENTS.keys(), IDS)


def test_an_entry_loads_with_every_field() -> None:
    (bug,) = parse(ENTRY)
    assert (bug.id, bug.component, bug.buggy, bug.fixed, bug.requirements, bug.category) == (
        "KAFKA-14639",
        "kafka-clients",
        "3.4.0",
        "3.4.1",
        ("STRAT-010",),
        "fidelity",
    )


@pytest.mark.parametrize(
    ("change", "says"),
    [
        (('"kafka-clients"', '"kafka-streams"'), "bug KAFKA-14639: unknown component 'kafka-streams'"),
        (('["STRAT-010"]', '["STRAT-010", "STRAT-9999"]'), "bug KAFKA-14639: requirement ids ['STRAT-9999'] are not"),
        (('["STRAT-010"]', "[]"), "bug KAFKA-14639: requirements must be a non-empty list"),
        (('level = "protocol"', 'level = "fast"'), "bug KAFKA-14639: level 'fast'"),
        (('"ae7225702889311ba3577ba8ad602c03b1dfdaf2"', '"ae72257"'), "bug KAFKA-14639: fix_commit must be"),
        (('fix_commit = "ae7225702889311ba3577ba8ad602c03b1dfdaf2"\n', ""), "exactly one of fix_commit"),
        (("level = ", 'fix_change = "https://github.com/apache/kafka/pull/13100"\nlevel = '), "exactly one of"),
        (
            ('fix_commit = "ae7225702889311ba3577ba8ad602c03b1dfdaf2"', 'fix_change = "KAFKA-14639"'),
            "fix_change must be the fix's pull request URL",
        ),
        (('["STRAT-010"]', '["STRAT-010", "LIVE-001"]'), "are of the classes ['fidelity', 'liveness']"),
        (('fixed = "3.4.1"', 'fixed = "3.4.0"'), "both '3.4.0'"),
        (('only = "STRAT-010"\n', ""), "bug KAFKA-14639: missing fields ['only']"),
        (("mechanism", "story"), "unknown fields ['story']"),
        (('id = "KAFKA-14639"', "id = 14639"), "bank.toml: bug #1: id must be a non-empty string"),
    ],
)
def test_an_entry_the_bank_cannot_run_is_an_error_naming_it(change: tuple[str, str], says: str) -> None:
    with pytest.raises(CatalogueError, match=r"^bank\.toml: ") as error:
        parse(ENTRY.replace(*change))
    assert says in str(error.value)


def test_a_fix_named_by_its_pull_request_loads_and_the_page_links_it() -> None:
    """Where the repository cannot be fetched (apache/spark), the fix is named by its pull request instead of a
    commit, and the page says the commit is not named rather than showing an empty or made-up one."""
    change = "https://github.com/apache/kafka/pull/13100"
    (bug,) = parse(ENTRY.replace('fix_commit = "ae7225702889311ba3577ba8ad602c03b1dfdaf2"', f'fix_change = "{change}"'))
    assert (bug.fix_commit, bug.fix_change) == (None, change)
    assert fix(bug) == f"[its pull request]({change}), commit not named"
    (named,) = parse(ENTRY)
    assert fix(named) == "`ae7225702889`"


def test_a_bug_listed_twice_and_a_foreign_table_are_errors() -> None:
    with pytest.raises(CatalogueError, match="bug KAFKA-14639: listed twice"):
        parse(ENTRY + ENTRY)
    with pytest.raises(CatalogueError, match=r"only \[\[bug\]\] and \[\[known\]\] tables"):
        parse(ENTRY + "\n[settings]\nx = 1\n")
    with pytest.raises(CatalogueError, match="not valid TOML"):
        parse("[[bug]\n")


def test_the_shipped_catalogue_loads_against_the_spec() -> None:
    bugs = load(None)
    assert {"KAFKA-14639", "KAFKA-12984", "FLINK-32019", "librdkafka-5213"} <= {b.id for b in bugs}
    assert {b.component for b in bugs} <= COMPONENTS.keys()


FAILS_010 = Outcome(frozenset({"STRAT-010"}), violated={"fidelity": frozenset({"STRAT-010"})})
PASSES = Outcome()


@pytest.mark.parametrize(
    ("buggy", "fixed", "verdict"),
    [
        (FAILS_010, PASSES, Verdict.CAUGHT),
        (
            Outcome(frozenset({"STRAT-008"}), violated={"fidelity": frozenset({"STRAT-008"})}),
            PASSES,
            Verdict.OFF_TARGET,
        ),
        (PASSES, PASSES, Verdict.MISSED),
        (FAILS_010, FAILS_010, Verdict.FALSE_ALARM),
        (
            PASSES,
            Outcome(frozenset({"STRAT-004"}), violated={"fidelity": frozenset({"STRAT-004"})}),
            Verdict.FALSE_ALARM,
        ),
        (Outcome(problem="kconform run exited 3"), PASSES, Verdict.COULD_NOT_RUN),
        (FAILS_010, Outcome(problem="no JVM"), Verdict.COULD_NOT_RUN),
    ],
)
def test_the_verdict_of_each_pair_of_runs(buggy: Outcome, fixed: Outcome, verdict: Verdict) -> None:
    assert judge("fidelity", {"STRAT-010"}, buggy, fixed).verdict is verdict


def test_a_buggy_release_that_read_no_only_on_a_tolerated_kind_is_not_caught() -> None:
    """An id read XFAIL (a kind of another bug the entry tolerates) breaks the class's verdict but is not a failure:
    the buggy release must fail an intended id itself."""
    xfail_only = Outcome(frozenset(), violated={"fidelity": frozenset({"STRAT-010"})})
    assert judge("fidelity", {"STRAT-010"}, xfail_only, PASSES).verdict is Verdict.MISSED
    assert judge("fidelity", {"STRAT-010"}, PASSES, xfail_only).verdict is not Verdict.FALSE_ALARM


def test_an_entry_tolerates_the_signature_of_another_bug_its_releases_still_carry(tmp_path: Path) -> None:
    """Both releases of the second entry carry the first bug: its runs tolerate exactly that bug's kinds, through
    an expectations file beside the report, each deviation naming and linking the bug it belongs to."""
    first = ENTRY.replace('fixed = "3.4.1"', 'fixed = "3.5.0"')
    first += 'signature = ["STRAT-010 lost-claim", "ASSIGN-007 owned-twice"]\n'
    second = ENTRY.replace("KAFKA-14639", "KAFKA-1") + 'tolerate = ["KAFKA-14639"]\n'
    _, bug = parse(first + second)
    assert [(r, k, o) for r, k, o, _ in bug.tolerated] == [
        ("STRAT-010", "lost-claim", "KAFKA-14639"),
        ("ASSIGN-007", "owned-twice", "KAFKA-14639"),
    ]
    assert run_command(bug, "m:a", "quick", 7, Path("r"))[-2:] == ["--expectations", "r/tolerated.toml"]
    path = tmp_path / "tolerated.toml"
    path.write_text(bug.expectations())
    loaded = load_expectations(path, set(IDS))
    assert [(d.requirement, d.kind) for d in loaded] == [("STRAT-010", "lost-claim"), ("ASSIGN-007", "owned-twice")]
    assert all("KAFKA-14639" in d.reason and d.link.endswith("KAFKA-14639") for d in loaded)
    (plain,) = parse(ENTRY)
    assert "--expectations" not in run_command(plain, "m:a", "quick", 7, Path("r"))
    for wrong in ('tolerate = ["NOT-AN-ENTRY"]', 'tolerate = ["KAFKA-14639"]'):
        with pytest.raises(CatalogueError, match="not another entry with a signature"):
            parse(ENTRY + wrong + "\n")
    with pytest.raises(CatalogueError, match="signature must be a list"):
        parse(ENTRY + 'signature = ["lost-claim"]\n')


def test_a_bug_fixed_between_an_entrys_releases_is_tolerated_in_the_buggy_run_alone(tmp_path: Path) -> None:
    """The first bug, fixed in 3.4.1, is in the second's buggy 3.4.0 and not in its fixed 3.5.0: the buggy release's
    run tolerates the first bug's kinds (so the second must show by a kind of its own); the fixed release's run
    tolerates nothing of it, so the first bug showing there is a false alarm."""
    first = ENTRY + 'signature = ["STRAT-010 lost-claim"]\n'
    second = ENTRY.replace("KAFKA-14639", "KAFKA-1").replace('fixed = "3.4.1"', 'fixed = "3.5.0"')
    _, bug = parse(first + second + 'tolerate = ["KAFKA-14639"]\n')
    assert bug.fixed_in == (("KAFKA-14639", "3.4.1"),)
    assert bug.tolerated_in("3.4.0") == bug.tolerated and bug.tolerated_in("3.5.0") == ()
    assert run_command(bug, "m:a", "quick", 7, Path("r"), "3.4.0")[-2:] == ["--expectations", "r/tolerated.toml"]
    assert "--expectations" not in run_command(bug, "m:a", "quick", 7, Path("r"), "3.5.0")
    assert "--expectations" not in run_command(bug, "m:a", "quick", 7, Path("r"))
    path = tmp_path / "tolerated.toml"
    path.write_text(bug.expectations("3.4.0"))
    (loaded,) = load_expectations(path, set(IDS))
    assert (loaded.requirement, loaded.kind) == ("STRAT-010", "lost-claim")
    assert "fixed in 3.4.1" in loaded.reason and "3.5.0 does not" in loaded.reason
    assert bug.expectations("3.5.0") == ""
    # the bug tolerated shows on the fixed release: that run tolerates nothing, so the verdict is a false alarm
    shown = Outcome(frozenset({"STRAT-010"}), violated={"fidelity": frozenset({"STRAT-010"})})
    assert judge("fidelity", {"STRAT-010"}, PASSES, shown).verdict is Verdict.FALSE_ALARM
    # fixed after both releases: tolerated in both runs, as both carry it
    later = parse(first.replace('fixed = "3.4.1"', 'fixed = "3.6.0"') + second + 'tolerate = ["KAFKA-14639"]\n')[1]
    assert later.tolerated_in("3.4.0") == later.tolerated_in("3.5.0") == later.tolerated
    assert "both releases of KAFKA-1" in later.expectations("3.5.0")


def test_a_bug_fixed_before_both_releases_of_an_entry_cannot_be_tolerated_by_it() -> None:
    first = ENTRY + 'signature = ["STRAT-010 lost-claim"]\n'
    second = ENTRY.replace("KAFKA-14639", "KAFKA-1").replace('buggy = "3.4.0"', 'buggy = "3.4.1"')
    second = second.replace('fixed = "3.4.1"', 'fixed = "3.5.0"')
    with pytest.raises(CatalogueError, match=r"fixed in 3\.4\.1, which neither of its releases"):
        parse(first + second + 'tolerate = ["KAFKA-14639"]\n')


def test_release_order_reads_the_connectors_own_part_of_a_flink_release() -> None:
    assert release_order("3.2.0-1.19") < release_order("3.3.0-1.20") < release_order("4.0.1-2.0")
    assert release_order("2.10.1") > release_order("2.9.0") and release_order("x") == ()


KNOWN = """
[[known]]
id = "marker-restored"
link = "https://example.org/source/KafkaPartitionSplitState.java"
component = "kafka-clients"
signature = ["STRAT-010 lost-claim"]
reason = "every release carries it; no fix is released"
"""


def test_an_entry_tolerates_a_known_upstream_behaviour_that_has_no_fix(tmp_path: Path) -> None:
    """A ``[[known]]`` behaviour (no released fix, so no entry of its own) is tolerated by the entries that name it,
    as another entry's signature is, and is never judged itself."""
    bugs = parse(KNOWN + ENTRY + 'tolerate = ["marker-restored"]\n')
    assert [b.id for b in bugs] == ["KAFKA-14639"]
    (bug,) = bugs
    assert bug.tolerated == (
        ("STRAT-010", "lost-claim", "marker-restored", "https://example.org/source/KafkaPartitionSplitState.java"),
    )
    path = tmp_path / "tolerated.toml"
    path.write_text(bug.expectations())
    (deviation,) = load_expectations(path, set(IDS))
    assert (deviation.requirement, deviation.kind) == ("STRAT-010", "lost-claim")
    assert "marker-restored" in deviation.reason
    for wrong, problem in (
        (KNOWN.replace('signature = ["STRAT-010 lost-claim"]', "signature = []"), "signature must be a non-empty list"),
        (KNOWN.replace("STRAT-010 lost-claim", "NOPE-001 lost-claim"), "not in the spec's requirement registry"),
        (KNOWN.replace('component = "kafka-clients"', 'component = "nope"'), "unknown component"),
        (KNOWN + 'fixed = "1.0"\n', "unknown fields"),
        (KNOWN + KNOWN, "listed twice"),
    ):
        with pytest.raises(CatalogueError, match=problem):
            parse(wrong)


def test_a_known_behaviour_tolerated_in_suite_tests_gives_a_deviation_per_kind_and_test() -> None:
    """``tolerated_in``: the suite tests that drive the component itself, where every run tolerates the signature."""
    text = KNOWN + 'tolerated_in = ["drawn_workload", "other_test"]\n'
    parse(text)
    deviations = suite_deviations(text)
    assert [(requirement, kind, test) for requirement, kind, test, _, _ in deviations] == [
        ("STRAT-010", "lost-claim", "drawn_workload"),
        ("STRAT-010", "lost-claim", "other_test"),
    ]
    (_, _, _, reason, link), _ = deviations
    assert reason.startswith("marker-restored") and link.endswith("KafkaPartitionSplitState.java")
    assert suite_deviations(KNOWN) == []  # without tolerated_in only the bank's entries tolerate it
    for wrong in ('tolerated_in = "drawn_workload"', 'tolerated_in = [""]', "tolerated_in = [3]"):
        with pytest.raises(CatalogueError, match="tolerated_in must be a list of suite test names"):
            parse(KNOWN + wrong + "\n")


def test_every_run_tolerates_librdkafkas_unrevoked_overlap_in_the_confluent_kafka_workload_only() -> None:
    """The shipped catalogue's known upstream behaviours a run tolerates (``runner.known_upstream``): librdkafka's
    eager rejoin without revoke, as CLIENT-008 ``owned-twice-unrevoked`` in the confluent-kafka client workload,
    never a plain ``owned-twice`` and never in kafka-clients' workload; each test it names exists in the suite."""
    load(None)  # the shipped catalogue checks in full
    known = known_upstream()
    assert {(d.requirement, d.kind) for d in known} == {("CLIENT-008", UNREVOKED)}
    suite = "\n".join(p.read_text() for p in (ROOT / "conformance" / "suite").glob("test_*.py"))
    for deviation in known:
        assert f"def test_{deviation.test}(" in suite, deviation.test
    ours = "required_CLIENT_001_to_009_a_drawn_client_workload_keeps_every_promise"
    java = "required_CLIENT_001_to_009_kafka_clients_keep_every_promise_of_a_drawn_workload"
    assert any(d.tolerates(ours, "CLIENT-008", UNREVOKED) for d in known)
    assert not any(d.tolerates(ours, "CLIENT-008", "owned-twice") for d in known)
    assert not any(d.tolerates(java, "CLIENT-008", UNREVOKED) for d in known)


def test_a_run_that_could_not_check_names_why() -> None:
    assert judge("fidelity", {"STRAT-010"}, Outcome(problem="kconform run exited 3: no jars"), PASSES).reason == (
        "the buggy release: kconform run exited 3: no jars"
    )


def report(code: int, statuses: dict[str, str], could_not_check: Sequence[str] = ()) -> dict[str, object]:
    rows = [{"id": i, "status": s, "reason": "broker down" if s == "ERROR" else ""} for i, s in statuses.items()]
    violated = {"fidelity": {"violated": [i for i, s in statuses.items() if s == "FAIL"]}}
    return {"exit_code": code, "requirements": rows, "could_not_check": list(could_not_check), "verdicts": violated}


def test_a_report_gives_the_failed_ids_or_why_it_could_not_check() -> None:
    assert outcome_of_report(report(0, {"STRAT-010": "PASS", "STRAT-001": "SKIP"})) == Outcome()
    assert outcome_of_report(report(1, {"STRAT-010": "FAIL", "STRAT-004": "XPASS", "STRAT-008": "PASS"})) == Outcome(
        frozenset({"STRAT-010", "STRAT-004"}), violated={"fidelity": frozenset({"STRAT-010"})}
    )
    assert outcome_of_report(report(3, {"DISC-005": "ERROR"})).problem == "kconform run exited 3: DISC-005: broker down"
    assert outcome_of_report(report(3, {}, ["no jars"])).problem == "kconform run exited 3: no jars"
    assert outcome_of_report(report(1, {"STRAT-010": "PASS"})).problem == "kconform run exited 1"


def test_the_bank_runs_both_releases_and_never_runs_a_bug_the_catalogue_says_cannot_run() -> None:
    why = "no scenario reaches it yet"
    unreachable = ENTRY.replace("KAFKA-", "CK-").replace(
        'level = "protocol"', f'level = "protocol"\ncould_not_run = "{why}"'
    )
    bugs = parse(ENTRY) + parse(unreachable)
    asked: list[tuple[str, str]] = []

    def run(bug: Bug, release: str) -> Outcome:
        asked.append((bug.id, release))
        return FAILS_010 if release == bug.buggy else PASSES

    lines: list[str] = []
    results = bank(bugs, run, lines.append)
    assert asked == [("KAFKA-14639", "3.4.0"), ("KAFKA-14639", "3.4.1")]
    assert [j for _, j in results] == [
        Judgement(Verdict.CAUGHT, "the buggy release reads Flink-faithful: no (STRAT-010)"),
        Judgement(Verdict.COULD_NOT_RUN, why),
    ]
    assert lines[0] == "[1/2] KAFKA-14639 (kafka-clients 3.4.0 -> 3.4.1, STRAT-010)"
    assert exit_code(results) == 3
    assert exit_code(results[:1]) == 0
    assert exit_code([(bugs[0], Judgement(Verdict.MISSED, ""))]) == 1


def test_a_could_not_run_reason_must_say_something() -> None:
    with pytest.raises(CatalogueError, match="could_not_run must be a non-empty reason"):
        parse(ENTRY.replace('level = "protocol"', 'level = "protocol"\ncould_not_run = " "'))


def test_the_page_is_the_same_for_the_same_results_and_names_the_replay() -> None:
    (bug,) = parse(ENTRY)
    results = [(bug, Judgement(Verdict.CAUGHT, "the buggy release reads Flink-faithful: no (STRAT-010)"))]
    coordinates = {name: c.coordinate for name, c in COMPONENTS.items()}
    page = render_page(results, coordinates, None, 1)
    assert page == render_page(results, coordinates, None, 1)
    assert "**1/1 caught on an intended id**" in page
    assert "`org.apache.kafka:kafka-clients:3.4.0` → `org.apache.kafka:kafka-clients:3.4.1`" in page
    assert "`kconform bugbank --only KAFKA-14639`" in page
    assert "--catalogue mine.toml" in render_page(results, coordinates, "mine.toml", 1)


def test_the_run_is_the_ordinary_suite_on_the_bugs_selection() -> None:
    (bug,) = parse(ENTRY)
    line = run_command(bug, "m:a", "quick", 7, Path("r"))
    assert line[:2] == ["kconform", "run"]
    assert " ".join(line[2:]) == (
        "--adapter m:a --level protocol --only STRAT-010 --profile quick --seed 7 --report r --examples r/examples"
    )


def test_an_entry_s_draws_are_its_runs_workload_draws_and_must_be_a_positive_count() -> None:
    """A bug a workload reaches in a fraction of its draws says how many its runs draw; nothing else may."""
    (bug,) = parse(ENTRY + "draws = 20\n")
    assert bug.draws == 20
    assert run_command(bug, "m:a", "quick", 7, Path("r"))[-2:] == ["--workload-draws", "20"]
    (plain,) = parse(ENTRY)
    assert plain.draws is None and "--workload-draws" not in run_command(plain, "m:a", "quick", 7, Path("r"))
    for wrong in ("0", "-3", '"20"', "2.5", "true"):
        with pytest.raises(CatalogueError, match="draws must be a positive whole number"):
            parse(ENTRY + f"draws = {wrong}\n")


def test_a_release_build_is_cached_and_named_by_its_version(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KCONFORM_JVM_DIR", str(tmp_path))
    monkeypatch.setattr(oracle_at_release, "maven_tools", lambda: "mvn")
    commands: list[list[str]] = []

    def maven(line: Sequence[str], say: object) -> int:
        commands.append(list(line))
        out = Path(next(a for a in line if a.startswith("-Dkconform.jvm.dir=")).partition("=")[2]) / "kafka-oracle"
        out.mkdir(parents=True)
        (out / "kafka-oracle-0.1.0.jar").write_bytes(b"jar")
        (out / "kafka-clients-3.4.0.jar").write_bytes(b"jar")
        return 0

    built = build_at_release("3.4.0", lambda _: None, maven)
    assert built == tmp_path / "releases" / "kafka-clients-3.4.0" / "kafka-oracle"
    assert "-Dkafka.version=3.4.0" in commands[0]
    assert commands[0][commands[0].index("-f") + 1].endswith("kafka-oracle/pom.xml")  # the oracle alone
    assert build_at_release("3.4.0", lambda _: None, maven) == built
    assert len(commands) == 1  # the second call started no Maven
    assert oracle_module({KAFKA_CLIENTS_VERSION_ENV: "3.4.0"}) == "releases/kafka-clients-3.4.0/kafka-oracle"
    assert oracle_module({}) == "kafka-oracle"
    with pytest.raises(ValueError, match="not a kafka-clients release"):
        oracle_module({KAFKA_CLIENTS_VERSION_ENV: "../../etc"})


def test_a_confluent_kafka_release_is_a_cached_folder_first_on_the_child_s_path(tmp_path: Path) -> None:
    """Where a release goes (override, checkout, user cache), what pip is asked, and the child's PYTHONPATH."""
    home, checkout = tmp_path / "home", tmp_path / "checkout"
    assert releases_dir({"KCONFORM_RELEASES_DIR": "/r"}, checkout, home) == Path("/r")
    assert releases_dir({}, checkout, home) == checkout / ".releases"
    assert releases_dir({}, None, home) == home / ".cache" / "kconform" / "releases"
    folder = release_folder(tmp_path, "2.13.0")
    assert folder == tmp_path / "confluent-kafka-2.13.0"
    with pytest.raises(ReleaseInstallError, match="not a confluent-kafka release"):
        release_folder(tmp_path, "../2.13.0")
    line = pip_command("py", "2.13.0", folder)
    assert line[-1] == "confluent-kafka==2.13.0" and line[line.index("--target") + 1] == str(folder)
    assert {"--no-deps", ":all:"} <= set(line)  # the wheel alone, never a build from source
    assert child_env(folder, {}) == {"PYTHONPATH": str(folder)}
    assert child_env(folder, {"PYTHONPATH": "/mine"}) == {"PYTHONPATH": f"{folder}{os.pathsep}/mine"}


def test_setup_keeps_the_release_builds_it_did_not_make() -> None:
    folder = Folder(frozenset({"kafka-oracle", "releases", ".resolved", "mine"}), None, frozenset())
    assert foreign_entries(folder, ["kafka-oracle"]) == ["mine"]


@pytest.mark.jvm
def test_a_bug_added_to_a_catalogue_of_ones_own_runs_with_no_code_change(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """KAFKA-14639 under another id in a temporary catalogue: the buggy release fails STRAT-010, the fixed passes."""
    catalogue = tmp_path / "mine.toml"
    catalogue.write_text(ENTRY.replace('id = "KAFKA-14639"', 'id = "MINE-1"'))
    page = tmp_path / "bank.md"
    argv = ["--catalogue", str(catalogue), "--profile", "quick", "--reports", str(tmp_path / "r"), "--page", str(page)]
    assert command.main(argv) == 0, capsys.readouterr().out
    assert "1/1 caught on an intended id" in capsys.readouterr().out
    assert "**caught**: the buggy release reads Flink-faithful: no (STRAT-010)" in page.read_text()
    assert json.loads((tmp_path / "r" / "MINE-1" / "3.4.0" / "report.json").read_text())["exit_code"] == 1


@pytest.mark.parametrize(
    "bug",
    [
        pytest.param("KAFKA-15106", marks=pytest.mark.jvm),
        pytest.param("librdkafka-5213", marks=pytest.mark.integration),
        # FLINK-36780: its buggy release fails the explicit schedule's first run (35 s), its fixed one passes the
        # five draws (167 s); FLINK-32019's releases both carry FLINK-34470, whose bounded readers never end (a
        # minute each, twelve schedules)
        pytest.param("FLINK-36780", marks=pytest.mark.flink),
    ],
)
def test_the_fastest_shipped_bug_of_a_component_is_caught_as_make_bugbank_runs_it(
    bug: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """One shipped bug per component, each release made ready on demand as a user's first run does. pyspark's
    (SPARK-53560) is left to ``make bugbank``: its two releases are a 300-450 MB download each."""
    assert command.main(["--only", bug, "--profile", "quick", "--reports", str(tmp_path)]) == 0, capsys.readouterr()
    assert "1/1 caught on an intended id" in capsys.readouterr().out


def test_the_committed_page_has_a_row_for_every_bug_of_the_catalogue() -> None:
    """``make bugbank`` regenerates docs/bugbank.md; a bug added without regenerating it is caught here."""
    page = (Path(__file__).resolve().parents[1] / "docs" / "bugbank.md").read_text()
    rows = [line for line in page.splitlines() if line.startswith("| [")]
    assert [row.split("]", 1)[0][3:] for row in rows] == [bug.id for bug in load(None)]


def test_a_run_that_died_of_a_signal_without_a_report_is_run_once_more(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """librdkafka 2.2.0 once segfaulted inside a run of its bug (1 run in 7 here): a crash is no evidence."""
    (bug,) = parse(ENTRY)
    fake = COMPONENTS[bug.component].__class__(bug.component, "c", "m:a", lambda release, say: {})
    monkeypatch.setitem(command.COMPONENTS, bug.component, fake)
    exits = iter([-11, 1, -11, -11])

    def child(argv: Sequence[str], **_: object) -> subprocess.CompletedProcess[str]:
        code = next(exits)
        if code >= 0:
            report = Path(argv[argv.index("--report") + 1])
            report.mkdir(parents=True, exist_ok=True)
            (report / "report.json").write_text(
                json.dumps({"exit_code": 1, "requirements": [{"id": "STRAT-010", "status": "FAIL"}]})
            )
        return subprocess.CompletedProcess(argv, code, "out", "Fatal Python error: Segmentation fault")

    monkeypatch.setattr(command.subprocess, "run", child)
    said: list[str] = []
    run = command.release_runner("quick", 1, tmp_path, said.append)
    assert run(bug, "3.4.0") == Outcome(frozenset({"STRAT-010"}))  # a report without verdicts: no class read
    assert any("died of a signal" in line and "once more" in line for line in said)
    assert "Segmentation fault" in (tmp_path / bug.id / "3.4.0" / "run.log").read_text()
    twice = run(bug, "3.4.1")
    assert twice.problem is not None and "exited -11 without a report" in twice.problem
    assert not command.died_without_evidence(1, None) and command.died_without_evidence(-9, None)
    crash = {"pid": 7, "signal": 11, "signal_name": "SIGSEGV", "test": "t.py::x", "test_name": "x", "first_frames": []}
    assert command.died_without_evidence(3, {"crashes": [crash], "tests": []})
    assert not command.died_without_evidence(3, {"crashes": [], "tests": [{"status": "ERROR", "message": "broker"}]})
    # the report's crashes say it, not a test's message: a message that reads like a death is no crash
    died = {"status": "ERROR", "message": "the process running the suite (pid 7) died of SIGSEGV (signal 11) while"}
    assert not command.died_without_evidence(3, {"crashes": [], "tests": [died]})


def test_two_entries_asking_for_the_same_run_of_a_release_share_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two bugs fixed in one release and judged by one selection with the same draws and tolerated kinds ask for
    the same run of it: the bank runs it once and says so; another selection, other draws, another release or a run
    that ended in a problem is run on its own."""
    first, second = parse(ENTRY + ENTRY.replace("KAFKA-14639", "KAFKA-1").replace('buggy = "3.4.0"', 'buggy = "3.3.0"'))
    other_draws = parse(ENTRY.replace("KAFKA-14639", "KAFKA-2") + "draws = 3\n")[0]
    other_only = parse(ENTRY.replace("KAFKA-14639", "KAFKA-3").replace('only = "STRAT-010"', 'only = "STRAT"'))[0]
    assert command.run_key(first, "3.4.1") == command.run_key(second, "3.4.1")
    assert command.run_key(first, "3.4.1") != command.run_key(other_draws, "3.4.1")
    fake = COMPONENTS[first.component].__class__(first.component, "c", "m:a", lambda release, say: {})
    monkeypatch.setitem(command.COMPONENTS, first.component, fake)
    ran: list[str] = []
    codes = iter([0, 0, 0, 0, 3, 3])

    def child(argv: Sequence[str], **_: object) -> subprocess.CompletedProcess[str]:
        report = Path(argv[argv.index("--report") + 1])
        ran.append(str(report.relative_to(tmp_path)))
        report.mkdir(parents=True, exist_ok=True)
        code = next(codes)
        if code == 0:
            (report / "report.json").write_text(json.dumps({"exit_code": 0, "requirements": []}))
        return subprocess.CompletedProcess(argv, code, "", "")

    monkeypatch.setattr(command.subprocess, "run", child)
    said: list[str] = []
    run = command.release_runner("quick", 1, tmp_path, said.append)
    stale = tmp_path / "KAFKA-1" / "3.4.1"
    stale.mkdir(parents=True)
    (stale / "report.json").write_text("{}")  # an earlier bank's
    assert run(first, "3.4.1") == run(second, "3.4.1") == Outcome()
    assert ran == ["KAFKA-14639/3.4.1"]
    assert (stale / command.SHARED).read_text().strip() == str(tmp_path / "KAFKA-14639" / "3.4.1")
    assert not (stale / "report.json").exists()
    assert any("the same run as" in line and "reused" in line for line in said)
    (tmp_path / "KAFKA-2" / "3.4.1").mkdir(parents=True)
    (tmp_path / "KAFKA-2" / "3.4.1" / command.SHARED).write_text("an earlier bank's\n")
    run(other_draws, "3.4.1"), run(other_only, "3.4.1"), run(second, "3.3.0")
    assert ran[1:] == ["KAFKA-2/3.4.1", "KAFKA-3/3.4.1", "KAFKA-1/3.3.0"]
    assert not (tmp_path / "KAFKA-2" / "3.4.1" / command.SHARED).exists()  # its own run now
    # a run that ended in a problem is not reused: each of these runs
    broken = parse(ENTRY.replace("KAFKA-14639", "KAFKA-4") + ENTRY.replace("KAFKA-14639", "KAFKA-5"))
    assert all(run(b, "3.9.9").problem is not None for b in broken)
    assert ran[4:] == ["KAFKA-4/3.9.9", "KAFKA-5/3.9.9"]


def recorded(name: str) -> Outcome:
    return outcome_of_report(json.loads((RECORDED / f"{name}.json").read_text()))


LIVE_BUG = ENTRY.replace("KAFKA-14639", "SPARK-55271").replace('["STRAT-010"]', '["LIVE-001"]')
SAFETY_BUG = ENTRY.replace("KAFKA-14639", "MINE-2").replace('["STRAT-010"]', '["ASSIGN-007"]')


def test_a_recorded_report_gives_each_class_it_reads_no_on() -> None:
    assert recorded("live-no").violated == {"liveness": frozenset({"LIVE-001"})}
    assert recorded("live-no").reads() == "live: no (LIVE-001)"
    assert recorded("safe-no").reads() == "safe: no (ASSIGN-007)"
    assert recorded("passes") == Outcome() and recorded("passes").reads() == "passes"


def test_a_liveness_bug_is_caught_when_its_buggy_release_reads_live_no_and_its_fixed_one_does_not() -> None:
    (bug,) = parse(LIVE_BUG)
    assert bug.category == "liveness"
    caught = judge(bug.category, bug.requirements, recorded("live-no"), recorded("passes"))
    assert caught == Judgement(Verdict.CAUGHT, "the buggy release reads live: no (LIVE-001)")
    alarm = judge(bug.category, bug.requirements, recorded("live-no"), recorded("live-no"))
    assert alarm == Judgement(Verdict.FALSE_ALARM, "the fixed release reads live: no (LIVE-001)")
    unsafe_fix = judge(bug.category, bug.requirements, recorded("live-no"), recorded("safe-no"))
    assert unsafe_fix == Judgement(Verdict.FALSE_ALARM, "the fixed release reads safe: no (ASSIGN-007)")
    lost = judge(bug.category, bug.requirements, recorded("safe-no"), recorded("passes"))  # records lost: not this bug
    assert lost == Judgement(
        Verdict.OFF_TARGET, "the buggy release reads safe: no (ASSIGN-007), not live: no on LIVE-001"
    )
    missed = judge(bug.category, bug.requirements, recorded("passes"), recorded("passes"))
    assert missed == Judgement(Verdict.MISSED, "both releases pass (the buggy one was to read live: no on LIVE-001)")


def test_a_safety_bug_must_read_safe_no_and_a_hang_is_not_it() -> None:
    (bug,) = parse(SAFETY_BUG)
    assert judge(bug.category, bug.requirements, recorded("safe-no"), recorded("passes")).reason == (
        "the buggy release reads safe: no (ASSIGN-007)"
    )
    hung = judge(bug.category, bug.requirements, recorded("live-no"), recorded("passes"))
    assert hung.verdict is Verdict.OFF_TARGET and "reads live: no (LIVE-001), not safe: no on ASSIGN-007" in hung.reason
    both = Outcome(frozenset({"ASSIGN-007", "LIVE-001"}), violated={"safety": frozenset({"ASSIGN-007"}),
                                                                     "liveness": frozenset({"LIVE-001"})})  # fmt: skip
    assert judge(bug.category, bug.requirements, both, PASSES).reason == (
        "the buggy release reads safe: no (ASSIGN-007); also live: no (LIVE-001)"
    )


def test_the_page_rendered_from_recorded_runs_says_what_each_buggy_release_must_read() -> None:
    bugs = parse(LIVE_BUG) + parse(SAFETY_BUG) + parse(ENTRY)
    runs = {"SPARK-55271": "live-no", "MINE-2": "safe-no", "KAFKA-14639": "live-no"}
    results = [(b, judge(b.category, b.requirements, recorded(runs[b.id]), recorded("passes"))) for b in bugs]
    coordinates = {name: c.coordinate for name, c in COMPONENTS.items()}
    page = render_page(results, coordinates, None, 1)
    assert "**2/3 caught on an intended id** (Hypothesis seed 1): safety 1/1, liveness 1/1, fidelity 0/1." in page
    rows = {line.split("]", 1)[0][3:]: line for line in page.splitlines() if line.startswith("| [")}
    assert "| LIVE-001 | `live: no` | **caught**: the buggy release reads live: no (LIVE-001) |" in rows["SPARK-55271"]
    assert "| ASSIGN-007 | `safe: no` | **caught**: the buggy release reads safe: no (ASSIGN-007) |" in rows["MINE-2"]
    assert (
        "| STRAT-010 | `Flink-faithful: no` | **caught off target**: the buggy release reads live: no (LIVE-001)"
        in (rows["KAFKA-14639"])
    )
    assert all(row.count(" | ") == 6 for row in rows.values())  # seven columns, as the header
