"""The object storage sink on a real worker and broker, writing to moto's S3 server (a separate
process) and to a local directory: every record lands once, named and typed as configured;
a record that cannot be written reaches the dead letter queue with its context; a restarted
worker resumes after what is in storage."""

from __future__ import annotations

import io
import uuid
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import fastavro
import pyarrow.fs as pafs
import pyarrow.parquet as pq
import pytest
from confluent_kafka import Consumer
from confluent_kafka import TopicPartition as KafkaTopicPartition

from connectrt.broker import EmbeddedBroker
from connectrt.runtime.status import State
from connectrt.testing.harness import WorkerHarness, create_topic
from connectrt.testing.harness import produce as produce_raw
from connectrt.testing.rest import start_rest_worker, wait_for
from tests.objectstore_support import MotoServer, count_records, moto_s3, produce

pytestmark = pytest.mark.integration

__all__ = ["moto_s3"]  # the fixture, used by name below

PARTITIONS = 4
RECORDS = 2_000


@pytest.fixture(params=["s3", "local"])
def backend(
    request: pytest.FixtureRequest, tmp_path: Path
) -> Iterator[tuple[dict[str, str], pafs.FileSystem, str]]:
    """(sink config for the store, a filesystem to read it with, the root path in it)."""
    if request.param == "s3":
        server: MotoServer = request.getfixturevalue("moto_s3")
        bucket = server.create_bucket(f"b-{uuid.uuid4().hex[:12]}")
        yield server.sink_config(bucket), server.filesystem(), bucket
    else:
        root = tmp_path / "store"
        yield {"store.url": root.as_uri()}, pafs.LocalFileSystem(), str(root)


def _committed(bootstrap: str, group: str, topic: str, partitions: int = PARTITIONS) -> int:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group})
    try:
        tps = [KafkaTopicPartition(topic, p) for p in range(partitions)]
        return sum(max(tp.offset, 0) for tp in consumer.committed(tps, timeout=10))
    finally:
        consumer.close()


def test_every_record_lands_once_and_a_restart_resumes_from_storage(
    broker: EmbeddedBroker,
    unique_name: object,
    backend: tuple[dict[str, str], pafs.FileSystem, str],
) -> None:
    store_config, fs, root = backend
    topic = unique_name("os")  # type: ignore[operator]
    # Connector names (so consumer groups) unique per run: on the embedded broker a group whose
    # earlier members left (here the other backend's run) can hold a new join for minutes.
    first, second = f"os-{topic}", f"os2-{topic}"
    bootstrap = broker.bootstrap_servers
    create_topic(bootstrap, topic, partitions=PARTITIONS)
    produce(bootstrap, topic, RECORDS, PARTITIONS)
    config = {
        "connector.class": "io.confluent.connect.s3.S3SinkConnector",
        "topics": topic,
        "tasks.max": "2",
        "flush.size": "100",
        "format.class": "io.confluent.connect.s3.format.parquet.ParquetFormat",
        **store_config,
    }
    base = f"{root}/topics/{topic}"
    with WorkerHarness(bootstrap) as h:
        try:
            h.start_connector(first, config)
            h.wait_for_tasks(first, State.RUNNING, timeout=60)
            h.wait_until(
                lambda: sum(count_records(fs, base).values()) >= RECORDS,
                120,
                "every record in the objects (flush.size divides each partition's count)",
            )
            h.wait_until(
                lambda: _committed(bootstrap, f"connect-{first}", topic) >= RECORDS,
                60,
                "the offsets of every written record to be committed",
            )
        finally:
            h.running.delete_connector(first)
    counts = count_records(fs, base)
    assert len(counts) == RECORDS and set(counts.values()) == {1}
    names = [
        info.base_name
        for info in fs.get_file_info(pafs.FileSelector(base, recursive=True))
        if info.type == pafs.FileType.File
    ]
    assert f"{topic}+0+0000000000.parquet" in names
    assert f"{topic}+3+0000000400.parquet" in names
    assert len(names) == RECORDS // 100
    with fs.open_input_file(f"{base}/partition=1/{topic}+1+0000000000.parquet") as f:
        table = pq.read_table(f)
    assert str(table.schema.field("at").type) == "timestamp[ms, tz=UTC]"
    assert str(table.schema.field("amount").type) == "decimal128(38, 2)"
    assert table.column("p").to_pylist() == [1] * 100

    # More records, a new worker, the consumer group's offsets deleted: the task resumes after
    # what storage holds, not from the start of the topic.
    produce(bootstrap, topic, 400, PARTITIONS, start=RECORDS)
    with WorkerHarness(bootstrap) as h:
        try:
            h.start_connector(second, config)
            h.wait_until(
                lambda: sum(count_records(fs, base).values()) >= RECORDS + 400,
                120,
                "the new records in the objects",
            )
            h.wait_until(
                lambda: _committed(bootstrap, f"connect-{second}", topic) >= RECORDS + 400,
                60,
                "the second connector's commit",
            )
        finally:
            h.running.delete_connector(second)
    counts = count_records(fs, base)
    assert len(counts) == RECORDS + 400 and set(counts.values()) == {1}


