"""Only real plugins are loaded: the registry's gate in front of ``import`` (issue 27).

A canary module with an import side effect (it writes a marker file) sits on ``sys.path``
without being a plugin; no name, in any role, gets it imported unless ``plugin.packages``
lists its package.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from connectrt.api import ConfigValue
from connectrt.errors import ConfigError
from connectrt.runtime.config.connector_classes import check_converters, refuse_class_references
from connectrt.runtime.plugins.registry import PluginRegistry

CANARY_SOURCE = """
import pathlib
pathlib.Path({marker!r}).write_text("imported")
from connectrt.api import Converter, SourceConnector, Transformation

class Canary:
    pass

class CanaryConnector(SourceConnector):
    def start(self, config): pass
    def stop(self): pass
    def task_class(self): return CanaryTask
    def task_configs(self, max_tasks): return []
    def config_def(self):
        from connectrt.api import ConfigDef
        return ConfigDef()
    def version(self): return "1.0"

class CanaryTask:
    pass
"""


@pytest.fixture
def canary(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[str, Path]]:
    """A package ``gate_canary_pkg`` on sys.path (not a plugin.path): (module name, marker)."""
    root = tmp_path / "site"
    pkg = root / "gate_canary_pkg"
    pkg.mkdir(parents=True)
    marker = tmp_path / "imported.marker"
    (pkg / "__init__.py").write_text("")
    (pkg / "canary.py").write_text(CANARY_SOURCE.format(marker=str(marker)))
    monkeypatch.setattr(sys, "path", [str(root), *sys.path])
    try:
        yield "gate_canary_pkg.canary", marker
    finally:
        for name in [m for m in sys.modules if m.startswith("gate_canary_pkg")]:
            del sys.modules[name]


@pytest.fixture
def fresh() -> PluginRegistry:
    return PluginRegistry()


@pytest.mark.parametrize(
    ("attr", "kind"),
    [
        ("CanaryConnector", "Connector"),
        ("Canary", "Converter"),
        ("Canary", "HeaderConverter"),
        ("Canary", "Transformation or Predicate"),
        ("Canary", "plugin"),
        ("CanaryTask", "Task"),
    ],
)
def test_a_module_that_is_no_plugin_is_never_imported(
    fresh: PluginRegistry, canary: tuple[str, Path], attr: str, kind: str
) -> None:
    module, marker = canary
    for name in (f"{module}.{attr}", f"{module}:{attr}"):
        with pytest.raises(ConfigError, match="not a discovered plugin") as ei:
            fresh.load_class(name, kind)
        assert name in str(ei.value)
    assert not marker.exists()
    assert module not in sys.modules


def test_every_registry_entry_point_refuses_the_canary(
    fresh: PluginRegistry, canary: tuple[str, Path]
) -> None:
    module, marker = canary
    with pytest.raises(ConfigError):
        fresh.connector_class(f"{module}.CanaryConnector")
    with pytest.raises(ConfigError):
        fresh.transform_class(f"{module}.Canary")
    with pytest.raises(ConfigError):
        fresh.choose(f"{module}.CanaryConnector", "Connector", "1.0")
    assert fresh.find(f"{module}.CanaryConnector") is None
    assert fresh.versions(f"{module}.CanaryConnector") == []
    assert not marker.exists()


def test_plugin_packages_allow_their_package_and_subpackages_only(
    fresh: PluginRegistry, canary: tuple[str, Path]
) -> None:
    module, marker = canary
    fresh.allow_packages(["gate_canary"])  # a prefix of the name, not a package of it
    with pytest.raises(ConfigError):
        fresh.connector_class(f"{module}.CanaryConnector")
    assert not marker.exists()
    fresh.allow_packages(["gate_canary_pkg"])
    assert fresh.connector_class(f"{module}.CanaryConnector").__name__ == "CanaryConnector"
    assert marker.exists()
    assert fresh.allowed_packages() == ["gate_canary", "gate_canary_pkg"]


@pytest.mark.parametrize("entry", ["not a package", "a..b", "1abc", "pkg-name"])
def test_plugin_packages_entries_must_be_package_names(fresh: PluginRegistry, entry: str) -> None:
    with pytest.raises(ConfigError, match=r"plugin\.packages") as ei:
        fresh.allow_packages([entry])
    assert ei.value.name == "plugin.packages"


@pytest.mark.parametrize("name", ["", "Canary", "os", ".relative.X", "a b.C", "pkg.mod.", "x:"])
def test_names_that_are_no_python_paths_are_refused(fresh: PluginRegistry, name: str) -> None:
    with pytest.raises(ConfigError):
        fresh.load_class(name)


def test_a_task_class_beside_a_registered_connector_loads_by_name(
    fresh: PluginRegistry, canary: tuple[str, Path]
) -> None:
    """Task processes rebuild a task from its ``task.class``: allowed next to a plugin."""
    module, _marker = canary
    fresh.allow_packages(["gate_canary_pkg"])
    connector = fresh.connector_class(f"{module}.CanaryConnector")
    other = PluginRegistry()
    other.register_class(connector)
    assert other.load_class(f"{module}.CanaryTask", "Task").__name__ == "CanaryTask"
    with pytest.raises(ConfigError):
        other.load_class(f"{module}.CanaryTask", "Converter")  # only as a task


def test_a_module_written_into_plugin_path_after_the_scan_is_no_plugin_until_a_rescan(
    fresh: PluginRegistry, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "path", list(sys.path))
    plugins = tmp_path / "plugins"
    plugins.mkdir()
    fresh.add_plugin_path([str(plugins)])
    marker = tmp_path / "late.marker"
    (plugins / "gate_late_mod.py").write_text(CANARY_SOURCE.format(marker=str(marker)))
    try:
        with pytest.raises(ConfigError, match="not a discovered plugin"):
            fresh.connector_class("gate_late_mod.CanaryConnector")
        assert not marker.exists()
        fresh.rescan([str(plugins)])
        assert fresh.connector_class("gate_late_mod.CanaryConnector").__name__ == (
            "CanaryConnector"
        )
    finally:
        sys.modules.pop("gate_late_mod", None)


def test_a_registered_class_is_found_under_the_path_of_its_defining_module(
    fresh: PluginRegistry,
) -> None:
    sink = fresh.connector_class("FileStreamSink")
    assert fresh.connector_class("connectors.file.sink.FileStreamSinkConnector") is sink
    assert fresh.connector_class("connectors.file:FileStreamSinkConnector") is sink
    with pytest.raises(ConfigError):
        fresh.load_class("connectors.file.sink.os")  # reached through a plugin's module


@pytest.mark.parametrize(
    "key",
    [
        "connector.class",
        "key.converter",
        "value.converter",
        "header.converter",
        "transforms.t.type",
        "predicates.p.type",
    ],
)
def test_provider_references_in_class_keys_are_refused_as_written(key: str) -> None:
    config = {
        "connector.class": "FileStreamSink",
        "transforms": "t",
        "predicates": "p",
        key: "${env:HOME}",
    }
    with pytest.raises(ConfigError) as ei:
        refuse_class_references(config)
    assert f"Invalid value ${{env:HOME}} for configuration {key}" in str(ei.value)
    assert ei.value.name == key


def test_provider_references_elsewhere_are_left_to_resolution() -> None:
    refuse_class_references(
        {"connector.class": "FileStreamSink", "file": "${env:HOME}", "transforms": "t"}
    )


def test_unknown_and_wrong_kind_converters_are_field_errors(fresh: PluginRegistry) -> None:
    config = {
        "key.converter": "no.such.Converter",
        "value.converter": "FileStreamSink",
        "header.converter": "org.apache.kafka.connect.converters.ByteArrayConverter",
    }
    values: dict[str, ConfigValue] = {}
    check_converters(config, values, fresh)
    assert values["key.converter"].errors == [
        "Invalid value no.such.Converter for configuration key.converter: "
        "Class no.such.Converter could not be found."
    ]
    assert values["value.converter"].errors == [
        "Invalid value FileStreamSink for configuration value.converter: "
        "FileStreamSink is not a Converter"
    ]
    assert values["header.converter"].errors == []


def test_a_worker_config_provider_that_is_no_plugin_is_never_imported(
    fresh: PluginRegistry, canary: tuple[str, Path]
) -> None:
    """``config.providers.x.class`` loads through the registry: the built-in aliases work, a
    module that is no plugin is refused before import, and one in plugin.packages loads."""
    from connectrt.runtime.secrets.providers import ConfigProviders

    module, marker = canary
    props = {
        "config.providers": "env,x",
        "config.providers.env.class": "EnvVarConfigProvider",
        "config.providers.x.class": f"{module}.Canary",
    }

    def load(name: str) -> type:
        return fresh.load_class(name, "ConfigProvider")

    with pytest.raises(
        ConfigError, match="Failed to find any class that implements ConfigProvider"
    ):
        ConfigProviders.from_worker_config(props, load)
    assert not marker.exists()
    fresh.allow_packages(["gate_canary_pkg"])
    with pytest.raises(ConfigError, match="is not a ConfigProvider"):
        ConfigProviders.from_worker_config(props, load)  # allowed, imported: no provider
    assert marker.exists()
