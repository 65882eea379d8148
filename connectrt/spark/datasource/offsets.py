"""Kafka partitions, their offset bounds and offset ranges, with plain confluent-kafka.

End of partition: ListOffsets(LATEST) is not trusted. The embedded broker (Tansu) answers it
with the base offset of the last record batch + 1, so a reader trusting it never reads the
last batch. :func:`bounds` therefore assigns every non-empty partition one record before the
listed end, fetches to partition EOF and takes ``max(last offset + 1, fetch high watermark)``.
On Apache Kafka this confirms the listed end with one small fetch per partition.

Offsets travel as ``{"topic": {"partition": next_offset}}`` (JSON-serialisable; what Spark
stores in the checkpoint's offset log). Consumers here use ``assign()`` only, with a random
``group.id`` (confluent-kafka requires one) and never commit.

Not thread-safe: each caller owns its consumer.
"""

from __future__ import annotations

import re
import time
import uuid
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from confluent_kafka import Consumer, KafkaError, KafkaException
from confluent_kafka import TopicPartition as KafkaTopicPartition

from connectrt.api.config import ConfigError
from connectrt.errors import ConnectError
from connectrt.spark.datasource.options import BridgeOptions, OffsetSpec

__all__ = [
    "TP",
    "Offsets",
    "bounds",
    "consumer",
    "decode_offsets",
    "encode_offsets",
    "read_range",
    "resolve",
    "topic_partitions",
]

TP = tuple[str, int]
Offsets = dict[TP, int]
_EARLIEST, _LATEST = -2, -1


def consumer(options: BridgeOptions, probe: bool = False) -> Consumer:
    """An assign-only consumer; ``probe``: short fetch waits for end-of-partition probes."""
    conf: dict[str, Any] = {
        "group.id": f"connectrt-spark-{uuid.uuid4().hex[:12]}",
        "enable.auto.commit": False,
        "enable.partition.eof": True,
        "auto.offset.reset": "earliest",
        "fetch.queue.backoff.ms": 10,
    }
    conf.update(options.kafka)
    if probe:
        conf["fetch.wait.max.ms"] = 10
    return Consumer(conf)


def encode_offsets(offsets: Mapping[TP, int]) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    for (topic, partition), offset in sorted(offsets.items()):
        out.setdefault(topic, {})[str(partition)] = int(offset)
    return out


def decode_offsets(data: Mapping[str, Mapping[str, int]] | None) -> Offsets:
    return {(t, int(p)): int(o) for t, parts in (data or {}).items() for p, o in parts.items()}


def topic_partitions(c: Consumer, options: BridgeOptions, timeout: float = 15.0) -> list[TP]:
    """The subscribed partitions: the named topics (which must exist) or the pattern's."""
    if options.pattern is not None:
        md = c.list_topics(timeout=timeout)
        regex = re.compile(options.pattern)
        topics = sorted(t for t in md.topics if regex.fullmatch(t) and not t.startswith("__"))
    else:
        topics = list(options.topics)
        md = c.list_topics(timeout=timeout)
    out: list[TP] = []
    for topic in topics:
        meta = md.topics.get(topic)
        if meta is None or meta.error is not None or not meta.partitions:
            reason = meta.error if meta is not None and meta.error is not None else "not found"
            raise ConnectError(f"Topic {topic} cannot be read: {reason}")
        out.extend((topic, p) for p in sorted(meta.partitions))
    return out


def bounds(c: Consumer, tps: Iterable[TP], timeout: float = 15.0) -> dict[TP, tuple[int, int]]:
    """``{tp: (earliest, end)}`` with the end verified by reading to partition EOF."""
    listed: dict[TP, tuple[int, int]] = {}
    for topic, partition in tps:
        lo, hi = c.get_watermark_offsets(KafkaTopicPartition(topic, partition), timeout=timeout)
        listed[(topic, partition)] = (max(lo, 0), max(hi, 0))
    todo = {tp for tp, (lo, hi) in listed.items() if hi > lo}
    if not todo:
        return listed
    seen = {tp: listed[tp][1] for tp in todo}
    c.assign(
        [KafkaTopicPartition(t, p, max(listed[(t, p)][0], listed[(t, p)][1] - 1)) for t, p in todo]
    )
    try:
        deadline = time.monotonic() + timeout
        while todo:
            if time.monotonic() > deadline:
                raise ConnectError(f"No end of partition reached for {sorted(todo)}")
            for msg in c.consume(1000, 0.05):
                err = msg.error()
                tp = (msg.topic(), msg.partition())
                if err is not None:
                    if err.code() == KafkaError._PARTITION_EOF:
                        todo.discard(tp)
                        continue
                    raise ConnectError(f"Reading {tp[0]}[{tp[1]}] to its end failed: {err}")
                if msg.offset() + 1 > seen[tp]:
                    seen[tp] = msg.offset() + 1
    finally:
        c.unassign()
    out = dict(listed)
    for tp, end in seen.items():
        _, cached = c.get_watermark_offsets(KafkaTopicPartition(*tp), cached=True)
        out[tp] = (listed[tp][0], max(end, cached if cached and cached > 0 else 0))
    return out


