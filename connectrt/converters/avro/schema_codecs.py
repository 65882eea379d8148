"""What the Avro converter prepares once per schema: a :class:`Writer` per Connect schema and
a :class:`Reader` per registry schema, each with its parsed fastavro schema and compiled
value converter.

fastavro is handed schemas without ``logicalType`` attributes (the same binary encoding): the
logical conversions are the compiled encoders' and decoders' (byte-exact with Kafka).
"""

from __future__ import annotations

import json
from typing import Any

import fastavro

from connectrt.converters.avro.decoder import decoder
from connectrt.converters.avro.encoder import encoder_nonnull, fast_encoder_nonnull
from connectrt.data.avro_schema import avro_to_connect, connect_to_avro, strip_logical_types
from connectrt.data.schema import Schema
from connectrt.errors import DataError

__all__ = ["Reader", "Writer", "parse_avro", "record_name"]


class Writer:
    """Everything needed to write values of one Connect schema."""

    __slots__ = ("avro", "check", "encode", "parsed", "record_name", "text")

    def __init__(self, schema: Schema) -> None:
        self.avro = connect_to_avro(schema)
        self.text = json.dumps(self.avro, separators=(",", ":"))
        self.parsed = parse_avro(self.avro)
        # The value is never None here (a None value is a tombstone): no null handling.
        self.encode = fast_encoder_nonnull(schema)
        # Every value checked: names the field at fault when encode's datum fails to write.
        self.check = encoder_nonnull(schema)
        self.record_name = record_name(self.avro)


class Reader:
    """Everything needed to read values written with one registry schema (its text)."""

    __slots__ = ("decode", "parsed", "schema")

    def __init__(self, text: str) -> None:
        try:
            avro = json.loads(text)
        except ValueError as exc:
            raise DataError(f"Registry returned an invalid Avro schema: {exc}") from exc
        self.schema = avro_to_connect(avro)
        self.parsed = parse_avro(avro)
        self.decode = decoder(self.schema)


def parse_avro(avro: Any) -> Any:
    """fastavro's parsed form of the Avro schema ``avro``, without logical types."""
    try:
        return fastavro.parse_schema(strip_logical_types(avro))
    except Exception as exc:  # fastavro raises SchemaParseException, ValueError, ...
        raise DataError(f"Invalid Avro schema: {exc}") from exc


def record_name(avro: Any) -> str:
    """The full name of a named Avro type (the non-null branch of a union), else its type."""
    if isinstance(avro, list):
        inner = [b for b in avro if b != "null"]
        avro = inner[0] if inner else "null"
    if isinstance(avro, dict):
        if avro.get("type") in ("record", "enum", "fixed"):
            ns = avro.get("namespace")
            return f"{ns}.{avro['name']}" if ns else str(avro["name"])
        return str(avro.get("type"))
    return str(avro)
