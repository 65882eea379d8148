"""``connectrt spark WORKER.properties`` with ``spark.remote=sc://...``: the driver is a Spark
Connect client and the tasks run in the server's Python workers (the local-master cases are in
``test_backend_cli.py``). A module of its own so that it runs beside the other tests on the
session's Spark Connect server (see ``tests/conftest.py``)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path

import httpx
import pytest

from connectrt.broker import EmbeddedBroker
from connectrt.ports import free_port
from connectrt.storage.offset_codec import decode_value, encode_key
from connectrt.testing.harness import create_topic, read_topic
from connectrt.testing.rest import wait_for
from connectrt.testing.spark_connect import SparkConnectServer

pytestmark = [pytest.mark.spark, pytest.mark.integration]


def test_connectrt_spark_with_spark_remote_runs_tasks_over_spark_connect(
    broker: EmbeddedBroker, spark_connect_server: SparkConnectServer, tmp_path: Path
):
    """``spark.remote=sc://...`` in the worker properties: the driver is a Spark Connect
    client (no JVM of its own) and its tasks run in the server's Python workers."""
    run = uuid.uuid4().hex[:8]
    port = free_port()
    offsets_topic = f"remote-offsets-{run}"
    props = tmp_path / "worker.properties"
    props.write_text(
        "\n".join(
            [
                f"bootstrap.servers={broker.bootstrap_servers}",
                f"group.id=remote-{run}",
                f"config.storage.topic=remote-configs-{run}",
                f"status.storage.topic=remote-status-{run}",
                f"offset.storage.topic={offsets_topic}",
                "offset.flush.interval.ms=60000",  # only the final commit at stop
                f"listeners=http://127.0.0.1:{port}",
                f"file.connectors.allowed.dirs={tempfile.gettempdir()}",
                "plugin.packages=tests",
                f"spark.remote={spark_connect_server.url}",
                "spark.master=local[2]",  # ignored with a warning: the server's settings apply
            ]
        )
        + "\n"
    )
    log = tmp_path / "connectrt.log"
    with log.open("w") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "connectrt.cli", "spark", str(props)],
            stdout=out,
            stderr=subprocess.STDOUT,
            env={k: v for k, v in os.environ.items() if not k.startswith(("SPARK_", "PYSPARK_"))},
        )
    try:
        http = httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=30)

        def healthy() -> bool:
            assert proc.poll() is None, log.read_text()[-3000:]
            try:
                return http.get("/health").json().get("status") == "healthy"
            except httpx.HTTPError:
                return False

        wait_for(healthy, 120, "connectrt spark (a Spark Connect client) to be healthy")
        topic, name = f"remote-{run}", f"remote-source-{run}"
        create_topic(broker.bootstrap_servers, topic, partitions=1)
        config = {
            "connector.class": "tests.plugins.sequence.SequenceSource",
            "tasks.max": "2",
            "topic": topic,
            "records.per.task": "300",
            "key.converter": "org.apache.kafka.connect.storage.StringConverter",
            "value.converter": "org.apache.kafka.connect.storage.StringConverter",
        }
        assert http.put(f"/connectors/{name}/config", json=config).status_code == 201

        def running_on_the_server() -> bool:
            tasks = http.get(f"/connectors/{name}/status").json().get("tasks", [])
            return len(tasks) == 2 and all(
                t["state"] == "RUNNING" and not t["worker_id"].endswith(f":{proc.pid}")
                for t in tasks
            )

        wait_for(running_on_the_server, 90, "2 tasks RUNNING in the server's Python workers")
        wait_for(
            lambda: (
                sum(len(r) for r in read_topic(broker.bootstrap_servers, topic).values()) == 600
            ),
            60,
            "600 records",
        )
        http.close()
        proc.send_signal(signal.SIGINT)
        assert proc.wait(90) == 0, log.read_text()[-3000:]
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(30)
    text = log.read_text()
    assert "connect launcher" in text and "cancelling its Spark job" not in text
    assert "ignoring spark.master" in text
    stored = {
        k: decode_value(v)
        for records in read_topic(broker.bootstrap_servers, offsets_topic).values()
        for k, v in records
    }
    for task in (0, 1):
        assert stored[encode_key(name, {"task": task})] == {"seq": 300}
