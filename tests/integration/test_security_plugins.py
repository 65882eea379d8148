"""Only real plugins are loaded, over real HTTP against a running worker (issue 27, attacks 2
and 9).

The worker runs with the default plugin settings (``plugin.packages`` empty; its
``plugin.path`` a temporary directory; config providers on). A canary package with an import
side effect (it writes a marker file) sits on ``sys.path`` without being a plugin. Every REST
and console entry point that names a class is tried with it: the canary is never imported,
and each answers as Kafka Connect would (400 for a config naming an unknown class, 404 for an
unknown plugin). The FileStreamSink-to-``plugin.path`` chain is refused at both steps, and a
config provider reference in ``connector.class`` is refused with the value as written.
"""

from __future__ import annotations

import os
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import pytest

from connectrt.broker import EmbeddedBroker
from connectrt.testing.rest import RestWorker, running_rest_worker, start_rest_worker, wait_for

pytestmark = pytest.mark.integration

CANARY_PACKAGE = f"sec_canary_{uuid.uuid4().hex[:8]}"
CANARY = f"{CANARY_PACKAGE}.canary"

CANARY_SOURCE = """
import pathlib
pathlib.Path({marker!r}).write_text("imported")
from connectrt.api import ConfigDef, Converter, SinkConnector, Transformation

class Thing:
    pass

class CanarySink(SinkConnector):
    def start(self, config): pass
    def stop(self): pass
    def task_class(self): raise NotImplementedError
    def task_configs(self, max_tasks): return []
    def config_def(self): return ConfigDef()
"""


class Canary:
    """The canary package on ``sys.path`` and the marker its import would write."""

    def __init__(self, root: Path) -> None:
        self.marker = root / "canary-imported.marker"
        package = root / "site" / CANARY_PACKAGE
        package.mkdir(parents=True)
        (package / "__init__.py").write_text("")
        (package / "canary.py").write_text(CANARY_SOURCE.format(marker=str(self.marker)))
        sys.path.insert(0, str(root / "site"))
        self.site = str(root / "site")

    def assert_not_imported(self, what: str) -> None:
        assert not self.marker.exists(), f"{what} imported the canary module"
        assert CANARY not in sys.modules and CANARY_PACKAGE not in sys.modules, what

    def remove(self) -> None:
        sys.path.remove(self.site)
        for name in [m for m in sys.modules if m.startswith(CANARY_PACKAGE)]:
            del sys.modules[name]


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("security-plugins")


@pytest.fixture(scope="module")
def canary(root: Path) -> Iterator[Canary]:
    planted = Canary(root)
    try:
        yield planted
    finally:
        planted.remove()


@pytest.fixture(scope="module")
def plugin_path(root: Path) -> Path:
    path = root / "plugins"
    path.mkdir()
    return path


@pytest.fixture(scope="module")
def worker(broker: EmbeddedBroker, root: Path, plugin_path: Path) -> Iterator[RestWorker]:
    os.environ["CONNECTRT_SEC_PLUGINS_SECRET"] = f"secret{uuid.uuid4().hex}"
    with running_rest_worker(
        broker.bootstrap_servers,
        **{
            "plugin.path": str(plugin_path),
            "plugin.packages": "",  # the default: only discovered plugins
            "file.connectors.allowed.dirs": str(root),
            "config.providers": "env,file",
            "config.providers.env.class": (
                "org.apache.kafka.common.config.provider.EnvVarConfigProvider"
            ),
            "config.providers.file.class": (
                "org.apache.kafka.common.config.provider.FileConfigProvider"
            ),
        },
    ) as running:
        yield running
        os.environ.pop("CONNECTRT_SEC_PLUGINS_SECRET", None)


@pytest.fixture(autouse=True)
def remove_connectors_after_test(worker: RestWorker) -> Iterator[None]:
    yield
    worker.delete_connectors()


def sink_config(**extra: str) -> dict[str, str]:
    return {"connector.class": "FileStreamSink", "topics": "sec-plugins", **extra}


CLASS_KEYS: list[tuple[str, dict[str, str]]] = [
    ("connector.class", {"connector.class": f"{CANARY}.CanarySink"}),
    ("key.converter", {"key.converter": f"{CANARY}.Thing"}),
    ("value.converter", {"value.converter": f"{CANARY}:Thing"}),
    ("header.converter", {"header.converter": f"{CANARY}.Thing"}),
    ("transforms.t.type", {"transforms": "t", "transforms.t.type": f"{CANARY}.Thing"}),
    (
        "predicates.p.type",
        {
            "transforms": "f",
            "transforms.f.type": "org.apache.kafka.connect.transforms.Filter",
            "transforms.f.predicate": "p",
            "predicates": "p",
            "predicates.p.type": f"{CANARY}.Thing",
        },
    ),
]


