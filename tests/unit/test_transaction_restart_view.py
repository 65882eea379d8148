"""An exactly-once source task restarted in place after a transaction was lost to the broker
starts from offsets that show every transaction it committed (:mod:`.known_commits`, wired into
:meth:`~connectrt.runtime.source.transactions.TransactionalOffsets.open_transactions`).

The failure this guards against: the offsets topic read back after the new producer's
``init_transactions()`` misses the transaction the old producer committed last (a view read
short of its offsets record); the task then starts from the offset before it and sends that
committed batch again, which a ``read_committed`` consumer sees twice. The offsets store here
is a stand-in whose reads are scripted (which value each read shows), so that a view behind
the commits is certain, not a race; the real outage is ``tests/integration/
test_broker_outage.py``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace

import pytest
from confluent_kafka import KafkaError, KafkaException

from connectrt.errors import ConnectError
from connectrt.runtime.config.exactly_once import exactly_once_settings
from connectrt.runtime.config.worker import WorkerConfig
from connectrt.runtime.metrics import TaskMetrics
from connectrt.runtime.source.known_commits import KnownCommits
from connectrt.runtime.source.transaction_errors import TransactionLost
from connectrt.runtime.source.transactions import TransactionalOffsets
from connectrt.runtime.tasks.error_handling import ErrorHandler, ErrorPolicy
from connectrt.runtime.tasks.runner import TaskId
from connectrt.storage.offset_codec import encode_value
from tests.plugins.eos_sequence import EosSequenceTask

_KEY = b'["c",{"task":0}]'
_FLUSH_TIMEOUT = KafkaError(
    KafkaError._TIMED_OUT,
    "Failed to flush all outstanding messages within the API timeout: 51 message(s) remaining",
    retriable=True,
)


class _Producer:
    """A transactional producer whose ``commit_transaction`` answers with scripted errors."""

    def __init__(self, *errors: KafkaError) -> None:
        self.errors = list(errors)
        self.produced: list[bytes | None] = []

    def list_topics(self, topic: str | None = None, timeout: float = -1) -> None:
        pass

    def init_transactions(self, timeout: float) -> None:
        pass

    def begin_transaction(self) -> None:
        pass

    def produce(self, topic: str, value: bytes | None, key: bytes, partition: int) -> None:
        self.produced.append(value)

    def commit_transaction(self, timeout: float) -> None:
        if self.errors:
            raise KafkaException(self.errors.pop(0))

    def abort_transaction(self, timeout: float) -> None:
        raise KafkaException(_FLUSH_TIMEOUT)  # the broker is away


class _Log:
    partition_count = 1


class _ScriptedStore:
    """An offsets store whose view of ``_KEY`` after each ``start``/``refresh`` is the next
    of ``views`` (the last one repeats): a read that is behind, then one that caught up."""

    def __init__(self) -> None:
        self.log = _Log()
        self.views: list[bytes | None] = [None]
        self.current: bytes | None = None
        self.reads = 0

    def _read(self) -> None:
        self.reads += 1
        self.current = self.views.pop(0) if len(self.views) > 1 else self.views[0]

    def start(self) -> None:
        self._read()

    def refresh(self, timeout: float | None = None) -> None:
        self._read()

    def stop(self) -> None:
        pass

    def get(self, keys: Iterable[bytes]) -> dict[bytes, bytes | None]:
        return {k: self.current if k == _KEY else None for k in keys}


def _seq(n: int) -> bytes | None:
    return encode_value({"seq": n})


def _txn(store: _ScriptedStore, timeout_s: float = 30.0) -> TransactionalOffsets:
    worker = WorkerConfig.from_props({"exactly.once.source.support": "enabled", "group.id": "g"})
    eos = exactly_once_settings(worker, {}, "c", 0)
    assert eos is not None
    eos = replace(eos, transaction_timeout_ms=0, max_block_ms=0)  # no riding out here
    metrics = TaskMetrics("c", 0)
    task_id = TaskId("c", 0)
    return TransactionalOffsets(
        task_id,
        EosSequenceTask(),
        eos,
        store=store,  # type: ignore[arg-type]  # the scripted stand-in
        errors=ErrorHandler(task_id, ErrorPolicy(), metrics),
        metrics=metrics,
        timeout_s=timeout_s,
    )


def _committed_then_lost(txn: TransactionalOffsets) -> None:
    """The task commits seq 2000, then the commit of seq 2050 is lost to the broker."""
    txn.open_transactions(_Producer())  # type: ignore[arg-type]
    txn.pending = {_KEY: {"seq": 2000}}
    assert txn.commit(_Producer(), lambda: None)  # type: ignore[arg-type]
    txn.pending = {_KEY: {"seq": 2050}}
    with pytest.raises(TransactionLost):
        txn.commit(_Producer(_FLUSH_TIMEOUT), lambda: None)  # type: ignore[arg-type]


def test_a_restart_reads_on_until_the_view_shows_the_last_committed_transaction() -> None:
    """The first read after ``init_transactions()`` still shows seq 1950 (the view before the
    last commit); the restart reads on and starts from seq 2000, the offset it committed, not
    from 1950 (which would send 1950-1999 again)."""
    store = _ScriptedStore()
    txn = _txn(store)
    _committed_then_lost(txn)
    store.views = [_seq(1950), _seq(1950), _seq(2000)]
    reads = store.reads
    txn.open_transactions(_Producer())  # type: ignore[arg-type]
    assert store.reads - reads == 3  # the start, then two refreshes until seq 2000 showed
    assert store.get([_KEY]) == {_KEY: _seq(2000)}


def test_the_commit_the_broker_left_in_doubt_is_read_past_before_the_task_starts() -> None:
    """The lost commit (seq 2050) was recorded by the coordinator before the broker died and
    completed by the new producer's ``init_transactions()``, but the first read after it still
    shows seq 2000 (the commit before): with a commit in doubt the topic is read on to its end
    before the view is trusted, so the task starts from 2050, not from 2000 (which would send
    2000-2049 a second time). From then on 2050 counts as committed."""
    store = _ScriptedStore()
    txn = _txn(store)
    _committed_then_lost(txn)
    store.views = [_seq(2000), _seq(2050)]
    reads = store.reads
    txn.open_transactions(_Producer())  # type: ignore[arg-type]
    assert store.reads - reads == 2  # the start, then the read to the end
    assert store.get([_KEY]) == {_KEY: _seq(2050)}
    # A second restart whose first read shows seq 2000 is now behind: read on to 2050.
    store.views = [_seq(2000), _seq(2050)]
    reads = store.reads
    txn.open_transactions(_Producer())  # type: ignore[arg-type]
    assert store.reads - reads == 2


def test_the_commit_in_doubt_that_did_not_go_through() -> None:
    """Read to its end, the topic still shows seq 2000: the commit in doubt was aborted (by
    ``init_transactions()``), and the task starts from 2000, the last committed offset."""
    store = _ScriptedStore()
    txn = _txn(store)
    _committed_then_lost(txn)
    store.views = [_seq(2000)]
    reads = store.reads
    txn.open_transactions(_Producer())  # type: ignore[arg-type]
    assert store.reads - reads == 2
    assert store.get([_KEY]) == {_KEY: _seq(2000)}


def test_a_view_that_never_shows_the_commit_fails_the_restart_attempt() -> None:
    """A view that stays behind within the task's timeout is refused with ``ConnectError``
    (the restart tries again with a new producer) rather than restarting from before it."""
    store = _ScriptedStore()
    txn = _txn(store, timeout_s=0.2)
    _committed_then_lost(txn)
    store.views = [_seq(1950)]
    with pytest.raises(ConnectError, match="did not show the last transaction it committed"):
        txn.open_transactions(_Producer())  # type: ignore[arg-type]


def test_known_commits_per_key() -> None:
    """Keys the task never wrote are not checked; a tombstone committed must read as absent;
    a key first written by the commit in doubt may read as absent (that commit was aborted)."""
    known = KnownCommits()
    view: dict[bytes, bytes | None] = {}

    def get(keys: Iterable[bytes]) -> dict[bytes, bytes | None]:
        return {k: view.get(k) for k in keys}

    assert known.stale_keys(get) == []
    known.sending({b"a": b"1", b"b": None})
    known.committed_now()
    view.update({b"a": b"1", b"b": b"0", b"other": b"9"})
    assert known.stale_keys(get) == [b"b"]  # the tombstone committed is not read yet
    del view[b"b"]
    known.sending({b"c": b"5"})
    known.lost()
    assert known.stale_keys(get) == []  # c absent: the commit in doubt did not go through
    view[b"c"] = b"4"
    assert known.stale_keys(get) == [b"c"]  # c neither absent nor the value in doubt
    view[b"c"] = b"5"
    known.settle(get)
    assert known.committed == {b"a": b"1", b"b": None, b"c": b"5"} and known.in_doubt == {}
