"""StringConverter: values as text in a configurable encoding (Kafka's ``StringConverter``).

Writing turns any value into ``str(value)`` (``bool`` as ``true``/``false``, as Java does) and
encodes it; reading always yields ``OPTIONAL_STRING_SCHEMA`` and the decoded text. Malformed
input bytes are replaced with U+FFFD on read, like Java's ``new String(bytes, charset)``.
Works as a key/value converter and as a header converter. Configure once, then use from one
thread.
"""

from __future__ import annotations

import codecs
from collections.abc import Mapping, Sequence
from itertools import repeat
from typing import Any

from connectrt.api.converter import (
    ConfigKeys,
    ConnectColumns,
    DataAndHeaderConverter,
    RawHeaders,
    SchemaAndValue,
)
from connectrt.data.schema import Schema
from connectrt.errors import ConfigError, DataError

__all__ = ["CONFIG_KEYS", "StringConverter"]

_new_sav = tuple.__new__  # SchemaAndValue without NamedTuple's Python-level __new__

ENCODING_CONFIG = "converter.encoding"
SERIALIZER_ENCODING_CONFIG = "serializer.encoding"
DESERIALIZER_ENCODING_CONFIG = "deserializer.encoding"

CONFIG_KEYS: ConfigKeys = {
    ENCODING_CONFIG: ("STRING", "UTF-8", "The name of the character encoding used for text."),
    SERIALIZER_ENCODING_CONFIG: (
        "STRING",
        None,
        f"Encoding for writing; used only when {ENCODING_CONFIG} is not set.",
    ),
    DESERIALIZER_ENCODING_CONFIG: (
        "STRING",
        None,
        f"Encoding for reading; used only when {ENCODING_CONFIG} is not set.",
    ),
}


def _encoding(config: Mapping[str, Any], key: str) -> str:
    name = config.get(ENCODING_CONFIG) or config.get(key) or "UTF-8"
    try:
        return codecs.lookup(str(name)).name
    except LookupError:
        raise ConfigError(
            f"Invalid value {name} for configuration {key}: unknown encoding",
            ENCODING_CONFIG if config.get(ENCODING_CONFIG) else key,
            name,
        ) from None


class StringConverter(DataAndHeaderConverter):
    """Text in and out. Any value is written as its string form; None stays None."""

    CONFIG_KEYS = CONFIG_KEYS
    READ_NEVER_FAILS = True  # malformed bytes are replaced, never refused

    def __init__(self) -> None:
        self.configure({})

    def configure(self, config: Mapping[str, Any], is_key: bool | None = None) -> None:
        self._write_encoding = _encoding(config, SERIALIZER_ENCODING_CONFIG)
        self._read_encoding = _encoding(config, DESERIALIZER_ENCODING_CONFIG)

    def from_connect_data(
        self, topic: str, schema: Schema | None, value: Any, headers: RawHeaders | None = None
    ) -> bytes | None:
        if value is None:
            return None
        if value is True or value is False:
            text = "true" if value else "false"
        else:
            text = value if type(value) is str else str(value)
        try:
            return text.encode(self._write_encoding)
        except UnicodeEncodeError as exc:
            raise DataError(
                f"Failed to serialize to a string in encoding {self._write_encoding}: {exc}"
            ) from exc

    def to_connect_data(
        self, topic: str, data: bytes | None, headers: RawHeaders | None = None
    ) -> SchemaAndValue:
        if data is None:
            return SchemaAndValue(Schema.OPTIONAL_STRING_SCHEMA, None)
        return _new_sav(
            SchemaAndValue,
            (Schema.OPTIONAL_STRING_SCHEMA, bytes(data).decode(self._read_encoding, "replace")),
        )

    def to_connect_columns(self, topic: str, data: Sequence[bytes | None]) -> ConnectColumns:
        """All of ``data`` decoded by one ``map`` (``str(b, encoding, "replace")`` per item),
        or item by item when a null is among them."""
        encoding = self._read_encoding
        items: Sequence[Any] = data  # bytes, but a null may be among them
        try:
            values: list[str | None] = list(map(str, items, repeat(encoding), repeat("replace")))
        except TypeError:  # a null (or not bytes-like) among them
            values = [None if d is None else bytes(d).decode(encoding, "replace") for d in data]
        return ConnectColumns((Schema.OPTIONAL_STRING_SCHEMA,) * len(values), values)
