"""Shared internal topics both ways: Kafka Connect 4.4 and connectrt take over each other.

No import tool here: the second cluster is started on the first one's ``group.id`` and
config/offset/status topics and must find everything there.

(a) Kafka Connect runs a FileStreamSource and a FileStreamSink (StringConverter), a PAUSED
source and a sink whose key converter (``LongConverter``) only Kafka Connect has; after N lines
it is stopped and a connectrt worker starts on its group and topics. connectrt lists the four
connectors with Kafka Connect's configs and target states, runs the pair, resumes the source at
Kafka Connect's committed byte position and the sink at its consumer group's offset: after M
more lines the topic holds exactly N+M records and the sink file lines 0..N+M-1 once each. A
connector of a class connectrt lacks (MirrorMaker 2's source, its record copied in Kafka
Connect's own format: this Kafka Connect has only the FileStream plugins) is added to the config
topic before the take-over. Both one-sided connectors are listed, their configs kept (never a
tombstone in the config topic) and reported FAILED with the missing class named, in the status
answer and in the log.

(b) The reverse, on topics connectrt created: a connectrt worker runs a FileStream pair
(JsonConverter), a STOPPED source and a Datagen source (a class only connectrt has); it is
stopped and Kafka Connect starts on its group and topics: the same listing and exact counts,
the Datagen connector listed and reported FAILED (never dropped), and nothing in Kafka Connect's
log about records of the internal topics it cannot parse.

Needs the Apache Kafka broker (``CONNECTRT_TEST_BROKER=kafka``) and a JDK 17+ (javac). Each
direction starts one Kafka Connect JVM and one connectrt worker, one after the other (they
share a group), and stops both before the next.
"""

from __future__ import annotations

import json
import logging
import re
import uuid
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path
from typing import Any

import httpx
import pytest
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition

from connectrt.broker import EmbeddedBroker
from connectrt.testing.broker_choice import SessionBroker
from connectrt.testing.java_runtime import JavaUnavailable
from connectrt.testing.kafka_connect import KafkaConnect
from connectrt.testing.kafka_jars import MavenUnavailable
from connectrt.testing.rest import RestWorker, rest_worker_props, start_rest_worker, wait_for

pytestmark = [pytest.mark.integration, pytest.mark.java]

N = 300  # lines the first cluster reads
M = 200  # lines appended after the take-over, read by the second cluster
TIMEOUT = 120.0  # every wait: a busy machine, a JVM and a worker on two cores
FILE_SOURCE = "org.apache.kafka.connect.file.FileStreamSourceConnector"
FILE_SINK = "org.apache.kafka.connect.file.FileStreamSinkConnector"
STRING = "org.apache.kafka.connect.storage.StringConverter"
LONG = "org.apache.kafka.connect.converters.LongConverter"
DATAGEN = "io.confluent.kafka.connect.datagen.DatagenConnector"
# A connector class of a Kafka Connect cluster that connectrt does not have (MirrorMaker 2's).
MIRROR = "org.apache.kafka.connect.mirror.MirrorSourceConnector"
# Kafka Connect's storage classes, whose complaints name records they cannot read.
_STORAGE_COMPLAINT = re.compile(
    r"^\[[^\]]+\] (ERROR|WARN) .*\(org\.apache\.kafka\.connect\.storage\."
)
_PARSE_COMPLAINT = re.compile(
    r"Discarding|invalid key|wrong format|Failed to convert|Failed to deserialize"
    r"|could not be parsed|Unexpected|Ignoring task configuration",
    re.IGNORECASE,
)


# -- helpers ---------------------------------------------------------------------------------


def _lines(start: int, stop: int) -> str:
    return "".join(f"line {i}\n" for i in range(start, stop))


def _ok(response: httpx.Response) -> Any:
    assert response.is_success, f"{response.request.method} {response.request.url}: {response.text}"
    return response.json() if response.content else None


def _status(http: httpx.Client, name: str) -> dict[str, Any]:
    response = http.get(f"/connectors/{name}/status")
    return dict(response.json()) if response.status_code == 200 else {}


def _state(http: httpx.Client, name: str) -> str | None:
    return _status(http, name).get("connector", {}).get("state")


