"""Checkers of the exactly-once sink's scenarios: pure functions over what a run raised and what a
``read_committed`` reader then saw.

The sink suite's scenarios (two sinks on one log, recoveries of one checkpoint, expired ids) each end
in an observation: the error a step raised, if any, and the committed values; these functions judge
it, as ``check_sink_history`` judges the state machine's whole history. An error is passed as its
text (or the exception where its type is the judgment); ``None`` means the step raised nothing.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence

from ...reference_impl.ports import KafkaError
from .checkers import Violation, value_field, values_field


def check_distinct_ids(written: Iterable[bytes], committed: Iterable[bytes], fenced: str | None) -> list[Violation]:
    """COMMIT-005: two sinks (and their subtasks) on one log share no transactional id. A writer fenced by
    another (``fenced``: its error) is the collision itself; otherwise every written value is visible."""
    if fenced is not None:
        return [
            Violation("COMMIT-005", "id-collision", f"a writer was fenced by another: {fenced}", data={"error": fenced})
        ]
    return [
        Violation("COMMIT-005", "id-collision", f"lost {v!r}", data={"value": value_field(v), "times": 0})
        for v in sorted(set(written) - set(committed))
    ]


def check_timeout_surfaced(raised: BaseException | None) -> list[Violation]:
    """COMMIT-007: committing a transaction the broker timed out raises the log's ``KafkaError``, neither
    another error (``raised``: what the commit raised) nor success (``None``)."""
    if isinstance(raised, KafkaError):
        return []
    if raised is not None:
        where = f"the timeout became another error: {raised}"
        return [Violation("COMMIT-007", "swallowed-error", where, data={"error": str(raised)})]
    where = "committing a timed-out transaction reported success"
    return [Violation("COMMIT-007", "swallowed-error", where, data={"error": None})]


def check_recovery_succeeded(checkpoint: int, error: str | None, faulted: bool) -> list[Violation]:
    """COMMIT-003: a recovery from the last completed checkpoint commits what it says was pre-committed, so it
    fails only when something outside the job destroyed those transactions (``faulted``: another job initialised
    the sink's ids; COMMIT-007 then asks that it fail loudly). Failing otherwise leaves a job that can never
    restart from its checkpoint: a pooled id reused while that checkpoint still names it, say."""
    if error is None or faulted:
        return []
    where = f"recovery from checkpoint {checkpoint} failed with no fault outside the job: {error}"
    return [Violation("COMMIT-003", "recovery-failed", where, data={"checkpoint": checkpoint, "error": error})]


def check_intervals_committed(
    written: Iterable[bytes], committed: Iterable[bytes], step: str, error: str | None
) -> list[Violation]:
    """COMMIT-014: checkpoints whose intervals wrote nothing (on some subtasks or all) still commit, and a
    recovery from the last commits what it holds: no step fails (``error``, raised at ``step``), and
    every written value is visible."""
    if error is not None:
        facts = {"step": step, "error": error}
        return [Violation("COMMIT-014", "empty-transaction-committed", f"{step} failed: {error}", data=facts)]
    missing = sorted(set(written) - set(committed))
    where = f"committed checkpoints lost {missing}"
    return [Violation("COMMIT-014", "interval-lost", where, data={"values": values_field(missing)})] * bool(missing)


def check_second_recovery(
    checkpointed: Iterable[bytes], uncheckpointed: Iterable[bytes], committed: Iterable[bytes], step: str,
    error: str | None,
) -> list[Violation]:  # fmt: skip
    """COMMIT-003 and COMMIT-010 after a checkpoint is recovered twice: both recoveries succeed (``error``,
    raised at ``step``); what the checkpoint covers is visible, what was written after the first recovery
    (never checkpointed as complete) is not."""
    if error is not None:
        facts = {"step": step, "error": error}
        return [Violation("COMMIT-010", "recovery-failed", f"{step} failed: {error}", data=facts)]
    visible = set(committed)
    leaked = sorted(set(uncheckpointed) & visible)
    missing = sorted(set(checkpointed) - visible)
    out = [
        Violation(
            "COMMIT-010", "recovery-commits-uncheckpointed", f"visible: {leaked}", data={"values": values_field(leaked)}
        )
    ] * bool(leaked)
    return out + [
        Violation("COMMIT-003", "lost-checkpointed", f"missing: {missing}", data={"values": values_field(missing)})
    ] * bool(missing)


def check_foreign_transactions_kept(
    prefix: str, written: Iterable[bytes], committed: Iterable[bytes], error: str | None
) -> list[Violation]:
    """COMMIT-016: another sink's recovery aborts none of the transactions of the sink under ``prefix``,
    whose ids start with its own: that sink commits without an error, and all it wrote is visible."""
    if error is not None:
        where = f"sink {prefix!r} could not commit: {error}"
        return [Violation("COMMIT-016", "foreign-transaction-aborted", where, data={"prefix": prefix, "error": error})]
    missing = sorted(set(written) - set(committed))
    facts = {"prefix": prefix, "values": values_field(missing)}
    where = f"sink {prefix!r} lost {missing}"
    return [Violation("COMMIT-016", "foreign-transaction-aborted", where, data=facts)] * bool(missing)


def check_old_prefix_closed(
    expected: Iterable[bytes], committed: Iterable[bytes], stable: Mapping[int, int]
) -> list[Violation]:
    """COMMIT-017: after a restart under a new prefix, no transaction of the old one stays open: every value
    the new run committed (and the checkpoint it restored) is visible; ``stable``, partition -> last stable
    offset, shows where an open transaction holds readers back."""
    hidden = sorted(set(expected) - set(committed))
    why = f"not visible read_committed: {hidden}; last stable offsets {dict(stable)}"
    facts = {
        "values": values_field(hidden),
        "stable": [{"partition": p, "offset": o} for p, o in sorted(stable.items())],
    }
    return [Violation("COMMIT-017", "old-prefix-left-open", why, data=facts)] * bool(hidden)


def check_expired_ids_refused(ids: list[str], committed: bool, error: str | None) -> list[Violation]:
    """COMMIT-019: recovering a checkpoint whose transactional ``ids`` the broker has forgotten fails with
    an error (``error``: ``Type: message``) that names one of them; it never reports the checkpoint
    committed. ``committed``: whether the checkpoint had committed before (if not, its records are lost)."""
    if error is None:
        lost = "" if committed else " (it never committed: its records are lost)"
        where = f"recovery of checkpoint 1 succeeded though the broker had forgotten its ids {ids}{lost}"
        facts = {"transactional_ids": ids, "checkpoint": 1, "committed": committed, "error": None}
        return [Violation("COMMIT-019", "expired-id-swallowed", where, data=facts)]
    if any(tid in error for tid in ids):
        return []
    where = f"recovery failed with {error}, naming none of {ids}"
    return [Violation("COMMIT-025", "expired-id-unnamed", where, data={"transactional_ids": ids, "error": error})]


def check_prefixes_refused(prefixes: Sequence[str], error: str | None, started: Sequence[str]) -> list[Violation]:
    """COMMIT-022: a job whose sinks' ``prefixes`` include an empty or a repeated one is refused at start
    (``error``: what starting it raised, ``None`` if nothing), before its sinks start (``started``: what shows
    they did, the transactional ids the log holds afterwards or the values a Flink job's sink wrote), by an
    error that names the prefix; a job of distinct, non-empty prefixes starts."""
    empty = [i for i, prefix in enumerate(prefixes) if not prefix]
    shared = sorted(prefix for prefix, sinks in Counter(prefixes).items() if prefix and sinks > 1)
    facts = {"prefixes": list(prefixes), "error": error, "started": sorted(started)}
    if not empty and not shared:
        why = f"sinks of distinct prefixes {list(prefixes)} were refused: {error}"
        return [Violation("COMMIT-022", "valid-prefixes-refused", why, data=facts)] * (error is not None)
    if error is None:
        kind, what = (
            ("missing-prefix-accepted", f"sinks {empty} without one")
            if empty
            else (
                "duplicate-prefix-accepted",
                f"sinks sharing {shared[0]!r}",
            )
        )
        return [Violation("COMMIT-022", kind, f"a job with {what} started: {list(prefixes)}", data=facts)]
    late = f"refused only after its sinks started ({sorted(started)}): {error}"
    out = [Violation("COMMIT-022", "refused-after-start", late, data=facts)] * bool(started)
    named = "prefix" in error.lower() and (bool(empty) or shared[0] in error)  # either problem may be the one named
    why = f"the refusal does not name the {'missing prefix' if empty else repr(shared[0])}: {error}"
    return out + [Violation("COMMIT-027", "refusal-unnamed", why, data=facts)] * (not named)  # judged apart


def check_naming_switched(
    old: str,
    new: str,
    expected: Iterable[bytes],
    committed: Sequence[bytes],
    stable: Mapping[int, int],
    ends: Mapping[int, int],
    refused: str | None,
) -> list[Violation]:
    """COMMIT-023: a sink restored under naming ``new`` from a checkpoint taken under ``old`` loses no value of
    the checkpoint or of the new run (``expected``), commits none twice (``committed``, in log order) and leaves
    no transaction of the old naming open: each partition's last stable offset (``stable``) reaches its end
    (``ends``). A sink may instead refuse the switch at start (``refused``: its error, naming ``new``); the
    values then come from a restore under ``old``, which must still find the checkpoint intact."""
    facts: dict[str, object] = {"naming": old, "to": new, "error": refused}
    found = []
    if refused is not None and new not in refused.lower():
        why = f"the refused switch {old} -> {new} does not name {new}: {refused}"
        found.append(Violation("COMMIT-028", "refusal-unnamed", why, data=facts))
    blocked = {p: (o, ends[p]) for p, o in sorted(stable.items()) if o < ends.get(p, o)}
    hidden = sorted(set(expected) - set(committed))
    if blocked:
        why = f"after {old} -> {new}, open transactions hold readers back: (stable, end) {blocked}"
        held = [{"partition": p, "offset": o, "high_watermark": end} for p, (o, end) in blocked.items()]
        evidence = {**facts, "stable": held, "values": values_field(hidden)}
        found.append(Violation("COMMIT-023", "old-naming-left-open", why, data=evidence))
    elif hidden:
        why = f"after {old} -> {new}, not visible read_committed: {hidden}"
        found.append(Violation("COMMIT-023", "switch-lost-write", why, data={**facts, "values": values_field(hidden)}))
    twice = sorted(v for v, times in Counter(committed).items() if times > 1)
    if twice:
        why = f"after {old} -> {new}, visible more than once: {twice}"
        found.append(Violation("COMMIT-023", "switch-duplicate", why, data={**facts, "values": values_field(twice)}))
    return found


def check_timeout_outlived(
    ages: Mapping[str, int], timeout_ms: int, step: str, error: str | None, lost: Iterable[bytes]
) -> list[Violation]:
    """COMMIT-021: a checkpoint's transactions, by id, were ``ages`` ms old (first record to the step that
    ended the run: the rest of the interval, the checkpoint, any downtime) under ``transaction.timeout.ms`` =
    ``timeout_ms``. The broker aborted those past it: the sink must fail (``error``: ``Type: message``) naming
    one of them and the timeout, never report them committed. Within it they commit: no error, nothing
    ``lost`` (written by the checkpoint, not visible read_committed)."""
    expired = sorted(tid for tid, age in ages.items() if age > timeout_ms)
    missing = sorted(set(lost))
    facts = {
        "transactional_ids": expired,
        "ages": [{"transactional_id": tid, "age_ms": age} for tid, age in sorted(ages.items())],
        "timeout_ms": timeout_ms,
        "step": step,
        "error": error,
    }
    if not expired:
        if error is not None:
            where = f"{step} failed though no transaction was older than {timeout_ms} ms ({dict(ages)}): {error}"
            return [Violation("COMMIT-021", "failed-within-timeout", where, data=facts)]
        where = f"{step} succeeded within the timeout but lost {missing}"
        return [
            Violation("COMMIT-021", "lost-within-timeout", where, data={**facts, "values": values_field(missing)})
        ] * bool(missing)
    if error is None:
        where = (
            f"{step} succeeded though the broker aborted {expired} after transaction.timeout.ms = {timeout_ms} ms "
            f"(ages {dict(ages)}): lost {missing}"
        )
        return [Violation("COMMIT-021", "timeout-swallowed", where, data={**facts, "values": values_field(missing)})]
    names_id = any(tid in error for tid in expired)
    names_timeout = "transaction.timeout.ms" in error or str(timeout_ms) in error
    if names_id and names_timeout:
        return []
    unnamed = [what for what, named in (("a timed-out id", names_id), ("the timeout", names_timeout)) if not named]
    where = f"{step} failed with {error}, without {' or '.join(unnamed)} (timed out: {expired})"
    return [Violation("COMMIT-026", "timeout-unnamed", where, data=facts)]
