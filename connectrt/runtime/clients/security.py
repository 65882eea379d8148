# Why one module over 450 lines: the translation table and the rules for which key group a client
# takes are read together (the JAAS parser and the SASL logins are modules of their own).
"""Kafka Connect's Java-style client security keys, turned into librdkafka's.

(One module a little over the house size: the translation table and the rules for which key
group a client takes are read together; the JAAS parser is :mod:`connectrt.runtime.clients.jaas`,
the OAUTHBEARER and GSSAPI logins :mod:`connectrt.runtime.clients.sasl_login`.)

A Kafka Connect ``worker.properties`` configures security with the Java client's keys:
``security.protocol``, ``sasl.*`` and ``ssl.*``. librdkafka shares some of them and has its own
for the rest. :func:`translate` maps one group of such keys (unprefixed) to librdkafka's, as
:data:`~connectrt.runtime.clients.key_table.SECURITY_KEY_TABLE` lists (rendered in the
configuration reference): JAAS strings of the PLAIN, SCRAM, OAUTHBEARER and Kerberos login
modules, PEM and PKCS12 stores, key passwords, host name verification.

Refused with a :class:`~connectrt.errors.ConfigError` that names the key and says what to do
(never quoting a value):

* a JKS store (``ssl.*store.type=JKS``, the Java default when no type is given and the file is
  not ``.pem``/``.p12``): librdkafka reads no JKS; convert it with ``keytool -importkeystore``;
* a PKCS12 truststore: librdkafka reads CA certificates from a PEM file
  (``openssl pkcs12 -in truststore.p12 -nokeys -out ca.pem``);
* a JAAS login module other than ``PlainLoginModule``, ``ScramLoginModule``,
  ``OAuthBearerLoginModule`` and ``Krb5LoginModule``, an ``OAuthBearerLoginModule`` with
  neither a token endpoint nor an unsecured subject, or a JAAS string that does not parse
  (Kafka's grammar: ``Module flag key="value" ...;``, quoted values with backslash escapes);
* a Java key and the librdkafka key it becomes both set in one group (``sasl.jaas.config`` and
  ``sasl.username``/``sasl.password``; ``ssl.truststore.location`` and ``ssl.ca.location``...):
  which one wins would be a guess.

librdkafka's own keys (``sasl.username``, ``ssl.ca.location``...) pass unchanged. Java-only keys
with no librdkafka meaning (:data:`JAVA_ONLY_SECURITY_KEYS`, and a store password a PEM store
does not use) are dropped and named in :attr:`Translation.ignored`, which the worker logs as a
warning at start-up (:func:`log_worker_security`), by key, never with the value.

Which group a client uses (:func:`client_security`): the worker's own clients (config, offset
and status topics, control topic, schema registry) use the top-level keys, as in Kafka Connect,
falling back to their ``producer.``/``consumer.``/``admin.`` keys when no top-level security key
is set (connectrt's earlier behaviour). Task clients use their prefix's keys, as in Kafka
Connect; beyond Kafka Connect, a prefix that sets no security key at all inherits the top-level
ones (forgetting the ``producer.``/``consumer.`` copies is the classic misconfiguration). A
connector's ``*.override.`` security keys are translated the same way and merged on top.

Config provider references in these keys are resolved before translation
(:func:`resolve_security`); the secrets the translation yields are registered with the process
redactor so log lines never show them.

Pure functions over mappings; thread-safe.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from connectrt.api.config import with_prefix
from connectrt.errors import ConfigError
from connectrt.runtime.clients.jaas import (
    KRB5_MODULE,
    OAUTHBEARER_MODULE,
    PLAIN_MODULE,
    SCRAM_MODULE,
    parse_jaas,
)
from connectrt.runtime.clients.sasl_login import (
    CLIENT_CREDENTIALS_KEYS,
    OIDC_HANDLERS,
    conflict,
    kinit_command,
    set_native,
    set_oidc,
    translate_client_credentials,
    translate_kerberos,
    translate_oauthbearer,
)
from connectrt.runtime.redaction import process_redactor

__all__ = [
    "CLIENT_PREFIXES",
    "JAVA_ONLY_SECURITY_KEYS",
    "Translation",
    "client_security",
    "inheriting_prefixes",
    "is_security_key",
    "log_worker_security",
    "resolve_security",
    "security_keys",
    "translate",
]

log = logging.getLogger(__name__)

CLIENT_PREFIXES = ("producer", "consumer", "admin")
"""The task client prefixes of a worker config."""

_USER_PASSWORD_MODULES = (PLAIN_MODULE, SCRAM_MODULE)

JAVA_ONLY_SECURITY_KEYS = frozenset(
    {
        "ssl.protocol",
        "ssl.enabled.protocols",
        "ssl.provider",
        "ssl.keymanager.algorithm",
        "ssl.trustmanager.algorithm",
        "ssl.secure.random.implementation",
        "ssl.engine.factory.class",
        "sasl.login.class",
        "sasl.login.callback.handler.class",
        "sasl.client.callback.handler.class",
        "sasl.kerberos.ticket.renew.window.factor",
        "sasl.kerberos.ticket.renew.jitter",
        "sasl.login.refresh.window.factor",
        "sasl.login.refresh.window.jitter",
        "sasl.login.refresh.min.period.seconds",
        "sasl.login.refresh.buffer.seconds",
        "sasl.login.connect.timeout.ms",
        "sasl.login.read.timeout.ms",
        "sasl.login.retry.backoff.ms",
        "sasl.login.retry.backoff.max.ms",
        "sasl.oauthbearer.scope.claim.name",
        "sasl.oauthbearer.sub.claim.name",
        "sasl.oauthbearer.jwks.endpoint.url",
        "sasl.oauthbearer.jwks.endpoint.refresh.ms",
        "sasl.oauthbearer.jwks.endpoint.retry.backoff.ms",
        "sasl.oauthbearer.jwks.endpoint.retry.backoff.max.ms",
        "sasl.oauthbearer.clock.skew.seconds",
        "sasl.oauthbearer.expected.audience",
        "sasl.oauthbearer.expected.issuer",
        "sasl.oauthbearer.header.urlencode",
    }
)
"""Java client security keys with no librdkafka counterpart: dropped, named in a warning."""

_JKS_HINT = (
    "librdkafka does not read JKS stores: convert it to PKCS12 with 'keytool -importkeystore "
    "-srckeystore store.jks -destkeystore store.p12 -deststoretype PKCS12'"
)
_PKCS12_TRUST_HINT = (
    "librdkafka reads CA certificates from a PEM file, not from a PKCS12 truststore: export "
    "them with 'openssl pkcs12 -in truststore.p12 -nokeys -out ca.pem' (or 'keytool -exportcert "
    "-rfc -keystore truststore.p12 -alias ALIAS -file ca.pem'), then set "
    "ssl.truststore.type=PEM and ssl.truststore.location to that file (or librdkafka's "
    "ssl.ca.location)"
)


def is_security_key(key: str) -> bool:
    """Whether ``key`` (unprefixed) is a client security setting: ``security.protocol``,
    ``sasl.*`` or ``ssl.*``."""
    return key == "security.protocol" or key.startswith(("sasl.", "ssl."))


def security_keys(props: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """The security settings of ``props`` under ``prefix`` (e.g. ``producer.``), unprefixed.
    With ``prefix=""``, the top-level ones."""
    group = with_prefix(props, prefix) if prefix else dict(props)
    return {k: v for k, v in group.items() if is_security_key(k)}


# -- translation -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Translation:
    """librdkafka settings of one key group, and the Java keys dropped (named, for a warning)."""

    settings: dict[str, Any]
    ignored: tuple[str, ...] = ()
    secrets: tuple[str, ...] = field(default=(), repr=False)


def _store_type(keys: Mapping[str, Any], kind: str) -> str | None:
    raw = keys.get(f"ssl.{kind}.type")
    if raw is not None and str(raw).strip():
        return str(raw).strip().upper()
    return None


def _translate_sasl(
    keys: Mapping[str, Any], where: str, out: dict[str, Any], ignored: list[str]
) -> list[str]:
    secrets = translate_client_credentials(keys, where, out)
    jaas = keys.get("sasl.jaas.config")
    if jaas is None or not str(jaas).strip():
        if "sasl.oauthbearer.client.id" in out and "sasl.oauthbearer.token.endpoint.url" in keys:
            set_oidc(keys, where, out, "sasl.oauthbearer.client.credentials.client.id")
        return secrets
    key = f"{where}sasl.jaas.config"
    entry = parse_jaas(str(jaas), key)
    if entry.module == OAUTHBEARER_MODULE:
        return secrets + translate_oauthbearer(entry, keys, where, out, ignored)
    if entry.module == KRB5_MODULE:
        translate_kerberos(entry, keys, where, out, ignored)
        return secrets
    if entry.module not in _USER_PASSWORD_MODULES:
        raise ConfigError(
            f"Unsupported login module in {key}: {entry.module}. connectrt translates "
            f"{PLAIN_MODULE} and {SCRAM_MODULE} (username, password), {OAUTHBEARER_MODULE} "
            f"(OIDC client credentials) and {KRB5_MODULE} (keyTab, principal); for other "
            "mechanisms set librdkafka's own keys instead of sasl.jaas.config",
            key,
        )
    for native in ("sasl.username", "sasl.password"):
        if native in keys:
            raise conflict(where, "sasl.jaas.config", native)
    missing = [o for o in ("username", "password") if o not in entry.options]
    if missing:
        raise ConfigError(f"{key} sets no {' or '.join(missing)} for {entry.module}", key)
    out["sasl.username"] = entry.options["username"]
    out["sasl.password"] = entry.options["password"]
    ignored.extend(
        f"{key} option '{o}'" for o in entry.options if o not in ("username", "password")
    )
    return [entry.options["password"]]


def _translate_truststore(
    keys: Mapping[str, Any], where: str, out: dict[str, Any], ignored: list[str]
) -> None:
    location = keys.get("ssl.truststore.location")
    inline = keys.get("ssl.truststore.certificates")
    if location is None and inline is None:
        if "ssl.truststore.password" in keys:
            ignored.append(f"{where}ssl.truststore.password")
        return
    kind = _store_type(keys, "truststore")
    if kind is None:
        name = str(location or "").lower()
        if inline is not None or name.endswith((".pem", ".crt", ".cer")):
            kind = "PEM"
        elif name.endswith((".p12", ".pfx")):
            kind = "PKCS12"
        else:
            kind = "JKS"
    key = f"{where}ssl.truststore.location"
    if kind == "JKS":
        raise ConfigError(
            f"{key} is a JKS truststore (ssl.truststore.type JKS, Java's default): "
            f"{_JKS_HINT}; better, export the CA certificates to PEM "
            "('keytool -exportcert -rfc -keystore truststore.jks -alias ALIAS -file ca.pem') "
            "and set ssl.truststore.type=PEM",
            key,
        )
    if kind == "PKCS12":
        raise ConfigError(f"{key} is a PKCS12 truststore: {_PKCS12_TRUST_HINT}", key)
    if kind != "PEM":
        raise ConfigError(
            f"Unsupported {where}ssl.truststore.type {kind}: use PEM", f"{where}ssl.truststore.type"
        )
    if location is not None:
        set_native(keys, where, out, "ssl.truststore.location", "ssl.ca.location", location)
    if inline is not None:
        set_native(keys, where, out, "ssl.truststore.certificates", "ssl.ca.pem", inline)
    if "ssl.truststore.password" in keys:
        ignored.append(f"{where}ssl.truststore.password")


def _translate_keystore(
    keys: Mapping[str, Any], where: str, out: dict[str, Any], ignored: list[str]
) -> list[str]:
    location = keys.get("ssl.keystore.location")
    chain = keys.get("ssl.keystore.certificate.chain")
    inline_key = keys.get("ssl.keystore.key")
    password = keys.get("ssl.keystore.password")
    kind = _store_type(keys, "keystore")
    key = f"{where}ssl.keystore.location"
    if location is None and chain is None and inline_key is None:
        if password is not None:
            out["ssl.keystore.password"] = password
            return [str(password)]
        return []
    if kind is None:
        if chain is not None or inline_key is not None:
            kind = "PEM"
        elif str(location).lower().endswith(".jks"):
            kind = "JKS"
        else:
            kind = "PKCS12"  # librdkafka's own ssl.keystore.location
    if kind == "JKS":
        raise ConfigError(f"{key} is a JKS keystore (ssl.keystore.type JKS): {_JKS_HINT}", key)
    if kind == "PKCS12":
        if chain is not None or inline_key is not None:
            raise ConfigError(
                f"{where}ssl.keystore.certificate.chain and {where}ssl.keystore.key need "
                "ssl.keystore.type=PEM",
                f"{where}ssl.keystore.type",
            )
        out["ssl.keystore.location"] = location
        if password is not None:
            out["ssl.keystore.password"] = password
            return [str(password)]
        return []
    if kind != "PEM":
        raise ConfigError(
            f"Unsupported {where}ssl.keystore.type {kind}: use PKCS12 or PEM",
            f"{where}ssl.keystore.type",
        )
    if location is not None:
        # Kafka's PEM keystore file holds the private key and the certificate chain; OpenSSL
        # reads each from the one file, skipping the other's PEM blocks.
        for native in ("ssl.certificate.location", "ssl.key.location"):
            set_native(keys, where, out, "ssl.keystore.location", native, location)
    if chain is not None:
        java = "ssl.keystore.certificate.chain"
        set_native(keys, where, out, java, "ssl.certificate.pem", chain)
    if inline_key is not None:
        set_native(keys, where, out, "ssl.keystore.key", "ssl.key.pem", inline_key)
    if password is not None:
        ignored.append(f"{where}ssl.keystore.password")
    return []


def _endpoint_identification(value: Any, key: str) -> str:
    text = str(value).strip().lower() if value is not None else ""
    if text in ("", "none"):
        return "none"
    if text == "https":
        return "https"
    raise ConfigError(
        f"Invalid {key}: use https (verify the broker's host name) or an empty value (do not)",
        key,
    )


_CONSUMED = frozenset(
    {
        "sasl.jaas.config",
        "ssl.truststore.location",
        "ssl.truststore.type",
        "ssl.truststore.password",
        "ssl.truststore.certificates",
        "ssl.keystore.location",
        "ssl.keystore.type",
        "ssl.keystore.password",
        "ssl.keystore.certificate.chain",
        "ssl.keystore.key",
        "ssl.endpoint.identification.algorithm",
        *CLIENT_CREDENTIALS_KEYS,
    }
)


def translate(keys: Mapping[str, Any], where: str = "") -> Translation:
    """librdkafka settings for one group of (unprefixed) security ``keys``; ``where`` is the
    group's prefix (``""``, ``"producer."``, ``"producer.override."``), used to name keys in
    errors and warnings. Non-security keys in ``keys`` are left out of the result. Raises
    ConfigError as the module describes; messages never hold a value."""
    out: dict[str, Any] = {}
    ignored: list[str] = []
    secrets = _translate_sasl(keys, where, out, ignored)
    _translate_truststore(keys, where, out, ignored)
    secrets += _translate_keystore(keys, where, out, ignored)
    if "ssl.endpoint.identification.algorithm" in keys:
        key = f"{where}ssl.endpoint.identification.algorithm"
        out["ssl.endpoint.identification.algorithm"] = _endpoint_identification(
            keys["ssl.endpoint.identification.algorithm"], key
        )
    for k, v in keys.items():
        if not is_security_key(k) or k in _CONSUMED:
            continue
        if k == "sasl.login.callback.handler.class" and str(v).strip() in OIDC_HANDLERS:
            continue
        if k == "sasl.kerberos.kinit.cmd":
            v = kinit_command(v)
        if k in JAVA_ONLY_SECURITY_KEYS:
            ignored.append(f"{where}{k}")
            continue
        out[k] = v
    for k in ("sasl.password", "ssl.key.password", "sasl.oauthbearer.client.secret"):
        if out.get(k) is not None:
            secrets.append(str(out[k]))
    return Translation(out, tuple(ignored), tuple(s for s in secrets if s))


# -- which group a client uses ---------------------------------------------------------------


def _group(worker_props: Mapping[str, Any], kind: str, worker_own: bool) -> tuple[str, dict]:
    top = security_keys(worker_props)
    own = security_keys(worker_props, f"{kind}.")
    if worker_own:
        return ("", top) if top else (f"{kind}.", own)
    return (f"{kind}.", own) if own else ("", top)


def client_security(
    worker_props: Mapping[str, Any], kind: str, *, worker_own: bool = False
) -> Translation:
    """The translated security settings of a ``kind`` (``producer``/``consumer``/``admin``)
    client of the worker: a worker-own client (``worker_own``) or a task client (see the module
    docstring for which keys each uses)."""
    where, keys = _group(worker_props, kind, worker_own)
    return translate(keys, where)


def inheriting_prefixes(worker_props: Mapping[str, Any]) -> list[str]:
    """The task client prefixes (``producer.``...) that set no security key and so inherit the
    top-level ones; empty when no top-level security key is set."""
    if not security_keys(worker_props):
        return []
    return [f"{k}." for k in CLIENT_PREFIXES if not security_keys(worker_props, f"{k}.")]


def resolve_security(
    props: Mapping[str, str], resolve: Callable[[Mapping[str, str]], Mapping[str, str]]
) -> dict[str, str]:
    """``props`` with the config provider references in its security keys (top-level and
    under the client prefixes) resolved by ``resolve``; every other key unchanged."""
    wanted = {
        k: v
        for k, v in props.items()
        if is_security_key(k)
        or any(k.startswith(f"{p}.") and is_security_key(k[len(p) + 1 :]) for p in CLIENT_PREFIXES)
    }
    if not wanted:
        return dict(props)
    return {**props, **resolve(wanted)}


def log_worker_security(worker_props: Mapping[str, Any]) -> None:
    """Validate and log, once at worker start-up, how the worker's clients are secured: an INFO
    line naming the task prefixes that inherit the top-level security keys, a WARNING naming
    the Java-only keys dropped. Registers the secrets the translation yields with the process
    redactor. Raises ConfigError for keys that cannot be translated. Names keys, never
    values."""
    ignored: list[str] = []
    secrets: list[str] = []
    groups = [("", security_keys(worker_props))]
    groups += [(f"{k}.", security_keys(worker_props, f"{k}.")) for k in CLIENT_PREFIXES]
    for where, keys in groups:
        if keys:
            translation = translate(keys, where)
            ignored.extend(translation.ignored)
            secrets.extend(translation.secrets)
    process_redactor().register_all(secrets)
    inherit = inheriting_prefixes(worker_props)
    if inherit:
        log.info(
            "Task clients %s set no security key (security.protocol, sasl.*, ssl.*): they use "
            "the worker's top-level ones",
            ", ".join(f"'{p}'" for p in inherit),
        )
    if ignored:
        log.warning(
            "Ignoring Kafka client security settings librdkafka has no counterpart for: %s",
            ", ".join(_unique(ignored)),
        )


def _unique(items: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(items))
