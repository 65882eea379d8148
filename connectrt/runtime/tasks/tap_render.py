"""What the record inspector (tap) shows of a record: a snapshot taken on the task thread, and
its rendering as JSON text, off it.

Two steps, so the task thread does the least:

* :func:`snapshot_message`, :func:`snapshot_record` (on the task thread, for the few sampled
  records only): the record's coordinates, key, value, headers and schemas as a tree of plain
  values that no later change to the record can reach (a :class:`~connectrt.data.Struct`
  becomes a dict, containers are copied and cut at :data:`MAX_ITEMS` entries and
  :data:`MAX_DEPTH` levels); ``bytes`` and ``str`` are immutable and kept as they are, uncut;
* :func:`render` (any thread): the tree as one line of JSON, every secret the worker knows
  hidden in every encoding. Bytes are shown as ``{"base64": ..., "text": ...}`` (``text`` when
  they are UTF-8) and redacted as UTF-8 *before* they are base64-encoded (a
  secret inside base64 has no fixed form, so the redactor could not find it there), strings
  are redacted whole before being cut to :data:`MAX_CHARS`, bytes cut to :data:`MAX_BYTES`
  (each with a marker), and the final text is redacted once more (JSON-escaped forms).

Pure functions; thread-safe.
"""

from __future__ import annotations

import base64
import datetime
import decimal
import json
from collections.abc import Mapping
from typing import Any, Protocol

from connectrt.api.records import ConnectRecord, SinkRecord, SourceRecord
from connectrt.data import Schema, Struct

__all__ = [
    "MAX_BYTES",
    "MAX_CHARS",
    "MAX_DEPTH",
    "MAX_ITEMS",
    "TextRedactor",
    "render",
    "schema_json",
    "snapshot_message",
    "snapshot_record",
    "snapshot_value",
]

MAX_ITEMS = 100
"""Entries kept of a list or map (the rest counted in a ``"…"`` marker)."""
MAX_DEPTH = 16
"""Nesting levels kept; deeper values are shown as a marker."""
MAX_CHARS = 2048
"""Characters kept of a string (the rest counted in a marker)."""
MAX_BYTES = 1024
"""Bytes kept of a binary value before it is base64-encoded."""


class TextRedactor(Protocol):
    """What :func:`render` needs of :class:`~connectrt.runtime.redaction.Redactor`."""

    def redact(self, text: str) -> str: ...

    def redact_bytes(self, data: bytes) -> bytes: ...


def schema_json(schema: Schema | None, depth: int = 0) -> Any:
    """``schema`` as Kafka Connect's JSON envelope describes one (type, optional, name,
    version, parameters, fields, keys, values), or None."""
    if schema is None:
        return None
    if depth > MAX_DEPTH:
        return {"type": str(schema.type.value), "…": "nested too deep"}
    out: dict[str, Any] = {"type": str(schema.type.value), "optional": schema.optional}
    if schema.name is not None:
        out["name"] = schema.name
    if schema.version is not None:
        out["version"] = schema.version
    if schema.parameters:
        out["parameters"] = dict(schema.parameters)
    if schema.fields:
        out["fields"] = [
            {"field": f.name, **schema_json(f.schema, depth + 1)} for f in schema.fields
        ]
    if schema.key_schema is not None:
        out["keys"] = schema_json(schema.key_schema, depth + 1)
    if schema.value_schema is not None:
        out["values" if schema.key_schema is not None else "items"] = schema_json(
            schema.value_schema, depth + 1
        )
    return out


