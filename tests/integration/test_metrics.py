"""``/metrics`` of a real worker (embedded broker, real HTTP): consumer lag of a stalled sink,
latency histograms, dead letter queue counters, process and GC metrics, OpenMetrics.

The lag test holds a sink's ``put`` shut (``tests.plugins.gated_sink``) and produces more: the
task's consumer keeps fetching ahead, so its high watermark moves while its position does not,
and ``connectrt_task_consumer_lag`` must show exactly the records produced after the blocked
batch. Opening the gate must bring it back to 0 with every record put.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from connectrt.broker import EmbeddedBroker
from connectrt.testing.harness import create_topic, produce
from connectrt.testing.metrics import scrape
from connectrt.testing.rest import RestWorker, rest_worker_props, start_rest_worker, wait_for
from tests.plugins.gated_sink import BLOCKED, GATES, PUT

pytestmark = pytest.mark.integration

STRING = "org.apache.kafka.connect.storage.StringConverter"


@pytest.fixture(scope="module")
def worker(broker: EmbeddedBroker) -> Iterator[RestWorker]:
    w = start_rest_worker(broker.bootstrap_servers)
    try:
        yield w
    finally:
        w.stop()


@pytest.fixture(autouse=True)
def remove_connectors(worker: RestWorker) -> Iterator[None]:
    yield
    for gate in GATES.values():
        gate.set()  # a stalled put must return for its task to stop
    worker.delete_connectors()


def _lag(worker: RestWorker, name: str, topic: str) -> float | None:
    labels = {"connector": name, "task": 0, "topic": topic, "partition": 0}
    return scrape(worker.http).value("connectrt_task_consumer_lag", **labels)


def _create(worker: RestWorker, name: str, config: dict[str, str]) -> None:
    r = worker.http.post("/connectors", json={"name": name, "config": config})
    assert r.status_code == 201, r.text


def test_lag_of_a_stalled_sink_is_visible_and_drains(
    worker: RestWorker, broker: EmbeddedBroker, unique_name: Any
) -> None:
    bootstrap = broker.bootstrap_servers
    name, topic, gate = unique_name("gated"), unique_name("lag"), uuid.uuid4().hex
    create_topic(bootstrap, topic, partitions=1)
    produce(bootstrap, topic, [f"a{i}" for i in range(10)])
    GATES[gate].set()
    _create(
        worker,
        name,
        {
            "connector.class": "tests.plugins.gated_sink.GatedSink",
            "topics": topic,
            "gate.id": gate,
            "value.converter": STRING,
        },
    )
    wait_for(lambda: PUT[gate] == 10, 90, "the sink to put the first 10 records (group join)")
    wait_for(lambda: _lag(worker, name, topic) == 0, 60, "lag 0 once the 10 records are put")

    # Stall put() on the next batch (one record), then produce 50 more behind it.
    GATES[gate].clear()
    produce(bootstrap, topic, ["blocked"])
    assert BLOCKED[gate].wait(60), "put() did not receive the 11th record"
    produce(bootstrap, topic, [f"b{i}" for i in range(50)])
    wait_for(
        lambda: _lag(worker, name, topic) == 50,
        60,
        "lag 50: the high watermark at 61, the stalled task's position at 11",
    )
    status = worker.http.get(f"/connectors/{name}/status").json()
    assert status["tasks"][0]["state"] == "RUNNING"

    GATES[gate].set()
    wait_for(lambda: PUT[gate] == 61, 60, "all 61 records put once the gate opens")
    wait_for(lambda: _lag(worker, name, topic) == 0, 60, "lag back to 0")
    metrics = scrape(worker.http)
    task = {"connector": name, "task": 0}
    assert metrics.value("connectrt_task_records_put_total", **task) == 61
    assert metrics.value("connectrt_task_records_polled_total", **task) == 61
    # put() was timed per call: at least the three batches (10, 1, 50), one of them stalled.
    put_count = metrics.value("connectrt_task_put_seconds_count", **task)
    assert put_count is not None and put_count >= 3
    stalled_put = metrics.value("connectrt_task_put_seconds_sum", **task)
    assert stalled_put is not None and stalled_put > 0.05
    assert metrics.value("connectrt_task_put_seconds_bucket", le="+Inf", **task) == put_count
    wait_for(
        lambda: (scrape(worker.http).value("connectrt_task_commit_seconds_count", **task) or 0) > 0,
        60,
        "an offset commit observed in the commit histogram",
    )
    assert metrics.types["connectrt_task_consumer_lag"] == "gauge"
    assert metrics.types["connectrt_task_put_seconds"] == "histogram"


def test_lag_of_a_sink_in_a_task_process_reaches_the_workers_metrics(
    broker: EmbeddedBroker, tmp_path: Path, unique_name: Any
) -> None:
    """With ``task.executor=processes`` the task's metrics come from its child process each
    second. Its consumer lag is computed at read time in the child: the worker must show the
    child's figure (it used to show none), and 0 again once the stuck put() returns."""
    bootstrap = broker.bootstrap_servers
    name, topic, store = unique_name("proc-lag"), unique_name("proc-lag"), uuid.uuid4().hex
    release = tmp_path / "release"
    create_topic(bootstrap, topic, partitions=1)
    processes = start_rest_worker(
        bootstrap, rest_worker_props(bootstrap, **{"task.executor": "processes"})
    )
    try:
        produce(bootstrap, topic, [f"a{i}" for i in range(10)])
        _create(
            processes,
            name,
            {
                "connector.class": "tests.plugins.hanging.HangingSink",
                "topics": topic,
                "store.id": store,
                "hang.task": "0",
                "release.file": str(release),
                "value.converter": STRING,
            },
        )
        task = {"connector": name, "task": 0}
        wait_for(
            lambda: scrape(processes.http).value("connectrt_task_records_polled_total", **task),
            90,
            "the task process to consume the first batch (it then hangs in put())",
        )
        # The batch put() is stuck on: the first n records (all 10, unless the first fetch
        # held fewer); the task consumes nothing more until put() returns.
        stuck = scrape(processes.http).value("connectrt_task_records_polled_total", **task)
        assert stuck is not None and 1 <= stuck <= 10
        produce(bootstrap, topic, [f"b{i}" for i in range(50)])
        wait_for(
            lambda: _lag(processes, name, topic) == 60 - stuck,
            60,
            f"lag {60 - stuck} in the worker's /metrics: the records behind the stuck batch",
        )
        release.touch()
        wait_for(lambda: _lag(processes, name, topic) == 0, 60, "lag back to 0 once put() returns")
        wait_for(
            lambda: scrape(processes.http).value("connectrt_task_records_put_total", **task) == 60,
            60,
            "all 60 records put, as the task process counted them",
        )
    finally:
        release.touch()
        processes.delete_connectors()
        processes.stop()


