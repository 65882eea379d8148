# Why one module over 450 lines: the snapshot and the stream share the task's connections, its
# resume point and its offsets, which is the whole of the task (values and events are apart).
"""PostgresCdcSourceTask: the initial snapshot, then the pgoutput stream of the slot.

Why one module (over 450 lines): the snapshot and the stream share the task's connections, its
resume point and its offsets, which is the whole of the task.

Lifecycle (runtime contract, :mod:`connectrt.api.task`): ``start`` connects, checks the server
(:func:`~.catalog.check_server`), ensures the publication, reads the committed offset of the
source partition ``{"server": <topic.prefix>}`` and creates the replication slot when it does
not exist (exporting its snapshot when a snapshot is due, so the snapshot and the stream meet at
the slot's consistent point without a gap or an overlap). ``poll`` returns snapshot rows
(``op: r``) table by table, then the stream's changes. ``commit_record`` notes the position of
every record Kafka acknowledged and ``commit``, called once the runtime has stored the offsets,
confirms the slot up to the commit LSN of the newest such record: PostgreSQL releases WAL only
behind what is durably in Kafka and in the offsets, so a crash re-reads and never skips.
``stop`` (another thread) sets a flag; ``poll`` returns within ``poll.interval.ms`` and the
connections are closed under the poll lock.

Positions. A streamed record's offset is ``{"lsn_commit": L, "event": i, ...}``: L is the LSN of
the commit record of its transaction (pgoutput announces it in Begin) and i the record's index in
the transaction. Transactions arrive in commit order, so ``(L, i)`` orders every record. Confirming
the slot at L makes the server send that transaction again after a restart; records at or before
the committed ``(L, i)`` are then skipped, so the restart neither loses nor repeats what the
offsets hold.

Heartbeats (``heartbeat.interval.ms``). While streaming, ``poll`` adds a heartbeat record
(Debezium's, to ``<topic.heartbeat.prefix>.<topic.prefix>``) every interval. Its offset is the
server's WAL end as psycopg2 last saw it (keepalives included) when no transaction is open and
that lies past every record handled, as ``(L, -1)``: everything before it was decoded and sent,
so committing it lets ``commit`` confirm the slot past WAL with no change of the captured
tables, which an idle slot would otherwise keep. Once such a position was confirmed (and no
message streamed since), psycopg2 itself moves the position it reports at its status updates
(every 10 s) to each keepalive's WAL end: an idle slot follows the server between heartbeats.
``poll`` also measures the slot's lag every few seconds (``pg_current_wal_lsn() -
confirmed_flush_lsn``) into a float that the ``slot-lag-bytes`` plugin metric (KIP-877) reads
from the REST threads (a single float store: no lock needed).

Lost connections. A connection error while streaming (a server restart) closes both
connections and ``poll`` reconnects on its own thread, waiting 0, then 0.5 s doubling up to
``retriable.restart.connector.wait.ms`` between attempts (``stop`` wakes the wait) and failing
after ``errors.max.retries`` failed attempts in a row. The server streams again from the slot's
confirmed position; ``_emit`` skips every record up to the newest one handled before the loss
(positions are the same on every read), so the records already returned are not repeated.

Snapshot positions. Tables are read in name order, each ``ORDER BY`` its primary key, and a
snapshot record's offset holds its table (``snapshot_table``) and its key (``snapshot_key``, the
key columns' text). A snapshot interrupted before its last record was committed resumes in a new
(not exported) snapshot after that row: the tables before it are not read again, and its table
continues at the first key after it (a table without a primary key is read again from its start).
Rows that changed between the slot's consistent point and the resumed snapshot are also streamed
after it (the stream starts at the slot's position): at least once for those, never lost.
"""

from __future__ import annotations

import json
import logging
import math
import select
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import psycopg2
import psycopg2.extras

from connectrt.api import ConnectError, RetriableError, SourceRecord, SourceTask

