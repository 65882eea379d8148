"""The walkthrough's files (examples/quickstart/) are valid: the worker file parses, the two
connector files validate against the connectors found on the worker's plugin.path, and the
properties files hold only keys something reads.

tests/integration/test_docs_examples_pipeline.py runs the walkthrough itself.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator

import pytest

from connectrt.runtime.clients.settings import OverridePolicy
from connectrt.runtime.config.connector import validate_connector_config
from connectrt.runtime.config.worker import WORKER_CONFIG_DEF, WorkerConfig
from connectrt.runtime.plugins.registry import PluginRegistry
from connectrt.runtime.properties import load_connector_file, load_properties
from tests.docs_support import ROOT

QUICKSTART = ROOT / "examples" / "quickstart"
CONNECTOR_FILES = ["tick-source.properties", "tick-sink.properties"]


@pytest.fixture
def plugins(monkeypatch: pytest.MonkeyPatch) -> Iterator[PluginRegistry]:
    """A throw-away registry that scanned the walkthrough's plugin.path (this directory)."""
    monkeypatch.setattr(sys, "path", list(sys.path))
    before = set(sys.modules)
    registry = PluginRegistry()
    registry.discover([str(QUICKSTART)])
    yield registry
    for name in set(sys.modules) - before:
        if name in ("my_connectors", "test_my_connectors"):
            del sys.modules[name]


def test_the_worker_file_parses() -> None:
    props = load_properties(QUICKSTART / "worker.properties")
    unknown = [
        k for k in props if k not in WORKER_CONFIG_DEF.keys and not k.startswith("consumer.")
    ]
    assert unknown == []
    config = WorkerConfig.from_props(props)
    assert config["plugin.path"] == ["."]
    assert config.bootstrap_servers == "localhost:9092"


def test_the_plugin_path_holds_the_two_connectors(plugins: PluginRegistry) -> None:
    assert plugins.failures() == []
    assert plugins.load_class("TickSource", "Connector").__name__ == "TickSource"
    assert plugins.load_class("LineFileSink", "Connector").__name__ == "LineFileSink"


@pytest.mark.parametrize("file", CONNECTOR_FILES)
def test_the_connector_files_validate(file: str, plugins: PluginRegistry) -> None:
    name, config, _ = load_connector_file(QUICKSTART / file)
    assert name == config["name"]
    result = validate_connector_config(config, plugins, OverridePolicy("All"))
    assert result.error_messages() == []
    declared = set(plugins.load_class(config["connector.class"], "Connector")().config_def().keys)
    framework = {"name", "connector.class", "topics"}
    assert set(config) - framework <= declared, "keys the connector does not declare"


def test_the_example_files_are_the_ones_the_walkthrough_lists() -> None:
    walkthrough = (ROOT / "docs" / "walkthrough.md").read_text(encoding="utf-8")
    for path in sorted(QUICKSTART.iterdir()):
        if path.suffix in (".py", ".properties"):
            assert path.name in walkthrough, f"{path.name} is not in the walkthrough"
