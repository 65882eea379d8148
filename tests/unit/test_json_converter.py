"""JsonConverter: Kafka Connect wire format, byte for byte."""

from __future__ import annotations

import datetime as dt
import decimal
import math
from typing import Any

import pytest

from connectrt.api.converter import Converter, HeaderConverter, SchemaAndValue
from connectrt.converters import JsonConverter
from connectrt.converters.json import ENVELOPE_ERROR, NULL_REQUIRED_ERROR
from connectrt.data import Date, Decimal, Schema, SchemaBuilder, Struct, Time, Timestamp
from connectrt.data.logical import RawLogical
from connectrt.errors import ConfigError, DataError

D = decimal.Decimal
T = "topic"

INT32_JSON = b'{"type":"int32","optional":false}'


def conv(**config: Any) -> JsonConverter:
    c = JsonConverter()
    c.configure(config, False)
    return c


def envelope(schema_json: bytes, payload: bytes) -> bytes:
    return b'{"schema":' + schema_json + b',"payload":' + payload + b"}"


# -- contracts --------------------------------------------------------------------------------


def test_is_converter_and_header_converter() -> None:
    c = JsonConverter()
    assert isinstance(c, Converter) and isinstance(c, HeaderConverter)
    keys = JsonConverter.config_def()
    assert keys["schemas.enable"][1] is True
    assert keys["schemas.cache.size"][1] == 1000
    assert keys["decimal.format"][1] == "BASE64"
    assert keys["replace.null.with.default"][1] is True
    assert "converter.type" in keys


# -- primitives -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("schema", "value", "expected"),
    [
        (Schema.INT8_SCHEMA, 12, b'{"schema":{"type":"int8","optional":false},"payload":12}'),
        (Schema.INT16_SCHEMA, -12, b'{"schema":{"type":"int16","optional":false},"payload":-12}'),
        (Schema.INT32_SCHEMA, 42, b'{"schema":{"type":"int32","optional":false},"payload":42}'),
        (
            Schema.INT64_SCHEMA,
            2**63 - 1,
            b'{"schema":{"type":"int64","optional":false},"payload":9223372036854775807}',
        ),
        (
            Schema.FLOAT32_SCHEMA,
            12.375,
            b'{"schema":{"type":"float","optional":false},"payload":12.375}',
        ),
        (
            Schema.FLOAT64_SCHEMA,
            1.0,
            b'{"schema":{"type":"double","optional":false},"payload":1.0}',
        ),
        (
            Schema.BOOLEAN_SCHEMA,
            True,
            b'{"schema":{"type":"boolean","optional":false},"payload":true}',
        ),
        (
            Schema.OPTIONAL_STRING_SCHEMA,
            'say "hi"',
            b'{"schema":{"type":"string","optional":true},"payload":"say \\"hi\\""}',
        ),
        (
            Schema.BYTES_SCHEMA,
            b"\x01\x02\x03",
            b'{"schema":{"type":"bytes","optional":false},"payload":"AQID"}',
        ),
    ],
)
def test_primitive_round_trip_exact_bytes(schema: Schema, value: Any, expected: bytes) -> None:
    c = conv()
    assert c.from_connect_data(T, schema, value) == expected
    assert c.to_connect_data(T, expected) == SchemaAndValue(schema, value)


def test_int_given_for_float_raises_as_kafkas_cast() -> None:
    with pytest.raises(DataError, match="Invalid type for FLOAT64: int"):
        conv().from_connect_data(T, Schema.FLOAT64_SCHEMA, 3)


@pytest.mark.parametrize(
    ("schema", "value"),
    [
        (Schema.INT8_SCHEMA, 128),
        (Schema.INT32_SCHEMA, "1"),
        (Schema.INT32_SCHEMA, True),
        (Schema.BOOLEAN_SCHEMA, 1),
        (Schema.STRING_SCHEMA, 5),
        (Schema.BYTES_SCHEMA, "abc"),
        (Schema.FLOAT64_SCHEMA, "1.5"),
        (SchemaBuilder.array(Schema.INT32_SCHEMA).build(), {"a": 1}),
        (SchemaBuilder.map(Schema.STRING_SCHEMA, Schema.INT32_SCHEMA).build(), [1]),
    ],
)
def test_wrong_python_type_raises(schema: Schema, value: Any) -> None:
    with pytest.raises(DataError, match="Invalid"):
        conv().from_connect_data(T, schema, value)


