"""Why a ``read_committed`` reader of a topic makes no progress: a transaction left undecided.

A ``read_committed`` consumer gets a partition's records only up to its last stable offset
(LSO): the first offset of a transaction not committed or aborted yet. When the producer's
transaction coordinator never writes that transaction's marker, the LSO stays there for good,
and so does every ``read_committed`` reader of the partition: a *hanging transaction*. Apache
Kafka brokers leave one behind, for instance, when a restarted coordinator completes a
transaction before it knows the leaders of the transaction's partitions: it skips their
markers, taking the partitions for deleted ones (its log says "Couldn't find leader endpoint
for partitions"). No client decides such a transaction; an operator aborts it with Kafka's
``kafka-transactions.sh`` (``find-hanging``, then ``abort``), and then restarts the reader: an
exactly-once source task restarted in place keeps waiting for the commit it saw succeed, while a
task restarted through the REST API starts from what a ``read_committed`` reader sees.

:func:`undecided_note` is what a reader that stopped progressing adds to its error: each
partition where the reader stands at the LSO, below the high watermark, with the command that
aborts the transaction starting there. It runs on the reader's thread, only when a read has
stalled, and asks the broker twice (ListOffsets, once per isolation level).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from confluent_kafka import IsolationLevel, TopicPartition
from confluent_kafka.admin import AdminClient, OffsetSpec

log = logging.getLogger(__name__)

__all__ = ["undecided_note"]


def undecided_note(
    admin_config: Mapping[str, Any],
    topic: str,
    positions: Mapping[int, int],
    timeout: float = 10.0,
) -> str:
    """A sentence for a stalled reader's error (starting with "; "), naming each partition of
    ``topic`` whose reader ``positions`` (next offset per partition) stand at the last stable
    offset below the high watermark; "" when there is none or the broker does not answer.
    ``admin_config`` is an admin client's configuration; only its ``bootstrap.servers`` is
    shown."""
    partitions = sorted(positions)
    try:
        admin = AdminClient(dict(admin_config))
        stable = _latest(admin, topic, partitions, IsolationLevel.READ_COMMITTED, timeout)
        high = _latest(admin, topic, partitions, IsolationLevel.READ_UNCOMMITTED, timeout)
    except Exception:
        log.debug("asking for the offsets of %s failed", topic, exc_info=True)
        return ""
    stuck = [p for p in partitions if positions[p] >= stable[p] and stable[p] < high[p]]
    if not stuck:
        return ""
    where = ", ".join(
        f"partition {p} from offset {stable[p]} (high watermark {high[p]})" for p in stuck
    )
    first = stuck[0]
    bootstrap = admin_config.get("bootstrap.servers", "BOOTSTRAP")
    return (
        f"; a transaction is undecided in {where}: a read_committed reader cannot pass it. If "
        f"it stays undecided (a hanging transaction, e.g. markers a broker skipped at a "
        f"restart), abort it: kafka-transactions.sh --bootstrap-server {bootstrap} abort "
        f"--topic {topic} --partition {first} --start-offset {stable[first]} (and its other "
        f"partitions: kafka-transactions.sh find-hanging lists them), then restart the task "
        f"or worker that reads it"
    )


def _latest(
    admin: AdminClient,
    topic: str,
    partitions: list[int],
    isolation: IsolationLevel,
    timeout: float,
) -> dict[int, int]:
    """Each partition's end offset for ``isolation`` (read_committed: the last stable offset)."""
    futures = admin.list_offsets(
        {TopicPartition(topic, p): OffsetSpec.latest() for p in partitions},
        isolation_level=isolation,
        request_timeout=timeout,
    )
    return {tp.partition: future.result(timeout).offset for tp, future in futures.items()}
