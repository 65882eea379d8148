"""Exactly-once source tasks (KIP-618): records and their source offsets in one transaction.

A source task of a connector running exactly-once has a transactional producer
(``transactional.id`` ``<group.id>-<connector>-<task>``) and its own reader of the connector's
offsets topic. :class:`TransactionalOffsets` is that task's side of it, replacing the
at-least-once :class:`~connectrt.runtime.source_offsets.SourceOffsetCommitter`:

* :meth:`TransactionalOffsets.open`, before the task starts: ``init_transactions()`` (which
  fences every older producer with the same transactional id, and makes the broker finish the
  transaction such a zombie left open), then the offsets topic is read (``read_committed``), so
  the task's ``OffsetStorageReader`` sees what the last committed transaction stored;
* :meth:`TransactionalOffsets.begin`, before a batch is produced: opens a transaction unless
  one is open;
* :meth:`TransactionalOffsets.commit`, at each transaction boundary: the pending source
  offsets are produced to the offsets topic *in the transaction* (key partitioned as Java's
  producer does), then ``commit_transaction()``, which also waits for every record of it. Only
  then are they counted as committed and ``SourceTask.commit()`` called;
* :meth:`TransactionalOffsets.abort`: ``abort_transaction()``; the pending offsets are dropped.

A commit that fails (a fenced producer, a failed delivery, a timeout) aborts the transaction
where the producer still allows it and fails the task (stage TASK_COMMIT): a restarted task
resumes from the last committed offsets. Boundaries (``poll``, ``interval``, ``connector``) are
decided by the runner; the connector's requests come through :class:`TransactionContextImpl`.

Owned by one :class:`~connectrt.runtime.source_runner.SourceTaskRunner` and used on its thread
only (the context's methods are called by the task on that thread too).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from typing import Any

from confluent_kafka import KafkaException, Producer

from connectrt.api.records import SourceRecord
from connectrt.api.task import SourceTask, TransactionContext
from connectrt.runtime.error_handling import ErrorHandler
from connectrt.runtime.exactly_once_config import ExactlyOnceSettings
from connectrt.runtime.metrics import TaskMetrics
from connectrt.runtime.task_runner import TaskFailure, TaskId, TaskStage
from connectrt.storage.kafka_offsets import KafkaOffsetStore
from connectrt.storage.murmur2 import java_partition
from connectrt.storage.offset_codec import encode_value, validate_offset_map

log = logging.getLogger(__name__)

__all__ = ["TransactionContextImpl", "TransactionalOffsets"]


class TransactionContextImpl(TransactionContext):
    """The requests of a task defining its own boundaries (``transaction.boundary=connector``).

    ``pending`` is ``"commit"``/``"abort"`` for a request after the current batch; ``at`` maps
    records (by identity) to the request to act on after that record. The runner reads and
    clears both after each batch.
    """

    def __init__(self) -> None:
        self.pending: str | None = None
        self.at: dict[int, tuple[SourceRecord, str]] = {}

    def commit_transaction(self, record: SourceRecord | None = None) -> None:
        self._request("commit", record)

    def abort_transaction(self, record: SourceRecord | None = None) -> None:
        self._request("abort", record)

    def _request(self, what: str, record: SourceRecord | None) -> None:
        if record is None:
            if self.pending != "abort":
                self.pending = what
            return
        previous = self.at.get(id(record))
        if previous is None or previous[1] != "abort":
            self.at[id(record)] = (record, what)


class TransactionalOffsets:
    """One exactly-once task's transactions and source offsets (see the module docstring).

    Has the same ``pending``/``pending_records``/``commit`` surface as
    :class:`~connectrt.runtime.source_offsets.SourceOffsetCommitter`, so the batch sender and
    the runner use either one.
    """

    def __init__(
        self,
        task_id: TaskId,
        task: SourceTask,
        settings: ExactlyOnceSettings,
        store: KafkaOffsetStore,
        errors: ErrorHandler,
        metrics: TaskMetrics,
        timeout_s: float,
    ) -> None:
        self._id = task_id
        self._task = task
        self.settings = settings
        self.store = store
        self._errors = errors
        self._metrics = metrics
        self._timeout = timeout_s
        self.pending: dict[bytes, Mapping[str, Any] | None] = {}
        self.pending_records = 0
        self.in_transaction = False
        self._partitions = 1

    # -- lifecycle ---------------------------------------------------------------------------
    def open(self, producer: Producer) -> None:
        """Fence older instances of this task, then read the committed offsets."""
        try:
            producer.init_transactions(self._timeout)
        except KafkaException as e:
            raise TaskFailure(
                self._id,
                TaskStage.TASK_START,
                f"init_transactions for transactional.id {self.settings.transactional_id} "
                f"failed: {e.args[0].str() if e.args else e!r}",
            ) from e
        self.store.start()
        self._partitions = max(1, self.store.log.partition_count)

    def close(self) -> None:
        self.store.stop()

    def begin(self, producer: Producer) -> None:
        """Open a transaction unless one is open."""
        if not self.in_transaction:
            producer.begin_transaction()
            self.in_transaction = True

    # -- boundaries --------------------------------------------------------------------------
    def commit(self, producer: Producer, check_delivery: Callable[[], None]) -> bool:
        """Write the pending offsets into the open transaction and commit it. Returns True
        (a failure raises :class:`TaskFailure` after aborting what can be aborted)."""
        if not self.in_transaction and not self.pending:
            return True
        started = time.perf_counter()
        snapshot, self.pending = self.pending, {}
        produced, self.pending_records = self.pending_records, 0
        try:
            self.begin(producer)
            self._errors.flush()
            topic = self.settings.offsets_topic
            for key, value in snapshot.items():
                if value is not None:
                    validate_offset_map("offset", value)
                encoded = encode_value(value)
                producer.produce(topic, encoded, key, java_partition(key, self._partitions))
            producer.commit_transaction(self._timeout)
            self.in_transaction = False
            check_delivery()
        except Exception as e:
            self._metrics.offset_commit_failures += 1
            self.abort(producer, reason=f"commit failed: {_text(e)}", fatal=_fatal(e))
            raise TaskFailure(
                self._id,
                TaskStage.TASK_COMMIT,
                f"transaction commit failed (transactional.id "
                f"{self.settings.transactional_id}): {_text(e)}",
            ) from e
        self._metrics.records_produced += produced
        self._metrics.records_committed += produced
        self._metrics.offset_commits += 1
        self._metrics.commit_seconds.observe(time.perf_counter() - started)
        try:
            self._task.commit()
        except Exception:
            log.exception("Task %s: exception in commit()", self._id)
        return True

    def abort(self, producer: Producer, reason: str = "requested", fatal: bool = False) -> None:
        """Abort the open transaction (if any) and drop the pending offsets. A producer in a
        fatal state (``fatal``: fenced by a newer instance, say) cannot abort: it is not asked
        to, and the transaction is left to the broker, which aborts it when the newer producer
        with this ``transactional.id`` initializes (or when it times out)."""
        self.pending = {}
        self.pending_records = 0
        if not self.in_transaction:
            return
        self.in_transaction = False
        self._metrics.transactions_aborted += 1
        if fatal:
            log.warning(
                "Task %s: transaction not aborted by this producer (%s): the producer can no "
                "longer abort; the broker aborts it",
                self._id,
                reason,
            )
            return
        try:
            producer.abort_transaction(self._timeout)
            log.warning("Task %s: transaction aborted (%s)", self._id, reason)
        except KafkaException as e:
            log.warning(
                "Task %s: transaction could not be aborted (%s): %s", self._id, reason, _text(e)
            )


def _fatal(error: BaseException) -> bool:
    """Whether a Kafka error left the producer unusable (fenced, or another fatal error)."""
    if isinstance(error, KafkaException) and error.args:
        fatal = getattr(error.args[0], "fatal", None)
        return bool(callable(fatal) and fatal())
    return False


def _text(error: BaseException) -> str:
    """A Kafka error's own text (``KafkaError.str()``), or the exception's repr."""
    if isinstance(error, KafkaException) and error.args:
        first = error.args[0]
        text = getattr(first, "str", None)
        if callable(text):
            return str(text())
    return repr(error)