def _running(http: httpx.Client, name: str) -> bool:
    """The connector and all (at least one) of its tasks RUNNING."""
    status = _status(http, name)
    tasks = status.get("tasks", [])
    return (
        status.get("connector", {}).get("state") == "RUNNING"
        and bool(tasks)
        and all(t["state"] == "RUNNING" for t in tasks)
    )


def _offsets(http: httpx.Client, name: str) -> list[dict[str, Any]]:
    response = http.get(f"/connectors/{name}/offsets")
    return list(response.json()["offsets"]) if response.status_code == 200 else []


def _position(http: httpx.Client, name: str) -> int | None:
    """A FileStreamSource's committed byte position (None: nothing committed)."""
    found = [o["offset"]["position"] for o in _offsets(http, name) if o.get("offset")]
    return found[0] if found else None


def _comparable(offsets: list[dict[str, Any]]) -> list[str]:
    return sorted(json.dumps(o, sort_keys=True) for o in offsets)


def _sink_offset(http: httpx.Client, name: str) -> int | None:
    found = [o["offset"]["kafka_offset"] for o in _offsets(http, name) if o.get("offset")]
    return found[0] if found else None


def _consume(
    bootstrap: str, topic: str, partitions: int = 1
) -> list[tuple[bytes | None, bytes | None]]:
    """Every (key, value) of ``topic`` (its first ``partitions`` partitions), to the end."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"probe-{uuid.uuid4().hex}",
            "enable.partition.eof": True,
            "enable.auto.commit": False,
        }
    )
    records: list[tuple[bytes | None, bytes | None]] = []
    try:
        consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
        at_end: set[int] = set()
        while len(at_end) < partitions:
            message = consumer.poll(30)
            assert message is not None, f"no answer from {topic} within 30 s"
            error = message.error()
            if error is not None:
                assert error.code() == KafkaError._PARTITION_EOF, error
                at_end.add(message.partition())
                continue
            records.append((message.key(), message.value()))
    finally:
        consumer.close()
    return records


def _topic_values(bootstrap: str, topic: str) -> list[str]:
    """The values of the data topic as text (a JsonConverter envelope unwrapped)."""
    values = []
    for _, raw in _consume(bootstrap, topic):
        assert raw is not None
        text = raw.decode()
        if text.startswith("{"):
            decoded = json.loads(text)
            text = decoded["payload"] if isinstance(decoded, dict) else decoded
        values.append(text)
    return values


def _config_topic_keys(bootstrap: str, topic: str) -> tuple[set[str], set[str]]:
    """(keys with a value, keys ever tombstoned) in the config topic."""
    written: set[str] = set()
    tombstoned: set[str] = set()
    for key, value in _consume(bootstrap, topic):
        name = (key or b"").decode()
        (written if value is not None else tombstoned).add(name)
    return written, tombstoned


def _add_foreign_connector(bootstrap: str, topic: str, like: str, name: str) -> dict[str, str]:
    """Copy connector ``like``'s config record in the config topic (as Kafka Connect wrote it)
    under ``name`` with the class :data:`MIRROR`: a connector of a class connectrt lacks, as a
    Kafka Connect cluster with more plugins would have stored it. Returns its config."""
    records = dict(_consume(bootstrap, topic))
    stored = json.loads(records[f"connector-{like}".encode()] or b"{}")
    config = {**stored["properties"], "name": name, "connector.class": MIRROR}
    producer = Producer({"bootstrap.servers": bootstrap})
    producer.produce(topic, key=f"connector-{name}", value=json.dumps({"properties": config}))
    assert producer.flush(30) == 0
    return dict(config)


def _exactly_once(path: Path, count: int) -> None:
    """The sink file holds lines 0..count-1, each once, in order."""
    written = path.read_text("utf-8").splitlines()
    expected = [f"line {i}" for i in range(count)]
    lost = len(set(expected) - set(written))
    duplicated = len(written) - len(set(written))
    assert (lost, duplicated) == (0, 0), f"{lost} lost, {duplicated} duplicated"
    assert written == expected


def _took_over(
    http: httpx.Client,
    who: str,
    configs: dict[str, Any],
    offsets: dict[str, list[dict[str, Any]]],
    held: tuple[str, str],
) -> None:
    """The cluster that took over lists the same connectors with the same configs, runs the
    FileStream pair (the keys of ``offsets``) from the offsets the other side committed, and
    keeps connector ``held[0]`` in state ``held[1]``."""
    assert sorted(_ok(http.get("/connectors"))) == sorted(configs)
    for name in configs:
        assert _ok(http.get(f"/connectors/{name}/config")) == configs[name], name
    for name in offsets:
        _wait(partial(_running, http, name), f"{name} RUNNING on {who}")
    held_name, state = held
    _wait(lambda: _state(http, held_name) == state, f"{held_name} {state} on {who}")
    for name in offsets:
        assert _comparable(_offsets(http, name)) == _comparable(offsets[name]), name


def _resumes(
    http: httpx.Client,
    who: str,
    pair: tuple[str, str],
    files: tuple[Path, Path],
    bootstrap: str,
    topic: str,
) -> None:
    """``M`` more lines in the source file: the cluster that took over resumes where the other
    committed, and the topic and the sink's file hold every line once, in order."""
    src, snk = pair
    source_file, sink_file = files
    with source_file.open("a", encoding="utf-8") as f:
        f.write(_lines(N, N + M))
    size = len(_lines(0, N + M).encode())
    _wait(lambda: _position(http, src) == size, f"{who}'s source to commit {size}")
    _wait(lambda: _sink_offset(http, snk) == N + M, f"{who}'s sink to commit {N + M}")
    assert _topic_values(bootstrap, topic) == [f"line {i}" for i in range(N + M)]
    _exactly_once(sink_file, N + M)


