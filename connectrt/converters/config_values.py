"""Reading a converter's option from its ``configure`` map: one parse per option type, with the
default taken from the converter's ``CONFIG_KEYS`` (``{key: (TYPE, default, doc)}``), so that
a default is written once, where the key is declared.

The messages are Kafka's (``ConfigDef``'s) and the :class:`~connectrt.errors.ConfigError` names
the key and the value. Pure functions: called from ``configure``, on any thread.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from connectrt.api.converter import ConfigKeys
from connectrt.errors import ConfigError

__all__ = ["config_bool"]


def config_bool(config: Mapping[str, Any], key: str, keys: ConfigKeys) -> bool:
    """The BOOLEAN ``key`` of ``config`` (a bool or "true"/"false", any case, around blanks),
    else its default in ``keys``."""
    value = config.get(key, keys[key][1])
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    raise ConfigError(
        f"Invalid value {value} for configuration {key}: Expected value to be either true or false",
        key,
        value,
    )
