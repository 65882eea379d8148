"""Connect schema <-> Avro schema mapping (connectrt.data.avro_schema)."""

from __future__ import annotations

import datetime as dt
import decimal
import json
from pathlib import Path

import fastavro
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from connectrt.data import Date, Decimal, Schema, SchemaBuilder, Struct, Time, Timestamp, Type
from connectrt.data.avro_schema import avro_to_connect, connect_to_avro
from connectrt.errors import DataError

SCHEMAS_DIR = Path(__file__).resolve().parents[2] / "schemas"


def round_trip(schema: Schema) -> Schema:
    avro = connect_to_avro(schema)
    fastavro.parse_schema(avro)  # valid Avro
    back = avro_to_connect(json.loads(json.dumps(avro)))
    assert back == schema, (avro, back, schema)
    return back


PRIMITIVES = [
    Schema.INT8_SCHEMA,
    Schema.INT16_SCHEMA,
    Schema.INT32_SCHEMA,
    Schema.INT64_SCHEMA,
    Schema.FLOAT32_SCHEMA,
    Schema.FLOAT64_SCHEMA,
    Schema.BOOLEAN_SCHEMA,
    Schema.STRING_SCHEMA,
    Schema.BYTES_SCHEMA,
]


@pytest.mark.parametrize("schema", PRIMITIVES, ids=lambda s: s.type.name)
def test_primitives_round_trip(schema: Schema) -> None:
    round_trip(schema)
    round_trip(Schema(schema.type, optional=True))


def test_primitive_avro_names() -> None:
    assert connect_to_avro(Schema.INT8_SCHEMA) == {"type": "int", "connect.type": "int8"}
    assert connect_to_avro(Schema.INT16_SCHEMA) == {"type": "int", "connect.type": "int16"}
    assert connect_to_avro(Schema.INT32_SCHEMA) == "int"
    assert connect_to_avro(Schema.INT64_SCHEMA) == "long"
    assert connect_to_avro(Schema.FLOAT32_SCHEMA) == "float"
    assert connect_to_avro(Schema.FLOAT64_SCHEMA) == "double"
    assert connect_to_avro(Schema.BYTES_SCHEMA) == "bytes"
    assert connect_to_avro(Schema.OPTIONAL_STRING_SCHEMA) == ["null", "string"]


def test_logical_types() -> None:
    dec = Decimal.schema(3)
    avro = connect_to_avro(dec)
    assert avro["type"] == "bytes" and avro["logicalType"] == "decimal"
    assert avro["precision"] == 64 and avro["scale"] == 3
    assert avro["connect.name"] == Decimal.LOGICAL_NAME
    assert connect_to_avro(Date.SCHEMA)["logicalType"] == "date"
    assert connect_to_avro(Time.SCHEMA)["logicalType"] == "time-millis"
    ts = connect_to_avro(Timestamp.SCHEMA)
    assert ts["type"] == "long" and ts["logicalType"] == "timestamp-millis"
    for s in (dec, Date.SCHEMA, Time.SCHEMA, Timestamp.SCHEMA):
        round_trip(s)
        round_trip(Schema(s.type, optional=True, name=s.name, version=1, parameters=s.parameters))
    with_precision = Decimal.builder(2).parameter("connect.decimal.precision", "10").build()
    assert connect_to_avro(with_precision)["precision"] == 10
    round_trip(with_precision)


def test_plain_avro_decimal_gets_precision_parameter() -> None:
    schema = avro_to_connect(
        {"type": "bytes", "logicalType": "decimal", "precision": 9, "scale": 4}
    )
    assert schema.name == Decimal.LOGICAL_NAME
    assert Decimal.scale(schema) == 4
    assert schema.parameters is not None
    assert schema.parameters["connect.decimal.precision"] == "9"


def test_metadata_round_trip() -> None:
    schema = (
        SchemaBuilder.string()
        .name("com.example.Code")
        .version(3)
        .doc("a code")
        .parameter("k", "v")
        .build()
    )
    avro = connect_to_avro(schema)
    assert avro["connect.name"] == "com.example.Code"
    assert avro["connect.version"] == 3
    assert avro["connect.doc"] == "a code"
    assert avro["connect.parameters"] == {"k": "v"}
    round_trip(schema)


def test_struct_record_names() -> None:
    named = SchemaBuilder.struct().name("com.example.User").field("id", Schema.INT64_SCHEMA)
    avro = connect_to_avro(named.build())
    assert avro["name"] == "User" and avro["namespace"] == "com.example"
    assert avro["connect.name"] == "com.example.User"
    unnamed = SchemaBuilder.struct().field("id", Schema.INT64_SCHEMA).build()
    avro = connect_to_avro(unnamed)
    assert avro["name"] == "ConnectDefault"
    assert avro["namespace"] == "io.confluent.connect.avro"
    assert avro_to_connect(avro).name is None
    round_trip(named.build())
    round_trip(unnamed)


