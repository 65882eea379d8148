# Why one module over 450 lines: the Fetch request, the batch parser and the abort bookkeeping
# form one wire-level reader; each part is of no use without the others.
"""A topic's read_committed view, computed from its record batches and transaction markers.

(One module a little over the house size: see "Why one module" below.)

A ``read_committed`` consumer of Apache Kafka never returns the records of an aborted
transaction: the broker tells it which ones were aborted and the client drops their batches.
The embedded broker (Tansu) does not do that (it hides only *open* transactions), so a
consumer cannot show what Apache Kafka's would. This module reads what the broker *stores*
instead and computes the view itself:

1. It sends ``Fetch`` requests (version 4, ``READ_UNCOMMITTED``) over a plain socket and reads
   every record batch of a partition up to the high watermark, with each batch's producer id,
   its transactional and control flags and its records.
2. A control batch carries a transaction marker: its one record's key is ``(version: int16,
   type: int16)``, type 0 ``ABORT`` and 1 ``COMMIT``. The marker ends the transaction of its
   producer id that is open at that point of the log.
3. A record is *committed* when its batch is not transactional, or when the next marker of its
   producer id after it is ``COMMIT``; *aborted* when that marker is ``ABORT``; *open* when
   there is no marker after it yet (Apache Kafka holds a read_committed consumer at the first
   open record, the last stable offset).

:func:`committed_view` returns all three, per partition, in log order. The fetch response's
``aborted_transactions`` list (what Apache Kafka hands a read_committed client) is kept too, so
a test can say whether the broker fills it.

On Apache Kafka a test asserts with the broker's own ``read_committed`` consumer:
:func:`consume_committed` reads a partition as such a consumer does (up to the last stable
offset), and :func:`consumer_mismatch` says where it disagrees with the computed view (the
view then stays a cross-check; on the embedded broker it is the only read_committed view).

Only what a test needs is implemented: one broker (the one in ``bootstrap``, which must lead
every partition read, as the embedded broker does), record batches of magic 2, no compression
or gzip. Not thread-safe; one call opens and closes its own connection.

Why one module a little over the house size: the Fetch request, the batch parser, the
marker bookkeeping and the read_committed comparison are one chain a test reads top to
bottom; split, each part would only be called by the next.
"""

from __future__ import annotations

import gzip
import socket
import struct
import time
from dataclasses import dataclass, field
from typing import cast

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, TopicPartition
from confluent_kafka.admin import AdminClient

__all__ = [
    "ABORT",
    "COMMIT",
    "Batch",
    "CommittedView",
    "PartitionView",
    "Record",
    "Transaction",
    "committed_view",
    "consume_committed",
    "consumer_mismatch",
    "read_batches",
]

ABORT = 0
COMMIT = 1

_FETCH = 1
_FETCH_VERSION = 4
_READ_UNCOMMITTED = 0
_TRANSACTIONAL = 0x10
_CONTROL = 0x20
_COMPRESSION = 0x07
_GZIP = 1


@dataclass(frozen=True)
class Record:
    """One record as stored: its offset, key, value and headers (raw bytes)."""

    offset: int
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...] = ()


@dataclass(frozen=True)
class Batch:
    """One stored record batch (magic 2) and its records."""

    base_offset: int
    producer_id: int
    producer_epoch: int
    transactional: bool
    control: bool
    records: tuple[Record, ...]

    @property
    def marker(self) -> int | None:
        """``ABORT`` or ``COMMIT`` for a control batch's marker, ``None`` otherwise."""
        if not self.control or not self.records or self.records[0].key is None:
            return None
        _version, kind = struct.unpack(">hh", self.records[0].key[:4])
        return int(kind)


@dataclass(frozen=True)
class Transaction:
    """One ended transaction of one producer in one partition: its records and its marker."""

    producer_id: int
    producer_epoch: int
    marker_offset: int
    kind: int
    """``ABORT`` or ``COMMIT``."""
    records: tuple[Record, ...]


