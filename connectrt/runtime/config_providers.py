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
"""

from __future__ import annotations

import importlib
import logging
import os
import re
from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from connectrt.api.config import with_prefix
from connectrt.errors import ConfigError
from connectrt.runtime.properties import parse_properties

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

ALLOWED_PATHS_CONFIG = "allowed.paths"
ALLOWLIST_PATTERN_CONFIG = "allowlist.pattern"


def has_references(value: str | None) -> bool:
    """True when ``value`` contains at least one ``${provider:[path:]key}`` reference."""
    return value is not None and REFERENCE_PATTERN.search(value) is not None


def is_single_reference(value: str | None) -> bool:
    """True when the *whole* of ``value`` is exactly one reference (nothing before or after)."""
    return value is not None and REFERENCE_PATTERN.fullmatch(value) is not None


@dataclass(frozen=True)
class ConfigData:
    """What a provider returns for one path: the values found and an optional TTL (ms)."""

    data: dict[str, str] = field(default_factory=dict)
    ttl_ms: int | None = None


class ConfigProvider(ABC):
    """A source of config values (Kafka's ``org.apache.kafka.common.config.provider``).

    The runtime calls :meth:`configure` once with the ``config.providers.<name>.param.*``
    settings, then :meth:`get` any number of times, possibly from several threads, then
    :meth:`close` once. ``get`` returns only the keys it has: a missing key is not an error
    (the reference stays unchanged); an unreadable source is (raise ConfigError).
    """

    def configure(self, params: Mapping[str, str]) -> None:
        """Receive the provider's ``param.*`` settings (prefix removed)."""

    @abstractmethod
    def get(self, path: str, keys: set[str] | None = None) -> ConfigData:
        """The values of ``keys`` (all values when None) found at ``path`` ("" if none)."""

    def close(self) -> None:
        """Release resources; called once at worker shutdown."""


class _AllowedPaths:
    """Kafka's ``AllowedPaths``: optional list of directories a provider may read under.

    Both the allowed directories and the requested path are resolved with ``realpath`` before
    comparison (stricter than Kafka, which only normalises), so neither ``..`` nor a symlink
    can lead outside. Comparison is per path component: ``/etc/kc`` does not allow
    ``/etc/kc2``.
    """

    def __init__(self, value: str | None) -> None:
        self.paths: list[Path] | None = None
        if value is None or not value.strip():
            return
        paths: list[Path] = []
        for raw in value.split(","):
            raw = raw.strip()
            if not raw:
                continue
            p = Path(raw)
            if not p.is_absolute():
                raise ConfigError(f"Path {raw} is not absolute", ALLOWED_PATHS_CONFIG, value)
            if not p.exists():
                raise ConfigError(f"Path {raw} does not exist", ALLOWED_PATHS_CONFIG, value)
            paths.append(Path(os.path.realpath(p)))
        self.paths = paths

    def parse_untrusted(self, path: str) -> Path | None:
        """The path to read, or None when ``allowed.paths`` is set and excludes it."""
        if self.paths is None:
            return Path(path)
        real = Path(os.path.realpath(path))
        return real if self.allows(real) else None

    def allows(self, real: Path) -> bool:
        return self.paths is None or any(real.is_relative_to(a) for a in self.paths)


class FileConfigProvider(ConfigProvider):
    """``${file:/path/to/file.properties:key}``: a property of a Java ``.properties`` file.

    Param ``allowed.paths``: comma-separated absolute directories; a path outside them is
    refused as Kafka does: a warning is logged and no data returned, so the reference stays
    unchanged. A file that cannot be read raises ConfigError. No TTL.
    """

    def __init__(self) -> None:
        self._allowed = _AllowedPaths(None)

    def configure(self, params: Mapping[str, str]) -> None:
        self._allowed = _AllowedPaths(params.get(ALLOWED_PATHS_CONFIG))

    def get(self, path: str, keys: set[str] | None = None) -> ConfigData:
        if not path:
            return ConfigData({})
        file = self._allowed.parse_untrusted(path)
        if file is None:
            log.warning("The path %s is not allowed to be accessed (allowed.paths)", path)
            return ConfigData({})
        try:
            props = parse_properties(file.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError) as e:
            raise ConfigError(f"Could not read properties from file {path}") from e
        if keys is None:
            return ConfigData(props)
        return ConfigData({k: props[k] for k in keys if k in props})


class DirectoryConfigProvider(ConfigProvider):
    """``${dir:/path/to/dir:filename}``: the whole contents (UTF-8) of a file in a directory.

    Only regular files directly inside the directory are keys (as Kafka, the directory is
    listed rather than joined with the key, so a key like ``../x`` can never match). This is
    the shape of Kubernetes secret volumes. Param ``allowed.paths`` as for
    :class:`FileConfigProvider`; when set, a file whose real path (after symlinks) leaves the
    allowed directories is skipped too. A path that is not a directory gives no data.
    """

    def __init__(self) -> None:
        self._allowed = _AllowedPaths(None)

    def configure(self, params: Mapping[str, str]) -> None:
        self._allowed = _AllowedPaths(params.get(ALLOWED_PATHS_CONFIG))

    def get(self, path: str, keys: set[str] | None = None) -> ConfigData:
        if not path:
            return ConfigData({})
        directory = self._allowed.parse_untrusted(path)
        if directory is None:
            log.warning("The path %s is not allowed to be accessed (allowed.paths)", path)
            return ConfigData({})
        if not directory.is_dir():
            log.warning("The path %s is not a directory", path)
            return ConfigData({})
        data: dict[str, str] = {}
        try:
            entries = sorted(directory.iterdir())
        except OSError as e:
            raise ConfigError(f"Could not list directory {path}") from e
        for entry in entries:
            if keys is not None and entry.name not in keys:
                continue
            if not entry.is_file():
                continue
            if self._allowed.paths is not None and not self._allowed.allows(
                Path(os.path.realpath(entry))
            ):
                log.warning("The file %s leaves allowed.paths; skipped", entry)
                continue
            try:
                data[entry.name] = entry.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError) as e:
                raise ConfigError(f"Could not read file {entry}") from e
        return ConfigData(data)


