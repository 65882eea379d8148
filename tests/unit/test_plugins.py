"""Plugin name resolution: Kafka class names, aliases and Python paths."""

from __future__ import annotations

import sys
from collections.abc import Mapping
from pathlib import Path

import pytest

from connectors.file import FileStreamSinkConnector, FileStreamSourceConnector
from connectrt.api import ConfigDef, SinkConnector, SourceConnector, Task
from connectrt.converters.bytearray import ByteArrayConverter
from connectrt.converters.headers import SimpleHeaderConverter
from connectrt.converters.json import JsonConverter
from connectrt.converters.string import StringConverter
from connectrt.errors import ConfigError
from connectrt.runtime.plugins.registry import PluginDesc, PluginRegistry, plugin_type_of, registry


class MyTestSourceConnector(SourceConnector):
    def version(self) -> str:
        return "2.5.0"

    def start(self, config: Mapping[str, str]) -> None:
        pass

    def stop(self) -> None:
        pass

    def task_class(self) -> type[Task]:
        raise NotImplementedError

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return []

    def config_def(self) -> ConfigDef:
        return ConfigDef()


class UnversionedSinkConnector(SinkConnector):
    def start(self, config: Mapping[str, str]) -> None:
        pass

    def stop(self) -> None:
        pass

    def task_class(self) -> type[Task]:
        raise NotImplementedError

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return []

    def config_def(self) -> ConfigDef:
        return ConfigDef()


class BrokenSourceConnector(MyTestSourceConnector):
    def __init__(self) -> None:
        raise RuntimeError("cannot construct")


class NotAPlugin:
    pass


@pytest.fixture
def fresh() -> PluginRegistry:
    return PluginRegistry()


@pytest.mark.parametrize(
    ("name", "cls"),
    [
        ("org.apache.kafka.connect.file.FileStreamSourceConnector", FileStreamSourceConnector),
        ("FileStreamSourceConnector", FileStreamSourceConnector),
        ("FileStreamSource", FileStreamSourceConnector),
        ("org.apache.kafka.connect.file.FileStreamSinkConnector", FileStreamSinkConnector),
        ("FileStreamSinkConnector", FileStreamSinkConnector),
        ("FileStreamSink", FileStreamSinkConnector),
        ("connectors.file.FileStreamSinkConnector", FileStreamSinkConnector),
        ("connectors.file:FileStreamSinkConnector", FileStreamSinkConnector),
        ("connectors.file.sink.FileStreamSinkConnector", FileStreamSinkConnector),
        ("  FileStreamSink  ", FileStreamSinkConnector),
        ("org.apache.kafka.connect.json.JsonConverter", JsonConverter),
        ("JsonConverter", JsonConverter),
        ("connectrt.converters.json.JsonConverter", JsonConverter),
        ("org.apache.kafka.connect.storage.StringConverter", StringConverter),
        ("StringConverter", StringConverter),
        ("org.apache.kafka.connect.converters.ByteArrayConverter", ByteArrayConverter),
        ("ByteArrayConverter", ByteArrayConverter),
        ("org.apache.kafka.connect.storage.SimpleHeaderConverter", SimpleHeaderConverter),
    ],
)
def test_names_resolve_to_connectrt_classes(name: str, cls: type) -> None:
    assert registry.load_class(name) is cls
    assert PluginRegistry().load_class(name) is cls


@pytest.mark.parametrize(
    ("name", "cls"),
    [
        ("org.apache.kafka.connect.file.FileStreamSourceConnector", FileStreamSourceConnector),
        ("FileStreamSource", FileStreamSourceConnector),
        ("FileStreamSink", FileStreamSinkConnector),
        ("connectors.file:FileStreamSinkConnector", FileStreamSinkConnector),
    ],
)
def test_connector_class_resolves_connectors(name: str, cls: type) -> None:
    assert registry.connector_class(name) is cls


def test_find_returns_kafka_canonical_name() -> None:
    desc = registry.find("FileStreamSource")
    assert desc is not None
    assert desc.class_name == "org.apache.kafka.connect.file.FileStreamSourceConnector"
    assert desc.type == "source"
    json_desc = registry.find("JsonConverter")
    assert json_desc is not None
    assert json_desc.class_name == "org.apache.kafka.connect.json.JsonConverter"
    assert json_desc.type == "converter"
    assert registry.find("NoSuchThing") is None


