"""Schema, SchemaBuilder, logical types and validate_value."""

from __future__ import annotations

import datetime as dt
import decimal

import pytest

from connectrt.data import (
    Date,
    Decimal,
    Field,
    Schema,
    SchemaBuilder,
    Struct,
    Time,
    Timestamp,
    Type,
    validate_value,
)
from connectrt.errors import DataError, SchemaBuilderError

D = decimal.Decimal


# -- Type -------------------------------------------------------------------------------------


def test_type_values_are_kafka_names() -> None:
    assert Type.INT8.value == "int8"
    assert Type.FLOAT32.value == "float32"
    assert Type.STRUCT.value == "struct"
    assert len(Type) == 12


def test_type_is_primitive() -> None:
    assert Type.INT64.is_primitive
    assert Type.BYTES.is_primitive
    assert not Type.ARRAY.is_primitive
    assert not Type.MAP.is_primitive
    assert not Type.STRUCT.is_primitive


# -- predefined schemas -----------------------------------------------------------------------


@pytest.mark.parametrize(
    "name", ["INT8", "INT16", "INT32", "INT64", "FLOAT32", "FLOAT64", "BOOLEAN", "STRING", "BYTES"]
)
def test_predefined_schemas(name: str) -> None:
    required = getattr(Schema, f"{name}_SCHEMA")
    optional = getattr(Schema, f"OPTIONAL_{name}_SCHEMA")
    assert required.type is Type[name]
    assert optional.type is Type[name]
    assert required.optional is False
    assert optional.optional is True
    assert required.default is None and required.name is None
    assert required != optional


# -- building ---------------------------------------------------------------------------------


def _user_schema() -> Schema:
    return (
        SchemaBuilder.struct()
        .name("com.example.User")
        .version(3)
        .doc("a user")
        .field("id", Schema.INT64_SCHEMA)
        .field("email", SchemaBuilder.string().optional())
        .build()
    )


def test_struct_schema_fields_and_lookup() -> None:
    schema = _user_schema()
    assert schema.type is Type.STRUCT
    assert schema.name == "com.example.User"
    assert schema.version == 3
    assert schema.doc == "a user"
    assert [f.name for f in schema.fields] == ["id", "email"]
    assert schema.field("email") == Field("email", 1, Schema.OPTIONAL_STRING_SCHEMA)
    assert schema.field("missing") is None


def test_field_lookup_on_non_struct_raises() -> None:
    with pytest.raises(DataError, match="non-struct"):
        Schema.INT32_SCHEMA.field("x")


def test_non_struct_has_no_fields() -> None:
    assert Schema.STRING_SCHEMA.fields == ()


def test_schema_equality_and_hash_by_content() -> None:
    a, b = _user_schema(), _user_schema()
    assert a is not b
    assert a == b
    assert hash(a) == hash(b)
    assert {a: 1}[b] == 1
    other = SchemaBuilder.struct().name("com.example.User").version(3).build()
    assert a != other


def test_schema_equality_includes_default_and_parameters() -> None:
    a = SchemaBuilder.int32().default_value(1).build()
    b = SchemaBuilder.int32().default_value(2).build()
    assert a != b
    p1 = SchemaBuilder.string().parameter("k", "v").build()
    p2 = SchemaBuilder.string().parameter("k", "w").build()
    assert p1 != p2
    assert SchemaBuilder.boolean().default_value(True).build() != Schema.BOOLEAN_SCHEMA


def test_schema_is_immutable() -> None:
    schema = _user_schema()
    with pytest.raises(AttributeError):
        schema.name = "other"  # type: ignore[misc]
    with pytest.raises(AttributeError):
        schema.foo = 1  # type: ignore[attr-defined]
    params = SchemaBuilder.string().parameter("a", "b").build().parameters
    assert params is not None
    with pytest.raises(TypeError):
        params["a"] = "c"  # type: ignore[index]


def test_array_and_map_builders() -> None:
    arr = SchemaBuilder.array(Schema.STRING_SCHEMA).optional().build()
    assert arr.type is Type.ARRAY and arr.value_schema == Schema.STRING_SCHEMA and arr.optional
    m = SchemaBuilder.map(Schema.STRING_SCHEMA, SchemaBuilder.int32()).build()
    assert m.key_schema == Schema.STRING_SCHEMA
    assert m.value_schema == Schema.INT32_SCHEMA


def test_array_without_items_is_an_error() -> None:
    with pytest.raises(SchemaBuilderError, match="ARRAY"):
        SchemaBuilder(Type.ARRAY).build()
    with pytest.raises(SchemaBuilderError, match="MAP"):
        SchemaBuilder(Type.MAP).build()


