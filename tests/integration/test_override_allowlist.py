"""KIP-1188 through real HTTP: a worker with ``connector.client.config.override.policy=Allowlist``.

Overrides of client settings outside ``connector.client.config.override.allowlist`` are refused
per field by the validate endpoint and with 400 on create and update (nothing is stored); the
listed ones are accepted and reach the task's client.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from connectrt.broker import EmbeddedBroker
from connectrt.testing.rest import RestWorker, running_rest_worker, wait_for

pytestmark = pytest.mark.integration

ALLOWED = "message.max.bytes,linger.ms"


@pytest.fixture(scope="module")
def worker(broker: EmbeddedBroker) -> Iterator[RestWorker]:
    with running_rest_worker(
        broker.bootstrap_servers,
        **{
            "connector.client.config.override.policy": "Allowlist",
            "connector.client.config.override.allowlist": ALLOWED,
        },
    ) as running:
        yield running


@pytest.fixture(autouse=True)
def remove_connectors_after_test(worker: RestWorker) -> Iterator[None]:
    yield
    worker.delete_connectors()


def _source(tmp: Path, topic: str, line: str = "hello", **extra: str) -> dict[str, str]:
    path = tmp / "in.txt"
    path.write_text(line + "\n")
    return {"connector.class": "FileStreamSource", "file": str(path), "topic": topic, **extra}


def _refusal(key: str) -> str:
    return (
        f"The 'Allowlist' policy does not allow '{key}' to be overridden in the connector "
        "configuration."
    )


def test_validate_reports_each_refused_override_on_its_own_field(
    worker: RestWorker, tmp_path: Path, unique_name
):
    config = _source(
        tmp_path,
        unique_name("t"),
        **{
            "name": unique_name("src"),
            "producer.override.linger.ms": "20",
            "producer.override.acks": "1",
            "admin.override.request.timeout.ms": "5000",
        },
    )
    r = worker.http.put("/connector-plugins/FileStreamSource/config/validate", json=config)
    assert r.status_code == 200, r.text
    body = r.json()
    errors = {c["value"]["name"]: c["value"]["errors"] for c in body["configs"]}
    assert body["error_count"] == 2
    assert errors["producer.override.acks"] == [_refusal("acks")]
    assert errors["admin.override.request.timeout.ms"] == [_refusal("request.timeout.ms")]
    assert errors["producer.override.linger.ms"] == []


def test_create_and_update_with_a_refused_override_are_400_and_store_nothing(
    worker: RestWorker, tmp_path: Path, unique_name
):
    name = unique_name("src")
    config = _source(tmp_path, unique_name("t"), **{"consumer.override.auto.offset.reset": "x"})
    r = worker.http.post("/connectors", json={"name": name, "config": config})
    assert r.status_code == 400
    assert r.json() == {
        "error_code": 400,
        "message": "Connector configuration is invalid and contains the following 1 error(s):\n"
        + "consumer.override.auto.offset.reset: "
        + _refusal("auto.offset.reset")
        + "\nYou can also find the above list of errors at the endpoint "
        "`/connector-plugins/{connectorType}/config/validate`",
    }
    assert worker.http.get(f"/connectors/{name}").status_code == 404

    # An accepted connector cannot be given a refused override afterwards either.
    ok = _source(tmp_path, unique_name("t"))
    assert worker.http.put(f"/connectors/{name}/config", json=ok).status_code == 201
    bad = {**ok, "producer.override.acks": "0"}
    r = worker.http.put(f"/connectors/{name}/config", json=bad)
    assert r.status_code == 400 and _refusal("acks") in r.json()["message"]
    r = worker.http.patch(f"/connectors/{name}/config", json={"producer.override.acks": "0"})
    assert r.status_code == 400 and _refusal("acks") in r.json()["message"]
    assert "producer.override.acks" not in worker.http.get(f"/connectors/{name}/config").json()


def test_an_allowed_override_is_accepted_and_reaches_the_tasks_producer(
    worker: RestWorker, tmp_path: Path, unique_name
):
    # message.max.bytes=1000 (librdkafka's minimum) on the task's producer makes a 3000-byte
    # line undeliverable: the task fails on it, which it would not with the worker's default.
    name = unique_name("src")
    config = _source(
        tmp_path,
        unique_name("t"),
        line="x" * 3000,
        **{"producer.override.message.max.bytes": "1000", "producer.override.linger.ms": "0"},
    )
    r = worker.http.post("/connectors", json={"name": name, "config": config})
    assert r.status_code == 201, r.text
    assert r.json()["config"]["producer.override.message.max.bytes"] == "1000"

    def task_failed() -> bool:
        tasks = worker.http.get(f"/connectors/{name}/status").json()["tasks"]
        return bool(tasks) and tasks[0]["state"] == "FAILED"

    wait_for(task_failed, 60, "the task to fail on a record above producer message.max.bytes")
    trace = worker.http.get(f"/connectors/{name}/status").json()["tasks"][0]["trace"]
    assert "MSG_SIZE_TOO_LARGE" in trace or "too large" in trace.lower(), trace
