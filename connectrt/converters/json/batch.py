"""Writing a batch of values with few orjson calls, each value's bytes cut out of the result.

A column of values (a batch of values of one schema, or one field of a batch of structs) is
written by one orjson call, and the text of each value cut out of it by one ``bytes.split``:

* values whose text holds no comma (numbers, booleans, nulls, base64 text, logical types):
  the list as it is, split at its commas;
* any other (strings, arrays, maps, structs): the list with a fragment of one control byte,
  ``\x01``, between the values, split at ``,\x01,``. Nothing else in orjson's (or
  :mod:`~connectrt.converters.json.java_text`'s) text can hold that byte: both escape every
  control character in strings. The Jackson fix-up of
  :func:`~connectrt.converters.json.java_text.java_dumps` is local to escapes and characters,
  so applying it to the column's text once is applying it to each value.

A message is then one ``bytes.join`` of its pieces (the envelope's head, the struct's keys,
the values' texts), mapped over the batch at C level.

A struct of a schema (:class:`StructBatch`) is written from columns: the values' field lists
transposed (``zip``), each column checked at C level (one ``set`` of its types, ``min`` and
``max`` for integer ranges) and taken as it is when orjson writes its values as Java does, or
mapped through the field's compiled closure otherwise. No Python code runs per record on that
path, and no ``dict`` is built per struct.

The messages are new ``bytes`` of their exact size (``join``'s or ``split``'s), never orjson's
own over-allocated buffers, so a batch of them may be held until it is produced.

Not thread-safe by itself: used by one converter, on its task's thread.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from itertools import chain, compress, repeat
from operator import attrgetter, is_
from typing import Any, Final

import orjson

from connectrt.converters.json.compiler import Fn
from connectrt.converters.json.encoder import EncoderCompiler
from connectrt.converters.json.java_text import java_dumps
from connectrt.converters.json.schemaless import schemaless_to_json
from connectrt.data import logical
from connectrt.data.schema import Schema, Type
from connectrt.data.struct import Struct
from connectrt.data.values import INT_RANGES

__all__ = [
    "StructBatch",
    "comma_free",
    "json_texts",
    "maps_of_one_shape",
    "messages",
    "plain_values",
]

_dumps = orjson.dumps
_SEP: Final = orjson.Fragment(b"\x01")
_NoneType: Final = type(None)
_INT64_LOW: Final = -(1 << 63)
_INT64_HIGH: Final = (1 << 63) - 1
#: Value types orjson writes as Jackson does (ints within int64, floats checked by range).
_PLAIN: Final = frozenset((str, bool, int, float, _NoneType))
#: Schema types whose JSON text (as the encoder writes it) may hold a comma.
_WITH_COMMAS: Final = frozenset((Type.STRING, Type.ARRAY, Type.MAP, Type.STRUCT))
_INT_OR_NONE: Final = frozenset((int, _NoneType))
_STR_OR_NONE: Final = frozenset((str, _NoneType))
_BOOL_OR_NONE: Final = frozenset((bool, _NoneType))
_FLOAT_OR_NONE: Final = frozenset((float, _NoneType))
#: Plain value types whose JSON text may hold a comma.
_WITH_COMMAS_PLAIN: Final = frozenset((str,))
_join = b"".join
_get_values = attrgetter("_values")
_get_schema = attrgetter("_schema")


def comma_free(schema: Schema) -> bool:
    """Whether the encoder's text of every value of ``schema`` is free of commas (numbers,
    booleans, null, base64, the logical types; not strings nor containers)."""
    return logical.logical_name(schema) is not None or schema.type not in _WITH_COMMAS


def json_texts(items: Sequence[Any], no_commas: bool) -> list[bytes]:
    """The JSON text of each of ``items`` (JSON-able Python, as
    :func:`~connectrt.converters.json.java_text.java_dumps` takes), from one orjson call;
    ``no_commas`` when no item's text holds a comma (then neither has it Jackson's fix-ups).

    Raises orjson's ``JSONEncodeError`` for what it cannot write."""
    if not items:
        return []
    if no_commas:
        parts = _dumps(items).split(b",")
    else:
        layout = [None, _SEP] * len(items)
        layout[::2] = items
        layout.pop()
        parts = java_dumps(layout).split(b",\x01,")
    parts[0] = parts[0][1:]  # the list's "["
    parts[-1] = parts[-1][:-1]  # its "]"
    return parts


