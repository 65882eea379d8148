"""JsonConverter's batch writes (``from_connect_values``, :mod:`connectrt.converters.json.batch`)
give, value for value, the bytes ``from_connect_data`` gives, with and without envelopes, and
fail where any value fails.

Two sources of values: every write case of the Java differential
(:mod:`tests.unit.json_vs_kafka_cases`: all types and bounds, nulls and defaults, containers,
logical types, schemaless values, wrong-typed values), grouped by converter config and schema
into batches; and batches built to meet each fast path's edges (float ranges, NaN, integer
bounds, nulls in required, optional and defaulted fields, escapes, characters outside the BMP,
unpaired surrogates, maps of one shape and of several, tombstones).
"""

from __future__ import annotations

import json
import math
from collections import defaultdict
from typing import Any

import pytest

from connectrt.converters.json import JsonConverter
from connectrt.converters.json.converter import LARGE_MESSAGE
from connectrt.data import Schema, SchemaBuilder
from connectrt.data.struct import Struct
from connectrt.errors import ConnectError, DataError
from tests.unit.json_vs_kafka_cases import generate, python_value


def _converter(config: dict[str, str]) -> JsonConverter:
    conv = JsonConverter()
    conv.configure(config, is_key=False)
    return conv


def _one_by_one(
    conv: JsonConverter, schema: Schema | None, values: list[Any]
) -> list[bytes | DataError | None]:
    out: list[bytes | DataError | None] = []
    for v in values:
        try:
            out.append(conv.from_connect_data("t", schema, v))
        except DataError as exc:
            out.append(exc)
    return out


def _check(conv: JsonConverter, schema: Schema | None, values: list[Any]) -> int:
    """The batch of ``values`` against each written alone; returns how many values it wrote."""
    each = _one_by_one(conv, schema, values)
    if any(isinstance(e, DataError) for e in each):
        with pytest.raises(DataError):
            conv.from_connect_values("t", schema, values)
    good = [v for v, e in zip(values, each, strict=True) if not isinstance(e, DataError)]
    expected = [e for e in each if not isinstance(e, DataError)]
    # Three times over: columns of many values, as a source's batch has.
    assert conv.from_connect_values("t", schema, good * 3) == expected * 3
    return len(good) * 3


def test_every_differential_case_batches_as_written_alone():
    groups: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for case in generate():
        if "value" in case:
            key = (json.dumps(case["config"], sort_keys=True), json.dumps(case["schema"]))
            groups[key].append(case)
    written = 0
    for (config_text, _schema), cases in groups.items():
        conv = _converter(json.loads(config_text))

        def parse_schema(obj: Any, by: JsonConverter = conv) -> Schema | None:
            return by.schema_from_json(json.dumps(obj).encode())

        try:
            schema = None if cases[0]["schema"] is None else parse_schema(cases[0]["schema"])
        except ConnectError:
            continue  # a schema Kafka's side refuses too: no values to write
        values = []
        for case in cases:
            try:
                values.append(python_value(case["value"], schema, parse_schema))
            except ConnectError:
                continue
        written += _check(conv, schema, values)
    assert written > 6_000


RECORD = (
    SchemaBuilder.struct()
    .name("r")
    .field("i8", Schema.INT8_SCHEMA)
    .field("i64", Schema.OPTIONAL_INT64_SCHEMA)
    .field("s", Schema.OPTIONAL_STRING_SCHEMA)
    .field("d", Schema.OPTIONAL_FLOAT64_SCHEMA)
    .field("b", Schema.BOOLEAN_SCHEMA)
    .field("dflt", SchemaBuilder.int32().optional().default_value(42).build())
    .field("tags", SchemaBuilder.array(Schema.STRING_SCHEMA).optional().build())
    .build()
)


def _record(**values: Any) -> Struct:
    struct = Struct(RECORD)
    base = {"i8": 1, "i64": 2, "s": "x", "d": 1.5, "b": True, "dflt": 7, "tags": ["a,b"]}
    for name, v in {**base, **values}.items():
        field = RECORD.field(name)
        assert field is not None
        struct._values[field.index] = v  # unchecked, as a task may build them
    return struct


EDGE_FIELDS: list[dict[str, Any]] = [
    {},
    {"d": 0.0},
    {"d": -0.0},
    {"d": 1e-3},
    {"d": -1e-3},
    {"d": 9.99e-4},
    {"d": 1e7},
    {"d": -1e7},
    {"d": 9999999.999999998},
    {"d": 1e300},
    {"d": math.nan},
    {"d": math.inf},
    {"d": -math.inf},
    {"d": None},
    {"i8": -128},
    {"i8": 127},
    {"i64": 2**63 - 1},
    {"i64": -(2**63)},
    {"i64": None},
    {"dflt": None},
    {"s": None},
    {"s": ""},
    {"s": 'quote " backslash \\ comma , brace }{ \x01 \x1f \x7f'},
    {"s": "é ü 中文 \U0001f600 \U0010ffff"},
    {"s": "lone \ud800 surrogate"},
    {"tags": None},
    {"tags": []},
    {"tags": ["\U0001f600", "\x02,", "\x03", '"\x01,"']},
]
BAD_FIELDS: list[dict[str, Any]] = [
    {"i8": 128},
    {"i8": True},
    {"i64": 2**63},
    {"i64": 1.0},
    {"d": 3},
    {"b": None},
    {"b": 1},
    {"s": b"bytes"},
]


