"""Consumed Kafka messages -> :class:`SinkRecord` s, shared by the sink task runner and the
Spark bridge's reader.

:func:`message_to_record` is the plain conversion (any converter error propagates);
:func:`message_to_record_tolerant` converts stage by stage (KEY_CONVERTER, VALUE_CONVERTER,
HEADER_CONVERTER) through an :class:`~connectrt.runtime.tasks.error_handling.ErrorHandler`, so a
failure is retried, tolerated, logged or sent to the dead letter queue as ``errors.*`` says.
Callers use the plain path per record and fall back to the tolerant one for a record that
raised. Stateless; safe from any thread that owns the converters.
"""

from __future__ import annotations

from typing import Any

from connectrt.api.converter import Converter, HeaderConverter
from connectrt.api.records import Header, SinkRecord, TimestampType
from connectrt.runtime.tasks.error_handling import ErrorHandler
from connectrt.runtime.tasks.runner import TaskStage, class_path

__all__ = ["TIMESTAMP_TYPES", "message_to_record", "message_to_record_tolerant"]

TIMESTAMP_TYPES = (
    TimestampType.NO_TIMESTAMP_TYPE,
    TimestampType.CREATE_TIME,
    TimestampType.LOG_APPEND_TIME,
)
"""Connect's timestamp type by librdkafka's ``msg.timestamp()[0]`` (0, 1, 2)."""


def _record(msg: Any, topic: str, key: Any, value: Any, headers: list[Header] | None) -> SinkRecord:
    ts_type, ts = msg.timestamp()
    return SinkRecord(
        topic,
        msg.partition(),
        key[0],
        key[1],
        value[0],
        value[1],
        msg.offset(),
        ts if ts_type else None,
        TIMESTAMP_TYPES[ts_type],
        headers,
    )


def message_to_record(
    msg: Any, key: Converter, value: Converter, header: HeaderConverter
) -> SinkRecord:
    """Convert ``msg`` with the three converters; any converter error propagates."""
    topic = msg.topic()
    raw_headers = msg.headers()
    headers = None
    if raw_headers:
        to_header = header.to_connect_header
        headers = []
        for hk, hv in raw_headers:
            hs, hval = to_header(topic, hk, hv)
            headers.append(Header(hk, hval, hs))
    return _record(
        msg,
        topic,
        key.to_connect_data(topic, msg.key()),
        value.to_connect_data(topic, msg.value()),
        headers,
    )


def message_to_record_tolerant(
    msg: Any, key: Converter, value: Converter, header: HeaderConverter, errors: ErrorHandler
) -> SinkRecord | None:
    """Convert ``msg`` stage by stage under ``errors``; None when a stage's failure was
    tolerated (the record is skipped). Raises when the policy does not tolerate it."""
    topic = msg.topic()
    ok, key_part = errors.call(
        TaskStage.KEY_CONVERTER,
        class_path(key),
        lambda: key.to_connect_data(topic, msg.key()),
        raw=msg,
    )
    if not ok:
        return None
    ok, value_part = errors.call(
        TaskStage.VALUE_CONVERTER,
        class_path(value),
        lambda: value.to_connect_data(topic, msg.value()),
        raw=msg,
    )
    if not ok:
        return None
    headers = None
    if msg.headers():

        def convert_headers() -> list[Header]:
            out = []
            for hk, hv in msg.headers():
                hs, hval = header.to_connect_header(topic, hk, hv)
                out.append(Header(hk, hval, hs))
            return out

        ok, headers = errors.call(
            TaskStage.HEADER_CONVERTER, class_path(header), convert_headers, raw=msg
        )
        if not ok:
            return None
    return _record(msg, topic, key_part, value_part, headers)
