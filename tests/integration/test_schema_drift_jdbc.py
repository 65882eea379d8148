"""``schema.drift`` on a JDBC source whose table changes mid-stream, in a running worker with
its built-in schema registry (real broker, real HTTP, real SQLite).

For each policy (``evolve``, ``fail``, ``dlq``) three JDBC source connectors run side by side,
one per converter (Avro, JSON Schema, Protobuf), each on its own SQLite table under the subject
compatibility ``BACKWARD``. The table goes through four phases of three rows each: as created
(``id``, ``name``, ``qty``), with a column added (``note``), with one dropped (``name``), and
with ``qty`` retyped from INTEGER to TEXT. After each phase the test waits until the phase's
rows are accounted for and checks where they went:

* a compatible phase: in the topic, whatever the policy;
* an incompatible phase under ``evolve``: the registry refuses the schema and the task fails;
  under ``fail``: the task fails with the subject, its level and the field that differs in
  its trace. Either way none of the phase's rows is in the topic (they are still unread); the
  fix (the subject's compatibility set to ``NONE``, then back to ``BACKWARD`` once the rows
  are in) and a task restart bring them to the topic;
* an incompatible phase under ``dlq``: the rows are in the dead letter queue with the
  ``connectrt.schema.drift*`` headers naming the subject and the field, none in the topic, and
  the task keeps running.

Which phase is incompatible depends on the schema type, as the registry's rules say: Avro
accepts an optional field added or dropped; JSON Schema's open content model refuses a
property added; Protobuf fields are numbered by position (as Confluent's converter numbers
them), so dropping a column renumbers the fields after it. At the end every row is in the
topic or the DLQ, never both, never twice: 0 records lost.

One worker (in-process, REST on, registry on) serves the module.
"""

from __future__ import annotations

import json
import threading
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import pytest
import sqlalchemy as sa
from confluent_kafka import Consumer, KafkaError
from confluent_kafka import TopicPartition as KafkaTopicPartition

from connectrt.broker import EmbeddedBroker
from connectrt.converters.avro import AvroConverter
from connectrt.converters.jsonschema import JsonSchemaConverter
from connectrt.converters.protobuf import ProtobufConverter
from connectrt.converters.registry_converter import RegistryConverter
from connectrt.converters.schema_drift import (
    DRIFT_COMPATIBILITY_HEADER,
    DRIFT_FIELDS_HEADER,
    DRIFT_HEADER,
    DRIFT_SUBJECT_HEADER,
)
from connectrt.testing.harness import create_topic
from connectrt.testing.rest import RestWorker, rest_worker_props, running_rest_worker, wait_for

pytestmark = pytest.mark.integration

JDBC_SOURCE = "connectors.jdbc.source.JdbcSourceConnector"
FORMATS: dict[str, tuple[str, type[RegistryConverter]]] = {
    "avro": ("io.confluent.connect.avro.AvroConverter", AvroConverter),
    "json": ("io.confluent.connect.json.JsonSchemaConverter", JsonSchemaConverter),
    "protobuf": ("io.confluent.connect.protobuf.ProtobufConverter", ProtobufConverter),
}
PHASES = ("created", "added", "dropped", "retyped")
ROWS = 3  # per phase

INCOMPATIBLE: dict[tuple[str, str], dict[str, str]] = {
    # (format, policy) -> {phase: a field its incompatibility names}
    **{("avro", p): {"retyped": "qty"} for p in ("evolve", "fail", "dlq")},
    **{("json", p): {"added": "note", "retyped": "qty"} for p in ("evolve", "fail")},
    # Under dlq the subject keeps its first version: every later phase differs from it.
    ("json", "dlq"): {"added": "note", "dropped": "name", "retyped": "qty"},
    **{("protobuf", p): {"dropped": "qty", "retyped": "qty"} for p in ("evolve", "fail", "dlq")},
}
WAIT = 120.0


