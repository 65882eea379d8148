"""JSON text as Kafka Connect's Jackson writes it: numbers, string escapes, and a fix-up pass.

orjson writes most values byte for byte as Jackson does; the differences are all rare:

* Jackson writes characters outside the Basic Multilingual Plane as ``\\uXXXX`` surrogate
  pairs (orjson: raw UTF-8) and a control character as ``\\u001F`` (orjson: ``\\u001f``);
  :func:`java_bytes` rewrites orjson's output where it holds either (found by one ``isascii``
  and one substring test on the common path).
* Jackson writes an unpaired surrogate as its escape; orjson refuses it (and a ``None`` map
  key). :func:`java_dumps` then converts those strings and objects to pre-written fragments.
* Java's ``Double.toString`` writes ``1.0E7`` and ``1.0E-4`` where orjson writes ``10000000.0``
  and ``0.0001``: :func:`double_text` and :func:`float_text` (FLOAT32, as ``Float.toString``)
  give Java's text; the encoders hand orjson a fragment only outside ``1e-3 <= |x| < 1e7``,
  where both agree.

Java 17's ``Double.toString`` (before JDK-4511638 was fixed in Java 19) writes the exact
integer digits of integral values below 2^63, less a fixed number of "insignificant" ones;
:func:`double_text` and :func:`float_text` do the same, and otherwise write the shortest digits
that read back to the same value, at least two in exponent form (``4.9E-324``, the closest
two, not ``5.0E-324``): Java 19+'s rule, from which Java 17 differs in a few values in ten
thousand.
"""

from __future__ import annotations

import math
import re
import struct
from typing import Any, Final

import orjson

__all__ = [
    "JAVA_NON_FINITE",
    "double_text",
    "float_text",
    "java_bytes",
    "java_dumps",
    "java_string",
    "round_float32",
]

_dumps = orjson.dumps
_Fragment = orjson.Fragment
_JSONEncodeError = orjson.JSONEncodeError
_F32 = struct.Struct("<f")

#: Jackson's text for the non-finite doubles (written as JSON strings).
JAVA_NON_FINITE: Final[dict[float, str]] = {math.inf: "Infinity", -math.inf: "-Infinity"}

# FloatingDecimal.insignificantDigitsNumber: low decimal digits dropped from integral values.
_INSIGNIFICANT: Final = (
    0, 0, 0, 0, 1, 1, 1, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 5, 5, 5, 6, 6, 6, 6, 7, 7, 7,
    8, 8, 8, 9, 9, 9, 9, 10, 10, 10, 11, 11, 11, 12, 12, 12, 12, 13, 13, 13,
    14, 14, 14, 15, 15, 15, 15, 16, 16, 16, 17, 17, 17, 18, 18, 18, 19,
)  # fmt: skip
_TWO_63: Final = 2.0**63


def round_float32(x: float) -> float:
    """``x`` rounded to the nearest float32 (as Java's ``(float)`` cast: overflow gives inf)."""
    try:
        return _F32.unpack(_F32.pack(x))[0]
    except OverflowError:
        return math.copysign(math.inf, x)


def _integral_digits(a: float, significant_bits: int) -> tuple[str, int]:
    """FloatingDecimal's integral path: the digits and decimal exponent Java writes for an
    integral ``a`` (0 < a < 2^63)."""
    v = int(a)
    p2 = v.bit_length() - 1 - significant_bits - 1
    drop = _INSIGNIFICANT[p2] if 1 < p2 < len(_INSIGNIFICANT) else 0
    if drop:
        scale = 10**drop
        v, residue = divmod(v, scale)
        if residue >= scale >> 1:
            v += 1
    text = str(v)
    return text.rstrip("0"), len(text) - 1 + drop


def _repr_digits(text: str) -> tuple[str, int]:
    """Digits (no trailing zeros) and the decimal exponent of the first one, of a positive
    number's ``repr`` or ``%e`` text."""
    mantissa, _, exp = text.partition("e")
    e = int(exp) if exp else 0
    whole, _, frac = mantissa.partition(".")
    if whole.strip("0"):
        whole = whole.lstrip("0")
        return (whole + frac).rstrip("0"), e + len(whole) - 1
    digits = frac.lstrip("0")
    return digits.rstrip("0"), e - (len(frac) - len(digits)) - 1


def _java_format(negative: bool, digits: str, exp: int) -> str:
    """``Double.toString``'s layout: plain for 1e-3 <= |x| < 1e7, else ``d.dddE<exp>``."""
    if 0 <= exp < 7:
        text = digits[: exp + 1].ljust(exp + 1, "0") + "." + (digits[exp + 1 :] or "0")
    elif -3 <= exp < 0:
        text = "0." + "0" * (-exp - 1) + digits
    else:
        text = digits[0] + "." + (digits[1:] or "0") + "E" + str(exp)
    return "-" + text if negative else text


def double_text(x: float) -> str:
    """Java's ``Double.toString(x)`` for a finite ``x``."""
    if x == 0.0:
        return "-0.0" if math.copysign(1.0, x) < 0 else "0.0"
    a = abs(x)
    if 4503599627370496.0 <= a < _TWO_63:  # integral, 2^52 <= a < 2^63
        digits, exp = _integral_digits(a, 53)
    else:
        digits, exp = _repr_digits(repr(a))
        if len(digits) == 1 and not -3 <= exp < 7:
            digits, exp = _repr_digits(f"{a:.1e}")  # d.d: the closest of two digits
    return _java_format(x < 0, digits, exp)