@pytest.mark.parametrize("value", [float("nan"), float("inf"), float("-inf")])
def test_non_finite_floats_are_written_and_read_as_kafka_does(value: float) -> None:
    c = conv()
    text = "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    out = c.from_connect_data(T, Schema.FLOAT64_SCHEMA, value)
    assert (
        out == b'{"schema":{"type":"double","optional":false},"payload":"' + text.encode() + b'"}'
    )
    assert c.to_connect_data(T, out).value == 0.0  # Kafka's text node doubleValue()
    assert conv(**{"schemas.enable": "false"}).from_connect_data(T, None, [value]) == (
        b'["' + text.encode() + b'"]'
    )


# -- complex types ----------------------------------------------------------------------------

USER = (
    SchemaBuilder.struct()
    .name("com.example.User")
    .version(2)
    .doc("a user")
    .field("id", Schema.INT64_SCHEMA)
    .field("email", Schema.OPTIONAL_STRING_SCHEMA)
    .field("tags", SchemaBuilder.array(Schema.STRING_SCHEMA))
    .build()
)
USER_SCHEMA_JSON = (
    b'{"type":"struct","fields":['
    b'{"type":"int64","optional":false,"field":"id"},'
    b'{"type":"string","optional":true,"field":"email"},'
    b'{"type":"array","items":{"type":"string","optional":false},"optional":false,"field":"tags"}'
    b'],"optional":false,"name":"com.example.User","version":2,"doc":"a user"}'
)


def test_struct_exact_bytes() -> None:
    c = conv()
    user = Struct(USER).put("id", 1).put("tags", ["a", "b"])
    out = c.from_connect_data(T, USER, user)
    assert out == envelope(USER_SCHEMA_JSON, b'{"id":1,"email":null,"tags":["a","b"]}')
    assert c.to_connect_data(T, out) == SchemaAndValue(USER, user)


def test_struct_schema_mismatch() -> None:
    other = SchemaBuilder.struct().field("id", Schema.INT64_SCHEMA).build()
    with pytest.raises(DataError, match=r"Mismatching schema\."):
        conv().from_connect_data(T, USER, Struct(other).put("id", 1))


def test_struct_with_equal_but_distinct_schema_object() -> None:
    copy = (
        SchemaBuilder.struct()
        .name("com.example.User")
        .version(2)
        .doc("a user")
        .field("id", Schema.INT64_SCHEMA)
        .field("email", Schema.OPTIONAL_STRING_SCHEMA)
        .field("tags", SchemaBuilder.array(Schema.STRING_SCHEMA))
        .build()
    )
    user = Struct(copy).put("id", 5).put("tags", [])
    assert conv().from_connect_data(T, USER, user) == envelope(
        USER_SCHEMA_JSON, b'{"id":5,"email":null,"tags":[]}'
    )


def test_nested_map_string_keys_is_object() -> None:
    schema = SchemaBuilder.map(Schema.STRING_SCHEMA, Schema.INT32_SCHEMA).build()
    c = conv()
    out = c.from_connect_data(T, schema, {"a": 1, "b": 2})
    assert out == envelope(
        b'{"type":"map","keys":{"type":"string","optional":false},'
        b'"values":{"type":"int32","optional":false},"optional":false}',
        b'{"a":1,"b":2}',
    )
    assert c.to_connect_data(T, out).value == {"a": 1, "b": 2}


