"""KIP-891 through real HTTP: two versions of one plugin package installed side by side.

The worker's ``plugin.path`` holds ``vplug-1.0.0/`` and ``vplug-2.0.0/``, the same package at two
versions (see ``tests/plugins/versioned.py``), each with a connector, a converter, a
transformation and a predicate that mark what they touch with their version. Each
``*.plugin.version`` key picks a version (exact or a range); the records show which code ran;
status and ``/connector-plugins`` show the versions; an unknown or malformed version is refused
per field at validate and with 400 at create.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from connectrt.broker import EmbeddedBroker
from connectrt.testing.harness import create_topic, read_topic
from connectrt.testing.rest import RestWorker, running_rest_worker, wait_for
from tests.plugins.versioned import install_versions

pytestmark = pytest.mark.integration

PACKAGE = f"vplug_{uuid.uuid4().hex[:8]}"  # a package name no other test (or run) uses
SOURCE = f"{PACKAGE}.VersionedSource"


@pytest.fixture(scope="module")
def worker(
    broker: EmbeddedBroker, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[RestWorker]:
    plugin_path = tmp_path_factory.mktemp("plugins")
    install_versions(plugin_path, PACKAGE, ["1.0.0", "2.0.0"])
    with running_rest_worker(
        broker.bootstrap_servers, **{"plugin.path": str(plugin_path)}
    ) as running:
        yield running


@pytest.fixture(autouse=True)
def remove_connectors_after_test(worker: RestWorker) -> Iterator[None]:
    yield
    worker.delete_connectors()


def _config(topic: str, **extra: str) -> dict[str, str]:
    return {
        "connector.class": SOURCE,
        "topic": topic,
        "value.converter": "org.apache.kafka.connect.storage.StringConverter",
        **extra,
    }


def _values(bootstrap: str, topic: str, count: int) -> list[str]:
    def read() -> list[str]:
        return [v.decode() for r in read_topic(bootstrap, topic).values() for _, v in r]

    wait_for(lambda: len(read()) >= count, 60, f"{count} records on {topic}")
    return read()


def _running(worker: RestWorker, name: str) -> dict[str, Any]:
    def ok() -> bool:
        status = worker.http.get(f"/connectors/{name}/status").json()
        return status["connector"]["state"] == "RUNNING" and [
            t["state"] for t in status["tasks"]
        ] == ["RUNNING"]

    wait_for(ok, 60, f"{name} and its task RUNNING")
    return dict(worker.http.get(f"/connectors/{name}/status").json())


def test_connector_plugins_lists_every_installed_version(worker: RestWorker):
    listed = worker.http.get("/connector-plugins").json()
    mine = [p for p in listed if p["class"] == SOURCE]
    assert mine == [
        {"class": SOURCE, "type": "source", "version": "1.0.0"},
        {"class": SOURCE, "type": "source", "version": "2.0.0"},
    ]
    everything = worker.http.get("/connector-plugins?connectorsOnly=false").json()
    assert [
        (p["type"], p["version"]) for p in everything if p["class"] == f"{PACKAGE}.MarkConverter"
    ] == [("converter", "1.0.0"), ("converter", "2.0.0")]
    for v in ("1.0.0", "2.0.0"):
        r = worker.http.get(f"/connector-plugins/{SOURCE}/config", params={"version": v})
        assert r.status_code == 200
        keys = {k["name"]: k for k in r.json()}
        assert f"only.in.{v[0]}" in keys
        assert keys["connector.plugin.version"]["default_value"] == v
    newest = {k["name"] for k in worker.http.get(f"/connector-plugins/{SOURCE}/config").json()}
    assert "only.in.2" in newest and "only.in.1" not in newest
    missing = worker.http.get(f"/connector-plugins/{SOURCE}/config", params={"version": "9.0"})
    assert missing.status_code == 404
    assert missing.json()["message"] == (
        f"Plugin {SOURCE} not found that matches the version range [9.0], available versions: "
        "[1.0.0, 2.0.0]"
    )
    bad = worker.http.get(f"/connector-plugins/{SOURCE}/config", params={"version": "[1.0"})
    assert (bad.status_code, bad.json()["message"]) == (400, "Unbounded range: [1.0")


def test_each_version_key_picks_the_code_that_runs(
    worker: RestWorker, broker: EmbeddedBroker, unique_name
):
    topic, name = unique_name("t"), unique_name("v1")
    create_topic(broker.bootstrap_servers, topic)
    config = _config(
        topic,
        **{
            "connector.plugin.version": "1.0.0",
            "value.converter": f"{PACKAGE}.MarkConverter",
            "value.converter.plugin.version": "[2.0,3.0)",
            "transforms": "mark",
            "transforms.mark.type": f"{PACKAGE}.MarkTransform",
            "transforms.mark.plugin.version": "(,2.0)",
            "transforms.mark.predicate": "always",
            "predicates": "always",
            "predicates.always.type": f"{PACKAGE}.AlwaysPredicate",
            "predicates.always.plugin.version": "latest",
        },
    )
    r = worker.http.post("/connectors", json={"name": name, "config": config})
    assert r.status_code == 201, r.text
    status = _running(worker, name)
    assert status["connector"]["version"] == "1.0.0"
    assert status["tasks"][0]["version"] == "1.0.0"
    assert worker.http.get(f"/connectors/{name}/tasks/0/status").json()["version"] == "1.0.0"
    assert (
        _values(broker.bootstrap_servers, topic, 3)
        == ["source=1.0.0|transform=1.0.0|converter=2.0.0"] * 3
    )


def test_without_a_version_the_newest_runs(worker: RestWorker, broker: EmbeddedBroker, unique_name):
    topic, name = unique_name("t"), unique_name("latest")
    create_topic(broker.bootstrap_servers, topic)
    r = worker.http.post("/connectors", json={"name": name, "config": _config(topic)})
    assert r.status_code == 201, r.text
    assert _running(worker, name)["connector"]["version"] == "2.0.0"
    assert _values(broker.bootstrap_servers, topic, 3) == ["source=2.0.0"] * 3
    # A bundled plugin reports connectrt's version, a plugin without one leaves it out.
    plugins = worker.http.get("/connector-plugins").json()
    assert all("version" in p for p in plugins if p["class"].startswith("org.apache.kafka"))


def test_an_unknown_version_is_refused_per_field_and_with_400(worker: RestWorker, unique_name):
    name = unique_name("bad")
    wanted = f"{PACKAGE}.MarkConverter"
    config = {
        **_config("t"),
        "name": name,
        "connector.plugin.version": "3.0.0",
        "value.converter": wanted,
        "value.converter.plugin.version": "[5,)",
        "transforms": "mark",
        "transforms.mark.type": f"{PACKAGE}.MarkTransform",
        "transforms.mark.plugin.version": "0.9",
    }
    r = worker.http.put("/connector-plugins/VersionedSource/config/validate", json=config)
    assert r.status_code == 200, r.text
    errors = {c["value"]["name"]: c["value"]["errors"] for c in r.json()["configs"]}
    connector_error = (
        f"Plugin {SOURCE} not found that matches the version range [3.0.0], available "
        "versions: [1.0.0, 2.0.0]"
    )
    converter_error = (
        f"Plugin {wanted} not found that matches the version range [5,), available versions: "
        "[1.0.0, 2.0.0]"
    )
    assert errors["connector.plugin.version"] == [connector_error]
    assert connector_error in errors["connector.class"]
    assert errors["value.converter.plugin.version"] == [converter_error]
    assert converter_error in errors["value.converter"]
    assert errors["transforms.mark.plugin.version"] == [
        "Invalid value 0.9 for configuration transforms.mark.plugin.version: Plugin "
        f"{PACKAGE}.MarkTransform not found that matches the version range [0.9], available "
        "versions: [1.0.0, 2.0.0]"
    ]
    recommended = {
        c["value"]["name"]: c["value"]["recommended_values"] for c in r.json()["configs"]
    }
    assert recommended["connector.plugin.version"] == ["1.0.0", "2.0.0"]

    created = worker.http.post("/connectors", json={"name": name, "config": config})
    assert created.status_code == 400
    assert connector_error in created.json()["message"]
    assert worker.http.get(f"/connectors/{name}").status_code == 404


def test_a_malformed_version_is_refused(worker: RestWorker, unique_name):
    name = unique_name("bad")
    config = {**_config("t"), "connector.plugin.version": "[1.0,0.5]"}
    r = worker.http.post("/connectors", json={"name": name, "config": config})
    assert r.status_code == 400
    assert (
        "Invalid value [1.0,0.5] for configuration connector.plugin.version: Range defies "
        "version ordering: [1.0,0.5]"
    ) in r.json()["message"]
    assert worker.http.get(f"/connectors/{name}").status_code == 404
