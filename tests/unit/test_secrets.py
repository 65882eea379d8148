"""Secret masking for REST output, [hidden] round trips, and log redaction."""

from __future__ import annotations

import io
import logging
import threading
from collections.abc import Iterator

import pytest

from connectrt.api.config import ConfigDef, ConfigType
from connectrt.errors import ConfigError
from connectrt.runtime.config.connector import SINK_CONFIG_DEF
from connectrt.runtime.secrets.masking import (
    HIDDEN,
    RedactingFilter,
    SecretMasker,
    install_redacting_filter,
    is_secret,
    mask,
    merge_hidden,
)

SECRET_KEYS = [
    "password",
    "connection.password",
    "CONNECTION_PASSWORD",
    "dbPassword",
    "ssh.passwd",
    "snowflake.private.key.passphrase",
    "client.secret",
    "aws.secret.access.key",
    "clientSecret",
    "bearer.auth.token",
    "sas.token",
    "accessToken",
    "github.tokens",
    "gcs.credentials.json",
    "credential",
    "api.key",
    "apikey",
    "datadog.api_key",
    "apiKey",
    "private.key",
    "snowflake.privateKey",
    "ssl.key",
    "ssl.key.password",
    "ssl.keystore.password",
    "ssl.truststore.password",
    "ssl.keystore.key",
    "azblob.account.key",
    "azure.storage.access.key",
    "encryption.key",
    "sasl.jaas.config",
    "basic.auth.user.info",
    "azure.eventhubs.connection.string",
    # prefixed client overrides and nested plugin settings
    "producer.override.sasl.jaas.config",
    "consumer.override.ssl.key.password",
    "admin.override.ssl.keystore.password",
    "value.converter.basic.auth.user.info",
    "key.converter.schema.registry.basic.auth.user.info",
    "transforms.enrich.api.key",
]

INNOCENT_KEYS = [
    "key.converter",
    "key.converter.schemas.enable",
    "key.ignore",
    "pk.fields",
    "pk.mode",
    "tasks.max",
    "topic.key",
    "message.key.field",
    "key.fields",
    "primary.key.fields",
    "transforms.ExtractKey.field",
    "value.converter.schema.registry.url",
    "value.converter.basic.auth.credentials.source",
    "bearer.auth.credentials.source",
    "aws.credentials.provider.class",
    "sasl.oauthbearer.token.endpoint.url",
    "aws.access.key.id",
    "ssl.keystore.location",
    "ssl.keystore.type",
    "ssl.truststore.location",
    "ssl.keymanager.algorithm",
    "sasl.mechanism",
    "security.protocol",
    "connection.url",
    "connection.user",
    "name",
    "connector.class",
    "topics",
    "errors.deadletterqueue.topic.name",
    "secretsmanager.region",
]


@pytest.mark.parametrize("key", SECRET_KEYS)
def test_secret_key_names_match(key: str) -> None:
    assert is_secret(key, None)


@pytest.mark.parametrize("key", INNOCENT_KEYS)
def test_innocent_key_names_do_not_match(key: str) -> None:
    assert not is_secret(key, None)


def test_password_typed_keys_are_secret_whatever_their_name() -> None:
    d = ConfigDef().define("dsn.extra", ConfigType.PASSWORD, "")
    assert is_secret("dsn.extra", d)
    assert not is_secret("dsn.extra", None)
    assert mask({"dsn.extra": "pw=abc", "topics": "t"}, d) == {
        "dsn.extra": HIDDEN,
        "topics": "t",
    }


def test_non_string_typed_keys_are_never_secret() -> None:
    d = (
        ConfigDef()
        .define("max.token.count", ConfigType.INT, 1)
        .define("secret.rotation.enable", ConfigType.BOOLEAN, False)
        .define("token.label", ConfigType.STRING, "")
    )
    assert not is_secret("max.token.count", d)
    assert not is_secret("secret.rotation.enable", d)
    assert is_secret("token.label", d)  # a STRING key still goes by its name


def test_custom_patterns_replace_the_defaults() -> None:
    masker = SecretMasker(patterns=[r"^my\.hush$"])
    assert masker.is_secret("my.hush")
    assert not masker.is_secret("connection.password")
    assert not SecretMasker(patterns=[]).is_secret("connection.password")


