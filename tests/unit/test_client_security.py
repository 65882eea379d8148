"""Kafka Connect's Java-style client security keys -> librdkafka's, and which clients use them
(connectrt.runtime.clients.security, as layered by connectrt.runtime.clients.settings)."""

from __future__ import annotations

import logging
import shutil
import subprocess
from pathlib import Path

import pytest
from confluent_kafka import Producer

from connectrt.errors import ConfigError
from connectrt.runtime.clients.jaas import parse_jaas
from connectrt.runtime.clients.security import (
    client_security,
    inheriting_prefixes,
    log_worker_security,
    resolve_security,
    translate,
)
from connectrt.runtime.clients.settings import (
    OverridePolicy,
    admin_config,
    consumer_config,
    producer_config,
)
from connectrt.runtime.redaction import process_redactor
from connectrt.runtime.secrets.masking import is_secret

PLAIN = "org.apache.kafka.common.security.plain.PlainLoginModule"
SCRAM = "org.apache.kafka.common.security.scram.ScramLoginModule"
SECRET = "s3cr3t-pw"


def jaas(module: str = PLAIN, user: str = "alice", password: str = SECRET) -> str:
    return f'{module} required username="{user}" password="{password}";'


# -- JAAS ------------------------------------------------------------------------------------


def test_plain_and_scram_jaas_become_username_and_password() -> None:
    for module in (PLAIN, SCRAM):
        out = translate({"sasl.mechanism": "PLAIN", "sasl.jaas.config": jaas(module)}).settings
        assert out == {"sasl.mechanism": "PLAIN", "sasl.username": "alice", "sasl.password": SECRET}


def test_jaas_quoted_values_keep_escaped_quotes_backslashes_and_separators() -> None:
    text = f'{PLAIN}  required\n  username=bob password="a\\"b\\\\c;d = e" ;'
    entry = parse_jaas(text)
    assert entry.module == PLAIN and entry.flag == "required"
    assert entry.options == {"username": "bob", "password": 'a"b\\c;d = e'}
    assert SECRET not in repr(parse_jaas(jaas()))  # options (the password) are not in repr


@pytest.mark.parametrize(
    "text",
    [
        f'{PLAIN} required username="alice" password="{SECRET}"',  # no ';'
        f'{PLAIN} required username="alice" password="{SECRET};',  # quote not closed
        f'{PLAIN} mandatory username="alice" password="{SECRET}";',  # bad control flag
        f'{PLAIN} required username="alice" password {SECRET};',  # no '='
        f'{PLAIN} required password="{SECRET}"; {PLAIN} required username="x";',  # two entries
        f'{PLAIN} required password="{SECRET}";',  # no username
        f"{PLAIN}",
    ],
)
def test_bad_jaas_is_a_config_error_without_the_password(text: str) -> None:
    with pytest.raises(ConfigError) as err:
        translate({"sasl.jaas.config": text}, "producer.")
    assert err.value.name == "producer.sasl.jaas.config"
    assert SECRET not in str(err.value) and err.value.value is None


def test_unknown_login_module_names_key_and_supported_modules() -> None:
    text = f'software.amazon.msk.auth.iam.IAMLoginModule required awsSecret="{SECRET}";'
    with pytest.raises(ConfigError) as err:
        translate({"sasl.jaas.config": text})
    message = str(err.value)
    assert "sasl.jaas.config" in message and "IAMLoginModule" in message
    assert PLAIN in message and SCRAM in message and OAUTH in message and KRB5 in message
    assert SECRET not in message


# -- OAUTHBEARER and GSSAPI ------------------------------------------------------------------

OAUTH = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule"
KRB5 = "com.sun.security.auth.module.Krb5LoginModule"
OIDC_HANDLER = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginCallbackHandler"
ENDPOINT = "https://idp.example/oauth2/token"


