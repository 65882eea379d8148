"""Fitting dead letter queue records into the DLQ topic: its size limit, and truncation.

A record that failed can be larger than its dead letter queue topic accepts (a 5 MB malformed
record consumed from a topic allowing 8 MB, a DLQ topic at the default 1 MB). Writing it as it
is would fail the produce (``MSG_SIZE_TOO_LARGE``) and with it a task whose error policy
tolerates the record. So the DLQ producer is sized from the topic's limit and a record that does
not fit is written truncated:

* :func:`topic_record_limit` finds the limit: the topic's ``max.message.bytes`` (describe
  configs), else the broker's ``message.max.bytes``, else Kafka's default
  (:data:`KAFKA_DEFAULT_MAX_MESSAGE_BYTES`); :func:`sized_producer_config` caps the producer's
  ``message.max.bytes`` and ``batch.size`` to it (never above what the config already says).
* :func:`fit_record` returns a record that fits: unchanged when it does; otherwise with
  :data:`TRUNCATED_HEADER` (``__connect.errors.truncated``: the original record's size in
  bytes, key + value + headers as counted here) and the original ``__connect.errors.topic``,
  ``.partition`` and ``.offset`` headers (added even when context headers are off, so the
  truncated copy always names its original), and the rest cut to fit: those headers are kept
  whole, the key, the value and the other header values share what is left, the smallest kept
  whole and the largest cut to a common length (a prefix of their bytes). If the header names
  alone do not fit, the other headers are dropped.

Sizes are counted as a one-record batch of Kafka's record format v2 at its widest (varints at
their maximum length), uncompressed: a record that fits here fits in the topic. Pure functions
but :func:`topic_record_limit` (one admin request or two); thread-safe.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

from connectrt.runtime.clients.kafka import ConfigResource, KafkaAdmin, ResourceType
from connectrt.runtime.tasks.dlq_headers import CONTEXT_PREFIX, RawHeaders

__all__ = [
    "KAFKA_DEFAULT_MAX_MESSAGE_BYTES",
    "TRUNCATED_HEADER",
    "FittedRecord",
    "fit_record",
    "record_size",
    "sized_producer_config",
    "topic_record_limit",
]

log = logging.getLogger(__name__)

KAFKA_DEFAULT_MAX_MESSAGE_BYTES = 1048588
"""Kafka's default ``message.max.bytes`` (broker) and ``max.message.bytes`` (topic)."""

TRUNCATED_HEADER = CONTEXT_PREFIX + "truncated"
"""On a DLQ record cut to fit its topic: the original record's size in bytes."""

_ORIGIN_FIELDS = ("topic", "partition", "offset")
_BATCH_OVERHEAD = 61  # a record batch's header (format v2)
# length, attributes, timestamp delta, offset delta, key length, value length, header count
_RECORD_OVERHEAD = 5 + 1 + 10 + 5 + 5 + 5 + 5
_HEADER_OVERHEAD = 5 + 5  # name length, value length

FittedRecord = tuple[bytes | None, bytes | None, RawHeaders]
"""A DLQ record's key, value and headers."""


def _header_size(name: str, value: bytes | None) -> int:
    return _HEADER_OVERHEAD + len(name.encode()) + (len(value) if value else 0)


def record_size(key: bytes | None, value: bytes | None, headers: Sequence[Any]) -> int:
    """The size of a one-record batch holding this record, at most (see the module doc)."""
    return (
        _BATCH_OVERHEAD
        + _RECORD_OVERHEAD
        + (len(key) if key else 0)
        + (len(value) if value else 0)
        + sum(_header_size(name, v) for name, v in headers)
    )


def _common_cap(lengths: Sequence[int], budget: int) -> int:
    """The largest ``cap`` with ``sum(min(n, cap) for n in lengths) <= budget``."""
    remaining, left = budget, len(lengths)
    for n in sorted(lengths):
        if n * left <= remaining:  # this one (and every smaller one) is kept whole
            remaining -= n
            left -= 1
        else:
            return remaining // left
    return max(lengths, default=0)