def test_dead_letter_queue_counter_and_source_histograms(
    worker: RestWorker, broker: EmbeddedBroker, tmp_path: Any, unique_name: Any
) -> None:
    bootstrap = broker.bootstrap_servers
    topic, dlq = unique_name("dlqsrc"), unique_name("dlq")
    create_topic(bootstrap, topic, partitions=1)
    produce(bootstrap, topic, [b'{"ok": 1}', b"not json", b"{broken", b'{"ok": 2}'])
    sink = unique_name("lenient")
    _create(
        worker,
        sink,
        {
            "connector.class": "FileStreamSink",
            "topics": topic,
            "file": str(tmp_path / "out.txt"),
            "value.converter": "org.apache.kafka.connect.json.JsonConverter",
            "value.converter.schemas.enable": "false",
            "errors.tolerance": "all",
            "errors.deadletterqueue.topic.name": dlq,
            "errors.deadletterqueue.topic.replication.factor": "1",
        },
    )
    task = {"connector": sink, "task": 0}

    def committed() -> float:
        return scrape(worker.http).value("connectrt_task_records_committed_total", **task) or 0

    wait_for(lambda: committed() == 4, 90, "all 4 records committed (2 through the DLQ)")
    metrics = scrape(worker.http)
    assert metrics.value("connectrt_task_deadletterqueue_produce_requests_total", **task) == 2
    assert metrics.value("connectrt_task_deadletterqueue_produce_failures_total", **task) == 0
    assert metrics.value("connectrt_task_records_put_total", **task) == 2

    source = unique_name("src")
    (tmp_path / "in.txt").write_text("x\ny\nz\n")
    _create(
        worker,
        source,
        {
            "connector.class": "FileStreamSource",
            "file": str(tmp_path / "in.txt"),
            "topic": unique_name("srcout"),
        },
    )
    src = {"connector": source, "task": 0}
    wait_for(
        lambda: (scrape(worker.http).value("connectrt_task_commit_seconds_count", **src) or 0) >= 1,
        60,
        "the source's first offset commit",
    )
    metrics = scrape(worker.http)
    assert (metrics.value("connectrt_task_poll_seconds_count", **src) or 0) >= 1
    assert metrics.value("connectrt_task_put_seconds_count", **src) == 0
    assert metrics.matching("connectrt_task_consumer_lag", connector=source) == []


def test_process_gc_metrics_and_openmetrics(worker: RestWorker) -> None:
    metrics = scrape(worker.http)
    resident = metrics.value("process_resident_memory_bytes")
    assert resident is not None and resident > 10_000_000
    assert metrics.matching("python_gc_collections_total", generation=0)
    assert (metrics.value("connectrt_uptime_seconds") or 0) > 0
    text = worker.http.get("/metrics")
    assert text.headers["content-type"].startswith("text/plain; version=0.0.4")
    open_metrics = worker.http.get(
        "/metrics", headers={"Accept": "application/openmetrics-text; version=1.0.0"}
    )
    assert open_metrics.headers["content-type"].startswith("application/openmetrics-text")
    assert open_metrics.text.rstrip().endswith("# EOF")
