"""What a source task's poll loop asks of its delivery guarantee: one protocol, two classes.

:class:`~connectrt.runtime.source.runner.SourceTaskRunner` runs one poll loop for every source
task; how the produced records and their source offsets become durable is the business of a
:class:`SourceDelivery`, chosen once when the runner is built:

* :class:`~connectrt.runtime.source.at_least_once.AtLeastOnceDelivery`: offsets stored every
  ``offset.flush.interval.ms`` and on stop, once the records before them are acknowledged;
* :class:`~connectrt.runtime.source.transactional.TransactionalDelivery` (KIP-618): records
  and offsets written in one transaction per boundary (``transaction.boundary``), an abort
  writing neither, a transaction lost to the broker restarting the task in place.

The loop calls the hooks in this order, all on the task's thread: :meth:`~SourceDelivery.open`
before the task starts; per iteration :meth:`~SourceDelivery.before_pause` (paused only),
:meth:`~SourceDelivery.dispatch` (a non-empty poll), :meth:`~SourceDelivery.after_poll`, then
:meth:`~SourceDelivery.commit` when :attr:`~SourceDelivery.commit_interval_s` has passed; when
the loop fails, :meth:`~SourceDelivery.lost_reason` (and, if it answers, the restart hooks);
:meth:`~SourceDelivery.on_stop` and :meth:`~SourceDelivery.close` at the end. Hooks that may
commit get the runner's ``commit`` (a commit timed as the task's ``commit`` call).
The restart hooks have defaults, those of a delivery that never restarts in place (which
at-least-once inherits by subclassing the protocol).

The batch sender (:class:`~connectrt.runtime.source.sender.SourceBatchSender`) sees only the
:class:`PendingOffsets` part: it notes the offsets of what it produced or skipped there, and
gives every record it produces the ``delivery_callback`` it finds there (at-least-once tracks
acknowledgements by it: :mod:`connectrt.runtime.source.ack_epochs`). The runner hands the
sender's failed-delivery handler to :meth:`~SourceDelivery.track_deliveries` once.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Protocol

from connectrt.api.records import SourceRecord
from connectrt.api.source_batch import SourceRecordBatch
from connectrt.api.task import SourceTask, TransactionContext
from connectrt.runtime.clients.kafka import KafkaError, KafkaMessage, KafkaProducer
from connectrt.storage.offsets import OffsetStore

__all__ = [
    "Commit",
    "DeliveryCallback",
    "PendingOffsets",
    "Polled",
    "ProducerFactory",
    "SendSegment",
    "SourceDelivery",
]

Polled = list[SourceRecord] | SourceRecordBatch
"""A non-empty ``poll()`` result, as the loop hands it on."""
SendSegment = Callable[[Polled, KafkaProducer], None]
"""The loop's transform-convert-produce step for a run of polled records."""
Commit = Callable[[], bool]
"""The runner's offset commit (timed as the task's ``commit`` call); True if it happened."""
ProducerFactory = Callable[[dict[str, Any]], KafkaProducer]
"""Builds the task's producer from its librdkafka config."""
DeliveryCallback = Callable[[KafkaError | None, KafkaMessage], object]
"""A ``produce`` delivery callback (called for failed deliveries only, unless the task overrides
``commit_record``)."""


class PendingOffsets(Protocol):
    """The offsets not committed yet: what the batch sender writes, once per batch.

    ``pending`` maps the encoded offset-topic key of each source partition to the latest
    source offset of a record produced (or skipped) since the last commit; ``pending_records``
    counts the records produced since then. ``delivery_callback``, read once per batch, is
    given to ``produce`` with every record (None: the producer's own ``on_delivery``).
    """

    pending: dict[bytes, Mapping[str, Any] | None]
    pending_records: int
    delivery_callback: DeliveryCallback | None


class SourceDelivery(PendingOffsets, Protocol):
    """A delivery guarantee of a source task (see the module docstring). Used by one runner,
    on its task's thread only."""

    @property
    def commit_interval_s(self) -> float | None:
        """Seconds between timed commits; None: the loop never commits on a timer."""

    @property
    def store(self) -> OffsetStore:
        """Where the task's ``OffsetStorageReader`` reads its committed offsets (after
        :meth:`open`)."""

    @property
    def transaction_context(self) -> TransactionContext | None:
        """The context through which the task defines its own boundaries, if it does."""

    def track_deliveries(self, report: Callable[[KafkaError | None, KafkaMessage], bool]) -> None:
        """Failed deliveries of records produced with ``delivery_callback`` go to ``report``
        (the sender's handler: True when the failure fails the task)."""

    def open(self, create: ProducerFactory, config: dict[str, Any]) -> KafkaProducer | None:
        """Before the task starts: a producer already made ready (and the committed offsets
        read), or None, and the runner creates the producer once the task has started."""

    def dispatch(
        self, polled: Polled, producer: KafkaProducer, send: SendSegment, commit: Commit
    ) -> None:
        """Hand a non-empty polled batch to ``send``, in as many runs as boundaries cut it
        into."""

    def after_poll(self, producer: KafkaProducer, polled: bool, commit: Commit) -> None:
        """After each poll (``polled``: it returned records): a boundary, if one falls here."""

    def before_pause(self, commit: Commit) -> None:
        """The task is about to wait while paused."""

    def commit(self, producer: KafkaProducer, check_delivery: Callable[[], None]) -> bool:
        """Make the pending offsets durable with the records before them (``check_delivery``
        raises a failed delivery). True when committed, or nothing was pending."""

    def on_stop(self, producer: KafkaProducer, failed: bool, commit: Commit) -> None:
        """The loop has ended (``failed``: by a failure): the last commit, or an abort."""

    def close(self, producer: KafkaProducer | None) -> None:
        """Release what :meth:`open` took; ``producer`` (if any) is flushed and dropped next."""

    # The restart in place: the defaults are those of a delivery that never restarts in place
    # (lost_reason() never answers, so the other three are never called).

    def lost_reason(self, error: BaseException) -> str | None:
        """Why ``error``, which ended the loop, calls for a restart in place; None: the task
        fails with it."""
        return None

    def lose(self, producer: KafkaProducer, reason: str) -> None:
        """Restart in place, first step: give up ``producer`` (the caller then destroys it)."""
        return None

    def reopen(
        self,
        create: ProducerFactory,
        config: dict[str, Any],
        stopping: Callable[[], bool],
        wait: Callable[[float], object],
    ) -> KafkaProducer | None:
        """Restart in place, second step: a new ready producer, or None if stopped first."""
        return None

    def restarted(self, task: SourceTask) -> None:
        """Restart in place, last step: ``task`` is the new instance about to start."""
        return None
