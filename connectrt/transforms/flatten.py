"""Flatten: turn nested Structs (with a schema) or maps (without) into one level.

Nested field names are joined with ``delimiter`` (default ``.``). Arrays are kept as they are.
With a schema, a field nested inside an optional struct becomes optional, and a struct
default supplies the defaults of its flattened fields; MAP fields are not supported with a
schema (as in Kafka). Null keys/values (tombstones) pass through.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from connectrt.api.config import ConfigDef, ConfigType, Importance
from connectrt.api.records import ConnectRecord
from connectrt.api.transform import R
from connectrt.data.schema import Schema, Type
from connectrt.data.schema_builder import SchemaBuilder
from connectrt.data.struct import Struct
from connectrt.errors import DataError
from connectrt.transforms._util import (
    REPLACE_NULL_ARGS,
    REPLACE_NULL_WITH_DEFAULT,
    SchemaCache,
    copy_schema_basics,
    field_value,
    infer_type,
    require_map,
    require_struct,
    require_struct_schema,
)
from connectrt.transforms.base import Part, PartRewrite

__all__ = ["Flatten", "FlattenKey", "FlattenValue"]

DELIMITER = "delimiter"
_PURPOSE = "flattening"


class Flatten(PartRewrite[R]):
    """Flatten nested structures. Use FlattenKey/FlattenValue."""

    CONFIG_DEF: ClassVar[ConfigDef] = (
        ConfigDef()
        .define(
            DELIMITER,
            ConfigType.STRING,
            ".",
            None,
            Importance.MEDIUM,
            "Delimiter to insert between field names from the input record when generating "
            "field names for the output record",
        )
        .define(*REPLACE_NULL_ARGS)
    )

    def configure(self, config: Mapping[str, Any]) -> None:
        parsed = self.config_def().parse(config)
        self._delimiter: str = parsed[DELIMITER]
        self._replace_null = bool(parsed[REPLACE_NULL_WITH_DEFAULT])
        self._cache = SchemaCache()

    def _name(self, prefix: str, name: str) -> str:
        return name if not prefix else prefix + self._delimiter + name

    def rewrite(self, record: ConnectRecord, schema: Schema | None, value: Any) -> Part | None:
        smt = self.smt_name()
        if schema is None:
            if value is None:
                return None
            out: dict[str, Any] = {}
            self._flatten_map(require_map(value, _PURPOSE, smt), "", out)
            return None, out
        updated = self._updated_schema(schema)
        if value is None:
            return updated, None
        struct = require_struct(value, _PURPOSE, smt)
        flat = Struct(updated)
        self._flatten_struct(struct, struct.schema, "", flat)
        return updated, flat

    def _flatten_map(self, data: Mapping[str, Any], prefix: str, out: dict[str, Any]) -> None:
        for key, v in data.items():
            name = self._name(prefix, str(key))
            if v is None:
                out[name] = None
                continue
            t = infer_type(v)
            if t is Type.MAP:
                self._flatten_map(v, name, out)
            elif t is None or t is Type.STRUCT:
                found = type(v).__name__ if t is None else t.name
                raise DataError(
                    f"{self.smt_name()}: Flatten transformation does not support {found} for "
                    f"record without schemas (for field {name})."
                )
            else:
                out[name] = v

    def _flatten_struct(
        self, struct: Struct | None, schema: Schema, prefix: str, out: Struct
    ) -> None:
        for f in schema.fields:
            name = self._name(prefix, f.name)
            v = None if struct is None else field_value(struct, f, self._replace_null)
            if f.schema.type is Type.STRUCT:
                self._flatten_struct(v, f.schema, name, out)
            else:
                out.put(name, v)

    def _updated_schema(self, schema: Schema) -> Schema:
        return self._cache.derived_struct(schema, self._define_fields)

    def _define_fields(self, schema: Schema, builder: SchemaBuilder) -> None:
        """The leaf fields of the struct ``schema``, named by their paths."""
        require_struct_schema(schema, _PURPOSE, self.smt_name())
        self._build(schema, "", builder, schema.optional, schema.default)

    def _build(
        self,
        schema: Schema,
        prefix: str,
        builder: SchemaBuilder,
        optional: bool,
        default: Struct | None,
    ) -> None:
        for f in schema.fields:
            name = self._name(prefix, f.name)
            field_optional = optional or f.schema.optional
            field_default = f.schema.default if default is None else default.get(f)
            t = f.schema.type
            if t is Type.STRUCT:
                self._build(f.schema, name, builder, field_optional, field_default)
            elif t is Type.MAP:
                raise DataError(
                    f"{self.smt_name()}: Flatten transformation does not support MAP for "
                    f"record with schemas (for field {name})."
                )
            else:
                fb = copy_schema_basics(f.schema, _builder_like(f.schema))
                if field_optional:
                    fb.optional()
                if field_default is not None:
                    fb.default_value(field_default)
                builder.field(name, fb)


def _builder_like(schema: Schema) -> SchemaBuilder:
    if schema.type is Type.ARRAY:
        assert schema.value_schema is not None
        return SchemaBuilder.array(schema.value_schema)
    return SchemaBuilder(schema.type)


class FlattenKey(Flatten[R], key=True):
    """``org.apache.kafka.connect.transforms.Flatten$Key``."""


class FlattenValue(Flatten[R], key=False):
    """``org.apache.kafka.connect.transforms.Flatten$Value``."""