def test_oauthbearer_client_credentials_become_librdkafka_oidc() -> None:
    out = translate(
        {
            "security.protocol": "SASL_SSL",
            "sasl.mechanism": "OAUTHBEARER",
            "sasl.login.callback.handler.class": OIDC_HANDLER,
            "sasl.oauthbearer.token.endpoint.url": ENDPOINT,
            "sasl.jaas.config": f'{OAUTH} required clientId="connect" clientSecret="{SECRET}" '
            'scope="kafka" extension_logicalCluster="lkc-1" extension_identityPoolId="pool-2";',
        }
    )
    assert out.settings == {
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": "OAUTHBEARER",
        "sasl.oauthbearer.method": "oidc",
        "sasl.oauthbearer.token.endpoint.url": ENDPOINT,
        "sasl.oauthbearer.client.id": "connect",
        "sasl.oauthbearer.client.secret": SECRET,
        "sasl.oauthbearer.scope": "kafka",
        "sasl.oauthbearer.extensions": "logicalCluster=lkc-1,identityPoolId=pool-2",
    }
    assert out.ignored == ()  # Kafka's OIDC login handler is librdkafka's method=oidc
    assert SECRET in out.secrets
    # librdkafka accepts the settings (the token is fetched later, in the background).
    Producer({"bootstrap.servers": "127.0.0.1:1", **out.settings}).flush(0)


def test_kafka_4_1_client_credentials_keys_become_librdkafka_oidc() -> None:
    out = translate(
        {
            "sasl.mechanism": "OAUTHBEARER",
            "sasl.oauthbearer.token.endpoint.url": ENDPOINT,
            "sasl.oauthbearer.client.credentials.client.id": "connect",
            "sasl.oauthbearer.client.credentials.client.secret": SECRET,
            "sasl.oauthbearer.scope": "kafka",
        }
    )
    assert out.settings["sasl.oauthbearer.method"] == "oidc"
    assert out.settings["sasl.oauthbearer.client.id"] == "connect"
    assert out.settings["sasl.oauthbearer.client.secret"] == SECRET
    assert out.settings["sasl.oauthbearer.scope"] == "kafka"
    assert not any("credentials" in k for k in out.settings)
    assert SECRET in out.secrets


def test_oauthbearer_unsecured_development_token() -> None:
    out = translate(
        {"sasl.jaas.config": f'{OAUTH} required unsecuredLoginStringClaim_sub="alice";'}
    ).settings
    assert out == {
        "enable.sasl.oauthbearer.unsecure.jwt": True,
        "sasl.oauthbearer.config": "principal=alice",
    }


@pytest.mark.parametrize(
    ("keys", "named"),
    [
        ({"sasl.jaas.config": f'{OAUTH} required clientId="c" clientSecret="{SECRET}";'},
         "sasl.oauthbearer.token.endpoint.url"),
        ({"sasl.jaas.config": f'{OAUTH} required clientSecret="{SECRET}";',
          "sasl.oauthbearer.token.endpoint.url": ENDPOINT}, "sasl.jaas.config"),
        ({"sasl.jaas.config": f'{OAUTH} required clientId="c" clientSecret="{SECRET}";',
          "sasl.oauthbearer.token.endpoint.url": ENDPOINT,
          "sasl.oauthbearer.client.id": "other"}, "sasl.oauthbearer.client.id"),
    ],
)  # fmt: skip
def test_incomplete_or_doubled_oauthbearer_settings_are_refused(
    keys: dict[str, str], named: str
) -> None:
    with pytest.raises(ConfigError) as err:
        translate(keys, "producer.")
    assert f"producer.{named}" in str(err.value)
    assert SECRET not in str(err.value)


