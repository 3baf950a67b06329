"""How the suite reads the end of a schedule's child process (``workloads.clients.isolated``), without a broker."""

from __future__ import annotations

import contextlib
import os
import signal
import sys
from collections.abc import Iterator

from kconform.conformance.workloads.clients import isolated
from kconform.conformance.workloads.clients.history import Crashed, Hung, Note

STREAMED = isolated.Streamed(
    [Note(seq=0, client="run", at=2.5, text="x")],
    {},
    {"c0#0": ("close", True, 2.0), "p0": ("flush", False, 1.0), "run": ("step 6 of 9: close(client=0)", True, 2.0)},
)


def test_a_child_killed_by_a_signal_crashed_with_the_call_each_client_was_in() -> None:
    ending = isolated._ending(-signal.SIGABRT, False, STREAMED, 60.0, "Assertion `x' failed.")
    assert isinstance(ending, Crashed), ending
    assert (ending.how, ending.signal, ending.exit_code, ending.seq, ending.at) == (
        "SIGABRT (signal 6)",
        6,
        None,
        1,
        2.5,
    )
    assert ending.last == (
        ("c0#0", "close", True, 2.0),
        ("p0", "flush", False, 1.0),
        ("run", "step 6 of 9: close(client=0)", True, 2.0),
    )
    assert ending.stderr == "Assertion `x' failed."


def test_a_child_that_exits_abnormally_crashed_and_one_that_exits_normally_did_not() -> None:
    ending = isolated._ending(3, False, STREAMED, 60.0, "")
    assert isinstance(ending, Crashed) and (ending.how, ending.signal, ending.exit_code) == ("exit code 3", None, 3)
    assert isolated._ending(0, False, STREAMED, 60.0, "") is None


def test_a_child_the_suite_killed_at_its_bound_hung_naming_the_calls_under_way() -> None:
    ending = isolated._ending(-signal.SIGKILL, True, STREAMED, 60.0, "")
    assert isinstance(ending, Hung) and ending.client == "run" and ending.bound_s == 60.0, ending
    assert ending.call == (
        "the schedule's run in its child process (c0#0 in close; run in step 6 of 9: close(client=0))"
    ), ending.call


def test_the_child_imports_this_interpreters_path_first() -> None:
    path = isolated.child_env()["PYTHONPATH"].split(os.pathsep)
    assert path == [p for p in sys.path if p]


def test_a_run_the_suites_driver_broke_in_the_child_is_could_not_check_not_a_violation() -> None:
    """The child's driver raising what it does not expect is a bug of kconform: the suite test reads it as it reads
    a harness failure (``IsolatedCouldNotCheck``: ERROR, exit 3), never as a failure of every id it states."""
    failed = isolated.IsolatedRunFailed("the schedule's run failed in its child process:\nValueError: '.'")
    assert isinstance(failed, isolated.IsolatedCouldNotCheck)


class FaultedBroker:
    """Records the faults the parent carries out for its child."""

    def __init__(self) -> None:
        self.did: list[str] = []

    def stop_node(self, node_id: int, clean: bool = True) -> None:
        self.did.append(f"stop {node_id} {clean}")

    def start_node(self, node_id: int) -> None:
        self.did.append(f"start {node_id}")

    @contextlib.contextmanager
    def paused(self, node_id: int) -> Iterator[None]:
        self.did.append(f"pause {node_id}")
        try:
            yield
        finally:
            self.did.append(f"resume {node_id}")


def test_a_node_the_child_stopped_or_paused_is_started_or_resumed_however_the_child_ends() -> None:
    """A fault that spans steps: the child asks the parent to stop a node and, later, to start it; a child that dies
    between the two leaves the node to the parent, which starts it again when it stops serving the child (before the
    suite reads the log), as it resumes a node the child paused."""
    broker = FaultedBroker()
    with contextlib.ExitStack() as stack:
        held: dict[int, contextlib.ExitStack] = {}
        assert isolated._fault(broker, ("stop", 1, False), held, stack) == (True, "")
        assert isolated._fault(broker, ("start", 1), held, stack) == (True, "")
        assert broker.did == ["stop 1 False", "start 1"] and not held
        assert isolated._fault(broker, ("stop", 1, True), held, stack) == (True, "")
        assert isolated._fault(broker, ("pause", 2), held, stack) == (True, "")
        assert broker.did[2:] == ["stop 1 True", "pause 2"]  # the child dies here
    assert sorted(broker.did[4:]) == ["resume 2", "start 1"]
