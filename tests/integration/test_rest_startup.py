"""No startup race: connector requests get 503 + Retry-After until the herder is ready.

The REST listener opens before the herder reads its topics (so /health can say "starting").
Here the herder's start is held at its first step (reading the config topic) while requests
arrive; and, without holding, a connector is created in a tight loop from the first moment the
port accepts connections. Either way it ends RUNNING, never FAILED ("already exists").
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from pathlib import Path

import httpx
import pytest

from connectrt.broker import EmbeddedBroker
from connectrt.process.assembly import WorkerProcess
from connectrt.testing.rest import RestWorker, rest_worker_props, wait_for

pytestmark = pytest.mark.integration

NOT_READY = {
    "error_code": 503,
    "message": "The worker is starting up (or shutting down) and cannot serve connector "
    "requests yet; retry later (GET /health answers 200 once it is ready)",
}


class Running:
    def __init__(self, process: WorkerProcess) -> None:
        self.process = process
        self.stop_event = threading.Event()
        self.failure: list[BaseException] = []
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        try:
            self.process.run((), self.stop_event)
        except BaseException as e:
            self.failure.append(e)

    def delete_connectors(self) -> None:
        """Delete what the test created, if the herder got as far as serving connectors."""
        if self.thread.is_alive() and self.process.herder.ready:
            rest = RestWorker(self.process, self.thread, self.stop_event, {})
            try:
                rest.delete_connectors()
            finally:
                rest.http.close()

    def stop(self) -> None:
        self.stop_event.set()
        self.thread.join(60)
        assert not self.thread.is_alive(), "the worker did not stop within 60 s"
        assert not self.failure, self.failure


@pytest.fixture
def launch() -> Iterator[Callable[[WorkerProcess], Running]]:
    """Starts workers in threads; after the test (whatever it asserted) deletes their
    connectors and stops them."""
    started: list[Running] = []

    def start(process: WorkerProcess) -> Running:
        running = Running(process)
        started.append(running)
        running.thread.start()
        return running

    yield start
    with ExitStack() as teardown:  # every worker is stopped even if a step before fails
        for running in started:
            teardown.callback(running.stop)
            teardown.callback(running.delete_connectors)


def source(tmp_path: Path, topic: str) -> dict[str, str]:
    path = tmp_path / "in.txt"
    path.write_text("".join(f"line {i}\n" for i in range(10)))
    return {"connector.class": "FileStreamSource", "file": str(path), "topic": topic}


def wait_for_port(process: WorkerProcess, running: Running) -> str:
    """The REST URL, once the listener has bound its ephemeral port."""
    wait_for(
        lambda: process.rest.port != 0 or not running.thread.is_alive(),
        60,
        "the REST listener to bind its port",
    )
    assert running.thread.is_alive(), running.failure
    return process.rest.url


def ends_running(http: httpx.Client, name: str, seconds: float = 3.0) -> list[str]:
    """Connector/task states seen until both are RUNNING, then for ``seconds`` more (an
    observation window, not a synchronisation: a FAILED reported late shows up in it)."""
    seen: list[str] = []

    def running() -> bool:
        body = http.get(f"/connectors/{name}/status").json()
        states = [body["connector"]["state"], *(t["state"] for t in body["tasks"])]
        seen.extend(states)
        return len(states) == 2 and set(states) == {"RUNNING"}

    wait_for(running, 60, f"connector {name} and its task RUNNING (a worker start included)")
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        running()
        time.sleep(0.1)
    return seen


def create_until_ready(
    http: httpx.Client, running: Running, body: dict[str, object], timeout: float = 60
) -> list[int]:
    """POST ``body`` to /connectors in a tight loop while it answers 503 (or the port refuses
    connections); the statuses seen, the last one not 503. Fails after ``timeout`` seconds."""
    statuses: list[int] = []
    deadline = time.monotonic() + timeout
    while not statuses or statuses[-1] == 503:
        if time.monotonic() > deadline:
            raise TimeoutError(
                f"timed out after {timeout:g} s waiting for POST /connectors to be answered "
                f"other than 503 (the herder ready); {len(statuses)} answers: {statuses[-5:]}"
            )
        assert running.thread.is_alive(), f"the worker died: {running.failure}"
        try:
            statuses.append(http.post("/connectors", json=body).status_code)
        except httpx.ConnectError:
            continue
    return statuses


def test_connector_requests_wait_for_a_slow_herder(
    broker: EmbeddedBroker, tmp_path: Path, unique_name, launch
):
    process = WorkerProcess.build(rest_worker_props(broker.bootstrap_servers), "worker")
    release = threading.Event()
    read_configs = process.herder.config_store.start

    def held() -> None:
        release.wait(120)  # released by the test below, or in its finally if it fails first
        read_configs()

    process.herder.config_store.start = held  # type: ignore[method-assign]
    running = launch(process)
    try:
        url = wait_for_port(process, running)
        name, config = "early", source(tmp_path, unique_name("early"))
        with httpx.Client(base_url=url, timeout=30) as http:
            health = http.get("/health")
            assert health.status_code == 503
            assert health.json()["status"] == "starting"
            assert health.json()["message"].startswith(  # KIP-1017: what the worker is doing
                "Worker is still starting up. The worker is currently reading the config and "
                "status topics, which began at "
            )
            assert http.get("/").status_code == 200  # as Kafka Connect's: answered while starting
            assert http.get("/connector-plugins").status_code == 200
            validate = "/connector-plugins/FileStreamSource/config/validate"
            assert http.put(validate, json=config).status_code == 200
            refused = [
                http.get("/connectors"),
                http.get("/connectors?expand=status"),
                http.post("/connectors", json={"name": name, "config": config}),
                http.put(f"/connectors/{name}/config", json=config),
                http.get(f"/connectors/{name}/status"),
                http.delete(f"/connectors/{name}"),
                http.get(f"/connectors/{name}/offsets"),
            ]
            for response in refused:
                assert response.status_code == 503, (response.request.url, response.text)
                assert response.headers["retry-after"] == "1"
                assert response.json() == NOT_READY
            assert not process.herder.ready
            release.set()
            # A tight loop of creates: 503 until ready, then exactly one 201.
            statuses = create_until_ready(http, running, {"name": name, "config": config})
            assert set(statuses[:-1]) <= {503} and statuses[-1] == 201, statuses
            assert http.get("/health").status_code == 200
            assert "FAILED" not in ends_running(http, name)
    finally:
        release.set()  # a failure above must not leave the herder's start held


def test_a_connector_created_from_the_first_accepted_connection_runs(
    broker: EmbeddedBroker, tmp_path: Path, unique_name, launch
):
    process = WorkerProcess.build(rest_worker_props(broker.bootstrap_servers), "worker")
    running = launch(process)
    url = wait_for_port(process, running)
    name, config = "eager", source(tmp_path, unique_name("eager"))
    with httpx.Client(base_url=url, timeout=30) as http:
        statuses = create_until_ready(http, running, {"name": name, "config": config})
        assert set(statuses[:-1]) <= {503} and statuses[-1] == 201, statuses
        assert "FAILED" not in ends_running(http, name)
    print(f"\n{len(statuses) - 1} creates answered 503 before the herder was ready")
