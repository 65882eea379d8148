"""connectors.arrow_batch: Connect schemas as Arrow types, Connect values as RecordBatches.

The values come from the JSON converter's batch path (what a sink's ``put`` receives), so the
structs, logical values and nested lists/maps are the real ones; each column read back from
Arrow must equal the Connect value it came from.
"""

from __future__ import annotations

import datetime as dt
import decimal
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from connectors.arrow_batch import (
    VALUE_COLUMN,
    ArrowBatchBuilder,
    SchemalessValueError,
    arrow_schema,
    arrow_type,
)
from connectrt.converters import JsonConverter
from connectrt.data import Date, Decimal, Schema, SchemaBuilder, Struct, Time, Timestamp
from connectrt.errors import DataError

ADDRESS = (
    SchemaBuilder.struct()
    .name("Address")
    .field("street", Schema.STRING_SCHEMA)
    .field("zip", Schema.OPTIONAL_INT32_SCHEMA)
    .optional()
    .build()
)
ORDER = (
    SchemaBuilder.struct()
    .name("Order")
    .field("id", Schema.INT64_SCHEMA)
    .field("small", Schema.OPTIONAL_INT8_SCHEMA)
    .field("ratio", Schema.OPTIONAL_FLOAT32_SCHEMA)
    .field("ok", Schema.BOOLEAN_SCHEMA)
    .field("blob", Schema.OPTIONAL_BYTES_SCHEMA)
    .field("amount", Decimal.builder(2).optional().build())
    .field("day", Date.builder().optional().build())
    .field("at_time", Time.builder().optional().build())
    .field("at", Timestamp.SCHEMA)
    .field("address", ADDRESS)
    .field("tags", SchemaBuilder.array(Schema.STRING_SCHEMA).optional().build())
    .field("homes", SchemaBuilder.array(ADDRESS).optional().build())
    .field("counts", SchemaBuilder.map(Schema.STRING_SCHEMA, Schema.INT64_SCHEMA).build())
    .field(
        "by_name",
        SchemaBuilder.map(Schema.STRING_SCHEMA, ADDRESS).optional().build(),
    )
    .build()
)
UTC = dt.UTC


def _address(street: str, zip_code: int | None) -> Struct:
    return Struct(ADDRESS).put("street", street).put("zip", zip_code)


def _order(i: int) -> Struct:
    order = Struct(ORDER)
    order.put("id", i).put("ok", i % 2 == 0).put("at", dt.datetime(2024, 1, 1, tzinfo=UTC))
    order.put("counts", {"a": i, "b": 2 * i})
    if i % 3:
        order.put("small", i % 100).put("ratio", 0.5).put("blob", b"\x00\x01")
        order.put("amount", decimal.Decimal(f"{i}.25")).put("day", dt.date(2024, 2, i % 28 + 1))
        order.put("at_time", dt.time(12, 30, 1, 5000))
        order.put("address", _address(f"street {i}", None if i % 2 else i))
        order.put("tags", ["x", f"t{i}"])
        order.put("homes", [_address("h", 1), _address("k", None)])
        order.put("by_name", {"home": _address("n", 7)})
    return order


def _through_json(values: list[Struct]) -> list[Any]:
    """The values as a sink receives them: serialized and read back by the batch path."""
    converter = JsonConverter()
    converter.configure({"schemas.enable": "true"}, is_key=False)
    data = [converter.from_connect_data("t", ORDER, v) for v in values]
    columns = converter.to_connect_columns("t", data)
    assert all(s == ORDER for s in columns.schemas)
    return list(columns.values)


def _expected(value: Any) -> Any:
    if isinstance(value, Struct):
        return {f.name: _expected(value.get(f)) for f in value.schema.fields}
    if isinstance(value, list):
        return [_expected(v) for v in value]
    if isinstance(value, dict):
        return [(k, _expected(v)) for k, v in value.items()]
    return value


