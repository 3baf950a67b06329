"""A client workload's schedule carried out in a child process, so that a crash of the judged client is a finding.

confluent-kafka runs librdkafka inside the process that imports it: a failed assertion of librdkafka aborts that
process, a bad access segfaults it, and with it would go the suite and every verdict. ``run_isolated`` therefore
spawns, for each schedule, a child of the same interpreter with the same import path (so the same confluent-kafka
release), hands it the schedule, the broker's client settings and the clients port, and reads what it streams as
the run goes (``driver.Watcher``): every event as it is recorded, each client's settings as it opens, the call each
client (and the run) began and whether it returned. The broker's faults are the suite's to carry out (it owns the
broker's processes): the child asks for a restart, a stop, a start, a pause or a resume and waits for the answer; a
node it stopped or paused is started or resumed however the child ends, before the suite reads the log.

How the child ends decides the history the parent judges:

- it sent its ``History``: that history, as an in-process run would have given it (a death after it, while its
  interpreter exited and librdkafka's clients were destroyed, is appended as ``Crashed``);
- it died (a signal, or an exit the run did not make) before: the events it streamed up to its death, ``Crashed``
  (how it died, each client's last call, the end of its stderr), and the log the suite reads itself afterwards
  (``driver.read_log``). The history is not drained (``History.drained`` false, no ``Convergence``): the checkers
  that need a finished read (``check_group_read_everything``) or the drain's wait (``check_converged``) say nothing,
  so records a consumer had not yet read when the process died are not lost; the others judge events as they came,
  which a death at the end of them does not change (a crash is every client stopping at once);
- it outlived ``bound_s`` (the suite's bound for one schedule): killed, and its events so far end with ``Hung``
  (client ``run``), judged as the death above is;
- its run failed for the harness's reason (the broker, an admin call: ``IsolatedCouldNotCheck``) or a bug of the
  suite (``IsolatedRunFailed``, its traceback): raised, as the run itself would have raised in process; both are
  could-not-check (ERROR), since neither says anything of the client judged.
"""

from __future__ import annotations

import contextlib
import faulthandler
import os
import pickle
import queue
import signal
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Final

from .history import ClientInfo, Crashed, Event, History, Hung, Note

CHILD_MODULE: Final = "kconform.conformance.workloads.clients.isolated"
ROLES: Final = ("admin", "producer", "consumer")
EXIT_WAIT_S: Final = 30.0
"""How long a child that sent its history may take to exit (its interpreter's end destroys its clients)."""
KILL_WAIT_S: Final = 10.0
STDERR_TAIL: Final = 3000
"""How much of the end of the child's stderr a ``Crashed`` keeps."""
STACKS_BEFORE_S: Final = 5.0
"""How long before its bound the child writes every thread's Python stack to its stderr, so that a child killed at
the bound shows where it was."""


class IsolatedCouldNotCheck(RuntimeError):
    """The child's run failed for the harness's reason (the broker, a topic change, an admin call): nothing judged."""


class IsolatedRunFailed(IsolatedCouldNotCheck):
    """The child's run raised what the suite does not expect (its traceback is the message): a bug of the suite's
    driver, so nothing was judged (could-not-check, ERROR), never a violation of every id the test states."""


@dataclass(frozen=True)
class NodeView:
    node_id: int


@dataclass(frozen=True)
class BrokerView:
    """What the child's run needs of the broker: where it is, its client settings per role, and its nodes' ids (the
    faults themselves are the parent's)."""

    bootstrap_servers: str
    configs: Mapping[str, Mapping[str, Any]]
    node_ids: tuple[int, ...]


@dataclass(frozen=True)
class Job:
    schedule: Any
    broker: BrokerView
    clients: Any
    """The driver's ``Clients`` port (picklable; ``None``: the real confluent-kafka)."""
    prefix: str
    bound_s: float


# -- the child -----------------------------------------------------------------------------------------------------


class Channel:
    """The child's end: frames to the parent (pickled, one after another), answers from it."""

    def __init__(self, out: IO[bytes], answers: IO[bytes]) -> None:
        self._out, self._answers = out, answers
        self._lock = threading.Lock()
        self._asking = threading.Lock()

    def send(self, *frame: Any) -> None:
        with self._lock:
            pickle.dump(frame, self._out, protocol=pickle.HIGHEST_PROTOCOL)
            self._out.flush()

    def ask(self, *request: Any) -> None:
        """A fault carried out by the parent, one at a time (the run's thread asks, or the thread that heals a fault
        spanning steps while the run's thread goes on); its failure raised here as the broker's
        (``BrokerStartError``)."""
        from ...brokers.base import BrokerStartError

        with self._asking:
            self.send("ask", *request)
            ok, text = pickle.load(self._answers)
        if not ok:
            raise BrokerStartError(text)


