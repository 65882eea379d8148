"""OpenLineage events, without a worker: dataset names (checked against the naming classes
openlineage-python ships), event documents (validated by :mod:`tests.openlineage_support`), the
emitter's run lifecycle over a status board, and the transports' settings."""

from __future__ import annotations

import json
import socket
import threading
import time
from typing import Any

import pytest
from openlineage.client.naming import dataset as naming

from connectrt.api.config import Password
from connectrt.errors import ConfigError
from connectrt.runtime.config.worker import WorkerConfig
from connectrt.runtime.metrics import TaskMetrics
from connectrt.runtime.status import State, StatusBoard
from connectrt.runtime.worker.lineage.datasets import Dataset, DatasetSides, connector_datasets
from connectrt.runtime.worker.lineage.emitter import ConnectorView, LineageEmitter
from connectrt.runtime.worker.lineage.events import run_event
from connectrt.runtime.worker.lineage.transport import (
    FileTransport,
    HttpTransport,
    transport_from_config,
)
from tests.openlineage_support import validate_run_event

BOOTSTRAP = "PLAINTEXT://broker-1:9093,broker-2:9093"


def names(datasets: list[Dataset]) -> list[tuple[str, str]]:
    return [(d.namespace, d.name) for d in datasets]


def test_a_jdbc_source_reads_postgres_tables_and_writes_kafka_topics_as_openlineage_names() -> None:
    config = {
        "connection.url": "jdbc:postgresql://db.example:6543/shop?user=app&password=hunter2",
        "table.whitelist": "orders,billing.invoices",
        "topic.prefix": "pg-",
    }
    sides = connector_datasets(config, "source", "JdbcSourceConnector", BOOTSTRAP, ["pg-extra"])
    pg = naming.Postgres(
        host="db.example", port="6543", database="shop", schema="public", table="orders"
    )
    inv = naming.Postgres("db.example", "6543", "shop", "billing", "invoices")
    assert names(sides.inputs) == [
        (pg.get_namespace(), pg.get_name()),
        (inv.get_namespace(), inv.get_name()),
    ]
    kafka = [naming.Kafka("broker-1", "9093", t) for t in ("pg-extra", "pg-invoices", "pg-orders")]
    assert names(sides.outputs) == [(k.get_namespace(), k.get_name()) for k in kafka]


def test_no_password_reaches_a_dataset_whatever_the_url_carries() -> None:
    for url in (
        "postgresql+psycopg://app:hunter2@db.example/shop",
        "jdbc:postgresql://db.example:5432/shop?user=app&password=hunter2",
        "jdbc:mysql://app:hunter2@db.example/shop",
    ):
        config = {"connection.url": url, "topics": "orders"}
        sides = connector_datasets(config, "sink", "JdbcSinkConnector", BOOTSTRAP)
        event = run_event("START", "00000000-0000-4000-8000-000000000000", "ns", "c", "sink", sides)
        assert "hunter2" not in json.dumps(event) and "app@" not in json.dumps(event)
        (out,) = sides.outputs
        assert out.namespace == "postgres://db.example:5432" or out.namespace == (
            naming.MySQL("db.example", "3306", "shop", "orders").get_namespace()
        )


def test_a_jdbc_sink_writes_one_table_per_topic_and_sqlite_names_its_file() -> None:
    config = {
        "connection.url": "sqlite:////var/data/app.db",
        "topics": "a,b",
        "table.name.format": "kafka_${topic}",
    }
    sides = connector_datasets(config, "sink", "JdbcSinkConnector", BOOTSTRAP)
    assert names(sides.inputs) == [("kafka://broker-1:9093", "a"), ("kafka://broker-1:9093", "b")]
    assert names(sides.outputs) == [
        ("sqlite:///var/data/app.db", "main.kafka_a"),
        ("sqlite:///var/data/app.db", "main.kafka_b"),
    ]


