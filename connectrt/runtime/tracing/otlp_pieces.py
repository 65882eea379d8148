"""The byte pieces OTLP spans are made of, for :mod:`connectrt.runtime.tracing.otlp_encoding`.

Protobuf fields of an ``opentelemetry.proto.trace.v1.Span`` written ahead of time: span kinds
and flags, the ``messaging.kafka.offset`` attribute's head by the length of its varint, a
span's length prefix (kept by size), its name, kind and times fields, its trace id field, the
``%``-formats of a traced record's child spans (kept by their sizes, :class:`StageFormats`),
and pools of random span ids (:func:`new_pool`). Pure functions and module constants; the
caches are plain dicts, used by one thread (the exporter process's).
"""

from __future__ import annotations

import struct

from connectrt.runtime.tracing.otlp_wire import CACHE_MAX, length_delimited, varint
from connectrt.runtime.tracing.tracer import new_id

__all__ = [
    "CONSUMER",
    "FLAGS_LOCAL",
    "FLAGS_REMOTE",
    "INTERNAL",
    "LINK_FLAGS_REMOTE",
    "LINK_OFFSET_HEADS",
    "OFFSET_HEADS",
    "PARTITION",
    "POOL_IDS",
    "PRODUCER",
    "StageFormats",
    "new_pool",
    "offset_attribute",
    "span_head",
    "stage_fields",
    "trace_field",
]

# SDK SpanKind values (INTERNAL 0 .. CONSUMER 4) are OTLP's minus one.
INTERNAL, PRODUCER, CONSUMER = 1, 4, 5
FLAGS_LOCAL = b"\x85\x01" + struct.pack("<I", 0x101)  # SAMPLED | CONTEXT_HAS_IS_REMOTE
FLAGS_REMOTE = b"\x85\x01" + struct.pack("<I", 0x301)  # ... | CONTEXT_IS_REMOTE (remote parent)
LINK_FLAGS_REMOTE = b"\x35" + struct.pack("<I", 0x301)
_OFFSET = "messaging.kafka.offset"
PARTITION = "messaging.destination.partition.id"
_ZERO_ID = bytes(8)


_OFFSET_KEY = length_delimited(b"\x0a", _OFFSET.encode())
# The messaging.kafka.offset attribute (a span's field 9) up to its value's varint, by the
# varint's length: KeyValue{key, value: AnyValue{int_value}} (always under 128 bytes).
OFFSET_HEADS = [
    b"\x4a" + bytes((len(_OFFSET_KEY) + 3 + n,)) + _OFFSET_KEY + b"\x12" + bytes((n + 1,)) + b"\x18"
    for n in range(11)
]


LINK_OFFSET_HEADS = [b"\x22" + head[1:] for head in OFFSET_HEADS]  # a link's field 4


def offset_attribute(offset: int) -> bytes:
    """The ``messaging.kafka.offset`` attribute: not cached, offsets differ."""
    value = varint(offset & 0xFFFFFFFFFFFFFFFF)
    return OFFSET_HEADS[len(value)] + value


_HEADS: dict[int, bytes] = {}


def span_head(n: int) -> bytes:
    """A ScopeSpans ``spans`` field's tag (2) and length, for a span of ``n`` bytes (kept)."""
    head = _HEADS.get(n)
    if head is None:
        head = _HEADS[n] = b"\x12" + varint(n)
    return head


def stage_fields(name: str, kind: int, start: int, end: int) -> bytes:
    """A span's name, kind, start and end fields (5 to 8), encoded: the same for every record
    of a batch in a stage."""
    return b"".join(
        (
            length_delimited(b"\x2a", name.encode()),
            b"\x30",
            bytes((kind,)),
            b"\x39",
            start.to_bytes(8, "little"),
            b"\x41",
            end.to_bytes(8, "little"),
        )
    )


def trace_field(trace_id: int) -> bytes:
    """A span's trace id field (1)."""
    return b"\x0a\x10" + trace_id.to_bytes(16, "big")


def _stages(sizes: tuple[int, ...], shared_size: int) -> bytes:
    """The ``%``-format of a traced record's child spans, one per stage (``sizes``: the sizes of
    their name, kind and times fields): per span its length prefix, ``%b`` for the record's
    shared part (its trace id field, then parent id field, attributes and flags; ``shared_size``
    bytes), ``%b`` for the stage's fields and ``%b`` for its own span id. Fields in that order:
    protobuf takes them in any order."""
    return b"".join(span_head(10 + shared_size + size) + b"%b%b\x12\x08%b" for size in sizes)


class StageFormats(dict[tuple[tuple[int, ...], int], bytes]):
    """:func:`_stages` formats by their arguments (the stages' and the shared part's sizes vary
    with the stage names and the offsets' and partitions' lengths only: few)."""

    def __missing__(self, key: tuple[tuple[int, ...], int]) -> bytes:
        if len(self) >= CACHE_MAX:
            self.clear()
        fmt = self[key] = _stages(*key)
        return fmt


POOL_IDS = 1024


def _zero_id_in(pool: bytes) -> bool:
    """Whether one of the 8-byte ids in ``pool`` is zero (an invalid span id)."""
    return any(pool[i : i + 8] == _ZERO_ID for i in range(0, len(pool), 8))


def new_pool(n: int) -> bytes:
    """A pool of random span ids (8 bytes each, none zero): ``n`` of them, or more."""
    count = max(n, POOL_IDS)
    pool = new_id(64 * count).to_bytes(8 * count, "big")
    while _ZERO_ID in pool and _zero_id_in(pool):  # odds 2^-54 a pool
        pool = new_id(64 * count).to_bytes(8 * count, "big")
    return pool