def test_builder_rejects_non_type() -> None:
    with pytest.raises(SchemaBuilderError):
        SchemaBuilder("int32")  # type: ignore[arg-type]


def test_setting_attribute_twice_to_different_value_fails() -> None:
    builder = SchemaBuilder.int32().name("a")
    builder.name("a")  # same value is fine
    with pytest.raises(SchemaBuilderError, match="name has already been set"):
        builder.name("b")
    with pytest.raises(SchemaBuilderError, match="optional has already been set"):
        SchemaBuilder.int32().optional().required()
    with pytest.raises(SchemaBuilderError, match="version"):
        SchemaBuilder.int32().version(1).version(2)
    with pytest.raises(SchemaBuilderError, match="doc"):
        SchemaBuilder.int32().doc("x").doc("y")
    with pytest.raises(SchemaBuilderError, match="default"):
        SchemaBuilder.int32().default_value(1).default_value(2)


def test_duplicate_field_is_an_error() -> None:
    builder = SchemaBuilder.struct().field("a", Schema.INT32_SCHEMA)
    with pytest.raises(SchemaBuilderError, match="duplication a"):
        builder.field("a", Schema.STRING_SCHEMA)


def test_field_on_non_struct_is_an_error() -> None:
    with pytest.raises(SchemaBuilderError, match="Cannot create fields on type INT32"):
        SchemaBuilder.int32().field("a", Schema.INT32_SCHEMA)


def test_parameters_must_be_strings() -> None:
    with pytest.raises(SchemaBuilderError):
        SchemaBuilder.string().parameter("scale", 2)  # type: ignore[arg-type]
    schema = SchemaBuilder.string().parameters({"a": "1", "b": "2"}).build()
    assert dict(schema.parameters or {}) == {"a": "1", "b": "2"}


@pytest.mark.parametrize(
    ("builder", "default"),
    [
        (SchemaBuilder.int8(), 300),
        (SchemaBuilder.int32(), "5"),
        (SchemaBuilder.int64(), True),
        (SchemaBuilder.boolean(), 1),
        (SchemaBuilder.string(), 5),
        (SchemaBuilder.bytes(), "abc"),
        (SchemaBuilder.float64(), "1.0"),
        (SchemaBuilder.array(Schema.INT32_SCHEMA), [1, "x"]),
        (Decimal.builder(2), 1.5),
        (Decimal.builder(2), D("1.555")),
        (Date.builder(), 5),
    ],
)
def test_invalid_default_values_raise(builder: SchemaBuilder, default: object) -> None:
    with pytest.raises(SchemaBuilderError, match="Invalid default value"):
        builder.default_value(default)


def test_valid_default_values() -> None:
    assert SchemaBuilder.int8().default_value(-128).build().default == -128
    assert SchemaBuilder.float32().default_value(1).build().default == 1
    assert Decimal.builder(2).default_value(D("1.50")).build().default == D("1.50")
    day = dt.date(2020, 2, 29)
    assert Date.builder().default_value(day).build().default == day
    arr = SchemaBuilder.array(Schema.STRING_SCHEMA).default_value(["a"]).build()
    assert arr.default == ["a"]


# -- logical types ----------------------------------------------------------------------------


def test_decimal_schema_shape() -> None:
    schema = Decimal.schema(2)
    assert schema.type is Type.BYTES
    assert schema.name == "org.apache.kafka.connect.data.Decimal" == Decimal.LOGICAL_NAME
    assert schema.version == 1
    assert dict(schema.parameters or {}) == {"scale": "2"}
    assert Decimal.scale(schema) == 2


@pytest.mark.parametrize(
    ("value", "scale", "encoded"),
    [
        (D("1.56"), 2, b"\x00\x9c"),
        (D("-1.56"), 2, b"\xff\x64"),
        (D("0"), 0, b"\x00"),
        (D("1.27"), 2, b"\x7f"),
        (D("-1.28"), 2, b"\x80"),
        (D("-1.29"), 2, b"\xff\x7f"),
        (D("1.5"), 2, b"\x00\x96"),  # exact rescale to 1.50
        (D("1E+3"), -3, b"\x01"),
    ],
)
def test_decimal_two_complement(value: decimal.Decimal, scale: int, encoded: bytes) -> None:
    schema = Decimal.schema(scale)
    assert Decimal.from_logical(schema, value) == encoded
    assert Decimal.to_logical(schema, encoded) == value


