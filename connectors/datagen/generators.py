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
"""

from __future__ import annotations

import datetime as dt
import decimal
import math
import random
import uuid
from collections.abc import Callable, Mapping
from typing import Any, Final

from connectors.datagen.regex import compile_regex
from connectrt.api.errors import DataError
from connectrt.data import Schema, Struct, Type, validate_value
from connectrt.data.avro_schema import ENUM_PARAM, default_from_avro

__all__ = ["Gen", "HintError", "compile_generator"]

Gen = Callable[[random.Random, int], Any]
"""``gen(rng, n)``: a value for the record with index ``n``, drawing randomness from ``rng``."""

HINTS: Final = "arg.properties"

_EPOCH: Final = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
_EPOCH_ORDINAL: Final = dt.date(1970, 1, 1).toordinal()
_MS_PER_DAY: Final = 86_400_000
_DEFAULT_FROM_MS: Final = 1_577_836_800_000  # 2020-01-01T00:00:00Z
_DEFAULT_TO_MS: Final = 1_893_456_000_000  # 2030-01-01T00:00:00Z
_ALNUM: Final = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
_INT_BOUNDS: Final = {"int": (-(2**31), 2**31), "long": (-(2**63), 2**63)}
_FLOAT_TYPES: Final = ("float", "double")
_MAX_EXACT_SPAN: Final = 2**53


class HintError(ValueError):
    """A generation hint is invalid; the message names the field path and the hint."""


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
        hints = _hints(avro, outer, path)
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
            return _choice(list(avro.get("symbols") or []), path)
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
            lo, hi = _length(hints, 0, 5, path)
            return _array(item, lo, hi)
        if kind == "map":
            assert schema.value_schema is not None
            value = self.node(avro.get("values"), schema.value_schema, ns, {}, f"{path}{{}}")
            keys = _string({}, hints.get("keys") or {}, f"{path}.keys")
            lo, hi = _length(hints, 0, 5, path)
            return _map(keys, value, lo, hi)
        if kind == "bytes" and lt == "decimal":
            return _decimal(avro, hints, path)
        if kind == "int" and lt == "date":
            return _date(hints, path)
        if kind == "int" and lt == "time-millis":
            return _time(hints, path)
        if kind == "long" and lt == "timestamp-millis":
            return _timestamp(hints, path)
        if kind in _INT_BOUNDS:
            return _integer(str(kind), hints, path)
        if kind in _FLOAT_TYPES:
            return _float(hints, path)
        if kind == "boolean":
            return _boolean(hints, path)
        if kind == "string":
            return _string(avro, hints, path)
        if kind == "bytes":
            lo, hi = _length(hints, 8, 17, path)
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
        lo, hi = _length(hints, 0, 5, path)
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
        return _choice(values, path)


# ---------------------------------------------------------------------------------- helpers


def _hints(avro: Mapping[str, Any], outer: Mapping[str, Any], path: str) -> dict[str, Any]:
    own = avro.get(HINTS) or {}
    if not isinstance(own, Mapping):
        raise HintError(f"{path}: {HINTS} must be a JSON object")
    return {**outer, **own}


def _full_name(avro: Mapping[str, Any], ns: str | None) -> str:
    name = str(avro.get("name") or "")
    if "." in name:
        return name
    namespace = avro.get("namespace", ns)
    return f"{namespace}.{name}" if namespace else name


def _null(rng: random.Random, n: int) -> None:
    return None


def _choice(values: list[Any], path: str) -> Gen:
    if not values:
        raise HintError(f"{path}: nothing to choose from")
    count = len(values)
    if count == 1:
        only = values[0]
        return lambda rng, n: only

    def choice(rng: random.Random, n: int) -> Any:
        return values[int(rng.random() * count)]

    return choice


def _number(value: Any, what: str, path: str) -> float | int:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise HintError(f"{path}: {what} must be a number, got {value!r}")
    return value


def _range(hints: Mapping[str, Any], lo: Any, hi: Any, path: str) -> tuple[Any, Any]:
    rng = hints.get("range")
    if rng is None:
        return lo, hi
    if not isinstance(rng, Mapping) or not ({"min", "max"} & set(rng)):
        raise HintError(f'{path}: range must be {{"min": ..., "max": ...}}')
    lo = rng.get("min", lo)
    hi = rng.get("max", hi)
    return lo, hi


def _length(hints: Mapping[str, Any], lo: int, hi: int, path: str) -> tuple[int, int]:
    length = hints.get("length")
    if length is None:
        return lo, hi
    if isinstance(length, int) and not isinstance(length, bool):
        lo, hi = length, length + 1
    elif isinstance(length, Mapping) and ({"min", "max"} & set(length)):
        lo = length.get("min", 0)
        hi = length.get("max", max(lo, 0) + 9)
    else:
        raise HintError(f'{path}: length must be a number or {{"min": ..., "max": ...}}')
    if not all(isinstance(x, int) and not isinstance(x, bool) for x in (lo, hi)):
        raise HintError(f"{path}: length bounds must be integers")
    if lo < 0 or hi <= lo:
        raise HintError(f"{path}: length needs 0 <= min < max (got {lo}, {hi})")
    return lo, hi


def _iteration(hints: Mapping[str, Any], path: str, parse: Callable[[Any], Any]) -> Gen | None:
    """``start + n * step`` with optional ``initial`` and wrap-around at ``restart``."""
    it = hints.get("iteration")
    if it is None:
        return None
    if not isinstance(it, Mapping) or "start" not in it:
        raise HintError(f'{path}: iteration must be {{"start": ..., "step": ...}}')
    start = parse(it["start"])
    restart = parse(it["restart"]) if it.get("restart") is not None else None
    default_step = -1 if restart is not None and restart < start else 1
    step = _number(it.get("step", default_step), "iteration step", path)
    first = parse(it["initial"]) if it.get("initial") is not None else start
    if step == 0:
        raise HintError(f"{path}: iteration step must not be 0")
    if restart is None:
        return lambda rng, n: first + n * step
    span = restart - start
    if span == 0 or (span > 0) != (step > 0):
        raise HintError(f"{path}: iteration restart must lie after start in the step direction")
    offset = first - start
    return lambda rng, n: start + (offset + n * step) % span


def _integer(kind: str, hints: Mapping[str, Any], path: str) -> Gen:
    tmin, tmax = _INT_BOUNDS[kind]

    def parse(v: Any) -> int:
        x = _number(v, "value", path)
        if not isinstance(x, int) or not tmin <= x < tmax:
            raise HintError(f"{path}: {v!r} is not a valid {kind}")
        return x

    iteration = _iteration(hints, path, parse)
    if iteration is not None:
        return iteration
    lo, hi = _range(hints, tmin, tmax, path)
    lo, hi = math.ceil(_number(lo, "range min", path)), math.ceil(_number(hi, "range max", path))
    if not tmin <= lo < hi <= tmax:
        raise HintError(f"{path}: range must satisfy min < max within the {kind} range")
    return _uniform_int(lo, hi)


def _uniform_int(lo: int, hi: int) -> Gen:
    span = hi - lo
    if span <= _MAX_EXACT_SPAN:
        return lambda rng, n: lo + int(rng.random() * span)
    return lambda rng, n: rng.randrange(lo, hi)


def _float(hints: Mapping[str, Any], path: str) -> Gen:
    iteration = _iteration(hints, path, lambda v: float(_number(v, "value", path)))
    if iteration is not None:
        return iteration
    lo, hi = _range(hints, 0.0, 1.0, path)
    lo, hi = float(_number(lo, "range min", path)), float(_number(hi, "range max", path))
    if not lo < hi:
        raise HintError(f"{path}: range needs min < max")
    span = hi - lo
    return lambda rng, n: lo + rng.random() * span


def _boolean(hints: Mapping[str, Any], path: str) -> Gen:
    it = hints.get("iteration")
    if it is not None:
        start = it.get("start") if isinstance(it, Mapping) else None
        if not isinstance(start, bool):
            raise HintError(f'{path}: boolean iteration must be {{"start": true|false}}')
        return lambda rng, n: start if n % 2 == 0 else not start
    odds = hints.get("odds", 0.5)
    if isinstance(odds, bool) or not isinstance(odds, int | float) or not 0 <= odds <= 1:
        raise HintError(f"{path}: odds must be a number between 0 and 1")
    return lambda rng, n: rng.random() < odds


def _string(avro: Mapping[str, Any], hints: Mapping[str, Any], path: str) -> Gen:
    if not isinstance(hints, Mapping):
        raise HintError(f"{path}: hints must be a JSON object")
    base: Gen
    if "options" in hints:
        options = hints["options"]
        if not isinstance(options, list) or not options:
            raise HintError(f"{path}: options must be a non-empty list")
        base = _choice([str(o) for o in options], path)
    elif "regex" in hints:
        try:
            regex = compile_regex(str(hints["regex"]))
        except ValueError as exc:
            raise HintError(f"{path}: {exc}") from exc
        base = lambda rng, n: regex(rng)  # noqa: E731
    elif "iteration" in hints:
        counter = _iteration(hints, path, lambda v: _number(v, "value", path))
        assert counter is not None
        base = lambda rng, n: str(counter(rng, n))  # noqa: E731
    elif hints.get("kind") == "uuid" or (avro.get("logicalType") == "uuid" and not hints):
        base = lambda rng, n: str(uuid.UUID(int=rng.getrandbits(128), version=4))  # noqa: E731
    elif "kind" in hints:
        raise HintError(f"{path}: unsupported kind {hints['kind']!r} (supported: uuid)")
    else:
        lo, hi = _length(hints, 8, 17, path)
        span = hi - lo
        alnum = _ALNUM
        k = len(alnum)

        def text(rng: random.Random, n: int) -> str:
            rnd = rng.random
            return "".join([alnum[int(rnd() * k)] for _ in range(lo + int(rnd() * span))])

        base = text
    prefix, suffix = str(hints.get("prefix", "")), str(hints.get("suffix", ""))
    if prefix or suffix:
        inner = base
        return lambda rng, n: f"{prefix}{inner(rng, n)}{suffix}"
    return base


def _decimal(avro: Mapping[str, Any], hints: Mapping[str, Any], path: str) -> Gen:
    scale = int(avro.get("scale", 0))
    precision = int(avro.get("precision", 64))
    limit = decimal.Decimal(10) ** (precision - scale)
    lo_d, hi_d = _range(hints, 0, min(limit, decimal.Decimal(1000)), path)
    try:
        lo_d, hi_d = decimal.Decimal(str(lo_d)), decimal.Decimal(str(hi_d))
    except decimal.InvalidOperation as exc:
        raise HintError(f"{path}: decimal range bounds must be numbers") from exc
    if not -limit <= lo_d < hi_d <= limit:
        raise HintError(f"{path}: decimal range needs min < max within precision {precision}")
    factor = decimal.Decimal(10) ** scale
    lo = int((lo_d * factor).to_integral_value(decimal.ROUND_CEILING))
    hi = int((hi_d * factor).to_integral_value(decimal.ROUND_CEILING))
    unscaled = _uniform_int(lo, hi)
    exp = -scale
    return lambda rng, n: decimal.Decimal(unscaled(rng, n)).scaleb(exp)


def _epoch_ms(value: Any, path: str) -> int:
    if isinstance(value, str):
        try:
            parsed = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError as exc:
            raise HintError(f"{path}: {value!r} is not an ISO-8601 date-time") from exc
        if parsed.tzinfo is None:
            parsed = parsed.replace(tzinfo=dt.UTC)
        return (parsed - _EPOCH) // dt.timedelta(milliseconds=1)
    number = _number(value, "timestamp", path)
    return int(number)


def _epoch_days(value: Any, path: str) -> int:
    if isinstance(value, str):
        try:
            return dt.date.fromisoformat(value).toordinal() - _EPOCH_ORDINAL
        except ValueError as exc:
            raise HintError(f"{path}: {value!r} is not an ISO-8601 date") from exc
    return int(_number(value, "date", path))


def _timestamp(hints: Mapping[str, Any], path: str) -> Gen:
    millis = _iteration(hints, path, lambda v: _epoch_ms(v, path))
    if millis is None:
        lo, hi = _range(hints, _DEFAULT_FROM_MS, _DEFAULT_TO_MS, path)
        lo, hi = _epoch_ms(lo, path), _epoch_ms(hi, path)
        if not lo < hi:
            raise HintError(f"{path}: range needs min < max")
        millis = _uniform_int(lo, hi)
    ms_gen = millis
    epoch, one_ms = _EPOCH, dt.timedelta(milliseconds=1)
    return lambda rng, n: epoch + ms_gen(rng, n) * one_ms


def _date(hints: Mapping[str, Any], path: str) -> Gen:
    days = _iteration(hints, path, lambda v: _epoch_days(v, path))
    if days is None:
        lo, hi = _range(hints, _DEFAULT_FROM_MS // _MS_PER_DAY, _DEFAULT_TO_MS // _MS_PER_DAY, path)
        lo, hi = _epoch_days(lo, path), _epoch_days(hi, path)
        if not lo < hi:
            raise HintError(f"{path}: range needs min < max")
        days = _uniform_int(lo, hi)
    day_gen = days
    from_ordinal, base = dt.date.fromordinal, _EPOCH_ORDINAL
    return lambda rng, n: from_ordinal(base + day_gen(rng, n))


def _time(hints: Mapping[str, Any], path: str) -> Gen:
    millis = _iteration(hints, path, lambda v: int(_number(v, "time", path)) % _MS_PER_DAY)
    if millis is None:
        lo, hi = _range(hints, 0, _MS_PER_DAY, path)
        lo, hi = int(_number(lo, "range min", path)), int(_number(hi, "range max", path))
        if not 0 <= lo < hi <= _MS_PER_DAY:
            raise HintError(f"{path}: time range must lie within 0..86400000 ms")
        millis = _uniform_int(lo, hi)
    ms_gen = millis

    def time_of_day(rng: random.Random, n: int) -> dt.time:
        ms = ms_gen(rng, n) % _MS_PER_DAY
        s, ms = divmod(ms, 1000)
        m, s = divmod(s, 60)
        h, m = divmod(m, 60)
        return dt.time(h, m, s, ms * 1000)

    return time_of_day


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
