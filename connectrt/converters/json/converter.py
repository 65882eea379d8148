"""The JsonConverter class: envelopes, the per-schema caches and the fast paths around them.

On write, each schema gets one encode plan (:class:`EncodePlan`: the serializer closure, the
schema's JSON bytes and the envelope's head up to the payload), reused while the schema object
stays the same; the envelope is the head, the payload and a closing brace. A batch of values of
one schema (:meth:`JsonConverter.from_connect_values`) looks its plan up once and is written by
one orjson call (:mod:`~connectrt.converters.json.batch`): structs column by column, other
values as they are when every one is already what orjson writes (e.g. all ``str`` for a STRING
schema, or maps of plain values without a schema), else through the closure.
On read, a message whose schema text equals the previous message's is recognised by a prefix
compare and only its payload is parsed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from itertools import repeat
from operator import is_
from typing import Any, Final, NamedTuple, cast

import orjson

from connectrt.api.converter import (
    ConnectColumns,
    DataAndHeaderConverter,
    RawHeaders,
    SchemaAndValue,
)
from connectrt.converters._lru import LRU
from connectrt.converters.config_values import config_bool
from connectrt.converters.json.batch import (
    StructBatch,
    comma_free,
    json_texts,
    maps_of_one_shape,
    messages,
    plain_values,
)
from connectrt.converters.json.compiler import Fn
from connectrt.converters.json.config import (
    CONFIG_KEYS,
    REPLACE_NULL_WITH_DEFAULT_CONFIG,
    SCHEMAS_CACHE_SIZE_CONFIG,
    SCHEMAS_ENABLE_CONFIG,
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
from connectrt.speedups import SPEEDUPS

__all__ = ["ENVELOPE_ERROR", "LARGE_MESSAGE", "EncodePlan", "JsonConverter"]

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
_SCHEMALESS_HEAD: Final = b'{"schema":null,"payload":'


def _framed_py(items: Sequence[Any], prefix: bytes, suffix: bytes) -> list[bytes] | None:
    """What lies between ``prefix`` and ``suffix`` in each of ``items``, or None when one item
    is not a bytes object framed so (the C extension's ``framed_slices`` does the same)."""
    try:
        if not (
            all(map(bytes.startswith, items, repeat(prefix)))
            and all(map(bytes.endswith, items, repeat(suffix)))
        ):
            return None
    except TypeError:  # a null or a bytearray among them
        return None
    head, tail = len(prefix), len(suffix)
    if any(len(item) < head + tail for item in items):
        return None
    return [item[head : len(item) - tail] for item in items]


_framed = _framed_py if SPEEDUPS is None else SPEEDUPS.framed_slices


def _exact(schema: Schema) -> type | None:
    """The Python type whose parsed values ``schema``'s decoder returns unchanged (``str`` for
    STRING, ``bool`` for BOOLEAN), so a batch of such values skips it; None otherwise."""
    if logical.logical_name(schema) is not None:
        return None
    fast = DecoderCompiler.fast_paths.get(schema.type)
    if fast is None or fast[1] is not None:  # none, or bounded (the integer types)
        return None
    return fast[0]


_Messages = list[bytes | None]

LARGE_MESSAGE: Final = 1024
"""Average message size (bytes) above which batches without envelopes are declined."""


class EncodePlan(NamedTuple):
    """How values of one schema are written, computed once per schema.

    ``serialize`` turns a Connect value into what orjson writes; ``schema_json`` is the schema
    as the envelope carries it and ``head`` the envelope up to its payload
    (``{"schema":...,"payload":``). ``exact`` is the Python type whose values ``serialize``
    returns unchanged (``str`` for STRING, ``int`` within ``low..high`` for the integer types;
    None when every value needs the closure), so a batch of such values skips it. ``structs``
    writes a batch of a STRUCT schema's values (None for other schemas).
    """

    schema: Schema
    serialize: Fn
    schema_json: bytes
    head: bytes
    exact: type | None
    low: Any
    high: Any
    structs: StructBatch | None


class JsonConverter(DataAndHeaderConverter):
    """Kafka Connect's JsonConverter (also usable as a HeaderConverter).

    Configure once with :meth:`configure`, then call the conversion methods from one thread.
    """

    CONFIG_KEYS = CONFIG_KEYS

    def __init__(self) -> None:
        self.configure({})

    def configure(self, config: Mapping[str, Any], is_key: bool | None = None) -> None:
        """Apply ``config``. ``is_key`` (when given) overrides ``converter.type``."""
        self._schemas_enable = config_bool(config, SCHEMAS_ENABLE_CONFIG, CONFIG_KEYS)
        self._replace_null = config_bool(config, REPLACE_NULL_WITH_DEFAULT_CONFIG, CONFIG_KEYS)
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
        self._batches_declined = False  # see from_connect_values
        # The last envelope schema read: (the envelope's head up to its payload, the schema,
        # its decoder, the head's length, the type its decoder returns unchanged or None).
        self._last_de: tuple[bytes, Schema, Fn, int, type | None] | None = None

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
            serialize = encoder.compile(schema)
            head = b'{"schema":' + schema_bytes + b',"payload":'
            structs = None
            if schema.type is Type.STRUCT and not logical.logical_name(schema):
                around = (head, b"}") if self._schemas_enable else (b"", b"")
                structs = StructBatch(schema, encoder, serialize, *around)
            entry = EncodePlan(schema, serialize, schema_bytes, head, exact, low, high, structs)
            self._to_json_cache.put(schema, entry)
        return entry

    def from_connect_data(
        self, topic: str, schema: Schema | None, value: Any, headers: RawHeaders | None = None
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
        """Serialize values of one schema, with or without envelopes, in one orjson call
        (:mod:`~connectrt.converters.json.batch`): the schema's plan is looked up once; structs
        are written column by column, and values already in the form orjson writes (checked
        for the whole batch at once) skip the closure. Each message is a ``bytes`` of its exact
        size, as ``from_connect_data`` would return it (None for a tombstone).

        Without envelopes, once a batch's messages average over :data:`LARGE_MESSAGE` bytes,
        later calls answer None (the runtime then converts value by value): a batch of large
        messages held until it is produced costs more than it saves (measured: 2 kB messages
        7.3 us each in a batch, 3.7 us one by one; 100 B ones 0.5 against 2.3). With
        envelopes the batch is kept: the runtime held them in a batch before this path too.
        """
        if self._batches_declined:
            return None
        written = self._write_values(schema, values)
        if (
            not self._schemas_enable
            and written
            and sum(map(len, filter(None, written))) > LARGE_MESSAGE * len(written)
        ):
            self._batches_declined = True
        return written

    def _write_values(self, schema: Schema | None, values: Sequence[Any]) -> list[bytes | None]:
        """:meth:`from_connect_values`'s batch."""
        try:
            if schema is None:
                return self._schemaless_values(values)
            plan = self._last_ser
            if plan is None or plan[0] is not schema:
                plan = self._last_ser = self._ser_entry(schema)
            if plan.structs is not None:
                return cast(_Messages, plan.structs.write(values))
            exact = plan.exact
            items: Sequence[Any] = values
            if exact is None or not values or not _all_exact(values, exact, plan.low, plan.high):
                items = list(map(plan.serialize, values))
            texts = json_texts(items, comma_free(schema))
            if self._schemas_enable:
                return cast(_Messages, messages(texts, plan.head, b"}"))
            return cast(_Messages, texts)
        except _JSONEncodeError as exc:
            raise DataError(f"Cannot convert value to JSON: {exc}") from exc

    def _schemaless_values(self, values: Sequence[Any]) -> list[bytes | None]:
        """Values without a schema: tombstones (None) stay None, the rest as
        :func:`~connectrt.converters.json.schemaless.schemaless_to_json` gives them, or as
        they are when every one is plain (:func:`~connectrt.converters.json.batch.plain_values`)."""
        if any(map(is_, values, repeat(None))):
            kept = [v for v in values if v is not None]
            written = iter(self._schemaless_values(kept))
            return [None if v is None else next(written) for v in values]
        if self._schemas_enable:
            head, tail = _SCHEMALESS_HEAD, b"}"
        else:
            head = tail = b""
        if values:  # maps of one shape: checked column by column, converted where needed
            shaped = maps_of_one_shape(values, head, tail)
            if shaped is not None:
                return cast(_Messages, shaped)
        items = values if plain_values(values) else list(map(schemaless_to_json, values))
        return cast(_Messages, messages(json_texts(items, no_commas=False), head, tail))

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
        per value). Nulls (tombstones, null keys) are ``(None, None)`` without a call each:
        a batch of nulls only (the keys of a keyless topic) costs one count, and the other
        messages of a batch with some nulls are converted as a batch of their own. Plain JSON
        is checked for what Kafka reads differently (integers beyond 64 bits, negative zeros)
        once, over the batch joined. Anything else (numbers with leading zeros, a schema
        change, a NUMERIC decimal read as a float) goes message by message through
        :meth:`to_connect_data`, which raises for a malformed one."""
        n = len(data)
        items: Sequence[Any] = data  # bytes, but a null or a bytearray may be among them
        if not self._schemas_enable:
            try:
                # One check of the batch joined by a newline: a suspect pattern never spans a
                # newline, and each message matches in the joined batch as it does alone.
                if not _suspect(b"\n".join(items)):
                    return ConnectColumns((None,) * n, list(map(_loads, items)))
            except (_JSONDecodeError, TypeError):  # TypeError: a null among them
                pass
            return self._columns_slowly(topic, data)
        last = self._last_de
        if last is not None:
            prefix, schema, decode, _start, exact = last
            try:
                payloads = _framed(items, prefix, b"}")
                if payloads is not None:
                    values = list(map(_loads, payloads))
                    if exact is None or set(map(type, values)) != {exact}:
                        values = list(map(decode, values))
                    return ConnectColumns((schema,) * n, values)
            except (_JSONDecodeError, NeedExact):
                pass
        return self._columns_slowly(topic, data)

    def _columns_slowly(self, topic: str, data: Sequence[bytes | None]) -> ConnectColumns:
        """:meth:`to_connect_columns` of a batch its one-``map`` paths did not take: one with
        nulls by :meth:`_columns_with_nulls`, else message by message."""
        nulls = data.count(None)  # C-level; only off the fast paths
        if nulls:
            return self._columns_with_nulls(topic, data, nulls)
        return super().to_connect_columns(topic, data)

    def _columns_with_nulls(
        self, topic: str, data: Sequence[bytes | None], nulls: int
    ) -> ConnectColumns:
        """:meth:`to_connect_columns` of a batch holding ``nulls`` nulls: each ``(None, None)``
        as :meth:`to_connect_data` gives it, the other messages converted as one batch."""
        n = len(data)
        if nulls == n:
            nothing = (None,) * n
            return ConnectColumns(nothing, nothing)
        kept = [d for d in data if d is not None]
        part = self.to_connect_columns(topic, kept)
        schemas, values = iter(part.schemas), iter(part.values)
        return ConnectColumns(
            [None if d is None else next(schemas) for d in data],
            [None if d is None else next(values) for d in data],
        )

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
                self._last_de = (prefix, entry[0], entry[1], len(prefix), _exact(entry[0]))
        try:
            return SchemaAndValue(entry[0], entry[1](payload))
        except NeedExact:
            if exact:  # pragma: no cover - exact parsing yields no floats
                raise DataError("Invalid Decimal value") from None
            return self._read_envelope(data, exact=True)

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