@dataclass
class PartitionView:
    """What one partition holds, split as a read_committed consumer of Apache Kafka splits it."""

    committed: list[Record] = field(default_factory=list)
    aborted: list[Record] = field(default_factory=list)
    open: list[Record] = field(default_factory=list)
    transactions: list[Transaction] = field(default_factory=list)
    """Every ended transaction (committed or aborted, with no records or some), in the log
    order of their markers."""
    aborted_transactions: list[tuple[int, int]] = field(default_factory=list)
    """``(producer_id, first_offset)`` as the broker listed them in its fetch responses."""
    high_watermark: int = 0


CommittedView = dict[int, PartitionView]


def read_batches(
    bootstrap: str, topic: str, partition: int, timeout: float = 30.0
) -> tuple[list[Batch], int, list[tuple[int, int]]]:
    """Every stored batch of one partition up to its high watermark, the high watermark, and
    the ``aborted_transactions`` the broker sent with them."""
    host, port = _first_address(bootstrap)
    batches: list[Batch] = []
    aborted_listed: list[tuple[int, int]] = []
    with socket.create_connection((host, port), timeout=timeout) as sock:
        offset, high_watermark, correlation = 0, -1, 0
        while True:
            correlation += 1
            sock.sendall(_fetch_request(correlation, topic, partition, offset))
            response = _read_response(sock, correlation)
            high_watermark, listed, records = _parse_fetch(response, topic, partition)
            aborted_listed.extend(listed)
            new = [b for b in _parse_batches(records) if b.base_offset >= offset]
            if not new:
                if offset >= high_watermark:
                    break
                raise RuntimeError(
                    f"{topic}[{partition}]: the broker returned no batch at offset {offset} "
                    f"below its high watermark {high_watermark}"
                )
            batches.extend(new)
            last = new[-1]
            offset = (last.records[-1].offset + 1) if last.records else last.base_offset + 1
            if offset >= high_watermark:
                break
    return batches, high_watermark, aborted_listed


def committed_view(bootstrap: str, topic: str, timeout: float = 30.0) -> CommittedView:
    """The read_committed view of every partition of ``topic`` (see the module docstring)."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    metadata = admin.list_topics(topic, timeout=timeout)
    described = metadata.topics[topic]
    if described.error is not None:
        raise RuntimeError(f"{topic}: {described.error}")
    view: CommittedView = {}
    for partition in sorted(described.partitions):
        batches, high_watermark, listed = read_batches(bootstrap, topic, partition, timeout)
        part = _split(batches)
        part.high_watermark = high_watermark
        part.aborted_transactions = listed
        view[partition] = part
    return view


def consume_committed(
    bootstrap: str, topic: str, partition: int = 0, timeout: float = 60.0
) -> list[Record]:
    """What a ``read_committed`` consumer of the broker returns from one partition, read from
    the beginning to partition EOF (on Apache Kafka, the last stable offset: the records of an
    open transaction and everything after them are not returned yet; the records of aborted
    transactions never are). Only Apache Kafka's consumers drop aborted records (see the module
    docstring)."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"committed-view-{topic}",
            "enable.auto.commit": False,
            "enable.partition.eof": True,
            "isolation.level": "read_committed",
        }
    )
    records: list[Record] = []
    try:
        consumer.assign([TopicPartition(topic, partition, OFFSET_BEGINNING)])
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for msg in consumer.consume(1000, 0.5):
                error = msg.error()
                if error is not None and error.code() == KafkaError._PARTITION_EOF:
                    return records
                if error is not None:
                    raise RuntimeError(f"{topic}[{partition}]: {error}")
                offset = msg.offset()
                assert offset is not None
                pairs = cast("list[tuple[str, bytes | None]]", msg.headers() or [])
                headers = tuple(pairs)
                records.append(Record(offset, msg.key(), msg.value(), headers))
        raise RuntimeError(f"{topic}[{partition}]: no partition EOF within {timeout:g} s")
    finally:
        consumer.close()


