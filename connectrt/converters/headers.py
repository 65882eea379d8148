"""SimpleHeaderConverter: header values as text, with Kafka's schema inference on read.

This follows Kafka's ``SimpleHeaderConverter``, which relies on ``Values.convertToString`` to
write and ``Values.parseString`` to read; :func:`convert_to_string` and :func:`parse_string`
are the Python counterparts.

Writing (``from_connect_header``), UTF-8 encoded:

* None -> a null header; ``str`` as is; ``bool`` -> ``true``/``false``; ``int``,
  ``float`` and ``decimal.Decimal`` as numbers (``Infinity``/``-Infinity``/``NaN`` as Java
  writes them); ``bytes`` -> base64;
* ``list``/``tuple`` -> ``[e1,e2]`` and ``dict`` -> ``{k1:v1,k2:v2}``, where strings and
  bytes inside are double-quoted (``"`` and ``\\`` escaped with a backslash) and ``None``
  is ``null``; a :class:`~connectrt.data.struct.Struct` -> ``{"field":value,...}``;
* ``datetime.date`` -> ``yyyy-MM-dd``, ``datetime.time`` -> ``HH:mm:ss.SSSZ`` and
  ``datetime.datetime`` -> ``yyyy-MM-ddTHH:mm:ss.SSSZ`` (UTC; naive values are UTC).

Reading (``to_connect_header``) infers a schema from the text:

* no value -> ``(None, None)``; ``""`` -> STRING; ``null`` -> ``(None, None)``;
  ``true``/``false`` -> BOOLEAN;
* whole numbers (``42``, ``-7``, ``1.0``, ``1e3``) -> the smallest of INT8, INT16, INT32 and
  INT64 that holds them; other numbers -> FLOAT32 when within float range (Kafka's choice;
  the Python value keeps double precision), else FLOAT64, else a Decimal logical type with
  the text's scale (also for whole numbers beyond INT64);
* ``yyyy-MM-dd`` -> Date, ``HH:mm:ss.SSSZ`` -> Time, ``yyyy-MM-ddTHH:mm:ss.SSSZ`` -> Timestamp;
* ``[...]`` -> ARRAY and ``{...}`` -> MAP, elements parsed the same way (strings inside must
  be quoted; a quoted string holding a date/time is that logical type); the element, key and
  value schemas are the common schema of the entries, integers widening to the larger integer
  or float type (values converted accordingly);
* anything else -> STRING holding the text unchanged. Numbers, booleans and ``null`` may be
  surrounded by whitespace.

Where connectrt deliberately differs from Kafka (3.x):

* Kafka ignores text after a complete value (``12:30`` reads as INT8 ``12``, ``[1]x`` as an
  array); here such text is a STRING.
* Kafka keeps the backslash escapes inside quoted strings and drops whitespace-only pieces
  of them; here they are unescaped, so strings inside lists and maps round-trip.
* Lists or maps with ``null`` entries get an optional element/value schema (Kafka gives up
  and returns the text as a STRING). When the entries have no common schema (``[1,"a"]``,
  ``[]``, ``[null]``), Kafka returns a schema with a null element schema, which connectrt
  schemas cannot express: the value is returned schemaless (schema None), and so is a list
  or map holding such a schemaless value. Nested lists and maps merge their item schemas
  (Kafka keeps the last one seen); logical types merge only with themselves (Kafka widens a
  Date with integers).
* Dates and times are read and written in UTC and strictly (Kafka uses the JVM's time zone
  and a lenient parser that accepts ``2023-02-30``); the written form is chosen from the
  Python type rather than from the value's milliseconds.
* A header that is not valid UTF-8 is returned as BYTES (Kafka decodes it with
  replacement characters).

Round trips are exact for None, booleans, integers (INT64 range), strings that do not look
like another type, dates, times (millisecond precision) and lists/maps of those; floats come
back with the inferred width (``2.0`` reads as INT8 ``2``, as in Kafka); bytes come back as
their base64 STRING. To pass header bytes through unchanged use ByteArrayConverter as the
header converter; for typed headers that round-trip exactly, JsonConverter.
"""

from __future__ import annotations

import base64
import datetime as dt
import decimal
import logging
import math
import re
import struct
from collections.abc import Mapping
from typing import Any

