"""A registered plugin and how its class is loaded: :class:`PluginDesc` and :func:`import_class`.

A plugin registered by Python path is imported only when it is first used
(:meth:`PluginDesc.load`); its ``version()`` is computed once per class. Both may be called from
any thread (importing is serialised by Python's import lock; the version cache is
``functools.cache``).
"""

from __future__ import annotations

import builtins
import functools
import importlib
import inspect
from dataclasses import dataclass
from typing import Any

__all__ = ["PluginDesc", "class_version", "import_class", "instance_version"]


@dataclass(frozen=True)
class PluginDesc:
    """A registered plugin: its canonical name (Kafka's class name where one exists).

    ``location`` is the plugin location directory it was loaded from (None: importable by
    its Python path); ``default_version`` is the version of a plugin that reports none (the
    bundled plugins report connectrt's, as Kafka's report Kafka's).
    """

    class_name: str
    python_path: str
    type: str
    cls: builtins.type | None = None  # set for classes registered as objects
    location: str | None = None
    default_version: str | None = None

    def load(self) -> builtins.type:
        return self.cls if self.cls is not None else import_class(self.python_path)

    def version(self) -> str | None:
        """The plugin's ``version()``, or None when undefined (``"unknown"``) or unavailable.

        Computed once per class (cached): the class is instantiated without arguments only
        when its constructor allows that; failures of any kind give None.
        """
        try:
            cls = self.load()
        except Exception:
            return self.default_version
        version = _class_version(cls)
        return version if version is not None else self.default_version


def class_version(cls: type) -> str | None:
    """A plugin class's ``version()`` (None when undefined); cached per class."""
    return _class_version(cls)


def instance_version(plugin: object) -> str | None:
    """A plugin instance's ``version()``, None when it has none, fails or is undefined."""
    try:
        v = plugin.version()  # type: ignore[attr-defined]
    except Exception:
        return None
    return None if v in (None, "unknown", "") else str(v)


@functools.cache
def _class_version(cls: type) -> str | None:
    attr = inspect.getattr_static(cls, "version", None)
    if attr is None:
        return None
    if isinstance(attr, str):
        v: Any = attr
    else:
        if not _constructible_without_args(cls):
            return None
        try:
            v = cls().version()
        except Exception:
            return None
    return None if v in (None, "unknown", "") else str(v)


def _constructible_without_args(cls: type) -> bool:
    if inspect.isabstract(cls):
        return False
    try:
        sig = inspect.signature(cls)
    except (TypeError, ValueError):
        return True  # no introspectable signature (e.g. a C type): just try
    return all(
        p.default is not inspect.Parameter.empty
        or p.kind in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)
        for p in sig.parameters.values()
    )


def import_class(path: str) -> type:
    """The class at ``package.module.Class`` or ``package.module:Class``.

    Raises ImportError (or AttributeError for a missing attribute) when there is none.
    """
    if ":" in path:
        module_name, _, attr = path.partition(":")
    else:
        module_name, _, attr = path.rpartition(".")
    if not module_name or module_name.startswith("."):
        raise ImportError(f"{path} is not an absolute Python path")
    module = importlib.import_module(module_name)
    obj: Any = module
    for part in attr.split("."):
        obj = getattr(obj, part)
    if not isinstance(obj, type):
        raise ImportError(f"{path} is not a class")
    return obj
