"""The records of the registry's ``_schemas`` topic (Confluent's format) and the versions
they describe.

State changes are expressed as ``(key, value)`` records (JSON objects; ``value=None`` is a
tombstone):

* ``{"keytype":"SCHEMA","subject":s,"version":v,"magic":1}`` ->
  ``{"subject":s,"version":v,"id":n,"schema":"...","deleted":false}``
* ``{"keytype":"CONFIG","subject":s|null,"magic":0}`` -> ``{"compatibilityLevel":"BACKWARD"}``
  (``subject: null`` is the global level)
* ``DELETE_SUBJECT`` records (written by Confluent) mark versions up to ``version`` deleted;
  other key types (``NOOP``, ...) are ignored.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from connectrt.schema_registry.registry_errors import invalid_version

__all__ = [
    "MAX_VERSION",
    "Key",
    "SchemaVersion",
    "Value",
    "canonical_schema",
    "config_key",
    "encode_record",
    "parse_version",
    "schema_key",
    "schema_value",
]

MAX_VERSION = 2**31 - 1

Key = dict[str, Any]
Value = dict[str, Any] | None


@dataclass(frozen=True)
class SchemaVersion:
    """One version of a subject: its schema id, the schema text, whether it is soft-deleted."""

    subject: str
    version: int
    id: int
    schema: str
    deleted: bool = False


def parse_version(version: str | int) -> int | None:
    """``"latest"`` and ``-1`` -> None; a number in [1, 2^31-1] -> itself; else 42202."""
    if isinstance(version, str):
        if version.strip().lower() == "latest":
            return None
        try:
            number = int(version)
        except ValueError:
            raise invalid_version(version) from None
    else:
        number = version
    if number == -1:
        return None
    if not 1 <= number <= MAX_VERSION:
        raise invalid_version(version)
    return number


def canonical_schema(text: str) -> str:
    """``text`` as compact JSON with sorted keys (itself when it is not JSON): equal
    schemas written differently get one id."""
    try:
        return json.dumps(json.loads(text), sort_keys=True, separators=(",", ":"))
    except ValueError:
        return text


def schema_key(subject: str, version: int) -> Key:
    """The key of a SCHEMA record."""
    return {"keytype": "SCHEMA", "subject": subject, "version": version, "magic": 1}


def schema_value(sv: SchemaVersion, deleted: bool | None = None) -> dict[str, Any]:
    """The value of ``sv``'s SCHEMA record (``deleted`` overrides its flag)."""
    return {
        "subject": sv.subject,
        "version": sv.version,
        "id": sv.id,
        "schema": sv.schema,
        "deleted": sv.deleted if deleted is None else deleted,
    }


def config_key(subject: str | None) -> Key:
    """The key of a CONFIG record (``None``: the global level)."""
    return {"keytype": "CONFIG", "subject": subject, "magic": 0}


def encode_record(obj: Mapping[str, Any] | None) -> bytes | None:
    """A record key or value as the topic holds it: compact JSON bytes (None stays None)."""
    return None if obj is None else json.dumps(obj, separators=(",", ":")).encode()
