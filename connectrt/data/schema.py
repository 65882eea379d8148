"""Connect schemas: :class:`Type`, :class:`Field` and :class:`Schema`.

A :class:`Schema` describes a Connect value (a primitive, an array, a map or a struct) the same
way Kafka Connect's ``org.apache.kafka.connect.data.Schema`` does. Schemas are immutable,
hashable and compared by content, so they are safe to share between threads and to use as
cache keys. Build them with :class:`~connectrt.data.schema_builder.SchemaBuilder`; the
predefined primitive schemas are available as class attributes (``Schema.INT32_SCHEMA``,
``Schema.OPTIONAL_STRING_SCHEMA``, ...).
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, ClassVar

from connectrt.errors import DataError, SchemaBuilderError

__all__ = ["Field", "Schema", "Type"]


def _validator_not_loaded(schema: Schema, value: Any, field_name: str | None = None) -> None:
    raise RuntimeError("connectrt.data.values is not loaded")  # importing connectrt.data loads it


#: The value validator, :func:`connectrt.data.values.validate_value`, installed when
#: ``connectrt.data`` loads. Defaults here, ``SchemaBuilder.default_value`` and ``Struct.put``
#: call it through this seam (the latter two as ``schema.validate_value_hook``, so they see the
#: installed validator): the validator needs Struct and the logical types, which need Schema,
#: so importing it from here would make the data modules a cycle.
validate_value_hook: Callable[[Schema, Any, str | None], None] = _validator_not_loaded


class Type(enum.Enum):
    """The type of a Connect value. The value is Kafka Connect's lower-case type name."""

    INT8 = "int8"
    INT16 = "int16"
    INT32 = "int32"
    INT64 = "int64"
    FLOAT32 = "float32"
    FLOAT64 = "float64"
    BOOLEAN = "boolean"
    STRING = "string"
    BYTES = "bytes"
    ARRAY = "array"
    MAP = "map"
    STRUCT = "struct"

    @property
    def is_primitive(self) -> bool:
        """True for every type except ARRAY, MAP and STRUCT."""
        return self not in _COMPLEX_TYPES


_COMPLEX_TYPES = frozenset({Type.ARRAY, Type.MAP, Type.STRUCT})


@dataclass(frozen=True, slots=True)
class Field:
    """A named, positioned field of a STRUCT schema."""

    name: str
    index: int
    schema: Schema