from .catalog import (
    TableInfo,
    captured_tables,
    check_server,
    describe_table,
    ensure_publication,
    format_lsn,
    parse_lsn,
    quote_ident,
    slot_info,
)
from .columns import ColumnInfo
from .config import CdcSettings, parse_settings
from .events import CONNECTOR_VERSION, SourceInfo, TableEvents, heartbeat_record
from .pgoutput import Begin, Change, Commit, Relation, Truncate, decode

__all__ = ["PostgresCdcSourceTask"]

log = logging.getLogger(__name__)

_SLOT_BUSY_WAIT_S = 60.0
_LAG_REFRESH_S = 2.0  # how often poll() measures the slot's lag for /metrics


class _Snapshot:
    """The snapshot in progress: its transaction, the tables left and the row held back (the
    row after it decides whether it is the last of its table)."""

    def __init__(
        self,
        conn: Any,
        tables: list[TableInfo],
        lsn: int,
        txid: int,
        after_key: list[str] | None = None,
    ) -> None:
        self.conn = conn
        self.tables = tables
        self.lsn = lsn
        self.txid = txid
        self.after_key = after_key  # resume the first table after this key (its text)
        self.ts_us = time.time_ns() // 1000
        self.cursor: Any = None
        self.held: tuple[Any, ...] | None = None
        self.first = True
        self.first_in_table = True


@dataclass
class _Retry:
    """Reconnection in progress: failed attempts so far and when the next one is due."""

    next_at: float
    attempts: int = 0