def test_unknown_connector_name_lists_available(fresh: PluginRegistry) -> None:
    with pytest.raises(ConfigError) as ei:
        fresh.connector_class("NoSuchConnector")
    msg = str(ei.value)
    assert "NoSuchConnector" in msg
    assert "Connector" in msg
    assert "org.apache.kafka.connect.file.FileStreamSourceConnector" in msg
    assert "org.apache.kafka.connect.file.FileStreamSinkConnector" in msg
    # Only connectors are offered when looking for a connector.
    assert "JsonConverter" not in msg
    assert ei.value.value == "NoSuchConnector"


@pytest.mark.parametrize(
    "name",
    ["com.example.Missing", "connectors.file:Missing", "no_such_module_xyz.Thing", "os.path"],
)
def test_unknown_plugin_names_are_config_errors(fresh: PluginRegistry, name: str) -> None:
    with pytest.raises(ConfigError) as ei:
        fresh.load_class(name)
    assert name in str(ei.value)
    assert "available" in str(ei.value)
    assert "org.apache.kafka.connect.json.JsonConverter" in str(ei.value)


def test_connector_class_rejects_non_connector() -> None:
    with pytest.raises(ConfigError, match="is not a Connector") as ei:
        registry.connector_class("org.apache.kafka.connect.json.JsonConverter")
    assert ei.value.name == "connector.class"
    assert "JsonConverter" in str(ei.value)


def test_connector_class_rejects_arbitrary_python_class() -> None:
    with pytest.raises(ConfigError, match="not a discovered plugin"):
        registry.connector_class(f"{__name__}.NotAPlugin")


def test_a_class_of_an_allowed_package_that_is_no_connector_is_refused(
    fresh: PluginRegistry,
) -> None:
    fresh.allow_packages([__name__])
    with pytest.raises(ConfigError, match="is not a Connector"):
        fresh.connector_class(f"{__name__}.NotAPlugin")


def test_register_class_on_fresh_registry(fresh: PluginRegistry) -> None:
    desc = fresh.register_class(MyTestSourceConnector)
    assert desc.type == "source"
    assert desc.cls is MyTestSourceConnector
    assert fresh.connector_class("MyTestSourceConnector") is MyTestSourceConnector
    assert fresh.connector_class("MyTestSource") is MyTestSourceConnector
    assert fresh.connector_class(f"{__name__}.MyTestSourceConnector") is MyTestSourceConnector
    assert desc in fresh.plugins(["source"])
    # The process-wide registry is untouched.
    assert registry.find("MyTestSource") is None
    assert all(p.cls is not MyTestSourceConnector for p in registry.plugins())


def test_register_class_infers_sink(fresh: PluginRegistry) -> None:
    desc = fresh.register_class(UnversionedSinkConnector)
    assert desc.type == "sink"
    assert fresh.load_class("UnversionedSink") is UnversionedSinkConnector


def test_register_class_with_unknown_type_is_rejected(fresh: PluginRegistry) -> None:
    with pytest.raises(ConfigError, match="NotAPlugin"):
        fresh.register_class(NotAPlugin)


def test_register_class_with_explicit_type(fresh: PluginRegistry) -> None:
    desc = fresh.register_class(NotAPlugin, "transformation")
    assert desc.type == "transformation"
    assert fresh.load_class("NotAPlugin") is NotAPlugin


def test_explicitly_registered_class_wins_over_builtin_alias() -> None:
    reg = PluginRegistry()

    class FileStreamSourceConnector(MyTestSourceConnector):  # same simple name
        pass

    reg.register_class(FileStreamSourceConnector)
    assert reg.load_class("FileStreamSource") is FileStreamSourceConnector
    assert registry.load_class("FileStreamSource") is not FileStreamSourceConnector


def test_plugin_type_of() -> None:
    assert plugin_type_of(FileStreamSourceConnector) == "source"
    assert plugin_type_of(FileStreamSinkConnector) == "sink"
    assert plugin_type_of(JsonConverter) is None