def test_non_string_key_map_is_array_of_pairs() -> None:
    schema = SchemaBuilder.map(Schema.INT32_SCHEMA, Schema.OPTIONAL_STRING_SCHEMA).build()
    c = conv()
    out = c.from_connect_data(T, schema, {1: "a", 2: None})
    assert out == envelope(
        b'{"type":"map","keys":{"type":"int32","optional":false},'
        b'"values":{"type":"string","optional":true},"optional":false}',
        b'[[1,"a"],[2,null]]',
    )
    assert c.to_connect_data(T, out).value == {1: "a", 2: None}


def test_map_pair_errors() -> None:
    schema_json = (
        b'{"type":"map","keys":{"type":"int32","optional":false},'
        b'"values":{"type":"int32","optional":false},"optional":false}'
    )
    c = conv()
    with pytest.raises(DataError, match="expected length 2 but found :3"):
        c.to_connect_data(T, envelope(schema_json, b"[[1,2,3]]"))
    with pytest.raises(DataError, match="Found invalid map entry instead of array tuple"):
        c.to_connect_data(T, envelope(schema_json, b"[1]"))
    with pytest.raises(DataError, match="JSON array of tuples"):
        c.to_connect_data(T, envelope(schema_json, b'{"1":2}'))


# -- logical types ----------------------------------------------------------------------------

DECIMAL_SCHEMA_JSON = (
    b'{"type":"bytes","optional":false,"name":"org.apache.kafka.connect.data.Decimal",'
    b'"version":1,"parameters":{"scale":"2"}}'
)


def test_decimal_base64() -> None:
    c = conv()
    out = c.from_connect_data(T, Decimal.schema(2), D("1.56"))
    assert out == envelope(DECIMAL_SCHEMA_JSON, b'"AJw="')
    result = c.to_connect_data(T, out)
    assert result == SchemaAndValue(Decimal.schema(2), D("1.56"))
    assert conv().from_connect_data(T, Decimal.schema(2), D("-1.56")) == envelope(
        DECIMAL_SCHEMA_JSON, b'"/2Q="'
    )


def test_decimal_numeric_keeps_trailing_zeros() -> None:
    c = conv(**{"decimal.format": "numeric"})
    out = c.from_connect_data(T, Decimal.schema(2), D("1.50"))
    assert out == envelope(DECIMAL_SCHEMA_JSON, b"1.50")
    value = c.to_connect_data(T, out).value
    assert value == D("1.50") and str(value) == "1.50"


def test_decimal_scale_mismatch_as_kafka() -> None:
    """BASE64 needs the schema's scale exactly (Kafka's Decimal.fromLogical); NUMERIC writes
    the BigDecimal as it is."""
    with pytest.raises(DataError, match="mismatching scale"):
        conv().from_connect_data(T, Decimal.schema(2), D("1.5"))
    numeric = conv(**{"decimal.format": "numeric"})
    assert numeric.from_connect_data(T, Decimal.schema(0), D("20.8")) == envelope(
        b'{"type":"bytes","optional":false,"name":"org.apache.kafka.connect.data.Decimal",'
        b'"version":1,"parameters":{"scale":"0"}}',
        b"20.8",
    )


def test_decimal_read_accepts_both_forms() -> None:
    c = conv()  # BASE64 configured; numeric must still be accepted
    assert c.to_connect_data(T, envelope(DECIMAL_SCHEMA_JSON, b"1.56")).value == D("1.56")
    assert c.to_connect_data(T, envelope(DECIMAL_SCHEMA_JSON, b'"AJw="')).value == D("1.56")
    assert c.to_connect_data(T, envelope(DECIMAL_SCHEMA_JSON, b"2")).value == D("2.00")


def test_numeric_decimal_read_is_exact() -> None:
    c = conv()
    text = b"12345678901234567890.12"
    assert c.to_connect_data(T, envelope(DECIMAL_SCHEMA_JSON, text)).value == D(text.decode())
    # again, now through the cached fast path
    assert c.to_connect_data(T, envelope(DECIMAL_SCHEMA_JSON, text)).value == D(text.decode())
    # 17 significant digits that a double would round
    small = b"0.30000000000000001"
    schema_json = DECIMAL_SCHEMA_JSON.replace(b'"2"', b'"17"')
    assert c.to_connect_data(T, envelope(schema_json, small)).value == D(small.decode())


