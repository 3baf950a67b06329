"""The runtime guard between the suite and an adapter, which is untrusted code.

Every call the suite makes goes through ``Guarded``, which first checks the member's signature
against the contract (a mismatch is a ``ContractError``: could not check) and then turns an
exception the adapter raises into an ``AdapterError`` naming the adapter method. A call that
hangs past the per-test timeout is recorded (``record_hang``) and not made again in the run.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from types import FrameType
from typing import Any, Final, TypeVar

from ...reference_impl.credentials import redact
from ...reference_impl.ports import KafkaError
from ..errors import CannotCheck, ContractError
from ..jvm import JvmArtifactsMissing
from .interface import (
    CONTRACT_ONE,
    CONTRACT_ONE_PARAMETERS,
    Adapter,
    PipelineAdapter,
    ProtocolAdapter,
    Sink,
    Source,
    member_name,
    needed_members,
)


class AdapterError(AssertionError):
    """The adapter raised, or answered with something that is not a legal answer."""


T = TypeVar("T")
SHOWN_ARGUMENTS = 200
"""Characters of an adapter call's arguments shown in an error or timeout message."""


def _contract_members() -> dict[str, Callable[..., Any]]:
    """The members the contract defines, by the label ``Guarded`` calls them under (``adapter.assign``)."""
    owners = {"adapter": (ProtocolAdapter, PipelineAdapter), "source": (Source,), "sink": (Sink,)}
    return {
        f"{label}.{name}": member
        for label, protocols in owners.items()
        for protocol in protocols
        for name, member in vars(protocol).items()
        if inspect.isfunction(member) and not name.startswith("_")
    }


def check_signature(adapter_name: str, method: str, fn: Callable[..., Any], arity: int) -> None:
    """``ContractError`` when ``fn`` cannot take the ``arity`` positional arguments the suite passes: calling it
    would raise a ``TypeError`` that looks like the adapter's own failure, though its semantics were never
    reached. Judged once per function: the suite calls ``assign`` thousands of times a test."""
    key = (getattr(fn, "__func__", fn), hasattr(fn, "__self__"), method, arity)
    try:
        if key not in _mismatches:
            _mismatches[key] = _mismatch(method, fn, arity)
        mismatch = _mismatches[key]
    except TypeError:  # an unhashable callable object: judge it every time
        mismatch = _mismatch(method, fn, arity)
    if mismatch is not None:
        raise ContractError(f"adapter {adapter_name!r}: {mismatch}")


_mismatches: dict[tuple[object, bool, str, int], str | None] = {}
POSITIONAL: Final = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)


def _mismatch(method: str, fn: Callable[..., Any], arity: int) -> str | None:
    """Why ``fn`` does not fit the contract's ``method``, naming the contract's parameters it lacks, or ``None``."""
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError):  # a builtin or C callable without a signature: the call itself tells
        return None
    try:
        signature.bind(*(None,) * arity)
    except TypeError as error:
        member = method.rpartition(".")[2].removesuffix(CONTRACT_ONE)
        given = contract_parameters(method)
        if given is None:
            return (
                f"{method} is {member}({_parameter_names(signature)}), which cannot take {arity} argument(s) ({error})"
            )
        takes = [n for n, p in signature.parameters.items() if n != "self" and p.kind in POSITIONAL]
        lacking, extra = given[len(takes) :], takes[len(given) :]  # the suite passes them by position
        change = f"; it lacks the contract's {', '.join(lacking)}" if lacking else ""
        change += f"; the contract does not pass its {', '.join(extra)}" if extra else ""
        if given == ["config"] and len(takes) > 1:
            change += (
                f"; since adapter contract 2 it takes one config object whose fields are those parameters "
                f"(read config.{takes[0]}, ...), or, for an adapter written for contract 1, state no contract_version"
            )
        return (
            f"{method} is {member}({_parameter_names(signature)}), but the contract calls "
            f"{member}({', '.join(given)}) ({error}){change}: give the adapter's {member} that signature "
            "(docs/adapter-guide.md; kconform.conformance.adapter.interface.ProtocolAdapter and PipelineAdapter "
            "define the members)"
        )
    return None


def contract_parameters(method: str) -> list[str] | None:
    """The parameters the contract passes to ``method`` (``adapter.assign``), or ``None`` if it defines none."""
    if method.endswith(CONTRACT_ONE):
        return CONTRACT_ONE_PARAMETERS.get(method.removesuffix(CONTRACT_ONE).rpartition(".")[2])
    contract = CONTRACT_MEMBERS.get(method)
    if contract is None:
        return None
    return [name for name in inspect.signature(contract).parameters if name != "self"]


def _parameter_names(signature: inspect.Signature) -> str:
    return ", ".join(str(p).split(":")[0] for name, p in signature.parameters.items() if name != "self")


def call(adapter_name: str, method: str, fn: Callable[..., T], *args: Any) -> T:
    """Call an adapter method; anything it raises becomes an ``AdapterError`` naming the method.

    A member whose signature does not take the suite's arguments is a ``ContractError`` before the
    call. Errors of the Kafka port (fenced, timeout, ...) are part of the protocol and pass through,
    and so do missing JVM artifacts (``kconform setup`` not run) and other ``CannotCheck``s: a setup
    problem, never the adapter's violation. A method that already hung in this run is not called
    again (``AdapterHung``): it would only hang again.
    """
    if (hung_in := _hung.get((adapter_name, method))) is not None:
        raise AdapterHung(f"{_method_name(adapter_name, method)} not called again: {hung_in}")
    check_signature(adapter_name, method, fn, len(args))
    shown = _shown(args)
    _in_progress.append(_Call(adapter_name, method, shown, getattr(fn, "__self__", None)))
    try:
        return fn(*args)
    except (KafkaError, AdapterError, JvmArtifactsMissing, CannotCheck):
        raise
    except Exception as exc:  # the adapter is untrusted code: report whatever it raised
        raise AdapterError(f"adapter {adapter_name!r}: {method}({shown}) raised {exc!r}") from exc
    finally:
        _in_progress.pop()


