"""Test support for exactly-once sources: reading what :mod:`tests.plugins.eos_sequence` wrote
as Apache Kafka's read_committed consumer would see it.

The records are ``"<task>:<seq>:<attempt>"`` and the source offsets ``{"seq": n}``; the views
come from :func:`connectrt.testing.committed_view.committed_view`, which reads the stored
batches and transaction markers (the embedded broker shows aborted records to its consumers).
On Apache Kafka (``on_kafka``) :func:`view` also reads the partition with Kafka's own
``read_committed`` consumer and requires it to return exactly the records the view calls
committed (below the first open one), so that the assertions over ``committed`` are assertions
over what Kafka's transaction coordinator let through, aborted records hidden by the broker; the
computed view is then the cross-check. Used by the kill test of ``tests/integration`` and the
Spark exactly-once tests.
"""

from __future__ import annotations

import orjson

from connectrt.broker import EmbeddedBroker
from connectrt.testing.committed_view import (
    COMMIT,
    PartitionView,
    committed_view,
    consume_committed,
    consumer_mismatch,
)

__all__ = ["assert_atomic", "is_apache_kafka", "offset_of", "seq_of", "view"]


def is_apache_kafka(broker: object) -> bool:
    """Whether the ``broker`` fixture is Apache Kafka (started for the session, or one the user
    runs), not the embedded broker: its read_committed consumers hide aborted records."""
    return not isinstance(broker, EmbeddedBroker)


def view(bootstrap: str, topic: str, on_kafka: bool = False) -> PartitionView:
    """The read_committed view of a one-partition topic, computed from its markers; with
    ``on_kafka``, checked against Apache Kafka's own read_committed consumer first."""
    computed = committed_view(bootstrap, topic)
    assert list(computed) == [0], computed.keys()
    part = computed[0]
    if on_kafka:
        consumed = consume_committed(bootstrap, topic)
        mismatch = consumer_mismatch(part, consumed)
        assert mismatch is None, f"{topic}: {mismatch}"
        shown = {r.offset for r in consumed} & {r.offset for r in part.aborted}
        assert not shown, f"{topic}: Kafka's read_committed consumer returned aborted {shown}"
    return part


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