class PostgresCdcSourceTask(SourceTask):
    def __init__(self) -> None:
        self._settings: CdcSettings | None = None
        self._conn: Any = None  # catalog queries (autocommit)
        self._repl: Any = None  # the replication connection
        self._cursor: Any = None  # its cursor, streaming once started
        self._snapshot: _Snapshot | None = None
        self._partition: dict[str, Any] = {}
        self._events: dict[int, TableEvents] = {}  # by relation oid, while streaming
        self._by_name: dict[tuple[str, str], TableEvents] = {}
        self._resume: tuple[int, int] | None = None  # skip records at or before this
        self._txn: Begin | None = None
        self._index = 0
        self._last_commit_lsn: int | None = None
        self._position: tuple[int, int] = (-1, -1)  # of the newest record handled (or skipped)
        self._acked = -1  # the highest lsn_commit of an acknowledged streamed record
        self._confirmed = -1
        self._next_heartbeat = 0.0
        self._lag = math.nan  # bytes of WAL the slot keeps: read by /metrics (another thread)
        self._next_lag_check = 0.0
        self._retry: _Retry | None = None  # reconnecting after a lost connection
        self._stopping = threading.Event()
        self._lock = threading.Lock()

    def version(self) -> str:
        return CONNECTOR_VERSION

    # -- start -----------------------------------------------------------------------------
    def start(self, config: Mapping[str, str]) -> None:
        settings = parse_settings(config)
        self._settings = settings
        self._stopping.clear()
        self._partition = {"server": settings.topic_prefix}
        metrics = self.context.plugin_metrics
        if metrics is not None:
            name = metrics.metric_name(
                "slot-lag-bytes",
                "Bytes of WAL between the server's current position and the replication slot's "
                "confirmed position (what the slot keeps from being removed)",
                {"slot": settings.slot_name},
            )
            metrics.add_metric(name, lambda: self._lag)
        try:
            self._start(settings)
        except psycopg2.Error as e:
            self._close()
            raise ConnectError(
                f"PostgreSQL {settings.host}:{settings.port}/{settings.dbname}: {str(e).strip()}"
            ) from None
        except BaseException:
            self._close()
            raise

    def _start(self, settings: CdcSettings) -> None:
        conn = psycopg2.connect(**settings.dsn())
        conn.autocommit = True
        self._conn = conn
        check_server(conn, settings)
        names = captured_tables(conn, settings)
        ensure_publication(conn, settings, names)
        offset = self.context.offset_storage_reader.offset(self._partition)
        snapshot_done = offset is not None and (
            not offset.get("snapshot") or bool(offset.get("last_snapshot_record"))
        )
        want_snapshot = settings.snapshot and not snapshot_done
        resume_from: tuple[str, list[str] | None] | None = None
        if want_snapshot and offset is not None and offset.get("snapshot_table"):
            key = offset.get("snapshot_key")
            resume_from = (str(offset["snapshot_table"]), None if key is None else json.loads(key))
        if offset is not None and snapshot_done:
            self._resume = (int(offset["lsn_commit"]), int(offset["event"]))
            self._position = self._resume
            # After a snapshot no transaction was streamed yet: Debezium's ``sequence`` starts
            # with null then (its snapshot offsets hold no commit position).
            if not offset.get("snapshot"):
                self._last_commit_lsn = int(offset["lsn_commit"])
        slot = self._wait_for_slot(conn, settings)
        if slot is not None and (slot.plugin != "pgoutput" or slot.database != settings.dbname):
            raise ConnectError(
                f"replication slot '{settings.slot_name}' decodes database '{slot.database}' "
                f"with plugin '{slot.plugin}', not '{settings.dbname}' with pgoutput: set "
                "slot.name to another slot (or drop this one if nothing uses it)"
            )
        if slot is None and offset is not None and snapshot_done:
            raise ConnectError(
                f"replication slot '{settings.slot_name}' no longer exists, but this connector "
                f"has committed offsets (up to LSN {format_lsn(int(offset['lsn_commit']))}): the "
                "changes since then are gone from the server. To start over with a new "
                "snapshot, stop the connector, delete its offsets (DELETE "
                "/connectors/<name>/offsets) and resume it"
            )
        self._repl = psycopg2.connect(
            **settings.dsn(), connection_factory=psycopg2.extras.LogicalReplicationConnection
        )
        cursor = self._repl.cursor()
        self._cursor = cursor
        exported: str | None = None
        consistent = slot.confirmed_flush_lsn if slot is not None else None
        if slot is None:
            mode = "EXPORT_SNAPSHOT" if want_snapshot else "NOEXPORT_SNAPSHOT"
            cursor.execute(
                f"CREATE_REPLICATION_SLOT {quote_ident(settings.slot_name)} LOGICAL pgoutput {mode}"
            )
            _name, point, exported, _plugin = cursor.fetchone()
            consistent = parse_lsn(point)
            log.info("Created replication slot %s at %s", settings.slot_name, point)
        if want_snapshot:
            if exported is None:
                log.warning(
                    "Snapshot of %s taken without the slot's exported snapshot (slot %s "
                    "existed): changes already in the snapshot may be streamed again after it",
                    settings.topic_prefix,
                    settings.slot_name,
                )
            self._begin_snapshot(settings, names, exported, consistent or 0, resume_from)
        else:
            self._start_streaming()

    def _wait_for_slot(self, conn: Any, settings: CdcSettings) -> Any:
        """The slot, once no other process reads it (a killed worker's walsender may take a
        moment to go); fails naming the holder after a minute."""
        deadline = time.monotonic() + _SLOT_BUSY_WAIT_S
        while True:
            slot = slot_info(conn, settings.slot_name)
            if slot is None or slot.active_pid is None:
                return slot
            if time.monotonic() > deadline or self._stopping.is_set():
                raise ConnectError(
                    f"replication slot '{settings.slot_name}' is in use by server process "
                    f"{slot.active_pid} (another connector, or a Debezium connector, with the "
                    "same slot.name): a slot has one reader; give this connector its own "
                    "slot.name"
                )
            self._stopping.wait(0.5)

    def _begin_snapshot(
        self,
        settings: CdcSettings,
        names: list[tuple[str, str]],
        exported: str | None,
        lsn: int,
        resume_from: tuple[str, list[str] | None] | None = None,
    ) -> None:
        """Open the snapshot's transaction (in the slot's exported snapshot when there is one)
        and list the non-empty tables to read; ``resume_from`` (table, key of its last committed
        row) skips the tables before that table and that table's rows up to the key."""
        after_key: list[str] | None = None
        if resume_from is not None:
            table_name, after_key = resume_from
            qualified = [f"{s}.{t}" for s, t in names]
            if table_name in qualified:
                names = names[qualified.index(table_name) :]
            else:  # that table is no longer captured: start at the next one
                names = [n for n, q in zip(names, qualified, strict=True) if q > table_name]
                after_key = None
            log.info(
                "Resuming the snapshot of %s at table %s after key %s",
                settings.topic_prefix,
                table_name,
                after_key,
            )
        snap = psycopg2.connect(**settings.dsn())
        with snap.cursor() as cur:
            cur.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
            if exported is not None:
                cur.execute("SET TRANSACTION SNAPSHOT %s", (exported,))
            cur.execute("SELECT txid_current_if_assigned(), pg_current_snapshot()::text")
            _txid, current = cur.fetchone()
            txid = int(str(current).split(":")[0])
            tables = []
            for schema, table in names:
                info = describe_table(snap, schema, table)
                cur.execute(f"SELECT EXISTS (SELECT 1 FROM {info.qualified})")
                if cur.fetchone()[0]:
                    tables.append(info)
                elif after_key is not None and not tables:
                    after_key = None  # the resumed table is empty now
        if tables and not tables[0].key:
            after_key = None  # no key to resume after: the table is read again
        self._snapshot = _Snapshot(snap, tables, lsn, txid, after_key)
        log.info("Snapshot of %d non-empty tables at LSN %s", len(tables), format_lsn(lsn))
        if not tables:
            self._finish_snapshot()

    def _start_streaming(self) -> None:
        assert self._settings is not None and self._cursor is not None
        self._cursor.start_replication(
            slot_name=self._settings.slot_name,
            decode=False,
            options={
                "proto_version": "1",
                "publication_names": self._settings.publication_name,
            },
        )
        log.info("Streaming from slot %s", self._settings.slot_name)

    # -- poll ------------------------------------------------------------------------------
    def poll(self) -> list[SourceRecord] | None:
        with self._lock:
            if self._stopping.is_set() or self._settings is None:
                stopped = True
            elif self._retry is not None:
                self._reconnect(self._retry)
                return None
            elif self._cursor is None:
                stopped = True
            else:
                stopped = False
                try:
                    self._measure_lag()
                    if self._snapshot is not None:
                        return self._poll_snapshot() or None
                    return self._poll_stream() or None
                except psycopg2.Error as e:
                    if self._snapshot is None and _connection_lost(e):
                        self._connection_lost(e)
                        return None
                    raise self._stream_error(e) from None
        if stopped:
            self._stopping.wait(0.2)
        return None

    def _connection_lost(self, e: psycopg2.Error) -> None:
        """The stream's connection broke (a server restart, a failover, the network): close
        both connections and reconnect from the next ``poll``. The records already returned stay
        returned; the server sends again from the slot's confirmed position and ``_emit`` skips
        everything up to the newest record handled, so nothing is lost or sent twice."""
        assert self._settings is not None
        log.warning(
            "Lost the connection to PostgreSQL %s:%s while streaming from slot %s (%s); "
            "reconnecting",
            self._settings.host,
            self._settings.port,
            self._settings.slot_name,
            str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__,
        )
        self._close_connections()
        self._txn = None
        self._confirmed = -1  # confirm again on the new connection
        self._resume = self._position if self._position[0] >= 0 else self._resume
        self._retry = _Retry(next_at=time.monotonic())

    def _reconnect(self, retry: _Retry) -> None:
        """One reconnection attempt when it is due (else wait up to half a second: ``stop``
        wakes the wait). Waits double from 500 ms up to ``retriable.restart.connector.wait.ms``;
        after ``errors.max.retries`` failed attempts in a row the task fails."""
        settings = self._settings
        assert settings is not None
        delay = retry.next_at - time.monotonic()
        if delay > 0:
            self._stopping.wait(min(delay, 0.5))
            return
        try:
            conn = psycopg2.connect(**settings.dsn())
            conn.autocommit = True
            self._conn = conn
            slot = self._wait_for_slot(conn, settings)
            if slot is None:
                raise ConnectError(
                    f"replication slot '{settings.slot_name}' no longer exists after the "
                    "connection to PostgreSQL was lost: the changes since the last committed "
                    "offset may be gone; delete the connector's offsets to take a new snapshot"
                )
            self._repl = psycopg2.connect(
                **settings.dsn(), connection_factory=psycopg2.extras.LogicalReplicationConnection
            )
            self._cursor = self._repl.cursor()
            self._start_streaming()
        except psycopg2.Error as e:
            self._close_connections()
            retry.attempts += 1
            if 0 <= settings.max_retries < retry.attempts:
                self._retry = None
                raise ConnectError(
                    f"could not reconnect to PostgreSQL {settings.host}:{settings.port}/"
                    f"{settings.dbname} after {retry.attempts - 1} retries "
                    f"(errors.max.retries={settings.max_retries}): {str(e).strip()}"
                ) from None
            wait = min(settings.retry_wait_max_s, 0.5 * 2 ** (retry.attempts - 1))
            log.warning(
                "Reconnection %d to PostgreSQL %s:%s failed (%s); next attempt in %.1f s",
                retry.attempts,
                settings.host,
                settings.port,
                str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__,
                wait,
            )
            retry.next_at = time.monotonic() + wait
            return
        except BaseException:
            self._close_connections()
            self._retry = None
            raise
        log.info(
            "Reconnected to PostgreSQL %s:%s after %d failed attempts; streaming from slot %s",
            settings.host,
            settings.port,
            retry.attempts,
            settings.slot_name,
        )
        self._retry = None

    def _measure_lag(self) -> None:
        """Every few seconds, the bytes between the server's WAL position and the slot's
        confirmed position (for the ``slot-lag-bytes`` metric)."""
        now = time.monotonic()
        if now < self._next_lag_check or self._conn is None or self._settings is None:
            return
        self._next_lag_check = now + _LAG_REFRESH_S
        with self._conn.cursor() as cur:
            cur.execute(
                "SELECT pg_current_wal_lsn() - confirmed_flush_lsn FROM pg_replication_slots "
                "WHERE slot_name = %s",
                (self._settings.slot_name,),
            )
            row = cur.fetchone()
        self._lag = math.nan if row is None or row[0] is None else float(row[0])

    def _stream_error(self, e: psycopg2.Error) -> Exception:
        assert self._settings is not None
        text = str(e).strip()
        if "does not exist" in text and "slot" in text:
            return ConnectError(
                f"replication slot '{self._settings.slot_name}' was dropped while streaming: "
                f"{text}. Changes since the last committed offset may be gone; delete the "
                "connector's offsets to take a new snapshot"
            )
        return ConnectError(f"PostgreSQL replication failed: {text}")

    def _poll_snapshot(self) -> list[SourceRecord]:
        snap = self._snapshot
        settings = self._settings
        assert snap is not None and settings is not None
        out: list[SourceRecord] = []
        while snap.tables and len(out) < settings.max_batch_size:
            info = snap.tables[0]
            events = self._events_for(info)
            if snap.cursor is None:
                snap.cursor = snap.conn.cursor(name=f"cdc_snapshot_{len(snap.tables)}")
                snap.cursor.itersize = settings.snapshot_fetch_size
                snap.cursor.execute(*_snapshot_query(info, snap.after_key))
                snap.after_key = None
                snap.held = snap.cursor.fetchone()
                snap.first_in_table = True
                if snap.held is None:  # the rows after the resumed key are gone
                    snap.cursor.close()
                    snap.cursor = None
                    snap.tables.pop(0)
                    continue
            rows = snap.cursor.fetchmany(settings.max_batch_size - len(out))
            batch = [snap.held, *rows]
            if not rows:  # the held row is the table's last
                snap.cursor.close()
                snap.cursor = None
                snap.tables.pop(0)
                last_table = not snap.tables
                out.extend(self._snapshot_record(events, info, batch[0], True, last_table))
                continue
            for row in batch[:-1]:
                out.extend(self._snapshot_record(events, info, row, False, False))
            snap.held = batch[-1]
        if not snap.tables:
            self._finish_snapshot()
        return out

    def _snapshot_record(
        self,
        events: TableEvents,
        info: TableInfo,
        row: tuple[Any, ...],
        last_in_table: bool,
        last: bool,
    ) -> list[SourceRecord]:
        snap = self._snapshot
        assert snap is not None
        if last:
            marker = "last"
        elif snap.first:
            marker = "first"
        elif snap.first_in_table:
            marker = "first_in_data_collection"
        elif last_in_table:
            marker = "last_in_data_collection"
        else:
            marker = "true"
        snap.first = False
        snap.first_in_table = False
        offset = {
            "lsn": snap.lsn,
            "lsn_commit": snap.lsn,
            "event": -1,
            "txId": snap.txid,
            "ts_usec": snap.ts_us,
            "snapshot": True,
            "last_snapshot_record": last,
            "snapshot_table": f"{info.schema}.{info.table}",
            "snapshot_key": _key_text(info, row),
        }
        source = SourceInfo(snap.ts_us, marker, snap.txid, snap.lsn, None)
        return events.records("r", None, events.row(row), source, self._partition, [offset])

    def _finish_snapshot(self) -> None:
        snap, self._snapshot = self._snapshot, None
        if snap is None:
            return
        snap.conn.rollback()
        snap.conn.close()
        self._resume = (snap.lsn, -1)
        self._position = max(self._position, self._resume)
        self._by_name.clear()
        log.info("Snapshot done; streaming changes after LSN %s", format_lsn(snap.lsn))
        self._start_streaming()

    def _events_for(self, info: TableInfo) -> TableEvents:
        key = (info.schema, info.table)
        events = self._by_name.get(key)
        if events is None or events.table != info:
            assert self._settings is not None
            s = self._settings
            events = TableEvents(
                s.topic_prefix, s.dbname, info, s.decimal_mode, tombstones=s.tombstones_on_delete
            )
            self._by_name[key] = events
        return events

    def _poll_stream(self) -> list[SourceRecord]:
        settings = self._settings
        cursor = self._cursor
        assert settings is not None and cursor is not None
        out: list[SourceRecord] = []
        deadline = time.monotonic() + min(settings.poll_interval_s, 1.0)
        beat = settings.heartbeat_interval_s
        if beat > 0:
            deadline = min(deadline, max(self._next_heartbeat, time.monotonic()))
        while len(out) < settings.max_batch_size and not self._stopping.is_set():
            message = cursor.read_message()
            if message is None:
                if out:
                    break
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    break
                select.select([cursor], [], [], min(remaining, 0.2))
                continue
            self._handle(message.payload, message.data_start, out)
        if beat > 0 and time.monotonic() >= self._next_heartbeat:
            self._next_heartbeat = time.monotonic() + beat
            out.append(self._heartbeat(cursor))
        return out

    def _heartbeat(self, cursor: Any) -> SourceRecord:
        """A heartbeat record at the newest position it is safe to confirm the slot at: the
        server's WAL end as last reported (keepalives included) when no transaction is open and
        it lies past every record handled (all WAL before it was decoded and sent, so what it
        skips holds no change of the captured tables), else the newest record's position."""
        settings = self._settings
        assert settings is not None
        if settings.heartbeat_query:
            with self._conn.cursor() as cur:
                cur.execute(settings.heartbeat_query)
        wal_end = int(cursor.wal_end or 0)
        if self._txn is None and wal_end > self._position[0]:
            self._position = (wal_end, -1)
        lsn, event = self._position
        offset = {
            "lsn": lsn,
            "lsn_commit": lsn,
            "event": event,
            "ts_usec": time.time_ns() // 1000,
            "heartbeat": True,
        }
        return heartbeat_record(
            settings.heartbeat_topic, settings.topic_prefix, self._partition, offset
        )

    def _handle(self, payload: bytes, lsn: int, out: list[SourceRecord]) -> None:
        decoded = decode(payload)
        if isinstance(decoded, Begin):
            self._txn = decoded
            self._index = 0
        elif isinstance(decoded, Commit):
            self._txn = None
            # Debezium's ``sequence`` names the end of the last commit record (the position
            # the stream reports for a Commit message), not its start.
            self._last_commit_lsn = decoded.end_lsn
        elif isinstance(decoded, Relation):
            self._on_relation(decoded)
        elif isinstance(decoded, Change):
            self._on_change(decoded, lsn, out)
        elif isinstance(decoded, Truncate):
            for oid in decoded.relation_oids:
                events = self._events.get(oid)
                if events is not None:
                    self._emit(events, "t", None, None, lsn, out)

    def _on_relation(self, rel: Relation) -> None:
        assert self._settings is not None
        if not self._settings.captures(rel.schema, rel.table):
            self._events.pop(rel.oid, None)
            return
        info = describe_table(self._conn, rel.schema, rel.table)
        by_name = {c.name: c for c in info.columns}
        columns = []
        for column in rel.columns:  # the stream's layout wins over the catalog's current one
            known = by_name.get(column.name)
            if known is None:
                with self._conn.cursor() as cur:
                    cur.execute("SELECT typname FROM pg_type WHERE oid = %s", (column.type_oid,))
                    row = cur.fetchone()
                type_name = row[0] if row else "text"
                known = ColumnInfo(column.name, type_name, "b", column.typmod, False)
            columns.append(known)
        key = tuple(k for k in info.key if any(c.name == k for c in columns))
        layout = TableInfo(rel.schema, rel.table, tuple(columns), key, rel.replica_identity)
        self._events[rel.oid] = self._events_for(layout)

    def _on_change(self, change: Change, lsn: int, out: list[SourceRecord]) -> None:
        events = self._events.get(change.relation_oid)
        if events is None:
            return  # a table the include/exclude lists leave out
        after = events.row(change.new) if change.new is not None else None
        before = events.row(change.old) if change.old is not None else None
        if change.kind == "I":
            self._emit(events, "c", None, after, lsn, out)
        elif change.kind == "U":
            if (
                before is not None
                and after is not None
                and events.key_of(before) != events.key_of(after)
            ):
                # The primary key changed (pgoutput sends the old key): as Debezium, a delete
                # of the old key (and its tombstone), then a create of the new one.
                self._emit(events, "d", before, None, lsn, out)
                self._emit(events, "c", None, after, lsn, out)
            else:
                self._emit(events, "u", before, after, lsn, out)
        else:
            self._emit(events, "d", before, None, lsn, out)

    def _emit(
        self,
        events: TableEvents,
        op: str,
        before: list[Any] | None,
        after: list[Any] | None,
        lsn: int,
        out: list[SourceRecord],
    ) -> None:
        txn = self._txn
        if txn is None:
            raise ConnectError("pgoutput sent a change outside a transaction")
        count = events.records_per_change(op)
        offsets = []
        for _ in range(count):
            offsets.append(
                {
                    "lsn": lsn,
                    "lsn_commit": txn.final_lsn,
                    "event": self._index,
                    "txId": txn.xid,
                    "ts_usec": txn.commit_ts_us,
                }
            )
            self._index += 1
        records = events.records(op, before, after, self._info(txn, lsn), self._partition, offsets)
        last = offsets[-1]
        self._position = max(self._position, (int(last["lsn_commit"]), int(last["event"])))
        resume = self._resume
        if resume is not None:  # skip what was committed before a restart
            records = [r for r in records if _position(r) > resume]
            if records:
                self._resume = None
        out.extend(records)

    def _info(self, txn: Begin, lsn: int) -> SourceInfo:
        return SourceInfo(txn.commit_ts_us, "false", txn.xid, lsn, self._last_commit_lsn)

    # -- offsets ---------------------------------------------------------------------------
    def commit_record(self, record: SourceRecord, metadata: Any | None) -> None:
        offset = record.source_offset
        if offset is not None and not offset.get("snapshot") and int(offset["lsn_commit"]) > 0:
            commit_lsn = int(offset["lsn_commit"])
            if commit_lsn > self._acked:
                self._acked = commit_lsn

    def commit(self) -> None:
        """The offsets of every record acknowledged so far are stored: confirm the slot up to
        the commit LSN of the newest one (its transaction is sent again after a restart and
        filtered by the offsets)."""
        with self._lock:
            cursor = self._cursor
            if cursor is None or self._snapshot is not None or self._acked <= self._confirmed:
                return
            try:
                cursor.send_feedback(
                    write_lsn=self._acked,
                    flush_lsn=self._acked,
                    apply_lsn=self._acked,
                    force=True,
                )
            except psycopg2.Error as e:
                raise RetriableError(f"could not confirm the slot's position: {e}") from None
            self._confirmed = self._acked

    # -- stop ------------------------------------------------------------------------------
    def _close_connections(self) -> None:
        """Close the replication and catalog connections (not the slot)."""
        repl, self._repl, self._cursor = self._repl, None, None
        conn, self._conn = self._conn, None
        _close_quietly_all(repl, conn)

    def stop(self) -> None:
        self._stopping.set()
        with self._lock:
            self._close()

    def _close(self) -> None:
        settings = self._settings
        snap, self._snapshot = self._snapshot, None
        if snap is not None:
            _quietly(snap.conn.close)
        repl, self._repl, self._cursor = self._repl, None, None
        if repl is not None:
            _quietly(repl.close)
        self._retry = None
        conn, self._conn = self._conn, None
        if conn is not None:
            if settings is not None and settings.slot_drop_on_stop:
                with conn.cursor() as cur:
                    _quietly(
                        lambda: cur.execute(
                            "SELECT pg_drop_replication_slot(slot_name) FROM "
                            "pg_replication_slots WHERE slot_name = %s",
                            (settings.slot_name,),
                        )
                    )
            _quietly(conn.close)


