"""Finding plugins outside connectrt: entry points and ``plugin.path`` directories.

Two sources, both scanned by :meth:`connectrt.runtime.plugins.registry.PluginRegistry.discover`
(which the worker reaches through ``add_plugin_path(config["plugin.path"])``):

* **Entry points** of installed distributions, one group per plugin kind
  (:data:`ENTRY_POINT_GROUPS`)::

      [project.entry-points."connectrt.connectors"]
      my-source = "my_pkg.source:MySourceConnector"

  The class is registered under its Python path (``my_pkg.source.MySourceConnector``),
  its simple name, the simple name without the type suffix, and the entry point name
  (``my-source``). The kind comes from the group; for ``connectrt.connectors`` the class
  decides between ``source`` and ``sink``.

* **plugin locations** in ``plugin.path`` directories: subdirectories that are not packages,
  each holding one version of a plugin; they are imported in isolation, so two locations may
  hold two versions of the same package (:mod:`connectrt.runtime.plugins.locations`, KIP-891).

* **plugin.path directories**: each directory is put on ``sys.path`` and every top-level
  module or package in it (as ``pkgutil.iter_modules`` lists them; names starting with
  ``_`` are skipped) is imported. Every public, concrete class defined in that module (for a
  package: in the package or one of its submodules, when the package's ``__init__`` exposes
  it) that subclasses SourceConnector, SinkConnector, Converter, HeaderConverter,
  Transformation, Predicate or ConfigProvider is registered under its Python path and
  aliases. Submodules a package does not import itself are not scanned. A class that is both
  a Converter and a HeaderConverter (like JsonConverter) is registered as both kinds.

Anything that fails (import error, an entry point naming something that is not a plugin of
its group, a module name already taken by another module) becomes a :class:`PluginFailure`
and a warning in the log; it never stops the worker. This module only finds classes; the
registry decides names and keeps the results.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import inspect
import logging
import os
import pkgutil
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from types import ModuleType

from connectrt.runtime.plugins.locations import load_location, location_dirs

__all__ = [
    "ENTRY_POINT_GROUPS",
    "DiscoveredPlugin",
    "PluginFailure",
    "plugin_types_of",
    "scan_directory",
    "scan_entry_points",
    "scan_locations",
]

log = logging.getLogger(__name__)

ENTRY_POINT_GROUPS: dict[str, str] = {
    "connectrt.connectors": "connector",  # source or sink, from the class
    "connectrt.converters": "converter",
    "connectrt.header_converters": "header_converter",
    "connectrt.transforms": "transformation",
    "connectrt.predicates": "predicate",
    "connectrt.config_providers": "configprovider",
}
"""Entry point group -> plugin kind."""


@dataclass(frozen=True)
class PluginFailure:
    """A plugin that could not be loaded.

    ``name``: the module or entry point; ``source``: where it came from (a file path or
    ``entry point <group>:<name>``); ``error``: ``ExceptionType: first line of the message``.
    """

    name: str
    source: str
    error: str


@dataclass(frozen=True)
class DiscoveredPlugin:
    """A plugin class found by a scan, with the kind and extra aliases to register it under;
    ``location`` is set for classes of an isolated plugin location."""

    cls: type
    type: str
    source: str
    aliases: tuple[str, ...] = field(default=())
    location: str | None = None  # a plugin location directory (plugin_locations), if any

    @property
    def python_path(self) -> str:
        return f"{self.cls.__module__}.{self.cls.__qualname__}"


def _bases() -> list[tuple[type, str]]:
    # Imported lazily: config_providers pulls in more of the runtime than this module needs
    # at import time, and keeping the import here avoids cycles with plugins.py.
    from connectrt.api.connector import SinkConnector, SourceConnector
    from connectrt.api.converter import Converter, HeaderConverter
    from connectrt.api.transform import Predicate, Transformation
    from connectrt.runtime.secrets.providers import ConfigProvider

    return [
        (SourceConnector, "source"),
        (SinkConnector, "sink"),
        (Converter, "converter"),
        (HeaderConverter, "header_converter"),
        (Transformation, "transformation"),
        (Predicate, "predicate"),
        (ConfigProvider, "configprovider"),
    ]


def plugin_types_of(cls: object) -> list[str]:
    """Every plugin kind ``cls`` implements, in a fixed order (empty for non-plugins)."""
    if not isinstance(cls, type):
        return []
    return [kind for base, kind in _bases() if issubclass(cls, base)]


def error_text(exc: BaseException) -> str:
    """``Type: first line of the message`` (just the type when the message is empty)."""
    lines = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {lines[0]}" if lines else type(exc).__name__


def _failure(name: str, source: str, exc: BaseException | str) -> PluginFailure:
    error = exc if isinstance(exc, str) else error_text(exc)
    log.warning("Failed to load plugin %s from %s: %s", name, source, error)
    return PluginFailure(name, source, error)


# -- entry points ----------------------------------------------------------------------------


def _entry_points(group: str) -> list[importlib.metadata.EntryPoint]:
    seen: set[tuple[str, str]] = set()
    out = []
    for ep in importlib.metadata.entry_points(group=group):
        if (ep.name, ep.value) in seen:  # the same distribution found twice on sys.path
            continue
        seen.add((ep.name, ep.value))
        out.append(ep)
    return sorted(out, key=lambda ep: (ep.name, ep.value))


def scan_entry_points() -> tuple[list[DiscoveredPlugin], list[PluginFailure]]:
    """Load every entry point in :data:`ENTRY_POINT_GROUPS`."""
    found: list[DiscoveredPlugin] = []
    failures: list[PluginFailure] = []
    for group, kind in ENTRY_POINT_GROUPS.items():
        for ep in _entry_points(group):
            source = f"entry point {group}:{ep.name}"
            try:
                obj = ep.load()
            except (Exception, SystemExit) as e:
                failures.append(_failure(ep.value, source, e))
                continue
            kinds = plugin_types_of(obj)
            if kind == "connector":
                wanted = [k for k in kinds if k in ("source", "sink")]
                expected = "SourceConnector or SinkConnector"
            else:
                wanted = [k for k in kinds if k == kind]
                expected = {
                    "converter": "Converter",
                    "header_converter": "HeaderConverter",
                    "transformation": "Transformation",
                    "predicate": "Predicate",
                    "configprovider": "ConfigProvider",
                }[kind]
            if not wanted or not isinstance(obj, type):
                failures.append(
                    _failure(ep.value, source, f"TypeError: {ep.value} is not a {expected}")
                )
                continue
            found.append(DiscoveredPlugin(obj, wanted[0], source, (ep.name,)))
    return found, failures


# -- plugin.path directories -----------------------------------------------------------------


def _within(path: str | None, directory: str) -> bool:
    if not path:
        return False
    try:
        real = os.path.realpath(path)
        return os.path.commonpath([real, directory]) == directory
    except ValueError:
        return False


def _module_origin(module: ModuleType) -> str | None:
    origin = getattr(module, "__file__", None)
    if origin is None:
        paths = list(getattr(module, "__path__", []) or [])
        origin = paths[0] if paths else None
    return origin


def _classes_of(module: ModuleType) -> Iterator[type]:
    prefix = module.__name__ + "."
    is_package = hasattr(module, "__path__")
    seen: set[int] = set()
    for attr, obj in sorted(vars(module).items()):
        if attr.startswith("_") or not isinstance(obj, type) or id(obj) in seen:
            continue
        mod = getattr(obj, "__module__", "")
        if mod != module.__name__ and not (is_package and mod.startswith(prefix)):
            continue  # imported from elsewhere (a base class, a library)
        if obj.__name__.startswith("_") or inspect.isabstract(obj):
            continue
        seen.add(id(obj))
        yield obj


def scan_directory(directory: str) -> tuple[list[DiscoveredPlugin], list[PluginFailure]]:
    """Import the top-level modules of ``directory`` (already on sys.path) and collect plugins."""
    found: list[DiscoveredPlugin] = []
    failures: list[PluginFailure] = []
    real_dir = os.path.realpath(directory)
    if not os.path.isdir(real_dir):
        log.warning("plugin.path entry %s is not a directory; nothing to scan there", directory)
        return found, failures
    for info in sorted(pkgutil.iter_modules([directory]), key=lambda m: m.name):
        name = info.name
        if name.startswith("_"):
            continue
        source = os.path.join(directory, name + ("" if info.ispkg else ".py"))
        existing = sys.modules.get(name)
        if existing is not None and not _within(_module_origin(existing), real_dir):
            failures.append(
                _failure(
                    name,
                    source,
                    f"ImportError: module name {name!r} is already taken by "
                    f"{_module_origin(existing) or 'a built-in module'}",
                )
            )
            continue
        try:
            module = importlib.import_module(name)
        except (Exception, SystemExit) as e:
            failures.append(_failure(name, source, e))
            continue
        if not _within(_module_origin(module), real_dir):
            failures.append(
                _failure(
                    name,
                    source,
                    f"ImportError: {name!r} resolved to {_module_origin(module)}, "
                    f"not to {directory}",
                )
            )
            continue
        for cls in _classes_of(module):
            for kind in plugin_types_of(cls):
                found.append(DiscoveredPlugin(cls, kind, source))
    return found, failures


def scan_locations(directory: str) -> tuple[list[DiscoveredPlugin], list[PluginFailure]]:
    """The plugins of every plugin location under ``directory`` (see
    :mod:`connectrt.runtime.plugins.locations`), each imported in isolation."""
    found: list[DiscoveredPlugin] = []
    failures: list[PluginFailure] = []
    for location in location_dirs(directory):
        modules, failed = load_location(location)
        for name, exc in failed.items():
            failures.append(_failure(name, os.path.join(location, name), exc))
        for name, module in modules.items():
            source = os.path.join(location, name)
            for cls in _classes_of(module):
                for kind in plugin_types_of(cls):
                    found.append(DiscoveredPlugin(cls, kind, source, location=location))
    return found, failures
