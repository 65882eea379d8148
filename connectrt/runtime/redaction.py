"""The one redaction function: text with every secret the process knows replaced by ``[hidden]``.

Every path that formats an error or a trace goes through :func:`redact` (or the
:class:`Redactor` it delegates to): status traces (:class:`~connectrt.runtime.status.StatusBoard`,
so the REST status, the console and the status topic), log records (the record factory and
the handler filter of :mod:`connectrt.runtime.secrets.masking`), dead letter queue error headers,
the REST API's error bodies and the 400 of a create or update.

A secret is *registered* (:meth:`Redactor.register_all`) when the runtime learns it: a value a
config provider substituted, the literal value of a secret-typed or secret-named key, a
password embedded in a URL. It is then hidden in every form it can take in text:

* as is;
* JSON-escaped (with and without ``\\uXXXX`` for non-ASCII), as a JSON body or a status record
  shows a string;
* ``repr``-escaped (backslashes doubled, quotes escaped, with and without ASCII-only escapes,
  and the ``bytes`` repr of its UTF-8 encoding), as an exception's ``repr`` or a formatted
  dict shows it;
* the two above applied twice (a ``repr`` inside a JSON string, a ``repr`` of a ``repr``);
* URL-encoded (``quote`` with and without ``/`` kept, ``quote_plus``);
* HTML-escaped, as a console page shows text.

No path of the runtime base64-encodes an error or a trace (base64 is used for record and
offset bytes only), and a secret inside a longer base64 text has no fixed form, so base64 is
not covered.

Values shorter than :data:`MIN_REDACTED_LENGTH` are not registered: hiding every "true" or
"8080" would shred the logs.

Lifecycle: one process-wide :class:`Redactor` (:func:`process_redactor`), created on first use
and never reset by the runtime; tests may build private ones. Threading: every method may run
on any thread; registration swaps the compiled pattern atomically under a lock, redaction reads
it without one.
"""

from __future__ import annotations

import html
import json
import re
import threading
from collections.abc import Callable, Iterable
from urllib.parse import quote, quote_plus

__all__ = [
    "HIDDEN",
    "MIN_REDACTED_LENGTH",
    "Redactor",
    "process_redactor",
    "redact",
    "redact_exception",
    "secret_forms",
]

HIDDEN = "[hidden]"

MIN_REDACTED_LENGTH = 4
"""Shorter values are not registered: redacting every "on" or "123" would shred the logs."""

