"""Validators of config values: :class:`Range`, :class:`ValidString`, :class:`ValidList`,
:class:`NonEmptyString`, :class:`ValidRegex` and :class:`CompositeValidator`.

A validator is any callable ``(name, parsed_value) -> None`` that raises
:class:`~connectrt.errors.ConfigError` when the value is invalid (:data:`Validator`); its ``str``
describes the valid values. A ConfigDef calls it on every parsed value, defaults included (None
for an optional key without a default). The validators here are immutable: safe to share across
threads.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from connectrt.api.config_types import Password
from connectrt.errors import ConfigError

__all__ = [
    "CompositeValidator",
    "NonEmptyString",
    "Range",
    "ValidList",
    "ValidRegex",
    "ValidString",
    "Validator",
]


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
