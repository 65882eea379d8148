"""The exactly-once offsets table: Kafka positions stored next to the rows they produced.

One row per (connector, topic, partition) holding the next offset to consume. The task upserts
the positions of a batch inside the batch's own transaction, so the database always holds
exactly the rows of the offsets it records; on partition assignment the task reads them back
and rewinds the consumer there. Columns: ``connector``, ``topic``, ``kafka_partition``,
``next_offset``. Used on the task thread only.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from connectors.jdbc.sink.statements import upsert
from connectrt.api import TopicPartition

__all__ = ["OffsetsTable"]


class OffsetsTable:
    """Reads and writes one connector's offsets in ``name`` (created on :meth:`ensure`)."""

    def __init__(self, engine: Engine, name: str, connector: str, quote: bool) -> None:
        ident = (lambda n: sa.sql.quoted_name(n, True)) if quote else (lambda n: n)
        self._connector = connector
        self._dialect = engine.dialect.name
        self._engine = engine
        self.table = sa.Table(
            ident(name),
            sa.MetaData(),
            sa.Column("connector", sa.String(255), primary_key=True),
            sa.Column("topic", sa.String(255), primary_key=True),
            sa.Column("kafka_partition", sa.Integer, primary_key=True, autoincrement=False),
            sa.Column("next_offset", sa.BigInteger, nullable=False),
        )
        pk = ("connector", "topic", "kafka_partition")
        self._upsert = (
            upsert(self.table, self._dialect, pk, ("next_offset",))
            if self._dialect in ("postgresql", "sqlite", "mysql")
            else None
        )

    def ensure(self) -> None:
        """Create the table when missing (tolerates a concurrent create by another task)."""
        try:
            with self._engine.begin() as conn:
                self.table.create(conn, checkfirst=True)
        except sa.exc.DBAPIError:
            if not sa.inspect(self._engine).has_table(self.table.name):
                raise

    def read(self, partitions: Iterable[TopicPartition]) -> dict[TopicPartition, int]:
        """The stored next offsets of ``partitions`` (absent when never written)."""
        wanted = {TopicPartition(t, p) for t, p in partitions}
        if not wanted:
            return {}
        t = self.table
        query = sa.select(t.c.topic, t.c.kafka_partition, t.c.next_offset).where(
            t.c.connector == self._connector, t.c.topic.in_(sorted({tp.topic for tp in wanted}))
        )
        with self._engine.connect() as conn:
            rows = conn.execute(query).all()
        out = {TopicPartition(topic, int(p)): int(o) for topic, p, o in rows}
        return {tp: o for tp, o in out.items() if tp in wanted}

    def delete(self, conn: Connection, partitions: Iterable[TopicPartition]) -> None:
        """Forget the stored offsets of ``partitions`` (the consumer group's apply again)."""
        t = self.table
        for tp in partitions:
            conn.execute(
                sa.delete(t).where(
                    t.c.connector == self._connector,
                    t.c.topic == tp.topic,
                    t.c.kafka_partition == tp.partition,
                )
            )

    def write(self, conn: Connection, offsets: Mapping[tuple[str, int], int]) -> None:
        """Upsert ``offsets`` (next offset per (topic, partition)) in the caller's transaction."""
        rows = [
            {"connector": self._connector, "topic": t, "kafka_partition": p, "next_offset": o}
            for (t, p), o in offsets.items()
        ]
        if not rows:
            return
        if self._upsert is not None:
            conn.execute(self._upsert, rows)
            return
        t = self.table
        for row in rows:  # portable fallback: UPDATE, INSERT when nothing matched
            updated = conn.execute(
                sa.update(t)
                .where(
                    t.c.connector == row["connector"],
                    t.c.topic == row["topic"],
                    t.c.kafka_partition == row["kafka_partition"],
                )
                .values(next_offset=row["next_offset"])
            )
            if updated.rowcount == 0:
                conn.execute(sa.insert(t), row)
