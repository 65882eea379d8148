"""Decoding of the ``pgoutput`` logical replication protocol (version 1), text tuples.

:func:`decode` turns one message payload of the replication stream into a small immutable
object: :class:`Begin`, :class:`Commit`, :class:`Relation`, :class:`Change` (insert, update,
delete), :class:`Truncate`, or None for the messages the connector ignores (origin, type,
logical decoding messages). Layout: PostgreSQL's "Logical Replication Message Formats". Pure
functions: safe from any thread.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from connectrt.api import DataError

__all__ = [
    "UNCHANGED",
    "Begin",
    "Change",
    "Commit",
    "Relation",
    "RelationColumn",
    "Truncate",
    "decode",
    "pg_micros_to_unix_micros",
]

_PG_EPOCH_OFFSET_US = 946_684_800_000_000  # 2000-01-01 - 1970-01-01 in microseconds


class _Unchanged:
    """An unchanged TOASTed value ('u' in a tuple): not sent by the server."""

    def __repr__(self) -> str:
        return "UNCHANGED"


UNCHANGED = _Unchanged()

Tuple = tuple["str | _Unchanged | None", ...]


def pg_micros_to_unix_micros(value: int) -> int:
    """A PostgreSQL timestamp (microseconds since 2000-01-01) as microseconds since 1970."""
    return value + _PG_EPOCH_OFFSET_US


@dataclass(frozen=True)
class Begin:
    final_lsn: int  # the LSN of the transaction's commit record
    commit_ts_us: int  # unix microseconds
    xid: int


@dataclass(frozen=True)
class Commit:
    commit_lsn: int
    end_lsn: int
    commit_ts_us: int


@dataclass(frozen=True)
class RelationColumn:
    name: str
    type_oid: int
    typmod: int
    is_key: bool


@dataclass(frozen=True)
class Relation:
    oid: int
    schema: str
    table: str
    replica_identity: str  # d(efault), n(othing), f(ull), i(ndex)
    columns: tuple[RelationColumn, ...]


@dataclass(frozen=True)
class Change:
    kind: str  # "I", "U" or "D"
    relation_oid: int
    old: Tuple | None  # the old key ('K') or whole old row ('O'), when sent
    old_is_key_only: bool
    new: Tuple | None


@dataclass(frozen=True)
class Truncate:
    relation_oids: tuple[int, ...]


_INT16, _INT32, _UINT32, _INT64, _UINT64 = map(struct.Struct, (">h", ">i", ">I", ">q", ">Q"))


class _Reader:
    __slots__ = ("buf", "pos")

    def __init__(self, buf: bytes) -> None:
        self.buf = buf
        self.pos = 0

    def byte(self) -> str:
        value = chr(self.buf[self.pos])
        self.pos += 1
        return value

    def int8(self) -> int:
        value = self.buf[self.pos]
        self.pos += 1
        return value

    def _number(self, layout: struct.Struct) -> int:
        """The big-endian number at the position (its size per ``layout``), then past it."""
        (value,) = layout.unpack_from(self.buf, self.pos)
        self.pos += layout.size
        return int(value)

    def int16(self) -> int:
        return self._number(_INT16)

    def int32(self) -> int:
        return self._number(_INT32)

    def uint32(self) -> int:
        return self._number(_UINT32)

    def int64(self) -> int:
        return self._number(_INT64)

    def uint64(self) -> int:
        return self._number(_UINT64)

    def string(self) -> str:
        end = self.buf.index(0, self.pos)
        value = self.buf[self.pos : end].decode()
        self.pos = end + 1
        return value

    def tuple(self) -> Tuple:
        count = self.int16()
        values: list[str | _Unchanged | None] = []
        for _ in range(count):
            kind = self.byte()
            if kind == "n":
                values.append(None)
            elif kind == "u":
                values.append(UNCHANGED)
            elif kind == "t":
                length = self.int32()
                values.append(self.buf[self.pos : self.pos + length].decode())
                self.pos += length
            else:
                raise DataError(f"pgoutput: unexpected tuple value kind {kind!r} (binary mode?)")
        return tuple(values)


def decode(payload: bytes) -> Begin | Commit | Relation | Change | Truncate | None:
    """One pgoutput message; None for those the connector does not use."""
    r = _Reader(payload)
    tag = r.byte()
    if tag == "B":
        final_lsn = r.uint64()
        ts = r.int64()
        return Begin(final_lsn, pg_micros_to_unix_micros(ts), r.uint32())
    if tag == "C":
        r.int8()  # flags
        commit_lsn = r.uint64()
        end_lsn = r.uint64()
        return Commit(commit_lsn, end_lsn, pg_micros_to_unix_micros(r.int64()))
    if tag == "R":
        oid = r.uint32()
        schema = r.string()
        table = r.string()
        identity = r.byte()
        columns = []
        for _ in range(r.int16()):
            flags = r.int8()
            name = r.string()
            type_oid = r.uint32()
            columns.append(RelationColumn(name, type_oid, r.int32(), bool(flags & 1)))
        return Relation(oid, schema, table, identity, tuple(columns))
    if tag == "I":
        oid = r.uint32()
        r.byte()  # 'N'
        return Change("I", oid, None, False, r.tuple())
    if tag == "U":
        oid = r.uint32()
        kind = r.byte()
        old: Tuple | None = None
        if kind in ("K", "O"):
            old = r.tuple()
            r.byte()  # 'N'
        return Change("U", oid, old, kind == "K", r.tuple())
    if tag == "D":
        oid = r.uint32()
        kind = r.byte()
        return Change("D", oid, r.tuple(), kind == "K", None)
    if tag == "T":
        count = r.int32()
        r.int8()  # options: CASCADE, RESTART IDENTITY
        return Truncate(tuple(r.uint32() for _ in range(count)))
    return None  # 'O' origin, 'Y' type, 'M' message
