"""Schemaless values (JsonConverter with ``schemas.enable=false``) as Arrow batches.

A schemaless record value is a map; :class:`SchemalessBatchBuilder` turns a run of them into one
Arrow batch whose columns are the maps' keys, with types inferred by Arrow from the values, as
Iceberg's connector infers them: integers long, floats double, strings, booleans, bytes binary,
nested maps structs, lists lists. A key whose values are all null in the run has no type to
infer and is left out (a column that exists already is written as null then, see
:meth:`~connectors.iceberg.writer.TableWriter.conform`). The batch is then conformed to the
table like any other: cast to the column types, new keys added as columns with
``iceberg.tables.evolve-schema-enabled``, or the table auto-created from the first batch.

A value that is not a map, or a run whose values Arrow cannot put in one column (a key that is
a number in one record and a string in another), is reported per record by
:meth:`split_failing`. Same interface as :class:`~connectors.arrow_batch.ArrowBatchBuilder`;
used on the task thread only.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pyarrow as pa

from connectrt.api import DataError

__all__ = ["SchemalessBatchBuilder"]


def _without_null_types(array: pa.Array) -> pa.Array | None:
    """``array`` with the fields of null type removed from its structs (None when nothing
    typed is left)."""
    kind = array.type
    if pa.types.is_null(kind):
        return None
    if pa.types.is_struct(kind):
        children, names = [], []
        for i in range(kind.num_fields):
            child = _without_null_types(array.field(i))
            if child is not None:
                children.append(child)
                names.append(kind.field(i).name)
        if not children:
            return None
        if len(children) == kind.num_fields:
            return array
        return pa.StructArray.from_arrays(children, names=names, mask=array.is_null())
    return array


class SchemalessBatchBuilder:
    """Builds one Arrow batch from schemaless map values (see the module docstring)."""

    def build(self, values: Sequence[Any]) -> pa.RecordBatch:
        for value in values:
            if not isinstance(value, dict):
                raise DataError(
                    f"a schemaless value must be a map (a JSON object) to become a row; got "
                    f"{type(value).__name__}"
                )
        try:
            batch = pa.RecordBatch.from_pylist(list(values))
        except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, OverflowError) as exc:
            raise DataError(f"schemaless values that do not fit one column type: {exc}") from exc
        arrays, names = [], []
        for name, column in zip(batch.schema.names, batch.columns, strict=True):
            typed = _without_null_types(column)
            if typed is not None:
                arrays.append(typed)
                names.append(name)
        if not arrays:
            raise DataError("a schemaless value with no non-null field has no column to write")
        return pa.RecordBatch.from_arrays(arrays, names=names)

    def split_failing(self, values: Sequence[Any]) -> tuple[list[int], list[tuple[int, Exception]]]:
        """The indices of the values :meth:`build` converts on their own, and ``(index,
        error)`` for the others. A run that fails only as a whole (types that differ between
        records) reports the records whose types differ from the first good one's."""
        good: list[int] = []
        bad: list[tuple[int, Exception]] = []
        for i, value in enumerate(values):
            try:
                self.build([value] if not good else [values[good[0]], value])
            except Exception as exc:  # any conversion error is the record's
                bad.append((i, exc))
            else:
                good.append(i)
        return good, bad
