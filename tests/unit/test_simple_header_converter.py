"""SimpleHeaderConverter (Kafka's Values text form and schema inference) and JsonConverter
as a header converter."""

from __future__ import annotations

import datetime as dt
import decimal
import logging
from types import SimpleNamespace
from typing import Any

import pytest

from connectrt.api.converter import HeaderConverter, SchemaAndValue
from connectrt.converters.headers import SimpleHeaderConverter, convert_to_string, parse_string
from connectrt.converters.headers import converter as header_converter_module
from connectrt.converters.json import JsonConverter
from connectrt.data.logical import Date, Time, Timestamp
from connectrt.data.logical import Decimal as DecimalType
from connectrt.data.schema import Schema, Type
from connectrt.data.schema_builder import SchemaBuilder
from connectrt.data.struct import Struct
from connectrt.data.values import validate_value
from connectrt.errors import DataError
from connectrt.runtime.executors.runner_factory import RunnerFactory
from connectrt.runtime.plugins.registry import registry

TOPIC = "t"


@pytest.fixture
def conv() -> SimpleHeaderConverter:
    c = SimpleHeaderConverter()
    c.configure({})
    return c


def read(conv: SimpleHeaderConverter, text: str | bytes) -> SchemaAndValue:
    data = text.encode("utf-8") if isinstance(text, str) else text
    result = conv.to_connect_header(TOPIC, "h", data)
    if result.schema is not None:
        validate_value(result.schema, result.value)  # every inferred value fits its schema
    return result


def write(conv: SimpleHeaderConverter, value: Any, schema: Schema | None = None) -> bytes | None:
    return conv.from_connect_header(TOPIC, "h", schema, value)


def round_trip(conv: SimpleHeaderConverter, value: Any) -> SchemaAndValue:
    data = write(conv, value)
    return read(conv, data) if data is not None else conv.to_connect_header(TOPIC, "h", None)


# -- nulls and the registry ------------------------------------------------------------------


def test_null(conv: SimpleHeaderConverter) -> None:
    assert write(conv, None) is None
    assert conv.to_connect_header(TOPIC, "h", None) == SchemaAndValue(None, None)
    assert read(conv, "null") == SchemaAndValue(None, None)
    assert read(conv, "  null ") == SchemaAndValue(None, None)


def test_registered_under_kafka_name() -> None:
    cls = registry.load_class("org.apache.kafka.connect.storage.SimpleHeaderConverter")
    assert cls is SimpleHeaderConverter
    assert issubclass(cls, HeaderConverter)


