"""Resolving plugin names (connector, converter, ...) to Python classes.

A name may be:

* a Python path, ``package.module.ClassName`` or ``package.module:ClassName``;
* a Kafka Connect Java class name of a plugin connectrt ships
  (``org.apache.kafka.connect.file.FileStreamSourceConnector``);
* a simple class name (``FileStreamSourceConnector``) or the simple name without its type
  suffix (``FileStreamSource``), for every registered plugin.

The registry is filled with the bundled plugins at import time; :meth:`PluginRegistry.register`
adds more. Discovery on ``plugin.path`` directories adds them to ``sys.path`` so their modules
import by Python path. Thread-safe for lookups once populated.
"""

from __future__ import annotations

import builtins
import importlib
import sys
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from connectrt.api.connector import Connector, SinkConnector, SourceConnector
from connectrt.api.errors import ConfigError

__all__ = ["PluginDesc", "PluginRegistry", "registry"]

_BUILTINS: list[tuple[str, str, str]] = [
    # (python path, kafka java class, type)
    (
        "connectors.file.FileStreamSourceConnector",
        "org.apache.kafka.connect.file.FileStreamSourceConnector",
        "source",
    ),
    (
        "connectors.file.FileStreamSinkConnector",
        "org.apache.kafka.connect.file.FileStreamSinkConnector",
        "sink",
    ),
    (
        "connectrt.converters.json.JsonConverter",
        "org.apache.kafka.connect.json.JsonConverter",
        "converter",
    ),
    (
        "connectrt.converters.string.StringConverter",
        "org.apache.kafka.connect.storage.StringConverter",
        "converter",
    ),
    (
        "connectrt.converters.bytearray.ByteArrayConverter",
        "org.apache.kafka.connect.converters.ByteArrayConverter",
        "converter",
    ),
    (
        "connectrt.converters.headers.SimpleHeaderConverter",
        "org.apache.kafka.connect.storage.SimpleHeaderConverter",
        "header_converter",
    ),
]

_SUFFIX = {
    "source": "Connector",
    "sink": "Connector",
    "converter": "Converter",
    "header_converter": "HeaderConverter",
    "transformation": "Transformation",
    "predicate": "Predicate",
}


@dataclass(frozen=True)
class PluginDesc:
    """A registered plugin: its canonical name (Kafka's class name where one exists)."""

    class_name: str
    python_path: str
    type: str
    cls: builtins.type | None = None  # set for classes registered as objects

    def load(self) -> builtins.type:
        return self.cls if self.cls is not None else _import(self.python_path)

    def version(self) -> str | None:
        try:
            cls = self.load()
            v = cls().version() if hasattr(cls, "version") else None
        except Exception:
            return None
        return None if v in (None, "unknown") else str(v)


def _import(path: str) -> type:
    if ":" in path:
        module_name, _, attr = path.partition(":")
    else:
        module_name, _, attr = path.rpartition(".")
    if not module_name:
        raise ImportError(path)
    module = importlib.import_module(module_name)
    obj: Any = module
    for part in attr.split("."):
        obj = getattr(obj, part)
    if not isinstance(obj, type):
        raise ImportError(f"{path} is not a class")
    return obj


def plugin_type_of(cls: type) -> str | None:
    if issubclass(cls, SourceConnector):
        return "source"
    if issubclass(cls, SinkConnector):
        return "sink"
    return None


class PluginRegistry:
    def __init__(self, builtins: Iterable[tuple[str, str, str]] = _BUILTINS) -> None:
        self._lock = threading.Lock()
        self._plugins: list[PluginDesc] = []
        self._aliases: dict[str, PluginDesc] = {}
        for python_path, java_name, type_ in builtins:
            self.register(python_path, type_, java_name)
        from connectrt.transforms import KAFKA_PREDICATES, KAFKA_TRANSFORMATIONS

        for java_name, python_path in KAFKA_TRANSFORMATIONS.items():
            self.register(python_path, "transformation", java_name)
        for java_name, python_path in KAFKA_PREDICATES.items():
            self.register(python_path, "predicate", java_name)

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
    ) -> PluginDesc:
        """Register a plugin by Python path under its canonical and short names."""
        desc = PluginDesc(class_name or python_path, python_path, type_, cls)
        simple = desc.class_name.replace(":", ".").rsplit(".", 1)[-1]
        names = {desc.class_name, python_path, python_path.replace(":", "."), simple}
        suffix = _SUFFIX.get(type_)
        if suffix and simple.endswith(suffix) and simple != suffix:
            names.add(simple[: -len(suffix)])
        with self._lock:
            self._plugins.append(desc)
            for n in names:
                if cls is not None:
                    self._aliases[n] = desc  # an explicitly registered class wins
                else:
                    self._aliases.setdefault(n, desc)
        return desc

    def add_plugin_path(self, dirs: Iterable[str]) -> None:
        """Make modules in ``plugin.path`` directories importable by Python path."""
        for d in dirs:
            if d and d not in sys.path:
                sys.path.insert(0, d)

    def plugins(self, types: Iterable[str] | None = None) -> list[PluginDesc]:
        wanted = set(types) if types is not None else None
        with self._lock:
            return [p for p in self._plugins if wanted is None or p.type in wanted]

    def find(self, name: str) -> PluginDesc | None:
        return self._aliases.get(name.strip())

    def load_class(self, name: str, kind: str = "plugin") -> type:
        """The class for ``name``; ConfigError naming what was looked for if none matches."""
        desc = self.find(name)
        if desc is not None:
            return desc.load()
        try:
            return _import(name.strip())
        except (ImportError, AttributeError, ValueError) as e:
            known = ", ".join(
                sorted(
                    p.class_name
                    for p in self.plugins()
                    if kind == "plugin" or p.type in _kinds(kind)
                )
            )
            raise ConfigError(
                f"Failed to find any class that implements {kind} and which name matches "
                f"{name} (tried registered aliases and the Python path: {e}); "
                f"available: {known}",
                None,
                name,
            ) from None

    def transform_class(self, name: str) -> type:
        """Resolver for ``transforms.*.type`` / ``predicates.*.type`` values."""
        return self.load_class(name, "Transformation or Predicate")

    def connector_class(self, name: str) -> type[Connector]:
        cls = self.load_class(name, "Connector")
        if not (isinstance(cls, type) and issubclass(cls, Connector)):
            raise ConfigError(f"{name} is not a Connector", "connector.class", name)
        return cls

    def canonical_name(self, cls: type) -> str:
        """Kafka's class name for a bundled plugin, else the class's Python path."""
        for p in self.plugins():
            try:
                if p.load() is cls:
                    return p.class_name
            except (ImportError, AttributeError):
                continue
        return f"{cls.__module__}.{cls.__qualname__}"


def _kinds(kind: str) -> set[str]:
    return {
        "Connector": {"source", "sink"},
        "Converter": {"converter"},
        "HeaderConverter": {"header_converter", "converter"},
        "Transformation or Predicate": {"transformation", "predicate"},
    }.get(kind, set(_SUFFIX))


registry = PluginRegistry()
"""The process-wide plugin registry."""