@pytest.mark.parametrize(("key", "extra"), CLASS_KEYS, ids=[k for k, _ in CLASS_KEYS])
def test_create_update_and_validate_never_import_a_class_that_is_no_plugin(
    worker: RestWorker, canary: Canary, key: str, extra: dict[str, str]
) -> None:
    http = worker.http
    name = f"canary-{uuid.uuid4().hex[:6]}"
    config = sink_config(**extra)

    created = http.post("/connectors", json={"name": name, "config": config})
    assert created.status_code == 400, created.text
    assert config[key] in created.json()["message"]  # the class as written
    canary.assert_not_imported(f"POST /connectors ({key})")

    updated = http.put(f"/connectors/{name}/config", json=config)
    assert updated.status_code == 400, updated.text
    canary.assert_not_imported(f"PUT /connectors/{{c}}/config ({key})")

    validated = http.put("/connector-plugins/FileStreamSink/config/validate", json=config)
    if key == "connector.class":  # the body names another connector than the path
        assert validated.status_code == 400, validated.text
    else:
        assert validated.status_code == 200, validated.text
        errors = {
            c["value"]["name"]: c["value"]["errors"]
            for c in validated.json()["configs"]
            if c["value"]["errors"]
        }
        assert key in errors, errors
    canary.assert_not_imported(f"PUT .../config/validate ({key})")
    assert http.get("/connectors").json() == []


def test_plugin_routes_and_console_pages_never_import_a_class_that_is_no_plugin(
    worker: RestWorker, canary: Canary
) -> None:
    http = worker.http
    plugin = f"{CANARY}.CanarySink"

    described = http.get(f"/connector-plugins/{quote(plugin)}/config")
    assert described.status_code == 404, described.text
    canary.assert_not_imported("GET /connector-plugins/{name}/config")

    validated = http.put(
        f"/connector-plugins/{quote(plugin)}/config/validate",
        json={"connector.class": plugin, "topics": "t"},
    )
    assert validated.status_code in (400, 404), validated.text
    canary.assert_not_imported("PUT /connector-plugins/{canary}/config/validate")

    new = http.get("/ui/new", params={"plugin": plugin})
    assert new.status_code == 400, new.text
    canary.assert_not_imported("GET /ui/new?plugin=")


def test_the_edit_page_of_a_stored_config_never_imports_a_class_that_is_no_plugin(
    broker: EmbeddedBroker, worker: RestWorker, canary: Canary
) -> None:
    """A config that reached the config topic without today's checks (written by an older
    worker): after a restart, the console's Edit page validates it without importing
    anything."""
    name = f"stored-{uuid.uuid4().hex[:6]}"
    stored = sink_config(
        name=name,
        transforms="t",
        **{"transforms.t.type": f"{CANARY}.Thing", "value.converter": f"{CANARY}.Thing"},
    )
    props = {**worker.props, "group.id": f"edit-{name}"}
    for key in ("config.storage.topic", "status.storage.topic", "offset.storage.topic"):
        props[key] = f"{props[key]}-{name}"
    older = start_rest_worker(broker.bootstrap_servers, props)
    try:
        older.process.herder.config_store.put_connector_config(name, stored)
    finally:
        older.stop()
    restarted = start_rest_worker(broker.bootstrap_servers, props)
    try:
        wait_for(
            lambda: name in restarted.http.get("/connectors").json(), 60, f"{name} to be listed"
        )
        page = restarted.http.get(f"/ui/connectors/{name}/edit")
        assert page.status_code == 200, page.text
        assert f"{CANARY}.Thing" in page.text  # shown as stored, for the operator to fix
        canary.assert_not_imported("GET /ui/connectors/{name}/edit")
        canary.assert_not_imported("starting a stored connector")
    finally:
        restarted.delete_connectors()
        restarted.stop()