def test_gssapi_keytab_and_principal_become_librdkafka_kerberos_keys() -> None:
    out = translate(
        {
            "sasl.mechanism": "GSSAPI",
            "sasl.kerberos.service.name": "kafka",
            "sasl.kerberos.kinit.cmd": "/usr/bin/kinit",
            "sasl.jaas.config": f"{KRB5} required useKeyTab=true storeKey=true "
            'keyTab="/etc/security/connect.keytab" principal="connect@EXAMPLE.COM";',
        }
    )
    settings = dict(out.settings)
    kinit = settings.pop("sasl.kerberos.kinit.cmd")
    assert settings == {
        "sasl.mechanism": "GSSAPI",
        "sasl.kerberos.service.name": "kafka",
        "sasl.kerberos.keytab": "/etc/security/connect.keytab",
        "sasl.kerberos.principal": "connect@EXAMPLE.COM",
    }
    assert kinit.startswith("/usr/bin/kinit -R -t ") and "%{sasl.kerberos.keytab}" in kinit
    assert out.ignored == ()


def test_gssapi_ticket_cache_and_jaas_service_name() -> None:
    out = translate(
        {"sasl.jaas.config": f'{KRB5} required useTicketCache=true serviceName="kafka" '
         'principal="u@R" renewTGT=true;'}
    )  # fmt: skip
    assert out.settings == {
        "sasl.kerberos.principal": "u@R",
        "sasl.kerberos.service.name": "kafka",
        "sasl.kerberos.min.time.before.relogin": 0,
    }
    assert out.ignored == ("sasl.jaas.config option 'renewTGT'",)
    with pytest.raises(ConfigError):
        translate(
            {
                "sasl.kerberos.service.name": "other",
                "sasl.jaas.config": f'{KRB5} required serviceName="kafka";',
            }
        )


def test_every_translated_secret_is_masked_and_redacted() -> None:
    secret_keys = [
        "sasl.jaas.config",
        "sasl.password",
        "ssl.key.password",
        "ssl.keystore.password",
        "ssl.key.pem",
        "sasl.oauthbearer.client.secret",
        "sasl.oauthbearer.client.credentials.client.secret",
    ]
    for key in secret_keys:
        for prefix in ("", "producer.", "consumer.override."):
            assert is_secret(prefix + key), prefix + key
    client_secret = "oidc-client-s3cret"
    log_worker_security(
        {
            "sasl.mechanism": "OAUTHBEARER",
            "sasl.oauthbearer.token.endpoint.url": ENDPOINT,
            "sasl.jaas.config": f'{OAUTH} required clientId="c" clientSecret="{client_secret}";',
        }
    )
    assert process_redactor().redact(f"a {client_secret} b") == "a [hidden] b"


def test_jaas_and_librdkafka_username_together_are_refused_naming_both() -> None:
    with pytest.raises(ConfigError) as err:
        translate({"sasl.jaas.config": jaas(), "sasl.username": "bob"}, "consumer.")
    assert "consumer.sasl.jaas.config" in str(err.value)
    assert "consumer.sasl.username" in str(err.value)
    assert SECRET not in str(err.value)


def test_librdkafka_keys_pass_unchanged() -> None:
    keys = {
        "security.protocol": "SASL_SSL",
        "sasl.mechanisms": "SCRAM-SHA-512",
        "sasl.username": "u",
        "sasl.password": "p",
        "ssl.ca.location": "/ca.pem",
        "ssl.keystore.location": "/client.p12",
        "ssl.keystore.password": "kp",
    }
    assert translate(keys).settings == keys


# -- stores ----------------------------------------------------------------------------------


def test_pem_truststore_becomes_ca_location_and_its_password_is_ignored() -> None:
    out = translate(
        {
            "ssl.truststore.type": "PEM",
            "ssl.truststore.location": "/etc/kafka/ca.crt",
            "ssl.truststore.password": "unused",
        }
    )
    assert out.settings == {"ssl.ca.location": "/etc/kafka/ca.crt"}
    assert out.ignored == ("ssl.truststore.password",)


def test_pkcs12_truststore_is_refused_with_the_conversion() -> None:
    with pytest.raises(ConfigError) as err:
        translate(
            {
                "ssl.truststore.type": "PKCS12",
                "ssl.truststore.location": "/t.p12",
                "ssl.truststore.password": SECRET,
            },
            "admin.",
        )
    assert err.value.name == "admin.ssl.truststore.location"
    assert "openssl pkcs12" in str(err.value) and "-nokeys" in str(err.value)
    assert SECRET not in str(err.value)


