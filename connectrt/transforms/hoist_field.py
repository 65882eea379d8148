"""HoistField: wrap the key or value in a Struct (with a schema) or map (without)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from connectrt.api.config import ConfigDef, ConfigType, Importance, NonEmptyString
from connectrt.api.transform import R
from connectrt.data.schema_builder import SchemaBuilder
from connectrt.data.struct import Struct
from connectrt.transforms._util import KeyOrValueTransformation, SchemaCache, put_field

__all__ = ["HoistField", "HoistFieldKey", "HoistFieldValue"]

FIELD = "field"


class HoistField(KeyOrValueTransformation[R]):
    """Wrap data under ``field``. Use HoistFieldKey/HoistFieldValue."""

    SMT_NAME = "HoistField"
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

    def apply(self, record: R) -> R:
        schema = self.operating_schema(record)
        value = self.operating_value(record)
        if schema is None:
            return self.new_record(record, None, {self._field: value})
        updated = self._cache.get(schema)
        if updated is None:
            updated = self._cache.put(
                schema, SchemaBuilder.struct().field(self._field, schema).build()
            )
        hoisted = Struct(updated)
        put_field(hoisted, self._field, value, self.smt_name())
        return self.new_record(record, updated, hoisted)


class HoistFieldKey(HoistField[R]):
    """``org.apache.kafka.connect.transforms.HoistField$Key``."""

    IS_KEY = True


class HoistFieldValue(HoistField[R]):
    """``org.apache.kafka.connect.transforms.HoistField$Value``."""

    IS_KEY = False