def messages(texts: list[bytes], head: bytes, tail: bytes) -> list[bytes]:
    """``head + text + tail`` for each of ``texts`` (``texts`` itself without either)."""
    if not head and not tail:
        return texts
    return list(map(_join, zip(repeat(head), texts, repeat(tail))))


def _of_type(values: Sequence[Any], types: set[type], t: type) -> Sequence[Any]:
    """The values of exactly type ``t`` among ``values`` (whose types are ``types``), zeros
    possibly left out: all that the range checks below look at."""
    if t not in types:
        return ()
    if len(types) == 1:
        return values
    if len(types) == 2 and _NoneType in types:
        return [*filter(None, values)]  # the Nones (and zeros) out, at C level
    return [*compress(values, map(is_, map(type, values), repeat(t)))]


def _ints_fit(values: Sequence[Any], types: set[type], low: int, high: int) -> bool:
    """Whether every int among ``values`` is within ``low..high`` (a signed range): one pass,
    ``max(abs)`` against ``high`` (so ``low`` itself goes to the closure, which takes it)."""
    ints = _of_type(values, types, int)
    return not ints or max(map(abs, ints)) <= min(high, -low)


def _floats_fit(values: Sequence[Any], types: set[type]) -> bool:
    """Whether every float among ``values`` is one orjson writes as Java's ``Double.toString``
    does: 0.0, or 1e-3 <= |x| < 1e7 (so neither NaN nor infinite)."""
    floats = _of_type(values, types, float)
    if not floats:
        return True
    total = sum(floats)
    if total - total != 0.0:  # a NaN or an infinity (or an overflowing sum: the closure decides)
        return False
    if not max(map(abs, floats)) < 1e7:
        return False
    return min(map(abs, floats)) >= 1e-3 or min(filter(None, map(abs, floats)), default=1.0) >= 1e-3


def _plain(values: Sequence[Any], types: set[type]) -> bool:
    """Whether ``values`` (schemaless, of ``types``) are all what orjson writes as Kafka does:
    strings, booleans, None, int64 integers and floats of :func:`_floats_fit`'s range."""
    return (
        types <= _PLAIN
        and (int not in types or _ints_fit(values, types, _INT64_LOW, _INT64_HIGH))
        and (float not in types or _floats_fit(values, types))
    )


def plain_values(values: Sequence[Any]) -> bool:
    """Whether ``values`` (schemaless) are all plain (:func:`_plain`), or maps of string keys to
    plain values (all the maps' values checked as one list). C-level passes over the batch."""
    types = set(map(type, values))
    if types == {dict}:
        if not set(map(type, chain.from_iterable(values))) <= {str}:
            return False
        values = [*chain.from_iterable(map(dict.values, values))]
        types = set(map(type, values))
    return _plain(values, types)


def _keys(names: Sequence[str], head: bytes) -> list[bytes]:
    """The pieces before each field's value: ``head{"a":``, ``,"b":``, ..."""
    keys = [java_dumps(name) + b":" for name in names]
    return [head + b"{" + keys[0], *(b"," + k for k in keys[1:])] if keys else []


def maps_of_one_shape(values: Sequence[Any], head: bytes, tail: bytes) -> list[bytes] | None:
    """Schemaless maps with the same string keys in the same order (as a source's records
    usually are), written from columns as :class:`StructBatch` writes structs; None when
    ``values`` are not such maps (or have no keys)."""
    first = values[0]
    if type(first) is not dict or not first:
        return None
    names = tuple(first)
    n, k = len(values), len(names)
    if set(map(type, values)) != {dict}:
        return None
    keys = [*chain.from_iterable(values)]  # every map's keys, in order
    if (
        len(keys) != n * k
        or any(keys[i::k].count(name) != n for i, name in enumerate(names))
        or set(map(type, keys)) != {str}  # (a str subclass key: written as pairs)
    ):
        return None
    flat = [*chain.from_iterable(map(dict.values, values))]
    columns = [flat[i::k] for i in range(k)]
    kinds = [set(map(type, column)) for column in columns]
    plain = [_plain(column, types) for column, types in zip(columns, kinds, strict=True)]
    if all(plain):  # orjson writes the maps as they are: no columns to assemble
        return messages(json_texts(values, no_commas=False), head, tail)
    pieces: list[Any] = []
    for between, column, types, is_plain in zip(
        _keys(names, head), columns, kinds, plain, strict=True
    ):
        if is_plain:
            texts = json_texts(column, no_commas=not types & _WITH_COMMAS_PLAIN)
        else:
            texts = json_texts(list(map(schemaless_to_json, column)), no_commas=False)
        pieces += (repeat(between), texts)
    pieces.append(repeat(b"}" + tail))
    return _assemble(pieces)