@pytest.mark.parametrize("bogus", ["no.such.Converter", "NoSuchConverter"])
@pytest.mark.parametrize("key", ["key.converter", "value.converter", "header.converter"])
def test_an_unknown_converter_is_a_400_at_create(worker: RestWorker, key: str, bogus: str) -> None:
    response = worker.http.post(
        "/connectors", json={"name": "unknown-converter", "config": sink_config(**{key: bogus})}
    )
    assert response.status_code == 400, response.text
    assert (
        f"Invalid value {bogus} for configuration {key}: Class {bogus} could not be found."
        in response.json()["message"]
    )


def test_an_unknown_transform_or_predicate_is_a_400_at_create(worker: RestWorker) -> None:
    for extra in (
        {"transforms": "t", "transforms.t.type": "com.example.NoSuchTransform"},
        {
            "transforms": "f",
            "transforms.f.type": "org.apache.kafka.connect.transforms.Filter",
            "transforms.f.predicate": "p",
            "predicates": "p",
            "predicates.p.type": "com.example.NoSuchPredicate",
        },
    ):
        response = worker.http.post(
            "/connectors", json={"name": "unknown-smt", "config": sink_config(**extra)}
        )
        assert response.status_code == 400, response.text
        assert "com.example.NoSuch" in response.json()["message"]
    assert worker.http.get("/connectors").json() == []


@pytest.mark.parametrize(
    "reference", ["${env:HOME}", "${env:CONNECTRT_SEC_PLUGINS_SECRET}", "${file:/etc/passwd:root}"]
)
@pytest.mark.parametrize("key", ["connector.class", "value.converter", "transforms.t.type"])
def test_a_provider_reference_in_a_class_key_is_refused_as_written(
    worker: RestWorker, reference: str, key: str
) -> None:
    config = sink_config(transforms="t", **{"transforms.t.type": "Filter"})
    config[key] = reference
    secret = os.environ["CONNECTRT_SEC_PLUGINS_SECRET"]
    home = os.environ.get("HOME", "")
    answers = [
        worker.http.post("/connectors", json={"name": "ref", "config": config}),
        worker.http.put("/connectors/ref/config", json=config),
        worker.http.put("/connector-plugins/FileStreamSink/config/validate", json=config),
    ]
    for response in answers:
        assert response.status_code == 400, response.text
        body = response.text
        assert f"Invalid value {reference} for configuration {key}" in response.json()["message"]
        assert secret not in body
        assert "root:x:0:0" not in body and ":0:0:" not in body
        if len(home) > 4:
            assert home not in body


def test_the_file_sink_cannot_plant_a_plugin(
    worker: RestWorker, plugin_path: Path, root: Path
) -> None:
    """The chain of issue 27: FileStreamSink writes ``<plugin.path>/x.py``, then
    ``connector.class=x.X`` runs it. Both steps are refused."""
    planted = plugin_path / "sec_planted.py"
    response = worker.http.post(
        "/connectors",
        json={"name": "planter", "config": sink_config(file=str(planted))},
    )
    assert response.status_code == 201, response.text

    def failed() -> bool:
        tasks = worker.http.get("/connectors/planter/status").json().get("tasks", [])
        return bool(tasks) and tasks[0]["state"] == "FAILED"

    wait_for(failed, 60, "the planting sink task to fail")
    trace = worker.http.get("/connectors/planter/status").json()["tasks"][0]["trace"]
    assert "a plugin.path directory of the worker" in trace
    assert not planted.exists()

    marker = root / "planted.marker"
    planted.write_text(f"import pathlib\npathlib.Path({str(marker)!r}).write_text('ran')\n")
    ran = worker.http.post(
        "/connectors",
        json={"name": "planted", "config": sink_config(**{"connector.class": "sec_planted.X"})},
    )
    assert ran.status_code == 400, ran.text
    assert not marker.exists()
    assert "sec_planted" not in sys.modules
    planted.unlink()


def test_the_file_connectors_stay_inside_the_allowed_directories(
    worker: RestWorker, root: Path
) -> None:
    response = worker.http.post(
        "/connectors",
        json={
            "name": "reader",
            "config": {
                "connector.class": "FileStreamSource",
                "topic": "sec-plugins-read",
                "file": "/etc/passwd",
            },
        },
    )
    assert response.status_code == 201, response.text

    def failed() -> bool:
        tasks = worker.http.get("/connectors/reader/status").json().get("tasks", [])
        return bool(tasks) and tasks[0]["state"] == "FAILED"

    wait_for(failed, 60, "the source task reading /etc/passwd to fail")
    trace = worker.http.get("/connectors/reader/status").json()["tasks"][0]["trace"]
    assert "file.connectors.allowed.dirs" in trace