def all_types_struct() -> Schema:
    inner = (
        SchemaBuilder.struct()
        .name("com.example.Inner")
        .doc("inner doc")
        .field("a", Schema.OPTIONAL_STRING_SCHEMA)
        .build()
    )
    unnamed = SchemaBuilder.struct().field("z", Schema.INT32_SCHEMA).optional().build()
    return (
        SchemaBuilder.struct()
        .name("com.example.All")
        .version(2)
        .field("i8", Schema.INT8_SCHEMA)
        .field("i16", Schema.INT16_SCHEMA)
        .field("i32", Schema.INT32_SCHEMA)
        .field("i64", Schema.INT64_SCHEMA)
        .field("f32", Schema.FLOAT32_SCHEMA)
        .field("f64", Schema.FLOAT64_SCHEMA)
        .field("b", Schema.BOOLEAN_SCHEMA)
        .field("s", Schema.STRING_SCHEMA)
        .field("by", Schema.BYTES_SCHEMA)
        .field("os", Schema.OPTIONAL_STRING_SCHEMA)
        .field("dec", Decimal.schema(2))
        .field("date", Date.SCHEMA)
        .field("time", Time.SCHEMA)
        .field("ts", Timestamp.SCHEMA)
        .field("arr", SchemaBuilder.array(Schema.OPTIONAL_INT64_SCHEMA).build())
        .field("smap", SchemaBuilder.map(Schema.STRING_SCHEMA, Schema.FLOAT64_SCHEMA).build())
        .field("imap", SchemaBuilder.map(Schema.INT32_SCHEMA, inner).optional().build())
        .field("inner", inner)
        .field("inner_again", inner)
        .field("u1", unnamed)
        .field("u2", SchemaBuilder.struct().field("y", Schema.BOOLEAN_SCHEMA).build())
        .build()
    )


def test_struct_with_every_type_round_trips() -> None:
    schema = all_types_struct()
    round_trip(schema)
    avro = connect_to_avro(schema)
    names = {f["name"]: f for f in avro["fields"]}
    assert names["inner_again"]["type"] == "com.example.Inner"  # reference by name
    imap = names["imap"]["type"][1]
    assert imap["type"] == "array"
    assert imap["items"]["name"] == "MapEntry"
    assert imap["items"]["namespace"] == "io.confluent.connect.avro"
    assert names["smap"]["type"]["type"] == "map"
    assert names["os"]["type"] == ["null", "string"] and names["os"]["default"] is None


def test_defaults_round_trip() -> None:
    inner = SchemaBuilder.struct().name("ns.Point").field("x", Schema.INT32_SCHEMA).build()
    point = Struct(inner).put("x", 7)
    schema = (
        SchemaBuilder.struct()
        .name("ns.Defaults")
        .field("i", SchemaBuilder.int32().default_value(5).build())
        .field("i8", SchemaBuilder.int8().default_value(-3).build())
        .field("s", SchemaBuilder.string().optional().default_value("x").build())
        .field("by", SchemaBuilder.bytes().default_value(b"\x00\xff").build())
        .field("f", SchemaBuilder.float64().default_value(1.5).build())
        .field("b", SchemaBuilder.boolean().default_value(True).build())
        .field("dec", Decimal.builder(2).default_value(decimal.Decimal("-1.25")).build())
        .field("date", Date.builder().default_value(dt.date(2024, 2, 29)).build())
        .field("time", Time.builder().default_value(dt.time(13, 14, 15, 16000)).build())
        .field(
            "ts",
            Timestamp.builder()
            .default_value(dt.datetime(2024, 1, 2, 3, 4, 5, tzinfo=dt.UTC))
            .build(),
        )
        .field("arr", SchemaBuilder.array(Schema.STRING_SCHEMA).default_value(["a", "b"]).build())
        .field(
            "m",
            SchemaBuilder.map(Schema.INT64_SCHEMA, Schema.STRING_SCHEMA)
            .default_value({1: "one"})
            .build(),
        )
        .field(
            "p",
            SchemaBuilder.struct()
            .name("ns.Point")
            .field("x", Schema.INT32_SCHEMA)
            .default_value(point)
            .build(),
        )
        .build()
    )
    avro = connect_to_avro(schema)
    fields = {f["name"]: f for f in avro["fields"]}
    assert fields["i"]["default"] == 5
    assert fields["s"]["type"] == ["string", "null"] and fields["s"]["default"] == "x"
    assert fields["by"]["default"] == "\x00\xff"
    assert fields["p"]["default"] == {"x": 7}
    round_trip(schema)
    top = SchemaBuilder.int64().default_value(42).build()
    assert connect_to_avro(top)["connect.default"] == 42
    round_trip(top)


