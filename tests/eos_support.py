"""Test support for exactly-once sources: reading what :mod:`tests.plugins.eos_sequence` wrote
as Apache Kafka's read_committed consumer would see it.

The records are ``"<task>:<seq>:<attempt>"`` and the source offsets ``{"seq": n}``; the views
come from :func:`connectrt.testing.committed_view.committed_view`, which reads the stored
batches and transaction markers (the embedded broker shows aborted records to its consumers).
Used by the kill test of ``tests/integration`` and the Spark exactly-once tests.
"""

from __future__ import annotations

import orjson

from connectrt.testing.committed_view import COMMIT, PartitionView, committed_view

__all__ = ["assert_atomic", "offset_of", "seq_of", "view"]


def view(bootstrap: str, topic: str) -> PartitionView:
    """The read_committed view of a one-partition topic, computed from its markers."""
    computed = committed_view(bootstrap, topic)
    assert list(computed) == [0], computed.keys()
    return computed[0]


def seq_of(value: bytes | None) -> tuple[int, str]:
    """``(seq, attempt)`` of a data record ``"<task>:<seq>:<attempt>"``."""
    assert value is not None
    _task, seq, attempt = value.decode().split(":")
    return int(seq), attempt


def offset_of(value: bytes | None) -> int:
    """The ``seq`` an offset record stores."""
    assert value is not None
    return int(orjson.loads(value)["seq"])


def assert_atomic(data: PartitionView, offsets: PartitionView) -> None:
    """Transaction by transaction, the records and their source offset committed together:
    the k-th committed transaction with records in the data topic ends at the seq stored by
    the k-th committed transaction in the offsets topic (neither ahead nor behind)."""
    with_records = [t for t in data.transactions if t.kind == COMMIT and t.records]
    with_offsets = [t for t in offsets.transactions if t.kind == COMMIT and t.records]
    ends = [seq_of(t.records[-1].value)[0] + 1 for t in with_records]
    stored = [offset_of(t.records[-1].value) for t in with_offsets]
    assert ends == stored, (
        f"{len(ends)} committed data transactions ending at {ends[:5]}..{ends[-5:]} but "
        f"{len(stored)} committed offset transactions storing {stored[:5]}..{stored[-5:]}"
    )