_NAMED_ESCAPES = {"\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _py_escape(value: str, quote_char: str, ascii_only: bool = False) -> str:
    """The body of Python's ``repr`` (``ascii`` when ``ascii_only``) of ``value`` between
    ``quote_char`` quotes (``""``: no quote escaped, as a repr in the other quotes)."""
    out = []
    for ch in value:
        if ch in _NAMED_ESCAPES:
            out.append(_NAMED_ESCAPES[ch])
        elif ch == quote_char:
            out.append("\\" + ch)
        elif ch.isprintable() and not (ascii_only and ord(ch) > 127):
            out.append(ch)
        else:
            code = ord(ch)
            out.append(
                f"\\x{code:02x}"
                if code < 0x100
                else f"\\u{code:04x}"
                if code < 0x10000
                else f"\\U{code:08x}"
            )
    return "".join(out)


def _bytes_escape(value: str, quote_char: str) -> str:
    """The body of the ``repr`` of ``value.encode()`` (``b'...'``)."""
    out = []
    for b in value.encode("utf-8", "surrogatepass"):
        ch = chr(b)
        if ch in _NAMED_ESCAPES:
            out.append(_NAMED_ESCAPES[ch])
        elif ch == quote_char:
            out.append("\\" + ch)
        elif 32 <= b < 127:
            out.append(ch)
        else:
            out.append(f"\\x{b:02x}")
    return "".join(out)


def _json_body(value: str, ensure_ascii: bool) -> str:
    return json.dumps(value, ensure_ascii=ensure_ascii)[1:-1]


# Escapes a form can go through more than once (a repr inside a JSON string, a repr of a repr).
_STACKING: tuple[Callable[[str], str], ...] = (
    lambda v: _json_body(v, True),
    lambda v: _json_body(v, False),
    lambda v: _py_escape(v, "'"),
    lambda v: _py_escape(v, '"'),
    lambda v: _py_escape(v, ""),
    lambda v: _py_escape(v, "'", ascii_only=True),
)

# Encodings applied once, to the value as is.
_ONCE: tuple[Callable[[str], str], ...] = (
    lambda v: _bytes_escape(v, "'"),
    lambda v: _bytes_escape(v, '"'),
    lambda v: quote(v, safe=""),
    lambda v: quote(v),
    lambda v: quote_plus(v),
    lambda v: html.escape(v),
    lambda v: html.escape(v, quote=False),
)


def secret_forms(value: str) -> set[str]:
    """Every text under which ``value`` can appear in an answer, a trace or a log line (see
    the module docstring); ``value`` itself included."""
    forms = {value}
    once = {escape(value) for escape in _STACKING}
    forms |= once
    for form in once:
        forms |= {escape(form) for escape in _STACKING}
    forms |= {encode(value) for encode in _ONCE}
    return forms


class Redactor:
    """A set of secrets and the function that hides them in text. Thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._secrets: set[str] = set()
        self._held: dict[str, int] = {}  # values hidden while a request needs them, counted
        self._pattern: re.Pattern[str] | None = None

    def register(self, value: str | None) -> None:
        """Hide ``value`` from now on (ignored if None or shorter than 4 characters)."""
        self.register_all((value,))

    def register_all(self, values: Iterable[object]) -> None:
        """Hide each of ``values`` (a ``Password`` counts by its value) from now on."""
        fresh = set()
        for v in values:
            v = getattr(v, "value", v)  # connectrt.api.config.Password
            if isinstance(v, str) and len(v) >= MIN_REDACTED_LENGTH and v not in self._secrets:
                fresh.add(v)
        if not fresh:
            return
        with self._lock:
            before = len(self._secrets)
            self._secrets |= fresh
            if len(self._secrets) != before:
                self._rebuild()

    def hold(self, values: Iterable[object]) -> list[str]:
        """Hide each of ``values`` until :meth:`release` (counted: concurrent holders of one
        value each release it). For secrets a request brings only for its own duration (a
        validate call, a create that is refused): registering them for good would let any
        caller grow the redactor without bound. Returns what to pass to :meth:`release`."""
        held = []
        for v in values:
            v = getattr(v, "value", v)
            if isinstance(v, str) and len(v) >= MIN_REDACTED_LENGTH:
                held.append(v)
        if not held:
            return held
        with self._lock:
            changed = False
            for v in held:
                changed |= v not in self._held and v not in self._secrets
                self._held[v] = self._held.get(v, 0) + 1
            if changed:
                self._rebuild()
        return held

    def release(self, held: Iterable[str]) -> None:
        """End one :meth:`hold` of each value; values registered for good stay hidden."""
        with self._lock:
            changed = False
            for v in held:
                n = self._held.get(v, 0) - 1
                if n > 0:
                    self._held[v] = n
                else:
                    self._held.pop(v, None)
                    changed |= v not in self._secrets
            if changed:
                self._rebuild()

    def unregister(self, value: str) -> None:
        with self._lock:
            if value in self._secrets:
                self._secrets.discard(value)
                self._rebuild()

    def clear(self) -> None:
        with self._lock:
            self._secrets.clear()
            self._rebuild()

    def secrets_in(self, texts: Iterable[str]) -> list[str]:
        """The registered values that occur in any of ``texts`` (e.g. to give a task process
        the secrets of its own configs)."""
        with self._lock:
            secrets = list(self._secrets)
        texts = list(texts)
        return [s for s in secrets if any(s in t for t in texts)]

    def __len__(self) -> int:
        return len(self._secrets)

    def _rebuild(self) -> None:
        forms = {form for s in self._secrets | self._held.keys() for form in secret_forms(s)}
        # Longest first, so a secret containing another is replaced whole.
        ordered = sorted(forms, key=lambda f: (-len(f), f))
        self._pattern = re.compile("|".join(map(re.escape, ordered))) if ordered else None

    @property
    def pattern(self) -> re.Pattern[str] | None:
        """The compiled pattern of every form of every secret (None when there is none)."""
        return self._pattern

    def redact(self, text: str) -> str:
        """``text`` with every form of every registered value replaced by ``[hidden]``."""
        pattern = self._pattern
        return pattern.sub(HIDDEN, text) if pattern is not None and text else text

    def redact_bytes(self, data: bytes) -> bytes:
        """:meth:`redact` for UTF-8 bytes (undecodable bytes pass through unchanged)."""
        if self._pattern is None or not data:
            return data
        text = data.decode("utf-8", "surrogateescape")
        redacted = self.redact(text)
        return data if redacted == text else redacted.encode("utf-8", "surrogateescape")


_PROCESS_REDACTOR = Redactor()


def process_redactor() -> Redactor:
    """The process-wide redactor: the one the worker registers secrets with and every error
    path redacts with."""
    return _PROCESS_REDACTOR


def redact(text: str) -> str:
    """``text`` with every secret this process knows hidden (see the module docstring)."""
    return _PROCESS_REDACTOR.redact(text)


def redact_exception(error: BaseException, rewrite: Callable[[str], str] = redact) -> BaseException:
    """A copy of ``error`` (same type, same attributes) whose message is ``rewrite(str(error))``
    and whose ``value`` attribute, if any (``ConfigError``), is dropped; ``error`` itself when
    the message needs no change. The copy has no cause or context (they may quote the
    original text): raise it ``from None``."""
    message = str(error)
    rewritten = rewrite(message)
    if rewritten == message and getattr(error, "value", None) is None:
        return error
    copy = error.__class__.__new__(error.__class__)
    copy.__dict__.update(error.__dict__)
    copy.args = (rewritten,)
    if hasattr(copy, "value"):
        copy.value = None
    copy.__cause__ = None
    copy.__context__ = None
    copy.__suppress_context__ = True
    return copy
