"""Dead letter queue replay (``connectrt dlq replay`` / ``/connectors/{name}/dlq/replay``)
against a REST worker on the embedded broker: real HTTP, the real CLI, real connectors.

The sink scenario is an operator's: a sink misconfigured (``schemas.enable=true`` for plain
JSON) sends all 1,000 records to its DLQ; the config is fixed; a replay re-delivers them, 950
reach the file once, the 50 that are really malformed come back to the DLQ with a replay count.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaError
from confluent_kafka import TopicPartition as KafkaTopicPartition
from confluent_kafka.admin import AdminClient

from connectrt.broker import EmbeddedBroker
from connectrt.cli import main
from connectrt.testing.harness import create_topic, produce
from connectrt.testing.rest import RestWorker, running_rest_worker, wait_for

pytestmark = pytest.mark.integration

Run = Callable[..., tuple[int, str, str]]

DLQ_SETTINGS = {
    "errors.tolerance": "all",
    "errors.deadletterqueue.context.headers.enable": "true",
    "errors.deadletterqueue.topic.replication.factor": "1",
}


@pytest.fixture(scope="module")
def worker(broker: EmbeddedBroker) -> Iterator[RestWorker]:
    with running_rest_worker(broker.bootstrap_servers) as running:
        yield running


@pytest.fixture(autouse=True)
def remove_connectors_after_test(worker: RestWorker) -> Iterator[None]:
    """Whatever a test asserted, its connectors are gone afterwards (their replay runs end
    with them)."""
    yield
    worker.delete_connectors()


@pytest.fixture
def cli(worker: RestWorker, capsys: pytest.CaptureFixture[str]) -> Run:
    """``cli("dlq", "replay", ...)`` -> (exit status, stdout, stderr) against ``worker``."""

    def run(*args: str) -> tuple[int, str, str]:
        capsys.readouterr()
        code = main([*args, "--url", worker.url])
        out, err = capsys.readouterr()
        return code, out, err

    return run


# -- helpers ----------------------------------------------------------------------------------
def messages(bootstrap: str, topic: str) -> list[dict[str, Any]]:
    """Every record of ``topic`` (all partitions, to their end), headers decoded."""
    md = AdminClient({"bootstrap.servers": bootstrap}).list_topics(topic, timeout=15)
    partitions = sorted(md.topics[topic].partitions)
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"reader-{uuid.uuid4().hex}",
            "enable.partition.eof": True,
            "enable.auto.commit": False,
        }
    )
    consumer.assign([KafkaTopicPartition(topic, p, 0) for p in partitions])
    out: list[dict[str, Any]] = []
    at_end: set[int] = set()
    deadline = time.monotonic() + 60
    try:
        while len(at_end) < len(partitions):
            if time.monotonic() > deadline:
                raise TimeoutError(f"timed out after 60 s reading {topic} to its end")
            for m in consumer.consume(500, 0.5):
                err = m.error()
                if err is not None:
                    assert err.code() == KafkaError._PARTITION_EOF, err
                    at_end.add(m.partition())
                    continue
                out.append(
                    {
                        "partition": m.partition(),
                        "offset": m.offset(),
                        "key": m.key(),
                        "value": m.value(),
                        "headers": {k: (v or b"").decode() for k, v in m.headers() or []},
                    }
                )
    finally:
        consumer.close()
    return out


def committed_total(worker: RestWorker, name: str) -> int:
    r = worker.http.get(f"/connectors/{name}/offsets")
    if r.status_code != 200:
        return -1
    return sum(o["offset"]["kafka_offset"] for o in r.json()["offsets"])


def task_states(worker: RestWorker, name: str) -> list[str]:
    r = worker.http.get(f"/connectors/{name}/status")
    return [t["state"] for t in r.json()["tasks"]] if r.status_code == 200 else []


def lines(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


def replay_json(cli: Run, *args: str) -> dict[str, Any]:
    code, out, err = cli("dlq", "replay", *args, "--json")
    assert (code, err) == (0, ""), (code, out, err)
    result: dict[str, Any] = json.loads(out)
    return result


def good(i: int) -> bool:
    return i % 20 != 7  # 50 of 1,000 are malformed JSON


def create_sink(worker: RestWorker, name: str, topic: str, out: Path, **extra: str) -> None:
    config = {
        "connector.class": "FileStreamSink",
        "file": str(out),
        "topics": topic,
        "tasks.max": "1",
        **extra,
    }
    r = worker.http.put(f"/connectors/{name}/config", json=config)
    assert r.status_code == 201, r.text


# -- the 1,000-record replay -----------------------------------------------------------------
def test_sink_replay_delivers_once_and_returns_what_fails_again(
    cli: Run, worker: RestWorker, broker: EmbeddedBroker, tmp_path: Path, unique_name
):
    bootstrap = broker.bootstrap_servers
    name, topic, dlq = unique_name("sink"), unique_name("orders"), unique_name("dlq")
    create_topic(bootstrap, topic, partitions=2)
    values = [b"%d" % i if good(i) else b'{"broken": %d' % i for i in range(1000)]
    produce(bootstrap, topic, values, key=lambda n: b"k%d" % n)
    out = tmp_path / "out.txt"
    # Misconfigured: the records are plain JSON, the converter expects envelopes.
    create_sink(
        worker,
        name,
        topic,
        out,
        **{**DLQ_SETTINGS, "errors.deadletterqueue.topic.name": dlq},
        **{
            "value.converter": "org.apache.kafka.connect.json.JsonConverter",
            "value.converter.schemas.enable": "true",
        },
    )
    wait_for(
        lambda: committed_total(worker, name) == 1000,
        90,
        "the sink to commit all 1,000 records, each through the DLQ (its group join included)",
    )
    assert lines(out) == []
    assert len(messages(bootstrap, dlq)) == 1000

    # The fix: plain JSON. Tasks are stopped before the PATCH answers; new ones start.
    r = worker.http.patch(
        f"/connectors/{name}/config", json={"value.converter.schemas.enable": "false"}
    )
    assert r.status_code == 200, r.text
    wait_for(lambda: task_states(worker, name) == ["RUNNING"], 60, "the fixed sink task RUNNING")

    # A dry run counts and changes nothing.
    dry = replay_json(cli, "--connector", name, "--dry-run")
    assert dry["state"] == "COMPLETED" and dry["dry_run"] is True
    assert dry["counts"] == {"read": 1000, "replayed": 1000, "skipped": 0, "failed_again": 0}
    assert dry["partitions"] == [{"partition": 0, "start": 0, "end": 1000, "position": 1000}]
    assert len(messages(bootstrap, topic)) == 1000
    assert len(messages(bootstrap, dlq)) == 1000
    assert lines(out) == []

    # The replay: every record re-delivered once, 950 written, 50 back in the DLQ.
    run = replay_json(cli, "--connector", name)
    assert run["state"] == "COMPLETED", run
    assert run["dry_run"] is False and run["sink_caught_up"] is True
    assert run["counts"] == {"read": 1000, "replayed": 1000, "skipped": 0, "failed_again": 50}
    assert run["group"] == f"connectrt-dlq-replay-{name}"
    written = lines(out)
    assert len(written) == 950
    assert sorted(written, key=int) == [str(i) for i in range(1000) if good(i)]

    # The copies went to the partitions the originals were consumed from.
    copies = [m for m in messages(bootstrap, topic) if "connectrt.replay.count" in m["headers"]]
    assert len(copies) == 1000
    for m in copies:
        h = m["headers"]
        assert h["connectrt.replay.count"] == "1" and h["connectrt.replay.run"] == run["id"]
        assert str(m["partition"]) == h["connectrt.errors.1.partition"]
        assert h["connectrt.errors.1.topic"] == topic
        assert h["connectrt.replay.origin"].startswith(f"{dlq}/0/")
        assert not any(k.startswith("__connect.errors.") for k in h)

    # The DLQ: the 1,000 originals, then the 50 malformed with their history.
    dead = messages(bootstrap, dlq)
    assert len(dead) == 1050
    back = dead[1000:]
    assert sorted(m["value"] for m in back) == sorted(
        v for i, v in enumerate(values) if not good(i)
    )
    for m in back:
        h = m["headers"]
        assert h["connectrt.replay.count"] == "1" and h["connectrt.replay.run"] == run["id"]
        assert h["connectrt.errors.1.stage"] == "VALUE_CONVERTER"  # the first failure
        assert h["__connect.errors.stage"] == "VALUE_CONVERTER"  # this one
        assert h["__connect.errors.topic"] == topic

    # GET shows the same run; the CLI's status too, also as the installed entry point.
    assert worker.http.get(f"/connectors/{name}/dlq/replay").json() == run
    status = subprocess.run(
        [sys.executable, "-m", "connectrt.cli", "dlq", "status", "--connector", name],
        env={**os.environ, "CONNECTRT_URL": worker.url},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert status.returncode == 0, status.stderr
    rows = {r.split()[0]: r.split()[-1] for r in status.stdout.splitlines()[1:] if r.strip()}
    assert status.stdout.splitlines()[0].endswith(f"of connector {name} (sink): COMPLETED")
    assert (rows["read"], rows["replayed"], rows["failed"]) == ("1000", "1000", "50")

    # A second run starts where the first committed: only the 50 that came back, which fail
    # again; nothing new reaches the sink.
    second = replay_json(cli, "--connector", name)
    assert second["counts"] == {"read": 50, "replayed": 50, "skipped": 0, "failed_again": 50}
    assert second["partitions"][0]["start"] == 1000
    assert lines(out) == written
    again = messages(bootstrap, dlq)[1050:]
    assert [m["headers"]["connectrt.replay.count"] for m in again] == ["2"] * 50
    assert all(m["headers"]["connectrt.errors.2.stage"] == "VALUE_CONVERTER" for m in again)

    # --max-replays 2 leaves them alone; after that there is nothing left to read.
    third = replay_json(cli, "--connector", name, "--max-replays", "2")
    assert third["counts"] == {"read": 50, "replayed": 0, "skipped": 50, "failed_again": 0}
    assert third["skipped_reasons"] == {"max_replays": 50}
    assert third["sink_caught_up"] is None  # nothing to wait for
    last = replay_json(cli, "--connector", name)
    assert last["counts"] == {"read": 0, "replayed": 0, "skipped": 0, "failed_again": 0}
    assert len(messages(bootstrap, topic)) == 2050
    assert lines(out) == written


# -- time windows -----------------------------------------------------------------------------
def test_from_and_to_select_by_timestamp_and_to_holds_the_rest_back(
    cli: Run, worker: RestWorker, broker: EmbeddedBroker, tmp_path: Path, unique_name
):
    bootstrap = broker.bootstrap_servers
    name, topic, dlq = unique_name("sink"), unique_name("win"), unique_name("windlq")
    create_topic(bootstrap, topic)
    produce(bootstrap, topic, [b"a%d" % i for i in range(5)])  # not JSON: all fail
    time.sleep(1.5)  # places the CreateTime of the second batch; synchronises nothing
    middle = datetime.now(UTC)
    time.sleep(1.5)
    produce(bootstrap, topic, [b"b%d" % i for i in range(5)])
    out = tmp_path / "out.txt"
    create_sink(
        worker, name, topic, out, **DLQ_SETTINGS, **{"errors.deadletterqueue.topic.name": dlq}
    )
    wait_for(
        lambda: committed_total(worker, name) == 10,
        90,
        "the sink to commit its 10 records through the DLQ (its group join included)",
    )
    # The fix: strings. Then replay the first batch only: the second stays for later.
    r = worker.http.patch(
        f"/connectors/{name}/config",
        json={"value.converter": "org.apache.kafka.connect.storage.StringConverter"},
    )
    assert r.status_code == 200, r.text
    wait_for(lambda: task_states(worker, name) == ["RUNNING"], 60, "the fixed sink task RUNNING")
    first = replay_json(cli, "--connector", name, "--to", middle.isoformat())
    assert first["counts"] == {"read": 5, "replayed": 5, "skipped": 0, "failed_again": 0}
    assert first["partitions"][0]["position"] == 5  # held back at the first later record
    assert sorted(lines(out)) == [f"a{i}" for i in range(5)]

    # The rest, from the middle: the held-back records are read now.
    rest = replay_json(cli, "--connector", name, "--from", middle.isoformat())
    assert rest["counts"] == {"read": 5, "replayed": 5, "skipped": 0, "failed_again": 0}
    assert sorted(lines(out)) == [f"a{i}" for i in range(5)] + [f"b{i}" for i in range(5)]

    # A window past everything, in epoch milliseconds: nothing left to read.
    future = str(int(time.time() * 1000) + 3_600_000)
    none = replay_json(cli, "--connector", name, "--from", future)
    assert none["counts"]["read"] == 0 and none["from"] is not None


# -- conflicts and cancelling -----------------------------------------------------------------
def test_a_second_request_conflicts_and_cancel_stops_the_run(
    cli: Run, worker: RestWorker, broker: EmbeddedBroker, tmp_path: Path, unique_name
):
    bootstrap = broker.bootstrap_servers
    name, topic, dlq = unique_name("sink"), unique_name("busy"), unique_name("busydlq")
    create_topic(bootstrap, topic)
    produce(bootstrap, topic, [b"x%d" % i for i in range(3)])
    out = tmp_path / "out.txt"
    create_sink(
        worker, name, topic, out, **DLQ_SETTINGS, **{"errors.deadletterqueue.topic.name": dlq}
    )
    wait_for(
        lambda: committed_total(worker, name) == 3,
        90,
        "the sink to commit its 3 records through the DLQ (its group join included)",
    )
    # Paused, the sink cannot consume the copies: the run waits for it.
    assert worker.http.put(f"/connectors/{name}/pause").status_code == 202
    wait_for(lambda: task_states(worker, name) == ["PAUSED"], 60, "the sink task PAUSED")
    code, out_text, err = cli("dlq", "replay", "--connector", name, "--no-wait", "--json")
    assert (code, err) == (0, "")
    started = json.loads(out_text)
    assert started["state"] in ("RUNNING", "AWAITING_SINK")
    wait_for(
        lambda: (
            worker.http.get(f"/connectors/{name}/dlq/replay").json()["state"] == "AWAITING_SINK"
        ),
        60,
        "the replay to re-deliver the 3 records and wait for the paused sink",
    )
    r = worker.http.post(f"/connectors/{name}/dlq/replay", json={})
    assert r.status_code == 409
    assert r.json()["message"].startswith(
        f"A replay of the dead letter queue of connector {name} is already AWAITING_SINK"
    )
    code, out_text, err = cli("dlq", "cancel", "--connector", name)
    assert (code, out_text, err) == (
        0,
        f"Cancelling replay {started['id']} of connector {name}\n",
        "",
    )
    wait_for(
        lambda: worker.http.get(f"/connectors/{name}/dlq/replay").json()["state"] == "CANCELLED",
        60,
        "the replay CANCELLED",
    )
    cancelled = worker.http.get(f"/connectors/{name}/dlq/replay").json()
    assert cancelled["counts"]["replayed"] == 3  # re-delivered (and committed) before the wait
    code, _, err = cli("dlq", "cancel", "--connector", name)
    assert (code, err) == (
        1,
        f"error: No dead letter queue replay of connector {name} is running (HTTP 409)\n",
    )
    code, out_text, _ = cli("dlq", "status", "--connector", name)
    assert code == 0 and out_text.splitlines()[0].endswith(": CANCELLED")


# -- bad input --------------------------------------------------------------------------------
def test_bad_requests_get_clear_4xx_errors(
    cli: Run, worker: RestWorker, broker: EmbeddedBroker, tmp_path: Path, unique_name
):
    name, topic = unique_name("sink"), unique_name("plain")
    create_topic(broker.bootstrap_servers, topic)
    create_sink(worker, name, topic, tmp_path / "out.txt")  # no dead letter queue
    path = f"/connectors/{name}/dlq/replay"

    def error(response: Any) -> tuple[int, str]:
        return response.status_code, response.json()["message"]

    missing = unique_name("nope")
    assert error(worker.http.post(f"/connectors/{missing}/dlq/replay", json={})) == (
        404,
        f"Connector {missing} not found",
    )
    assert error(worker.http.post(path, json={})) == (
        400,
        f"Connector {name} has no dead letter queue: errors.deadletterqueue.topic.name is not set",
    )
    assert error(worker.http.get(path)) == (
        404,
        f"No dead letter queue replay of connector {name} since this worker started",
    )
    status, message = error(worker.http.post(path, json={"from": "yesterday"}))
    assert status == 400
    assert message.startswith("Invalid 'from' timestamp 'yesterday': expected an ISO-8601")
    assert (
        error(worker.http.post(path, json={"from": "2026-01-02T00:00:00Z", "to": "2026-01-01"}))[0]
        == 400
    )
    assert error(worker.http.post(path, json={"to": -5}))[0] == 400
    assert error(worker.http.post(path, json={"dry_run": "yes"})) == (
        400,
        "'dry_run' must be true or false",
    )
    assert error(worker.http.post(path, json={"max_replays": 0})) == (
        400,
        "'max_replays' must be a positive integer",
    )
    assert error(worker.http.post(path, json={"since": 1})) == (
        400,
        "Unknown field(s) in the replay request: since (known: from, to, dry_run, max_replays)",
    )
    assert error(worker.http.post(path, json=[1])) == (
        400,
        "The replay request must be a JSON object",
    )
    json_type = {"content-type": "application/json"}
    assert error(worker.http.post(path, content=b"{not json", headers=json_type))[0] == 400
    assert error(worker.http.post(path, content=b"{}"))[0] == 415  # JSON, but not declared so
    assert error(worker.http.delete(path)) == (
        409,
        f"No dead letter queue replay of connector {name} is running",
    )

    # The CLI shows the server's message and exits 1.
    code, out, err = cli("dlq", "replay", "--connector", missing)
    assert (code, out, err) == (1, "", f"error: Connector {missing} not found (HTTP 404)\n")
    code, _, err = cli("dlq", "replay", "--connector", name, "--from", "yesterday")
    assert code == 1
    assert err.startswith("error: Invalid 'from' timestamp 'yesterday'") and "(HTTP 400)" in err
    code, _, err = cli("dlq", "replay", "--connector", name)
    assert code == 1 and "has no dead letter queue" in err
    with pytest.raises(SystemExit) as exited:  # argparse: --connector is required
        cli("dlq", "replay")
    assert exited.value.code == 2


# -- source connectors ------------------------------------------------------------------------
def test_source_replay_converts_again_and_produces_to_the_topic(
    cli: Run, worker: RestWorker, broker: EmbeddedBroker, tmp_path: Path, unique_name
):
    """A source's DLQ records are documents of the failed records: the replay runs them
    through the connector's current transforms (they failed in one) and converters, and
    produces them to their topic; those that still fail go back with a replay count."""
    bootstrap = broker.bootstrap_servers
    name, topic, dlq = unique_name("src"), unique_name("nums"), unique_name("srcdlq")
    create_topic(bootstrap, topic)
    data = tmp_path / "in.txt"
    data.write_text("1\n2\n1.5\nabc\n3\n2.5\ndef\n4\n")
    config = {
        "connector.class": "FileStreamSource",
        "file": str(data),
        "topic": topic,
        "value.converter": "org.apache.kafka.connect.json.JsonConverter",
        "value.converter.schemas.enable": "false",
        "transforms": "cast",
        "transforms.cast.type": "org.apache.kafka.connect.transforms.Cast$Value",
        "transforms.cast.spec": "int32",  # the misconfiguration: the data has decimals
        **DLQ_SETTINGS,
        "errors.deadletterqueue.topic.name": dlq,
    }
    assert worker.http.put(f"/connectors/{name}/config", json=config).status_code == 201
    end = len(data.read_bytes())
    wait_for(
        lambda: (
            worker.http.get(f"/connectors/{name}/offsets").json()["offsets"]
            == [{"partition": {"filename": str(data)}, "offset": {"position": end}}]
        ),
        60,
        "the source to commit the end of its file (4 lines through the DLQ)",
    )
    assert [m["value"] for m in messages(bootstrap, topic)] == [b"1", b"2", b"3", b"4"]
    assert len(messages(bootstrap, dlq)) == 4

    r = worker.http.patch(f"/connectors/{name}/config", json={"transforms.cast.spec": "float64"})
    assert r.status_code == 200, r.text
    dry = replay_json(cli, "--connector", name, "--dry-run")
    assert dry["counts"] == {"read": 4, "replayed": 2, "skipped": 0, "failed_again": 2}
    assert len(messages(bootstrap, topic)) == 4 and len(messages(bootstrap, dlq)) == 4

    run = replay_json(cli, "--connector", name)
    assert run["type"] == "source" and run["state"] == "COMPLETED"
    assert run["counts"] == {"read": 4, "replayed": 2, "skipped": 0, "failed_again": 2}
    assert run["sink_caught_up"] is None
    copies = messages(bootstrap, topic)[4:]
    assert [m["value"] for m in copies] == [b"1.5", b"2.5"]
    for m in copies:
        assert m["headers"]["connectrt.replay.count"] == "1"
        assert m["headers"]["connectrt.errors.1.stage"] == "TRANSFORMATION"
    back = messages(bootstrap, dlq)[4:]
    assert [json.loads(m["value"])["value"] for m in back] == ["abc", "def"]
    for m in back:
        document, h = json.loads(m["value"]), m["headers"]
        assert document["stage"] == "TRANSFORMATION" and document["topic"] == topic
        assert h["connectrt.replay.count"] == "1" and h["connectrt.replay.run"] == run["id"]
        assert h["__connect.errors.stage"] == "TRANSFORMATION"
        assert h["__connect.errors.class.name"] == "connectrt.transforms.cast.CastValue"
    # A second run reads only what came back.
    again = replay_json(cli, "--connector", name)
    assert again["counts"] == {"read": 2, "replayed": 0, "skipped": 0, "failed_again": 2}


# -- what replay relies on --------------------------------------------------------------------
def test_a_sink_commits_past_records_that_all_went_to_the_dlq(
    worker: RestWorker, broker: EmbeddedBroker, tmp_path: Path, unique_name
):
    """A batch whose every record fails is committed like any other (as in Kafka): a restart
    does not consume those records again, so the DLQ holds each once, and a replay cannot
    deliver one twice."""
    bootstrap = broker.bootstrap_servers
    name, topic, dlq = unique_name("sink"), unique_name("allbad"), unique_name("allbaddlq")
    create_topic(bootstrap, topic)
    produce(bootstrap, topic, [b"bad%d" % i for i in range(20)])  # none is JSON
    out = tmp_path / "out.txt"
    create_sink(
        worker, name, topic, out, **DLQ_SETTINGS, **{"errors.deadletterqueue.topic.name": dlq}
    )
    wait_for(
        lambda: committed_total(worker, name) == 20,
        90,
        "the sink to commit the 20 records it sent to the DLQ (its group join included)",
    )
    r = worker.http.post(f"/connectors/{name}/restart", params={"includeTasks": "true"})
    assert r.status_code == 202, r.text
    ok = b'{"schema":{"type":"string","optional":false},"payload":"ok"}'
    produce(bootstrap, topic, [ok])  # in order after the 20, in the same partition
    wait_for(
        lambda: lines(out) == ["ok"],
        90,
        "the restarted sink to write the record after the 20 (its group join included)",
    )
    assert len(messages(bootstrap, dlq)) == 20