def snapshot_value(value: Any, depth: int = 0) -> Any:
    """``value`` as plain, unshared data (see the module docstring); bytes kept as bytes."""
    if value is None or isinstance(value, (str, bytes, bool, int, float)):
        return value
    if depth >= MAX_DEPTH:
        return "… nested too deep"
    if isinstance(value, (bytearray, memoryview)):
        return bytes(value)
    if isinstance(value, Struct):
        value = {f.name: value.get_without_default(f) for f in value.schema.fields}
    if isinstance(value, Mapping):
        out: dict[str, Any] = {}
        for i, (k, v) in enumerate(value.items()):
            if i == MAX_ITEMS:
                out["…"] = f"{len(value) - MAX_ITEMS} more entries"
                break
            out[k if isinstance(k, str) else repr(k)] = snapshot_value(v, depth + 1)
        return out
    if isinstance(value, (list, tuple, set, frozenset)):
        items = list(value)
        kept = [snapshot_value(v, depth + 1) for v in items[:MAX_ITEMS]]
        if len(items) > MAX_ITEMS:
            kept.append(f"… {len(items) - MAX_ITEMS} more items")
        return kept
    if isinstance(value, (datetime.date, datetime.time, datetime.datetime)):
        return value.isoformat()
    if isinstance(value, decimal.Decimal):
        return str(value)
    return repr(value)


def _headers_of_message(raw: Any) -> list[dict[str, Any]] | None:
    if not raw:
        return None
    return [{"key": k, "value": v} for k, v in raw]


def snapshot_message(msg: Any, stage: str, task: int) -> dict[str, Any]:
    """A consumed Kafka message as it was read (bytes; no schema): a sink's ``read`` stage."""
    ts_type, ts = msg.timestamp()
    return {
        "stage": stage,
        "task": task,
        "topic": msg.topic(),
        "partition": msg.partition(),
        "offset": msg.offset(),
        "timestamp": ts if ts_type else None,
        "key": msg.key(),
        "value": msg.value(),
        "headers": _headers_of_message(msg.headers()),
    }


def snapshot_record(record: ConnectRecord, stage: str, task: int) -> dict[str, Any]:
    """A Connect record (data and schemas): a sink's converted and transformed records and
    what its ``put`` gets; a source's polled and transformed records."""
    out: dict[str, Any] = {
        "stage": stage,
        "task": task,
        "topic": record.topic,
        "partition": record.kafka_partition,
        "offset": record.kafka_offset if isinstance(record, SinkRecord) else None,
        "timestamp": record.timestamp,
        "key": snapshot_value(record.key),
        "key_schema": schema_json(record.key_schema),
        "value": snapshot_value(record.value),
        "value_schema": schema_json(record.value_schema),
        "headers": None,
    }
    if record.headers:
        out["headers"] = [
            {"key": h.key, "value": snapshot_value(h.value), "schema": schema_json(h.schema)}
            for h in record.headers
        ]
    if isinstance(record, SourceRecord):
        out["source_partition"] = snapshot_value(record.source_partition)
        out["source_offset"] = snapshot_value(record.source_offset)
    return out


def _shown(value: Any, redactor: TextRedactor) -> Any:
    if isinstance(value, bytes):
        data = redactor.redact_bytes(value)
        kept = data[:MAX_BYTES]
        shown: dict[str, Any] = {"base64": base64.b64encode(kept).decode("ascii")}
        try:
            shown["text"] = kept.decode("utf-8")  # readable when it is UTF-8 text
        except UnicodeDecodeError:
            pass
        if len(data) > MAX_BYTES:
            shown["truncated"] = f"{len(data) - MAX_BYTES} more bytes"
        return shown
    if isinstance(value, str):
        text = redactor.redact(value)
        if len(text) > MAX_CHARS:
            return text[:MAX_CHARS] + f"… [truncated: {len(text) - MAX_CHARS} more characters]"
        return text
    if isinstance(value, dict):
        return {redactor.redact(k): _shown(v, redactor) for k, v in value.items()}
    if isinstance(value, list):
        return [_shown(v, redactor) for v in value]
    return value


def render(snapshot: Mapping[str, Any], redactor: TextRedactor) -> str:
    """``snapshot`` as one line of JSON with every known secret hidden (module docstring)."""
    text = json.dumps(_shown(dict(snapshot), redactor), ensure_ascii=False, default=repr)
    return redactor.redact(text)
