"""The schema drift policy (``schema.drift``) of the Avro, JSON Schema and Protobuf converters
against the built-in registry (in memory, over real HTTP): what each policy does with a schema
its subject's compatibility level refuses, and the fields it names."""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.responses import JSONResponse

from connectrt.converters.avro import AvroConverter
from connectrt.converters.jsonschema import JsonSchemaConverter
from connectrt.converters.protobuf import ProtobufConverter
from connectrt.converters.registry_converter import RegistryConverter
from connectrt.converters.schema_drift import (
    DRIFT_FIELDS_HEADER,
    DRIFT_HEADER,
    DRIFT_SUBJECT_HEADER,
    FieldChange,
    SchemaDriftError,
    config_drift_policy,
    drift_headers,
    drift_policy_of,
    field_changes,
    schema_fields,
)
from connectrt.data import Schema, SchemaBuilder, Struct
from connectrt.errors import ConfigError, DataError
from connectrt.listener.server import HttpServer
from connectrt.schema_registry.app import create_registry_app
from connectrt.schema_registry.store import MemorySchemaStore
from connectrt.testing.schema_registry import memory_registry

CONVERTERS: dict[str, type[RegistryConverter]] = {
    "avro": AvroConverter,
    "json": JsonSchemaConverter,
    "protobuf": ProtobufConverter,
}
_topics = itertools.count()


@pytest.fixture(scope="module")
def registry() -> Iterator[tuple[MemorySchemaStore, str]]:
    with memory_registry() as served:
        yield served


@pytest.fixture(params=sorted(CONVERTERS))
def kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


_OPEN: list[RegistryConverter] = []


@pytest.fixture(autouse=True)
def _close_converters() -> Iterator[None]:
    yield
    while _OPEN:
        _OPEN.pop().close()


def make(kind: str, url: str, policy: str | None) -> RegistryConverter:
    conv = CONVERTERS[kind]()
    _OPEN.append(conv)
    config: dict[str, Any] = {"schema.registry.url": url}
    if policy is not None:
        config["schema.drift"] = policy
    conv.configure(config, False)
    return conv


def items(*fields: tuple[str, Schema]) -> Schema:
    builder = SchemaBuilder.struct().name("items")
    for name, schema in fields:
        builder.field(name, schema)
    return builder.build()


V1 = items(("id", Schema.INT64_SCHEMA), ("qty", Schema.INT32_SCHEMA))
RETYPED = items(("id", Schema.INT64_SCHEMA), ("qty", Schema.STRING_SCHEMA))


def row(schema: Schema, qty: Any) -> Struct:
    return Struct(schema).put("id", 1).put("qty", qty)


def fresh_topic(store: MemorySchemaStore, level: str) -> str:
    topic = f"drift{next(_topics)}"
    store.set_compatibility(f"{topic}-value", level)
    return topic


def test_evolve_is_the_default_and_the_registry_refuses_an_incompatible_schema(
    registry: tuple[MemorySchemaStore, str], kind: str
) -> None:
    store, url = registry
    topic = fresh_topic(store, "FULL")
    conv = make(kind, url, None)
    assert conv.from_connect_data(topic, V1, row(V1, 5))
    with pytest.raises(DataError) as info:
        conv.from_connect_data(topic, RETYPED, row(RETYPED, "five"))
    assert not isinstance(info.value, SchemaDriftError)
    assert "incompatible" in str(info.value)
    assert store.versions(f"{topic}-value") == [1]


@pytest.mark.parametrize("policy", ["fail", "dlq"])
def test_an_incompatible_schema_names_its_fields_and_is_not_registered(
    registry: tuple[MemorySchemaStore, str], kind: str, policy: str
) -> None:
    store, url = registry
    topic = fresh_topic(store, "FULL")
    conv = make(kind, url, policy)
    assert conv.from_connect_data(topic, V1, row(V1, 5))
    with pytest.raises(SchemaDriftError) as info:
        conv.from_connect_data(topic, RETYPED, row(RETYPED, "five"))
    error = info.value
    assert error.policy == policy
    assert error.subject == f"{topic}-value"
    assert error.compatibility == "FULL"
    assert error.version == 1
    assert error.fields == ["qty"]
    assert "qty changed (" in str(error) and "Registry: BACKWARD" in str(error)
    assert drift_policy_of(error) == policy
    headers = dict(error.headers())
    assert headers[DRIFT_SUBJECT_HEADER] == f"{topic}-value".encode()
    assert headers[DRIFT_FIELDS_HEADER] == b"qty"
    assert b"qty changed" in (headers[DRIFT_HEADER] or b"")
    assert store.versions(f"{topic}-value") == [1]
    # The verdict is kept: the next record of that schema costs no registry call.
    calls = conv.client.requests
    with pytest.raises(SchemaDriftError):
        conv.from_connect_data(topic, RETYPED, row(RETYPED, "six"))
    assert conv.client.requests == calls
    # The subject's records keep flowing.
    assert conv.from_connect_data(topic, V1, row(V1, 7))


