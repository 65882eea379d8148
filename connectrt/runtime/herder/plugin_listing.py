"""The installed plugins as Kafka Connect's ``/connector-plugins`` API presents them.

Lists plugins, describes a plugin's configuration and validates a connector config, all
without a running connector: answers come from the plugin classes found by the
:class:`~connectrt.runtime.plugins.registry.PluginRegistry`.
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager, nullcontext
from typing import Any

from connectrt.api.config import ConfigDef, ConfigKey, ConfigType, Importance, Width
from connectrt.errors import ConfigError, NotFoundError
from connectrt.runtime.clients.settings import OverridePolicy
from connectrt.runtime.config.connector import (
    ValidationResult,
    framework_def_for,
    validate_connector_config,
)
from connectrt.runtime.config.connector_classes import refuse_class_references
from connectrt.runtime.config.validation_report import as_written, errors_as_written
from connectrt.runtime.errors import BadRequestError
from connectrt.runtime.plugins.guarded_calls import plugin_call
from connectrt.runtime.plugins.registry import (
    PUBLIC_PLUGIN_TYPES,
    PluginDesc,
    PluginRegistry,
    VersionedPluginLoadingError,
    plugin_type_of,
)
from connectrt.runtime.plugins.version_config import CONNECTOR_VERSION

__all__ = ["ConnectorPlugins"]


class ConnectorPlugins:
    """Answers about plugins: the list, a plugin's config keys, a config's validation.

    ``registry`` finds and loads the plugin classes; ``policy`` is the worker's client-override
    policy (validation checks ``*.override.*`` keys against it); ``resolve`` applies the
    config providers to the values a validation sees (identity when none are configured);
    ``redact`` removes registered secrets from text. A validation reports values as written:
    nothing resolved and no URL password reaches the result (see ``validation_report``).
    ``executor`` is the worker's ``task.executor`` (checked against keys only one executor
    honours).

    Lifecycle: built once per herder; nothing to start or stop. Threading: every method may be
    called from any thread; it keeps no state of its own (the registry is thread-safe).
    """

    def __init__(
        self,
        registry: PluginRegistry,
        policy: OverridePolicy,
        resolve: Callable[[Mapping[str, str]], dict[str, str]],
        redact: Callable[[str], str] | None = None,
        worker_converters: Mapping[str, tuple[str, str | None]] | None = None,
        executor: str | None = None,
        exactly_once_source: str | None = None,
        transient: Callable[[], AbstractContextManager[None]] = nullcontext,
        brokers: Callable[[], int | None] = lambda: None,
    ) -> None:
        """``transient``: a block within which the secrets ``resolve`` learns are hidden only
        for the block's duration (:meth:`ConfigSecrets.transient`): a validated config is not
        kept, so neither are its secrets. ``brokers``: the Kafka cluster's number of brokers
        (None when unknown: replication factors are then not checked against it)."""
        self._transient = transient
        self._brokers = brokers
        self._executor = executor
        self._exactly_once_source = exactly_once_source
        self._registry = registry
        self._policy = policy
        self._resolve = resolve
        self._redact = redact
        self._worker_converters = worker_converters

    def list_plugins(self, connectors_only: bool = True) -> list[PluginDesc]:
        """Source and sink connectors, or every public plugin type; one entry per class and
        installed version (KIP-891), by class name, then oldest version first."""
        types = ("source", "sink") if connectors_only else None
        seen: set[tuple[str, str | None]] = set()
        out = []
        for p in self._registry.plugins(types):
            for v in self._registry.versions(
                p.class_name, "Connector" if connectors_only else p.type
            ):
                if (v.class_name, v.version()) not in seen and (types is None or v.type in types):
                    seen.add((v.class_name, v.version()))
                    out.append(v)
        order = {id(p): i for i, p in enumerate(out)}
        return sorted(out, key=lambda p: (p.class_name, order[id(p)]))

    def _find(self, name: str) -> PluginDesc:
        desc = self._registry.find(name)
        if desc is None:
            try:
                cls = self._registry.load_class(name)
            except ConfigError:
                raise NotFoundError(f"Unknown plugin {name}.") from None
            desc = PluginDesc(name, name, plugin_type_of(cls) or "unknown", cls)
        if desc.type not in PUBLIC_PLUGIN_TYPES:  # those /connector-plugins/{plugin}/... describes
            raise BadRequestError(
                f"Invalid plugin class {name}. Valid types are sink, source, converter, "
                "header_converter, transformation, predicate."
            )
        return desc

    def plugin_config(self, name: str, version: str | None = None) -> list[ConfigKey]:
        """The config keys of a plugin (of the installed version ``version`` asks for, the
        newest by default); a connector's include the framework's keys."""
        desc = self._find(name)
        if version is not None:
            try:
                desc = self._registry.choose(name, desc.type, version)
            except VersionedPluginLoadingError as e:
                if e.available:
                    raise NotFoundError(str(e)) from None
                raise BadRequestError(str(e)) from None  # not a version or range
        else:
            desc = (self._registry.versions(name, desc.type) or [desc])[-1]
        cls = desc.load()
        if desc.type in ("source", "sink"):
            definition = plugin_call(
                cls, "config_def()", lambda: framework_def_for(cls).merge(cls().config_def())
            )
            keys = list(definition.keys.values())
            # As Kafka's enriched definition: the version described is the default.
            return [
                dataclasses.replace(k, default=desc.version()) if k.name == CONNECTOR_VERSION else k
                for k in keys
            ]
        return list(plugin_call(cls, "config_def()", lambda: _plugin_config_def(cls)).keys.values())

    def validate(self, plugin: str, config: Mapping[str, str | None]) -> ValidationResult:
        """Validate ``config`` for connector ``plugin`` (``connector.class`` defaults to it).
        A config provider reference in a class-typed key is refused (ConfigError) before
        anything is resolved."""
        refuse_class_references(config)
        self._find(plugin)
        class_name = config.get("connector.class")
        if class_name:
            given = class_name.rsplit(".", 1)[-1].removesuffix("Connector")
            wanted = plugin.rsplit(".", 1)[-1].removesuffix("Connector")
            if not given.endswith(wanted) and not wanted.endswith(given):
                raise BadRequestError(
                    f"Included connector type {class_name} does not match request type {plugin}"
                )
        else:
            config = {**config, "connector.class": plugin}
        brokers = self._brokers()
        with self._transient():
            resolved = {k: v for k, v in config.items()}
            present = {k: v for k, v in config.items() if v is not None}
            resolved.update(self._resolve(present))
            with errors_as_written(config, resolved, self._redact):
                result = validate_connector_config(
                    resolved,
                    self._registry,
                    self._policy,
                    self._worker_converters,
                    executor=self._executor,
                    exactly_once_source=self._exactly_once_source,
                    written=config,
                    brokers=brokers,
                )
            return as_written(result, config, resolved, self._redact)


_CONVERTER_TYPES = {
    "BOOLEAN": ConfigType.BOOLEAN,
    "STRING": ConfigType.STRING,
    "INT": ConfigType.INT,
    "LONG": ConfigType.LONG,
    "DOUBLE": ConfigType.DOUBLE,
    "LIST": ConfigType.LIST,
    "CLASS": ConfigType.CLASS,
    "PASSWORD": ConfigType.PASSWORD,
    "SHORT": ConfigType.SHORT,
}


def _plugin_config_def(cls: type) -> ConfigDef:
    """The ConfigDef of a non-connector plugin (converters describe theirs as a dict)."""
    attr = inspect.getattr_static(cls, "config_def", None)
    if attr is None:
        return ConfigDef()
    owner: Any = cls if isinstance(attr, classmethod | staticmethod) else cls()
    result = owner.config_def()
    if isinstance(result, ConfigDef):
        return result
    out = ConfigDef()
    for key, (type_name, default, doc) in (result or {}).items():
        out.define(
            key,
            _CONVERTER_TYPES.get(str(type_name).upper(), ConfigType.STRING),
            default,
            None,
            Importance.LOW,
            doc or "",
            width=Width.NONE,
        )
    return out
