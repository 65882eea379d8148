"""OpenLineage events and end-to-end latency of real pipelines: a real worker (real HTTP, the
test broker) sends its run events to an HTTP lineage receiver this module starts on loopback.

* JDBC (SQLite) -> Kafka and Kafka -> file: START, RUNNING (with record counts), COMPLETE on
  delete; a JDBC source whose query names a missing table and a file sink whose file cannot be
  created: START and FAIL with the error. Every event is validated against openlineage-python's
  model (:mod:`tests.openlineage_support`), dataset names are checked against the naming
  classes it ships, and every request carries the API key as a bearer token.
* ``connectrt_task_e2e_latency_seconds`` of the file sink: its count is the number of records
  put, its buckets cumulative, and all of them fresh (under a minute old when put).
"""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from openlineage.client.naming import dataset as naming

from connectrt.broker import EmbeddedBroker
from connectrt.testing.harness import create_topic, produce, read_topic
from connectrt.testing.metrics import scrape
from connectrt.testing.rest import RestWorker, start_rest_worker, wait_for
from tests.openlineage_support import validate_run_event

pytestmark = pytest.mark.integration

API_KEY = "lineage-key-7c1d"
STRING = "org.apache.kafka.connect.storage.StringConverter"


class Receiver:
    """A lineage server on loopback: keeps every POSTed event and its Authorization header."""

    def __init__(self) -> None:
        self.events: list[dict[str, Any]] = []
        self.authorizations: list[str | None] = []
        self.lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                with receiver.lock:
                    receiver.events.append(json.loads(body))
                    receiver.authorizations.append(self.headers.get("Authorization"))
                self.send_response(201)
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def of(self, job: str) -> list[dict[str, Any]]:
        with self.lock:
            return [e for e in self.events if e["job"]["name"] == job]

    def types(self, job: str) -> list[str]:
        return [e["eventType"] for e in self.of(job)]

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture(scope="module")
def receiver() -> Iterator[Receiver]:
    r = Receiver()
    try:
        yield r
    finally:
        r.close()


@pytest.fixture(scope="module")
def worker(broker: EmbeddedBroker, receiver: Receiver) -> Iterator[RestWorker]:
    w = start_rest_worker(
        broker.bootstrap_servers,
        **{
            "lineage.transport": "http",
            "lineage.url": receiver.url,
            "lineage.api.key": API_KEY,
            "lineage.running.interval.ms": "500",
            "lineage.namespace": "lineage-test",
        },
    )
    try:
        yield w
    finally:
        w.stop()


def kafka_dataset(bootstrap: str, topic: str) -> tuple[str, str]:
    host, port = bootstrap.split(",")[0].split("://")[-1].rsplit(":", 1)
    k = naming.Kafka(bootstrap_server_host=host, port=port, topic=topic)
    return k.get_namespace(), k.get_name()


def names(datasets: list[dict[str, Any]]) -> list[tuple[str, str]]:
    return [(d["namespace"], d["name"]) for d in datasets]


def create(worker: RestWorker, name: str, config: dict[str, str]) -> None:
    r = worker.http.post("/connectors", json={"name": name, "config": config})
    assert r.status_code == 201, r.text


def delete(worker: RestWorker, name: str) -> None:
    assert worker.http.delete(f"/connectors/{name}").status_code == 204


def check_run(receiver: Receiver, job: str, final: str) -> list[dict[str, Any]]:
    """The job's events: one run, START first, ``final`` last, RUNNING between; all valid."""
    events = receiver.of(job)
    types = [e["eventType"] for e in events]
    assert types[0] == "START" and types[-1] == final, types
    assert set(types[1:-1]) <= {"RUNNING"}, types
    assert len({e["run"]["runId"] for e in events}) == 1
    for e in events:
        validate_run_event(e)
        assert e["job"]["namespace"] == "lineage-test"
    return events


