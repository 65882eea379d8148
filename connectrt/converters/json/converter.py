"""The JsonConverter class: envelopes, the per-schema caches and the fast paths around them.

On write, each schema gets one encode plan (:class:`EncodePlan`: the serializer closure, the
schema's JSON bytes and the envelope's head up to the payload), reused while the schema object
stays the same; the envelope is the head, the payload and a closing brace. A batch of values of
one schema (:meth:`JsonConverter.from_connect_values`) looks its plan up once and, when every
value is already what orjson writes (e.g. all ``str`` for a STRING schema), skips the closure.
On read, a message whose schema text equals the previous message's is recognised by a prefix
compare and only its payload is parsed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from itertools import repeat
from operator import itemgetter
from typing import Any, Final, NamedTuple

import orjson

from connectrt.api.converter import (
    ConnectColumns,
    Converter,
    HeaderConverter,
    RawHeaders,
    SchemaAndValue,
)
from connectrt.converters._lru import LRU
from connectrt.converters.json.compiler import Fn
from connectrt.converters.json.config import (
    CONFIG_KEYS,
    REPLACE_NULL_WITH_DEFAULT_CONFIG,
    SCHEMAS_CACHE_SIZE_CONFIG,
    SCHEMAS_ENABLE_CONFIG,
    config_bool,
    config_converter_type,
    config_decimal_numeric,
    config_int,
)
from connectrt.converters.json.decoder import DecoderCompiler, NeedExact
from connectrt.converters.json.encoder import EncoderCompiler
from connectrt.converters.json.java_text import java_dumps
from connectrt.converters.json.parsing import (
    decimal_fragment,
    kafka_schemaless,
    lenient_loads,
    parse,
    parse_schemaless,
    schemaless_suspect,
)
from connectrt.converters.json.schema_mapping import schema_from_json, schema_to_json
from connectrt.converters.json.schemaless import schemaless_to_json
from connectrt.data import logical
from connectrt.data.schema import Schema, Type
from connectrt.errors import DataError

__all__ = ["ENVELOPE_ERROR", "EncodePlan", "JsonConverter"]

ENVELOPE_ERROR: Final = (
    'JsonConverter with schemas.enable requires "schema" and "payload" fields and may not '
    "contain additional fields. If you are trying to deserialize plain JSON data, set "
    "schemas.enable=false in your converter configuration."
)

_dumps = java_dumps  # orjson's, with Jackson's text where the two differ
_loads = orjson.loads
_JSONDecodeError = orjson.JSONDecodeError
_JSONEncodeError = orjson.JSONEncodeError
_suspect = schemaless_suspect
_new_sav = tuple.__new__  # SchemaAndValue without NamedTuple's Python-level __new__


class EncodePlan(NamedTuple):
    """How values of one schema are written, computed once per schema.

    ``serialize`` turns a Connect value into what orjson writes; ``schema_json`` is the schema
    as the envelope carries it and ``head`` the envelope up to its payload
    (``{"schema":...,"payload":``). ``exact`` is the Python type whose values ``serialize``
    returns unchanged (``str`` for STRING, ``int`` within ``low..high`` for the integer types;
    None when every value needs the closure), so a batch of such values skips it.
    """

    schema: Schema
    serialize: Fn
    schema_json: bytes
    head: bytes
    exact: type | None
    low: Any
    high: Any


class JsonConverter(Converter, HeaderConverter):
    """Kafka Connect's JsonConverter (also usable as a HeaderConverter).

    Configure once with :meth:`configure`, then call the conversion methods from one thread.
    """

    CONFIG_KEYS = CONFIG_KEYS

    def __init__(self) -> None:
        self.configure({})

    def configure(self, config: Mapping[str, Any], is_key: bool | None = None) -> None:
        """Apply ``config``. ``is_key`` (when given) overrides ``converter.type``."""
        self._schemas_enable = config_bool(config, SCHEMAS_ENABLE_CONFIG)
        self._replace_null = config_bool(config, REPLACE_NULL_WITH_DEFAULT_CONFIG)
        cache_size = config_int(config, SCHEMAS_CACHE_SIZE_CONFIG)
        self._decimal_numeric = config_decimal_numeric(config)
        if is_key is not None:
            self.converter_type: str | None = "key" if is_key else "value"
        else:
            self.converter_type = config_converter_type(config)
        self._encoder = EncoderCompiler(self._decimal_numeric, self._replace_null)
        self._decoder = DecoderCompiler(self._replace_null)
        # Schema -> (serializer, schema JSON bytes)
        self._to_json_cache = LRU(cache_size)
        # canonical schema JSON bytes -> (Schema, deserializer)
        self._from_json_cache = LRU(cache_size)
        self._last_ser: EncodePlan | None = None
        self._last_de: tuple[bytes, Schema, Fn, int] | None = None

    # -- Connect -> bytes -------------------------------------------------------------------

    def _ser_entry(self, schema: Schema) -> EncodePlan:
        entry: EncodePlan | None = self._to_json_cache.get(schema)
        if entry is None:
            encoder = self._encoder
            try:
                schema_bytes = _dumps(schema_to_json(schema, encoder))
            except _JSONEncodeError as exc:
                raise DataError(f"Cannot convert schema to JSON: {exc}") from exc
            fast = encoder.fast_paths.get(schema.type)
            exact: type | None = None
            low = high = None
            # No fast path for logical types, nor floats (NaN defeats a min/max check).
            if (
                fast is not None
                and schema.type is not Type.FLOAT64
                and not logical.logical_name(schema)
            ):
                exact, low, high = fast
            entry = EncodePlan(
                schema,
                encoder.compile(schema),
                schema_bytes,
                b'{"schema":' + schema_bytes + b',"payload":',
                exact,
                low,
                high,
            )
            self._to_json_cache.put(schema, entry)
        return entry

    def from_connect_data(
        self,
        topic: str,
        schema: Schema | None,
        value: Any,
        headers: RawHeaders | None = None,
    ) -> bytes | None:
        """Serialize to JSON bytes; None for a tombstone (no schema and no value)."""
        if schema is None:
            if value is None:
                return None
            try:
                body = _dumps(schemaless_to_json(value))
            except _JSONEncodeError as exc:
                raise DataError(f"Cannot convert value to JSON: {exc}") from exc
            if self._schemas_enable:
                return b'{"schema":null,"payload":' + body + b"}"
            return body
        last = self._last_ser
        if last is None or last[0] is not schema:
            last = self._last_ser = self._ser_entry(schema)
        try:
            body = _dumps(last[1](value))
        except _JSONEncodeError as exc:
            raise DataError(f"Cannot convert value to JSON: {exc}") from exc
        if self._schemas_enable:
            return last[3] + body + b"}"
        return body

    def from_connect_values(
        self, topic: str, schema: Schema | None, values: Sequence[Any]
    ) -> list[bytes | None] | None:
        """Serialize values of one schema into envelopes: the schema's plan is looked up once,
        and values already in the form orjson writes (checked for the whole batch at once)
        skip the closure. None without envelopes (``schemas.enable=false``): there is nothing
        to share, and a list would hold orjson's own buffers (see below)."""
        if not self._schemas_enable:
            return None
        if schema is None:
            convert = self.from_connect_data
            return [convert(topic, None, value) for value in values]
        plan = self._last_ser
        if plan is None or plan[0] is not schema:
            plan = self._last_ser = self._ser_entry(schema)
        dumps = _dumps
        head = plan.head
        exact = plan.exact
        # Each orjson buffer is released within its comprehension step (the concatenation
        # copies it), never held for the batch: glibc handles thousands of live ones badly,
        # here ~3 us per value against 0.1 us (it trims and regrows the heap top per batch).
        try:
            if exact is not None and values and _all_exact(values, exact, plan.low, plan.high):
                return [head + dumps(value) + b"}" for value in values]
            serialize = plan.serialize
            return [head + dumps(serialize(value)) + b"}" for value in values]
        except _JSONEncodeError as exc:
            raise DataError(f"Cannot convert value to JSON: {exc}") from exc

    # -- bytes -> Connect -------------------------------------------------------------------

    def to_connect_data(
        self, topic: str, data: bytes | None, headers: RawHeaders | None = None
    ) -> SchemaAndValue:
        """Deserialize JSON bytes; None gives ``SchemaAndValue(None, None)``."""
        if data is None:
            return SchemaAndValue(None, None)
        if type(data) is not bytes:
            data = bytes(data)
        if not self._schemas_enable:
            return _new_sav(SchemaAndValue, (None, parse_schemaless(data)))
        last = self._last_de
        if last is not None and data.startswith(last[0]) and data.endswith(b"}"):
            try:
                payload = _loads(data[last[3] : -1])
            except _JSONDecodeError:
                pass  # e.g. leading zeros, or not really an envelope: take the slow path
            else:
                try:
                    return _new_sav(SchemaAndValue, (last[1], last[2](payload)))
                except NeedExact:
                    return self._read_envelope(data, exact=True)
        return self._read_envelope(data, exact=False)

    def to_connect_columns(self, topic: str, data: Sequence[bytes | None]) -> ConnectColumns:
        """A batch with one ``map`` over orjson: plain JSON as it is; envelopes whose schema
        text equals the last one seen, by their payloads (then the schema's compiled decoder
        per value). Anything else (nulls, numbers with leading zeros, a schema change, a
        NUMERIC decimal read as a float) goes message by message through
        :meth:`to_connect_data`, which raises for a malformed one."""
        n = len(data)
        items: Sequence[Any] = data  # bytes, but a null or a bytearray may be among them
        if not self._schemas_enable:
            try:
                if not any(map(_suspect, items)):
                    return ConnectColumns((None,) * n, list(map(_loads, items)))
            except (_JSONDecodeError, TypeError):
                pass
            return super().to_connect_columns(topic, data)
        last = self._last_de
        if last is not None:
            prefix, schema, decode, start = last
            try:
                if all(map(bytes.startswith, items, repeat(prefix))) and all(
                    map(bytes.endswith, items, repeat(b"}"))
                ):
                    payloads = map(_loads, map(itemgetter(slice(start, -1)), items))
                    return ConnectColumns((schema,) * n, list(map(decode, payloads)))
            except (_JSONDecodeError, TypeError, NeedExact):
                pass
        return super().to_connect_columns(topic, data)

    def _read_envelope(self, data: bytes, exact: bool) -> SchemaAndValue:
        obj = lenient_loads(data, exact=True) if exact else parse(data)
        if type(obj) is not dict or len(obj) != 2 or "schema" not in obj or "payload" not in obj:
            raise DataError(ENVELOPE_ERROR)
        schema_obj = obj["schema"]
        payload = obj["payload"]
        if schema_obj is None:
            if _suspect(data):
                payload = kafka_schemaless(lenient_loads(data, exact=False)["payload"])
            return SchemaAndValue(None, payload)
        try:
            key = orjson.dumps(schema_obj, default=decimal_fragment)
        except _JSONEncodeError as exc:  # pragma: no cover - parsed JSON always re-encodes
            raise DataError(f"Invalid schema: {exc}") from exc
        entry: tuple[Schema, Fn] | None = self._from_json_cache.get(key)
        if entry is None:
            try:
                schema = schema_from_json(schema_obj, self._decoder)
            except NeedExact:
                if exact:  # pragma: no cover - exact parsing yields no floats
                    raise DataError("Invalid Decimal default value") from None
                return self._read_envelope(data, exact=True)
            assert schema is not None
            entry = (schema, self._decoder.compile(schema))
            self._from_json_cache.put(key, entry)
        if not exact:
            prefix = b'{"schema":' + key + b',"payload":'
            if data.startswith(prefix):
                self._last_de = (prefix, entry[0], entry[1], len(prefix))
        try:
            return SchemaAndValue(entry[0], entry[1](payload))
        except NeedExact:
            if exact:  # pragma: no cover - exact parsing yields no floats
                raise DataError("Invalid Decimal value") from None
            return self._read_envelope(data, exact=True)

    # -- HeaderConverter --------------------------------------------------------------------

    def from_connect_header(
        self, topic: str, header_key: str, schema: Schema | None, value: Any
    ) -> bytes | None:
        return self.from_connect_data(topic, schema, value)

    def to_connect_header(self, topic: str, header_key: str, data: bytes | None) -> SchemaAndValue:
        return self.to_connect_data(topic, data)

    # -- introspection (tests, metrics) -----------------------------------------------------

    def schema_to_json(self, schema: Schema) -> bytes:
        """The schema JSON bytes this converter writes in envelopes."""
        return self._ser_entry(schema).schema_json

    def schema_from_json(self, data: bytes) -> Schema | None:
        """Parse schema JSON bytes as found in an envelope's ``schema`` field."""
        try:
            return schema_from_json(parse(data), self._decoder)
        except NeedExact:  # a NUMERIC decimal default read as a float
            return schema_from_json(lenient_loads(data, exact=True), self._decoder)


def _all_exact(values: Sequence[Any], exact: type, low: Any, high: Any) -> bool:
    """Whether every value is of type ``exact`` (and, when bounded, within ``low..high``):
    C-level passes over the batch rather than a Python loop."""
    if set(map(type, values)) != {exact}:
        return False
    return low is None or (low <= min(values) and max(values) <= high)