def _close_quietly_all(*conns: Any) -> None:
    for conn in conns:
        if conn is not None:
            _quietly(conn.close)


def _connection_lost(e: psycopg2.Error) -> bool:
    """Whether ``e`` means the connection is gone (retry on a new one), not a refusal."""
    text = str(e)
    if "slot" in text and "does not exist" in text:
        return False
    return isinstance(e, (psycopg2.OperationalError, psycopg2.InterfaceError))


def _snapshot_query(info: TableInfo, after_key: list[str] | None) -> tuple[str, tuple[str, ...]]:
    """The SELECT of one table's snapshot: every column as text, in primary key order, from
    the first key after ``after_key`` when resuming (the key's text values, compared in the
    columns' own types). Columns are qualified (``t.``) so that ORDER BY sorts by the key
    columns, not by the text output columns of the same names."""
    columns = ", ".join(f"t.{quote_ident(c.name)}::text" for c in info.columns)
    sql = f"SELECT {columns} FROM {info.qualified} AS t"
    if not info.key:
        return sql, ()
    keys = ", ".join(f"t.{quote_ident(k)}" for k in info.key)
    params: tuple[str, ...] = ()
    if after_key is not None and len(after_key) == len(info.key):
        # Untyped literals: PostgreSQL reads each in its key column's type.
        bounds = ", ".join("%s" for _ in info.key)
        sql += f" WHERE ({keys}) > ({bounds})" if len(info.key) > 1 else f" WHERE {keys} > {bounds}"
        params = tuple(after_key)
    return f"{sql} ORDER BY {keys}", params


def _key_text(info: TableInfo, row: tuple[Any, ...]) -> str | None:
    """The text of a snapshot row's primary key columns as a JSON list (offsets hold only
    primitive values); None for a table without a primary key."""
    if not info.key:
        return None
    names = [c.name for c in info.columns]
    return json.dumps([row[names.index(k)] for k in info.key])


def _position(record: SourceRecord) -> tuple[int, int]:
    offset = record.source_offset
    assert offset is not None
    return int(offset["lsn_commit"]), int(offset["event"])


def _quietly(action: Any) -> None:
    try:
        action()
    except Exception:
        log.debug("ignored while closing", exc_info=True)