def float_text(x: float) -> str:
    """Java's ``Float.toString`` for a finite float32 value ``x`` (held as a double)."""
    if x == 0.0:
        return "-0.0" if math.copysign(1.0, x) < 0 else "0.0"
    a = abs(x)
    if 8388608.0 <= a < _TWO_63 and a == int(a):  # integral, 2^23 <= a < 2^63
        digits, exp = _integral_digits(a, 24)
        return _java_format(x < 0, digits, exp)
    # The fewest significant digits that read back (as a float32) to the same value.
    pack, unpack = _F32.pack, _F32.unpack
    lo, hi = 1, 9
    while lo < hi:
        mid = (lo + hi) // 2
        if unpack(pack(float(f"{a:.{mid - 1}e}")))[0] == a:
            hi = mid
        else:
            lo = mid + 1
    digits, exp = _repr_digits(f"{a:.{lo - 1}e}")
    if len(digits) == 1 and not -3 <= exp < 7:
        digits, exp = _repr_digits(f"{a:.1e}")  # d.d: the closest of two digits
    return _java_format(x < 0, digits, exp)


# -- strings ------------------------------------------------------------------------------------

_SHORT_ESCAPES: Final = {
    '"': '\\"',
    "\\": "\\\\",
    "\b": "\\b",
    "\t": "\\t",
    "\n": "\\n",
    "\f": "\\f",
    "\r": "\\r",
}
_STR_ESCAPE: Final = re.compile('[\x00-\x1f"\\\\\ud800-\udfff\U00010000-\U0010ffff]')


def _escape_char(match: re.Match[str]) -> str:
    c = match.group()
    short = _SHORT_ESCAPES.get(c)
    if short is not None:
        return short
    cp = ord(c)
    if cp >= 0x10000:
        cp -= 0x10000
        return f"\\u{0xD800 + (cp >> 10):04X}\\u{0xDC00 + (cp & 0x3FF):04X}"
    return f"\\u{cp:04X}"


def java_string(s: str) -> bytes:
    """``s`` as a JSON string literal, as Jackson writes it (unpaired surrogates escaped)."""
    return ('"' + _STR_ESCAPE.sub(_escape_char, s) + '"').encode("utf-8")


# orjson's escape of a control character (lower-case hex), an escaped backslash (kept, so that
# the next character is not mistaken for the start of an escape), or a 4-byte UTF-8 sequence.
_FIX: Final = re.compile(rb"\\(?:u00([01][0-9a-f])|\\)|[\xf0-\xf4][\x80-\xbf]{3}")
_fix_all = _FIX.sub


def _has_non_bmp(out: bytes) -> bool:
    """Whether UTF-8 ``out`` holds a 4-byte sequence (a character outside the BMP): one of
    its lead bytes, each found by a ``memchr``-speed substring test (a regular expression's
    character class scans about 50 times slower)."""
    return b"\xf0" in out or b"\xf1" in out or b"\xf2" in out or b"\xf3" in out or b"\xf4" in out


def _fix_one(match: re.Match[bytes]) -> bytes:
    text = match.group()
    if text[0] == 0x5C:  # a backslash: an escape
        hexa = match.group(1)
        return text if hexa is None else b"\\u00" + hexa.upper()
    cp = ord(text.decode("utf-8")) - 0x10000
    return b"\\u%04X\\u%04X" % (0xD800 + (cp >> 10), 0xDC00 + (cp & 0x3FF))


def java_bytes(out: bytes) -> bytes:
    """orjson's output rewritten where Jackson writes otherwise: non-BMP characters as
    surrogate-pair escapes and control characters with upper-case hex. Returns ``out`` itself
    when it holds neither (ASCII output: one ``isascii`` and one substring test)."""
    if out.isascii():
        if b"\\u00" not in out:
            return out
    elif b"\\u00" not in out and not _has_non_bmp(out):
        return out
    return _FIX.sub(_fix_one, out)


def _safe(obj: Any) -> Any:
    """``obj`` with what orjson refuses turned into fragments of Jackson's text: strings with
    unpaired surrogates, and objects with such keys or a ``None`` key (Jackson's ``"null"``)."""
    t = type(obj)
    if t is str:
        try:
            obj.encode("utf-8")
        except UnicodeEncodeError:
            return _Fragment(java_string(obj))
        return obj
    if t is list:
        return [_safe(x) for x in obj]
    if t is dict:
        if all(type(k) is str and k.isascii() for k in obj):
            return {k: _safe(x) for k, x in obj.items()}
        parts = [
            java_string("null" if k is None else str(k)) + b":" + java_dumps(x)
            for k, x in obj.items()
        ]
        return _Fragment(b"{" + b",".join(parts) + b"}")
    return obj


def java_dumps(obj: Any) -> bytes:
    """``obj`` (JSON-able Python, orjson fragments allowed) as Jackson writes it.

    Raises orjson's ``JSONEncodeError`` for what neither can write.
    """
    try:
        out = _dumps(obj)
    except _JSONEncodeError:
        out = _dumps(_safe(obj))
    # java_bytes, inlined: this is every message's path. (A backslash is looked for first: a
    # one-byte test runs at memchr's speed, the four-byte one ten times slower.)
    if out.isascii():
        if b"\\" not in out or b"\\u00" not in out:
            return out
    elif (b"\\" not in out or b"\\u00" not in out) and not _has_non_bmp(out):
        return out
    return _fix_all(_fix_one, out)
