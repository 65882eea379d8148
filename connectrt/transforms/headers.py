"""Header SMTs: ``DropHeaders``, ``HeaderFrom$Key/$Value`` and ``InsertHeader``."""

from __future__ import annotations

import datetime as dt
import decimal
import re
from collections.abc import Mapping
from typing import Any, ClassVar

from connectrt.api.config import (
    ConfigDef,
    ConfigError,
    ConfigType,
    Importance,
    NonEmptyString,
    ValidString,
)
from connectrt.api.records import ConnectRecord, Header
from connectrt.api.transform import R
from connectrt.data.logical import Date, Decimal, Time, Timestamp
from connectrt.data.schema import Schema
from connectrt.data.schema_builder import SchemaBuilder
from connectrt.data.struct import Struct
from connectrt.data.values import INT_RANGES
from connectrt.errors import DataError
from connectrt.transforms._util import (
    REPLACE_NULL_ARGS,
    REPLACE_NULL_WITH_DEFAULT,
    SchemaCache,
    copy_record,
    field_value,
    non_empty_list,
    require_map,
    require_struct,
)
from connectrt.transforms.base import BundledTransformation, KeyOrValueTransformation

__all__ = [
    "DropHeaders",
    "HeaderFrom",
    "HeaderFromKey",
    "HeaderFromValue",
    "InsertHeader",
    "parse_literal",
]


class DropHeaders(BundledTransformation[R]):
    """Remove every header whose key is in ``headers``."""

    CONFIG_DEF: ClassVar[ConfigDef] = ConfigDef().define(
        "headers",
        ConfigType.LIST,
        validator=non_empty_list,
        importance=Importance.HIGH,
        documentation="The name of the headers to be removed.",
    )

    def configure(self, config: Mapping[str, Any]) -> None:
        self._names = frozenset(self.config_def().parse(config)["headers"])

    def apply(self, record: R) -> R:
        if not record.headers:
            return record
        kept = [h for h in record.headers if h.key not in self._names]
        if len(kept) == len(record.headers):
            return record
        return copy_record(record, headers=kept)


FIELDS = "fields"
HEADERS = "headers"
OPERATION = "operation"
_MOVE, _COPY = "move", "copy"


class HeaderFrom(KeyOrValueTransformation[R]):
    """Copy or move fields of the key/value into headers. Use HeaderFromKey/HeaderFromValue.

    The header gets the field's schema (None without a schema). Null keys/values pass through.
    """

    CONFIG_DEF: ClassVar[ConfigDef] = (
        ConfigDef()
        .define(
            FIELDS,
            ConfigType.LIST,
            validator=non_empty_list,
            importance=Importance.HIGH,
            documentation="Field names in the record whose values are to be copied or moved "
            "to headers.",
        )
        .define(
            HEADERS,
            ConfigType.LIST,
            validator=non_empty_list,
            importance=Importance.HIGH,
            documentation="Header names, in the same order as the field names listed in the "
            "fields configuration property.",
        )
        .define(
            OPERATION,
            ConfigType.STRING,
            validator=ValidString.of(_MOVE, _COPY),
            importance=Importance.HIGH,
            documentation="Either <code>move</code> if the fields are to be moved to the "
            "headers (removed from the key/value), or <code>copy</code> if the fields are to "
            "be copied to the headers (retained in the key/value).",
        )
        .define(*REPLACE_NULL_ARGS)
    )

    def configure(self, config: Mapping[str, Any]) -> None:
        parsed = self.config_def().parse(config)
        self._fields: list[str] = parsed[FIELDS]
        self._headers: list[str] = parsed[HEADERS]
        if len(self._fields) != len(self._headers):
            raise ConfigError(
                f"'{FIELDS}' config must have the same number of elements as '{HEADERS}' config.",
                HEADERS,
                parsed[HEADERS],
            )
        self._move = parsed[OPERATION] == _MOVE
        self._replace_null = bool(parsed[REPLACE_NULL_WITH_DEFAULT])
        self._cache = SchemaCache()

    def apply(self, record: R) -> R:
        moved = self._moved(record)
        if moved is None:
            return record
        r = self.with_part(record, moved[0], moved[1])
        r.headers = moved[2]
        return r

    def apply_owned(self, record: R) -> R:
        moved = self._moved(record)
        if moved is not None:
            self.set_part(record, moved[0], moved[1])
            record.headers = moved[2]
        return record

    def _moved(self, record: ConnectRecord) -> tuple[Schema | None, Any, list[Header]] | None:
        """The new part and headers of ``record``; None when its part is null (kept)."""
        schema, value = self.part(record)
        if value is None:
            return None
        smt = self.smt_name()
        headers = list(record.headers or ())
        if schema is None:
            data = require_map(value, "header " + (_MOVE if self._move else _COPY), smt)
            for field, header in zip(self._fields, self._headers, strict=True):
                headers.append(Header(header, data.get(field), None))
            updated: Any = data
            if self._move:
                moved = set(self._fields)
                updated = {k: v for k, v in data.items() if k not in moved}
            return None, updated, headers
        struct = require_struct(value, "header " + (_MOVE if self._move else _COPY), smt)
        for field_name, header in zip(self._fields, self._headers, strict=True):
            f = struct.schema.field(field_name)
            if f is None:
                raise DataError(f"{smt}: {field_name} is not a valid field name")
            headers.append(Header(header, field_value(struct, f, self._replace_null), f.schema))
        new_schema: Schema = schema
        new_value: Any = struct
        if self._move:
            new_schema = self._moved_schema(schema)
            new_value = Struct(new_schema)
            for f in new_schema.fields:
                new_value.put(f.name, field_value(struct, f.name, self._replace_null))
        return new_schema, new_value, headers

    def _moved_schema(self, schema: Schema) -> Schema:
        return self._cache.derived_struct(schema, self._define_kept_fields)

    def _define_kept_fields(self, schema: Schema, builder: SchemaBuilder) -> None:
        """The fields of ``schema`` not moved into headers."""
        moved = set(self._fields)
        for f in schema.fields:
            if f.name not in moved:
                builder.field(f.name, f.schema)