# -- inference per type ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "schema", "value"),
    [
        ("true", Schema.BOOLEAN_SCHEMA, True),
        ("false", Schema.BOOLEAN_SCHEMA, False),
        (" true ", Schema.BOOLEAN_SCHEMA, True),
        ("0", Schema.INT8_SCHEMA, 0),
        ("127", Schema.INT8_SCHEMA, 127),
        ("-128", Schema.INT8_SCHEMA, -128),
        ("128", Schema.INT16_SCHEMA, 128),
        ("-129", Schema.INT16_SCHEMA, -129),
        ("32767", Schema.INT16_SCHEMA, 32767),
        ("32768", Schema.INT32_SCHEMA, 32768),
        ("-2147483648", Schema.INT32_SCHEMA, -(2**31)),
        ("2147483648", Schema.INT64_SCHEMA, 2**31),
        ("9223372036854775807", Schema.INT64_SCHEMA, 2**63 - 1),
        ("-9223372036854775808", Schema.INT64_SCHEMA, -(2**63)),
        ("+5", Schema.INT8_SCHEMA, 5),
        ("-0", Schema.INT8_SCHEMA, 0),
        ("1.0", Schema.INT8_SCHEMA, 1),  # whole numbers are integers, as in Kafka
        ("1e3", Schema.INT16_SCHEMA, 1000),
        (" 42 ", Schema.INT8_SCHEMA, 42),
        ("3.14", Schema.FLOAT32_SCHEMA, 3.14),
        ("-0.5", Schema.FLOAT32_SCHEMA, -0.5),
        ("1e-05", Schema.FLOAT32_SCHEMA, 1e-05),
        ("1.0E-5", Schema.FLOAT32_SCHEMA, 1e-05),
        ("1e40", Schema.FLOAT64_SCHEMA, 1e40),
        ("-2.5e300", Schema.FLOAT64_SCHEMA, -2.5e300),
        ("hello", Schema.STRING_SCHEMA, "hello"),
        ("True", Schema.STRING_SCHEMA, "True"),
        ("hello, world: [1]", Schema.STRING_SCHEMA, "hello, world: [1]"),
        ('"quoted"', Schema.STRING_SCHEMA, '"quoted"'),
        (".5", Schema.STRING_SCHEMA, ".5"),
        ("1_000", Schema.STRING_SCHEMA, "1_000"),
        ("0x1F", Schema.STRING_SCHEMA, "0x1F"),
        ("NaN", Schema.STRING_SCHEMA, "NaN"),
        ("-Infinity", Schema.STRING_SCHEMA, "-Infinity"),
        ("12:30", Schema.STRING_SCHEMA, "12:30"),  # Kafka reads INT8 12 here
        ("42 apples", Schema.STRING_SCHEMA, "42 apples"),
        ("true}", Schema.STRING_SCHEMA, "true}"),
        ("", Schema.STRING_SCHEMA, ""),
        ("   ", Schema.STRING_SCHEMA, "   "),
        ("2023-01-15", Date.SCHEMA, dt.date(2023, 1, 15)),
        ("12:34:56.789Z", Time.SCHEMA, dt.time(12, 34, 56, 789000)),
        (
            "2023-01-15T12:34:56.789Z",
            Timestamp.SCHEMA,
            dt.datetime(2023, 1, 15, 12, 34, 56, 789000, tzinfo=dt.UTC),
        ),
        ("2023-02-30", Schema.STRING_SCHEMA, "2023-02-30"),  # strict, unlike Java's parser
        ("25:00:00.000Z", Schema.STRING_SCHEMA, "25:00:00.000Z"),
        ("2023-01-15T12:34:56Z", Schema.STRING_SCHEMA, "2023-01-15T12:34:56Z"),
    ],
)
def test_inferred_scalars(
    conv: SimpleHeaderConverter, text: str, schema: Schema, value: Any
) -> None:
    result = read(conv, text)
    assert result.schema == schema
    assert result.value == value
    assert type(result.value) is type(value)


@pytest.mark.parametrize(
    ("text", "scale", "value"),
    [
        ("9223372036854775808", 0, decimal.Decimal("9223372036854775808")),
        ("-99999999999999999999999", 0, decimal.Decimal("-99999999999999999999999")),
        ("1e400", -400, decimal.Decimal("1e400")),
    ],
)
def test_numbers_beyond_int64_and_double_are_decimals(
    conv: SimpleHeaderConverter, text: str, scale: int, value: decimal.Decimal
) -> None:
    result = read(conv, text)
    assert result.schema == DecimalType.schema(scale)
    assert result.value == value


def test_tiny_numbers_are_float32(conv: SimpleHeaderConverter) -> None:
    assert read(conv, "1e-30") == SchemaAndValue(Schema.FLOAT32_SCHEMA, 1e-30)
    # Below double range: Java's floatValue() is 0.0, which is finite, so FLOAT32 0.0.
    assert read(conv, "1.5e-400") == SchemaAndValue(Schema.FLOAT32_SCHEMA, 0.0)


# -- arrays and maps -------------------------------------------------------------------------


def array_of(schema: Schema) -> Schema:
    return SchemaBuilder.array(schema).build()


def map_of(key: Schema, value: Schema) -> Schema:
    return SchemaBuilder.map(key, value).build()


OPT_INT8 = Schema.OPTIONAL_INT8_SCHEMA


