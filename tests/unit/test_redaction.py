"""The one redaction function (:mod:`connectrt.runtime.redaction`) and the paths that use it:
every encoded form of a secret is hidden, in status traces, DLQ error headers, log records
(any logger, any handler) and validation errors; secret-typed and secret-named literal values
join the redaction set."""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator, Mapping
from urllib.parse import quote, quote_plus

import pytest

from connectrt.api import ConfigDef, ConfigType, SourceConnector, Task
from connectrt.errors import ConfigError, DataError
from connectrt.runtime.clients.settings import OverridePolicy
from connectrt.runtime.config.connector import validate_connector_config
from connectrt.runtime.config.secrets import ConfigSecrets
from connectrt.runtime.config.validation_report import errors_as_written
from connectrt.runtime.plugins.registry import PluginRegistry
from connectrt.runtime.redaction import (
    HIDDEN,
    Redactor,
    redact_exception,
    secret_forms,
)
from connectrt.runtime.secrets.masking import RedactingFilter, SecretMasker, install_log_redaction
from connectrt.runtime.status import State, StatusBoard
from connectrt.runtime.tasks.dlq_headers import context_headers

SECRET = "pa\\ss'wo\"rd/é+ &x"  # backslash, both quotes, slash, non-ASCII, URL specials


def every_encoding(secret: str) -> list[str]:
    """Encodings computed here independently of the code under test."""
    return [
        secret,
        json.dumps(secret)[1:-1],
        json.dumps(secret, ensure_ascii=False)[1:-1],
        repr(secret)[1:-1],
        ascii(secret)[1:-1],
        repr(secret.encode())[2:-1],
        json.dumps(repr(secret)[1:-1])[1:-1],  # a repr inside a JSON string
        repr(repr(secret)[1:-1])[1:-1],  # a repr of a repr
        quote(secret, safe=""),
        quote(secret),
        quote_plus(secret),
    ]


@pytest.mark.parametrize("encoded", every_encoding(SECRET))
def test_every_encoding_of_a_secret_is_hidden(encoded: str) -> None:
    redactor = Redactor()
    redactor.register(SECRET)
    assert encoded in secret_forms(SECRET)
    assert redactor.redact(f"before {encoded} after") == f"before {HIDDEN} after"


def test_a_repr_in_a_json_body_and_an_exception_repr_are_hidden() -> None:
    redactor = Redactor()
    redactor.register(SECRET)
    trace = f"RuntimeError({SECRET!r}) and {{'pw': {SECRET!r}}}"
    body = json.dumps({"trace": trace})
    assert json.dumps(repr(SECRET)[1:-1])[1:-1] in body  # backslashes doubled twice: there
    redacted = redactor.redact(body)
    for encoded in every_encoding(SECRET):
        assert encoded not in redacted
    assert json.loads(redacted)["trace"].count(HIDDEN) == 2


def test_plain_secrets_and_short_values() -> None:
    redactor = Redactor()
    redactor.register_all(["hunter22", "abc", None, ""])
    assert len(redactor) == 1
    assert redactor.redact("abc hunter22 abc") == f"abc {HIDDEN} abc"
    assert secret_forms("hunter22") >= {"hunter22"}
    assert redactor.redact_bytes(b"x hunter22 y") == f"x {HIDDEN} y".encode()
    assert redactor.redact_bytes(b"\xff\xfe hunter22") == b"\xff\xfe " + HIDDEN.encode()


def test_redact_exception_keeps_the_type_and_drops_the_value() -> None:
    error = ConfigError("bad value hunter22 for x", "x", "hunter22")
    error.__cause__ = ValueError("hunter22")
    copy = redact_exception(error, lambda text: text.replace("hunter22", HIDDEN))
    assert type(copy) is ConfigError
    assert str(copy) == f"bad value {HIDDEN} for x"
    assert copy.name == "x"  # type: ignore[attr-defined]
    assert copy.value is None  # type: ignore[attr-defined]
    assert copy.__cause__ is None
    assert str(error) == "bad value hunter22 for x"  # the original is untouched
    clean = DataError("nothing secret")
    assert redact_exception(clean, lambda text: text) is clean


