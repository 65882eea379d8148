"""Queued writes of a transactional topic writer, committed in batches by a thread of their own.

A standby cluster's leader writes its status records through a transactional producer whose
``transactional.id`` a successor takes over (:mod:`connectrt.runtime.herder.leadership`), so that
the broker refuses every write of a deposed leader. Status writes are queued by task threads that
must not wait for the network; :class:`TransactionBatches` takes them, in the order of
:meth:`TransactionBatches.put`, and commits whatever has queued since its last transaction as
one transaction (``commit``: :meth:`connectrt.storage.topic_writer.TopicWriter.send_and_wait`
in transactional mode).

* A batch whose transaction fails with an abortable error is kept and committed again first
  (after a short pause), so records of one key keep their order.
* A fenced writer (:class:`~connectrt.storage.topic_writer.FencedWriteError`) drops the batch and
  everything queued after it: nothing of this writer will ever be committed; later ``put``
  calls raise the same error.

Lifecycle: the writer creates one when its first queued write arrives in transactional mode;
:meth:`stop` ends the thread (records still queued are dropped, with a warning: callers flush
first). Threading: ``put``, ``flush`` and ``stop`` may be called from any thread; ``commit`` runs
on this object's daemon thread only.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from connectrt.errors import ConnectError

__all__ = ["Entry", "TransactionBatches"]

log = logging.getLogger(__name__)

#: One queued record: key and value.
Entry = tuple[bytes | None, bytes | None]

_RETRY_PAUSE_S = 0.5


class TransactionBatches:
    """See the module docstring. ``commit(entries)`` writes ``entries`` as one transaction and
    raises ConnectError (retried) or its subclass ``fenced`` (final) when it cannot."""

    def __init__(
        self,
        topic: str,
        commit: Callable[[list[Entry]], object],
        fenced: type[ConnectError],
    ) -> None:
        self.topic = topic
        self._commit = commit
        self._fenced_type = fenced
        self._cond = threading.Condition()
        self._pending: list[Entry] = []
        self._busy = False
        self._stopped = False
        self._fenced: ConnectError | None = None
        self._last_error: str | None = None
        self._thread = threading.Thread(target=self._run, name=f"transactions-{topic}", daemon=True)
        self._thread.start()

    def put(self, key: bytes | None, value: bytes | None) -> None:
        """Queue one record for the next transaction (non-blocking)."""
        with self._cond:
            if self._fenced is not None:
                raise self._fenced_type(str(self._fenced))
            if self._stopped:
                raise ConnectError(f"Transactional writes to {self.topic} have stopped")
            self._pending.append((key, value))
            self._cond.notify_all()

    def flush(self, timeout: float) -> None:
        """Wait until every record queued so far is committed; raise ConnectError when the
        writer was fenced or ``timeout`` passed first."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while self._pending or self._busy:
                if self._fenced is not None:
                    break
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise ConnectError(
                        f"{len(self._pending)} record(s) to {self.topic} not committed within "
                        f"{timeout} s (last error: {self._last_error})"
                    )
                self._cond.wait(min(remaining, 0.1))
            if self._fenced is not None:
                raise self._fenced_type(str(self._fenced))

    def stop(self, timeout: float = 5.0) -> None:
        """End the thread; records still queued are dropped (logged). Idempotent."""
        with self._cond:
            self._stopped = True
            dropped = len(self._pending)
            self._pending.clear()
            self._cond.notify_all()
        if dropped and self._fenced is None:
            log.warning("%d queued record(s) to %s dropped at stop", dropped, self.topic)
        if self._thread is not threading.current_thread():
            self._thread.join(timeout)

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._pending and not self._stopped:
                    self._cond.wait()
                if self._stopped:
                    return
                batch, self._pending = self._pending, []
                self._busy = True
            try:
                try:
                    self._commit(batch)
                except ConnectError:
                    raise
                except Exception as unexpected:  # kept and retried like an abortable error
                    raise ConnectError(f"{type(unexpected).__name__}: {unexpected}") from unexpected
            except ConnectError as exc:
                with self._cond:
                    self._busy = False
                    if isinstance(exc, self._fenced_type):
                        self._fenced = exc
                        self._pending.clear()
                        self._cond.notify_all()
                        return
                    self._last_error = str(exc)
                    self._pending[:0] = batch  # first again: keys keep their order
                    self._cond.notify_all()
                log.warning(
                    "Transaction of %d record(s) to %s failed: %s", len(batch), self.topic, exc
                )
                time.sleep(_RETRY_PAUSE_S)
                continue
            with self._cond:
                self._busy = False
                self._last_error = None
                self._cond.notify_all()
