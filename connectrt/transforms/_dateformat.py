"""A subset of Java's ``SimpleDateFormat`` patterns, formatting and parsing in UTC.

Supported letters: ``y`` (``yy`` two-digit, else full year), ``M`` (``M``/``MM`` number,
``MMM`` short name, ``MMMM`` full name), ``d``, ``D`` (day of year), ``E`` (``EEE`` short,
``EEEE`` full day name), ``a`` (AM/PM), ``H``, ``k`` (1-24), ``K`` (0-11), ``h`` (1-12),
``m``, ``s``, ``S`` (milliseconds, as Java: ``SSS`` is the zero-padded millisecond count),
``z`` (``UTC``), ``Z`` (``+0000``), ``X``/``XX``/``XXX`` (``Z`` for UTC, else ``+hh``,
``+hhmm``, ``+hh:mm``). Text in single quotes is literal (``''`` is a quote); other
non-letters are literal. Any other letter raises ValueError.
"""

from __future__ import annotations

import calendar
import datetime as dt
import re
from collections.abc import Callable

__all__ = ["JavaDateFormat"]

_SUPPORTED = set("yMdDEaHkKhmsSzZX")
_NUMERIC = set("ydDHkKhmsS")
_MONTHS = list(calendar.month_name)[1:]
_MONTHS_SHORT = list(calendar.month_abbr)[1:]
_DAYS = list(calendar.day_name)
_DAYS_SHORT = list(calendar.day_abbr)

_NUMBERS: dict[str, Callable[[dt.datetime], int]] = {
    "d": lambda v: v.day,
    "D": lambda v: v.timetuple().tm_yday,
    "H": lambda v: v.hour,
    "k": lambda v: v.hour or 24,
    "K": lambda v: v.hour % 12,
    "h": lambda v: v.hour % 12 or 12,
    "m": lambda v: v.minute,
    "s": lambda v: v.second,
    "S": lambda v: v.microsecond // 1000,
}
"""The letters :meth:`JavaDateFormat.format` renders as a zero-padded number of a datetime."""

_UTC_ZONE_TEXT = {"z": "UTC", "Z": "+0000", "X": "Z"}
"""How each zone letter renders UTC (the only zone :meth:`JavaDateFormat.format` writes)."""


def _tokenize(pattern: str) -> list[tuple[str, int] | str]:
    tokens: list[tuple[str, int] | str] = []
    i, n = 0, len(pattern)
    literal: list[str] = []

    def flush() -> None:
        if literal:
            tokens.append("".join(literal))
            literal.clear()

    while i < n:
        c = pattern[i]
        if c == "'":
            if i + 1 < n and pattern[i + 1] == "'":
                literal.append("'")
                i += 2
                continue
            i += 1
            while True:
                if i >= n:
                    raise ValueError(f"Unterminated quote in pattern {pattern!r}")
                if pattern[i] == "'":
                    if i + 1 < n and pattern[i + 1] == "'":
                        literal.append("'")
                        i += 2
                        continue
                    i += 1
                    break
                literal.append(pattern[i])
                i += 1
        elif c.isascii() and c.isalpha():
            if c not in _SUPPORTED:
                raise ValueError(f"Unsupported pattern letter {c!r} in {pattern!r}")
            j = i
            while j < n and pattern[j] == c:
                j += 1
            flush()
            tokens.append((c, j - i))
            i = j
        else:
            literal.append(c)
            i += 1
    flush()
    return tokens


def _offset(text: str) -> dt.timedelta:
    if text in ("Z", "z", "UTC", "GMT"):
        return dt.timedelta(0)
    sign = -1 if text[0] == "-" else 1
    digits = text[1:].replace(":", "")
    hours = int(digits[:2])
    minutes = int(digits[2:4]) if len(digits) > 2 else 0
    return sign * dt.timedelta(hours=hours, minutes=minutes)