def resolve(
    c: Consumer,
    spec: OffsetSpec,
    limits: Mapping[TP, tuple[int, int]],
    timeout: float = 15.0,
) -> Offsets:
    """Offsets for ``spec`` on every partition of ``limits`` (clamped to its bounds)."""
    if spec.kind == "earliest":
        return {tp: lo for tp, (lo, _) in limits.items()}
    if spec.kind == "latest":
        return {tp: hi for tp, (_, hi) in limits.items()}
    if spec.kind == "timestamp":
        query = [KafkaTopicPartition(t, p, spec.timestamp) for t, p in limits]
        try:
            found = c.offsets_for_times(query, timeout=timeout)
        except KafkaException as e:
            raise ConnectError(f"Looking up offsets for timestamp {spec.timestamp}: {e}") from e
        out: Offsets = {}
        for tp in found:
            lo, hi = limits[(tp.topic, tp.partition)]
            candidate = hi if tp.offset < 0 else min(max(tp.offset, lo), hi)
            out[(tp.topic, tp.partition)] = _first_at_or_after(
                c, (tp.topic, tp.partition), candidate, hi, spec.timestamp, timeout
            )
        return out
    out = {}
    for tp, (lo, hi) in limits.items():
        given = spec.offsets.get(tp[0], {}).get(tp[1], _EARLIEST if tp[0] in spec.offsets else None)
        if given is None:
            raise ConfigError(f"Offsets given per partition name no offset for topic {tp[0]}")
        if given == _EARLIEST:
            out[tp] = lo
        elif given == _LATEST:
            out[tp] = hi
        else:
            out[tp] = min(max(given, lo), hi)
    return out


def _first_at_or_after(
    c: Consumer, tp: TP, start: int, end: int, timestamp: int, timeout: float
) -> int:
    """The first offset in ``[start, end)`` whose record timestamp is >= ``timestamp``, else
    ``end``. Checks the broker's answer by reading: the embedded broker answers every
    timestamp lookup with offset 0; on Kafka the first record read already qualifies."""
    if start >= end:
        return end
    c.assign([KafkaTopicPartition(tp[0], tp[1], start)])
    try:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for msg in c.consume(1000, 0.05):
                err = msg.error()
                if err is not None:
                    if err.code() == KafkaError._PARTITION_EOF:
                        return end
                    raise ConnectError(f"Reading {tp[0]}[{tp[1]}] failed: {err}")
                if msg.offset() >= end:
                    return end
                if msg.timestamp()[1] >= timestamp:
                    return int(msg.offset())
        raise ConnectError(f"Looking up timestamp {timestamp} in {tp[0]}[{tp[1]}] timed out")
    finally:
        c.unassign()


def read_range(
    options: BridgeOptions, topic: str, partition: int, start: int, end: int
) -> Iterator[list[Any]]:
    """Yield lists of confluent-kafka messages with offsets in ``[start, end)`` (in order).

    Gaps (compaction, transaction markers) are crossed by watching the consumer position.
    Raises ConnectError when no progress is made for ``options.poll_timeout`` seconds.
    """
    if end <= start:
        return
    c = consumer(options)
    tp = KafkaTopicPartition(topic, partition, start)
    try:
        c.assign([tp])
        next_offset = start
        stalled_since = time.monotonic()
        while next_offset < end:
            msgs = c.consume(min(5000, end - next_offset), 0.2)
            batch = []
            for msg in msgs:
                err = msg.error()
                if err is not None:
                    if err.code() == KafkaError._PARTITION_EOF:
                        continue
                    raise ConnectError(f"Reading {topic}[{partition}] failed: {err}")
                offset = msg.offset()
                if offset >= end:
                    next_offset = end
                    break
                if offset >= start:
                    batch.append(msg)
                    next_offset = offset + 1
            if batch:
                stalled_since = time.monotonic()
                yield batch
                continue
            if next_offset >= end:
                break
            position = c.position([KafkaTopicPartition(topic, partition)])[0].offset
            if position >= end:
                break
            if time.monotonic() - stalled_since > options.poll_timeout:
                raise ConnectError(
                    f"Reading {topic}[{partition}] stalled at offset {next_offset} "
                    f"(wanted up to {end}) for {options.poll_timeout:.0f} s"
                )
    finally:
        c.close()