@pytest.mark.parametrize("kind", ["truststore", "keystore"])
def test_jks_store_is_refused_with_the_keytool_conversion(kind: str) -> None:
    for keys in (
        {f"ssl.{kind}.location": "/s.jks"},  # JKS by default (Java's default type)
        {f"ssl.{kind}.location": "/s.store", f"ssl.{kind}.type": "jks"},
    ):
        with pytest.raises(ConfigError) as err:
            translate({**keys, f"ssl.{kind}.password": SECRET})
        assert "keytool -importkeystore" in str(err.value) and "PKCS12" in str(err.value)
        assert SECRET not in str(err.value)


def test_pkcs12_keystore_keeps_location_and_password() -> None:
    out = translate(
        {
            "ssl.keystore.type": "PKCS12",
            "ssl.keystore.location": "/c.p12",
            "ssl.keystore.password": "kp",
            "ssl.key.password": "kk",
        }
    ).settings
    assert out == {
        "ssl.keystore.location": "/c.p12",
        "ssl.keystore.password": "kp",
        "ssl.key.password": "kk",
    }


def test_pem_keystore_file_and_inline_pem() -> None:
    out = translate(
        {"ssl.keystore.type": "PEM", "ssl.keystore.location": "/c.pem", "ssl.key.password": "k"}
    ).settings
    assert out == {
        "ssl.certificate.location": "/c.pem",
        "ssl.key.location": "/c.pem",
        "ssl.key.password": "k",
    }
    inline = translate(
        {
            "ssl.keystore.type": "PEM",
            "ssl.keystore.certificate.chain": "CHAIN",
            "ssl.keystore.key": "KEY",
            "ssl.truststore.type": "PEM",
            "ssl.truststore.certificates": "CA",
        }
    ).settings
    assert inline == {"ssl.certificate.pem": "CHAIN", "ssl.key.pem": "KEY", "ssl.ca.pem": "CA"}


def test_truststore_and_ca_location_together_are_refused() -> None:
    with pytest.raises(ConfigError) as err:
        translate(
            {
                "ssl.truststore.type": "PEM",
                "ssl.truststore.location": "/a.pem",
                "ssl.ca.location": "/b.pem",
            }
        )
    assert "ssl.truststore.location" in str(err.value) and "ssl.ca.location" in str(err.value)


@pytest.mark.skipif(shutil.which("openssl") is None, reason="needs the openssl command")
def test_librdkafka_loads_key_and_chain_of_one_pem_keystore_file(tmp_path: Path) -> None:
    """The PEM keystore mapping (one file for certificate and key) is what librdkafka reads: it
    loads both from the file at client creation, and checks they belong together."""
    key, cert = str(tmp_path / "k.pem"), str(tmp_path / "c.pem")
    command = [
        "openssl",
        "req",
        "-x509",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-days",
        "1",
        "-subj",
        "/CN=client",
    ]
    subprocess.run(
        [*command, "-keyout", key, "-out", cert],
        check=True,
        capture_output=True,
        timeout=120,
    )
    store = tmp_path / "keystore.pem"
    store.write_text((tmp_path / "k.pem").read_text() + (tmp_path / "c.pem").read_text())
    settings = translate(
        {
            "security.protocol": "SSL",
            "ssl.keystore.type": "PEM",
            "ssl.keystore.location": str(store),
        }
    ).settings
    Producer({"bootstrap.servers": "127.0.0.1:1", **settings}).flush(0)


def test_endpoint_identification() -> None:
    key = "ssl.endpoint.identification.algorithm"
    assert translate({key: ""}).settings == {key: "none"}
    assert translate({key: "HTTPS"}).settings == {key: "https"}
    with pytest.raises(ConfigError) as err:
        translate({key: "ldaps"}, "producer.")
    assert err.value.name == f"producer.{key}"


