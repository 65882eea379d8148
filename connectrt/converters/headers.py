"""SimpleHeaderConverter: header values as UTF-8 text.

Writes ``str``, ``bool`` (``true``/``false``), ``int`` and ``float`` as their UTF-8 text and
passes ``bytes`` through; reads every header back as a STRING.

Gap versus Kafka's ``SimpleHeaderConverter``: Kafka writes maps, arrays and structs in its
own text syntax and, on read, infers a schema from the text (``42`` becomes INT8, ``true`` a
BOOLEAN, ``[1,2]`` an ARRAY, ...). Here complex values raise DataError and reads are always
strings; callers that need typed headers should use JsonConverter as the header converter.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from connectrt.api.converter import ConfigKeys, HeaderConverter, SchemaAndValue
from connectrt.api.errors import DataError
from connectrt.data.schema import Schema

__all__ = ["SimpleHeaderConverter"]

_CONFIG_KEYS: ConfigKeys = {}


class SimpleHeaderConverter(HeaderConverter):
    """Header values as plain UTF-8 text. Stateless and thread-safe."""

    CONFIG_KEYS = _CONFIG_KEYS

    def configure(self, config: Mapping[str, Any]) -> None:
        """Nothing to configure."""

    def from_connect_header(
        self, topic: str, header_key: str, schema: Schema | None, value: Any
    ) -> bytes | None:
        if value is None:
            return None
        if isinstance(value, bytes | bytearray | memoryview):
            return bytes(value)
        if value is True or value is False:
            return b"true" if value else b"false"
        if isinstance(value, str | int | float):
            return str(value).encode("utf-8")
        raise DataError(
            f"SimpleHeaderConverter cannot write header {header_key!r} of type "
            f"{type(value).__name__}; use JsonConverter for structured headers"
        )

    def to_connect_header(self, topic: str, header_key: str, data: bytes | None) -> SchemaAndValue:
        if data is None:
            return SchemaAndValue(None, None)
        return SchemaAndValue(Schema.STRING_SCHEMA, bytes(data).decode("utf-8", "replace"))
