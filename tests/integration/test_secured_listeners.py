"""Workers configured as Kafka Connect users configure SCRAM, TLS and mutual TLS clusters.

The module starts ONE Apache Kafka broker (Java 17+ and the cached jars) carrying six secured
listeners next to its PLAINTEXT one (:mod:`connectrt.testing.secured_listeners`): ``PLAIN``
(SASL_PLAINTEXT, SASL/PLAIN users in the broker's JAAS config), ``SCRAM``
(SASL_PLAINTEXT, SCRAM-SHA-512), ``TLS`` (SSL, a CA-signed server certificate), ``MTLS`` (SSL,
client certificate required) and ``SASLSSL`` (SASL_SSL with SCRAM-SHA-512 and a client
certificate), and ``OAUTH`` (SASL_PLAINTEXT, OAUTHBEARER tokens validated by Kafka's
``OAuthBearerValidatorCallbackHandler`` against the key set of a small OIDC provider the module
runs, :mod:`connectrt.testing.oidc_provider`), and ``ELSEWHERE`` (SSL with a second server
certificate, Kafka's per-listener ``listener.name.elsewhere.ssl.keystore.*``, whose subject
alternative names miss the address clients use). Certificates are made by ``openssl`` in the
test (:mod:`connectrt.testing.certs`); the SCRAM user is created through the admin API.

For each listener a worker is started from a ``worker.properties`` file written with Kafka
Connect's Java-style keys only (JAAS strings; a PEM truststore; a PKCS12 keystore for MTLS, a
PEM keystore with an encrypted key for SASLSSL; the OIDC client-credentials login for OAUTH),
top-level keys and no ``producer.``/
``consumer.`` copies. It runs a FileStream source and sink, 0 lines lost, exactly-once source
support on for SASLSSL; at ELSEWHERE with ``ssl.endpoint.identification.algorithm=`` (empty,
as Kafka disables the host name check). The bad variants (a wrong password, a wrong CA, no
client certificate, a plaintext client at a SASL port, a wrong OAuth client secret, the host
name check at ELSEWHERE) each end the worker's start-up within 15 s with one line naming the
listener, the mechanism or protocol and the setting to check, and the client's last error.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Consumer, TopicPartition

from connectrt.runtime.clients.security import security_keys
from connectrt.runtime.properties import load_properties
from connectrt.testing.certs import Pki, make_pki
from connectrt.testing.harness import create_topic
from connectrt.testing.kafka_broker import KafkaBroker
from connectrt.testing.oidc_provider import OidcProvider
from connectrt.testing.rest import rest_worker_props, start_rest_worker, wait_for
from connectrt.testing.secured_listeners import (
    add_scram_user,
    broker_jvm_options,
    secured_listener_settings,
)

pytestmark = pytest.mark.integration

SCRAM = "org.apache.kafka.common.security.scram.ScramLoginModule"
PLAIN = "org.apache.kafka.common.security.plain.PlainLoginModule"
OAUTH = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule"
OIDC_HANDLER = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginCallbackHandler"
USER, PASSWORD = "alice", "alice-scram-secret"
OAUTH_CLIENT, OAUTH_SECRET = "connect", "oidc-client-secret"
LINES = 200
FAIL_WITHIN_S = 15.0


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    return make_pki(tmp_path_factory.mktemp("pki"))


@pytest.fixture(scope="module")
def idp() -> Iterator[OidcProvider]:
    with OidcProvider({OAUTH_CLIENT: OAUTH_SECRET}) as provider:
        yield provider


@pytest.fixture(scope="module")
def kafka(pki: Pki, idp: OidcProvider) -> Iterator[KafkaBroker]:
    listeners, properties = secured_listener_settings(pki, idp, {USER: PASSWORD}, elsewhere=True)
    with KafkaBroker(
        extra_listeners=listeners, properties=properties, jvm_options=broker_jvm_options(idp)
    ) as broker:
        add_scram_user(broker.bootstrap_servers, USER, PASSWORD)
        yield broker


def _jaas(password: str, module: str = SCRAM) -> str:
    return f'{module} required username="{USER}" password="{password}";'


def _security(
    listener: str, pki: Pki, idp: OidcProvider, *, password: str = PASSWORD
) -> dict[str, str]:
    """The Kafka Connect-style security keys of a worker at ``listener``."""
    truststore = {"ssl.truststore.type": "PEM", "ssl.truststore.location": str(pki.ca)}
    scram = {"sasl.mechanism": "SCRAM-SHA-512", "sasl.jaas.config": _jaas(password)}
    if listener == "PLAIN":
        return {
            "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": "PLAIN",
            "sasl.jaas.config": _jaas(password, PLAIN),
        }
    if listener == "SCRAM":
        return {"security.protocol": "SASL_PLAINTEXT", **scram}
    if listener == "TLS":
        return {"security.protocol": "SSL", **truststore}
    if listener == "ELSEWHERE":  # the certificate names another host: no host name check
        return {
            "security.protocol": "SSL",
            **truststore,
            "ssl.endpoint.identification.algorithm": "",
        }
    if listener == "OAUTH":
        return {
            "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": "OAUTHBEARER",
            "sasl.login.callback.handler.class": OIDC_HANDLER,
            "sasl.oauthbearer.token.endpoint.url": idp.token_url,
            "sasl.jaas.config": (
                f'{OAUTH} required clientId="{OAUTH_CLIENT}" clientSecret="{password}" '
                'scope="kafka";'
            ),
        }
    if listener == "MTLS":
        return {
            "security.protocol": "SSL",
            **truststore,
            "ssl.keystore.type": "PKCS12",
            "ssl.keystore.location": str(pki.client_p12),
            "ssl.keystore.password": pki.password,
        }
    assert listener == "SASLSSL"
    return {
        "security.protocol": "SASL_SSL",
        **scram,
        **truststore,
        "ssl.keystore.type": "PEM",
        "ssl.keystore.location": str(pki.client_pem),
        "ssl.key.password": pki.password,
        "exactly.once.source.support": "enabled",
    }


def _properties_file(folder: Path, props: dict[str, str]) -> Path:
    """``props`` as a ``worker.properties`` file (values need no escaping here)."""
    assert not any("\\" in v or "\n" in v for v in props.values())
    path = folder / "worker.properties"
    path.write_text("".join(f"{k}={v}\n" for k, v in props.items()), encoding="utf-8")
    return path


def _worker_props(kafka: KafkaBroker, listener: str, security: dict[str, str], folder: Path):
    bootstrap = kafka.listener_bootstrap(listener)
    path = _properties_file(folder, rest_worker_props(bootstrap, **security))
    return bootstrap, load_properties(path)


def _end_offset(kafka: KafkaBroker, topic: str) -> int:
    consumer = Consumer({"bootstrap.servers": kafka.bootstrap_servers, "group.id": "probe"})
    try:
        return int(consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=30)[1])
    finally:
        consumer.close()


def _count_lines(path: Path) -> int:
    return path.read_bytes().count(b"\n") if path.exists() else 0


@pytest.mark.parametrize(
    "listener", ["PLAIN", "SCRAM", "TLS", "MTLS", "SASLSSL", "OAUTH", "ELSEWHERE"]
)
def test_a_kafka_connect_style_worker_runs_a_file_pipeline(
    kafka: KafkaBroker, pki: Pki, idp: OidcProvider, tmp_path: Path, listener: str
) -> None:
    topic = f"secured-{listener.lower()}-{time.monotonic_ns()}"
    create_topic(kafka.bootstrap_servers, topic, partitions=1)  # through the PLAINTEXT listener
    src, dst = tmp_path / "in.txt", tmp_path / "out.txt"
    expected = [f"{listener}-{i:05d}" for i in range(LINES)]
    src.write_text("".join(line + "\n" for line in expected), encoding="utf-8")
    security = _security(
        listener, pki, idp, password=OAUTH_SECRET if listener == "OAUTH" else PASSWORD
    )
    bootstrap, props = _worker_props(kafka, listener, security, tmp_path)
    tokens_before = idp.issued
    copies = [k for p in ("producer.", "consumer.", "admin.") for k in security_keys(props, p)]
    assert not copies  # the top-level keys only, as Kafka Connect users write them

    worker = start_rest_worker(bootstrap, props)
    try:
        for name, config in (
            ("src", {"connector.class": "FileStreamSource", "file": str(src), "topic": topic}),
            (
                "sink",
                {"connector.class": "FileStreamSinkConnector", "file": str(dst), "topics": topic},
            ),
        ):
            response = worker.http.post("/connectors", json={"name": name, "config": config})
            assert response.status_code == 201, response.text
        wait_for(lambda: _count_lines(dst) >= LINES, 120, f"{LINES} lines in the sink file")
        assert dst.read_text(encoding="utf-8").splitlines() == expected  # 0 lost, in order
        if "sasl.jaas.config" in props:
            for path in ("/connectors?expand=status&expand=info", "/connectors/src/tasks", "/"):
                answer = worker.http.get(path)
                assert answer.status_code == 200, answer.text
                for secret in (PASSWORD, OAUTH_SECRET, pki.password):
                    assert secret not in answer.text
        if listener == "SASLSSL":
            status = worker.http.get("/connectors/src/status").json()
            assert [t["state"] for t in status["tasks"]] == ["RUNNING"], status
            # Transactions wrote commit markers, which take offsets: more offsets than lines.
            assert _end_offset(kafka, topic) > LINES
        if listener == "OAUTH":
            assert idp.issued > tokens_before  # the clients logged in with the provider's tokens
    finally:
        try:
            worker.delete_connectors()
        finally:
            worker.stop()


def _bad(listener: str, pki: Pki, idp: OidcProvider) -> dict[str, str]:
    if listener == "SCRAM-wrong-password":
        return _security("SCRAM", pki, idp, password="not-the-password")
    if listener == "PLAIN-wrong-password":
        return _security("PLAIN", pki, idp, password="not-the-password")
    if listener == "OAUTH-wrong-client-secret":
        return _security("OAUTH", pki, idp, password="not-the-password")
    if listener == "TLS-wrong-CA":
        return {**_security("TLS", pki, idp), "ssl.truststore.location": str(pki.other_ca)}
    if listener == "ELSEWHERE-host-name-check":  # Kafka's default: https
        return {"security.protocol": "SSL", "ssl.truststore.type": "PEM",
                "ssl.truststore.location": str(pki.ca)}  # fmt: skip
    if listener == "MTLS-no-client-certificate":
        return {"security.protocol": "SSL", "ssl.truststore.type": "PEM",
                "ssl.truststore.location": str(pki.ca)}  # fmt: skip
    assert listener == "SCRAM-plaintext-client"
    return {}


BAD_VARIANTS = {
    # variant: (what the line must say, the setting to check)
    "SCRAM-wrong-password": (
        "authentication failed for SASL/SCRAM-SHA-512 at {bootstrap}",
        "check sasl.jaas.config username/password",
    ),
    "PLAIN-wrong-password": (
        "authentication failed for SASL/PLAIN at {bootstrap}",
        "check sasl.jaas.config username/password",
    ),
    "TLS-wrong-CA": (
        "the broker's certificate at {bootstrap} is not trusted (SSL)",
        "check ssl.truststore.location",
    ),
    "MTLS-no-client-certificate": (
        "the broker at {bootstrap} refused the client's certificate (SSL)",
        "check ssl.keystore.location",
    ),
    "OAUTH-wrong-client-secret": (
        "no OAuth token for SASL/OAUTHBEARER at {bootstrap}",
        "check sasl.jaas.config clientId/clientSecret/scope",
    ),
    "ELSEWHERE-host-name-check": (
        "the broker's certificate at {bootstrap} does not name the host (SSL)",
        "check the certificate's subject alternative names, or set "
        "ssl.endpoint.identification.algorithm to empty",
    ),
    "SCRAM-plaintext-client": (
        "the broker at {bootstrap} closed the connection (security.protocol PLAINTEXT)",
        "check security.protocol",
    ),
}


@pytest.mark.parametrize("variant", list(BAD_VARIANTS))
def test_a_bad_client_setting_ends_start_up_with_one_line_saying_what_to_check(
    kafka: KafkaBroker, pki: Pki, idp: OidcProvider, tmp_path: Path, variant: str
) -> None:
    listener = variant.split("-", 1)[0]
    bootstrap, props = _worker_props(kafka, listener, _bad(variant, pki, idp), tmp_path)
    started = time.monotonic()
    with pytest.raises((RuntimeError, TimeoutError)) as err:
        worker = start_rest_worker(bootstrap, props)
        worker.stop()  # pragma: no cover - reached only if the worker started, failing the test
    elapsed = time.monotonic() - started
    assert isinstance(err.value, RuntimeError), f"the worker did not fail: {err.value}"
    line = str(err.value).removeprefix("worker died during start: ")
    cause, check = BAD_VARIANTS[variant]
    assert "\n" not in line, line
    assert cause.format(bootstrap=bootstrap) in line, line
    assert check in line, line
    assert "last client error: None" not in line and "last client error: " in line, line
    assert PASSWORD not in line and "not-the-password" not in line, line
    assert elapsed < FAIL_WITHIN_S, f"start-up ended after {elapsed:.1f} s: {line}"
