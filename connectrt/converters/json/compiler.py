"""The schema walk both JSON closure compilers share, and the closure each value goes through.

For each Connect schema the converter compiles, once, a tree of closures: one per value. The
encoder (:mod:`connectrt.converters.json.encoder`) and the decoder
(:mod:`connectrt.converters.json.decoder`) supply the closures for each schema type; this
module dispatches on the type and wraps each in :func:`fold`, which adds an exact-type fast
path and the null/default handling in the same function.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from typing import Any, ClassVar, Final

from connectrt.data import logical
from connectrt.data.schema import Schema, Type
from connectrt.data.values import INT_RANGES
from connectrt.errors import DataError

__all__ = [
    "RAISE",
    "ClosureCompiler",
    "FastPath",
    "Fn",
    "fold",
    "int_fast_paths",
]

Fn = Callable[[Any], Any]
"""A compiled converter of one value."""

RAISE: Final[Any] = object()
"""Null-handling marker: a null value is an error."""

FastPath = tuple[type, Any, Any]
"""``(exact type, low, high)``: a value of exactly that type, within the bounds (both None:
any value of the type), is already converted and passes through as it is."""


def int_fast_paths() -> dict[Type, FastPath]:
    """A fast path for each integer type: ``int`` values within the type's range."""
    return {t: (int, lo, hi) for t, (lo, hi) in INT_RANGES.items()}


def fold(
    schema: Schema,
    fast_paths: Mapping[Type, FastPath],
    slow: Fn,
    null_result: Any,
    null_error: str,
) -> Fn:
    """One closure per value: the exact-type fast path, null handling, then ``slow``.

    Folding these into a single function saves a Python call per field on the hot path, which
    is why the null handling is spelled out in each of the three closures.
    """
    fast = None if logical.logical_name(schema) is not None else fast_paths.get(schema.type)
    if fast is None:

        def any_fn(v: Any) -> Any:
            if v is None:
                if null_result is RAISE:
                    raise DataError(null_error)
                return null_result
            return slow(v)

        return any_fn
    exact, lo, hi = fast
    if lo is not None:

        def bounded_fn(v: Any) -> Any:
            if type(v) is exact and lo <= v <= hi:
                return v
            if v is None:
                if null_result is RAISE:
                    raise DataError(null_error)
                return null_result
            return slow(v)

        return bounded_fn

    def exact_fn(v: Any) -> Any:
        if type(v) is exact:
            return v
        if v is None:
            if null_result is RAISE:
                raise DataError(null_error)
            return null_result
        return slow(v)

    return exact_fn


class ClosureCompiler(ABC):
    """Compiles the closure of a schema's values: :meth:`nonnull`'s conversion in :func:`fold`.

    Subclasses give the fast paths, the null handling's error and default, and a closure for
    each schema type; nested schemas (array items, map keys and values, struct fields) are
    compiled with :meth:`compile`.
    """

    fast_paths: ClassVar[Mapping[Type, FastPath]]

    def __init__(self, replace_null: bool) -> None:
        self.replace_null = replace_null

    def compile(self, schema: Schema) -> Fn:
        """The closure for ``schema``'s values, null and default handling included."""
        slow = self.nonnull(schema)
        if schema.default is not None and self.replace_null:
            null_result = self.default_result(schema, slow)
        elif schema.optional:
            null_result = None
        else:
            null_result = RAISE
        return fold(schema, self.fast_paths, slow, null_result, self.null_error(schema))

    def nonnull(self, schema: Schema) -> Fn:
        """The closure for ``schema``'s non-null values."""
        lname = logical.logical_name(schema)
        if lname is not None:
            return self.logical_type(schema, lname)
        t = schema.type
        if t in INT_RANGES:
            return self.integer(schema)
        if t is Type.FLOAT32 or t is Type.FLOAT64:
            return self.floating(schema)
        if t is Type.BOOLEAN:
            return self.boolean(schema)
        if t is Type.STRING:
            return self.string(schema)
        if t is Type.BYTES:
            return self.binary(schema)
        if t is Type.ARRAY:
            return self.array(schema)
        if t is Type.MAP:
            return self.mapping(schema)
        if t is Type.STRUCT:
            return self.struct(schema)
        raise DataError(f"Unknown schema type: {t}")  # pragma: no cover

    @abstractmethod
    def default_result(self, schema: Schema, nonnull: Fn) -> Any:
        """What a null value converts to when ``schema`` has a default to replace it with."""

    @abstractmethod
    def null_error(self, schema: Schema) -> str:
        """The message of the DataError a null value raises where ``schema`` takes none."""

    @abstractmethod
    def logical_type(self, schema: Schema, lname: str) -> Fn:
        """The closure for Decimal, Date, Time or Timestamp (``lname``) values."""

    @abstractmethod
    def integer(self, schema: Schema) -> Fn:
        """The closure for INT8, INT16, INT32 or INT64 values."""

    @abstractmethod
    def floating(self, schema: Schema) -> Fn:
        """The closure for FLOAT32 or FLOAT64 values."""

    @abstractmethod
    def boolean(self, schema: Schema) -> Fn:
        """The closure for BOOLEAN values."""

    @abstractmethod
    def string(self, schema: Schema) -> Fn:
        """The closure for STRING values."""

    @abstractmethod
    def binary(self, schema: Schema) -> Fn:
        """The closure for BYTES values."""

    @abstractmethod
    def array(self, schema: Schema) -> Fn:
        """The closure for ARRAY values."""

    @abstractmethod
    def mapping(self, schema: Schema) -> Fn:
        """The closure for MAP values."""

    @abstractmethod
    def struct(self, schema: Schema) -> Fn:
        """The closure for STRUCT values."""
