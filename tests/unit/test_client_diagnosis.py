"""librdkafka's connection errors classified into one line naming what to check.

The messages are librdkafka 2.12's, as a client logged them against an Apache Kafka 4.4 broker
(tests/integration/test_secured_listeners.py reproduces each against a real one).
"""

from __future__ import annotations

import logging

import pytest

from connectrt.storage.client_diagnosis import CLOSED_GRACE_S, ClientWatch, diagnose

AT = "127.0.0.1:9093"
SCRAM = {
    "bootstrap.servers": AT,
    "security.protocol": "SASL_SSL",
    "sasl.mechanism": "SCRAM-SHA-512",
}
SSL = {"bootstrap.servers": AT, "security.protocol": "SSL"}
PLAINTEXT = {"bootstrap.servers": AT}

AUTH = (
    "sasl_plaintext://127.0.0.1:9093/bootstrap: SASL authentication error: Authentication "
    "failed during authentication due to invalid credentials with SASL mechanism SCRAM-SHA-512 "
    "(after 343ms in state AUTH_REQ)"
)
UNTRUSTED = (
    "ssl://127.0.0.1:9093/bootstrap: SSL handshake failed: error:0A000086:SSL routines::"
    "certificate verify failed: broker certificate could not be verified, verify that "
    "ssl.ca.location is correctly configured (after 27ms in state SSL_HANDSHAKE)"
)
NO_CLIENT_CERT = (
    "ssl://127.0.0.1:9093/bootstrap: Receive failed: error:0A000412:SSL routines::sslv3 alert "
    "bad certificate: SSL alert number 42 (after 1ms in state APIVERSION_QUERY)"
)
CLOSED = (
    "FAIL [rdkafka#producer-5] [thrd:127.0.0.1:9093/bootstrap]: 127.0.0.1:9093/bootstrap: "
    "Disconnected: connection closed by peer: receive 0 after POLLIN (after 2ms in state UP)"
)


@pytest.mark.parametrize(
    ("message", "config", "expected"),
    [
        (
            AUTH,
            SCRAM,
            f"authentication failed for SASL/SCRAM-SHA-512 at {AT}: check sasl.jaas.config "
            "username/password",
        ),
        (
            AUTH,
            {**SCRAM, "sasl.mechanism": "OAUTHBEARER"},
            "check the OAuth client settings (sasl.jaas.config clientId/clientSecret/scope",
        ),
        (AUTH, {**SCRAM, "sasl.mechanism": "GSSAPI"}, "check sasl.jaas.config keyTab/principal"),
        (
            'Failed to acquire SASL OAUTHBEARER token: {"error": "invalid_client"}',
            {**SCRAM, "sasl.mechanism": "OAUTHBEARER"},
            f"no OAuth token for SASL/OAUTHBEARER at {AT}: the token endpoint refused the client",
        ),
        (
            UNTRUSTED,
            SSL,
            f"the broker's certificate at {AT} is not trusted (SSL): check ssl.truststore.location",
        ),
        (
            "ssl://h:1/bootstrap: SSL handshake failed: certificate verify failed: "
            "Hostname mismatch",
            SSL,
            "set ssl.endpoint.identification.algorithm to empty",
        ),
        (
            NO_CLIENT_CERT,
            SSL,
            f"the broker at {AT} refused the client's certificate (SSL): check "
            "ssl.keystore.location",
        ),
        (
            "ssl://127.0.0.1:9093/bootstrap: SSL handshake failed: error:0A00010B:SSL routines::"
            "wrong version number",
            SSL,
            f"the listener at {AT} does not speak TLS (security.protocol SSL)",
        ),
        (
            "127.0.0.1:9093/bootstrap: Unsupported SASL mechanism: broker's supported "
            "mechanisms: PLAIN",
            SCRAM,
            f"the listener at {AT} does not offer SASL/SCRAM-SHA-512: check sasl.mechanism",
        ),
        (
            CLOSED,
            PLAINTEXT,
            f"the broker at {AT} closed the connection (security.protocol PLAINTEXT): check "
            "security.protocol",
        ),
        (
            "127.0.0.1:9093/bootstrap: Connect to ipv4#127.0.0.1:9093 failed: Connection refused",
            PLAINTEXT,
            f"nothing accepts connections at {AT}: check bootstrap.servers",
        ),
    ],
)
def test_each_failure_is_named_with_the_setting_to_check(
    message: str, config: dict[str, str], expected: str
) -> None:
    cause = diagnose(message, config)
    assert cause is not None
    assert expected in cause.text
    assert "\n" not in cause.text