def test_decimal_invalid_payload() -> None:
    with pytest.raises(DataError, match="Invalid bytes for Decimal field"):
        conv().to_connect_data(T, envelope(DECIMAL_SCHEMA_JSON, b'"not base64!"'))
    with pytest.raises(DataError, match="numeric or bytes"):
        conv().to_connect_data(T, envelope(DECIMAL_SCHEMA_JSON, b"true"))


def test_date_time_timestamp_exact_bytes() -> None:
    c = conv()
    day = dt.date(2024, 1, 1)
    out = c.from_connect_data(T, Date.SCHEMA, day)
    assert out == envelope(
        b'{"type":"int32","optional":false,"name":"org.apache.kafka.connect.data.Date",'
        b'"version":1}',
        b"19723",
    )
    assert c.to_connect_data(T, out).value == day

    at = dt.datetime(2024, 1, 1, 0, 0, 0, 123000, tzinfo=dt.UTC)
    out = c.from_connect_data(T, Timestamp.SCHEMA, at)
    assert out == envelope(
        b'{"type":"int64","optional":false,"name":"org.apache.kafka.connect.data.Timestamp",'
        b'"version":1}',
        b"1704067200123",
    )
    assert c.to_connect_data(T, out).value == at

    tod = dt.time(1, 2, 3, 4000)
    out = c.from_connect_data(T, Time.SCHEMA, tod)
    assert out == envelope(
        b'{"type":"int32","optional":false,"name":"org.apache.kafka.connect.data.Time",'
        b'"version":1}',
        b"3723004",
    )
    assert c.to_connect_data(T, out).value == tod


def test_logical_name_on_wrong_base_type_is_plain() -> None:
    schema = SchemaBuilder.string().name(Date.LOGICAL_NAME).build()
    c = conv()
    out = c.from_connect_data(T, schema, "x")
    assert c.to_connect_data(T, out).value == "x"


# -- nulls, defaults, tombstones --------------------------------------------------------------

OPT_DEFAULT = SchemaBuilder.int32().optional().default_value(7).build()
OPT_DEFAULT_JSON = b'{"type":"int32","optional":true,"default":7}'


def test_optional_with_default_schema_json() -> None:
    assert conv().schema_to_json(OPT_DEFAULT) == OPT_DEFAULT_JSON


def test_replace_null_with_default_on_write() -> None:
    assert conv().from_connect_data(T, OPT_DEFAULT, None) == envelope(OPT_DEFAULT_JSON, b"7")
    off = conv(**{"replace.null.with.default": "false"})
    assert off.from_connect_data(T, OPT_DEFAULT, None) == envelope(OPT_DEFAULT_JSON, b"null")


def test_replace_null_with_default_on_read() -> None:
    data = envelope(OPT_DEFAULT_JSON, b"null")
    assert conv().to_connect_data(T, data) == SchemaAndValue(OPT_DEFAULT, 7)
    off = conv(**{"replace.null.with.default": False})
    assert off.to_connect_data(T, data) == SchemaAndValue(OPT_DEFAULT, None)


def test_struct_field_default_and_missing_fields() -> None:
    schema_json = (
        b'{"type":"struct","fields":['
        b'{"type":"int32","optional":true,"field":"a"},'
        b'{"type":"string","optional":false,"default":"x","field":"b"}'
        b'],"optional":false}'
    )
    c = conv()
    schema = c.schema_from_json(schema_json)
    assert schema is not None
    assert c.schema_to_json(schema) == schema_json
    result = c.to_connect_data(T, envelope(schema_json, b"{}"))
    assert isinstance(result.value, Struct)
    assert result.value.get("a") is None
    assert result.value.get("b") == "x"
    assert c.from_connect_data(T, schema, Struct(schema)) == envelope(
        schema_json, b'{"a":null,"b":"x"}'
    )


