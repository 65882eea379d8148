"""The Spark backend's executors and the DataFrame bridge on a SASL_SSL cluster (issue 30).

The module starts ONE Apache Kafka broker (Java 17+ and the cached jars) with the ``SASLSSL``
listener of :mod:`connectrt.testing.secured_listeners` next to its PLAINTEXT one: SASL_SSL,
SCRAM-SHA-512, a client certificate required (certificates by :mod:`connectrt.testing.certs`,
the SCRAM user created through the admin API). Spark is the session's local SparkSession (the
``spark`` fixture): no JVM of the module's own besides the broker.

* A Spark worker (herder, REST API and internal topics in this process; connector tasks on
  Spark's executors) is built from a ``worker.properties`` file written as Kafka Connect users
  write it: the top-level keys only (no ``producer.``/``consumer.``/``admin.`` copies), a
  ``ScramLoginModule`` JAAS string whose password is a ``${file:...}`` reference, a PEM
  truststore and a PKCS12 keystore whose password is another. A FileStream source and sink
  run as Spark tasks: every line arrives, in order. The secrets appear in no REST answer, no
  record of the status topic (the executors write it), no driver log line, no Spark conf.
* The bridge reads a topic (``spark.read.format("connectrt")``) and writes a DataFrame through
  a sink connector (``df.write.format("connectrt")``), its ``kafka.*`` options the worker's
  Java-style keys: the read's rows are the topic's records in order, and the dead letter queue
  producers of both (a record the converter cannot read; records the sink reports) write over
  SASL_SSL. No secret in the query plans.

Setup (topics, producing, reading back) goes through the broker's PLAINTEXT listener.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import httpx
import pytest
from confluent_kafka import Producer

from connectrt.process.spark_worker import build_spark_worker
from connectrt.runtime.clients.security import security_keys
from connectrt.runtime.properties import load_properties
from connectrt.spark.datasource import register
from connectrt.testing.certs import Pki, make_pki
from connectrt.testing.harness import create_topic, read_topic
from connectrt.testing.kafka_broker import KafkaBroker
from connectrt.testing.rest import rest_worker_props, wait_for
from connectrt.testing.secured_listeners import add_scram_user, secured_listener_settings

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = [pytest.mark.spark, pytest.mark.integration]

LISTENER = "SASLSSL"
USER, PASSWORD = "spark-user", "spark-scram-secret-7f3a"
SCRAM = "org.apache.kafka.common.security.scram.ScramLoginModule"
FILE_PROVIDER = "org.apache.kafka.common.config.provider.FileConfigProvider"
JSON = "org.apache.kafka.connect.json.JsonConverter"
LINES = 300


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    return make_pki(tmp_path_factory.mktemp("pki"), password="spark-store-secret-91c2")


@pytest.fixture(scope="module")
def kafka(pki: Pki) -> Iterator[KafkaBroker]:
    """The broker with the SASLSSL listener only (besides PLAINTEXT), and the SCRAM user."""
    listeners, properties = secured_listener_settings(pki)
    mine = f"listener.name.{LISTENER.lower()}."
    with KafkaBroker(
        extra_listeners={LISTENER: listeners[LISTENER]},
        properties={k: v for k, v in properties.items() if k.startswith(mine)},
    ) as broker:
        add_scram_user(broker.bootstrap_servers, USER, PASSWORD)
        yield broker


def java_security(pki: Pki, password: str, store_password: str) -> dict[str, str]:
    """A Kafka Connect user's SASL_SSL keys: SCRAM in a JAAS string, a PEM truststore, a PKCS12
    keystore (``password``/``store_password`` as written: literal, or references)."""
    return {
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": "SCRAM-SHA-512",
        "sasl.jaas.config": f'{SCRAM} required username="{USER}" password="{password}";',
        "ssl.truststore.type": "PEM",
        "ssl.truststore.location": str(pki.ca),
        "ssl.keystore.type": "PKCS12",
        "ssl.keystore.location": str(pki.client_p12),
        "ssl.keystore.password": store_password,
    }


def leaks(text: str, pki: Pki) -> list[str]:
    return [s for s in (PASSWORD, pki.password) if s in text]


@contextmanager
def spark_worker(props: dict[str, str], spark: SparkSession) -> Iterator[httpx.Client]:
    """The Spark worker of ``props`` on ``spark``, running on a thread; stopped after."""
    process, _executor = build_spark_worker(props, spark)
    stop = threading.Event()
    thread = threading.Thread(target=process.run, args=((), stop), daemon=True)
    thread.start()
    try:
        wait_for(lambda: process.herder.ready, 90, "the Spark driver's herder")
        with httpx.Client(base_url=process.rest.url, timeout=60) as http:
            yield http
    finally:
        stop.set()
        thread.join(60)


class Lines(logging.Handler):
    """Every log record reaching the root logger, formatted (the redaction the worker installs
    applies to records as they are made, so this sees what any handler would)."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(self.format(record))


