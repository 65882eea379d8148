"""MaskField: replace fields with an empty value of their type, or with ``replacement``.

Empty values: ``0``/``0.0`` for numbers, ``False``, ``""``, ``b""``, ``Decimal(0)``, the Unix
epoch for Date/Time/Timestamp, ``[]`` and ``{}``. A ``replacement`` is parsed as the field's type
and is only allowed for numeric and string fields (as in Kafka). Struct fields cannot be masked.
Null keys/values pass through; null field values stay null.
"""

from __future__ import annotations

import datetime as dt
import decimal
from collections.abc import Mapping
from typing import Any, ClassVar

from connectrt.api.config import ConfigDef, ConfigType, Importance, NonEmptyString
from connectrt.api.records import ConnectRecord
from connectrt.api.transform import R
from connectrt.data.empty import (
    EMPTY_LOGICAL,
    EMPTY_PRIMITIVE,
    EPOCH_DATE,
    EPOCH_TIME,
    EPOCH_TIMESTAMP,
)
from connectrt.data.logical import Decimal, logical_name
from connectrt.data.schema import Schema, Type
from connectrt.data.struct import Struct
from connectrt.data.values import INT_RANGES
from connectrt.errors import DataError
from connectrt.transforms._util import (
    REPLACE_NULL_ARGS,
    REPLACE_NULL_WITH_DEFAULT,
    field_value,
    infer_type,
    non_empty_list,
    require_map,
    require_struct,
)
from connectrt.transforms.base import Part, PartRewrite

__all__ = ["MaskField", "MaskFieldKey", "MaskFieldValue"]

FIELDS = "fields"
REPLACEMENT = "replacement"
_PURPOSE = "mask fields"


def _empty_for_schema(schema: Schema) -> Any:
    lname = logical_name(schema)
    if lname == Decimal.LOGICAL_NAME:
        return decimal.Decimal(0).scaleb(-Decimal.scale(schema))
    if lname is not None:
        return EMPTY_LOGICAL[lname]
    return EMPTY_PRIMITIVE.get(schema.type)


def _empty_for_value(value: Any) -> Any:
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return 0
    if isinstance(value, float):
        return 0.0
    if isinstance(value, str):
        return ""
    if isinstance(value, bytes | bytearray | memoryview):
        return b""
    if isinstance(value, decimal.Decimal):
        return decimal.Decimal(0)
    if isinstance(value, dt.datetime):
        return EPOCH_TIMESTAMP
    if isinstance(value, dt.date):
        return EPOCH_DATE
    if isinstance(value, dt.time):
        return EPOCH_TIME
    if isinstance(value, list | tuple):
        return []
    if isinstance(value, Mapping):
        return {}
    return _UNMASKABLE


_UNMASKABLE = object()


class MaskField(PartRewrite[R]):
    """Mask fields with empty values or ``replacement``. Use MaskFieldKey/MaskFieldValue."""

    CONFIG_DEF: ClassVar[ConfigDef] = (
        ConfigDef()
        .define(
            FIELDS,
            ConfigType.LIST,
            validator=non_empty_list,
            importance=Importance.HIGH,
            documentation="Names of fields to mask.",
        )
        .define(
            REPLACEMENT,
            ConfigType.STRING,
            None,
            NonEmptyString(),
            Importance.LOW,
            "Custom value replacement, that will be applied to all 'fields' values (numeric or "
            "non-empty string values only).",
        )
        .define(*REPLACE_NULL_ARGS)
    )

    def configure(self, config: Mapping[str, Any]) -> None:
        parsed = self.config_def().parse(config)
        self._fields = frozenset(parsed[FIELDS])
        self._replacement: str | None = parsed[REPLACEMENT]
        self._replace_null = bool(parsed[REPLACE_NULL_WITH_DEFAULT])

    def rewrite(self, record: ConnectRecord, schema: Schema | None, value: Any) -> Part | None:
        if value is None:
            return None
        smt = self.smt_name()
        if schema is None:
            data = require_map(value, _PURPOSE, smt)
            updated = dict(data)
            for name in self._fields:
                if name in data:
                    updated[name] = self._mask(None, data[name], name)
            return None, updated
        struct = require_struct(value, _PURPOSE, smt)
        out = Struct(struct.schema)
        for f in struct.schema.fields:
            v = field_value(struct, f, self._replace_null)
            if f.name in self._fields:
                v = self._mask(f.schema, v, f.name)
            out.put(f, v)
        return struct.schema, out

    def _mask(self, schema: Schema | None, value: Any, name: str) -> Any:
        if value is None:
            return None
        smt = self.smt_name()
        if self._replacement is not None:
            return self._replace(schema, value, name)
        if schema is not None:
            if schema.type is Type.ARRAY:
                return []
            if schema.type is Type.MAP:
                return {}
            empty = _empty_for_schema(schema)
        else:
            empty = _empty_for_value(value)
        if empty is None or empty is _UNMASKABLE:
            kind = schema.type.name if schema is not None else type(value).__name__
            raise DataError(f"{smt}: Cannot mask value of type {kind} (field {name})")
        return empty

    def _replace(self, schema: Schema | None, value: Any, name: str) -> Any:
        smt = self.smt_name()
        text = self._replacement
        assert text is not None
        t = infer_type(value) if schema is None else schema.type
        lname = None if schema is None else logical_name(schema)
        is_decimal = lname == Decimal.LOGICAL_NAME or isinstance(value, decimal.Decimal)
        try:
            if is_decimal:
                result = decimal.Decimal(text)
                if schema is not None:
                    result = Decimal.rescale(result, Decimal.scale(schema))
                return result
            if lname is None and t in INT_RANGES and not isinstance(value, bool):
                n = int(text)
                lo, hi = INT_RANGES[t] if schema is not None else INT_RANGES[Type.INT64]
                if not lo <= n <= hi:
                    raise ValueError(text)
                return n
            if lname is None and t in (Type.FLOAT32, Type.FLOAT64):
                return float(text)
            if t is Type.STRING:
                return text
        except (ValueError, decimal.InvalidOperation, DataError) as exc:
            raise DataError(
                f"{smt}: Unable to convert {text} to the type of field {name} "
                f"({t.name if t else type(value).__name__})"
            ) from exc
        kind = schema.type.name if schema is not None else type(value).__name__
        raise DataError(
            f"{smt}: Cannot mask value of type {kind} with custom replacement (field {name})"
        )


class MaskFieldKey(MaskField[R], key=True):
    """``org.apache.kafka.connect.transforms.MaskField$Key``."""


class MaskFieldValue(MaskField[R], key=False):
    """``org.apache.kafka.connect.transforms.MaskField$Value``."""
