"""ProtobufConverter in a running worker, against confluent-kafka's own Protobuf serializers,
through the worker's built-in schema registry (real broker, real HTTP).

* Sink side: records written by ``ProtobufSerializer`` (nested messages, repeated fields, a
  map, wrappers, a timestamp, an enum and a oneof) reach a sink connector configured with
  ``value.converter=io.confluent.connect.protobuf.ProtobufConverter``; every value is checked
  field by field against the message it was made from.
* Source side: a source connector writing nested ``Struct``s through the ProtobufConverter;
  ``ProtobufDeserializer``, with the message class built from the schema the converter
  registered, reads every record back with the values the source made.

One worker (in-process, REST on, registry on) serves the module; each test removes its
connectors when it ends.
"""

from __future__ import annotations

import datetime as dt
import random
import threading
import uuid
import warnings
from collections.abc import Iterator, Mapping
from typing import Any

import httpx
import pytest
from google.protobuf.message_factory import GetMessageClass

from connectrt.api import ConfigDef, SourceConnector, SourceRecord, SourceTask, Task
from connectrt.broker import EmbeddedBroker
from connectrt.converters.protobuf.descriptors import build_pool
from connectrt.converters.protobuf.proto_text import parse_proto
from connectrt.data import Schema, SchemaBuilder, Struct, Timestamp
from connectrt.runtime.plugins.registry import registry as plugins
from connectrt.testing.harness import create_topic, read_topic
from connectrt.testing.rest import RestWorker, rest_worker_props, running_rest_worker, wait_for
from tests.plugins import recording_sink
from tests.plugins.recording_sink import RECEIVED, RecordingSink

with warnings.catch_warnings():
    warnings.simplefilter("ignore")  # authlib's httpx deprecation notice on import
    from confluent_kafka import Producer
    from confluent_kafka.schema_registry import SchemaRegistryClient
    from confluent_kafka.schema_registry.protobuf import (
        ProtobufDeserializer,
        ProtobufSerializer,
    )
    from confluent_kafka.serialization import MessageField, SerializationContext

pytestmark = pytest.mark.integration

PROTOBUF = "io.confluent.connect.protobuf.ProtobufConverter"
RECORDS = 300
"""Records per direction: enough for every optional/oneof/repeated combination, several times."""

ORDER_PROTO = """
syntax = "proto3";
package shop.pipeline.v1;

import "google/protobuf/timestamp.proto";
import "google/protobuf/wrappers.proto";

message Order {
  int64 id = 1;
  string customer = 2;
  google.protobuf.StringValue note = 3;
  repeated Line lines = 4;
  map<string, int32> labels = 5;
  Address ship_to = 6;
  google.protobuf.Timestamp placed = 7;
  Status status = 8;
  oneof payment {
    string card = 9;
    int64 account = 10;
  }

  message Line {
    string sku = 1;
    int32 quantity = 2;
    google.protobuf.DoubleValue discount = 3;
  }
  enum Status {
    NEW = 0;
    PAID = 1;
    SHIPPED = 2;
  }
}

message Address {
  string city = 1;
}
"""


@pytest.fixture(scope="module")
def worker(broker: EmbeddedBroker) -> Iterator[RestWorker]:
    run = uuid.uuid4().hex[:8]
    props = rest_worker_props(broker.bootstrap_servers)
    props.update(
        {
            "schema.registry.enable": "true",
            "schema.registry.listener": "http://127.0.0.1:0",
            "schema.registry.topic": f"schemas-proto-{run}",
        }
    )
    with running_rest_worker(broker.bootstrap_servers, props) as running:
        yield running


@pytest.fixture
def registry_url(worker: RestWorker) -> Iterator[str]:
    """The worker's registry; the test's connectors are removed after it."""
    url = worker.process.registry.url
    try:
        yield url
    finally:
        worker.delete_connectors()


def _ctx(topic: str) -> SerializationContext:
    return SerializationContext(topic, MessageField.VALUE)


def _plain(value: Any) -> Any:
    if isinstance(value, Struct):
        return {f.name: _plain(value.get(f.name)) for f in value.schema.fields}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


# ------------------------------------------------------------------ ProtobufSerializer -> sink


def _order(cls: Any, rng: random.Random, i: int) -> Any:
    msg = cls(id=rng.randint(-(2**63), 2**63 - 1), customer=f"customer {i} é")
    if rng.random() < 0.5:
        msg.note.value = f"note {i}"
    for j in range(rng.randint(0, 3)):
        line = msg.lines.add(sku=f"s{i}-{j}", quantity=rng.randint(0, 100))
        if rng.random() < 0.5:
            line.discount.value = rng.choice([0.25, 0.5, 0.125])
    for j in range(rng.randint(0, 3)):
        msg.labels[f"k{j}"] = rng.randint(-5, 5)
    if rng.random() < 0.7:
        msg.ship_to.city = f"city {i}"
    if rng.random() < 0.8:
        msg.placed.FromMilliseconds(1_700_000_000_000 + i * 1000)
    msg.status = rng.randint(0, 2)
    choice = rng.random()
    if choice < 0.33:
        msg.card = f"4111-{i}"
    elif choice < 0.66:
        msg.account = i
    return msg


