"""JSON Schema compatibility in the built-in registry, on the evolutions Confluent's schema
evolution documentation walks through (open, closed and partially open content models, type
widening, enums, bounds, required), at the seven levels, over the REST API too."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from connectrt.schema_registry.json_schema_compat import differences
from connectrt.schema_registry.json_schema_model import load
from connectrt.schema_registry.schema_types import check_compatibility, parse_json_schema
from connectrt.schema_registry.store import MemorySchemaStore, RegistryError
from connectrt.testing.schema_registry import memory_registry


def obj(props: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"type": "object", "properties": props, **extra}


S = {"type": "string"}
I = {"type": "integer"}  # noqa: E741
N = {"type": "number"}
OPEN_A = obj({"a": S})
OPEN_AB = obj({"a": S, "b": I})
CLOSED_A = obj({"a": S}, additionalProperties=False)
CLOSED_AB = obj({"a": S, "b": I}, additionalProperties=False)
CLOSED_AB_REQUIRED = obj({"a": S, "b": I}, additionalProperties=False, required=["b"])
PARTIAL_A = obj({"a": S}, additionalProperties=S)
PARTIAL_A_STRING_B = obj({"a": S, "b": S}, additionalProperties=S)
PARTIAL_A_INT_B = obj({"a": S, "b": I}, additionalProperties=S)

# (writer, reader, reader reads what writer admits: BACKWARD of reader over writer)
CASES = [
    # open content model: a removed property is compatible, an added one is not
    (OPEN_AB, OPEN_A, True, []),
    (OPEN_A, OPEN_AB, False, ["OPTIONAL_PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL"]),
    (OPEN_A, obj({"a": S, "b": {}}), True, []),
    # closed content model: an added optional property is compatible, a removed one is not
    (CLOSED_A, CLOSED_AB, True, []),
    (CLOSED_AB, CLOSED_A, False, ["PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL"]),
    (CLOSED_A, CLOSED_AB_REQUIRED, False, ["REQUIRED_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL"]),
    (
        CLOSED_A,
        obj({"a": S, "b": {**I, "default": 0}}, additionalProperties=False, required=["b"]),
        True,
        [],
    ),
    # partially open: added or removed properties must fit the additional properties' schema
    (PARTIAL_A, PARTIAL_A_STRING_B, True, []),
    (PARTIAL_A, PARTIAL_A_INT_B, False, ["PROPERTY_ADDED_NOT_COVERED_BY_PARTIALLY_OPEN"]),
    (PARTIAL_A_STRING_B, PARTIAL_A, True, []),
    (PARTIAL_A_INT_B, PARTIAL_A, False, ["PROPERTY_REMOVED_NOT_COVERED_BY_PARTIALLY_OPEN"]),
    # types
    (I, N, True, []),
    (N, I, False, ["TYPE_NARROWED"]),
    (S, I, False, ["TYPE_CHANGED"]),
    (S, {"oneOf": [{"type": "null"}, S]}, True, []),
    ({"oneOf": [{"type": "null"}, S]}, S, False, ["TYPE_CHANGED"]),
    (
        {"type": "string", "connect.type": "bytes"},
        {"type": "number", "connect.type": "bytes"},
        True,
        [],
    ),
    # constraints
    ({"enum": ["a", "b"]}, {"enum": ["a", "b", "c"]}, True, []),
    ({"enum": ["a", "b"]}, {"enum": ["a"]}, False, ["ENUM_ARRAY_NARROWED"]),
    ({**S, "maxLength": 5}, {**S, "maxLength": 10}, True, []),
    ({**S, "maxLength": 10}, {**S, "maxLength": 5}, False, ["MAX_LENGTH_DECREASED"]),
    ({**N, "minimum": 0}, N, True, []),
    (N, {**N, "minimum": 0}, False, ["MINIMUM_ADDED"]),
    ({"type": "array", "items": I}, {"type": "array", "items": N}, True, []),
    ({"type": "array", "items": N}, {"type": "array", "items": I}, False, ["TYPE_NARROWED"]),
    # required
    (obj({"a": S}, required=["a"]), obj({"a": S}), True, []),
    (obj({"a": S}), obj({"a": S}, required=["a"]), False, ["REQUIRED_ATTRIBUTE_ADDED"]),
    # annotations
    ({**S, "title": "x", "description": "y"}, {**S, "title": "z"}, True, []),
]


@pytest.mark.parametrize(("writer", "reader", "ok", "expected"), CASES)
def test_differences(writer: Any, reader: Any, ok: bool, expected: list[str]) -> None:
    new = parse_json_schema(json.dumps(reader), {})
    old = parse_json_schema(json.dumps(writer), {})
    messages = check_compatibility("JSON", "BACKWARD", new, [old])
    assert (not messages) is ok, messages
    for kind in expected:
        assert any(kind in m for m in messages), (kind, messages)


def test_paths_name_the_property() -> None:
    found = differences(load(obj({"a": obj({"b": I})})), load(obj({"a": obj({"b": S})})))
    assert ("TYPE_CHANGED", "#/properties/a/properties/b") in found


def arr(*items: Any, **extra: Any) -> dict[str, Any]:
    return {"type": "array", "items": list(items), **extra}


@pytest.mark.parametrize(
    ("original", "update", "expected"),
    [
        (CLOSED_A, OPEN_A, ("ADDITIONAL_PROPERTIES_ADDED", "#/additionalProperties")),
        (OPEN_A, CLOSED_A, ("ADDITIONAL_PROPERTIES_REMOVED", "#/additionalProperties")),
        (OPEN_A, PARTIAL_A, ("ADDITIONAL_PROPERTIES_NARROWED", "#/additionalProperties")),
        (PARTIAL_A, OPEN_A, ("ADDITIONAL_PROPERTIES_EXTENDED", "#/additionalProperties")),
        (arr(S, additionalItems=False), arr(S), ("ADDITIONAL_ITEMS_ADDED", "#/additionalItems")),
        (arr(S), arr(S, additionalItems=False), ("ADDITIONAL_ITEMS_REMOVED", "#/additionalItems")),
        (arr(S), arr(S, additionalItems=S), ("ADDITIONAL_ITEMS_NARROWED", "#/additionalItems")),
        (arr(S, additionalItems=S), arr(S), ("ADDITIONAL_ITEMS_EXTENDED", "#/additionalItems")),
        (
            PARTIAL_A,
            obj({"a": S}, additionalProperties=I),
            ("TYPE_CHANGED", "#/additionalProperties"),
        ),
    ],
)
def test_additional_properties_and_items(
    original: Any, update: Any, expected: tuple[str, str]
) -> None:
    assert expected in differences(load(original), load(update))


def test_recursive_references_terminate() -> None:
    tree = {
        "type": "object",
        "properties": {"next": {"$ref": "#"}, "v": I},
    }
    assert [d for d in differences(load(tree), load(tree)) if d[0] != "SUM_TYPE_EXTENDED"] == []


def _store(level: str) -> MemorySchemaStore:
    store = MemorySchemaStore()
    store.set_compatibility(None, level)
    return store


def test_levels_in_the_registry() -> None:
    v1, v2, v3 = CLOSED_A, CLOSED_AB, obj({"b": I}, additionalProperties=False)
    # BACKWARD: v2 reads v1 (optional b added to a closed model)
    store = _store("BACKWARD")
    store.register("s", json.dumps(v1), "JSON")
    assert store.register("s", json.dumps(v2), "JSON").version == 2
    # FORWARD: v1 cannot read v2's data (b removed from a closed model), so v2 is refused
    store = _store("FORWARD")
    store.register("s", json.dumps(v1), "JSON")
    with pytest.raises(RegistryError) as err:
        store.register("s", json.dumps(v2), "JSON")
    assert err.value.status == 409
    # FULL needs both ways: open models where a property is dropped
    store = _store("FULL")
    store.register("s", json.dumps(OPEN_AB), "JSON")
    with pytest.raises(RegistryError):
        store.register("s", json.dumps(OPEN_A), "JSON")  # FORWARD: b added to an open model
    # BACKWARD_TRANSITIVE checks every version: v3 reads v2 but not v1 (a removed, closed)
    store = _store("BACKWARD")
    for v in (v1, v2):
        store.register("t", json.dumps(v), "JSON")
    assert store.test_compatibility("t", json.dumps(v3), None, "JSON") != []
    store = _store("NONE")
    for v in (v1, v2, v3):
        store.register("n", json.dumps(v), "JSON")
    store.set_compatibility("n", "BACKWARD_TRANSITIVE")
    assert store.test_compatibility("n", json.dumps(v3), None, "JSON") != []
    store.set_compatibility("n", "BACKWARD")
    assert store.test_compatibility("n", json.dumps(v3), None, "JSON") == []


def test_same_text_of_another_type_is_another_schema() -> None:
    store = MemorySchemaStore()
    text = json.dumps({"type": "string"})
    avro = store.register("a", text)
    js = store.register("j", text, "JSON")
    assert avro.id != js.id and js.schema_type == "JSON"
    assert store.lookup("j", text, False, "JSON").id == js.id
    with pytest.raises(RegistryError):
        store.lookup("j", text)  # as Avro: not registered there


@pytest.fixture
def client() -> Iterator[httpx.Client]:
    with memory_registry() as (_, url), httpx.Client(base_url=url, timeout=30) as http:
        yield http


def test_rest_api_json_schemas_and_references(client: httpx.Client) -> None:
    assert client.get("/schemas/types").json() == ["JSON", "PROTOBUF", "AVRO"]
    r = client.post(
        "/subjects/addr/versions", json={"schema": json.dumps(OPEN_A), "schemaType": "JSON"}
    )
    assert r.status_code == 200
    body = {
        "schema": json.dumps(obj({"home": {"$ref": "addr.json"}})),
        "schemaType": "JSON",
        "references": [{"name": "addr.json", "subject": "addr", "version": 1}],
    }
    sid = client.post("/subjects/c/versions", json=body).json()["id"]
    got = client.get(f"/schemas/ids/{sid}").json()
    assert got["schemaType"] == "JSON" and got["references"] == body["references"]
    assert client.get("/subjects/addr/versions/1/referencedby").json() == [sid]
    latest = client.get("/subjects/c/versions/latest").json()
    assert latest["schemaType"] == "JSON" and latest["references"] == body["references"]
    missing = {**body, "references": [{"name": "x", "subject": "nope", "version": 1}]}
    r = client.post("/subjects/d/versions", json=missing)
    assert r.status_code == 422 and r.json()["error_code"] == 42201
    # verbose compatibility messages name the difference and its path
    r = client.post(
        "/compatibility/subjects/addr/versions/latest?verbose=true",
        json={"schema": json.dumps(OPEN_AB), "schemaType": "JSON"},
    )
    assert r.json()["is_compatible"] is False
    assert "#/properties/b" in r.json()["messages"][0]
    r = client.post("/subjects/x/versions", json={"schema": "{}", "schemaType": "XML"})
    assert r.status_code == 422