def test_what_ends_a_start_up_at_once_later_or_never() -> None:
    auth = diagnose(AUTH, SCRAM)
    closed = diagnose(CLOSED, PLAINTEXT)
    refused = diagnose("Connect to ipv4#127.0.0.1:9093 failed: Connection refused", PLAINTEXT)
    assert auth is not None and closed is not None and refused is not None
    assert auth.ends_start_up(0.0)
    assert not closed.ends_start_up(CLOSED_GRACE_S - 0.5)
    assert closed.ends_start_up(CLOSED_GRACE_S)
    assert not refused.ends_start_up(1e6)  # a starting broker refuses connections too
    assert diagnose("Local: Timed out", PLAINTEXT) is None


class _Err:
    """Stands in for a KafkaError: the watch keeps only its text."""

    def __init__(self, text: str) -> None:
        self.text = text

    def __str__(self) -> str:
        return self.text


def test_the_watch_keeps_log_lines_and_callbacks_but_not_the_brokers_down_noise(
    caplog: pytest.LogCaptureFixture,
) -> None:
    watch = ClientWatch(logging.getLogger("test.client"))
    assert watch.last_error is None and watch.cause(SCRAM) is None
    watch.on_error(_Err("1/1 brokers are down"))  # type: ignore[arg-type]
    assert watch.last_error == "1/1 brokers are down"  # better than nothing
    with caplog.at_level(logging.DEBUG, logger="test.client"):
        watch.logger.log(logging.DEBUG, "%s [%s] %s", "CONNECT", "rdkafka#1", "connecting")
        watch.logger.log(logging.ERROR, "%s [%s] %s", "FAIL", "rdkafka#1", AUTH)
    assert any(AUTH in r.getMessage() for r in caplog.records)  # forwarded to the logger
    watch.on_error(_Err("0/1 brokers are down"))  # type: ignore[arg-type]
    assert watch.last_error is not None and AUTH in watch.last_error
    found = watch.cause(SCRAM)
    assert found is not None and found[0].text.startswith("authentication failed")
    assert AUTH in found[1]


def test_a_connection_closed_logged_at_info_is_still_the_cause() -> None:
    """Seen in a CI run on a loaded machine: a plaintext client at a SASL listener, and all
    librdkafka said was an INFO line of its FAIL facility (the error callback silent but for
    "1/1 brokers are down"). The watch keeps FAIL lines at any level, and only those."""
    closed = (
        "[thrd:127.0.0.1:33199/bootstrap]: 127.0.0.1:33199/bootstrap: Disconnected: connection "
        "closed by peer: receive 0 after POLLIN (after 2ms in state UP)"
    )
    watch = ClientWatch(logging.getLogger("test.client"))
    watch.on_error(_Err("1/1 brokers are down"))  # type: ignore[arg-type]
    watch.logger.log(logging.INFO, "%s [%s] %s", "STATE", "rdkafka#1", "Broker changed state")
    assert watch.last_error == "1/1 brokers are down"  # an INFO line of another facility: not kept
    watch.logger.log(logging.INFO, "%s [%s] %s", "FAIL", "rdkafka#1", closed)
    found = watch.cause({"bootstrap.servers": "127.0.0.1:33199"})
    assert found is not None
    assert found[0].text.startswith("the broker at 127.0.0.1:33199 closed the connection")
    assert "connection closed by peer" in found[1]
