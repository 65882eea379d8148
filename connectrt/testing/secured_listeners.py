"""SASL and TLS listeners for the Apache Kafka test broker, and SCRAM users for them.

:func:`secured_listener_settings` gives the ``extra_listeners`` and ``properties`` arguments
of :class:`~connectrt.testing.kafka_broker.KafkaBroker` for four listeners on one broker, with
the certificates of :func:`connectrt.testing.certs.make_pki`:

=============  ================  ===================================================
listener name  protocol          what a client needs
=============  ================  ===================================================
``SCRAM``      ``SASL_PLAINTEXT``  a SCRAM-SHA-512 user (:func:`add_scram_user`)
``TLS``        ``SSL``             the CA (``ca.pem``); no client certificate
``MTLS``       ``SSL``             the CA and a client certificate (``ssl.client.auth=required``)
``SASLSSL``    ``SASL_SSL``        the CA, a client certificate and a SCRAM-SHA-512 user
``OAUTH``      ``SASL_PLAINTEXT``  a token of the ``oidc`` provider (only when one is given)
``PLAIN``      ``SASL_PLAINTEXT``  a SASL/PLAIN user of ``plain_users`` (only when given)
``ELSEWHERE``  ``SSL``             the CA, and no host name check: its certificate names
                                 another host (only with ``elsewhere=True``)
=============  ================  ===================================================

With an :class:`~connectrt.testing.oidc_provider.OidcProvider`, the ``OAUTH`` listener
validates OAUTHBEARER tokens with Kafka's ``OAuthBearerValidatorCallbackHandler`` against the
provider's key set, issuer and audience; the broker's JVM must then allow the key set's URL
(:func:`broker_jvm_options`, Kafka 4's ``org.apache.kafka.sasl.oauthbearer.allowed.urls``).

The broker's own (inter-broker) listener stays PLAINTEXT, so tests set up topics and users
through ``bootstrap_servers``. :func:`add_scram_user` creates or updates a SCRAM user through
the admin API (KIP-554 ``AlterUserScramCredentials``), as an operator would on a KRaft cluster.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from confluent_kafka.admin import (
    AdminClient,
    ScramCredentialInfo,
    ScramMechanism,
    UserScramCredentialUpsertion,
)

from connectrt.testing.certs import Pki
from connectrt.testing.oidc_provider import OidcProvider

__all__ = [
    "LISTENER_PROTOCOLS",
    "add_scram_user",
    "broker_jvm_options",
    "secured_listener_settings",
]

SCRAM_BROKER_MODULE = "org.apache.kafka.common.security.scram.ScramLoginModule"
PLAIN_MODULE = "org.apache.kafka.common.security.plain.PlainLoginModule"
OAUTH_MODULE = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule"
OAUTH_VALIDATOR = "org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler"

LISTENER_PROTOCOLS = {
    "SCRAM": "SASL_PLAINTEXT",
    "TLS": "SSL",
    "MTLS": "SSL",
    "SASLSSL": "SASL_SSL",
}
"""The listeners :func:`secured_listener_settings` configures: name -> security protocol."""


def _keystore(name: str, pki: Pki, store: Path | None = None) -> dict[str, str]:
    prefix = f"listener.name.{name.lower()}."
    return {
        f"{prefix}ssl.keystore.type": "PKCS12",
        f"{prefix}ssl.keystore.location": str(store or pki.server_p12),
        f"{prefix}ssl.keystore.password": pki.password,
    }


def _client_auth(name: str, pki: Pki) -> dict[str, str]:
    prefix = f"listener.name.{name.lower()}."
    return {
        f"{prefix}ssl.client.auth": "required",
        f"{prefix}ssl.truststore.type": "PEM",
        f"{prefix}ssl.truststore.location": str(pki.ca),
    }


def _scram(name: str) -> dict[str, str]:
    prefix = f"listener.name.{name.lower()}."
    return {
        f"{prefix}sasl.enabled.mechanisms": "SCRAM-SHA-512",
        f"{prefix}scram-sha-512.sasl.jaas.config": f"{SCRAM_BROKER_MODULE} required;",
    }


def _oauth(oidc: OidcProvider) -> dict[str, str]:
    prefix = "listener.name.oauth."
    return {
        f"{prefix}sasl.enabled.mechanisms": "OAUTHBEARER",
        f"{prefix}oauthbearer.sasl.jaas.config": f"{OAUTH_MODULE} required;",
        f"{prefix}oauthbearer.sasl.server.callback.handler.class": OAUTH_VALIDATOR,
        "sasl.oauthbearer.jwks.endpoint.url": oidc.jwks_url,
        "sasl.oauthbearer.expected.issuer": oidc.issuer,
        "sasl.oauthbearer.expected.audience": oidc.audience,
    }


def broker_jvm_options(oidc: OidcProvider | None) -> list[str]:
    """The broker JVM's arguments the listeners need: Kafka 4 fetches a key set only from the
    URLs a system property allows."""
    if oidc is None:
        return []
    return [f"-Dorg.apache.kafka.sasl.oauthbearer.allowed.urls={oidc.jwks_url}"]


def _plain(users: Mapping[str, str]) -> dict[str, str]:
    accounts = " ".join(f'user_{user}="{password}"' for user, password in users.items())
    return {
        "listener.name.plain.sasl.enabled.mechanisms": "PLAIN",
        "listener.name.plain.plain.sasl.jaas.config": f"{PLAIN_MODULE} required {accounts};",
    }


def secured_listener_settings(
    pki: Pki,
    oidc: OidcProvider | None = None,
    plain_users: Mapping[str, str] | None = None,
    *,
    elsewhere: bool = False,
) -> tuple[dict[str, str], dict[str, str]]:
    """``(extra_listeners, properties)`` for a :class:`KafkaBroker` serving the listeners of
    :data:`LISTENER_PROTOCOLS`, ``OAUTH`` when ``oidc`` is given, ``PLAIN`` when
    ``plain_users`` (user -> password) are and ``ELSEWHERE`` (an SSL listener whose
    certificate, Kafka's per-listener ``listener.name.elsewhere.ssl.keystore.*``, names only
    :data:`~connectrt.testing.certs.ELSEWHERE`) with ``elsewhere`` (see the module
    docstring)."""
    listeners = dict(LISTENER_PROTOCOLS)
    properties = {
        **_scram("SCRAM"),
        **_keystore("TLS", pki),
        **_keystore("MTLS", pki),
        **_client_auth("MTLS", pki),
        **_keystore("SASLSSL", pki),
        **_client_auth("SASLSSL", pki),
        **_scram("SASLSSL"),
    }
    if oidc is not None:
        listeners["OAUTH"] = "SASL_PLAINTEXT"
        properties.update(_oauth(oidc))
    if plain_users:
        listeners["PLAIN"] = "SASL_PLAINTEXT"
        properties.update(_plain(plain_users))
    if elsewhere:
        listeners["ELSEWHERE"] = "SSL"
        properties.update(_keystore("ELSEWHERE", pki, pki.elsewhere_p12))
    return listeners, properties


def add_scram_user(
    bootstrap: str, user: str, password: str, *, iterations: int = 8192, timeout: float = 30.0
) -> None:
    """Create (or update) the SCRAM-SHA-512 user ``user`` through the admin API of the
    cluster at ``bootstrap`` (an unauthenticated listener). Raises the client's exception on
    failure."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    upsert = UserScramCredentialUpsertion(
        user, ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, iterations), password.encode()
    )
    for future in admin.alter_user_scram_credentials([upsert]).values():
        future.result(timeout=timeout)