def _wait(predicate: Callable[[], bool], what: str) -> None:
    wait_for(predicate, TIMEOUT, what)


# -- fixtures --------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def bootstrap(broker: SessionBroker) -> str:
    if isinstance(broker, EmbeddedBroker):
        pytest.skip("Kafka Connect needs Apache Kafka: run with CONNECTRT_TEST_BROKER=kafka")
    return broker.bootstrap_servers


class _Side:
    """Starts and stops the two clusters of one direction; everything stopped at teardown."""

    def __init__(self, request: pytest.FixtureRequest) -> None:
        self._request = request
        self.connect: KafkaConnect | None = None
        self.worker: RestWorker | None = None

    def start_connect(
        self, bootstrap: str, properties: dict[str, str] | None = None
    ) -> KafkaConnect:
        connect = KafkaConnect(bootstrap, properties=properties)
        self.connect = connect
        try:
            connect.start()
        except (JavaUnavailable, MavenUnavailable) as exc:
            # Only a missing JDK or jars skip: a Kafka Connect that cannot start on the other
            # side's topics is what this test is for.
            pytest.skip(f"Kafka Connect cannot run here: {exc}")
        return connect

    def stop_connect(self) -> None:
        if self.connect is not None:
            if self._request.session.testsfailed:
                self.connect.keep_data = True
                print(f"Kafka Connect's log kept: {self.connect.log_path}")
            self.connect.stop()
            self.connect = None

    def start_worker(self, bootstrap: str, props: dict[str, str]) -> RestWorker:
        self.worker = start_rest_worker(bootstrap, props)
        return self.worker

    def stop_worker(self) -> None:
        if self.worker is not None:
            self.worker.stop()
            self.worker = None

    def close(self) -> None:
        self.stop_worker()
        self.stop_connect()


@pytest.fixture
def side(request: pytest.FixtureRequest) -> Iterator[_Side]:
    s = _Side(request)
    try:
        yield s
    finally:
        s.close()


# -- (a) Kafka Connect, then connectrt -------------------------------------------------------


