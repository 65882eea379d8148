"""Connector names: refused at create time when no URL could address them, and every other name
fully manageable through percent-encoded paths, by raw HTTP, the Python client and the CLI."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import pytest

from connectrt.broker import EmbeddedBroker
from connectrt.cli import main
from connectrt.client import ConnectClient
from connectrt.testing.rest import RestWorker, running_rest_worker

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def worker(broker: EmbeddedBroker) -> Iterator[RestWorker]:
    with running_rest_worker(broker.bootstrap_servers) as running:
        yield running


@pytest.fixture(autouse=True)
def remove_connectors_after_test(worker: RestWorker) -> Iterator[None]:
    """A test that fails before its own delete leaves no sink (and consumer group) running."""
    yield
    worker.delete_connectors()


def sink_config(tmp_path: Path) -> dict[str, str]:
    return {
        "connector.class": "FileStreamSink",
        "topics": "names-topic",
        "file": str(tmp_path / "out.txt"),
    }


@pytest.mark.parametrize("name", ["a/b", "../x", "x/..", "/lead", ".", ".."])
def test_unaddressable_names_are_refused_with_400(
    worker: RestWorker, tmp_path: Path, name: str
) -> None:
    response = worker.http.post("/connectors", json={"name": name, "config": sink_config(tmp_path)})
    assert response.status_code == 400, response.text
    body = response.json()
    assert body["error_code"] == 400
    assert "name" in body["message"], body
    assert name not in worker.http.get("/connectors").json()


@pytest.mark.parametrize(
    "name", ["with space", "q?mark", "hash#tag", "per%cent", "caf\u00e9", "dots.and-dashes"]
)
def test_other_names_are_manageable_percent_encoded(
    worker: RestWorker, tmp_path: Path, name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    created = worker.http.post("/connectors", json={"name": name, "config": sink_config(tmp_path)})
    assert created.status_code == 201, created.text
    path = f"/connectors/{quote(name, safe='')}"
    assert worker.http.get(path).json()["name"] == name
    assert worker.http.get(f"{path}/config").status_code == 200
    assert worker.http.get(f"{path}/status").json()["name"] == name
    # The Python client encodes the name itself.
    client = ConnectClient(worker.url)
    try:
        assert client.connector(name)["name"] == name
    finally:
        client.close()
    # The CLI deletes it by its plain name.
    capsys.readouterr()
    assert main(["connectors", "delete", name, "--url", worker.url]) == 0
    assert worker.http.get(path).status_code == 404
    assert name not in worker.http.get("/connectors").json()
