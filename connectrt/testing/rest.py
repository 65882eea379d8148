"""A REST-managed worker running in this process, for tests: real HTTP, real stores.

``start_rest_worker(bootstrap)`` builds a :class:`~connectrt.process.assembly.WorkerProcess`
in ``worker`` mode (configs and status in fresh, uniquely named Kafka topics), serves the REST
API on an ephemeral port and returns once the herder is ready. ``.http`` is an
``httpx.Client`` bound to it. Call ``stop()`` (graceful) when done; a worker shared by several
tests should ``delete_connectors()`` after each one, so that a failing test cannot leave tasks
running (and consumer groups rebalancing) under the next.

Waits are meant for busy machines: :func:`wait_for` names what it waits for in its error, and
callers give it generous timeouts (a consumer group join alone can take half of
``session.timeout.ms`` when the broker waits for a member that is gone).
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Collection, Iterator
from contextlib import contextmanager
from typing import Any
from urllib.parse import quote

import httpx

from connectrt.process.assembly import WorkerProcess
from connectrt.testing.worker_defaults import test_worker_settings

__all__ = [
    "RestWorker",
    "rest_worker_props",
    "running_rest_worker",
    "start_rest_worker",
    "wait_for",
]


class RestWorker:
    def __init__(
        self,
        process: WorkerProcess,
        thread: threading.Thread,
        stop: threading.Event,
        props: dict[str, str],
    ) -> None:
        self.process = process
        self.thread = thread
        self.stop_event = stop
        self.props = props
        self.url = process.rest.url
        self.http = httpx.Client(base_url=self.url, timeout=60)

    def delete_connectors(self, keep: Collection[str] = (), timeout: float = 60) -> list[str]:
        """Delete every connector of this worker but those in ``keep`` (names percent-encoded)
        and wait until the worker no longer lists them; returns the names deleted. For test
        teardown."""
        names = [n for n in self.http.get("/connectors").json() if n not in keep]
        for name in names:
            response = self.http.delete(f"/connectors/{quote(name, safe='')}")
            if response.status_code not in (204, 404):
                raise AssertionError(f"DELETE of connector {name!r}: {response.text}")
        wait_for(
            lambda: not set(names) & set(self.http.get("/connectors").json()),
            timeout,
            f"connectors {names} to be deleted",
        )
        return names

    def stop(self) -> None:
        self.http.close()
        self.stop_event.set()
        self.thread.join(60)


def rest_worker_props(bootstrap: str, **extra: str) -> dict[str, str]:
    run = uuid.uuid4().hex[:8]
    return {
        "bootstrap.servers": bootstrap,
        "key.converter": "org.apache.kafka.connect.storage.StringConverter",
        "value.converter": "org.apache.kafka.connect.json.JsonConverter",
        "offset.storage.topic": f"offsets-{run}",
        "offset.storage.partitions": "3",
        "config.storage.topic": f"configs-{run}",
        "status.storage.topic": f"status-{run}",
        "group.id": f"cluster-{run}",
        "offset.flush.interval.ms": "500",
        "consumer.session.timeout.ms": "6000",
        "consumer.heartbeat.interval.ms": "500",
        "listeners": "http://127.0.0.1:0",
        "task.shutdown.graceful.timeout.ms": "5000",
        **test_worker_settings(),
        **extra,
    }


def start_rest_worker(
    bootstrap: str, props: dict[str, str] | None = None, mode: str = "worker", **extra: str
) -> RestWorker:
    """Start a worker (``props`` default to :func:`rest_worker_props` plus ``extra``)."""
    props = props or rest_worker_props(bootstrap, **extra)
    process = WorkerProcess.build(props, mode)
    stop = threading.Event()
    failure: list[BaseException] = []

    def _run() -> None:
        try:
            process.run((), stop)
        except BaseException as e:  # surfaced to the caller below
            failure.append(e)

    thread = threading.Thread(target=_run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 60
    while not process.herder.ready:
        if not thread.is_alive():
            raise RuntimeError(f"worker died during start: {failure[0] if failure else '?'}")
        if time.monotonic() > deadline:
            stop.set()  # do not leave a half-started worker running under the next tests
            thread.join(60)
            raise TimeoutError("timed out after 60 s waiting for the worker's herder to be ready")
        time.sleep(0.05)
    return RestWorker(process, thread, stop, props)


@contextmanager
def running_rest_worker(
    bootstrap: str, props: dict[str, str] | None = None, **extra: str
) -> Iterator[RestWorker]:
    """:func:`start_rest_worker` for the block, stopped after it (a module's worker fixture)."""
    running = start_rest_worker(bootstrap, props, "worker", **extra)
    try:
        yield running
    finally:
        running.stop()


def wait_for(predicate: Any, timeout: float = 60, what: str = "condition") -> None:
    """Poll ``predicate`` every 0.1 s until it holds; ``TimeoutError`` naming ``what`` after
    ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out after {timeout:g} s waiting for {what}")
        time.sleep(0.1)
