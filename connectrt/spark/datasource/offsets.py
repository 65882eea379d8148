"""Kafka partitions, their offset bounds and offset ranges, with plain confluent-kafka.

End of partition: ListOffsets(LATEST) is not trusted. The embedded broker (Tansu) answers it
with the base offset of the last record batch + 1, so a reader trusting it never reads the
last batch. :func:`bounds` therefore assigns every non-empty partition one record before the
listed end, fetches to partition EOF and takes ``max(last offset + 1, fetch high watermark)``.
On Apache Kafka this confirms the listed end with one small fetch per partition.

Offsets for times: the broker's answer is a hint, checked by reading. Kafka answers with the
first offset whose timestamp is at or after the time; the embedded broker answers per record
batch, on its receive time (every record of a batch gets the batch's first offset). So
:func:`resolve` reads forward from the answer to the first record whose own timestamp
qualifies, and first checks the record before the answer: if that one qualifies too, the
answer was not the first, and the partition is scanned from its earliest offset.

Data loss (``failOnDataLoss``): an offset below the partition's earliest (retention deleted
it) or above its end (the topic was recreated) is reported by :func:`check_range`; executors
read with ``auto.offset.reset=error``, so a range whose start was deleted meanwhile is
reported rather than silently skipped. With ``failOnDataLoss=true`` a report fails the query;
with ``false`` it is logged and reading goes on from the earliest available offset.

Offsets travel as ``{"topic": {"partition": next_offset}}`` (JSON-serialisable; what Spark
stores in the checkpoint's offset log). Consumers here use ``assign()`` only, with a
``group.id`` of ``groupIdPrefix`` or ``kafka.group.id`` (confluent-kafka requires one; Kafka
ACLs may name it) and never commit.

Not thread-safe: each caller owns its consumer.
"""

from __future__ import annotations

import logging
import re
import time
import uuid
from collections.abc import Iterable, Iterator, Mapping
from typing import Any, cast

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, KafkaException
from confluent_kafka import TopicPartition as KafkaTopicPartition

from connectrt.api.config import ConfigError
from connectrt.errors import ConnectError
from connectrt.spark.datasource.options import EARLIEST, LATEST, BridgeOptions, OffsetSpec

__all__ = [
    "TP",
    "DataLoss",
    "Offsets",
    "bounds",
    "check_range",
    "consumer",
    "decode_offsets",
    "encode_offsets",
    "read_range",
    "report_data_loss",
    "resolve",
    "topic_partitions",
]

TP = tuple[str, int]
Offsets = dict[TP, int]
log = logging.getLogger(__name__)


def consumer(options: BridgeOptions, probe: bool = False) -> Consumer:
    """An assign-only consumer; ``probe``: short fetch waits for end-of-partition probes.
    Reading consumers (not probes) report an out-of-range start instead of resetting."""
    conf: dict[str, Any] = {
        "enable.auto.commit": False,
        "enable.partition.eof": True,
        "auto.offset.reset": "earliest" if probe else "error",
        "fetch.queue.backoff.ms": 10,
    }
    conf.update(options.kafka)
    conf["group.id"] = options.group_id(uuid.uuid4().hex[:12])
    if probe:
        conf["fetch.wait.max.ms"] = 10
    return Consumer(conf)


class DataLoss(ConnectError):
    """Records the query should have read are gone (``failOnDataLoss=true``)."""


def report_data_loss(options: BridgeOptions, message: str) -> None:
    """Fail with :class:`DataLoss` (``failOnDataLoss=true``) or log and go on."""
    text = (
        f"{message}. Some data may have been lost because it is not available in Kafka any "
        "more: it was deleted by retention, or the topic was deleted and recreated."
    )
    if options.fail_on_data_loss:
        raise DataLoss(
            f"{text} If you want the query to go on regardless, set failOnDataLoss=false."
        )
    log.warning("%s Going on from the earliest available offset (failOnDataLoss=false).", text)