@pytest.mark.parametrize(
    ("text", "schema", "value"),
    [
        ("[1,2,3]", array_of(Schema.INT8_SCHEMA), [1, 2, 3]),
        (" [ 1 , 2 ] ", array_of(Schema.INT8_SCHEMA), [1, 2]),
        ("[1,1000,70000]", array_of(Schema.INT32_SCHEMA), [1, 1000, 70000]),
        ("[1,2.5]", array_of(Schema.FLOAT32_SCHEMA), [1.0, 2.5]),
        ("[-1,-9223372036854775808]", array_of(Schema.INT64_SCHEMA), [-1, -(2**63)]),
        ("[true,false]", array_of(Schema.BOOLEAN_SCHEMA), [True, False]),
        ('["a","b"]', array_of(Schema.STRING_SCHEMA), ["a", "b"]),
        ('["a,b","c:d","[e]","{f}"]', array_of(Schema.STRING_SCHEMA), ["a,b", "c:d", "[e]", "{f}"]),
        (
            '["say \\"hi\\"","back\\\\slash"]',
            array_of(Schema.STRING_SCHEMA),
            ['say "hi"', "back\\slash"],
        ),
        ('["  spaced  ", ""]', array_of(Schema.STRING_SCHEMA), ["  spaced  ", ""]),
        ("[1,null]", array_of(OPT_INT8), [1, None]),
        ('[null,"x"]', array_of(Schema.OPTIONAL_STRING_SCHEMA), [None, "x"]),
        ("[[1,2],[3]]", array_of(array_of(Schema.INT8_SCHEMA)), [[1, 2], [3]]),
        ("[[1],[1000]]", array_of(array_of(Schema.INT16_SCHEMA)), [[1], [1000]]),
        (
            "[[1,null],[2.5]]",
            array_of(array_of(Schema.OPTIONAL_FLOAT32_SCHEMA)),
            [[1.0, None], [2.5]],
        ),
        (
            '["2023-01-15","2024-02-29"]',
            array_of(Date.SCHEMA),
            [dt.date(2023, 1, 15), dt.date(2024, 2, 29)],
        ),
        ("[2023-01-15]", array_of(Date.SCHEMA), [dt.date(2023, 1, 15)]),
        (
            "[12:34:56.789Z, 00:00:00.000Z]",
            array_of(Time.SCHEMA),
            [dt.time(12, 34, 56, 789000), dt.time(0)],
        ),
        (
            "[2023-01-15T12:34:56.789Z]",
            array_of(Timestamp.SCHEMA),
            [dt.datetime(2023, 1, 15, 12, 34, 56, 789000, tzinfo=dt.UTC)],
        ),
        ("[1,]", array_of(Schema.INT8_SCHEMA), [1]),  # Kafka accepts a trailing comma
        ('{"a":1,"b":2}', map_of(Schema.STRING_SCHEMA, Schema.INT8_SCHEMA), {"a": 1, "b": 2}),
        (
            '{ "a" : 1 , "b" : 300 }',
            map_of(Schema.STRING_SCHEMA, Schema.INT16_SCHEMA),
            {"a": 1, "b": 300},
        ),
        ('{1:"x",2:"y"}', map_of(Schema.INT8_SCHEMA, Schema.STRING_SCHEMA), {1: "x", 2: "y"}),
        ('{"a":1,"b":null}', map_of(Schema.STRING_SCHEMA, OPT_INT8), {"a": 1, "b": None}),
        (
            '{"a":1.5,"b":2}',
            map_of(Schema.STRING_SCHEMA, Schema.FLOAT32_SCHEMA),
            {"a": 1.5, "b": 2.0},
        ),
        (
            '{"a":[1,2],"b":[3]}',
            map_of(Schema.STRING_SCHEMA, array_of(Schema.INT8_SCHEMA)),
            {"a": [1, 2], "b": [3]},
        ),
        (
            '{"x":{"y":true}}',
            map_of(Schema.STRING_SCHEMA, map_of(Schema.STRING_SCHEMA, Schema.BOOLEAN_SCHEMA)),
            {"x": {"y": True}},
        ),
        ('{"a":1,"a":2}', map_of(Schema.STRING_SCHEMA, Schema.INT8_SCHEMA), {"a": 2}),
        # No common schema: returned schemaless (Kafka uses a null element schema).
        ("[]", None, []),
        ("[null,null]", None, [None, None]),
        ('[1,"a"]', None, [1, "a"]),
        ('[[1],["a"]]', None, [[1], ["a"]]),
        ("[1,true]", None, [1, True]),
        ('["2023-01-15",5]', None, [dt.date(2023, 1, 15), 5]),
        ("{}", None, {}),
        ('{"a":null}', None, {"a": None}),
        ('{"a":1,"b":"x"}', None, {"a": 1, "b": "x"}),
    ],
)
def test_inferred_arrays_and_maps(
    conv: SimpleHeaderConverter, text: str, schema: Schema | None, value: Any
) -> None:
    result = read(conv, text)
    assert result.schema == schema
    assert result.value == value