from connectrt.api.converter import ConfigKeys, HeaderConverter, SchemaAndValue
from connectrt.data.logical import Date, Time, Timestamp
from connectrt.data.logical import Decimal as DecimalType
from connectrt.data.schema import Schema, Type
from connectrt.data.schema_builder import SchemaBuilder
from connectrt.data.struct import Struct
from connectrt.errors import DataError

__all__ = ["SimpleHeaderConverter", "convert_to_string", "parse_string"]

log = logging.getLogger(__name__)

_CONFIG_KEYS: ConfigKeys = {}

_NULL = SchemaAndValue(None, None)
_TRUE = SchemaAndValue(Schema.BOOLEAN_SCHEMA, True)
_FALSE = SchemaAndValue(Schema.BOOLEAN_SCHEMA, False)

# -- writing ---------------------------------------------------------------------------------


def _escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"')


def _format_float(value: float) -> str:
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    return repr(value)


def _format_time_ms(ms: int) -> str:
    seconds, millis = divmod(ms, 1000)
    minutes, second = divmod(seconds, 60)
    hour, minute = divmod(minutes, 60)
    return f"{hour:02d}:{minute:02d}:{second:02d}.{millis:03d}Z"


def _format_date(value: dt.date) -> str:
    return f"{value.year:04d}-{value.month:02d}-{value.day:02d}"


def _format_timestamp(value: dt.datetime) -> str:
    if value.tzinfo is not None:
        value = value.astimezone(dt.UTC)
    ms = value.hour * 3_600_000 + value.minute * 60_000 + value.second * 1000
    return f"{_format_date(value)}T{_format_time_ms(ms + value.microsecond // 1000)}"


def _append(out: list[str], value: Any, embedded: bool) -> None:
    if value is None:
        out.append("null")
    elif value is True or value is False:
        out.append("true" if value else "false")
    elif isinstance(value, int):
        out.append(str(int(value)))
    elif isinstance(value, float):
        out.append(_format_float(value))
    elif isinstance(value, decimal.Decimal):
        out.append(str(value))
    elif isinstance(value, str):
        out.append(f'"{_escape(value)}"' if embedded else value)
    elif isinstance(value, bytes | bytearray | memoryview):
        text = base64.b64encode(bytes(value)).decode("ascii")
        out.append(f'"{text}"' if embedded else text)
    elif isinstance(value, list | tuple):
        out.append("[")
        for i, element in enumerate(value):
            if i:
                out.append(",")
            _append(out, element, True)
        out.append("]")
    elif isinstance(value, Mapping):
        out.append("{")
        for i, (k, v) in enumerate(value.items()):
            if i:
                out.append(",")
            _append(out, k, True)
            out.append(":")
            _append(out, v, True)
        out.append("}")
    elif isinstance(value, Struct):
        out.append("{")
        for i, f in enumerate(value.schema.fields):
            if i:
                out.append(",")
            _append(out, f.name, True)
            out.append(":")
            _append(out, value.get(f.name), True)
        out.append("}")
    elif isinstance(value, dt.datetime):
        out.append(_format_timestamp(value))
    elif isinstance(value, dt.date):
        out.append(_format_date(value))
    elif isinstance(value, dt.time):
        out.append(_format_time_ms(Time.from_logical(None, value)))
    else:
        raise DataError(
            f"Failed to serialize unexpected value type {type(value).__name__}: {value!r}"
        )


def convert_to_string(schema: Schema | None, value: Any) -> str | None:
    """Kafka's ``Values.convertToString``: the text form of a Connect value (None for None).

    ``schema`` is accepted for symmetry with Kafka and not needed: the form follows the
    Python type. Raises DataError for values that are not Connect values.
    """
    if value is None:
        return None
    out: list[str] = []
    _append(out, value, False)
    return "".join(out)


# -- reading ---------------------------------------------------------------------------------


class _Fail(Exception):
    """The text is not a value of the kind being parsed."""


_DELIMITERS = frozenset(':,{}[]"')
_NUMBER = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
_DATE = re.compile(r"([0-9]{4})-([0-9]{2})-([0-9]{2})")
_TIME = re.compile(r"([0-9]{2}):([0-9]{2}):([0-9]{2})\.([0-9]{3})Z")
_TIMESTAMP = re.compile(r"([0-9]{4})-([0-9]{2})-([0-9]{2})T" + _TIME.pattern)
_TEMPORAL_PREFIX = re.compile(
    r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{3}Z"
    r"|[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{3}Z"
)
_BIGGER_THAN_LONG = decimal.Decimal("1e19")
_INT_SCHEMAS = (
    (Schema.INT8_SCHEMA, 2**7),
    (Schema.INT16_SCHEMA, 2**15),
    (Schema.INT32_SCHEMA, 2**31),
    (Schema.INT64_SCHEMA, 2**63),
)
_NUMERIC_ORDER = {
    Type.INT8: 0,
    Type.INT16: 1,
    Type.INT32: 2,
    Type.INT64: 3,
    Type.FLOAT32: 4,
    Type.FLOAT64: 5,
}