def test_files_object_stores_and_iceberg_tables() -> None:
    host = socket.gethostname()
    file_sink = connector_datasets(
        {"file": "/tmp/out.txt", "topics": "t"}, "sink", "FileStreamSinkConnector", BOOTSTRAP
    )
    remote = naming.RemoteFileSystem(host=host, path="/tmp/out.txt")
    assert names(file_sink.outputs) == [(remote.get_namespace(), remote.get_name())]
    s3 = connector_datasets(
        {"s3.bucket.name": "lake", "topics": "clicks", "topics.dir": "raw"},
        "sink",
        "S3SinkConnector",
        BOOTSTRAP,
    )
    key = naming.S3(bucket_name="lake", object_key="raw/clicks")
    assert names(s3.outputs) == [(key.get_namespace(), key.get_name())]
    iceberg = connector_datasets(
        {
            "iceberg.tables": "db.events",
            "iceberg.catalog.warehouse": "s3://wh/warehouse",
            "topics": "t",
        },
        "sink",
        "IcebergSinkConnector",
        BOOTSTRAP,
    )
    assert names(iceberg.outputs) == [("s3://wh", "warehouse/db/events")]
    # a "file" key of a connector that is no file connector names no file
    assert connector_datasets({"file": "x"}, "source", "Datagen", BOOTSTRAP).inputs == []


def test_every_event_type_validates_against_the_openlineage_model() -> None:
    sides = DatasetSides(
        [Dataset("kafka://b:9092", "t", (("id", "int64"), ("name", "string")))],
        [Dataset("file://h", "/tmp/x")],
    )
    run_id = "7f1e1d9c-0c50-4c4b-8d0a-3f7d1b2a9e10"
    for kind in ("START", "RUNNING", "COMPLETE", "FAIL"):
        counts = None if kind == "START" else {"read": 10, "written": 9}
        error = "ValueError: boom\n  at line 1" if kind == "FAIL" else None
        event = run_event(kind, run_id, "connectrt", "c", "sink", sides, counts, error, "0.1.0")
        built = validate_run_event(json.loads(json.dumps(event)))
        assert built.eventType.value == kind and built.run.runId == run_id
    assert event["run"]["facets"]["errorMessage"]["message"] == "ValueError: boom"
    assert event["inputs"][0]["inputFacets"]["inputStatistics"]["rowCount"] == 10
    assert event["outputs"][0]["outputFacets"]["outputStatistics"]["rowCount"] == 9
    assert event["inputs"][0]["facets"]["schema"]["fields"][1] == {"name": "name", "type": "string"}
    with pytest.raises(AssertionError):  # the validator does reject what the model does not hold
        validate_run_event({**event, "run": {"runId": run_id, "extra": 1}})


class ListTransport:
    def __init__(self) -> None:
        self.events: list[dict[str, Any]] = []
        self.changed = threading.Condition()

    def send(self, event: dict[str, Any]) -> None:
        with self.changed:
            self.events.append(event)
            self.changed.notify_all()

    def close(self) -> None:
        pass

    def wait_for(self, count: int, timeout: float = 30.0) -> list[str]:
        with self.changed:
            assert self.changed.wait_for(lambda: len(self.events) >= count, timeout), (
                f"waited for {count} events, have {[e['eventType'] for e in self.events]}"
            )
            return [e["eventType"] for e in self.events]


