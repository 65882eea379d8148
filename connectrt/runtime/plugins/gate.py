"""Which names the plugin registry may import by Python path: the gate in front of ``import``.

A class named in a config (``connector.class``, ``key.converter``, ``transforms.x.type``, ...)
that is not a registered plugin is imported only when :func:`not_loadable_reason` says so:

* its module lies in a package of the worker's ``plugin.packages`` (:class:`PackageAllowlist`:
  an entry ``tests.plugins`` covers ``tests.plugins`` and ``tests.plugins.x``, never
  ``tests.pluginsx``); or
* it is a task class (kind ``Task``, loaded by name where a task is rebuilt from its config, as
  in a task process) living in the module of a registered plugin or beside it (the same parent
  package): ``connectors.file.sink.FileStreamSinkTask`` next to the registered
  ``connectors.file.FileStreamSinkConnector``.

Everything else is refused *before* any import, so naming a module in a REST request can never
run its top-level code. The check is a pure function of the name and the allowlist; it imports
nothing. :class:`PackageAllowlist` is thread-safe and only grows.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable

from connectrt.errors import ConfigError

__all__ = ["PLUGIN_PACKAGES", "PackageAllowlist", "module_of", "not_loadable_reason"]

PLUGIN_PACKAGES = "plugin.packages"
"""The worker setting listing the packages whose classes may be loaded by Python path."""


def _is_dotted_name(text: str) -> bool:
    return bool(text) and all(part.isidentifier() for part in text.split("."))


def module_of(path: str) -> str | None:
    """The module part of ``pkg.mod.Class`` / ``pkg.mod:Class.Inner``; None when ``path`` is not
    a Python path (a bare name, empty parts, characters no identifier has)."""
    if ":" in path:
        module, _, attr = path.partition(":")
    else:
        module, _, attr = path.rpartition(".")
    if not _is_dotted_name(module) or not _is_dotted_name(attr):
        return None
    return module


def _within(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


class PackageAllowlist:
    """The ``plugin.packages`` entries of the workers in this process (see the module doc)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._packages: set[str] = set()

    def add(self, packages: Iterable[str]) -> None:
        """Add entries; ConfigError (naming ``plugin.packages``) for one that is not a dotted
        Python name. Blank entries are ignored."""
        cleaned = [p.strip() for p in packages if p and p.strip()]
        for p in cleaned:
            if not _is_dotted_name(p):
                raise ConfigError(
                    f"Invalid value {p} for configuration {PLUGIN_PACKAGES}: not a Python "
                    "package name (dotted identifiers, such as my_company.connectors)",
                    PLUGIN_PACKAGES,
                    p,
                )
        with self._lock:
            self._packages.update(cleaned)

    def entries(self) -> list[str]:
        with self._lock:
            return sorted(self._packages)

    def covers(self, module: str) -> bool:
        with self._lock:
            return any(_within(module, p) for p in self._packages)


def not_loadable_reason(
    name: str,
    kind: str,
    packages: PackageAllowlist,
    plugin_modules: Callable[[], set[str]],
) -> str | None:
    """None when ``name`` (not a registered plugin) may be imported as a ``kind``; otherwise
    why not, as text for an error message. ``plugin_modules`` gives the modules registered
    plugins live in (asked only for task classes)."""
    module = module_of(name)
    if module is None:
        return "not a registered plugin name, nor a Python path"
    if packages.covers(module):
        return None
    if kind == "Task":
        for plugin_module in plugin_modules():
            parent = plugin_module.rpartition(".")[0] or plugin_module
            if _within(module, parent):
                return None
    return (
        "not a discovered plugin: a plugin is bundled, registered through an entry point or "
        "found in a plugin.path directory when it is scanned; other classes are loaded only "
        f"from the packages listed in the worker's {PLUGIN_PACKAGES}"
    )