def test_mask_hides_secret_values_and_keeps_the_rest() -> None:
    config = {
        "name": "jdbc",
        "connection.password": "hunter22",
        "producer.override.sasl.jaas.config": "PlainLoginModule required password='x';",
        "key.converter": "org.apache.kafka.connect.json.JsonConverter",
        "empty.password": "",
        "null.password": None,
    }
    out = mask(config, SINK_CONFIG_DEF)
    assert out == {
        "name": "jdbc",
        "connection.password": HIDDEN,
        "producer.override.sasl.jaas.config": HIDDEN,
        "key.converter": "org.apache.kafka.connect.json.JsonConverter",
        "empty.password": HIDDEN,
        "null.password": None,
    }
    assert config["connection.password"] == "hunter22"  # input untouched


def test_mask_shows_a_value_that_is_exactly_one_provider_reference() -> None:
    out = mask(
        {
            "connection.password": "${file:/secrets.properties:db.password}",
            "api.key": "${env:API_KEY}",
            "mixed.password": "${env:USER}:hunter22",
            "two.password": "${env:A}${env:B}",
            "padded.password": " ${env:A}",
        },
        None,
    )
    assert out == {
        "connection.password": "${file:/secrets.properties:db.password}",
        "api.key": "${env:API_KEY}",
        "mixed.password": HIDDEN,
        "two.password": HIDDEN,
        "padded.password": HIDDEN,
    }


# --- merge_hidden ---------------------------------------------------------------------------


def test_merge_hidden_keeps_the_stored_secret_on_round_trip() -> None:
    stored = {"name": "c", "connection.password": "hunter22", "topics": "a"}
    shown = mask(stored, None)
    assert shown["connection.password"] == HIDDEN
    edited = {**shown, "topics": "a,b"}
    assert merge_hidden(edited, stored, None) == {
        "name": "c",
        "connection.password": "hunter22",
        "topics": "a,b",
    }


def test_merge_hidden_new_value_replaces_the_stored_one() -> None:
    out = merge_hidden({"connection.password": "newpass"}, {"connection.password": "old"}, None)
    assert out == {"connection.password": "newpass"}


def test_merge_hidden_without_stored_value_is_rejected() -> None:
    with pytest.raises(ConfigError, match="no value is stored") as e:
        merge_hidden({"connection.password": HIDDEN}, {}, None)
    assert e.value.name == "connection.password"
    assert "connection.password" in str(e.value)


def test_merge_hidden_password_typed_key_without_stored_value_is_rejected() -> None:
    d = ConfigDef().define("dsn.extra", ConfigType.PASSWORD, "")
    with pytest.raises(ConfigError, match=r"dsn\.extra"):
        merge_hidden({"dsn.extra": HIDDEN}, {"other": "x"}, d)


def test_merge_hidden_restores_even_when_definition_is_unknown() -> None:
    # masked with a definition that typed it PASSWORD, merged without one
    out = merge_hidden({"dsn.extra": HIDDEN}, {"dsn.extra": "real"}, None)
    assert out == {"dsn.extra": "real"}


def test_merge_hidden_keeps_literal_for_non_secret_without_stored_value() -> None:
    assert merge_hidden({"comment": HIDDEN}, {}, None) == {"comment": HIDDEN}


def test_merge_hidden_passes_none_through_for_patch_deletes() -> None:
    out = merge_hidden(
        {"connection.password": None, "topics": "t"}, {"connection.password": "x"}, None
    )
    assert out == {"connection.password": None, "topics": "t"}


def test_merge_hidden_restores_a_stored_reference() -> None:
    stored = {"connection.password": "${env:PW}"}
    assert merge_hidden({"connection.password": HIDDEN}, stored, None) == stored


# --- RedactingFilter ------------------------------------------------------------------------


@pytest.fixture
def capture() -> Iterator[tuple[logging.Logger, io.StringIO, RedactingFilter]]:
    """A private logger whose handler carries a RedactingFilter, writing to a buffer."""
    logger = logging.getLogger("connectrt.tests.redaction")
    logger.propagate = False
    logger.setLevel(logging.DEBUG)
    buffer = io.StringIO()
    handler = logging.StreamHandler(buffer)
    handler.setFormatter(logging.Formatter("%(levelname)s %(message)s"))
    logger.addHandler(handler)
    f = install_redacting_filter(logger, RedactingFilter())  # private secrets, not the process's
    try:
        yield logger, buffer, f
    finally:
        logger.removeHandler(handler)
        logger.propagate = True


