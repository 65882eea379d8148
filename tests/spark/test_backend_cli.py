"""``connectrt spark WORKER.properties`` as a process of its own: its own SparkSession from the
``spark.*`` properties, the REST API, tasks on the executors, and a graceful stop on SIGINT
(tasks commit their offsets before Spark stops)."""

from __future__ import annotations

import os
import sys
import uuid
from pathlib import Path

import pytest

from connectrt.broker import EmbeddedBroker
from connectrt.ports import free_port
from connectrt.storage.offset_codec import encode_key
from connectrt.testing.harness import create_topic
from connectrt.testing.rest import wait_for
from tests.spark.cli_support import (
    GRACEFUL_STOP_TIMEOUT,
    LOCAL_SPARK,
    STRING_CONVERTER,
    run_sequence_source,
    spark_worker,
    stop_gracefully,
    stored_offsets,
    write_worker_properties,
)

pytestmark = [pytest.mark.spark, pytest.mark.integration]

_LOCAL_ENV = {
    **os.environ,
    "PYSPARK_PYTHON": sys.executable,
    "SPARK_LOCAL_IP": "127.0.0.1",
    "PYTHONPATH": os.pathsep.join(p for p in sys.path if p and os.path.isdir(p)),
}


def test_connectrt_spark_command_runs_tasks_and_stops_gracefully(
    broker: EmbeddedBroker, tmp_path: Path
):
    run = uuid.uuid4().hex[:8]
    port = free_port()
    props = write_worker_properties(
        tmp_path / "worker.properties",
        broker.bootstrap_servers,
        f"cli-{run}",
        port,
        [
            "offset.storage.partitions=2",
            "offset.flush.interval.ms=60000",  # only the final commit at stop
            GRACEFUL_STOP_TIMEOUT,
            "spark.master=local[3,2]",
            *LOCAL_SPARK,
        ],
    )
    log = tmp_path / "connectrt.log"
    name = f"cli-source-{run}"
    with spark_worker(props, port, log, _LOCAL_ENV, "connectrt spark") as (proc, http):
        driver = f"127.0.0.1:{http.base_url.port}"
        run_sequence_source(
            http, broker.bootstrap_servers, name, 500, lambda w: w != driver, "on executors"
        )
        stop_gracefully(proc, log)
    text = log.read_text()
    assert "cancelling its Spark job" not in text
    # The tasks' final commits (the only ones: the flush interval is a minute) reached Kafka.
    stored = stored_offsets(broker.bootstrap_servers, f"cli-{run}-offsets")
    for task in (0, 1):
        assert stored[encode_key(name, {"task": task})] == {"seq": 500}


def test_local_2_runs_a_file_source_and_a_file_sink_and_a_third_task_waits_for_a_slot(
    broker: EmbeddedBroker, tmp_path: Path
):
    """No free slot is required on a local master: ``local[2]`` runs one source and one sink
    task; a third long-running task has no slot and waits UNASSIGNED with the reason, and runs
    once the sink's task ends and frees its slot."""
    run = uuid.uuid4().hex[:8]
    port = free_port()
    props = write_worker_properties(
        tmp_path / "worker.properties",
        broker.bootstrap_servers,
        f"local2-{run}",
        port,
        [
            "offset.flush.interval.ms=500",
            "consumer.session.timeout.ms=6000",
            "consumer.heartbeat.interval.ms=500",
            "spark.master=local[2,2]",
            *LOCAL_SPARK,
        ],
    )
    source_file, sink_file = tmp_path / "in.txt", tmp_path / "out.txt"
    lines = [f"line-{i}" for i in range(300)]
    source_file.write_text("\n".join(lines) + "\n")
    topic = f"local2-{run}"
    create_topic(broker.bootstrap_servers, topic, partitions=1)
    log = tmp_path / "connectrt.log"
    what = "connectrt spark on local[2,2]"
    with spark_worker(props, port, log, _LOCAL_ENV, what) as (proc, http):

        def state(name: str) -> tuple[str, list[str]]:
            body = http.get(f"/connectors/{name}/status").json()
            tasks = [t["state"] for t in body.get("tasks", [])]
            return body.get("connector", {}).get("state", ""), tasks

        common = {
            "tasks.max": "1",
            "key.converter": STRING_CONVERTER,
            "value.converter": STRING_CONVERTER,
        }
        source = {"connector.class": "FileStreamSource", "file": str(source_file), "topic": topic}
        sink = {"connector.class": "FileStreamSink", "file": str(sink_file), "topics": topic}
        for name, config in (("src", source), ("sink", sink)):
            response = http.put(f"/connectors/{name}/config", json={**common, **config})
            assert response.status_code == 201, response.text
        wait_for(
            lambda: state("src")[1] == ["RUNNING"] and state("sink")[1] == ["RUNNING"],
            120,
            "the file source and the file sink task RUNNING on local[2]",
        )
        wait_for(
            lambda: sink_file.exists() and sink_file.read_text().splitlines() == lines,
            90,
            "every line of the source file in the sink file",
        )
        third = {"connector.class": "FileStreamSink", "file": str(tmp_path / "x.txt")}
        response = http.put("/connectors/third/config", json={**common, **third, "topics": topic})
        assert response.status_code == 201, response.text
        wait_for(lambda: state("third")[1] == ["UNASSIGNED"], 60, "the third task waiting")
        trace = http.get("/connectors/third/status").json()["tasks"][0].get("trace", "")
        assert "Not enough Spark task slots for connector third" in trace
        assert "the cluster has 2 slot(s), 2 held" in trace and "0 must stay free" in trace
        assert state("src")[1] == ["RUNNING"] and state("sink")[1] == ["RUNNING"]
        assert http.delete("/connectors/sink").status_code == 204
        wait_for(lambda: state("third")[1] == ["RUNNING"], 120, "the third task RUNNING")
        for name in ("third", "src"):
            assert http.delete(f"/connectors/{name}").status_code == 204
        stop_gracefully(proc, log)
