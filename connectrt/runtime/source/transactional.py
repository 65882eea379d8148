"""Exactly-once delivery of a source task (KIP-618): records and offsets in one transaction.

:class:`TransactionalDelivery` is the :class:`~connectrt.runtime.source.delivery.SourceDelivery`
of a task whose connector runs exactly-once. The transactions themselves (open, commit riding
out an outage, abort) are :class:`~connectrt.runtime.source.transactions.TransactionalOffsets`';
this class adds where they begin and end, ``transaction.boundary``:

* ``poll``: a transaction per non-empty poll, committed right after it;
* ``interval``: committed every ``transaction.boundary.interval.ms`` (the loop's timer);
* ``connector``: committed or aborted when the task asks through its ``TransactionContext``,
  after the current batch or after a named record (the batch is then cut after that record);
  at stop the open transaction is aborted, never committed.

Before pausing (``poll`` and ``interval``), the open transaction is committed. Before the task
starts, :meth:`TransactionalDelivery.open` creates the producer and fences older instances,
then reads the committed offsets. A failed task aborts its open transaction. A transaction lost
to the broker restarts the task in place (:meth:`~TransactionalDelivery.lost_reason`, then
:meth:`~TransactionalDelivery.lose`, :meth:`~TransactionalDelivery.reopen` and
:meth:`~TransactionalDelivery.restarted`; :mod:`connectrt.runtime.source.transaction_restart`).
Owned by one runner; used on its task's thread only.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from typing import Any

from connectrt.api.source_batch import SourceRecordBatch
from connectrt.api.task import SourceTask, TransactionContext
from connectrt.runtime.clients.kafka import KafkaError, KafkaMessage, KafkaProducer
from connectrt.runtime.config.exactly_once import (
    BOUNDARY_CONNECTOR,
    BOUNDARY_INTERVAL,
    BOUNDARY_POLL,
)
from connectrt.runtime.source.delivery import Commit, Polled, ProducerFactory, SendSegment
from connectrt.runtime.source.transaction_errors import TransactionLost, task_lost_reason
from connectrt.runtime.source.transaction_restart import discard, reopen
from connectrt.runtime.source.transactions import TransactionalOffsets, TransactionContextImpl
from connectrt.storage.offsets import OffsetStore

log = logging.getLogger(__name__)

__all__ = ["TransactionalDelivery"]


class TransactionalDelivery(TransactionalOffsets):
    """Exactly-once (see the module docstring)."""

    @functools.cached_property
    def _context(self) -> TransactionContextImpl | None:
        """The task's own boundary requests (``transaction.boundary=connector`` only; None
        otherwise), made on first use and the same object from then on."""
        if self.settings.boundary == BOUNDARY_CONNECTOR:
            return TransactionContextImpl()
        return None

    @property
    def commit_interval_s(self) -> float | None:
        if self.settings.boundary == BOUNDARY_INTERVAL:
            return self.settings.interval_ms / 1000.0
        return None

    @property
    def store(self) -> OffsetStore:
        return self.offsets_store

    @property
    def transaction_context(self) -> TransactionContext | None:
        return self._context

    def track_deliveries(self, report: Callable[[KafkaError | None, KafkaMessage], bool]) -> None:
        pass  # failed deliveries reach the producer's on_delivery; transactions make them whole

    def open(self, create: ProducerFactory, config: dict[str, Any]) -> KafkaProducer | None:
        """Create the producer, fence older instances and read the committed offsets, so the
        task starts from what the last committed transaction stored."""
        producer = create(config)
        self.open_transactions(producer)
        return producer

    # -- boundaries --------------------------------------------------------------------------
    def dispatch(
        self, polled: Polled, producer: KafkaProducer, send: SendSegment, commit: Commit
    ) -> None:
        """Send a polled batch inside the open transaction (opening one). With
        connector-defined boundaries the batch is cut after each record the task named in a
        ``commit_transaction(record)``/``abort_transaction(record)``, which is acted on there."""
        ctx = self._context
        if ctx is None:
            self.begin(producer)
            send(polled, producer)
            return
        records = list(polled) if isinstance(polled, SourceRecordBatch) else polled
        start = 0
        for i, record in enumerate(records):
            request = ctx.at.pop(id(record), None)
            if request is not None and request[0] is record:
                self.begin(producer)
                send(records[start : i + 1], producer)
                start = i + 1
                if request[1] == "commit":
                    commit()
                else:
                    self.abort(producer, reason="abort_transaction(record) by the task")
        if start < len(records):
            self.begin(producer)
            send(records[start:], producer)

    def after_poll(self, producer: KafkaProducer, polled: bool, commit: Commit) -> None:
        """Commit at a ``poll`` boundary (a non-empty batch), or act on the task's
        ``commit_transaction()``/``abort_transaction()`` request."""
        ctx = self._context
        if ctx is None:
            if polled and self.settings.boundary == BOUNDARY_POLL:
                commit()
            return
        request, ctx.pending = ctx.pending, None
        if request == "commit":
            commit()
        elif request == "abort":
            self.abort(producer, reason="abort_transaction() by the task")

    def before_pause(self, commit: Commit) -> None:
        if self._context is None:
            commit()  # no transaction left open while paused

    def on_stop(self, producer: KafkaProducer, failed: bool, commit: Commit) -> None:
        """A failed task's open transaction, or one the task did not end itself
        (connector-defined boundaries), is aborted, never committed; otherwise committed."""
        if failed or self._context is not None:
            self.abort(producer, reason="task stopping")
            return
        try:
            commit()
        except TransactionLost as e:
            # Stopping while the broker is away: what did not commit is re-polled by the
            # task's next start, whose init_transactions() ends this transaction.
            log.warning("Task %s: last transaction not committed at stop: %s", self._id, e)

    def close(self, producer: KafkaProducer | None) -> None:
        if producer is not None and self.in_transaction:
            self.abort(producer, reason="producer closing")
        self.close_store()

    # -- restart in place --------------------------------------------------------------------
    def lost_reason(self, error: BaseException) -> str | None:
        return task_lost_reason(error)

    def lose(self, producer: KafkaProducer, reason: str) -> None:
        """Drop the open transaction (aborted quickly if the producer still can) and purge the
        producer's records, so that it sends nothing more."""
        log.warning(
            "Task %s: %s; restarting the task from its last committed offsets on a new "
            "producer (transactional.id %s)",
            self._id,
            reason,
            self.settings.transactional_id,
        )
        self.drop(producer, reason, fatal=False)
        discard(producer)

    def reopen(
        self,
        create: ProducerFactory,
        config: dict[str, Any],
        stopping: Callable[[], bool],
        wait: Callable[[float], object],
    ) -> KafkaProducer | None:
        self.close_store()
        return reopen(self._id, self, create, config, stopping, wait)

    def restarted(self, task: SourceTask) -> None:
        self.set_task(task)
        if self._context is not None:
            self._context = TransactionContextImpl()
