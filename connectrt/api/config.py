"""Declarative configuration definitions for plugins and the worker.

A :class:`ConfigDef` lists the keys a plugin understands: type, default, validator, importance,
documentation and display group. One definition drives parsing (:meth:`ConfigDef.parse`),
per-field validation (:meth:`ConfigDef.validate`, the shape the REST validate endpoint returns)
and the generated plugin docs. Values arrive as strings (properties files, REST) or already typed
(JSON files); both are accepted.

Secrets use :attr:`ConfigType.PASSWORD` and are parsed into :class:`Password`, whose ``str`` is
``[hidden]`` (and ``repr`` ``Password([hidden])``), so they never leak through logs or errors.

ConfigDef objects are built once (usually at import time) and are read-only afterwards, so they
may be shared across threads.

This module holds :class:`ConfigDef`, :class:`ConfigKey` and :class:`ConfigValue`; it re-exports
the value types and parsing of :mod:`connectrt.api.config_types` and the validators of
:mod:`connectrt.api.config_validators`, so every config name can be imported from here.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from connectrt.api.config_types import (
    NO_DEFAULT,
    ConfigType,
    Importance,
    Password,
    Width,
    parse_type,
    render_value,
)
from connectrt.api.config_validators import (
    CompositeValidator,
    NonEmptyString,
    Range,
    Validator,
    ValidList,
    ValidRegex,
    ValidString,
)
from connectrt.errors import ConfigError

__all__ = [
    "NO_DEFAULT",
    "CompositeValidator",
    "ConfigDef",
    "ConfigKey",
    "ConfigType",
    "ConfigValue",
    "Importance",
    "NonEmptyString",
    "Password",
    "Range",
    "ValidList",
    "ValidRegex",
    "ValidString",
    "Validator",
    "Width",
    "parse_type",
    "render_value",
    "with_prefix",
]


@dataclass(frozen=True)
class ConfigKey:
    """One key of a :class:`ConfigDef` (immutable)."""

    name: str
    type: ConfigType
    default: Any = NO_DEFAULT
    validator: Validator | None = None
    importance: Importance = Importance.MEDIUM
    documentation: str = ""
    group: str | None = None
    order_in_group: int = -1
    width: Width = Width.NONE
    display_name: str | None = None
    dependents: tuple[str, ...] = ()
    internal: bool = False

    @property
    def required(self) -> bool:
        return self.default is NO_DEFAULT


@dataclass
class ConfigValue:
    """The validation result for one key (the ``value`` half of the REST ConfigInfo)."""

    name: str
    value: Any = None
    recommended_values: list[Any] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    visible: bool = True


class ConfigDef:
    """An ordered, immutable-after-construction set of :class:`ConfigKey` definitions.

    Build with chained :meth:`define` calls; combine with :meth:`merge` (later definitions
    win). Thread-safe for reading.
    """

    def __init__(self, keys: Iterable[ConfigKey] = ()) -> None:
        self._keys: dict[str, ConfigKey] = {}
        self._groups: list[str] = []
        for k in keys:
            self._add(k)

    def _add(self, key: ConfigKey) -> None:
        self._keys[key.name] = key
        if key.group and key.group not in self._groups:
            self._groups.append(key.group)

    def define(
        self,
        name: str,
        type: ConfigType,
        default: Any = NO_DEFAULT,
        validator: Validator | None = None,
        importance: Importance = Importance.MEDIUM,
        documentation: str = "",
        *,
        group: str | None = None,
        order_in_group: int = -1,
        width: Width = Width.NONE,
        display_name: str | None = None,
        dependents: Sequence[str] = (),
        internal: bool = False,
    ) -> ConfigDef:
        """Add a key and return ``self`` for chaining. The default is parsed and validated."""
        if name in self._keys:
            raise ConfigError(f"Configuration {name} is defined twice.", name)
        if default is not NO_DEFAULT and default is not None:
            default = parse_type(name, default, type)
            if validator is not None:
                validator(name, default)
        self._add(
            ConfigKey(
                name,
                type,
                default,
                validator,
                importance,
                documentation,
                group,
                order_in_group,
                width,
                display_name or name,
                tuple(dependents),
                internal,
            )
        )
        return self

    @property
    def keys(self) -> Mapping[str, ConfigKey]:
        return self._keys

    @property
    def groups(self) -> list[str]:
        return list(self._groups)

    def names(self) -> list[str]:
        return list(self._keys)

    def merge(self, other: ConfigDef) -> ConfigDef:
        """A new ConfigDef with this one's keys followed by ``other``'s (``other`` wins)."""
        merged = ConfigDef(self._keys.values())
        for k in other._keys.values():
            merged._add(k)
        return merged

    def _parse_one(self, key: ConfigKey, props: Mapping[str, Any]) -> Any:
        if key.name in props:
            raw = props[key.name]
            if raw is None:
                raise ConfigError(
                    "Null value can not be supplied as the configuration value.", key.name
                )
            value = parse_type(key.name, raw, key.type)
        elif key.required:
            raise ConfigError(
                f'Missing required configuration "{key.name}" which has no default value.',
                key.name,
            )
        else:
            value = key.default
        if key.validator is not None:
            key.validator(key.name, value)
        return value

    def parse(self, props: Mapping[str, Any]) -> dict[str, Any]:
        """Parse ``props`` into typed values; raise ConfigError listing every invalid key.

        Keys not in the definition are passed through unchanged so plugins can read extra
        (e.g. prefixed) settings.
        """
        errors: list[str] = []
        first: ConfigError | None = None
        out: dict[str, Any] = {k: v for k, v in props.items() if k not in self._keys}
        for key in self._keys.values():
            try:
                out[key.name] = self._parse_one(key, props)
            except ConfigError as e:
                first = first or e
                errors.append(_error_text(key.name, e))
        if first is not None:
            if len(errors) == 1:
                raise ConfigError(errors[0], first.name, first.value)
            raise ConfigError(
                f"{len(errors)} configuration errors:\n" + "\n".join(errors), first.name
            )
        return out

    def validate(self, props: Mapping[str, Any]) -> dict[str, ConfigValue]:
        """Validate every defined key; return one :class:`ConfigValue` per key (errors inside).

        Unlike :meth:`parse` this never raises for invalid values: errors are collected per
        field, as the REST validate endpoint reports them. Secrets keep their
        :class:`Password` wrapper so they render as ``[hidden]``.
        """
        result: dict[str, ConfigValue] = {}
        for key in self._keys.values():
            raw = props.get(key.name, None)
            if key.type is ConfigType.PASSWORD and raw is not None:
                raw = raw if isinstance(raw, Password) else Password(str(raw))
            cv = ConfigValue(key.name, raw)
            try:
                cv.value = self._parse_one(key, props)
            except ConfigError as e:
                cv.errors.append(str(e))
            result[key.name] = cv
        return result


def _error_text(name: str, e: ConfigError) -> str:
    msg = str(e)
    return msg if name in msg else f"{name}: {msg}"


def with_prefix(props: Mapping[str, Any], prefix: str, strip: bool = True) -> dict[str, Any]:
    """The entries of ``props`` whose key starts with ``prefix`` (prefix removed if ``strip``)."""
    n = len(prefix)
    return {(k[n:] if strip else k): v for k, v in props.items() if k.startswith(prefix)}
