"""AvroConverter: Confluent's Avro wire format through a Confluent-compatible schema registry.

Each message is ``0x00`` + the 4-byte big-endian schema id + the Avro binary encoding of the
value (``fastavro`` underneath). Connect schemas map to Avro as in
:mod:`connectrt.data.avro_schema` (Confluent ``AvroData``-compatible).

Caching (no registry call per record): per Connect schema, the Avro schema, its parsed form and
a compiled datum encoder; per (subject, Connect schema) the schema id; per schema id the parsed
writer schema, its Connect schema and a compiled datum decoder. Caches are bounded by
``schemas.cache.size`` (LRU).

Logical types are converted by this module with :mod:`connectrt.data.logical` (byte-exact with
Kafka); fastavro is handed schemas without ``logicalType`` attributes (same binary encoding).

Thread-safety: configure once, then use from a single task thread (caches are not locked).
"""

from __future__ import annotations

import decimal as _decimal
import io
import json
import struct as _struct
from collections import OrderedDict
from collections.abc import Callable, Mapping
from typing import Any, Final
from urllib.parse import quote

import fastavro
import httpx

from connectrt.api.converter import ConfigKeys, Converter, RawHeaders, SchemaAndValue
from connectrt.data import logical
from connectrt.data.avro_schema import (
    avro_to_connect,
    connect_to_avro,
    strip_logical_types,
)
from connectrt.data.schema import Schema, Type
from connectrt.data.struct import Struct
from connectrt.data.values import INT_RANGES
from connectrt.errors import ConfigError, DataError

__all__ = ["AvroConverter", "SchemaRegistryClient"]

SCHEMA_REGISTRY_URL_CONFIG: Final = "schema.registry.url"
AUTO_REGISTER_CONFIG: Final = "auto.register.schemas"
USE_LATEST_CONFIG: Final = "use.latest.version"
KEY_STRATEGY_CONFIG: Final = "key.subject.name.strategy"
VALUE_STRATEGY_CONFIG: Final = "value.subject.name.strategy"
AUTH_SOURCE_CONFIG: Final = "basic.auth.credentials.source"
AUTH_USER_INFO_CONFIG: Final = "basic.auth.user.info"
CACHE_SIZE_CONFIG: Final = "schemas.cache.size"
TIMEOUT_CONFIG: Final = "schema.registry.timeout.ms"

CONTENT_TYPE: Final = "application/vnd.schemaregistry.v1+json"
MAGIC_BYTE: Final = 0
_HEADER: Final = _struct.Struct(">bI")
_NULL: Final = SchemaAndValue(None, None)
_new_sav = tuple.__new__  # SchemaAndValue without its Python-level __new__ (hot path)

# Exact decimal arithmetic (no rounding), as connectrt.data.logical uses.
_EXACT: Final = _decimal.Context(
    prec=_decimal.MAX_PREC, Emax=_decimal.MAX_EMAX, Emin=_decimal.MIN_EMIN
)
_Dec: Final = _decimal.Decimal

_STRATEGIES: Final = ("TopicNameStrategy", "RecordNameStrategy", "TopicRecordNameStrategy")

CONFIG_KEYS: ConfigKeys = {
    SCHEMA_REGISTRY_URL_CONFIG: (
        "LIST",
        None,
        "Comma-separated list of schema registry URLs (the first one is used).",
    ),
    AUTO_REGISTER_CONFIG: (
        "BOOLEAN",
        True,
        "Register new schemas under the subject automatically.",
    ),
    USE_LATEST_CONFIG: (
        "BOOLEAN",
        False,
        "Serialize with the latest registered schema of the subject (with "
        "auto.register.schemas=false).",
    ),
    KEY_STRATEGY_CONFIG: (
        "STRING",
        "TopicNameStrategy",
        "Subject name strategy for keys: TopicNameStrategy, RecordNameStrategy or "
        "TopicRecordNameStrategy (short or io.confluent.kafka.serializers.subject.* names).",
    ),
    VALUE_STRATEGY_CONFIG: (
        "STRING",
        "TopicNameStrategy",
        "Subject name strategy for values (see key.subject.name.strategy).",
    ),
    AUTH_SOURCE_CONFIG: (
        "STRING",
        "",
        "Source of basic auth credentials for the registry: USER_INFO (or empty for none).",
    ),
    AUTH_USER_INFO_CONFIG: ("PASSWORD", None, "Basic auth credentials as user:password."),
    CACHE_SIZE_CONFIG: ("INT", 1000, "Maximum number of schemas cached by this converter."),
    TIMEOUT_CONFIG: ("INT", 30000, "Registry HTTP timeout in milliseconds."),
}