def _dlq(bootstrap: str, topic: str) -> list[tuple[bytes | None, dict[str, str]]]:
    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": uuid.uuid4().hex, "enable.partition.eof": True}
    )
    consumer.assign([KafkaTopicPartition(topic, 0, -2)])
    out = []
    try:
        while True:
            msgs = consumer.consume(100, 5)
            if not msgs:
                break
            if any(m.error() for m in msgs):
                out += [
                    (m.value(), {k: v.decode() for k, v in m.headers() or []})
                    for m in msgs
                    if not m.error()
                ]
                break
            out += [(m.value(), {k: v.decode() for k, v in m.headers() or []}) for m in msgs]
    finally:
        consumer.close()
    return out


def test_an_unwritable_record_goes_to_the_dlq_with_its_context(
    broker: EmbeddedBroker, unique_name: object, tmp_path: Path
) -> None:
    topic, dlq = unique_name("osbad"), unique_name("osdlq")  # type: ignore[operator]
    bootstrap = broker.bootstrap_servers
    create_topic(bootstrap, topic, partitions=1)
    produce(bootstrap, topic, 2, 1)
    produce_raw(bootstrap, topic, [b'{"schema": null, "payload": {"n": 99}}'])  # schemaless
    produce(bootstrap, topic, 1, 1, start=2)
    root = tmp_path / "store"
    with WorkerHarness(bootstrap) as h:
        h.start_connector(
            "osbad",
            {
                "connector.class": "connectors.objectstore.ObjectStoreSinkConnector",
                "topics": topic,
                "store.url": root.as_uri(),
                "flush.size": "4",
                "format.class": "parquet",
                "errors.tolerance": "all",
                "errors.deadletterqueue.topic.name": dlq,
                "errors.deadletterqueue.context.headers.enable": "true",
                "errors.deadletterqueue.topic.replication.factor": "1",
            },
        )
        h.wait_until(
            lambda: h.metrics("osbad")[0].records_committed >= 4,
            60,
            "the sink to commit all 4 records (one of them through the DLQ)",
        )
        assert h.task_states("osbad")[0].state is State.RUNNING
    table = pq.read_table(root / f"topics/{topic}/partition=0/{topic}+0+0000000000.parquet")
    assert table.column("n").to_pylist() == [0, 1, 2]
    ((value, headers),) = _dlq(bootstrap, dlq)
    assert value == b'{"schema": null, "payload": {"n": 99}}'
    assert headers["__connect.errors.topic"] == topic
    assert headers["__connect.errors.offset"] == "2"
    assert headers["__connect.errors.stage"] == "TASK_PUT"
    assert "no value schema" in headers["__connect.errors.exception.message"]


def _avro_counts(fs: pafs.FileSystem, base: str) -> Counter[int]:
    counts: Counter[int] = Counter()
    for info in fs.get_file_info(pafs.FileSelector(base, allow_not_found=True, recursive=True)):
        if info.type == pafs.FileType.File and info.path.endswith(".avro"):
            with fs.open_input_stream(info.path) as stream:
                counts.update(row["n"] for row in fastavro.reader(io.BytesIO(stream.read())))
    return counts


