"""``connectrt.api`` exports exactly the plugin-author surface, deliberately.

* ``__all__`` lists every public name the package binds (modules aside) and nothing else, once;
* every listed name imports, and is the very object its submodule defines;
* every name a submodule of ``connectrt.api`` offers (its ``__all__``) and every public class
  it defines is exported, unless :data:`NOT_EXPORTED` says why not. A new module or class under
  ``connectrt/api/`` therefore fails here until it is exported or listed below.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from types import ModuleType

import connectrt.api as api

NOT_EXPORTED: dict[str, str] = {
    "R": "a TypeVar for generic SMTs; `from connectrt.api.transform import R` where wanted",
    "apply_each_in_place": "the loop behind Transformation.apply_batch_owned's default",
    "IllegalWorkerStateError": "raised by the worker's herder, never by or to a plugin",
    "parse_type": "the string-to-ConfigType parser the runtime and docs generator use",
    "configure_file_access": "the worker installs its file rule; plugins only read it",
    "render_value": "renders a parsed value back to text for the REST API and the docs",
}


def _submodules() -> list[ModuleType]:
    names = [m.name for m in pkgutil.walk_packages(api.__path__, "connectrt.api.")]
    assert names, "connectrt.api has no submodules?"
    return [importlib.import_module(name) for name in sorted(names)]


def _offered(module: ModuleType) -> set[str]:
    """What ``module`` offers to importers: its ``__all__`` and its public classes."""
    names = set(getattr(module, "__all__", ()))
    names |= {
        name
        for name, value in vars(module).items()
        if inspect.isclass(value)
        and value.__module__ == module.__name__
        and not name.startswith("_")
    }
    return names


def test_all_is_exactly_the_public_names_of_the_package() -> None:
    public = {
        name
        for name, value in vars(api).items()
        if not name.startswith("_") and not isinstance(value, ModuleType)
    }
    assert len(api.__all__) == len(set(api.__all__)), "duplicates in __all__"
    assert set(api.__all__) - public == set(), "listed in __all__ but not defined"
    assert public - set(api.__all__) == set(), "public but missing from __all__"


def test_every_exported_name_imports() -> None:
    namespace: dict[str, object] = {}
    exec("from connectrt.api import *", namespace)
    assert set(namespace) - {"__builtins__"} == set(api.__all__)
    for name in api.__all__:
        exec(f"from connectrt.api import {name}", {})


def test_every_author_facing_name_of_a_submodule_is_exported() -> None:
    missing: dict[str, set[str]] = {}
    for module in _submodules():
        for name in _offered(module) - set(NOT_EXPORTED):
            if name not in api.__all__:
                missing.setdefault(module.__name__, set()).add(name)
                continue
            assert getattr(api, name) is getattr(module, name), (
                f"connectrt.api.{name} is not {module.__name__}.{name}"
            )
    assert missing == {}, "export these from connectrt.api, or list them in NOT_EXPORTED"


def test_the_exclusions_are_current() -> None:
    offered = set().union(*(_offered(m) for m in _submodules()))
    assert set(NOT_EXPORTED) <= offered, "NOT_EXPORTED names something that no longer exists"
    assert set(NOT_EXPORTED).isdisjoint(api.__all__)


def test_the_author_classes_are_there() -> None:
    """The surface the guide documents, by name (a guard against an accidental removal)."""
    for name in (
        "SourceConnector",
        "SinkConnector",
        "SourceTask",
        "SinkTask",
        "Transformation",
        "Predicate",
        "Converter",
        "HeaderConverter",
        "SchemaAndValue",
        "ConfigDef",
        "ExactlyOnceSupport",
        "RetriableError",
        "SinkTaskContext",
        "SourceTaskContext",
        "ErrantRecordReporter",
    ):
        assert name in api.__all__, name
