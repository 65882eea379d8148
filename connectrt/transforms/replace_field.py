"""ReplaceField: drop (``exclude``), keep (``include``) and rename (``renames``) fields.

``exclude`` wins over ``include``; an empty ``include`` keeps every field. ``renames`` is a list
of ``old:new``. The pre-KIP-629 names ``blacklist``/``whitelist`` are accepted as aliases of
``exclude``/``include`` when the new names are not set. Null keys/values pass through.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from connectrt.api.config import ConfigDef, ConfigError, ConfigType, Importance
from connectrt.api.transform import R
from connectrt.data.schema import Schema, SchemaBuilder
from connectrt.data.struct import Struct
from connectrt.transforms._util import (
    REPLACE_NULL_ARGS,
    REPLACE_NULL_WITH_DEFAULT,
    KeyOrValueTransformation,
    SchemaCache,
    copy_schema_basics,
    field_value,
    require_map,
    require_struct,
)

__all__ = ["ReplaceField", "ReplaceFieldKey", "ReplaceFieldValue", "parse_renames"]

EXCLUDE = "exclude"
INCLUDE = "include"
RENAMES = "renames"
BLACKLIST = "blacklist"
WHITELIST = "whitelist"
_PURPOSE = "field replacement"


def parse_renames(mappings: list[str]) -> dict[str, str]:
    renames: dict[str, str] = {}
    for mapping in mappings:
        parts = mapping.split(":")
        if len(parts) != 2 or not parts[0] or not parts[1]:
            raise ConfigError(
                f"Invalid value {','.join(mappings)} for configuration {RENAMES}: "
                f"Invalid rename mapping: {mapping}",
                RENAMES,
                mappings,
            )
        renames[parts[0]] = parts[1]
    return renames


def _valid_renames(name: str, value: Any) -> None:
    parse_renames(value or [])


class ReplaceField(KeyOrValueTransformation[R]):
    """Filter or rename fields. Use ReplaceFieldKey/ReplaceFieldValue."""

    SMT_NAME = "ReplaceField"
    CONFIG_DEF: ClassVar[ConfigDef] = (
        ConfigDef()
        .define(
            EXCLUDE,
            ConfigType.LIST,
            "",
            None,
            Importance.MEDIUM,
            "Fields to exclude. This takes precedence over the fields to include.",
        )
        .define(
            INCLUDE,
            ConfigType.LIST,
            "",
            None,
            Importance.MEDIUM,
            "Fields to include. If specified, only these fields will be used.",
        )
        .define(
            RENAMES,
            ConfigType.LIST,
            "",
            _valid_renames,
            Importance.MEDIUM,
            "Field rename mappings.",
        )
        .define(BLACKLIST, ConfigType.LIST, None, None, Importance.LOW, "Deprecated: use exclude.")
        .define(WHITELIST, ConfigType.LIST, None, None, Importance.LOW, "Deprecated: use include.")
        .define(*REPLACE_NULL_ARGS)
    )

    def configure(self, config: Mapping[str, Any]) -> None:
        parsed = self.config_def().parse(config)
        exclude = parsed[EXCLUDE]
        if EXCLUDE not in config and parsed[BLACKLIST] is not None:
            exclude = parsed[BLACKLIST]
        include = parsed[INCLUDE]
        if INCLUDE not in config and parsed[WHITELIST] is not None:
            include = parsed[WHITELIST]
        self._exclude = frozenset(exclude)
        self._include = frozenset(include)
        self._renames = parse_renames(parsed[RENAMES])
        self._replace_null = bool(parsed[REPLACE_NULL_WITH_DEFAULT])
        self._cache = SchemaCache()
        self._plans: dict[tuple[Any, ...], tuple[tuple[Any, Any], ...]] = {}

    def _plan(self, data: Mapping[Any, Any]) -> tuple[tuple[Any, Any], ...]:
        """(old, new) key pairs for maps with these keys; cached, as maps usually repeat."""
        plan = tuple((k, self._renamed(k)) for k in data if self._keep(k))
        if len(self._plans) < 1000:
            self._plans[tuple(data)] = plan
        return plan

    def _keep(self, name: str) -> bool:
        return name not in self._exclude and (not self._include or name in self._include)

    def _renamed(self, name: str) -> str:
        return self._renames.get(name, name)

    def apply(self, record: R) -> R:
        value = self.operating_value(record)
        if value is None:
            return record
        schema = self.operating_schema(record)
        smt = self.smt_name()
        if schema is None:
            data = require_map(value, _PURPOSE, smt)
            plan = self._plans.get(tuple(data))
            if plan is None:
                plan = self._plan(data)
            return self.new_record(record, None, {new: data[old] for old, new in plan})
        struct = require_struct(value, _PURPOSE, smt)
        new_schema = self._updated_schema(struct.schema)
        out = Struct(new_schema)
        for f in struct.schema.fields:
            if self._keep(f.name):
                out.put(self._renamed(f.name), field_value(struct, f, self._replace_null))
        return self.new_record(record, new_schema, out)

    def _updated_schema(self, schema: Schema) -> Schema:
        cached = self._cache.get(schema)
        if cached is not None:
            return cached
        builder = copy_schema_basics(schema, SchemaBuilder.struct())
        for f in schema.fields:
            if self._keep(f.name):
                builder.field(self._renamed(f.name), f.schema)
        if schema.optional:
            builder.optional()
        return self._cache.put(schema, builder.build())


class ReplaceFieldKey(ReplaceField[R]):
    """``org.apache.kafka.connect.transforms.ReplaceField$Key``."""

    IS_KEY = True


class ReplaceFieldValue(ReplaceField[R]):
    """``org.apache.kafka.connect.transforms.ReplaceField$Value``."""

    IS_KEY = False
