"""Consumed messages -> a :class:`~connectrt.api.SinkRecordBatch`, without a record each.

The sink runner's hot path. Per message it costs a few C-level calls, one pass over the batch
each (``error()``, ``partition()``; ``headers()`` too when the header converter may fail;
through the C extension's ``method_column`` where it is in use);
everything else is a column of the batch, built when the task first reads it (raw keys and
values, coordinates, timestamps, headers converted by a header converter that cannot fail) or,
for the converted keys and values, once per batch by the converters' ``to_connect_columns``
(JSON: one ``map`` over orjson; ByteArray: nothing at all).

* :func:`split_errors` takes the consumer's error events out of a batch;
* :func:`partition_positions` finds, per partition, the first offset of a batch and the one
  after its last record, from the positions of each partition's first and last message (a
  partition's messages come in offset order within a ``consume()`` result);
* :class:`MessageBatchBuilder` makes the batch, or returns None when a converter failed on some
  message: the runner then converts that batch message by message under the error policy.

Stateless apart from the converters it holds; used on the task thread only.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from operator import itemgetter, methodcaller
from typing import Any

from connectrt.api.converter import ConnectColumns, Converter
from connectrt.api.record_batch import SinkRecordBatch
from connectrt.api.records import Header
from connectrt.data import Schema
from connectrt.runtime.clients.kafka import Message
from connectrt.runtime.sink.message_records import TIMESTAMP_TYPES, connect_headers
from connectrt.runtime.tasks.runner import TaskConverters
from connectrt.speedups import SPEEDUPS

__all__ = ["MessageBatchBuilder", "message_accessors", "partition_positions", "split_errors"]

# librdkafka's Message accessors, unbound: ``map`` calls them without a Python frame each.
# Messages of another class (the in-memory fake of connectrt.testing) are read through
# ``methodcaller`` instead (:func:`message_accessors`, once per batch).
_C_ACCESSORS = (
    Message.error,
    Message.topic,
    Message.partition,
    Message.offset,
    Message.key,
    Message.value,
    Message.timestamp,
    Message.headers,
)
_ANY_ACCESSORS = tuple(
    methodcaller(name)
    for name in ("error", "topic", "partition", "offset", "key", "value", "timestamp", "headers")
)
_first = itemgetter(0)
_second = itemgetter(1)

Positions = dict[tuple[str, int], int]


def _column_py(method: Callable[[Any], Any], msgs: list[Any] | tuple[Any, ...]) -> tuple[Any, ...]:
    """``method`` of each message, as a tuple (the C extension's ``method_column`` calls a
    C accessor of librdkafka's Message without the call protocol around each call)."""
    return tuple(map(method, msgs))


_column: Callable[[Callable[[Any], Any], list[Any] | tuple[Any, ...]], tuple[Any, ...]] = (
    _column_py if SPEEDUPS is None else SPEEDUPS.method_column
)


def _any_py(method: Callable[[Any], Any], msgs: list[Any] | tuple[Any, ...]) -> bool:
    """Whether ``method`` of some message is true (the C extension's ``method_any`` does the
    same pass as ``method_column``, without a tuple)."""
    return any(map(method, msgs))


_any: Callable[[Callable[[Any], Any], list[Any] | tuple[Any, ...]], bool] = (
    _any_py if SPEEDUPS is None else SPEEDUPS.method_any
)


@functools.lru_cache(maxsize=16)
def _repeated(value: str | Schema, size: int) -> tuple[Any, ...]:
    """``(value,) * size`` for a topic or a fixed schema (hashed cheaply), kept for the next
    batch of that size and topic (a fresh tuple of 500 costs about 1 us to make and free)."""
    return (value,) * size


def message_accessors(msgs: Sequence[Any]) -> tuple[Callable[[Any], Any], ...]:
    """The eight accessors (error, topic, partition, offset, key, value, timestamp, headers)
    for the messages of a non-empty batch."""
    return _C_ACCESSORS if type(msgs[0]) is Message else _ANY_ACCESSORS


def split_errors(msgs: list[Any]) -> tuple[list[Any], list[Any]]:
    """(messages, error events) of a ``consume()`` result; the list itself when it holds no
    error (the usual case, found by one pass over the messages' ``error()``)."""
    if not msgs or not _any(message_accessors(msgs)[0], msgs):
        return msgs, []
    good: list[Any] = []
    bad: list[Any] = []
    for msg in msgs:
        (good if msg.error() is None else bad).append(msg)
    return good, bad


def partition_positions(
    msgs: list[Any], topic: str | None
) -> tuple[tuple[int, ...], Positions, Positions]:
    """Each message's partition (a tuple: the batch's column as it is), and per (topic,
    partition) of ``msgs`` (no error events) the first offset and the offset after the last.
    ``topic`` is the only topic the messages can come from, or None."""
    _, get_topic, get_partition = message_accessors(msgs)[:3]
    parts = _column(get_partition, msgs)
    keys: Sequence[Any] = parts
    if topic is None:
        keys = list(zip(map(get_topic, msgs), parts, strict=True))
    first: Positions = {}
    ends: Positions = {}
    if keys.count(keys[0]) == len(keys):  # one partition: the usual batch (a C-level count)
        tp = (topic, keys[0]) if topic is not None else keys[0]
        first[tp] = msgs[0].offset()
        ends[tp] = msgs[-1].offset() + 1
        return parts, first, ends
    last = len(keys) - 1
    backwards = keys[::-1]
    for key in set(keys):
        tp = (topic, key) if topic is not None else key
        first[tp] = msgs[keys.index(key)].offset()
        ends[tp] = msgs[last - backwards.index(key)].offset() + 1
    return parts, first, ends


def _kinds(kinds: tuple[int, ...], types: tuple[Any, ...]) -> tuple[Any, ...]:
    """Connect's timestamp types of librdkafka's timestamp kinds (of a non-empty batch); one
    C-level count when they are all the same (the usual batch: a topic's timestamp type)."""
    n = len(kinds)
    kind = kinds[0]
    if kinds.count(kind) == n:
        return (types[kind],) * n
    return tuple(map(types.__getitem__, kinds))


def _timestamp_columns_py(
    msgs: list[Any], timestamp: Callable[[Any], Any], types: tuple[Any, ...]
) -> tuple[tuple[Any, ...], tuple[Any, ...]]:
    """(timestamps, timestamp types) of messages, from ``timestamp`` (librdkafka's (kind, ms)
    pair per message; ``types[kind]`` its Connect type, no timestamp for kind 0). The pairs are
    dropped right away. The C extension's ``timestamp_columns`` does the same in one pass."""
    pairs = list(map(timestamp, msgs))
    kinds = tuple(map(_first, pairs))
    if 0 in kinds:  # a message without a timestamp
        return tuple(ts if kind else None for kind, ts in pairs), _kinds(kinds, types)
    return tuple(map(_second, pairs)), _kinds(kinds, types)


_timestamp_columns = _timestamp_columns_py if SPEEDUPS is None else SPEEDUPS.timestamp_columns


class _MessageColumns:
    """The columns of one batch read from its messages when first asked for, each at most once
    (a raw column serves as keys/values and as raw): one object and its bound methods per
    batch, where closures and partials cost about twice as much to make."""

    __slots__ = ("_key", "_keys", "_msgs", "_offset", "_times", "_timestamp", "_value", "_values")

    def __init__(self, msgs: list[Any], accessors: tuple[Callable[[Any], Any], ...]) -> None:
        self._msgs = msgs
        _, _, _, self._offset, self._key, self._value, self._timestamp, _ = accessors
        self._keys: tuple[Any, ...] | None = None
        self._values: tuple[Any, ...] | None = None
        self._times: tuple[tuple[Any, ...], tuple[Any, ...]] | None = None

    def raw_keys(self) -> tuple[Any, ...]:
        keys = self._keys
        if keys is None:
            keys = self._keys = _column(self._key, self._msgs)
        return keys

    def raw_values(self) -> tuple[Any, ...]:
        values = self._values
        if values is None:
            values = self._values = _column(self._value, self._msgs)
        return values

    def offsets(self) -> tuple[int, ...]:
        return _column(self._offset, self._msgs)

    def timestamps(self) -> tuple[Any, ...]:
        return self._timestamp_columns()[0]

    def timestamp_types(self) -> tuple[Any, ...]:
        return self._timestamp_columns()[1]

    def _timestamp_columns(self) -> tuple[tuple[Any, ...], tuple[Any, ...]]:
        times = self._times
        if times is None:
            times = self._times = _timestamp_columns(self._msgs, self._timestamp, TIMESTAMP_TYPES)
        return times


class MessageBatchBuilder:
    """Makes the batch ``put()`` receives from consumed messages (see the module docstring).

    ``topic`` is the one topic the task's messages can come from (its subscription names one
    topic and no pattern), or None.
    """

    def __init__(self, converters: TaskConverters, topic: str | None) -> None:
        self._key = converters.key
        self._value = converters.value
        self._header = converters.header
        # A header converter that cannot fail converts when the task reads headers; any other
        # converts before put(), so that a failure goes through the error policy.
        self._lazy_headers = converters.header.READ_NEVER_FAILS
        self._key_passthrough = converters.key.BYTES_PASSTHROUGH
        self._value_passthrough = converters.value.BYTES_PASSTHROUGH
        self._topic = topic

    def build(
        self, msgs: list[Any], partitions: Sequence[int], ends: Positions
    ) -> SinkRecordBatch | None:
        """The batch of ``msgs`` (no error events), with their ``partitions`` and
        :func:`partition_positions`' ``ends``; None when a converter raised for one of them
        (nothing was delivered: convert this batch message by message instead)."""
        n = len(msgs)
        accessors = message_accessors(msgs)
        topic = self._topic
        topics: Any
        if topic is not None:
            topics = _repeated(topic, n)
        else:
            topics = _column(accessors[1], msgs)
            if topics.count(topics[0]) == n:
                topic = topics[0]

        lazy = _MessageColumns(msgs, accessors)
        raw_keys, raw_values = lazy.raw_keys, lazy.raw_values
        try:
            if self._key_passthrough:
                key_schemas, keys = _repeated(Schema.OPTIONAL_BYTES_SCHEMA, n), raw_keys
            else:
                key_schemas, keys = self._columns(self._key, raw_keys, topic, topics)
            if self._value_passthrough:
                value_schemas, values = _repeated(Schema.OPTIONAL_BYTES_SCHEMA, n), raw_values
            else:
                value_schemas, values = self._columns(self._value, raw_values, topic, topics)
            headers: Any = None
            if self._lazy_headers:
                headers = functools.partial(self._headers, msgs)
            elif _any(accessors[7], msgs):
                headers = self._headers(msgs)
        except Exception:
            return None

        return SinkRecordBatch.from_columns(
            n,
            topics=topics,
            partitions=partitions,
            offsets=lazy.offsets,
            key_schemas=key_schemas,
            keys=keys,
            value_schemas=value_schemas,
            values=values,
            timestamps=lazy.timestamps,
            timestamp_types=lazy.timestamp_types,
            headers=headers,
            raw_keys=raw_keys,
            raw_values=raw_values,
            next_offsets=ends,
        )

    @staticmethod
    def _columns(
        converter: Converter,
        raw: Callable[[], tuple[Any, ...]],
        topic: str | None,
        topics: Sequence[str],
    ) -> tuple[Any, Any]:
        """(schemas, values) of the keys or values of a converter that does not pass bytes
        through (those stay lazy: :meth:`build`), converted now (a failure must be known
        before ``put()``)."""
        data = raw()
        if topic is not None:
            return converter.to_connect_columns(topic, data)
        # Several topics in one batch: convert each topic's messages together.
        by_topic: dict[str, list[int]] = {}
        for i, t in enumerate(topics):
            by_topic.setdefault(t, []).append(i)
        schemas: list[Any] = [None] * len(data)
        values: list[Any] = [None] * len(data)
        for t, indices in by_topic.items():
            part: ConnectColumns = converter.to_connect_columns(t, [data[i] for i in indices])
            for i, schema, value in zip(indices, part.schemas, part.values, strict=True):
                schemas[i] = schema
                values[i] = value
        return schemas, values

    def _headers(self, msgs: list[Any]) -> tuple[list[Header] | None, ...]:
        """Each message's headers, converted (None for a message without headers)."""
        raw_headers = _column(message_accessors(msgs)[7], msgs)
        if not any(raw_headers):
            return (None,) * len(msgs)
        to_header = self._header.to_connect_header
        return tuple(
            connect_headers(to_header, msg.topic(), raw) if raw else None
            for msg, raw in zip(msgs, raw_headers, strict=True)
        )
