"""ReplaceField: drop (``exclude``), keep (``include``) and rename (``renames``) fields.

``exclude`` wins over ``include``; an empty ``include`` keeps every field. ``renames`` is a list
of ``old:new``. The pre-KIP-629 names ``blacklist``/``whitelist`` are accepted as aliases of
``exclude``/``include`` when the new names are not set. Null keys/values pass through.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from connectrt.api.config import ConfigDef, ConfigError, ConfigType, Importance
from connectrt.api.records import ConnectRecord
from connectrt.api.transform import R
from connectrt.data.schema import Field, Schema
from connectrt.data.schema_builder import SchemaBuilder
from connectrt.transforms._util import (
    REPLACE_NULL_ARGS,
)
from connectrt.transforms.map_or_struct import MapOrStructRewrite

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


class ReplaceField(MapOrStructRewrite[R]):
    """Filter or rename fields. Use ReplaceFieldKey/ReplaceFieldValue."""

    PURPOSE = _PURPOSE

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
        # With renames only, a map's keys are looked up in renames one by one.
        self._renamed_key = None if self._exclude or self._include else self._renames.get
        self._plans: dict[tuple[Any, ...], tuple[tuple[Any, Any], ...]] = {}
        self.start_struct_plans(parsed)

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

    def rewrite_map(self, record: ConnectRecord, value: dict[str, Any]) -> dict[str, Any]:
        renamed = self._renamed_key
        if renamed is not None:  # renames only: every key is kept, in order
            return {renamed(k, k): v for k, v in value.items()}
        plan = self._plans.get(tuple(value))
        if plan is None:
            plan = self._plan(value)
        return {new: value[old] for old, new in plan}

    def kept_fields(self, source: Schema) -> Sequence[Field]:
        return [f for f in source.fields if self._keep(f.name)]

    def define_fields(self, source: Schema, builder: SchemaBuilder) -> None:
        """The fields of ``source`` kept, renamed."""
        for f in source.fields:
            if self._keep(f.name):
                builder.field(self._renamed(f.name), f.schema)


class ReplaceFieldKey(ReplaceField[R], key=True):
    """``org.apache.kafka.connect.transforms.ReplaceField$Key``."""


class ReplaceFieldValue(ReplaceField[R], key=False):
    """``org.apache.kafka.connect.transforms.ReplaceField$Value``."""