def _parse_temporal(token: str) -> SchemaAndValue | None:
    """Date, Time or Timestamp for exactly Kafka's ISO-8601 forms, else None."""
    try:
        if m := _DATE.fullmatch(token):
            y, mo, d = (int(g) for g in m.groups())
            return SchemaAndValue(Date.SCHEMA, dt.date(y, mo, d))
        if m := _TIME.fullmatch(token):
            h, mi, s, ms = (int(g) for g in m.groups())
            return SchemaAndValue(Time.SCHEMA, dt.time(h, mi, s, ms * 1000))
        if m := _TIMESTAMP.fullmatch(token):
            y, mo, d, h, mi, s, ms = (int(g) for g in m.groups())
            value = dt.datetime(y, mo, d, h, mi, s, ms * 1000, tzinfo=dt.UTC)
            return SchemaAndValue(Timestamp.SCHEMA, value)
    except ValueError:  # month 13, hour 25, ...
        return None
    return None


def _fits_float32(value: float) -> bool:
    try:
        struct.pack("<f", value)
    except OverflowError:
        return False
    return not math.isinf(value)


def _parse_number(token: str) -> SchemaAndValue | None:
    """Kafka's inference for a number literal (Java ``BigDecimal`` syntax), else None."""
    if not _NUMBER.fullmatch(token):
        return None
    number = decimal.Decimal(token)
    exponent = number.as_tuple().exponent
    assert isinstance(exponent, int)  # finite by the regex
    scale = -exponent
    magnitude = abs(number)
    exact = not (magnitude > _BIGGER_THAN_LONG or (magnitude < 1 and magnitude != 0))
    if exact and (exponent >= 0 or number == number.to_integral_value()):
        integral = int(number)
        for schema, bound in _INT_SCHEMAS:
            if -bound <= integral < bound:
                return SchemaAndValue(schema, integral)
    if scale != 0:
        as_float = float(number)
        if _fits_float32(as_float):
            return SchemaAndValue(Schema.FLOAT32_SCHEMA, as_float)
        if not math.isinf(as_float):
            return SchemaAndValue(Schema.FLOAT64_SCHEMA, as_float)
    return SchemaAndValue(DecimalType.schema(scale), number)


def _optional(schema: Schema) -> Schema:
    if schema.optional:
        return schema
    return Schema(
        schema.type,
        optional=True,
        name=schema.name,
        version=schema.version,
        doc=schema.doc,
        parameters=schema.parameters,
        fields=schema.fields,
        key_schema=schema.key_schema,
        value_schema=schema.value_schema,
    )


class _Merger:
    """The common schema of a run of values (Kafka's ``SchemaMerger``, stricter on nesting)."""

    def __init__(self) -> None:
        self.common: Schema | None = None
        self.compatible = True
        self.nullable = False

    def merge(self, item: SchemaAndValue) -> None:
        if item.value is None:
            self.nullable = True
            return
        if not self.compatible:
            return
        schema = item.schema
        if schema is None:  # a schemaless nested value: no common schema
            self.compatible = False
        elif self.common is None:
            self.common = schema
        else:
            self.common = _merge_schemas(self.common, schema)
            self.compatible = self.common is not None

    def schema(self) -> Schema | None:
        if not self.compatible or self.common is None:
            return None
        return _optional(self.common) if self.nullable else self.common