def test_java_only_keys_are_named_and_dropped() -> None:
    out = translate(
        {"sasl.mechanism": "PLAIN", "sasl.login.class": "x.Y", "ssl.protocol": "TLSv1.3"},
        "producer.",
    )
    assert out.settings == {"sasl.mechanism": "PLAIN"}
    assert set(out.ignored) == {"producer.sasl.login.class", "producer.ssl.protocol"}


# -- layering --------------------------------------------------------------------------------

TOP = {
    "bootstrap.servers": "b:9092",
    "security.protocol": "SASL_PLAINTEXT",
    "sasl.mechanism": "PLAIN",
    "sasl.jaas.config": jaas(),
}
NONE = OverridePolicy("None")


def test_task_clients_without_security_keys_inherit_the_top_level_ones() -> None:
    props = {**TOP, "producer.linger.ms": "20"}
    producer = producer_config("b:9092", props, {}, NONE, "p")
    consumer = consumer_config("b:9092", props, {}, NONE, "c", "g")
    admin = admin_config("b:9092", props, {}, NONE, "a")
    for cfg in (producer, consumer, admin):
        assert cfg["security.protocol"] == "SASL_PLAINTEXT"
        assert (cfg["sasl.username"], cfg["sasl.password"]) == ("alice", SECRET)
        assert "sasl.jaas.config" not in cfg
    assert producer["linger.ms"] == "20"
    assert inheriting_prefixes(props) == ["producer.", "consumer.", "admin."]


def test_a_prefix_with_any_security_key_uses_only_its_own() -> None:
    props = {
        **TOP,
        "producer.security.protocol": "SASL_SSL",
        "producer.sasl.mechanism": "SCRAM-SHA-512",
        "producer.sasl.jaas.config": jaas(SCRAM, "bob", "bob-pw"),
    }
    producer = producer_config("b:9092", props, {}, NONE, "p")
    assert producer["security.protocol"] == "SASL_SSL"
    assert (producer["sasl.username"], producer["sasl.password"]) == ("bob", "bob-pw")
    assert producer["sasl.mechanism"] == "SCRAM-SHA-512"
    assert inheriting_prefixes(props) == ["consumer.", "admin."]
    # The worker's own clients (internal topics) use the top-level keys, as in Kafka Connect.
    own = producer_config("b:9092", props, None, NONE, "p", worker_own=True)
    assert (own["security.protocol"], own["sasl.username"]) == ("SASL_PLAINTEXT", "alice")


def test_worker_own_clients_fall_back_to_prefixed_keys_without_top_level_ones() -> None:
    props = {"producer.security.protocol": "SSL", "producer.ssl.ca.location": "/ca.pem"}
    own = producer_config("b:9092", props, None, NONE, "p", worker_own=True)
    assert (own["security.protocol"], own["ssl.ca.location"]) == ("SSL", "/ca.pem")
    assert "security.protocol" not in admin_config("b:9092", props, None, NONE, "a")
    assert inheriting_prefixes(props) == []


def test_connector_security_overrides_are_translated_and_merged() -> None:
    override = {"producer.override.sasl.jaas.config": jaas(SCRAM, "carol", "carol-pw")}
    cfg = producer_config("b:9092", TOP, override, OverridePolicy("Principal"), "p")
    assert (cfg["sasl.username"], cfg["sasl.password"]) == ("carol", "carol-pw")
    assert cfg["security.protocol"] == "SASL_PLAINTEXT"  # from the worker, not overridden


def test_errors_in_the_worker_file_name_the_prefixed_key() -> None:
    props = {**TOP, "consumer.sasl.jaas.config": f'{PLAIN} required password="{SECRET}"'}
    with pytest.raises(ConfigError) as err:
        consumer_config("b:9092", props, {}, NONE, "c", "g")
    assert err.value.name == "consumer.sasl.jaas.config" and SECRET not in str(err.value)


# -- start-up --------------------------------------------------------------------------------


