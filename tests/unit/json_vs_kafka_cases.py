"""Generated cases for the JSON converter differential against Kafka Connect's JsonConverter.

A case is a dict: ``config`` (the converter's), and either ``schema`` (envelope-style schema
JSON, or None) with ``value`` (a tagged value both sides build: ``{"i32": 5}``, ``{"f64":
"<double bits>"}``, ``{"s": "..."}``, ``{"struct": [...]}``, ``{"dec": [unscaled, scale]}``,
``{"date": days}``, ...), or ``raw`` (bytes to read, base64). :func:`python_value` builds the
Python value of a tag; :func:`canon` turns a value read by connectrt into the tagged form the
Java harness prints for Kafka's. Deterministic for a seed.
"""

from __future__ import annotations

import base64
import datetime as dt
import decimal
import math
import random
import struct
from typing import Any

from connectrt.data import logical
from connectrt.data.logical import RawLogical
from connectrt.data.schema import Schema, Type
from connectrt.data.struct import Struct

__all__ = ["canon", "generate", "python_value"]

_D = struct.Struct("<d")
_Q = struct.Struct("<q")
_F = struct.Struct("<f")
_I = struct.Struct("<i")
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
_DATE_EPOCH = dt.date(1970, 1, 1)
_MS_DAY = 86_400_000
_DEC = "org.apache.kafka.connect.data.Decimal"
_DATE = "org.apache.kafka.connect.data.Date"
_TIME = "org.apache.kafka.connect.data.Time"
_TS = "org.apache.kafka.connect.data.Timestamp"


def _bits64(x: float) -> str:
    return str(_Q.unpack(_D.pack(x))[0])


def _f32bits(x: float) -> str:
    return str(_I.unpack(_F.pack(x))[0])


def prim(t: str, optional: bool = False, **extra: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"type": t, "optional": optional}
    out.update(extra)
    return out


def dec_schema(scale: int, optional: bool = False) -> dict[str, Any]:
    return prim("bytes", optional, name=_DEC, version=1, parameters={"scale": str(scale)})


def logical_schema(name: str, optional: bool = False) -> dict[str, Any]:
    return prim("int64" if name == _TS else "int32", optional, name=name, version=1)


# -- values ---------------------------------------------------------------------------------


def _ints(rng: random.Random, bits: int) -> list[int]:
    lo, hi = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    return [lo, hi, 0, -1, 1, rng.randint(lo, hi), max(lo, min(hi, rng.randint(-1000, 1000)))]


def _doubles(rng: random.Random) -> list[float]:
    fixed = [
        0.0,
        -0.0,
        1.0,
        1e7,
        9999999.0,
        1e-3,
        9.99e-4,
        0.1,
        1e16,
        1e22,
        1e-7,
        2.0**53,
        2.0**55 + 8,
        2.0**62,
        2.0**63,
        5e-324,
        1.7976931348623157e308,
        math.nan,
        math.inf,
        -math.inf,
        123456789.125,
        -1234.5,
    ]
    randoms = []
    for _ in range(6):
        x = _D.unpack(_Q.pack(rng.getrandbits(64) - (1 << 63)))[0]
        if math.isfinite(x):
            randoms.append(x)
    randoms += [round(rng.uniform(-1e4, 1e4), rng.randint(0, 6)) for _ in range(3)]
    randoms += [rng.uniform(-1, 1) * 10 ** rng.randint(-12, 25) for _ in range(4)]
    return fixed + randoms


def _floats32(rng: random.Random) -> list[float]:
    out = [
        0.0,
        -0.0,
        1.0,
        0.1,
        1e7,
        1.17549435e-38,
        3.4028235e38,
        1.4e-45,
        121192382464.0,
        16777217.0,
        math.nan,
        math.inf,
        -math.inf,
    ]
    for _ in range(6):
        x = _F.unpack(_I.pack(rng.getrandbits(32) - (1 << 31)))[0]
        if math.isfinite(x):
            out.append(x)
    out += [rng.uniform(-1, 1) * 10 ** rng.randint(-8, 20) for _ in range(4)]
    return [_F.unpack(_F.pack(x))[0] if math.isfinite(x) else x for x in out]


