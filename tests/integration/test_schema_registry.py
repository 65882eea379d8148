"""The schema registry over a Kafka topic, driven by confluent-kafka's own registry client."""

from __future__ import annotations

import importlib
import json
import struct
import warnings
from collections.abc import Callable, Iterator

import httpx
import pytest

from connectrt.broker import EmbeddedBroker
from connectrt.schema_registry.server import SchemaRegistryServer

with warnings.catch_warnings():
    # authlib, imported by the client, warns about its httpx integration on import, after
    # installing an "always" filter for its warnings: import it first, then ignore.
    try:
        importlib.import_module("authlib.deprecate")
    except ImportError:
        pass
    warnings.simplefilter("ignore")
    from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
    from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
    from confluent_kafka.schema_registry.error import SchemaRegistryError
    from confluent_kafka.serialization import MessageField, SerializationContext

pytestmark = pytest.mark.integration

Names = Callable[[str], str]
Start = Callable[[str], SchemaRegistryServer]
Clients = Callable[[SchemaRegistryServer], SchemaRegistryClient]


def record(*fields: tuple[str, object] | tuple[str, object, object], name: str = "User") -> str:
    out = []
    for spec in fields:
        field: dict[str, object] = {"name": spec[0], "type": spec[1]}
        if len(spec) == 3:
            field["default"] = spec[2]
        out.append(field)
    return json.dumps({"type": "record", "name": name, "namespace": "t", "fields": out})


V1 = record(("name", "string"))
V2 = record(("name", "string"), ("age", "int", 0))
V3_BAD = record(("name", "string"), ("email", "string"))


@pytest.fixture
def start_registry(broker: EmbeddedBroker) -> Iterator[Start]:
    servers: list[SchemaRegistryServer] = []

    def start(topic: str) -> SchemaRegistryServer:
        server = SchemaRegistryServer(
            broker.bootstrap_servers, topic, "http://127.0.0.1:0", timeout=10.0
        )
        server.start()
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.stop()


@pytest.fixture
def client_for() -> Iterator[Clients]:
    """Registry clients for a server, closed at the end (their HTTP sessions hold sockets)."""
    clients: list[SchemaRegistryClient] = []

    def make(server: SchemaRegistryServer) -> SchemaRegistryClient:
        client = SchemaRegistryClient({"url": server.url, "max.retries": 0})
        clients.append(client)
        return client

    yield make
    for client in clients:
        client.__exit__()


def test_client_api(start_registry: Start, unique_name: Names, client_for: Clients) -> None:
    server = start_registry(unique_name("_schemas"))
    client = client_for(server)
    subject = "users-value"

    id1 = client.register_schema(subject, Schema(V1, "AVRO"))
    assert client.get_schema(id1).schema_str == V1
    assert client.register_schema(subject, Schema(V1, "AVRO")) == id1
    id2 = client.register_schema(subject, Schema(V2, "AVRO"))
    assert id2 == id1 + 1
    assert client.register_schema("other-value", Schema(V1, "AVRO")) == id1  # global ids

    latest = client.get_latest_version(subject)
    assert (latest.version, latest.schema_id, latest.subject) == (2, id2, subject)
    assert client.get_version(subject, 1).schema_id == id1
    assert client.get_versions(subject) == [1, 2]
    assert client.get_subjects() == ["other-value", subject]
    assert client.lookup_schema(subject, Schema(V2, "AVRO")).version == 2
    assert [(v.subject, v.version) for v in client.get_schema_versions(id1)] == [
        ("other-value", 1),
        (subject, 1),
    ]
    assert client.get_schema_types() == ["JSON", "PROTOBUF", "AVRO"]

    assert client.get_compatibility() == "BACKWARD"
    assert client.test_compatibility(subject, Schema(V3_BAD, "AVRO")) is False
    assert client.test_compatibility(subject, Schema(V1, "AVRO")) is True
    with pytest.raises(SchemaRegistryError) as err:
        client.register_schema(subject, Schema(V3_BAD, "AVRO"))
    assert (err.value.http_status_code, err.value.error_code) == (409, 409)
    with pytest.raises(SchemaRegistryError) as err:
        client.register_schema(subject, Schema('{"type": "record", "name": 1}', "AVRO"))
    assert (err.value.http_status_code, err.value.error_code) == (422, 42201)
    with pytest.raises(SchemaRegistryError) as err:
        client.get_version("missing", 1)
    assert (err.value.http_status_code, err.value.error_code) == (404, 40401)

    client.set_compatibility(subject, "NONE")
    assert client.get_compatibility(subject) == "NONE"
    assert client.get_compatibility() == "BACKWARD"
    assert client.test_compatibility(subject, Schema(V3_BAD, "AVRO")) is True
    id3 = client.register_schema(subject, Schema(V3_BAD, "AVRO"))
    assert id3 == id2 + 1

    assert client.delete_version(subject, 3) == 3
    assert client.get_versions(subject) == [1, 2]
    assert client.delete_subject(subject) == [1, 2]
    assert client.get_subjects() == ["other-value"]
    assert client.delete_subject(subject, permanent=True) == [1, 2, 3]
    with pytest.raises(SchemaRegistryError) as err:
        client.get_versions(subject)
    assert err.value.error_code == 40401
    # the schema is still reachable by id through the other subject
    assert client_for(server).get_schema(id1).schema_str == V1


