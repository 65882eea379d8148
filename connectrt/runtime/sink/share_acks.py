"""Acknowledging one acquired batch of a share-group sink task (KIP-932).

:class:`BatchAcks` decides, per acquired record of the batch the runner handles, how the broker
is told about it, and sends that to the broker:

* ACCEPT: ``put()`` took it and ``flush()``/``pre_commit()`` returned, or it was skipped by a
  transformation, or a tolerated failure sent it to the dead letter queue (the DLQ flushed
  first);
* REJECT: a failure was tolerated (``errors.tolerance=all``) and no dead letter queue is set:
  the record could not be written and nothing kept it, so the broker archives it as
  unprocessable rather than recording it as processed;
* RELEASE: ``put()`` raised a RetriableError: the broker delivers it again, to this task or
  another; the broker's delivery count is the retry budget. A record released on its last
  delivery (``share.delivery.count.limit``) is archived by the broker: counted in
  ``share_archived`` and logged.

Counts go to the task's metrics (``share_accepted``/``released``/``rejected``/``archived``).
Used on the task thread only, one instance per batch.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any

from connectrt.runtime.clients.share_consumer import Ack, KafkaShareConsumer
from connectrt.runtime.metrics import TaskMetrics
from connectrt.runtime.tasks.runner import TaskId

log = logging.getLogger(__name__)

__all__ = ["BatchAcks", "Coordinates", "coordinates"]

Coordinates = tuple[str, int, int]

_COMMIT_TIMEOUT_S = 30.0


def coordinates(msg: Any) -> Coordinates:
    """(topic, partition, offset) of a consumed message."""
    return (msg.topic(), msg.partition(), msg.offset())


class BatchAcks:
    """The acknowledgements of one acquired batch (see the module docstring)."""

    def __init__(
        self,
        task_id: TaskId,
        consumer: KafkaShareConsumer,
        metrics: TaskMetrics,
        delivery_limit: int,
    ) -> None:
        self._id = task_id
        self._consumer = consumer
        self._metrics = metrics
        self._delivery_limit = delivery_limit

    def last_delivery(self, msg: Any) -> bool:
        """Whether the broker archives ``msg`` rather than deliver it again if it is released."""
        count = msg.delivery_count()
        return count is not None and count >= self._delivery_limit

    def settle(self, msgs: Iterable[Any], rejected: set[Coordinates]) -> None:
        """ACCEPT every message of ``msgs`` but those in ``rejected`` (REJECTed), then send."""
        accepted = 0
        refused = 0
        for msg in msgs:
            if rejected and coordinates(msg) in rejected:
                self._consumer.acknowledge(msg, Ack.REJECT)
                refused += 1
            else:
                self._consumer.acknowledge(msg, Ack.ACCEPT)
                accepted += 1
        self._metrics.share_accepted += accepted
        self._metrics.share_rejected += refused
        self.send()

    def release(self, msgs: Iterable[Any], why: str) -> None:
        """RELEASE every message of ``msgs`` for another delivery, then send. Those on their
        last delivery are archived by the broker: counted and logged with ``why``."""
        released = 0
        archived: list[Coordinates] = []
        for msg in msgs:
            self._consumer.acknowledge(msg, Ack.RELEASE)
            released += 1
            if self.last_delivery(msg):
                archived.append(coordinates(msg))
        self._metrics.share_released += released
        if archived:
            self._metrics.share_archived += len(archived)
            log.error(
                "Task %s: %d record(s) released on their last delivery "
                "(share.delivery.count.limit=%d) are archived by the broker and will not be "
                "written: %s (first: %s)",
                self._id,
                len(archived),
                self._delivery_limit,
                why,
                ", ".join(f"{t}-{p}@{o}" for t, p, o in archived[:10]),
            )
        self.send()

    def send(self) -> None:
        """Send the acknowledgements to the broker and wait for its answer. A partition whose
        acknowledgements failed (typically: the acquisition lock expired first, because
        ``put()``/``flush()`` took longer than the group's lock duration) is logged: its
        records may be delivered again (at-least-once)."""
        result = self._consumer.commit_sync(_COMMIT_TIMEOUT_S)
        for tp, error in (result or {}).items():
            if error is not None:
                log.warning(
                    "Task %s: the broker refused the acknowledgements of %s [%s]: %s; those "
                    "records may be delivered again (did put()/flush() outlast the group's "
                    "share.record.lock.duration.ms?)",
                    self._id,
                    getattr(tp, "topic", tp),
                    getattr(tp, "partition", "?"),
                    error,
                )
