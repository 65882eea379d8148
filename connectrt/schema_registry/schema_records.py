"""The records of the registry's ``_schemas`` topic (Confluent's format) and the versions
they describe.

State changes are expressed as ``(key, value)`` records (JSON objects; ``value=None`` is a
tombstone):

* ``{"keytype":"SCHEMA","subject":s,"version":v,"magic":1}`` ->
  ``{"subject":s,"version":v,"id":n,"schema":"...","deleted":false}``, with
  ``"schemaType":"JSON"`` or ``"PROTOBUF"`` for those types (absent for Avro) and
  ``"references":[{"name":...,"subject":...,"version":...}]`` when the schema has any
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
    "Reference",
    "SchemaVersion",
    "Value",
    "canonical_schema",
    "config_key",
    "encode_record",
    "parse_version",
    "schema_identity",
    "schema_key",
    "schema_value",
]

MAX_VERSION = 2**31 - 1

Key = dict[str, Any]
Value = dict[str, Any] | None


@dataclass(frozen=True)
class Reference:
    """A schema's reference to another subject's version, under the ``name`` the schema
    imports it by (a ``$ref`` URL for JSON Schema, an import path for Protobuf)."""

    name: str
    subject: str
    version: int

    def to_json(self) -> dict[str, Any]:
        """As the REST API and the ``_schemas`` records spell it."""
        return {"name": self.name, "subject": self.subject, "version": self.version}

    @staticmethod
    def from_json(obj: Any) -> Reference:
        """From ``{"name":...,"subject":...,"version":...}`` (ValueError when malformed)."""
        if not isinstance(obj, Mapping):
            raise ValueError(f"Invalid schema reference {obj!r}")
        try:
            return Reference(str(obj["name"]), str(obj["subject"]), int(obj["version"]))
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"Invalid schema reference {obj!r}: {exc}") from None


@dataclass(frozen=True)
class SchemaVersion:
    """One version of a subject: its schema id, the schema text, whether it is soft-deleted,
    its schema type (``AVRO``, ``JSON`` or ``PROTOBUF``) and its references."""

    subject: str
    version: int
    id: int
    schema: str
    deleted: bool = False
    schema_type: str = "AVRO"
    references: tuple[Reference, ...] = ()

    def body(self) -> dict[str, Any]:
        """The REST API's answer for this version (``schemaType`` and ``references`` only
        where Confluent's registry gives them)."""
        out: dict[str, Any] = {
            "subject": self.subject,
            "version": self.version,
            "id": self.id,
        }
        if self.schema_type != "AVRO":
            out["schemaType"] = self.schema_type
        if self.references:
            out["references"] = [r.to_json() for r in self.references]
        out["schema"] = self.schema
        return out


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
    value: dict[str, Any] = {
        "subject": sv.subject,
        "version": sv.version,
        "id": sv.id,
        "schema": sv.schema,
        "deleted": sv.deleted if deleted is None else deleted,
    }
    if sv.schema_type != "AVRO":
        value["schemaType"] = sv.schema_type
    if sv.references:
        value["references"] = [r.to_json() for r in sv.references]
    return value


def schema_identity(schema_type: str, canonical: str, references: tuple[Reference, ...]) -> str:
    """What makes two registrations the same schema (one id): type, canonical text and
    references."""
    refs = ",".join(f"{r.name}={r.subject}/{r.version}" for r in references)
    return f"{schema_type}|{refs}|{canonical}"


def config_key(subject: str | None) -> Key:
    """The key of a CONFIG record (``None``: the global level)."""
    return {"keytype": "CONFIG", "subject": subject, "magic": 0}


def encode_record(obj: Mapping[str, Any] | None) -> bytes | None:
    """A record key or value as the topic holds it: compact JSON bytes (None stays None)."""
    return None if obj is None else json.dumps(obj, separators=(",", ":")).encode()
