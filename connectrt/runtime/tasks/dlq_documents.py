"""The JSON document a source connector's failed record becomes in its dead letter queue.

Kafka Connect has no dead letter queue for source connectors; connectrt writes the failed
:class:`~connectrt.api.records.SourceRecord` as a JSON object (a connectrt format):

* ``topic``, ``kafka_partition``, ``source_partition``, ``source_offset``, ``timestamp``;
* ``key``, ``value`` and ``headers`` (``[{"key", "value"}]``) as plain JSON for people to read
  (Structs as objects, bytes as text);
* ``stage``: where it failed. A record that failed in ``TRANSFORMATION`` is the record as
  polled, before the transforms; one that failed in a converter or in ``KAFKA_PRODUCE`` has
  been transformed already;
* ``connect``: ``{"key", "value"}``, each Kafka Connect's JsonConverter envelope
  (``{"schema", "payload"}``) of a key or value that has a schema, so that a replay gets the
  same Connect data back (schema, Structs, logical types, bytes). Left out for schemaless data
  and for data the envelope cannot hold (e.g. a Struct missing a required field).

:func:`source_record_document` writes it (the task error handler, replay runs);
:func:`source_record_from_document` reads it back for a replay.
Thread-safe: each thread uses its own envelope converter.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

import orjson

from connectrt.api.records import Header, SourceRecord
from connectrt.converters.json import JsonConverter
from connectrt.data.schema import Schema
from connectrt.errors import ConnectError

__all__ = ["UnreadableDocument", "source_record_document", "source_record_from_document"]


class UnreadableDocument(ConnectError):
    """A DLQ record that is not a source record document."""


_local = threading.local()


def _envelopes() -> JsonConverter:
    converter: JsonConverter | None = getattr(_local, "converter", None)
    if converter is None:
        converter = JsonConverter()
        converter.configure({"schemas.enable": "true"}, is_key=False)
        _local.converter = converter
    return converter


def _envelope(topic: str | None, schema: Schema | None, value: Any) -> orjson.Fragment | None:
    if schema is None:
        return None
    try:
        data = _envelopes().from_connect_data(topic or "", schema, value)
    except Exception:  # the value does not fit its schema: only the plain view is kept
        return None
    return None if data is None else orjson.Fragment(data)


def _plain(value: Any) -> Any:
    """A JSON-friendly view of Connect data (Structs as dicts, bytes as text)."""
    to_dict = getattr(value, "to_dict", None)
    if callable(to_dict):
        return to_dict()
    if isinstance(value, bytes | bytearray):
        return bytes(value).decode("utf-8", errors="replace")
    return value


def source_record_document(record: Any, stage: str | None = None) -> bytes:
    """The DLQ value of a failed source record (``{}`` for no record)."""
    if record is None:
        return b"{}"
    topic = getattr(record, "topic", None)
    headers = [
        {"key": h.key, "value": _plain(h.value)} for h in (getattr(record, "headers", None) or [])
    ]
    document: dict[str, Any] = {
        "topic": topic,
        "kafka_partition": getattr(record, "kafka_partition", None),
        "source_partition": getattr(record, "source_partition", None),
        "source_offset": getattr(record, "source_offset", None),
        "key": _plain(getattr(record, "key", None)),
        "value": _plain(getattr(record, "value", None)),
        "timestamp": getattr(record, "timestamp", None),
        "headers": headers,
    }
    if stage is not None:
        document["stage"] = stage
    connect = {
        "key": _envelope(topic, getattr(record, "key_schema", None), getattr(record, "key", None)),
        "value": _envelope(
            topic, getattr(record, "value_schema", None), getattr(record, "value", None)
        ),
    }
    if any(v is not None for v in connect.values()):
        document["connect"] = {k: v for k, v in connect.items() if v is not None}
    return orjson.dumps(document, default=str, option=orjson.OPT_NON_STR_KEYS)


def _connect_data(topic: str, document: Mapping[str, Any], field: str) -> tuple[Schema | None, Any]:
    envelope = (document.get("connect") or {}).get(field)
    if envelope is None:
        return None, document.get(field)
    try:
        schema, value = _envelopes().to_connect_data(topic, orjson.dumps(envelope))
    except Exception as e:
        raise UnreadableDocument(f"its {field} envelope cannot be read: {e}") from e
    return schema, value


def source_record_from_document(value: bytes | None) -> tuple[SourceRecord, str | None]:
    """The source record a DLQ document holds, and the stage it failed in (None when the
    document does not say). Raises :class:`UnreadableDocument`."""
    try:
        document = orjson.loads(value or b"")
    except orjson.JSONDecodeError as e:
        raise UnreadableDocument(f"not JSON: {e}") from None
    if not isinstance(document, dict):
        raise UnreadableDocument("not a JSON object")
    topic = document.get("topic")
    if not isinstance(topic, str) or not topic:
        raise UnreadableDocument("no topic")
    partition = document.get("kafka_partition")
    timestamp = document.get("timestamp")
    key_schema, key = _connect_data(topic, document, "key")
    value_schema, record_value = _connect_data(topic, document, "value")
    headers = [
        Header(str(h.get("key")), h.get("value"))
        for h in document.get("headers") or []
        if isinstance(h, dict) and h.get("key") is not None
    ]
    record = SourceRecord(
        document.get("source_partition"),
        document.get("source_offset"),
        topic,
        partition if isinstance(partition, int) and not isinstance(partition, bool) else None,
        key_schema,
        key,
        value_schema,
        record_value,
        timestamp if isinstance(timestamp, int) and not isinstance(timestamp, bool) else None,
        headers or None,
    )
    stage = document.get("stage")
    return record, stage if isinstance(stage, str) else None
