"""A sink task's per-partition consumer lag, read from its consumer without touching its loop.

Lag is the consumer's high watermark minus its position (the next offset the task will be
handed), per assigned partition. The high watermark is the one librdkafka keeps from fetch
responses (``get_watermark_offsets(cached=True)``): it is right on Apache Kafka and on the
embedded broker alike, whereas a ListOffsets LATEST query is wrong on the embedded broker (see
the broker notes) and would cost a round trip per partition per scrape. The consumer keeps
fetching ahead of the task (its prefetch queue), so the watermark keeps moving while ``put``
is slow or blocked; while a partition is *paused* it is not fetched, and its lag stays at the
last value seen, as Kafka's own ``records-lag`` does.

:class:`ConsumerLagProbe` is the seam: the runner factory passes :meth:`ConsumerLagProbe.create`
as the sink runner's consumer factory and installs :meth:`ConsumerLagProbe.partition_lag` in
the task's :class:`~connectrt.runtime.metrics.TaskMetrics`. The consumer it builds,
:class:`LagReportingConsumer`, is librdkafka's own consumer class extended (its hot methods
are not overridden; the class comes through the client seam,
:mod:`connectrt.runtime.clients.kafka`, the one module that names ``confluent_kafka``) whose
``close`` and lag reads share a lock: the metrics endpoint reads from another thread, and a
librdkafka handle must not be used while it is being destroyed.
"""

from __future__ import annotations

import threading
from typing import Any

from connectrt.runtime.clients.kafka import Consumer, KafkaConsumer

__all__ = ["ConsumerLagProbe", "LagReportingConsumer"]

_LOCK_WAIT_S = 0.2


class LagReportingConsumer(Consumer):
    """A Consumer whose :meth:`partition_lag` may be called from any thread, even while the
    owning task thread consumes or closes it."""

    def __init__(self, config: dict[str, Any]) -> None:
        super().__init__(config)
        self._lag_lock = threading.Lock()
        self._closed = False

    def close(self) -> None:
        with self._lag_lock:
            self._closed = True
            super().close()

    def partition_lag(self) -> dict[tuple[str, int], int]:
        """``{(topic, partition): lag}`` for the assigned partitions whose position and high
        watermark are both known (a partition not fetched yet is left out); empty once
        closed."""
        # A close in progress holds the lock while the consumer leaves its group: do not hold
        # a scrape up for that, answer "no lag known" instead.
        if not self._lag_lock.acquire(timeout=_LOCK_WAIT_S):
            return {}
        try:
            return self._lag_locked()
        finally:
            self._lag_lock.release()

    def _lag_locked(self) -> dict[tuple[str, int], int]:
        if self._closed:
            return {}
        assigned = self.assignment()
        if not assigned:
            return {}
        out: dict[tuple[str, int], int] = {}
        for tp in self.position(assigned):
            if tp.offset < 0:
                continue  # nothing consumed yet: no position
            _, high = self.get_watermark_offsets(tp, cached=True)
            if high is None or high < 0:
                continue
            out[(tp.topic, tp.partition)] = max(high - tp.offset, 0)
        return out


class ConsumerLagProbe:
    """Builds one task's consumer (:meth:`create`, on the task thread) and answers its lag
    (:meth:`partition_lag`, from any thread). A restarted task gets a new probe."""

    def __init__(self) -> None:
        self._consumer: LagReportingConsumer | None = None

    def create(self, config: dict[str, Any]) -> KafkaConsumer:
        consumer = LagReportingConsumer(config)
        self._consumer = consumer
        return consumer

    def partition_lag(self) -> dict[tuple[str, int], int]:
        consumer = self._consumer
        return consumer.partition_lag() if consumer is not None else {}
