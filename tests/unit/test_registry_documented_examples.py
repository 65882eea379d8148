"""The built-in registry against the examples of Confluent's own schema-evolution documentation.

Each row is (old schemas in registration order, new schema, level, compatible?), a fact taken
from the page named in the comment above its table. Every row runs through the REST API of a
real registry server: the old schemas are registered under NONE, the subject's level is set,
then ``POST /compatibility/subjects/{s}/versions/latest?verbose=true`` (``/versions`` for the
transitive levels, which check every version) must give the documented verdict, and registering
the new schema must succeed (200) or be refused (409) accordingly.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from connectrt.testing.schema_registry import memory_registry

Case = tuple[list[str], str, str, bool]


def _avro(name: str, *fields: dict[str, Any], namespace: str | None = None) -> str:
    schema: dict[str, Any] = {"type": "record", "name": name, "fields": list(fields)}
    if namespace:
        schema["namespace"] = namespace
    return json.dumps(schema)


# -- Avro ---------------------------------------------------------------------------------------
# "Schema Evolution and Compatibility" (Confluent Platform docs, schema-registry/avro.html, later
# schema-registry/fundamentals/schema-evolution.html): the `user` schema gains `favorite_color`
# with default "green" (backward and forward compatible); had it dropped `favorite_number` (no
# default) it would not be forward compatible; NONE accepts a Number -> String change.
USER_V1 = _avro(
    "user",
    {"name": "name", "type": "string"},
    {"name": "favorite_number", "type": "int"},
    namespace="example.avro",
)
USER_COLOR = _avro(
    "user",
    {"name": "name", "type": "string"},
    {"name": "favorite_number", "type": "int"},
    {"name": "favorite_color", "type": "string", "default": "green"},
    namespace="example.avro",
)
USER_NO_NUMBER = _avro("user", {"name": "name", "type": "string"}, namespace="example.avro")
USER_NUMBER_AS_STRING = _avro(
    "user",
    {"name": "name", "type": "string"},
    {"name": "favorite_number", "type": "string"},
    namespace="example.avro",
)
# "Confluent Schema Registry Tutorial" (same docs, schema_registry_tutorial): Payment2a adds
# `region` without a default and is refused under the default BACKWARD; Payment2b gives it the
# default "" and registers.
_NS = "io.confluent.examples.clients.basicavro"
PAYMENT = _avro(
    "Payment",
    {"name": "id", "type": "string"},
    {"name": "amount", "type": "double"},
    namespace=_NS,
)
PAYMENT_2A = _avro(
    "Payment",
    {"name": "id", "type": "string"},
    {"name": "amount", "type": "double"},
    {"name": "region", "type": "string"},
    namespace=_NS,
)
PAYMENT_2B = _avro(
    "Payment",
    {"name": "id", "type": "string"},
    {"name": "amount", "type": "double"},
    {"name": "region", "type": "string", "default": ""},
    namespace=_NS,
)
# The "Transitive" section links confluentinc/schema-registry issue #209 for changes that are
# compatible step by step but not transitively: f0 (default 1) -> f1 (default 1) -> f1 (none).
T0 = _avro("r", {"name": "f0", "type": "int", "default": 1})
T1 = _avro("r", {"name": "f1", "type": "int", "default": 1})
T2 = _avro("r", {"name": "f1", "type": "int"})

AVRO: list[Case] = [
    ([USER_V1], USER_COLOR, "BACKWARD", True),
    ([USER_V1], USER_COLOR, "FORWARD", True),
    ([USER_V1], USER_COLOR, "FULL", True),
    ([USER_V1], USER_NO_NUMBER, "FORWARD", False),
    ([USER_V1], USER_NO_NUMBER, "BACKWARD", True),  # summary table: BACKWARD allows deletes
    ([USER_V1], USER_NO_NUMBER, "FULL", False),
    ([USER_V1], USER_NUMBER_AS_STRING, "BACKWARD", False),
    ([USER_V1], USER_NUMBER_AS_STRING, "NONE", True),
    ([PAYMENT], PAYMENT_2A, "BACKWARD", False),
    ([PAYMENT], PAYMENT_2A, "FORWARD", True),  # summary table: FORWARD allows added fields
    ([PAYMENT], PAYMENT_2B, "BACKWARD", True),
    ([PAYMENT], PAYMENT_2B, "FULL", True),
    ([T0, T1], T2, "BACKWARD", True),
    ([T0, T1], T2, "BACKWARD_TRANSITIVE", False),
    ([T0, T1], T2, "FULL_TRANSITIVE", False),
]

# -- Protobuf -----------------------------------------------------------------------------------
# "Schema Evolution and Compatibility" (Confluent Platform docs, fundamentals/schema-evolution):
# in Protobuf, as in Avro, fields have defaults, so adding or removing a field is a fully
# compatible change; "best practice for Protobuf is to use BACKWARD_TRANSITIVE, as adding new
# message types is not forward compatible".
PROTO_V1 = 'syntax = "proto3";\npackage example;\nmessage User {\n  string name = 1;\n}\n'
PROTO_ADD_FIELD = PROTO_V1.replace("string name = 1;", "string name = 1;\n  int32 age = 2;")
PROTO_REMOVE_FIELD = PROTO_ADD_FIELD.replace("  string name = 1;\n", "  reserved 1;\n")
PROTO_ADD_MESSAGE = PROTO_V1 + "message Address {\n  string city = 1;\n}\n"

PROTOBUF: list[Case] = (
    [
        ([PROTO_V1], PROTO_ADD_FIELD, level, True)
        for level in ("BACKWARD", "FORWARD", "FULL", "FULL_TRANSITIVE")
    ]
    + [
        ([PROTO_V1, PROTO_ADD_FIELD], PROTO_REMOVE_FIELD, level, True)
        for level in ("BACKWARD", "FORWARD", "FULL", "FULL_TRANSITIVE")
    ]
    + [
        ([PROTO_V1], PROTO_ADD_MESSAGE, "BACKWARD", True),
        ([PROTO_V1], PROTO_ADD_MESSAGE, "BACKWARD_TRANSITIVE", True),
        ([PROTO_V1], PROTO_ADD_MESSAGE, "FORWARD", False),
        ([PROTO_V1], PROTO_ADD_MESSAGE, "FULL", False),
    ]
)

# -- JSON Schema --------------------------------------------------------------------------------
# "Schema Evolution and Compatibility" (Confluent docs, the Full compatibility section): in JSON
# "there are no full-compatible changes", each is only forward or only backward compatible. The
# schemas are the opening example of "Understanding JSON Schema Compatibility" (Robert Yokota,
# yokota.blog, 2021-03-29): `foo` and `bar` string properties in an open content model (the
# default), and the same closed (additionalProperties false). Which direction each change goes
# is the compatible-change list of Confluent's checker (json-schema-provider SchemaDiff:
# PROPERTY_REMOVED_FROM_OPEN_CONTENT_MODEL and OPTIONAL_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL).
FOO = {"foo": {"type": "string"}}
FOO_BAR = {"foo": {"type": "string"}, "bar": {"type": "string"}}
OPEN_FOO = json.dumps({"type": "object", "properties": FOO})
OPEN_FOO_BAR = json.dumps({"type": "object", "properties": FOO_BAR})
CLOSED_FOO = json.dumps({"type": "object", "properties": FOO, "additionalProperties": False})
CLOSED_FOO_BAR = json.dumps(
    {"type": "object", "properties": FOO_BAR, "additionalProperties": False}
)

JSON_SCHEMA: list[Case] = [
    # open content model: adding a property is forward compatible only, removing backward only
    ([OPEN_FOO], OPEN_FOO_BAR, "BACKWARD", False),
    ([OPEN_FOO], OPEN_FOO_BAR, "FORWARD", True),
    ([OPEN_FOO], OPEN_FOO_BAR, "FULL", False),
    ([OPEN_FOO_BAR], OPEN_FOO, "BACKWARD", True),
    ([OPEN_FOO_BAR], OPEN_FOO, "FORWARD", False),
    ([OPEN_FOO_BAR], OPEN_FOO, "FULL", False),
    # closed content model: the other way round
    ([CLOSED_FOO], CLOSED_FOO_BAR, "BACKWARD", True),
    ([CLOSED_FOO], CLOSED_FOO_BAR, "FORWARD", False),
    ([CLOSED_FOO], CLOSED_FOO_BAR, "FULL", False),
    ([CLOSED_FOO_BAR], CLOSED_FOO, "BACKWARD", False),
    ([CLOSED_FOO_BAR], CLOSED_FOO, "FORWARD", True),
    ([CLOSED_FOO_BAR], CLOSED_FOO, "FULL", False),
]

CASES = (
    [("AVRO", *c) for c in AVRO]
    + [("PROTOBUF", *c) for c in PROTOBUF]
    + [("JSON", *c) for c in JSON_SCHEMA]
)
_subjects = itertools.count()


@pytest.fixture(scope="module")
def registry() -> Iterator[httpx.Client]:
    with memory_registry() as (_, url), httpx.Client(base_url=url, timeout=60) as http:
        yield http


@pytest.mark.parametrize(("schema_type", "old", "new", "level", "compatible"), CASES)
def test_documented_example(
    registry: httpx.Client,
    schema_type: str,
    old: list[str],
    new: str,
    level: str,
    compatible: bool,
) -> None:
    subject = f"doc-{schema_type.lower()}-{next(_subjects)}"
    put = registry.put(f"/config/{subject}", json={"compatibility": "NONE"})
    assert put.status_code == 200, put.text
    for schema in old:
        body = {"schema": schema, "schemaType": schema_type}
        r = registry.post(f"/subjects/{subject}/versions", json=body)
        assert r.status_code == 200, r.text
    put = registry.put(f"/config/{subject}", json={"compatibility": level})
    assert put.status_code == 200, put.text
    target = "versions" if level.endswith("_TRANSITIVE") else "versions/latest"
    check = registry.post(
        f"/compatibility/subjects/{subject}/{target}?verbose=true",
        json={"schema": new, "schemaType": schema_type},
    )
    assert check.status_code == 200, check.text
    verdict = check.json()
    assert verdict["is_compatible"] is compatible, verdict.get("messages")
    if not compatible:
        assert verdict["messages"], "an incompatible verdict names what differs"
    registered = registry.post(
        f"/subjects/{subject}/versions", json={"schema": new, "schemaType": schema_type}
    )
    assert registered.status_code == (200 if compatible else 409), registered.text