def _as_connect(msg: Any) -> dict[str, Any]:
    """What Confluent's ProtobufConverter (wrappers as optional primitives) makes of ``msg``,
    as plain values: the oneof as an optional struct ``payment_0``, the enum as its name."""
    which = msg.WhichOneof("payment")
    status = msg.DESCRIPTOR.fields_by_name["status"].enum_type.values_by_number[msg.status]
    return {
        "payment_0": None
        if which is None
        else {
            "card": msg.card if which == "card" else None,
            "account": msg.account if which == "account" else None,
        },
        "id": msg.id,
        "customer": msg.customer,
        "note": msg.note.value if msg.HasField("note") else None,
        "lines": [
            {
                "sku": line.sku,
                "quantity": line.quantity,
                "discount": line.discount.value if line.HasField("discount") else None,
            }
            for line in msg.lines
        ],
        "labels": dict(msg.labels),
        "ship_to": {"city": msg.ship_to.city} if msg.HasField("ship_to") else None,
        "placed": msg.placed.ToDatetime(tzinfo=dt.UTC) if msg.HasField("placed") else None,
        "status": status.name,
    }


def test_sink_reads_every_record_of_the_confluent_protobuf_serializer(
    broker: EmbeddedBroker, worker: RestWorker, registry_url: str, unique_name: Any
) -> None:
    topic = unique_name("proto-in")
    create_topic(broker.bootstrap_servers, topic)
    _pool, file = build_pool(parse_proto(ORDER_PROTO, "shop/pipeline/v1/order.proto"), {})
    cls = GetMessageClass(file.message_types_by_name["Order"])
    client = SchemaRegistryClient({"url": registry_url})
    serializer = ProtobufSerializer(cls, client, {"use.deprecated.format": False})
    rng = random.Random(36)
    orders = [_order(cls, rng, i) for i in range(RECORDS)]
    producer = Producer({"bootstrap.servers": broker.bootstrap_servers, "acks": "all"})
    for msg in orders:
        producer.produce(topic, serializer(msg, _ctx(topic)))
    assert producer.flush(60) == 0, "ProtobufSerializer's records not acknowledged"
    client.__exit__()
    subjects = httpx.get(f"{registry_url}/subjects").json()
    assert f"{topic}-value" in subjects
    schema = httpx.get(f"{registry_url}/subjects/{topic}-value/versions/latest").json()
    assert schema["schemaType"] == "PROTOBUF"

    store = unique_name("store")
    plugins.register_class(RecordingSink)
    created = worker.http.post(
        "/connectors",
        json={
            "name": unique_name("proto-sink"),
            "config": {
                "connector.class": "tests.plugins.recording_sink.RecordingSink",
                "topics": topic,
                "store.id": store,
                "value.converter": PROTOBUF,
                "value.converter.schema.registry.url": registry_url,
                "value.converter.wrapper.for.nullables": "true",
            },
        },
    )
    assert created.status_code == 201, created.text

    def received() -> list[object]:
        with recording_sink.LOCK:
            return [v for *_, v in RECEIVED[store]]

    wait_for(
        lambda: len(received()) >= RECORDS,
        120,
        f"{RECORDS} Protobuf records in the sink (its group join included)",
    )
    values = received()
    assert len(values) == RECORDS  # no duplicates either
    for i, (value, msg) in enumerate(zip(values, orders, strict=True)):
        assert isinstance(value, Struct), f"record {i}: {type(value).__name__}"
        assert value.schema.name == "Order"
        assert _plain(value) == _as_connect(msg), f"record {i} differs"


# ------------------------------------------------------------ source -> ProtobufDeserializer


_LINE = (
    SchemaBuilder.struct()
    .name("Line")
    .field("sku", Schema.STRING_SCHEMA)
    .field("qty", Schema.OPTIONAL_INT32_SCHEMA)
    .field("discount", Schema.OPTIONAL_FLOAT64_SCHEMA)
    .build()
)
_INVOICE = (
    SchemaBuilder.struct()
    .name("com.example.Invoice")
    .field("id", Schema.INT64_SCHEMA)
    .field("note", Schema.OPTIONAL_STRING_SCHEMA)
    .field("active", Schema.BOOLEAN_SCHEMA)
    .field("tags", SchemaBuilder.array(Schema.STRING_SCHEMA).build())
    .field("attrs", SchemaBuilder.map(Schema.STRING_SCHEMA, Schema.INT32_SCHEMA).build())
    .field("lines", SchemaBuilder.array(_LINE).build())
    .field(
        "main",
        SchemaBuilder.struct().name("Main").field("sku", Schema.STRING_SCHEMA).optional().build(),
    )
    .field("seen", Timestamp.builder().optional().build())
    .build()
)