@pytest.fixture(scope="module")
def worker(broker: EmbeddedBroker) -> Iterator[RestWorker]:
    props = rest_worker_props(broker.bootstrap_servers)
    props.update(
        {
            "schema.registry.enable": "true",
            "schema.registry.listener": "http://127.0.0.1:0",
            "schema.registry.topic": f"schemas-drift-{uuid.uuid4().hex[:8]}",
        }
    )
    with running_rest_worker(broker.bootstrap_servers, props) as running:
        yield running


@dataclass
class Lane:
    """One JDBC source connector, its table, topic, subject and DLQ."""

    fmt: str
    policy: str
    engine: sa.Engine
    name: str
    topic: str
    dlq_topic: str
    reader: RegistryConverter
    events: list[str] = field(default_factory=list)

    @property
    def subject(self) -> str:
        return f"{self.topic}-value"


def _records(bootstrap: str, topic: str) -> list[tuple[bytes | None, dict[str, bytes]]]:
    """Every record of partition 0 of ``topic`` (value, headers); [] if it does not exist."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"read-{uuid.uuid4().hex[:8]}",
            "enable.partition.eof": True,
            "enable.auto.commit": False,
        }
    )
    try:
        if topic not in consumer.list_topics(topic, timeout=10).topics:
            return []
        consumer.assign([KafkaTopicPartition(topic, 0, -2)])
        out: list[tuple[bytes | None, dict[str, bytes]]] = []
        while True:
            message = consumer.poll(10)
            if message is None:
                raise TimeoutError(f"no end of partition of {topic} within 10 s")
            if message.error():
                if message.error().code() == KafkaError._PARTITION_EOF:
                    return out
                if "UNKNOWN_TOPIC" in str(message.error()):
                    return []
                raise AssertionError(f"reading {topic}: {message.error()}")
            headers = {k: v or b"" for k, v in message.headers() or []}
            out.append((message.value(), headers))
    finally:
        consumer.close()


class Drift:
    """The worker, its registry and the lanes of one test."""

    def __init__(self, worker: RestWorker, bootstrap: str) -> None:
        self.worker = worker
        self.bootstrap = bootstrap
        self.registry = httpx.Client(base_url=worker.process.registry.url, timeout=30)

    def topic_ids(self, lane: Lane) -> list[int]:
        out = []
        for value, _ in _records(self.bootstrap, lane.topic):
            struct = lane.reader.to_connect_data(lane.topic, value).value
            out.append(int(struct.get("id")))
        return out

    def dlq(self, lane: Lane) -> list[tuple[int, dict[str, bytes]]]:
        if lane.policy != "dlq":
            return []
        return [
            (int(json.loads(value or b"{}")["value"]["id"]), headers)
            for value, headers in _records(self.bootstrap, lane.dlq_topic)
        ]

    def task(self, lane: Lane) -> dict[str, Any]:
        status = self.worker.http.get(f"/connectors/{quote(lane.name)}/status").json()
        tasks = status.get("tasks") or [{}]
        return dict(tasks[0])

    def set_level(self, lane: Lane, level: str) -> None:
        answer = self.registry.put(f"/config/{quote(lane.subject)}", json={"compatibility": level})
        assert answer.status_code == 200, answer.text

    def versions(self, lane: Lane) -> list[int]:
        answer = self.registry.get(f"/subjects/{quote(lane.subject)}/versions")
        return list(answer.json()) if answer.status_code == 200 else []


def _start(drift: Drift, lane: Lane, path: Path) -> None:
    converter, _ = FORMATS[lane.fmt]
    create_topic(drift.bootstrap, lane.topic)
    drift.set_level(lane, "BACKWARD")
    config = {
        "connector.class": JDBC_SOURCE,
        "connection.url": f"jdbc:sqlite:{path}",
        "mode": "incrementing",
        "incrementing.column.name": "id",
        "table.whitelist": "items",
        "topic.prefix": lane.topic[: -len("items")],
        "poll.interval.ms": "100",
        "tasks.max": "1",
        "value.converter": converter,
        "value.converter.schema.registry.url": drift.worker.process.registry.url,
        "schema.drift": lane.policy,
    }
    if lane.policy == "dlq":
        config.update(
            {
                "errors.deadletterqueue.topic.name": lane.dlq_topic,
                "errors.deadletterqueue.topic.replication.factor": "1",
            }
        )
    answer = drift.worker.http.put(f"/connectors/{quote(lane.name)}/config", json=config)
    assert answer.status_code in (200, 201), answer.text


def _change(lane: Lane, phase: str, first_id: int) -> list[int]:
    """Apply ``phase``'s change to the lane's table and insert its rows; their ids."""
    ids = list(range(first_id, first_id + ROWS))
    with lane.engine.begin() as c:
        if phase == "created":
            c.exec_driver_sql(
                "CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT, qty INTEGER NOT NULL)"
            )
            rows = "".join(f"('n{i}', {i})," for i in ids).rstrip(",")
            c.exec_driver_sql(f"INSERT INTO items (name, qty) VALUES {rows}")
        elif phase == "added":
            c.exec_driver_sql("ALTER TABLE items ADD COLUMN note TEXT")
            rows = "".join(f"('n{i}', {i}, 'note {i}')," for i in ids).rstrip(",")
            c.exec_driver_sql(f"INSERT INTO items (name, qty, note) VALUES {rows}")
        elif phase == "dropped":
            c.exec_driver_sql("ALTER TABLE items DROP COLUMN name")
            rows = "".join(f"({i}, 'note {i}')," for i in ids).rstrip(",")
            c.exec_driver_sql(f"INSERT INTO items (qty, note) VALUES {rows}")
        else:  # SQLite retypes a column by rebuilding its table
            c.exec_driver_sql("ALTER TABLE items RENAME TO items_old")
            c.exec_driver_sql(
                "CREATE TABLE items (id INTEGER PRIMARY KEY, qty TEXT NOT NULL, note TEXT)"
            )
            c.exec_driver_sql("INSERT INTO items SELECT id, CAST(qty AS TEXT), note FROM items_old")
            c.exec_driver_sql("DROP TABLE items_old")
            rows = "".join(f"('qty {i}', 'note {i}')," for i in ids).rstrip(",")
            c.exec_driver_sql(f"INSERT INTO items (qty, note) VALUES {rows}")
    return ids


def _settle(drift: Drift, lane: Lane, phase: str, ids: list[int]) -> None:
    """Wait for ``phase``'s rows and check where they went (see the module docstring)."""
    expected_field = INCOMPATIBLE[(lane.fmt, lane.policy)].get(phase)
    what = f"{lane.fmt}/{lane.policy}, phase {phase}: rows {ids}"

    def in_topic() -> bool:
        return set(ids) <= set(drift.topic_ids(lane))

    if expected_field is None:
        wait_for(in_topic, WAIT, f"{what} in the topic")
        lane.events.append(f"{phase}: topic")
        return
    if lane.policy == "dlq":
        wait_for(lambda: set(ids) <= {i for i, _ in drift.dlq(lane)}, WAIT, f"{what} in the DLQ")
        assert not set(ids) & set(drift.topic_ids(lane)), what
        for row_id, headers in drift.dlq(lane):
            if row_id in ids:
                assert headers[DRIFT_SUBJECT_HEADER] == lane.subject.encode(), what
                assert headers[DRIFT_COMPATIBILITY_HEADER] == b"BACKWARD", what
                fields = headers[DRIFT_FIELDS_HEADER].decode().split(",")
                assert expected_field in fields, (what, fields)
                assert b"schema.drift=dlq" in headers[DRIFT_HEADER], what
        assert drift.task(lane).get("state") == "RUNNING", what
        lane.events.append(f"{phase}: dlq ({expected_field})")
        return
    try:
        wait_for(lambda: drift.task(lane).get("state") == "FAILED", WAIT, "the task FAILED")
    except TimeoutError as exc:
        raise AssertionError(
            f"{what}: the task did not fail: {drift.task(lane)}; topic {drift.topic_ids(lane)}; "
            f"versions {drift.versions(lane)}"
        ) from exc
    trace = str(drift.task(lane).get("trace"))
    if lane.policy == "fail":
        assert "Schema drift" in trace and f"subject {lane.subject}" in trace, trace
        assert any(f"{expected_field} {how}" in trace for how in ("changed", "added", "removed")), (
            trace
        )
        assert "compatibility BACKWARD" in trace, trace
    else:
        assert "incompatible" in trace, trace
    assert not set(ids) & set(drift.topic_ids(lane)), f"{what}: unread while the task is failed"
    drift.set_level(lane, "NONE")  # the fix
    answer = drift.worker.http.post(f"/connectors/{quote(lane.name)}/tasks/0/restart")
    assert answer.status_code in (200, 202, 204), answer.text
    wait_for(in_topic, WAIT, f"{what} in the topic after the fix")
    drift.set_level(lane, "BACKWARD")
    lane.events.append(f"{phase}: failed ({expected_field}), then topic")