def test_required_null_without_default() -> None:
    with pytest.raises(DataError) as info:
        conv().from_connect_data(T, Schema.INT32_SCHEMA, None)
    assert str(info.value) == NULL_REQUIRED_ERROR
    assert NULL_REQUIRED_ERROR == (
        "Conversion error: null value for field that is required and has no default value"
    )
    schema = SchemaBuilder.struct().field("a", Schema.INT32_SCHEMA).build()
    with pytest.raises(DataError, match="Conversion error: null value"):
        conv().from_connect_data(T, schema, Struct(schema))
    with pytest.raises(DataError, match="Invalid null value for required INT32 field"):
        conv().to_connect_data(T, envelope(INT32_JSON, b"null"))


def test_tombstones() -> None:
    c = conv()
    assert c.from_connect_data(T, None, None) is None
    assert c.to_connect_data(T, None) == SchemaAndValue(None, None)
    plain = conv(**{"schemas.enable": False})
    assert plain.from_connect_data(T, None, None) is None
    assert plain.to_connect_data(T, None) == SchemaAndValue(None, None)


def test_optional_schema_with_null_value_is_not_a_tombstone() -> None:
    out = conv().from_connect_data(T, Schema.OPTIONAL_INT32_SCHEMA, None)
    assert out == b'{"schema":{"type":"int32","optional":true},"payload":null}'
    assert conv(**{"schemas.enable": False}).from_connect_data(
        T, Schema.OPTIONAL_INT32_SCHEMA, None
    ) == (b"null")


# -- envelope ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "data",
    [
        b'{"schema":null}',
        b'{"payload":1}',
        b'{"schema":null,"payload":1,"extra":2}',
        b"[1,2]",
        b"42",
        b"null",
        b'{"a":1,"b":2}',
    ],
)
def test_envelope_error_message(data: bytes) -> None:
    with pytest.raises(DataError) as info:
        conv().to_connect_data(T, data)
    assert str(info.value) == (
        'JsonConverter with schemas.enable requires "schema" and "payload" fields and may not '
        "contain additional fields. If you are trying to deserialize plain JSON data, set "
        "schemas.enable=false in your converter configuration."
    )
    assert str(info.value) == ENVELOPE_ERROR


def test_envelope_error_after_fast_path_warmup() -> None:
    c = conv()
    assert c.to_connect_data(T, envelope(INT32_JSON, b"1")).value == 1
    with pytest.raises(DataError, match='requires "schema" and "payload"'):
        c.to_connect_data(T, envelope(INT32_JSON, b'1,"extra":2'))


def test_envelope_with_whitespace_and_reordered_keys() -> None:
    data = b'{ "payload" : 5 , "schema" : { "optional" : false, "type" : "int32" } }'
    assert conv().to_connect_data(T, data) == SchemaAndValue(Schema.INT32_SCHEMA, 5)


def test_schemas_disabled_writes_bare_payload() -> None:
    c = conv(**{"schemas.enable": "false"})
    user = Struct(USER).put("id", 1).put("tags", ["x"])
    assert c.from_connect_data(T, USER, user) == b'{"id":1,"email":null,"tags":["x"]}'
    assert c.from_connect_data(T, Schema.INT32_SCHEMA, 3) == b"3"


def test_schemas_disabled_reads_schemaless() -> None:
    c = conv(**{"schemas.enable": False})
    data = b'{"a":[1,2.5,"x",true,null],"b":{"c":1}}'
    assert c.to_connect_data(T, data) == SchemaAndValue(
        None, {"a": [1, 2.5, "x", True, None], "b": {"c": 1}}
    )
    # an envelope-looking message is just a map when schemas are disabled
    assert c.to_connect_data(T, envelope(INT32_JSON, b"1")).value == {
        "schema": {"type": "int32", "optional": False},
        "payload": 1,
    }


def test_null_schema_envelope_is_schemaless() -> None:
    c = conv()
    assert c.to_connect_data(T, b'{"schema":null,"payload":{"a":1}}') == SchemaAndValue(
        None, {"a": 1}
    )


