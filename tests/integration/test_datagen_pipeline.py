"""Datagen in a running worker: Avro through the worker's built-in schema registry, read back
with confluent-kafka's own deserializer; a restart continues each task's sequence; the validate
endpoint rejects a missing quickstart."""

from __future__ import annotations

import importlib
import json
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import Any, cast

import orjson
import pytest

from connectors.datagen import DatagenConnector
from connectrt.broker import EmbeddedBroker
from connectrt.testing.conformance import SourceConnectorConformance
from connectrt.testing.harness import WorkerHarness, create_topic, read_topic
from connectrt.testing.rest import start_rest_worker, wait_for

with warnings.catch_warnings():
    # authlib (imported by the registry client) warns about its httpx integration on import.
    try:
        importlib.import_module("authlib.deprecate")
    except ImportError:
        pass
    warnings.simplefilter("ignore")
    from confluent_kafka.schema_registry import SchemaRegistryClient
    from confluent_kafka.schema_registry.avro import AvroDeserializer
    from confluent_kafka.serialization import MessageField, SerializationContext

pytestmark = pytest.mark.integration

DATAGEN = "io.confluent.kafka.connect.datagen.DatagenConnector"


def _records(broker: EmbeddedBroker, topic: str) -> list[tuple[bytes | None, bytes | None]]:
    return [r for part in read_topic(broker.bootstrap_servers, topic).values() for r in part]


def test_datagen_orders_as_avro_through_the_built_in_registry(broker: EmbeddedBroker, unique_name):
    topic = unique_name("orders")
    create_topic(broker.bootstrap_servers, topic, partitions=2)
    worker = start_rest_worker(
        broker.bootstrap_servers,
        **{
            "schema.registry.enable": "true",
            "schema.registry.listener": "http://127.0.0.1:0",
            "schema.registry.topic": unique_name("schemas"),
        },
    )
    try:
        registry_url = worker.process.registry.url
        config = {
            "connector.class": DATAGEN,
            "kafka.topic": topic,
            "quickstart": "orders",
            "iterations": "120",
            "max.interval": "0",
            "random.seed": "42",
            "tasks.max": "2",
            "key.converter": "org.apache.kafka.connect.storage.StringConverter",
            "value.converter": "io.confluent.connect.avro.AvroConverter",
            "value.converter.schema.registry.url": registry_url,
        }
        bad = worker.http.put(
            f"/connector-plugins/{DATAGEN}/config/validate",
            json={**config, "name": "orders-gen", "quickstart": "nonesuch"},
        )
        assert bad.status_code == 200
        body = bad.json()
        errors = {c["value"]["name"]: c["value"]["errors"] for c in body["configs"]}
        assert {k for k, v in errors.items() if v} == {"quickstart"}, errors
        (quickstart,) = [c["value"] for c in body["configs"] if c["value"]["name"] == "quickstart"]
        (message,) = quickstart["errors"]
        assert "Unknown quickstart 'nonesuch'" in message and "stock_trades" in message
        created = worker.http.post("/connectors", json={"name": "orders-gen", "config": config})
        assert created.status_code == 201, created.text
        wait_for(lambda: len(_records(broker, topic)) >= 120, 60, "120 datagen records")
        records = _records(broker, topic)
        assert len(records) == 120

        client = SchemaRegistryClient({"url": registry_url})
        try:
            deserialize = AvroDeserializer(client)
            ctx = SerializationContext(topic, MessageField.VALUE)
            orders = [(key, deserialize(value, ctx)) for key, value in records]
            latest = client.get_latest_version(f"{topic}-value").schema.schema_str
        finally:
            client.__exit__()
        assert sorted(o["orderid"] for _, o in orders) == list(range(1, 121))
        for key, order in orders:
            assert key == str(order["orderid"]).encode()
            assert order["itemid"].startswith("Item_")
            assert 10000 <= order["address"]["zipcode"] < 100000
            assert order["ordertime"].year == 2024  # timestamp-millis -> datetime
        registered = json.loads(latest)
        assert registered["name"] == "orders" and registered["namespace"] == "ksql"
        assert [f["name"] for f in registered["fields"]] == [
            "ordertime",
            "orderid",
            "itemid",
            "orderunits",
            "price",
            "address",
        ]
    finally:
        worker.stop()


def test_restart_continues_each_tasks_sequence(broker: EmbeddedBroker, unique_name):
    """Run 1 generates 100 records (50 per task) and stops gracefully; run 2, with
    iterations raised to 300, continues each task from its committed offset."""
    topic = unique_name("restart")
    create_topic(broker.bootstrap_servers, topic)
    config = {
        "connector.class": DATAGEN,
        "kafka.topic": topic,
        "quickstart": "orders",
        "iterations": "100",
        "max.interval": "0",
        "random.seed": "5",
        "tasks.max": "2",
        "value.converter": "org.apache.kafka.connect.json.JsonConverter",
        "value.converter.schemas.enable": "false",
    }

    def orders() -> list[dict[str, Any]]:
        return [orjson.loads(v) for _, v in _records(broker, topic) if v]

    harness = WorkerHarness(broker.bootstrap_servers).start()
    try:
        harness.start_connector("gen", config)
        harness.wait_until(lambda: len(orders()) >= 100, 60, "the first 100 records")
        first = orders()
        harness.restart()  # graceful: commits the offsets of everything acknowledged
        harness.start_connector("gen", {**config, "iterations": "300"})
        harness.wait_until(lambda: len(orders()) >= 300, 60, "200 more after the restart")
    finally:
        harness.stop()
    everything = orders()
    assert sorted(o["orderid"] for o in first) == list(range(1, 101))
    ids = [o["orderid"] for o in everything]
    assert len(ids) == 300 and sorted(ids) == list(range(1, 301)), "no repeats, no gaps"
    # iteration hints continue across the restart too (ordertime: +10 s per order)
    by_id = {o["orderid"]: o for o in everything}
    assert by_id[101]["ordertime"] - by_id[100]["ordertime"] == 10_000


class TestDatagenConformance(SourceConnectorConformance):
    """The shared suite; "input" is made available by raising ``iterations``."""

    connector_class = DatagenConnector

    def connector_config(self, tmp_path: Path, topic: str) -> dict[str, str]:
        return {
            "kafka.topic": topic,
            "quickstart": "pageviews",
            "iterations": "0",
            "max.interval": "0",
            "random.seed": "3",
        }

    def add_input(self, config: Mapping[str, str], start: int, count: int) -> None:
        cast(dict[str, str], config)["iterations"] = str(start + count)
