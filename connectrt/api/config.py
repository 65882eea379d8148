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
"""

from __future__ import annotations

import enum
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

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
    "with_prefix",
]


class ConfigType(enum.StrEnum):
    BOOLEAN = "BOOLEAN"
    STRING = "STRING"
    INT = "INT"
    SHORT = "SHORT"
    LONG = "LONG"
    DOUBLE = "DOUBLE"
    LIST = "LIST"
    CLASS = "CLASS"
    PASSWORD = "PASSWORD"


class Importance(enum.StrEnum):
    HIGH = "HIGH"
    MEDIUM = "MEDIUM"
    LOW = "LOW"


class Width(enum.StrEnum):
    NONE = "NONE"
    SHORT = "SHORT"
    MEDIUM = "MEDIUM"
    LONG = "LONG"


class _NoDefault:
    _instance: _NoDefault | None = None

    def __new__(cls) -> _NoDefault:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "NO_DEFAULT"


NO_DEFAULT: Final = _NoDefault()
"""Marks a key as required: it has no default and must be supplied."""


class Password:
    """A secret config value. ``str()``/``repr()`` never reveal it; use :attr:`value`."""

    __slots__ = ("value",)
    HIDDEN = "[hidden]"

    def __init__(self, value: str) -> None:
        self.value = value

    def __str__(self) -> str:
        return self.HIDDEN

    def __repr__(self) -> str:
        return f"Password({self.HIDDEN})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Password) and other.value == self.value

    def __hash__(self) -> int:
        return hash(self.value)


Validator = Callable[[str, Any], None]
"""A validator is called with ``(name, parsed_value)`` and raises ConfigError when invalid."""


@dataclass(frozen=True)
class Range:
    """Numeric range check; either bound may be None."""

    min: float | None = None
    max: float | None = None

    @classmethod
    def at_least(cls, minimum: float) -> Range:
        return cls(minimum, None)

    @classmethod
    def between(cls, minimum: float, maximum: float) -> Range:
        return cls(minimum, maximum)

    def __call__(self, name: str, value: Any) -> None:
        if value is None:
            return
        if self.min is not None and value < self.min:
            raise ConfigError(f"Value must be at least {_num(self.min)}", name, value)
        if self.max is not None and value > self.max:
            raise ConfigError(f"Value must be no more than {_num(self.max)}", name, value)

    def __str__(self) -> str:
        lo = "..." if self.min is None else _num(self.min)
        hi = "..." if self.max is None else _num(self.max)
        return f"[{lo},...,{hi}]"


def _num(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else str(x)


@dataclass(frozen=True)
class ValidString:
    """The value must be one of ``options`` (case-insensitive when asked)."""

    options: tuple[str, ...]
    case_insensitive: bool = False

    @classmethod
    def of(cls, *options: str, case_insensitive: bool = False) -> ValidString:
        return cls(tuple(options), case_insensitive)

    def __call__(self, name: str, value: Any) -> None:
        if value is None:
            return
        allowed = {o.lower() for o in self.options} if self.case_insensitive else set(self.options)
        probe = str(value).lower() if self.case_insensitive else str(value)
        if probe not in allowed:
            raise ConfigError(f"String must be one of: {', '.join(self.options)}", name, value)

    def __str__(self) -> str:
        return "[" + ", ".join(self.options) + "]"


@dataclass(frozen=True)
class ValidList:
    """Every list element must be one of ``options``."""

    options: tuple[str, ...]

    def __call__(self, name: str, value: Any) -> None:
        for item in value or ():
            if item not in self.options:
                raise ConfigError(
                    f"Invalid value {item} for configuration {name}: "
                    f"String must be one of: {', '.join(self.options)}",
                    name,
                    value,
                )

    def __str__(self) -> str:
        return "[" + ", ".join(self.options) + "]"


class NonEmptyString:
    """The value must be a non-empty, non-blank string."""

    def __call__(self, name: str, value: Any) -> None:
        text = value.value if isinstance(value, Password) else value
        if text is not None and not str(text).strip():
            raise ConfigError("String must be non-empty", name, value)

    def __str__(self) -> str:
        return "non-empty string"


class ValidRegex:
    """The value must compile as a regular expression."""

    def __call__(self, name: str, value: Any) -> None:
        if value:
            try:
                re.compile(value)
            except re.error as e:
                raise ConfigError(f"Invalid regular expression: {e}", name, value) from e

    def __str__(self) -> str:
        return "valid regex"


@dataclass(frozen=True)
class CompositeValidator:
    validators: tuple[Validator, ...]

    def __call__(self, name: str, value: Any) -> None:
        for v in self.validators:
            v(name, value)

    def __str__(self) -> str:
        return ", ".join(str(v) for v in self.validators)


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


_INT_BOUNDS = {
    ConfigType.SHORT: (-(2**15), 2**15 - 1),
    ConfigType.INT: (-(2**31), 2**31 - 1),
    ConfigType.LONG: (-(2**63), 2**63 - 1),
}


def parse_type(name: str, value: Any, type_: ConfigType) -> Any:
    """Parse ``value`` (a string, or an already-typed value) as ``type_``; raise ConfigError."""
    if value is None:
        return None
    try:
        if type_ is ConfigType.BOOLEAN:
            if isinstance(value, bool):
                return value
            s = str(value).strip().lower()
            if s in ("true", "false"):
                return s == "true"
            raise ConfigError("Expected value to be either true or false", name, value)
        if type_ in _INT_BOUNDS:
            if isinstance(value, bool):
                raise ValueError
            n = value if isinstance(value, int) else int(str(value).strip())
            lo, hi = _INT_BOUNDS[type_]
            if not lo <= n <= hi:
                raise ValueError
            return n
        if type_ is ConfigType.DOUBLE:
            if isinstance(value, bool):
                raise ValueError
            return float(value)
        if type_ is ConfigType.LIST:
            if isinstance(value, list | tuple):
                return [str(v).strip() for v in value]
            s = str(value).strip()
            return [p.strip() for p in s.split(",")] if s else []
        if type_ is ConfigType.PASSWORD:
            return value if isinstance(value, Password) else Password(str(value))
        if type_ in (ConfigType.STRING, ConfigType.CLASS):
            if isinstance(value, type):
                return f"{value.__module__}.{value.__qualname__}"
            return str(value).strip() if type_ is ConfigType.CLASS else str(value)
    except (TypeError, ValueError) as e:
        article = "an" if type_.value[0] in "AEIOU" else "a"
        raise ConfigError(
            f"Invalid value {value} for configuration {name}: Not {article} {type_.value.lower()}",
            name,
            value,
        ) from e
    raise ConfigError(f"Unknown type {type_}", name, value)  # pragma: no cover


def render_value(value: Any, type_: ConfigType | None = None) -> str | None:
    """Render a parsed value back to its string form (lists comma-joined, secrets hidden)."""
    if value is None:
        return None
    if isinstance(value, Password) or type_ is ConfigType.PASSWORD:
        return Password.HIDDEN
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list | tuple):
        return ",".join(str(v) for v in value)
    return str(value)


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
