"""HoistField: wrap the key or value in a Struct (with a schema) or map (without)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from connectrt.api.config import ConfigDef, ConfigType, Importance, NonEmptyString
from connectrt.api.records import ConnectRecord
from connectrt.api.transform import R
from connectrt.data.schema import Schema
from connectrt.data.schema_builder import SchemaBuilder
from connectrt.data.struct import Struct
from connectrt.transforms._util import SchemaCache, put_field
from connectrt.transforms.base import Part, PartRewrite

__all__ = ["HoistField", "HoistFieldKey", "HoistFieldValue"]

FIELD = "field"


class HoistField(PartRewrite[R]):
    """Wrap data under ``field``. Use HoistFieldKey/HoistFieldValue."""

    CONFIG_DEF: ClassVar[ConfigDef] = ConfigDef().define(
        FIELD,
        ConfigType.STRING,
        validator=NonEmptyString(),
        importance=Importance.MEDIUM,
        documentation="Field name for the single field that will be created in the resulting "
        "Struct or Map.",
    )

    def configure(self, config: Mapping[str, Any]) -> None:
        self._field: str = self.config_def().parse(config)[FIELD]
        self._cache = SchemaCache()

    def rewrite(self, record: ConnectRecord, schema: Schema | None, value: Any) -> Part | None:
        if schema is None:
            return None, {self._field: value}
        updated = self._cache.get(schema)
        if updated is None:
            updated = self._cache.put(
                schema, SchemaBuilder.struct().field(self._field, schema).build()
            )
        hoisted = Struct(updated)
        put_field(hoisted, self._field, value, self.smt_name())
        return updated, hoisted


class HoistFieldKey(HoistField[R], key=True):
    """``org.apache.kafka.connect.transforms.HoistField$Key``."""


class HoistFieldValue(HoistField[R], key=False):
    """``org.apache.kafka.connect.transforms.HoistField$Value``."""
