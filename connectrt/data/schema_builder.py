"""The fluent :class:`SchemaBuilder` of Connect :class:`~connectrt.data.schema.Schema` objects.

Mirrors Kafka Connect's ``org.apache.kafka.connect.data.SchemaBuilder``: factories per type
(``SchemaBuilder.struct()``, ``SchemaBuilder.array(...)``, ...), one setter per attribute, then
:meth:`SchemaBuilder.build`. A default value is validated when it is set, through
:data:`connectrt.data.schema.validate_value_hook` (installed when ``connectrt.data`` loads).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from connectrt.data import schema as _schema
from connectrt.data.schema import Field, Schema, Type
from connectrt.errors import DataError, SchemaBuilderError

__all__ = ["SchemaBuilder"]


class SchemaBuilder:
    """Fluent builder for :class:`Schema`.

    Each setter returns the builder. Setting the same attribute twice to a different value
    raises :class:`SchemaBuilderError`, as Kafka does. Builders are not thread-safe; the
    schema they build is.

    >>> SchemaBuilder.struct().name("user").field("id", Schema.INT64_SCHEMA).build()
    """

    __slots__ = (
        "_default",
        "_doc",
        "_fields",
        "_key_schema",
        "_name",
        "_optional",
        "_parameters",
        "_type",
        "_value_schema",
        "_version",
    )

    def __init__(self, type: Type) -> None:
        if not isinstance(type, Type):
            raise SchemaBuilderError(f"Invalid schema type: {type!r}")
        self._type = type
        self._optional: bool | None = None
        self._default: Any = None
        self._name: str | None = None
        self._version: int | None = None
        self._doc: str | None = None
        self._parameters: dict[str, str] | None = None
        self._fields: dict[str, Field] = {}
        self._key_schema: Schema | None = None
        self._value_schema: Schema | None = None

    # -- factories -------------------------------------------------------------------------

    @staticmethod
    def int8() -> SchemaBuilder:
        return SchemaBuilder(Type.INT8)

    @staticmethod
    def int16() -> SchemaBuilder:
        return SchemaBuilder(Type.INT16)

    @staticmethod
    def int32() -> SchemaBuilder:
        return SchemaBuilder(Type.INT32)

    @staticmethod
    def int64() -> SchemaBuilder:
        return SchemaBuilder(Type.INT64)

    @staticmethod
    def float32() -> SchemaBuilder:
        return SchemaBuilder(Type.FLOAT32)

    @staticmethod
    def float64() -> SchemaBuilder:
        return SchemaBuilder(Type.FLOAT64)

    @staticmethod
    def boolean() -> SchemaBuilder:
        return SchemaBuilder(Type.BOOLEAN)

    @staticmethod
    def string() -> SchemaBuilder:
        return SchemaBuilder(Type.STRING)

    @staticmethod
    def bytes() -> SchemaBuilder:
        return SchemaBuilder(Type.BYTES)

    @staticmethod
    def struct() -> SchemaBuilder:
        return SchemaBuilder(Type.STRUCT)

    @staticmethod
    def array(value_schema: Schema | SchemaBuilder) -> SchemaBuilder:
        builder = SchemaBuilder(Type.ARRAY)
        builder._value_schema = _as_schema(value_schema, "array value schema")
        return builder

    @staticmethod
    def map(
        key_schema: Schema | SchemaBuilder, value_schema: Schema | SchemaBuilder
    ) -> SchemaBuilder:
        builder = SchemaBuilder(Type.MAP)
        builder._key_schema = _as_schema(key_schema, "map key schema")
        builder._value_schema = _as_schema(value_schema, "map value schema")
        return builder

    # -- setters ---------------------------------------------------------------------------

    @property
    def type(self) -> Type:
        return self._type

    def optional(self) -> SchemaBuilder:
        self._check_can_set("optional", self._optional, True)
        self._optional = True
        return self

    def required(self) -> SchemaBuilder:
        self._check_can_set("optional", self._optional, False)
        self._optional = False
        return self

    def default_value(self, value: Any) -> SchemaBuilder:
        self._check_can_set("default", self._default, value)
        if value is not None:
            # Validate against the schema built so far, as Kafka does: set name/type first.
            try:
                _schema.validate_value_hook(self._build(None), value, None)
            except DataError as exc:
                raise SchemaBuilderError(f"Invalid default value: {exc}") from exc
        self._default = value
        return self

    def name(self, name: str) -> SchemaBuilder:
        self._check_can_set("name", self._name, name)
        self._name = name
        return self

    def version(self, version: int) -> SchemaBuilder:
        if isinstance(version, bool) or not isinstance(version, int):
            raise SchemaBuilderError(f"Schema version must be an int, got {version!r}")
        self._check_can_set("version", self._version, version)
        self._version = version
        return self

    def doc(self, doc: str) -> SchemaBuilder:
        self._check_can_set("doc", self._doc, doc)
        self._doc = doc
        return self

    def parameter(self, key: str, value: str) -> SchemaBuilder:
        if not isinstance(key, str) or not isinstance(value, str):
            raise SchemaBuilderError("Schema parameters must have string keys and values")
        if self._parameters is None:
            self._parameters = {}
        self._parameters[key] = value
        return self

    def parameters(self, parameters: Mapping[str, str]) -> SchemaBuilder:
        for key, value in parameters.items():
            self.parameter(key, value)
        return self

    def field(self, name: str, schema: Schema | SchemaBuilder) -> SchemaBuilder:
        if self._type is not Type.STRUCT:
            raise SchemaBuilderError(f"Cannot create fields on type {self._type.name}")
        if not isinstance(name, str) or not name:
            raise SchemaBuilderError("Field name cannot be empty")
        if name in self._fields:
            raise SchemaBuilderError(
                f"Cannot create field because of field name duplication {name}"
            )
        self._fields[name] = Field(name, len(self._fields), _as_schema(schema, f"field {name!r}"))
        return self

    def build(self) -> Schema:
        """Build the immutable :class:`Schema`."""
        return self._build(self._default)

    def _build(self, default: Any) -> Schema:
        return Schema(
            self._type,
            optional=bool(self._optional),
            default=default,
            name=self._name,
            version=self._version,
            doc=self._doc,
            parameters=self._parameters,
            fields=tuple(self._fields.values()),
            key_schema=self._key_schema,
            value_schema=self._value_schema,
        )

    @staticmethod
    def _check_can_set(attr: str, current: Any, new: Any) -> None:
        if current is not None and current != new:
            raise SchemaBuilderError(f"Invalid SchemaBuilder call: {attr} has already been set.")

    def __repr__(self) -> str:
        return f"SchemaBuilder({self._type.name}, name={self._name!r})"


def _as_schema(schema: Schema | SchemaBuilder, what: str) -> Schema:
    if isinstance(schema, SchemaBuilder):
        return schema.build()
    if not isinstance(schema, Schema):
        raise SchemaBuilderError(f"Invalid {what}: expected a Schema, got {type(schema).__name__}")
    return schema
