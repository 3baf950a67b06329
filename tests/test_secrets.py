"""Credentials as ``Secret`` and the redactor: a password never shows in a repr, a format, JSON, HTML or a
console line, yet reaches a client, and survives pickling to Spark's executors."""

from __future__ import annotations

import html
import io
import json
import pickle
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

from kconform.conformance.adapter.guard import AdapterError, call
from kconform.conformance.adapter.interface import SinkSpec, SourceSpec
from kconform.conformance.brokers import ExternalBroker
from kconform.conformance.redaction import redacting, write_text
from kconform.reference_impl.credentials import (
    MASK,
    Secret,
    is_secret_setting,
    json_default,
    mark_secrets,
    redact,
    remember,
    revealed,
)

PASSWORD = "pw-unit-7f3a\"q'<x>"
"""Quotes and markup: the escaped forms (JSON, HTML, repr) are found too."""


def test_a_secret_never_shows_its_text() -> None:
    secret = Secret(PASSWORD)
    shown = [repr(secret), str(secret), f"{secret}", f"{secret!r}", f"{secret:>20}", format(secret),
             json.dumps({"p": secret}, default=json_default), html.escape(str(secret)), secret.__html__()]  # fmt: skip
    assert all(PASSWORD not in text and MASK in text for text in shown), shown
    assert secret.reveal() == PASSWORD


def test_json_refuses_a_secret_without_the_hook() -> None:
    with pytest.raises(TypeError):
        json.dumps(Secret(PASSWORD))
    with pytest.raises(TypeError, match="object"):
        json.dumps(object(), default=json_default)


def test_pickling_passes_the_value_but_the_copy_stays_masked() -> None:
    copy = pickle.loads(pickle.dumps(Secret(PASSWORD)))
    assert isinstance(copy, Secret)
    assert copy.reveal() == PASSWORD
    assert PASSWORD not in repr(copy)
    assert copy == Secret(PASSWORD) and hash(copy) == hash(Secret(PASSWORD))


@pytest.mark.parametrize(
    "name",
    ["sasl.password", "SASL.PASSWORD", "sasl.jaas.config", "ssl.key.password", "ssl.keystore.password",
     "ssl.truststore.password", "sasl.oauthbearer.client.secret", "token", "ssl.key.pem", "kafka.sasl.jaas.config"],
)  # fmt: skip
def test_credential_names_are_secret(name: str) -> None:
    assert is_secret_setting(name)


@pytest.mark.parametrize(
    "name", ["sasl.username", "security.protocol", "sasl.mechanisms", "ssl.key.location", "ssl.keystore.location"]
)
def test_other_names_are_not(name: str) -> None:
    assert not is_secret_setting(name)


def test_mark_secrets_wraps_only_credentials_and_revealed_undoes_it() -> None:
    settings = {"sasl.username": "u", "sasl.password": PASSWORD, "linger.ms": 5}
    marked = mark_secrets(settings)
    assert marked["sasl.username"] == "u" and marked["linger.ms"] == 5
    assert isinstance(marked["sasl.password"], Secret)
    assert mark_secrets(marked) == marked  # marking twice does not nest
    assert revealed(marked) == settings


def test_a_spec_carrying_a_password_does_not_show_it() -> None:
    settings = tuple(mark_secrets({"sasl.username": "u", "sasl.password": PASSWORD}).items())
    for spec in (SourceSpec("h:1", 2, ("t",), client_settings=settings), SinkSpec("h:1", "t", False, settings)):
        assert PASSWORD not in repr(spec) and PASSWORD not in str(spec), repr(spec)


def test_a_broker_hides_its_credentials_but_hands_them_to_clients() -> None:
    broker = ExternalBroker("h:1", security={"sasl.password": PASSWORD, "sasl.username": "u"})
    assert PASSWORD not in repr(broker.security)
    broker._bootstrap = "h:1"  # as ``start`` would, without a cluster to reach
    assert broker.client_config("admin")["sasl.password"] == PASSWORD


def test_a_failing_adapter_call_does_not_show_the_password_it_was_given() -> None:
    spec = SourceSpec("h:1", 2, ("t",), client_settings=tuple(mark_secrets({"sasl.password": PASSWORD}).items()))

    def read_stream(source: SourceSpec) -> None:
        raise RuntimeError(f"login refused for {dict(source.client_settings)}")

    with pytest.raises(AdapterError) as raised:
        call("leaky", "adapter.read_stream", read_stream, spec)
    assert PASSWORD not in str(raised.value), str(raised.value)


@dataclass
class _Echo:
    text: str


def test_the_redactor_takes_every_known_secret_out_of_any_text(tmp_path: Path) -> None:
    secret = Secret(PASSWORD)
    leaks = [f"password={secret.reveal()}", json.dumps({"p": secret.reveal()}), html.escape(secret.reveal()),
             repr(_Echo(secret.reveal()))]  # fmt: skip
    assert all(PASSWORD not in redact(text) and MASK in redact(text) for text in leaks), [redact(t) for t in leaks]
    assert redact("nothing to hide") == "nothing to hide"
    out = io.StringIO()
    print(leaks[0], file=redacting(out))
    write_text(tmp_path / "report.md", leaks[1])
    assert out.getvalue() == f"password={MASK}\n"
    assert PASSWORD not in (tmp_path / "report.md").read_text()


def test_a_remembered_text_is_redacted_without_a_secret_object() -> None:
    remember("generated-broker-pw-1")
    assert redact("pw generated-broker-pw-1!") == f"pw {MASK}!"
    remember("")  # an empty secret would mask every gap between characters
    assert redact("ab") == "ab"


def test_a_spark_driver_process_is_handed_the_text_through_its_pipe() -> None:
    """``kconform soak``'s drivers are other processes: they get the password itself, on standard input."""
    from kconform.conformance.spark.driver import DriverRun, hand_over

    run = DriverRun(
        adapter="a:B", master="local[1]", bootstrap_servers="h:1", source="s", sink="o", checkpoint="/c",
        parallelism=1, exactly_once=True, max_records_per_trigger=1,
        client_settings=mark_secrets({"sasl.username": "u", "sasl.password": PASSWORD}),
    )  # fmt: skip
    assert PASSWORD not in repr(run)
    driver = subprocess.Popen(["cat"], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    hand_over(driver, run)  # it closes the pipe: cat ends
    assert driver.stdout is not None and driver.wait(timeout=10) == 0
    assert json.loads(driver.stdout.read())["client_settings"] == {"sasl.username": "u", "sasl.password": PASSWORD}


def test_a_credential_in_an_argument_s_own_repr_is_out_before_the_arguments_are_cut() -> None:
    """The guard shortens long arguments to their start and end: a cut must not leave half a password."""
    remember(PASSWORD)

    def plan(partitions: object, token: object) -> None:
        raise RuntimeError("refused")

    with pytest.raises(AdapterError) as raised:
        call("leaky", "adapter.plan", plan, list(range(200)), PASSWORD + "0" * 20)  # the cut falls inside it
    assert "<x>0000" not in str(raised.value) and f"{MASK}0000" in str(raised.value), str(raised.value)
