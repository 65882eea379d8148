"""Consumed Kafka messages -> :class:`SinkRecord` s, one by one: the record strategy of sink
conversion (:mod:`connectrt.runtime.sink.conversion`), shared with the Spark bridge's reader.

:func:`sink_record` is the one place a consumed message becomes a ``SinkRecord``;
:func:`connect_headers` the one place its headers are converted.
:func:`message_to_record` is the plain conversion (any converter error propagates);
:func:`message_to_record_tolerant` converts stage by stage (KEY_CONVERTER, VALUE_CONVERTER,
HEADER_CONVERTER) through an :class:`~connectrt.runtime.tasks.error_handling.ErrorHandler`, so a
failure is retried, tolerated, logged or sent to the dead letter queue as ``errors.*`` says.
:class:`RecordConversion` converts a batch with the plain path per record and falls back to the
tolerant one for a record that raised. Stateless apart from the converters; safe from any
thread that owns the converters.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from connectrt.api.converter import Converter, HeaderConverter
from connectrt.api.records import SINK_FILLER, Header, SinkRecord, TimestampType
from connectrt.data import Schema
from connectrt.runtime.metrics import TaskMetrics
from connectrt.runtime.tasks.error_handling import ErrorHandler
from connectrt.runtime.tasks.runner import TaskConverters, TaskStage, class_path

__all__ = [
    "TIMESTAMP_TYPES",
    "RecordConversion",
    "connect_headers",
    "message_to_record",
    "message_to_record_tolerant",
    "sink_record",
]

TIMESTAMP_TYPES = (
    TimestampType.NO_TIMESTAMP_TYPE,
    TimestampType.CREATE_TIME,
    TimestampType.LOG_APPEND_TIME,
)
"""Connect's timestamp type by librdkafka's ``msg.timestamp()[0]`` (0, 1, 2)."""

_BYTES = Schema.OPTIONAL_BYTES_SCHEMA


_new_sink_record: Callable[..., SinkRecord] = (
    SinkRecord if SINK_FILLER is None else SINK_FILLER.make
)
"""``SinkRecord(...)`` given all 13 fields; the C extension's ``make`` stores them without the
call machinery of the Python ``__init__`` (the original coordinates are given: nothing for
``__init__`` to default)."""


def sink_record(
    msg: Any, key: tuple[Any, Any], value: tuple[Any, Any], headers: list[Header] | None
) -> SinkRecord:
    """The record of consumed message ``msg`` with its converted ``key`` and ``value``
    (``(schema, value)`` pairs) and ``headers``; its original coordinates are its own."""
    topic = msg.topic()
    partition = msg.partition()
    offset = msg.offset()
    ts_type, ts = msg.timestamp()
    return _new_sink_record(
        topic,
        partition,
        key[0],
        key[1],
        value[0],
        value[1],
        offset,
        ts if ts_type else None,
        TIMESTAMP_TYPES[ts_type],
        headers,
        topic,
        partition,
        offset,
    )


def connect_headers(
    to_header: Callable[[str, str, Any], tuple[Any, Any]], topic: str, raw: Any
) -> list[Header]:
    """A message's raw ``(key, bytes)`` headers converted by a header converter's
    ``to_connect_header``."""
    out = []
    for hk, hv in raw:
        hs, hval = to_header(topic, hk, hv)
        out.append(Header(hk, hval, hs))
    return out


def message_to_record(
    msg: Any, key: Converter, value: Converter, header: HeaderConverter
) -> SinkRecord:
    """Convert ``msg`` with the three converters; any converter error propagates."""
    topic = msg.topic()
    raw_headers = msg.headers()
    headers = connect_headers(header.to_connect_header, topic, raw_headers) if raw_headers else None
    return sink_record(
        msg,
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
    raw_headers = msg.headers()
    if raw_headers:
        ok, headers = errors.call(
            TaskStage.HEADER_CONVERTER,
            class_path(header),
            lambda: connect_headers(header.to_connect_header, topic, raw_headers),
            raw=msg,
        )
        if not ok:
            return None
    return sink_record(msg, key_part, value_part, headers)


class RecordConversion:
    """The record strategy: a batch of consumed messages (no error events) -> ``SinkRecord`` s,
    one by one; a message a converter fails on goes through the error policy (retried,
    tolerated, dead letter queue) and, if skipped, counts in ``records_skipped``.

    A converter that passes bytes through (``BYTES_PASSTHROUGH``) is not called. Used on the
    task thread only.
    """

    def __init__(self, converters: TaskConverters, errors: ErrorHandler, metrics: TaskMetrics):
        self._converters = converters
        self._errors = errors
        self._metrics = metrics

    def convert(self, msgs: list[Any]) -> list[SinkRecord]:
        """The records of ``msgs``, without those skipped under the error policy."""
        conv = self._converters
        key_conv = None if conv.key.BYTES_PASSTHROUGH else conv.key.to_connect_data
        value_conv = None if conv.value.BYTES_PASSTHROUGH else conv.value.to_connect_data
        to_header = conv.header.to_connect_header
        records: list[SinkRecord] = []
        append = records.append
        for msg in msgs:
            try:
                topic = msg.topic()
                raw_headers = msg.headers()
                append(
                    sink_record(
                        msg,
                        (_BYTES, msg.key()) if key_conv is None else key_conv(topic, msg.key()),
                        (_BYTES, msg.value())
                        if value_conv is None
                        else value_conv(topic, msg.value()),
                        connect_headers(to_header, topic, raw_headers) if raw_headers else None,
                    )
                )
            except Exception:
                # Slow path for this one record: retries, tolerance, DLQ per stage.
                record = message_to_record_tolerant(
                    msg, conv.key, conv.value, conv.header, self._errors
                )
                if record is not None:
                    append(record)
                else:
                    self._metrics.records_skipped += 1
        return records
