"""Why a Kafka client cannot reach the cluster, said in one line that names what to check.

librdkafka reports a failed connection in two places: its error callback (``error_cb``) and
its log lines, both served only when the client is polled. An authentication failure, an
untrusted certificate or a broker that closes a plaintext connection all end in the same
``Failed to get metadata: Local: Broker transport failure`` from ``list_topics``; the cause is
in those callbacks. :class:`ClientWatch` collects them for one client (hand it
``watch.logger`` as the client's ``logger`` and ``watch.on_error`` as its ``error_cb``) and
:meth:`ClientWatch.cause` classifies the latest telling one into a :class:`Cause`: one line
naming the bootstrap servers, the mechanism or protocol and the setting to check, e.g.
``authentication failed for SASL/SCRAM-SHA-512 at 127.0.0.1:9093: check sasl.jaas.config
username/password``.

librdkafka words an untrusted certificate and one that names another host alike ("certificate
verify failed"); :func:`~connectrt.storage.tls_probe.names_another_host` repeats the handshake
to tell them apart.

A cause is *definitive* when waiting cannot help (wrong credentials, an untrusted or refused
certificate, TLS against a plaintext port, a SASL mechanism the listener does not offer): a
caller ends start-up at once. A broker closing the connection is definitive once it has kept
doing so for :data:`CLOSED_GRACE_S` (a broker shutting down also closes connections).
"Connection refused" is never definitive: the broker may still be starting.

librdkafka's messages name addresses and errors, never credentials. Thread-safe: callbacks
may arrive on any thread that polls the client.
"""

from __future__ import annotations

import logging
import re
import threading
import time
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient

from connectrt.errors import ConnectError
from connectrt.storage.tls_probe import names_another_host

__all__ = ["CLOSED_GRACE_S", "Cause", "ClientWatch", "diagnose"]

CLOSED_GRACE_S = 3.0
"""How long a broker must keep closing connections before that ends a start-up."""

_KEPT = 32
_NOISE = re.compile(r"brokers are down")

_PROBE_ROUND_S = 1.0
"""One metadata request's wait while the cluster is being reached."""


@dataclass(frozen=True)
class Cause:
    """A classified connection failure: ``text`` is one line (no trailing period)."""

    text: str
    definitive: bool
    grace_s: float = 0.0

    def ends_start_up(self, elapsed_s: float) -> bool:
        """Whether a start-up that has tried for ``elapsed_s`` seconds should give up now."""
        return self.definitive and elapsed_s >= self.grace_s


def _setting(config: Mapping[str, Any], key: str, default: str) -> str:
    value = config.get(key)
    return str(value).strip() if value is not None and str(value).strip() else default


def _sasl_check(mechanism: str) -> str:
    upper = mechanism.upper()
    if upper == "OAUTHBEARER":
        return (
            "check the OAuth client settings (sasl.jaas.config clientId/clientSecret/scope, "
            "sasl.oauthbearer.token.endpoint.url)"
        )
    if upper == "GSSAPI":
        return (
            "check sasl.jaas.config keyTab/principal and sasl.kerberos.service.name "
            "(librdkafka: sasl.kerberos.keytab, sasl.kerberos.principal)"
        )
    return "check sasl.jaas.config username/password (librdkafka: sasl.username, sasl.password)"


_TOKEN = re.compile(r"Failed to (acquire SASL OAUTHBEARER token|retrieve OIDC token)", re.I)
_AUTH = re.compile(r"SASL authentication (error|failed)|Authentication failed", re.I)
_MECHANISM = re.compile(r"Unsupported SASL mechanism|mechanism .* not (supported|enabled)", re.I)
_HOSTNAME = re.compile(r"hostname mismatch|host ?name (verification|validation)", re.I)
_UNTRUSTED = re.compile(
    r"certificate verify failed|unable to get local issuer|self[- ]signed certificate", re.I
)
_REFUSED_CERT = re.compile(
    r"alert (bad certificate|certificate required|unknown ca|certificate unknown|"
    r"handshake failure)",
    re.I,
)
_NOT_TLS = re.compile(r"wrong version number|packet length too long|record layer failure", re.I)
_CLOSED = re.compile(r"connection closed by peer|Disconnected", re.I)
_REFUSED = re.compile(r"Connection refused", re.I)