def test_status_board_redacts_traces_for_readers_and_listeners() -> None:
    redactor = Redactor()
    redactor.register(SECRET)
    board = StatusBoard("w1", redactor.redact)
    heard: list[str | None] = []
    board.add_listener(lambda status: heard.append(status.trace))
    board.put("c", 0, State.FAILED, f"Traceback ...\nRuntimeError: {SECRET!r}")
    stored = board.task("c", 0)
    assert stored is not None and stored.trace is not None
    assert HIDDEN in stored.trace and SECRET.replace("\\", "\\\\") not in stored.trace
    assert heard == [stored.trace]


def test_dlq_context_headers_are_redacted_with_the_process_redactor() -> None:
    from connectrt.runtime.redaction import process_redactor

    secret = "dlq-header-secret-7f3a\\x"
    process_redactor().register(secret)
    try:
        raise DataError(f"cannot convert with {secret!r}")
    except DataError as e:
        headers = dict(
            context_headers(
                topic="t",
                partition=0,
                offset=1,
                connector="c",
                task=0,
                stage="VALUE_CONVERTER",
                class_name="x.Y",
                error=e,
            )
        )
    for key in ("__connect.errors.exception.message", "__connect.errors.exception.stacktrace"):
        text = headers[key].decode()
        assert HIDDEN in text, key
        assert "dlq-header-secret-7f3a" not in text, key


@pytest.fixture
def private_log_redaction() -> Iterator[tuple[Redactor, io.StringIO]]:
    """Log redaction for a private redactor, with a handler added *after* it was installed on
    a plugin's logger that does not propagate to root."""
    redactor = Redactor()
    previous = logging.getLogRecordFactory()
    install_log_redaction(redactor)
    logger = logging.getLogger("some_plugin.inner")
    logger.propagate = False
    logger.setLevel(logging.DEBUG)
    buffer = io.StringIO()
    handler = logging.StreamHandler(buffer)
    handler.setFormatter(logging.Formatter("%(message)s"))
    logger.addHandler(handler)
    try:
        yield redactor, buffer
    finally:
        logger.removeHandler(handler)
        logger.propagate = True
        logging.setLogRecordFactory(previous)
        for h in logging.getLogger().handlers:
            for f in list(h.filters):
                if isinstance(f, RedactingFilter) and f.redactor is redactor:
                    h.removeFilter(f)


def test_log_records_of_any_logger_are_redacted(
    private_log_redaction: tuple[Redactor, io.StringIO],
) -> None:
    redactor, buffer = private_log_redaction
    redactor.register(SECRET)
    logger = logging.getLogger("some_plugin.inner")
    logger.warning("config %r", {"password": SECRET})
    try:
        raise RuntimeError(f"login failed: {SECRET!r}")
    except RuntimeError:
        logger.exception("task failed")
    out = buffer.getvalue()
    for encoded in every_encoding(SECRET):
        assert encoded not in out
    assert out.count(HIDDEN) == 2  # the message and the exception line


def test_install_log_redaction_is_idempotent(
    private_log_redaction: tuple[Redactor, io.StringIO],
) -> None:
    redactor, _ = private_log_redaction
    factory = logging.getLogRecordFactory()
    install_log_redaction(redactor)
    assert logging.getLogRecordFactory() is factory


# --- what joins the redaction set ------------------------------------------------------------


class _Typed(SourceConnector):
    """A connector with a PASSWORD-typed key whose name says nothing."""

    def start(self, config: Mapping[str, str]) -> None:
        pass

    def stop(self) -> None:
        pass

    def task_class(self) -> type[Task]:
        raise NotImplementedError

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return []

    def config_def(self) -> ConfigDef:
        return ConfigDef().define("auth.blob", ConfigType.PASSWORD, None)


def _secrets() -> tuple[ConfigSecrets, Redactor]:
    registry = PluginRegistry()
    registry.register_class(_Typed, "source")
    redactor = Redactor()
    return ConfigSecrets(registry, SecretMasker(), None, redactor), redactor


