"""Which columns a record writes, and a fast function turning a record into a row dict.

:func:`record_fields` looks at one record's key and value (their schemas, or the keys of a
schemaless map) together with ``pk.mode``, ``pk.fields`` and ``fields.whitelist`` and returns a
:class:`RecordFields`: the column specs (name, Connect schema, primary key or not) and a
compiled ``row(key, value, topic, partition, offset) -> dict`` for every later record of the same
shape (the task reads a batch as columns, so a row is made from a record's fields, not from a
``SinkRecord``). It is built once per (table, key schema, value schema) by the task; the row
function does only dictionary work per record: struct values are read positionally
(``Struct``'s value list, in field order, as the converters fill it), adapters run only for the
few types that need them (timestamps), and schema defaults are applied only for fields that have
one.

Update and delete statements bind primary-key values under prefixed names (``pk_prefix``) so
that they never clash with the SET columns. Pure functions, thread-safe.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from operator import itemgetter
from typing import Any

from connectors.jdbc.sink.config import SinkConfig
from connectors.jdbc.sink.types import column_type, value_adapter
from connectrt.api import DataError
from connectrt.data import Field, Schema, Struct, Type

__all__ = ["PK_BIND_PREFIX", "ColumnSpec", "RecordFields", "record_fields"]

PK_BIND_PREFIX = "pk__"

Row = dict[str, Any]
RowFn = Callable[[Any, Any, str, Any, Any], Row]
"""``row(key, value, topic, partition, offset)``: one record's row."""
KeyFn = Callable[[Any, str, Any, Any], Row]
"""``key_row(key, topic, partition, offset)``: the primary-key part of one record's row."""

_KAFKA_SCHEMAS = (Schema.STRING_SCHEMA, Schema.INT32_SCHEMA, Schema.INT64_SCHEMA)


@dataclass(frozen=True, slots=True)
class ColumnSpec:
    """A column a record writes: ``schema`` is None for schemaless (map) records."""

    name: str
    schema: Schema | None
    primary_key: bool


@dataclass(frozen=True, slots=True)
class RecordFields:
    """The columns of one record shape and the function building its rows."""

    columns: tuple[ColumnSpec, ...]
    pk: tuple[str, ...]
    row: RowFn
    schemaless: bool

    @property
    def value_columns(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.columns if not c.primary_key)


def _field(schema: Schema, name: str) -> Field:
    field = schema.field(name)
    if field is None:
        raise DataError(f"Struct schema has no field {name!r}")
    return field


def _adapter(schema: Schema | None, zone: dt.tzinfo | None) -> Callable[[Any], Any] | None:
    return None if zone is None else value_adapter(schema, zone)


def _struct_reader(
    schema: Schema, names: Sequence[str], out_names: Sequence[str], zone: dt.tzinfo | None
) -> Callable[[Struct], Row]:
    """Read ``names`` of a struct of ``schema`` into a dict keyed by ``out_names``."""
    fields = [_field(schema, n) for n in names]
    idxs = [f.index for f in fields]
    keys = tuple(out_names)
    fixes = [
        (out, _adapter(f.schema, zone), f.schema.default)
        for out, f in zip(keys, fields, strict=True)
        if _adapter(f.schema, zone) is not None or f.schema.default is not None
    ]
    if not idxs:

        def read_none(_: Struct) -> Row:
            return {}

        return read_none
    if len(idxs) == 1:
        only, key = idxs[0], keys[0]

        def read_one(struct: Struct) -> Row:
            return {key: struct._values[only]}

        base = read_one
    elif idxs == list(range(len(schema.fields))):

        def read_all(struct: Struct) -> Row:
            return dict(zip(keys, struct._values))  # noqa: B905 (same length by construction)

        base = read_all
    else:
        getter = itemgetter(*idxs)

        def read_some(struct: Struct) -> Row:
            return dict(zip(keys, getter(struct._values)))  # noqa: B905

        base = read_some
    if not fixes:
        return base

    def read_fixed(struct: Struct) -> Row:
        row = base(struct)
        for name, adapt, default in fixes:
            value = row[name]
            if value is None:
                value = default
            if adapt is not None and value is not None:
                value = adapt(value)
            row[name] = value
        return row

    return read_fixed


def _map_reader(names: Sequence[str], out_names: Sequence[str]) -> Callable[[Any], Row]:
    pairs = tuple(zip(out_names, names, strict=True))

    def read(mapping: Any) -> Row:
        try:
            return {out: mapping[name] for out, name in pairs}
        except KeyError as exc:
            raise DataError(f"Schemaless record is missing field {exc.args[0]!r}") from None

    return read


def _pick(available: Sequence[str], wanted: Sequence[str], what: str) -> list[str]:
    if not wanted:
        return list(available)
    missing = [w for w in wanted if w not in available]
    if missing:
        raise DataError(
            f"pk.fields {missing} not found in the {what} (fields: {', '.join(available)})"
        )
    return list(wanted)


