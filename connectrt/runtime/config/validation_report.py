"""A validation result as the user may see it: values as written, nothing resolved in it.

A connector config is validated after its config provider references are resolved (the
connector must judge the real values), but what goes back to the caller (the validate
endpoint's values and errors, the 400 of a create) must never carry a resolved value or an
embedded URL password. :func:`as_written` rewrites a :class:`ValidationResult` in place:

* each value of a key the caller sent is reported as sent (``${env:DB_HOST}``, not the host),
  with URL-embedded secrets shown as ``[hidden]``;
* in every error message, a resolved value is put back as the text it came from, and any
  remaining secret (a provider value, a URL password) becomes ``[hidden]``.

:func:`errors_as_written` does the same for an error raised while validating (a plugin's
``validate`` may quote what it was given).

Pure functions over their arguments; thread-safe.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager

from connectrt.api.config import ConfigValue
from connectrt.errors import ConnectError
from connectrt.runtime.config.connector import ValidationResult
from connectrt.runtime.redaction import redact_exception
from connectrt.runtime.secrets.url_secrets import HIDDEN, mask_url_secrets, url_secrets

__all__ = ["as_written", "errors_as_written", "written_text"]

# Resolved values shorter than this are put back only where they stand as a whole word, so a
# resolved "5" does not rewrite every digit 5 of a message.
_WHOLE_WORD_BELOW = 4


def written_text(
    raw: Mapping[str, str | None],
    resolved: Mapping[str, str | None],
    redact: Callable[[str], str] | None = None,
) -> Callable[[str], str]:
    """A function that rewrites a message so it shows ``raw``'s values, never ``resolved``'s."""
    swaps: list[tuple[re.Pattern[str], str]] = []
    pairs = {
        value: raw[key]
        for key, value in resolved.items()
        if value and raw.get(key) is not None and raw[key] != value
    }
    for value in sorted(pairs, key=len, reverse=True):
        written = mask_url_secrets(pairs[value] or "")
        escaped = re.escape(value)
        pattern = escaped if len(value) >= _WHOLE_WORD_BELOW else rf"(?<!\w){escaped}(?!\w)"
        swaps.append((re.compile(pattern), written))
    secrets = sorted(
        {s for v in (*raw.values(), *resolved.values()) if v for s in url_secrets(v)},
        key=len,
        reverse=True,
    )

    def rewrite(text: str) -> str:
        for pattern, written in swaps:
            text = pattern.sub(_literal(written), text)
        for secret in secrets:
            text = text.replace(secret, HIDDEN)
        return redact(text) if redact is not None else text

    return rewrite


def _literal(text: str) -> Callable[[re.Match[str]], str]:
    """A ``re.sub`` replacement that inserts ``text`` as is (no backslash processing)."""
    return lambda _match: text


@contextmanager
def errors_as_written(
    raw: Mapping[str, str | None],
    resolved: Mapping[str, str | None],
    redact: Callable[[str], str] | None = None,
) -> Iterator[Callable[[str], str]]:
    """Run a validation of ``resolved``; a ConnectError it raises is raised again as a copy of
    the same type whose message shows ``raw``'s values (:func:`written_text`), without its
    cause. Yields the rewriting function, for the messages of the result."""
    rewrite = written_text(raw, resolved, redact)
    try:
        yield rewrite
    except ConnectError as e:
        raise redact_exception(e, rewrite) from None


def as_written(
    result: ValidationResult,
    raw: Mapping[str, str | None],
    resolved: Mapping[str, str | None],
    redact: Callable[[str], str] | None = None,
) -> ValidationResult:
    """Rewrite ``result`` (in place, and return it) to show ``raw``, never ``resolved``."""
    rewrite = written_text(raw, resolved, redact)
    for name, cv in result.values.items():
        _rewrite_value(cv, name, raw, rewrite)
        cv.errors = [rewrite(e) for e in cv.errors]
        cv.recommended_values = [
            rewrite(v) if isinstance(v, str) else v for v in cv.recommended_values
        ]
    return result


def _rewrite_value(
    cv: ConfigValue,
    name: str,
    raw: Mapping[str, str | None],
    rewrite: Callable[[str], str],
) -> None:
    if name in raw:
        written = raw[name]
        cv.value = mask_url_secrets(written) if isinstance(written, str) else written
    elif isinstance(cv.value, str):
        cv.value = rewrite(cv.value)
