"""ProtobufConverter against the built-in registry (in memory, over real HTTP), and against
confluent-kafka's own ProtobufSerializer / ProtobufDeserializer in both directions."""

from __future__ import annotations

import datetime as dt
import decimal
import random
import warnings
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from google.protobuf.message_factory import GetMessageClass

from connectrt.converters.protobuf import ProtobufConverter
from connectrt.converters.protobuf.descriptors import build_pool
from connectrt.converters.protobuf.proto_text import parse_proto
from connectrt.converters.protobuf.wire import decode_indexes, encode_indexes
from connectrt.data import Decimal, Schema, SchemaBuilder, Struct, Timestamp
from connectrt.errors import DataError
from connectrt.testing.schema_registry import memory_registry

with warnings.catch_warnings():
    warnings.simplefilter("ignore")  # authlib's httpx deprecation notice on import
    from confluent_kafka.schema_registry import SchemaRegistryClient
    from confluent_kafka.schema_registry.common.protobuf import (
        decimal_to_protobuf,
        protobuf_to_decimal,
    )
    from confluent_kafka.schema_registry.protobuf import (
        ProtobufDeserializer,
        ProtobufSerializer,
    )
    from confluent_kafka.serialization import MessageField, SerializationContext


@pytest.fixture(scope="module")
def registry() -> Iterator[str]:
    with memory_registry() as (_, url):
        yield url


_OPEN: list[ProtobufConverter] = []


@pytest.fixture(autouse=True)
def _close_converters() -> Iterator[None]:
    yield
    while _OPEN:
        _OPEN.pop().close()


def make(url: str, **extra: Any) -> ProtobufConverter:
    conv = ProtobufConverter()
    _OPEN.append(conv)
    conv.configure({"schema.registry.url": url, **extra}, False)
    return conv


# A schema as a producer outside connectrt writes it: nested types, wrappers (optionals),
# repeated fields, maps, a oneof, an enum and a timestamp.
ORDER_PROTO = """
syntax = "proto3";
package shop.v1;

import "confluent/meta.proto";
import "confluent/types/decimal.proto";
import "google/protobuf/timestamp.proto";
import "google/protobuf/wrappers.proto";

message Order {
  int64 id = 1;
  string customer = 2;
  google.protobuf.StringValue note = 3;
  google.protobuf.Int32Value priority = 4;
  repeated Line lines = 5;
  map<string, string> labels = 6;
  map<int32, Line> by_position = 7;
  repeated double weights = 8;
  Status status = 9;
  google.protobuf.Timestamp placed = 10;
  Address ship_to = 11;
  oneof payment {
    string card = 12;
    int64 account = 13;
  }
  bool gift = 14;
  bytes token = 15;
  confluent.type.Decimal amount = 16 [
    (confluent.field_meta) = { params: [{ key: "scale", value: "2" }] }
  ];

  message Line {
    string sku = 1;
    int32 quantity = 2;
    google.protobuf.DoubleValue discount = 3;
  }
  enum Status {
    NEW = 0;
    PAID = 1;
    SHIPPED = 2;
  }
}

message Address {
  string city = 1;
  google.protobuf.StringValue zip = 2;
}
"""


def _order_class() -> Any:
    _pool, file = build_pool(parse_proto(ORDER_PROTO, "shop/v1/order.proto"), {})
    return GetMessageClass(file.message_types_by_name["Order"])


