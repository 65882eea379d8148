"""How a worker wires its listeners: the registry's default listener and shared security."""

from __future__ import annotations

import pytest

from connectrt.listener.server import sibling_listener
from connectrt.process.assembly import WorkerProcess


@pytest.mark.parametrize(
    ("rest", "registry"),
    [
        ("http://:8083", "http://:8081"),
        ("http://127.0.0.1:0", "http://127.0.0.1:8081"),
        ("https://connect.example:9443", "https://connect.example:8081"),
        ("http://[::1]:8083", "http://[::1]:8081"),
    ],
)
def test_sibling_listener_keeps_protocol_and_host(rest: str, registry: str):
    assert sibling_listener(rest, 8081) == registry


def _build(**props: str) -> WorkerProcess:
    return WorkerProcess.build(
        {"offset.storage.type": "memory", "schema.registry.enable": "true", **props},
        "standalone",
    )


def test_registry_listens_on_the_rest_host_by_default():
    process = _build(listeners="http://127.0.0.1:8083")
    assert process.registry.url == "http://127.0.0.1:8081"
    assert process.registry.security is process.rest.security is process.security


def test_registry_over_https_when_the_rest_api_is(tmp_path):
    process = _build(
        **{
            "listeners": "https://127.0.0.1:8083",
            "listeners.https.ssl.certificate.location": str(tmp_path / "cert.pem"),
            "listeners.https.ssl.key.location": str(tmp_path / "key.pem"),
        }
    )
    assert process.registry.url == "https://127.0.0.1:8081"


def test_an_explicit_registry_listener_wins():
    process = _build(
        **{"listeners": "http://127.0.0.1:8083", "schema.registry.listener": "http://0.0.0.0:18081"}
    )
    assert process.registry.url == "http://127.0.0.1:18081"  # all interfaces, as asked