def consumer_mismatch(view: PartitionView, consumed: list[Record]) -> str | None:
    """None when a read_committed consumer returned exactly the records ``view`` computed as
    committed (offsets and values) below its first open record, else what differs."""
    first_open = min((r.offset for r in view.open), default=None)
    expected = [
        (r.offset, r.value) for r in view.committed if first_open is None or r.offset < first_open
    ]
    got = [(r.offset, r.value) for r in consumed]
    if got == expected:
        return None
    extra = sorted(set(got) - set(expected))
    missing = sorted(set(expected) - set(got))
    aborted = {r.offset for r in view.aborted}
    shown_aborted = [o for o, _ in extra if o in aborted]
    return (
        f"the read_committed consumer returned {len(got)} records, the computed view "
        f"{len(expected)} committed: {len(extra)} more (aborted among them: "
        f"{shown_aborted[:5]}), {len(missing)} missing (e.g. {missing[:5]})"
    )


def _split(batches: list[Batch]) -> PartitionView:
    """Sort each record by the next marker of its producer id (or none yet)."""
    view = PartitionView()
    pending: dict[int, list[Record]] = {}
    for batch in batches:
        if batch.control:
            kind = batch.marker
            if kind not in (ABORT, COMMIT):
                raise ValueError(f"control batch at {batch.base_offset}: marker type {kind}")
            offset = batch.records[0].offset if batch.records else batch.base_offset
            ended = pending.pop(batch.producer_id, [])
            view.transactions.append(
                Transaction(batch.producer_id, batch.producer_epoch, offset, kind, tuple(ended))
            )
            (view.committed if kind == COMMIT else view.aborted).extend(ended)
        elif batch.transactional:
            pending.setdefault(batch.producer_id, []).extend(batch.records)
        else:
            view.committed.extend(batch.records)
    for records in pending.values():
        view.open.extend(records)
    for records in (view.committed, view.aborted, view.open):
        records.sort(key=lambda r: r.offset)
    return view


# -- the wire format ------------------------------------------------------------------------


def _first_address(bootstrap: str) -> tuple[str, int]:
    first = bootstrap.split(",")[0].strip()
    if "://" in first:
        first = first.split("://", 1)[1]
    host, _, port = first.rpartition(":")
    return host.strip("[]"), int(port)


def _string(s: str) -> bytes:
    raw = s.encode()
    return struct.pack(">h", len(raw)) + raw


def _fetch_request(correlation: int, topic: str, partition: int, offset: int) -> bytes:
    header = struct.pack(">hhi", _FETCH, _FETCH_VERSION, correlation) + _string("committed-view")
    body = struct.pack(">iiiib", -1, 100, 1, 8 << 20, _READ_UNCOMMITTED)
    body += struct.pack(">i", 1) + _string(topic)
    body += struct.pack(">i", 1) + struct.pack(">iqi", partition, offset, 4 << 20)
    message = header + body
    return struct.pack(">i", len(message)) + message


def _recv(sock: socket.socket, n: int) -> bytes:
    chunks, left = [], n
    while left:
        chunk = sock.recv(min(left, 1 << 20))
        if not chunk:
            raise ConnectionError("the broker closed the connection mid-response")
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def _read_response(sock: socket.socket, correlation: int) -> bytes:
    (size,) = struct.unpack(">i", _recv(sock, 4))
    data = _recv(sock, size)
    (got,) = struct.unpack_from(">i", data, 0)
    if got != correlation:
        raise RuntimeError(f"fetch response for request {got}, expected {correlation}")
    return data[4:]