@pytest.mark.parametrize(
    "text",
    [
        "[a,b]",  # strings inside must be quoted
        "[1,2",
        "[1 2]",
        "[,1]",
        "[1,,2]",
        '["unterminated]',
        "[1]x",  # Kafka ignores the trailing text
        "[1] [2]",
        "{a:1}",
        '{"a"}',
        '{"a":}',
        "{null:1}",
        '{"a":1',
        "{[1]:2}",  # a list cannot be a key of a Python dict
        "{,}",
        "[" * 5000 + "]" * 5000,  # deeper than the recursion limit
    ],
)
def test_malformed_lists_and_maps_are_strings(conv: SimpleHeaderConverter, text: str) -> None:
    assert read(conv, text) == SchemaAndValue(Schema.STRING_SCHEMA, text)


# -- writing ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "text"),
    [
        ("plain", "plain"),
        ("", ""),
        (True, "true"),
        (False, "false"),
        (42, "42"),
        (-(2**63), "-9223372036854775808"),
        (2**70, "1180591620717411303424"),
        (1.5, "1.5"),
        (1e-05, "1e-05"),
        (float("inf"), "Infinity"),
        (float("-inf"), "-Infinity"),
        (float("nan"), "NaN"),
        (decimal.Decimal("1.50"), "1.50"),
        (b"\x00\x01\xff", "AAH/"),
        (bytearray(b"hi"), "aGk="),
        ([1, "a", None, True], '[1,"a",null,true]'),
        ((1, 2), "[1,2]"),
        ([], "[]"),
        (['q"uote', "back\\slash"], '["q\\"uote","back\\\\slash"]'),
        ([b"hi"], '["aGk="]'),
        ({"k": 1, "n": None}, '{"k":1,"n":null}'),
        ({1: [1.5]}, "{1:[1.5]}"),
        (dt.date(2023, 1, 2), "2023-01-02"),
        (dt.date(5, 6, 7), "0005-06-07"),
        (dt.time(1, 2, 3, 4567), "01:02:03.004Z"),
        (dt.datetime(2023, 1, 2, 3, 4, 5, 6000), "2023-01-02T03:04:05.006Z"),
        (
            dt.datetime(2023, 1, 2, 3, 4, 5, tzinfo=dt.timezone(dt.timedelta(hours=2))),
            "2023-01-02T01:04:05.000Z",
        ),
        ([dt.date(2023, 1, 2)], "[2023-01-02]"),
    ],
)
def test_written_text(conv: SimpleHeaderConverter, value: Any, text: str) -> None:
    assert convert_to_string(None, value) == text
    assert write(conv, value) == text.encode("utf-8")


def test_struct_is_written_as_a_map(conv: SimpleHeaderConverter) -> None:
    schema = (
        SchemaBuilder.struct()
        .field("id", Schema.INT32_SCHEMA)
        .field("name", Schema.OPTIONAL_STRING_SCHEMA)
        .build()
    )
    value = Struct(schema).put("id", 7).put("name", None)
    assert write(conv, value, schema) == b'{"id":7,"name":null}'
    # Read back as a map (text carries no struct schema); null makes the values optional.
    result = read(conv, b'{"id":7,"name":null}')
    assert result.schema == map_of(Schema.STRING_SCHEMA, OPT_INT8)
    assert result.value == {"id": 7, "name": None}


