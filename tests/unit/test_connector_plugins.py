"""ConnectorPlugins on its own: /connector-plugins answers from the registry, without a worker."""

from __future__ import annotations

from collections.abc import Mapping

import pytest

from connectrt.errors import NotFoundError
from connectrt.runtime.clients.settings import OverridePolicy
from connectrt.runtime.errors import BadRequestError
from connectrt.runtime.herder.plugin_listing import ConnectorPlugins
from connectrt.runtime.plugins.registry import registry

FILE_SOURCE = "org.apache.kafka.connect.file.FileStreamSourceConnector"


def _identity(config: Mapping[str, str]) -> dict[str, str]:
    return dict(config)


@pytest.fixture
def plugins() -> ConnectorPlugins:
    return ConnectorPlugins(registry, OverridePolicy("All"), _identity)


def test_lists_connectors_once_each_sorted(plugins: ConnectorPlugins):
    connectors = plugins.list_plugins()
    names = [p.class_name for p in connectors]
    assert FILE_SOURCE in names
    assert names == sorted(names)
    # Once per class and installed version (KIP-891): an earlier test of the same process may
    # have installed two versions of one plugin into the shared registry.
    entries = [(p.class_name, p.version()) for p in connectors]
    assert len(entries) == len(set(entries))
    assert {p.type for p in connectors} <= {"source", "sink"}
    assert "converter" in {p.type for p in plugins.list_plugins(connectors_only=False)}


def test_plugin_config_of_connectors_and_converters(plugins: ConnectorPlugins):
    keys = {k.name for k in plugins.plugin_config("FileStreamSource")}
    assert {"tasks.max", "topic", "file"} <= keys
    assert plugins.plugin_config("JsonConverter")
    with pytest.raises(NotFoundError, match=r"^Unknown plugin Nope\.$"):
        plugins.plugin_config("Nope")


def test_validate(plugins: ConnectorPlugins):
    result = plugins.validate("FileStreamSink", {"name": "v", "file": "x"})
    assert result.connector_class == "FileStreamSink"
    assert result.error_count == 2
    with pytest.raises(BadRequestError, match="does not match request type FileStreamSink"):
        plugins.validate("FileStreamSink", {"connector.class": "FileStreamSource"})


def test_resolve_sees_only_present_values():
    seen: list[dict[str, str]] = []

    def resolve(config: Mapping[str, str]) -> dict[str, str]:
        seen.append(dict(config))
        return {k: v.replace("${env:FILE}", "out.txt") for k, v in config.items()}

    plugins = ConnectorPlugins(registry, OverridePolicy("All"), resolve)
    result = plugins.validate("FileStreamSink", {"file": "${env:FILE}", "topics": "t", "x": None})
    assert seen == [{"file": "${env:FILE}", "topics": "t", "connector.class": "FileStreamSink"}]
    # The connector judged the resolved value; the result shows the value as written.
    assert result.values["file"].value == "${env:FILE}"
    assert "out.txt" not in repr(result.values)
