"""``TopicLog.start`` at a snapshot (``start_at_snapshot``: an exactly-once task's view of its
offsets topic) reads up to the end the broker reported when it began, and a partition EOF below
that end does not stop it: such an EOF comes from a fetch answered before the snapshot was
taken, at a last stable offset the broker has moved past since (a transaction completed in
between), and stopping there would leave out a committed offset.

The consumer here is a stand-in that hands out scripted events (an EOF below the snapshot's end,
then the records up to it), so the order is certain rather than a race against a broker.
"""

from __future__ import annotations

from confluent_kafka import KafkaError

from connectrt.storage.kafka_log import TopicLog


class _Eof:
    def code(self) -> int:
        return KafkaError._PARTITION_EOF

    def fatal(self) -> bool:
        return False


class _Message:
    """A consumed event: a record (``eof`` False) or a partition EOF at ``offset``."""

    def __init__(self, offset: int, eof: bool = False) -> None:
        self._offset = offset
        self._eof = eof

    def error(self) -> _Eof | None:
        return _Eof() if self._eof else None

    def partition(self) -> int:
        return 0

    def offset(self) -> int:
        return self._offset

    def key(self) -> bytes:
        return b"k"

    def value(self) -> bytes:
        return str(self._offset).encode()


class _Consumer:
    """Returns one scripted batch per ``consume`` call, then nothing."""

    def __init__(self, *batches: list[_Message]) -> None:
        self.batches = list(batches)

    def consume(self, num_messages: int, timeout: float) -> list[_Message]:
        return self.batches.pop(0) if self.batches else []


def _log(read: list[int]) -> TopicLog:
    return TopicLog(
        "offsets",
        {},
        {},
        {},
        lambda key, value, partition, offset: read.append(offset),
        timeout=5.0,
        start_at_snapshot=True,
    )


def test_an_eof_below_the_snapshot_does_not_end_the_read() -> None:
    """Records 0-4, an EOF at 5 (the stable offset a first fetch saw), then records 5-7 of a
    transaction that completed before the snapshot (end 8): all eight are read."""
    read: list[int] = []
    log = _log(read)
    log._consumer = _Consumer(  # type: ignore[assignment]  # the scripted stand-in
        [_Message(o) for o in range(5)] + [_Message(5, eof=True)],
        [_Message(o) for o in range(5, 8)],
        [_Message(8, eof=True)],
    )
    log._positions = {0: 0}
    log._read_until_eof([0], {0: 8})
    assert read == list(range(8))
    assert log.positions() == {0: 8}


def test_without_a_snapshot_an_eof_ends_the_read() -> None:
    """``start_at_snapshot`` off: the first EOF is the end (what ``start`` always did)."""
    read: list[int] = []
    log = _log(read)
    log._consumer = _Consumer(  # type: ignore[assignment]
        [_Message(o) for o in range(5)] + [_Message(5, eof=True)],
        [_Message(o) for o in range(5, 8)],
    )
    log._positions = {0: 0}
    log._read_until_eof([0], None)
    assert read == list(range(5))
