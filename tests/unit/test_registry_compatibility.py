"""Avro schema resolution and the seven compatibility levels; the registry's rules in memory."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from connectrt.schema_registry.app import CONTENT_TYPE
from connectrt.schema_registry.compatibility import (
    InvalidSchemaError,
    can_read,
    check_compatibility,
    parse_avro,
)
from connectrt.schema_registry.store import MemorySchemaStore, RegistryError
from connectrt.testing.schema_registry import memory_registry


def rec(*fields: dict[str, Any], name: str = "R", **extra: Any) -> dict[str, Any]:
    return {"type": "record", "name": name, "fields": list(fields), **extra}


def record(*fields: dict[str, Any], name: str = "R", **extra: Any) -> str:
    return json.dumps(rec(*fields, name=name, **extra))


def f(name: str, type_: Any, **extra: Any) -> dict[str, Any]:
    return {"name": name, "type": type_, **extra}


def enum(*symbols: str, **extra: Any) -> dict[str, Any]:
    return {"type": "enum", "name": "E", "symbols": list(symbols), **extra}


A = record(f("a", "int"))
A_B_DEFAULT = record(f("a", "int"), f("b", "string", default="x"))
A_B_NO_DEFAULT = record(f("a", "int"), f("b", "string"))
EMPTY = record()

# (reader, writer, reader can read writer's data)
RESOLUTION = [
    ('"int"', '"int"', True),
    ('"long"', '"int"', True),
    ('"float"', '"int"', True),
    ('"double"', '"int"', True),
    ('"double"', '"long"', True),
    ('"float"', '"long"', True),
    ('"double"', '"float"', True),
    ('"int"', '"long"', False),
    ('"long"', '"float"', False),
    ('"float"', '"double"', False),
    ('"bytes"', '"string"', True),
    ('"string"', '"bytes"', True),
    ('"string"', '"int"', False),
    ('"boolean"', '"null"', False),
    ('{"type": "int", "logicalType": "date"}', '"int"', True),
    ('{"type": "array", "items": "long"}', '{"type": "array", "items": "int"}', True),
    ('{"type": "array", "items": "int"}', '{"type": "array", "items": "long"}', False),
    ('{"type": "map", "values": "double"}', '{"type": "map", "values": "float"}', True),
    ('{"type": "map", "values": "int"}', '{"type": "array", "items": "int"}', False),
    ('["null", "string"]', '"string"', True),
    ('["null", "long"]', '"int"', True),
    ('["null", "string"]', '"int"', False),
    ('"string"', '["null", "string"]', False),
    ('["null", "string", "int"]', '["null", "string"]', True),
    ('["null", "string"]', '["null", "string", "int"]', False),
    ('["null", "double"]', '["int", "long"]', True),
    (json.dumps(enum("A", "B", "C")), json.dumps(enum("A", "B")), True),
    (json.dumps(enum("A", "B")), json.dumps(enum("A", "B", "C")), False),
    (json.dumps(enum("A", "B", default="A")), json.dumps(enum("A", "B", "C")), True),
    (json.dumps(enum("A", name="Other")), json.dumps(enum("A")), False),
    (
        '{"type": "fixed", "name": "F", "size": 4}',
        '{"type": "fixed", "name": "F", "size": 4}',
        True,
    ),
    (
        '{"type": "fixed", "name": "F", "size": 8}',
        '{"type": "fixed", "name": "F", "size": 4}',
        False,
    ),
    (
        '{"type": "fixed", "name": "G", "size": 4}',
        '{"type": "fixed", "name": "F", "size": 4}',
        False,
    ),
    (A, A, True),
    (A_B_DEFAULT, A, True),  # added field with a default
    (A_B_NO_DEFAULT, A, False),  # added field without a default
    (A, A_B_NO_DEFAULT, True),  # writer's extra field is skipped
    (EMPTY, A, True),
    (record(f("a", "long")), A, True),
    (record(f("a", "string")), A, False),
    (record(f("a", "int"), name="Other"), A, False),
    (record(f("a", "int"), name="Other", aliases=["R"]), A, True),
    (record(f("renamed", "int", aliases=["a"])), A, True),
    (record(f("renamed", "int")), A, False),
    (record(f("a", "int"), name="R", namespace="x"), A, False),
    (
        record(f("inner", rec(f("x", "int"), f("y", "int", default=0), name="I"))),
        record(f("inner", rec(f("x", "int"), name="I"))),
        True,
    ),
    (
        record(f("inner", rec(f("x", "int"), f("y", "int"), name="I"))),
        record(f("inner", rec(f("x", "int"), name="I"))),
        False,
    ),
    (  # recursive types
        record(f("v", "int"), f("next", ["null", "R"], default=None), f("w", "long", default=0)),
        record(f("v", "int"), f("next", ["null", "R"], default=None)),
        True,
    ),
    (
        record(f("v", "long"), f("next", ["null", "R"], default=None)),
        record(f("v", "string"), f("next", ["null", "R"], default=None)),
        False,
    ),
]


@pytest.mark.parametrize(("reader", "writer", "expected"), RESOLUTION)
def test_schema_resolution(reader: str, writer: str, expected: bool) -> None:
    errors = can_read(parse_avro(reader), parse_avro(writer))
    assert (not errors) is expected, errors


# (level, previous versions oldest first, new schema, compatible)
V1 = record(f("a", "int"))
V2 = record(f("a", "int"), f("b", "string", default=""))
V3_DROP_A = record(f("b", "string", default=""))
V3_DROP_B = record(f("a", "int"))
V2_NEW_REQUIRED = record(f("a", "int"), f("c", "string"))
V2_A_DEFAULT = record(f("a", "int", default=0))
V3_DROP_A_KEEP_B_DEFAULT = record(f("b", "string", default=""), f("c", "int", default=0))

LEVELS_TABLE = [
    ("NONE", [V1], record(f("z", "boolean")), True),
    ("BACKWARD", [V1], V2, True),
    ("BACKWARD", [V1], V2_NEW_REQUIRED, False),
    ("BACKWARD", [V1, V2], V3_DROP_A, True),  # deleting a field is backward compatible
    ("BACKWARD", [V2], V3_DROP_B, True),
    ("BACKWARD", [V2], V1.replace('"int"', '"string"'), False),
    ("FORWARD", [V1], V2_NEW_REQUIRED, True),  # old readers ignore the new field
    ("FORWARD", [V2], V3_DROP_B, True),  # V2's dropped field b has a default
    ("FORWARD", [V1], EMPTY, False),  # V1 readers need a, which has no default
    ("FULL", [V1], V2, True),
    ("FULL", [V1], V2_NEW_REQUIRED, False),
    ("FULL", [V2], V3_DROP_B, True),
    # transitive: compatible with the latest but not with an earlier version
    ("BACKWARD", [V1, V2_A_DEFAULT], V3_DROP_A_KEEP_B_DEFAULT, True),
    ("BACKWARD_TRANSITIVE", [V1, V2_A_DEFAULT], V3_DROP_A_KEEP_B_DEFAULT, True),
    ("FORWARD", [V1, V2_A_DEFAULT], V3_DROP_A_KEEP_B_DEFAULT, True),
    ("FORWARD_TRANSITIVE", [V1, V2_A_DEFAULT], V3_DROP_A_KEEP_B_DEFAULT, False),
    ("FULL", [V1, V2_A_DEFAULT], V3_DROP_A_KEEP_B_DEFAULT, True),
    ("FULL_TRANSITIVE", [V1, V2_A_DEFAULT], V3_DROP_A_KEEP_B_DEFAULT, False),
    ("BACKWARD", [record(f("x", "string")), V1], record(f("a", "long")), True),
    ("BACKWARD_TRANSITIVE", [record(f("x", "string")), V1], record(f("a", "long")), False),
    ("BACKWARD_TRANSITIVE", [], V1, True),
]


@pytest.mark.parametrize(("level", "previous", "new", "expected"), LEVELS_TABLE)
def test_compatibility_levels(level: str, previous: list[str], new: str, expected: bool) -> None:
    messages = check_compatibility(level, parse_avro(new), [parse_avro(p) for p in previous])
    assert (not messages) is expected, messages


@pytest.mark.parametrize(
    "text",
    [
        "not json",
        '{"type": "record", "name": "R"}',
        '{"type": "nope"}',
        '{"type": "record", "name": "R", "fields": [{"name": "a", "type": "int", "default": "x"}]}',
        '{"type": "enum", "name": "E", "symbols": ["A", "A"]}',
    ],
)
def test_invalid_schemas(text: str) -> None:
    with pytest.raises(InvalidSchemaError):
        parse_avro(text)


def test_unknown_level() -> None:
    with pytest.raises(ValueError):
        check_compatibility("SIDEWAYS", parse_avro(V1), [])


# -- the registry's rules, in memory -------------------------------------------------------


def test_memory_store_ids_versions_and_deletes() -> None:
    store = MemorySchemaStore()
    first = store.register("s", V1)
    assert (first.id, first.version) == (1, 1)
    assert store.register("s", json.dumps(json.loads(V1), indent=2)).id == 1  # same canonical
    assert store.register("other", V1).id == 1  # same schema -> same id globally
    second = store.register("s", V2)
    assert (second.id, second.version) == (2, 2)
    with pytest.raises(RegistryError) as err:
        store.register("s", V2_NEW_REQUIRED)
    assert (err.value.status, err.value.error_code) == (409, 409)
    with pytest.raises(RegistryError) as err:
        store.register("s", "{")
    assert err.value.error_code == 42201

    assert store.delete_version("s", "latest") == 2
    assert store.versions("s") == [1]
    assert store.versions("s", deleted=True) == [1, 2]
    with pytest.raises(RegistryError) as err:
        store.delete_version("s", 1, permanent=True)
    assert err.value.error_code == 40407
    assert store.delete_version("s", 2, permanent=True) == 2
    assert store.versions("s", deleted=True) == [1]


def test_memory_store_subject_delete_and_config() -> None:
    store = MemorySchemaStore()
    store.register("s", V1)
    with pytest.raises(RegistryError) as err:
        store.delete_subject("s", permanent=True)
    assert err.value.error_code == 40405
    assert store.delete_subject("s") == [1]
    assert store.subjects() == []
    assert store.subjects(deleted=True) == ["s"]
    with pytest.raises(RegistryError) as err:
        store.delete_subject("s")
    assert err.value.error_code == 40404
    assert store.delete_subject("s", permanent=True) == [1]
    with pytest.raises(RegistryError) as err:
        store.versions("s")
    assert err.value.error_code == 40401
    # a re-registered schema keeps its id; the subject starts again at version 1
    again = store.register("s", V1)
    assert (again.id, again.version) == (1, 1)

    with pytest.raises(RegistryError) as err:
        store.set_compatibility("s", "SIDEWAYS")
    assert err.value.error_code == 42203
    assert store.set_compatibility("s", "none") == "NONE"
    assert store.register("s", V2_NEW_REQUIRED).version == 2
    assert store.get_compatibility(None) == "BACKWARD"


@pytest.fixture
def client() -> Iterator[httpx.Client]:
    with memory_registry() as (_, url), httpx.Client(base_url=url, timeout=10) as http:
        yield http


def test_app_errors_and_content_type(client: httpx.Client) -> None:
    headers = {"Content-Type": CONTENT_TYPE}
    r = client.post("/subjects/s/versions", content=json.dumps({"schema": V1}), headers=headers)
    assert r.status_code == 200 and r.json() == {"id": 1}
    assert r.headers["content-type"].startswith(CONTENT_TYPE)
    r = client.get("/subjects/s/versions/latest")
    assert r.json() == {"subject": "s", "version": 1, "id": 1, "schema": V1}
    assert json.loads(client.get("/subjects/s/versions/1/schema").text) == json.loads(V1)
    assert client.get("/schemas/ids/1").json() == {"schema": V1}
    assert client.get("/schemas/ids/1/versions").json() == [{"subject": "s", "version": 1}]
    assert client.get("/").json() == {}
    client.post("/subjects/t/versions", json={"schema": V2})
    assert client.get("/subjects").json() == ["s", "t"]
    assert client.get("/subjects?subjectPrefix=t&offset=0&limit=-1").json() == ["t"]
    assert client.get("/subjects?offset=1&limit=1").json() == ["t"]
    client.delete("/subjects/t")
    assert client.get("/subjects?deleted_only=true").json() == ["t"]
    assert client.get("/subjects?deleted=True").json() == ["s", "t"]
    assert client.get("/schemas/types").json() == ["JSON", "PROTOBUF", "AVRO"]
    assert client.post("/subjects/s", json={"schema": V1}).json()["version"] == 1

    def error(r: Any) -> tuple[int, int]:
        return r.status_code, r.json()["error_code"]

    assert error(client.get("/subjects/nope/versions")) == (404, 40401)
    assert error(client.get("/subjects/s/versions/7")) == (404, 40402)
    assert error(client.get("/subjects/s/versions/0")) == (422, 42202)
    assert error(client.get("/schemas/ids/99")) == (404, 40403)
    assert error(client.post("/subjects/s", json={"schema": V2})) == (404, 40403)
    assert error(client.post("/subjects/s/versions", json={"schema": "{"})) == (422, 42201)
    assert error(client.post("/subjects/s/versions", json={"schema": V2_NEW_REQUIRED})) == (
        409,
        409,
    )
    assert error(client.put("/config", json={"compatibility": "X"})) == (422, 42203)
    assert error(client.get("/config/s")) == (404, 40408)
    assert client.get("/config/s?defaultToGlobal=true").json() == {"compatibilityLevel": "BACKWARD"}
    assert client.put("/config/s", json={"compatibility": "NONE"}).json() == {
        "compatibility": "NONE"
    }
    r = client.post("/compatibility/subjects/s/versions/latest?verbose=true", json={"schema": V2})
    assert r.json() == {"is_compatible": True, "messages": []}
    assert client.delete("/subjects/s/versions/1").json() == 1
    assert client.delete("/subjects/s").status_code == 404