def _merge_schemas(previous: Schema, latest: Schema) -> Schema | None:
    """A schema both fit: integers widen to the larger integer or float type, lists and maps
    merge their item schemas, optional wins; None when there is none (other type mixes)."""
    if previous == latest:
        return previous
    optional = previous.optional or latest.optional
    merged: Schema | None
    if previous.name is not None or latest.name is not None:
        # Logical types (Date, Decimal with a scale, ...) only merge with themselves.
        same = (previous.name, previous.type, previous.parameters) == (
            latest.name,
            latest.type,
            latest.parameters,
        )
        merged = previous if same else None
    elif previous.type in _NUMERIC_ORDER and latest.type in _NUMERIC_ORDER:
        wider = _NUMERIC_ORDER[previous.type] >= _NUMERIC_ORDER[latest.type]
        merged = previous if wider else latest
    elif previous.type is not latest.type:
        merged = None
    elif previous.type is Type.ARRAY:
        assert previous.value_schema is not None and latest.value_schema is not None
        items = _merge_schemas(previous.value_schema, latest.value_schema)
        merged = None if items is None else SchemaBuilder.array(items).build()
    elif previous.type is Type.MAP:
        assert previous.key_schema is not None and latest.key_schema is not None
        assert previous.value_schema is not None and latest.value_schema is not None
        keys = _merge_schemas(previous.key_schema, latest.key_schema)
        values = _merge_schemas(previous.value_schema, latest.value_schema)
        merged = None if keys is None or values is None else SchemaBuilder.map(keys, values).build()
    else:
        merged = previous  # STRING, BOOLEAN, BYTES: they differ in optionality only
    if merged is None:
        return None
    return _optional(merged) if optional else merged


def _align(schema: Schema, value: Any) -> Any:
    """Convert a parsed value to the common schema chosen for it (ints to floats, nested)."""
    if value is None:
        return None
    if schema.type in (Type.FLOAT32, Type.FLOAT64) and schema.name is None:
        return float(value)
    if schema.type is Type.ARRAY and schema.value_schema is not None:
        return [_align(schema.value_schema, v) for v in value]
    if schema.type is Type.MAP and schema.key_schema is not None:
        assert schema.value_schema is not None
        ks, vs = schema.key_schema, schema.value_schema
        return {_align(ks, k): _align(vs, v) for k, v in value.items()}
    return value


