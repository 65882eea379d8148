"""The REST API over HTTPS, and bearer-token authentication."""

from __future__ import annotations

import ssl
from pathlib import Path

import httpx
import pytest
import trustme

from connectrt.broker import EmbeddedBroker
from connectrt.listener.auth import hash_token
from connectrt.testing.rest import start_rest_worker

pytestmark = pytest.mark.integration


def test_https_listener_with_bearer_tokens(broker: EmbeddedBroker, tmp_path: Path):
    ca = trustme.CA()
    cert = ca.issue_cert("127.0.0.1", "localhost")
    cert_file, key_file, ca_file = tmp_path / "cert.pem", tmp_path / "key.pem", tmp_path / "ca.pem"
    cert.private_key_and_cert_chain_pem.write_to_path(str(cert_file))
    cert.private_key_pem.write_to_path(str(key_file))
    ca.cert_pem.write_to_path(str(ca_file))
    tokens = tmp_path / "tokens"
    tokens.write_text(f"# operators\n{hash_token('t0ken-abc')}\n")

    worker = start_rest_worker(
        broker.bootstrap_servers,
        **{
            "listeners": "https://127.0.0.1:0",
            "listeners.https.ssl.certificate.location": str(cert_file),
            "listeners.https.ssl.key.location": str(key_file),
            "rest.auth.type": "bearer",
            "rest.auth.tokens.file": str(tokens),
            "rest.auth.health.open": "false",
        },
    )
    try:
        assert worker.url.startswith("https://")
        context = ssl.create_default_context(cafile=str(ca_file))
        with httpx.Client(base_url=worker.url, verify=context, timeout=30) as client:
            denied = client.get("/health")
            assert denied.status_code == 401  # health is closed when configured so
            assert denied.headers["www-authenticate"] == "Bearer"
            assert (
                client.get("/connectors", headers={"Authorization": "Bearer wrong"}).status_code
                == 401
            )
            ok = client.get("/connectors", headers={"Authorization": "Bearer t0ken-abc"})
            assert ok.status_code == 200 and ok.json() == []
        # A client that does not trust the CA cannot talk to it.
        with pytest.raises(httpx.ConnectError):
            httpx.get(f"{worker.url}/health", verify=True, timeout=10)
        with pytest.raises(httpx.HTTPError):
            httpx.get(worker.url.replace("https://", "http://") + "/health", timeout=10)
    finally:
        worker.stop()