def _order(cls: Any, rng: random.Random, i: int) -> Any:
    msg = cls()
    msg.id = rng.randint(-(2**63), 2**63 - 1)
    msg.customer = f"customer {i} é{chr(0x1F600)}"
    if rng.random() < 0.5:
        msg.note.value = f"note {i}"
    if rng.random() < 0.5:
        msg.priority.value = rng.randint(-5, 5)
    for j in range(rng.randint(0, 3)):
        line = msg.lines.add(sku=f"s{j}", quantity=rng.randint(0, 100))
        if rng.random() < 0.5:
            line.discount.value = rng.uniform(0, 1)
    for j in range(rng.randint(0, 3)):
        msg.labels[f"k{j}"] = f"v{rng.randint(0, 9)}"
    for j in range(rng.randint(0, 2)):
        msg.by_position[j].sku = f"p{j}"
    msg.weights.extend(rng.uniform(-1e6, 1e6) for _ in range(rng.randint(0, 3)))
    msg.status = rng.randint(0, 2)
    msg.placed.FromMilliseconds(1_700_000_000_000 + i * 1000)
    if rng.random() < 0.7:
        msg.ship_to.city = f"c{i}"
        if rng.random() < 0.5:
            msg.ship_to.zip.value = f"{i:05d}"
    choice = rng.random()
    if choice < 0.33:
        msg.card = f"4111-{i}"
    elif choice < 0.66:
        msg.account = i
    msg.gift = rng.random() < 0.5
    msg.token = rng.randbytes(rng.randint(0, 8))
    # Python's helper writes precision 0 and the scale it is given.
    amount = decimal.Decimal(rng.randint(-(10**15), 10**15)).scaleb(-2)
    msg.amount.MergeFromString(decimal_to_protobuf(amount, 2).SerializeToString())
    return msg


def _without_precision(msg: Any) -> Any:
    """A copy of an Order with its Decimal's precision cleared: the Python helper writes 0,
    connectrt (as Confluent's Java converter) the value's precision."""
    copy = type(msg)()
    copy.CopyFrom(msg)
    copy.amount.ClearField("precision")
    return copy


def _ctx(topic: str) -> SerializationContext:
    return SerializationContext(topic, MessageField.VALUE)


def test_we_read_and_write_back_1000_records_of_the_confluent_serializer(registry: str) -> None:
    cls = _order_class()
    client = SchemaRegistryClient({"url": registry})
    serializer = ProtobufSerializer(cls, client, {"use.deprecated.format": False})
    deserializer = ProtobufDeserializer(cls, {"use.deprecated.format": False})
    reader = make(registry, **{"wrapper.for.nullables": "true"})
    rng = random.Random(36)
    originals = [_order(cls, rng, i) for i in range(1000)]
    for i, original in enumerate(originals):
        data = serializer(original, _ctx("orders-in"))
        assert data is not None
        sav = reader.to_connect_data("orders-in", data)
        assert isinstance(sav.value, Struct)
        again = reader.from_connect_data("orders-out", sav.schema, sav.value)
        assert again is not None
        back = deserializer(again, _ctx("orders-out"))
        assert _without_precision(back) == _without_precision(original), f"record {i} differs"
        assert protobuf_to_decimal(back.amount) == protobuf_to_decimal(original.amount)
    # What a Connect sink sees: wrappers as optional primitives, the oneof as a union struct.
    first = reader.to_connect_data("orders-in", serializer(originals[0], _ctx("orders-in")))
    schema = first.schema
    assert schema is not None and schema.name == "Order"
    assert [f.name for f in schema.fields][:2] == ["payment_0", "id"]
    note = schema.field("note")
    assert note is not None and note.schema.type.name == "STRING" and note.schema.optional
    union = schema.field("payment_0")
    assert union is not None
    assert union.schema.name == "io.confluent.connect.protobuf.Union.payment"
    status = schema.field("status")
    assert status is not None
    assert (status.schema.parameters or {})["io.confluent.connect.protobuf.Enum.SHIPPED"] == "2"
    placed = schema.field("placed")
    assert placed is not None and placed.schema.name == Timestamp.LOGICAL_NAME
    # The Python serializer registered its own spelling of the decimal import; it read above.
    registered = httpx.get(f"{registry}/subjects/orders-in-value/versions/latest").json()
    assert 'import "confluent/types/decimal.proto";' in registered["schema"]
    amount = schema.field("amount")
    assert amount is not None and amount.schema.name == Decimal.LOGICAL_NAME
    assert Decimal.scale(amount.schema) == 2
    client.__exit__()