def test_connectrt_takes_over_a_kafka_connect_cluster(
    bootstrap: str,
    side: _Side,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    run = uuid.uuid4().hex[:6]
    src, snk, paused, kc_only = (f"a{run}-{s}" for s in ("src", "snk", "paused", "kconly"))
    topic = f"a{run}-lines"
    source_file, sink_file = tmp_path / "in.txt", tmp_path / "out.txt"
    source_file.write_text(_lines(0, N), "utf-8")
    (tmp_path / "idle.txt").write_text("", "utf-8")
    configs = {
        src: {
            "connector.class": FILE_SOURCE,
            "file": str(source_file),
            "topic": topic,
            "tasks.max": "1",
            "value.converter": STRING,
        },
        snk: {
            "connector.class": FILE_SINK,
            "file": str(sink_file),
            "topics": topic,
            "tasks.max": "1",
            "value.converter": STRING,
        },
        paused: {
            "connector.class": "FileStreamSource",
            "file": str(tmp_path / "idle.txt"),
            "topic": f"a{run}-idle",
            "tasks.max": "1",
        },
        kc_only: {
            "connector.class": FILE_SINK,
            "file": str(tmp_path / "kconly.txt"),
            "topics": topic,
            "tasks.max": "1",
            "key.converter": LONG,
            "value.converter": STRING,
        },
    }

    connect = side.start_connect(bootstrap)
    with httpx.Client(base_url=connect.url, timeout=60) as kc:
        for name, config in configs.items():
            _ok(kc.put(f"/connectors/{name}/config", json=config))
        _ok(kc.put(f"/connectors/{paused}/pause"))
        size = len(_lines(0, N).encode())
        _wait(lambda: _position(kc, src) == size, f"Kafka Connect's source to commit {size}")
        _wait(lambda: _sink_offset(kc, snk) == N, f"Kafka Connect's sink to commit offset {N}")
        _wait(lambda: _state(kc, paused) == "PAUSED", f"{paused} PAUSED on Kafka Connect")
        _wait(lambda: _running(kc, kc_only), f"{kc_only} RUNNING on Kafka Connect")
        kc_configs = {n: _ok(kc.get(f"/connectors/{n}/config")) for n in configs}
        kc_offsets = {n: _offsets(kc, n) for n in (src, snk)}
    side.stop_connect()
    assert len(_topic_values(bootstrap, topic)) == N
    config_topic = connect.topics["config.storage.topic"]
    foreign = f"a{run}-mirror"
    kc_configs[foreign] = _add_foreign_connector(bootstrap, config_topic, src, foreign)

    props = rest_worker_props(
        bootstrap,
        **{"group.id": connect.group_id, **connect.topics, "status.storage.partitions": "1"},
    )
    with caplog.at_level(logging.WARNING):
        worker = side.start_worker(bootstrap, props)
        http = worker.http
        _took_over(http, "connectrt", kc_configs, kc_offsets, (paused, "PAUSED"))
        _resumes(http, "connectrt", (src, snk), (source_file, sink_file), bootstrap, topic)

        # The connector connectrt cannot run: listed, config kept, reported FAILED and logged.
        def reported() -> bool:
            status = _status(http, kc_only)
            states = [status.get("connector", {}).get("state")]
            states += [t["state"] for t in status.get("tasks", [])]
            return "FAILED" in states

        _wait(reported, f"{kc_only} reported FAILED on connectrt")
        status = _status(http, kc_only)
        traces = [status["connector"].get("trace", "")]
        traces += [t.get("trace", "") for t in status.get("tasks", [])]
        assert any("LongConverter" in (t or "") for t in traces), status
        _wait(lambda: _state(http, foreign) == "FAILED", f"{foreign} FAILED on connectrt")
        assert MIRROR in _status(http, foreign)["connector"].get("trace", "")
        assert _ok(http.get(f"/connectors/{foreign}"))["config"] == kc_configs[foreign]
        listed = _ok(http.get("/connectors", params={"expand": ["status", "info"]}))
        assert listed[foreign]["status"]["connector"]["state"] == "FAILED"
        assert listed[foreign]["info"]["config"] == kc_configs[foreign]
        logged = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
        assert any(kc_only in m and "LongConverter" in m for m in logged), logged
        assert any(foreign in m and MIRROR in m for m in logged), logged
    side.stop_worker()
    written, tombstoned = _config_topic_keys(bootstrap, config_topic)
    for name in (kc_only, foreign):
        assert f"connector-{name}" in written
        assert not {k for k in tombstoned if k.endswith(name)}, tombstoned


# -- (b) connectrt, then Kafka Connect -------------------------------------------------------


def test_kafka_connect_takes_over_a_connectrt_cluster(
    bootstrap: str, side: _Side, tmp_path: Path
) -> None:
    run = uuid.uuid4().hex[:6]
    src, snk, stopped, cr_only = (f"b{run}-{s}" for s in ("src", "snk", "stopped", "cronly"))
    topic = f"b{run}-lines"
    source_file, sink_file = tmp_path / "in.txt", tmp_path / "out.txt"
    source_file.write_text(_lines(0, N), "utf-8")
    (tmp_path / "idle.txt").write_text(_lines(0, 5), "utf-8")
    configs: dict[str, dict[str, str]] = {
        src: {"connector.class": FILE_SOURCE, "file": str(source_file), "topic": topic},
        snk: {"connector.class": "FileStreamSink", "file": str(sink_file), "topics": topic},
        stopped: {
            "connector.class": FILE_SOURCE,
            "file": str(tmp_path / "idle.txt"),
            "topic": f"b{run}-idle",
        },
        cr_only: {
            "connector.class": DATAGEN,
            "kafka.topic": f"b{run}-datagen",
            "quickstart": "users",
            "iterations": "10",
            "max.interval": "1",
        },
    }
    props = rest_worker_props(bootstrap)
    worker = side.start_worker(bootstrap, props)
    http = worker.http
    for name, config in configs.items():
        body: dict[str, Any] = {"name": name, "config": {"tasks.max": "1", **config}}
        if name == stopped:
            body["initial_state"] = "STOPPED"
        _ok(http.post("/connectors", json=body))
    size = len(_lines(0, N).encode())
    _wait(lambda: _position(http, src) == size, f"connectrt's source to commit {size}")
    _wait(lambda: _sink_offset(http, snk) == N, f"connectrt's sink to commit offset {N}")
    _wait(lambda: _state(http, stopped) == "STOPPED", f"{stopped} STOPPED on connectrt")
    _wait(lambda: _running(http, cr_only) or _state(http, cr_only) == "RUNNING", "datagen runs")
    cr_configs = {n: _ok(http.get(f"/connectors/{n}/config")) for n in configs}
    cr_offsets = {n: _offsets(http, n) for n in (src, snk)}
    side.stop_worker()
    assert len(_topic_values(bootstrap, topic)) == N

    connect = side.start_connect(
        bootstrap,
        {
            "group.id": props["group.id"],
            "config.storage.topic": props["config.storage.topic"],
            "offset.storage.topic": props["offset.storage.topic"],
            "status.storage.topic": props["status.storage.topic"],
        },
    )
    with httpx.Client(base_url=connect.url, timeout=60) as kc:
        _took_over(kc, "Kafka Connect", cr_configs, cr_offsets, (stopped, "STOPPED"))
        _resumes(kc, "Kafka Connect", (src, snk), (source_file, sink_file), bootstrap, topic)

        # The connector Kafka Connect cannot run: listed with its config, reported FAILED.
        _wait(lambda: _state(kc, cr_only) == "FAILED", f"{cr_only} FAILED on Kafka Connect")
        assert "DatagenConnector" in _status(kc, cr_only)["connector"].get("trace", "")
        listed = _ok(kc.get("/connectors", params={"expand": ["status", "info"]}))
        assert listed[cr_only]["status"]["connector"]["state"] == "FAILED"
        assert listed[cr_only]["info"]["config"] == cr_configs[cr_only]
        log = connect.log_path.read_text("utf-8", errors="replace").splitlines()
    side.stop_connect()

    complaints = [line for line in log if _STORAGE_COMPLAINT.match(line)]
    complaints += [line for line in log if " ERROR " in line[:40] and _PARSE_COMPLAINT.search(line)]
    assert complaints == [], "\n".join(complaints[:20])
    # No task of the FileStream pair failed on Kafka Connect (a task config it cannot load).
    failed = [line for line in log if " ERROR " in line[:40] and (src in line or snk in line)]
    assert failed == [], "\n".join(failed[:20])
    written, tombstoned = _config_topic_keys(bootstrap, props["config.storage.topic"])
    assert f"connector-{cr_only}" in written
    assert not {k for k in tombstoned if k.endswith(cr_only)}, tombstoned