@pytest.mark.parametrize("envelope", ["true", "false"])
def test_struct_fields_at_each_fast_paths_edge(envelope: str):
    conv = _converter({"schemas.enable": envelope})
    for fields in EDGE_FIELDS:
        assert _check(conv, RECORD, [_record(), _record(**fields), _record()]) == 9, fields
    nulls = {"i64": None, "s": None, "d": None, "dflt": None, "tags": None}
    assert _check(conv, RECORD, [_record(**nulls), _record(**nulls)]) == 6  # columns of nulls
    everything = [_record(**fields) for fields in EDGE_FIELDS]
    assert _check(conv, RECORD, everything) == 3 * len(everything)
    for fields in BAD_FIELDS:
        _check(conv, RECORD, [_record(), _record(**fields)])


@pytest.mark.parametrize("envelope", ["true", "false"])
def test_struct_batches_the_fast_path_does_not_take(envelope: str):
    conv = _converter({"schemas.enable": envelope})
    other = SchemaBuilder.struct().name("r").field("i8", Schema.INT8_SCHEMA).build()
    equal = SchemaBuilder.struct().name("r").field("i8", Schema.INT8_SCHEMA).build()
    _check(conv, other, [Struct(other).put("i8", 1), Struct(equal).put("i8", 2)])
    _check(conv, RECORD, [_record(), Struct(other).put("i8", 1)])  # a mismatching schema
    _check(conv, RECORD, [_record(), None])  # a required struct
    _check(conv, RECORD, [_record(), {"i8": 1}])  # not a Struct
    empty = SchemaBuilder.struct().name("e").build()
    _check(conv, empty, [Struct(empty), Struct(empty)])


class _Key(str):
    pass


@pytest.mark.parametrize("envelope", ["true", "false"])
def test_schemaless_batches(envelope: str):
    conv = _converter({"schemas.enable": envelope})
    shaped = [{"id": i, "name": f"n{i}", "score": i / 7, "ok": i % 2 == 0} for i in range(20)]
    batches: list[list[Any]] = [
        shaped,
        [*shaped, None, shaped[0]],  # a tombstone among them
        [*shaped, {"name": "x", "id": 1, "score": 0.5, "ok": True}],  # another key order
        [*shaped, {"id": 1}],  # other keys
        [{"id": 2**63 - 1}, {"id": -(2**63)}],
        [{"id": 1}, {"id": 2**63}],  # beyond int64: fails
        [{"v": 1e7}, {"v": math.nan}, {"v": -0.0}, {"v": 1e-300}, {"v": 1.5}],
        [{"v": [1, {"a": b"\x00"}]}, {"v": {"k": ("t", 2)}}],  # nested: each value converted
        [{"v": "\U0001f600 \x1f"}, {"v": "lone \udc00"}, {"v": None}],
        [{1: "int key"}, {"a": 1}],
        [{"a": 1}, {_Key("a"): 2}],  # an equal key of a str subclass: pairs, as alone
        [{"a": 1, "b": 2}, {"b": 1}, {"a": 2, "b": 3, "c": 4}],  # sizes differ
        [{}, {}],
        ["text", 1, 2.5, True, None, [1, "a,b"], {"a": 1}, b"\x01\x02"],
        [1, 2, 3],
        [1.0, 1e7, -2.5e-4],
        [object()],  # no JSON type: fails
    ]
    for batch in batches:
        _check(conv, None, batch)


def test_a_struct_batch_without_envelopes():
    conv = _converter({"schemas.enable": "false"})
    assert conv.from_connect_values("t", RECORD, [_record(), _record(s="y,", dflt=None)]) == [
        b'{"i8":1,"i64":2,"s":"x","d":1.5,"b":true,"dflt":7,"tags":["a,b"]}',
        b'{"i8":1,"i64":2,"s":"y,","d":1.5,"b":true,"dflt":42,"tags":["a,b"]}',
    ]


def test_large_messages_without_envelopes_stop_the_batches():
    """Past LARGE_MESSAGE bytes a message on average, a converter without envelopes answers
    its batch, then None (the runtime converts one by one); with envelopes it keeps batching."""
    schema = SchemaBuilder.struct().name("big").field("text", Schema.STRING_SCHEMA).build()
    big = [Struct(schema).put("text", "x" * (LARGE_MESSAGE + 10)) for _ in range(3)]
    small = [Struct(schema).put("text", "x") for _ in range(3)]
    plain = _converter({"schemas.enable": "false"})
    assert plain.from_connect_values("t", schema, small) is not None
    first = plain.from_connect_values("t", schema, big)
    assert first == [plain.from_connect_data("t", schema, v) for v in big]
    assert plain.from_connect_values("t", schema, small) is None
    enveloped = _converter({"schemas.enable": "true"})
    for _ in range(2):
        assert enveloped.from_connect_values("t", schema, big) is not None
