"""The byte format of source offsets, identical to Kafka Connect's offsets topic.

Keys are ``["<connector>",{<source partition>}]`` and values ``{<source offset>}``, both compact
JSON as Kafka Connect's internal ``JsonConverter`` (``schemas.enable=false``) writes them. Keys
are compared as bytes, so the partition map's insertion order matters and is kept. ``bytes``
values are written as base64 strings (what JsonConverter does for ``byte[]``); they come back as
strings, as in Kafka Connect.
"""

from __future__ import annotations

import base64
import math
from collections.abc import Mapping
from typing import Any

import orjson

from connectrt.errors import DataError

__all__ = [
    "decode_key",
    "decode_value",
    "encode_key",
    "encode_value",
    "validate_offset_map",
]

_PRIMITIVES = (str, int, float, bool, bytes, bytearray, memoryview)
_INT64_MIN = -(2**63)
_INT64_MAX = 2**63 - 1


def _type_name(value: object) -> str:
    if isinstance(value, Mapping):
        return "MAP"
    if isinstance(value, list | tuple | set | frozenset):
        return "ARRAY"
    return type(value).__name__


def validate_offset_map(kind: str, m: Mapping[Any, Any] | None) -> None:
    """Check that ``m`` has string keys and primitive values, as Kafka Connect requires.

    ``kind`` names the map in the message (``"Offsets"`` or ``"Partitions"``, say). None is
    allowed (it is a tombstone / "no offset"). Raises :class:`DataError`.
    """
    if m is None:
        return
    if not isinstance(m, Mapping):
        raise DataError(f"{kind} must be a map, but got {_type_name(m)}")
    for key, value in m.items():
        if not isinstance(key, str):
            raise DataError(f"{kind} may only use String keys, but got key {key!r}")
        if value is None:
            continue
        if not isinstance(value, _PRIMITIVES):
            raise DataError(
                f"{kind} may only contain primitive types as values, but field '{key}' "
                f"contains {_type_name(value)}"
            )
        if isinstance(value, int) and not isinstance(value, bool):
            if not _INT64_MIN <= value <= _INT64_MAX:
                raise DataError(f"{kind} field '{key}' is outside the 64-bit integer range")
        elif isinstance(value, float) and not math.isfinite(value):
            raise DataError(f"{kind} field '{key}' is not a finite number: {value}")


def _default(value: object) -> str:
    if isinstance(value, bytes | bytearray | memoryview):
        return base64.b64encode(bytes(value)).decode("ascii")
    raise TypeError(f"{type(value).__name__} is not an offset primitive")


def _dumps(value: object) -> bytes:
    try:
        return orjson.dumps(value, default=_default)
    except TypeError as exc:  # orjson.JSONEncodeError is a TypeError
        raise DataError(f"Cannot serialize offset data: {exc}") from exc


def encode_key(connector: str, partition: Mapping[str, Any]) -> bytes:
    """``["<connector>",{partition}]`` as compact JSON, keeping the partition's key order."""
    if not isinstance(connector, str):
        raise DataError(f"Connector name must be a string, got {_type_name(connector)}")
    validate_offset_map("Partitions", partition)
    # dict() keeps insertion order; orjson needs a real dict.
    return _dumps([connector, dict(partition)])


def encode_value(offset: Mapping[str, Any] | None) -> bytes | None:
    """The offset map as compact JSON; None gives None (a tombstone)."""
    if offset is None:
        return None
    validate_offset_map("Offsets", offset)
    return _dumps(dict(offset))


def decode_key(data: bytes | None) -> tuple[str, dict[str, Any]] | None:
    """``(connector, partition)``, or None for anything but a ``[string, object]`` pair.

    Never raises: readers of the offsets topic skip records they do not understand.
    """
    if data is None:
        return None
    try:
        parsed = orjson.loads(data)
    except (orjson.JSONDecodeError, TypeError, ValueError):
        return None
    if (
        isinstance(parsed, list)
        and len(parsed) == 2
        and isinstance(parsed[0], str)
        and isinstance(parsed[1], dict)
    ):
        return parsed[0], parsed[1]
    return None


def decode_value(data: bytes | None) -> dict[str, Any] | None:
    """The offset map; None for a tombstone or a JSON ``null``.

    Raises :class:`DataError` when the bytes are not JSON or not a JSON object.
    """
    if data is None:
        return None
    try:
        parsed = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise DataError(f"Offset value is not valid JSON: {exc}") from exc
    if parsed is None:
        return None
    if not isinstance(parsed, dict):
        raise DataError(f"Offset value must be a JSON object, got {type(parsed).__name__}")
    return parsed
