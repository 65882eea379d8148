"""JsonConverter's configuration keys and the parsing of their values (Kafka's messages)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from connectrt.api.converter import ConfigKeys
from connectrt.errors import ConfigError

__all__ = [
    "CONFIG_KEYS",
    "CONVERTER_TYPE_CONFIG",
    "DECIMAL_FORMAT_CONFIG",
    "REPLACE_NULL_WITH_DEFAULT_CONFIG",
    "SCHEMAS_CACHE_SIZE_CONFIG",
    "SCHEMAS_ENABLE_CONFIG",
    "config_converter_type",
    "config_decimal_numeric",
    "config_int",
]

SCHEMAS_ENABLE_CONFIG: Final = "schemas.enable"
SCHEMAS_CACHE_SIZE_CONFIG: Final = "schemas.cache.size"
DECIMAL_FORMAT_CONFIG: Final = "decimal.format"
REPLACE_NULL_WITH_DEFAULT_CONFIG: Final = "replace.null.with.default"
CONVERTER_TYPE_CONFIG: Final = "converter.type"

CONFIG_KEYS: ConfigKeys = {
    SCHEMAS_ENABLE_CONFIG: (
        "BOOLEAN",
        True,
        "Include schemas within each of the serialized values and keys.",
    ),
    SCHEMAS_CACHE_SIZE_CONFIG: (
        "INT",
        1000,
        "The maximum number of schemas that can be cached in this converter instance.",
    ),
    DECIMAL_FORMAT_CONFIG: (
        "STRING",
        "BASE64",
        "Controls which format this converter will serialize decimals in. This value is case "
        "insensitive and can be either 'BASE64' (default) or 'NUMERIC'",
    ),
    REPLACE_NULL_WITH_DEFAULT_CONFIG: (
        "BOOLEAN",
        True,
        "Whether to replace fields that have a default value and that are null to the default "
        "value. When set to true, the default value is used, otherwise null is used.",
    ),
    CONVERTER_TYPE_CONFIG: (
        "STRING",
        None,
        "How this converter will be used: 'key', 'value' or 'header' (set by the runtime).",
    ),
}


def config_int(config: Mapping[str, Any], key: str) -> int:
    """The non-negative INT ``key`` of ``config`` (a number or its text), else its default."""
    value = config.get(key, CONFIG_KEYS[key][1])
    try:
        if isinstance(value, bool):
            raise ValueError
        number = int(value.strip()) if isinstance(value, str) else int(value)
    except (TypeError, ValueError):
        raise ConfigError(
            f"Invalid value {value} for configuration {key}: Not a number of type INT", key, value
        ) from None
    if number < 0:
        raise ConfigError(
            f"Invalid value {value} for configuration {key}: Value must be at least 0", key, value
        )
    return number


def config_decimal_numeric(config: Mapping[str, Any]) -> bool:
    """Whether ``decimal.format`` is NUMERIC (True) or BASE64 (False, the default)."""
    fmt = config.get(DECIMAL_FORMAT_CONFIG, "BASE64")
    fmt_upper = fmt.strip().upper() if isinstance(fmt, str) else fmt
    if fmt_upper not in ("BASE64", "NUMERIC"):
        raise ConfigError(
            f"Invalid value {fmt} for configuration {DECIMAL_FORMAT_CONFIG}: "
            "String must be one of (case insensitive): BASE64, NUMERIC",
            DECIMAL_FORMAT_CONFIG,
            fmt,
        )
    return fmt_upper == "NUMERIC"


def config_converter_type(config: Mapping[str, Any]) -> str | None:
    """``converter.type`` in lower case ("key", "value" or "header"), or None when unset."""
    ctype = config.get(CONVERTER_TYPE_CONFIG)
    if ctype is not None and str(ctype).lower() not in ("key", "value", "header"):
        raise ConfigError(
            f"Invalid value {ctype} for configuration {CONVERTER_TYPE_CONFIG}: "
            "String must be one of: key, value, header",
            CONVERTER_TYPE_CONFIG,
            ctype,
        )
    return None if ctype is None else str(ctype).lower()
