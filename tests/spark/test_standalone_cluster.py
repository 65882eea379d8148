"""``connectrt spark`` as the driver of a real Spark standalone cluster (pyspark's own master
and worker JVMs, :mod:`connectrt.testing.spark_standalone`), each worker host on a loopback
address of its own with 2 cores.

* The task slots come from the executors registered, live: on 2 hosts x 2 cores (one slot
  kept free on a cluster) three one-task connectors run without ``task.executor.spark.slots``;
  a fourth waits UNASSIGNED with the reason and runs once a third host joins.
* The host running a FileStream source task is killed mid-stream (every process of it): Spark
  re-runs the task on another host and every line arrives (at-least-once: duplicates allowed).

One cluster and one driver for the module (their own unit of work under xdist, see
``tests/conftest.py``); the second test uses the third host the first one added.
"""

from __future__ import annotations

import os
import sys
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from connectrt.broker import EmbeddedBroker
from connectrt.ports import free_port
from connectrt.testing.harness import create_topic, read_topic
from connectrt.testing.rest import wait_for
from connectrt.testing.spark_standalone import StandaloneCluster
from tests.spark.cli_support import STRING_CONVERTER, spark_worker, write_worker_properties

pytestmark = [pytest.mark.spark, pytest.mark.integration, pytest.mark.slow]


@dataclass
class Driver:
    cluster: StandaloneCluster
    http: httpx.Client
    bootstrap: str

    def tasks(self, name: str) -> list[dict[str, str]]:
        return list(self.http.get(f"/connectors/{name}/status").json().get("tasks", []))

    def states(self, name: str) -> list[str]:
        return [t["state"] for t in self.tasks(name)]


@pytest.fixture(scope="module")
def driver(broker: EmbeddedBroker, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Driver]:
    folder = tmp_path_factory.mktemp("standalone")
    (folder / "cluster").mkdir()
    with StandaloneCluster(cores=2, folder=folder / "cluster") as cluster:
        cluster.start(workers=2, timeout=300)
        run = uuid.uuid4().hex[:8]
        port = free_port()
        props = write_worker_properties(
            folder / "worker.properties",
            broker.bootstrap_servers,
            f"standalone-{run}",
            port,
            [
                "offset.flush.interval.ms=1000",
                "task.executor.spark.slots.poll.ms=1000",
                "task.executor.spark.executors.wait.ms=180000",
                *(f"{k}={v}" for k, v in cluster.driver_conf().items()),
            ],
        )
        env = {
            **os.environ,
            "PYSPARK_PYTHON": sys.executable,
            "SPARK_LOCAL_IP": "127.0.0.1",
            "PYTHONPATH": os.pathsep.join(p for p in sys.path if p and os.path.isdir(p)),
        }
        log = folder / "driver.log"
        what = "connectrt spark on a standalone cluster"
        with spark_worker(props, port, log, env, what, timeout=420) as (_proc, http):
            yield Driver(cluster, http, broker.bootstrap_servers)


def _sequence(topic: str) -> dict[str, str]:
    return {
        "connector.class": "tests.plugins.sequence.SequenceSource",
        "tasks.max": "1",
        "topic": topic,
        "batch.size": "10",
        "batch.interval.ms": "200",
        "key.converter": STRING_CONVERTER,
        "value.converter": STRING_CONVERTER,
    }


def test_slots_follow_the_registered_executors(driver: Driver) -> None:
    """2 hosts x 2 cores, one slot kept free: 3 one-task connectors RUN; the fourth waits
    UNASSIGNED with the reason until a third host joins, then RUNS."""
    http = driver.http
    topic = f"slots-{uuid.uuid4().hex[:8]}"
    create_topic(driver.bootstrap, topic, partitions=1)
    names = [f"seq-{i}" for i in range(4)]
    for name in names[:3]:
        assert http.put(f"/connectors/{name}/config", json=_sequence(topic)).status_code == 201
    wait_for(
        lambda: all(driver.states(n) == ["RUNNING"] for n in names[:3]),
        300,
        "three one-task connectors RUNNING on 2 hosts x 2 cores",
    )
    assert http.put(f"/connectors/{names[3]}/config", json=_sequence(topic)).status_code == 201
    wait_for(lambda: driver.states(names[3]) == ["UNASSIGNED"], 60, "the fourth task waiting")
    trace = driver.tasks(names[3])[0].get("trace", "")
    assert f"Not enough Spark task slots for connector {names[3]}" in trace
    assert "the cluster has 4 slot(s) from 2 executor(s), 3 held" in trace
    assert "start when executors with enough cores register" in trace
    assert http.get(f"/connectors/{names[3]}/status").json()["connector"]["state"] == "RUNNING"

    driver.cluster.add_worker(timeout=300)
    wait_for(
        lambda: driver.states(names[3]) == ["RUNNING"], 300, "the fourth task RUNNING on host 3"
    )
    assert all(driver.states(n) == ["RUNNING"] for n in names[:3])
    for name in names:
        assert http.delete(f"/connectors/{name}").status_code == 204


def test_a_killed_host_loses_no_file_source_record(driver: Driver, tmp_path: Path) -> None:
    """The host running a FileStream source task dies mid-stream: the task re-runs on another
    host from its committed position, and every line of the file reaches the topic."""
    http = driver.http
    run = uuid.uuid4().hex[:8]
    topic, name = f"file-{run}", f"file-{run}"
    create_topic(driver.bootstrap, topic, partitions=1)
    source = tmp_path / "in.txt"
    first = [f"line-{i}" for i in range(20_000)]
    source.write_text("\n".join(first) + "\n")
    config = {
        "connector.class": "FileStreamSource",
        "tasks.max": "1",
        "file": str(source),
        "topic": topic,
        "key.converter": STRING_CONVERTER,
        "value.converter": STRING_CONVERTER,
    }
    assert http.put(f"/connectors/{name}/config", json=config).status_code == 201

    def values() -> set[bytes | None]:
        return {v for records in read_topic(driver.bootstrap, topic).values() for _, v in records}

    wait_for(lambda: len(values()) >= 5_000, 300, "the file source under way")
    worker_id = driver.tasks(name)[0]["worker_id"]
    host = driver.cluster.host_of(int(worker_id.rsplit(":", 1)[1]))
    assert host is not None, f"no worker host runs {worker_id}"
    driver.cluster.kill_worker(host)

    more = [f"line-{i}" for i in range(20_000, 40_000)]
    with source.open("a") as out:
        out.write("\n".join(more) + "\n")
    expected = {line.encode() for line in first + more}

    def rerun_elsewhere() -> bool:
        tasks = driver.tasks(name)
        return bool(tasks) and tasks[0]["state"] == "RUNNING" and tasks[0]["worker_id"] != worker_id

    wait_for(rerun_elsewhere, 300, "the file source task RUNNING again on another host")
    new_host = driver.cluster.host_of(int(driver.tasks(name)[0]["worker_id"].rsplit(":", 1)[1]))
    assert new_host is not None and new_host is not host and not host.alive
    wait_for(lambda: expected <= values(), 300, "every line of the file in the topic")
    assert values() == expected  # nothing lost, nothing foreign (duplicates are allowed)
    assert http.delete(f"/connectors/{name}").status_code == 204