def _connect_order_schema() -> Schema:
    line = (
        SchemaBuilder.struct()
        .name("Line")
        .field("sku", Schema.STRING_SCHEMA)
        .field("qty", Schema.OPTIONAL_INT16_SCHEMA)
        .field("discount", Schema.OPTIONAL_FLOAT64_SCHEMA)
        .build()
    )
    return (
        SchemaBuilder.struct()
        .name("com.example.Invoice")
        .field("id", Schema.INT64_SCHEMA)
        .field("small", Schema.INT8_SCHEMA)
        .field("note", Schema.OPTIONAL_STRING_SCHEMA)
        .field("ratio", Schema.OPTIONAL_FLOAT32_SCHEMA)
        .field("active", Schema.BOOLEAN_SCHEMA)
        .field("blob", Schema.OPTIONAL_BYTES_SCHEMA)
        .field("tags", SchemaBuilder.array(Schema.STRING_SCHEMA).build())
        .field("attrs", SchemaBuilder.map(Schema.STRING_SCHEMA, Schema.INT32_SCHEMA).build())
        .field("lines", SchemaBuilder.array(line).build())
        .field(
            "main",
            SchemaBuilder.struct()
            .name("Main")
            .field("sku", Schema.STRING_SCHEMA)
            .optional()
            .build(),
        )
        .field("seen", Timestamp.builder().optional().build())
        .field("total", Decimal.builder(2).build())
        .field("rebate", Decimal.builder(4).optional().build())
        .build()
    )


def _invoice(schema: Schema, rng: random.Random, i: int) -> Struct:
    line_schema = schema.field("lines").schema.value_schema  # type: ignore[union-attr]
    main_schema = schema.field("main").schema  # type: ignore[union-attr]
    assert line_schema is not None
    s = Struct(schema)
    s.put("id", rng.randint(-(2**63), 2**63 - 1))
    s.put("small", rng.randint(-128, 127))
    s.put("note", rng.choice([None, f"n{i}"]))
    s.put("ratio", rng.choice([None, 0.5, -2.25]))
    s.put("active", rng.random() < 0.5)
    s.put("blob", rng.choice([None, rng.randbytes(rng.randint(0, 8))]))
    s.put("tags", [f"t{j}" for j in range(rng.randint(0, 3))])
    s.put("attrs", {f"k{j}": rng.randint(-5, 5) for j in range(rng.randint(0, 3))})
    s.put(
        "lines",
        [
            Struct(line_schema)
            .put("sku", f"s{j}")
            .put("qty", rng.choice([None, j]))
            .put("discount", rng.choice([None, 0.25]))
            for j in range(rng.randint(0, 3))
        ],
    )
    s.put("main", rng.choice([None, Struct(main_schema).put("sku", f"m{i}")]))
    s.put(
        "seen",
        rng.choice([None, dt.datetime(2024, 1, 1, tzinfo=dt.UTC) + dt.timedelta(milliseconds=i)]),
    )
    s.put("total", decimal.Decimal(rng.randint(-(10**20), 10**20)).scaleb(-2))
    s.put("rebate", rng.choice([None, decimal.Decimal(rng.randint(0, 10**6)).scaleb(-4)]))
    return s


def _plain(value: Any) -> Any:
    if isinstance(value, Struct):
        return {f.name: _plain(value.get(f.name)) for f in value.schema.fields}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


def test_confluent_deserializer_reads_1000_records_we_write(registry: str) -> None:
    schema = _connect_order_schema()
    writer = make(registry, **{"wrapper.for.nullables": "true"})
    rng = random.Random(7)
    records = [_invoice(schema, rng, i) for i in range(1000)]
    first = writer.from_connect_data("invoices", schema, records[0])
    assert first is not None
    # The message class a Python consumer builds from the registered schema.
    info = httpx.get(f"{registry}/schemas/ids/{int.from_bytes(first[1:5], 'big')}").json()
    assert info["schemaType"] == "PROTOBUF" and "message Invoice" in info["schema"]
    assert 'import "confluent/type/decimal.proto";' in info["schema"]  # the Java converter's
    _pool, file = build_pool(parse_proto(info["schema"], "invoice.proto"), {})
    cls = GetMessageClass(file.message_types_by_name["Invoice"])
    client = SchemaRegistryClient({"url": registry})
    deserializer = ProtobufDeserializer(cls, {"use.deprecated.format": False})
    serializer = ProtobufSerializer(cls, client, {"use.deprecated.format": False})
    reader = make(registry, **{"wrapper.for.nullables": "true"})
    for i, record in enumerate(records):
        data = writer.from_connect_data("invoices", schema, record)
        message = deserializer(data, _ctx("invoices"))
        assert message.id == record.get("id")
        assert message.HasField("note") == (record.get("note") is not None)
        assert protobuf_to_decimal(message.total) == record.get("total")
        again = serializer(message, _ctx("invoices-copy"))
        back = reader.to_connect_data("invoices-copy", again)
        assert _plain(back.value) == _plain(record), f"record {i} differs after the round trip"
    client.__exit__()


