"""$Key/$Value SMTs that rebuild a map or a struct field by field (InsertField, ReplaceField).

:class:`MapOrStructRewrite` checks the part (null passes through; a map without a schema, a
Struct with one; anything else is a DataError naming the SMT's purpose) and hands a map to
:meth:`~MapOrStructRewrite.rewrite_map`; it rebuilds a struct itself, by a
:class:`StructPlan` made once per source schema (:meth:`~MapOrStructRewrite.plan_struct`):
the source values of :meth:`~MapOrStructRewrite.kept_fields`, in order, nulls read as their
defaults when ``replace.null.with.default`` says so, then whatever
:meth:`~MapOrStructRewrite.add_fields` adds, in the schema
:meth:`~MapOrStructRewrite.define_fields` describes. The plan of the previous record's schema
is reused while records bring the same schema object (those of one stream usually do), so the
per-record work is a list copy. Both run one record at a time or over a batch of chain-owned
records.

Lifecycle and threading: those of :class:`~connectrt.api.transform.Transformation` (one
instance per task, called from one thread); ``configure`` must call :meth:`~MapOrStructRewrite.
start_struct_plans`.
"""

from __future__ import annotations

import abc
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, ClassVar, NamedTuple

from connectrt.api.records import ConnectRecord
from connectrt.api.transform import R
from connectrt.data.schema import Field, Schema
from connectrt.data.schema_builder import SchemaBuilder
from connectrt.data.struct import Struct
from connectrt.transforms._util import (
    REPLACE_NULL_WITH_DEFAULT,
    SchemaCache,
    require_map,
    require_struct,
)
from connectrt.transforms.base import Part, PartRewrite

__all__ = ["DefaultFill", "MapOrStructRewrite", "StructPlan", "defaults_to_fill"]

DefaultFill = tuple[tuple[int, Any], ...]
"""(position, default) of each field whose null value reads as its default."""


def defaults_to_fill(fields: Iterable[Field]) -> DefaultFill:
    """The :data:`DefaultFill` of ``fields`` in order (position = place in ``fields``)."""
    return tuple(
        (position, f.schema.default)
        for position, f in enumerate(fields)
        if f.schema.default is not None
    )


class StructPlan(NamedTuple):
    """How structs of one source schema are rebuilt."""

    schema: Schema
    """The schema of the rebuilt structs."""
    indices: tuple[int, ...] | None
    """The positions of the source values kept, in their new order; None keeps them all."""
    fill: DefaultFill
    """The kept values whose null reads as their default (positions among the kept)."""


_new_struct = Struct.__new__


class MapOrStructRewrite(PartRewrite[R]):
    """A $Key/$Value SMT that rebuilds a map or a struct (see the module docstring).

    ``PURPOSE`` names what the SMT does in the DataError of a part of another type.
    """

    PURPOSE: ClassVar[str]

    _last_schema: Schema | None = None
    _last_plan: StructPlan
    _replace_null: bool
    _schemas: SchemaCache

    @abc.abstractmethod
    def rewrite_map(self, record: ConnectRecord, value: dict[str, Any]) -> dict[str, Any]:
        """The new map for the schemaless ``value`` (a new dict: ``value`` is not changed)."""

    @abc.abstractmethod
    def define_fields(self, source: Schema, builder: SchemaBuilder) -> None:
        """Define on ``builder`` the fields of the struct schema rebuilt from ``source``:
        those of :meth:`kept_fields` (in that order), then those :meth:`add_fields` sets."""

    def kept_fields(self, source: Schema) -> Sequence[Field]:
        """The fields of ``source`` whose values the rebuilt struct keeps, in their new
        order; all of them by default."""
        return source.fields

    def start_struct_plans(self, parsed: Mapping[str, Any]) -> None:
        """Forget the plans and schemas made so far and take ``replace.null.with.default``
        from ``parsed`` (the parsed config); ``configure`` calls this."""
        self._replace_null = bool(parsed[REPLACE_NULL_WITH_DEFAULT])
        self._schemas = SchemaCache()
        self._last_schema = None

    def plan_struct(self, source: Schema) -> StructPlan:
        """How structs of schema ``source`` are rebuilt (made once per schema)."""
        kept = self.kept_fields(source)
        fill = defaults_to_fill(kept) if self._replace_null else ()
        indices: tuple[int, ...] | None = tuple(f.index for f in kept)
        if indices == tuple(range(len(source.fields))):
            indices = None  # every value kept in place: the value list is copied as it is
        return StructPlan(self._schemas.derived_struct(source, self.define_fields), indices, fill)

    def add_fields(self, record: ConnectRecord, struct: Struct) -> None:
        """Set the fields of ``struct`` (just built, its kept values in place) that come after
        the kept ones; none by default. ``struct`` holds only the kept values: append to its
        value list, or pad it to the schema's length before ``put``."""

    def struct_plan(self, source: Schema) -> StructPlan:
        """:meth:`plan_struct` of ``source``, kept while records bring that schema object."""
        if source is self._last_schema:
            return self._last_plan
        plan = self.plan_struct(source)
        self._last_schema, self._last_plan = source, plan
        return plan

    def rewrite_struct(self, record: ConnectRecord, struct: Struct, plan: StructPlan) -> Part:
        """The new ``(schema, struct)`` for ``struct`` (not changed) by ``plan``."""
        new_schema, indices, fill = plan
        old_values = struct._values
        values = old_values.copy() if indices is None else [old_values[i] for i in indices]
        for position, default in fill:
            if values[position] is None:
                values[position] = default
        out = _new_struct(Struct)
        out._schema = new_schema
        out._values = values
        self.add_fields(record, out)
        return new_schema, out

    def rewrite(self, record: ConnectRecord, schema: Schema | None, value: Any) -> Part | None:
        if value is None:
            return None
        if schema is None:
            if type(value) is not dict:
                value = require_map(value, self.PURPOSE, self.smt_name())
            return None, self.rewrite_map(record, value)
        if type(value) is not Struct:
            value = require_struct(value, self.PURPOSE, self.smt_name())
        return self.rewrite_struct(record, value, self.struct_plan(value._schema))

    def apply_batch_owned(self, records: list[R]) -> bool:
        """:meth:`rewrite` of each record's value in place (keys: :class:`PartRewrite`'s)."""
        if self.IS_KEY:
            return super().apply_batch_owned(records)
        # rewrite()'s type checks inlined for values: this loop runs once per record.
        rewrite_map, rewrite_struct = self.rewrite_map, self.rewrite_struct
        struct_plan = self.struct_plan
        for r in records:
            value = r.value
            if value is None:
                continue
            if r.value_schema is None and type(value) is dict:
                r.value = rewrite_map(r, value)
            elif r.value_schema is not None and type(value) is Struct:
                source = value._schema
                plan = self._last_plan if source is self._last_schema else struct_plan(source)
                r.value_schema, r.value = rewrite_struct(r, value, plan)
            else:
                self.apply_owned(r)
        return True
