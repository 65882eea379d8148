"""AvroConverter against a tiny real HTTP schema registry (FastAPI + uvicorn in a thread)."""

from __future__ import annotations

import base64
import datetime as dt
import decimal
import json
import socket
import struct as _struct
import threading
import time
import warnings
from collections.abc import Iterator
from typing import Any

import fastavro
import pytest
import uvicorn
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

from connectrt.converters.avro import AvroConverter
from connectrt.data import Date, Decimal, Schema, SchemaBuilder, Struct, Time, Timestamp
from connectrt.data.avro_schema import avro_to_connect, connect_to_avro
from connectrt.errors import ConfigError, DataError

CT = "application/vnd.schemaregistry.v1+json"


class Registry:
    """State of the test registry: subjects -> [schema ids], id -> schema text."""

    def __init__(self) -> None:
        self.schemas: dict[int, str] = {}
        self.subjects: dict[str, list[int]] = {}
        self.requests: list[tuple[str, str]] = []
        self.auth_headers: list[str | None] = []
        self.content_types: list[str | None] = []
        self.required_auth: str | None = None

    def reset(self) -> None:
        self.__init__()  # type: ignore[misc]

    def app(self) -> FastAPI:
        app = FastAPI()
        reg = self

        def err(status: int, code: int, message: str) -> JSONResponse:
            return JSONResponse({"error_code": code, "message": message}, status_code=status)

        @app.middleware("http")
        async def record(request: Request, call_next: Any) -> Any:
            reg.requests.append((request.method, request.url.path))
            reg.auth_headers.append(request.headers.get("authorization"))
            reg.content_types.append(request.headers.get("content-type"))
            if reg.required_auth and request.headers.get("authorization") != reg.required_auth:
                return err(401, 40101, "Unauthorized")
            return await call_next(request)

        def schema_id(text: str) -> int:
            canonical = json.dumps(json.loads(text), sort_keys=True)
            for sid, existing in reg.schemas.items():
                if json.dumps(json.loads(existing), sort_keys=True) == canonical:
                    return sid
            sid = len(reg.schemas) + 1
            reg.schemas[sid] = text
            return sid

        @app.get("/schemas/ids/{sid}")
        def get_schema(sid: int) -> Any:
            if sid not in reg.schemas:
                return err(404, 40403, "Schema not found")
            return {"schema": reg.schemas[sid]}

        @app.post("/subjects/{subject}/versions")
        async def register(subject: str, request: Request) -> Any:
            body = json.loads(await request.body())
            sid = schema_id(body["schema"])
            versions = reg.subjects.setdefault(subject, [])
            if sid not in versions:
                versions.append(sid)
            return {"id": sid}

        @app.post("/subjects/{subject}")
        async def lookup(subject: str, request: Request) -> Any:
            body = json.loads(await request.body())
            if subject not in reg.subjects:
                return err(404, 40401, "Subject not found")
            sid = schema_id(body["schema"])
            if sid not in reg.subjects[subject]:
                return err(404, 40403, "Schema not found")
            return {
                "subject": subject,
                "id": sid,
                "version": reg.subjects[subject].index(sid) + 1,
                "schema": reg.schemas[sid],
            }

        @app.get("/subjects/{subject}/versions/latest")
        def latest(subject: str) -> Any:
            if subject not in reg.subjects:
                return err(404, 40401, "Subject not found")
            sid = reg.subjects[subject][-1]
            return {
                "subject": subject,
                "id": sid,
                "version": len(reg.subjects[subject]),
                "schema": reg.schemas[sid],
            }

        return app