def test_redacts_secret_in_message(
    capture: tuple[logging.Logger, io.StringIO, RedactingFilter],
) -> None:
    logger, buffer, f = capture
    f.register("hunter22")
    logger.info("connecting with password=hunter22 to db")
    assert buffer.getvalue() == f"INFO connecting with password={HIDDEN} to db\n"


def test_redacts_secret_in_args(
    capture: tuple[logging.Logger, io.StringIO, RedactingFilter],
) -> None:
    logger, buffer, f = capture
    f.register("s3cr3t-token")
    logger.warning("config %s, tries %d", {"token": "s3cr3t-token"}, 3)
    out = buffer.getvalue()
    assert "s3cr3t-token" not in out
    assert f"'token': '{HIDDEN}'" in out
    assert "tries 3" in out


def test_redacted_record_has_no_secret_left_in_msg_or_args() -> None:
    f = RedactingFilter()
    f.register("hunter22")
    record = logging.LogRecord("x", logging.INFO, __file__, 1, "pw %s", ("hunter22",), None)
    assert f.filter(record) is True
    assert record.msg == f"pw {HIDDEN}"
    assert not record.args
    assert "hunter22" not in record.getMessage()


def test_secret_in_unused_mapping_arg_is_redacted() -> None:
    f = RedactingFilter()
    f.register("hunter22")
    record = logging.LogRecord(
        "x", logging.INFO, __file__, 1, "user %(u)s", ({"u": "bob", "pw": "hunter22"},), None
    )
    f.filter(record)
    assert record.getMessage() == "user bob"
    assert "hunter22" not in repr(record.args)


def test_record_without_secret_is_untouched() -> None:
    f = RedactingFilter()
    f.register("hunter22")
    args = ("bob",)
    record = logging.LogRecord("x", logging.INFO, __file__, 1, "user %s", args, None)
    f.filter(record)
    assert record.msg == "user %s"
    assert record.args == args


def test_redacts_exception_text(
    capture: tuple[logging.Logger, io.StringIO, RedactingFilter],
) -> None:
    logger, buffer, f = capture
    f.register("hunter22")
    try:
        raise RuntimeError("login failed for hunter22")
    except RuntimeError:
        logger.exception("task failed")
    out = buffer.getvalue()
    assert "hunter22" not in out
    assert f"RuntimeError: login failed for {HIDDEN}" in out


def test_short_values_are_not_registered(
    capture: tuple[logging.Logger, io.StringIO, RedactingFilter],
) -> None:
    logger, buffer, f = capture
    f.register("abc")
    f.register("")
    f.register(None)
    assert len(f) == 0
    logger.info("abc is fine")
    assert buffer.getvalue() == "INFO abc is fine\n"
    f.register("abcd")
    logger.info("abcd is not")
    assert buffer.getvalue().endswith(f"INFO {HIDDEN} is not\n")


def test_longest_secret_wins_and_regex_chars_are_literal() -> None:
    f = RedactingFilter()
    f.register_all(["pass", "pass.word+1", "a.b*"])
    assert f.redact("x pass.word+1 y pass z axb a.b*") == f"x {HIDDEN} y {HIDDEN} z axb {HIDDEN}"


def test_unregister_and_clear() -> None:
    f = RedactingFilter()
    f.register_all(["hunter22", "token-xyz"])
    f.unregister("hunter22")
    assert f.redact("hunter22 token-xyz") == f"hunter22 {HIDDEN}"
    f.clear()
    assert f.redact("hunter22 token-xyz") == "hunter22 token-xyz"


def test_install_is_idempotent_and_covers_every_handler() -> None:
    logger = logging.getLogger("connectrt.tests.install")
    h1, h2 = logging.NullHandler(), logging.NullHandler()
    logger.addHandler(h1)
    logger.addHandler(h2)
    try:
        f1 = install_redacting_filter(logger)
        f2 = install_redacting_filter(logger)
        assert f1 is f2
        assert h1.filters == [f1]
        assert h2.filters == [f1]
    finally:
        logger.removeHandler(h1)
        logger.removeHandler(h2)


def test_register_is_thread_safe() -> None:
    f = RedactingFilter()
    values = [f"secret-{i:04d}" for i in range(400)]

    def worker(chunk: list[str]) -> None:
        for v in chunk:
            f.register(v)
            f.redact(f"log line with {v}")

    threads = [threading.Thread(target=worker, args=(values[i::8],)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(f) == 400
    assert f.redact(" ".join(values)) == " ".join([HIDDEN] * 400)
