"""The TLS probe that tells a certificate naming another host from an untrusted one.

A real TLS server on loopback (Python's ssl, one thread) with the certificates of
:func:`connectrt.testing.certs.make_pki` (``openssl``): one naming ``localhost`` and
``127.0.0.1``, one naming only another host.
"""

from __future__ import annotations

import logging
import socket
import ssl
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from connectrt.storage.client_diagnosis import ClientWatch, diagnose
from connectrt.storage.tls_probe import checks_host_name, names_another_host
from connectrt.testing.certs import Pki, make_pki

UNTRUSTED = (
    "ssl://127.0.0.1:9093/bootstrap: SSL handshake failed: error:0A000086:SSL routines::"
    "certificate verify failed: broker certificate could not be verified, verify that "
    "ssl.ca.location is correctly configured (after 27ms in state SSL_HANDSHAKE)"
)
OBSERVED = (
    'KafkaError{{code=_SSL,val=-181,str="ssl://{at}/bootstrap: SSL handshake failed: '
    "error:0A000086:SSL routines::certificate verify failed: broker certificate could not be "
    "verified, verify that ssl.ca.location is correctly configured or root CA certificates are "
    "installed (install ca-certificates package) (after 3ms in state SSL_HANDSHAKE, 1 identical "
    'error(s) suppressed)"}}'
)
"""The error callback's text, verbatim but for the address, that librdkafka 2.15.1 (OpenSSL 3)
gave a worker at an Apache Kafka 4.4 SSL listener whose certificate names only another host
(tests/integration/test_secured_listeners.py, ELSEWHERE-host-name-check, 2026-11-29); a
truststore without the CA (TLS-wrong-CA) gives the same words."""


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    return make_pki(tmp_path_factory.mktemp("pki"))


@contextmanager
def tls_server(folder: Path, stem: str) -> Iterator[str]:
    """``127.0.0.1:PORT`` of a server presenting ``<stem>.crt``; it accepts until closed."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(folder / f"{stem}.crt", folder / f"{stem}.key")
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(0.2)
    done = threading.Event()

    def serve() -> None:
        while not done.is_set():
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            conn.settimeout(5)
            try:
                with context.wrap_socket(conn, server_side=True):
                    pass
            except OSError:
                pass  # the client refused the certificate: what the probe looks for

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield f"127.0.0.1:{listener.getsockname()[1]}"
    finally:
        done.set()
        thread.join(5)
        listener.close()


def test_a_certificate_naming_another_host_is_told_from_an_untrusted_one(pki: Pki) -> None:
    with tls_server(pki.folder, "elsewhere") as at:
        config = {
            "bootstrap.servers": at,
            "security.protocol": "SSL",
            "ssl.ca.location": str(pki.ca),
        }
        assert names_another_host(config)
        cause = diagnose(UNTRUSTED, config)
        assert cause is not None and f"the broker's certificate at {at} does not name the host" in (
            cause.text
        )
        # No host name check (Kafka's empty value, librdkafka's none): nothing to tell.
        assert not names_another_host({**config, "ssl.endpoint.identification.algorithm": "none"})
        # A CA that did not sign it: the chain fails first, so untrusted it stays.
        other = {**config, "ssl.ca.location": str(pki.other_ca)}
        assert not names_another_host(other)
        cause = diagnose(UNTRUSTED, other)
        assert cause is not None and "is not trusted (SSL)" in cause.text
    with tls_server(pki.folder, "server") as at:  # names 127.0.0.1: nothing wrong with it
        assert not names_another_host({"bootstrap.servers": at, "ssl.ca.location": str(pki.ca)})


def test_librdkafkas_real_words_for_a_certificate_naming_another_host(pki: Pki) -> None:
    with tls_server(pki.folder, "elsewhere") as at:
        config = {
            "bootstrap.servers": at,
            "security.protocol": "SSL",
            "ssl.ca.location": str(pki.ca),
        }
        watch = ClientWatch(logging.getLogger("test_tls_probe"))
        watch.record(OBSERVED.format(at=at))
        found = watch.cause(config)
        assert found is not None and found[0].definitive
        assert found[0].text.startswith(f"the broker's certificate at {at} does not name the host")
        assert "ssl.endpoint.identification.algorithm" in found[0].text
        line = str(watch.unreachable(RuntimeError("metadata"), at, config, 30.0, 1.0))
        assert "\n" not in line and f"(last client error: {OBSERVED.format(at=at)})" in line
        # The same words when the client trusts a CA that did not sign it: untrusted.
        found = watch.cause({**config, "ssl.ca.location": str(pki.other_ca)})
        assert found is not None and "is not trusted (SSL)" in found[0].text


def test_the_probe_answers_false_when_it_cannot_tell() -> None:
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
    assert not names_another_host({"bootstrap.servers": f"127.0.0.1:{port}"})  # refused
    assert not names_another_host({"bootstrap.servers": "no-port"})
    assert checks_host_name({}) and checks_host_name(
        {"ssl.endpoint.identification.algorithm": "https"}
    )
    assert not checks_host_name({"ssl.endpoint.identification.algorithm": "none"})
