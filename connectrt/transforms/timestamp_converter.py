"""TimestampConverter: convert timestamps between strings, Unix epoch numbers and the
Date/Time/Timestamp logical types (Kafka's ``TimestampConverter$Key/$Value``).

``field`` names the field to convert (empty = the whole key/value). ``target.type`` is one of
``string``, ``unix``, ``Date``, ``Time``, ``Timestamp``. ``format`` is a Java SimpleDateFormat
pattern (see :mod:`connectrt.transforms._dateformat` for the supported letters), required for
``target.type=string`` and for parsing string inputs; all formatting is in UTC.
``unix.precision`` is the unit of Unix values read and written (``milliseconds`` by default).

Input types are inferred from the schema (INT64 = unix, STRING = string, logical types) or,
without a schema, from the Python value (int, str, datetime, date, time).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from typing import Any, ClassVar

from connectrt.api.config import ConfigDef, ConfigError, ConfigType, Importance, ValidString
from connectrt.api.records import ConnectRecord
from connectrt.api.transform import R
from connectrt.data.logical import Date, Time, Timestamp, logical_name
from connectrt.data.schema import Schema, Type
from connectrt.data.schema_builder import SchemaBuilder
from connectrt.data.struct import Struct
from connectrt.errors import DataError
from connectrt.transforms._dateformat import JavaDateFormat
from connectrt.transforms._util import (
    REPLACE_NULL_ARGS,
    REPLACE_NULL_WITH_DEFAULT,
    SchemaCache,
    field_value,
    require_map,
    require_struct,
    require_struct_schema,
)
from connectrt.transforms.base import Part, PartRewrite

__all__ = ["TimestampConverter", "TimestampConverterKey", "TimestampConverterValue"]

FIELD = "field"
TARGET_TYPE = "target.type"
FORMAT = "format"
UNIX_PRECISION = "unix.precision"
_PURPOSE = "converting timestamp formats"

STRING, UNIX, DATE, TIME, TIMESTAMP = "string", "unix", "Date", "Time", "Timestamp"
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)

_TARGET_SCHEMAS: dict[str, tuple[Schema, Schema]] = {
    STRING: (Schema.STRING_SCHEMA, Schema.OPTIONAL_STRING_SCHEMA),
    UNIX: (Schema.INT64_SCHEMA, Schema.OPTIONAL_INT64_SCHEMA),
    DATE: (Date.SCHEMA, Date.builder().optional().build()),
    TIME: (Time.SCHEMA, Time.builder().optional().build()),
    TIMESTAMP: (Timestamp.SCHEMA, Timestamp.builder().optional().build()),
}


def _java_div(a: int, b: int) -> int:
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


class TimestampConverter(PartRewrite[R]):
    """Convert timestamp representations. Use TimestampConverterKey/TimestampConverterValue."""

    CONFIG_DEF: ClassVar[ConfigDef] = (
        ConfigDef()
        .define(
            FIELD,
            ConfigType.STRING,
            "",
            None,
            Importance.HIGH,
            "The field containing the timestamp, or empty if the entire value is a timestamp",
        )
        .define(
            TARGET_TYPE,
            ConfigType.STRING,
            validator=ValidString.of(STRING, UNIX, DATE, TIME, TIMESTAMP),
            importance=Importance.HIGH,
            documentation="The desired timestamp representation: string, unix, Date, Time, or "
            "Timestamp",
        )
        .define(
            FORMAT,
            ConfigType.STRING,
            "",
            None,
            Importance.MEDIUM,
            "A SimpleDateFormat-compatible format for the timestamp. Used to generate the "
            "output when type=string or used to parse the input if the input is a string.",
        )
        .define(
            UNIX_PRECISION,
            ConfigType.STRING,
            "milliseconds",
            ValidString.of("nanoseconds", "microseconds", "milliseconds", "seconds"),
            Importance.LOW,
            "The desired Unix precision for the timestamp: seconds, milliseconds, "
            "microseconds, or nanoseconds. Used to generate the output when type=unix or used "
            "to parse the input if the input is a Long.",
        )
        .define(*REPLACE_NULL_ARGS)
    )

    def configure(self, config: Mapping[str, Any]) -> None:
        parsed = self.config_def().parse(config)
        self._field: str = parsed[FIELD]
        self._target: str = parsed[TARGET_TYPE]
        fmt: str = parsed[FORMAT]
        if self._target == STRING and not fmt.strip():
            raise ConfigError(
                "TimestampConverter requires format option to be specified when using string "
                "timestamps",
                FORMAT,
                fmt,
            )
        self._format: JavaDateFormat | None = None
        if fmt.strip():
            try:
                self._format = JavaDateFormat(fmt)
            except ValueError as exc:
                raise ConfigError(
                    "TimestampConverter requires a SimpleDateFormat-compatible pattern for "
                    f"string timestamps: {fmt} ({exc})",
                    FORMAT,
                    fmt,
                ) from exc
        self._precision: str = parsed[UNIX_PRECISION]
        self._replace_null = bool(parsed[REPLACE_NULL_WITH_DEFAULT])
        self._cache = SchemaCache()

    # -- conversions -----------------------------------------------------------------------

    def _where(self) -> str:
        where = self.smt_name()
        return f"{where} field {self._field}" if self._field else where

    def _type_of_schema(self, schema: Schema) -> str:
        lname = logical_name(schema)
        if lname == Timestamp.LOGICAL_NAME:
            return TIMESTAMP
        if lname == Date.LOGICAL_NAME:
            return DATE
        if lname == Time.LOGICAL_NAME:
            return TIME
        if schema.type is Type.STRING:
            return STRING
        if schema.type is Type.INT64:
            return UNIX
        raise DataError(
            f"{self._where()}: Schema {schema!r} does not correspond to a known timestamp type "
            "format"
        )

    def _type_of_value(self, value: Any) -> str:
        if isinstance(value, dt.datetime):
            return TIMESTAMP
        if isinstance(value, dt.date):
            return DATE
        if isinstance(value, dt.time):
            return TIME
        if isinstance(value, int) and not isinstance(value, bool):
            return UNIX
        if isinstance(value, str):
            return STRING
        raise DataError(
            f"{self._where()}: TimestampConverter does not support {type(value).__name__} "
            "objects as timestamps"
        )

    def _to_instant(self, value: Any, kind: str) -> dt.datetime:
        where = self._where()
        if kind == STRING:
            if not isinstance(value, str):
                raise DataError(f"{where}: Expected string timestamp, found {value!r}")
            if self._format is None:
                raise DataError(f"{where}: a format is required to parse string timestamps")
            try:
                return self._format.parse(value)
            except (ValueError, OverflowError) as exc:
                raise DataError(
                    f"{where}: Could not parse timestamp: value ({value}) does not match "
                    f"pattern ({self._format.pattern})"
                ) from exc
        if kind == UNIX:
            if isinstance(value, bool) or not isinstance(value, int):
                raise DataError(f"{where}: Expected Unix timestamp (int), found {value!r}")
            if self._precision == "seconds":
                ms = value * 1000
            elif self._precision == "microseconds":
                ms = _java_div(value, 1000)
            elif self._precision == "nanoseconds":
                ms = _java_div(value, 1_000_000)
            else:
                ms = value
            try:
                return _EPOCH + dt.timedelta(milliseconds=ms)
            except OverflowError as exc:
                raise DataError(f"{where}: Unix timestamp {value} is out of range") from exc
        if kind == TIMESTAMP:
            if not isinstance(value, dt.datetime):
                raise DataError(f"{where}: Expected Timestamp (datetime), found {value!r}")
            return value.replace(tzinfo=dt.UTC) if value.tzinfo is None else value
        if kind == DATE:
            if not isinstance(value, dt.date):
                raise DataError(f"{where}: Expected Date (date), found {value!r}")
            return dt.datetime(value.year, value.month, value.day, tzinfo=dt.UTC)
        if not isinstance(value, dt.time):
            raise DataError(f"{where}: Expected Time (time), found {value!r}")
        return dt.datetime.combine(_EPOCH.date(), value.replace(tzinfo=None), tzinfo=dt.UTC)

    def _from_instant(self, instant: dt.datetime) -> Any:
        target = self._target
        if target == STRING:
            assert self._format is not None
            return self._format.format(instant)
        if target == UNIX:
            ms = Timestamp.from_logical(None, instant)
            if self._precision == "seconds":
                return _java_div(ms, 1000)
            if self._precision == "microseconds":
                return ms * 1000
            if self._precision == "nanoseconds":
                return ms * 1_000_000
            return ms
        utc = instant.astimezone(dt.UTC)
        if target == DATE:
            return utc.date()
        if target == TIME:
            return dt.time(utc.hour, utc.minute, utc.second, utc.microsecond // 1000 * 1000)
        return utc.replace(microsecond=utc.microsecond // 1000 * 1000)

    def _convert(self, value: Any, schema: Schema | None) -> Any:
        if value is None:
            return None
        kind = self._type_of_value(value) if schema is None else self._type_of_schema(schema)
        return self._from_instant(self._to_instant(value, kind))

    # -- record handling -------------------------------------------------------------------

    def _target_schema(self, optional: bool) -> Schema:
        required, opt = _TARGET_SCHEMAS[self._target]
        return opt if optional else required

    def rewrite(self, record: ConnectRecord, schema: Schema | None, value: Any) -> Part | None:
        smt = self.smt_name()
        if schema is None:
            if not self._field:
                return None, self._convert(value, None)
            if value is None:
                return None, None
            updated = dict(require_map(value, _PURPOSE, smt))
            updated[self._field] = self._convert(updated.get(self._field), None)
            return None, updated
        if not self._field:
            converted = self._convert(value, schema)
            return self._target_schema(schema.optional), converted
        new_schema = self._updated_schema(schema)
        if value is None:
            return new_schema, None
        struct = require_struct(value, _PURPOSE, smt)
        out = Struct(new_schema)
        for f in struct.schema.fields:
            v = field_value(struct, f, self._replace_null)
            if f.name == self._field:
                v = self._convert(v, f.schema)
            out.put(f.name, v)
        return new_schema, out

    def _updated_schema(self, schema: Schema) -> Schema:
        return self._cache.derived_struct(schema, self._define_fields)

    def _define_fields(self, schema: Schema, builder: SchemaBuilder) -> None:
        """The fields of the struct ``schema``, the converted one in the target type."""
        require_struct_schema(schema, _PURPOSE, self.smt_name())
        for f in schema.fields:
            if f.name == self._field:
                builder.field(f.name, self._target_schema(f.schema.optional))
            else:
                builder.field(f.name, f.schema)


class TimestampConverterKey(TimestampConverter[R], key=True):
    """``org.apache.kafka.connect.transforms.TimestampConverter$Key``."""


class TimestampConverterValue(TimestampConverter[R], key=False):
    """``org.apache.kafka.connect.transforms.TimestampConverter$Value``."""