class JavaDateFormat:
    """Format/parse instants with a SimpleDateFormat pattern, in UTC. Immutable."""

    def __init__(self, pattern: str) -> None:
        self.pattern = pattern
        self._tokens = _tokenize(pattern)
        self._regex = re.compile(self._build_regex(), re.IGNORECASE)

    def _is_numeric(self, index: int) -> bool:
        if index >= len(self._tokens):
            return False
        tok = self._tokens[index]
        if isinstance(tok, str):
            return False
        letter, count = tok
        return letter in _NUMERIC or (letter == "M" and count <= 2)

    def _build_regex(self) -> str:
        parts: list[str] = []
        for idx, tok in enumerate(self._tokens):
            if isinstance(tok, str):
                parts.append(re.escape(tok))
                continue
            letter, count = tok
            group = f"(?P<{letter}{idx}>"
            adjacent = self._is_numeric(idx + 1)
            if letter == "M" and count >= 3:
                names = _MONTHS if count >= 4 else _MONTHS_SHORT
                parts.append(group + "|".join(names) + ")")
            elif letter == "E":
                names = _DAYS if count >= 4 else _DAYS_SHORT
                parts.append(group + "|".join(names) + ")")
            elif letter == "a":
                parts.append(group + "AM|PM)")
            elif letter in "zZX":
                parts.append(group + r"Z|UTC|GMT|[+-]\d{2}(?::?\d{2})?)")
            elif letter == "y" and count == 2:
                parts.append(group + r"\d{2})")
            elif adjacent:
                parts.append(group + rf"\d{{{count}}})")
            else:
                parts.append(group + r"\d+)")
        return "".join(parts)

    def format(self, value: dt.datetime) -> str:
        """Render ``value`` (naive means UTC) in UTC."""
        if value.tzinfo is not None:
            value = value.astimezone(dt.UTC)
        out: list[str] = []
        for tok in self._tokens:
            if isinstance(tok, str):
                out.append(tok)
                continue
            letter, count = tok
            number = _NUMBERS.get(letter)
            if number is not None:
                out.append(f"{number(value):0{count}d}")
            elif letter == "y":
                out.append(f"{value.year % 100:02d}" if count == 2 else f"{value.year:0{count}d}")
            elif letter == "M":
                if count >= 4:
                    out.append(_MONTHS[value.month - 1])
                elif count == 3:
                    out.append(_MONTHS_SHORT[value.month - 1])
                else:
                    out.append(f"{value.month:0{count}d}")
            elif letter == "E":
                names = _DAYS if count >= 4 else _DAYS_SHORT
                out.append(names[value.weekday()])
            elif letter == "a":
                out.append("AM" if value.hour < 12 else "PM")
            else:  # the zone, always UTC: z, Z, or X (ISO 8601)
                out.append(_UTC_ZONE_TEXT.get(letter, "Z"))
        return "".join(out)

    def parse(self, text: str) -> dt.datetime:
        """Parse ``text`` (the whole string) into an aware UTC datetime; ValueError if it fails."""
        m = self._regex.fullmatch(text.strip())
        if m is None:
            raise ValueError(f"Unparseable date: {text!r} (pattern {self.pattern!r})")
        year, month, day = 1970, 1, 1
        yday: int | None = None
        hour = minute = second = ms = 0
        pm: bool | None = None
        twelve_hour = False
        offset = dt.timedelta(0)
        for idx, tok in enumerate(self._tokens):
            if isinstance(tok, str):
                continue
            letter, count = tok
            raw = m.group(f"{letter}{idx}")
            if letter == "y":
                year = int(raw)
                if count == 2:
                    year += 2000 if year < 80 else 1900
            elif letter == "M":
                if count >= 3:
                    names = _MONTHS if count >= 4 else _MONTHS_SHORT
                    month = [x.lower() for x in names].index(raw.lower()) + 1
                else:
                    month = int(raw)
            elif letter == "d":
                day = int(raw)
            elif letter == "D":
                yday = int(raw)
            elif letter == "a":
                pm = raw.upper() == "PM"
            elif letter in "Hk":
                hour = int(raw) % 24
            elif letter in "Kh":
                hour = int(raw) % 12
                twelve_hour = True
            elif letter == "m":
                minute = int(raw)
            elif letter == "s":
                second = int(raw)
            elif letter == "S":
                ms = int(raw)
            elif letter in "zZX":
                offset = _offset(raw)
        if pm and (twelve_hour or hour < 12):
            hour += 12
        if yday is not None:
            base = dt.datetime(year, 1, 1, tzinfo=dt.UTC) + dt.timedelta(days=yday - 1)
            month, day = base.month, base.day
        result = dt.datetime(year, month, day, hour, minute, second, tzinfo=dt.UTC)
        return result + dt.timedelta(milliseconds=ms) - offset