def _invoice(rng: random.Random, i: int) -> Struct:
    main = _INVOICE.field("main")
    assert main is not None
    s = Struct(_INVOICE)
    s.put("id", rng.randint(-(2**63), 2**63 - 1))
    s.put("note", rng.choice([None, f"n{i}"]))
    s.put("active", rng.random() < 0.5)
    s.put("tags", [f"t{j}" for j in range(rng.randint(0, 3))])
    s.put("attrs", {f"k{j}": rng.randint(-5, 5) for j in range(rng.randint(0, 3))})
    s.put(
        "lines",
        [
            Struct(_LINE)
            .put("sku", f"s{j}")
            .put("qty", rng.choice([None, j]))
            .put("discount", rng.choice([None, 0.25]))
            for j in range(rng.randint(0, 3))
        ],
    )
    s.put("main", rng.choice([None, Struct(main.schema).put("sku", f"m{i}")]))
    s.put(
        "seen",
        rng.choice([None, dt.datetime(2024, 1, 1, tzinfo=dt.UTC) + dt.timedelta(milliseconds=i)]),
    )
    return s


def _invoices(seed: int, count: int) -> list[Struct]:
    rng = random.Random(seed)
    return [_invoice(rng, i) for i in range(count)]


class InvoiceSource(SourceConnector):
    """One task returning ``count`` invoices (``_invoices(seed, count)``) to ``topic`` in one
    poll, then idling until stopped."""

    def start(self, config: Mapping[str, str]) -> None:
        self._config = dict(config)

    def stop(self) -> None:
        pass

    def task_class(self) -> type[Task]:
        return InvoiceSourceTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return [dict(self._config)]

    def config_def(self) -> ConfigDef:
        return ConfigDef()


class InvoiceSourceTask(SourceTask):
    """Polled on the task's thread; ``stop()`` (another thread) ends the idle wait."""

    def start(self, config: Mapping[str, str]) -> None:
        self._topic = config["topic"]
        self._pending = _invoices(int(config["seed"]), int(config["count"]))
        self._stopped = threading.Event()

    def poll(self) -> list[SourceRecord] | None:
        if not self._pending:
            self._stopped.wait(0.2)
            return None
        batch, self._pending = self._pending, []
        return [
            SourceRecord({"p": 0}, {"n": i}, self._topic, None, None, None, _INVOICE, s)
            for i, s in enumerate(batch)
        ]

    def stop(self) -> None:
        self._stopped.set()


def _from_message(msg: Any) -> dict[str, Any]:
    """The plain values of an ``Invoice`` message as the converter wrote it (nullable fields as
    wrappers, the Timestamp as google.protobuf.Timestamp)."""

    def opt(m: Any, name: str) -> Any:
        return getattr(m, name).value if m.HasField(name) else None

    return {
        "id": msg.id,
        "note": opt(msg, "note"),
        "active": msg.active,
        "tags": list(msg.tags),
        "attrs": dict(msg.attrs),
        "lines": [
            {"sku": line.sku, "qty": opt(line, "qty"), "discount": opt(line, "discount")}
            for line in msg.lines
        ],
        "main": {"sku": msg.main.sku} if msg.HasField("main") else None,
        "seen": msg.seen.ToDatetime(tzinfo=dt.UTC) if msg.HasField("seen") else None,
    }


def test_confluent_protobuf_deserializer_reads_every_record_a_source_writes(
    broker: EmbeddedBroker, worker: RestWorker, registry_url: str, unique_name: Any
) -> None:
    topic = unique_name("proto-out")
    create_topic(broker.bootstrap_servers, topic)
    plugins.register_class(InvoiceSource)
    created = worker.http.post(
        "/connectors",
        json={
            "name": unique_name("proto-src"),
            "config": {
                "connector.class": f"{__name__}.InvoiceSource",
                "topic": topic,
                "seed": "7",
                "count": str(RECORDS),
                "value.converter": PROTOBUF,
                "value.converter.schema.registry.url": registry_url,
                "value.converter.wrapper.for.nullables": "true",
            },
        },
    )
    assert created.status_code == 201, created.text
    rows: list[bytes | None] = []

    def all_written() -> bool:
        rows[:] = [v for _k, v in read_topic(broker.bootstrap_servers, topic).get(0, [])]
        return len(rows) >= RECORDS

    wait_for(all_written, 120, f"{RECORDS} Protobuf records from the source in {topic}")
    assert len(rows) == RECORDS
    first = rows[0]
    assert first is not None and first[0] == 0  # Confluent wire format: magic byte 0
    info = httpx.get(f"{registry_url}/schemas/ids/{int.from_bytes(first[1:5], 'big')}").json()
    assert info["schemaType"] == "PROTOBUF" and "message Invoice" in info["schema"]
    _pool, file = build_pool(parse_proto(info["schema"], "invoice.proto"), {})
    cls = GetMessageClass(file.message_types_by_name["Invoice"])
    deserializer = ProtobufDeserializer(cls, {"use.deprecated.format": False})
    expected = _invoices(7, RECORDS)
    for i, (data, made) in enumerate(zip(rows, expected, strict=True)):
        message = deserializer(data, _ctx(topic))
        assert _from_message(message) == _plain(made), f"record {i} differs"