@pytest.fixture(scope="module")
def server() -> Iterator[tuple[Registry, str]]:
    registry = Registry()
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    config = uvicorn.Config(
        registry.app(), host="127.0.0.1", port=port, log_level="warning", lifespan="off"
    )
    srv = uvicorn.Server(config)
    thread = threading.Thread(target=srv.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not srv.started:
        assert time.monotonic() < deadline, "test registry did not start"
        time.sleep(0.02)
    yield registry, f"http://127.0.0.1:{port}"
    srv.should_exit = True
    thread.join(10)


@pytest.fixture
def registry(server: tuple[Registry, str]) -> tuple[Registry, str]:
    server[0].reset()
    return server


_OPEN: list[AvroConverter] = []


@pytest.fixture(autouse=True)
def _close_converters() -> Iterator[None]:
    yield
    while _OPEN:
        _OPEN.pop().close()


def make(url: str, is_key: bool = False, **extra: Any) -> AvroConverter:
    conv = AvroConverter()
    _OPEN.append(conv)
    conv.configure({"schema.registry.url": url, **extra}, is_key)
    return conv


INNER = SchemaBuilder.struct().name("com.example.Address").field("city", Schema.STRING_SCHEMA)
ALL = (
    SchemaBuilder.struct()
    .name("com.example.All")
    .field("i8", Schema.INT8_SCHEMA)
    .field("i16", Schema.INT16_SCHEMA)
    .field("i32", Schema.INT32_SCHEMA)
    .field("i64", Schema.INT64_SCHEMA)
    .field("f32", Schema.FLOAT32_SCHEMA)
    .field("f64", Schema.FLOAT64_SCHEMA)
    .field("b", Schema.BOOLEAN_SCHEMA)
    .field("s", Schema.STRING_SCHEMA)
    .field("by", Schema.BYTES_SCHEMA)
    .field("os", Schema.OPTIONAL_STRING_SCHEMA)
    .field("dflt", SchemaBuilder.int32().default_value(9).build())
    .field("dec", Decimal.schema(2))
    .field("date", Date.SCHEMA)
    .field("time", Time.SCHEMA)
    .field("ts", Timestamp.SCHEMA)
    .field("arr", SchemaBuilder.array(Schema.OPTIONAL_INT64_SCHEMA).build())
    .field("smap", SchemaBuilder.map(Schema.STRING_SCHEMA, Schema.FLOAT64_SCHEMA).build())
    .field("imap", SchemaBuilder.map(Schema.INT32_SCHEMA, Schema.STRING_SCHEMA).build())
    .field("addr", INNER.build())
    .field(
        "oaddr",
        SchemaBuilder.struct()
        .name("com.example.Other")
        .optional()
        .field("zip", Schema.INT32_SCHEMA)
        .build(),
    )
    .build()
)


def all_value(i: int = 1) -> Struct:
    addr_schema = ALL.field("addr").schema  # type: ignore[union-attr]
    return (
        Struct(ALL)
        .put("i8", -8)
        .put("i16", 1600)
        .put("i32", -32 * i)
        .put("i64", 2**40 + i)
        .put("f32", 1.5)
        .put("f64", -2.25e100)
        .put("b", True)
        .put("s", f"héllo {i}")
        .put("by", b"\x00\x01\xff")
        .put("dec", decimal.Decimal("-12345.67"))
        .put("date", dt.date(2024, 2, 29))
        .put("time", dt.time(23, 59, 58, 123000))
        .put("ts", dt.datetime(2024, 5, 6, 7, 8, 9, 10000, tzinfo=dt.UTC))
        .put("arr", [1, None, 3])
        .put("smap", {"a": 1.0})
        .put("imap", {1: "one", -2: "minus two"})
        .put("addr", Struct(addr_schema).put("city", "Paris"))
    )


def expected(value: Struct) -> Struct:
    out = Struct(ALL)
    for f in ALL.fields:
        out.put(f, value.get(f))  # defaults applied on write
    return out


def test_round_trip_all_types(registry: tuple[Registry, str]) -> None:
    _, url = registry
    conv = make(url)
    value = all_value()
    data = conv.from_connect_data("t", ALL, value)
    assert data is not None
    schema, back = conv.to_connect_data("t", data)
    assert schema == ALL
    assert back == expected(value)
    assert back.get("dflt") == 9
    # a second converter (fresh caches) reads it too
    schema2, back2 = make(url).to_connect_data("t", data)
    assert schema2 == ALL and back2 == back


def test_primitive_and_logical_top_level(registry: tuple[Registry, str]) -> None:
    _, url = registry
    conv = make(url)
    cases: list[tuple[Schema, Any]] = [
        (Schema.STRING_SCHEMA, "x"),
        (Schema.INT64_SCHEMA, -(2**63)),
        (Schema.OPTIONAL_INT32_SCHEMA, 5),
        (Decimal.schema(3), decimal.Decimal("1.5")),
        (Timestamp.SCHEMA, dt.datetime(1969, 12, 31, 23, 59, 59, tzinfo=dt.UTC)),
    ]
    for schema, value in cases:
        data = conv.from_connect_data("p", schema, value)
        got_schema, got = conv.to_connect_data("p", data)
        assert got_schema == schema
        assert got == value


def test_wire_format(registry: tuple[Registry, str]) -> None:
    reg, url = registry
    conv = make(url)
    for _ in range(300):  # push the id beyond one byte
        reg.schemas[len(reg.schemas) + 1] = '"string"'
    data = conv.from_connect_data("wire", Schema.INT32_SCHEMA, 150)
    assert data is not None
    sid = reg.subjects["wire-value"][-1]
    assert sid > 255
    assert data[0] == 0
    assert data[1:5] == sid.to_bytes(4, "big")
    assert data[5:] == b"\xac\x02"  # zig-zag varint of 150
    import io

    assert fastavro.schemaless_reader(io.BytesIO(data[5:]), "int", None) == 150


ALL_COPY = avro_to_connect(connect_to_avro(ALL))


def test_caching_no_http_per_record(registry: tuple[Registry, str]) -> None:
    reg, url = registry
    writer = make(url)
    reader = make(url)
    first = writer.from_connect_data("c", ALL, all_value(0))
    reader.to_connect_data("c", first)
    assert len(reg.requests) == 2  # one register, one schema fetch
    assert ALL_COPY == ALL and ALL_COPY is not ALL
    before = len(reg.requests)
    for i in range(1, 201):
        # Equal but distinct schema objects hit the cache too.
        schema = ALL if i % 2 else ALL_COPY
        data = writer.from_connect_data("c", schema, all_value(i))
        assert reader.to_connect_data("c", data).value == expected(all_value(i))
    rebuilt = SchemaBuilder.string().optional().build()
    writer.from_connect_data("c2", rebuilt, "a")
    after_new_subject = len(reg.requests)
    assert after_new_subject == before + 1
    writer.from_connect_data("c2", SchemaBuilder.string().optional().build(), "b")
    assert len(reg.requests) == after_new_subject
    assert writer.client.requests == 2 and reader.client.requests == 1


def test_tombstones(registry: tuple[Registry, str]) -> None:
    reg, url = registry
    conv = make(url)
    assert conv.from_connect_data("t", ALL, None) is None
    assert conv.from_connect_data("t", None, None) is None
    assert conv.to_connect_data("t", None) == (None, None)
    assert reg.requests == []


def test_unknown_magic_and_unknown_id(registry: tuple[Registry, str]) -> None:
    _, url = registry
    conv = make(url)
    with pytest.raises(DataError, match="magic byte 1"):
        conv.to_connect_data("t", b"\x01\x00\x00\x00\x01\x02")
    with pytest.raises(DataError, match="too short"):
        conv.to_connect_data("t", b"\x00\x00")
    with pytest.raises(DataError, match="4242"):
        conv.to_connect_data("t", b"\x00" + (4242).to_bytes(4, "big") + b"\x02")


def test_bad_values_raise_data_error(registry: tuple[Registry, str]) -> None:
    _, url = registry
    conv = make(url)
    with pytest.raises(DataError):
        conv.from_connect_data("t", Schema.INT8_SCHEMA, 300)
    with pytest.raises(DataError):
        conv.from_connect_data("t", Schema.STRING_SCHEMA, 3)
    with pytest.raises(DataError, match="i8"):
        conv.from_connect_data("t", ALL, Struct(ALL))
    with pytest.raises(DataError, match="schema"):
        conv.from_connect_data("t", None, "schemaless")


def test_write_fast_path_matches_checked_encoder_and_names_the_field(
    registry: tuple[Registry, str],
) -> None:
    """The write path passes a Struct's checked primitive fields to fastavro as they are; its
    datum equals the field-by-field checked encoder's, and a value fastavro cannot write is
    still reported with the field's name (top level and nested)."""
    from connectrt.converters.avro.schema_codecs import Writer

    writer = Writer(ALL)
    for i in range(-3, 4):
        value = all_value(i)
        if i % 2:
            value.put("os", f"o{i}").put("oaddr", Struct(ALL.field("oaddr").schema).put("zip", i))  # type: ignore[union-attr]
        assert writer.encode(value) == writer.check(value)
    _, url = registry
    conv = make(url)
    missing_s = all_value()
    missing_s._values[ALL.field("s").index] = None  # type: ignore[union-attr]
    with pytest.raises(DataError, match=r"Field s: .*required"):
        conv.from_connect_data("t", ALL, missing_s)
    empty_addr = all_value()  # put() would refuse the incomplete nested Struct
    addr_schema = ALL.field("addr").schema  # type: ignore[union-attr]
    empty_addr._values[ALL.field("addr").index] = Struct(addr_schema)  # type: ignore[union-attr]
    with pytest.raises(DataError, match=r"Field addr: Field city: .*required"):
        conv.from_connect_data("t", ALL, empty_addr)
    assert conv.from_connect_data("t", ALL, all_value()) is not None  # still usable


def test_subject_name_strategies(registry: tuple[Registry, str]) -> None:
    reg, url = registry
    make(url).from_connect_data("orders", ALL, all_value())
    make(url, is_key=True).from_connect_data("orders", Schema.STRING_SCHEMA, "k")
    make(url, **{"value.subject.name.strategy": "RecordNameStrategy"}).from_connect_data(
        "orders", ALL, all_value()
    )
    make(
        url,
        **{
            "value.subject.name.strategy": (
                "io.confluent.kafka.serializers.subject.TopicRecordNameStrategy"
            )
        },
    ).from_connect_data("orders", ALL, all_value())
    assert set(reg.subjects) == {
        "orders-value",
        "orders-key",
        "com.example.All",
        "orders-com.example.All",
    }
    with pytest.raises(ConfigError):
        make(url, **{"key.subject.name.strategy": "Nope"}, is_key=True)


def test_no_auto_register(registry: tuple[Registry, str]) -> None:
    _, url = registry
    strict = make(url, **{"auto.register.schemas": "false"})
    with pytest.raises(DataError, match="not registered"):
        strict.from_connect_data("n", ALL, all_value())
    make(url).from_connect_data("n", ALL, all_value())  # registers
    data = strict.from_connect_data("n", ALL, all_value())
    assert data is not None
    assert strict.to_connect_data("n", data).value == expected(all_value())


def test_use_latest_version(registry: tuple[Registry, str]) -> None:
    reg, url = registry
    make(url).from_connect_data("lv", ALL, all_value())
    latest_id = reg.subjects["lv-value"][-1]
    conv = make(url, **{"auto.register.schemas": False, "use.latest.version": True})
    before = len(reg.requests)
    for i in range(5):
        data = conv.from_connect_data("lv", ALL, all_value(i))
        assert data is not None
        assert _struct.unpack(">bI", data[:5]) == (0, latest_id)
    assert len(reg.requests) == before + 1  # one GET .../versions/latest
    assert ("GET", "/subjects/lv-value/versions/latest") in reg.requests
    assert conv.to_connect_data("lv", data).value == expected(all_value(4))


def test_basic_auth(registry: tuple[Registry, str]) -> None:
    reg, url = registry
    reg.required_auth = "Basic " + base64.b64encode(b"alice:s3cr:et").decode()
    with pytest.raises(DataError, match="401"):
        make(url).from_connect_data("a", Schema.STRING_SCHEMA, "x")
    conv = make(
        url,
        **{"basic.auth.credentials.source": "USER_INFO", "basic.auth.user.info": "alice:s3cr:et"},
    )
    data = conv.from_connect_data("a", Schema.STRING_SCHEMA, "x")
    assert conv.to_connect_data("a", data).value == "x"
    assert reg.auth_headers[-1] == reg.required_auth
    assert CT in [c for c in reg.content_types if c]


def test_registry_unreachable() -> None:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    conv = make(f"http://127.0.0.1:{port}")
    with pytest.raises(DataError, match="unreachable"):
        conv.from_connect_data("t", Schema.STRING_SCHEMA, "x")


def test_config_errors() -> None:
    with pytest.raises(ConfigError):
        make("")
    with pytest.raises(ConfigError):
        make("http://x", **{"auto.register.schemas": "maybe"})
    with pytest.raises(ConfigError):
        make("http://x", **{"basic.auth.credentials.source": "USER_INFO"})


def test_plugin_registered() -> None:
    from connectrt.runtime.plugins.catalog import BUNDLED_PLUGINS

    assert any(
        python == "connectrt.converters.avro.AvroConverter"
        for python, _java, _type in BUNDLED_PLUGINS
    )


def test_confluent_deserializer_reads_our_bytes(registry: tuple[Registry, str]) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # authlib's httpx deprecation notice on import
        sr = pytest.importorskip("confluent_kafka.schema_registry")
        avro_mod = pytest.importorskip("confluent_kafka.schema_registry.avro")
    _, url = registry
    conv = make(url)
    with sr.SchemaRegistryClient({"url": url}) as client:
        _confluent_cross_check(avro_mod, client, conv)


def _confluent_cross_check(avro_mod: Any, client: Any, conv: AvroConverter) -> None:
    from confluent_kafka.serialization import MessageField, SerializationContext

    value = all_value(3)
    data = conv.from_connect_data("xc", ALL, value)
    deser = avro_mod.AvroDeserializer(client)
    got = deser(data, SerializationContext("xc", MessageField.VALUE))
    assert got["i8"] == -8 and got["s"] == "héllo 3"
    assert got["dec"] == decimal.Decimal("-12345.67")
    assert got["date"] == dt.date(2024, 2, 29)
    assert got["ts"] == dt.datetime(2024, 5, 6, 7, 8, 9, 10000, tzinfo=dt.UTC)
    assert got["imap"] == [{"key": 1, "value": "one"}, {"key": -2, "value": "minus two"}]
    assert got["addr"] == {"city": "Paris"} and got["oaddr"] is None
    # and the other way: bytes from confluent's AvroSerializer read by AvroConverter
    ser = avro_mod.AvroSerializer(
        client,
        json.dumps(
            {
                "type": "record",
                "name": "Ping",
                "namespace": "x",
                "fields": [
                    {"name": "n", "type": "long"},
                    {"name": "at", "type": {"type": "long", "logicalType": "timestamp-millis"}},
                ],
            }
        ),
    )
    at = dt.datetime(2020, 1, 1, tzinfo=dt.UTC)
    raw = ser({"n": 7, "at": at}, SerializationContext("ping", MessageField.VALUE))
    schema, back = conv.to_connect_data("ping", raw)
    assert schema is not None and schema.name == "x.Ping"
    assert back.get("n") == 7 and back.get("at") == at
