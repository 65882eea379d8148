"""Shared helpers for the bundled SMTs: type checks, schema caching, Java regex syntax."""

from __future__ import annotations

import datetime as dt
import decimal
import re
from collections import OrderedDict
from collections.abc import Callable, Mapping
from typing import Any

from connectrt.api.config import ConfigError, ConfigType, Importance
from connectrt.api.records import ConnectRecord, SinkRecord
from connectrt.api.transform import R
from connectrt.data.logical import Date, Decimal, Time, Timestamp, logical_name
from connectrt.data.schema import Field, Schema, Type
from connectrt.data.schema_builder import SchemaBuilder
from connectrt.data.struct import Struct
from connectrt.errors import DataError

__all__ = [
    "REPLACE_NULL_WITH_DEFAULT",
    "SchemaCache",
    "compile_java_regex",
    "copy_record",
    "copy_schema_basics",
    "expand_java_replacement",
    "field_value",
    "infer_type",
    "non_empty_list",
    "put_field",
    "require_map",
    "require_sink_record",
    "require_struct",
    "require_struct_schema",
]

REPLACE_NULL_WITH_DEFAULT = "replace.null.with.default"
REPLACE_NULL_WITH_DEFAULT_DOC = (
    "Whether to replace fields that have a default value and that are null to the default "
    "value. When set to true, the default value is used, otherwise null is used."
)
REPLACE_NULL_ARGS: tuple[Any, ...] = (
    REPLACE_NULL_WITH_DEFAULT,
    ConfigType.BOOLEAN,
    True,
    None,
    Importance.MEDIUM,
    REPLACE_NULL_WITH_DEFAULT_DOC,
)
"""``define(*REPLACE_NULL_ARGS)`` adds the shared ``replace.null.with.default`` key."""


def non_empty_list(name: str, value: Any) -> None:
    """Validator: a LIST that has at least one non-blank element."""
    if value is None or not [v for v in value if v]:
        raise ConfigError(f"Invalid value for configuration {name}: Empty list", name, value)


def no_blank_items(name: str, value: Any) -> None:
    """Validator: no element of a LIST is blank."""
    for item in value or ():
        if not str(item).strip():
            raise ConfigError(
                f"Invalid value for configuration {name}: list contains a blank element",
                name,
                value,
            )


class SchemaCache:
    """A small LRU map from an input schema to the schema a transformation derived from it.

    Schemas hash and compare by content, so equal schemas from different records share an
    entry. Not thread-safe: one instance per transformation instance (per task).
    """

    __slots__ = ("_data", "_max")

    def __init__(self, max_size: int = 16) -> None:
        self._data: OrderedDict[Any, Schema] = OrderedDict()
        self._max = max_size

    def get(self, key: Any) -> Schema | None:
        found = self._data.get(key)
        if found is not None:
            self._data.move_to_end(key)
        return found

    def put(self, key: Any, schema: Schema) -> Schema:
        self._data[key] = schema
        self._data.move_to_end(key)
        while len(self._data) > self._max:
            self._data.popitem(last=False)
        return schema

    def __len__(self) -> int:
        return len(self._data)

    def derived_struct(
        self, schema: Schema, add_fields: Callable[[Schema, SchemaBuilder], None]
    ) -> Schema:
        """The struct schema derived from ``schema``, cached: its name, version, doc,
        parameters and optionality, with the fields ``add_fields(schema, builder)`` defines
        (it may raise, before anything is cached)."""
        cached = self.get(schema)
        if cached is not None:
            return cached
        builder = copy_schema_basics(schema, SchemaBuilder.struct())
        add_fields(schema, builder)
        if schema.optional:
            builder.optional()
        return self.put(schema, builder.build())


def copy_schema_basics(source: Schema, builder: SchemaBuilder) -> SchemaBuilder:
    """Copy name, version, doc and parameters (not optionality or default) onto ``builder``."""
    if source.name is not None:
        builder.name(source.name)
    if source.version is not None:
        builder.version(source.version)
    if source.doc is not None:
        builder.doc(source.doc)
    if source.parameters:
        builder.parameters(source.parameters)
    return builder


def field_value(struct: Struct, field: Field | str, replace_null_with_default: bool) -> Any:
    """A struct field's value, with the field default substituted for null when asked."""
    if replace_null_with_default:
        return struct.get(field)
    return struct.get_without_default(field)


def _type_name(value: Any) -> str:
    return "null" if value is None else type(value).__name__


def copy_record(record: R, **changes: Any) -> R:
    """``record.new_record(**changes)``, typed for any record class."""
    return record.new_record(**changes)


def put_field(struct: Struct, name: str, value: Any, smt: str) -> None:
    """``struct.put(name, value)``; a DataError names the SMT as well as the field."""
    try:
        struct.put(name, value)
    except DataError as exc:
        raise DataError(f"{smt}: {exc}") from exc


def _prefix(smt: str) -> str:
    return f"{smt}: " if smt else ""


def _unsupported(smt: str, supported: str, purpose: str, found: str) -> DataError:
    """Kafka's error for a part an SMT does not handle: ``Only <supported> for [<purpose>]``."""
    return DataError(f"{_prefix(smt)}Only {supported} for [{purpose}], found: {found}")


