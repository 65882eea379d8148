"""ReplaceField: drop (``exclude``), keep (``include``) and rename (``renames``) fields.

``exclude`` wins over ``include``; an empty ``include`` keeps every field. ``renames`` is a list
of ``old:new``. The pre-KIP-629 names ``blacklist``/``whitelist`` are accepted as aliases of
``exclude``/``include`` when the new names are not set. Null keys/values pass through.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from connectrt.api.config import ConfigDef, ConfigError, ConfigType, Importance
from connectrt.api.records import ConnectRecord
from connectrt.api.transform import R
from connectrt.data.schema import Schema
from connectrt.data.schema_builder import SchemaBuilder
from connectrt.data.struct import Struct
from connectrt.transforms._util import (
    REPLACE_NULL_ARGS,
    REPLACE_NULL_WITH_DEFAULT,
    SchemaCache,
    copy_schema_basics,
    require_map,
    require_struct,
)
from connectrt.transforms.base import Part, PartRewrite

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


_StructPlan = tuple[Schema, tuple[int, ...] | None, tuple[tuple[int, Any], ...]]
"""(updated schema, kept source indices in order or None when every field is kept in order,
(position, default) of the fields whose null reads as their default)."""


class ReplaceField(PartRewrite[R]):
    """Filter or rename fields. Use ReplaceFieldKey/ReplaceFieldValue."""

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
        # The plan for the previous record's schema, matched by identity.
        self._last_schema: Schema | None = None
        self._last_plan: _StructPlan = (Schema.STRING_SCHEMA, (), ())

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

    def apply_batch_owned(self, records: list[R]) -> bool:
        if self.IS_KEY:
            return super().apply_batch_owned(records)
        # The value paths of rewrite() inlined: this loop runs once per record.
        plans = self._plans
        renamed = None if self._exclude or self._include else self._renames.get
        new_struct = Struct.__new__
        for r in records:
            value = r.value
            if value is None:
                continue
            if r.value_schema is None and type(value) is dict:
                if renamed is not None:  # renames only: every key is kept, in order
                    r.value = {renamed(k, k): v for k, v in value.items()}
                    continue
                plan = plans.get(tuple(value))
                if plan is None:
                    plan = self._plan(value)
                r.value = {new: value[old] for old, new in plan}
            elif r.value_schema is not None and type(value) is Struct:
                source = value._schema
                new_schema, indices, default_fill = (
                    self._last_plan if self._last_schema is source else self._struct_plan(source)
                )
                old_values = value._values
                values = old_values.copy() if indices is None else [old_values[i] for i in indices]
                for position, default in default_fill:
                    if values[position] is None:
                        values[position] = default
                struct = new_struct(Struct)
                struct._schema = new_schema
                struct._values = values
                r.value_schema = new_schema
                r.value = struct
            else:
                self.apply_owned(r)
        return True

    def rewrite(self, record: ConnectRecord, schema: Schema | None, value: Any) -> Part | None:
        if value is None:
            return None
        if schema is None:
            if type(value) is not dict:
                value = require_map(value, _PURPOSE, self.smt_name())
            plan = self._plans.get(tuple(value))
            if plan is None:
                plan = self._plan(value)
            return None, {new: value[old] for old, new in plan}
        struct = (
            value if type(value) is Struct else require_struct(value, _PURPOSE, self.smt_name())
        )
        source = struct.schema
        new_schema, indices, default_fill = (
            self._last_plan if self._last_schema is source else self._struct_plan(source)
        )
        old_values = struct._values
        values = old_values.copy() if indices is None else [old_values[i] for i in indices]
        for position, default in default_fill:
            if values[position] is None:
                values[position] = default
        return new_schema, Struct._from_values(new_schema, values)

    def _struct_plan(self, source: Schema) -> _StructPlan:
        """The :data:`_StructPlan` for structs of ``source``, kept as the last plan."""
        kept = [f for f in source.fields if self._keep(f.name)]
        fill: tuple[tuple[int, Any], ...] = ()
        if self._replace_null:
            fill = tuple(
                (pos, f.schema.default)
                for pos, f in enumerate(kept)
                if f.schema.default is not None
            )
        indices: tuple[int, ...] | None = tuple(f.index for f in kept)
        if indices == tuple(range(len(source.fields))):
            indices = None  # renames only: the value list is copied as it is
        plan = (self._updated_schema(source), indices, fill)
        self._last_schema, self._last_plan = source, plan
        return plan

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


class ReplaceFieldKey(ReplaceField[R], key=True):
    """``org.apache.kafka.connect.transforms.ReplaceField$Key``."""


class ReplaceFieldValue(ReplaceField[R], key=False):
    """``org.apache.kafka.connect.transforms.ReplaceField$Value``."""
