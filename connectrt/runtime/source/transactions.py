"""Exactly-once source tasks (KIP-618): records and their source offsets in one transaction.

A source task of a connector running exactly-once has a transactional producer
(``transactional.id`` ``<group.id>-<connector>-<task>``) and its own reader of the connector's
offsets topic. :class:`TransactionalOffsets` is that task's side of it, in place of the
at-least-once :class:`~connectrt.runtime.source.at_least_once.AtLeastOnceDelivery`:

* :meth:`TransactionalOffsets.open_transactions`, before the task starts:
  ``init_transactions()`` (which fences every older producer with the same transactional id,
  and makes the broker finish the transaction such a zombie left open), then the offsets topic
  is read (``read_committed``), so the task's ``OffsetStorageReader`` sees what the last
  committed transaction stored; after a restart in place it is read on until it shows every
  offset this task knows it committed (:mod:`connectrt.runtime.source.known_commits`), so a
  committed batch is never sent again;
* :meth:`TransactionalOffsets.begin`, before a batch is produced: opens a transaction unless
  one is open;
* :meth:`TransactionalOffsets.commit`, at each transaction boundary: the pending source
  offsets are produced to the offsets topic *in the transaction* (key partitioned as Java's
  producer does), then ``commit_transaction()``, which also waits for every record of it. Only
  then are they counted as committed and ``SourceTask.commit()`` called;
* :meth:`TransactionalOffsets.abort`: ``abort_transaction()``; the pending offsets are dropped.

A broker outage (:mod:`connectrt.runtime.source.transaction_errors`): ``commit_transaction()`` is
called again while librdkafka says its failure is retriable, for as long as the commit has waited
less than the producer's ``max.block.ms`` and the transaction has been open less than its
``transaction.timeout.ms`` (after that the coordinator aborts it anyway). A transaction lost to
the broker (those bounds passed, an abortable or a fatal error other than fencing) is aborted
where the producer can still do it quickly and
:class:`~connectrt.runtime.source.transaction_errors.TransactionLost` is raised: the runner then
restarts the task from the committed offsets on a new producer. Any other failed commit (a fenced
producer, a record the broker refuses) aborts the transaction where the producer still allows it
and fails the task (stage TASK_COMMIT): a restarted task resumes from the last committed offsets.
Boundaries (``poll``, ``interval``, ``connector``) are decided by
:class:`~connectrt.runtime.source.transactional.TransactionalDelivery`; the connector's requests
come through :class:`TransactionContextImpl`.

Owned by one :class:`~connectrt.runtime.source.runner.SourceTaskRunner` and used on its thread
only (the context's methods are called by the task on that thread too).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from typing import Any

from connectrt.api.records import SourceRecord
from connectrt.api.task import SourceTask, TransactionContext
from connectrt.errors import ConnectError
from connectrt.runtime.clients.kafka import KafkaException, KafkaProducer, request_producer_id
from connectrt.runtime.config.exactly_once import ExactlyOnceSettings
from connectrt.runtime.metrics import TaskMetrics
from connectrt.runtime.source.delivery import DeliveryCallback
from connectrt.runtime.source.known_commits import KnownCommits
from connectrt.runtime.source.transaction_errors import TransactionLost, kafka_error, lost_reason
from connectrt.runtime.tasks.error_handling import ErrorHandler
from connectrt.runtime.tasks.runner import TaskFailure, TaskId, TaskStage
from connectrt.storage.kafka_offsets import KafkaOffsetStore
from connectrt.storage.murmur2 import java_partition
from connectrt.storage.offset_codec import encode_value, validate_offset_map

log = logging.getLogger(__name__)

__all__ = ["TransactionContextImpl", "TransactionalOffsets"]

_RETRY_SLICE_S = 5.0
"""The longest one ``commit_transaction()`` call of a commit riding out an outage blocks, so
that a stop request is noticed between calls."""
_QUICK_ABORT_S = 5.0
"""How long aborting a transaction lost to the broker may take before the producer is dropped
(its successor's ``init_transactions()`` aborts the transaction then)."""


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
    :class:`~connectrt.runtime.source.at_least_once.AtLeastOnceDelivery`: the batch sender notes
    offsets in either (:class:`~connectrt.runtime.source.delivery.PendingOffsets`).
    :class:`~connectrt.runtime.source.transactional.TransactionalDelivery` adds the boundaries.
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
        stopping: Callable[[], bool] = lambda: False,
    ) -> None:
        self._id = task_id
        self._task = task
        self.settings = settings
        self.offsets_store = store
        self._errors = errors
        self._metrics = metrics
        self._timeout = timeout_s
        self.pending: dict[bytes, Mapping[str, Any] | None] = {}
        self.pending_records = 0
        self.delivery_callback: DeliveryCallback | None = None  # the producer's on_delivery
        self.in_transaction = False
        self._partitions = 1
        self._began = 0.0  # time.monotonic() when the open transaction began
        self._stopping = stopping
        self._known = KnownCommits()

    # -- lifecycle ---------------------------------------------------------------------------
    def open_transactions(self, producer: KafkaProducer) -> None:
        """Fence older instances of this task, then read the committed offsets: all of them,
        up to the last transaction this task committed (:meth:`_read_known_commits`). The
        producer asks for its id first (:func:`request_producer_id`, naming no topic: the
        offsets topic may not exist yet, and a metadata request naming it would create it with
        the broker's defaults): ``init_transactions()`` took 0.51 s instead of 0.06 in half of
        the starts measured without it."""
        request_producer_id(producer, None)
        try:
            producer.init_transactions(self._timeout)
        except KafkaException as e:
            raise TaskFailure(
                self._id,
                TaskStage.TASK_START,
                f"init_transactions for transactional.id {self.settings.transactional_id} "
                f"failed: {e.args[0].str() if e.args else e!r}",
            ) from e
        self.offsets_store.start()
        self._partitions = max(1, self.offsets_store.log.partition_count)
        self._read_known_commits()

    def _read_known_commits(self) -> None:
        """After a restart in place: read the offsets topic on until the view shows every
        offset this task's transactions committed (or the one of the commit the broker left
        in doubt, :class:`~connectrt.runtime.source.known_commits.KnownCommits`), so that the
        task never starts from before a transaction it committed and sends that batch again.
        ``init_transactions()`` has finished every earlier transaction of this
        ``transactional.id``; a view that still misses one is not yet complete. Whether a
        commit in doubt went through shows only in a read that went past its records, so with
        one in doubt the topic is first read to its high watermark (``refresh``: that waits for
        every transaction still open in it to be decided; this task's own were decided by
        ``init_transactions()``). Raises :class:`ConnectError` when the view does not catch up
        within the task's timeout (the restart then tries again); nothing to check on a task's
        first start."""
        store = self.offsets_store
        if self._known.in_doubt:
            store.refresh(self._timeout)
        stale = self._known.stale_keys(store.get)
        if stale:
            log.warning(
                "Task %s: the offsets read after init_transactions() miss the last transaction "
                "this task committed (for %d source partition(s), e.g. %r: read %r, committed "
                "%r); reading the offsets topic %s on until they show it",
                self._id,
                len(stale),
                stale[0],
                store.get(stale[:1]).get(stale[0]),
                self._known.committed.get(stale[0]),
                self.settings.offsets_topic,
            )
            deadline = time.monotonic() + self._timeout
            while stale:
                left = deadline - time.monotonic()
                if left <= 0 or self._stopping():
                    raise ConnectError(
                        f"The offsets topic {self.settings.offsets_topic} read for task "
                        f"{self._id} did not show the last transaction it committed within "
                        f"{self._timeout:.0f} s (source partition {stale[0]!r}: read "
                        f"{store.get(stale[:1]).get(stale[0])!r}, committed "
                        f"{self._known.committed.get(stale[0])!r}); not starting the task "
                        f"from an older offset"
                    )
                try:
                    store.refresh(max(0.5, min(left, _RETRY_SLICE_S)))
                except ConnectError as e:
                    log.debug("Task %s: reading the offsets topic on: %s", self._id, e)
                stale = self._known.stale_keys(store.get)
            log.warning(
                "Task %s: the offsets read now show the last transaction this task committed",
                self._id,
            )
        self._known.settle(store.get)

    def close_store(self) -> None:
        """Stop reading the offsets topic (:meth:`open_transactions` reads it again)."""
        self.offsets_store.stop()

    def begin(self, producer: KafkaProducer) -> None:
        """Open a transaction unless one is open."""
        if not self.in_transaction:
            producer.begin_transaction()
            self.in_transaction = True
            self._began = time.monotonic()

    def set_task(self, task: SourceTask) -> None:
        """The task whose ``commit()`` is called after each commit (a restarted task)."""
        self._task = task

    # -- boundaries --------------------------------------------------------------------------
    def commit(self, producer: KafkaProducer, check_delivery: Callable[[], None]) -> bool:
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
            sent: dict[bytes, bytes | None] = {}
            for key, value in snapshot.items():
                if value is not None:
                    validate_offset_map("offset", value)
                encoded = sent[key] = encode_value(value)
                producer.produce(topic, encoded, key, java_partition(key, self._partitions))
            self._known.sending(sent)
            self._commit_riding_out(producer)
            self._known.committed_now()
            self.in_transaction = False
            check_delivery()
        except Exception as e:
            self._known.lost()  # recorded by the coordinator or not: a restart reads which
            self._metrics.offset_commit_failures += 1
            lost = e.reason if isinstance(e, TransactionLost) else lost_reason(e)
            if lost is not None:
                self.drop(producer, lost, fatal=_fatal(e))
                raise e if isinstance(e, TransactionLost) else TransactionLost(lost) from e
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

    def _commit_riding_out(self, producer: KafkaProducer) -> None:
        """``commit_transaction()``, called again while its failure is retriable (the broker
        does not answer: ``_TIMED_OUT``), until the commit has waited ``max.block.ms`` or the
        transaction has been open ``transaction.timeout.ms``, or the task is stopping; then
        :class:`TransactionLost`. Other failures are raised as they are."""
        started = time.monotonic()
        deadline = min(
            started + self.settings.max_block_ms / 1000.0,
            self._began + self.settings.transaction_timeout_ms / 1000.0,
        )
        attempts = 0
        while True:
            attempts += 1
            left = deadline - time.monotonic()
            try:
                producer.commit_transaction(max(0.5, min(left, _RETRY_SLICE_S, self._timeout)))
            except KafkaException as e:
                err = kafka_error(e)
                if err is None or not err.retriable() or err.fatal() or err.txn_requires_abort():
                    raise
                waited = time.monotonic() - started
                if time.monotonic() >= deadline or self._stopping():
                    raise TransactionLost(
                        f"the transaction could not commit within {waited:.1f} s "
                        f"(max.block.ms {self.settings.max_block_ms}, transaction.timeout.ms "
                        f"{self.settings.transaction_timeout_ms}): {err.str()}"
                    ) from e
                if attempts == 1:
                    log.warning(
                        "Task %s: transaction commit not done yet, retrying while the "
                        "transaction is valid (%.0f s left): %s",
                        self._id,
                        max(0.0, deadline - time.monotonic()),
                        err.str(),
                    )
                continue
            if attempts > 1:
                log.warning(
                    "Task %s: transaction committed after %d attempts (%.1f s)",
                    self._id,
                    attempts,
                    time.monotonic() - started,
                )
            return

    def _forget_open_transaction(self) -> bool:
        """Drop the pending offsets and mark no transaction open; whether one was (then it
        counts as aborted)."""
        self.pending = {}
        self.pending_records = 0
        if not self.in_transaction:
            return False
        self.in_transaction = False
        self._metrics.transactions_aborted += 1
        return True

    def drop(self, producer: KafkaProducer, reason: str, fatal: bool) -> None:
        """The open transaction is lost to the broker: abort it if the producer can within a
        few seconds (not when ``fatal``), and drop the pending offsets. What is not aborted is
        aborted by the broker when the next producer with this ``transactional.id``
        initializes, or when the transaction times out."""
        if not self._forget_open_transaction():
            return
        if fatal:
            return
        try:
            producer.abort_transaction(_QUICK_ABORT_S)
            log.warning("Task %s: transaction aborted (%s)", self._id, reason)
        except KafkaException as e:
            log.warning(
                "Task %s: transaction not aborted by this producer (%s): %s; the next producer "
                "with this transactional.id aborts it",
                self._id,
                reason,
                _text(e),
            )

    def abort(
        self, producer: KafkaProducer, reason: str = "requested", fatal: bool = False
    ) -> None:
        """Abort the open transaction (if any) and drop the pending offsets. A producer in a
        fatal state (``fatal``: fenced by a newer instance, say) cannot abort: it is not asked
        to, and the transaction is left to the broker, which aborts it when the newer producer
        with this ``transactional.id`` initializes (or when it times out)."""
        if not self._forget_open_transaction():
            return
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