def test_start_up_logs_inheritance_once_and_warns_java_only_keys_without_values(
    caplog: pytest.LogCaptureFixture,
) -> None:
    props = {
        **TOP,
        "sasl.login.class": "com.example.Login",
        "consumer.security.protocol": "SASL_PLAINTEXT",
    }
    with caplog.at_level(logging.INFO, logger="connectrt.runtime.clients.security"):
        log_worker_security(props)
    info = [r.getMessage() for r in caplog.records if r.levelno == logging.INFO]
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(info) == 1 and "'producer.'" in info[0] and "'admin.'" in info[0]
    assert "consumer." not in info[0]
    assert len(warnings) == 1 and "sasl.login.class" in warnings[0]
    assert all(SECRET not in m and "com.example" not in m for m in info + warnings)
    assert process_redactor().redact(f"x {SECRET} y") == "x [hidden] y"


def test_start_up_refuses_what_cannot_be_translated() -> None:
    with pytest.raises(ConfigError) as err:
        log_worker_security({"ssl.truststore.location": "/t.jks", "ssl.truststore.password": "x"})
    assert err.value.name == "ssl.truststore.location"


def test_resolve_security_resolves_only_security_keys() -> None:
    seen: list[dict[str, str]] = []

    def resolve(config: object) -> dict[str, str]:
        assert isinstance(config, dict)
        seen.append(dict(config))
        return {k: v.replace("${env:PW}", "resolved") for k, v in config.items()}

    props = {
        "sasl.jaas.config": '... password="${env:PW}";',
        "producer.ssl.key.password": "${env:PW}",
        "producer.linger.ms": "${env:PW}",
        "name": "${env:PW}",
    }
    out = resolve_security(props, resolve)
    assert out["sasl.jaas.config"] == '... password="resolved";'
    assert out["producer.ssl.key.password"] == "resolved"
    assert out["producer.linger.ms"] == "${env:PW}" and out["name"] == "${env:PW}"
    assert set(seen[0]) == {"sasl.jaas.config", "producer.ssl.key.password"}


def test_client_security_picks_the_group() -> None:
    props = {**TOP, "admin.security.protocol": "PLAINTEXT"}
    assert client_security(props, "admin").settings == {"security.protocol": "PLAINTEXT"}
    assert client_security(props, "admin", worker_own=True).settings["sasl.username"] == "alice"


# -- the reference table ---------------------------------------------------------------------


def test_the_reference_table_names_every_key_the_translation_reads_and_writes() -> None:
    from connectrt.runtime.clients import security as client_security
    from connectrt.runtime.clients.key_table import security_key_table

    table = security_key_table()
    for java in client_security._CONSUMED:
        assert f"`{java}" in table, java
    samples = [
        {"sasl.jaas.config": jaas()},
        {
            "sasl.oauthbearer.token.endpoint.url": ENDPOINT,
            "sasl.jaas.config": f'{OAUTH} required clientId="c" clientSecret="s" scope="x" '
            'extension_a="b";',
        },
        {"sasl.jaas.config": f'{OAUTH} required unsecuredLoginStringClaim_sub="alice";'},
        {"sasl.jaas.config": f'{KRB5} required keyTab="/k" principal="p" serviceName="kafka";'},
        {"sasl.jaas.config": f'{KRB5} required useTicketCache=true principal="p";'},
        {"sasl.kerberos.kinit.cmd": "/usr/bin/kinit"},
        {"ssl.truststore.type": "PEM", "ssl.truststore.location": "/ca.pem"},
        {"ssl.truststore.type": "PEM", "ssl.truststore.certificates": "PEM"},
        {"ssl.keystore.location": "/c.p12", "ssl.keystore.password": "p"},
        {"ssl.keystore.type": "PEM", "ssl.keystore.location": "/c.pem"},
        {
            "ssl.keystore.type": "PEM",
            "ssl.keystore.certificate.chain": "C",
            "ssl.keystore.key": "K",
        },
        {"ssl.key.password": "k", "ssl.endpoint.identification.algorithm": ""},
    ]
    for sample in samples:
        for native in translate(sample).settings:
            assert f"`{native}" in table, (native, sample)
