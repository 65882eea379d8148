"""Kafka's JAAS configuration strings (``sasl.jaas.config``), parsed.

A Java Kafka client reads its SASL login from one JAAS entry: ``LoginModuleClass flag
name="value" ... ;``, values quoted (backslash escapes) or bare words. :func:`parse_jaas` turns
such a string into a :class:`JaasEntry` so that :mod:`connectrt.runtime.clients.security` can
hand librdkafka the username and password it needs. Error messages name the key and the
position of the fault, never an option's value (they hold passwords), and a parsed entry's
``repr`` leaves its options out.

Pure functions; thread-safe.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from connectrt.errors import ConfigError

__all__ = [
    "KRB5_MODULE",
    "OAUTHBEARER_MODULE",
    "PLAIN_MODULE",
    "SCRAM_MODULE",
    "JaasEntry",
    "parse_jaas",
]

PLAIN_MODULE = "org.apache.kafka.common.security.plain.PlainLoginModule"
SCRAM_MODULE = "org.apache.kafka.common.security.scram.ScramLoginModule"
OAUTHBEARER_MODULE = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule"
KRB5_MODULE = "com.sun.security.auth.module.Krb5LoginModule"
_CONTROL_FLAGS = ("required", "requisite", "sufficient", "optional")


@dataclass(frozen=True)
class JaasEntry:
    """One login module entry of a ``sasl.jaas.config`` value."""

    module: str
    flag: str
    options: Mapping[str, str] = field(repr=False)  # repr=False: options hold the password


_ESCAPES = {"a": "\a", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v"}
_WORD = re.compile(r"[^\s=;\"]+")


def _tokens(text: str, key: str) -> list[tuple[str, str]]:
    """(kind, text) tokens: ``word``, ``string`` (a quoted value, escapes applied), ``=``,
    ``;``. Errors name positions, never the text."""
    out: list[tuple[str, str]] = []
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch.isspace():
            i += 1
        elif ch in "=;":
            out.append((ch, ch))
            i += 1
        elif ch == '"':
            i += 1
            buf: list[str] = []
            while True:
                if i >= n:
                    raise ConfigError(
                        f"Invalid {key}: a quoted value is not closed (missing '\"')", key
                    )
                ch = text[i]
                if ch == '"':
                    i += 1
                    break
                if ch == "\\" and i + 1 < n:
                    nxt = text[i + 1]
                    buf.append(_ESCAPES.get(nxt, nxt))
                    i += 2
                    continue
                buf.append(ch)
                i += 1
            out.append(("string", "".join(buf)))
        else:
            m = _WORD.match(text, i)
            assert m is not None
            out.append(("word", m.group(0)))
            i = m.end()
    return out


def parse_jaas(text: str, key: str = "sasl.jaas.config") -> JaasEntry:
    """Parse a client JAAS config (Kafka's grammar: ``LoginModule flag (name=value)* ;``, one
    entry, values quoted with backslash escapes or bare words). ``key`` names the setting in
    errors; error messages never quote option values."""
    tokens = _tokens(text, key)
    if len(tokens) < 2 or tokens[0][0] != "word" or tokens[1][0] != "word":
        raise ConfigError(
            f"Invalid {key}: expected 'LoginModuleClass required name=\"value\" ...;'", key
        )
    module, flag = tokens[0][1], tokens[1][1]
    if flag.lower() not in _CONTROL_FLAGS:
        raise ConfigError(
            f"Invalid {key}: the login module's control flag must be one of "
            f"{', '.join(_CONTROL_FLAGS)}",
            key,
        )
    options: dict[str, str] = {}
    i = 2
    while True:
        if i >= len(tokens):
            raise ConfigError(f"Invalid {key}: the login module entry must end with ';'", key)
        kind, value = tokens[i]
        if kind == ";":
            i += 1
            break
        if (
            kind != "word"
            or i + 2 >= len(tokens)
            or tokens[i + 1][0] != "="
            or tokens[i + 2][0] not in ("word", "string")
        ):
            raise ConfigError(
                f'Invalid {key}: expected name="value" pairs after the control flag '
                f"(option {len(options) + 1} does not parse)",
                key,
            )
        options[value] = tokens[i + 2][1]
        i += 3
    if i < len(tokens):
        raise ConfigError(
            f"Invalid {key}: it must hold exactly one login module entry (text after ';')", key
        )
    return JaasEntry(module, flag.lower(), options)
