"""The class-typed keys of a connector config, and what is checked about them.

``connector.class``, ``key.converter``, ``value.converter``, ``header.converter``,
``transforms.<alias>.type`` and ``predicates.<alias>.type`` name classes the worker loads.

* :func:`refuse_class_references` refuses a config provider reference (``${...}``) in any of
  them *before* the config is resolved: a class name is not a secret, and resolving one would
  let a REST caller read a provider's value back through the "class not found" error. The
  message quotes the values as written.
* :func:`check_converters` adds to a validation what a missing or wrong converter class gets
  in Kafka Connect (``Invalid value X for configuration key.converter: Class X could not be
  found.``), so that an unknown converter is a 400 at create, update and validate, not a task
  failure later. Loading goes through the plugin registry, which imports nothing that is not a
  discovered plugin (:mod:`connectrt.runtime.plugins.gate`).

Stateless; safe from any thread.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from connectrt.api.config import ConfigValue
from connectrt.api.converter import Converter, HeaderConverter
from connectrt.errors import ConfigError
from connectrt.runtime.plugins.registry import PluginRegistry, VersionedPluginLoadingError
from connectrt.runtime.secrets.providers import has_references

__all__ = ["check_converters", "class_keys", "refuse_class_references"]

_CONVERTER_KEYS = ("key.converter", "value.converter", "header.converter")


def _aliases(value: str | None) -> list[str]:
    return [a.strip() for a in (value or "").split(",") if a.strip()]


def class_keys(config: Mapping[str, str | None]) -> Iterator[str]:
    """The class-typed keys present in ``config``, in a fixed order."""
    for key in ("connector.class", *_CONVERTER_KEYS):
        if key in config:
            yield key
    for section in ("transforms", "predicates"):
        for alias in _aliases(config.get(section)):
            key = f"{section}.{alias}.type"
            if key in config:
                yield key


def refuse_class_references(config: Mapping[str, str | None]) -> None:
    """ConfigError (a 400 over REST) when a class-typed key holds a ``${...}`` reference; call it on
    the config as written, before any resolution."""
    bad = [k for k in class_keys(config) if has_references(config.get(k))]
    if not bad:
        return
    listed = "\n".join(
        f"Invalid value {config.get(k)} for configuration {k}: a class name cannot be a "
        "config provider reference"
        for k in bad
    )
    raise ConfigError(
        f"Connector configuration is invalid and contains the following {len(bad)} "
        f"error(s):\n{listed}",
        bad[0],
    )


def check_converters(
    config: Mapping[str, str | None], values: dict[str, ConfigValue], plugins: PluginRegistry
) -> None:
    """Check each converter class ``config`` names: a discovered plugin of the right kind
    (a Converter; a HeaderConverter for ``header.converter``). Errors go into ``values``."""
    for key in _CONVERTER_KEYS:
        class_name = (config.get(key) or "").strip()
        cv = values.setdefault(key, ConfigValue(key, config.get(key)))
        if not class_name or cv.errors:
            continue
        header = key == "header.converter"
        try:
            cls = plugins.load_class(class_name, "HeaderConverter" if header else "Converter")
        except VersionedPluginLoadingError:
            continue  # reported on the version key by validate_plugin_versions
        except ConfigError:
            cv.errors.append(
                f"Invalid value {class_name} for configuration {key}: "
                f"Class {class_name} could not be found."
            )
            continue
        base = HeaderConverter if header else Converter
        if not (isinstance(cls, type) and issubclass(cls, base)):
            cv.errors.append(
                f"Invalid value {class_name} for configuration {key}: "
                f"{class_name} is not a {base.__name__}"
            )