def _strings(rng: random.Random) -> list[str]:
    return [
        "",
        "plain ascii",
        'quote " backslash \\ slash /',
        "ctl \x00\x01\x08\t\n\x0b\x0c\r\x1f\x7f end",
        "latin é ü ß, cjk 漢字, bmp \u2028\ufeff\uffff",
        "emoji 😀 and 𝄞 and \U0010ffff",
        "lone \ud800 high",
        "lone \udfff low",
        "pair by halves \ud83d\ude00",
        "".join(
            chr(
                rng.choice(
                    [
                        rng.randint(32, 126),
                        rng.randint(0x80, 0xD7FF),
                        rng.randint(0x10000, 0x10FFFF),
                        rng.randint(0, 31),
                    ]
                )
            )
            for _ in range(rng.randint(1, 12))
        ),
    ]


def _decimals(rng: random.Random, scale: int) -> list[list[Any]]:
    vals = [0, 1, -1, 12345, -98765432109876543210, rng.randint(-(10**30), 10**30), 255, -256, 128]
    return [[str(v), scale] for v in vals]


# -- generation -----------------------------------------------------------------------------


def _primitive_cases(rng: random.Random) -> list[tuple[Any, Any]]:
    """(schema, tagged value) pairs: each primitive type, its bounds, nulls and defaults."""
    out: list[tuple[Any, Any]] = []
    for t, tag, bits in (("int8", "i8", 8), ("int16", "i16", 16), ("int32", "i32", 32)):
        out += [(prim(t), {tag: v}) for v in _ints(rng, bits)]
        out.append((prim(t), {"big": str((1 << (bits - 1)) + 5)}))  # out of range
    out += [(prim("int64"), {"i64": str(v)}) for v in _ints(rng, 64)]
    out.append((prim("int64"), {"big": str(1 << 64)}))
    out += [(prim("double"), {"f64": _bits64(x)}) for x in _doubles(rng)]
    out += [(prim("float"), {"f32": _f32bits(x)}) for x in _floats32(rng)]
    out += [(prim("boolean"), {"b": b}) for b in (True, False)]
    out += [(prim("string"), {"s": s}) for s in _strings(rng)]
    out += [
        (prim("bytes"), {"bytes": base64.b64encode(rng.randbytes(n)).decode()})
        for n in (0, 1, 7, 40)
    ]
    # optional, required null, defaults
    for t, tag, v, d in (
        ("int32", "i32", 7, 42),
        ("string", "s", "x", "dflt"),
        ("double", "f64", _bits64(2.5), 1e10),
        ("boolean", "b", True, False),
        ("float", "f32", _f32bits(0.5), 0.25),
    ):
        out.append((prim(t, True), None))
        out.append((prim(t, True), {tag: v}))
        out.append((prim(t), None))
        out.append((prim(t, False, default=d), None))
        out.append((prim(t, True, default=d), None))
    # wrong types
    out += [
        (prim("float"), {"i32": 60}),
        (prim("double"), {"i64": "60"}),
        (prim("int32"), {"s": "5"}),
        (prim("int64"), {"f64": _bits64(1.5)}),
        (prim("string"), {"i32": 1}),
        (prim("string"), {"bytes": "AAE="}),
        (prim("boolean"), {"i8": 1}),
        (prim("bytes"), {"s": "AAE="}),
        (prim("int8"), {"b": True}),
        (prim("array", items=prim("int32")), {"map": []}),
        (prim("map", keys=prim("string"), values=prim("int32")), {"arr": []}),
        (prim("struct", fields=[prim("int32", field="a")]), {"i32": 1}),
        (
            prim("struct", fields=[prim("int32", field="a")]),
            {"struct": [{"i32": 1}], "schema": prim("struct", fields=[prim("int64", field="a")])},
        ),
    ]
    return out


