"""A source task's offsets: pending until Kafka acknowledged their records, then stored.

Offset commit, every ``offset.flush.interval.ms`` and on stop: snapshot the pending offsets,
``flush()`` the producer (wait for every record produced so far to be acknowledged, at most
``offset.flush.timeout.ms``). If all were acknowledged and none failed, every record before the
snapshot in each source partition is safely in Kafka, so the snapshot is written to the offset
store, then ``SourceTask.commit()`` is called. On a flush timeout the snapshot stays pending and
is retried at the next interval. A failed delivery fails the task without committing: records
are then re-polled after a restart (at-least-once, never lost).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from typing import Any

from connectrt.api.task import SourceTask
from connectrt.runtime.clients.kafka import KafkaProducer
from connectrt.runtime.metrics import TaskMetrics
from connectrt.runtime.source.delivery import DeliveryCallback
from connectrt.runtime.tasks.error_handling import ErrorHandler
from connectrt.runtime.tasks.runner import TaskFailure, TaskId, TaskStage
from connectrt.storage.offset_codec import encode_value, validate_offset_map
from connectrt.storage.offsets import OffsetStore

log = logging.getLogger(__name__)

__all__ = ["SourceOffsetCommitter"]


class SourceOffsetCommitter:
    """The pending source offsets of one task, and their commit to the offset store.

    ``pending`` maps the encoded offset-topic key of each source partition to the latest source
    offset of a record produced (or skipped) since the last commit; ``pending_records`` counts
    the records produced since then. The runner's loop writes both directly, looking them up
    once per batch; :meth:`commit` replaces ``pending`` with a new dict. Owned by the task's
    :class:`~connectrt.runtime.source.runner.SourceTaskRunner` and used on its thread only.
    """

    def __init__(
        self,
        task_id: TaskId,
        task: SourceTask,
        store: OffsetStore,
        errors: ErrorHandler,
        metrics: TaskMetrics,
        flush_timeout_s: float,
    ) -> None:
        self._id = task_id
        self._task = task
        self._store = store
        self._errors = errors
        self._metrics = metrics
        self._flush_timeout = flush_timeout_s
        self.pending: dict[bytes, Mapping[str, Any] | None] = {}
        self.pending_records = 0
        self.delivery_callback: DeliveryCallback | None = None  # the producer's on_delivery

    def commit(self, producer: KafkaProducer, check_delivery: Callable[[], None]) -> bool:
        """Store the pending offsets once all produced records are acknowledged.

        ``check_delivery`` raises if a delivery failed. Returns True when a commit happened (or
        there was nothing to commit).
        """
        started = time.perf_counter()
        remaining = producer.flush(self._flush_timeout)
        check_delivery()
        self._errors.flush()  # DLQ records are durable before the offsets that skip them
        if remaining > 0:
            log.warning(
                "Task %s: %d records not acknowledged within offset.flush.timeout.ms; "
                "offset commit postponed",
                self._id,
                remaining,
            )
            self._metrics.offset_commit_failures += 1
            return False
        produced = self.pending_records
        self._metrics.records_produced += produced
        self.pending_records = 0
        if not self.pending:
            return True
        snapshot, self.pending = self.pending, {}
        try:
            for value in snapshot.values():
                if value is not None:
                    validate_offset_map("offset", value)
            self._store.set({k: encode_value(v) for k, v in snapshot.items()})
        except Exception as e:
            # Keep the snapshot so the next interval retries it (newer entries win).
            self.pending = {**snapshot, **self.pending}
            self._metrics.offset_commit_failures += 1
            message = f"offset commit failed: {e!r}"
            raise TaskFailure(self._id, TaskStage.TASK_COMMIT, message) from e
        self._metrics.offset_commits += 1
        self._metrics.commit_seconds.observe(time.perf_counter() - started)
        self._metrics.records_committed += produced
        try:
            self._task.commit()
        except Exception:
            log.exception("Task %s: exception in commit()", self._id)
        return True
