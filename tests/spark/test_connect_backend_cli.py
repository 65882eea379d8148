"""``connectrt spark WORKER.properties`` with ``spark.remote=sc://...``: the driver is a Spark
Connect client and the tasks run in the server's Python workers (the local-master cases are in
``test_backend_cli.py``). A module of its own so that it runs beside the other tests on the
session's Spark Connect server (see ``tests/conftest.py``)."""

from __future__ import annotations

import os
import uuid
from pathlib import Path

import pytest

from connectrt.broker import EmbeddedBroker
from connectrt.ports import free_port
from connectrt.storage.offset_codec import encode_key
from connectrt.testing.spark_connect import SparkConnectServer
from tests.spark.cli_support import (
    GRACEFUL_STOP_TIMEOUT,
    run_sequence_source,
    spark_worker,
    stop_gracefully,
    stored_offsets,
    write_worker_properties,
)

pytestmark = [pytest.mark.spark, pytest.mark.integration]


def test_connectrt_spark_with_spark_remote_runs_tasks_over_spark_connect(
    broker: EmbeddedBroker, spark_connect_server: SparkConnectServer, tmp_path: Path
):
    """``spark.remote=sc://...`` in the worker properties: the driver is a Spark Connect
    client (no JVM of its own) and its tasks run in the server's Python workers."""
    run = uuid.uuid4().hex[:8]
    port = free_port()
    props = write_worker_properties(
        tmp_path / "worker.properties",
        broker.bootstrap_servers,
        f"remote-{run}",
        port,
        [
            "offset.flush.interval.ms=60000",  # only the final commit at stop
            GRACEFUL_STOP_TIMEOUT,
            f"spark.remote={spark_connect_server.url}",
            "spark.master=local[2]",  # ignored with a warning: the server's settings apply
        ],
    )
    log = tmp_path / "connectrt.log"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SPARK_", "PYSPARK_"))}
    what = "connectrt spark (a Spark Connect client)"
    name = f"remote-source-{run}"
    with spark_worker(props, port, log, env, what) as (proc, http):
        run_sequence_source(
            http,
            broker.bootstrap_servers,
            name,
            300,
            lambda w: not w.endswith(f":{proc.pid}"),
            "in the server's Python workers",
        )
        stop_gracefully(proc, log)
    text = log.read_text()
    assert "connect launcher" in text and "cancelling its Spark job" not in text
    assert "ignoring spark.master" in text
    stored = stored_offsets(broker.bootstrap_servers, f"remote-{run}-offsets")
    for task in (0, 1):
        assert stored[encode_key(name, {"task": task})] == {"seq": 300}