def test_plugins_filtering_by_type(fresh: PluginRegistry) -> None:
    all_names = {p.class_name for p in fresh.plugins()}
    assert {
        "org.apache.kafka.connect.file.FileStreamSourceConnector",
        "org.apache.kafka.connect.file.FileStreamSinkConnector",
        "org.apache.kafka.connect.json.JsonConverter",
        "org.apache.kafka.connect.storage.StringConverter",
        "org.apache.kafka.connect.converters.ByteArrayConverter",
        "org.apache.kafka.connect.storage.SimpleHeaderConverter",
    } <= all_names
    connectors = fresh.plugins(["source", "sink"])
    assert {p.type for p in connectors} == {"source", "sink"}
    assert {p.class_name for p in connectors} == {
        "org.apache.kafka.connect.file.FileStreamSourceConnector",
        "org.apache.kafka.connect.file.FileStreamSinkConnector",
        "io.confluent.connect.jdbc.JdbcSourceConnector",
        "io.confluent.connect.jdbc.JdbcSinkConnector",
        "io.confluent.connect.s3.S3SinkConnector",
        "io.confluent.kafka.connect.datagen.DatagenConnector",
        "io.debezium.connector.postgresql.PostgresConnector",
        "org.apache.iceberg.connect.IcebergSinkConnector",
    }
    assert sorted(p.class_name for p in fresh.plugins(["sink"])) == [
        "io.confluent.connect.jdbc.JdbcSinkConnector",
        "io.confluent.connect.s3.S3SinkConnector",
        "org.apache.iceberg.connect.IcebergSinkConnector",
        "org.apache.kafka.connect.file.FileStreamSinkConnector",
    ]
    converters = {p.class_name for p in fresh.plugins(["converter"])}
    assert "org.apache.kafka.connect.json.JsonConverter" in converters
    assert "org.apache.kafka.connect.file.FileStreamSourceConnector" not in converters
    assert {p.class_name for p in fresh.plugins(["predicate"])} == {
        "org.apache.kafka.connect.transforms.predicates.HasHeaderKey",
        "org.apache.kafka.connect.transforms.predicates.RecordIsTombstone",
        "org.apache.kafka.connect.transforms.predicates.TopicNameMatches",
    }
    assert fresh.plugins([]) == []


def test_plugin_versions(fresh: PluginRegistry) -> None:
    source = fresh.find("FileStreamSource")
    sink = fresh.find("FileStreamSink")
    assert source is not None and sink is not None
    assert source.version() == "0.1.0"
    assert sink.version() == "0.1.0"
    assert fresh.register_class(MyTestSourceConnector).version() == "2.5.0"
    # "unknown" (the base default) means undefined: None, so it is left out of PluginInfo.
    assert fresh.register_class(UnversionedSinkConnector).version() is None
    # A plugin that cannot even be constructed has no version, it does not raise.
    assert fresh.register_class(BrokenSourceConnector).version() is None


def test_plugin_desc_load_by_python_path() -> None:
    desc = PluginDesc("x.Y", "connectors.file:FileStreamSourceConnector", "source")
    assert desc.load() is FileStreamSourceConnector


def test_canonical_name_of_builtin_classes_is_kafkas() -> None:
    assert registry.canonical_name(JsonConverter) == "org.apache.kafka.connect.json.JsonConverter"
    assert (
        registry.canonical_name(FileStreamSourceConnector)
        == "org.apache.kafka.connect.file.FileStreamSourceConnector"
    )
    assert (
        registry.canonical_name(FileStreamSinkConnector)
        == "org.apache.kafka.connect.file.FileStreamSinkConnector"
    )


def test_canonical_name_of_unregistered_class_is_its_python_path() -> None:
    assert registry.canonical_name(NotAPlugin) == f"{__name__}.NotAPlugin"


def test_add_plugin_path_loads_its_plugins_and_nothing_else(
    fresh: PluginRegistry, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "path", list(sys.path))
    plugin_dir = tmp_path / "plugins"
    plugin_dir.mkdir()
    (plugin_dir / "my_plugin_mod_xyz.py").write_text(
        "from connectrt.api import Converter\n"
        "class Thing:\n    pass\n"
        "class ThingConverter(Converter):\n"
        "    def configure(self, configs, is_key): pass\n"
        "    def from_connect_data(self, topic, schema, value, headers=None): return None\n"
        "    def to_connect_data(self, topic, value, headers=None): return None\n"
    )
    try:
        with pytest.raises(ConfigError):
            fresh.load_class("my_plugin_mod_xyz.ThingConverter")
        fresh.add_plugin_path([str(plugin_dir), ""])
        assert sys.path[0] == str(plugin_dir)
        assert fresh.load_class("my_plugin_mod_xyz.ThingConverter").__name__ == "ThingConverter"
        with pytest.raises(ConfigError, match="not a discovered plugin"):
            fresh.load_class("my_plugin_mod_xyz.Thing")  # importable, but not a plugin
    finally:
        sys.modules.pop("my_plugin_mod_xyz", None)
