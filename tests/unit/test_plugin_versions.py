"""KIP-891: version ordering and ranges, side-by-side plugin locations, and the version keys."""

from __future__ import annotations

import sys
import uuid
from pathlib import Path

import pytest

from connectrt.runtime.clients.settings import OverridePolicy
from connectrt.runtime.config.connector import validate_connector_config
from connectrt.runtime.config.worker import WorkerConfig
from connectrt.runtime.executors.runner_factory import create_converter
from connectrt.runtime.plugins.locations import is_location, load_location
from connectrt.runtime.plugins.registry import PluginRegistry, VersionedPluginLoadingError
from connectrt.runtime.plugins.version_config import worker_converters
from connectrt.runtime.plugins.versions import (
    InvalidVersionSpec,
    compare_versions,
    sort_versions,
    version_requirement,
)
from tests.plugins.versioned import install_versions


@pytest.mark.parametrize(
    ("older", "newer"),
    [
        ("1.0", "1.0.1"),
        ("1.9", "1.10"),
        ("1.0-alpha", "1.0-beta"),
        ("1.0-beta2", "1.0-rc1"),
        ("1.0-rc1", "1.0"),
        ("1.0-SNAPSHOT", "1.0"),
        ("1.0", "1.0-sp1"),
        ("1.0-sp1", "1.0.1"),
        ("2.0.0rc1", "2.0.0"),
    ],
)
def test_version_ordering(older: str, newer: str):
    assert compare_versions(older, newer) == -1
    assert compare_versions(newer, older) == 1


def test_trailing_zeros_and_release_qualifiers_do_not_count():
    assert compare_versions("1", "1.0.0") == 0
    assert compare_versions("1.0-ga", "1") == 0
    assert sort_versions(["2.0.0", "1.10.0", "1.2.0", "1.2.0-rc1"]) == [
        "1.2.0-rc1",
        "1.2.0",
        "1.10.0",
        "2.0.0",
    ]


@pytest.mark.parametrize(
    ("spec", "inside", "outside"),
    [
        ("1.2.0", ["1.2", "1.2.0"], ["1.2.1", "1.1"]),  # a bare version is exactly that one
        ("[1.0,2.0)", ["1.0", "1.9.9"], ["0.9", "2.0"]),
        ("(1.0,2.0]", ["1.0.1", "2.0"], ["1.0", "2.0.1"]),
        ("(,1.0]", ["0.1", "1.0"], ["1.0.1"]),
        ("[1.5,)", ["1.5", "9"], ["1.4"]),
        ("(,1.0],[1.2,)", ["1.0", "1.2", "3"], ["1.1"]),
    ],
)
def test_ranges(spec: str, inside: list[str], outside: list[str]):
    requirement = version_requirement(spec)
    assert requirement is not None
    assert all(requirement.contains(v) for v in inside)
    assert not any(requirement.contains(v) for v in outside)
    assert not requirement.contains("undefined") and not requirement.contains(None)


def test_latest_and_absent_mean_no_requirement():
    assert version_requirement(None) is None
    assert version_requirement("latest") is None
    assert str(version_requirement("1.2")) == "[1.2]"
    assert str(version_requirement(" (,1.0] , [1.2,) ")) == "(,1.0],[1.2,)"


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("[1.0,2.0", "Unbounded range: [1.0,2.0"),
        ("(1.0)", "Single version must be surrounded by []: (1.0)"),
        ("[1.0,1.0)", "Range cannot have identical boundaries: [1.0,1.0)"),
        ("[2.0,1.0]", "Range defies version ordering: [2.0,1.0]"),
        ("[1.0,2.0),3.0", "Only fully-qualified sets allowed in multiple set scenario: "),
        ("[1.0,2.0],[1.5,3.0]", "Ranges overlap: [1.0,2.0],[1.5,3.0]"),
        ("1.0,2.0", "Invalid version range: 1.0,2.0"),
        ("  ", "Invalid version range"),
    ],
)
def test_invalid_specs_use_mavens_messages(spec: str, message: str):
    with pytest.raises(InvalidVersionSpec) as e:
        version_requirement(spec)
    assert str(e.value).startswith(message)


@pytest.fixture
def versioned(tmp_path: Path) -> tuple[PluginRegistry, str]:
    package = f"vp_{uuid.uuid4().hex[:8]}"
    install_versions(tmp_path, package, ["1.0.0", "1.5.0", "2.0.0"])
    (tmp_path / "_private").mkdir()  # not a location: private
    registry = PluginRegistry()
    assert registry.discover([str(tmp_path)]) == []
    return registry, package


