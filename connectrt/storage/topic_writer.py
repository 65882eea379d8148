"""The producer side of a :class:`~connectrt.storage.kafka_log.TopicLog`.

:class:`TopicWriter` writes records to one topic through the log's idempotent producer, either
queued (:meth:`TopicWriter.send`, delivery failures collected for :meth:`TopicWriter.flush`) or
waited for one by one (:meth:`TopicWriter.send_and_wait`, which returns where each record was
written).

Lifecycle: the log creates its writer with itself and hands it the producer
(:meth:`TopicWriter.attach`) once the topic's partitions are known; :meth:`TopicWriter.detach`
takes it back when the log stops (the log flushes it). Without a producer every write raises
:class:`ConnectError`.

Transactional mode (standby workers' leader, :meth:`TopicWriter.take_transactional_id`): every
:meth:`TopicWriter.send_and_wait` is one transaction, so a producer fenced by a successor's
``init_transactions`` (same ``transactional.id``) gets nothing committed; its fatal error calls
``on_fenced`` once and every later write raises :class:`FencedWriteError`. Queued writes
(``send``) go to a :class:`~connectrt.storage.transaction_batches.TransactionBatches`, whose
thread commits them in batches, one transaction each (``flush`` waits for them).

Threading: ``send``/``flush``/``send_and_wait`` may be called from any thread; delivery
callbacks run on whichever thread polls the producer. Transactions are serialized by a lock.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable
from typing import Any

from confluent_kafka import KafkaError, KafkaException, Message, Producer

from connectrt.errors import ConnectError
from connectrt.storage.transaction_batches import TransactionBatches

__all__ = ["FencedWriteError", "TopicWriter"]

DeliveryCallback = Callable[[KafkaError | None, Message], None]


class FencedWriteError(ConnectError):
    """A transactional writer was fenced: another producer with its ``transactional.id``
    initialised transactions (a successor leader). Nothing of the failed write is visible to
    read_committed readers."""


class TopicWriter:
    """Writes ``(key, value)`` records to ``topic``.

    ``timeout`` is the default bound of :meth:`flush` and :meth:`send_and_wait` and how long a
    full local queue is waited out. ``bootstrap_servers`` and ``last_client_error`` (the most
    recent error the log's clients reported) only go into error messages.
    """

    def __init__(
        self,
        topic: str,
        *,
        timeout: float,
        bootstrap_servers: str,
        last_client_error: Callable[[], str | None],
    ) -> None:
        self.topic = topic
        self._timeout = timeout
        self._bootstrap_servers = bootstrap_servers
        self._last_client_error = last_client_error
        self._producer: Producer | None = None
        self._transactional = False
        self._fenced: str | None = None
        self._on_fenced: Callable[[str], None] | None = None
        self._txn_lock = threading.Lock()
        self._batches: TransactionBatches | None = None
        self._errors_lock = threading.Lock()
        self._delivery_errors: list[str] = []

    # -- lifecycle --------------------------------------------------------------------------

    def attach(self, producer: Producer) -> None:
        """Write through ``producer`` from now on; ignored once a transactional id was taken
        (:meth:`take_transactional_id` may come first: the log then starts transactional)."""
        with self._txn_lock:
            if not self._transactional:
                self._producer = producer

    def take_transactional_id(
        self, config: dict[str, Any], on_fenced: Callable[[str], None], timeout: float | None
    ) -> None:
        """Write from now on through a new producer of ``config`` (which names a
        ``transactional.id``), one transaction per :meth:`send_and_wait`. Its
        ``init_transactions`` fences any other producer with that id (an earlier leader's: its
        open transaction is aborted, its later writes fail); ``on_fenced(reason)`` is called
        once when this one is fenced in turn. Raises ConnectError if the id cannot be taken
        within ``timeout`` (default: the constructor's)."""
        limit = self._timeout if timeout is None else timeout
        producer = Producer(config)
        try:
            producer.init_transactions(limit)
        except KafkaException as exc:
            raise ConnectError(
                f"Could not take transactional.id {config.get('transactional.id')} for topic "
                f"{self.topic}: {exc}"
            ) from exc
        with self._txn_lock:
            previous, self._producer = self._producer, producer
            self._transactional = True  # from now on attach() keeps this producer
            self._on_fenced = on_fenced
            self._fenced = None
        if previous is not None:
            previous.flush(limit)

    def detach(self) -> Producer | None:
        """Stop writing; return the producer (None if none was attached) for the caller to
        flush. Queued transactional writes not yet committed are dropped (flush first)."""
        batches, self._batches = self._batches, None
        if batches is not None:
            batches.stop()
        with self._txn_lock:
            producer, self._producer = self._producer, None
            self._transactional = False  # a restarted log takes its id again (or not)
        return producer

    # -- writing ----------------------------------------------------------------------------

    def send(self, key: bytes | None, value: bytes | None, partition: int | None = None) -> None:
        """Queue one record (non-blocking). Delivery errors surface in :meth:`flush`. In
        transactional mode the record goes into the next batch transaction (``partition`` must
        then be None: the key chooses) and a fenced writer raises :class:`FencedWriteError`."""
        if self._transactional:
            if partition is not None:
                raise ConnectError(f"Transactional writes to {self.topic} name no partition")
            self._queued_batches().put(key, value)
            return
        self._produce(key, value, partition, self._on_delivery)

    def _queued_batches(self) -> TransactionBatches:
        with self._txn_lock:
            if self._batches is None:
                self._batches = TransactionBatches(
                    self.topic, lambda entries: self.send_and_wait(entries), FencedWriteError
                )
            return self._batches

    def flush(self, timeout: float | None = None) -> None:
        """Wait until every queued record is acknowledged; raise ConnectError on any failure."""
        producer = self._require_producer()
        limit = self._timeout if timeout is None else timeout
        batches = self._batches
        if batches is not None:
            batches.flush(limit)
        remaining = producer.flush(limit)
        with self._errors_lock:
            errors, self._delivery_errors = self._delivery_errors, []
        if errors:
            raise ConnectError(
                f"{len(errors)} record(s) to topic {self.topic} failed: {'; '.join(errors[:3])}"
            )
        if remaining:
            raise ConnectError(
                f"{remaining} record(s) to topic {self.topic} were not acknowledged within "
                f"{limit} s (last client error: {self._last_client_error()})"
            )

    def send_and_wait(
        self,
        entries: Iterable[tuple[bytes | None, bytes | None]],
        timeout: float | None = None,
    ) -> list[tuple[int, int]]:
        """Write ``(key, value)`` records and wait for all acknowledgements.

        Returns ``(partition, offset)`` per record, in input order. Raises ConnectError when any
        record failed or ``timeout`` (default: the constructor's) passed; records not yet
        acknowledged then may or may not be written later. In transactional mode the records
        are one transaction: committed all together, or (ConnectError) none of them.
        """
        if self._transactional:
            with self._txn_lock:
                return self._send_in_transaction(list(entries), timeout)
        return self._send_and_wait(entries, timeout)

    def _send_in_transaction(
        self, items: list[tuple[bytes | None, bytes | None]], timeout: float | None
    ) -> list[tuple[int, int]]:
        if self._fenced is not None:
            raise FencedWriteError(f"Writes to {self.topic} are fenced: {self._fenced}")
        producer = self._require_producer()
        limit = self._timeout if timeout is None else timeout
        try:
            producer.begin_transaction()
            results = self._send_and_wait(items, limit)
            producer.commit_transaction(limit)
            return results
        except KafkaException as exc:
            error = exc.args[0]
            if error.fatal():
                self._fenced = f"{error.str()} (another leader took over)"
                on_fenced = self._on_fenced
                if on_fenced is not None:
                    on_fenced(f"its writes to {self.topic} were fenced: {error.str()}")
                raise FencedWriteError(
                    f"Writes to {self.topic} are fenced: {self._fenced}"
                ) from exc
            if error.txn_requires_abort():
                producer.abort_transaction(limit)
            raise ConnectError(f"Could not write to topic {self.topic}: {exc}") from exc
        except ConnectError:
            try:
                producer.abort_transaction(limit)
            except KafkaException as abort_error:
                raise ConnectError(
                    f"Could not write to topic {self.topic}: {abort_error}"
                ) from abort_error
            raise

    def _send_and_wait(
        self,
        entries: Iterable[tuple[bytes | None, bytes | None]],
        timeout: float | None,
    ) -> list[tuple[int, int]]:
        producer = self._require_producer()
        items = list(entries)
        batch = _Batch(len(items))
        for index, (key, value) in enumerate(items):
            self._produce(key, value, None, batch.callback(index))
        limit = self._timeout if timeout is None else timeout
        deadline = time.monotonic() + limit
        while not batch.done.is_set():
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise ConnectError(
                    f"Writing {len(items)} record(s) to topic {self.topic} at "
                    f"{self._bootstrap_servers} was not acknowledged within {limit} s "
                    f"(last client error: {self._last_client_error()})"
                )
            producer.poll(min(0.05, remaining))
        if batch.errors:
            raise ConnectError(
                f"Writing to topic {self.topic} failed for {len(batch.errors)} record(s): "
                f"{'; '.join(batch.errors[:3])}"
            )
        return batch.results()

    def _produce(
        self,
        key: bytes | None,
        value: bytes | None,
        partition: int | None,
        on_delivery: DeliveryCallback,
    ) -> None:
        producer = self._require_producer()
        kwargs: dict[str, Any] = {"key": key, "value": value, "on_delivery": on_delivery}
        if partition is not None:
            kwargs["partition"] = partition
        deadline = time.monotonic() + self._timeout
        while True:
            try:
                producer.produce(self.topic, **kwargs)
                break
            except BufferError as exc:  # local queue full: serve callbacks and retry
                if time.monotonic() > deadline:
                    raise ConnectError(f"Producer queue for {self.topic} stayed full") from exc
                producer.poll(0.05)
            except KafkaException as exc:
                raise ConnectError(f"Could not write to topic {self.topic}: {exc}") from exc
        producer.poll(0)

    def _on_delivery(self, err: KafkaError | None, msg: Message) -> None:
        if err is not None:
            with self._errors_lock:
                self._delivery_errors.append(str(err))

    def _require_producer(self) -> Producer:
        producer = self._producer
        if producer is None:
            raise ConnectError(f"TopicLog({self.topic}) is not started")
        return producer


class _Batch:
    """Acknowledgement tracking for one ``send_and_wait`` call."""

    def __init__(self, size: int) -> None:
        self._lock = threading.Lock()
        self._outstanding = size
        self._results: list[tuple[int, int]] = [(-1, -1)] * size
        self.errors: list[str] = []
        self.done = threading.Event()
        if size == 0:
            self.done.set()

    def callback(self, index: int) -> DeliveryCallback:
        def on_delivery(err: KafkaError | None, msg: Message) -> None:
            with self._lock:
                if err is not None:
                    self.errors.append(str(err))
                else:
                    self._results[index] = (msg.partition() or 0, msg.offset() or 0)
                self._outstanding -= 1
                if self._outstanding == 0:
                    self.done.set()

        return on_delivery

    def results(self) -> list[tuple[int, int]]:
        with self._lock:
            return list(self._results)
