"""No secret of the driver in what a Spark executor writes (issue 27, items 3 and 7): a task that
fails on the executor with an error quoting a config provider secret and a literal
``*.password`` value leaves 0 occurrences of either, in any form, in its REST status trace, in
any record of the status topic (the executor writes its task's statuses there itself) and in
the whole output of the worker's process tree (driver, Spark's JVM, Spark's Python workers).

The worker is a ``connectrt spark`` process of its own, not the session-wide ``spark``
fixture: the JVM and its Python workers write to the standard error they inherited when the
session started, which no test can read in isolation; a process of its own puts all of it in
one file. One task, a ``local[2,1]`` master: the task fails once and the job with it.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest
from confluent_kafka import Consumer, KafkaError, TopicPartition

from connectrt.broker import EmbeddedBroker
from connectrt.ports import free_port
from connectrt.runtime.redaction import secret_forms
from connectrt.testing.harness import create_topic
from connectrt.testing.rest import wait_for

pytestmark = [pytest.mark.spark, pytest.mark.integration]

PROVIDERS = "org.apache.kafka.common.config.provider"
STRING = "org.apache.kafka.connect.storage.StringConverter"


@dataclass
class SparkWorkerProcess:
    """A ``connectrt spark`` process at DEBUG, the output of its whole tree in ``log``."""

    process: subprocess.Popen[bytes]
    http: httpx.Client
    log: Path
    bootstrap: str
    status_topic: str

    def stop(self) -> None:
        """SIGINT (a graceful stop), a kill if it has not ended 90 s later."""
        if self.process.poll() is not None:
            return
        self.process.send_signal(signal.SIGINT)
        try:
            self.process.wait(90)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(30)


@dataclass
class Secrets:
    """An environment variable behind ``${env:...}`` and a literal ``db.password``, each with
    a backslash (``repr`` and JSON double it) and a token of its own: a token found anywhere is
    a leak, whatever encoding carried the rest of the value."""

    env_name: str
    env_token: str = field(default_factory=lambda: uuid.uuid4().hex[:12])
    password_token: str = field(default_factory=lambda: uuid.uuid4().hex[:12])

    @property
    def env(self) -> str:
        return f"envS\\{self.env_token}/q'd\"\u00e9"

    @property
    def password(self) -> str:
        return f"pw\\lit{self.password_token}"

    def leaks(self, text: str) -> list[str]:
        found = []
        for what, value, token in (
            ("the env secret", self.env, self.env_token),
            ("the literal password", self.password, self.password_token),
        ):
            forms = secret_forms(value) | {
                value,
                repr(value)[1:-1],
                json.dumps(value)[1:-1],
                value.replace("\\", "\\\\"),
                token,
            }
            found += [f"{what} as {form!r}" for form in sorted(forms) if form in text]
        return found


@pytest.fixture
def secrets() -> Secrets:
    return Secrets(env_name=f"CONNECTRT_SPARK_SEC_{uuid.uuid4().hex[:8].upper()}")


@pytest.fixture
def spark_worker(
    broker: EmbeddedBroker, tmp_path: Path, secrets: Secrets
) -> Iterator[SparkWorkerProcess]:
    """A ``connectrt spark`` worker with the env config provider on; stopped after (its
    connectors are deleted by the test's own teardown, while it still runs)."""
    run = uuid.uuid4().hex[:8]
    port = free_port()
    status_topic = f"sparksec-status-{run}"
    props = {
        "bootstrap.servers": broker.bootstrap_servers,
        "group.id": f"sparksec-{run}",
        "config.storage.topic": f"sparksec-configs-{run}",
        "status.storage.topic": status_topic,
        "offset.storage.topic": f"sparksec-offsets-{run}",
        "offset.storage.partitions": "1",
        "listeners": f"http://127.0.0.1:{port}",
        "file.connectors.allowed.dirs": tempfile.gettempdir(),
        "plugin.packages": "tests",
        "task.shutdown.graceful.timeout.ms": "5000",
        "config.providers": "env",
        "config.providers.env.class": f"{PROVIDERS}.EnvVarConfigProvider",
        "spark.master": "local[2,1]",  # one attempt: the task fails once, its job with it
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.driver.host": "127.0.0.1",
        "spark.driver.bindAddress": "127.0.0.1",
    }
    props_file = tmp_path / "worker.properties"
    props_file.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
    env = {
        **os.environ,
        secrets.env_name: secrets.env,
        "PYSPARK_PYTHON": sys.executable,
        "SPARK_LOCAL_IP": "127.0.0.1",
        "PYTHONPATH": os.pathsep.join(p for p in sys.path if p and os.path.isdir(p)),
    }
    log = tmp_path / "connectrt.log"
    command = [sys.executable, "-m", "connectrt.cli", "--log-level", "DEBUG", "spark"]
    with log.open("wb") as out:
        process = subprocess.Popen(
            [*command, str(props_file)], stdout=out, stderr=subprocess.STDOUT, env=env
        )
    http = httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=60)
    worker = SparkWorkerProcess(process, http, log, broker.bootstrap_servers, status_topic)
    try:

        def healthy() -> bool:
            assert process.poll() is None, log.read_text(errors="replace")[-3000:]
            try:
                return http.get("/health").json().get("status") == "healthy"
            except httpx.HTTPError:
                return False

        wait_for(healthy, 180, "connectrt spark to be healthy")
        yield worker
    finally:
        http.close()
        worker.stop()


