"""Plugin discovery: plugin.path directories, entry points, failures, versions, the CLI."""

from __future__ import annotations

import importlib
import logging
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from connectrt import cli
from connectrt.api import SinkConnector, SourceConnector
from connectrt.api.converter import Converter, HeaderConverter
from connectrt.api.transform import Predicate, Transformation
from connectrt.runtime.plugins import registry as plugins
from connectrt.runtime.plugins.discovery import (
    ENTRY_POINT_GROUPS,
    PluginFailure,
    plugin_types_of,
)
from connectrt.runtime.plugins.registry import PluginDesc, PluginRegistry
from connectrt.runtime.secrets import providers as config_providers
from connectrt.runtime.secrets.providers import ConfigProvider

GOOD = '''
from collections.abc import Mapping
from typing import Any

from connectrt.api import ConfigDef, SourceConnector, Task
from connectrt.api.transform import Transformation
from connectors.file import FileStreamSinkConnector  # imported: not this module's plugin


class AcmeSourceConnector(SourceConnector):
    def version(self) -> str:
        return "1.2.3"

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


class AcmeMaskTransformation(Transformation):
    def configure(self, config: Mapping[str, Any]) -> None:
        pass

    def apply(self, record):
        return record


class AcmeNeedsArgsTransformation(AcmeMaskTransformation):
    def __init__(self, required: str) -> None:
        self.required = required

    def version(self) -> str:
        raise AssertionError("never instantiated")


class _PrivateTransformation(AcmeMaskTransformation):
    pass


class AcmeAbstractTransformation(Transformation):
    """Abstract (apply not implemented): not registered."""

    def configure(self, config: Mapping[str, Any]) -> None:
        pass


class NotAPlugin:
    pass
'''

BROKEN = """
raise ImportError("No module named 'acme_missing_dependency'")
"""

PACKAGE_INIT = """
from .conv import AcmeTextConverter

__all__ = ["AcmeTextConverter"]
"""

PACKAGE_CONV = """
from collections.abc import Mapping
from typing import Any

from connectrt.api.converter import Converter, HeaderConverter, SchemaAndValue


class AcmeTextConverter(Converter, HeaderConverter):
    VERSION_CALLS = 0

    def version(self) -> str:
        type(self).VERSION_CALLS += 1
        return "0.9"

    def configure(self, config: Mapping[str, Any], is_key: bool = False) -> None:
        pass

    def from_connect_data(self, topic, schema, value, headers=None):
        return None if value is None else str(value).encode()

    def to_connect_data(self, topic, data, headers=None):
        return SchemaAndValue(None, None if data is None else data.decode())

    def from_connect_header(self, topic, header_key, schema, value):
        return None if value is None else str(value).encode()

    def to_connect_header(self, topic, header_key, data):
        return SchemaAndValue(None, None if data is None else data.decode())
"""

MODULES = ("acme_disc_good", "acme_disc_broken", "acme_disc_pkg", "acme_disc_pkg.conv")


def _forget_modules(names: tuple[str, ...]) -> None:
    for name in names:
        sys.modules.pop(name, None)


@pytest.fixture
def plugin_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.setattr(sys, "path", list(sys.path))
    d = tmp_path / "plugins"
    d.mkdir()
    (d / "acme_disc_good.py").write_text(GOOD)
    (d / "acme_disc_broken.py").write_text(BROKEN)
    pkg = d / "acme_disc_pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text(PACKAGE_INIT)
    (pkg / "conv.py").write_text(PACKAGE_CONV)
    (d / "_acme_private.py").write_text("raise RuntimeError('private modules are not scanned')\n")
    (d / "json.py").write_text("raise RuntimeError('shadows the stdlib: never imported')\n")
    (d / "README.txt").write_text("not a module\n")
    _forget_modules(MODULES)
    yield d
    _forget_modules(MODULES)


@pytest.fixture
def fresh() -> PluginRegistry:
    return PluginRegistry()


def _failure(reg: PluginRegistry, name: str) -> PluginFailure:
    matches = [f for f in reg.failures() if f.name == name]
    assert len(matches) == 1, reg.failures()
    return matches[0]