CONTRACT_MEMBERS: dict[str, Callable[..., Any]] = _contract_members()
"""``adapter.assign`` -> ``ProtocolAdapter.assign``: what a signature mismatch is compared to."""


class AdapterHung(BaseException):
    """A call to an adapter method that hung earlier in the run, not made: the test could not check it.

    A ``BaseException``, like the runner's timeout: Hypothesis would take an ``Exception`` for a
    failing example and shrink it, calling the adapter again and again for nothing.
    """


@dataclass(frozen=True)
class Hang:
    """An adapter call that did not return in time, as a timeout message names it."""

    method: str
    """``adapter 'name'.assign``: the innermost method of the adapter that was still running."""
    running: str
    """That method's call with its arguments, and the suite's call it ran in when that is another one."""


@dataclass(frozen=True)
class _Call:
    adapter_name: str
    method: str
    shown: str
    target: object
    """The object whose method was called: its frames on the stack are the adapter's own methods."""


_in_progress: list[_Call] = []
"""Adapter calls under way, innermost last: a timeout names the call that hung."""
_hung: dict[tuple[str, str], str] = {}
"""(adapter name, method) -> ``assign hung in <test>``, for the rest of the run."""


def _shown(args: Sequence[Any]) -> str:
    # an argument's own repr may carry a credential (a ``Secret``'s does not): out before a cut could halve it
    shown = redact(", ".join(repr(a) for a in args))
    if len(shown) > SHOWN_ARGUMENTS:  # a whole partition list would bury the message
        shown = f"{shown[: SHOWN_ARGUMENTS - 40]} ... {shown[-30:]}"
    return shown


def _method_name(adapter_name: str, method: str) -> str:
    return f"adapter {adapter_name!r}.{method.removeprefix('adapter.')}"


def _innermost_own_frame(frame: FrameType | None, target: object) -> FrameType | None:
    """The innermost frame, inside the suite's ``call``, of a method of ``target``: where the adapter is stuck
    when its method calls another of its own (a ``plan`` that calls ``assign`` partition by partition)."""
    while frame is not None and frame.f_code is not call.__code__:
        if frame.f_locals.get("self") is target and callable(getattr(target, frame.f_code.co_name, None)):
            return frame
        frame = frame.f_back
    return None


def record_hang(frame: FrameType | None, test: str) -> Hang | None:
    """The adapter call under way, interrupted at ``frame``, if any; it is remembered as hung in ``test``,
    and so is the adapter's own method it was stuck in, so neither is called again in this run."""
    if not _in_progress:
        return None
    outer = _in_progress[-1]
    outer_name = outer.method.rpartition(".")[2]
    running, method = f"{outer_name}({outer.shown})", outer.method
    own = _innermost_own_frame(frame, outer.target)
    if own is not None and own.f_code.co_name != outer_name:
        names = own.f_code.co_varnames[1 : own.f_code.co_argcount]  # without self
        inner = f"{own.f_code.co_name}({_shown([own.f_locals[n] for n in names if n in own.f_locals])})"
        # the outer call's arguments (a partition list) would double the line for little
        running, method = f"{inner}, called by {outer_name}", f"{method.rpartition('.')[0]}.{own.f_code.co_name}"
    short = method.rpartition(".")[2]
    for hung in {outer.method, method}:
        _hung.setdefault((outer.adapter_name, hung), f"{short} hung in {test}")
    return Hang(_method_name(outer.adapter_name, method), running)


def forget_hangs() -> None:
    """A new run calls every method again: a hang of an earlier run in this process may have been cured."""
    _hung.clear()


class Guarded:
    """A proxy for an adapter or an object it returned: each method call goes through ``call``.

    Results of the wrong shape are left to the checkers, which report them as violations of
    the requirement concerned (e.g. a negative subtask index is ``owner-out-of-range``).
    """

    def __init__(self, target: Any, label: str, adapter_name: str) -> None:
        self._target = target
        self._label = label
        self._adapter_name = adapter_name

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._target, name)
        if not callable(value):
            return value
        label = f"{self._label}.{name}"
        return lambda *args: call(self._adapter_name, label, value, *args)


def guard(adapter: Adapter) -> Any:
    """The suite's view of ``adapter``, once the members its capabilities need fit the contract's signatures
    (``ContractError`` if not): a member the adapter calls itself (e.g. ``assign`` from its ``plan``) would
    otherwise fail inside the adapter, as if the adapter were at fault."""
    for member in needed_members(adapter):
        method = f"adapter.{member_name(member)}"
        contract, value = CONTRACT_MEMBERS.get(method), getattr(adapter, member_name(member), None)
        if contract is not None and callable(value):
            arity = len(inspect.signature(contract).parameters) - 1  # without self
            check_signature(adapter.name, method, value, arity)
    return Guarded(adapter, "adapter", adapter.name)
