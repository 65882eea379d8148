"""Generators of primitive and logical-type values, each compiled from its type's hints.

One function per Avro type (``int``/``long``, ``float``/``double``, ``boolean``, ``string``,
``decimal``, ``date``, ``time-millis``, ``timestamp-millis``) reads the hints that type supports
(``range``, ``iteration``, ``options``, ``regex``, ``length``, ``odds``, ...) once and returns a
closure ``gen(rng, n)`` that does no more than draw the value: these closures run once per
field of every generated record.
"""

from __future__ import annotations

import datetime as dt
import decimal
import math
import random
import uuid
from collections.abc import Callable, Mapping
from typing import Any, Final

from connectors.datagen.hints import (
    EPOCH,
    EPOCH_ORDINAL,
    HintError,
    as_number,
    epoch_days,
    epoch_ms,
    hint_length,
    hint_range,
)
from connectors.datagen.regex import compile_regex

__all__ = [
    "INT_BOUNDS",
    "Gen",
    "booleans",
    "choices",
    "dates",
    "decimals",
    "floats",
    "integers",
    "iteration_counter",
    "strings",
    "times_of_day",
    "timestamps",
    "uniform_ints",
]

Gen = Callable[[random.Random, int], Any]
"""``gen(rng, n)``: a value for the record with index ``n``, drawing randomness from ``rng``."""

INT_BOUNDS: Final = {"int": (-(2**31), 2**31), "long": (-(2**63), 2**63)}
"""The ``[min, max)`` of each Avro integer type."""

_MS_PER_DAY: Final = 86_400_000
_DEFAULT_FROM_MS: Final = 1_577_836_800_000  # 2020-01-01T00:00:00Z
_DEFAULT_TO_MS: Final = 1_893_456_000_000  # 2030-01-01T00:00:00Z
_ALNUM: Final = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
_MAX_EXACT_SPAN: Final = 2**53


def choices(values: list[Any], path: str) -> Gen:
    """One of ``values``, uniformly (always the same one when there is only one)."""
    if not values:
        raise HintError(f"{path}: nothing to choose from")
    count = len(values)
    if count == 1:
        only = values[0]
        return lambda rng, n: only

    def choice(rng: random.Random, n: int) -> Any:
        return values[int(rng.random() * count)]

    return choice


def iteration_counter(
    hints: Mapping[str, Any], path: str, parse: Callable[[Any], Any]
) -> Gen | None:
    """``start + n * step`` with optional ``initial`` and wrap-around at ``restart``."""
    it = hints.get("iteration")
    if it is None:
        return None
    if not isinstance(it, Mapping) or "start" not in it:
        raise HintError(f'{path}: iteration must be {{"start": ..., "step": ...}}')
    start = parse(it["start"])
    restart = parse(it["restart"]) if it.get("restart") is not None else None
    default_step = -1 if restart is not None and restart < start else 1
    step = as_number(it.get("step", default_step), "iteration step", path)
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


def integers(kind: str, hints: Mapping[str, Any], path: str) -> Gen:
    """``int``/``long`` values: an ``iteration``, else uniform over ``range`` (default: the
    whole type)."""
    tmin, tmax = INT_BOUNDS[kind]

    def parse(v: Any) -> int:
        x = as_number(v, "value", path)
        if not isinstance(x, int) or not tmin <= x < tmax:
            raise HintError(f"{path}: {v!r} is not a valid {kind}")
        return x

    iteration = iteration_counter(hints, path, parse)
    if iteration is not None:
        return iteration
    lo, hi = hint_range(hints, tmin, tmax, path)
    lo, hi = (
        math.ceil(as_number(lo, "range min", path)),
        math.ceil(as_number(hi, "range max", path)),
    )
    if not tmin <= lo < hi <= tmax:
        raise HintError(f"{path}: range must satisfy min < max within the {kind} range")
    return uniform_ints(lo, hi)


def uniform_ints(lo: int, hi: int) -> Gen:
    """Integers ``lo <= v < hi``, uniformly (``random()`` where exact, ``randrange`` beyond)."""
    span = hi - lo
    if span <= _MAX_EXACT_SPAN:
        return lambda rng, n: lo + int(rng.random() * span)
    return lambda rng, n: rng.randrange(lo, hi)


def floats(hints: Mapping[str, Any], path: str) -> Gen:
    """``float``/``double`` values: an ``iteration``, else uniform over ``range`` (``[0, 1)``)."""
    iteration = iteration_counter(hints, path, lambda v: float(as_number(v, "value", path)))
    if iteration is not None:
        return iteration
    lo, hi = hint_range(hints, 0.0, 1.0, path)
    lo, hi = float(as_number(lo, "range min", path)), float(as_number(hi, "range max", path))
    if not lo < hi:
        raise HintError(f"{path}: range needs min < max")
    span = hi - lo
    return lambda rng, n: lo + rng.random() * span


def booleans(hints: Mapping[str, Any], path: str) -> Gen:
    """Booleans: alternating from an ``iteration`` start, else ``true`` with ``odds``."""
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