def check_range(options: BridgeOptions, tp: TP, offset: int, lo: int, hi: int) -> int:
    """``offset`` if it lies in ``[lo, hi]``; else report data loss and return ``lo``."""
    if lo <= offset <= hi:
        return offset
    where = "below the earliest offset" if offset < lo else "beyond the end"
    report_data_loss(
        options,
        f"Offset {offset} of {tp[0]}[{tp[1]}] is {where} of the partition ({lo}..{hi})",
    )
    return lo


def encode_offsets(offsets: Mapping[TP, int]) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    for (topic, partition), offset in sorted(offsets.items()):
        out.setdefault(topic, {})[str(partition)] = int(offset)
    return out


def decode_offsets(data: Mapping[str, Mapping[str, int]] | None) -> Offsets:
    return {(t, int(p)): int(o) for t, parts in (data or {}).items() for p, o in parts.items()}


def topic_partitions(c: Consumer, options: BridgeOptions, timeout: float = 15.0) -> list[TP]:
    """The subscribed partitions: the named topics (which must exist), the pattern's topics,
    or the assigned partitions (which must exist)."""
    md = c.list_topics(timeout=timeout)
    if options.pattern is not None:
        regex = re.compile(options.pattern)
        topics = sorted(t for t in md.topics if regex.fullmatch(t) and not t.startswith("__"))
    else:
        topics = list(options.topics)
    out: list[TP] = []
    for topic in topics:
        meta = md.topics.get(topic)
        if meta is None or meta.error is not None or not meta.partitions:
            reason = meta.error if meta is not None and meta.error is not None else "not found"
            raise ConnectError(f"Topic {topic} cannot be read: {reason}")
        if options.assign is None:
            out.extend((topic, p) for p in sorted(meta.partitions))
            continue
        missing = sorted(set(options.assign[topic]) - set(meta.partitions))
        if missing:
            raise ConnectError(
                f"Option assign names partitions {missing} of {topic}, which has "
                f"{len(meta.partitions)} partition(s)"
            )
        out.extend((topic, p) for p in options.assign[topic])
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
                tp = cast("tuple[str, int]", (msg.topic(), msg.partition()))
                if err is not None:
                    if err.code() == KafkaError._PARTITION_EOF:
                        todo.discard(tp)
                        continue
                    raise ConnectError(f"Reading {tp[0]}[{tp[1]}] to its end failed: {err}")
                after = cast(int, msg.offset()) + 1
                if after > seen[tp]:
                    seen[tp] = after
    finally:
        c.unassign()
    out = dict(listed)
    for tp, end in seen.items():
        _, cached = c.get_watermark_offsets(KafkaTopicPartition(*tp), cached=True)
        out[tp] = (listed[tp][0], max(end, cached if cached and cached > 0 else 0))
    return out


def resolve(
    c: Consumer,
    options: BridgeOptions,
    spec: OffsetSpec,
    limits: Mapping[TP, tuple[int, int]],
    *,
    starting: bool,
    timeout: float = 15.0,
) -> Offsets:
    """Offsets for ``spec`` on every partition of ``limits``.

    Per-partition offsets must name every partition (as in Spark); one outside a partition's
    bounds is data loss (:func:`check_range`). A starting time after a partition's last record
    fails unless ``startingOffsetsByTimestampStrategy=latest``; an ending time after it means
    the partition's end (both as in Spark).
    """
    if spec.kind == "earliest":
        return {tp: lo for tp, (lo, _) in limits.items()}
    if spec.kind == "latest":
        return {tp: hi for tp, (_, hi) in limits.items()}
    what = ("starting" if starting else "ending") + (
        "OffsetsByTimestamp" if spec.kind == "timestamps" else "Offsets"
    )
    if spec.kind == "timestamp":
        times = {tp: spec.timestamp for tp in limits}
    else:
        given = {tp: spec.offsets.get(tp[0], {}).get(tp[1]) for tp in limits}
        missing = sorted(tp for tp, v in given.items() if v is None)
        if missing:
            named = ", ".join(f"{t}[{p}]" for t, p in missing)
            raise ConfigError(f"{what} must name every partition read; it misses {named}")
        if spec.kind == "offsets":
            out: Offsets = {}
            for tp, offset in given.items():
                lo, hi = limits[tp]
                assert offset is not None
                out[tp] = (
                    lo
                    if offset == EARLIEST
                    else hi
                    if offset == LATEST
                    else check_range(options, tp, offset, lo, hi)
                )
            return out
        times = {tp: int(v) for tp, v in given.items() if v is not None}
    return _offsets_for_times(c, options, times, limits, starting, timeout)


