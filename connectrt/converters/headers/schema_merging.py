"""The common schema of the entries of a parsed list or map (Kafka's ``SchemaMerger``).

Integers widen to the larger integer or float type, lists and maps merge their item schemas,
optional wins; logical types merge only with themselves. :func:`align` then converts the
parsed values to the merged schema (integers to floats where it widened to a float).
"""

from __future__ import annotations

from typing import Any, Final

from connectrt.api.converter import SchemaAndValue
from connectrt.data.schema import Schema, Type
from connectrt.data.schema_builder import SchemaBuilder

__all__ = ["Merger", "align"]

_NUMERIC_ORDER: Final = {
    Type.INT8: 0,
    Type.INT16: 1,
    Type.INT32: 2,
    Type.INT64: 3,
    Type.FLOAT32: 4,
    Type.FLOAT64: 5,
}


def _optional(schema: Schema) -> Schema:
    """``schema`` made optional, without a default."""
    return schema if schema.optional else schema.replace(optional=True, default=None)


class Merger:
    """The common schema of a run of values (Kafka's ``SchemaMerger``, stricter on nesting)."""

    def __init__(self) -> None:
        self.common: Schema | None = None
        self.compatible = True
        self.nullable = False

    def merge(self, item: SchemaAndValue) -> None:
        """Take ``item``'s schema into the common one (a null value makes it optional)."""
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
        """The common schema of the values merged, or None when they have none."""
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


def align(schema: Schema, value: Any) -> Any:
    """Convert a parsed value to the common schema chosen for it (ints to floats, nested)."""
    if value is None:
        return None
    if schema.type in (Type.FLOAT32, Type.FLOAT64) and schema.name is None:
        return float(value)
    if schema.type is Type.ARRAY and schema.value_schema is not None:
        return [align(schema.value_schema, v) for v in value]
    if schema.type is Type.MAP and schema.key_schema is not None:
        assert schema.value_schema is not None
        ks, vs = schema.key_schema, schema.value_schema
        return {align(ks, k): align(vs, v) for k, v in value.items()}
    return value
