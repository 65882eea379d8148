"""A record too large for the dead letter queue never fails a tolerant sink (issue 27, attack 6).

Before: with ``errors.tolerance=all`` and a DLQ, a 5 MB malformed record could not be written
to the DLQ (``MSG_SIZE_TOO_LARGE``), the task FAILED, 481 of 950 good records were never
delivered, and it failed again after a restart.

Here, over real HTTP against a running worker and the embedded broker: the source topic allows
8 MB records, the DLQ topic (created beforehand, as an operator would) allows 512 KiB. The DLQ
producer is sized from the DLQ topic's ``max.message.bytes``, so the malformed record goes to
the DLQ cut to fit, with ``__connect.errors.truncated`` (its original size) and the original
topic, partition and offset headers; the task stays RUNNING, every good record is delivered,
a DLQ replay passes over the cut copy, and a restart keeps it RUNNING and delivering.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from urllib.parse import quote

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka import TopicPartition as KafkaTopicPartition

from connectrt.broker import EmbeddedBroker
from connectrt.runtime.tasks.dlq_sizing import TRUNCATED_HEADER
from connectrt.testing.harness import create_topic
from connectrt.testing.rest import RestWorker, start_rest_worker, wait_for
from tests.plugins import recording_sink

pytestmark = pytest.mark.integration

GOOD = b'{"schema":{"type":"string","optional":false},"payload":"good-%d"}'
# An unterminated string of 5 MB: the JsonConverter cannot read it (VALUE_CONVERTER stage).
MALFORMED = b'{"schema":{"type":"string","optional":false},"payload":"' + b"x" * 5_000_000
DLQ_LIMIT = 524_288  # the DLQ topic's max.message.bytes
SOURCE_LIMIT = 8_000_000  # the source topic's: it accepts the 5 MB record
BAD_AT = 475  # the malformed record's offset, among 950 good ones


@pytest.fixture
def worker(broker: EmbeddedBroker) -> Iterator[RestWorker]:
    running = start_rest_worker(broker.bootstrap_servers)
    try:
        yield running
    finally:
        try:
            running.delete_connectors()
        finally:
            running.stop()


def _produce(bootstrap: str, topic: str, values: list[bytes]) -> None:
    producer = Producer(
        {"bootstrap.servers": bootstrap, "message.max.bytes": 10_000_000, "linger.ms": 5}
    )
    errors: list[object] = []
    for value in values:
        producer.produce(topic, value, on_delivery=lambda e, m: e and errors.append(e))
        producer.poll(0)
    assert producer.flush(60) == 0
    assert not errors, errors


def _dlq_records(bootstrap: str, topic: str) -> list[tuple[bytes, dict[str, bytes]]]:
    """Every record of the DLQ topic (read to its end): value and headers."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": uuid.uuid4().hex,
            "enable.partition.eof": True,
            "fetch.max.bytes": 10_000_000,
        }
    )
    consumer.assign([KafkaTopicPartition(topic, 0, -2)])
    out: list[tuple[bytes, dict[str, bytes]]] = []
    try:
        while True:
            msg = consumer.poll(10)
            assert msg is not None, f"no end of {topic} within 10 s"
            if msg.error():
                return out
            out.append((msg.value() or b"", dict(msg.headers() or [])))
    finally:
        consumer.close()


def _task_state(worker: RestWorker, name: str) -> str:
    response = worker.http.get(f"/connectors/{quote(name, safe='')}/status")
    tasks = response.json().get("tasks", []) if response.status_code == 200 else []
    return str(tasks[0]["state"]) if tasks else "NONE"


def _received(store: str) -> list[object]:
    with recording_sink.LOCK:
        return [value for _, _, _, value in recording_sink.RECEIVED[store]]


def _committed(worker: RestWorker, name: str) -> int:
    body = worker.http.get(f"/connectors/{quote(name, safe='')}/offsets").json()
    return sum(int(o["offset"]["kafka_offset"]) for o in body.get("offsets", []))


