"""Plugin versions and version ranges as Kafka Connect reads them (KIP-891).

Kafka uses Maven's ``VersionRange`` and ``ComparableVersion``; this module implements the
parts Connect relies on:

* a **requirement** (``connector.plugin.version``, ``key.converter.plugin.version``,
  ``transforms.<alias>.plugin.version``, ...): absent or ``latest`` means the newest installed
  version; a bare version (``2.1.0``) means exactly that version (Kafka turns Maven's "soft"
  version into the hard range ``[2.1.0]``); a range is one or more comma-separated restrictions:
  ``[1.0,2.0)`` (1.0 <= v < 2.0), ``(,1.0]`` (v <= 1.0), ``[1.5,)`` (v >= 1.5), ``[1.2]``
  (exactly 1.2), ``(,1.0],[1.2,)`` (either);
* **ordering**: versions split into numbers and qualifiers at ``.``, ``-`` and digit/letter
  transitions; numbers compare numerically, trailing zeros do not count (``1.0 == 1.0.0``),
  and qualifiers rank ``alpha < beta < milestone < rc < snapshot < (release) < sp`` with other
  qualifiers after those, alphabetically; a number beats a qualifier (``1.0.1 > 1-sp``).

Invalid specifications raise :class:`InvalidVersionSpec` with Maven's messages (Kafka passes
them on as the config error). Pure functions and immutable values: thread-safe.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

__all__ = [
    "UNDEFINED_VERSION",
    "InvalidVersionSpec",
    "VersionRange",
    "compare_versions",
    "sort_versions",
    "version_requirement",
]

UNDEFINED_VERSION = "undefined"
"""Kafka's version of a plugin that reports none; such a plugin never matches a range."""

_QUALIFIERS = {"alpha": 0, "beta": 1, "milestone": 2, "rc": 3, "snapshot": 4, "": 5, "sp": 6}
_ALIASES = {"a": "alpha", "b": "beta", "m": "milestone", "cr": "rc", "ga": "", "final": "",
            "release": ""}  # fmt: skip
_TOKEN = re.compile(r"\d+|[a-zA-Z]+")


class InvalidVersionSpec(ValueError):
    """A version requirement that is not a version, a range or ``latest``."""


def _tokens(version: str) -> list[int | str]:
    out: list[int | str] = []
    for part in re.split(r"[.\-_+]", version.strip().lower()):
        for token in _TOKEN.findall(part):
            if token.isdigit():
                out.append(int(token))
            else:
                while out and out[-1] == 0:
                    out.pop()  # 1.0-rc1 == 1-rc1, as Maven normalises before a qualifier
                out.append(_ALIASES.get(token, token))
    while out and out[-1] in (0, ""):
        out.pop()  # 1.0.0 == 1 == 1-ga
    return out


def _item_key(item: int | str | None) -> tuple[int, int | str]:
    if item is None:
        return (1, 5)  # nothing: a release (below sp and any number, above rc)
    if isinstance(item, int):
        return (2, item)
    rank = _QUALIFIERS.get(item)
    return (1, rank) if rank is not None else (1, 7)


def compare_versions(a: str, b: str) -> int:
    """-1, 0 or 1 as ``a`` is older than, the same as, or newer than ``b``."""
    ta, tb = _tokens(a), _tokens(b)
    for i in range(max(len(ta), len(tb))):
        x = ta[i] if i < len(ta) else None
        y = tb[i] if i < len(tb) else None
        kx, ky = _item_key(x), _item_key(y)
        if kx != ky:
            return -1 if kx < ky else 1
        if isinstance(x, str) and isinstance(y, str) and kx[1] == 7 and x != y:
            return -1 if x < y else 1  # two unknown qualifiers: alphabetical
    return 0


@dataclass(frozen=True)
class _Restriction:
    lower: str | None
    lower_inclusive: bool
    upper: str | None
    upper_inclusive: bool

    def contains(self, version: str) -> bool:
        if self.lower is not None:
            c = compare_versions(version, self.lower)
            if c < 0 or (c == 0 and not self.lower_inclusive):
                return False
        if self.upper is not None:
            c = compare_versions(version, self.upper)
            if c > 0 or (c == 0 and not self.upper_inclusive):
                return False
        return True

    def __str__(self) -> str:
        if self.lower is not None and self.lower == self.upper:
            return f"[{self.lower}]"
        return (
            ("[" if self.lower_inclusive else "(")
            + (self.lower or "")
            + ","
            + (self.upper or "")
            + ("]" if self.upper_inclusive else ")")
        )


