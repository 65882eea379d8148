"""Config providers (KIP-297): ``${provider:path:key}`` references resolved at start time.

A connector (or worker) value may hold references such as ``${file:/etc/kc/db.properties:pw}``
or ``${env:DB_PASSWORD}``. The worker config names the providers::

    config.providers=file,dir,env
    config.providers.file.class=org.apache.kafka.common.config.provider.FileConfigProvider
    config.providers.file.param.allowed.paths=/etc/kc

Lifecycle and threading:

* :meth:`ConfigProviders.from_worker_config` instantiates and ``configure()``\\ s each provider
  once, when the worker starts; :meth:`ConfigProviders.close` closes them at shutdown.
* Raw (unresolved) values are what the config store holds and what REST returns. The worker
  calls :meth:`ConfigProviders.resolve` just before it hands a config to a connector or task,
  from whichever thread starts it, so providers' ``get`` must be thread-safe (the built-ins
  are: they only read files or the environment).
* Task configs a connector generates from a resolved config go through
  :func:`unresolve_task_configs` before they are stored, so secrets stay out of the store.

Kafka's rules are kept: a reference to an unknown provider, or to a key the provider does not
return, is left unchanged; substituted values are not scanned again (no recursion).

The provider contract is :mod:`connectrt.runtime.secrets.provider_base` and the built-in
providers are :mod:`connectrt.runtime.secrets.builtin_providers`; both are re-exported here.
"""

from __future__ import annotations

import importlib
import logging
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

from connectrt.api.config import with_prefix
from connectrt.errors import ConfigError
from connectrt.runtime.secrets.builtin_providers import (
    DirectoryConfigProvider,
    EnvVarConfigProvider,
    FileConfigProvider,
)
from connectrt.runtime.secrets.provider_base import ConfigData, ConfigProvider

__all__ = [
    "CONFIG_PROVIDER_ALIASES",
    "REFERENCE_PATTERN",
    "ConfigData",
    "ConfigProvider",
    "ConfigProviders",
    "DirectoryConfigProvider",
    "EnvVarConfigProvider",
    "FileConfigProvider",
    "ResolvedConfig",
    "config_provider_class",
    "has_references",
    "is_single_reference",
    "unresolve_task_configs",
]

log = logging.getLogger(__name__)

REFERENCE_PATTERN = re.compile(r"\$\{([^}]*?):(([^}]*?):)?([^}]*?)\}")
"""Kafka's ``ConfigTransformer.DEFAULT_PATTERN``: groups 1 = provider, 3 = path, 4 = key."""


def has_references(value: str | None) -> bool:
    """True when ``value`` contains at least one ``${provider:[path:]key}`` reference."""
    return value is not None and REFERENCE_PATTERN.search(value) is not None


def is_single_reference(value: str | None) -> bool:
    """True when the *whole* of ``value`` is exactly one reference (nothing before or after)."""
    return value is not None and REFERENCE_PATTERN.fullmatch(value) is not None


_KAFKA_PACKAGE = "org.apache.kafka.common.config.provider."

CONFIG_PROVIDER_ALIASES: dict[str, type[ConfigProvider]] = {}
"""Names accepted in ``config.providers.<name>.class`` besides a Python path: Kafka's class
names, the simple class names, and the Python paths of the built-ins."""

for _cls in (FileConfigProvider, DirectoryConfigProvider, EnvVarConfigProvider):
    CONFIG_PROVIDER_ALIASES[_KAFKA_PACKAGE + _cls.__name__] = _cls
    CONFIG_PROVIDER_ALIASES[_cls.__name__] = _cls
    # The built-ins' Python path as the plugin registry knows it (they are re-exported here).
    CONFIG_PROVIDER_ALIASES[f"{__name__}.{_cls.__name__}"] = _cls
del _cls


def config_provider_class(
    name: str, load_class: Callable[[str], type] | None = None
) -> type[ConfigProvider]:
    """The provider class for an alias or a Python path (``pkg.mod.Class`` or ``pkg.mod:Class``).

    ``load_class`` is how a worker loads a name that is no alias: through its plugin registry,
    which imports only discovered plugins and the packages of ``plugin.packages`` (a worker never
    imports an arbitrary module named in its config). Without it (library use), the Python path
    is imported. Raises ConfigError naming ``name`` when nothing matches or it is not a
    ConfigProvider.
    """
    name = name.strip()
    cls = CONFIG_PROVIDER_ALIASES.get(name)
    if cls is not None:
        return cls
    if load_class is not None:
        loaded = load_class(name)
        if not (isinstance(loaded, type) and issubclass(loaded, ConfigProvider)):
            raise ConfigError(f"{name} is not a ConfigProvider", None, name)
        return loaded
    module_name, sep, attr = name.partition(":") if ":" in name else name.rpartition(".")
    obj: object = None
    if module_name and sep and attr:
        try:
            obj = importlib.import_module(module_name)
            for part in attr.split("."):
                obj = getattr(obj, part)
        except (ImportError, AttributeError):
            obj = None
    if obj is None:
        known = ", ".join(sorted(k for k in CONFIG_PROVIDER_ALIASES if k.startswith("org.")))
        raise ConfigError(
            f"Cannot find config provider class {name}: not a known alias ({known}) "
            "and not an importable Python path",
            None,
            name,
        )
    if not (isinstance(obj, type) and issubclass(obj, ConfigProvider)):
        raise ConfigError(f"{name} is not a ConfigProvider", None, name)
    return obj