def _offsets_for_times(
    c: Consumer,
    options: BridgeOptions,
    times: Mapping[TP, int],
    limits: Mapping[TP, tuple[int, int]],
    starting: bool,
    timeout: float,
) -> Offsets:
    query = [KafkaTopicPartition(t, p, ts) for (t, p), ts in times.items()]
    try:
        answers = c.offsets_for_times(query, timeout=timeout)
    except KafkaException as e:
        raise ConnectError(f"Looking up offsets for times: {e}") from e
    out: Offsets = {}
    for answer in answers:
        tp = (answer.topic, answer.partition)
        lo, hi = limits[tp]
        ts = times[tp]
        hint = hi if answer.offset < 0 else min(max(answer.offset, lo), hi)
        if hint > lo and _qualifies(c, tp, hint - 1, ts, timeout):
            hint = lo  # the broker's answer was not the first such record: scan
        found = _first_at_or_after(c, tp, hint, hi, ts, timeout)
        if found is None:
            if starting and options.starting_by_time_strategy == "error":
                raise ConnectError(
                    f"No record of {tp[0]}[{tp[1]}] has a timestamp at or after {ts} (its "
                    "offsets are "
                    f"{lo}..{hi}); set startingOffsetsByTimestampStrategy=latest to start "
                    "at the end instead"
                )
            found = hi
        out[tp] = found
    return out


def _qualifies(c: Consumer, tp: TP, offset: int, timestamp: int, timeout: float) -> bool:
    """Whether the record at ``offset`` (or the next one, after a gap) has a timestamp at or
    after ``timestamp``."""
    found = _first_at_or_after(c, tp, offset, offset + 1, timestamp, timeout)
    return found is not None


def _first_at_or_after(
    c: Consumer, tp: TP, start: int, end: int, timestamp: int, timeout: float
) -> int | None:
    """The first offset in ``[start, end)`` whose record timestamp is >= ``timestamp``
    (None if there is none)."""
    if start >= end:
        return None
    c.assign([KafkaTopicPartition(tp[0], tp[1], start)])
    try:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for msg in c.consume(1000, 0.05):
                err = msg.error()
                if err is not None:
                    if err.code() == KafkaError._PARTITION_EOF:
                        return None
                    raise ConnectError(f"Reading {tp[0]}[{tp[1]}] failed: {err}")
                offset = cast(int, msg.offset())
                if offset >= end:
                    return None
                if msg.timestamp()[1] >= timestamp:
                    return offset
        raise ConnectError(f"Looking up timestamp {timestamp} in {tp[0]}[{tp[1]}] timed out")
    finally:
        c.unassign()


def read_range(
    options: BridgeOptions, topic: str, partition: int, start: int, end: int
) -> Iterator[list[Any]]:
    """Yield lists of confluent-kafka messages with offsets in ``[start, end)`` (in order).

    Gaps (compaction, transaction markers) are crossed by watching the consumer position. A
    start that is no longer in the partition is data loss (:func:`report_data_loss`; with
    ``failOnDataLoss=false`` reading goes on from the earliest offset). Raises ConnectError
    when no progress is made for ``options.poll_timeout`` seconds.
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
                    if err.code() == KafkaError._AUTO_OFFSET_RESET:
                        report_data_loss(
                            options,
                            f"Offset {next_offset} of {topic}[{partition}] cannot be read "
                            f"({err.str()})",
                        )
                        c.assign([KafkaTopicPartition(topic, partition, OFFSET_BEGINNING)])
                        break
                    raise ConnectError(f"Reading {topic}[{partition}] failed: {err}")
                offset = cast(int, msg.offset())
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
