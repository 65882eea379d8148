"""Locating the quickstart schemas (``schemas/*.avsc`` of the project).

In a source checkout (and an editable install) they are the repository's ``schemas/`` folder.
A regular ``pip install`` ships them as data files under ``<prefix>/share/connectrt/schemas``
(``[tool.setuptools.data-files]`` in ``pyproject.toml``). :func:`quickstart_dir` looks in
both places, walking up from this file and then trying the interpreter's data prefixes, and
recognises the folder by the quickstart files in it.
"""

from __future__ import annotations

import functools
import site
import sys
import sysconfig
from pathlib import Path
from typing import Final

__all__ = ["DEFAULT_KEYFIELDS", "QUICKSTARTS", "quickstart_dir", "quickstart_path"]

QUICKSTARTS: Final = ("clickstream", "inventory", "orders", "pageviews", "stock_trades", "users")

DEFAULT_KEYFIELDS: Final = {
    "clickstream": "ip",
    "inventory": "id",
    "orders": "orderid",
    "pageviews": "viewtime",
    "stock_trades": "symbol",
    "users": "userid",
}
"""The key field a quickstart uses when ``schema.keyfield`` is not set."""

_SHARE: Final = Path("share") / "connectrt" / "schemas"


def _is_schema_dir(path: Path) -> bool:
    return all((path / f"{name}.avsc").is_file() for name in QUICKSTARTS)


@functools.cache
def quickstart_dir() -> Path | None:
    """The folder holding the quickstart ``.avsc`` files, or None when none is found."""
    here = Path(__file__).resolve().parent
    candidates: list[Path] = []
    for ancestor in here.parents:
        candidates += [ancestor / "schemas", ancestor / _SHARE]
    prefixes = [sysconfig.get_path("data"), sys.prefix, sys.base_prefix, site.USER_BASE or ""]
    candidates += [Path(p) / _SHARE for p in prefixes if p]
    for candidate in candidates:
        if _is_schema_dir(candidate):
            return candidate
    return None


def quickstart_path(name: str) -> Path | None:
    """The ``.avsc`` file of quickstart ``name`` (case-insensitive), or None if unknown."""
    key = name.strip().lower()
    if key not in QUICKSTARTS:
        return None
    folder = quickstart_dir()
    return None if folder is None else folder / f"{key}.avsc"