def test_a_compatible_schema_is_registered_under_every_policy(
    registry: tuple[MemorySchemaStore, str], kind: str
) -> None:
    store, url = registry
    wider = items(
        ("id", Schema.INT64_SCHEMA), ("qty", Schema.INT32_SCHEMA), ("note", Schema.STRING_SCHEMA)
    )
    for policy in ("evolve", "fail", "dlq"):
        topic = fresh_topic(store, "NONE")
        conv = make(kind, url, policy)
        assert conv.from_connect_data(topic, V1, row(V1, 5))
        assert conv.from_connect_data(topic, wider, row(wider, 5).put("note", "n"))
        assert store.versions(f"{topic}-value") == [1, 2], policy


def test_an_earlier_version_is_used_as_it_is(
    registry: tuple[MemorySchemaStore, str], kind: str
) -> None:
    store, url = registry
    topic = fresh_topic(store, "NONE")
    first = make(kind, url, "fail")
    first.from_connect_data(topic, V1, row(V1, 5))
    first.from_connect_data(topic, RETYPED, row(RETYPED, "5"))
    store.set_compatibility(f"{topic}-value", "FULL")  # V1 is not compatible with RETYPED
    again = make(kind, url, "fail")
    data = again.from_connect_data(topic, V1, row(V1, 6))
    expected = store.get_version(f"{topic}-value", 1).id
    assert data is not None and int.from_bytes(data[1:5], "big") == expected
    assert store.versions(f"{topic}-value") == [1, 2]


def test_the_policy_setting() -> None:
    assert config_drift_policy({}) == "evolve"
    assert config_drift_policy({"schema.drift": "DLQ"}) == "dlq"
    with pytest.raises(ConfigError, match=r"schema\.drift"):
        config_drift_policy({"schema.drift": "ignore"})
    error = SchemaDriftError("dlq", "s", "FULL", 2, (FieldChange("a", "int", None),), ("m",))
    wrapped = DataError("outer")
    wrapped.__cause__ = error
    assert drift_policy_of(wrapped) == "dlq"
    assert dict(drift_headers(wrapped))[DRIFT_FIELDS_HEADER] == b"a"
    assert drift_headers(DataError("plain")) == []


def test_field_changes_of_each_schema_type() -> None:
    def record(*fields: tuple[str, Any]) -> str:
        return json.dumps(
            {"type": "record", "name": "t", "fields": [{"name": n, "type": t} for n, t in fields]}
        )

    old_avro = record(("a", "int"), ("b", ["null", "string"]))
    new_avro = record(("a", "string"), ("c", "long"))
    assert field_changes(schema_fields("AVRO", old_avro), schema_fields("AVRO", new_avro)) == [
        FieldChange("a", "int", "string"),
        FieldChange("c", None, "long"),
        FieldChange("b", "null|string", None),
    ]
    old_json = json.dumps(
        {
            "type": "object",
            "properties": {
                "a": {"type": "integer", "connect.type": "int32"},
                "b": {"type": "string"},
            },
            "required": ["a"],
        }
    )
    assert schema_fields("JSON", old_json) == {"a": "int32", "b": "string?"}
    proto = """syntax = "proto3";
// a comment { with a brace
message t {
  int64 id = 1;
  repeated string tags = 2;
  map<string, int32> counts = 3;
  message Inner {
    int32 deep = 1;
  }
  oneof choice {
    string text = 4;
    Inner inner = 5;
  }
}
message other {
  int32 not_mine = 1;
}
"""
    assert schema_fields("PROTOBUF", proto) == {
        "id": "int64 = 1",
        "tags": "repeated string = 2",
        "counts": "map<string, int32> = 3",
        "text": "string = 4",
        "inner": "Inner = 5",
    }


def test_a_registry_without_the_all_versions_check_is_asked_about_the_latest(kind: str) -> None:
    """Registries before Confluent 7 answer 404 to ``POST /compatibility/subjects/{s}/versions``
    (no version): the check falls back to ``.../versions/latest``."""
    store = MemorySchemaStore()
    app = create_registry_app(store)
    asked: list[str] = []

    @app.middleware("http")
    async def older(request: Any, call_next: Any) -> Any:
        path = request.url.path
        if path.startswith("/compatibility/"):
            asked.append(path.rsplit("/", 1)[-1])
        if path.startswith("/compatibility/") and path.endswith("/versions"):
            return JSONResponse({"error_code": 404, "message": "HTTP 404 Not Found"}, 404)
        return await call_next(request)

    server = HttpServer(app, "http://127.0.0.1:0")
    server.start()
    try:
        topic = fresh_topic(store, "FULL")
        conv = make(kind, server.url, "fail")
        assert conv.from_connect_data(topic, V1, row(V1, 5))
        with pytest.raises(SchemaDriftError) as info:
            conv.from_connect_data(topic, RETYPED, row(RETYPED, "five"))
        assert info.value.fields == ["qty"]
        assert asked == ["versions", "latest", "versions", "latest"]
    finally:
        server.stop()