def test_avro_with_a_time_partitioner_on_s3_resumes_from_the_objects(
    broker: EmbeddedBroker, unique_name: object, moto_s3: MotoServer
) -> None:
    topic = unique_name("osavro")  # type: ignore[operator]
    bootstrap = broker.bootstrap_servers
    create_topic(bootstrap, topic, partitions=2)
    produce(bootstrap, topic, 400, 2)
    bucket = moto_s3.create_bucket(f"avro-{uuid.uuid4().hex[:12]}")
    fs = moto_s3.filesystem()
    config = {
        "connector.class": "S3SinkConnector",
        "topics": topic,
        "flush.size": "50",
        "format.class": "io.confluent.connect.s3.format.avro.AvroFormat",
        "partitioner.class": "io.confluent.connect.storage.partitioner.TimeBasedPartitioner",
        "path.format": "'day'=YYYY-MM-dd",
        "partition.duration.ms": "86400000",
        "locale": "en-US",
        "timezone": "UTC",
        "timestamp.extractor": "RecordField",
        "timestamp.field": "at",
        **moto_s3.sink_config(bucket),
    }
    base = f"{bucket}/topics/{topic}"
    for name, total in (("osavro1", 400), ("osavro2", 600)):
        if name == "osavro2":  # a new connector, a new group: it resumes from the objects
            produce(bootstrap, topic, 200, 2, start=400)
        with WorkerHarness(bootstrap) as h:
            try:
                h.start_connector(name, config)
                h.wait_until(
                    lambda t=total: sum(_avro_counts(fs, base).values()) >= t,  # type: ignore[misc]
                    120,
                    f"{total} records in the Avro objects",
                )
                h.wait_until(
                    lambda t=total, n=name: _committed(bootstrap, f"connect-{n}", topic, 2) >= t,
                    60,
                    "the offsets of the written records to be committed",
                )
            finally:
                h.running.delete_connector(name)
        counts = _avro_counts(fs, base)
        assert len(counts) == total and set(counts.values()) == {1}
    paths = [
        info.path
        for info in fs.get_file_info(pafs.FileSelector(base, recursive=True))
        if info.type == pafs.FileType.File
    ]
    assert all(p.startswith(f"{base}/day=2023-11-14/{topic}+") for p in paths), paths[:3]


def test_credentials_from_a_config_provider_never_leave_the_worker(
    broker: EmbeddedBroker,
    unique_name: object,
    moto_s3: MotoServer,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    key_id, secret = f"keyleak{uuid.uuid4().hex[:10]}", f"secretleak{uuid.uuid4().hex[:10]}"
    monkeypatch.setenv("OBJECTSTORE_TEST_KEY_ID", key_id)
    monkeypatch.setenv("OBJECTSTORE_TEST_SECRET", secret)
    topic = unique_name("oscred")  # type: ignore[operator]
    bootstrap = broker.bootstrap_servers
    create_topic(bootstrap, topic, partitions=1)
    produce(bootstrap, topic, 20, 1)
    bucket = moto_s3.create_bucket(f"cred-{uuid.uuid4().hex[:12]}")
    config = {
        "connector.class": "S3SinkConnector",
        "topics": topic,
        "flush.size": "10",
        "format.class": "parquet",
        **moto_s3.sink_config(bucket),
        "aws.access.key.id": "${env:OBJECTSTORE_TEST_KEY_ID}",
        "aws.secret.access.key": "${env:OBJECTSTORE_TEST_SECRET}",
    }
    worker = start_rest_worker(
        bootstrap,
        **{
            "config.providers": "env",
            "config.providers.env.class": (
                "org.apache.kafka.common.config.provider.EnvVarConfigProvider"
            ),
        },
    )
    bodies: list[str] = []
    try:
        created = worker.http.put(f"/connectors/{topic}/config", json=config)
        assert created.status_code in (200, 201), created.text
        fs = moto_s3.filesystem()
        wait_for(
            lambda: sum(count_records(fs, f"{bucket}/topics/{topic}").values()) >= 20,
            120,
            "the records in the bucket (credentials resolved through the env provider)",
        )
        literal = {**config, "aws.secret.access.key": secret, "aws.access.key.id": key_id}
        for response in (
            worker.http.get(f"/connectors/{topic}"),
            worker.http.get(f"/connectors/{topic}/config"),
            worker.http.get(f"/connectors/{topic}/status"),
            worker.http.get("/connectors?expand=info&expand=status"),
            worker.http.put("/connector-plugins/S3SinkConnector/config/validate", json=literal),
        ):
            bodies.append(response.text)
    finally:
        try:
            worker.delete_connectors()
        finally:
            worker.stop()
    for text in [*bodies, caplog.text]:
        assert key_id not in text and secret not in text, text[:2000]
    assert "[hidden]" in bodies[-1]  # validate shows the literal secrets as hidden