def test_ids_and_versions_survive_a_restart(
    start_registry: Start, unique_name: Names, client_for: Clients
) -> None:
    topic = unique_name("_schemas")
    first = start_registry(topic)
    client = client_for(first)
    id1 = client.register_schema("a-value", Schema(V1, "AVRO"))
    id2 = client.register_schema("a-value", Schema(V2, "AVRO"))
    id_b = client.register_schema("b-value", Schema(record(("x", "long")), "AVRO"))
    client.set_compatibility("b-value", "FULL_TRANSITIVE")
    client.set_compatibility(level="FORWARD")
    client.delete_version("a-value", 1)
    first.stop()

    second = start_registry(topic)
    client = client_for(second)
    assert client.get_schema(id1).schema_str == V1
    assert client.get_schema(id_b).schema_str == record(("x", "long"))
    latest = client.get_latest_version("a-value")
    assert (latest.version, latest.schema_id) == (2, id2)
    assert client.get_versions("a-value") == [2]
    assert client.get_compatibility("b-value") == "FULL_TRANSITIVE"
    assert client.get_compatibility() == "FORWARD"
    assert client.register_schema("a-value", Schema(V2, "AVRO")) == id2  # identical -> same id
    # ids continue after the highest one, versions after the highest one (deleted included)
    new_id = client.register_schema("c-value", Schema(record(("y", "double")), "AVRO"))
    assert new_id == max(id1, id2, id_b) + 1
    with httpx.Client(base_url=second.url) as http:
        r = http.post(
            "/subjects/a-value/versions",
            json={"schema": V1},
            headers={"Content-Type": "application/vnd.schemaregistry.v1+json"},
        )
        assert r.json() == {"id": id1}
        assert http.get("/subjects/a-value/versions/latest").json()["version"] == 3


def test_avro_serializer_round_trip(
    start_registry: Start, unique_name: Names, client_for: Clients
) -> None:
    server = start_registry(unique_name("_schemas"))
    client = client_for(server)
    ctx = SerializationContext("users", MessageField.VALUE)
    serializer = AvroSerializer(client, V2)
    value = {"name": "ada", "age": 36}
    data = serializer(value, ctx)
    assert data is not None
    magic, schema_id = struct.unpack(">bI", data[:5])
    assert magic == 0
    assert client_for(server).get_latest_version("users-value").schema_id == schema_id

    # a fresh client (no cache) resolves the id through the registry
    deserializer = AvroDeserializer(client_for(server))
    assert deserializer(data, ctx) == value
    # a reader schema resolves the writer's data by Avro rules (the field age is dropped)
    reader = AvroDeserializer(client_for(server), V1)
    assert reader(data, ctx) == {"name": "ada"}