class HeaderFromKey(HeaderFrom[R], key=True):
    """``org.apache.kafka.connect.transforms.HeaderFrom$Key``."""


class HeaderFromValue(HeaderFrom[R], key=False):
    """``org.apache.kafka.connect.transforms.HeaderFrom$Value``."""


_INT = re.compile(r"[+-]?\d+")
_FLOAT = re.compile(r"[+-]?(\d+\.\d*|\.\d+|\d+)([eE][+-]?\d+)?")
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
_TIME = re.compile(r"\d{2}:\d{2}:\d{2}\.\d{3}Z")
_TIMESTAMP = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z")
_INT_SCHEMAS = (
    Schema.INT8_SCHEMA,
    Schema.INT16_SCHEMA,
    Schema.INT32_SCHEMA,
    Schema.INT64_SCHEMA,
)


def parse_literal(text: str) -> tuple[Schema | None, Any]:
    """Infer a schema and value from a literal string, like Kafka's ``Values.parseString``.

    ``true``/``false`` -> BOOLEAN; integers -> the narrowest of INT8..INT64 (else Decimal);
    other numbers -> FLOAT32 when in range, else FLOAT64; ISO-8601 ``yyyy-MM-dd``,
    ``HH:mm:ss.SSSZ`` and ``yyyy-MM-ddTHH:mm:ss.SSSZ`` -> Date/Time/Timestamp; ``null`` -> no
    schema and None; anything else -> STRING. Arrays and maps stay strings (a gap vs Kafka).
    """
    s = text.strip()
    if s.lower() in ("true", "false"):
        return Schema.BOOLEAN_SCHEMA, s.lower() == "true"
    if s == "null":
        return None, None
    if _INT.fullmatch(s):
        n = int(s)
        for schema in _INT_SCHEMAS:
            lo, hi = INT_RANGES[schema.type]
            if lo <= n <= hi:
                return schema, n
        return Decimal.schema(0), decimal.Decimal(n)
    if _FLOAT.fullmatch(s):
        f = float(s)
        if abs(f) <= 3.4028234663852886e38:
            return Schema.FLOAT32_SCHEMA, f
        if f not in (float("inf"), float("-inf")):
            return Schema.FLOAT64_SCHEMA, f
        d = decimal.Decimal(s)
        exponent = d.as_tuple().exponent
        scale = -exponent if isinstance(exponent, int) else 0
        return Decimal.schema(scale), d
    try:
        if _TIMESTAMP.fullmatch(s):
            return Timestamp.SCHEMA, dt.datetime.strptime(s, "%Y-%m-%dT%H:%M:%S.%fZ").replace(
                tzinfo=dt.UTC
            )
        if _DATE.fullmatch(s):
            return Date.SCHEMA, dt.date.fromisoformat(s)
        if _TIME.fullmatch(s):
            return Time.SCHEMA, dt.time.fromisoformat(s[:-1])
    except ValueError:
        pass
    return Schema.STRING_SCHEMA, text


class InsertHeader(BundledTransformation[R]):
    """Add a header whose value (and schema) is inferred from the ``value.literal`` string."""

    CONFIG_DEF: ClassVar[ConfigDef] = (
        ConfigDef()
        .define(
            "header",
            ConfigType.STRING,
            validator=NonEmptyString(),
            importance=Importance.HIGH,
            documentation="The name of the header.",
        )
        .define(
            "value.literal",
            ConfigType.STRING,
            validator=NonEmptyString(),
            importance=Importance.HIGH,
            documentation="The literal value that is to be set as the header value on all records.",
        )
    )

    def configure(self, config: Mapping[str, Any]) -> None:
        parsed = self.config_def().parse(config)
        self._header: str = parsed["header"]
        schema, value = parse_literal(parsed["value.literal"])
        self._value = Header(self._header, value, schema)

    def apply(self, record: R) -> R:
        headers = [*(record.headers or ()), self._value]
        return copy_record(record, headers=headers)