def test_nested_arrays_and_maps() -> None:
    schema = SchemaBuilder.array(
        SchemaBuilder.map(
            Schema.STRING_SCHEMA,
            SchemaBuilder.array(SchemaBuilder.map(Schema.INT8_SCHEMA, Schema.BYTES_SCHEMA)),
        )
    ).build()
    round_trip(schema)
    two_entry_maps = (
        SchemaBuilder.struct()
        .name("x.Y")
        .field("a", SchemaBuilder.map(Schema.INT32_SCHEMA, Schema.STRING_SCHEMA).build())
        .field("b", SchemaBuilder.map(Schema.INT64_SCHEMA, Schema.STRING_SCHEMA).build())
        .field("c", SchemaBuilder.map(Schema.INT32_SCHEMA, Schema.STRING_SCHEMA).build())
        .build()
    )
    round_trip(two_entry_maps)


def test_invalid_field_name_and_conflicting_names() -> None:
    bad = SchemaBuilder.struct().name("x.Y").field("not-valid", Schema.INT32_SCHEMA).build()
    with pytest.raises(DataError, match="not-valid"):
        connect_to_avro(bad)
    a = SchemaBuilder.struct().name("x.A").field("f", Schema.INT32_SCHEMA).build()
    a2 = SchemaBuilder.struct().name("x.A").field("g", Schema.INT32_SCHEMA).build()
    both = SchemaBuilder.struct().name("x.B").field("a", a).field("b", a2).build()
    with pytest.raises(DataError, match=r"x\.A"):
        connect_to_avro(both)


def test_avro_only_types() -> None:
    enum = {"type": "enum", "name": "Color", "namespace": "x", "symbols": ["RED", "GREEN"]}
    schema = avro_to_connect(enum)
    assert schema.type is Type.STRING
    back = connect_to_avro(schema)
    assert back["type"] == "enum" and back["symbols"] == ["RED", "GREEN"]
    assert avro_to_connect(back) == schema
    fixed = {"type": "fixed", "name": "Md5", "namespace": "x", "size": 16}
    schema = avro_to_connect(fixed)
    assert schema.type is Type.BYTES
    back = connect_to_avro(schema)
    assert back["type"] == "fixed" and back["size"] == 16
    assert avro_to_connect(back) == schema
    micros = avro_to_connect({"type": "long", "logicalType": "timestamp-micros"})
    assert micros == Schema.INT64_SCHEMA
    assert avro_to_connect('"string"') == Schema.STRING_SCHEMA
    assert avro_to_connect("int") == Schema.INT32_SCHEMA


def test_unsupported_avro() -> None:
    with pytest.raises(DataError, match="union"):
        avro_to_connect(["int", "string"])
    recursive = {
        "type": "record",
        "name": "Node",
        "fields": [{"name": "next", "type": ["null", "Node"], "default": None}],
    }
    with pytest.raises(DataError, match="Recursive"):
        avro_to_connect(recursive)


@pytest.mark.parametrize("path", sorted(SCHEMAS_DIR.glob("*.avsc")), ids=lambda p: p.name)
def test_quickstart_schemas(path: Path) -> None:
    avro = json.loads(path.read_text())
    fastavro.parse_schema(avro)
    connect = avro_to_connect(avro)
    assert connect.type is Type.STRUCT
    assert connect.name == f"{avro['namespace']}.{avro['name']}"
    back = connect_to_avro(connect)
    fastavro.parse_schema(back)
    assert avro_to_connect(back) == connect


def test_all_quickstarts_present() -> None:
    names = {p.name for p in SCHEMAS_DIR.glob("*.avsc")}
    assert {
        "users.avsc",
        "pageviews.avsc",
        "orders.avsc",
        "clickstream.avsc",
        "inventory.avsc",
        "stock_trades.avsc",
    } <= names


# ------------------------------------------------------------------------------- hypothesis

_leaf = st.sampled_from(
    [
        *PRIMITIVES,
        Schema.OPTIONAL_INT32_SCHEMA,
        Schema.OPTIONAL_BYTES_SCHEMA,
        Decimal.schema(4),
        Date.SCHEMA,
        Time.SCHEMA,
        Timestamp.SCHEMA,
    ]
)


def _structs(children: st.SearchStrategy[Schema]) -> st.SearchStrategy[Schema]:
    names = st.lists(st.from_regex(r"[a-z][a-z0-9_]{0,6}", fullmatch=True), unique=True)

    def build(args: tuple[list[str], list[Schema], bool]) -> Schema:
        field_names, schemas, optional = args
        builder = SchemaBuilder.struct()
        for name, s in zip(field_names, schemas, strict=False):
            builder.field(name, s)
        if optional:
            builder.optional()
        return builder.build()

    return st.tuples(names, st.lists(children, max_size=5), st.booleans()).map(build)


_schemas = st.recursive(
    _leaf,
    lambda children: st.one_of(
        children.map(lambda s: SchemaBuilder.array(s).build()),
        children.map(lambda s: SchemaBuilder.map(Schema.STRING_SCHEMA, s).build()),
        children.map(lambda s: SchemaBuilder.map(Schema.INT16_SCHEMA, s).optional().build()),
        _structs(children),
    ),
    max_leaves=12,
)


@settings(max_examples=150, deadline=None)
@given(_schemas)
def test_random_schemas_round_trip(schema: Schema) -> None:
    round_trip(schema)