class _Reader:
    def __init__(self, data: bytes, pos: int = 0) -> None:
        self.data, self.pos = data, pos

    def unpack(self, fmt: str) -> tuple[int, ...]:
        values = struct.unpack_from(fmt, self.data, self.pos)
        self.pos += struct.calcsize(fmt)
        return values

    def int8(self) -> int:
        return self.unpack(">b")[0]

    def int16(self) -> int:
        return self.unpack(">h")[0]

    def int32(self) -> int:
        return self.unpack(">i")[0]

    def int64(self) -> int:
        return self.unpack(">q")[0]

    def take(self, n: int) -> bytes:
        out = self.data[self.pos : self.pos + n]
        if len(out) != n:
            raise ValueError("truncated")
        self.pos += n
        return out

    def string(self) -> str:
        n = self.int16()
        return "" if n < 0 else self.take(n).decode()

    def varint(self) -> int:
        shift = result = 0
        while True:
            byte = self.data[self.pos]
            self.pos += 1
            result |= (byte & 0x7F) << shift
            if not byte & 0x80:
                break
            shift += 7
        return (result >> 1) ^ -(result & 1)  # zigzag

    def varbytes(self) -> bytes | None:
        n = self.varint()
        return None if n < 0 else self.take(n)


def _parse_fetch(
    response: bytes, topic: str, partition: int
) -> tuple[int, list[tuple[int, int]], bytes]:
    """``(high_watermark, aborted_transactions, records)`` of the one partition fetched."""
    r = _Reader(response)
    r.int32()  # throttle_time_ms
    for _ in range(r.int32()):
        name = r.string()
        for _ in range(r.int32()):
            index, error = r.int32(), r.int16()
            high_watermark = r.int64()
            r.int64()  # last_stable_offset
            listed: list[tuple[int, int]] = []
            count = r.int32()
            for _ in range(max(count, 0)):
                producer_id, first_offset = r.int64(), r.int64()
                listed.append((producer_id, first_offset))
            size = r.int32()
            records = b"" if size < 0 else r.take(size)
            if name == topic and index == partition:
                if error:
                    raise RuntimeError(f"{topic}[{partition}]: fetch error code {error}")
                return high_watermark, listed, records
    raise RuntimeError(f"{topic}[{partition}] missing from the fetch response")


_BATCH_HEADER = ">qiibIhiqqqhii"  # base offset .. record count (61 bytes)
_BATCH_HEADER_SIZE = struct.calcsize(_BATCH_HEADER)


def _parse_batches(data: bytes) -> list[Batch]:
    """The complete magic-2 batches in a fetch response's records (a partial last one, which
    the broker may send at the size limit, is left for the next fetch)."""
    batches: list[Batch] = []
    pos = 0
    while len(data) - pos >= 12:
        base_offset, length = struct.unpack_from(">qi", data, pos)
        end = pos + 12 + length
        if end > len(data):
            break
        (
            _base,
            _length,
            _epoch,
            magic,
            _crc,
            attributes,
            _last_delta,
            _first_ts,
            _max_ts,
            producer_id,
            producer_epoch,
            _sequence,
            count,
        ) = struct.unpack_from(_BATCH_HEADER, data, pos)
        if magic != 2:
            raise ValueError(f"record batch at offset {base_offset}: magic {magic}, expected 2")
        payload = data[pos + _BATCH_HEADER_SIZE : end]
        compression = attributes & _COMPRESSION
        if compression == _GZIP:
            payload = gzip.decompress(payload)
        elif compression:
            raise ValueError(
                f"record batch at offset {base_offset}: compression codec {compression} is "
                "not supported here (use compression.type=none or gzip)"
            )
        batches.append(
            Batch(
                base_offset=base_offset,
                producer_id=producer_id,
                producer_epoch=producer_epoch,
                transactional=bool(attributes & _TRANSACTIONAL),
                control=bool(attributes & _CONTROL),
                records=tuple(_parse_records(payload, base_offset, count)),
            )
        )
        pos = end
    return batches


def _parse_records(payload: bytes, base_offset: int, count: int) -> list[Record]:
    r = _Reader(payload)
    out: list[Record] = []
    for _ in range(count):
        length = r.varint()
        end = r.pos + length
        r.int8()  # attributes
        r.varint()  # timestamp delta
        offset_delta = r.varint()
        key = r.varbytes()
        value = r.varbytes()
        headers = []
        for _ in range(r.varint()):
            name = r.varbytes() or b""
            headers.append((name.decode(), r.varbytes()))
        r.pos = end
        out.append(Record(base_offset + offset_delta, key, value, tuple(headers)))
    return out