ColumnCheck = Callable[[Sequence[Any], set[type]], bool]
"""Whether a column (with the set of its values' types) is as orjson writes it, nulls apart."""


def _column_check(schema: Schema) -> ColumnCheck | None:
    """The C-level check of a field's column, or None: the field's closure converts it."""
    if logical.logical_name(schema) is not None:
        return None
    t = schema.type
    if t in INT_RANGES:
        low, high = INT_RANGES[t]
        return lambda col, types: types <= _INT_OR_NONE and _ints_fit(col, types, low, high)
    if t is Type.STRING:
        return lambda col, types: types <= _STR_OR_NONE
    if t is Type.BOOLEAN:
        return lambda col, types: types <= _BOOL_OR_NONE
    if t is Type.FLOAT64:
        return lambda col, types: types <= _FLOAT_OR_NONE and _floats_fit(col, types)
    return None


class StructBatch:
    """Structs of one STRUCT schema written from columns (see the module docstring).

    Built once per schema (the converter keeps it in the schema's encode plan); ``head`` and
    ``tail`` go around each struct's object (the envelope, or nothing).
    """

    def __init__(
        self,
        schema: Schema,
        encoder: EncoderCompiler,
        serialize: Fn,
        head: bytes,
        tail: bytes,
    ) -> None:
        self.schema = schema
        self.serialize = serialize
        self.head = head
        self.tail = tail
        fields = schema.fields
        self.width = len(fields)
        self.end = b"}" + tail
        self.fields = [
            (
                between,
                encoder.compile(f.schema),
                _column_check(f.schema),
                _passes_null(f.schema, encoder),
                comma_free(f.schema),
            )
            for between, f in zip(_keys([f.name for f in fields], head), fields, strict=True)
        ]

    def write(self, values: Sequence[Any]) -> list[bytes]:
        """Each value's message; raises DataError where a value fails (as ``serialize``), or
        orjson's ``JSONEncodeError``."""
        n = len(values)
        k = self.width
        flat: list[Any] = []
        if (
            k
            and set(map(type, values)) == {Struct}
            and list(map(_get_schema, values)).count(self.schema) == n
        ):
            flat = [*chain.from_iterable(map(_get_values, values))]
        if not flat or len(flat) != n * k:  # (no fields: no columns to write from)
            texts = json_texts(list(map(self.serialize, values)), no_commas=False)
            return messages(texts, self.head, self.tail)
        pieces: list[Any] = []
        for i, (between, convert, check, passes_null, no_commas) in enumerate(self.fields):
            column = flat[i::k]
            types = set(map(type, column))
            if (
                check is None
                or (_NoneType in types and not passes_null)
                or not check(column, types)
            ):
                column = list(map(convert, column))
            pieces += (repeat(between), json_texts(column, no_commas))
        pieces.append(repeat(self.end))
        return _assemble(pieces)


def _assemble(pieces: list[Any]) -> list[bytes]:
    """One message per record: the join of its pieces (``repeat``s of the fixed ones and
    lists of the values' texts, in order)."""
    return list(map(_join, zip(*pieces, strict=False)))


def _passes_null(schema: Schema, encoder: EncoderCompiler) -> bool:
    """Whether the field's closure writes a None as it is (null): optional, and no default
    replaces it."""
    if schema.default is not None and encoder.replace_null:
        return False
    return schema.optional