@dataclass(frozen=True)
class ResolvedConfig:
    """The result of :meth:`ConfigProviders.resolve`.

    ``config``: every value with its references replaced (where a value was found).
    ``ttl_ms``: the smallest TTL any provider returned, or None (Kafka restarts the connector
    after it when ``config.action.reload=restart``). ``ttls``: TTL per provider path.
    ``substituted_values``: every value taken from a provider, for the runtime to register
    with :class:`connectrt.runtime.secrets.masking.RedactingFilter` so logs never show them.
    """

    config: dict[str, str]
    ttl_ms: int | None = None
    ttls: dict[str, int] = field(default_factory=dict)
    substituted_values: frozenset[str] = frozenset()


class ConfigProviders:
    """The worker's named providers, and resolution of references against them."""

    def __init__(self, providers: Mapping[str, ConfigProvider] | None = None) -> None:
        self._providers: dict[str, ConfigProvider] = dict(providers or {})

    @classmethod
    def from_worker_config(
        cls, props: Mapping[str, str], load_class: Callable[[str], type] | None = None
    ) -> ConfigProviders:
        """Instantiate and configure the providers named in ``config.providers``; classes that
        are no alias are loaded with ``load_class`` (see :func:`config_provider_class`).

        A listed provider without ``config.providers.<name>.class`` is a ConfigError (Kafka
        silently skips it, leaving every reference to it unresolved). Providers already
        configured are closed if a later one fails.
        """
        names = [n.strip() for n in (props.get("config.providers") or "").split(",")]
        providers: dict[str, ConfigProvider] = {}
        try:
            for name in names:
                if not name or name in providers:
                    continue
                class_key = f"config.providers.{name}.class"
                class_name = props.get(class_key)
                if not class_name or not class_name.strip():
                    raise ConfigError(
                        f"config.providers lists '{name}' but {class_key} is not set", class_key
                    )
                provider = config_provider_class(class_name, load_class)()
                provider.configure(with_prefix(props, f"config.providers.{name}.param."))
                providers[name] = provider
        except BaseException:
            for p in providers.values():
                _close_quietly(p)
            raise
        return cls(providers)

    @property
    def names(self) -> list[str]:
        return list(self._providers)

    def __contains__(self, name: object) -> bool:
        return name in self._providers

    def get(self, name: str) -> ConfigProvider | None:
        return self._providers.get(name)

    def resolve(self, config: Mapping[str, str]) -> ResolvedConfig:
        """Replace every reference in ``config``'s values; see the module docstring.

        Lookups are batched: one ``get(path, keys)`` per (provider, path). A provider error
        propagates as ConfigError (naming the provider and path, never a value).
        """
        wanted: dict[str, dict[str, set[str]]] = {}
        for value in config.values():
            if value is None:
                continue
            for m in REFERENCE_PATTERN.finditer(value):
                provider, path, key = m.group(1), m.group(3) or "", m.group(4)
                wanted.setdefault(provider, {}).setdefault(path, set()).add(key)

        found: dict[tuple[str, str], dict[str, str]] = {}
        ttls: dict[str, int] = {}
        for provider_name, by_path in wanted.items():
            provider = self._providers.get(provider_name)
            if provider is None:
                continue  # unknown provider: references stay as written
            for path, keys in by_path.items():
                data = _get(provider_name, provider, path, keys)
                if data.ttl_ms is not None and data.ttl_ms >= 0:
                    ttls[path] = min(data.ttl_ms, ttls.get(path, data.ttl_ms))
                found[(provider_name, path)] = data.data

        substituted: set[str] = set()

        def replace(m: re.Match[str]) -> str:
            value = found.get((m.group(1), m.group(3) or ""), {}).get(m.group(4))
            if value is None:
                return m.group(0)
            substituted.add(value)
            return value

        resolved = {
            k: (REFERENCE_PATTERN.sub(replace, v) if v is not None else v)
            for k, v in config.items()
        }
        return ResolvedConfig(
            resolved,
            min(ttls.values()) if ttls else None,
            ttls,
            frozenset(substituted),
        )

    def close(self) -> None:
        """Close every provider (errors are logged, not raised)."""
        for p in self._providers.values():
            _close_quietly(p)


def _get(name: str, provider: ConfigProvider, path: str, keys: set[str]) -> ConfigData:
    try:
        return provider.get(path, set(keys))
    except ConfigError:
        raise
    except Exception as e:
        raise ConfigError(
            f"Config provider '{name}' failed to read path '{path}': {type(e).__name__}"
        ) from e


def _close_quietly(provider: ConfigProvider) -> None:
    try:
        provider.close()
    except Exception:
        log.exception("Error closing config provider %s", type(provider).__name__)


def unresolve_task_configs(
    connector_raw: Mapping[str, str],
    task_configs: Iterable[Mapping[str, str]],
    *,
    resolved: Mapping[str, str] | None = None,
) -> list[dict[str, str]]:
    """Put provider references back into task configs before they are stored.

    For every key whose raw connector value holds a reference (:func:`has_references`) and
    which a task config also has:

    * with ``resolved`` (the connector config as resolved for the connector): the task value
      is replaced by the raw value only when it equals the resolved connector value, i.e. the
      connector copied it through. A task value the connector computed differently is kept.
    * without ``resolved``: Kafka's ``reverseTransform`` rule, the raw value always replaces
      the task value.

    Keys the connector config does not hold, or holds without references, are never touched.
    Returns new dicts; the inputs are not modified.
    """
    keys = [k for k, v in connector_raw.items() if has_references(v)]
    out: list[dict[str, str]] = []
    for task in task_configs:
        new = dict(task)
        for k in keys:
            if k not in new:
                continue
            if resolved is None or (k in resolved and new[k] == resolved[k]):
                new[k] = connector_raw[k]
        out.append(new)
    return out