class EnvVarConfigProvider(ConfigProvider):
    """``${env:VAR}``: an environment variable. No path is allowed.

    Param ``allowlist.pattern``: a regex the whole variable name must match (default ``.*``);
    variables outside it are invisible. The environment is read at each ``get`` (Kafka
    snapshots it at ``configure``; reading live changes nothing for a running process and
    makes tests simpler).
    """

    def __init__(self) -> None:
        self._allowlist = re.compile(".*")

    def configure(self, params: Mapping[str, str]) -> None:
        pattern = params.get(ALLOWLIST_PATTERN_CONFIG)
        if pattern is None:
            return
        try:
            self._allowlist = re.compile(pattern)
        except re.error as e:
            raise ConfigError(
                f"Invalid regular expression: {e}", ALLOWLIST_PATTERN_CONFIG, pattern
            ) from e

    def get(self, path: str, keys: set[str] | None = None) -> ConfigData:
        if path:
            raise ConfigError(
                f"Path is not supported for EnvVarConfigProvider, invalid value '{path}'"
            )
        visible = {k: v for k, v in os.environ.items() if self._allowlist.fullmatch(k)}
        if keys is None:
            return ConfigData(visible)
        return ConfigData({k: visible[k] for k in keys if k in visible})


_KAFKA_PACKAGE = "org.apache.kafka.common.config.provider."

CONFIG_PROVIDER_ALIASES: dict[str, type[ConfigProvider]] = {}
"""Names accepted in ``config.providers.<name>.class`` besides a Python path: Kafka's class
names, the simple class names, and the Python paths of the built-ins."""

for _cls in (FileConfigProvider, DirectoryConfigProvider, EnvVarConfigProvider):
    CONFIG_PROVIDER_ALIASES[_KAFKA_PACKAGE + _cls.__name__] = _cls
    CONFIG_PROVIDER_ALIASES[_cls.__name__] = _cls
    CONFIG_PROVIDER_ALIASES[f"{_cls.__module__}.{_cls.__name__}"] = _cls
del _cls


def config_provider_class(name: str) -> type[ConfigProvider]:
    """The provider class for an alias or a Python path (``pkg.mod.Class`` or ``pkg.mod:Class``).

    Raises ConfigError naming ``name`` when nothing matches or it is not a ConfigProvider.
    """
    name = name.strip()
    cls = CONFIG_PROVIDER_ALIASES.get(name)
    if cls is not None:
        return cls
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
    with :class:`connectrt.runtime.secrets.RedactingFilter` so logs never show them.
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
    def from_worker_config(cls, props: Mapping[str, str]) -> ConfigProviders:
        """Instantiate and configure the providers named in ``config.providers``.

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
                provider = config_provider_class(class_name)()
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
