"""Configuration keys of the schema-registry converters (Avro, JSON Schema) and their parsing."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from connectrt.api.converter import ConfigKeys
from connectrt.errors import ConfigError

__all__ = [
    "AUTH_SOURCE_CONFIG",
    "AUTH_USER_INFO_CONFIG",
    "AUTO_REGISTER_CONFIG",
    "CACHE_SIZE_CONFIG",
    "COMPATIBILITY_LEVELS",
    "CONFIG_KEYS",
    "KEY_STRATEGY_CONFIG",
    "SCHEMA_REGISTRY_URL_CONFIG",
    "SUBJECT_STRATEGIES",
    "TIMEOUT_CONFIG",
    "USE_LATEST_CONFIG",
    "VALUE_STRATEGY_CONFIG",
    "config_basic_auth",
    "config_cache_size_and_timeout",
    "config_registry_url",
    "config_subject_strategy",
]

SCHEMA_REGISTRY_URL_CONFIG: Final = "schema.registry.url"
AUTO_REGISTER_CONFIG: Final = "auto.register.schemas"
USE_LATEST_CONFIG: Final = "use.latest.version"
KEY_STRATEGY_CONFIG: Final = "key.subject.name.strategy"
VALUE_STRATEGY_CONFIG: Final = "value.subject.name.strategy"
AUTH_SOURCE_CONFIG: Final = "basic.auth.credentials.source"
AUTH_USER_INFO_CONFIG: Final = "basic.auth.user.info"
CACHE_SIZE_CONFIG: Final = "schemas.cache.size"
TIMEOUT_CONFIG: Final = "schema.registry.timeout.ms"

SUBJECT_STRATEGIES: Final = ("TopicNameStrategy", "RecordNameStrategy", "TopicRecordNameStrategy")

COMPATIBILITY_LEVELS: Final = (
    "NONE",
    "BACKWARD",
    "BACKWARD_TRANSITIVE",
    "FORWARD",
    "FORWARD_TRANSITIVE",
    "FULL",
    "FULL_TRANSITIVE",
)
"""The compatibility levels of a schema registry (Confluent's, and the one a worker embeds)."""

CONFIG_KEYS: ConfigKeys = {
    SCHEMA_REGISTRY_URL_CONFIG: (
        "LIST",
        None,
        "Comma-separated list of schema registry URLs (the first one is used).",
    ),
    AUTO_REGISTER_CONFIG: (
        "BOOLEAN",
        True,
        "Register new schemas under the subject automatically.",
    ),
    USE_LATEST_CONFIG: (
        "BOOLEAN",
        False,
        "Serialize with the latest registered schema of the subject (with "
        "auto.register.schemas=false).",
    ),
    KEY_STRATEGY_CONFIG: (
        "STRING",
        "TopicNameStrategy",
        "Subject name strategy for keys: TopicNameStrategy, RecordNameStrategy or "
        "TopicRecordNameStrategy (short or io.confluent.kafka.serializers.subject.* names).",
    ),
    VALUE_STRATEGY_CONFIG: (
        "STRING",
        "TopicNameStrategy",
        "Subject name strategy for values (see key.subject.name.strategy).",
    ),
    AUTH_SOURCE_CONFIG: (
        "STRING",
        "",
        "Source of basic auth credentials for the registry: USER_INFO (or empty for none).",
    ),
    AUTH_USER_INFO_CONFIG: ("PASSWORD", None, "Basic auth credentials as user:password."),
    CACHE_SIZE_CONFIG: ("INT", 1000, "Maximum number of schemas cached by this converter."),
    TIMEOUT_CONFIG: ("INT", 30000, "Registry HTTP timeout in milliseconds."),
}


def config_registry_url(config: Mapping[str, Any]) -> str:
    """The first of the ``schema.registry.url`` URLs (a list or comma-separated text)."""
    urls = config.get(SCHEMA_REGISTRY_URL_CONFIG)
    if isinstance(urls, list | tuple):
        urls = ",".join(str(u) for u in urls)
    if not urls or not str(urls).strip():
        raise ConfigError(f'Missing required configuration "{SCHEMA_REGISTRY_URL_CONFIG}"')
    return str(urls).split(",")[0].strip()


def config_subject_strategy(config: Mapping[str, Any], is_key: bool) -> str:
    """The short name of the key's or value's subject name strategy (one of
    :data:`SUBJECT_STRATEGIES`; Confluent's class names accepted)."""
    key = KEY_STRATEGY_CONFIG if is_key else VALUE_STRATEGY_CONFIG
    strategy = str(config.get(key) or "TopicNameStrategy").rsplit(".", 1)[-1]
    if strategy not in SUBJECT_STRATEGIES:
        raise ConfigError(
            f"Invalid value {config.get(key)!r} for {key}: one of {SUBJECT_STRATEGIES}"
        )
    return strategy


def config_basic_auth(config: Mapping[str, Any]) -> tuple[str, str] | None:
    """``(user, password)`` for the registry when the credentials source is USER_INFO."""
    source = str(config.get(AUTH_SOURCE_CONFIG) or "").upper()
    if source == "USER_INFO":
        info = str(config.get(AUTH_USER_INFO_CONFIG) or "")
        user, sep, password = info.partition(":")
        if not sep:
            raise ConfigError(f"{AUTH_USER_INFO_CONFIG} must be user:password")
        return (user, password)
    if source not in ("", "URL"):
        raise ConfigError(f"Unsupported {AUTH_SOURCE_CONFIG} {source!r} (USER_INFO or URL)")
    return None


def config_cache_size_and_timeout(config: Mapping[str, Any]) -> tuple[int, float]:
    """The (positive) cache size, and the registry timeout in seconds."""
    try:
        size = int(config.get(CACHE_SIZE_CONFIG, 1000))
        timeout = int(config.get(TIMEOUT_CONFIG, 30000)) / 1000
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"Invalid {CACHE_SIZE_CONFIG} or {TIMEOUT_CONFIG}: {exc}") from exc
    if size <= 0:
        raise ConfigError(f"{CACHE_SIZE_CONFIG} must be positive")
    return size, timeout
