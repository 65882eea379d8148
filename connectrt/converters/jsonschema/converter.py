"""The JsonSchemaConverter class: Confluent's JSON Schema wire format through a registry.

Each message is ``0x00`` + the 4-byte big-endian schema id + the JSON payload (UTF-8). No
registry call per record: per Connect schema the converter keeps a :class:`_Writer` (the JSON
Schema, its text, the payload encoder, the validator when ``json.fail.invalid.schema`` is
on); per (subject, Connect schema) the schema id; per schema id a :class:`_Reader` (the
Connect schema and the payload decoder). The previous record's writer and reader are reused
without a cache lookup.

Thread-safety: configure once, then use from a single task thread (caches are not locked).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Final

import orjson

from connectrt.api.converter import SchemaAndValue
from connectrt.converters.config_values import config_bool
from connectrt.converters.json.compiler import Fn
from connectrt.converters.json.config import config_decimal_numeric
from connectrt.converters.json.decoder import NeedExact
from connectrt.converters.json.java_text import java_dumps
from connectrt.converters.json.parsing import lenient_loads, parse
from connectrt.converters.jsonschema.config import (
    ADDITIONAL_PROPERTIES_CONFIG,
    CONFIG_KEYS,
    OPTIONAL_FOR_NONREQUIRED_CONFIG,
    VALIDATE_CONFIG,
)
from connectrt.converters.jsonschema.schema_mapping import (
    connect_to_json_schema,
    json_schema_to_connect,
)
from connectrt.converters.jsonschema.values import PayloadDecoder, PayloadEncoder
from connectrt.converters.registry_converter import HEADER, MAGIC_BYTE, RegistryConverter
from connectrt.data.schema import Schema
from connectrt.errors import ConfigError, DataError

__all__ = ["MAGIC_BYTE", "JsonSchemaConverter"]

SCHEMA_TYPE: Final = "JSON"
_HEADER: Final = HEADER
_new_sav = tuple.__new__  # SchemaAndValue without its Python-level __new__ (hot path)
_dumps = java_dumps


class _Writer:
    """What writing values of one Connect schema needs."""

    __slots__ = ("encode", "json_schema", "record_name", "text", "validator")

    def __init__(self, schema: Schema, encoder: PayloadEncoder, closed: bool) -> None:
        def default_json(s: Schema, value: Any) -> Any:
            return orjson.loads(_dumps(encoder.nonnull(s)(value)))

        self.json_schema = connect_to_json_schema(
            schema, default_json, encoder.decimal_numeric, not closed
        )
        self.text = json.dumps(self.json_schema, separators=(",", ":"))
        self.encode: Fn = encoder.compile(schema)
        title = self.json_schema.get("title")
        self.record_name = str(title) if title else "JsonSchema"
        self.validator: Any = None


class _Reader:
    """What reading values written with one registry schema needs."""

    __slots__ = ("decode", "schema")

    def __init__(self, schema: Schema, decode: Fn) -> None:
        self.schema = schema
        self.decode = decode


def _validator(json_schema: Any) -> Any:
    try:
        import jsonschema
    except ImportError as exc:  # pragma: no cover - an optional dependency
        raise ConfigError(
            f"{VALIDATE_CONFIG}=true needs the jsonschema package (pip install jsonschema)"
        ) from exc
    cls = jsonschema.validators.validator_for(json_schema)
    return cls(json_schema)


class JsonSchemaConverter(RegistryConverter):
    """Confluent-compatible JSON Schema converter backed by a schema registry (subjects name
    the schema's title)."""

    CONFIG_KEYS = CONFIG_KEYS
    FORMAT = "JSON Schema"

    def __init__(self) -> None:
        super().__init__()
        self._validate = False
        self._closed = False
        self._optional_nonrequired = False
        self._encoder = PayloadEncoder(False, True)
        self._decoder = PayloadDecoder(True)

    def _configure_format(self, config: Mapping[str, Any]) -> None:
        self._validate = config_bool(config, VALIDATE_CONFIG, CONFIG_KEYS)
        self._closed = not config_bool(config, ADDITIONAL_PROPERTIES_CONFIG, CONFIG_KEYS)
        self._optional_nonrequired = config_bool(
            config, OPTIONAL_FOR_NONREQUIRED_CONFIG, CONFIG_KEYS
        )
        self._encoder = PayloadEncoder(config_decimal_numeric(config), True)
        self._decoder = PayloadDecoder(True)

    # -------------------------------------------------------------------------------- writing

    def json_schema(self, schema: Schema) -> dict[str, Any]:
        """The JSON Schema this converter registers for ``schema``."""
        return self.writer_for(schema).json_schema

    def _new_writer(self, schema: Schema) -> _Writer:
        return _Writer(schema, self._encoder, self._closed)

    def _serialize(self, topic: str, prepared: tuple[bytes, _Writer], value: Any) -> bytes:
        header, writer = prepared
        try:
            body = _dumps(writer.encode(value))
        except orjson.JSONEncodeError as exc:
            raise self.serialize_failure(topic, exc) from exc
        if self._validate:
            self._check(writer, body, topic)
        return header + body

    def _check(self, writer: _Writer, body: bytes, topic: str) -> None:
        if writer.validator is None:
            writer.validator = _validator(writer.json_schema)
        error = next(iter(writer.validator.iter_errors(orjson.loads(body))), None)
        if error is not None:
            where = "/".join(str(p) for p in error.absolute_path) or "(root)"
            raise DataError(
                f"Value for topic {topic} does not match its JSON Schema at {where}: "
                f"{error.message}"
            )

    def _prepare(self, topic: str, schema: Schema) -> tuple[bytes, _Writer]:
        writer: _Writer = self.writer_for(schema)
        subject = self.subject(topic, writer.record_name)
        schema_id = self.registered_id(subject, schema, writer.text, SCHEMA_TYPE)
        return _HEADER.pack(MAGIC_BYTE, schema_id), writer

    # -------------------------------------------------------------------------------- reading

    def _deserialize(self, topic: str, schema_id: int, data: bytes) -> SchemaAndValue:
        reader: _Reader = self.reader_for(schema_id)
        payload = bytes(data[5:])
        try:
            try:
                value = reader.decode(parse(payload))
            except NeedExact:
                value = reader.decode(lenient_loads(payload, exact=True))
        except DataError as exc:
            raise self.deserialize_failure(topic, schema_id, exc) from exc
        return _new_sav(SchemaAndValue, (reader.schema, value))

    def _load_reader(self, schema_id: int) -> _Reader:
        info = self.client.get_schema_info(schema_id, SCHEMA_TYPE)
        try:
            document = json.loads(info["schema"])
            references = self._references(info.get("references") or [], set())
        except ValueError as exc:
            raise DataError(f"Registry returned an invalid JSON Schema (id {schema_id})") from exc
        decoder = self._decoder

        def read_default(s: Schema, value: Any) -> Any:
            try:
                return decoder.nonnull(s)(value)
            except NeedExact:
                return decoder.nonnull(s)(lenient_loads(orjson.dumps(value), exact=True))

        schema = json_schema_to_connect(
            document,
            references,
            optional_for_nonrequired=self._optional_nonrequired,
            read_default=read_default,
        )
        return _Reader(schema, decoder.compile(schema))

    def _references(self, refs: list[dict[str, Any]], seen: set[str]) -> dict[str, Any]:
        """The parsed documents of ``refs`` and, transitively, of theirs, by name."""
        out: dict[str, Any] = {}
        for ref in refs:
            key = f"{ref['subject']}/{ref['version']}"
            if key in seen:
                continue
            seen.add(key)
            info = self.client.get_version(str(ref["subject"]), ref["version"])
            out.update(self._references(info.get("references") or [], seen))
            out[str(ref["name"])] = json.loads(info["schema"])
        return out