Fn = Callable[[Any], Any]

_read: Final = fastavro.schemaless_reader
_write: Final = fastavro.schemaless_writer


class SchemaRegistryClient:
    """A minimal Confluent schema registry client (httpx, synchronous)."""

    def __init__(
        self,
        url: str,
        auth: tuple[str, str] | None = None,
        timeout: float = 30.0,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self.url = url.rstrip("/")
        self.requests = 0
        """Number of HTTP requests made (for tests and metrics)."""
        self._http = httpx.Client(
            base_url=self.url,
            auth=auth,
            timeout=timeout,
            headers={"Accept": f"{CONTENT_TYPE}, application/json"},
            transport=transport,
        )

    def _call(self, method: str, path: str, body: Any = None) -> Any:
        self.requests += 1
        try:
            if body is None:
                resp = self._http.request(method, path)
            else:
                resp = self._http.request(
                    method,
                    path,
                    content=json.dumps(body).encode(),
                    headers={"Content-Type": CONTENT_TYPE},
                )
        except httpx.HTTPError as exc:
            raise DataError(f"Schema registry {self.url} unreachable: {exc}") from exc
        if resp.status_code >= 400:
            try:
                err = resp.json()
                message = f"{err.get('message', resp.text)} (error code {err.get('error_code')})"
            except ValueError:
                message = resp.text
            raise RegistryError(resp.status_code, f"{method} {path}: {message}")
        try:
            return resp.json()
        except ValueError as exc:
            raise DataError(f"Schema registry returned invalid JSON for {path}") from exc

    def get_schema(self, schema_id: int) -> str:
        """The schema text registered under ``schema_id``."""
        try:
            body = self._call("GET", f"/schemas/ids/{schema_id}")
        except RegistryError as exc:
            if exc.status == 404:
                raise DataError(f"Schema id {schema_id} not found in the registry") from exc
            raise DataError(f"Error retrieving Avro schema id {schema_id}: {exc}") from exc
        if body.get("schemaType", "AVRO") != "AVRO":
            raise DataError(f"Schema id {schema_id} is a {body['schemaType']} schema, not AVRO")
        return str(body["schema"])

    def register(self, subject: str, schema: str) -> int:
        """Register ``schema`` under ``subject`` (idempotent); its id."""
        try:
            body = self._call("POST", f"/subjects/{_q(subject)}/versions", {"schema": schema})
        except RegistryError as exc:
            raise DataError(f"Error registering Avro schema for subject {subject}: {exc}") from exc
        return int(body["id"])

    def lookup(self, subject: str, schema: str) -> int:
        """The id of ``schema`` already registered under ``subject``."""
        try:
            body = self._call("POST", f"/subjects/{_q(subject)}", {"schema": schema})
        except RegistryError as exc:
            raise DataError(
                f"Schema not registered under subject {subject} "
                f"(auto.register.schemas=false): {exc}"
            ) from exc
        return int(body["id"])

    def latest(self, subject: str) -> tuple[int, str]:
        """``(id, schema text)`` of the latest version under ``subject``."""
        try:
            body = self._call("GET", f"/subjects/{_q(subject)}/versions/latest")
        except RegistryError as exc:
            raise DataError(f"No latest schema for subject {subject}: {exc}") from exc
        return int(body["id"]), str(body["schema"])

    def close(self) -> None:
        self._http.close()


class RegistryError(DataError):
    """An HTTP error answer from the schema registry."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(f"HTTP {status}: {message}")
        self.status = status


def _q(subject: str) -> str:
    return quote(subject, safe="")


class _LRU:
    __slots__ = ("_data", "_max")

    def __init__(self, maxsize: int) -> None:
        self._data: OrderedDict[Any, Any] = OrderedDict()
        self._max = maxsize

    def get(self, key: Any) -> Any:
        value = self._data.get(key)
        if value is not None:
            self._data.move_to_end(key)
        return value

    def put(self, key: Any, value: Any) -> None:
        self._data[key] = value
        self._data.move_to_end(key)
        while len(self._data) > self._max:
            self._data.popitem(last=False)

    def __len__(self) -> int:
        return len(self._data)


class _Writer:
    """Everything needed to write values of one Connect schema."""

    __slots__ = ("avro", "check", "encode", "parsed", "record_name", "text")

    def __init__(self, schema: Schema) -> None:
        self.avro = connect_to_avro(schema)
        self.text = json.dumps(self.avro, separators=(",", ":"))
        self.parsed = _parse(self.avro)
        # The value is never None here (a None value is a tombstone): no null handling.
        self.encode = _fast_encoder_nonnull(schema)
        # Every value checked: names the field at fault when encode's datum fails to write.
        self.check = _encoder_nonnull(schema)
        self.record_name = _record_name(self.avro)


class _Reader:
    __slots__ = ("decode", "parsed", "schema")

    def __init__(self, text: str) -> None:
        try:
            avro = json.loads(text)
        except ValueError as exc:
            raise DataError(f"Registry returned an invalid Avro schema: {exc}") from exc
        self.schema = avro_to_connect(avro)
        self.parsed = _parse(avro)
        self.decode = _decoder(self.schema)


def _parse(avro: Any) -> Any:
    try:
        return fastavro.parse_schema(strip_logical_types(avro))
    except Exception as exc:  # fastavro raises SchemaParseException, ValueError, ...
        raise DataError(f"Invalid Avro schema: {exc}") from exc


def _record_name(avro: Any) -> str:
    if isinstance(avro, list):
        inner = [b for b in avro if b != "null"]
        avro = inner[0] if inner else "null"
    if isinstance(avro, dict):
        if avro.get("type") in ("record", "enum", "fixed"):
            ns = avro.get("namespace")
            return f"{ns}.{avro['name']}" if ns else str(avro["name"])
        return str(avro.get("type"))
    return str(avro)


class AvroConverter(Converter):
    """Confluent-compatible Avro converter backed by a schema registry."""

    CONFIG_KEYS = CONFIG_KEYS

    def __init__(self) -> None:
        self._client: SchemaRegistryClient | None = None
        self._is_key = False
        self._auto_register = True
        self._use_latest = False
        self._strategy = "TopicNameStrategy"
        self._writers = _LRU(1000)
        self._ids = _LRU(1000)
        self._readers = _LRU(1000)
        self._latest = _LRU(1000)
        self._last_schema: Schema | None = None
        self._last_topic: str | None = None
        self._last_out: tuple[bytes, _Writer, Any] | None = None
        self._last_id = -1
        self._last_reader: Any = None

    @property
    def client(self) -> SchemaRegistryClient:
        if self._client is None:
            raise DataError("AvroConverter is not configured")
        return self._client

    def configure(
        self,
        config: Mapping[str, Any],
        is_key: bool,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        urls = config.get(SCHEMA_REGISTRY_URL_CONFIG)
        if isinstance(urls, list | tuple):
            urls = ",".join(str(u) for u in urls)
        if not urls or not str(urls).strip():
            raise ConfigError(f'Missing required configuration "{SCHEMA_REGISTRY_URL_CONFIG}"')
        url = str(urls).split(",")[0].strip()
        self._is_key = is_key
        self._auto_register = _bool(config, AUTO_REGISTER_CONFIG, True)
        self._use_latest = _bool(config, USE_LATEST_CONFIG, False)
        key = KEY_STRATEGY_CONFIG if is_key else VALUE_STRATEGY_CONFIG
        strategy = str(config.get(key) or "TopicNameStrategy").rsplit(".", 1)[-1]
        if strategy not in _STRATEGIES:
            raise ConfigError(f"Invalid value {config.get(key)!r} for {key}: one of {_STRATEGIES}")
        self._strategy = strategy
        auth: tuple[str, str] | None = None
        source = str(config.get(AUTH_SOURCE_CONFIG) or "").upper()
        if source == "USER_INFO":
            info = str(config.get(AUTH_USER_INFO_CONFIG) or "")
            user, sep, password = info.partition(":")
            if not sep:
                raise ConfigError(f"{AUTH_USER_INFO_CONFIG} must be user:password")
            auth = (user, password)
        elif source not in ("", "URL"):
            raise ConfigError(f"Unsupported {AUTH_SOURCE_CONFIG} {source!r} (USER_INFO or URL)")
        try:
            size = int(config.get(CACHE_SIZE_CONFIG, 1000))
            timeout = int(config.get(TIMEOUT_CONFIG, 30000)) / 1000
        except (TypeError, ValueError) as exc:
            raise ConfigError(f"Invalid {CACHE_SIZE_CONFIG} or {TIMEOUT_CONFIG}: {exc}") from exc
        if size <= 0:
            raise ConfigError(f"{CACHE_SIZE_CONFIG} must be positive")
        self._writers, self._ids, self._readers = _LRU(size), _LRU(size), _LRU(size)
        self._latest = _LRU(size)
        self._last_schema = self._last_topic = self._last_out = None
        self._last_id, self._last_reader = -1, None
        if self._client is not None:
            self._client.close()
        self._client = SchemaRegistryClient(url, auth, timeout, transport)

    # -------------------------------------------------------------------------------- writing

    def subject(self, topic: str, record_name: str) -> str:
        """The registry subject for ``topic`` and the Avro full name of the value's schema."""
        if self._strategy == "TopicNameStrategy":
            return f"{topic}-{'key' if self._is_key else 'value'}"
        if self._strategy == "RecordNameStrategy":
            return record_name
        return f"{topic}-{record_name}"

    def from_connect_data(
        self,
        topic: str,
        schema: Schema | None,
        value: Any,
        headers: RawHeaders | None = None,
    ) -> bytes | None:
        if value is None:
            return None  # tombstone
        if schema is None:
            raise DataError("AvroConverter needs a schema to serialize a value")
        last = self._last_out
        if last is not None and schema is self._last_schema and topic == self._last_topic:
            header, writer, parsed = last
        else:
            header, writer, parsed = self._prepare(topic, schema)
            self._last_schema, self._last_topic = schema, topic
            self._last_out = (header, writer, parsed)
        try:
            datum = writer.encode(value)
            out = io.BytesIO()
            out.write(header)
            _write(out, parsed, datum)
        except DataError:
            raise
        except Exception as exc:  # fastavro: ValueError, TypeError, AttributeError, ...
            writer.check(value)  # a DataError naming the field, where one does not fit
            raise DataError(f"Failed to serialize Avro data for topic {topic}: {exc}") from exc
        return out.getvalue()

    def _prepare(self, topic: str, schema: Schema) -> tuple[bytes, _Writer, Any]:
        writer = self._writers.get(schema)
        if writer is None:
            writer = _Writer(schema)
            self._writers.put(schema, writer)
        subject = self.subject(topic, writer.record_name)
        if self._use_latest and not self._auto_register:
            latest = self._latest.get(subject)
            if latest is None:
                schema_id, text = self.client.latest(subject)
                latest = (schema_id, _parse(json.loads(text)))
                self._latest.put(subject, latest)
            return _HEADER.pack(MAGIC_BYTE, latest[0]), writer, latest[1]
        key = (subject, schema)
        schema_id = self._ids.get(key)
        if schema_id is None:
            if self._auto_register:
                schema_id = self.client.register(subject, writer.text)
            else:
                schema_id = self.client.lookup(subject, writer.text)
            self._ids.put(key, schema_id)
        return _HEADER.pack(MAGIC_BYTE, schema_id), writer, writer.parsed

    # -------------------------------------------------------------------------------- reading

    def to_connect_data(
        self, topic: str, data: bytes | None, headers: RawHeaders | None = None
    ) -> SchemaAndValue:
        if data is None:
            return _NULL
        if len(data) < 5:
            raise DataError(f"Avro message for topic {topic} is too short ({len(data)} bytes)")
        magic, schema_id = _HEADER.unpack_from(data)
        if magic != MAGIC_BYTE:
            raise DataError(f"Unknown magic byte {magic} in Avro message for topic {topic}")
        if schema_id == self._last_id:
            reader = self._last_reader
        else:
            reader = self._readers.get(schema_id)
            if reader is None:
                reader = _Reader(self.client.get_schema(schema_id))
                self._readers.put(schema_id, reader)
            self._last_id, self._last_reader = schema_id, reader
        buf = io.BytesIO(data)
        buf.seek(5)
        try:
            value = reader.decode(_read(buf, reader.parsed, None))
        except DataError:
            raise
        except Exception as exc:
            raise DataError(
                f"Failed to deserialize Avro data for topic {topic} (schema id {schema_id}): {exc}"
            ) from exc
        return _new_sav(SchemaAndValue, (reader.schema, value))

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None


def _bool(config: Mapping[str, Any], key: str, default: bool) -> bool:
    raw = config.get(key, default)
    if isinstance(raw, bool):
        return raw
    text = str(raw).strip().lower()
    if text in ("true", "false"):
        return text == "true"
    raise ConfigError(f"Invalid value {raw!r} for configuration {key}: expected true or false")


# ---------------------------------------------------------------------------- value encoding


def _encoder(schema: Schema) -> Fn:
    """Compile Connect value -> fastavro datum for ``schema`` (defaults and nulls included)."""
    inner = _encoder_nonnull(schema)
    default = schema.default
    optional = schema.optional

    if default is None and optional:

        def enc_optional(v: Any) -> Any:
            return None if v is None else inner(v)

        return enc_optional
    if default is not None:

        def enc_default(v: Any) -> Any:
            return inner(default if v is None else v)

        return enc_default

    def enc_required(v: Any) -> Any:
        if v is None:
            raise DataError("Conversion error: null value for field that is required")
        return inner(v)

    return enc_required


# Primitive types whose Struct field values Struct.put() already checked and fastavro writes
# as they are (it raises for a None in a required field, as for any value it cannot write).
_PASSED_THROUGH: Final = frozenset(
    {
        Type.INT8,
        Type.INT16,
        Type.INT32,
        Type.INT64,
        Type.FLOAT32,
        Type.FLOAT64,
        Type.BOOLEAN,
        Type.STRING,
    }
)


def _fast_encoder_nonnull(schema: Schema) -> Fn:
    """:func:`_encoder_nonnull` for the write hot path: a Struct's plain primitive fields (no
    logical type, no default) go to fastavro as they are, without a call per field.

    Only Struct fields are passed through: ``Struct.put`` checked their values against the
    field schema. A value fastavro cannot write still fails; the converter then runs the
    checked encoder to report the field. Anything else than a Struct of this schema takes the
    checked encoder directly.
    """
    if schema.type is not Type.STRUCT:
        return _encoder_nonnull(schema)
    checked = _encoder_nonnull(schema)
    passed: list[tuple[str, int]] = []
    converted: list[tuple[str, int, Fn, Callable[[], Any]]] = []
    for f in schema.fields:
        fs = f.schema
        if fs.type in _PASSED_THROUGH and fs.default is None and not logical.logical_name(fs):
            passed.append((f.name, f.index))
        else:
            converted.append((f.name, f.index, _fast_encoder_nonnull(fs), _on_null(fs)))

    def enc_struct_fast(v: Any) -> Any:
        if type(v) is not Struct or (
            v._schema is not schema and not v._schema.equals_ignoring_default(schema)
        ):
            return checked(v)
        vals = v._values
        datum = {name: vals[index] for name, index in passed}
        try:
            for name, index, enc, on_null in converted:
                x = vals[index]
                datum[name] = enc(x) if x is not None else on_null()
        except DataError:
            return checked(v)  # raises the error again, naming the field
        return datum

    return enc_struct_fast


def _on_null(schema: Schema) -> Callable[[], Any]:
    """What a None field value encodes to (as :func:`_encoder`): null, the default, or an error."""
    if schema.default is not None:
        inner = _encoder_nonnull(schema)
        default = schema.default
        return lambda: inner(default)
    if schema.optional:
        return _null
    return _null_for_required


def _null() -> None:
    return None


def _null_for_required() -> Any:
    raise DataError("Conversion error: null value for field that is required")


def _encoder_nonnull(schema: Schema) -> Fn:
    t = schema.type
    lname = logical.logical_name(schema)
    if lname == logical.Decimal.LOGICAL_NAME:
        scale = logical.Decimal.scale(schema)

        def enc_decimal(v: Any) -> Any:
            if type(v) is _Dec and v.is_finite():
                unscaled = v.scaleb(scale, _EXACT)
                n = int(unscaled)
                if unscaled != n:  # more digits than the scale: Decimal.unscaled raises
                    n = logical.Decimal.unscaled(v, scale)
            else:
                n = logical.Decimal.unscaled(v, scale)
            bits = n.bit_length() if n >= 0 else (~n).bit_length()
            return n.to_bytes(bits // 8 + 1, "big", signed=True)

        return enc_decimal
    if lname == logical.Date.LOGICAL_NAME:
        return lambda v: v if type(v) is int else logical.Date.from_logical(schema, v)
    if lname == logical.Time.LOGICAL_NAME:
        return lambda v: v if type(v) is int else logical.Time.from_logical(schema, v)
    if lname == logical.Timestamp.LOGICAL_NAME:
        return lambda v: v if type(v) is int else logical.Timestamp.from_logical(schema, v)
    if t in INT_RANGES:
        lo, hi = INT_RANGES[t]

        def enc_int(v: Any) -> Any:
            if type(v) is not int or not lo <= v <= hi:
                if isinstance(v, int) and not isinstance(v, bool) and lo <= v <= hi:
                    return int(v)
                raise DataError(f"Invalid value {v!r} for schema type {t.name}")
            return v

        return enc_int
    if t is Type.BOOLEAN:

        def enc_bool(v: Any) -> Any:
            if not isinstance(v, bool):
                raise DataError(f"Invalid value {v!r} for schema type BOOLEAN")
            return v

        return enc_bool
    if t is Type.STRING:

        def enc_str(v: Any) -> Any:
            if not isinstance(v, str):
                raise DataError(f"Invalid value {v!r} for schema type STRING")
            return v

        return enc_str
    if t is Type.BYTES:

        def enc_bytes(v: Any) -> Any:
            if isinstance(v, bytes):
                return v
            if isinstance(v, bytearray | memoryview):
                return bytes(v)
            raise DataError(f"Invalid value {type(v).__name__} for schema type BYTES")

        return enc_bytes
    if t is Type.FLOAT32 or t is Type.FLOAT64:

        def enc_float(v: Any) -> Any:
            if isinstance(v, float):
                return v
            if isinstance(v, int) and not isinstance(v, bool):
                return float(v)
            raise DataError(f"Invalid value {v!r} for schema type {t.name}")

        return enc_float
    if t is Type.ARRAY:
        assert schema.value_schema is not None
        item = _encoder(schema.value_schema)

        def enc_array(v: Any) -> Any:
            if not isinstance(v, list | tuple):
                raise DataError(f"Invalid value {type(v).__name__} for schema type ARRAY")
            return [item(x) for x in v]

        return enc_array
    if t is Type.MAP:
        ks, vs = schema.key_schema, schema.value_schema
        assert ks is not None and vs is not None
        kenc, venc = _encoder(ks), _encoder(vs)
        if ks.type is Type.STRING and not ks.optional:

            def enc_map(v: Any) -> Any:
                if not isinstance(v, Mapping):
                    raise DataError(f"Invalid value {type(v).__name__} for schema type MAP")
                return {kenc(k): venc(x) for k, x in v.items()}

            return enc_map

        def enc_map_entries(v: Any) -> Any:
            if not isinstance(v, Mapping):
                raise DataError(f"Invalid value {type(v).__name__} for schema type MAP")
            return [{"key": kenc(k), "value": venc(x)} for k, x in v.items()]

        return enc_map_entries
    # STRUCT
    fields = [(f.name, f.index, _encoder(f.schema)) for f in schema.fields]
    # The hot path: each field's non-null encoder called directly, nulls handled inline.
    plan = [
        (f.name, f.index, _encoder_nonnull(f.schema), _on_null(f.schema)) for f in schema.fields
    ]

    def enc_struct(v: Any) -> Any:
        if not isinstance(v, Struct) or not v.schema.equals_ignoring_default(schema):
            if isinstance(v, Struct):
                raise DataError(
                    f"Struct schema mismatch: value has {v.schema!r}, expected {schema!r}"
                )
            raise DataError(f"Invalid value {type(v).__name__} for schema type STRUCT")
        vals = v._values
        try:
            return {
                name: enc(x) if (x := vals[index]) is not None else on_null()
                for name, index, enc, on_null in plan
            }
        except DataError:
            pass
        # Slow path, only to name the field at fault.
        for name, index, enc in fields:
            try:
                enc(vals[index])
            except DataError as exc:
                raise DataError(f"Field {name}: {exc}") from exc
        raise AssertionError("unreachable")  # pragma: no cover

    return enc_struct


def _decoder(schema: Schema) -> Fn:
    """Compile fastavro datum -> Connect value for ``schema`` (None passes through)."""
    inner = _decoder_nonnull(schema)
    if inner is None:
        return _identity
    if not schema.optional:
        # Only a ``["null", T]`` union maps to an optional schema: fastavro cannot yield None
        # for any other Avro type, so required values skip the None check.
        return inner

    def dec(v: Any) -> Any:
        return None if v is None else inner(v)

    return dec


def _identity(v: Any) -> Any:
    return v


def _decimal_decoder(scale: int) -> Fn:
    """Big-endian two's-complement unscaled bytes -> ``Decimal`` (as ``Decimal.to_logical``)."""
    exponent = -scale
    from_bytes = int.from_bytes
    create = _EXACT.create_decimal

    def dec_decimal(v: Any) -> Any:
        if not v:
            raise DataError("Invalid bytes for Decimal field")
        return create(from_bytes(v, "big", signed=True)).scaleb(exponent, _EXACT)

    return dec_decimal


def _decoder_nonnull(schema: Schema) -> Fn | None:
    """The decoder of a non-null datum, or None when fastavro's value is the Connect value."""
    t = schema.type
    lname = logical.logical_name(schema)
    if lname == logical.Decimal.LOGICAL_NAME:
        return _decimal_decoder(logical.Decimal.scale(schema))
    if lname == logical.Date.LOGICAL_NAME:
        return lambda v: logical.Date.to_logical(schema, v)
    if lname == logical.Time.LOGICAL_NAME:
        return lambda v: logical.Time.to_logical(schema, v)
    if lname == logical.Timestamp.LOGICAL_NAME:
        return logical.millis_to_datetime
    if t is Type.ARRAY:
        assert schema.value_schema is not None
        if _decoder_nonnull(schema.value_schema) is None:
            return None
        item_dec = _decoder(schema.value_schema)
        return lambda v: [item_dec(x) for x in v]
    if t is Type.MAP:
        ks, vs = schema.key_schema, schema.value_schema
        assert ks is not None and vs is not None
        kdec, vdec = _decoder(ks), _decoder(vs)
        if ks.type is Type.STRING and not ks.optional:
            if _decoder_nonnull(vs) is None:
                return None
            return lambda v: {k: vdec(x) for k, x in v.items()}
        return lambda v: {kdec(e["key"]): vdec(e["value"]) for e in v}
    if t is Type.STRUCT:
        return _struct_decoder(schema)
    return None


def _struct_decoder(schema: Schema) -> Fn:
    """A record dict -> ``Struct``: its values in field order, converted only where needed.

    fastavro builds a record's dict by walking the writer schema's fields in order, and this
    Connect schema was derived from that same writer schema, so ``dict.values()`` is already
    in field order. Fields needing a conversion (logical types, nested records, collections
    of those) are converted in place; a None (an optional field's null) stays None.
    """
    from_values = Struct._from_values
    converted = [
        (f.index, dec) for f in schema.fields if (dec := _decoder_nonnull(f.schema)) is not None
    ]
    if not converted:
        return lambda v: from_values(schema, list(v.values()))
    if len(converted) == 1:
        ((i0, dec0),) = converted

        def dec_struct1(v: Any) -> Any:
            values = list(v.values())
            x = values[i0]
            if x is not None:
                values[i0] = dec0(x)
            return from_values(schema, values)

        return dec_struct1

    def dec_struct(v: Any) -> Any:
        values = list(v.values())
        for i, dec in converted:
            x = values[i]
            if x is not None:
                values[i] = dec(x)
        return from_values(schema, values)

    return dec_struct