def test_invalid_json_raises_data_error() -> None:
    with pytest.raises(DataError, match="serialization error"):
        conv().to_connect_data(T, b'{"schema":')
    with pytest.raises(DataError, match="serialization error"):
        conv(**{"schemas.enable": False}).to_connect_data(T, b"NaN")


# -- schemaless writes ------------------------------------------------------------------------


def test_schemaless_inference_on_write() -> None:
    c = conv()
    value = {"i": 1, "f": 1.5, "s": "x", "b": True, "n": None, "l": [1, "a"], "y": b"\x00"}
    assert c.from_connect_data(T, None, value) == (
        b'{"schema":null,"payload":{"i":1,"f":1.5,"s":"x","b":true,"n":null,'
        b'"l":[1,"a"],"y":"AA=="}}'
    )


def test_schemaless_non_string_keys_become_pairs() -> None:
    c = conv(**{"schemas.enable": False})
    assert c.from_connect_data(T, None, {1: "a", "b": 2}) == b'[[1,"a"],["b",2]]'
    assert c.from_connect_data(T, None, (1, 2)) == b"[1,2]"


def test_schemaless_unsupported_types() -> None:
    with pytest.raises(DataError, match="does not have corresponding schema type"):
        conv().from_connect_data(T, None, D("1.0"))
    schema = SchemaBuilder.struct().field("a", Schema.INT32_SCHEMA).build()
    with pytest.raises(DataError, match=r"Mismatching schema\."):
        conv().from_connect_data(T, None, Struct(schema).put("a", 1))
    with pytest.raises(DataError):
        conv().from_connect_data(T, None, 2**70)


# -- reading ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("payload", "expected"),
    [(b"0012", 12), (b"-007", -7), (b"0", 0), (b"100", 100)],
)
def test_leading_zeros_are_accepted(payload: bytes, expected: int) -> None:
    c = conv()
    assert c.to_connect_data(T, envelope(INT32_JSON, payload)).value == expected
    plain = conv(**{"schemas.enable": False})
    assert plain.to_connect_data(T, b"[" + payload + b", 00.5]").value == [expected, 0.5]


def test_leading_zeros_inside_strings_are_untouched() -> None:
    data = b'{"schema":{"type":"string","optional":false},"payload":"0012"}'
    assert conv().to_connect_data(T, data).value == "0012"
    assert conv(**{"schemas.enable": False}).to_connect_data(T, b'["0012", 0012]').value == [
        "0012",
        12,
    ]


@pytest.mark.parametrize(
    ("schema_json", "payload", "message"),
    [
        (INT32_JSON, b'"5"', "Invalid type for INT32"),
        (b'{"type":"boolean","optional":false}', b"1", "Invalid type for BOOLEAN"),
        (b'{"type":"string","optional":false}', b"1", "Invalid type for STRING"),
        (b'{"type":"bytes","optional":false}', b'"***"', "Invalid base64"),
        (
            b'{"type":"array","items":{"type":"int32","optional":false},"optional":false}',
            b"{}",
            "Arrays should be encoded as JSON arrays, but found OBJECT",
        ),
        (
            b'{"type":"struct","fields":[],"optional":false}',
            b"[]",
            "Structs should be encoded as JSON objects, but found ARRAY",
        ),
    ],
)
def test_read_type_errors(schema_json: bytes, payload: bytes, message: str) -> None:
    with pytest.raises(DataError, match=message):
        conv().to_connect_data(T, envelope(schema_json, payload))


