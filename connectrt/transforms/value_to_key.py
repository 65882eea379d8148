"""ValueToKey: replace the key with a Struct (or map) built from fields of the value."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from connectrt.api.config import ConfigDef, ConfigError, ConfigType, Importance
from connectrt.api.transform import R
from connectrt.data.schema import Schema
from connectrt.data.schema_builder import SchemaBuilder
from connectrt.data.struct import Struct
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
from connectrt.transforms.base import BundledTransformation

__all__ = ["ValueToKey"]

FIELDS = "fields"
_PURPOSE = "copying fields from value to key"


def _valid_fields(name: str, value: Any) -> None:
    non_empty_list(name, value)
    if len(set(value)) != len(value):
        raise ConfigError(
            f"Invalid value {','.join(value)} for configuration {name}: "
            "Values must not be duplicated",
            name,
            value,
        )


class ValueToKey(BundledTransformation[R]):
    """Replace the record key with a new key formed from a subset of fields in the value."""

    CONFIG_DEF: ClassVar[ConfigDef] = (
        ConfigDef()
        .define(
            FIELDS,
            ConfigType.LIST,
            validator=_valid_fields,
            importance=Importance.HIGH,
            documentation="Field names on the record value to extract as the record key.",
        )
        .define(*REPLACE_NULL_ARGS)
    )

    def configure(self, config: Mapping[str, Any]) -> None:
        parsed = self.config_def().parse(config)
        self._fields: list[str] = parsed[FIELDS]
        self._replace_null = bool(parsed[REPLACE_NULL_WITH_DEFAULT])
        self._cache = SchemaCache()

    def apply(self, record: R) -> R:
        if record.value_schema is None:
            data = require_map(record.value, _PURPOSE, "ValueToKey")
            key: Any = {f: data.get(f) for f in self._fields}
            return copy_record(record, key_schema=None, key=key)
        struct = require_struct(record.value, _PURPOSE, "ValueToKey")
        key_schema = self._key_schema(struct.schema)
        key = Struct(key_schema)
        for f in self._fields:
            key.put(f, field_value(struct, f, self._replace_null))
        return copy_record(record, key_schema=key_schema, key=key)

    def _key_schema(self, value_schema: Schema) -> Schema:
        cached = self._cache.get(value_schema)
        if cached is not None:
            return cached
        builder = SchemaBuilder.struct()
        for name in self._fields:
            f = value_schema.field(name)
            if f is None:
                raise DataError(f"ValueToKey: Field does not exist: {name}")
            builder.field(name, f.schema)
        return self._cache.put(value_schema, builder.build())
