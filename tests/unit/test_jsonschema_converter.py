"""JsonSchemaConverter against the built-in registry (in memory, over real HTTP), and against
confluent-kafka's own JSONSerializer / JSONDeserializer in both directions."""

from __future__ import annotations

import datetime as dt
import decimal
import json
import random
import warnings
from collections.abc import Iterator
from typing import Any

import pytest

from connectrt.converters.jsonschema import JsonSchemaConverter
from connectrt.data import Date, Decimal, Schema, SchemaBuilder, Struct, Timestamp
from connectrt.errors import ConfigError, DataError
from connectrt.schema_registry.store import MemorySchemaStore
from connectrt.testing.schema_registry import memory_registry

with warnings.catch_warnings():
    warnings.simplefilter("ignore")  # authlib's httpx deprecation notice on import
    from confluent_kafka.schema_registry import SchemaRegistryClient
    from confluent_kafka.schema_registry.json_schema import JSONDeserializer, JSONSerializer
    from confluent_kafka.serialization import MessageField, SerializationContext


@pytest.fixture(scope="module")
def registry() -> Iterator[tuple[MemorySchemaStore, str]]:
    with memory_registry() as served:
        yield served


_OPEN: list[JsonSchemaConverter] = []


@pytest.fixture(autouse=True)
def _close_converters() -> Iterator[None]:
    yield
    while _OPEN:
        _OPEN.pop().close()


def make(url: str, **extra: Any) -> JsonSchemaConverter:
    conv = JsonSchemaConverter()
    _OPEN.append(conv)
    conv.configure({"schema.registry.url": url, **extra}, False)
    return conv


ADDRESS = (
    SchemaBuilder.struct()
    .name("Address")
    .field("city", Schema.STRING_SCHEMA)
    .field("zip", Schema.OPTIONAL_INT32_SCHEMA)
    .build()
)
RECORD = (
    SchemaBuilder.struct()
    .name("com.example.Person")
    .field("id", Schema.INT64_SCHEMA)
    .field("small", Schema.INT8_SCHEMA)
    .field("name", Schema.STRING_SCHEMA)
    .field("nick", Schema.OPTIONAL_STRING_SCHEMA)
    .field("score", Schema.FLOAT64_SCHEMA)
    .field("ratio", Schema.OPTIONAL_FLOAT32_SCHEMA)
    .field("active", Schema.BOOLEAN_SCHEMA)
    .field("blob", Schema.OPTIONAL_BYTES_SCHEMA)
    .field("tags", SchemaBuilder.array(Schema.STRING_SCHEMA).build())
    .field("attrs", SchemaBuilder.map(Schema.STRING_SCHEMA, Schema.INT32_SCHEMA).build())
    .field("codes", SchemaBuilder.map(Schema.INT32_SCHEMA, Schema.STRING_SCHEMA).optional().build())
    .field("home", ADDRESS)
    .field(
        "work",
        SchemaBuilder.struct().name("Work").field("city", Schema.STRING_SCHEMA).optional().build(),
    )
    .field("history", SchemaBuilder.array(ADDRESS).build())
    .field("amount", Decimal.schema(2))
    .field("born", Date.schema())
    .field("seen", Timestamp.builder().optional().build())
    .build()
)


def person(rng: random.Random, i: int) -> Struct:
    work_schema = RECORD.field("work").schema  # type: ignore[union-attr]
    s = Struct(RECORD)
    s.put("id", rng.randint(-(2**63), 2**63 - 1))
    s.put("small", rng.randint(-128, 127))
    s.put("name", f"person {i} é{chr(0x1F600)}")
    s.put("nick", rng.choice([None, f"n{i}"]))
    s.put("score", rng.uniform(-1e6, 1e6))
    s.put("ratio", rng.choice([None, 0.5, -2.25]))
    s.put("active", rng.random() < 0.5)
    s.put("blob", rng.choice([None, rng.randbytes(rng.randint(0, 8))]))
    s.put("tags", [f"t{j}" for j in range(rng.randint(0, 3))])
    s.put("attrs", {f"k{j}": rng.randint(-5, 5) for j in range(rng.randint(0, 3))})
    s.put("codes", rng.choice([None, {j: f"c{j}" for j in range(rng.randint(0, 2))}]))
    s.put("home", Struct(ADDRESS).put("city", f"c{i}").put("zip", rng.choice([None, i])))
    s.put("work", rng.choice([None, Struct(work_schema).put("city", "w")]))
    s.put(
        "history",
        [Struct(ADDRESS).put("city", f"h{j}").put("zip", j) for j in range(rng.randint(0, 2))],
    )
    s.put("amount", decimal.Decimal(rng.randint(-(10**8), 10**8)).scaleb(-2))
    s.put("born", dt.date(1970, 1, 1) + dt.timedelta(days=rng.randint(-5000, 20000)))
    s.put(
        "seen",
        rng.choice([None, dt.datetime(2024, 1, 1, tzinfo=dt.UTC) + dt.timedelta(milliseconds=i)]),
    )
    return s