def strings(avro: Mapping[str, Any], hints: Mapping[str, Any], path: str) -> Gen:
    """Strings from ``options``, ``regex``, ``iteration`` or ``kind``, else letters and digits of
    a ``length``; ``prefix`` and ``suffix`` around any of them."""
    if not isinstance(hints, Mapping):
        raise HintError(f"{path}: hints must be a JSON object")
    base: Gen
    if "options" in hints:
        options = hints["options"]
        if not isinstance(options, list) or not options:
            raise HintError(f"{path}: options must be a non-empty list")
        base = choices([str(o) for o in options], path)
    elif "regex" in hints:
        try:
            regex = compile_regex(str(hints["regex"]))
        except ValueError as exc:
            raise HintError(f"{path}: {exc}") from exc
        base = lambda rng, n: regex(rng)  # noqa: E731
    elif "iteration" in hints:
        counter = iteration_counter(hints, path, lambda v: as_number(v, "value", path))
        assert counter is not None
        base = lambda rng, n: str(counter(rng, n))  # noqa: E731
    elif hints.get("kind") == "uuid" or (avro.get("logicalType") == "uuid" and not hints):
        base = lambda rng, n: str(uuid.UUID(int=rng.getrandbits(128), version=4))  # noqa: E731
    elif "kind" in hints:
        raise HintError(f"{path}: unsupported kind {hints['kind']!r} (supported: uuid)")
    else:
        lo, hi = hint_length(hints, 8, 17, path)
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


def decimals(avro: Mapping[str, Any], hints: Mapping[str, Any], path: str) -> Gen:
    """``decimal`` values of the schema's scale, uniform over ``range`` (default ``[0, 1000)``
    capped by the precision)."""
    scale = int(avro.get("scale", 0))
    precision = int(avro.get("precision", 64))
    limit = decimal.Decimal(10) ** (precision - scale)
    lo_d, hi_d = hint_range(hints, 0, min(limit, decimal.Decimal(1000)), path)
    try:
        lo_d, hi_d = decimal.Decimal(str(lo_d)), decimal.Decimal(str(hi_d))
    except decimal.InvalidOperation as exc:
        raise HintError(f"{path}: decimal range bounds must be numbers") from exc
    if not -limit <= lo_d < hi_d <= limit:
        raise HintError(f"{path}: decimal range needs min < max within precision {precision}")
    factor = decimal.Decimal(10) ** scale
    lo = int((lo_d * factor).to_integral_value(decimal.ROUND_CEILING))
    hi = int((hi_d * factor).to_integral_value(decimal.ROUND_CEILING))
    unscaled = uniform_ints(lo, hi)
    exp = -scale
    return lambda rng, n: decimal.Decimal(unscaled(rng, n)).scaleb(exp)


def timestamps(hints: Mapping[str, Any], path: str) -> Gen:
    """``timestamp-millis`` values as UTC datetimes: an ``iteration``, else uniform over
    ``range`` (default 2020-2029)."""
    millis = iteration_counter(hints, path, lambda v: epoch_ms(v, path))
    if millis is None:
        lo, hi = hint_range(hints, _DEFAULT_FROM_MS, _DEFAULT_TO_MS, path)
        lo, hi = epoch_ms(lo, path), epoch_ms(hi, path)
        if not lo < hi:
            raise HintError(f"{path}: range needs min < max")
        millis = uniform_ints(lo, hi)
    ms_gen = millis
    epoch, one_ms = EPOCH, dt.timedelta(milliseconds=1)
    return lambda rng, n: epoch + ms_gen(rng, n) * one_ms


def dates(hints: Mapping[str, Any], path: str) -> Gen:
    """``date`` values: an ``iteration`` of days, else uniform over ``range`` (2020-2029)."""
    days = iteration_counter(hints, path, lambda v: epoch_days(v, path))
    if days is None:
        lo, hi = hint_range(
            hints, _DEFAULT_FROM_MS // _MS_PER_DAY, _DEFAULT_TO_MS // _MS_PER_DAY, path
        )
        lo, hi = epoch_days(lo, path), epoch_days(hi, path)
        if not lo < hi:
            raise HintError(f"{path}: range needs min < max")
        days = uniform_ints(lo, hi)
    day_gen = days
    from_ordinal, base = dt.date.fromordinal, EPOCH_ORDINAL
    return lambda rng, n: from_ordinal(base + day_gen(rng, n))


def times_of_day(hints: Mapping[str, Any], path: str) -> Gen:
    """``time-millis`` values: an ``iteration`` of ms (modulo a day), else uniform over
    ``range`` (default the whole day)."""
    millis = iteration_counter(hints, path, lambda v: int(as_number(v, "time", path)) % _MS_PER_DAY)
    if millis is None:
        lo, hi = hint_range(hints, 0, _MS_PER_DAY, path)
        lo, hi = int(as_number(lo, "range min", path)), int(as_number(hi, "range max", path))
        if not 0 <= lo < hi <= _MS_PER_DAY:
            raise HintError(f"{path}: time range must lie within 0..86400000 ms")
        millis = uniform_ints(lo, hi)
    ms_gen = millis

    def time_of_day(rng: random.Random, n: int) -> dt.time:
        ms = ms_gen(rng, n) % _MS_PER_DAY
        s, ms = divmod(ms, 1000)
        m, s = divmod(s, 60)
        h, m = divmod(m, 60)
        return dt.time(h, m, s, ms * 1000)

    return time_of_day