@dataclass(frozen=True)
class VersionRange:
    """A hard version range: one or more restrictions, matched by :meth:`contains`."""

    restrictions: tuple[_Restriction, ...]

    @classmethod
    def parse(cls, spec: str) -> VersionRange:
        """A range (``[1.0,2.0)``, ``[1.0]``, ``(,1.0],[1.2,)``); InvalidVersionSpec otherwise."""
        text = spec.strip()
        rest = text
        restrictions: list[_Restriction] = []
        while rest.startswith(("[", "(")):
            close = min((i for i in (rest.find("]"), rest.find(")")) if i >= 0), default=-1)
            if close < 0:
                raise InvalidVersionSpec(f"Unbounded range: {spec}")
            restriction = _parse_restriction(rest[: close + 1], spec)
            if restrictions and _overlap(restrictions[-1], restriction):
                raise InvalidVersionSpec(f"Ranges overlap: {spec}")
            restrictions.append(restriction)
            rest = rest[close + 1 :].strip()
            if rest.startswith(","):
                rest = rest[1:].strip()
                if not rest:
                    raise InvalidVersionSpec(f"Unbounded range: {spec}")
        if rest:
            message = "Only fully-qualified sets allowed in multiple set scenario: "
            if not restrictions:
                message = "Invalid version range: "
            raise InvalidVersionSpec(f"{message}{spec}")
        if not restrictions:
            raise InvalidVersionSpec(f"Invalid version range: {spec}")
        return cls(tuple(restrictions))

    @classmethod
    def exactly(cls, version: str) -> VersionRange:
        return cls((_Restriction(version, True, version, True),))

    def contains(self, version: str | None) -> bool:
        if version is None or version == UNDEFINED_VERSION:
            return False
        return any(r.contains(version) for r in self.restrictions)

    def __str__(self) -> str:
        return ",".join(str(r) for r in self.restrictions)


def _overlap(previous: _Restriction, current: _Restriction) -> bool:
    """Whether ``current`` fails to start after ``previous`` ends (restrictions must ascend)."""
    if previous.upper is None or current.lower is None:
        return True
    order = compare_versions(current.lower, previous.upper)
    return order < 0 or (order == 0 and current.lower_inclusive and previous.upper_inclusive)


def sort_versions(versions: list[str]) -> list[str]:
    """``versions`` oldest first."""
    return sorted(versions, key=functools.cmp_to_key(compare_versions))


def _parse_restriction(text: str, spec: str) -> _Restriction:
    lower_inclusive = text.startswith("[")
    upper_inclusive = text.endswith("]")
    inner = text[1:-1].strip()
    if "," not in inner:
        if not lower_inclusive or not upper_inclusive:
            raise InvalidVersionSpec(f"Single version must be surrounded by []: {spec}")
        if not inner:
            raise InvalidVersionSpec(f"Invalid version range: {spec}")
        return _Restriction(inner, True, inner, True)
    lower_text, _, upper_text = inner.partition(",")
    if "," in upper_text:
        raise InvalidVersionSpec(f"Invalid version range: {spec}")
    lower = lower_text.strip() or None
    upper = upper_text.strip() or None
    if lower is not None and upper is not None:
        order = compare_versions(lower, upper)
        if order == 0 and not (lower_inclusive and upper_inclusive):
            raise InvalidVersionSpec(f"Range cannot have identical boundaries: {spec}")
        if order > 0:
            raise InvalidVersionSpec(f"Range defies version ordering: {spec}")
    return _Restriction(lower, lower_inclusive, upper, upper_inclusive)


def version_requirement(spec: str | None) -> VersionRange | None:
    """Kafka's reading of a ``*.plugin.version`` value: None for absent or ``latest``, the hard
    range ``[v]`` for a bare version ``v``, else the range. InvalidVersionSpec when invalid."""
    if spec is None:
        return None
    text = spec.strip()
    if text == "latest":
        return None
    if not text:
        raise InvalidVersionSpec("Invalid version range: a version, a range or 'latest' is needed")
    if text.startswith(("[", "(")):
        return VersionRange.parse(text)
    if any(c in text for c in "[](),"):
        raise InvalidVersionSpec(f"Invalid version range: {spec}")
    return VersionRange.exactly(text)
