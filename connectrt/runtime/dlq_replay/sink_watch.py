"""Waiting for a sink to consume a replay's copies, and counting those that came back.

A sink task flushes its dead letter records before it commits the offsets that skip their
records. So once the connector's consumer group (``connect-<name>``) has committed past every
copy a replay produced, each copy it failed again is in the DLQ, and a read of the DLQ from the
run's end offsets to the current end finds them all, by their ``connectrt.replay.run`` header.
:class:`SinkWatch` does that wait and that count; it reads the DLQ as it goes, so the count
grows while the sink works.

Used from the replay run's thread; owns its consumer (closed by :meth:`SinkWatch.close`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection, Mapping
from typing import Any

from connectrt.api.records import TopicPartition
from connectrt.errors import ConnectError
from connectrt.runtime.clients.kafka import KafkaConsumer, KafkaError, new_consumer
from connectrt.runtime.clients.kafka import TopicPartition as KafkaTopicPartition
from connectrt.runtime.dlq_replay.progress import ReplayProgress
from connectrt.runtime.offsets.admin import OffsetAdmin
from connectrt.runtime.tasks.dlq_headers import REPLAY_RUN, header_text

__all__ = ["SinkWatch"]

_BATCH = 500


class SinkWatch:
    """Counts, as ``failed_again`` in ``progress``, the records of run ``progress.id`` that a
    task wrote to DLQ ``topic`` after offsets ``ends`` (those in ``written_back``, written by
    the run itself, are counted already)."""

    def __init__(
        self,
        consumer_config: Mapping[str, Any],
        offset_admin: OffsetAdmin,
        topic: str,
        ends: Mapping[int, int],
        written_back: Collection[tuple[int, int]],
        progress: ReplayProgress,
    ) -> None:
        self._admin = offset_admin
        self._topic = topic
        self._written_back = written_back
        self._progress = progress
        self._scanned = dict(ends)
        self._consumer: KafkaConsumer = new_consumer(
            {**consumer_config, "enable.partition.eof": True}
        )
        self._consumer.assign([KafkaTopicPartition(topic, p, o) for p, o in ends.items()])

    def close(self) -> None:
        self._consumer.close()

    def wait(
        self,
        group: str,
        copies: Mapping[TopicPartition, int],
        timeout_s: float,
        stall_timeout_s: float,
        cancelled: Callable[[], bool],
    ) -> bool:
        """Wait until ``group`` committed at least ``copies`` (the next offset after the last
        copy, per partition), then count up to the DLQ's end. False when ``timeout_s`` passed
        first (what came back so far is counted) or ``cancelled()``."""
        deadline = time.monotonic() + timeout_s
        while True:
            self._scan(0.5)
            if cancelled():
                return False
            committed = self._admin.group_offsets(group)
            if all(committed.get(tp, -1) >= o for tp, o in copies.items()):
                break
            if time.monotonic() > deadline:
                return False
        tps = self._admin.partitions([self._topic])
        ends = {tp.partition: o for tp, o in self._admin.latest(tps).items()}
        last_read = time.monotonic()
        while any(self._scanned.get(p, 0) < end for p, end in ends.items()):
            if self._scan(0.5):
                last_read = time.monotonic()
            elif time.monotonic() - last_read > stall_timeout_s:
                raise ConnectError(
                    f"Reading the dead letter queue {self._topic} made no progress for "
                    f"{stall_timeout_s:g} s"
                )
        return True

    def _scan(self, timeout: float) -> bool:
        """Read what the DLQ has beyond what was scanned; True if anything was read."""
        messages = self._consumer.consume(_BATCH, timeout)
        run = self._progress.id
        for msg in messages:
            partition, offset = msg.partition() or 0, msg.offset() or 0
            err = msg.error()
            if err is not None:
                if err.code() == KafkaError._PARTITION_EOF:
                    self._scanned[partition] = max(self._scanned.get(partition, 0), offset)
                    continue
                raise ConnectError(f"Reading the dead letter queue failed: {err.str()}")
            self._scanned[partition] = offset + 1
            if (partition, offset) in self._written_back:
                continue
            if header_text(msg.headers(), REPLAY_RUN) == run:
                self._progress.add(failed_again=1)
        return bool(messages)