def test_decimal_to_logical_keeps_scale_and_precision() -> None:
    schema = Decimal.schema(4)
    big = D("123456789012345678901234567890123.4567")
    back = Decimal.to_logical(schema, Decimal.from_logical(schema, big))
    assert back == big
    assert back.as_tuple().exponent == -4


def test_decimal_lossy_rescale_raises() -> None:
    with pytest.raises(DataError, match="scale 2"):
        Decimal.from_logical(Decimal.schema(2), D("1.555"))
    with pytest.raises(DataError):
        Decimal.from_logical(Decimal.schema(2), D("NaN"))


def test_date_conversions() -> None:
    assert Date.from_logical(Date.SCHEMA, dt.date(1970, 1, 1)) == 0
    assert Date.from_logical(Date.SCHEMA, dt.date(2024, 1, 1)) == 19723
    assert Date.to_logical(Date.SCHEMA, -1) == dt.date(1969, 12, 31)
    midnight = dt.datetime(2024, 1, 1, tzinfo=dt.UTC)
    assert Date.from_logical(Date.SCHEMA, midnight) == 19723
    with pytest.raises(DataError, match="time fields"):
        Date.from_logical(Date.SCHEMA, dt.datetime(2024, 1, 1, 12))
    assert Date.schema().name == "org.apache.kafka.connect.data.Date"
    assert Date.schema().type is Type.INT32 and Date.schema().version == 1


def test_time_conversions() -> None:
    assert Time.from_logical(Time.SCHEMA, dt.time(1, 2, 3, 4000)) == 3_723_004
    assert Time.from_logical(Time.SCHEMA, dt.time(0, 0, 0, 999)) == 0  # truncated to millis
    assert Time.to_logical(Time.SCHEMA, 3_723_004) == dt.time(1, 2, 3, 4000)
    with pytest.raises(DataError):
        Time.to_logical(Time.SCHEMA, 86_400_000)
    plus_one = dt.time(1, 0, tzinfo=dt.timezone(dt.timedelta(hours=1)))
    assert Time.from_logical(Time.SCHEMA, plus_one) == 0


def test_timestamp_conversions() -> None:
    aware = dt.datetime(2024, 1, 1, 0, 0, 0, 123000, tzinfo=dt.UTC)
    assert Timestamp.from_logical(Timestamp.SCHEMA, aware) == 1_704_067_200_123
    naive = dt.datetime(2024, 1, 1, 0, 0, 0, 123000)
    assert Timestamp.from_logical(Timestamp.SCHEMA, naive) == 1_704_067_200_123
    other_tz = dt.datetime(2024, 1, 1, 1, tzinfo=dt.timezone(dt.timedelta(hours=1)))
    assert Timestamp.from_logical(Timestamp.SCHEMA, other_tz) == 1_704_067_200_000
    back = Timestamp.to_logical(Timestamp.SCHEMA, 1_704_067_200_123)
    assert back == aware and back.tzinfo is dt.UTC
    assert Timestamp.SCHEMA.type is Type.INT64
    with pytest.raises(DataError):
        Timestamp.to_logical(Timestamp.SCHEMA, 10**18)


def test_timestamp_to_logical_is_exact_across_the_range() -> None:
    """The fast float path agrees with exact timedelta arithmetic to the microsecond, around
    its limits and for negative values; non-numbers and out-of-range values are DataErrors."""
    import random

    epoch = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
    limit = (1 << 32) * 1000
    rng = random.Random(7)
    samples = [rng.randrange(-limit, limit) for _ in range(20_000)]
    samples += [0, 1, -1, 999, -999, limit - 1, -limit + 1, limit, -limit, limit + 1]
    samples += [253_402_300_799_999, -62_135_596_800_000]  # 9999-12-31T23:59:59.999, 0001-01-01
    for ms in samples:
        got = Timestamp.to_logical(Timestamp.SCHEMA, ms)
        assert got == epoch + dt.timedelta(milliseconds=ms), ms
        assert got.tzinfo is dt.UTC
        assert Timestamp.from_logical(Timestamp.SCHEMA, got) == ms
    for bad in (253_402_300_800_000, -62_135_596_800_001, "1", None):
        with pytest.raises(DataError):
            Timestamp.to_logical(Timestamp.SCHEMA, bad)  # type: ignore[arg-type]


# -- validate_value ---------------------------------------------------------------------------


def test_validate_message_names_path_and_type() -> None:
    with pytest.raises(DataError) as info:
        validate_value(Schema.INT32_SCHEMA, "x", "user.age")
    assert str(info.value) == "Invalid value for field 'user.age': expected INT32, got str"


