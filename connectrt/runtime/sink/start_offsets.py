"""Where a newly assigned partition without a committed offset starts, resolved before librdkafka
is asked to start it.

librdkafka starts a partition assigned without an offset by fetching the group's committed
offset; when the group has none, it applies ``auto.offset.reset`` only after a fixed 100 ms
backoff (its offset reset treats "no committed offset" as an error and delays the ListOffsets
request that resolves the logical offset; no setting changes it). Every new sink connector paid
it, and so did every partition a group saw for the first time: the first record reached the
task 0.20-0.26 s after the connector was created, against 0.07 s for Kafka Connect, whose Java
consumer resets at once (``bench/bench_vs_kafka_connect.py``, docs/benchmarks.md).

:func:`start_unstarted` asks the group coordinator for the committed offsets of the partitions
being assigned without an offset (one OffsetFetch round trip, on the task thread, inside the
rebalance callback) and gives those the group has none for the logical offset of the
consumer's ``auto.offset.reset`` (``OFFSET_BEGINNING`` or ``OFFSET_END``), which librdkafka
resolves without a backoff. It changes where nothing starts: a partition with a committed offset
is left to librdkafka, which starts it there as before, and so is every partition when the
policy is ``error`` (a missing offset fails, as configured) or when the query fails or times
out (the default path: the same start, 100 ms later). Ownership makes the answer safe to act
on: the partitions are this member's from the moment the group assigned them, so no one else
commits them meanwhile.

Threading: called on the task thread (inside ``consume()``, where librdkafka runs the rebalance
callbacks).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from connectrt.runtime.clients.kafka import (
    OFFSET_BEGINNING,
    OFFSET_END,
    OFFSET_INVALID,
    OFFSET_STORED,
    KafkaConsumer,
    TopicPartition,
)

__all__ = ["QUERY_TIMEOUT_S", "reset_offset", "start_unstarted"]

log = logging.getLogger(__name__)

QUERY_TIMEOUT_S = 2.0
"""How long the committed-offset query may block the rebalance callback; past it, librdkafka's
own path starts the partitions."""

_RESETS = {
    "smallest": OFFSET_BEGINNING,
    "earliest": OFFSET_BEGINNING,
    "beginning": OFFSET_BEGINNING,
    "largest": OFFSET_END,
    "latest": OFFSET_END,
    "end": OFFSET_END,
}
"""librdkafka's ``auto.offset.reset`` values and the logical offset each starts from (its
``error``, and Java's ``none``, have none)."""


def reset_offset(consumer_config: Mapping[str, Any]) -> int | None:
    """The logical offset a partition without a committed offset starts from under the
    consumer's ``auto.offset.reset``, or None when a missing offset must fail the partition
    instead, or when the setting is absent (the client's own default applies; the runtime's
    consumers always have it: ``earliest``, as Kafka Connect's sinks)."""
    policy = consumer_config.get("auto.offset.reset")
    return None if policy is None else _RESETS.get(str(policy).strip().lower())


def start_unstarted(
    consumer: KafkaConsumer,
    partitions: list[TopicPartition],
    reset: int | None,
    timeout: float = QUERY_TIMEOUT_S,
) -> int:
    """Give each of ``partitions`` that is assigned without an offset (librdkafka's
    ``OFFSET_INVALID``, or ``OFFSET_STORED``: "the committed one") and has no committed offset
    the logical offset ``reset``, in place (see the module docstring); any other offset (a
    rewind, a logical or tail offset) is kept. Returns how many it started so; 0 without
    touching anything when ``reset`` is None or the query fails."""
    if reset is None:
        return 0
    todo = [p for p in partitions if p.offset in (OFFSET_INVALID, OFFSET_STORED)]
    if not todo:
        return 0
    try:
        committed = consumer.committed(
            [TopicPartition(p.topic, p.partition) for p in todo], timeout=timeout
        )
    except Exception as e:  # a timeout or an unavailable coordinator: librdkafka's own path
        log.debug("Committed offsets of %d assigned partition(s) not known (%r)", len(todo), e)
        return 0
    none = {(c.topic, c.partition) for c in committed if c.error is None and c.offset < 0}
    started = 0
    for p in todo:
        if (p.topic, p.partition) in none:
            p.offset = reset
            started += 1
    return started