class _Parser:
    """Recursive-descent reader of Kafka's ``Values`` text syntax."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0

    def skip_ws(self) -> None:
        text, pos = self.text, self.pos
        while pos < len(text) and text[pos].isspace():
            pos += 1
        self.pos = pos

    def peek(self) -> str:
        self.skip_ws()
        return self.text[self.pos] if self.pos < len(self.text) else ""

    def at_end(self) -> bool:
        return self.peek() == ""

    def token(self) -> str:
        """The text up to the next unescaped delimiter (or the end), trimmed."""
        text, start, pos = self.text, self.pos, self.pos
        escaped = False
        while pos < len(text):
            c = text[pos]
            if c == "\\":
                escaped = not escaped
            elif c in _DELIMITERS and not escaped:
                break
            else:
                escaped = False
            pos += 1
        self.pos = pos
        return text[start:pos].strip()

    def value(self) -> SchemaAndValue:
        """One embedded value (inside a list or map)."""
        c = self.peek()
        if c == '"':
            return self.quoted()
        if c == "[":
            return self.array()
        if c == "{":
            return self.map()
        if c and (c.isdigit() and c.isascii()):
            # Times and timestamps contain ':' (a delimiter), so match them first.
            m = _TEMPORAL_PREFIX.match(self.text, self.pos)
            if m is not None:
                end = m.end()
                rest = self.text[end:].lstrip()
                if not rest or rest[0] in ",]}:":
                    temporal = _parse_temporal(m.group())
                    if temporal is not None:
                        self.pos = end
                        return temporal
        token = self.token()
        if token == "null":
            return _NULL
        if token == "true":
            return _TRUE
        if token == "false":
            return _FALSE
        result = _parse_scalar(token)
        if result is None:
            raise _Fail(f"unquoted text {token!r} inside a list or map")
        return result

    def quoted(self) -> SchemaAndValue:
        text = self.text
        pos = self.pos + 1  # after the opening quote
        chars: list[str] = []
        while pos < len(text):
            c = text[pos]
            if c == "\\" and pos + 1 < len(text):
                nxt = text[pos + 1]
                # \" and \\ are the escapes the writer makes; keep any other backslash.
                chars.append(nxt if nxt in '"\\' else c + nxt)
                pos += 2
                continue
            if c == '"':
                self.pos = pos + 1
                content = "".join(chars)
                temporal = _parse_temporal(content)
                return temporal or SchemaAndValue(Schema.STRING_SCHEMA, content)
            chars.append(c)
            pos += 1
        raise _Fail("unterminated quoted string")

    def array(self) -> SchemaAndValue:
        self.pos += 1  # [
        values: list[Any] = []
        merger = _Merger()
        while True:
            c = self.peek()
            if c == "]":
                self.pos += 1
                break
            if c == "":
                raise _Fail("array is missing its terminating ']'")
            if c == ",":
                raise _Fail("empty array element")
            item = self.value()
            merger.merge(item)
            values.append(item.value)
            c = self.peek()
            if c == ",":
                self.pos += 1  # a trailing comma before ']' is accepted, as in Kafka
            elif c != "]":
                raise _Fail("array elements missing ',' delimiter")
        element = merger.schema()
        if element is None:
            return SchemaAndValue(None, values)
        return SchemaAndValue(
            SchemaBuilder.array(element).build(), [_align(element, v) for v in values]
        )

    def map(self) -> SchemaAndValue:
        self.pos += 1  # {
        entries: list[tuple[Any, Any]] = []
        keys, values = _Merger(), _Merger()
        while True:
            c = self.peek()
            if c == "}":
                self.pos += 1
                break
            if c == "":
                raise _Fail("map is missing its terminating '}'")
            if c == ",":
                raise _Fail("map entry with no key or value")
            key = self.value()
            if key.value is None:
                raise _Fail("map entry may not have a null key")
            if self.peek() != ":":
                raise _Fail("map entry is missing ':'")
            self.pos += 1
            item = self.value()
            entries.append((key.value, item.value))
            keys.merge(key)
            values.merge(item)
            if self.peek() == ",":
                self.pos += 1
        key_schema, value_schema = keys.schema(), values.schema()
        try:
            if key_schema is None or value_schema is None:
                return SchemaAndValue(None, dict(entries))
            result = {_align(key_schema, k): _align(value_schema, v) for k, v in entries}
        except TypeError as e:  # an unhashable key (a list or map)
            raise _Fail(str(e)) from None
        schema = SchemaBuilder.map(key_schema, value_schema).build()
        return SchemaAndValue(schema, result)


def _parse_scalar(token: str) -> SchemaAndValue | None:
    if not token:
        return None
    first = token[0]
    if first.isascii() and first.isdigit():
        temporal = _parse_temporal(token)
        if temporal is not None:
            return temporal
    if first in "+-" or (first.isascii() and first.isdigit()):
        return _parse_number(token)
    return None


def parse_string(text: str | None) -> SchemaAndValue:
    """Kafka's ``Values.parseString``: infer a schema and value from text (see module doc)."""
    if text is None:
        return _NULL
    if text == "":
        return SchemaAndValue(Schema.STRING_SCHEMA, text)
    stripped = text.strip()
    if stripped == "null":
        return _NULL
    if stripped == "true":
        return _TRUE
    if stripped == "false":
        return _FALSE
    if stripped[:1] in ("[", "{"):
        parser = _Parser(text)
        parser.skip_ws()
        try:
            result = parser.array() if stripped[0] == "[" else parser.map()
            if parser.at_end():
                return result
        except (_Fail, RecursionError):
            pass
        return SchemaAndValue(Schema.STRING_SCHEMA, text)
    return _parse_scalar(stripped) or SchemaAndValue(Schema.STRING_SCHEMA, text)


class SimpleHeaderConverter(HeaderConverter):
    """Header values as text, read back with Kafka's schema inference. Stateless, thread-safe."""

    CONFIG_KEYS = _CONFIG_KEYS

    def configure(self, config: Mapping[str, Any]) -> None:
        """Nothing to configure."""

    def from_connect_header(
        self, topic: str, header_key: str, schema: Schema | None, value: Any
    ) -> bytes | None:
        if value is None:
            return None
        try:
            text = convert_to_string(schema, value)
        except DataError as e:
            raise DataError(
                f"Failed to serialize value for header '{header_key}' on topic '{topic}': {e}"
            ) from e
        return None if text is None else text.encode("utf-8")

    def to_connect_header(self, topic: str, header_key: str, data: bytes | None) -> SchemaAndValue:
        if data is None:
            return _NULL
        raw = bytes(data)
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            return SchemaAndValue(Schema.BYTES_SCHEMA, raw)
        try:
            return parse_string(text)
        except Exception:
            # Kafka's fallback as well: keep the raw bytes rather than fail the record.
            log.warning(
                "Failed to deserialize value for header '%s' on topic '%s', so using byte array",
                header_key,
                topic,
                exc_info=True,
            )
            return SchemaAndValue(Schema.BYTES_SCHEMA, raw)
