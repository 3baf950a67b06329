"""Credentials as a type that never shows its text, and the one redactor of every text kconform writes.

A cluster's password travels from the environment to the Kafka clients through configs, specs, Spark
options and error messages, any of which may end up printed, in a report or in a CI log read by many.
A ``Secret`` prints as ``***`` wherever it goes (``repr``, ``str``, formats, JSON, HTML) and hands its
text only to an explicit ``reveal()``, the one call where a client must get it. Every secret made in
this process is remembered, so ``redact`` can take its text out of anything that got through anyway
(a client's log line, a JAAS line built from it, a Spark process's log tail). It lives in the reference
implementation, beside the configs that carry it, because the reference adapter must not import the suite.
"""

from __future__ import annotations

import html
import json
import re
import threading
from collections.abc import Mapping
from typing import Any, Final

MASK: Final = "***"
"""What a secret's text becomes wherever it is shown."""

SECRET_SETTING_NAMES: Final = re.compile(
    r"password|secret|token|jaas|credential|private|oauthbearer\.config|ssl\.key\.pem|ssl\.keystore\.key", re.I
)
"""The one list of setting names whose values are credentials: ``sasl.password``, ``sasl.jaas.config``,
``ssl.key.password``, ``ssl.keystore.password``, ``ssl.truststore.password``, ``sasl.oauthbearer.client.secret``,
a PEM private key; not ``ssl.key.location`` or ``ssl.keystore.location`` (paths, useful in a message)."""

_known: set[str] = set()
_known_lock = threading.Lock()


class Secret:
    """A credential: shown as ``***`` everywhere, its text only through ``reveal()``.

    It pickles with its text, since Spark's executors need it to reach the broker; unpickled it is a
    ``Secret`` again, so the executor's messages do not show it either.
    """

    __slots__ = ("_text",)

    def __init__(self, text: str | Secret) -> None:
        if isinstance(text, Secret):
            text = text.reveal()
        self._text = text
        remember(text)

    def reveal(self) -> str:
        """The text itself, for the one call that hands it to a client; never for a message."""
        return self._text

    def __repr__(self) -> str:
        return f"Secret({MASK!r})"

    def __str__(self) -> str:
        return MASK

    def __format__(self, spec: str) -> str:
        return format(MASK, spec)

    def __html__(self) -> str:
        return MASK

    def __reduce__(self) -> tuple[type[Secret], tuple[str]]:
        return (Secret, (self._text,))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Secret) and other._text == self._text

    def __hash__(self) -> int:
        return hash((Secret, self._text))


def is_secret_setting(name: str) -> bool:
    return SECRET_SETTING_NAMES.search(name) is not None


def mark_secrets(settings: Mapping[str, Any]) -> dict[str, Any]:
    """``settings`` with the value of every setting ``is_secret_setting`` names wrapped in a ``Secret``."""
    return {k: Secret(v) if is_secret_setting(k) and isinstance(v, (str, Secret)) else v for k, v in settings.items()}


def reveal(value: str | Secret) -> str:
    """The text of a setting that may or may not be a ``Secret``."""
    return value.reveal() if isinstance(value, Secret) else value


def revealed(settings: Mapping[str, Any]) -> dict[str, Any]:
    """``settings`` as a client takes them: every ``Secret`` replaced by its text."""
    return {k: v.reveal() if isinstance(v, Secret) else v for k, v in settings.items()}


def json_default(value: object) -> str:
    """``json.dumps(..., default=json_default)``: a ``Secret`` is written masked; anything else is still refused."""
    if isinstance(value, Secret):
        return MASK
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


def remember(text: str) -> None:
    """Add ``text`` to the secrets ``redact`` takes out (``Secret`` does it; a secret made elsewhere, e.g. a
    generated broker password, may be added directly)."""
    if not text:
        return
    # as written raw, inside a JSON string, in HTML and inside a Python repr
    forms = {text, json.dumps(text)[1:-1], html.escape(text), repr(text)[1:-1]}
    with _known_lock:
        _known.update(forms)


def redact(text: str) -> str:
    """``text`` with every secret this process has seen replaced by ``***``: the last guard before output."""
    with _known_lock:
        known = sorted(_known, key=len, reverse=True)  # a longer form first: it may contain a shorter one
    for secret in known:
        if secret in text:
            text = text.replace(secret, MASK)
    return text
