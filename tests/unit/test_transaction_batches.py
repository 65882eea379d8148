"""TransactionBatches: queued records committed in batches, in order, retried, or dropped fenced.

The commit callable stands for a transactional writer's ``send_and_wait`` (the integration
test ``test_config_topic_fencing`` runs the real one against a broker).
"""

from __future__ import annotations

import threading

import pytest

from connectrt.errors import ConnectError
from connectrt.storage.transaction_batches import Entry, TransactionBatches


class Fenced(ConnectError):
    pass


def test_records_are_committed_in_order_and_a_failed_batch_is_retried_first() -> None:
    committed: list[list[Entry]] = []
    failures = [ConnectError("abortable")]
    gate = threading.Event()

    def commit(entries: list[Entry]) -> None:
        gate.wait(10)
        if failures:
            raise failures.pop()
        committed.append(entries)

    batches = TransactionBatches("status", commit, Fenced)
    try:
        for n in range(5):
            batches.put(b"k", str(n).encode())
        gate.set()
        batches.flush(30)
        values = [value for batch in committed for _key, value in batch]
        assert values == [b"0", b"1", b"2", b"3", b"4"]
        assert len(committed) <= 2  # batched, not one transaction per record
    finally:
        batches.stop()


def test_a_fenced_writer_drops_what_is_queued_and_refuses_later_records() -> None:
    batches = TransactionBatches("status", lambda entries: _raise(Fenced("fenced")), Fenced)
    try:
        batches.put(b"k", b"v")
        with pytest.raises(Fenced):
            batches.flush(30)
        with pytest.raises(Fenced):
            batches.put(b"k", b"w")
    finally:
        batches.stop()


def test_flush_times_out_while_commits_keep_failing() -> None:
    batches = TransactionBatches("status", lambda entries: _raise(ConnectError("down")), Fenced)
    try:
        batches.put(b"k", b"v")
        with pytest.raises(ConnectError, match="not committed within"):
            batches.flush(1.0)
    finally:
        batches.stop()


def _raise(exc: Exception) -> None:
    raise exc
