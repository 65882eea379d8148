"""The table of Kafka Connect security keys and the librdkafka settings they become.

:data:`SECURITY_KEY_TABLE` is the one list of what :mod:`connectrt.runtime.clients.security`
(with :mod:`connectrt.runtime.clients.sasl_login`) translates; :func:`security_key_table` renders
it as Markdown for the configuration reference (``connectrt config-docs``), and a unit test checks
each row against the translation. Constants and a pure function; thread-safe.
"""

from __future__ import annotations

__all__ = ["SECURITY_KEY_TABLE", "security_key_table"]

SECURITY_KEY_TABLE: tuple[tuple[str, str, str], ...] = (
    # (Kafka Connect / Java client key, librdkafka setting, notes)
    ("`security.protocol`, `sasl.mechanism`", "the same keys", ""),
    (
        "`sasl.jaas.config`: `PlainLoginModule` or `ScramLoginModule` with `username`, `password`",
        "`sasl.username`, `sasl.password`",
        "secret: the password",
    ),
    (
        "`sasl.jaas.config`: `OAuthBearerLoginModule` with `clientId`, `clientSecret`, "
        "`scope`, and `sasl.oauthbearer.token.endpoint.url`",
        "`sasl.oauthbearer.method=oidc`, `sasl.oauthbearer.client.id`, "
        "`sasl.oauthbearer.client.secret`, `sasl.oauthbearer.scope`, "
        "`sasl.oauthbearer.token.endpoint.url`",
        "OIDC client-credentials grant; secret: the client secret",
    ),
    (
        '`sasl.jaas.config`: `OAuthBearerLoginModule` with `extension_NAME="value"`',
        "`sasl.oauthbearer.extensions` (`NAME=value,...`)",
        "e.g. Confluent Cloud's `logicalCluster`, `identityPoolId`",
    ),
    (
        "`sasl.oauthbearer.client.credentials.client.id`, "
        "`sasl.oauthbearer.client.credentials.client.secret`, `sasl.oauthbearer.scope` "
        "(Kafka 4.1)",
        "`sasl.oauthbearer.client.id`, `sasl.oauthbearer.client.secret`, "
        "`sasl.oauthbearer.scope` (with `sasl.oauthbearer.method=oidc`)",
        "secret: the client secret",
    ),
    (
        "`sasl.jaas.config`: `OAuthBearerLoginModule` with `unsecuredLoginStringClaim_sub`",
        "`enable.sasl.oauthbearer.unsecure.jwt=true`, `sasl.oauthbearer.config=principal=SUB`",
        "unsecured development tokens only",
    ),
    (
        "`sasl.login.callback.handler.class` naming Kafka's `OAuthBearerLoginCallbackHandler`",
        "none (librdkafka's `oidc` method does its work)",
        "any other class: dropped with a warning",
    ),
    (
        "`sasl.jaas.config`: `Krb5LoginModule` with `keyTab`, `principal`, `serviceName`",
        "`sasl.kerberos.keytab`, `sasl.kerberos.principal`, `sasl.kerberos.service.name`",
        "GSSAPI needs a librdkafka built with Cyrus SASL",
    ),
    (
        "`sasl.jaas.config`: `Krb5LoginModule` with `useTicketCache=true`, no `keyTab`",
        "`sasl.kerberos.min.time.before.relogin=0`",
        "the ticket cache is used as it is (no kinit)",
    ),
    (
        "`sasl.kerberos.kinit.cmd` (the path of `kinit`)",
        "`sasl.kerberos.kinit.cmd` (librdkafka's kinit command line, with that path)",
        "a value with spaces is taken as librdkafka's command line",
    ),
    (
        "`ssl.truststore.location` with `ssl.truststore.type=PEM`",
        "`ssl.ca.location`",
        "`ssl.truststore.password` is dropped with a warning (a PEM file has none)",
    ),
    ("`ssl.truststore.certificates` (PEM text)", "`ssl.ca.pem`", ""),
    (
        "`ssl.keystore.location` with `ssl.keystore.type=PKCS12` (or no type), "
        "`ssl.keystore.password`",
        "`ssl.keystore.location`, `ssl.keystore.password`",
        "secret: the store password",
    ),
    (
        "`ssl.keystore.location` with `ssl.keystore.type=PEM` (private key and certificate "
        "chain in one file)",
        "`ssl.certificate.location` and `ssl.key.location` (both that file)",
        "",
    ),
    (
        "`ssl.keystore.certificate.chain`, `ssl.keystore.key` (PEM text)",
        "`ssl.certificate.pem`, `ssl.key.pem`",
        "secret: the key",
    ),
    ("`ssl.key.password`", "`ssl.key.password`", "secret"),
    (
        "`ssl.endpoint.identification.algorithm` empty / `https`",
        "`ssl.endpoint.identification.algorithm=none` / `https`",
        "empty disables the host name check, as in Kafka",
    ),
    (
        "a JKS store (`ssl.*store.type=JKS`), a PKCS12 truststore",
        "refused at start-up",
        "the error gives the `keytool`/`openssl` command that converts it",
    ),
    (
        "Java-only keys (`ssl.protocol`, `ssl.enabled.protocols`, `sasl.login.class`, "
        "`sasl.login.refresh.*`, `sasl.oauthbearer.jwks.*`...)",
        "none",
        "dropped, named (never their values) in a warning at start-up",
    ),
)
"""Rows of (Kafka Connect key, librdkafka setting, notes), in Markdown."""


def security_key_table() -> str:
    """:data:`SECURITY_KEY_TABLE` as a Markdown table."""
    rows = [
        "| Kafka Connect (Java client) key | librdkafka setting | Notes |",
        "|---|---|---|",
    ]
    rows += [f"| {java} | {native} | {notes} |" for java, native, notes in SECURITY_KEY_TABLE]
    return "\n".join(rows)