def test_connect_schema_maps_as_confluent_writes_it() -> None:
    conv = make("http://unused")
    js = conv.json_schema(RECORD)
    assert js["type"] == "object" and js["title"] == "com.example.Person"
    props = js["properties"]
    assert props["id"] == {"type": "integer", "connect.type": "int64", "connect.index": 0}
    assert props["small"]["connect.type"] == "int8"
    assert props["nick"] == {
        "oneOf": [{"type": "null"}, {"type": "string"}],
        "connect.index": 3,
    }
    assert props["ratio"]["oneOf"][1] == {"type": "number", "connect.type": "float32"}
    assert props["blob"]["oneOf"][1] == {"type": "string", "connect.type": "bytes"}
    assert props["attrs"] == {
        "type": "object",
        "additionalProperties": {"type": "integer", "connect.type": "int32"},
        "connect.type": "map",
        "connect.index": 9,
    }
    codes = props["codes"]["oneOf"][1]
    assert codes["type"] == "array" and codes["connect.type"] == "map"
    assert set(codes["items"]["properties"]) == {"key", "value"}
    assert props["work"]["oneOf"][1]["title"] == "Work"
    assert props["amount"]["title"] == "org.apache.kafka.connect.data.Decimal"
    assert props["amount"]["connect.parameters"] == {"scale": "2"}
    assert props["born"] == {
        "type": "integer",
        "title": "org.apache.kafka.connect.data.Date",
        "connect.version": 1,
        "connect.type": "int32",
        "connect.index": 15,
    }
    closed = make("http://unused", **{"object.additional.properties": "false"})
    assert closed.json_schema(RECORD)["additionalProperties"] is False


def test_round_trip_through_the_registry(registry: tuple[MemorySchemaStore, str]) -> None:
    store, url = registry
    conv = make(url)
    rng = random.Random(7)
    values = [person(rng, i) for i in range(50)]
    for v in values:
        data = conv.from_connect_data("rt", RECORD, v)
        assert data is not None and data[0] == 0
        schema, back = conv.to_connect_data("rt", data)
        assert back == v
    assert schema is not None and schema.name == "com.example.Person"
    sv = store.get_version("rt-value", "latest")
    assert sv.schema_type == "JSON" and sv.version == 1
    assert conv.client.requests == 2  # one registration, one schema fetch


def _to_plain(conv: JsonSchemaConverter, value: Any, schema: Schema) -> Any:
    """A Struct as the JSON a JSONDeserializer gives (the payload Confluent's converter
    writes)."""
    from connectrt.converters.json.java_text import java_dumps

    return json.loads(java_dumps(conv.writer_for(schema).encode(value)))


def test_confluent_deserializer_reads_1000_records(registry: tuple[MemorySchemaStore, str]) -> None:
    _, url = registry
    conv = make(url, **{"json.fail.invalid.schema": "true"})
    rng = random.Random(11)
    ctx = SerializationContext("ours", MessageField.VALUE)
    with SchemaRegistryClient({"url": url}) as client:
        deser = JSONDeserializer(None, schema_registry_client=client)
        for i in range(1000):
            value = person(rng, i)
            got = deser(conv.from_connect_data("ours", RECORD, value), ctx)
            plain = _to_plain(conv, value, RECORD)
            assert got == plain, i
            assert got["name"] == f"person {i} é{chr(0x1F600)}"


# A plain JSON Schema as a Python producer registers it: types, nullable unions, nested
# objects, arrays, a connect.type map (the JSON Schema converter's own annotation).
PLAIN = {
    "$schema": "http://json-schema.org/draft-07/schema#",
    "title": "Order",
    "type": "object",
    "properties": {
        "order_id": {"type": "integer"},
        "customer": {"type": "string"},
        "note": {"type": ["string", "null"]},
        "total": {"type": "number"},
        "paid": {"type": "boolean"},
        "lines": {
            "type": "array",
            "items": {"$ref": "#/definitions/Line"},
        },
        "labels": {
            "type": "object",
            "additionalProperties": {"type": "string"},
            "connect.type": "map",
        },
        "shipping": {"oneOf": [{"type": "null"}, {"$ref": "#/definitions/Address"}]},
    },
    "required": ["order_id", "customer", "total", "paid", "lines", "labels"],
    "definitions": {
        "Line": {
            "type": "object",
            "properties": {"sku": {"type": "string"}, "qty": {"type": "integer"}},
            "required": ["sku", "qty"],
        },
        "Address": {
            "type": "object",
            "properties": {"street": {"type": "string"}, "zip": {"type": ["integer", "null"]}},
        },
    },
}


def order(rng: random.Random, i: int) -> dict[str, Any]:
    return {
        "order_id": rng.randint(-(2**63), 2**63 - 1),
        "customer": f"customer-{i}",
        "note": rng.choice([None, f"note {i}"]),
        "total": rng.choice([round(rng.uniform(0, 1e4), 2), 0.0, -1.5]),
        "paid": rng.random() < 0.5,
        "lines": [{"sku": f"s{j}", "qty": rng.randint(1, 9)} for j in range(rng.randint(0, 3))],
        "labels": {f"l{j}": f"v{j}" for j in range(rng.randint(0, 3))},
        "shipping": rng.choice(
            [None, {"street": f"{i} Main St", "zip": rng.choice([None, 10000 + i])}]
        ),
    }


