"""Reading ``arg.properties`` generation hints: merging, checking and parsing their values.

Hints are Avro properties named ``arg.properties``, in the style of Confluent's
avro-random-generator, set on a type (or, for convenience, on the field that holds it); see
:mod:`connectors.datagen.generators` for the table of hints. This module holds what the
generators share to read them: the merge of a field's and its type's hints, the ``range`` and
``length`` bounds, numbers, and the ISO-8601 or epoch forms of dates and timestamps. Each
raises :class:`HintError` naming the field path and the hint.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from typing import Any, Final

__all__ = [
    "EPOCH",
    "EPOCH_ORDINAL",
    "HINTS",
    "HintError",
    "as_number",
    "epoch_days",
    "epoch_ms",
    "hint_length",
    "hint_range",
    "merge_hints",
]

HINTS: Final = "arg.properties"

EPOCH: Final = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
EPOCH_ORDINAL: Final = dt.date(1970, 1, 1).toordinal()


class HintError(ValueError):
    """A generation hint is invalid; the message names the field path and the hint."""


def merge_hints(avro: Mapping[str, Any], outer: Mapping[str, Any], path: str) -> dict[str, Any]:
    """The hints of type ``avro`` over those of its field (``outer``)."""
    own = avro.get(HINTS) or {}
    if not isinstance(own, Mapping):
        raise HintError(f"{path}: {HINTS} must be a JSON object")
    return {**outer, **own}


def as_number(value: Any, what: str, path: str) -> float | int:
    """``value`` when it is an int or float (not a bool); ``what`` names it in the error."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise HintError(f"{path}: {what} must be a number, got {value!r}")
    return value


def hint_range(hints: Mapping[str, Any], lo: Any, hi: Any, path: str) -> tuple[Any, Any]:
    """The ``range`` hint's ``(min, max)``, each defaulting to ``lo``/``hi`` (unparsed)."""
    rng = hints.get("range")
    if rng is None:
        return lo, hi
    if not isinstance(rng, Mapping) or not ({"min", "max"} & set(rng)):
        raise HintError(f'{path}: range must be {{"min": ..., "max": ...}}')
    lo = rng.get("min", lo)
    hi = rng.get("max", hi)
    return lo, hi


def hint_length(hints: Mapping[str, Any], lo: int, hi: int, path: str) -> tuple[int, int]:
    """The ``length`` hint as ``(min, max)`` with ``0 <= min < max``; ``(lo, hi)`` without it."""
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


def epoch_ms(value: Any, path: str) -> int:
    """Epoch milliseconds of an ISO-8601 date-time (UTC unless it says) or a number."""
    if isinstance(value, str):
        try:
            parsed = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError as exc:
            raise HintError(f"{path}: {value!r} is not an ISO-8601 date-time") from exc
        if parsed.tzinfo is None:
            parsed = parsed.replace(tzinfo=dt.UTC)
        return (parsed - EPOCH) // dt.timedelta(milliseconds=1)
    number = as_number(value, "timestamp", path)
    return int(number)


def epoch_days(value: Any, path: str) -> int:
    """Epoch days of an ISO-8601 date or a number."""
    if isinstance(value, str):
        try:
            return dt.date.fromisoformat(value).toordinal() - EPOCH_ORDINAL
        except ValueError as exc:
            raise HintError(f"{path}: {value!r} is not an ISO-8601 date") from exc
    return int(as_number(value, "date", path))
