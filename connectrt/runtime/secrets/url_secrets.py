"""Finding and masking secrets embedded in URL-like config values.

A config key whose *name* is innocent can still hold a password inside its value:
``connection.url=jdbc:postgresql://user:pw@host/db``,
``jdbc:postgresql://host/db?user=u&password=pw``, ``jdbc:sqlserver://h;user=u;password=pw``,
``http://user:pw@registry:8081``. :func:`mask_url_secrets` replaces each such secret by
``[hidden]`` and leaves the rest of the value as written; :func:`url_secrets` lists the secrets
themselves so that the log redactor can learn them.

What counts: the password part of a URL's userinfo (``scheme://user:PASSWORD@host``), and the
value of a ``password``/``pwd``/``passwd``/``secret``/``token``/... parameter after ``?``,
``&`` or ``;``. Values that are not URL-like (no ``scheme://`` and no ``jdbc:``/``mongodb:``
style prefix) are never touched. Pure functions; thread-safe.
"""

from __future__ import annotations

import re

__all__ = ["HIDDEN", "looks_like_url", "mask_url_secrets", "url_secrets"]

HIDDEN = "[hidden]"

# scheme://user:password@host: the password runs to the last "@" before the host part (a
# password may itself contain "@").
_USERINFO = re.compile(
    r"(?P<head>[A-Za-z][A-Za-z0-9+.\-]*://[^/?#@:;\s]*:)(?P<secret>[^/?#\s]*)(?P<tail>@)"
)

# ?password=pw, &pwd=pw, ;password=pw (SQL Server, Snowflake style), case-insensitive names.
_PARAM_NAMES = (
    r"password|passwd|pwd|pass|secret|client[_.\-]?secret|token|access[_.\-]?token|"
    r"api[_.\-]?key|apikey|sslpassword|ssl[_.\-]?key[_.\-]?password|private[_.\-]?key"
)
_PARAM = re.compile(
    rf"(?P<head>[?&;](?:{_PARAM_NAMES})=)(?P<secret>[^&;#\s]*)",
    re.IGNORECASE,
)

_URL_LIKE = re.compile(r"^\s*(?:[A-Za-z][A-Za-z0-9+.\-]*://|jdbc:|[A-Za-z][A-Za-z0-9+.\-]*:)")


def looks_like_url(value: str) -> bool:
    """Whether ``value`` reads as a URL or a JDBC/driver URL (``scheme:...``)."""
    return ("://" in value or value[:5].lower() == "jdbc:") and bool(_URL_LIKE.match(value))


def url_secrets(value: str | None) -> list[str]:
    """The secrets embedded in a URL-like ``value`` (empty for anything else)."""
    if not value or not looks_like_url(value):
        return []
    found = [m.group("secret") for m in _USERINFO.finditer(value)]
    found += [m.group("secret") for m in _PARAM.finditer(value)]
    return [s for s in found if s and s != HIDDEN]


def mask_url_secrets(value: str) -> str:
    """``value`` with every embedded secret replaced by ``[hidden]``; other values unchanged."""
    if not looks_like_url(value):
        return value
    masked = _USERINFO.sub(
        lambda m: f"{m.group('head')}{HIDDEN if m.group('secret') else ''}{m.group('tail')}",
        value,
    )
    return _PARAM.sub(lambda m: f"{m.group('head')}{HIDDEN if m.group('secret') else ''}", masked)
