"""Plugin locations: one version of a plugin per directory, loaded side by side (KIP-891).

Kafka Connect gives each plugin directory under ``plugin.path`` its own class loader, so two
directories may hold two versions of the same plugin classes. Python has one module namespace;
connectrt gets the same effect for **plugin locations**: a subdirectory of a ``plugin.path``
directory that is not itself a package (no ``__init__.py``), holding the plugin's top-level
modules and packages::

    plugins/                       <- plugin.path
      my-connector-1.4/            <- a location
        my_connector/__init__.py   (version() returns "1.4.0")
      my-connector-2.0/            <- another location, the same package
        my_connector/__init__.py   (version() returns "2.0.0")

:func:`load_location` imports a location's modules under their own names, collects what they
define, and then takes them out of ``sys.modules`` again (putting back whatever held those
names before), so the next location can import the same package afresh. The classes keep
their module names (``my_connector.MySource``): both versions are the same plugin, told apart
by ``version()``. The modules stay alive through what references them (the registry keeps
them).

A plugin loaded this way must import its own modules when it is imported (at the top of its
modules, as is usual), not lazily inside functions later: by then its package name no longer
resolves to its location. Such plugins do not travel to Spark executors by name either.

Threading: :func:`load_location` holds one module-level lock while it swaps ``sys.modules``
entries; another thread importing the same package names at that moment could see either
copy, so discovery runs when the worker starts, before any task.
"""

from __future__ import annotations

import importlib
import os
import pkgutil
import sys
import threading
from types import ModuleType

__all__ = ["is_location", "load_location", "location_dirs"]

_LOCK = threading.Lock()
_LOADED: dict[str, dict[str, ModuleType]] = {}  # location -> its modules, kept alive


def is_location(path: str) -> bool:
    """A directory, not a package, not hidden or private, holding modules or packages."""
    name = os.path.basename(os.path.normpath(path))
    if name.startswith((".", "_")) or not os.path.isdir(path):
        return False
    if os.path.exists(os.path.join(path, "__init__.py")):
        return False
    return any(True for _ in pkgutil.iter_modules([path]))


def location_dirs(directory: str) -> list[str]:
    """The plugin locations directly under a ``plugin.path`` directory, sorted by name."""
    try:
        entries = sorted(os.listdir(directory))
    except OSError:
        return []
    return [p for p in (os.path.join(directory, e) for e in entries) if is_location(p)]


def _top(module_name: str) -> str:
    return module_name.partition(".")[0]


def load_location(path: str) -> tuple[dict[str, ModuleType], dict[str, BaseException]]:
    """Import every top-level module of location ``path`` in isolation.

    Returns ``(modules, failures)``: the imported top-level modules by name, and the error of
    each that failed. ``sys.modules`` and ``sys.path`` are as before when it returns.
    """
    names = sorted(m.name for m in pkgutil.iter_modules([path]) if not m.name.startswith("_"))
    modules: dict[str, ModuleType] = {}
    failures: dict[str, BaseException] = {}
    wanted = set(names)
    with _LOCK:
        saved = {k: v for k, v in sys.modules.items() if _top(k) in wanted}
        for k in saved:
            del sys.modules[k]
        sys.path.insert(0, path)
        importlib.invalidate_caches()
        try:
            for name in names:
                try:
                    modules[name] = importlib.import_module(name)
                except (Exception, SystemExit) as e:
                    failures[name] = e
        finally:
            sys.path.remove(path)
            loaded = {k: v for k, v in sys.modules.items() if _top(k) in wanted}
            for k in loaded:
                del sys.modules[k]
            sys.modules.update(saved)
            importlib.invalidate_caches()
        _LOADED[os.path.realpath(path)] = loaded
    return modules, failures
