"""Real HTTP against a running worker (``connectrt worker`` wiring, Kafka-topic stores).

Every endpoint's success path and its documented error paths, with exact status codes and
bodies (Kafka Connect's REST API is the compatibility target).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from connectrt.broker import EmbeddedBroker
from connectrt.testing.harness import create_topic, produce
from connectrt.testing.metrics import scrape
from connectrt.testing.rest import RestWorker, start_rest_worker, wait_for

pytestmark = pytest.mark.integration


Running = RestWorker


def start_worker(bootstrap: str, tmp: Path, **extra: str) -> RestWorker:
    return start_rest_worker(bootstrap, **extra)


@pytest.fixture(scope="module")
def worker(broker: EmbeddedBroker, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Running]:
    running = start_worker(broker.bootstrap_servers, tmp_path_factory.mktemp("rest"))
    try:
        yield running
    finally:
        running.stop()


@pytest.fixture(autouse=True)
def remove_connectors_after_test(worker: Running) -> Iterator[None]:
    """Whatever a test asserted, the connectors it created are gone afterwards: no task or
    consumer group of one test runs on under the next."""
    yield
    worker.delete_connectors()


def source_config(tmp: Path, topic: str, **extra: str) -> dict[str, str]:
    path = tmp / f"{topic}.txt"
    path.write_text("".join(f"line {i}\n" for i in range(20)))
    return {"connector.class": "FileStreamSource", "file": str(path), "topic": topic, **extra}


def state_of(w: Running, name: str) -> str:
    r = w.http.get(f"/connectors/{name}/status")
    return r.json()["connector"]["state"] if r.status_code == 200 else f"HTTP {r.status_code}"


# -- root, health, unknown URLs -------------------------------------------------------------
def test_root_health_and_unknown_urls(worker: Running):
    root = worker.http.get("/")
    assert root.status_code == 200
    assert set(root.json()) == {"version", "commit", "kafka_cluster_id"}
    assert root.json()["kafka_cluster_id"]
    health = worker.http.get("/health")
    assert health.status_code == 200
    assert health.json() == {
        "status": "healthy",
        "message": "Worker has completed startup and is ready to handle requests.",
    }
    missing = worker.http.get("/no/such/path")
    assert missing.status_code == 404
    assert missing.json() == {"error_code": 404, "message": "HTTP 404 Not Found"}
    wrong_method = worker.http.delete("/connector-plugins")
    assert wrong_method.status_code == 405
    assert wrong_method.json()["error_code"] == 405
    assert worker.http.get("/openapi.json").json()["info"]["title"] == "connectrt"


# -- create, read, update, delete ------------------------------------------------------------
def test_connector_lifecycle(worker: Running, tmp_path: Path, unique_name):
    topic = unique_name("rest")
    name = unique_name("src")
    config = source_config(tmp_path, topic)
    created = worker.http.post("/connectors", json={"name": name, "config": config})
    assert created.status_code == 201, created.text
    assert created.headers["location"] == f"/connectors/{name}"
    body = created.json()
    assert body["name"] == name and body["type"] == "source"
    assert body["config"] == {**config, "name": name}
    assert body["tasks"] == [{"connector": name, "task": 0}]

    again = worker.http.post("/connectors", json={"name": name, "config": config})
    assert again.status_code == 409
    assert again.json() == {"error_code": 409, "message": f"Connector {name} already exists"}

    assert name in worker.http.get("/connectors").json()
    wait_for(lambda: state_of(worker, name) == "RUNNING", 60, "the connector RUNNING")
    expanded = worker.http.get("/connectors", params=[("expand", "status"), ("expand", "info")])
    entry = expanded.json()[name]
    assert entry["status"]["connector"]["state"] == "RUNNING"
    assert entry["info"]["config"]["topic"] == topic
    assert set(worker.http.get("/connectors?expand=status").json()[name]) == {"status"}

    info = worker.http.get(f"/connectors/{name}").json()
    assert info["type"] == "source"
    assert worker.http.get(f"/connectors/{name}/config").json()["topic"] == topic

    status = worker.http.get(f"/connectors/{name}/status").json()
    assert status["name"] == name and status["type"] == "source"
    assert status["connector"]["worker_id"] == f"127.0.0.1:{worker.process.rest.port}"
    assert "trace" not in status["connector"]
    wait_for(
        lambda: (
            worker.http.get(f"/connectors/{name}/status").json()["tasks"]
            and worker.http.get(f"/connectors/{name}/status").json()["tasks"][0]["state"]
            == "RUNNING"
        ),
        60,
        "task RUNNING",
    )
    task = worker.http.get(f"/connectors/{name}/tasks/0/status").json()
    assert task["id"] == 0 and task["state"] == "RUNNING"

    tasks = worker.http.get(f"/connectors/{name}/tasks").json()
    assert tasks[0]["id"] == {"connector": name, "task": 0}
    assert tasks[0]["config"]["task.class"].endswith("FileStreamSourceTask")
    legacy = worker.http.get(f"/connectors/{name}/tasks-config").json()
    assert legacy == {f"{name}-0": tasks[0]["config"]}

    updated = worker.http.put(f"/connectors/{name}/config", json={**config, "batch.size": "7"})
    assert updated.status_code == 200
    assert updated.json()["config"]["batch.size"] == "7"
    patched = worker.http.patch(
        f"/connectors/{name}/config", json={"batch.size": None, "tasks.max": "1"}
    )
    assert patched.status_code == 200
    assert "batch.size" not in patched.json()["config"]

    new_name = unique_name("put")
    put_created = worker.http.put(f"/connectors/{new_name}/config", json=config)
    assert put_created.status_code == 201
    assert put_created.headers["location"] == f"/connectors/{new_name}"

    assert worker.http.delete(f"/connectors/{new_name}").status_code == 204
    gone = worker.http.get(f"/connectors/{new_name}")
    assert gone.status_code == 404
    assert gone.json() == {"error_code": 404, "message": f"Connector {new_name} not found"}
    assert worker.http.delete(f"/connectors/{name}").status_code == 204


def test_create_errors(worker: Running, tmp_path: Path, unique_name):
    missing = worker.http.post(
        "/connectors",
        json={"name": "x", "config": {"connector.class": "FileStreamSource", "file": "f"}},
    )
    assert missing.status_code == 400
    message = missing.json()["message"]
    assert message.startswith(
        "Connector configuration is invalid and contains the following 1 error(s):"
    )
    assert 'Missing required configuration "topic" which has no default value.' in message
    no_class = worker.http.post("/connectors", json={"name": "x", "config": {"topic": "t"}})
    assert no_class.status_code == 400
    assert "contains no connector type" in no_class.json()["message"]
    mismatch = worker.http.put(
        "/connectors/a/config", json={**source_config(tmp_path, unique_name("t")), "name": "b"}
    )
    assert mismatch.status_code == 400
    assert mismatch.json()["message"] == (
        "Connector name configuration (b) doesn't match connector name in the URL (a)"
    )
    bad_json = worker.http.post(
        "/connectors", content=b"{not json", headers={"content-type": "application/json"}
    )
    assert bad_json.status_code == 400
    assert worker.http.patch("/connectors/nope/config", json={}).status_code == 404
    assert worker.http.get("/connectors/nope/status").status_code == 404
    assert worker.http.get("/connectors/nope/tasks/0/status").status_code == 404


def test_initial_state_and_state_changes(worker: Running, tmp_path: Path, unique_name):
    name = unique_name("states")
    r = worker.http.post(
        "/connectors",
        json={
            "name": name,
            "config": source_config(tmp_path, unique_name("t")),
            "initial_state": "paused",
        },
    )
    assert r.status_code == 201
    wait_for(lambda: state_of(worker, name) == "PAUSED", 60, "the connector PAUSED")
    # Created PAUSED, it has not run: no tasks, as in Kafka Connect, until it is resumed.
    assert worker.http.get(f"/connectors/{name}/status").json()["tasks"] == []
    assert worker.http.put(f"/connectors/{name}/resume").status_code == 202
    wait_for(lambda: state_of(worker, name) == "RUNNING", 60, "the connector RUNNING")
    assert worker.http.put(f"/connectors/{name}/pause").status_code == 202
    wait_for(lambda: state_of(worker, name) == "PAUSED", 60, "the connector PAUSED again")
    assert worker.http.put(f"/connectors/{name}/stop").status_code == 204
    wait_for(lambda: state_of(worker, name) == "STOPPED", 60, "the connector STOPPED")
    status = worker.http.get(f"/connectors/{name}/status").json()
    assert status["tasks"] == []
    assert worker.http.get(f"/connectors/{name}").json()["tasks"] == []
    assert worker.http.put(f"/connectors/{name}/resume").status_code == 202
    wait_for(lambda: state_of(worker, name) == "RUNNING", 60, "the connector RUNNING after stop")
    wait_for(
        lambda: len(worker.http.get(f"/connectors/{name}/status").json()["tasks"]) == 1,
        60,
        "tasks regenerated",
    )


def test_restarts(worker: Running, tmp_path: Path, unique_name):
    name = unique_name("restart")
    worker.http.post(
        "/connectors", json={"name": name, "config": source_config(tmp_path, unique_name("t"))}
    )
    wait_for(lambda: state_of(worker, name) == "RUNNING", 60, "the connector RUNNING")
    assert worker.http.post(f"/connectors/{name}/restart").status_code == 204
    assert worker.http.post(f"/connectors/{name}/tasks/0/restart").status_code == 204
    unknown_task = worker.http.post(f"/connectors/{name}/tasks/5/restart")
    assert unknown_task.status_code == 404
    assert unknown_task.json()["message"] == f"Unknown task: {name}-5"
    plan = worker.http.post(f"/connectors/{name}/restart?includeTasks=true&onlyFailed=false")
    assert plan.status_code == 202
    body = plan.json()
    assert body["connector"]["state"] == "RESTARTING"
    assert [t["state"] for t in body["tasks"]] == ["RESTARTING"]
    only_failed = worker.http.post(f"/connectors/{name}/restart?includeTasks=true&onlyFailed=true")
    assert only_failed.status_code == 202
    assert only_failed.json()["connector"]["state"] != "RESTARTING"
    wait_for(
        lambda: state_of(worker, name) == "RUNNING", 60, "the connector RUNNING after the restarts"
    )


def test_topics_tracking(worker: Running, tmp_path: Path, unique_name):
    name, topic = unique_name("topics"), unique_name("tracked")
    worker.http.post("/connectors", json={"name": name, "config": source_config(tmp_path, topic)})
    wait_for(
        lambda: worker.http.get(f"/connectors/{name}/topics").json()[name]["topics"] == [topic],
        60,
        "topic tracked",
    )
    assert worker.http.put(f"/connectors/{name}/topics/reset").status_code == 202
    assert worker.http.get(f"/connectors/{name}/topics").json() == {name: {"topics": []}}


# -- offsets ----------------------------------------------------------------------------------
def test_source_offsets_kip_875(worker: Running, tmp_path: Path, unique_name):
    name = unique_name("srcoff")
    config = source_config(tmp_path, unique_name("t"))
    worker.http.post("/connectors", json={"name": name, "config": config})
    wait_for(
        lambda: worker.http.get(f"/connectors/{name}/offsets").json()["offsets"],
        60,
        "committed offsets",
    )
    offsets = worker.http.get(f"/connectors/{name}/offsets").json()["offsets"]
    size = Path(config["file"]).stat().st_size
    assert offsets == [{"partition": {"filename": config["file"]}, "offset": {"position": size}}]

    running = worker.http.patch(f"/connectors/{name}/offsets", json={"offsets": offsets})
    assert running.status_code == 400
    assert running.json()["message"].startswith(
        "Connectors must be in the STOPPED state before their offsets can be modified."
    )
    worker.http.put(f"/connectors/{name}/stop")
    empty = worker.http.patch(f"/connectors/{name}/offsets", json={"offsets": []})
    assert empty.json() == {
        "error_code": 400,
        "message": "Partitions / offsets need to be provided for an alter offsets request",
    }
    altered = worker.http.patch(
        f"/connectors/{name}/offsets",
        json={"offsets": [{"partition": {"filename": config["file"]}, "offset": {"position": 7}}]},
    )
    assert altered.status_code == 200
    assert altered.json() == {
        "message": "The offsets for this connector have been altered successfully"
    }
    assert worker.http.get(f"/connectors/{name}/offsets").json()["offsets"][0]["offset"] == {
        "position": 7
    }
    reset = worker.http.delete(f"/connectors/{name}/offsets")
    assert reset.status_code == 200
    assert reset.json() == {
        "message": "The offsets for this connector have been reset successfully"
    }
    assert worker.http.get(f"/connectors/{name}/offsets").json() == {"offsets": []}


def test_sink_offsets_and_rewinds(
    worker: Running, broker: EmbeddedBroker, tmp_path: Path, unique_name
):
    topic, name = unique_name("sinkoff"), unique_name("sink")
    create_topic(broker.bootstrap_servers, topic, partitions=1)
    produce(
        broker.bootstrap_servers,
        topic,
        (b'{"schema":{"type":"string","optional":false},"payload":"v%d"}' % i for i in range(10)),
    )
    out = tmp_path / "sink.txt"
    worker.http.post(
        "/connectors",
        json={
            "name": name,
            "config": {"connector.class": "FileStreamSink", "file": str(out), "topics": topic},
        },
    )
    expected = [
        {"partition": {"kafka_topic": topic, "kafka_partition": 0}, "offset": {"kafka_offset": 10}}
    ]
    wait_for(
        lambda: worker.http.get(f"/connectors/{name}/offsets").json()["offsets"] == expected,
        60,
        "sink offsets committed",
    )
    worker.http.put(f"/connectors/{name}/stop")
    bad = worker.http.patch(
        f"/connectors/{name}/offsets",
        json={
            "offsets": [
                {
                    "partition": {"kafka_topic": topic, "kafka_partition": "x"},
                    "offset": {"kafka_offset": 1},
                }
            ]
        },
    )
    assert bad.status_code == 400
    altered = worker.http.patch(
        f"/connectors/{name}/offsets",
        json={
            "offsets": [
                {
                    "partition": {"kafka_topic": topic, "kafka_partition": 0},
                    "offset": {"kafka_offset": 4},
                }
            ]
        },
    )
    assert altered.status_code == 200
    assert altered.json()["message"] == (
        "The offsets for this connector have been altered successfully"
    )
    assert worker.http.get(f"/connectors/{name}/offsets").json()["offsets"][0]["offset"] == {
        "kafka_offset": 4
    }
    # Resume: the sink re-reads from 4, so v4..v9 are written a second time.
    worker.http.put(f"/connectors/{name}/resume")
    wait_for(
        lambda: out.read_text().splitlines().count("v9") == 2, 60, "v4..v9 re-read from offset 4"
    )
    assert out.read_text().splitlines() == [f"v{i}" for i in range(10)] + [
        f"v{i}" for i in range(4, 10)
    ]
    # connectrt's rewind: stop, move, resume in one call.
    latest = worker.http.post(f"/connectors/{name}/offsets/reset", json={"to": "latest"})
    assert latest.status_code == 200, latest.text
    assert latest.json()["offsets"] == expected

    def assigned() -> bool:
        runners = worker.process.herder.worker.runners(name)
        return bool(runners) and bool(getattr(runners[0], "assigned", None))

    # Let the resumed task join its group before moving the offsets again.
    wait_for(assigned, 60, "the resumed task's assignment")
    earliest = worker.http.post(f"/connectors/{name}/offsets/reset", json={"to": "earliest"})
    assert earliest.json()["offsets"][0]["offset"] == {"kafka_offset": 0}
    wait_for(lambda: out.read_text().splitlines().count("v0") == 2, 60, "v0 re-read from offset 0")
    assert state_of(worker, name) == "RUNNING"
    nope = worker.http.post(f"/connectors/{name}/offsets/reset", json={"to": "yesterday"})
    assert nope.status_code == 400


# -- plugins and validation --------------------------------------------------------------------
def test_plugins_and_validate(worker: Running):
    plugins = worker.http.get("/connector-plugins").json()
    classes = {p["class"]: p for p in plugins}
    assert classes["org.apache.kafka.connect.file.FileStreamSourceConnector"]["type"] == "source"
    assert all(p["type"] in ("source", "sink") for p in plugins)
    everything = worker.http.get("/connector-plugins?connectorsOnly=false").json()
    assert "converter" in {p["type"] for p in everything}

    for alias in (
        "FileStreamSource",
        "FileStreamSourceConnector",
        "org.apache.kafka.connect.file.FileStreamSourceConnector",
    ):
        keys = worker.http.get(f"/connector-plugins/{alias}/config")
        assert keys.status_code == 200
        by_name = {k["name"]: k for k in keys.json()}
        assert by_name["tasks.max"] == {
            "name": "tasks.max",
            "type": "INT",
            "required": False,
            "default_value": "1",
            "importance": "HIGH",
            "documentation": "Maximum number of tasks to use for this connector.",
            "group": "Common",
            "order_in_group": 3,
            "width": "SHORT",
            "display_name": "Tasks max",
            "dependents": [],
        }
        assert by_name["topic"]["required"] is True
    assert worker.http.get("/connector-plugins/JsonConverter/config").status_code == 200
    unknown = worker.http.get("/connector-plugins/Nope/config")
    assert unknown.status_code == 404
    assert unknown.json()["message"] == "Unknown plugin Nope."

    result = worker.http.put(
        "/connector-plugins/FileStreamSink/config/validate",
        json={"connector.class": "FileStreamSink", "name": "v", "file": "x"},
    )
    assert result.status_code == 200
    body = result.json()
    assert body["name"] == "FileStreamSink"
    assert body["error_count"] == 2
    assert body["groups"][:4] == ["Common", "Transforms", "Predicates", "Error Handling"]
    values = {c["value"]["name"]: c["value"] for c in body["configs"]}
    assert values["topics"]["errors"] == ["Must configure one of topics or topics.regex"]
    assert values["topics.regex"]["errors"] == ["Must configure one of topics or topics.regex"]
    wrong = worker.http.put(
        "/connector-plugins/FileStreamSink/config/validate",
        json={"connector.class": "FileStreamSource", "topic": "t"},
    )
    assert wrong.status_code == 400
    assert wrong.json()["message"] == (
        "Included connector type FileStreamSource does not match request type FileStreamSink"
    )


def test_validate_hides_passwords(worker: Running):
    result = worker.http.put(
        "/connector-plugins/FileStreamSource/config/validate",
        json={
            "connector.class": "FileStreamSource",
            "topic": "t",
            "db.password": "s3cret-value",
            "producer.override.sasl.jaas.config": "also-s3cret",
        },
    )
    text = result.text
    assert "s3cret-value" not in text and "also-s3cret" not in text
    values = {c["value"]["name"]: c["value"] for c in result.json()["configs"]}
    assert values["producer.override.sasl.jaas.config"]["value"] == "[hidden]"


# -- loggers and metrics ------------------------------------------------------------------------
def test_admin_loggers(worker: Running):
    assert "root" in worker.http.get("/admin/loggers").json()
    changed = worker.http.put("/admin/loggers/connectrt.rest", json={"level": "DEBUG"})
    assert changed.status_code == 200
    assert "connectrt.rest" in changed.json()
    one = worker.http.get("/admin/loggers/connectrt.rest").json()
    assert one["level"] == "DEBUG" and isinstance(one["last_modified"], int)
    assert (
        worker.http.put("/admin/loggers/connectrt.rest", json={"level": "INFO"}).status_code == 200
    )
    missing = worker.http.put("/admin/loggers/x", json={})
    assert missing.json() == {
        "error_code": 400,
        "message": "Desired 'level' parameter was not specified in request.",
    }
    bad = worker.http.put("/admin/loggers/x", json={"level": "LOUD"})
    assert bad.json() == {"error_code": 404, "message": "invalid log level 'LOUD'."}
    assert worker.http.get("/admin/loggers/no.such.logger.here").status_code == 404
    cluster = worker.http.put("/admin/loggers/connectrt.rest?scope=cluster", json={"level": "INFO"})
    assert cluster.status_code == 204


def test_metrics_show_failed_connectors(worker: Running, tmp_path: Path, unique_name):
    name = unique_name("failing")
    worker.http.post(
        "/connectors",
        json={
            "name": name,
            "config": {
                "connector.class": "FileStreamSource",
                "file": str(tmp_path),
                "topic": unique_name("t"),
            },
        },
    )
    wait_for(
        lambda: (
            worker.http.get(f"/connectors/{name}/tasks/0/status").json().get("state") == "FAILED"
        ),
        60,
        "task FAILED",
    )
    failed = worker.http.get(f"/connectors/{name}/tasks/0/status").json()
    assert "Is a directory" in failed["trace"]
    metrics = scrape(worker.http)
    assert metrics.value("connectrt_task_state", connector=name, task=0, state="FAILED") == 1
    assert metrics.value("connectrt_task_state", connector=name, task=0, state="RUNNING") == 0
    state = {"connector": name, "type": "source", "state": "RUNNING"}
    assert metrics.value("connectrt_connector_state", **state) == 1
    assert metrics.types["connectrt_task_records_polled"] == "counter"
    failing_plan = worker.http.post(f"/connectors/{name}/restart?includeTasks=true&onlyFailed=true")
    assert failing_plan.json()["tasks"][0]["state"] == "RESTARTING"
    assert failing_plan.json()["connector"]["state"] == "RUNNING"


# -- secrets ------------------------------------------------------------------------------------
def test_secrets_are_hidden_everywhere_and_survive_round_trips(
    worker: Running, tmp_path: Path, unique_name, caplog: pytest.LogCaptureFixture
):
    name = unique_name("secret")
    secret = "hunter2-" + uuid.uuid4().hex
    config = {**source_config(tmp_path, unique_name("t")), "connection.password": secret}
    with caplog.at_level("DEBUG"):
        created = worker.http.post("/connectors", json={"name": name, "config": config})
        assert created.status_code == 201
        responses = [
            created,
            worker.http.get(f"/connectors/{name}"),
            worker.http.get(f"/connectors/{name}/config"),
            worker.http.get("/connectors?expand=info"),
            worker.http.get(f"/connectors/{name}/tasks"),
            worker.http.get(f"/connectors/{name}/tasks-config"),
        ]
        for r in responses:
            assert r.status_code == 200 or r.status_code == 201
            assert secret not in r.text
        assert (
            worker.http.get(f"/connectors/{name}/config").json()["connection.password"]
            == "[hidden]"
        )
        # GET -> edit -> PUT keeps the stored secret.
        edited = {**worker.http.get(f"/connectors/{name}/config").json(), "batch.size": "5"}
        assert worker.http.put(f"/connectors/{name}/config", json=edited).status_code == 200
        stored = worker.process.herder.worker.connector_config(name)
        assert stored["connection.password"] == secret
        assert stored["batch.size"] == "5"
    assert secret not in caplog.text


def test_authentication(broker: EmbeddedBroker, tmp_path: Path):
    from connectrt.listener.auth import hash_password

    creds = tmp_path / "users"
    creds.write_text(f"admin:{hash_password('pw', iterations=1000)}\n")
    secured = start_worker(
        broker.bootstrap_servers,
        tmp_path,
        **{"rest.auth.type": "basic", "rest.auth.credentials.file": str(creds)},
    )
    try:
        assert secured.http.get("/health").status_code == 200
        denied = secured.http.get("/connectors")
        assert denied.status_code == 401
        assert denied.json() == {"error_code": 401, "message": "Unauthorized"}
        assert denied.headers["www-authenticate"].startswith("Basic")
        assert secured.http.get("/connectors", auth=("admin", "wrong")).status_code == 401
        assert secured.http.get("/connectors", auth=("admin", "pw")).json() == []
    finally:
        secured.stop()


def test_sink_rewind_to_a_datetime(
    worker: Running, broker: EmbeddedBroker, tmp_path: Path, unique_name
):
    from datetime import UTC, datetime

    topic, name = unique_name("when"), unique_name("timesink")
    create_topic(broker.bootstrap_servers, topic, partitions=1)
    envelope = b'{"schema":{"type":"string","optional":false},"payload":"%s"}'
    produce(broker.bootstrap_servers, topic, (envelope % b"a%d" % i for i in range(5)))
    # Not a synchronisation: the records' CreateTime (set by the producer) lies 1.5 s either
    # side of `between`, however slowly anything else runs.
    time.sleep(1.5)
    between = datetime.now(UTC)
    time.sleep(1.5)
    produce(broker.bootstrap_servers, topic, (envelope % b"b%d" % i for i in range(5)))
    out = tmp_path / "timed.txt"
    worker.http.post(
        "/connectors",
        json={
            "name": name,
            "config": {"connector.class": "FileStreamSink", "file": str(out), "topics": topic},
        },
    )
    wait_for(
        lambda: out.exists() and len(out.read_text().splitlines()) == 10,
        60,
        "10 lines (the group join included)",
    )
    r = worker.http.post(
        f"/connectors/{name}/offsets/reset",
        json={"to": "timestamp", "timestamp": between.isoformat()},
    )
    assert r.status_code == 200, r.text
    assert r.json()["offsets"][0]["offset"] == {"kafka_offset": 5}
    wait_for(lambda: len(out.read_text().splitlines()) == 15, 60, "batch b re-read")
    # Once offset 10 (the end) is committed again, nothing can be delivered any more: the
    # lines are final.
    end = [
        {"partition": {"kafka_topic": topic, "kafka_partition": 0}, "offset": {"kafka_offset": 10}}
    ]
    wait_for(
        lambda: worker.http.get(f"/connectors/{name}/offsets").json()["offsets"] == end,
        60,
        "the sink to commit offset 10 after the re-read",
    )
    lines = out.read_text().splitlines()
    assert lines == [f"a{i}" for i in range(5)] + [f"b{i}" for i in range(5)] * 2
