"""Client overrides that would make the worker run, load, fetch or read: refused per key.

The checks of :mod:`connectrt.runtime.clients.override_safety`, through the
:class:`~connectrt.runtime.clients.settings.OverridePolicy` that applies them at validation and
again when a task's clients are built.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from connectrt.errors import ConfigError
from connectrt.runtime.clients.override_safety import (
    ALLOWED_DIRECTORIES_CONFIG,
    ALLOWED_URLS_CONFIG,
    AZURE_IMDS_TOKEN_URL,
    CODE_KEYS,
    FILE_KEYS,
    OverrideSafety,
)
from connectrt.runtime.clients.settings import OverridePolicy, consumer_config, producer_config
from connectrt.runtime.config.connector import validate_connector_config
from connectrt.runtime.config.worker import WorkerConfig
from connectrt.runtime.plugins.registry import PluginRegistry

PREFIXES = ("producer.override.", "consumer.override.", "admin.override.")
TOKEN_URL = "https://idp.example/oauth2/token"
SECRET_URL = "https://alice:s3cr3t@evil.example/steal"


def _all(safety: OverrideSafety | None = None) -> OverridePolicy:
    return OverridePolicy("All", safety=safety)


@pytest.mark.parametrize("prefix", PREFIXES)
@pytest.mark.parametrize("key", sorted(CODE_KEYS))
def test_command_library_and_callback_keys_are_refused_under_the_all_policy(
    key: str, prefix: str
) -> None:
    value = "touch /tmp/never-run-marker"
    bad = _all().violations({prefix + key: value})
    assert list(bad) == [prefix + key]
    assert f"'{key}'" in bad[prefix + key]
    assert "whatever the override policy" in bad[prefix + key]
    assert value not in bad[prefix + key]


def test_an_allowlist_naming_a_command_key_does_not_allow_it() -> None:
    policy = OverridePolicy("Allowlist", ["sasl.kerberos.kinit.cmd", "plugin.library.paths"])
    bad = policy.violations(
        {
            "producer.override.sasl.kerberos.kinit.cmd": "id",
            "consumer.override.plugin.library.paths": "/tmp/x.so",
        }
    )
    assert set(bad) == {
        "producer.override.sasl.kerberos.kinit.cmd",
        "consumer.override.plugin.library.paths",
    }
    assert "run a shell command" in bad["producer.override.sasl.kerberos.kinit.cmd"]
    assert "load a shared library" in bad["consumer.override.plugin.library.paths"]


def test_ordinary_overrides_stay_allowed_under_all() -> None:
    conn = {
        "producer.override.linger.ms": "20",
        "consumer.override.sasl.mechanism": "PLAIN",
        "consumer.override.sasl.username": "alice",
        "consumer.override.sasl.password": "pw",
        "admin.override.security.protocol": "SASL_SSL",
        "producer.override.ssl.ca.location": "probe",
        "producer.override.ssl.key.location": "",
        "producer.override.sasl.oauthbearer.method": "oidc",
        "producer.override.debug": "broker",
    }
    assert _all().violations(conn) == {}


# --- URLs -----------------------------------------------------------------------------------


def test_a_token_endpoint_url_is_refused_unless_listed_exactly() -> None:
    key = "producer.override.sasl.oauthbearer.token.endpoint.url"
    bad = _all().violations({key: SECRET_URL})
    assert list(bad) == [key]
    assert ALLOWED_URLS_CONFIG in bad[key]
    assert "s3cr3t" not in bad[key] and "evil.example" not in bad[key]

    listed = _all(OverrideSafety.create(allowed_urls=[TOKEN_URL]))
    assert listed.violations({key: TOKEN_URL}) == {}
    assert list(listed.violations({key: TOKEN_URL + "/x"})) == [key]
    assert list(listed.violations({key: TOKEN_URL.upper()})) == [key]


def test_kafkas_jwks_url_key_is_checked_as_a_url() -> None:
    bad = _all().violations({"consumer.override.sasl.oauthbearer.jwks.endpoint.url": TOKEN_URL})
    assert "would fetch" in bad["consumer.override.sasl.oauthbearer.jwks.endpoint.url"]


def test_azure_imds_needs_its_metadata_url_listed() -> None:
    key = "admin.override.sasl.oauthbearer.metadata.authentication.type"
    bad = _all().violations({key: "azure_imds"})
    assert AZURE_IMDS_TOKEN_URL in bad[key]
    assert _all().violations({key: "none"}) == {}
    imds = _all(OverrideSafety.create(allowed_urls=[AZURE_IMDS_TOKEN_URL]))
    assert imds.violations({key: "azure_imds"}) == {}
    # With an explicit endpoint, that endpoint is what gets checked.
    with_url = {key: "azure_imds", "admin.override.sasl.oauthbearer.token.endpoint.url": TOKEN_URL}
    assert list(_all().violations(with_url)) == [
        "admin.override.sasl.oauthbearer.token.endpoint.url"
    ]


# --- files ----------------------------------------------------------------------------------


@pytest.mark.parametrize("key", sorted(FILE_KEYS))
def test_file_keys_are_refused_without_an_allowed_directory(key: str) -> None:
    bad = _all().violations({"producer.override." + key: "/etc/passwd"})
    assert list(bad) == ["producer.override." + key]
    message = bad["producer.override." + key]
    assert ALLOWED_DIRECTORIES_CONFIG in message and "/etc/passwd" not in message


def test_files_inside_an_allowed_directory_are_accepted(tmp_path: Path) -> None:
    allowed = tmp_path / "tls"
    allowed.mkdir()
    (allowed / "ca.pem").write_text("x")
    (allowed / "sub").mkdir()
    policy = _all(OverrideSafety.create(allowed_directories=[str(allowed)]))
    assert policy.violations({"producer.override.ssl.ca.location": str(allowed / "ca.pem")}) == {}
    assert policy.violations({"producer.override.ssl.ca.location": str(allowed / "sub")}) == {}
    assert policy.violations({"producer.override.ssl.ca.location": str(allowed)}) == {}


def test_escapes_from_an_allowed_directory_are_refused(tmp_path: Path) -> None:
    allowed = tmp_path / "tls"
    allowed.mkdir()
    sibling = tmp_path / "tls-other"
    sibling.mkdir()
    (sibling / "key.pem").write_text("secret")
    os.symlink(sibling / "key.pem", allowed / "link.pem")
    policy = _all(OverrideSafety.create(allowed_directories=[str(allowed)]))
    for path in (
        allowed / ".." / "tls-other" / "key.pem",  # dot-dot
        sibling / "key.pem",  # a sibling sharing the name's prefix
        allowed / "link.pem",  # a symbolic link out
        "relative/key.pem",  # resolved against the worker's directory
    ):
        bad = policy.violations({"consumer.override.ssl.key.location": str(path)})
        assert list(bad) == ["consumer.override.ssl.key.location"], path


def test_the_worker_files_own_file_and_command_settings_are_not_limited() -> None:
    worker = {
        "producer.ssl.ca.location": "/etc/ssl/ca.pem",
        "producer.sasl.kerberos.kinit.cmd": "kinit -k %{sasl.kerberos.principal}",
        "producer.sasl.oauthbearer.token.endpoint.url": TOKEN_URL,
    }
    cfg = producer_config("b:9092", worker, {}, _all(), "p")
    assert cfg["ssl.ca.location"] == "/etc/ssl/ca.pem"
    assert cfg["sasl.kerberos.kinit.cmd"].startswith("kinit")


def test_clients_are_not_built_with_an_unsafe_override() -> None:
    # The second check, when a task's clients are built (configs stored before an upgrade, or
    # a provider that resolves differently at task start).
    conn = {"consumer.override.sasl.oauthbearer.token.endpoint.url": SECRET_URL}
    with pytest.raises(ConfigError) as e:
        consumer_config("b:9092", {}, conn, _all(), "c", "g")
    assert e.value.name == "consumer.override.sasl.oauthbearer.token.endpoint.url"
    assert "s3cr3t" not in str(e.value)


# --- the Kerberos kinit command -------------------------------------------------------------


@pytest.mark.parametrize(
    "value",
    [
        "x; touch /tmp/marker",
        "$(touch /tmp/marker)",
        "`id`",
        "a b",
        "-c/tmp/ccache",
        'k"; id; "',
        "x|id",
        "x&id",
        "x\nid",
    ],
)
def test_values_inserted_into_the_kinit_command_must_be_plain_words(value: str) -> None:
    bad = _all().violations({"producer.override.sasl.kerberos.principal": value})
    assert list(bad) == ["producer.override.sasl.kerberos.principal"]
    assert "kinit shell command" in bad["producer.override.sasl.kerberos.principal"]


def test_an_ordinary_principal_is_allowed() -> None:
    assert (
        _all().violations({"producer.override.sasl.kerberos.principal": "kafka/h.example@EX.COM"})
        == {}
    )


def test_keys_a_custom_worker_kinit_command_inserts_are_checked_too() -> None:
    worker = {"consumer.sasl.kerberos.kinit.cmd": "kinit %{sasl.username}"}
    safety = OverrideSafety.from_worker_config(worker)
    assert "sasl.username" in safety.shell_keys
    bad = _all(safety).violations({"producer.override.sasl.username": "u;id"})
    assert list(bad) == ["producer.override.sasl.username"]
    assert _all().violations({"producer.override.sasl.username": "u;id"}) == {}


# --- JAAS -----------------------------------------------------------------------------------


@pytest.mark.parametrize("module", ["JndiLoginModule", "LdapLoginModule"])
def test_kafkas_disallowed_login_modules_are_refused(module: str) -> None:
    jaas = f'com.sun.security.auth.module.{module} required user.provider.url="ldap://x" ;'
    bad = _all().violations({"producer.override.sasl.jaas.config": jaas})
    message = bad["producer.override.sasl.jaas.config"]
    assert f"com.sun.security.auth.module.{module} is not allowed" in message
    assert "ldap://x" not in message
    plain = 'org.apache.kafka.common.security.plain.PlainLoginModule required username="u";'
    assert _all().violations({"producer.override.sasl.jaas.config": plain}) == {}


# --- worker settings and validation --------------------------------------------------------


def test_policy_from_worker_config_reads_both_allowlists(tmp_path: Path) -> None:
    wc = WorkerConfig.from_props(
        {
            "bootstrap.servers": "b:9092",
            "group.id": "g",
            "config.storage.topic": "c",
            "offset.storage.topic": "o",
            "status.storage.topic": "s",
            ALLOWED_URLS_CONFIG: f"{TOKEN_URL}, https://other.example/t",
            ALLOWED_DIRECTORIES_CONFIG: str(tmp_path),
        }
    )
    policy = OverridePolicy.from_worker_config(wc)
    assert policy.safety.allowed_urls == {TOKEN_URL, "https://other.example/t"}
    assert policy.safety.allowed_directories == (os.path.realpath(tmp_path),)
    conn = {
        "producer.override.sasl.oauthbearer.token.endpoint.url": TOKEN_URL,
        "producer.override.ssl.ca.location": str(tmp_path / "ca.pem"),
    }
    assert policy.violations(conn) == {}


def test_defaults_allow_no_url_and_no_directory() -> None:
    wc = WorkerConfig.from_props({"bootstrap.servers": "b:9092"})
    assert wc[ALLOWED_URLS_CONFIG] == [] and wc[ALLOWED_DIRECTORIES_CONFIG] == []
    safety = OverridePolicy.from_worker_config(wc).safety
    assert safety.allowed_urls == frozenset() and safety.allowed_directories == ()


def test_validation_reports_each_unsafe_override_on_its_own_field() -> None:
    cfg = {
        "name": "s",
        "connector.class": "FileStreamSource",
        "topic": "t",
        "file": "in.txt",
        "producer.override.sasl.kerberos.kinit.cmd": "touch /tmp/m",
        "admin.override.ssl.ca.location": "/etc/shadow",
        "producer.override.linger.ms": "5",
    }
    result = validate_connector_config(cfg, PluginRegistry(), _all())
    assert result.error_count == 2
    assert result.values["producer.override.linger.ms"].errors == []
    assert "shell command" in result.values["producer.override.sasl.kerberos.kinit.cmd"].errors[0]
    assert "would read it" in result.values["admin.override.ssl.ca.location"].errors[0]
