"""SetSchemaMetadata: set the name and/or version of the key or value schema.

A Struct value is rebuilt against the renamed schema so value and schema stay consistent.
A record without a schema is a DataError.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from connectrt.api.config import ConfigDef, ConfigError, ConfigType, Importance
from connectrt.api.records import ConnectRecord
from connectrt.api.transform import R
from connectrt.data.schema import Schema
from connectrt.data.struct import Struct
from connectrt.errors import DataError
from connectrt.transforms._util import (
    REPLACE_NULL_ARGS,
    REPLACE_NULL_WITH_DEFAULT,
    SchemaCache,
    field_value,
)
from connectrt.transforms.base import Part, PartRewrite

__all__ = ["SetSchemaMetadata", "SetSchemaMetadataKey", "SetSchemaMetadataValue"]

SCHEMA_NAME = "schema.name"
SCHEMA_VERSION = "schema.version"


class SetSchemaMetadata(PartRewrite[R]):
    """Set schema name/version. Use SetSchemaMetadataKey/SetSchemaMetadataValue."""

    CONFIG_DEF: ClassVar[ConfigDef] = (
        ConfigDef()
        .define(SCHEMA_NAME, ConfigType.STRING, None, None, Importance.HIGH, "Schema name to set.")
        .define(
            SCHEMA_VERSION, ConfigType.INT, None, None, Importance.HIGH, "Schema version to set."
        )
        .define(*REPLACE_NULL_ARGS)
    )

    def configure(self, config: Mapping[str, Any]) -> None:
        parsed = self.config_def().parse(config)
        self._name: str | None = parsed[SCHEMA_NAME]
        self._version: int | None = parsed[SCHEMA_VERSION]
        if self._name is None and self._version is None:
            raise ConfigError("Neither schema name nor version configured", SCHEMA_NAME)
        self._replace_null = bool(parsed[REPLACE_NULL_WITH_DEFAULT])
        self._cache = SchemaCache()

    def rewrite(self, record: ConnectRecord, schema: Schema | None, value: Any) -> Part | None:
        smt = self.smt_name()
        if schema is None:
            raise DataError(f"{smt}: Schema required for [updating schema metadata]")
        updated = self._updated_schema(schema)
        if isinstance(value, Struct):
            out = Struct(updated)
            for f in updated.fields:
                out.put(f, field_value(value, f.name, self._replace_null))
            value = out
        return updated, value

    def _updated_schema(self, schema: Schema) -> Schema:
        cached = self._cache.get(schema)
        if cached is not None:
            return cached
        name = self._name if self._name is not None else schema.name
        version = self._version if self._version is not None else schema.version

        def build(default: Any) -> Schema:
            return Schema(
                schema.type,
                optional=schema.optional,
                default=default,
                name=name,
                version=version,
                doc=schema.doc,
                parameters=schema.parameters,
                fields=schema.fields,
                key_schema=schema.key_schema,
                value_schema=schema.value_schema,
            )

        updated = build(None)
        default = schema.default
        if isinstance(default, Struct):
            # A struct default carries its schema, so rebuild it against the renamed one.
            rebuilt = Struct(updated)
            for f in updated.fields:
                rebuilt.put(f, default.get_without_default(f.name))
            default = rebuilt
        if default is not None:
            updated = build(default)
        return self._cache.put(schema, updated)


class SetSchemaMetadataKey(SetSchemaMetadata[R], key=True):
    """``org.apache.kafka.connect.transforms.SetSchemaMetadata$Key``."""


class SetSchemaMetadataValue(SetSchemaMetadata[R], key=False):
    """``org.apache.kafka.connect.transforms.SetSchemaMetadata$Value``."""
