"""The types of config values, and how values of each type are parsed and rendered.

:class:`ConfigType` names a key's type (Kafka's ``ConfigDef.Type``); :func:`parse_type` turns a
raw value, a string (properties files, REST) or an already-typed value (JSON files), into that
type, and :func:`render_value` turns a parsed value back into its string form. :data:`NO_DEFAULT`
marks a required key. :class:`Importance` and :class:`Width` are a key's documentation
attributes.

Secrets use :attr:`ConfigType.PASSWORD` and are parsed into :class:`Password`, whose ``str`` is
``[hidden]`` (and ``repr`` ``Password([hidden])``), so they never leak through logs or errors.

Everything here is immutable or a pure function: safe from any thread.
"""

from __future__ import annotations

import enum
from typing import Any, Final

from connectrt.errors import ConfigError

__all__ = [
    "NO_DEFAULT",
    "ConfigType",
    "Importance",
    "Password",
    "Width",
    "parse_type",
    "render_value",
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
