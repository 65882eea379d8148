"""Compiling an Avro schema with generation hints into a fast random-value generator.

Hints are Avro properties named ``arg.properties``, in the style of Confluent's
avro-random-generator, set on a type (or, for convenience, on the field that holds it):

=============  =================================================================================
``options``    a list of values to pick from (any type; JSON as in Avro defaults, timestamps in
               epoch ms, dates in epoch days, decimals as numbers or strings)
``range``      ``{"min": a, "max": b}``: numbers ``a <= v < b``; for ``date`` and
               ``timestamp-millis`` the bounds may be ISO-8601 strings; for ``decimal`` numbers
``iteration``  ``{"start": s, "step": d, "restart": r, "initial": i}``: the n-th record gets
               ``start + n * step`` (from ``initial`` when given), wrapping from ``restart`` back
               to ``start``; numbers, ``date``/``timestamp-millis`` (ISO or epoch start),
               strings (the number as text) and booleans (alternating from ``start``)
``regex``      strings matching the pattern (see :mod:`connectors.datagen.regex`)
``length``     ``n`` or ``{"min": a, "max": b}`` (``a <= len < b``) for strings, bytes, arrays
               and maps; default ``{"min": 8, "max": 17}`` for strings and bytes, ``0..4`` items
``prefix``     / ``suffix``: text around a generated string
``kind``       ``"uuid"`` for strings (also the default for the ``uuid`` logical type)
``odds``       probability of ``true`` for booleans
``keys``       hints for the keys of a map (a string)
``position``   on a union field: always this branch (0 = first); ``distribution``:
               ``{"0": p0, "1": p1}`` branch probabilities (default: each branch equally)
=============  =================================================================================

Without hints values are uniform over the type (ints over the whole int range, floats in
``[0, 1)``, dates and timestamps within 2020-2029, strings of 8-16 letters and digits).

Values are Connect values for the Connect schema that
:func:`connectrt.data.avro_schema.avro_to_connect` derives from the same Avro schema
(``Struct`` for records, ``datetime``/``date``/``time``/``decimal.Decimal`` for logical types),
so a converter turns them back into the same Avro data.

The "iteration" counter is the record's index ``n`` passed to each generator (so a generator
is a pure function of the random stream and ``n``: replaying both reproduces a record exactly).
A compiled generator is immutable and may be shared across threads; each thread passes its own
``random.Random``.

This module walks the Avro schema (records, unions, enums, fixed, arrays, maps, named
references) and assembles the generator; :mod:`connectors.datagen.hints` reads the hints and
:mod:`connectors.datagen.scalars` generates the primitive and logical-type values.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from typing import Any, Final

from connectors.datagen.hints import HINTS, HintError, hint_length, merge_hints
from connectors.datagen.scalars import (
    INT_BOUNDS,
    Gen,
    booleans,
    choices,
    dates,
    decimals,
    floats,
    integers,
    strings,
    times_of_day,
    timestamps,
)
from connectrt.api.errors import DataError
from connectrt.data import Schema, Struct, Type, validate_value
from connectrt.data.avro_schema import ENUM_PARAM, default_from_avro

__all__ = ["Gen", "HintError", "compile_generator"]

_FLOAT_TYPES: Final = ("float", "double")


def compile_generator(avro: Any, schema: Schema) -> Gen:
    """Compile ``avro`` (parsed JSON, hints included) into a generator of Connect values of
    ``schema`` (its Connect schema). Raises HintError for invalid or unsupported hints."""
    return _Compiler().node(avro, schema, None, {}, "$")


class _Compiler:
    def __init__(self) -> None:
        self.named: dict[str, tuple[Mapping[str, Any], str | None]] = {}

    # -------------------------------------------------------------------------------- dispatch

    def node(
        self, avro: Any, schema: Schema, ns: str | None, outer: Mapping[str, Any], path: str
    ) -> Gen:
        if isinstance(avro, list):
            return self.union(avro, schema, ns, outer, path)
        if isinstance(avro, str):
            return self.reference(avro, schema, ns, outer, path)
        if not isinstance(avro, Mapping):
            raise HintError(f"{path}: invalid Avro schema {avro!r}")
        hints = merge_hints(avro, outer, path)
        kind = avro.get("type")
        if isinstance(kind, list | Mapping):
            return self.node(kind, schema, ns, hints, path)
        if "options" in hints:
            return self.options(hints["options"], schema, path)
        lt = avro.get("logicalType")
        if kind == "record":
            return self.record(avro, schema, ns, path)
        if kind == "enum":
            full = _full_name(avro, ns)
            self.named[full] = (avro, ns)
            return choices(list(avro.get("symbols") or []), path)
        if kind == "fixed":
            full = _full_name(avro, ns)
            self.named[full] = (avro, ns)
            size = int(avro["size"])
            return lambda rng, n: rng.randbytes(size)
        if kind == "array":
            assert schema.value_schema is not None
            if schema.type is Type.MAP:  # an array of MapEntry records: a non-string-key map
                return self.entry_map(avro, schema, ns, hints, path)
            item = self.node(avro.get("items"), schema.value_schema, ns, {}, f"{path}[]")
            lo, hi = hint_length(hints, 0, 5, path)
            return _array(item, lo, hi)
        if kind == "map":
            assert schema.value_schema is not None
            value = self.node(avro.get("values"), schema.value_schema, ns, {}, f"{path}{{}}")
            keys = strings({}, hints.get("keys") or {}, f"{path}.keys")
            lo, hi = hint_length(hints, 0, 5, path)
            return _map(keys, value, lo, hi)
        if kind == "bytes" and lt == "decimal":
            return decimals(avro, hints, path)
        if kind == "int" and lt == "date":
            return dates(hints, path)
        if kind == "int" and lt == "time-millis":
            return times_of_day(hints, path)
        if kind == "long" and lt == "timestamp-millis":
            return timestamps(hints, path)
        if kind in INT_BOUNDS:
            return integers(str(kind), hints, path)
        if kind in _FLOAT_TYPES:
            return floats(hints, path)
        if kind == "boolean":
            return booleans(hints, path)
        if kind == "string":
            return strings(avro, hints, path)
        if kind == "bytes":
            lo, hi = hint_length(hints, 8, 17, path)
            return lambda rng, n: rng.randbytes(lo + int(rng.random() * (hi - lo)))
        if kind == "null":
            return lambda rng, n: None
        if isinstance(kind, str):
            return self.reference(kind, schema, ns, hints, path)
        raise HintError(f"{path}: unsupported Avro type {kind!r}")

    def reference(
        self, name: str, schema: Schema, ns: str | None, outer: Mapping[str, Any], path: str
    ) -> Gen:
        if name in ("int", "long", "float", "double", "boolean", "string", "bytes", "null"):
            return self.node({"type": name}, schema, ns, outer, path)
        full = name if "." in name or not ns else f"{ns}.{name}"
        found = self.named.get(full) or self.named.get(name)
        if found is None:
            raise HintError(f"{path}: unknown Avro type {name!r}")
        definition, def_ns = found
        return self.node(definition, schema, def_ns, outer, path)

    # ------------------------------------------------------------------------------ complex

    def record(self, avro: Mapping[str, Any], schema: Schema, ns: str | None, path: str) -> Gen:
        full = _full_name(avro, ns)
        self.named[full] = (avro, ns)
        inner_ns = full.rpartition(".")[0] or None
        fields = avro.get("fields") or []
        if schema.type is not Type.STRUCT or len(schema.fields) != len(fields):
            raise HintError(f"{path}: record {full} does not match its Connect schema")
        gens = []
        for avro_field, field in zip(fields, schema.fields, strict=True):
            field_hints = avro_field.get(HINTS) or {}
            if not isinstance(field_hints, Mapping):
                raise HintError(f"{path}.{field.name}: {HINTS} must be a JSON object")
            gen = self.node(
                avro_field["type"], field.schema, inner_ns, field_hints, f"{path}.{field.name}"
            )
            gens.append((field, gen))

        field_gens = [gen for _, gen in gens]
        # Generated values fit their schemas by construction (tests check every quickstart
        # with Struct.validate), so the struct is built from its value list without the
        # per-field check put() does (which dominated generation time).
        from_values = Struct._from_values

        def record(rng: random.Random, n: int) -> Struct:
            return from_values(schema, [gen(rng, n) for gen in field_gens])

        return record

    def union(
        self,
        branches: list[Any],
        schema: Schema,
        ns: str | None,
        hints: Mapping[str, Any],
        path: str,
    ) -> Gen:
        if "options" in hints:
            return self.options(hints["options"], schema, path)
        gens: list[Gen] = []
        for b in branches:
            if b == "null" or (isinstance(b, Mapping) and b.get("type") == "null"):
                gens.append(_null)
            else:
                gens.append(self.node(b, schema, ns, {}, path))
        if "position" in hints:
            pos = hints["position"]
            if not isinstance(pos, int) or not 0 <= pos < len(gens):
                raise HintError(f"{path}: position must be a branch index 0..{len(gens) - 1}")
            return gens[pos]
        weights = [1.0] * len(gens)
        if "distribution" in hints:
            dist = hints["distribution"]
            if not isinstance(dist, Mapping):
                raise HintError(f"{path}: distribution must be an object of branch -> weight")
            try:
                weights = [float(dist.get(str(i), 0)) for i in range(len(gens))]
            except (TypeError, ValueError) as exc:
                raise HintError(f"{path}: invalid distribution {dist!r}") from exc
            if any(w < 0 for w in weights) or sum(weights) <= 0:
                raise HintError(f"{path}: distribution weights must be >= 0 with a positive sum")
        total = sum(weights)
        cumulative = []
        acc = 0.0
        for w in weights:
            acc += w / total
            cumulative.append(acc)
        pairs = list(zip(cumulative, gens, strict=True))
        last = gens[-1]

        def union(rng: random.Random, n: int) -> Any:
            r = rng.random()
            for bound, gen in pairs:
                if r < bound:
                    return gen(rng, n)
            return last(rng, n)

        return union

    def entry_map(
        self, avro: Mapping[str, Any], schema: Schema, ns: str | None, hints: Any, path: str
    ) -> Gen:
        ks, vs = schema.key_schema, schema.value_schema
        assert ks is not None and vs is not None
        entry = avro.get("items")
        if isinstance(entry, str):
            full = entry if "." in entry or not ns else f"{ns}.{entry}"
            found = self.named.get(full) or self.named.get(entry)
            if found is None:
                raise HintError(f"{path}: unknown Avro type {entry!r}")
            entry = found[0]
        if not isinstance(entry, Mapping):
            raise HintError(f"{path}: invalid map entry schema")
        self.named[_full_name(entry, ns)] = (entry, ns)
        key_avro, value_avro = (f["type"] for f in entry["fields"])
        keys = self.node(key_avro, ks, ns, {}, f"{path}.key")
        values = self.node(value_avro, vs, ns, {}, f"{path}.value")
        lo, hi = hint_length(hints, 0, 5, path)
        return _map(keys, values, lo, hi)

    def options(self, options: Any, schema: Schema, path: str) -> Gen:
        if not isinstance(options, list) or not options:
            raise HintError(f"{path}: options must be a non-empty list")
        values = []
        for option in options:
            try:
                value = default_from_avro(schema, option)
                validate_value(schema, value, path)
            except DataError as exc:
                raise HintError(f"{path}: option {option!r} does not fit the type: {exc}") from exc
            params = schema.parameters or {}
            if ENUM_PARAM in params and f"{ENUM_PARAM}.{value}" not in params:
                raise HintError(f"{path}: option {option!r} is not a symbol of the enum")
            values.append(value)
        if schema.type in (Type.STRUCT, Type.ARRAY, Type.MAP):
            # Mutable values: build a fresh one per record.
            n_opts = len(options)

            def fresh(rng: random.Random, n: int) -> Any:
                return default_from_avro(schema, options[int(rng.random() * n_opts)])

            return fresh
        return choices(values, path)


# ---------------------------------------------------------------------------------- helpers


def _full_name(avro: Mapping[str, Any], ns: str | None) -> str:
    name = str(avro.get("name") or "")
    if "." in name:
        return name
    namespace = avro.get("namespace", ns)
    return f"{namespace}.{name}" if namespace else name


def _null(rng: random.Random, n: int) -> None:
    return None


def _array(item: Gen, lo: int, hi: int) -> Gen:
    span = hi - lo

    def array(rng: random.Random, n: int) -> list[Any]:
        return [item(rng, n) for _ in range(lo + int(rng.random() * span))]

    return array


def _map(keys: Gen, values: Gen, lo: int, hi: int) -> Gen:
    span = hi - lo

    def mapping(rng: random.Random, n: int) -> dict[Any, Any]:
        return {keys(rng, n): values(rng, n) for _ in range(lo + int(rng.random() * span))}

    return mapping
