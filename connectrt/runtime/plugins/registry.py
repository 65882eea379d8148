# Why one module over 450 lines: name lookup (aliases, versions, discovery results) is one
# idea under one lock; what may be imported at all lives apart, in plugins/gate.py.
"""Resolving plugin names (connector, converter, ...) to Python classes.

A name may be:

* a Python path, ``package.module.ClassName`` or ``package.module:ClassName``, of a
  registered plugin, or of any class in a package the operator lists in ``plugin.packages``;
* a Kafka Connect Java class name of a plugin connectrt ships
  (``org.apache.kafka.connect.file.FileStreamSourceConnector``);
* a simple class name (``FileStreamSourceConnector``) or the simple name without its type
  suffix (``FileStreamSource``), for every registered plugin.

The registry is filled with the bundled plugins at import time; :meth:`PluginRegistry.register`
adds more. :meth:`PluginRegistry.discover` (also run by :meth:`PluginRegistry.add_plugin_path`,
which the worker calls with ``plugin.path``) registers the plugins of installed distributions'
entry points and of ``plugin.path`` directories (see :mod:`connectrt.runtime.plugins.discovery`);
plugins that fail to load are kept in :meth:`PluginRegistry.failures`. Each directory, and the
entry points, are scanned once per registry. Thread-safe.

**Only real plugins are loaded.** A name is resolved to a registered plugin (bundled, from an
entry point, found in a ``plugin.path`` directory when it was scanned, or registered by Python
code with :meth:`PluginRegistry.register`/:meth:`~PluginRegistry.register_class`). Anything
else is imported only when its module lies in a package listed with
:meth:`PluginRegistry.allow_packages` (the worker's ``plugin.packages``, empty by default);
otherwise the name is refused with a ConfigError *before anything is imported* (see
:mod:`connectrt.runtime.plugins.gate`). This holds for every caller: creating, updating and
validating a connector, ``GET /connector-plugins/{name}/config``, the console, task builders.
A module written into a ``plugin.path`` directory after the scan is not a plugin until the
directory is scanned again (a new worker, or :meth:`PluginRegistry.rescan`).

Config providers are registered with type ``configprovider``; :meth:`PluginRegistry.plugins`
leaves them out unless asked for (``/connector-plugins`` does not list them, as in Kafka).

The bundled plugins are listed in :mod:`connectrt.runtime.plugins.catalog`; a registered plugin
and the loading of its class are :mod:`connectrt.runtime.plugins.loading` (:class:`PluginDesc`,
re-exported here).
"""

from __future__ import annotations

import logging
import os
import sys
import threading
from collections.abc import Iterable

from connectrt.api.connector import Connector, SinkConnector, SourceConnector
from connectrt.errors import ConfigError
from connectrt.runtime.plugins.catalog import BUNDLED_PLUGINS, TYPE_SUFFIXES, simple_names
from connectrt.runtime.plugins.discovery import (
    DiscoveredPlugin,
    PluginFailure,
    scan_directory,
    scan_entry_points,
    scan_locations,
)
from connectrt.runtime.plugins.gate import PackageAllowlist, module_of, not_loadable_reason
from connectrt.runtime.plugins.loading import PluginDesc, import_class
from connectrt.runtime.plugins.versions import (
    UNDEFINED_VERSION,
    InvalidVersionSpec,
    sort_versions,
    version_requirement,
)

__all__ = [
    "PUBLIC_PLUGIN_TYPES",
    "PluginDesc",
    "PluginFailure",
    "PluginRegistry",
    "VersionedPluginLoadingError",
    "registry",
]

log = logging.getLogger(__name__)

PUBLIC_PLUGIN_TYPES: tuple[str, ...] = (
    "source",
    "sink",
    "converter",
    "header_converter",
    "transformation",
    "predicate",
)
"""The kinds :meth:`PluginRegistry.plugins` returns by default (those ``/connector-plugins``
lists); ``configprovider`` plugins are only returned when asked for by type."""

_ALL_TYPES: tuple[str, ...] = (*PUBLIC_PLUGIN_TYPES, "configprovider")


class VersionedPluginLoadingError(ConfigError):
    """No installed version of a plugin matches the version asked for (KIP-891); ``available``
    lists the installed versions, oldest first."""

    def __init__(
        self,
        message: str,
        name: str | None = None,
        value: object = None,
        available: list[str] | None = None,
    ) -> None:
        super().__init__(message, name, value)
        self.available = list(available or [])


def plugin_type_of(cls: type) -> str | None:
    if issubclass(cls, SourceConnector):
        return "source"
    if issubclass(cls, SinkConnector):
        return "sink"
    return None