def _logical_cases(rng: random.Random) -> list[tuple[Any, Any, bool]]:
    """(schema, tagged value, numeric?) for the four logical types."""
    out: list[tuple[Any, Any, bool]] = []
    for numeric in (False, True):
        for scale in (-3, -1, 0, 2, 5):
            for d in _decimals(rng, scale):
                out.append((dec_schema(scale), {"dec": d}, numeric))
            out.append((dec_schema(scale), {"dec": ["208", scale + 1]}, numeric))  # mismatch
            out.append((dec_schema(scale), {"dec": ["208", scale - 1]}, numeric))
            out.append((dec_schema(scale), {"f64": _bits64(1.5)}, numeric))
        out.append((dec_schema(2, True), None, numeric))
        out.append(
            (dec_schema(2, False) | {"default": "AQ==" if not numeric else 0.01}, None, numeric)
        )
    for days in (
        0,
        1,
        -1,
        2932896,
        2932897,
        -719162,
        -719163,
        3_000_000,
        -3_000_000,
        rng.randint(-700000, 2900000),
        (1 << 31) - 1,
        -(1 << 31),
    ):
        out.append((logical_schema(_DATE), {"date": str(days)}, False))
    out.append((logical_schema(_DATE), {"dt": str(86_400_000 * 3 + 5)}, False))  # not midnight
    out.append((logical_schema(_DATE), {"dt": str(86_400_000 * 3)}, False))
    out.append((logical_schema(_DATE), {"i32": 3}, False))
    for ms in (0, 1, 86_399_999, 86_400_000, rng.randint(0, 86_399_999)):
        out.append((logical_schema(_TIME), {"time": str(ms)}, False))
    out.append((logical_schema(_TIME), {"i32": 5}, False))
    for ms in (
        0,
        -1,
        1_700_000_000_123,
        253402300799999,
        253402300800000,
        -62135596800000,
        -62135596800001,
        10**15,
        -(10**15),
        (1 << 62),
        -(1 << 62),
        rng.randint(-(10**13), 10**13),
    ):
        out.append((logical_schema(_TS), {"ts": str(ms)}, False))
    out.append((logical_schema(_TS), {"i64": "5"}, False))
    out.append((logical_schema(_TS, True), None, False))
    return out


def _container_cases(rng: random.Random, leaves: list[tuple[Any, Any]]) -> list[tuple[Any, Any]]:
    """Arrays, maps (string and non-string keys) and nested structs of generated leaves."""
    out: list[tuple[Any, Any]] = []
    good = [(s, v) for s, v in leaves if v is not None and s["type"] != "struct"]
    for _ in range(1200):
        k = rng.randint(1, 5)
        picks = rng.sample(good, k)
        fields = [dict(s, field=f"f{i}") for i, (s, _) in enumerate(picks)]
        inner = prim("struct", fields=fields, name="inner.Rec")
        inner_val = {"struct": [v for _, v in picks]}
        s0, v0 = rng.choice(good)
        choice = rng.randrange(6)
        if choice == 0:
            out.append((inner, inner_val))
        elif choice == 1:
            out.append((prim("array", items=s0), {"arr": [v0, v0]}))
        elif choice == 2:
            out.append(
                (
                    prim("map", keys=prim("string"), values=s0),
                    {"map": [[{"s": "k1"}, v0], [{"s": "ké😀"}, v0]]},
                )
            )
        elif choice == 3:
            kt, kv = rng.choice(
                [
                    ("int32", {"i32": 3}),
                    ("int64", {"i64": "-9"}),
                    ("boolean", {"b": True}),
                    ("double", {"f64": _bits64(2.5)}),
                ]
            )
            out.append((prim("map", keys=prim(kt), values=s0), {"map": [[kv, v0]]}))
        elif choice == 4:
            outer = prim(
                "struct",
                fields=[
                    dict(inner, field="rec"),
                    dict(prim("array", items=inner), field="recs"),
                    prim("string", True, field="note"),
                ],
            )
            out.append((outer, {"struct": [inner_val, {"arr": [inner_val]}, None]}))
        else:
            out.append(
                (prim("map", keys=prim("string"), values=inner), {"map": [[{"s": "a"}, inner_val]]})
            )
    return out


def _schemaless_values(rng: random.Random) -> list[Any]:
    vals: list[Any] = [
        {"i64": "5"},
        {"i64": str(-(1 << 63))},
        {"big": str(1 << 63)},
        {"big": str(1 << 70)},
        {"b": False},
        {"bytes": "AQID"},
        {"map": [[{"s": "a"}, {"i64": "1"}], [{"s": "b"}, {"f64": _bits64(0.5)}]]},
        {"map": [[{"i64": "1"}, {"s": "one"}]]},
        {"map": [[{"s": "a"}, {"i64": "1"}], [{"i64": "2"}, {"i64": "2"}]]},
        {"map": []},
        {"arr": [{"i64": "1"}, {"s": "x"}, None, {"arr": []}]},
        {"dec": ["15", 1]},
        {"struct": [{"i32": 1}], "schema": prim("struct", fields=[prim("int32", field="a")])},
    ]
    vals += [{"f64": _bits64(x)} for x in _doubles(rng)]
    vals += [{"s": s} for s in _strings(rng)]
    return vals


