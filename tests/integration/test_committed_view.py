"""The read_committed view computed from stored batches and markers, on the session's broker.

A transactional producer commits, aborts, leaves a transaction open and is then fenced; a plain
producer writes between. :func:`connectrt.testing.committed_view.committed_view` must sort each
record as Apache Kafka's read_committed consumer does. On Apache Kafka (or a broker the user
runs) the view is checked against the broker's own read_committed consumer; the embedded broker's
consumer shows aborted records, which is why the view is computed from markers there.
"""

from __future__ import annotations

import uuid

import pytest
from confluent_kafka import Producer

from connectrt.broker import EmbeddedBroker
from connectrt.testing.broker_choice import SessionBroker
from connectrt.testing.committed_view import ABORT, COMMIT, committed_view, read_batches
from connectrt.testing.harness import create_topic, read_topic

pytestmark = pytest.mark.integration


def _values(records) -> list[bytes | None]:
    return [r.value for r in records]


def test_commit_abort_open_and_fenced_transactions_are_told_apart(broker: SessionBroker):
    bootstrap = broker.bootstrap_servers
    topic, txid = f"view-{uuid.uuid4().hex[:8]}", f"tx-{uuid.uuid4().hex[:8]}"
    create_topic(bootstrap, topic)
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": txid})
    producer.init_transactions(30)
    producer.begin_transaction()
    for i in range(3):
        producer.produce(topic, f"c1-{i}".encode(), b"k")
    producer.commit_transaction(30)
    producer.begin_transaction()
    for i in range(2):
        producer.produce(topic, f"a-{i}".encode())
    producer.flush(30)
    producer.abort_transaction(30)
    plain = Producer({"bootstrap.servers": bootstrap})
    plain.produce(topic, b"plain", headers=[("h", b"v")])
    plain.flush(30)
    producer.begin_transaction()
    producer.produce(topic, b"c2")
    producer.commit_transaction(30)
    producer.begin_transaction()
    producer.produce(topic, b"open")
    producer.flush(30)

    view = committed_view(bootstrap, topic)[0]
    assert _values(view.committed) == [b"c1-0", b"c1-1", b"c1-2", b"plain", b"c2"]
    assert view.committed[0].key == b"k"
    assert view.committed[3].headers == (("h", b"v"),)
    assert _values(view.aborted) == [b"a-0", b"a-1"]
    assert _values(view.open) == [b"open"]
    assert [t.kind for t in view.transactions] == [COMMIT, ABORT, COMMIT]
    assert [_values(t.records) for t in view.transactions] == [
        [b"c1-0", b"c1-1", b"c1-2"],
        [b"a-0", b"a-1"],
        [b"c2"],
    ]
    # Offsets are positions in the log (markers take one each).
    batches, high_watermark, _listed = read_batches(bootstrap, topic, 0)
    assert high_watermark == 1 + max(r.offset for b in batches for r in b.records)
    assert [r.offset for r in view.committed] == sorted(r.offset for r in view.committed)

    seen = [v for _, v in read_topic(bootstrap, topic)[0]]  # a read_committed consumer
    if isinstance(broker, EmbeddedBroker):
        # The embedded broker's read_committed consumer shows the aborted records (broker.md):
        # the reason this view is computed from markers.
        assert b"a-0" in seen
    else:
        # A real transaction coordinator hides the aborted and the open records: the computed
        # view and the broker's own read_committed consumer agree record for record.
        assert seen == _values(view.committed)

    # A new producer with the same transactional id fences the old one, and the broker ends
    # the open transaction with an ABORT marker.
    fencer = Producer({"bootstrap.servers": bootstrap, "transactional.id": txid})
    fencer.init_transactions(30)
    view = committed_view(bootstrap, topic)[0]
    assert _values(view.aborted) == [b"a-0", b"a-1", b"open"]
    assert not view.open
    assert view.transactions[-1].kind == ABORT
    assert _values(view.committed) == [b"c1-0", b"c1-1", b"c1-2", b"plain", b"c2"]
    if not isinstance(broker, EmbeddedBroker):
        assert [v for _, v in read_topic(bootstrap, topic)[0]] == _values(view.committed)