def test_a_file_pipeline_runs_on_spark_executors_over_sasl_ssl(
    kafka: KafkaBroker, pki: Pki, spark: SparkSession, tmp_path: Path
) -> None:
    secrets = tmp_path / "kafka-secrets.properties"
    secrets.write_text(f"password={PASSWORD}\nstore.password={pki.password}\n", "utf-8")
    security = java_security(
        pki, f"${{file:{secrets}:password}}", f"${{file:{secrets}:store.password}}"
    )
    bootstrap = kafka.listener_bootstrap(LISTENER)
    props = rest_worker_props(
        bootstrap,
        **security,
        **{
            "config.providers": "file",
            "config.providers.file.class": FILE_PROVIDER,
            "offset.storage.partitions": "1",
            "task.shutdown.graceful.timeout.ms": "15000",
        },
    )
    path = tmp_path / "worker.properties"
    path.write_text("".join(f"{k}={v}\n" for k, v in props.items()), "utf-8")
    props = load_properties(path)
    copies = [k for p in ("producer.", "consumer.", "admin.") for k in security_keys(props, p)]
    assert not copies  # the top-level keys only: every client inherits them
    assert PASSWORD not in path.read_text("utf-8")  # the file names the secret, holds it not

    topic = f"spark-secured-{time.monotonic_ns()}"
    create_topic(kafka.bootstrap_servers, topic, partitions=1)
    src, dst = tmp_path / "in.txt", tmp_path / "out.txt"
    expected = [f"line-{i:05d}" for i in range(LINES)]
    src.write_text("".join(f"{line}\n" for line in expected), "utf-8")
    lines = Lines()
    logging.getLogger().addHandler(lines)
    ours = logging.getLogger("connectrt")  # DEBUG for connectrt's loggers only (not py4j's)
    previous_level = ours.level
    ours.setLevel(logging.DEBUG)
    try:
        with spark_worker(props, spark) as http:
            for name, config in (
                ("src", {"connector.class": "FileStreamSource", "file": str(src), "topic": topic}),
                (
                    "sink",
                    {"connector.class": "FileStreamSinkConnector", "file": str(dst),
                     "topics": topic},
                ),
            ):  # fmt: skip
                response = http.post("/connectors", json={"name": name, "config": config})
                assert response.status_code == 201, response.text

            def written() -> int:
                return dst.read_bytes().count(b"\n") if dst.exists() else 0

            wait_for(lambda: written() >= LINES, 180, f"{LINES} lines through the Spark tasks")
            assert dst.read_text("utf-8").splitlines() == expected  # 0 lost, in order
            root = http.get("/").json()
            driver = http.get("/connectors/src/status").json()["connector"]["worker_id"]
            answers = []
            for name in ("src", "sink"):
                status = http.get(f"/connectors/{name}/status").json()
                tasks = status["tasks"]
                assert [t["state"] for t in tasks] == ["RUNNING"], status
                assert tasks[0]["worker_id"] != driver, status  # on an executor
                answers.append(json.dumps(status))
            for answer in (
                "/connectors?expand=status&expand=info",
                "/connectors/src/config",
                "/connectors/src/tasks",
                "/",
            ):
                response = http.get(answer)
                assert response.status_code == 200, response.text
                answers.append(response.text)
            for name in ("src", "sink"):
                assert http.delete(f"/connectors/{name}").status_code == 204
            assert root["version"]
    finally:
        logging.getLogger().removeHandler(lines)
        ours.setLevel(previous_level)

    found = [f"REST answer: {s}" for a in answers for s in leaks(a, pki)]
    status_topic = props["status.storage.topic"]
    records = [
        f"{k!r} {v!r}" for parts in read_topic(kafka.bootstrap_servers, status_topic).values()
        for k, v in parts
    ]  # fmt: skip
    assert any("RUNNING" in r for r in records)  # the executors' status records are in it
    found += [f"status topic: {s}" for r in records for s in leaks(r, pki)]
    assert any("Spark task executor ready" in line for line in lines.lines), lines.lines[-20:]
    found += [f"log line: {s}" for line in lines.lines for s in leaks(line, pki)]
    conf = spark.sparkContext.getConf().getAll()
    found += [f"Spark conf {k}: {s}" for k, v in conf for s in leaks(v, pki)]
    found += [f"SQL conf {k}: {s}" for k, v in spark.conf.getAll.items() for s in leaks(v, pki)]
    assert not found, found