class Streaming:
    """The child run's ``driver.Watcher``: everything it learns goes to the parent at once."""

    def __init__(self, channel: Channel) -> None:
        self._channel = channel
        self.clock: Callable[[], float] = lambda: 0.0
        """The run's clock, as its events' ``at`` reads it (``Recorder.now``)."""

    def event(self, event: Event) -> None:
        self._channel.send("event", event)

    def client(self, name: str, info: ClientInfo) -> None:
        self._channel.send("client", name, info)

    def doing(self, client: str, what: str | None) -> None:
        self._channel.send("doing", client, what, self.clock())


class ChildBroker:
    """The driver's ``Broker`` in the child: settings from the view, faults asked of the parent."""

    def __init__(self, view: BrokerView, channel: Channel) -> None:
        self._view, self._channel = view, channel

    @property
    def bootstrap_servers(self) -> str:
        return self._view.bootstrap_servers

    def client_config(self, role: Any, **overrides: Any) -> dict[str, Any]:
        return {**self._view.configs[str(role)], **overrides}

    @property
    def nodes(self) -> Sequence[NodeView]:
        return [NodeView(n) for n in self._view.node_ids]

    def restart(self, node_id: int, clean: bool = True) -> None:
        self._channel.ask("restart", node_id, clean)

    @contextlib.contextmanager
    def paused(self, node_id: int) -> Iterator[NodeView]:
        self._channel.ask("pause", node_id)
        try:
            yield NodeView(node_id)
        finally:
            self._channel.ask("resume", node_id)

    def stop_node(self, node_id: int, clean: bool = True) -> None:
        self._channel.ask("stop", node_id, clean)

    def start_node(self, node_id: int) -> None:
        self._channel.ask("start", node_id)

    def pause(self, node_id: int) -> None:
        self._channel.ask("pause", node_id)

    def resume(self, node_id: int) -> None:
        self._channel.ask("resume", node_id)


def child_main() -> int:
    """The child: read the job, run it, stream it; every outcome but a death is a frame."""
    out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # anything printed goes to stderr, never into the frames
    answers = sys.stdin.buffer
    channel = Channel(out, answers)
    job: Job = pickle.load(answers)
    # a fatal signal writes the dying thread's Python stack to stderr (all threads' would bury librdkafka's line)
    faulthandler.enable(all_threads=False)
    faulthandler.dump_traceback_later(max(1.0, job.bound_s - STACKS_BEFORE_S))
    import confluent_kafka as ck

    from ....reference_impl.ports import KafkaError
    from ...brokers.base import BrokerStartError
    from .driver import Run, error_text

    watcher = Streaming(channel)
    broker = ChildBroker(job.broker, channel)
    run = Run(job.schedule, broker, clients=job.clients, prefix=job.prefix, watcher=watcher)
    watcher.clock = run.recorder.now
    channel.send("ready")
    try:
        channel.send("history", run.run())
    except (KafkaError, ck.KafkaException, BrokerStartError, OSError) as failed:
        channel.send("could-not-check", error_text(failed))
    except BaseException:  # whatever it is, the parent raises it with its traceback
        channel.send("failed", traceback.format_exc())
    faulthandler.cancel_dump_traceback_later()
    # no interpreter teardown: a client a hung call still holds would block its destruction (daemon threads never
    # keep a run alive in process either); every client the run opened it has closed or flushed (``close_all``)
    os._exit(0)


# -- the parent ----------------------------------------------------------------------------------------------------


@dataclass
class Streamed:
    """What the parent has read of the child so far."""

    events: list[Event]
    info: dict[str, ClientInfo]
    doing: dict[str, tuple[str, bool, float]]
    """Each client's last call: what, whether it is still under way, and when it began (the run's clock)."""
    end: tuple[Any, ...] | None = None
    ready: bool = False
    """The child read its job and built its run: what ends it from then on is the run's."""


def broker_view(broker: Any) -> BrokerView:
    try:
        nodes = tuple(int(n.node_id) for n in broker.nodes)
    except (AttributeError, NotImplementedError):
        nodes = ()
    return BrokerView(broker.bootstrap_servers, {r: dict(broker.client_config(r)) for r in ROLES}, nodes)