def test_the_emitter_maps_a_connectors_states_onto_runs() -> None:
    transport = ListTransport()
    metrics = TaskMetrics("c", 0, records_polled=5, records_put=4)
    known = {"c": ConnectorView({"topics": "t", "file": "/tmp/o"}, "sink", "FileStreamSink")}
    tasks: list[TaskMetrics] = [metrics]
    emitter = LineageEmitter(
        transport,
        "connectrt",
        0.2,
        "b:9092",
        known.get,
        lambda name: list(tasks),
    )
    board = StatusBoard("w")
    board.add_listener(emitter.on_status)
    emitter.start()
    try:
        board.put("c", None, State.RUNNING)
        board.put("c", 0, State.RUNNING)  # the run has started: no second START
        assert transport.wait_for(2)[:2] == ["START", "RUNNING"]  # the timer's RUNNING
        tasks.clear()  # the task is gone: its last counts are kept
        board.put("c", None, State.DESTROYED)
        types = transport.wait_for(3)
        assert types[0] == "START" and types[-1] == "COMPLETE" and set(types[1:-1]) == {"RUNNING"}
        complete = transport.events[-1]
        assert complete["inputs"][0]["inputFacets"]["inputStatistics"]["rowCount"] == 5
        assert complete["outputs"][0]["outputFacets"]["outputStatistics"]["rowCount"] == 4
        assert len({e["run"]["runId"] for e in transport.events}) == 1
        # A connector that fails before it ever ran: START, then FAIL with the trace.
        known["d"] = ConnectorView({"topics": "t"}, "sink", "X")
        board.put("d", None, State.FAILED, "RuntimeError: no database\n")
        count = len(transport.events) + 2
        transport.wait_for(count)
        start, fail = [e for e in transport.events if e["job"]["name"] == "d"]
        assert (start["eventType"], fail["eventType"]) == ("START", "FAIL")
        assert fail["run"]["facets"]["errorMessage"]["message"] == "RuntimeError: no database"
        # The same task failure heard twice (listener and task process report) is sent once.
        board.put("c", None, State.RUNNING)
        failed = None
        board.put("c", 0, State.FAILED, "boom")
        failed = board.task("c", 0)
        assert failed is not None
        emitter.task_failed(failed)
        board.put("c", 1, State.RUNNING)  # a new run after the failure
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            runs = [e["eventType"] for e in transport.events if e["job"]["name"] == "c"]
            if runs.count("START") >= 3:
                break
            time.sleep(0.05)
        runs = [e["eventType"] for e in transport.events if e["job"]["name"] == "c"]
        assert runs.count("FAIL") == 1 and runs.count("START") == 3
    finally:
        emitter.stop()
    for event in transport.events:
        validate_run_event(event)


def test_transport_settings_and_the_api_key_stays_secret(tmp_path: Any) -> None:
    assert transport_from_config(WorkerConfig.from_props({})) is None
    with pytest.raises(ConfigError):
        transport_from_config(WorkerConfig.from_props({"lineage.transport": "http"}))
    with pytest.raises(ConfigError):
        transport_from_config(WorkerConfig.from_props({"lineage.transport": "file"}))
    http = transport_from_config(
        WorkerConfig.from_props(
            {
                "lineage.transport": "http",
                "lineage.url": "http://lineage.example:5000/",
                "lineage.api.key": "s3cret-key",
            }
        )
    )
    assert isinstance(http, HttpTransport)
    assert http.address == "http://lineage.example:5000/api/v1/lineage"
    assert "s3cret-key" not in repr(http) and "s3cret-key" not in http.address
    config = WorkerConfig.from_props({"lineage.api.key": "s3cret-key"})
    assert "s3cret-key" not in repr(config["lineage.api.key"])
    assert isinstance(config["lineage.api.key"], Password)
    http.close()
    path = tmp_path / "events.jsonl"
    file = transport_from_config(
        WorkerConfig.from_props({"lineage.transport": "file", "lineage.file.path": str(path)})
    )
    assert isinstance(file, FileTransport)
    file.send({"a": 1})
    file.send({"b": 2})
    assert [json.loads(line) for line in path.read_text().splitlines()] == [{"a": 1}, {"b": 2}]


def test_topic_fields_come_from_the_value_schema_and_cross_a_snapshot() -> None:
    from connectrt.data import SchemaBuilder
    from connectrt.runtime.tasks.topic_schemas import note_topic_schema

    schema = SchemaBuilder.struct().field("id", SchemaBuilder.int64().build()).build()
    remote = TaskMetrics("c", 0)
    note_topic_schema(remote, "t", schema)
    note_topic_schema(remote, "t", SchemaBuilder.string().build())  # the first one stays
    note_topic_schema(remote, "u", None)  # schemaless: nothing known
    assert remote.topic_fields == {"t": [["id", "int64"]]}
    local = TaskMetrics("c", 0)
    local.apply_snapshot(json.loads(json.dumps(remote.snapshot())))
    assert local.topic_fields == {"t": [["id", "int64"]]}