@pytest.mark.parametrize(
    ("schema_json", "message"),
    [
        (b'{"optional":false}', "Schema must contain 'type' field"),
        (b'{"type":"int128"}', "Unknown schema type: int128"),
        (b'{"type":"struct","fields":{}}', 'Struct schema\'s "fields" argument is not an array.'),
        (b'{"type":"struct","fields":[{"type":"int32"}]}', "field name not specified properly"),
        (b'{"type":"array"}', "Array schema did not specify the element type"),
        (b'{"type":"map","values":{"type":"int32"}}', "Map schema did not specify the key type"),
        (b'{"type":"map","keys":{"type":"int32"}}', "Map schema did not specify the value type"),
        (b'{"type":"int32","parameters":{"a":1}}', "Schema parameters must have string values."),
    ],
)
def test_bad_schema_json(schema_json: bytes, message: str) -> None:
    with pytest.raises(DataError) as info:
        conv().to_connect_data(T, envelope(schema_json, b"null"))
    assert message in str(info.value)


def test_schema_json_reads_all_attributes() -> None:
    schema_json = (
        b'{"type":"string","optional":true,"name":"n","version":3,"doc":"d",'
        b'"parameters":{"k":"v","a":"b"},"default":"dflt"}'
    )
    c = conv()
    schema = c.schema_from_json(schema_json)
    assert schema == (
        SchemaBuilder.string()
        .optional()
        .name("n")
        .version(3)
        .doc("d")
        .parameters({"k": "v", "a": "b"})
        .default_value("dflt")
        .build()
    )
    assert c.schema_to_json(schema) == schema_json


def test_missing_optional_means_required() -> None:
    assert conv().schema_from_json(b'{"type":"int32"}') == Schema.INT32_SCHEMA


def test_defaults_use_the_schema_encoding() -> None:
    c = conv()
    assert (
        c.schema_to_json(SchemaBuilder.bytes().default_value(b"\x01\x02").build())
        == b'{"type":"bytes","optional":false,"default":"AQI="}'
    )
    dec = Decimal.builder(2).default_value(D("1.50")).build()
    assert c.schema_to_json(dec) == DECIMAL_SCHEMA_JSON[:-1] + b',"default":"AJY="}'
    numeric = conv(**{"decimal.format": "NUMERIC"})
    assert numeric.schema_to_json(dec) == DECIMAL_SCHEMA_JSON[:-1] + b',"default":1.50}'
    # a NUMERIC default reads back exactly
    out = numeric.from_connect_data(T, dec, None)
    assert numeric.to_connect_data(T, out) == SchemaAndValue(dec, D("1.50"))
    struct_schema = SchemaBuilder.struct().field("a", Schema.INT32_SCHEMA)
    default = Struct(struct_schema.build()).put("a", 1)
    with_default = struct_schema.default_value(default).build()
    expected = (
        b'{"type":"struct","fields":[{"type":"int32","optional":false,"field":"a"}],'
        b'"optional":false,"default":{"a":1}}'
    )
    assert c.schema_to_json(with_default) == expected
    assert c.schema_from_json(expected) == with_default


# -- configuration and caching ----------------------------------------------------------------


def test_config_errors() -> None:
    with pytest.raises(ConfigError) as info:
        conv(**{"decimal.format": "HEX"})
    assert info.value.name == "decimal.format"
    with pytest.raises(ConfigError) as info:
        conv(**{"schemas.enable": "maybe"})
    assert info.value.name == "schemas.enable"
    with pytest.raises(ConfigError):
        conv(**{"schemas.cache.size": "-1"})
    with pytest.raises(ConfigError):
        JsonConverter().configure({"converter.type": "other"})


def test_converter_type() -> None:
    c = JsonConverter()
    c.configure({"converter.type": "header"})
    assert c.converter_type == "header"
    c.configure({}, True)
    assert c.converter_type == "key"


def test_schema_cache_is_bounded() -> None:
    c = conv(**{"schemas.cache.size": "2"})
    schemas = [SchemaBuilder.int32().name(f"s{i}").build() for i in range(5)]
    for schema in schemas:
        data = c.from_connect_data(T, schema, 1)
        assert c.to_connect_data(T, data) == SchemaAndValue(schema, 1)
    assert len(c._to_json_cache) == 2
    assert len(c._from_json_cache) == 2