def test_locations_load_the_same_package_side_by_side(versioned: tuple[PluginRegistry, str]):
    registry, package = versioned
    assert package not in sys.modules  # each location's modules were taken out again
    found = registry.versions(f"{package}.VersionedSource", "Connector")
    assert [p.version() for p in found] == ["1.0.0", "1.5.0", "2.0.0"]
    assert len({p.load() for p in found}) == 3  # three distinct classes of one name
    assert registry.connector_class("VersionedSource")().version() == "2.0.0"  # newest
    assert registry.connector_class("VersionedSource", "[1.0,2.0)")().version() == "1.5.0"
    assert registry.connector_class(f"{package}.VersionedSource", "1.0.0")().version() == "1.0.0"
    task = registry.connector_class("VersionedSource", "1.0.0")().task_class()
    assert task().version() == "1.0.0"  # the task comes from the connector's location


def test_no_matching_version_lists_the_available_ones(versioned: tuple[PluginRegistry, str]):
    registry, package = versioned
    with pytest.raises(VersionedPluginLoadingError) as e:
        registry.load_class(f"{package}.MarkConverter", "Converter", "(2.0,)")
    assert str(e.value) == (
        f"Plugin {package}.MarkConverter not found that matches the version range (2.0,), "
        "available versions: [1.0.0, 1.5.0, 2.0.0]"
    )
    assert e.value.available == ["1.0.0", "1.5.0", "2.0.0"]


def test_a_plain_directory_or_package_is_not_a_location(tmp_path: Path):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "empty").mkdir()
    (tmp_path / "loc").mkdir()
    (tmp_path / "loc" / "mod.py").write_text("X = 1\n")
    assert not is_location(str(tmp_path / "pkg"))
    assert not is_location(str(tmp_path / "empty"))
    assert is_location(str(tmp_path / "loc"))


def test_loading_a_location_restores_modules_of_the_same_name(tmp_path: Path):
    name = f"clash_{uuid.uuid4().hex[:8]}"
    (tmp_path / "loc").mkdir()
    (tmp_path / "loc" / f"{name}.py").write_text("WHERE = 'location'\n")
    (tmp_path / "loc" / "broken.py").write_text("raise RuntimeError('no')\n")
    already = type(sys)(name)
    sys.modules[name] = already
    try:
        modules, failures = load_location(str(tmp_path / "loc"))
        assert modules[name].WHERE == "location"
        assert sys.modules[name] is already
        assert isinstance(failures["broken"], RuntimeError)
        assert str(tmp_path / "loc") not in sys.path
    finally:
        sys.modules.pop(name, None)


def test_validation_reports_versions_per_field(versioned: tuple[PluginRegistry, str]):
    registry, package = versioned
    config = {
        "name": "c",
        "connector.class": "VersionedSource",
        "connector.plugin.version": "[1.0,1.5]",
        "topic": "t",
        "key.converter.plugin.version": "3",  # for the worker's converter
    }
    wc = WorkerConfig.from_props({"key.converter": f"{package}.MarkConverter"})
    result = validate_connector_config(
        config, registry, OverridePolicy("All"), worker_converters(wc)
    )
    values = result.values
    assert values["connector.plugin.version"].errors == []
    assert values["connector.plugin.version"].recommended_values == ["1.0.0", "1.5.0", "2.0.0"]
    assert values["key.converter.plugin.version"].errors == [
        f"Plugin {package}.MarkConverter not found that matches the version range [3], "
        "available versions: [1.0.0, 1.5.0, 2.0.0]"
    ]
    assert values["key.converter"].errors == []  # the connector did not name it
    bad = validate_connector_config(
        {**config, "connector.plugin.version": "[1"}, registry, OverridePolicy("All")
    )
    assert bad.values["connector.plugin.version"].errors == [
        "Invalid value [1 for configuration connector.plugin.version: Unbounded range: [1"
    ]


def test_converters_follow_the_connector_then_the_worker_version(
    versioned: tuple[PluginRegistry, str],
):
    registry, package = versioned
    converter = f"{package}.MarkConverter"
    worker = (converter, {"plugin.version": "1.0.0"})  # the worker's key.converter.* settings

    def made(config: dict[str, str]) -> str:
        return str(create_converter(registry, config, "key", lambda: worker).version())

    assert made({}) == "1.0.0"  # the worker's converter at the worker's version
    assert made({"key.converter.plugin.version": "1.5.0"}) == "1.5.0"
    assert made({"key.converter": converter}) == "2.0.0"  # its own converter: the newest
    assert made({"key.converter": converter, "key.converter.plugin.version": "(,2)"}) == "1.5.0"