def child_env() -> dict[str, str]:
    """This process's environment, its import path as this process has it (the release's folder first)."""
    return os.environ | {"PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}


def run_isolated(
    schedule: Any, broker: Any, bound_s: float, clients: Any = None, prefix: str = "", read_log_after: bool = True,
    stderr_to: Path | None = None,
) -> History:  # fmt: skip
    """``driver.Run(schedule, broker, clients).run()`` in a child process (module docstring): its history, or, when
    the child died or outlived ``bound_s``, the events it streamed up to then ending with ``Crashed`` or ``Hung``
    and the log as the suite reads it afterwards (``read_log_after``; else an empty one). ``stderr_to``: a file that
    keeps the child's whole stderr (librdkafka's log among it), else a temporary one."""
    from uuid import uuid4

    prefix = prefix or f"kcw-{uuid4().hex[:8]}"
    job = Job(schedule, broker_view(broker), clients, prefix, bound_s)
    streamed = Streamed([], {}, {})
    with stderr_to.open("w+b") if stderr_to is not None else tempfile.TemporaryFile() as stderr:
        process = subprocess.Popen(
            [sys.executable, "-m", CHILD_MODULE],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=stderr,
            env=child_env(),
        )
        killed = False
        try:
            assert process.stdin is not None and process.stdout is not None
            with contextlib.suppress(BrokenPipeError):  # a child that died at once: its stderr says why
                pickle.dump(job, process.stdin, protocol=pickle.HIGHEST_PROTOCOL)
                process.stdin.flush()
            killed = _serve(process, streamed, broker, time.monotonic() + bound_s)
        finally:
            if killed or process.poll() is None:
                exited = not killed and _exited(process, EXIT_WAIT_S)
                if not exited:
                    process.kill()
                    process.wait(KILL_WAIT_S)
                    killed = killed or streamed.end is not None
        stderr.seek(0, os.SEEK_END)
        size = stderr.tell()
        stderr.seek(max(0, size - STDERR_TAIL))
        tail = stderr.read().decode("utf-8", "replace")
    end = streamed.end
    if not streamed.ready:
        how = "killed at its bound" if killed else f"exit {process.returncode}"
        raise IsolatedCouldNotCheck(f"the schedule's child process ended before its run began ({how}): {tail.strip()}")
    if end is not None and end[0] == "could-not-check":
        raise IsolatedCouldNotCheck(end[1])
    if end is not None and end[0] == "failed":
        raise IsolatedRunFailed(f"the schedule's run failed in its child process:\n{end[1]}")
    ending = _ending(process.returncode, killed, streamed, bound_s, tail)
    if end is not None:
        history: History = end[1]
        if ending is None:
            return history
        return History(
            (*history.events, _renumbered(ending, len(history.events))),
            history.clients,
            history.log,
            history.drained,
            history.read_to_end,
            history.drain_ends,
            history.convergence,
        )
    if ending is None:  # exited 0 without its history: a run that ended the process itself
        ending = _crashed(streamed, tail, "exit code 0 before the run ended", None, 0)
    return cut_short(schedule, broker, prefix, streamed, ending, read_log_after)


def run_schedule(schedule: Any, broker: Any, clients: Any = None, stderr_to: Path | None = None) -> History:
    """Run one schedule as the suite and ``kconform replay-schedule`` do, within ``driver.schedule_bound_s``: on
    ``clients`` in this process (kafka-clients' harness JVM, whose hang or crash its own bounded calls report), or,
    when ``None``, on this interpreter's confluent-kafka in a child process of its own (``run_isolated``), so that a
    crash of librdkafka is LIVE-001 ``client-crashed`` with its schedule, not a dead suite. ``stderr_to`` keeps
    the child's stderr (librdkafka's log); the harness keeps its own log."""
    from .driver import Run, schedule_bound_s

    if clients is None:
        return run_isolated(schedule, broker, schedule_bound_s(schedule), stderr_to=stderr_to)
    return Run(schedule, broker, clients=clients).run()


def _exited(process: subprocess.Popen[bytes], wait_s: float) -> bool:
    try:
        process.wait(wait_s)
    except subprocess.TimeoutExpired:
        return False
    return True


def _serve(process: subprocess.Popen[bytes], streamed: Streamed, broker: Any, deadline: float) -> bool:
    """Read the child's frames until it closes its end (True: it outlived ``deadline`` and must be killed), carrying
    out the faults it asks for; a node it paused is resumed, and one it stopped started again, however it ends."""
    frames: queue.SimpleQueue[tuple[Any, ...] | None] = queue.SimpleQueue()
    stdout, stdin = process.stdout, process.stdin
    assert stdout is not None and stdin is not None

    def read() -> None:
        while True:
            try:
                frames.put(pickle.load(stdout))
            except (EOFError, pickle.UnpicklingError, OSError, ValueError, AttributeError, ImportError):
                frames.put(None)  # its end closed (or a frame cut short by its death)
                return

    threading.Thread(target=read, name="kconform-workload-child-reader", daemon=True).start()
    with contextlib.ExitStack() as paused_nodes:
        paused: dict[int, contextlib.ExitStack] = {}  # nodes stopped by the child too, each started again on exit
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                return True
            try:
                frame = frames.get(timeout=left)
            except queue.Empty:
                continue
            if frame is None:
                return False
            kind = frame[0]
            if kind == "event":
                streamed.events.append(frame[1])
            elif kind == "client":
                streamed.info[frame[1]] = frame[2]
            elif kind == "doing":
                _, client, what, at = frame
                last = streamed.doing.get(client)
                if what is not None:
                    streamed.doing[client] = (what, True, at)
                elif last is not None:
                    streamed.doing[client] = (last[0], False, last[2])
            elif kind == "ready":
                streamed.ready = True
            elif kind == "ask":
                answer = _fault(broker, frame[1:], paused, paused_nodes)
                with contextlib.suppress(BrokenPipeError, OSError):
                    pickle.dump(answer, stdin, protocol=pickle.HIGHEST_PROTOCOL)
                    stdin.flush()
            else:
                streamed.end = frame


def _fault(
    broker: Any, request: tuple[Any, ...], paused: dict[int, contextlib.ExitStack], stack: contextlib.ExitStack
) -> tuple[bool, str]:
    from ...brokers.base import BrokerStartError

    what, node = request[0], int(request[1])
    try:
        if what == "restart":
            broker.restart(node, clean=bool(request[2]))
        elif what == "pause":
            held = contextlib.ExitStack()
            held.enter_context(broker.paused(node))
            paused[node] = held
            stack.callback(held.close)
        elif what == "resume":
            if node in paused:
                paused.pop(node).close()
        elif what == "stop":
            held = contextlib.ExitStack()
            held.callback(broker.start_node, node)  # registered first: a stop that failed half-way is started too
            paused[node] = held
            stack.callback(held.close)
            broker.stop_node(node, clean=bool(request[2]))
        elif what == "start":
            if node in paused:
                paused.pop(node).close()
            else:
                broker.start_node(node)
        else:
            return False, f"no such fault: {what!r}"
    except (BrokerStartError, OSError, RuntimeError, ValueError) as failed:
        return False, f"{what} of node {node}: {failed}"
    return True, ""


SIGNAL_NAMES: Final = {int(s): s.name for s in signal.Signals}


def _crashed(streamed: Streamed, tail: str, how: str, number: int | None, code: int | None) -> Crashed:
    return Crashed(
        seq=len(streamed.events),
        client="run",
        at=streamed.events[-1].at if streamed.events else 0.0,
        how=how,
        signal=number,
        exit_code=code,
        last=tuple((client, what, busy, at) for client, (what, busy, at) in sorted(streamed.doing.items())),
        stderr=tail,
    )


def _ending(returncode: int | None, killed: bool, streamed: Streamed, bound_s: float, tail: str) -> Event | None:
    """The event that ends a child's history: ``Hung`` when killed at its bound, ``Crashed`` when it died or exited
    abnormally, ``None`` when it exited normally."""
    if killed:
        under_way = [f"{c} in {w}" for c, (w, busy, _) in sorted(streamed.doing.items()) if busy]
        return Hung(
            seq=len(streamed.events),
            client="run",
            at=streamed.events[-1].at if streamed.events else 0.0,
            call="the schedule's run in its child process (" + ("; ".join(under_way) or "no call under way") + ")",
            bound_s=bound_s,
        )
    if returncode is None or returncode == 0:
        return None
    if returncode < 0:
        name = SIGNAL_NAMES.get(-returncode, f"signal {-returncode}")
        return _crashed(streamed, tail, f"{name} (signal {-returncode})", -returncode, None)
    return _crashed(streamed, tail, f"exit code {returncode}", None, returncode)


def _renumbered(event: Event, seq: int) -> Event:
    from dataclasses import replace

    return replace(event, seq=seq)


def cut_short(
    schedule: Any, broker: Any, prefix: str, streamed: Streamed, ending: Event, read_log_after: bool = True
) -> History:
    """The history of a child that died or was killed: its events, ``ending``, and the log read now by the suite's
    own admin client (an open transaction of a dead producer is waited out as ``driver.read_log`` waits), the drain
    never run."""
    from ....reference_impl.kafka_client import KafkaClient
    from .driver import group_of, read_log
    from .history import Log

    events: list[Event] = [*streamed.events, ending]
    log = Log({}, {})
    if read_log_after:
        groups = sorted({group_of(f"{prefix}-g", plan, i) for i, plan in enumerate(schedule.consumers)})
        kafka = KafkaClient(broker)
        try:
            log, held = read_log(kafka, prefix, groups)
        finally:
            kafka.close()
        at = ending.at
        events.append(Note(seq=len(events), client="run", at=at, text="the log was read by the suite after that"))
        if held:
            events.append(Note(seq=len(events), client="run", at=at, text=held))
    return History(tuple(events), dict(streamed.info), log, drained=False)


if __name__ == "__main__":
    sys.exit(child_main())