def _key_part(
    config: SinkConfig,
    key_schema: Schema | None,
    key: Any,
    pk_prefix: str,
    zone: dt.tzinfo | None,
) -> tuple[list[ColumnSpec], KeyFn | None]:
    """Primary-key columns taken from the Kafka coordinates or the record key."""
    mode = config.pk_mode
    if mode == "kafka":
        t, p, o = config.pk_fields
        tk, pk_, ok = (pk_prefix + t, pk_prefix + p, pk_prefix + o)
        specs = [ColumnSpec(n, s, True) for n, s in zip((t, p, o), _KAFKA_SCHEMAS, strict=True)]

        def kafka(key: Any, topic: str, partition: Any, offset: Any) -> Row:
            return {tk: topic, pk_: partition, ok: offset}

        return specs, kafka
    if mode != "record_key":
        return [], None
    ks = key_schema
    if key is None:
        raise DataError("pk.mode=record_key needs a record key, but the key is null")
    if ks is not None and ks.type is Type.STRUCT:
        names = _pick([f.name for f in ks.fields], config.pk_fields, "key schema")
        specs = [ColumnSpec(n, _field(ks, n).schema, True) for n in names]
        read = _struct_reader(ks, names, [pk_prefix + n for n in names], zone)

        def struct_key(key: Any, topic: str, partition: Any, offset: Any) -> Row:
            return read(key)

        return specs, struct_key
    if ks is None and isinstance(key, dict):
        names = _pick(list(key), config.pk_fields, "key")
        read_map = _map_reader(names, [pk_prefix + n for n in names])

        def map_key(key: Any, topic: str, partition: Any, offset: Any) -> Row:
            return read_map(key)

        return [ColumnSpec(n, None, True) for n in names], map_key
    if len(config.pk_fields) != 1:
        raise DataError(
            "pk.mode=record_key with a primitive key needs exactly one name in pk.fields "
            f"(got {len(config.pk_fields)})"
        )
    name = config.pk_fields[0]
    out = pk_prefix + name
    adapt = _adapter(ks, zone)

    def primitive_key(key: Any, topic: str, partition: Any, offset: Any) -> Row:
        return {out: key if adapt is None else adapt(key)}

    return [ColumnSpec(name, ks, True)], primitive_key


def record_fields(
    config: SinkConfig,
    key_schema: Schema | None,
    key: Any,
    value_schema: Schema | None,
    value: Any,
    delete: bool = False,
    zone: dt.tzinfo | None = dt.UTC,
) -> RecordFields:
    """The columns and row function for records shaped like the one with this key and value.

    ``zone``: Timestamp values (aware UTC datetimes) are bound as naive wall-clock time in this
    zone (``db.timezone``); None when the connection already binds them that way (PostgreSQL
    sessions in ``db.timezone``; SQLite with UTC), so they need no per-record change.

    ``delete``: the record is a tombstone; only its primary-key columns are read, under
    prefixed bind names. In ``insert.mode=update`` primary-key columns are prefixed too.
    Raises DataError when the record cannot be mapped (wrong value type, unknown pk.fields).
    """
    pk_prefix = PK_BIND_PREFIX if delete or config.insert_mode == "update" else ""
    key_specs, key_fn = _key_part(config, key_schema, key, pk_prefix, zone)
    taken = {c.name for c in key_specs}
    if delete:
        if key_fn is None:
            raise DataError("a tombstone can only delete by key (pk.mode=record_key)")
        pk_names = tuple(c.name for c in key_specs)
        key_only = key_fn

        def key_row(key: Any, value: Any, topic: str, partition: Any, offset: Any) -> Row:
            return key_only(key, topic, partition, offset)

        return RecordFields(tuple(key_specs), pk_names, key_row, key_schema is None)
    vs = value_schema
    whitelist = config.fields_whitelist
    if vs is not None and vs.type is Type.STRUCT and isinstance(value, Struct):
        all_names = [f.name for f in vs.fields]
        schemaless = False
    elif vs is None and isinstance(value, dict):
        all_names = [str(k) for k in value]
        schemaless = True
    else:
        got = vs.type.name if vs is not None else type(value).__name__
        raise DataError(
            f"The JDBC sink writes struct values (or schemaless maps), but the value is {got}"
        )
    value_pk: list[str] = []
    if config.pk_mode == "record_value":
        value_pk = _pick(all_names, config.pk_fields, "value schema")
    names = [
        n
        for n in all_names
        if n not in taken and (n in value_pk or not whitelist or n in whitelist)
    ]
    out_names = [pk_prefix + n if n in value_pk else n for n in names]
    if schemaless:
        specs = [ColumnSpec(n, None, n in value_pk) for n in names]
        value_fn: Callable[[Any], Row] = _map_reader(names, out_names)
    else:
        assert vs is not None
        specs = [ColumnSpec(n, _field(vs, n).schema, n in value_pk) for n in names]
        value_fn = _struct_reader(vs, names, out_names, zone)
    columns = tuple(key_specs + specs)
    for spec in columns:
        if spec.schema is not None:
            column_type(spec.schema, spec.name)  # DataError for types without a column type
    pk = tuple(c.name for c in columns if c.primary_key)
    if key_fn is None:

        def row(key: Any, value: Any, topic: str, partition: Any, offset: Any) -> Row:
            return value_fn(value)

    else:
        key_reader = key_fn

        def row(key: Any, value: Any, topic: str, partition: Any, offset: Any) -> Row:
            out = value_fn(value)
            out.update(key_reader(key, topic, partition, offset))
            return out

    return RecordFields(columns, pk, row, any(c.schema is None for c in columns))