# -- plugin.path -----------------------------------------------------------------------------


def test_directory_plugins_resolve_by_path_simple_name_and_alias(
    fresh: PluginRegistry, plugin_dir: Path
) -> None:
    fresh.discover([str(plugin_dir)])
    source = fresh.connector_class("acme_disc_good.AcmeSourceConnector")
    assert source.__name__ == "AcmeSourceConnector"
    assert issubclass(source, SourceConnector)
    assert fresh.connector_class("AcmeSourceConnector") is source
    assert fresh.connector_class("AcmeSource") is source
    desc = fresh.find("AcmeSource")
    assert desc is not None
    assert (desc.class_name, desc.type) == ("acme_disc_good.AcmeSourceConnector", "source")
    assert desc in fresh.plugins(["source"])

    transform = fresh.transform_class("acme_disc_good.AcmeMaskTransformation")
    assert issubclass(transform, Transformation)
    assert fresh.transform_class("AcmeMaskTransformation") is transform
    assert fresh.transform_class("AcmeMask") is transform
    found = fresh.find("AcmeMask")
    assert found is not None and found.type == "transformation"


def test_only_public_concrete_plugins_defined_in_the_module_are_registered(
    fresh: PluginRegistry, plugin_dir: Path
) -> None:
    fresh.discover([str(plugin_dir)])
    names = {p.class_name for p in fresh.plugins()}
    assert "acme_disc_good._PrivateTransformation" not in names
    assert "acme_disc_good.AcmeAbstractTransformation" not in names
    assert fresh.find("NotAPlugin") is None
    # FileStreamSinkConnector is imported by the module, not defined there.
    assert not any(n.startswith("acme_disc_good.FileStream") for n in names)
    sinks = fresh.plugins(["sink"])
    assert sorted(p.class_name for p in sinks) == [
        "io.confluent.connect.jdbc.JdbcSinkConnector",
        "io.confluent.connect.s3.S3SinkConnector",
        "org.apache.iceberg.connect.IcebergSinkConnector",
        "org.apache.kafka.connect.file.FileStreamSinkConnector",
    ]


def test_package_class_registered_for_each_kind(fresh: PluginRegistry, plugin_dir: Path) -> None:
    fresh.discover([str(plugin_dir)])
    path = "acme_disc_pkg.conv.AcmeTextConverter"
    kinds = sorted(p.type for p in fresh.plugins() if p.class_name == path)
    assert kinds == ["converter", "header_converter"]
    cls = fresh.load_class("AcmeText")
    assert issubclass(cls, Converter) and issubclass(cls, HeaderConverter)
    assert fresh.load_class("AcmeTextConverter") is cls
    assert fresh.load_class(path) is cls
    assert fresh.load_class("acme_disc_pkg.AcmeTextConverter") is cls  # the re-export


def test_broken_module_is_a_failure_not_an_error(
    fresh: PluginRegistry, plugin_dir: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="connectrt.runtime.plugins.discovery"):
        new = fresh.discover([str(plugin_dir)])
    broken = _failure(fresh, "acme_disc_broken")
    assert broken in new
    assert broken.error == "ImportError: No module named 'acme_missing_dependency'"
    assert broken.source == str(plugin_dir / "acme_disc_broken.py")
    assert "acme_disc_broken" not in sys.modules
    assert any(
        "acme_disc_broken" in r.getMessage() and "acme_missing_dependency" in r.getMessage()
        for r in caplog.records
        if r.levelno == logging.WARNING
    )
    # The good plugins of the same directory are there all the same.
    assert fresh.find("AcmeSource") is not None


def test_module_name_taken_by_another_module_is_a_failure(
    fresh: PluginRegistry, plugin_dir: Path
) -> None:
    import json

    fresh.discover([str(plugin_dir)])
    clash = _failure(fresh, "json")
    assert "already taken" in clash.error
    assert sys.modules["json"] is json
    # Private modules are skipped altogether.
    assert all(f.name != "_acme_private" for f in fresh.failures())