def test_an_oversized_malformed_record_goes_to_the_dlq_truncated_and_the_task_runs_on(
    worker: RestWorker, broker: EmbeddedBroker, unique_name
):
    bootstrap = broker.bootstrap_servers
    name, topic, dlq = unique_name("big-bad"), unique_name("in"), unique_name("dlq")
    store = unique_name("store")
    create_topic(bootstrap, topic, **{"max.message.bytes": str(SOURCE_LIMIT)})
    create_topic(bootstrap, dlq, **{"max.message.bytes": str(DLQ_LIMIT)})
    values = [GOOD % i for i in range(950)]
    _produce(bootstrap, topic, [*values[:BAD_AT], MALFORMED, *values[BAD_AT:]])
    config = {
        "connector.class": "tests.plugins.recording_sink.RecordingSink",
        "topics": topic,
        "store.id": store,
        "errors.tolerance": "all",
        "errors.deadletterqueue.topic.name": dlq,
        "errors.deadletterqueue.topic.replication.factor": "1",
        "errors.deadletterqueue.context.headers.enable": "true",
    }
    response = worker.http.put(f"/connectors/{quote(name, safe='')}/config", json=config)
    assert response.status_code == 201, response.text

    expected = [f"good-{i}" for i in range(950)]
    wait_for(
        lambda: len(_received(store)) >= 950 or _task_state(worker, name) == "FAILED",
        120,
        "the sink to receive the 950 good records (or to fail)",
    )
    assert _task_state(worker, name) == "RUNNING"
    assert _received(store) == expected

    wait_for(lambda: _committed(worker, name) == 951, 60, "the sink to commit offset 951")
    (dlq_record,) = _dlq_records(bootstrap, dlq)
    value, headers = dlq_record
    assert MALFORMED.startswith(value)
    assert DLQ_LIMIT // 2 < len(value) < DLQ_LIMIT  # cut to fit the DLQ topic, not emptied
    assert int(headers[TRUNCATED_HEADER]) > len(MALFORMED)  # the original size (+ headers)
    assert headers["__connect.errors.topic"] == topic.encode()
    assert headers["__connect.errors.partition"] == b"0"
    assert headers["__connect.errors.offset"] == str(BAD_AT).encode()
    assert headers["__connect.errors.stage"] == b"VALUE_CONVERTER"
    assert sum(len(k) + len(v or b"") for k, v in headers.items()) + len(value) <= DLQ_LIMIT

    # A replay (dry run) passes over the cut copy: it is not the original record.
    replay = f"/connectors/{quote(name, safe='')}/dlq/replay"
    started = worker.http.post(replay, json={"dry_run": True})
    assert started.status_code == 202, started.text
    wait_for(
        lambda: worker.http.get(replay).json()["state"] not in ("RUNNING", "AWAITING_SINK"),
        60,
        "the dry-run replay to end",
    )
    run = worker.http.get(replay).json()
    assert run["state"] == "COMPLETED", run
    assert run["counts"]["read"] == 1 and run["counts"]["replayed"] == 0, run
    assert run["skipped_reasons"] == {"truncated": 1}, run

    # The restart that used to fail again: the task stays RUNNING and delivers what follows.
    restart = worker.http.post(
        f"/connectors/{quote(name, safe='')}/restart", params={"includeTasks": "true"}
    )
    assert restart.status_code in (200, 202, 204), restart.text
    more = [GOOD % i for i in range(950, 1000)]
    _produce(bootstrap, topic, more)
    wait_for(
        lambda: len(_received(store)) >= 1000 or _task_state(worker, name) == "FAILED",
        120,
        "the restarted sink to receive 50 more good records (or to fail)",
    )
    assert _task_state(worker, name) == "RUNNING"
    assert _received(store) == [*expected, *(f"good-{i}" for i in range(950, 1000))]
    assert len(_dlq_records(bootstrap, dlq)) == 1
