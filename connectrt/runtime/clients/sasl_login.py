"""SASL login modules other than username/password, translated to librdkafka's settings.

Part of :mod:`connectrt.runtime.clients.security` (which calls these for one key group and
documents the whole translation): Kafka's ``OAuthBearerLoginModule`` (the OIDC
client-credentials grant, Kafka 4.1's ``sasl.oauthbearer.client.credentials.*`` keys, unsecured
development tokens, SASL extensions) and the JDK's ``Krb5LoginModule`` (keytab, principal,
ticket cache, service name), plus the helper that refuses a group setting a Java key and the
librdkafka key it becomes. Error messages name keys, never values.

Pure functions; thread-safe.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from connectrt.errors import ConfigError
from connectrt.runtime.clients.jaas import OAUTHBEARER_MODULE, JaasEntry

__all__ = [
    "CLIENT_CREDENTIALS_KEYS",
    "OIDC_HANDLERS",
    "conflict",
    "kinit_command",
    "set_native",
    "set_oidc",
    "translate_client_credentials",
    "translate_kerberos",
    "translate_oauthbearer",
]


def set_native(
    keys: Mapping[str, Any], where: str, out: dict[str, Any], java: str, native: str, value: Any
) -> None:
    """``out[native] = value`` (the translation of ``java``), refused when the group also sets
    ``native`` itself."""
    if native in keys:
        raise conflict(where, java, native)
    out[native] = value


def conflict(where: str, java: str, native: str) -> ConfigError:
    return ConfigError(
        f"Both {where}{java} and {where}{native} are set: {java} is translated into "
        f"{native}, so set only one of them",
        f"{where}{java}",
    )


OIDC_HANDLERS = frozenset(
    {
        "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginCallbackHandler",
        "org.apache.kafka.common.security.oauthbearer.secured.OAuthBearerLoginCallbackHandler",
    }
)
"""Kafka's OIDC client-credentials login handlers: librdkafka's ``sasl.oauthbearer.method=oidc``
does their work, so ``sasl.login.callback.handler.class`` naming one is consumed silently."""

CLIENT_CREDENTIALS_KEYS = {
    "sasl.oauthbearer.client.credentials.client.id": "sasl.oauthbearer.client.id",
    "sasl.oauthbearer.client.credentials.client.secret": "sasl.oauthbearer.client.secret",
}


def translate_client_credentials(
    keys: Mapping[str, Any], where: str, out: dict[str, Any]
) -> list[str]:
    """Kafka 4.1's own client-credentials keys (KIP-1139) -> librdkafka's."""
    secrets: list[str] = []
    for java, native in CLIENT_CREDENTIALS_KEYS.items():
        if java in keys:
            set_native(keys, where, out, java, native, keys[java])
            if native.endswith("secret"):
                secrets.append(str(keys[java]))
    return secrets


def set_oidc(keys: Mapping[str, Any], where: str, out: dict[str, Any], java: str) -> None:
    method = keys.get("sasl.oauthbearer.method")
    if method is not None and str(method).strip().lower() != "oidc":
        raise conflict(where, java, "sasl.oauthbearer.method")
    out["sasl.oauthbearer.method"] = "oidc"


def translate_oauthbearer(
    entry: JaasEntry, keys: Mapping[str, Any], where: str, out: dict[str, Any], ignored: list[str]
) -> list[str]:
    """``OAuthBearerLoginModule``: the OIDC client-credentials grant (``clientId``,
    ``clientSecret``, ``scope`` with ``sasl.oauthbearer.token.endpoint.url``) becomes
    librdkafka's ``sasl.oauthbearer.method=oidc``; Kafka's unsecured development tokens
    (``unsecuredLoginStringClaim_sub``) become librdkafka's unsecured JWT;
    ``extension_NAME="value"`` options become ``sasl.oauthbearer.extensions``."""
    key = f"{where}sasl.jaas.config"
    options = dict(entry.options)
    secrets: list[str] = []
    renames = {
        "clientId": "sasl.oauthbearer.client.id",
        "clientSecret": "sasl.oauthbearer.client.secret",
        "scope": "sasl.oauthbearer.scope",
    }
    for option, native in renames.items():
        if option in options:
            set_native(
                keys, where, out, f"sasl.jaas.config option {option}", native, options.pop(option)
            )
    if "sasl.oauthbearer.client.secret" in out:
        secrets.append(str(out["sasl.oauthbearer.client.secret"]))
    extensions = {
        o[len("extension_") :]: options.pop(o) for o in list(options) if o.startswith("extension_")
    }
    if extensions:
        text = ",".join(f"{name}={value}" for name, value in extensions.items())
        set_native(
            keys, where, out, "sasl.jaas.config extension_*", "sasl.oauthbearer.extensions", text
        )
    subject = options.pop("unsecuredLoginStringClaim_sub", None)
    if "sasl.oauthbearer.token.endpoint.url" in keys:
        natives = ("sasl.oauthbearer.client.id", "sasl.oauthbearer.client.secret")
        if any(n not in out and n not in keys for n in natives):
            raise ConfigError(
                f"{key} ({OAUTHBEARER_MODULE}) with sasl.oauthbearer.token.endpoint.url needs "
                "clientId and clientSecret options (the OIDC client credentials)",
                key,
            )
        set_oidc(keys, where, out, "sasl.jaas.config")
    elif subject is not None:
        out["enable.sasl.oauthbearer.unsecure.jwt"] = True
        set_native(
            keys,
            where,
            out,
            "sasl.jaas.config option unsecuredLoginStringClaim_sub",
            "sasl.oauthbearer.config",
            f"principal={subject}",
        )
    else:
        raise ConfigError(
            f"{key} ({OAUTHBEARER_MODULE}) needs {where}sasl.oauthbearer.token.endpoint.url (the "
            "identity provider's token endpoint, for the OIDC client-credentials grant) or, "
            "for development only, an unsecuredLoginStringClaim_sub option",
            f"{where}sasl.oauthbearer.token.endpoint.url",
        )
    ignored.extend(f"{key} option '{o}'" for o in options)
    return secrets


_KRB5_SILENT = frozenset({"useKeyTab", "storeKey", "doNotPrompt", "debug", "refreshKrb5Config"})


def translate_kerberos(
    entry: JaasEntry, keys: Mapping[str, Any], where: str, out: dict[str, Any], ignored: list[str]
) -> None:
    """``Krb5LoginModule``: ``keyTab`` and ``principal`` become librdkafka's
    ``sasl.kerberos.keytab``/``principal`` (librdkafka runs ``kinit`` with them); without a
    ``keyTab``, ``useTicketCache=true`` turns librdkafka's re-login off (the ticket cache is
    used as it is); ``serviceName`` becomes ``sasl.kerberos.service.name``."""
    options = dict(entry.options)
    for option, native in (
        ("keyTab", "sasl.kerberos.keytab"),
        ("principal", "sasl.kerberos.principal"),
    ):
        if option in options:
            set_native(
                keys, where, out, f"sasl.jaas.config option {option}", native, options.pop(option)
            )
    service = options.pop("serviceName", None)
    if service is not None:
        given = keys.get("sasl.kerberos.service.name")
        if given is not None and str(given) != service:
            raise conflict(
                where, "sasl.jaas.config option serviceName", "sasl.kerberos.service.name"
            )
        out["sasl.kerberos.service.name"] = service
    ticket_cache = str(options.pop("useTicketCache", "false")).lower() == "true"
    if ticket_cache and "sasl.kerberos.keytab" not in out:
        out.setdefault("sasl.kerberos.min.time.before.relogin", 0)
    key = f"{where}sasl.jaas.config"
    ignored.extend(f"{key} option '{o}'" for o in options if o not in _KRB5_SILENT)


def kinit_command(value: Any) -> Any:
    """Java's ``sasl.kerberos.kinit.cmd`` is the path of ``kinit``; librdkafka's is a whole
    command line. A bare path becomes librdkafka's default command line with that path."""
    text = str(value).strip()
    if not text or any(c.isspace() for c in text):
        return value
    args = '-t "%{sasl.kerberos.keytab}" -k %{sasl.kerberos.principal}'
    return f"{text} -R {args} || {text} {args}"
