"""A worker serving the built-in schema registry; file -> Avro topic -> file through it.

With ``rest.auth.type=basic`` the registry takes the worker's credentials, and the converters
pass them with ``basic.auth.credentials.source=USER_INFO``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from connectrt.broker import EmbeddedBroker
from connectrt.listener.auth import hash_password
from connectrt.testing.harness import create_topic, read_topic
from connectrt.testing.rest import start_rest_worker, wait_for

pytestmark = pytest.mark.integration


@pytest.mark.parametrize("auth", ["none", "basic"])
def test_avro_through_the_built_in_registry(
    broker: EmbeddedBroker, tmp_path: Path, unique_name, auth: str
):
    topic = unique_name("avro")
    create_topic(broker.bootstrap_servers, topic)
    secured: dict[str, str] = {}
    user: tuple[str, str] | None = None
    if auth == "basic":
        credentials = tmp_path / "users"
        credentials.write_text(f"connect:{hash_password('pw', iterations=1000)}\n")
        secured = {"rest.auth.type": "basic", "rest.auth.credentials.file": str(credentials)}
        user = ("connect", "pw")
    worker = start_rest_worker(
        broker.bootstrap_servers,
        **{
            "schema.registry.enable": "true",
            "schema.registry.listener": "http://127.0.0.1:0",
            "schema.registry.topic": unique_name("schemas"),
            **secured,
        },
    )
    if user is not None:
        worker.http.auth = user
    try:
        registry_url = worker.process.registry.url
        avro = {
            "value.converter": "io.confluent.connect.avro.AvroConverter",
            "value.converter.schema.registry.url": registry_url,
        }
        if user is not None:
            avro["value.converter.basic.auth.credentials.source"] = "USER_INFO"
            avro["value.converter.basic.auth.user.info"] = ":".join(user)
        src, dst = tmp_path / "in.txt", tmp_path / "out.txt"
        src.write_text("".join(f"row {i}\n" for i in range(20)))
        assert (
            worker.http.post(
                "/connectors",
                json={
                    "name": "avro-src",
                    "config": {
                        "connector.class": "FileStreamSource",
                        "file": str(src),
                        "topic": topic,
                        **avro,
                    },
                },
            ).status_code
            == 201
        )
        assert (
            worker.http.post(
                "/connectors",
                json={
                    "name": "avro-sink",
                    "config": {
                        "connector.class": "FileStreamSink",
                        "file": str(dst),
                        "topics": topic,
                        **avro,
                    },
                },
            ).status_code
            == 201
        )
        wait_for(
            lambda: dst.exists() and len(dst.read_text().splitlines()) == 20,
            60,
            "20 lines through Avro (the sink's group join included)",
        )
        assert dst.read_text().splitlines() == [f"row {i}" for i in range(20)]
        first = read_topic(broker.bootstrap_servers, topic)[0][0][1]
        assert first is not None and first[0] == 0  # Confluent wire format: magic byte 0
        schema_id = int.from_bytes(first[1:5], "big")
        import httpx

        if user is not None:
            assert httpx.get(f"{registry_url}/subjects").status_code == 401
        subjects = httpx.get(f"{registry_url}/subjects", auth=user).json()
        assert f"{topic}-value" in subjects
        schema = httpx.get(f"{registry_url}/schemas/ids/{schema_id}", auth=user).json()["schema"]
        assert schema in (
            '"string"',
            '{"type":"string"}',
        )
    finally:
        worker.stop()
