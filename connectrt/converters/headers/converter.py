"""The SimpleHeaderConverter class: header values written as text and read back inferred."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from connectrt.api.converter import ConfigKeys, HeaderConverter, SchemaAndValue
from connectrt.converters.headers.formatting import convert_to_string
from connectrt.converters.headers.parser import parse_string
from connectrt.converters.headers.scalars import NULL
from connectrt.data.schema import Schema
from connectrt.errors import DataError

__all__ = ["SimpleHeaderConverter"]

# The package's logger, as before the package split: logging settings name it.
log = logging.getLogger("connectrt.converters.headers")

_CONFIG_KEYS: ConfigKeys = {}


class SimpleHeaderConverter(HeaderConverter):
    """Header values as text, read back with Kafka's schema inference. Stateless, thread-safe."""

    CONFIG_KEYS = _CONFIG_KEYS
    READ_NEVER_FAILS = True  # a header it cannot parse is kept as bytes

    def configure(self, config: Mapping[str, Any]) -> None:
        """Nothing to configure."""

    def from_connect_header(
        self, topic: str, header_key: str, schema: Schema | None, value: Any
    ) -> bytes | None:
        if value is None:
            return None
        if type(value) is str:  # the usual header (a traceparent, say): its text as it is
            return value.encode("utf-8")
        try:
            text = convert_to_string(schema, value)
        except DataError as e:
            raise DataError(
                f"Failed to serialize value for header '{header_key}' on topic '{topic}': {e}"
            ) from e
        return None if text is None else text.encode("utf-8")

    def to_connect_header(self, topic: str, header_key: str, data: bytes | None) -> SchemaAndValue:
        if data is None:
            return NULL
        raw = bytes(data)
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            return SchemaAndValue(Schema.BYTES_SCHEMA, raw)
        try:
            return parse_string(text)
        except Exception:
            # Kafka's fallback as well: keep the raw bytes rather than fail the record.
            log.warning(
                "Failed to deserialize value for header '%s' on topic '%s', so using byte array",
                header_key,
                topic,
                exc_info=True,
            )
            return SchemaAndValue(Schema.BYTES_SCHEMA, raw)