def diagnose(message: str, config: Mapping[str, Any]) -> Cause | None:
    """The :class:`Cause` a librdkafka error or log ``message`` shows for a client with
    ``config`` (librdkafka keys: ``bootstrap.servers``, ``security.protocol``,
    ``sasl.mechanism``), or None when it is not one this module knows."""
    at = _setting(config, "bootstrap.servers", "?")
    protocol = _setting(config, "security.protocol", "PLAINTEXT").upper()
    mechanism = _setting(config, "sasl.mechanism", "GSSAPI").upper()
    if _MECHANISM.search(message):
        return Cause(
            f"the listener at {at} does not offer SASL/{mechanism}: check sasl.mechanism "
            "(and that security.protocol names the listener's protocol)",
            True,
        )
    if _TOKEN.search(message):
        return Cause(
            f"no OAuth token for SASL/{mechanism} at {at}: the token endpoint refused the client "
            "or could not be reached: check sasl.jaas.config clientId/clientSecret/scope and "
            "sasl.oauthbearer.token.endpoint.url",
            True,
        )
    if _AUTH.search(message):
        return Cause(
            f"authentication failed for SASL/{mechanism} at {at}: {_sasl_check(mechanism)}", True
        )
    if _HOSTNAME.search(message) or (_UNTRUSTED.search(message) and names_another_host(config)):
        return Cause(
            f"the broker's certificate at {at} does not name the host ({protocol}): check the "
            "certificate's subject alternative names, or set "
            "ssl.endpoint.identification.algorithm to empty to skip the host name check",
            True,
        )
    if _UNTRUSTED.search(message):
        return Cause(
            f"the broker's certificate at {at} is not trusted ({protocol}): check "
            "ssl.truststore.location (with ssl.truststore.type=PEM: the CA that signed the "
            "broker's certificate; librdkafka: ssl.ca.location)",
            True,
        )
    if _REFUSED_CERT.search(message):
        return Cause(
            f"the broker at {at} refused the client's certificate ({protocol}): check "
            "ssl.keystore.location and ssl.keystore.password (the listener requires a client "
            "certificate signed by a CA the broker trusts)",
            True,
        )
    if _NOT_TLS.search(message):
        return Cause(
            f"the listener at {at} does not speak TLS (security.protocol {protocol}): check "
            "security.protocol (SSL and SASL_SSL are for TLS listeners only)",
            True,
        )
    if _CLOSED.search(message):
        return Cause(
            f"the broker at {at} closed the connection (security.protocol {protocol}): check "
            "security.protocol and sasl.mechanism match the listener's (a SASL or SSL "
            "listener closes a plaintext client's connection)",
            True,
            CLOSED_GRACE_S,
        )
    if _REFUSED.search(message):
        return Cause(f"nothing accepts connections at {at}: check bootstrap.servers", False)
    return None


_FAIL_FACILITY = "FAIL"
"""librdkafka's facility for a failed broker connection: confluent-kafka logs every line as
``logger.log(level, "%s [%s] %s", facility, client name, message)``."""


class _RecordingLogger(logging.LoggerAdapter):
    """Forwards librdkafka's log lines to a logger, keeping the warnings and errors, and every
    line of the ``FAIL`` facility: librdkafka logs a broker closing a connection that had
    reached state UP at INFO, and when that is all the client says (its error callback silent,
    seen on a loaded machine) the cause must still be found."""

    def __init__(self, logger: logging.Logger, watch: ClientWatch) -> None:
        super().__init__(logger, {})
        self._watch = watch

    def log(self, level: int, msg: object, *args: object, **kwargs: Any) -> None:
        if level >= logging.WARNING or (args and args[0] == _FAIL_FACILITY):
            try:
                text = str(msg) % args if args else str(msg)
            except (TypeError, ValueError):
                text = str(msg)
            self._watch.record(text)
        super().log(level, msg, *args, **kwargs)


class ClientWatch:
    """The recent errors of one librdkafka client (see the module docstring)."""

    def __init__(self, logger: logging.Logger) -> None:
        self._lock = threading.Lock()
        self._messages: deque[str] = deque(maxlen=_KEPT)
        self._fallback: str | None = None
        #: Pass as the client's ``logger`` setting.
        self.logger: logging.LoggerAdapter = _RecordingLogger(logger, self)

    def on_error(self, err: KafkaError) -> None:
        """The client's ``error_cb``."""
        self.record(str(err))

    def record(self, message: str) -> None:
        """Keep ``message`` (a "N/M brokers are down" only when nothing better is known)."""
        with self._lock:
            if _NOISE.search(message):
                self._fallback = message
            else:
                self._messages.append(message.strip())

    @property
    def last_error(self) -> str | None:
        """The latest telling error or log line, for messages; None when none came."""
        with self._lock:
            return self._messages[-1] if self._messages else self._fallback

    def cause(self, config: Mapping[str, Any]) -> tuple[Cause, str] | None:
        """The cause the latest classifiable message shows, with that message."""
        with self._lock:
            messages = list(self._messages)
        for message in reversed(messages):
            cause = diagnose(message, config)
            if cause is not None:
                return cause, message
        return None

    def unreachable(
        self,
        exc: BaseException,
        bootstrap: str,
        config: Mapping[str, Any],
        timeout: float,
        elapsed: float | None = None,
    ) -> ConnectError:
        """One line: what failed, after how long, what to check (when the client's errors
        show it) and the client's last error."""
        found = self.cause(config)
        what = found[0].text if found is not None else str(exc)
        last = found[1] if found is not None else self.last_error
        after = f"after {elapsed:.1f} s" if elapsed is not None else f"within {timeout} s"
        text = f"Could not reach Kafka at {bootstrap} ({after}): {what} (last client error: {last})"
        return ConnectError(" ".join(text.split()))

    def wait_for_cluster(
        self, admin: AdminClient, bootstrap: str, config: Mapping[str, Any], timeout: float
    ) -> Any:
        """The cluster's metadata through ``admin`` (a client whose ``logger`` and
        ``error_cb`` feed this watch), asked for in short rounds until ``timeout``; raises
        :meth:`unreachable` early when the client's errors show a cause waiting cannot mend."""
        started = time.monotonic()
        deadline = started + timeout
        while True:
            remaining = deadline - time.monotonic()
            try:
                return admin.list_topics(timeout=max(0.1, min(_PROBE_ROUND_S, remaining)))
            except KafkaException as exc:
                admin.poll(0)  # serve the error callbacks and log lines the attempt queued
                elapsed = time.monotonic() - started
                found = self.cause(config)
                if remaining <= _PROBE_ROUND_S or (
                    found is not None and found[0].ends_start_up(elapsed)
                ):
                    raise self.unreachable(exc, bootstrap, config, timeout, elapsed) from exc
