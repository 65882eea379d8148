"""KIP-1017 through real HTTP: ``GET /health`` answers 500 ``unhealthy``, with the reason, when
the worker cannot serve requests, and 200 again once it can.

Two ways a worker gets there: a background thread of the worker died, and Kafka stopped
answering (the broker process is paused with SIGSTOP, so its port accepts connections but
nothing comes back). A connector whose ``start()`` blocks is not one of them: plugin code never
holds the herder (issue 27), so /health stays 200 (the herder stuck in an operation is covered
by the unit tests of :mod:`connectrt.runtime.worker.health`).
"""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Iterator

import httpx
import pytest

from connectrt.broker import EmbeddedBroker
from connectrt.testing.broker_choice import ExternalBroker, SessionBroker, broker_from_env
from connectrt.testing.rest import RestWorker, start_rest_worker, wait_for
from tests.plugins import stuck

pytestmark = pytest.mark.integration

UNHEALTHY = "Worker was unable to handle this request and may be unable to handle other requests."
HEALTHY = {
    "status": "healthy",
    "message": "Worker has completed startup and is ready to handle requests.",
}


@pytest.fixture
def worker(broker: EmbeddedBroker) -> Iterator[RestWorker]:
    """A worker of its own: two of these tests leave it unable to work."""
    running = start_rest_worker(broker.bootstrap_servers)
    try:
        yield running
    finally:
        stuck.RELEASE.set()
        try:
            running.delete_connectors()
        finally:
            running.stop()


def test_health_stays_200_while_a_connectors_start_blocks(worker: RestWorker, unique_name):
    """A connector whose ``start()`` blocks is not a worker failure (issue 27): the herder
    holds no worker-wide lock across plugin code, so /health answers 200 at once while the
    create waits for the start (at most ``connector.call.timeout.ms``), and the create then
    answers 201 as soon as the start returns."""
    stuck.RELEASE.clear()
    name = unique_name("blocked")
    config = {"connector.class": "tests.plugins.stuck.BlockingStartSource", "name": name}
    created: list[httpx.Response] = []
    # The create request waits for the blocked start() (its own client: the worker's is not
    # shared across threads).
    creator = threading.Thread(
        target=lambda: created.append(
            httpx.post(
                f"{worker.url}/connectors", json={"name": name, "config": config}, timeout=120
            )
        ),
        daemon=True,
    )
    creator.start()
    wait_for(
        lambda: name in worker.http.get("/connectors").json(),
        60,
        "the worker to be starting the blocked connector",
    )
    assert worker.http.get(f"/connectors/{name}/status").json()["connector"]["state"] == (
        "UNASSIGNED"
    )
    health = worker.http.get("/health", timeout=5)
    assert (health.status_code, health.json()) == (200, HEALTHY)
    assert creator.is_alive(), "the create did not wait for the blocked start()"

    stuck.RELEASE.set()
    creator.join(60)
    assert created and created[0].status_code == 201, created
    wait_for(
        lambda: (
            worker.http.get(f"/connectors/{name}/status").json()["connector"]["state"] == "RUNNING"
        ),
        60,
        "the released connector to run",
    )
    health = worker.http.get("/health")
    assert (health.status_code, health.json()) == (200, HEALTHY)


# The connector's SystemExit ends the worker-reconfig thread, as an uncaught BaseException ends
# any Python thread (pytest reports that as a warning): exactly what the check must surface.
@pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")
def test_health_is_500_when_the_reconfiguration_thread_died(worker: RestWorker, unique_name):
    name = unique_name("exits")
    config = {"connector.class": "tests.plugins.stuck.ExitOnReconfigureSource"}
    assert worker.http.get("/health").status_code == 200
    r = worker.http.post("/connectors", json={"name": name, "config": config})
    assert r.status_code == 201, r.text

    def unhealthy() -> bool:
        return worker.http.get("/health").status_code == 500

    wait_for(unhealthy, 60, "the health check to notice the dead reconfiguration thread")
    assert worker.http.get("/health").json() == {
        "status": "unhealthy",
        "message": f"{UNHEALTHY} The worker's task reconfiguration thread (worker-reconfig) "
        "is not running.",
    }


def _private_broker() -> SessionBroker:
    """A broker of the kind CONNECTRT_TEST_BROKER chooses, started for one test: it is paused,
    which the session's other tests must not see. A broker the user runs cannot be paused
    here, so for a HOST:PORT choice the embedded broker stands in."""
    chosen = broker_from_env()
    return EmbeddedBroker() if isinstance(chosen, ExternalBroker) else chosen


def test_health_is_500_while_kafka_does_not_answer_and_200_after(unique_name):
    private = _private_broker().start()
    try:
        running = start_rest_worker(private.bootstrap_servers)
        pid = private.pid
        assert pid is not None
        paused = False
        try:
            assert running.http.get("/health").json() == HEALTHY
            os.kill(pid, signal.SIGSTOP)
            paused = True
            health = running.http.get("/health")
            assert health.status_code == 500, health.text
            message = health.json()["message"]
            assert health.json()["status"] == "unhealthy"
            assert message.startswith(
                f"{UNHEALTHY} Kafka at {private.bootstrap_servers} did not answer within "
            ), message
            assert "cannot reach its offsets, config and status topics" in message
            os.kill(pid, signal.SIGCONT)
            paused = False
            wait_for(
                lambda: running.http.get("/health").status_code == 200,
                60,
                "the health check to pass again once the broker answers",
            )
            assert running.http.get("/health").json() == HEALTHY
        finally:
            if paused:
                os.kill(pid, signal.SIGCONT)
            running.delete_connectors()
            running.stop()
    finally:
        private.stop()
