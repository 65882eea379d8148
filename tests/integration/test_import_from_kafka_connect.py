"""``connectrt import --from URL`` against a real Kafka Connect 4.4 cluster.

One Kafka Connect JVM (distributed mode, :mod:`connectrt.testing.kafka_connect`) and one
connectrt worker run on the session's Apache Kafka broker. Kafka Connect runs two
FileStreamSource connectors (one then PAUSED) and a FileStreamSink, each with committed offsets
after N lines, plus a STOPPED sink whose key converter connectrt does not have. The dry run
reports that one as blocked (and why) and the three as to be created; the import (with
``--stop-source``, so Kafka Connect's connectors stop before connectrt's start) creates them
with Kafka Connect's configs, states and offsets; a second import reports all unchanged; after
M more lines in each file, each source topic holds exactly the M new records after the import
point (0 lost, 0 duplicated, counted with a consumer) and the sink file every line once. Then a
third run leaves the sources alone (their offsets have moved on) and ``--overwrite`` puts one
back as Kafka Connect has it.

Needs the Apache Kafka broker (``CONNECTRT_TEST_BROKER=kafka``) and a JDK 17+ (javac).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from confluent_kafka import Consumer, KafkaError, TopicPartition

from connectrt.broker import EmbeddedBroker
from connectrt.cli import main
from connectrt.errors import ConnectError
from connectrt.testing.broker_choice import SessionBroker
from connectrt.testing.java_runtime import JavaUnavailable
from connectrt.testing.kafka_connect import KafkaConnect
from connectrt.testing.rest import RestWorker, start_rest_worker, wait_for

pytestmark = [pytest.mark.integration, pytest.mark.java]

N = 200  # lines each source reads on Kafka Connect
M = 150  # lines appended after the import, read by connectrt
TIMEOUT = 120.0  # every wait: a busy machine, two JVMs and a worker on two cores
SECRET = "hunter2-literal-secret"
REFERENCE = "${vault:secret/db:password}"


@dataclass
class Clusters:
    connect: KafkaConnect
    worker: RestWorker
    kc: httpx.Client
    bootstrap: str
    tmp: Path
    run: str

    def name(self, suffix: str) -> str:
        return f"imp{self.run}-{suffix}"

    def file(self, suffix: str) -> Path:
        return self.tmp / f"{suffix}.txt"


def _lines(start: int, stop: int) -> str:
    return "".join(f"line {i}\n" for i in range(start, stop))


def _ok(response: httpx.Response) -> Any:
    assert response.is_success, f"{response.request.method} {response.request.url}: {response.text}"
    return response.json() if response.content else None


def _state(http: httpx.Client, name: str) -> str | None:
    response = http.get(f"/connectors/{name}/status")
    return response.json()["connector"]["state"] if response.status_code == 200 else None


def _offsets(http: httpx.Client, name: str) -> list[dict[str, Any]]:
    response = http.get(f"/connectors/{name}/offsets")
    return list(response.json()["offsets"]) if response.status_code == 200 else []


def _position(http: httpx.Client, name: str) -> int | None:
    """A FileStreamSource's committed byte position (None: nothing committed)."""
    found = [o["offset"]["position"] for o in _offsets(http, name) if o.get("offset")]
    return found[0] if found else None


def _sink_offset(http: httpx.Client, name: str) -> int | None:
    found = [o["offset"]["kafka_offset"] for o in _offsets(http, name) if o.get("offset")]
    return found[0] if found else None


def _comparable(offsets: list[dict[str, Any]]) -> list[str]:
    return sorted(json.dumps(o, sort_keys=True) for o in offsets)


def _end_offset(bootstrap: str, topic: str) -> int:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"probe-{uuid.uuid4().hex}"})
    try:
        return int(consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=30)[1])
    finally:
        consumer.close()