def test_types_of_the_logical_and_nested_schemas() -> None:
    schema = arrow_schema(ORDER)
    assert schema.field("id").type == pa.int64() and not schema.field("id").nullable
    assert schema.field("small").type == pa.int8() and schema.field("small").nullable
    assert schema.field("ratio").type == pa.float32()
    assert schema.field("blob").type == pa.binary()
    assert schema.field("amount").type == pa.decimal128(38, 2)
    assert schema.field("day").type == pa.date32()
    assert schema.field("at_time").type == pa.time32("ms")
    assert schema.field("at").type == pa.timestamp("ms", tz="UTC")
    address = schema.field("address").type
    assert pa.types.is_struct(address) and address.field("zip").nullable
    assert not address.field("street").nullable
    assert schema.field("tags").type == pa.list_(pa.field("element", pa.string(), False))
    assert pa.types.is_map(schema.field("counts").type)
    # Iceberg's units
    assert arrow_type(Timestamp.schema(), unit="us") == pa.timestamp("us", tz="UTC")
    assert arrow_type(Time.schema(), unit="us") == pa.time64("us")
    # precision from the parameter Debezium and the Avro converter set; > 38 is decimal256
    wide = Decimal.builder(4).parameter("connect.decimal.precision", "50").build()
    assert arrow_type(wide) == pa.decimal256(50, 4)
    narrow = Decimal.builder(4).parameter("connect.decimal.precision", "10").build()
    assert arrow_type(narrow) == pa.decimal128(10, 4)


def test_a_batch_of_structs_reads_back_equal() -> None:
    originals = [_order(i) for i in range(1, 40)]
    values = _through_json(originals)
    batch = ArrowBatchBuilder(ORDER).build(values)
    assert batch.num_rows == len(originals)
    assert batch.schema == arrow_schema(ORDER)
    rows = batch.to_pylist()
    for row, original in zip(rows, originals, strict=True):
        assert row == _expected(original)


def test_parquet_keeps_the_types(tmp_path: Any) -> None:
    batch = ArrowBatchBuilder(ORDER).build(_through_json([_order(i) for i in range(1, 10)]))
    path = tmp_path / "x.parquet"
    pq.write_table(pa.Table.from_batches([batch]), path)
    table = pq.read_table(path)
    assert table.schema.field("amount").type == pa.decimal128(38, 2)
    assert table.schema.field("at").type == pa.timestamp("ms", tz="UTC")
    assert table.column("amount").to_pylist()[1] == decimal.Decimal("2.25")
    assert table.num_rows == 9
    # a null optional struct with required fields reads back null (row 3), a set one as set
    assert table.column("address").to_pylist()[2] is None
    assert table.column("address").to_pylist()[0] == {"street": "street 1", "zip": None}


def test_primitive_values_are_one_column() -> None:
    builder = ArrowBatchBuilder(Schema.STRING_SCHEMA)
    batch = builder.build(("a", "b"))
    assert batch.schema.names == [VALUE_COLUMN]
    assert batch.column(0).to_pylist() == ["a", "b"]
    arrays = ArrowBatchBuilder(SchemaBuilder.array(Schema.INT32_SCHEMA).build())
    assert arrays.build([[1, 2], []]).column(0).to_pylist() == [[1, 2], []]


def test_empty_batch() -> None:
    assert ArrowBatchBuilder(ORDER).build([]).num_rows == 0


def test_schemaless_values_are_refused_with_a_readable_error() -> None:
    with pytest.raises(SchemalessValueError, match="no value schema"):
        ArrowBatchBuilder(None)
    assert issubclass(SchemalessValueError, DataError)


def test_a_default_fills_a_missing_required_field() -> None:
    schema = (
        SchemaBuilder.struct()
        .field("n", SchemaBuilder.int32().default_value(7).build())
        .field("s", Schema.STRING_SCHEMA)
        .build()
    )
    struct = Struct(schema).put("s", "x")
    assert ArrowBatchBuilder(schema).build([struct]).to_pylist() == [{"n": 7, "s": "x"}]


def test_failing_values_are_found_one_by_one() -> None:
    schema = SchemaBuilder.struct().field("s", Schema.STRING_SCHEMA).build()
    good = Struct(schema).put("s", "fine")
    missing = Struct(schema)  # required field unset: no value to write
    builder = ArrowBatchBuilder(schema)
    values = [good, missing, good, None, "not a struct"]
    with pytest.raises(DataError):
        builder.build(values)
    kept, failed = builder.split_failing(values)
    assert kept == [0, 2]
    assert [i for i, _ in failed] == [1, 3, 4]
    assert "'s' is required" in str(failed[0][1])
    assert builder.build([values[i] for i in kept]).num_rows == 2


def test_a_decimal_that_does_not_fit_fails_its_record_only() -> None:
    schema = SchemaBuilder.struct().field("d", Decimal.builder(1).build()).build()
    builder = ArrowBatchBuilder(schema)
    ok = Struct(schema).put("d", decimal.Decimal("1.5"))
    too_precise = Struct(schema)
    too_precise._values[0] = decimal.Decimal("1.55")  # bypasses put's rescale check
    kept, failed = builder.split_failing([ok, too_precise])
    assert kept == [0] and [i for i, _ in failed] == [1]
