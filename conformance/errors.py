"""What the suite raises when it could not check: neither a pass nor a violation by the adapter.

``kconform run`` reports these ERROR (exit 3), never FAIL: a contract the adapter does not fit, or
a piece of the harness that did not do its part, says nothing about the connector's semantics.
Every message names the cause and the fix. No imports: every layer may raise them.
"""

from __future__ import annotations


class CannotCheck(Exception):
    """The suite could not check what it set out to; the message names the cause and the fix."""


class ContractError(CannotCheck):
    """The adapter does not fit the contract the suite calls it by (a member's signature, its frame's
    columns). Unlike ``AdapterError`` (the adapter ran and failed), its semantics were never reached."""


class HarnessError(CannotCheck):
    """The harness could not do its part: a failure injection that did not happen, a Spark data source
    the session cannot find."""
