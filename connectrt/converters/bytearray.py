"""ByteArrayConverter: raw bytes pass through unchanged (Kafka's ``ByteArrayConverter``).

The schema must be None or BYTES and the value bytes-like (or None). Reading yields
``OPTIONAL_BYTES_SCHEMA`` and the bytes. Works as a header converter too. Stateless.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from connectrt.api.converter import (
    ConfigKeys,
    ConnectColumns,
    DataAndHeaderConverter,
    RawHeaders,
    SchemaAndValue,
)
from connectrt.data.schema import Schema, Type
from connectrt.errors import DataError

__all__ = ["CONFIG_KEYS", "ByteArrayConverter"]

CONFIG_KEYS: ConfigKeys = {}


class ByteArrayConverter(DataAndHeaderConverter):
    """Bytes in, bytes out."""

    BYTES_PASSTHROUGH = True

    CONFIG_KEYS = CONFIG_KEYS
    READ_NEVER_FAILS = True  # the bytes as they are

    def configure(self, config: Mapping[str, Any], is_key: bool | None = None) -> None:
        """Nothing to configure."""

    def from_connect_data(
        self, topic: str, schema: Schema | None, value: Any, headers: RawHeaders | None = None
    ) -> bytes | None:
        if schema is not None and schema.type is not Type.BYTES:
            raise DataError(f"Invalid schema type for ByteArrayConverter: {schema.type.name}")
        if value is None:
            return None
        if type(value) is bytes:
            return value
        if isinstance(value, bytearray | memoryview):
            return bytes(value)
        raise DataError(
            f"ByteArrayConverter is not compatible with objects of type {type(value).__name__}"
        )

    def to_connect_data(
        self, topic: str, data: bytes | None, headers: RawHeaders | None = None
    ) -> SchemaAndValue:
        return SchemaAndValue(Schema.OPTIONAL_BYTES_SCHEMA, data)

    def to_connect_columns(self, topic: str, data: Sequence[bytes | None]) -> ConnectColumns:
        return ConnectColumns((Schema.OPTIONAL_BYTES_SCHEMA,) * len(data), data)