class PluginRegistry:
    """Plugin names -> classes. ``publish_config_providers``: also make discovered config
    providers resolvable by ``config.providers.<name>.class`` (only the process-wide registry
    does, so throw-away registries in tests leave no trace)."""

    def __init__(
        self,
        builtins: Iterable[tuple[str, str, str]] = BUNDLED_PLUGINS,
        *,
        publish_config_providers: bool = False,
    ) -> None:
        self._lock = threading.Lock()
        self._plugins: list[PluginDesc] = []
        self._aliases: dict[str, PluginDesc] = {}
        self._by_path: dict[tuple[str, str, str | None], PluginDesc] = {}
        self._discover_lock = threading.RLock()
        self._entry_points_scanned = False
        self._scanned_dirs: set[str] = set()
        self._failures: list[PluginFailure] = []
        self._publish_config_providers = publish_config_providers
        self._packages = PackageAllowlist()
        from connectrt import __version__
        from connectrt.transforms import KAFKA_PREDICATES, KAFKA_TRANSFORMATIONS

        for python_path, java_name, type_ in builtins:
            self.register(python_path, type_, java_name, default_version=__version__)
        for java_name, python_path in KAFKA_TRANSFORMATIONS.items():
            self.register(python_path, "transformation", java_name, default_version=__version__)
        for java_name, python_path in KAFKA_PREDICATES.items():
            self.register(python_path, "predicate", java_name, default_version=__version__)

    def register_class(self, cls: type, type_: str | None = None) -> PluginDesc:
        """Register a class object (e.g. one defined inside a test) under its names."""
        kind = type_ or plugin_type_of(cls)
        if kind is None:
            raise ConfigError(f"Cannot tell the plugin type of {cls.__qualname__}")
        return self.register(f"{cls.__module__}.{cls.__qualname__}", kind, None, cls)

    def register(
        self,
        python_path: str,
        type_: str,
        class_name: str | None = None,
        cls: type | None = None,
        *,
        aliases: Iterable[str] = (),
        override: bool | None = None,
        location: str | None = None,
        default_version: str | None = None,
    ) -> PluginDesc:
        """Register a plugin by Python path under its canonical and short names.

        ``aliases``: extra names (an entry point's name). ``override``: whether these names
        replace a plugin already registered under them; by default a class object passed as
        ``cls`` wins and a plugin registered by path does not. Several versions of one plugin
        (same canonical name, different ``location``) are all kept: see :meth:`versions`.
        """
        desc = PluginDesc(
            class_name or python_path, python_path, type_, cls, location, default_version
        )
        names = _alias_names(desc) | {a for a in aliases if a}
        replace = cls is not None if override is None else override
        with self._lock:
            self._plugins.append(desc)
            self._by_path.setdefault((python_path.replace(":", "."), type_, location), desc)
            for n in names:
                if replace:
                    self._aliases[n] = desc
                else:
                    self._aliases.setdefault(n, desc)
        return desc

    # -- discovery ---------------------------------------------------------------------------

    def add_plugin_path(self, dirs: Iterable[str], packages: Iterable[str] = ()) -> None:
        """Put ``plugin.path`` directories on ``sys.path`` and discover plugins (see
        :meth:`discover`); allow loading any class of ``packages`` (``plugin.packages``, see
        :meth:`allow_packages`)."""
        self.allow_packages(packages)
        self.discover(dirs)

    def allow_packages(self, packages: Iterable[str]) -> None:
        """Allow loading classes by Python path from these packages (``plugin.packages``:
        ``tests.plugins`` allows ``tests.plugins.x.Y``, not ``tests.pluginsx.Y``).

        The allowlist only grows: a process holding several workers (tests) allows what any of
        them lists. Raises ConfigError for an entry that is not a dotted Python name."""
        self._packages.add(packages)

    def allowed_packages(self) -> list[str]:
        """The ``plugin.packages`` entries allowed so far, sorted."""
        return self._packages.entries()

    def rescan(self, dirs: Iterable[str]) -> list[PluginFailure]:
        """Scan ``plugin.path`` directories again (an explicit operator action): modules added
        since the last scan become plugins. Returns the new failures."""
        with self._discover_lock:
            for d in dirs:
                self._scanned_dirs.discard(os.path.realpath(d))
        return self.discover(dirs)

    def discover(self, dirs: Iterable[str] = ()) -> list[PluginFailure]:
        """Register entry-point plugins and the plugins in ``dirs``; return the new failures.

        Idempotent: entry points are scanned on the first call only, and each directory
        (by real path) once. Directories are inserted at the front of ``sys.path``. Plugins
        that fail to load are logged, kept in :meth:`failures` and otherwise skipped.
        """
        new_failures: list[PluginFailure] = []
        with self._discover_lock:
            if not self._entry_points_scanned:
                self._entry_points_scanned = True
                found, failed = scan_entry_points()
                self._add_discovered(found)
                new_failures += failed
            for d in dirs:
                if not d:
                    continue
                if d not in sys.path:
                    sys.path.insert(0, d)
                real = os.path.realpath(d)
                if real in self._scanned_dirs:
                    continue
                self._scanned_dirs.add(real)
                found, failed = scan_directory(d)
                self._add_discovered(found)
                new_failures += failed
                found, failed = scan_locations(d)
                self._add_discovered(found)
                new_failures += failed
            with self._lock:
                self._failures.extend(new_failures)
        return new_failures

    def failures(self) -> list[PluginFailure]:
        """Plugins that failed to load during discovery, in the order they were found."""
        with self._lock:
            return list(self._failures)

    def _add_discovered(self, found: Iterable[DiscoveredPlugin]) -> None:
        for d in found:
            with self._lock:
                existing = self._by_path.get((d.python_path, d.type, d.location))
            if existing is not None:
                desc = existing
                with self._lock:
                    for a in d.aliases:
                        self._aliases.setdefault(a, desc)
            else:
                desc = self.register(
                    d.python_path,
                    d.type,
                    None,
                    d.cls,
                    aliases=d.aliases,
                    override=False,
                    location=d.location,
                )
                log.debug("Registered %s plugin %s (%s)", d.type, d.python_path, d.source)
            if d.type == "configprovider" and self._publish_config_providers:
                from connectrt.runtime.secrets.providers import CONFIG_PROVIDER_ALIASES

                for n in _alias_names(desc) | set(d.aliases):
                    CONFIG_PROVIDER_ALIASES.setdefault(n, d.cls)

    def plugins(self, types: Iterable[str] | None = None) -> list[PluginDesc]:
        """Registered plugins of ``types`` (default :data:`PUBLIC_PLUGIN_TYPES`)."""
        wanted = set(types) if types is not None else set(PUBLIC_PLUGIN_TYPES)
        with self._lock:
            return [p for p in self._plugins if p.type in wanted]

    def find(self, name: str) -> PluginDesc | None:
        """The registered plugin ``name`` names (any alias; ``pkg.mod:Class`` as
        ``pkg.mod.Class``), None when none does. Imports nothing."""
        name = name.strip()
        found = self._aliases.get(name)
        if found is None and ":" in name:
            found = self._aliases.get(name.replace(":", "."))
        return found

    def versions(self, name: str, kind: str = "plugin") -> list[PluginDesc]:
        """Every installed version of the plugin ``name`` (any alias) of ``kind`` (a kind as
        :meth:`load_class` takes it, or a plugin type), oldest first (plugins without a
        version first of all); empty when none is registered."""
        desc = self.find(name)
        if desc is None:
            return []
        if kind in _ALL_TYPES:
            types = {kind}  # a plugin type ("source", "converter", ...)
        else:
            types = _kinds(kind) if kind != "plugin" else set(_ALL_TYPES)
        with self._lock:
            same = [p for p in self._plugins if p.class_name == desc.class_name]
        same = [p for p in same if p.type in types] or [desc]
        # Registered again (a class object re-registered, as tests do): the latest one counts.
        unique = {(p.location, p.python_path): p for p in same}
        undefined = [p for p in unique.values() if p.version() is None]
        known = {p.version(): p for p in unique.values() if p.version() is not None}
        return undefined[-1:] + [known[v] for v in sort_versions([v for v in known if v])]

    def choose(self, name: str, kind: str = "plugin", version: str | None = None) -> PluginDesc:
        """The version of plugin ``name`` to run: the newest one ``version`` (a
        ``*.plugin.version`` value, see :mod:`connectrt.runtime.plugins.versions`) allows;
        the newest of all when it is None or ``latest``. Raises
        :class:`VersionedPluginLoadingError` when none matches (or the spec is invalid) and
        ConfigError (from :meth:`load_class`) when no plugin has that name."""
        try:
            wanted = version_requirement(version)
        except InvalidVersionSpec as e:
            raise VersionedPluginLoadingError(str(e), None, version) from None
        candidates = self.versions(name, kind)
        if not candidates:
            cls = self._import(name, kind)
            candidates = [PluginDesc(f"{cls.__module__}.{cls.__qualname__}", name, kind, cls)]
        if wanted is None:
            return candidates[-1]
        matching = [p for p in candidates if wanted.contains(p.version())]
        if not matching:
            available = [p.version() or UNDEFINED_VERSION for p in candidates]
            raise VersionedPluginLoadingError(
                f"Plugin {candidates[-1].class_name} not found that matches the version range "
                f"{wanted}, available versions: [{', '.join(available)}]",
                None,
                version,
                available,
            )
        return matching[-1]

    def load_class(self, name: str, kind: str = "plugin", version: str | None = None) -> type:
        """The class for ``name`` (its newest version, or the newest ``version`` allows);
        ConfigError naming what was looked for if none matches."""
        if version is None:
            desc = self.find(name)
            if desc is not None:
                versions = self.versions(name, kind)
                return (versions[-1] if versions else desc).load()
            return self._import(name, kind)
        return self.choose(name, kind, version).load()

    def _import(self, name: str, kind: str) -> type:
        """Import ``name`` by Python path, only when the gate allows it (nothing is imported
        otherwise); ConfigError in Kafka's wording when it is not a loadable plugin."""
        name = name.strip()
        same = self._registered_as(name)
        if same is not None:
            return same
        reason = not_loadable_reason(name, kind, self._packages, self._plugin_modules)
        error: BaseException | str | None = reason
        if reason is None:
            try:
                return import_class(name)
            except (ImportError, AttributeError, ValueError, TypeError) as e:
                error = e
        known = ", ".join(
            sorted(p.class_name for p in self.plugins(None if kind == "plugin" else _kinds(kind)))
        )
        raise ConfigError(
            f"Failed to find any class that implements {kind} and which name matches "
            f"{name} ({error}); available: {known}",
            None,
            name,
        ) from None

    def _registered_as(self, name: str) -> type | None:
        """The registered plugin class ``name`` reaches through an already imported module,
        when it is registered under another path (``connectors.file.sink.FileStreamSinkConnector``
        for the bundled ``connectors.file.FileStreamSinkConnector``; a package re-exporting a
        class of its submodule). Loads registered plugins only; imports nothing else."""
        module = module_of(name)
        if module is None:
            return None
        attr = name[len(module) + 1 :]
        desc = self._aliases.get(attr.rpartition(".")[2])
        if desc is None:
            return None
        try:
            cls = desc.load()
        except (ImportError, AttributeError):
            return None
        obj: object = sys.modules.get(module)
        for part in attr.split("."):
            obj = getattr(obj, part, None)
        return cls if obj is cls else None

    def _plugin_modules(self) -> set[str]:
        """The modules registered plugins live in (for task classes loaded by name)."""
        with self._lock:
            descs = list(self._plugins)
        out = set()
        for p in descs:
            path = p.python_path
            module = path.partition(":")[0] if ":" in path else path.rpartition(".")[0]
            if p.cls is not None:
                module = p.cls.__module__
            out.add(module)
        return out

    def transform_class(self, name: str, version: str | None = None) -> type:
        """Resolver for ``transforms.*.type`` / ``predicates.*.type`` values."""
        return self.load_class(name, "Transformation or Predicate", version)

    def connector_class(self, name: str, version: str | None = None) -> type[Connector]:
        cls = self.load_class(name, "Connector", version)
        if not (isinstance(cls, type) and issubclass(cls, Connector)):
            raise ConfigError(f"{name} is not a Connector", "connector.class", name)
        return cls

    def canonical_name(self, cls: type) -> str:
        """Kafka's class name for a bundled plugin, else the class's Python path."""
        for p in self.plugins(_ALL_TYPES):
            try:
                if p.load() is cls:
                    return p.class_name
            except (ImportError, AttributeError):
                continue
        return f"{cls.__module__}.{cls.__qualname__}"


def _alias_names(desc: PluginDesc) -> set[str]:
    """Canonical name, Python path(s), simple name and simple name without the type suffix."""
    python_path = desc.python_path
    names = {desc.class_name, python_path, python_path.replace(":", ".")}
    return names | simple_names(desc.class_name, desc.type)


def _kinds(kind: str) -> set[str]:
    return {
        "Connector": {"source", "sink"},
        "Converter": {"converter"},
        "HeaderConverter": {"header_converter", "converter"},
        "Transformation or Predicate": {"transformation", "predicate"},
        "ConfigProvider": {"configprovider"},
    }.get(kind, set(TYPE_SUFFIXES))


registry = PluginRegistry(publish_config_providers=True)
"""The process-wide plugin registry."""