def test_literal_values_of_secret_typed_and_secret_named_keys_are_registered() -> None:
    secrets, redactor = _secrets()
    secrets.resolve(
        {
            "connector.class": f"{_Typed.__module__}._Typed",
            "auth.blob": "blob-value-1",
            "db.password": "pw-value-2",
            "producer.override.sasl.jaas.config": 'x required password="jaas-3";',
            "value.converter.basic.auth.user.info": "u:info-value-4",
            "connection.url": "jdbc:postgresql://alice:url-pw-5@h/db",
            "note": "not-a-secret-6",
            "ref.password": "${env:X}",  # a reference holds no secret
            "tasks.max": "1234",
        }
    )
    text = "blob-value-1 pw-value-2 u:info-value-4 url-pw-5 not-a-secret-6 ${env:X} 1234"
    assert redactor.redact(text) == (
        f"{HIDDEN} {HIDDEN} {HIDDEN} {HIDDEN} not-a-secret-6 ${{env:X}} 1234"
    )
    # The whole JAAS value is registered (the name matches), not its parts.
    assert redactor.redact('x required password="jaas-3";') == HIDDEN


def test_task_config_secrets_are_registered_before_they_are_stored() -> None:
    secrets, redactor = _secrets()
    raw = {"connector.class": f"{_Typed.__module__}._Typed"}
    secrets.unresolve(raw, [{"auth.blob": "task-blob-1", "client.secret": "task-secret-2"}])
    assert redactor.redact("task-blob-1 task-secret-2") == f"{HIDDEN} {HIDDEN}"


def test_validation_errors_quote_the_config_as_written() -> None:
    registry = PluginRegistry()
    raw = {"connector.class": "${env:CLS}", "name": "c"}
    resolved = {"connector.class": "resolved.secret_module.Cls", "name": "c"}
    with pytest.raises(ConfigError) as caught, errors_as_written(raw, resolved):
        validate_connector_config(resolved, registry, OverridePolicy("All"), written=raw)
    message = str(caught.value)
    assert "${env:CLS}" in message
    assert "secret_module" not in message
    assert caught.value.value is None
    assert caught.value.__cause__ is None


def test_errors_raised_with_a_resolved_value_are_rewritten() -> None:
    raw = {"tasks.max": "${file:/s.properties:n}"}
    resolved = {"tasks.max": "resolved-value-9"}
    with pytest.raises(DataError) as caught, errors_as_written(raw, resolved):
        raise DataError("cannot use resolved-value-9 here")
    assert str(caught.value) == "cannot use ${file:/s.properties:n} here"


def test_secrets_of_a_transient_block_are_hidden_only_for_its_duration() -> None:
    """A validate call's secrets are hidden while it runs, then dropped: 1,000 calls with new
    passwords leave the redactor as it was (no caller can grow it without bound)."""
    secrets, redactor = _secrets()
    secrets.resolve({"connector.class": f"{_Typed.__module__}._Typed", "db.password": "kept-pw"})
    for i in range(1000):
        with secrets.transient():
            secrets.resolve(
                {"connector.class": f"{_Typed.__module__}._Typed", "db.password": f"pw-{i:04}"}
            )
            assert redactor.redact(f"login pw-{i:04}") == f"login {HIDDEN}"
    assert len(redactor) == 1 and redactor.redact("pw-0999 kept-pw") == f"pw-0999 {HIDDEN}"


def test_a_held_value_stays_hidden_until_its_last_holder_releases_it() -> None:
    redactor = Redactor()
    first, second = redactor.hold(["shared-secret"]), redactor.hold(["shared-secret"])
    redactor.release(first)
    assert redactor.redact("shared-secret") == HIDDEN
    redactor.release(second)
    assert redactor.redact("shared-secret") == "shared-secret"
    redactor.register("shared-secret")  # registered for good: a hold's release keeps it
    redactor.release(redactor.hold(["shared-secret"]))
    assert redactor.redact("shared-secret") == HIDDEN
