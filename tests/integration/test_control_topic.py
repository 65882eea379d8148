"""The control topic (``control.topic``): JSON events applied like the matching REST calls.

One worker for the module; its control topic gets an event before the worker starts, which must
never be applied. Outcomes are checked through ``GET /control/events``.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from connectrt.broker import EmbeddedBroker
from connectrt.testing.harness import create_topic, produce
from connectrt.testing.rest import RestWorker, start_rest_worker, wait_for

pytestmark = pytest.mark.integration

ENVELOPE = b'{"schema":{"type":"string","optional":false},"payload":"%s"}'


@dataclass
class Control:
    worker: RestWorker
    bootstrap: str
    topic: str
    early_name: str  # target of the event produced before the worker started

    def send(self, event: dict[str, Any] | bytes) -> None:
        raw = event if isinstance(event, bytes) else json.dumps(event).encode()
        produce(self.bootstrap, self.topic, [raw])

    def events(self) -> list[dict[str, Any]]:
        r = self.worker.http.get("/control/events")
        assert r.status_code == 200, r.text
        return r.json()

    def outcome(self, event_id: str, timeout: float = 60) -> dict[str, Any]:
        found: list[dict[str, Any]] = []

        def seen() -> bool:
            found[:] = [e for e in self.events() if e["id"] == event_id]
            return bool(found)

        wait_for(seen, timeout, what=f"outcome of control event {event_id}")
        assert len(found) == 1, found
        return found[0]

    def apply(self, name: str, action: str, **extra: Any) -> dict[str, Any]:
        event_id = f"{action.lower()}-{uuid.uuid4().hex[:6]}"
        self.send({"connector": name, "action": action, "id": event_id, **extra})
        result = self.outcome(event_id)
        assert result["outcome"] == "applied", result
        assert (result["connector"], result["action"]) == (name, action)
        return result

    def state(self, name: str) -> str:
        r = self.worker.http.get(f"/connectors/{name}/status")
        return r.json()["connector"]["state"] if r.status_code == 200 else f"HTTP {r.status_code}"

    def create_sink(self, name: str, topic: str, out: Path) -> None:
        r = self.worker.http.post(
            "/connectors",
            json={
                "name": name,
                "config": {"connector.class": "FileStreamSink", "file": str(out), "topics": topic},
            },
        )
        assert r.status_code == 201, r.text

    def wait_assigned(self, name: str) -> None:
        def assigned() -> bool:
            runners = self.worker.process.herder.worker.runners(name)
            return bool(runners) and bool(getattr(runners[0], "assigned", None))

        wait_for(assigned, 60, f"{name}'s task assignment (a consumer group join)")


@pytest.fixture(scope="module")
def control(broker: EmbeddedBroker) -> Iterator[Control]:
    bootstrap = broker.bootstrap_servers
    run = uuid.uuid4().hex[:8]
    topic, early = f"control-{run}", f"early-{run}"
    create_topic(bootstrap, topic, partitions=1)
    produce(
        bootstrap,
        topic,
        [json.dumps({"connector": early, "action": "STOP", "id": "before-start"}).encode()],
    )
    worker = start_rest_worker(bootstrap, **{"control.topic": topic})
    try:
        listener = worker.process.herder.control  # type: ignore[attr-defined]
        wait_for(lambda: listener.running, 60, "the control listener")
        yield Control(worker, bootstrap, topic, early)
    finally:
        worker.stop()


@pytest.fixture(autouse=True)
def remove_connectors_after_test(control: Control) -> Iterator[None]:
    """Whatever a test asserted, its sinks are gone afterwards: no task or consumer group of
    one test runs on under the next."""
    yield
    control.worker.delete_connectors()


def test_events_before_start_are_ignored(control: Control, broker: EmbeddedBroker, tmp_path):
    listener = control.worker.process.herder.control  # type: ignore[attr-defined]
    assert list(listener.start_offsets.values()) == [1]  # after the early event
    data = f"data-{uuid.uuid4().hex[:8]}"
    create_topic(broker.bootstrap_servers, data)
    control.create_sink(control.early_name, data, tmp_path / "early.txt")
    wait_for(lambda: control.state(control.early_name) == "RUNNING", 60, "the sink RUNNING")
    control.apply(control.early_name, "PAUSE")  # a later event is applied...
    assert all(e["id"] != "before-start" for e in control.events())  # ...the early one never
    assert control.state(control.early_name) == "PAUSED"


def test_state_actions(control: Control, broker: EmbeddedBroker, tmp_path, unique_name):
    name, data = unique_name("states"), unique_name("data")
    create_topic(broker.bootstrap_servers, data)
    control.create_sink(name, data, tmp_path / "out.txt")
    wait_for(lambda: control.state(name) == "RUNNING", 60, "the sink RUNNING")
    http = control.worker.http

    control.apply(name, "STOP")
    assert control.state(name) == "STOPPED"
    assert http.get(f"/connectors/{name}/status").json()["tasks"] == []  # as PUT .../stop
    control.apply(name, "RESUME")
    wait_for(lambda: control.state(name) == "RUNNING", 60, "the sink RUNNING after RESUME")
    wait_for(
        lambda: len(http.get(f"/connectors/{name}/status").json()["tasks"]) == 1,
        60,
        "the sink's task regenerated after RESUME",
    )
    control.apply(name, "PAUSE")
    assert control.state(name) == "PAUSED"
    wait_for(
        lambda: http.get(f"/connectors/{name}/status").json()["tasks"][0]["state"] == "PAUSED",
        60,
        "the task PAUSED",
    )
    control.apply(name, "RESUME")
    wait_for(lambda: control.state(name) == "RUNNING", 60, "the sink RUNNING again")

    herder_worker = control.worker.process.herder.worker
    before = herder_worker.runners(name)
    restarted = control.apply(name, "RESTART")
    assert restarted["message"] == "connector and tasks restarted"
    wait_for(
        lambda: herder_worker.runners(name) and herder_worker.runners(name)[0] is not before[0],
        60,
        "a new task instance after RESTART",
    )
    wait_for(lambda: control.state(name) == "RUNNING", 60, "the sink RUNNING after RESTART")


def test_bad_events_are_skipped(control: Control, broker: EmbeddedBroker, tmp_path, unique_name):
    name, data = unique_name("bad"), unique_name("data")
    create_topic(broker.bootstrap_servers, data)
    control.create_sink(name, data, tmp_path / "out.txt")
    wait_for(lambda: control.state(name) == "RUNNING", 60, "the sink RUNNING")
    control.send(b'{"connector": "' + name.encode() + b'", "action": ')  # malformed JSON
    control.send(b"[1, 2]")
    control.send({"action": "STOP", "id": "no-connector"})
    control.send({"connector": name, "action": "EXPLODE", "id": "bad-action"})
    control.send({"connector": name, "action": "RESET_TO_TIME", "id": "no-time"})
    control.send(
        {"connector": name, "action": "RESET_TO_TIME", "timestamp": "yesterday", "id": "bad-time"}
    )
    control.send({"connector": f"ghost-{uuid.uuid4().hex[:6]}", "action": "PAUSE", "id": "ghost"})
    control.apply(name, "PAUSE")  # the listener is still alive and in order
    assert control.state(name) == "PAUSED"
    assert control.worker.process.herder.control.running  # type: ignore[attr-defined]

    events = control.events()
    by_id = {e["id"]: e for e in events if e["id"] is not None}
    for event_id in ("no-connector", "bad-action", "no-time", "bad-time", "ghost"):
        assert by_id[event_id]["outcome"] == "rejected", by_id[event_id]
        assert set(by_id[event_id]) >= {"id", "connector", "action", "received_at", "message"}
    assert "connector" in by_id["no-connector"]["message"]
    assert "EXPLODE" in by_id["bad-action"]["message"]
    assert "not found" in by_id["ghost"]["message"]
    anonymous = [e["message"] for e in events if e["id"] is None]
    assert any(m.startswith("malformed JSON") for m in anonymous), anonymous
    assert "an event must be a JSON object" in anonymous


def test_resets(control: Control, broker: EmbeddedBroker, tmp_path, unique_name):
    bootstrap = broker.bootstrap_servers
    name, data = unique_name("resets"), unique_name("data")
    create_topic(bootstrap, data)
    a = [f"a{i}" for i in range(5)]
    b = [f"b{i}" for i in range(5)]
    produce(bootstrap, data, (ENVELOPE % v.encode() for v in a))
    # Not a synchronisation: the records' CreateTime (set by the producer) lies 1.5 s either
    # side of `between`, however slowly anything else runs.
    time.sleep(1.5)
    between = datetime.now(UTC)
    time.sleep(1.5)
    produce(bootstrap, data, (ENVELOPE % v.encode() for v in b))
    out = tmp_path / "out.txt"
    control.create_sink(name, data, out)

    def lines() -> list[str]:
        return out.read_text().splitlines() if out.exists() else []

    wait_for(lambda: len(lines()) == 10, 60, "10 lines (the sink's group join included)")
    control.wait_assigned(name)

    start = control.apply(name, "RESET_TO_START")
    assert '"kafka_offset": 0' in start["message"]
    wait_for(lambda: len(lines()) == 20, 60, "everything re-read after RESET_TO_START")
    assert lines() == a + b + a + b
    assert control.state(name) == "RUNNING"
    control.wait_assigned(name)

    end = control.apply(name, "RESET_TO_END")
    assert '"kafka_offset": 10' in end["message"]
    control.wait_assigned(name)
    produce(bootstrap, data, [ENVELOPE % b"c0"])
    wait_for(lambda: len(lines()) == 21, 60, "the new record after RESET_TO_END")
    assert lines() == a + b + a + b + ["c0"]  # nothing re-read

    control.wait_assigned(name)
    timed = control.apply(name, "RESET_TO_TIME", timestamp=between.isoformat())
    assert '"kafka_offset": 5' in timed["message"]
    wait_for(lambda: len(lines()) == 27, 60, "batch b and c0 re-read after RESET_TO_TIME")
    # Once offset 11 (the end) is committed again, nothing can be delivered any more: the
    # lines are final.
    end = [
        {"partition": {"kafka_topic": data, "kafka_partition": 0}, "offset": {"kafka_offset": 11}}
    ]
    wait_for(
        lambda: control.worker.http.get(f"/connectors/{name}/offsets").json()["offsets"] == end,
        60,
        "the sink to commit offset 11 after the re-read",
    )
    assert lines() == a + b + a + b + ["c0"] + b + ["c0"]
    assert control.state(name) == "RUNNING"