@pytest.fixture
def leaky_connector(spark_worker: SparkWorkerProcess, secrets: Secrets) -> Iterator[str]:
    """A LeakySource whose one task fails on the executor quoting its secrets; deleted after."""
    name = f"leaky-spark-{uuid.uuid4().hex[:8]}"
    topic = f"{name}-out"
    create_topic(spark_worker.bootstrap, topic)
    config = {
        "connector.class": "tests.plugins.leaky_secrets.LeakySource",
        "tasks.max": "1",
        "topic": topic,
        "leak.fail": "task",
        "key.converter": STRING,
        "value.converter": STRING,
        "db.password": secrets.password,
        "note.env": f"${{env:{secrets.env_name}}}",
    }
    created = spark_worker.http.put(f"/connectors/{name}/config", json=config)
    assert created.status_code == 201, created.text
    try:
        yield name
    finally:
        if spark_worker.process.poll() is None:
            deleted = spark_worker.http.delete(f"/connectors/{name}")
            assert deleted.status_code in (204, 404), deleted.text


def status_topic_text(bootstrap: str, topic: str) -> list[str]:
    """Every record of ``topic`` (key and value as text), read from the beginning to the end
    of each partition."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"sparksec-read-{uuid.uuid4().hex[:8]}",
            "enable.auto.commit": False,
            "enable.partition.eof": True,
        }
    )
    out: list[str] = []
    try:
        partitions = consumer.list_topics(topic, timeout=10).topics[topic].partitions
        consumer.assign([TopicPartition(topic, p, -2) for p in partitions])  # from the start
        at_end: set[int] = set()
        deadline = time.monotonic() + 60
        while at_end != set(partitions):
            assert time.monotonic() < deadline, f"{topic}: no end of partitions {set(partitions)}"
            for m in consumer.consume(500, 1):
                error = m.error()
                if error is not None:
                    assert error.code() == KafkaError._PARTITION_EOF, error
                    at_end.add(m.partition())
                    continue
                key = (m.key() or b"").decode("utf-8", "replace")
                out.append(f"{key}\n{(m.value() or b'').decode('utf-8', 'replace')}")
    finally:
        consumer.close()
    return out


def test_a_task_failing_on_an_executor_leaks_no_secret(
    spark_worker: SparkWorkerProcess, leaky_connector: str, secrets: Secrets
) -> None:
    http, name = spark_worker.http, leaky_connector
    task_status = f"/connectors/{name}/tasks/0/status"

    def job_failed() -> bool:
        # The executor's FAILED status (the task's trace) comes first, then the driver's once
        # the Spark job has failed: Spark's job failure, quoting what the executor raised.
        status = http.get(task_status).json()
        trace = status.get("trace", "")
        return status.get("state") == "FAILED" and "TaskAttemptFailed" in trace

    wait_for(job_failed, 180, "the task to fail on the executor and its Spark job to end")
    trace = http.get(task_status).json()["trace"]
    assert "cannot log in" in trace and "[hidden]" in trace, trace
    status_trace = http.get(f"/connectors/{name}/status").json()["tasks"][0]["trace"]

    records = status_topic_text(spark_worker.bootstrap, spark_worker.status_topic)
    executor_failures = [r for r in records if "cannot log in" in r]
    assert executor_failures, "the executor's FAILED status (its trace) reached the status topic"

    assert http.delete(f"/connectors/{name}").status_code == 204
    spark_worker.stop()  # every process of the tree has flushed its output
    log = spark_worker.log.read_text(encoding="utf-8", errors="replace")
    assert "task starting" in log and "cannot log in" in log, "the executor's lines are in it"

    sinks = [
        ("the task's REST status trace", trace),
        ("the connector's REST status trace", status_trace),
        *(("a status topic record", r) for r in records),
        ("the worker's output", log),
    ]
    found = [f"{where}: {leak}" for where, text in sinks for leak in secrets.leaks(text)]
    assert not found, "\n".join(found[:40])