def _settle_all(drift: Drift, lanes: list[Lane], phase: str, ids: list[int]) -> None:
    """:func:`_settle` every lane at once (their connectors run side by side)."""
    errors: list[BaseException] = []

    def settle(lane: Lane) -> None:
        try:
            _settle(drift, lane, phase, ids)
        except BaseException as exc:  # surfaced below
            errors.append(exc)

    threads = [threading.Thread(target=settle, args=(lane,)) for lane in lanes]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(WAIT * 4)
    if errors:
        raise errors[0]


@pytest.mark.parametrize("policy", ["evolve", "fail", "dlq"])
def test_a_table_that_gains_loses_and_retypes_columns(
    worker: RestWorker, broker: EmbeddedBroker, tmp_path: Path, policy: str
) -> None:
    drift = Drift(worker, broker.bootstrap_servers)
    run = uuid.uuid4().hex[:6]
    lanes: list[Lane] = []
    paths: dict[str, Path] = {}
    try:
        for fmt, (_, reader_class) in FORMATS.items():
            reader = reader_class()
            reader.configure({"schema.registry.url": worker.process.registry.url}, False)
            path = tmp_path / f"{fmt}.db"
            paths[fmt] = path
            lanes.append(
                Lane(
                    fmt,
                    policy,
                    sa.create_engine(f"sqlite:///{path}"),
                    f"drift-{policy}-{fmt}-{run}",
                    f"drift-{policy}-{fmt}-{run}-items",
                    f"drift-{policy}-{fmt}-{run}-dlq",
                    reader,
                )
            )
        next_id = 1
        for phase in PHASES:
            ids = []
            for lane in lanes:
                ids = _change(lane, phase, next_id)
                if phase == "created":
                    _start(drift, lane, paths[lane.fmt])
            _settle_all(drift, lanes, phase, ids)
            next_id += ROWS
        every = set(range(1, next_id))
        for lane in lanes:
            topic, dlq = drift.topic_ids(lane), [i for i, _ in drift.dlq(lane)]
            assert len(topic) == len(set(topic)) and len(dlq) == len(set(dlq)), (lane.fmt, topic)
            assert not set(topic) & set(dlq), lane.fmt
            assert set(topic) | set(dlq) == every, (lane.fmt, lane.events)  # 0 records lost
            # Incompatible schemas never became versions under fail and dlq.
            compatible = 1 + sum(
                1
                for phase in PHASES[1:]
                if phase not in INCOMPATIBLE[(lane.fmt, policy)] or policy != "dlq"
            )
            assert len(drift.versions(lane)) == compatible, (lane.fmt, lane.events)
    finally:
        worker.delete_connectors()
        drift.registry.close()
        for lane in lanes:
            lane.reader.close()
            lane.engine.dispose()