def test_unicode_is_utf8(conv: SimpleHeaderConverter) -> None:
    assert write(conv, "héllo ✓") == "héllo ✓".encode()
    assert read(conv, "héllo ✓") == SchemaAndValue(Schema.STRING_SCHEMA, "héllo ✓")
    assert read(conv, '["ü"]').value == ["ü"]


def test_unsupported_value_is_a_data_error(conv: SimpleHeaderConverter) -> None:
    with pytest.raises(DataError, match=r"header 'h' on topic 't'.*object"):
        write(conv, object())
    with pytest.raises(DataError, match="set"):
        write(conv, [1, {2, 3}])


def test_invalid_utf8_is_returned_as_bytes(conv: SimpleHeaderConverter) -> None:
    assert read(conv, b"\xff\xfe") == SchemaAndValue(Schema.BYTES_SCHEMA, b"\xff\xfe")


def test_unexpected_parse_failure_falls_back_to_bytes(
    conv: SimpleHeaderConverter, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def boom(text: str) -> SchemaAndValue:
        raise ValueError("boom")

    monkeypatch.setattr(header_converter_module, "parse_string", boom)
    with caplog.at_level(logging.WARNING, logger="connectrt.converters.headers"):
        assert read(conv, b"42") == SchemaAndValue(Schema.BYTES_SCHEMA, b"42")
    assert "header 'h' on topic 't'" in caplog.text


def test_memoryview_input(conv: SimpleHeaderConverter) -> None:
    result = conv.to_connect_header(TOPIC, "h", memoryview(b"7"))  # type: ignore[arg-type]
    assert result == SchemaAndValue(Schema.INT8_SCHEMA, 7)


# -- round trips -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "schema"),
    [
        (True, Schema.BOOLEAN_SCHEMA),
        (False, Schema.BOOLEAN_SCHEMA),
        (0, Schema.INT8_SCHEMA),
        (-128, Schema.INT8_SCHEMA),
        (1000, Schema.INT16_SCHEMA),
        (-100000, Schema.INT32_SCHEMA),
        (2**62, Schema.INT64_SCHEMA),
        (2.5, Schema.FLOAT32_SCHEMA),
        (-1.25e-10, Schema.FLOAT32_SCHEMA),
        (1.5e300, Schema.FLOAT64_SCHEMA),
        ("hello world", Schema.STRING_SCHEMA),
        ("a, b: c", Schema.STRING_SCHEMA),
        ("", Schema.STRING_SCHEMA),
        (dt.date(2024, 2, 29), Date.SCHEMA),
        (dt.time(23, 59, 59, 999000), Time.SCHEMA),
        (dt.datetime(2024, 2, 29, 23, 59, 59, 999000, tzinfo=dt.UTC), Timestamp.SCHEMA),
        ([1, 2, 3], array_of(Schema.INT8_SCHEMA)),
        (["x", 'y "z"', "w\\v", "a,b"], array_of(Schema.STRING_SCHEMA)),
        ([1, None], array_of(OPT_INT8)),
        ([[1, 2], [300]], array_of(array_of(Schema.INT16_SCHEMA))),
        ({"a": 1, "b": 2}, map_of(Schema.STRING_SCHEMA, Schema.INT8_SCHEMA)),
        ({"a": ["x"], "b": []}, None),
        (
            {"k": {"n": [1.5, 2.5]}},
            map_of(
                Schema.STRING_SCHEMA, map_of(Schema.STRING_SCHEMA, array_of(Schema.FLOAT32_SCHEMA))
            ),
        ),
        ([dt.date(2023, 1, 2), dt.date(2023, 1, 3)], array_of(Date.SCHEMA)),
    ],
)
def test_round_trip(conv: SimpleHeaderConverter, value: Any, schema: Schema | None) -> None:
    result = round_trip(conv, value)
    assert result.schema == schema
    assert result.value == value


