"""Random strings matching a regular expression (the ``regex`` generation hint).

The pattern is parsed once with Python's own regex parser (``re._parser``, the parser behind
``re.compile``) and turned into a tree of small closures, so generating a string costs a few
Python calls per pattern element and no parsing. Supported: literals, ``.``, character classes
(ranges, negation, ``\\d \\w \\s`` and their negations), groups, alternation and the repeat
operators; unbounded repeats (``*``, ``+``, ``{n,}``) add at most :data:`UNBOUNDED_EXTRA`
repetitions. Anchors are ignored. Look-arounds and back references raise ValueError.

Generated characters are drawn from printable ASCII wherever a class or ``.`` leaves a choice
that wide (negated classes, ``.``, ``\\W``, ...).

Thread-safety: a compiled generator holds no state; pass each thread its own ``random.Random``.
"""

from __future__ import annotations

import random
import re
import re._parser as sre_parse
from collections.abc import Callable
from typing import Any, Final

__all__ = ["UNBOUNDED_EXTRA", "StrGen", "compile_regex"]

StrGen = Callable[[random.Random], str]

UNBOUNDED_EXTRA: Final = 8
"""How many repetitions an unbounded repeat may add beyond its minimum."""

_PRINTABLE: Final = "".join(chr(c) for c in range(32, 127))
_DIGITS: Final = "0123456789"
_WORD: Final = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ" + _DIGITS + "_"
_SPACE: Final = " \t\n"
_CATEGORIES: Final = {
    "CATEGORY_DIGIT": _DIGITS,
    "CATEGORY_NOT_DIGIT": "".join(c for c in _PRINTABLE if c not in _DIGITS),
    "CATEGORY_WORD": _WORD,
    "CATEGORY_NOT_WORD": "".join(c for c in _PRINTABLE if c not in _WORD),
    "CATEGORY_SPACE": _SPACE,
    "CATEGORY_NOT_SPACE": "".join(c for c in _PRINTABLE if c not in _SPACE),
}


def compile_regex(pattern: str) -> StrGen:
    """A generator of strings that ``re.fullmatch(pattern, s)`` accepts.

    Raises ValueError for an invalid pattern or an unsupported construct.
    """
    try:
        parsed = sre_parse.parse(pattern)
    except re.error as exc:
        raise ValueError(f"Invalid regex {pattern!r}: {exc}") from exc
    return _sequence(list(parsed), pattern)


def _sequence(items: list[tuple[Any, Any]], pattern: str) -> StrGen:
    parts: list[StrGen | str] = []
    for op, arg in items:
        part = _item(str(op), arg, pattern)
        if part is None:
            continue
        # Merge adjacent literals into one constant.
        if isinstance(part, str) and parts and isinstance(parts[-1], str):
            parts[-1] = parts[-1] + part
        else:
            parts.append(part)
    if not parts:
        return lambda rng: ""
    if len(parts) == 1:
        only = parts[0]
        if isinstance(only, str):
            return lambda rng: only
        return only
    gens: list[StrGen] = [_const(p) if isinstance(p, str) else p for p in parts]

    def seq(rng: random.Random) -> str:
        return "".join([g(rng) for g in gens])

    return seq


def _const(text: str) -> StrGen:
    return lambda rng: text


def _pick(chars: str) -> StrGen:
    n = len(chars)
    if n == 1:
        return _const(chars)

    def pick(rng: random.Random) -> str:
        return chars[int(rng.random() * n)]

    return pick


def _item(op: str, arg: Any, pattern: str) -> StrGen | str | None:
    if op == "LITERAL":
        return chr(arg)
    if op == "NOT_LITERAL":
        return _pick("".join(c for c in _PRINTABLE if ord(c) != arg))
    if op == "ANY":
        return _pick(_PRINTABLE)
    if op == "IN":
        return _pick(_char_set(arg, pattern))
    if op == "AT":
        return None  # ^ $ \b ...: generated strings are whole matches anyway
    if op == "SUBPATTERN":
        return _sequence(list(arg[-1]), pattern)
    if op == "ATOMIC_GROUP":
        return _sequence(list(arg), pattern)
    if op == "BRANCH":
        branches = [_sequence(list(b), pattern) for b in arg[1]]
        n = len(branches)

        def branch(rng: random.Random) -> str:
            return branches[int(rng.random() * n)](rng)

        return branch
    if op in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"):
        lo, hi, sub = arg
        if hi == sre_parse.MAXREPEAT:
            hi = lo + UNBOUNDED_EXTRA
        inner = _sequence(list(sub), pattern)
        if lo == hi:

            def repeat_fixed(rng: random.Random) -> str:
                return "".join([inner(rng) for _ in range(lo)])

            return repeat_fixed
        span = hi - lo + 1

        def repeat(rng: random.Random) -> str:
            return "".join([inner(rng) for _ in range(lo + int(rng.random() * span))])

        return repeat
    raise ValueError(f"Unsupported construct {op} in regex {pattern!r}")


def _char_set(items: list[tuple[Any, Any]], pattern: str) -> str:
    negate = False
    chars: set[str] = set()
    for op, arg in items:
        name = str(op)
        if name == "NEGATE":
            negate = True
        elif name == "LITERAL":
            chars.add(chr(arg))
        elif name == "RANGE":
            lo, hi = arg
            chars.update(chr(c) for c in range(lo, hi + 1))
        elif name == "CATEGORY":
            chars.update(_CATEGORIES.get(str(arg), ""))
        else:
            raise ValueError(f"Unsupported construct {name} in a character class of {pattern!r}")
    if negate:
        chars = {c for c in _PRINTABLE if c not in chars}
    if not chars:
        raise ValueError(f"Empty character class in regex {pattern!r}")
    return "".join(sorted(chars))