def produce(bootstrap: str, topic: str, values: list[bytes]) -> None:
    producer = Producer({"bootstrap.servers": bootstrap})
    for value in values:
        producer.produce(topic, value)
    assert producer.flush(60) == 0


def test_the_bridge_reads_and_writes_with_java_style_security_options(
    kafka: KafkaBroker, pki: Pki, spark: SparkSession, tmp_path: Path
) -> None:
    register(spark)
    run = time.monotonic_ns()
    topic, read_dlq, write_dlq = f"bridge-in-{run}", f"bridge-dlq-r-{run}", f"bridge-dlq-w-{run}"
    create_topic(kafka.bootstrap_servers, topic, partitions=1)
    bad = 7
    schema = {"type": "struct", "fields": [{"field": "n", "type": "int32"}], "optional": False}
    values = [
        b"{not json" if i == bad else json.dumps({"schema": schema, "payload": {"n": i}}).encode()
        for i in range(40)
    ]
    produce(kafka.bootstrap_servers, topic, values)
    kafka_options = {
        "kafka.bootstrap.servers": kafka.listener_bootstrap(LISTENER),
        **{f"kafka.{k}": v for k, v in java_security(pki, PASSWORD, pki.password).items()},
    }
    dlq_options = {
        "errors.tolerance": "all",
        "errors.deadletterqueue.topic.replication.factor": "1",
    }

    reader = spark.read.format("connectrt").option("subscribe", topic)
    reader = reader.option("value.converter", JSON).option("value.converter.schemas.enable", "true")
    options = {**kafka_options, **dlq_options, "errors.deadletterqueue.topic.name": read_dlq}
    for key, value in options.items():
        reader = reader.option(key, value)
    df = reader.load()
    rows = df.collect()
    assert [r["value"]["n"] for r in rows] == [i for i in range(40) if i != bad], rows[:5]
    dead = [v for _, v in read_topic(kafka.bootstrap_servers, read_dlq)[0]]
    assert dead == [b"{not json"]  # written by the bridge's DLQ producer over SASL_SSL
    plans = [df._jdf.queryExecution().toString()]
    assert "connectrt" in plans[0].lower(), plans[0]  # the bridge's relation, with its options

    # A string value: the JDBC sink writes structs only and reports each record (KIP-610), which
    # the errant record reporter sends to the dead letter queue over SASL_SSL.
    # One partition: each Spark partition builds a sink task and its dead letter queue clients.
    lines = spark.createDataFrame([(f"text {i}",) for i in range(5)], "line string").coalesce(1)
    writer = (
        lines.write.format("connectrt")
        .option("connector.class", "io.confluent.connect.jdbc.JdbcSinkConnector")
        .option("connection.url", f"jdbc:sqlite:{tmp_path / 'rejects.db'}")
        .option("value.column", "line")
        .option("topic", "lines")
        .option("auto.create", "true")
        .mode("append")
    )
    for key, value in {**kafka_options, **dlq_options}.items():
        writer = writer.option(key, value)
    writer.option("errors.deadletterqueue.topic.name", write_dlq).save()
    rejected = [
        json.loads(v or b"{}") for _, v in read_topic(kafka.bootstrap_servers, write_dlq)[0]
    ]
    assert sorted(d["value"] for d in rejected) == [f"text {i}" for i in range(5)]

    found = [f"plan: {s}" for plan in plans for s in leaks(plan, pki)]
    conf = spark.sparkContext.getConf().getAll()
    found += [f"Spark conf {k}: {s}" for k, v in conf for s in leaks(v, pki)]
    assert not found, found
