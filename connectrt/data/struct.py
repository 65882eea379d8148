"""The :class:`Struct` value: a record of named, typed fields described by a STRUCT schema."""

from __future__ import annotations

from typing import Any

from connectrt.data import schema as _schema
from connectrt.data.schema import Field, Schema, Type
from connectrt.errors import DataError

__all__ = ["Struct"]


class Struct:
    """A STRUCT value. Field values are held in a list indexed by field position.

    ``put`` checks each value against its field schema (a cheap type check for primitives)
    and returns ``self`` so calls chain. ``get`` returns the field default when a field is
    unset. ``validate`` checks that every required field without a default has a value.

    Structs are mutable and not thread-safe; they are compared by schema and values, and are
    therefore unhashable.
    """

    __slots__ = ("_schema", "_values")

    __hash__ = None  # type: ignore[assignment]

    def __init__(self, schema: Schema) -> None:
        if not isinstance(schema, Schema) or schema.type is not Type.STRUCT:
            raise DataError("Not a struct schema: " + repr(schema))
        self._schema = schema
        # Converters read and fill this list directly on the hot path.
        self._values: list[Any] = [None] * len(schema.fields)

    @classmethod
    def _from_values(cls, schema: Schema, values: list[Any]) -> Struct:
        """Build a struct from already-checked values in field order (converters only)."""
        struct = cls.__new__(cls)
        struct._schema = schema
        struct._values = values
        return struct

    @property
    def schema(self) -> Schema:
        return self._schema

    def _lookup(self, name: str | Field) -> Field:
        if isinstance(name, Field):
            fields = self._schema.fields
            if name.index >= len(fields) or fields[name.index] != name:
                raise DataError(f"Struct schema has no field {name.name!r}")
            return name
        field = self._schema._field_map.get(name)
        if field is None:
            raise DataError(f"Struct {self._schema.name or '(unnamed)'} has no field {name!r}")
        return field

    def put(self, name: str | Field, value: Any) -> Struct:
        """Set ``name`` to ``value``; DataError names the field when the value does not fit."""
        field = self._lookup(name)
        _schema.validate_value_hook(field.schema, value, field.name)
        self._values[field.index] = value
        return self

    def get(self, name: str | Field) -> Any:
        """The value of ``name``, or the field schema's default when it is unset."""
        field = self._lookup(name)
        value = self._values[field.index]
        if value is None:
            return field.schema.default
        return value

    def get_without_default(self, name: str | Field) -> Any:
        """The value of ``name`` as set (None when unset), ignoring the schema default."""
        return self._values[self._lookup(name).index]

    __getitem__ = get

    def __setitem__(self, name: str, value: Any) -> None:
        self.put(name, value)

    def validate(self, _prefix: str | None = None) -> None:
        """Raise DataError naming the first field whose value is missing or invalid."""
        values = self._values
        for field in self._schema.fields:
            path = f"{_prefix}.{field.name}" if _prefix else field.name
            _schema.validate_value_hook(field.schema, values[field.index], path)

    def to_dict(self) -> dict[str, Any]:
        """Field name -> value (defaults applied; nested structs converted too)."""
        out: dict[str, Any] = {}
        for field in self._schema.fields:
            value = self.get(field)
            out[field.name] = value.to_dict() if isinstance(value, Struct) else value
        return out

    def __eq__(self, other: object) -> bool:
        if self is other:
            return True
        if not isinstance(other, Struct):
            return NotImplemented
        return self._schema == other._schema and self._values == other._values

    def __repr__(self) -> str:
        inner = ", ".join(
            f"{f.name}={v!r}" for f, v in zip(self._schema.fields, self._values, strict=True)
        )
        return f"Struct{{{inner}}}"
