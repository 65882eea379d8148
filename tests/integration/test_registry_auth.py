"""The worker's built-in schema registry takes the worker's authentication (rest.auth.*).

Anonymous, wrong-password and unknown-user requests get 401 on every registry route (no path
is open); confluent-kafka's own ``SchemaRegistryClient`` with ``basic.auth.user.info`` works.
"""

from __future__ import annotations

import importlib
import json
import warnings
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from connectrt.broker import EmbeddedBroker
from connectrt.listener.auth import hash_password
from connectrt.testing.rest import RestWorker, start_rest_worker

with warnings.catch_warnings():
    try:  # see test_schema_registry.py: authlib warns on import
        importlib.import_module("authlib.deprecate")
    except ImportError:
        pass
    warnings.simplefilter("ignore")
    from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
    from confluent_kafka.schema_registry.error import SchemaRegistryError

pytestmark = pytest.mark.integration

V1 = json.dumps({"type": "record", "name": "User", "fields": [{"name": "n", "type": "string"}]})


@pytest.fixture
def secured(broker: EmbeddedBroker, tmp_path: Path, unique_name) -> Iterator[RestWorker]:
    credentials = tmp_path / "users"
    credentials.write_text(f"alice:{hash_password('s3cret', iterations=1000)}\n")
    worker = start_rest_worker(
        broker.bootstrap_servers,
        **{
            "rest.auth.type": "basic",
            "rest.auth.credentials.file": str(credentials),
            "schema.registry.enable": "true",
            "schema.registry.listener": "http://127.0.0.1:0",
            "schema.registry.topic": unique_name("schemas"),
        },
    )
    try:
        yield worker
    finally:
        worker.stop()


def _denied(response: httpx.Response) -> bool:
    return (
        response.status_code == 401
        and response.json() == {"error_code": 401, "message": "Unauthorized"}
        and response.headers["www-authenticate"].startswith("Basic")
    )


def test_registry_refuses_requests_without_valid_credentials(secured: RestWorker):
    url = secured.process.registry.url
    subject = "users-value"
    body = {"schema": V1}
    requests = [
        ("POST", f"/subjects/{subject}/versions", body),
        ("PUT", f"/config/{subject}", {"compatibility": "NONE"}),
        ("PUT", "/config", {"compatibility": "NONE"}),
        ("POST", f"/compatibility/subjects/{subject}/versions", body),
        ("DELETE", f"/subjects/{subject}", None),
        ("DELETE", f"/subjects/{subject}/versions/1", None),
        ("GET", "/subjects", None),
        ("GET", "/", None),
        ("GET", "/health", None),  # open on the REST API, not a registry path
    ]
    for net, auth in enumerate((None, ("alice", "wrong"), ("mallory", "s3cret"))):
        for i, (method, path, payload) in enumerate(requests):
            # Each from its own loopback address: no failure back-off slows the test.
            transport = httpx.HTTPTransport(local_address=f"127.0.{70 + net}.{i + 1}")
            with httpx.Client(base_url=url, timeout=30, transport=transport) as http:
                response = http.request(method, path, json=payload, auth=auth)
            assert _denied(response), (method, path, auth, response.text)
    # Nothing the refused requests asked for happened.
    alice = ("alice", "s3cret")
    assert httpx.get(f"{url}/subjects", auth=alice, timeout=30).json() == []
    config = httpx.get(f"{url}/config", auth=alice, timeout=30).json()
    assert config == {"compatibilityLevel": "BACKWARD"}


def test_confluent_client_with_user_info(secured: RestWorker):
    url = secured.process.registry.url
    client = SchemaRegistryClient(
        {"url": url, "basic.auth.user.info": "alice:s3cret", "max.retries": 0}
    )
    anonymous = SchemaRegistryClient({"url": url, "max.retries": 0})
    wrong = SchemaRegistryClient(
        {"url": url, "basic.auth.user.info": "alice:wrong", "max.retries": 0}
    )
    try:
        subject = "orders-value"
        schema_id = client.register_schema(subject, Schema(V1, "AVRO"))
        assert client.get_schema(schema_id).schema_str == V1
        client.set_compatibility(subject, "NONE")
        assert client.get_compatibility(subject) == "NONE"
        assert client.test_compatibility(subject, Schema(V1, "AVRO"))
        for refused in (anonymous, wrong):
            with pytest.raises(SchemaRegistryError) as failure:
                refused.register_schema("other-value", Schema(V1, "AVRO"))
            assert failure.value.http_status_code == 401
            with pytest.raises(SchemaRegistryError) as failure:
                refused.set_compatibility(subject, "BACKWARD")
            assert failure.value.http_status_code == 401
            with pytest.raises(SchemaRegistryError) as failure:
                refused.delete_subject(subject)
            assert failure.value.http_status_code == 401
        assert client.get_compatibility(subject) == "NONE"
        assert client.delete_subject(subject) == [1]
        assert client.get_subjects() == []
    finally:
        for c in (client, anonymous, wrong):
            c.__exit__()
