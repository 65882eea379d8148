"""Avro schema compatibility, by the Avro specification's schema resolution rules.

``can_read(reader, writer)`` answers "can data written with ``writer`` be read with ``reader``",
returning the reasons it cannot (an empty list means it can):

* primitives match, or the writer's type is promoted: int -> long, float, double;
  long -> float, double; float -> double; string <-> bytes. Logical types resolve as their
  underlying type.
* records must have the same full name (or the reader lists the writer's name in its aliases);
  every reader field must exist in the writer (by name or one of the reader field's aliases)
  and resolve recursively, or have a default; writer fields the reader lacks are ignored.
* enums must have the same name; every writer symbol must be a reader symbol unless the reader
  has a default symbol.
* fixed must have the same name and size; arrays and maps resolve their items and values.
* a writer union resolves when every branch resolves against the reader; a reader union
  accepts a non-union writer when some branch resolves.

The seven compatibility levels of Confluent Schema Registry are built on top: BACKWARD means
the new schema can read data written with the previous one(s), FORWARD that the previous
one(s) can read data written with the new one, FULL both; the ``_TRANSITIVE`` variants check
every previous version instead of the latest only; NONE checks nothing.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

import fastavro

from connectrt.converters.registry_config import COMPATIBILITY_LEVELS

__all__ = [
    "LEVELS",
    "InvalidSchemaError",
    "ParsedSchema",
    "can_read",
    "check_compatibility",
    "check_levels",
    "parse_avro",
]

LEVELS = COMPATIBILITY_LEVELS

_PRIMITIVES = {"null", "boolean", "int", "long", "float", "double", "bytes", "string"}
_PROMOTIONS = {
    ("int", "long"),
    ("int", "float"),
    ("int", "double"),
    ("long", "float"),
    ("long", "double"),
    ("float", "double"),
    ("string", "bytes"),
    ("bytes", "string"),
}


class InvalidSchemaError(ValueError):
    """The text is not a valid Avro schema."""


class ParsedSchema:
    """An Avro schema: its text, a canonical form (for identity) and the parsed tree."""

    def __init__(self, text: str, raw: Any, parsed: Any, names: dict[str, Any]) -> None:
        self.text = text
        self.raw = raw
        self.parsed = parsed
        self.names = names
        self.canonical = json.dumps(raw, sort_keys=True, separators=(",", ":"))


def parse_avro(text: str) -> ParsedSchema:
    """Parse and validate an Avro schema given as JSON text (defaults are validated)."""
    try:
        raw = json.loads(text)
    except (TypeError, ValueError) as exc:
        raise InvalidSchemaError(f"Invalid schema: not JSON: {exc}") from None
    _check_records(raw)
    names: dict[str, Any] = {}
    try:
        parsed = fastavro.parse_schema(raw, names)
    except Exception as exc:
        raise InvalidSchemaError(f"Invalid schema {text}: {exc}") from None
    return ParsedSchema(text, raw, parsed, names)


def _check_records(raw: Any) -> None:
    """What fastavro lets pass but the Avro specification requires: records have fields."""
    if isinstance(raw, list):
        for branch in raw:
            _check_records(branch)
    elif isinstance(raw, dict):
        kind = raw.get("type")
        if kind in ("record", "error"):
            fields = raw.get("fields")
            if not isinstance(fields, list):
                raise InvalidSchemaError(f"Invalid schema: record {raw.get('name')} has no fields")
            for field in fields:
                if isinstance(field, dict):
                    _check_records(field.get("type"))
        elif kind == "array":
            _check_records(raw.get("items"))
        elif kind == "map":
            _check_records(raw.get("values"))
        elif isinstance(kind, dict | list):
            _check_records(kind)


def check_compatibility(
    level: str, new: ParsedSchema, previous: Sequence[ParsedSchema]
) -> list[str]:
    """Why the Avro schema ``new`` is incompatible with ``previous`` (oldest first) at
    ``level``; [] if not."""
    return check_levels(level, new, previous, can_read)


def check_levels(
    level: str, new: Any, previous: Sequence[Any], can_read: Callable[[Any, Any], list[str]]
) -> list[str]:
    """Why ``new`` is incompatible with ``previous`` (oldest first) at ``level``; [] if not.

    The levels are the same for every schema type, built on its ``can_read(reader, writer)``:
    BACKWARD (``new`` reads the last), FORWARD (the last reads ``new``), FULL (both), their
    TRANSITIVE variants (against every previous schema, newest first) and NONE. A previous
    schema of another type (another parsed class) is incompatible. ValueError for an unknown
    level."""
    level = level.upper()
    if level not in LEVELS:
        raise ValueError(f"Unknown compatibility level {level}")
    if level == "NONE" or not previous:
        return []
    targets = list(previous) if level.endswith("_TRANSITIVE") else [previous[-1]]
    messages: list[str] = []
    for old in reversed(targets):
        if type(old) is not type(new):
            messages.append("Incompatible because of different schema type")
            continue
        if level.startswith(("BACKWARD", "FULL")):
            messages += [f"BACKWARD: {m}" for m in can_read(new, old)]
        if level.startswith(("FORWARD", "FULL")):
            messages += [f"FORWARD: {m}" for m in can_read(old, new)]
    return messages


def can_read(reader: ParsedSchema, writer: ParsedSchema) -> list[str]:
    """Reasons data written with ``writer`` cannot be read with ``reader`` ([] if it can)."""
    resolver = _Resolver(reader.names, writer.names)
    resolver.resolve(reader.parsed, writer.parsed, "/")
    return resolver.errors


def _qualify(name: str, namespace: str) -> str:
    return name if "." in name or not namespace else f"{namespace}.{name}"


def _namespace(fullname: str) -> str:
    return fullname.rpartition(".")[0]


class _Resolver:
    def __init__(self, reader_names: dict[str, Any], writer_names: dict[str, Any]) -> None:
        self._rnames = reader_names
        self._wnames = writer_names
        self._seen: set[tuple[str, str]] = set()
        self.errors: list[str] = []

    def _deref(self, schema: Any, names: dict[str, Any]) -> Any:
        if isinstance(schema, str) and schema not in _PRIMITIVES:
            return names.get(schema, schema)
        return schema

    @staticmethod
    def _type(schema: Any) -> str:
        if isinstance(schema, list):
            return "union"
        if isinstance(schema, dict):
            t = schema.get("type")
            return t if isinstance(t, str) else "union"
        return str(schema)

    def _fail(self, path: str, message: str) -> bool:
        self.errors.append(f"{message} at {path}")
        return False

    def _names_match(self, reader: dict[str, Any], writer: dict[str, Any]) -> bool:
        rname, wname = reader.get("name", ""), writer.get("name", "")
        if rname == wname:
            return True
        ns = _namespace(rname)
        return wname in {_qualify(a, ns) for a in reader.get("aliases", [])}

    def resolve(self, reader: Any, writer: Any, path: str, record: bool = True) -> bool:
        """True if ``writer`` data resolves to ``reader``; records errors when ``record``."""
        reader = self._deref(reader, self._rnames)
        writer = self._deref(writer, self._wnames)
        if isinstance(reader, dict) and self._type(reader) in _PRIMITIVES:
            reader = reader["type"]
        if isinstance(writer, dict) and self._type(writer) in _PRIMITIVES:
            writer = writer["type"]
        rtype, wtype = self._type(reader), self._type(writer)

        if wtype == "union":
            ok = True
            for i, branch in enumerate(writer):
                ok = self.resolve(reader, branch, f"{path}union[{i}]/", record) and ok
                if not ok and not record:
                    return False
            return ok
        if rtype == "union":
            for branch in reader:
                if self.resolve(branch, writer, path, record=False):
                    return True
            return record and self._fail(
                path, f"reader union lacks a type compatible with writer type {wtype}"
            )
        if rtype in _PRIMITIVES or wtype in _PRIMITIVES:
            if rtype == wtype or (wtype, rtype) in _PROMOTIONS:
                return True
            return record and self._fail(path, f"reader type {rtype} cannot read {wtype}")
        if rtype != wtype:
            return record and self._fail(path, f"reader type {rtype} cannot read {wtype}")
        if rtype == "array":
            return self.resolve(reader["items"], writer["items"], f"{path}items/", record)
        if rtype == "map":
            return self.resolve(reader["values"], writer["values"], f"{path}values/", record)
        if not self._names_match(reader, writer):
            return record and self._fail(
                path, f"name mismatch: reader {reader.get('name')}, writer {writer.get('name')}"
            )
        if rtype == "fixed":
            if reader.get("size") != writer.get("size"):
                return record and self._fail(
                    path, f"fixed size mismatch: {reader.get('size')} != {writer.get('size')}"
                )
            return True
        if rtype == "enum":
            missing = [s for s in writer.get("symbols", []) if s not in reader.get("symbols", [])]
            if missing and reader.get("default") is None:
                return record and self._fail(path, f"reader enum lacks symbols {missing}")
            return True
        if rtype in ("record", "error"):
            return self._record(reader, writer, path, record)
        return record and self._fail(path, f"unsupported type {rtype}")

    def _record(
        self, reader: dict[str, Any], writer: dict[str, Any], path: str, record: bool
    ) -> bool:
        key = (str(reader.get("name")), str(writer.get("name")))
        if key in self._seen:
            return True  # recursive type: assume compatible while checking it
        self._seen.add(key)
        try:
            wfields = {f["name"]: f for f in writer.get("fields", [])}
            ok = True
            for field in reader.get("fields", []):
                fpath = f"{path}fields/{field['name']}/"
                match = wfields.get(field["name"])
                if match is None:
                    for alias in field.get("aliases", []):
                        match = wfields.get(alias)
                        if match is not None:
                            break
                if match is None:
                    if "default" not in field:
                        ok = False
                        if not record:
                            return False
                        self._fail(
                            fpath,
                            f"reader field '{field['name']}' has no default and is missing "
                            "from the writer",
                        )
                    continue
                if not self.resolve(field["type"], match["type"], fpath, record):
                    ok = False
                    if not record:
                        return False
            return ok
        finally:
            self._seen.discard(key)
