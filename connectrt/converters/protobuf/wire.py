"""Confluent's Protobuf framing after the schema-id header: the message-index array.

The array locates the message type within the schema's file: ``[0]`` is the file's first
top-level message, ``[1, 0]`` the first nested type of its second. It is written as zigzag
varints: the count, then each index; the common ``[0]`` is abbreviated to the single byte 0
(what Confluent's serializers write and read).
"""

from __future__ import annotations

from typing import Final

from connectrt.errors import DataError

__all__ = ["FIRST_MESSAGE", "decode_indexes", "encode_indexes"]

FIRST_MESSAGE: Final = b"\x00"


def _zigzag_varint(value: int, out: bytearray) -> None:
    value = (value << 1) ^ (value >> 63)
    while value & ~0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)


def encode_indexes(indexes: list[int] | tuple[int, ...]) -> bytes:
    """The wire form of a message-index array (``b"\\x00"`` for ``[0]``)."""
    if list(indexes) == [0]:
        return FIRST_MESSAGE
    out = bytearray()
    _zigzag_varint(len(indexes), out)
    for index in indexes:
        _zigzag_varint(index, out)
    return bytes(out)


def _read_varint(data: bytes, pos: int) -> tuple[int, int]:
    shift = result = 0
    while True:
        if pos >= len(data):
            raise DataError("Truncated message-index array in Protobuf message")
        byte = data[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            break
        shift += 7
        if shift > 63:
            raise DataError("Invalid varint in Protobuf message-index array")
    return (result >> 1) ^ -(result & 1), pos


def decode_indexes(data: bytes, pos: int) -> tuple[tuple[int, ...], int]:
    """The message-index array at ``data[pos:]`` and the position after it."""
    if pos < len(data) and data[pos] == 0:
        return (0,), pos + 1
    count, pos = _read_varint(data, pos)
    if not 0 < count <= 128:
        raise DataError(f"Invalid message-index count {count} in Protobuf message")
    indexes = []
    for _ in range(count):
        index, pos = _read_varint(data, pos)
        if index < 0:
            raise DataError(f"Invalid message index {index} in Protobuf message")
        indexes.append(index)
    return tuple(indexes), pos