def test_syntax_error_gives_one_line_message(fresh: PluginRegistry, tmp_path: Path) -> None:
    d = tmp_path / "syntax"
    d.mkdir()
    (d / "acme_disc_syntax.py").write_text("def broken(:\n    pass\n")
    try:
        fresh.discover([str(d)])
    finally:
        sys.path.remove(str(d))
        sys.modules.pop("acme_disc_syntax", None)
    failure = _failure(fresh, "acme_disc_syntax")
    assert failure.error.startswith("SyntaxError: ")
    assert "\n" not in failure.error


def test_discover_is_idempotent(fresh: PluginRegistry, plugin_dir: Path) -> None:
    first = fresh.discover([str(plugin_dir)])
    count = len(fresh.plugins())
    failures = fresh.failures()
    assert fresh.discover([str(plugin_dir)]) == []
    fresh.add_plugin_path([str(plugin_dir), str(plugin_dir / ".")])
    assert len(fresh.plugins()) == count
    assert fresh.failures() == failures == first
    assert sys.path.count(str(plugin_dir)) == 1


def test_add_plugin_path_discovers(
    fresh: PluginRegistry, plugin_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fresh.add_plugin_path([str(plugin_dir), ""])
    assert sys.path[0] == str(plugin_dir)
    assert fresh.find("AcmeSource") is not None
    assert _failure(fresh, "acme_disc_broken")


def test_missing_directory_is_skipped(fresh: PluginRegistry, tmp_path: Path) -> None:
    missing = tmp_path / "nope"
    try:
        assert fresh.discover([str(missing)]) == []
    finally:
        sys.path.remove(str(missing))
    assert fresh.failures() == []


def test_process_registry_is_untouched(fresh: PluginRegistry, plugin_dir: Path) -> None:
    fresh.discover([str(plugin_dir)])
    assert plugins.registry.find("AcmeSource") is None


def test_plugin_types_of() -> None:
    from connectors.file import FileStreamSinkConnector, FileStreamSourceConnector
    from connectrt.converters.json import JsonConverter
    from connectrt.runtime.secrets.providers import FileConfigProvider

    assert plugin_types_of(FileStreamSourceConnector) == ["source"]
    assert plugin_types_of(FileStreamSinkConnector) == ["sink"]
    assert plugin_types_of(JsonConverter) == ["converter", "header_converter"]
    assert plugin_types_of(FileConfigProvider) == ["configprovider"]
    assert plugin_types_of(object) == []
    assert plugin_types_of("not a class") == []


# -- versions --------------------------------------------------------------------------------


def test_versions_are_cached_and_safe(fresh: PluginRegistry, plugin_dir: Path) -> None:
    fresh.discover([str(plugin_dir)])
    source = fresh.find("AcmeSource")
    assert source is not None and source.version() == "1.2.3"
    needs_args = fresh.find("AcmeNeedsArgs")
    assert needs_args is not None
    assert needs_args.version() is None  # constructor needs an argument: not called
    mask = fresh.find("AcmeMask")
    assert mask is not None and mask.version() is None  # "unknown"
    conv = [p for p in fresh.plugins() if p.class_name.endswith("AcmeTextConverter")]
    cls = conv[0].load()
    for desc in conv * 3:
        assert desc.version() == "0.9"
    assert cls.VERSION_CALLS == 1  # type: ignore[attr-defined]


def test_version_of_unloadable_plugin_is_none() -> None:
    assert PluginDesc("x", "acme_no_such_module_xyz.Thing", "source").version() is None


# -- config providers ------------------------------------------------------------------------


def test_builtin_config_providers_are_registered_but_not_listed_by_default(
    fresh: PluginRegistry,
) -> None:
    desc = fresh.find("FileConfigProvider")
    assert desc is not None
    assert desc.type == "configprovider"
    assert desc.class_name == "org.apache.kafka.common.config.provider.FileConfigProvider"
    assert desc.load() is config_providers.FileConfigProvider
    assert fresh.load_class("EnvVar") is config_providers.EnvVarConfigProvider
    assert desc not in fresh.plugins()
    assert desc in fresh.plugins(["configprovider"])
    assert {p.type for p in fresh.plugins()} <= set(plugins.PUBLIC_PLUGIN_TYPES)


# -- entry points ----------------------------------------------------------------------------

EP_MODULE = """
from collections.abc import Mapping
from typing import Any

from connectrt.api import ConfigDef, SinkConnector, Task
from connectrt.api.converter import Converter, HeaderConverter, SchemaAndValue
from connectrt.api.transform import Predicate, Transformation
from connectrt.runtime.secrets.providers import ConfigData, ConfigProvider


class EpSinkConnector(SinkConnector):
    def version(self) -> str:
        return "3.1"

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


class EpConverter(Converter):
    def configure(self, config, is_key):
        pass

    def from_connect_data(self, topic, schema, value, headers=None):
        return None

    def to_connect_data(self, topic, data, headers=None):
        return SchemaAndValue(None, None)


class EpHeaderConverter(HeaderConverter):
    def configure(self, config):
        pass

    def from_connect_header(self, topic, header_key, schema, value):
        return None

    def to_connect_header(self, topic, header_key, data):
        return SchemaAndValue(None, None)


class EpTransformation(Transformation):
    def configure(self, config: Mapping[str, Any]) -> None:
        pass

    def apply(self, record):
        return record


class EpPredicate(Predicate):
    def configure(self, config: Mapping[str, Any]) -> None:
        pass

    def test(self, record) -> bool:
        return True


class EpVaultConfigProvider(ConfigProvider):
    def configure(self, params):
        pass

    def get(self, path, keys=None):
        return ConfigData({"k": "v"})
"""

ENTRY_POINTS = """
[connectrt.connectors]
ep-sink = acme_ep_mod:EpSinkConnector
ep-broken = acme_ep_missing_mod:Thing
ep-not-a-connector = acme_ep_mod:EpConverter

[connectrt.converters]
ep-conv = acme_ep_mod:EpConverter

[connectrt.header_converters]
ep-headers = acme_ep_mod:EpHeaderConverter

[connectrt.transforms]
ep-transform = acme_ep_mod:EpTransformation

[connectrt.predicates]
ep-predicate = acme_ep_mod:EpPredicate

[connectrt.config_providers]
vault = acme_ep_mod:EpVaultConfigProvider
"""


@pytest.fixture
def entry_point_dist(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    site = tmp_path / "site"
    info = site / "acme_ep-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: acme-ep\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(textwrap.dedent(ENTRY_POINTS))
    (site / "acme_ep_mod.py").write_text(EP_MODULE)
    monkeypatch.setattr(sys, "path", [str(site), *sys.path])
    importlib.invalidate_caches()
    sys.modules.pop("acme_ep_mod", None)
    yield site
    sys.modules.pop("acme_ep_mod", None)
    importlib.invalidate_caches()


@pytest.mark.parametrize(
    ("ep_name", "class_name", "kind", "base"),
    [
        ("ep-sink", "EpSinkConnector", "sink", SinkConnector),
        ("ep-conv", "EpConverter", "converter", Converter),
        ("ep-headers", "EpHeaderConverter", "header_converter", HeaderConverter),
        ("ep-transform", "EpTransformation", "transformation", Transformation),
        ("ep-predicate", "EpPredicate", "predicate", Predicate),
        ("vault", "EpVaultConfigProvider", "configprovider", ConfigProvider),
    ],
)
def test_entry_point_groups(
    fresh: PluginRegistry,
    entry_point_dist: Path,
    ep_name: str,
    class_name: str,
    kind: str,
    base: type,
) -> None:
    fresh.discover()
    desc = fresh.find(ep_name)
    assert desc is not None
    assert desc.type == kind
    assert desc.class_name == f"acme_ep_mod.{class_name}"
    cls = desc.load()
    assert cls.__name__ == class_name and issubclass(cls, base)
    for name in (f"acme_ep_mod.{class_name}", f"acme_ep_mod:{class_name}", class_name):
        assert fresh.load_class(name) is cls
    assert [p for p in fresh.plugins([kind]) if p.class_name == desc.class_name] == [desc]


def test_entry_point_groups_cover_every_kind() -> None:
    assert set(ENTRY_POINT_GROUPS) == {
        "connectrt.connectors",
        "connectrt.converters",
        "connectrt.header_converters",
        "connectrt.transforms",
        "connectrt.predicates",
        "connectrt.config_providers",
    }


def test_entry_point_connector_type_and_version(
    fresh: PluginRegistry, entry_point_dist: Path
) -> None:
    fresh.discover()
    cls = fresh.connector_class("ep-sink")
    assert fresh.connector_class("EpSink") is cls
    desc = fresh.find("ep-sink")
    assert desc is not None and desc.version() == "3.1"


def test_entry_point_failures(fresh: PluginRegistry, entry_point_dist: Path) -> None:
    fresh.discover()
    broken = _failure(fresh, "acme_ep_missing_mod:Thing")
    assert broken.source == "entry point connectrt.connectors:ep-broken"
    assert broken.error == "ModuleNotFoundError: No module named 'acme_ep_missing_mod'"
    wrong = _failure(fresh, "acme_ep_mod:EpConverter")
    assert wrong.source == "entry point connectrt.connectors:ep-not-a-connector"
    assert "is not a SourceConnector or SinkConnector" in wrong.error
    assert fresh.find("ep-broken") is None
    assert fresh.find("ep-not-a-connector") is None


def test_entry_points_scanned_once(fresh: PluginRegistry, entry_point_dist: Path) -> None:
    fresh.discover()
    count = len(fresh.plugins(["source", "sink", "converter", "configprovider"]))
    fresh.discover()
    fresh.add_plugin_path([])
    assert len(fresh.plugins(["source", "sink", "converter", "configprovider"])) == count
    assert len(fresh.failures()) == 2


def test_process_registry_publishes_config_providers(
    entry_point_dist: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    aliases = dict(config_providers.CONFIG_PROVIDER_ALIASES)
    monkeypatch.setattr(config_providers, "CONFIG_PROVIDER_ALIASES", aliases)
    PluginRegistry().discover()  # a throw-away registry publishes nothing
    assert "vault" not in aliases
    PluginRegistry(publish_config_providers=True).discover()
    cls = config_providers.config_provider_class("vault")
    assert cls.__name__ == "EpVaultConfigProvider"
    assert config_providers.config_provider_class("EpVault") is cls
    assert config_providers.config_provider_class("acme_ep_mod.EpVaultConfigProvider") is cls


# -- CLI -------------------------------------------------------------------------------------


def test_cli_plugins_lists_discovered_plugins_and_failures(
    plugin_dir: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(plugins, "registry", PluginRegistry())
    assert cli.main(["plugins", "--plugin-path", str(plugin_dir)]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    source_line = next(line for line in lines if "acme_disc_good.AcmeSourceConnector" in line)
    assert source_line.split() == ["source", "acme_disc_good.AcmeSourceConnector", "1.2.3"]
    mask_line = next(line for line in lines if "acme_disc_good.AcmeMaskTransformation" in line)
    assert mask_line.split() == ["transformation", "acme_disc_good.AcmeMaskTransformation"]
    assert any(
        line.split()[:2] == ["header_converter", "acme_disc_pkg.conv.AcmeTextConverter"]
        for line in lines
    )
    assert any("org.apache.kafka.connect.file.FileStreamSourceConnector" in line for line in lines)
    assert any(line.startswith("configprovider ") for line in lines)
    start = lines.index(next(line for line in lines if line.startswith("failed to load")))
    failed = lines[start:]
    assert all("AcmeSource" not in line for line in failed)
    broken = next(line for line in failed if "acme_disc_broken" in line)
    assert "ImportError: No module named 'acme_missing_dependency'" in broken
    assert any("json" in line and "already taken" in line for line in failed)


def test_cli_plugins_without_failures_has_no_failure_section(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(plugins, "registry", PluginRegistry())
    assert cli.main(["plugins"]) == 0
    out = capsys.readouterr().out
    assert "org.apache.kafka.connect.json.JsonConverter" in out
    assert "failed to load" not in out