@pytest.mark.parametrize(
    ("schema", "value"),
    [
        (Schema.INT8_SCHEMA, 128),
        (Schema.INT16_SCHEMA, -32769),
        (Schema.INT32_SCHEMA, 2**31),
        (Schema.INT64_SCHEMA, 2**63),
        (Schema.INT32_SCHEMA, True),
        (Schema.INT32_SCHEMA, 1.0),
        (Schema.FLOAT64_SCHEMA, "1.0"),
        (Schema.FLOAT64_SCHEMA, True),
        (Schema.BOOLEAN_SCHEMA, 1),
        (Schema.STRING_SCHEMA, b"x"),
        (Schema.BYTES_SCHEMA, "x"),
        (SchemaBuilder.array(Schema.INT32_SCHEMA).build(), {1}),
        (SchemaBuilder.map(Schema.STRING_SCHEMA, Schema.INT32_SCHEMA).build(), [("a", 1)]),
        (Decimal.schema(2), 1.5),
        (Date.SCHEMA, "2024-01-01"),
        (Time.SCHEMA, 5),
        (Timestamp.SCHEMA, dt.date(2024, 1, 1)),
        (Schema.INT32_SCHEMA, None),
    ],
)
def test_validate_rejects(schema: Schema, value: object) -> None:
    with pytest.raises(DataError, match="Invalid value"):
        validate_value(schema, value)


@pytest.mark.parametrize(
    ("schema", "value"),
    [
        (Schema.INT8_SCHEMA, -128),
        (Schema.INT64_SCHEMA, 2**63 - 1),
        (Schema.FLOAT32_SCHEMA, 3),
        (Schema.FLOAT64_SCHEMA, 2.5),
        (Schema.BOOLEAN_SCHEMA, False),
        (Schema.BYTES_SCHEMA, bytearray(b"x")),
        (Schema.BYTES_SCHEMA, memoryview(b"x")),
        (Schema.OPTIONAL_INT32_SCHEMA, None),
        (SchemaBuilder.int32().default_value(3).build(), None),
        (SchemaBuilder.array(Schema.INT32_SCHEMA).build(), (1, 2)),
        (Decimal.schema(2), D("1.5")),
        (Date.SCHEMA, dt.date(2024, 1, 1)),
        (Time.SCHEMA, dt.time(1, 2)),
        (Timestamp.SCHEMA, dt.datetime(2024, 1, 1)),
    ],
)
def test_validate_accepts(schema: Schema, value: object) -> None:
    validate_value(schema, value)


def test_validate_nested_paths() -> None:
    arr = SchemaBuilder.array(Schema.INT32_SCHEMA).build()
    with pytest.raises(DataError, match=r"'tags\[1\]': expected INT32, got str"):
        validate_value(arr, [1, "two"], "tags")
    m = SchemaBuilder.map(Schema.STRING_SCHEMA, Schema.INT32_SCHEMA).build()
    with pytest.raises(DataError, match=r"'counts\['a'\]': expected INT32"):
        validate_value(m, {"a": "x"}, "counts")
    with pytest.raises(DataError, match="expected STRING, got int"):
        validate_value(m, {1: 1}, "counts")


def test_validate_struct_schema_must_match() -> None:
    a = SchemaBuilder.struct().field("x", Schema.INT32_SCHEMA).build()
    b = SchemaBuilder.struct().field("y", Schema.INT32_SCHEMA).build()
    with pytest.raises(DataError, match="does not match"):
        validate_value(a, Struct(b).put("y", 1), "s")
    with pytest.raises(DataError, match="expected STRUCT, got dict"):
        validate_value(a, {"x": 1}, "s")


# -- Schema.replace ---------------------------------------------------------------------------


def test_replace_changes_what_it_names_and_keeps_the_rest() -> None:
    schema = (
        SchemaBuilder.struct()
        .name("com.example.Row")
        .version(3)
        .doc("a row")
        .parameter("k", "v")
        .field("id", Schema.INT32_SCHEMA)
        .build()
    )
    optional = schema.replace(optional=True)
    assert optional.optional and not schema.optional
    assert (optional.name, optional.version, optional.doc) == ("com.example.Row", 3, "a row")
    assert dict(optional.parameters or {}) == {"k": "v"}
    assert optional.fields == schema.fields
    assert optional.replace(optional=False) == schema
    items = SchemaBuilder.map(Schema.STRING_SCHEMA, Schema.INT64_SCHEMA).build()
    assert items.replace(doc="counts").value_schema is items.value_schema


def test_replace_checks_as_the_constructor_does() -> None:
    with pytest.raises(SchemaBuilderError):
        Schema.INT32_SCHEMA.replace(default="not a number")