class Schema:
    """An immutable description of a Connect value.

    Attributes mirror Kafka Connect: ``type``, ``optional``, ``default``, ``name``, ``version``,
    ``doc``, ``parameters`` (a read-only mapping or None), ``key_schema`` / ``value_schema``
    (MAP keys and values; ARRAY items use ``value_schema``) and ``fields`` (a tuple of
    :class:`Field`, empty for every type but STRUCT).

    Equality is by content (the default value included); the hash leaves the default value out
    so that schemas with unhashable defaults (structs, lists, maps) stay hashable.
    Instances are immutable and thread-safe. Prefer
    :class:`~connectrt.data.schema_builder.SchemaBuilder` to the constructor.
    """

    __slots__ = (
        "_field_map",
        "_hash",
        "default",
        "doc",
        "fields",
        "key_schema",
        "name",
        "optional",
        "parameters",
        "type",
        "value_schema",
        "version",
    )

    type: Type
    optional: bool
    default: Any
    name: str | None
    version: int | None
    doc: str | None
    parameters: Mapping[str, str] | None
    key_schema: Schema | None
    value_schema: Schema | None
    fields: tuple[Field, ...]
    _field_map: dict[str, Field]
    _hash: int

    INT8_SCHEMA: ClassVar[Schema]
    INT16_SCHEMA: ClassVar[Schema]
    INT32_SCHEMA: ClassVar[Schema]
    INT64_SCHEMA: ClassVar[Schema]
    FLOAT32_SCHEMA: ClassVar[Schema]
    FLOAT64_SCHEMA: ClassVar[Schema]
    BOOLEAN_SCHEMA: ClassVar[Schema]
    STRING_SCHEMA: ClassVar[Schema]
    BYTES_SCHEMA: ClassVar[Schema]
    OPTIONAL_INT8_SCHEMA: ClassVar[Schema]
    OPTIONAL_INT16_SCHEMA: ClassVar[Schema]
    OPTIONAL_INT32_SCHEMA: ClassVar[Schema]
    OPTIONAL_INT64_SCHEMA: ClassVar[Schema]
    OPTIONAL_FLOAT32_SCHEMA: ClassVar[Schema]
    OPTIONAL_FLOAT64_SCHEMA: ClassVar[Schema]
    OPTIONAL_BOOLEAN_SCHEMA: ClassVar[Schema]
    OPTIONAL_STRING_SCHEMA: ClassVar[Schema]
    OPTIONAL_BYTES_SCHEMA: ClassVar[Schema]

    def __init__(
        self,
        type: Type,
        optional: bool = False,
        default: Any = None,
        name: str | None = None,
        version: int | None = None,
        doc: str | None = None,
        parameters: Mapping[str, str] | None = None,
        fields: tuple[Field, ...] | list[Field] | None = None,
        key_schema: Schema | None = None,
        value_schema: Schema | None = None,
    ) -> None:
        if not isinstance(type, Type):
            raise SchemaBuilderError(f"Invalid schema type: {type!r}")
        if type is Type.STRUCT:
            field_tuple = tuple(fields or ())
        elif fields:
            raise SchemaBuilderError(f"Non-struct schema of type {type.name} cannot have fields")
        else:
            field_tuple = ()
        if type is Type.ARRAY and value_schema is None:
            raise SchemaBuilderError("An ARRAY schema needs a value (item) schema")
        if type is Type.MAP and (key_schema is None or value_schema is None):
            raise SchemaBuilderError("A MAP schema needs both a key schema and a value schema")
        if type not in (Type.ARRAY, Type.MAP) and value_schema is not None:
            raise SchemaBuilderError(f"Schema of type {type.name} cannot have a value schema")
        if type is not Type.MAP and key_schema is not None:
            raise SchemaBuilderError(f"Schema of type {type.name} cannot have a key schema")
        if parameters is not None:
            for key, val in parameters.items():
                if not isinstance(key, str) or not isinstance(val, str):
                    raise SchemaBuilderError("Schema parameters must have string keys and values")
        field_map = {f.name: f for f in field_tuple}
        if len(field_map) != len(field_tuple):
            raise SchemaBuilderError("Struct schema has duplicate field names")
        params = None if parameters is None else MappingProxyType(dict(parameters))
        setattr_ = object.__setattr__
        setattr_(self, "type", type)
        setattr_(self, "optional", bool(optional))
        setattr_(self, "default", None)
        setattr_(self, "name", name)
        setattr_(self, "version", version)
        setattr_(self, "doc", doc)
        setattr_(self, "parameters", params)
        setattr_(self, "fields", field_tuple)
        setattr_(self, "key_schema", key_schema)
        setattr_(self, "value_schema", value_schema)
        setattr_(self, "_field_map", field_map)
        setattr_(
            self,
            "_hash",
            hash(
                (
                    type,
                    self.optional,
                    name,
                    version,
                    doc,
                    None if params is None else frozenset(params.items()),
                    field_tuple,
                    key_schema,
                    value_schema,
                )
            ),
        )
        if default is not None:
            # Validate against the schema as built so far (no default), as Kafka does.
            try:
                validate_value_hook(self, default, None)
            except DataError as exc:
                raise SchemaBuilderError(f"Invalid default value: {exc}") from exc
            setattr_(self, "default", default)

    def __setattr__(self, key: str, value: Any) -> None:
        raise AttributeError("Schema is immutable")

    def __delattr__(self, key: str) -> None:
        raise AttributeError("Schema is immutable")

    def replace(self, **changes: Any) -> Schema:
        """A new schema of this one's type with the attributes named in ``changes`` (the
        constructor's keywords: ``optional``, ``default``, ``name``, ...) replaced and the
        others kept; checked as the constructor checks (SchemaBuilderError)."""
        kept: dict[str, Any] = {
            "optional": self.optional,
            "default": self.default,
            "name": self.name,
            "version": self.version,
            "doc": self.doc,
            "parameters": self.parameters,
            "fields": self.fields,
            "key_schema": self.key_schema,
            "value_schema": self.value_schema,
        }
        return Schema(self.type, **{**kept, **changes})

    def field(self, name: str) -> Field | None:
        """The field called ``name``, or None. Raises DataError when this is not a STRUCT."""
        if self.type is not Type.STRUCT:
            raise DataError(f"Cannot look up fields on non-struct type {self.type.name}")
        return self._field_map.get(name)

    def __hash__(self) -> int:
        return self._hash

    def __eq__(self, other: object) -> bool:
        if self is other:
            return True
        if not isinstance(other, Schema):
            return NotImplemented
        return self.equals_ignoring_default(other) and _defaults_equal(self.default, other.default)

    def equals_ignoring_default(self, other: Schema) -> bool:
        """Content equality leaving the top-level default out.

        A struct used as a STRUCT schema's own default carries the schema as it was before the
        default was set; values are matched against schemas with this comparison.
        """
        return self is other or (
            self._hash == other._hash
            and self.type is other.type
            and self.optional == other.optional
            and self.name == other.name
            and self.version == other.version
            and self.doc == other.doc
            and self.parameters == other.parameters
            and self.fields == other.fields
            and self.key_schema == other.key_schema
            and self.value_schema == other.value_schema
        )

    def __repr__(self) -> str:
        parts = [self.type.name]
        if self.optional:
            parts.append("optional")
        if self.name is not None:
            parts.append(f"name={self.name!r}")
        if self.version is not None:
            parts.append(f"version={self.version}")
        if self.parameters:
            parts.append(f"parameters={dict(self.parameters)!r}")
        if self.default is not None:
            parts.append(f"default={self.default!r}")
        if self.type is Type.ARRAY:
            parts.append(f"items={self.value_schema!r}")
        elif self.type is Type.MAP:
            parts.append(f"keys={self.key_schema!r}, values={self.value_schema!r}")
        elif self.type is Type.STRUCT:
            inner = ", ".join(f"{f.name}: {f.schema!r}" for f in self.fields)
            parts.append(f"fields=[{inner}]")
        return f"Schema({', '.join(parts)})"


def _defaults_equal(a: Any, b: Any) -> bool:
    # bool == int in Python (True == 1); a BOOLEAN default must not equal an INT default.
    if type(a) is not type(b) and (isinstance(a, bool) or isinstance(b, bool)):
        return False
    return bool(a == b)


for _t in Type:
    if _t.is_primitive:
        setattr(Schema, f"{_t.name}_SCHEMA", Schema(_t))
        setattr(Schema, f"OPTIONAL_{_t.name}_SCHEMA", Schema(_t, optional=True))
del _t