def fit_record(
    key: bytes | None,
    value: bytes | None,
    headers: RawHeaders,
    limit: int,
    origin: tuple[str | None, int | None, int | None],
) -> tuple[FittedRecord, int | None]:
    """The record as it can be written to a topic of ``limit`` bytes, and its original size
    when it had to be truncated (None: unchanged). ``origin`` is the original record's topic,
    partition and offset (None where unknown), named in headers of a truncated copy."""
    size = record_size(key, value, headers)
    if size <= limit:
        return (key, value, headers), None
    present = {name for name, _ in headers}
    essential: RawHeaders = [
        (CONTEXT_PREFIX + field, str(v).encode())
        for field, v in zip(_ORIGIN_FIELDS, origin, strict=True)
        if v is not None and CONTEXT_PREFIX + field not in present
    ]
    essential.append((TRUNCATED_HEADER, str(size).encode()))
    keep = {CONTEXT_PREFIX + field for field in _ORIGIN_FIELDS}
    kept = [(n, v) for n, v in headers if n in keep]
    others = [(n, v) for n, v in headers if n not in keep]
    fixed = _BATCH_OVERHEAD + _RECORD_OVERHEAD
    fixed += sum(_header_size(n, v) for n, v in (*kept, *essential))
    names = sum(_header_size(n, None) for n, _ in others)
    if fixed + names > limit:
        others = []  # even their names do not fit: only the essential headers stay
        names = 0
    budget = max(0, limit - fixed - names)
    cap = _common_cap(
        [len(key or b""), len(value or b""), *(len(v or b"") for _, v in others)], budget
    )

    def cut(data: bytes | None) -> bytes | None:
        return None if data is None else bytes(data[:cap])

    fitted_headers = [*kept, *((n, cut(v)) for n, v in others), *essential]
    return (cut(key), cut(value), fitted_headers), size


def topic_record_limit(admin: KafkaAdmin, topic: str, timeout: float = 15.0) -> int:
    """The largest record batch ``topic`` accepts: its ``max.message.bytes``, else (a broker
    that does not describe it, or describe configs refused) the broker's
    ``message.max.bytes``, else :data:`KAFKA_DEFAULT_MAX_MESSAGE_BYTES`."""
    value = _described(admin, ConfigResource(ResourceType.TOPIC, topic), "max.message.bytes")
    if value is None:
        try:
            brokers = list(admin.list_topics(timeout=timeout).brokers)
        except Exception as e:
            log.debug("Could not list the brokers to read message.max.bytes: %s", e)
            brokers = []
        if brokers:
            resource = ConfigResource(ResourceType.BROKER, str(brokers[0]))
            value = _described(admin, resource, "message.max.bytes")
    if value is None:
        return KAFKA_DEFAULT_MAX_MESSAGE_BYTES
    return value


def _described(admin: KafkaAdmin, resource: ConfigResource, name: str) -> int | None:
    """One config value of ``resource`` as a positive int, or None (absent or unreadable)."""
    try:
        futures = admin.describe_configs([resource], request_timeout=15)
        entries = next(iter(futures.values())).result(15)
    except Exception as e:
        log.debug("Could not describe %s to read %s: %s", resource, name, e)
        return None
    entry = entries.get(name)
    try:
        value = int(entry.value) if entry is not None and entry.value is not None else 0
    except ValueError:
        return None
    return value if value > 0 else None


def sized_producer_config(config: Mapping[str, Any], limit: int) -> tuple[dict[str, Any], int]:
    """A DLQ producer's config capped to a topic ``limit``, and the record size it allows:
    ``message.max.bytes`` and ``batch.size`` at most ``limit`` (lower if already set lower),
    so the producer accepts a record that fits the topic and never batches several into one
    the topic refuses."""
    out = dict(config)
    allowed = min(limit, int(out.get("message.max.bytes", limit)))
    out["message.max.bytes"] = allowed
    out["batch.size"] = min(allowed, int(out.get("batch.size", allowed)))
    return out, allowed