def _raw_cases() -> list[tuple[bool, bytes]]:
    """(schemas.enable, bytes) read by both."""
    bare = [
        b"",
        b"  \n",
        b'{"a":1} trailing',
        b"[1,2]]",
        b'"abc"xyz',
        b"1 2",
        b"1x",
        b"truex",
        b"true]",
        b"null ",
        b"007",
        b"-0.0",
        b"-0",
        b"[-0.0, 0.5, -0e3]",
        b"123456789012345678901234567890",
        b"18446744073709551615",
        b"9223372036854775808",
        b"[-9223372036854775809, 1]",
        b"1e400",
        b"-1e400",
        b'"NaN"',
        b"1.5e-7",
        b'{"x": {"y": [1.0, -0.0]}}',
        b"\xef\xbb\xbf1",
    ]
    env = [
        b'{"schema":{"type":"float","optional":false},"payload":1e39}',
        b'{"schema":{"type":"float","optional":false},"payload":0.1}',
        b'{"schema":{"type":"float","optional":false},"payload":-0.0}',
        b'{"schema":{"type":"double","optional":false},"payload":-0.0}',
        b'{"schema":{"type":"double","optional":false},"payload":"NaN"}',
        b'{"schema":{"type":"double","optional":false},"payload":"-Infinity"}',
        b'{"schema":{"type":"double","optional":false},"payload":1e400}',
        b'{"schema":{"type":"int8","optional":false},"payload":300}',
        b'{"schema":{"type":"int32","optional":false},"payload":3000000000}',
        b'{"schema":{"type":"int64","optional":false},"payload":18446744073709551621}',
        b'{"schema":{"type":"int64","optional":false},"payload":123456789012345678901234567890}',
        b'{"schema":{"type":"int32","optional":false,"name":"org.apache.kafka.connect.data.Time",'
        b'"version":1},"payload":86400000}',
        b'{"schema":{"type":"int32","optional":false,"name":"org.apache.kafka.connect.data.Date",'
        b'"version":1},"payload":3000000}',
        b'{"schema":{"type":"int64","optional":false,"name":'
        b'"org.apache.kafka.connect.data.Timestamp","version":1},"payload":1000000000000000}',
        b'{"schema":null,"payload":[-0.0, 18446744073709551616]}',
        b'{"schema":{"type":"string","optional":false},"payload":"x"} garbage',
        b"",
        b'{"schema":null}',
    ]
    return [(False, b) for b in bare] + [(True, b) for b in bare[:4]] + [(True, b) for b in env]


def generate(seed: int = 32) -> list[dict[str, Any]]:
    """Every case, in a deterministic order, each with a unique ``id``."""
    rng = random.Random(seed)
    cases: list[dict[str, Any]] = []

    def add(config: dict[str, str], **case: Any) -> None:
        case["id"] = len(cases)
        case["config"] = config
        cases.append(case)

    leaves = _primitive_cases(rng)
    logicals = _logical_cases(rng)
    with_schema = leaves + _container_cases(rng, leaves + [(s, v) for s, v, n in logicals if not n])
    for enable in ("true", "false"):
        for schema, value in with_schema:
            add({"schemas.enable": enable}, schema=schema, value=value)
        for schema, value, numeric in logicals:
            add(
                {"schemas.enable": enable, "decimal.format": "NUMERIC" if numeric else "BASE64"},
                schema=schema,
                value=value,
            )
        for value in _schemaless_values(rng):
            add({"schemas.enable": enable}, schema=None, value=value)
        add({"schemas.enable": enable}, schema=None, value=None)  # tombstone
    for schema, value in leaves[:80]:
        add(
            {"schemas.enable": "true", "replace.null.with.default": "false"},
            schema=schema,
            value=value,
        )
    for enable, raw in _raw_cases():
        add(
            {"schemas.enable": "true" if enable else "false", "decimal.format": "NUMERIC"},
            raw=base64.b64encode(raw).decode(),
        )
    return cases


# -- Python side ----------------------------------------------------------------------------


