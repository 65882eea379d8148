"""Resolving the ``*.type`` of a transformation or predicate to its class.

:func:`default_resolve` knows Kafka's class names
(``org.apache.kafka.connect.transforms.Cast$Value``), their simple names (``Cast$Value``,
``CastValue``) and Python class paths (``pkg.module.Class`` or ``pkg.module:Class``);
:func:`resolve_class` applies a :data:`Resolver` to a config value and checks the class is of
the expected kind, raising ConfigError naming the key.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

from connectrt.api.config import ConfigError

__all__ = ["Resolver", "default_resolve", "resolve_class"]

Resolver = Callable[..., type]
"""``resolve(name)`` turns a ``*.type`` value into a class; raises (ConfigError, ImportError,
...) if unknown. ``resolve(name, version=spec)`` picks the version a ``*.plugin.version`` value
asks for (KIP-891; the worker's plugin registry does)."""


def _bundled_names() -> dict[str, str]:
    from connectrt.transforms import KAFKA_ALIASES

    names = dict(KAFKA_ALIASES)
    for fqcn, path in KAFKA_ALIASES.items():
        names.setdefault(fqcn.rsplit(".", 1)[-1], path)  # "Cast$Value", "TopicNameMatches"
        names.setdefault(path.rsplit(".", 1)[-1], path)  # "CastValue"
    return names


def _import(path: str) -> type:
    if ":" in path:
        module_name, _, attr = path.partition(":")
    else:
        module_name, _, attr = path.rpartition(".")
    if not module_name or not attr:
        raise ImportError(f"not a class path: {path}")
    obj: Any = importlib.import_module(module_name)
    for part in attr.split("."):
        obj = getattr(obj, part)
    if not isinstance(obj, type):
        raise ImportError(f"{path} is not a class")
    return obj


def default_resolve(name: str, version: str | None = None) -> type:
    """Resolve a Kafka SMT/predicate class name, its simple name, or a Python class path.

    Without a plugin registry there is one version of each class: a ``version`` other than
    ``latest`` is refused."""
    if version is not None and version.strip() != "latest":
        raise ConfigError(
            f"Plugin versions are chosen by a worker's plugin registry; {name} has no version "
            f"{version} here",
            None,
            version,
        )
    name = name.strip()
    path = _bundled_names().get(name, name)
    try:
        return _import(path)
    except (ImportError, AttributeError, ValueError) as exc:
        raise ConfigError(f"Class {name} could not be found.", None, name) from exc


def resolve_class(
    resolve: Resolver,
    class_name: str,
    type_key: str,
    base: type,
    version: str | None = None,
    version_key: str | None = None,
) -> type:
    """``resolve(class_name)``, checked to be a subclass of ``base``; any failure is a
    ConfigError on ``type_key``. With ``version`` (the ``*.plugin.version`` value under
    ``version_key``) the class is then resolved at that version; no such version is a
    ConfigError on ``version_key``."""
    cls = _resolve_unversioned(resolve, class_name, type_key, base)
    if version is None:
        return cls
    key = version_key or type_key
    try:
        return resolve(class_name.strip(), version=version)
    except ConfigError as exc:
        raise ConfigError(f"Invalid value {version} for configuration {key}: {exc}", key) from exc


def _resolve_unversioned(resolve: Resolver, class_name: str, type_key: str, base: type) -> type:
    try:
        cls = resolve(class_name.strip())
    except ConfigError as exc:
        raise ConfigError(
            f"Invalid value {class_name} for configuration {type_key}: {exc}", type_key
        ) from exc
    except (ImportError, AttributeError, ValueError) as exc:
        raise ConfigError(
            f"Invalid value {class_name} for configuration {type_key}: "
            f"Class {class_name} could not be found.",
            type_key,
        ) from exc
    if not (isinstance(cls, type) and issubclass(cls, base)):
        raise ConfigError(
            f"Invalid value {class_name} for configuration {type_key}: "
            f"{class_name} is not a {base.__name__}",
            type_key,
        )
    return cls