def _struct_to_plain(value: Any) -> Any:
    if isinstance(value, Struct):
        return {f.name: _struct_to_plain(value.get(f.name)) for f in value.schema.fields}
    if isinstance(value, list):
        return [_struct_to_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _struct_to_plain(v) for k, v in value.items()}
    return value


def test_we_read_1000_records_of_the_confluent_serializer(
    registry: tuple[MemorySchemaStore, str],
) -> None:
    store, url = registry
    conv = make(url)
    rng = random.Random(13)
    ctx = SerializationContext("theirs", MessageField.VALUE)
    with SchemaRegistryClient({"url": url}) as client:
        ser = JSONSerializer(json.dumps(PLAIN), client)
        for i in range(1000):
            record = order(rng, i)
            schema, value = conv.to_connect_data("theirs", ser(record, ctx))
            assert _struct_to_plain(value) == record, i
    assert schema is not None and schema.name == "Order"
    assert schema.field("note").schema.optional  # type: ignore[union-attr]
    assert not schema.field("customer").schema.optional  # type: ignore[union-attr]
    assert schema.field("labels").schema.type.name == "MAP"  # type: ignore[union-attr]
    assert store.get_version("theirs-value", "latest").schema_type == "JSON"


def test_references_are_resolved(registry: tuple[MemorySchemaStore, str]) -> None:
    store, url = registry
    address = {"type": "object", "properties": {"street": {"type": "string"}}}
    store.register("address", json.dumps(address), "JSON")
    from connectrt.schema_registry.schema_records import Reference

    outer = {
        "type": "object",
        "title": "Customer",
        "properties": {"name": {"type": "string"}, "home": {"$ref": "address.json"}},
    }
    sv = store.register(
        "refs-value", json.dumps(outer), "JSON", (Reference("address.json", "address", 1),)
    )
    conv = make(url)
    _schema, value = conv.to_connect_data(
        "refs", b"\x00" + sv.id.to_bytes(4, "big") + b'{"name":"a","home":{"street":"b"}}'
    )
    assert _struct_to_plain(value) == {"name": "a", "home": {"street": "b"}}
    assert store.referenced_by("address", 1) == [sv.id]


def test_validation_on_write_rejects_what_the_schema_does_not_admit(
    registry: tuple[MemorySchemaStore, str],
) -> None:
    _, url = registry
    schema = SchemaBuilder.struct().field("n", Schema.INT32_SCHEMA).build()
    conv = make(url, **{"json.fail.invalid.schema": "true"})
    assert conv.from_connect_data("v", schema, Struct(schema).put("n", 3)) is not None
    # A value the Connect schema admits but the registered schema does not: use.latest.version
    # with a schema of another shape registered as the subject's latest.
    strict = {"type": "object", "properties": {"n": {"type": "integer", "maximum": 2}}}
    _, url = registry
    latest = make(url, **{"json.fail.invalid.schema": "true"})
    latest.writer_for(schema).json_schema = strict
    with pytest.raises(DataError, match="does not match its JSON Schema at n"):
        latest.from_connect_data("v", schema, Struct(schema).put("n", 3))


def test_errors(registry: tuple[MemorySchemaStore, str]) -> None:
    _, url = registry
    conv = make(url)
    with pytest.raises(DataError, match="too short"):
        conv.to_connect_data("t", b"\x00\x00")
    with pytest.raises(DataError, match="magic byte"):
        conv.to_connect_data("t", b"\x01\x00\x00\x00\x01{}")
    with pytest.raises(DataError, match="needs a schema"):
        conv.from_connect_data("t", None, {"a": 1})
    assert conv.from_connect_data("t", RECORD, None) is None
    assert conv.to_connect_data("t", None) == (None, None)


def test_plugin_registered() -> None:
    from connectrt.runtime.plugins.catalog import BUNDLED_PLUGINS

    assert (
        "connectrt.converters.jsonschema.JsonSchemaConverter",
        "io.confluent.connect.json.JsonSchemaConverter",
        "converter",
    ) in BUNDLED_PLUGINS


def test_decimal_format_is_parsed_as_json_converter_parses_it(
    registry: tuple[MemorySchemaStore, str],
) -> None:
    _, url = registry
    assert JsonSchemaConverter.CONFIG_KEYS["decimal.format"][1] == "BASE64"
    with pytest.raises(ConfigError) as info:
        make(url, **{"decimal.format": "HEX"})
    assert info.value.name == "decimal.format"
    amount = SchemaBuilder.struct().name("Amount").field("v", Decimal.schema(2)).build()
    value = Struct(amount).put("v", decimal.Decimal("12.34"))
    numeric = make(url, **{"decimal.format": " numeric "})
    payload = numeric.from_connect_data("amounts", amount, value)
    assert payload is not None
    assert json.loads(payload[5:]) == {"v": 12.34}