def require_struct(value: Any, purpose: str, smt: str = "") -> Struct:
    """``value`` if it is a Struct, else DataError naming the SMT and the purpose."""
    if not isinstance(value, Struct):
        raise _unsupported(smt, "Struct objects supported", purpose, _type_name(value))
    return value


def require_struct_schema(schema: Schema, purpose: str, smt: str = "") -> Schema:
    """``schema`` if it is a STRUCT schema, else DataError naming the SMT and the purpose."""
    if schema.type is not Type.STRUCT:
        raise _unsupported(smt, "Struct objects supported", purpose, schema.type.name)
    return schema


def require_map(value: Any, purpose: str, smt: str = "") -> dict[str, Any]:
    """``value`` if it is a mapping, else DataError naming the SMT and the purpose."""
    if not isinstance(value, Mapping):
        raise _unsupported(
            smt, "Map objects supported in absence of schema", purpose, _type_name(value)
        )
    return value  # type: ignore[return-value]


def require_sink_record(record: ConnectRecord, purpose: str, smt: str = "") -> SinkRecord:
    """``record`` if it is a SinkRecord, else DataError naming the SMT and the purpose."""
    if not isinstance(record, SinkRecord):
        raise _unsupported(smt, "SinkRecord supported", purpose, type(record).__name__)
    return record


def infer_type(value: Any) -> Type | None:
    """The Connect type of a schemaless Python value, or None if it has none."""
    if isinstance(value, bool):
        return Type.BOOLEAN
    if isinstance(value, int):
        return Type.INT64
    if isinstance(value, float):
        return Type.FLOAT64
    if isinstance(value, str):
        return Type.STRING
    if isinstance(value, bytes | bytearray | memoryview):
        return Type.BYTES
    if isinstance(value, list | tuple):
        return Type.ARRAY
    if isinstance(value, Mapping):
        return Type.MAP
    if isinstance(value, Struct):
        return Type.STRUCT
    if isinstance(value, decimal.Decimal):
        return Type.BYTES
    if isinstance(value, dt.datetime):
        return Type.INT64
    if isinstance(value, dt.date | dt.time):
        return Type.INT32
    return None


def is_logical(schema: Schema | None, logical: type[Date | Time | Timestamp | Decimal]) -> bool:
    return schema is not None and logical_name(schema) == logical.LOGICAL_NAME


# -- Java regex compatibility --------------------------------------------------------------

_JAVA_NAMED_GROUP = re.compile(r"(?<!\\)\(\?<([A-Za-z][A-Za-z0-9]*)>")


def compile_java_regex(pattern: str, key: str) -> re.Pattern[str]:
    """Compile a Java regex (``(?<name>...)`` groups translated); ConfigError naming ``key``."""
    try:
        return re.compile(_JAVA_NAMED_GROUP.sub(r"(?P<\1>", pattern))
    except re.error as exc:
        raise ConfigError(
            f"Invalid value {pattern} for configuration {key}: Invalid regex: {exc}", key, pattern
        ) from exc


def parse_java_replacement(replacement: str, regex: re.Pattern[str], key: str) -> list[Any]:
    """Split a Java ``Matcher.replaceFirst`` replacement into literals and group refs.

    ``$n`` refers to group n (digits are taken greedily while the number is a valid group, as
    Java does), ``${name}`` to a named group, and a backslash escapes the next character.
    """
    parts: list[Any] = []
    buf: list[str] = []
    i, n = 0, len(replacement)
    while i < n:
        c = replacement[i]
        if c == "\\":
            i += 1
            if i >= n:
                raise ConfigError(
                    f"Invalid value {replacement} for configuration {key}: "
                    "character to be escaped is missing",
                    key,
                    replacement,
                )
            buf.append(replacement[i])
            i += 1
        elif c == "$":
            i += 1
            if i >= n:
                raise ConfigError(
                    f"Invalid value {replacement} for configuration {key}: "
                    "illegal group reference: group index is missing",
                    key,
                    replacement,
                )
            if replacement[i] == "{":
                end = replacement.find("}", i)
                name = replacement[i + 1 : end] if end > 0 else ""
                if not name or name not in regex.groupindex:
                    raise ConfigError(
                        f"Invalid value {replacement} for configuration {key}: "
                        f"No group with name {{{name}}}",
                        key,
                        replacement,
                    )
                ref: Any = name
                i = end + 1
            elif replacement[i].isdigit():
                num = int(replacement[i])
                i += 1
                while i < n and replacement[i].isdigit():
                    longer = num * 10 + int(replacement[i])
                    if longer > regex.groups:
                        break
                    num = longer
                    i += 1
                if num > regex.groups:
                    raise ConfigError(
                        f"Invalid value {replacement} for configuration {key}: No group {num}",
                        key,
                        replacement,
                    )
                ref = num
            else:
                raise ConfigError(
                    f"Invalid value {replacement} for configuration {key}: Illegal group reference",
                    key,
                    replacement,
                )
            if buf:
                parts.append("".join(buf))
                buf = []
            parts.append((ref,))
        else:
            buf.append(c)
            i += 1
    if buf:
        parts.append("".join(buf))
    return parts


def expand_java_replacement(parts: list[Any], match: re.Match[str]) -> str:
    """Render parts from :func:`parse_java_replacement` for one match (unmatched groups -> "")."""
    out: list[str] = []
    for part in parts:
        if isinstance(part, str):
            out.append(part)
        else:
            out.append(match.group(part[0]) or "")
    return "".join(out)
