"""KIP-877 through real HTTP: plugins' own metrics in ``GET /metrics``.

A connector, its task, a Monitorable value converter, a transformation and a predicate each
publish metrics; ``/metrics`` shows them with Kafka's tags (connector, task, converter,
transformation, predicate) and the values the plugins recorded, and drops them once the
connector is deleted.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest

from connectrt.broker import EmbeddedBroker
from connectrt.testing.harness import create_topic, read_topic
from connectrt.testing.metrics import scrape
from connectrt.testing.rest import RestWorker, running_rest_worker, wait_for

pytestmark = pytest.mark.integration

RECORDS = 50


@pytest.fixture(scope="module")
def worker(broker: EmbeddedBroker) -> Iterator[RestWorker]:
    with running_rest_worker(broker.bootstrap_servers) as running:
        yield running


@pytest.fixture(autouse=True)
def remove_connectors_after_test(worker: RestWorker) -> Iterator[None]:
    yield
    worker.delete_connectors()


def _samples(worker: RestWorker) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    """``(family, labels) -> value`` of every connectrt_plugin_* sample in /metrics."""
    text = worker.http.get("/metrics").text
    out = {}
    for line in text.splitlines():
        m = re.fullmatch(r"(connectrt_plugin_\w+)\{(.*)\} (\S+)", line)
        if m:
            labels = frozenset(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', m.group(2)))
            out[(m.group(1), labels)] = float(m.group(3))
    return out


def _config(topic: str) -> dict[str, str]:
    return {
        "connector.class": "tests.plugins.metered.MeteredSource",
        "topic": topic,
        "records": str(RECORDS),
        "batch.size": "10",
        "value.converter": "tests.plugins.metered.CountingConverter",
        "transforms": "tag",
        "transforms.tag.type": "tests.plugins.metered.TaggingTransform",
        "transforms.tag.predicate": "even",
        "predicates": "even",
        "predicates.even.type": "tests.plugins.metered.EvenPredicate",
    }


def test_plugins_metrics_are_in_metrics_with_kafkas_tags_until_deleted(
    worker: RestWorker, broker: EmbeddedBroker, unique_name
):
    topic, name = unique_name("t"), unique_name("metered")
    create_topic(broker.bootstrap_servers, topic)
    r = worker.http.post("/connectors", json={"name": name, "config": _config(topic)})
    assert r.status_code == 201, r.text

    conn = ("connector", name)
    task = ("task", "0")
    want = {
        ("connectrt_plugin_task_configs_made", frozenset({conn})): 1.0,
        ("connectrt_plugin_poll_batches", frozenset({conn, task})): RECORDS / 10,
        ("connectrt_plugin_records_polled", frozenset({conn, task, ("unit", "records")})): RECORDS,
        ("connectrt_plugin_last_record", frozenset({conn, task})): RECORDS - 1,
        (
            "connectrt_plugin_values_converted",
            frozenset({conn, task, ("converter", "value")}),
        ): RECORDS,
        (
            "connectrt_plugin_records_tested",
            frozenset({conn, task, ("predicate", "even")}),
        ): RECORDS,
        (
            "connectrt_plugin_records_seen",
            frozenset({conn, task, ("transformation", "tag")}),
        ): RECORDS / 2,
    }

    def all_recorded() -> bool:
        samples = _samples(worker)
        return all(samples.get(key) == value for key, value in want.items())

    wait_for(all_recorded, 60, f"the plugins' metrics to reach {want}")
    # What the plugins counted is what reached the topic. The metrics count at poll and
    # conversion, before the producer's acknowledgement, so wait for the records to land.
    values: list[bytes] = []

    def all_produced() -> bool:
        read = read_topic(broker.bootstrap_servers, topic)
        values[:] = [v for records in read.values() for _, v in records if v is not None]
        return len(values) >= RECORDS

    wait_for(all_produced, 60, f"{RECORDS} records in {topic}")
    assert sorted(int(v) for v in values) == list(range(RECORDS))
    text = worker.http.get("/metrics").text
    assert "# HELP connectrt_plugin_records_polled Records returned\n" in text
    assert "# TYPE connectrt_plugin_records_polled gauge\n" in text
    # The worker's task counters are still there, beside the plugins' own.
    task_polled = scrape(worker.http).value(
        "connectrt_task_records_polled_total", connector=name, task=0
    )
    assert task_polled == RECORDS

    assert worker.http.delete(f"/connectors/{name}").status_code == 204
    wait_for(
        lambda: not any(dict(labels).get("connector") == name for _, labels in _samples(worker)),
        60,
        "the deleted connector's plugin metrics to be removed",
    )


def test_a_restarted_task_registers_its_metrics_afresh(
    worker: RestWorker, broker: EmbeddedBroker, unique_name
):
    topic, name = unique_name("t"), unique_name("metered")
    create_topic(broker.bootstrap_servers, topic)
    assert (
        worker.http.post("/connectors", json={"name": name, "config": _config(topic)}).status_code
        == 201
    )
    batches = (
        "connectrt_plugin_poll_batches",
        frozenset({("connector", name), ("task", "0")}),
    )
    wait_for(lambda: _samples(worker).get(batches) == RECORDS / 10, 60, "the first task's batches")
    # The new task instance resumes after the committed offsets: it polls nothing more, and its
    # fresh sensor starts at 0 (the old instance's metrics were removed when it stopped).
    wait_for(
        lambda: (
            worker.http.get(f"/connectors/{name}/offsets").json()["offsets"]
            == [{"partition": {"source": "metered"}, "offset": {"next": RECORDS}}]
        ),
        60,
        "the source offsets to be committed",
    )
    assert worker.http.post(f"/connectors/{name}/tasks/0/restart").status_code == 204
    wait_for(lambda: _samples(worker).get(batches) == 0.0, 60, "the restarted task's new sensor")
