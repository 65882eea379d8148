"""The ``*.plugin.version`` keys (KIP-891): which installed version of a plugin a connector runs.

Connector keys: ``connector.plugin.version``, ``key.converter.plugin.version``,
``value.converter.plugin.version``, ``header.converter.plugin.version`` (here, merged into the
framework definition), ``transforms.<alias>.plugin.version`` and
``predicates.<alias>.plugin.version`` (in :mod:`connectrt.transforms.chain_config`). The worker
has the three converter keys too, for its default converters. Values: a version, a version
range or ``latest`` (see :mod:`connectrt.runtime.plugins.versions`); absent means the newest
installed version, except that a converter the connector does not name follows the worker's
converter version key.

:func:`validate_plugin_versions` adds to a connector validation what the definitions cannot
know: whether the version asked for is installed (Kafka's "not found that matches the version
range" error, on the version key and on the class key) and the installed versions as the
version key's recommended values. Stateless; safe from any thread.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from connectrt.api.config import ConfigDef, ConfigType, ConfigValue, Importance, Width
from connectrt.errors import ConfigError
from connectrt.runtime.plugins.registry import PluginRegistry, VersionedPluginLoadingError
from connectrt.runtime.plugins.versions import InvalidVersionSpec, version_requirement

__all__ = [
    "CONNECTOR_VERSION",
    "CONVERTER_KINDS",
    "PLUGIN_VERSION_CONFIG_DEF",
    "WORKER_VERSION_CONFIG_DEF",
    "check_version_spec",
    "converter_version_key",
    "validate_plugin_versions",
    "worker_converters",
]

CONNECTOR_VERSION = "connector.plugin.version"
CONVERTER_KINDS = ("key", "value", "header")


def converter_version_key(kind: str) -> str:
    return f"{kind}.converter.plugin.version"


def worker_converters(worker_config: Any) -> dict[str, tuple[str, str | None]]:
    """A WorkerConfig's converter class and ``*.converter.plugin.version`` per kind."""
    return {
        kind: (worker_config.converter_class(kind), worker_config.get(converter_version_key(kind)))
        for kind in CONVERTER_KINDS
    }


def check_version_spec(name: str, value: object) -> None:
    """Validator: a version, a version range or ``latest``."""
    if value is None:
        return
    try:
        version_requirement(str(value))
    except InvalidVersionSpec as e:
        raise ConfigError(
            f"Invalid value {value} for configuration {name}: {e}", name, value
        ) from None


def _defs(connector: bool) -> ConfigDef:
    out = ConfigDef()
    if connector:
        out.define(
            CONNECTOR_VERSION,
            ConfigType.STRING,
            None,
            check_version_spec,
            Importance.MEDIUM,
            "Version of the connector: a version (1.2.0), a version range ([1.0,2.0)) or "
            "'latest'; default: the newest installed version.",
            group="Common",
            order_in_group=3,
            width=Width.MEDIUM,
            display_name="Connector version",
        )
    for i, kind in enumerate(CONVERTER_KINDS):
        out.define(
            converter_version_key(kind),
            ConfigType.STRING,
            None,
            check_version_spec,
            Importance.LOW,
            f"Version of the {kind} converter: a version, a version range or 'latest'; "
            + (
                f"default: the newest installed version of {kind}.converter."
                if not connector
                else f"default: the newest installed version (when {kind}.converter is set), "
                f"else the worker's {kind}.converter.plugin.version."
            ),
            group="Common",
            order_in_group=6 + 2 * i,
            width=Width.SHORT,
            display_name=f"{kind.capitalize()} converter version",
        )
    return out


PLUGIN_VERSION_CONFIG_DEF = _defs(connector=True)
WORKER_VERSION_CONFIG_DEF = _defs(connector=False)


def _check(
    registry: PluginRegistry,
    values: dict[str, ConfigValue],
    class_key: str | None,
    class_name: str,
    version_key: str,
    version: str | None,
    kind: str,
    recommend: bool = False,
) -> None:
    cv = values.setdefault(version_key, ConfigValue(version_key, version))
    if recommend:
        cv.recommended_values = [p.version() for p in registry.versions(class_name, kind)]
    if version is None or cv.errors:
        return
    try:
        registry.choose(class_name, kind, version)
    except VersionedPluginLoadingError as e:
        for key in (version_key, class_key) if class_key else (version_key,):
            bucket = values.setdefault(key, ConfigValue(key, None)).errors
            if str(e) not in bucket:
                bucket.append(str(e))
    except ConfigError:
        pass  # an unknown class: already an error on the class key


def validate_plugin_versions(
    config: Mapping[str, str | None],
    registry: PluginRegistry,
    values: dict[str, ConfigValue],
    worker_converters: Mapping[str, tuple[str, str | None]] | None = None,
) -> None:
    """Check the connector and converter versions ``config`` asks for against what is
    installed, into ``values``. ``worker_converters`` gives the worker's converter class and
    version key value per kind, for the converters ``config`` does not name."""
    connector = config.get("connector.class")
    if connector:
        _check(
            registry,
            values,
            "connector.class",
            connector,
            CONNECTOR_VERSION,
            config.get(CONNECTOR_VERSION),
            "Connector",
            recommend=True,
        )
    for kind in CONVERTER_KINDS:
        class_key, version_key = f"{kind}.converter", converter_version_key(kind)
        class_name = config.get(class_key)
        version = config.get(version_key)
        checked_key: str | None = class_key
        if not class_name and worker_converters is not None and kind in worker_converters:
            class_name, checked_key = worker_converters[kind][0], None  # the worker's class
            if version is None:
                continue  # the worker's own setting, checked when the worker started
        if not class_name:
            continue
        wanted = "HeaderConverter" if kind == "header" else "Converter"
        _check(registry, values, checked_key, class_name, version_key, version, wanted, True)