def _values_from(bootstrap: str, topic: str, start: int) -> list[str]:
    """The values of ``topic``'s partition 0 from offset ``start`` to its end, as text (the
    JSON converter's envelope unwrapped)."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"count-{uuid.uuid4().hex}",
            "enable.partition.eof": True,
            "enable.auto.commit": False,
        }
    )
    values: list[str] = []
    try:
        consumer.assign([TopicPartition(topic, 0, start)])
        while True:
            message = consumer.poll(30)
            assert message is not None, f"no answer from {topic} within 30 s"
            error = message.error()
            if error is not None:
                assert error.code() == KafkaError._PARTITION_EOF, error
                return values
            decoded = json.loads(message.value())
            values.append(decoded["payload"] if isinstance(decoded, dict) else decoded)
    finally:
        consumer.close()


def _import(*args: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, dict[str, Any], str]:
    """Run ``connectrt import ... --json`` in this process; (status, parsed report, stderr)."""
    capsys.readouterr()
    status = main(["import", *args, "--json"])
    out, err = capsys.readouterr()
    return status, json.loads(out), err


@pytest.fixture(scope="module")
def clusters(
    broker: SessionBroker, tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest
) -> Iterator[Clusters]:
    """Kafka Connect with its four connectors at their committed offsets, and an empty connectrt
    worker, on the one broker."""
    if isinstance(broker, EmbeddedBroker):
        pytest.skip("Kafka Connect needs Apache Kafka: run with CONNECTRT_TEST_BROKER=kafka")
    connect = KafkaConnect(broker.bootstrap_servers)
    with ThreadPoolExecutor(1) as pool:
        started = pool.submit(connect.start)
        worker: RestWorker | None = None
        try:
            worker = start_rest_worker(broker.bootstrap_servers)
            started.result()
        except (JavaUnavailable, ConnectError) as exc:
            if worker is not None:
                worker.stop()
            connect.stop()
            pytest.skip(f"Kafka Connect cannot run here: {exc}")
    c = Clusters(
        connect,
        worker,
        httpx.Client(base_url=connect.url, timeout=60),
        broker.bootstrap_servers,
        tmp_path_factory.mktemp("import"),
        uuid.uuid4().hex[:6],
    )
    set_up = False
    try:
        _set_up_kafka_connect(c)
        set_up = True
        yield c
    finally:
        c.kc.close()
        worker.stop()
        if request.session.testsfailed or not set_up:
            connect.keep_data = True
            print(f"Kafka Connect's log kept: {connect.log_path}")
        connect.stop()


def _set_up_kafka_connect(c: Clusters) -> None:
    for suffix in ("in1", "in2"):
        c.file(suffix).write_text(_lines(0, N), "utf-8")
    source = "org.apache.kafka.connect.file.FileStreamSourceConnector"
    sink = "org.apache.kafka.connect.file.FileStreamSinkConnector"
    connectors: dict[str, dict[str, Any]] = {
        "src1": {
            "config": {
                "connector.class": source,
                "file": str(c.file("in1")),
                "topic": c.name("t1"),
                "tasks.max": "1",
                # A secret as a literal and one as a config provider reference (a provider
                # neither side configures: the reference must be copied as written).
                "db.password": SECRET,
                "api.token": REFERENCE,
            }
        },
        "src2": {
            "config": {
                "connector.class": "FileStreamSource",
                "file": str(c.file("in2")),
                "topic": c.name("t2"),
                "tasks.max": "1",
            }
        },
        "snk": {
            "config": {
                "connector.class": sink,
                "file": str(c.file("out")),
                "topics": c.name("t1"),
                "tasks.max": "1",
            }
        },
        "longkey": {
            "config": {
                "connector.class": sink,
                "file": str(c.file("out-long")),
                "topics": c.name("t1"),
                "key.converter": "org.apache.kafka.connect.converters.LongConverter",
            },
            "initial_state": "STOPPED",
        },
    }
    for suffix, body in connectors.items():
        _ok(c.kc.post("/connectors", json={"name": c.name(suffix), **body}))
    size = len(_lines(0, N).encode())
    for suffix in ("src1", "src2"):
        wait_for(
            lambda s=suffix: _position(c.kc, c.name(s)) == size,  # type: ignore[misc]
            TIMEOUT,
            f"Kafka Connect's {suffix} to commit position {size}",
        )
    wait_for(
        lambda: _sink_offset(c.kc, c.name("snk")) == N,
        TIMEOUT,
        f"Kafka Connect's sink to commit offset {N}",
    )
    _ok(c.kc.put(f"/connectors/{c.name('src2')}/pause"))
    wait_for(lambda: _state(c.kc, c.name("src2")) == "PAUSED", TIMEOUT, "src2 PAUSED")


def test_dry_run_reports_what_cannot_run_and_changes_nothing(
    clusters: Clusters, capsys: pytest.CaptureFixture[str]
) -> None:
    c = clusters
    status, report, _ = _import(
        "--from", c.connect.url, "--url", c.worker.url, "--dry-run", capsys=capsys
    )
    by_name = {e["name"]: e for e in report["connectors"] if e["name"].startswith(c.name(""))}
    assert status == 1  # one connector is blocked
    assert {n: e["action"] for n, e in by_name.items()} == {
        c.name("src1"): "create",
        c.name("src2"): "create",
        c.name("snk"): "create",
        c.name("longkey"): "blocked",
    }
    blocked = by_name[c.name("longkey")]
    assert any(
        p.startswith("key.converter:") and "LongConverter" in p and "not installed" in p
        for p in blocked["problems"]
    ), blocked["problems"]
    assert blocked["state"] == "STOPPED"
    assert by_name[c.name("src2")]["state"] == "PAUSED"
    assert by_name[c.name("src1")]["state"] == "RUNNING"
    size = len(_lines(0, N).encode())
    assert by_name[c.name("src1")]["offsets"] == [
        {"partition": {"filename": str(c.file("in1"))}, "offset": {"position": size}}
    ]
    # The provider reference is a warning to check, and secrets never show.
    src1 = by_name[c.name("src1")]
    assert any("config provider 'vault'" in w for w in src1["warnings"])
    assert src1["config"]["db.password"] == "[hidden]"
    assert src1["config"]["api.token"] == REFERENCE
    assert SECRET not in json.dumps(report)
    # Nothing changed on either side.
    assert c.worker.http.get("/connectors").json() == []
    assert _state(c.kc, c.name("src1")) == "RUNNING"

    # The table form says the same, without the secret.
    capsys.readouterr()
    assert main(["import", "--from", c.connect.url, "--url", c.worker.url, "--dry-run"]) == 1
    text = capsys.readouterr().out
    assert "dry run: nothing changed" in text
    assert f"{c.name('longkey')}:" in text and "cannot run: key.converter:" in text
    assert SECRET not in text


def test_import_resumes_from_kafka_connects_offsets_without_loss_or_duplicates(
    clusters: Clusters, capsys: pytest.CaptureFixture[str]
) -> None:
    c = clusters
    wanted = [c.name(s) for s in ("src1", "src2", "snk")]
    only = [a for n in wanted for a in ("--connector", n)]
    kc_offsets = {n: _offsets(c.kc, n) for n in wanted}
    kc_configs = {n: _ok(c.kc.get(f"/connectors/{n}/config")) for n in wanted}
    marks = {t: _end_offset(c.bootstrap, c.name(t)) for t in ("t1", "t2")}
    assert marks == {"t1": N, "t2": N}

    status, report, err = _import(
        "--from", c.connect.url, "--url", c.worker.url, "--stop-source", *only, capsys=capsys
    )
    assert status == 0, (report, err)
    assert {e["name"]: e["result"] for e in report["connectors"]} == dict.fromkeys(
        wanted, "created"
    )
    assert SECRET not in json.dumps(report)
    for n in wanted:  # Kafka Connect's connectors stopped before connectrt's started
        assert _state(c.kc, n) == "STOPPED"
    http = c.worker.http
    expected_states = {
        c.name("src1"): "RUNNING",
        c.name("src2"): "PAUSED",
        c.name("snk"): "RUNNING",
    }
    for n, state in expected_states.items():
        wait_for(lambda n=n, s=state: _state(http, n) == s, TIMEOUT, f"{n} {state} on connectrt")  # type: ignore[misc]
    # Configs as written (the reference unresolved), offsets as Kafka Connect committed them.
    src1_config = _ok(http.get(f"/connectors/{c.name('src1')}/config"))
    assert src1_config["api.token"] == REFERENCE
    assert {k: v for k, v in src1_config.items() if k != "db.password"} == {
        k: v for k, v in kc_configs[c.name("src1")].items() if k != "db.password"
    }
    for n in wanted:
        assert _comparable(_offsets(http, n)) == _comparable(kc_offsets[n]), n

    # Idempotent: a second run changes nothing.
    status, again, err = _import(
        "--from", c.connect.url, "--url", c.worker.url, *only, capsys=capsys
    )
    assert status == 0, (again, err)
    assert {e["name"]: e["result"] for e in again["connectors"]} == dict.fromkeys(
        wanted, "unchanged"
    )

    # M more lines each; connectrt resumes where Kafka Connect stopped.
    for suffix in ("in1", "in2"):
        with c.file(suffix).open("a", encoding="utf-8") as f:
            f.write(_lines(N, N + M))
    _ok(http.put(f"/connectors/{c.name('src2')}/resume"))
    size = len(_lines(0, N + M).encode())
    for suffix in ("src1", "src2"):
        wait_for(
            lambda s=suffix: _position(http, c.name(s)) == size,  # type: ignore[misc]
            TIMEOUT,
            f"connectrt's {suffix} to commit position {size}",
        )
    new_lines = [f"line {i}" for i in range(N, N + M)]
    for topic in ("t1", "t2"):
        after = _values_from(c.bootstrap, c.name(topic), marks[topic])
        assert after == new_lines, f"{topic}: {len(after)} records after the import point"
    wait_for(
        lambda: _sink_offset(http, c.name("snk")) == N + M,
        TIMEOUT,
        f"connectrt's sink to commit offset {N + M}",
    )
    written = c.file("out").read_text("utf-8").splitlines()
    assert written == [f"line {i}" for i in range(N + M)]

    # connectrt's sources have moved on: a third run leaves them alone, saying how they differ;
    # --overwrite puts one back as Kafka Connect has it (now STOPPED there, its offsets at N).
    status, third, _ = _import("--from", c.connect.url, "--url", c.worker.url, *only, capsys=capsys)
    assert status == 1
    by_name = {e["name"]: e for e in third["connectors"]}
    for suffix in ("src1", "src2"):
        entry = by_name[c.name(suffix)]
        assert entry["result"] == "differs (left alone)", entry
        assert any(d.startswith("offsets differ") for d in entry["differences"]), entry
    # The sink's offsets are its consumer group's, connect-<name> on both sides: one group.
    assert by_name[c.name("snk")]["result"] == "unchanged"
    assert _position(http, c.name("src2")) == size
    status, fourth, err = _import(
        "--from", c.connect.url, "--url", c.worker.url, "--overwrite",
        "--connector", c.name("src2"), capsys=capsys,
    )  # fmt: skip
    assert status == 0, (fourth, err)
    assert fourth["connectors"][0]["result"] == "overwritten"
    wait_for(lambda: _state(http, c.name("src2")) == "STOPPED", TIMEOUT, "src2 STOPPED")
    assert _comparable(_offsets(http, c.name("src2"))) == _comparable(kc_offsets[c.name("src2")])