def python_value(tag: Any, schema: Schema | None, parse_schema: Any) -> Any:
    """The Python value a tag describes (``schema``: the Connect schema at this position)."""
    if tag is None:
        return None
    (kind,) = (k for k in tag if k != "schema")
    v = tag[kind]
    if kind in ("i8", "i16", "i32", "i64", "big"):
        return int(v)
    if kind == "f32":
        return _F.unpack(_I.pack(int(v)))[0]
    if kind == "f64":
        return _D.unpack(_Q.pack(int(v)))[0]
    if kind in ("b", "s"):
        return v
    if kind == "bytes":
        return base64.b64decode(v)
    if kind == "dec":
        unscaled, scale = int(v[0]), v[1]
        digits = tuple(int(c) for c in str(abs(unscaled)))
        return decimal.Decimal((1 if unscaled < 0 else 0, digits, -scale))
    if kind == "date":
        try:
            return _DATE_EPOCH + dt.timedelta(days=int(v))
        except OverflowError:
            return RawLogical(int(v))
    if kind == "time":
        ms = int(v)
        if ms >= _MS_DAY:
            return RawLogical(ms)
        return (dt.datetime.min + dt.timedelta(milliseconds=ms)).time()
    if kind in ("ts", "dt"):
        try:
            return _EPOCH + dt.timedelta(milliseconds=int(v))
        except OverflowError:
            return RawLogical(int(v))
    if kind == "arr":
        item = schema.value_schema if schema is not None and schema.type is Type.ARRAY else None
        return [python_value(x, item, parse_schema) for x in v]
    if kind == "map":
        is_map = schema is not None and schema.type is Type.MAP
        ks = schema.key_schema if is_map else None  # type: ignore[union-attr]
        vs = schema.value_schema if is_map else None  # type: ignore[union-attr]
        return {python_value(k, ks, parse_schema): python_value(x, vs, parse_schema) for k, x in v}
    if kind == "struct":
        s = parse_schema(tag["schema"]) if "schema" in tag else schema
        values = [python_value(x, f.schema, parse_schema) for x, f in zip(v, s.fields, strict=True)]
        return Struct._from_values(s, values)
    raise AssertionError(kind)


def _ms_of(schema: Schema | None, v: Any) -> int | None:
    name = logical.logical_name(schema) if schema is not None else None
    if name == _DATE:
        return int(v) * _MS_DAY if type(v) is RawLogical else (v - _DATE_EPOCH).days * _MS_DAY
    if name == _TIME:
        if type(v) is RawLogical:
            return int(v)
        return ((v.hour * 60 + v.minute) * 60 + v.second) * 1000 + v.microsecond // 1000
    if name == _TS:
        return int(v) if type(v) is RawLogical else (v - _EPOCH) // dt.timedelta(milliseconds=1)
    return None


def canon(schema: Schema | None, v: Any) -> Any:
    """A value connectrt read, in the harness's tagged form (maps as sorted pairs)."""
    if v is None:
        return None
    ms = _ms_of(schema, v)
    if ms is not None:
        return {"ms": str(ms)}
    if type(v) is bool:
        return {"bool": v}
    if isinstance(v, int):
        return {"int": str(v)}
    if isinstance(v, float):
        return {"f": _bits64(v)}
    if isinstance(v, str):
        return {"s": v}
    if isinstance(v, bytes | bytearray):
        return {"bytes": base64.b64encode(v).decode()}
    if isinstance(v, decimal.Decimal):
        sign, digits, exp = v.as_tuple()
        unscaled = int("".join(map(str, digits)) or "0") * (-1 if sign else 1)
        return {"dec": [str(unscaled), -int(exp)]}
    if isinstance(v, list):
        item = schema.value_schema if schema is not None else None
        return {"arr": [canon(item, x) for x in v]}
    if isinstance(v, dict):
        ks = schema.key_schema if schema is not None else None
        vs = schema.value_schema if schema is not None else None
        return {"map": sort_pairs([[canon(ks, k), canon(vs, x)] for k, x in v.items()])}
    if isinstance(v, Struct):
        return {"struct": [canon(f.schema, v._values[i]) for i, f in enumerate(v.schema.fields)]}
    return {"unknown": type(v).__name__}


def sort_pairs(pairs: list[Any]) -> list[Any]:
    """Map entries in a canonical order (Kafka's HashMap iterates in hash order)."""
    import json

    return sorted(pairs, key=lambda p: json.dumps(p, sort_keys=True))


def java_canon(v: Any) -> Any:
    """The harness's tagged value with its maps' entries sorted as :func:`canon` sorts them."""
    if isinstance(v, dict):
        if "map" in v:
            return {"map": sort_pairs([[java_canon(k), java_canon(x)] for k, x in v["map"]])}
        return {k: java_canon(x) for k, x in v.items()}
    if isinstance(v, list):
        return [java_canon(x) for x in v]
    return v
