"""Shared helpers for the bundled SMTs: key/value access, type checks, schema caching."""

from __future__ import annotations

import abc
import datetime as dt
import decimal
import re
from collections import OrderedDict
from collections.abc import Mapping
from typing import Any, ClassVar, Generic

import connectrt
from connectrt.api.config import ConfigError, ConfigType, Importance
from connectrt.api.records import ConnectRecord, SinkRecord
from connectrt.api.transform import R, Transformation
from connectrt.data.logical import Date, Decimal, Time, Timestamp, logical_name
from connectrt.data.schema import Field, Schema, Type
from connectrt.data.schema_builder import SchemaBuilder
from connectrt.data.struct import Struct
from connectrt.errors import DataError

__all__ = [
    "REPLACE_NULL_WITH_DEFAULT",
    "KeyOrValueTransformation",
    "Part",
    "PartRewrite",
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


def require_struct(value: Any, purpose: str, smt: str = "") -> Struct:
    """``value`` if it is a Struct, else DataError naming the SMT and the purpose."""
    if not isinstance(value, Struct):
        raise DataError(
            f"{_prefix(smt)}Only Struct objects supported for [{purpose}], "
            f"found: {_type_name(value)}"
        )
    return value


def require_map(value: Any, purpose: str, smt: str = "") -> dict[str, Any]:
    """``value`` if it is a mapping, else DataError naming the SMT and the purpose."""
    if not isinstance(value, Mapping):
        raise DataError(
            f"{_prefix(smt)}Only Map objects supported in absence of schema for [{purpose}], "
            f"found: {_type_name(value)}"
        )
    return value  # type: ignore[return-value]


def require_sink_record(record: ConnectRecord, purpose: str, smt: str = "") -> SinkRecord:
    if not isinstance(record, SinkRecord):
        raise DataError(
            f"{_prefix(smt)}Only SinkRecord supported for [{purpose}], "
            f"found: {type(record).__name__}"
        )
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


Part = tuple[Schema | None, Any]
"""A record's key or value with its schema: what :meth:`KeyOrValueTransformation.rewrite`
returns."""


class KeyOrValueTransformation(Transformation[R], Generic[R]):
    """Base of the ``$Key``/``$Value`` SMT pairs: which part of the record they act on.

    The variants are declared with a class keyword, ``class CastKey(Cast[R], key=True)``,
    which sets ``IS_KEY``. ``SMT_NAME``, the Kafka class' simple name used in error messages,
    is the family class' (``Cast``'s) own name unless it sets one. Most families subclass
    :class:`PartRewrite` and write only how the part changes. Lifecycle and threading are
    those of :class:`Transformation`.
    """

    SMT_NAME: ClassVar[str] = "Transformation"
    IS_KEY: ClassVar[bool] = False

    def __init_subclass__(cls, key: bool | None = None, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if key is not None:
            cls.IS_KEY = key
        elif "SMT_NAME" not in cls.__dict__:
            cls.SMT_NAME = cls.__name__

    @classmethod
    def smt_name(cls) -> str:
        """Kafka's name for this variant, e.g. ``Cast$Value`` (used in error messages)."""
        return f"{cls.SMT_NAME}${'Key' if cls.IS_KEY else 'Value'}"

    def part(self, record: ConnectRecord) -> Part:
        """The operated-on ``(schema, value)`` of ``record``: its key or its value."""
        if self.IS_KEY:
            return record.key_schema, record.key
        return record.value_schema, record.value

    def with_part(self, record: R, schema: Schema | None, value: Any) -> R:
        """A copy of ``record`` with the operated-on part replaced."""
        r = record
        if self.IS_KEY:
            return r._with(r.topic, schema, value, r.value_schema, r.value)
        return r._with(r.topic, r.key_schema, r.key, schema, value)

    def set_part(self, record: R, schema: Schema | None, value: Any) -> R:
        """``record`` with the operated-on part replaced in place (only for owned records)."""
        if self.IS_KEY:
            record.key_schema, record.key = schema, value
        else:
            record.value_schema, record.value = schema, value
        return record

    def version(self) -> str:
        return connectrt.__version__


class PartRewrite(KeyOrValueTransformation[R], Generic[R]):
    """A ``$Key``/``$Value`` SMT that only replaces the part: it writes just :meth:`rewrite`.

    This class turns :meth:`rewrite` into :meth:`apply` (a copy of the record),
    :meth:`apply_owned` and :meth:`apply_batch_owned` (the chain-owned record updated in
    place), so the copy and in-place paths cannot drift apart.
    """

    @abc.abstractmethod
    def rewrite(self, record: ConnectRecord, schema: Schema | None, value: Any) -> Part | None:
        """The new ``(schema, value)`` of the operated-on part, or None to keep ``record``.

        ``schema``/``value`` are the record's key or value (per ``IS_KEY``); ``record`` is
        there for its other attributes and must not be changed. Raise DataError for a record
        that cannot be transformed.
        """

    # The three methods below spell out the key and value cases instead of calling part(),
    # with_part() and set_part(): they run once per record.

    def apply(self, record: R) -> R:
        """A copy of ``record`` with the part :meth:`rewrite` returns (``record`` on None)."""
        r = record
        if self.IS_KEY:
            part = self.rewrite(r, r.key_schema, r.key)
            return (
                r if part is None else r._with(r.topic, part[0], part[1], r.value_schema, r.value)
            )
        part = self.rewrite(r, r.value_schema, r.value)
        return r if part is None else r._with(r.topic, r.key_schema, r.key, part[0], part[1])

    def apply_owned(self, record: R) -> R:
        """:meth:`apply` updating the chain-owned ``record`` in place instead of copying it."""
        r = record
        if self.IS_KEY:
            part = self.rewrite(r, r.key_schema, r.key)
            if part is not None:
                r.key_schema, r.key = part
        else:
            part = self.rewrite(r, r.value_schema, r.value)
            if part is not None:
                r.value_schema, r.value = part
        return r

    def apply_batch_owned(self, records: list[R]) -> bool:
        """:meth:`apply_owned` for each record (always one to one, so always True)."""
        rewrite = self.rewrite
        if self.IS_KEY:
            for r in records:
                part = rewrite(r, r.key_schema, r.key)
                if part is not None:
                    r.key_schema, r.key = part
        else:
            for r in records:
                part = rewrite(r, r.value_schema, r.value)
                if part is not None:
                    r.value_schema, r.value = part
        return True


class BundledTransformation(Transformation[R], Generic[R]):
    """Base of the bundled SMTs that act on the whole record (routers, header SMTs)."""

    def version(self) -> str:
        return connectrt.__version__


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
