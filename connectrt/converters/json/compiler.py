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
    "BUILDERS",
    "RAISE",
    "ClosureCompiler",
    "FastPath",
    "Fn",
    "checked",
    "fold",
    "int_fast_paths",
    "is_bool",
    "same",
]

Fn = Callable[[Any], Any]
"""A compiled converter of one value."""

RAISE: Final[Any] = object()
"""Null-handling marker: a null value is an error."""

BUILDERS: Final[Mapping[Type, str]] = {
    **dict.fromkeys(INT_RANGES, "integer"),
    Type.FLOAT32: "floating",
    Type.FLOAT64: "floating",
    Type.BOOLEAN: "boolean",
    Type.STRING: "string",
    Type.BYTES: "binary",
    Type.ARRAY: "array",
    Type.MAP: "mapping",
    Type.STRUCT: "struct",
}
"""The :class:`ClosureCompiler` method that builds the closure of each schema type's values."""

FastPath = tuple[type, Any, Any]
"""``(exact type, low, high)``: a value of exactly that type, within the bounds (both None:
any value of the type), is already converted and passes through as it is."""


def int_fast_paths() -> dict[Type, FastPath]:
    """A fast path for each integer type: ``int`` values within the type's range."""
    return {t: (int, lo, hi) for t, (lo, hi) in INT_RANGES.items()}


def same(v: Any) -> Any:
    """A value as it is (a :func:`checked` closure's conversion of a value it keeps)."""
    return v


def is_bool(v: Any) -> bool:
    """Whether ``v`` is a boolean (``bool`` has no subclasses)."""
    return v is True or v is False


def checked(kind: str, accepts: Callable[[Any], bool], convert: Fn, describe: Fn) -> Fn:
    """A scalar type's closure (behind :func:`fold`'s fast path): ``convert(v)`` for a value
    ``accepts`` takes, else DataError ``Invalid type for <kind>: <describe(v)>``."""

    def scalar(v: Any) -> Any:
        if accepts(v):
            return convert(v)
        raise DataError(f"Invalid type for {kind}: {describe(v)}")

    return scalar


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
        """The closure for ``schema``'s non-null values: :meth:`logical_type`'s for a logical
        type, else the builder :data:`BUILDERS` names for its type."""
        lname = logical.logical_name(schema)
        if lname is not None:
            return self.logical_type(schema, lname)
        name = BUILDERS.get(schema.type)
        if name is None:  # pragma: no cover - every Type has a builder
            raise DataError(f"Unknown schema type: {schema.type}")
        builder: Callable[[Schema], Fn] = getattr(self, name)
        return builder(schema)

    def compile_entries(self, schema: Schema) -> tuple[Fn, Fn]:
        """The closures of a MAP ``schema``'s keys and values (:meth:`compile`'s)."""
        assert schema.key_schema is not None and schema.value_schema is not None
        return self.compile(schema.key_schema), self.compile(schema.value_schema)

    @abstractmethod
    def default_result(self, schema: Schema, nonnull: Fn) -> Any:
        """What a null value converts to when ``schema`` has a default to replace it with."""

    @abstractmethod
    def null_error(self, schema: Schema) -> str:
        """The message of the DataError a null value raises where ``schema`` takes none."""

    @abstractmethod
    def logical_type(self, schema: Schema, lname: str) -> Fn:
        """The closure for Decimal, Date, Time or Timestamp (``lname``) values."""

    # The closure builders of each schema type's non-null values (nested schemas compiled
    # with :meth:`compile`), one per name in :data:`BUILDERS`; every subclass defines all.
    integer: Callable[[Schema], Fn]
    floating: Callable[[Schema], Fn]
    boolean: Callable[[Schema], Fn]
    string: Callable[[Schema], Fn]
    binary: Callable[[Schema], Fn]
    array: Callable[[Schema], Fn]
    mapping: Callable[[Schema], Fn]
    struct: Callable[[Schema], Fn]
