"""ExtractField: replace the key or value with one of its fields (``ExtractField$Key/$Value``).

With ``field.syntax.version=V2`` the field may be a dotted path into nested Structs or maps.
A null key/value stays null; a missing field in a map gives null; a field missing from the
schema is a DataError.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from connectrt.api.config import ConfigDef, ConfigType, Importance, NonEmptyString
from connectrt.api.records import ConnectRecord
from connectrt.api.transform import R
from connectrt.data.schema import Schema
from connectrt.errors import DataError
from connectrt.transforms._util import (
    REPLACE_NULL_ARGS,
    REPLACE_NULL_WITH_DEFAULT,
    require_map,
    require_struct,
)
from connectrt.transforms.base import Part, PartRewrite
from connectrt.transforms.field_path import (
    FIELD_SYNTAX_VERSION,
    FIELD_SYNTAX_VERSION_ARGS,
    SingleFieldPath,
)

__all__ = ["ExtractField", "ExtractFieldKey", "ExtractFieldValue"]

FIELD = "field"
_PURPOSE = "field extraction"


class ExtractField(PartRewrite[R]):
    """Extract one field. Use ExtractFieldKey/ExtractFieldValue."""

    CONFIG_DEF: ClassVar[ConfigDef] = (
        ConfigDef()
        .define(
            FIELD,
            ConfigType.STRING,
            validator=NonEmptyString(),
            importance=Importance.MEDIUM,
            documentation="Field name to extract.",
        )
        .define(*FIELD_SYNTAX_VERSION_ARGS)
        .define(*REPLACE_NULL_ARGS)
    )

    def configure(self, config: Mapping[str, Any]) -> None:
        parsed = self.config_def().parse(config)
        self._path = SingleFieldPath(parsed[FIELD], parsed[FIELD_SYNTAX_VERSION], FIELD)
        self._replace_null = bool(parsed[REPLACE_NULL_WITH_DEFAULT])

    def rewrite(self, record: ConnectRecord, schema: Schema | None, value: Any) -> Part | None:
        name = self.smt_name()
        if schema is None:
            if value is None:
                return None, None
            data = require_map(value, _PURPOSE, name)
            return None, self._path.value_from_map(data)
        struct = None if value is None else require_struct(value, _PURPOSE, name)
        field = self._path.field_from(schema)
        if field is None:
            raise DataError(f"{name}: Unknown field: {self._path.path}")
        extracted: Any = None
        if struct is not None:
            extracted = self._path.value_from_struct(struct, self._replace_null)
        return field.schema, extracted


class ExtractFieldKey(ExtractField[R], key=True):
    """``org.apache.kafka.connect.transforms.ExtractField$Key``."""


class ExtractFieldValue(ExtractField[R], key=False):
    """``org.apache.kafka.connect.transforms.ExtractField$Value``."""
