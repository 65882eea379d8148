"""Reading Java-style ``.properties`` files and connector config files (properties or JSON)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import orjson

from connectrt.errors import ConfigError

__all__ = ["load_connector_file", "load_properties", "parse_properties"]

_LINE_BREAK = re.compile(r"\r\n|\r|\n")  # Java ends lines only at these
_WHITESPACE = " \t\f"
_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}


def _unescape(s: str) -> str:
    out: list[str] = []
    i = 0
    while i < len(s):
        c = s[i]
        if c == "\\" and i + 1 < len(s):
            n = s[i + 1]
            if n == "u" and i + 5 < len(s):
                try:
                    out.append(chr(int(s[i + 2 : i + 6], 16)))
                except ValueError:
                    raise ConfigError(f"Malformed \\uxxxx encoding in {s!r}") from None
                i += 6
                continue
            out.append(_ESCAPES.get(n, n))
            i += 2
            continue
        out.append(c)
        i += 1
    return "".join(out)


def parse_properties(text: str) -> dict[str, str]:
    """Parse the Java ``.properties`` syntax: ``#``/``!`` comments, ``=``, ``:`` or whitespace
    separators, backslash line continuations and escapes. Later keys win."""
    props: dict[str, str] = {}
    lines = _LINE_BREAK.split(text)
    i = 0
    while i < len(lines):
        line = lines[i].lstrip(_WHITESPACE)
        i += 1
        if not line or line[0] in "#!":
            continue
        while _continues(line) and i < len(lines):
            line = line[:-1] + lines[i].lstrip(_WHITESPACE)
            i += 1
        if _continues(line):
            line = line[:-1]
        key, value = _split_key_value(line)
        props[_unescape(key)] = _unescape(value)
    return props


def _split_key_value(line: str) -> tuple[str, str]:
    """Split at the first unescaped ``=``, ``:`` or whitespace (Java's rules)."""
    i = 0
    while i < len(line):
        c = line[i]
        if c == "\\":
            i += 2  # the escaped character belongs to the key
            continue
        if c in "=:":
            return line[:i], line[i + 1 :].lstrip(_WHITESPACE)
        if c in _WHITESPACE:
            rest = line[i:].lstrip(_WHITESPACE)
            if rest[:1] in ("=", ":"):
                rest = rest[1:].lstrip(_WHITESPACE)
            return line[:i], rest
        i += 1
    return line, ""


def _continues(line: str) -> bool:
    n = len(line) - len(line.rstrip("\\"))
    return n % 2 == 1


def load_properties(path: str | Path) -> dict[str, str]:
    """Read a ``.properties`` file; a missing or unreadable file gives a one-line ConfigError."""
    p = Path(path)
    try:
        return parse_properties(p.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"Config file not found: {p}") from None
    except OSError as e:
        raise ConfigError(f"Cannot read config file {p}: {e.strerror}") from None


def load_connector_file(path: str | Path) -> tuple[str, dict[str, str], str | None]:
    """Load a connector config file: ``.properties``, a JSON string map, or a JSON
    CreateConnectorRequest (``name``, ``config``, ``initial_state``).

    Returns ``(name, config, initial_state)``; the name is mandatory.
    """
    p = Path(path)
    try:
        raw = p.read_bytes()
    except FileNotFoundError:
        raise ConfigError(f"Connector config file not found: {p}") from None
    except OSError as e:
        raise ConfigError(f"Cannot read connector config file {p}: {e.strerror}") from None
    initial_state: str | None = None
    stripped = raw.lstrip()
    if stripped.startswith(b"{"):
        try:
            doc: Any = orjson.loads(raw)
        except orjson.JSONDecodeError as e:
            raise ConfigError(f"Connector config file {p} is not valid JSON: {e}") from None
        if isinstance(doc.get("config"), dict):
            config = {k: _str(v) for k, v in doc["config"].items()}
            name = doc.get("name") or config.get("name")
            if config.get("name") and name and config["name"].strip() != str(name).strip():
                raise ConfigError(
                    f"Connector name configuration ({config['name']}) doesn't match connector "
                    f"name ({name}) in {p}",
                    "name",
                )
            initial_state = doc.get("initial_state")
        else:
            config = {k: _str(v) for k, v in doc.items()}
            name = config.get("name")
    else:
        config = parse_properties(raw.decode("utf-8"))
        name = config.get("name")
    if not name or not str(name).strip():
        raise ConfigError(f"Connector config file {p} has no 'name'", "name")
    name = str(name).strip()
    config["name"] = name
    return name, config, initial_state


def _str(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, list):
        return ",".join(_str(x) for x in v)
    return "" if v is None else str(v)