def test_python_deserializer_given_a_registry_cannot_load_the_java_decimal_import(
    registry: str,
) -> None:
    """confluent-kafka 2.15's ProtobufDeserializer, when given a registry client, builds the
    writer's schema in a pool that holds ``confluent/types/decimal.proto`` only, so a schema
    importing the Java converter's ``confluent/type/decimal.proto`` (which connectrt writes)
    does not build; without a client (as above) the same bytes read. 2.16 reads it, but
    connectrt stays below 2.16 (pyproject.toml says why); docs/guide/converters.md says so."""
    schema = SchemaBuilder.struct().name("dec.Price").field("d", Decimal.builder(2).build()).build()
    writer = make(registry)
    data = writer.from_connect_data(
        "prices", schema, Struct(schema).put("d", decimal.Decimal("1.25"))
    )
    assert data is not None
    info = httpx.get(f"{registry}/schemas/ids/{int.from_bytes(data[1:5], 'big')}").json()
    _pool, file = build_pool(parse_proto(info["schema"], "price.proto"), {})
    cls = GetMessageClass(file.message_types_by_name["Price"])
    assert protobuf_to_decimal(
        ProtobufDeserializer(cls, {"use.deprecated.format": False})(data, _ctx("prices")).d
    ) == decimal.Decimal("1.25")
    client = SchemaRegistryClient({"url": registry})
    with_registry = ProtobufDeserializer(cls, {"use.deprecated.format": False}, client)
    with pytest.raises(TypeError, match=r"confluent/type/decimal\.proto"):
        with_registry(data, _ctx("prices"))
    client.__exit__()


def test_message_indexes_locate_nested_types() -> None:
    assert encode_indexes([0]) == b"\x00"
    for indexes in ([1], [0, 2], [3, 0, 1], [200]):
        data = encode_indexes(indexes)
        assert decode_indexes(data + b"rest", 0) == (tuple(indexes), len(data))
    assert encode_indexes([1, 0]) == bytes([4, 2, 0])  # zigzag: count 2, then 1, 0


def test_nested_message_written_by_confluent_reads_with_its_indexes(registry: str) -> None:
    _pool, file = build_pool(parse_proto(ORDER_PROTO, "shop/v1/order.proto"), {})
    line_cls = GetMessageClass(file.message_types_by_name["Order"].nested_types_by_name["Line"])
    client = SchemaRegistryClient({"url": registry})
    serializer = ProtobufSerializer(line_cls, client, {"use.deprecated.format": False})
    data = serializer(line_cls(sku="x", quantity=3), _ctx("lines"))
    assert data[5:7] == bytes([4, 0]) or data[5] != 0  # [0, 0]: Order's first nested type
    sav = make(registry).to_connect_data("lines", data)
    assert sav.schema is not None and sav.schema.name == "Line"
    assert sav.value.get("sku") == "x" and sav.value.get("quantity") == 3
    client.__exit__()


def test_errors(registry: str) -> None:
    conv = make(registry)
    with pytest.raises(DataError, match="magic byte"):
        conv.to_connect_data("t", b"\x01\x00\x00\x00\x01\x00")
    with pytest.raises(DataError, match="STRUCT at the root"):
        conv.from_connect_data("t", Schema.STRING_SCHEMA, "x")
    assert conv.to_connect_data("t", None).value is None
    assert conv.from_connect_data("t", Schema.STRING_SCHEMA, None) is None


def test_plugin_registered() -> None:
    from connectrt.runtime.plugins.catalog import BUNDLED_PLUGINS

    assert (
        "connectrt.converters.protobuf.ProtobufConverter",
        "io.confluent.connect.protobuf.ProtobufConverter",
        "converter",
    ) in BUNDLED_PLUGINS