def test_jdbc_to_kafka_runs_start_report_counts_and_complete(
    worker: RestWorker,
    broker: EmbeddedBroker,
    receiver: Receiver,
    tmp_path: Path,
    unique_name: Callable[[str], str],
) -> None:
    db = tmp_path / "shop.db"
    engine = sa.create_engine(f"sqlite:///{db}")
    with engine.begin() as c:
        c.execute(sa.text("CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT)"))
        c.execute(sa.text("INSERT INTO items (name) VALUES " + ",".join(["('x')"] * 25)))
    engine.dispose()
    name, prefix = unique_name("jdbc-lineage"), unique_name("shop") + "-"
    topic = prefix + "items"
    create_topic(broker.bootstrap_servers, topic)
    create(
        worker,
        name,
        {
            "connector.class": "connectors.jdbc.source.JdbcSourceConnector",
            "connection.url": f"jdbc:sqlite:{db}",
            "table.whitelist": "items",
            "mode": "incrementing",
            "incrementing.column.name": "id",
            "topic.prefix": prefix,
            "poll.interval.ms": "200",
        },
    )

    def counted() -> bool:
        running = [e for e in receiver.of(name) if e["eventType"] == "RUNNING"]
        return (
            bool(running)
            and (running[-1]["outputs"][0].get("outputFacets", {}).get("outputStatistics", {})).get(
                "rowCount"
            )
            == 25
        )

    wait_for(counted, 120, "a RUNNING event counting the 25 rows written to Kafka")
    delete(worker, name)
    wait_for(lambda: receiver.types(name)[-1:] == ["COMPLETE"], 60, "the COMPLETE event")
    events = check_run(receiver, name, "COMPLETE")
    assert names(events[-1]["inputs"]) == [(f"sqlite://{db}", "main.items")]
    assert names(events[-1]["outputs"]) == [kafka_dataset(broker.bootstrap_servers, topic)]
    assert events[-1]["inputs"][0]["inputFacets"]["inputStatistics"]["rowCount"] == 25
    schema = events[-1]["outputs"][0]["facets"]["schema"]["fields"]  # the rows' Connect schema
    assert {f["name"]: f["type"] for f in schema} == {"id": "int32", "name": "string"}
    assert events[0]["job"]["facets"]["jobType"]["jobType"] == "SOURCE_CONNECTOR"

    # A Cast of the text column to int32 fails on 'x': the task fails (errors.tolerance=none).
    failing = unique_name("jdbc-lineage-fail")
    create(
        worker,
        failing,
        {
            "connector.class": "connectors.jdbc.source.JdbcSourceConnector",
            "connection.url": f"jdbc:sqlite:{db}",
            "table.whitelist": "items",
            "mode": "incrementing",
            "incrementing.column.name": "id",
            "topic.prefix": prefix,
            "poll.interval.ms": "200",
            "transforms": "cast",
            "transforms.cast.type": "org.apache.kafka.connect.transforms.Cast$Value",
            "transforms.cast.spec": "name:int32",
        },
    )
    wait_for(lambda: "FAIL" in receiver.types(failing), 60, "the FAIL event of the failed cast")
    fail = check_run(receiver, failing, "FAIL")[-1]
    assert "Cast" in fail["run"]["facets"]["errorMessage"]["stackTrace"]
    delete(worker, failing)
    with receiver.lock:
        assert receiver.authorizations and set(receiver.authorizations) == {f"Bearer {API_KEY}"}
        assert API_KEY not in json.dumps(receiver.events)


def test_kafka_to_file_runs_and_its_latency_histogram_counts_every_record(
    worker: RestWorker,
    broker: EmbeddedBroker,
    receiver: Receiver,
    tmp_path: Path,
    unique_name: Callable[[str], str],
) -> None:
    bootstrap = broker.bootstrap_servers
    name, topic = unique_name("file-lineage"), unique_name("lines")
    out = tmp_path / "out.txt"
    create_topic(bootstrap, topic)
    produce(bootstrap, topic, [f"line {i}" for i in range(300)])
    create(
        worker,
        name,
        {
            "connector.class": "FileStreamSink",
            "topics": topic,
            "file": str(out),
            "value.converter": STRING,
        },
    )
    wait_for(
        lambda: out.exists() and len(out.read_text().splitlines()) == 300,
        120,
        "the 300 records in the file",
    )
    # End-to-end latency: one observation per record put, all fresh.
    labels = {"connector": name, "task": 0}
    samples = scrape(worker.http)
    put = samples.value("connectrt_task_records_put_total", **labels)
    count = samples.value("connectrt_task_e2e_latency_seconds_count", **labels)
    assert put == 300 and count == 300
    buckets = sorted(
        (float(lbl["le"]), v)
        for lbl, v in samples.matching("connectrt_task_e2e_latency_seconds_bucket", **labels)
    )
    cumulative = [v for _, v in buckets]
    assert cumulative == sorted(cumulative) and cumulative[-1] == 300
    assert dict(buckets)[60.0] == 300  # produced just now: none a minute old
    total = samples.value("connectrt_task_e2e_latency_seconds_sum", **labels)
    assert total is not None and 0 < total < 300 * 60

    wait_for(
        lambda: any(
            e["eventType"] == "RUNNING"
            and e["inputs"][0].get("inputFacets", {}).get("inputStatistics", {}).get("rowCount")
            == 300
            for e in receiver.of(name)
        ),
        60,
        "a RUNNING event counting the 300 records read",
    )
    delete(worker, name)
    wait_for(lambda: receiver.types(name)[-1:] == ["COMPLETE"], 60, "the COMPLETE event")
    events = check_run(receiver, name, "COMPLETE")
    remote = naming.RemoteFileSystem(host=socket.gethostname(), path=str(out))
    assert names(events[-1]["inputs"]) == [kafka_dataset(bootstrap, topic)]
    assert names(events[-1]["outputs"]) == [(remote.get_namespace(), remote.get_name())]
    assert events[-1]["outputs"][0]["outputFacets"]["outputStatistics"]["rowCount"] == 300
    assert events[-1]["inputs"][0]["facets"]["schema"]["fields"] == [
        {"name": "value", "type": "string"}
    ]
    assert events[0]["job"]["facets"]["jobType"]["jobType"] == "SINK_CONNECTOR"

    failing = unique_name("file-lineage-fail")
    create(
        worker,
        failing,
        {
            "connector.class": "FileStreamSink",
            "topics": topic,
            "file": str(tmp_path / "missing-dir" / "sub" / "out.txt"),
            "value.converter": STRING,
        },
    )
    wait_for(lambda: "FAIL" in receiver.types(failing), 60, "the FAIL event of the bad file")
    fail = check_run(receiver, failing, "FAIL")[-1]
    assert "missing-dir" in fail["run"]["facets"]["errorMessage"]["stackTrace"]
    delete(worker, failing)
    assert read_topic(bootstrap, topic)  # the topic is untouched by the failed sink