def test_lossy_round_trips_match_kafka(conv: SimpleHeaderConverter) -> None:
    assert round_trip(conv, 2.0) == SchemaAndValue(Schema.INT8_SCHEMA, 2)
    assert round_trip(conv, "42") == SchemaAndValue(Schema.INT8_SCHEMA, 42)
    assert round_trip(conv, "true") == SchemaAndValue(Schema.BOOLEAN_SCHEMA, True)
    assert round_trip(conv, b"hi") == SchemaAndValue(Schema.STRING_SCHEMA, "aGk=")
    big = round_trip(conv, 2**64)
    assert big == SchemaAndValue(DecimalType.schema(0), decimal.Decimal(2**64))


def test_parse_string_and_convert_to_string_are_public() -> None:
    assert parse_string(None) == SchemaAndValue(None, None)
    assert parse_string("[1]") == SchemaAndValue(array_of(Schema.INT8_SCHEMA), [1])
    assert convert_to_string(None, None) is None
    assert convert_to_string(Schema.INT32_SCHEMA, 5) == "5"


def test_timestamps_are_utc(conv: SimpleHeaderConverter) -> None:
    local = dt.datetime(2023, 6, 1, 12, 0, tzinfo=dt.timezone(dt.timedelta(hours=-5)))
    result = round_trip(conv, local)
    assert result.schema == Timestamp.SCHEMA
    assert result.value == local  # the same instant
    assert result.value.utcoffset() == dt.timedelta(0)


# -- JsonConverter as the header converter ----------------------------------------------------


@pytest.mark.parametrize("schemas_enable", ["true", "false"])
def test_json_converter_round_trips_headers(schemas_enable: str) -> None:
    conv = JsonConverter()
    conv.configure({"schemas.enable": schemas_enable})
    assert isinstance(conv, HeaderConverter)
    schema = SchemaBuilder.map(Schema.STRING_SCHEMA, Schema.INT32_SCHEMA).build()
    data = conv.from_connect_header(TOPIC, "h", schema, {"a": 1, "b": 2})
    assert data is not None
    result = conv.to_connect_header(TOPIC, "h", data)
    assert result.value == {"a": 1, "b": 2}
    if schemas_enable == "true":
        assert result.schema == schema
    assert conv.from_connect_header(TOPIC, "h", None, None) is None
    assert conv.to_connect_header(TOPIC, "h", None).value is None


def test_json_converter_header_round_trip_with_logical_type() -> None:
    conv = JsonConverter()
    conv.configure({})
    value = dt.datetime(2023, 1, 2, 3, 4, 5, 6000, tzinfo=dt.UTC)
    data = conv.from_connect_header(TOPIC, "ts", Timestamp.SCHEMA, value)
    assert conv.to_connect_header(TOPIC, "ts", data) == SchemaAndValue(Timestamp.SCHEMA, value)


@pytest.mark.parametrize(
    ("class_name", "cls"),
    [
        ("org.apache.kafka.connect.json.JsonConverter", JsonConverter),
        ("org.apache.kafka.connect.storage.SimpleHeaderConverter", SimpleHeaderConverter),
    ],
)
def test_worker_builds_header_converters(class_name: str, cls: type) -> None:
    # RunnerFactory.converter is what the runtime uses for header.converter; it needs only the
    # registry when the connector config names the class.
    fake = SimpleNamespace(plugins=registry, config=None)
    config = {"header.converter": class_name, "header.converter.schemas.enable": "false"}
    conv = RunnerFactory.converter(fake, config, "header")  # type: ignore[arg-type]
    assert type(conv) is cls
    data = conv.from_connect_header(TOPIC, "h", None, [1, 2])
    assert conv.to_connect_header(TOPIC, "h", data).value == [1, 2]


def test_type_of_values_in_inferred_schemas_are_valid(conv: SimpleHeaderConverter) -> None:
    # validate_value is called by read(); this makes the intent explicit for nested floats.
    result = read(conv, "[[1],[2.5]]")
    assert result.schema == array_of(array_of(Schema.FLOAT32_SCHEMA))
    assert result.value == [[1.0], [2.5]]
    assert all(isinstance(v, float) for inner in result.value for v in inner)
    assert result.schema is not None and result.schema.type is Type.ARRAY