def test_zero_cache_size_still_converts() -> None:
    c = conv(**{"schemas.cache.size": 0})
    for value in (1, 2):
        data = c.from_connect_data(T, Schema.INT32_SCHEMA, value)
        assert c.to_connect_data(T, data).value == value


def test_alternating_schemas_use_the_right_deserializer() -> None:
    c = conv()
    a = envelope(INT32_JSON, b"1")
    b = envelope(b'{"type":"string","optional":false}', b'"x"')
    for _ in range(3):
        assert c.to_connect_data(T, a) == SchemaAndValue(Schema.INT32_SCHEMA, 1)
        assert c.to_connect_data(T, b) == SchemaAndValue(Schema.STRING_SCHEMA, "x")


def test_bytearray_and_memoryview_input() -> None:
    data = envelope(INT32_JSON, b"9")
    assert conv().to_connect_data(T, bytearray(data)).value == 9
    assert conv().to_connect_data(T, memoryview(data)).value == 9  # type: ignore[arg-type]


# -- header converter -------------------------------------------------------------------------


def test_header_conversion() -> None:
    c = JsonConverter()
    c.configure({"converter.type": "header", "schemas.enable": "true"})
    out = c.from_connect_header(T, "h", Schema.INT32_SCHEMA, 42)
    assert out == b'{"schema":{"type":"int32","optional":false},"payload":42}'
    assert c.to_connect_header(T, "h", out) == SchemaAndValue(Schema.INT32_SCHEMA, 42)
    assert c.from_connect_header(T, "h", None, None) is None
    assert c.to_connect_header(T, "h", None) == SchemaAndValue(None, None)


# -- Kafka Connect's text and reading (the Java differential checks these against Kafka) ------


def test_jacksons_text_for_strings_and_doubles() -> None:
    c = conv(**{"schemas.enable": "false"})
    assert c.from_connect_data(T, Schema.STRING_SCHEMA, "a\x1f😀\ud800é") == (
        b'"a\\u001F\\uD83D\\uDE00\\uD800\xc3\xa9"'
    )
    doubles = [1e7, 9999999.0, 1e-3, 9.9e-4, 5e-324, 2.0**55, -0.0, 0.5]
    assert c.from_connect_data(T, None, doubles) == (
        b"[1.0E7,9999999.0,0.001,9.9E-4,4.9E-324,3.6028797018963968E16,-0.0,0.5]"
    )
    f32 = c.from_connect_data(T, Schema.FLOAT32_SCHEMA, 121192382464.0)
    assert f32 == b"1.21192382E11"  # Float.toString of the float32, not the double's text


def test_reads_as_kafka_reads() -> None:
    plain = conv(**{"schemas.enable": "false"})
    assert plain.to_connect_data(T, b"").value is None
    assert plain.to_connect_data(T, b'{"a":1} trailing').value == {"a": 1}
    assert plain.to_connect_data(T, b"18446744073709551617").value == 1  # low 64 bits
    value = plain.to_connect_data(T, b"[-0.0]").value
    assert value == [0.0] and math.copysign(1.0, value[0]) == 1.0
    with pytest.raises(DataError):
        plain.to_connect_data(T, b"1x")
    c = conv()
    assert c.to_connect_data(T, envelope(b'{"type":"float","optional":false}', b"1e39")).value == (
        math.inf
    )
    assert c.to_connect_data(T, envelope(INT32_JSON, b"2147483648")).value == -(2**31)


def test_logical_values_beyond_datetime_are_raw_integers() -> None:
    c = conv()
    for schema, raw in (
        (Time.SCHEMA, 86_400_000),
        (Date.SCHEMA, 3_000_000),
        (Timestamp.SCHEMA, 10**15),
    ):
        out = c.from_connect_data(T, schema, RawLogical(raw))
        assert out.endswith(b'"payload":' + str(raw).encode() + b"}")
        value = c.to_connect_data(T, out).value
        assert type(value) is RawLogical and value == raw
    with pytest.raises(DataError):
        c.from_connect_data(T, Date.SCHEMA, 5)  # a plain int stays a type error, as in Kafka
