"""What the codecs of the config and status topics share (:mod:`~connectrt.storage.config_codec`,
:mod:`~connectrt.storage.status_codec`): the guarded decode of one record, for a topic reader
never fails on a record; the task part of a key, ``<connector>-<n>``; JSON integers.

Pure functions: safe from any thread.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TypeGuard, TypeVar

__all__ = ["decode_guarded", "is_int", "task_key_parts"]

T = TypeVar("T")


def decode_guarded(
    kind: str,
    log: logging.Logger,
    key: bytes | None,
    value: bytes | None,
    decode: Callable[[str, bytes | None], T],
) -> T | None:
    """``decode(key as text, value)``, or None, logged on ``log`` as a ``kind`` record
    ("config", "status"), for a missing or non-UTF-8 key and for whatever ``decode`` raises."""
    if key is None:
        log.error("Ignoring %s record without a key", kind)
        return None
    try:
        text = key.decode("utf-8")
    except UnicodeDecodeError:
        log.error("Ignoring %s record with a non-UTF-8 key %r", kind, key[:200])
        return None
    try:
        return decode(text, value)
    except Exception:  # the reader must never fail on a record (bad JSON included)
        log.exception("Ignoring %s record %s that could not be decoded", kind, text)
        return None


def task_key_parts(rest: str) -> tuple[str, int] | None:
    """``(connector, task)`` of the ``<connector>-<n>`` end of a task's key, else None.
    Connector names may contain '-': the task number is the last part."""
    name, sep, number = rest.rpartition("-")
    if not sep or not name or not number.isdecimal():  # what int() reads
        return None
    return name, int(number)


def is_int(value: object) -> TypeGuard[int]:
    """Whether ``value`` is a JSON integer (an ``int`` and not a ``bool``)."""
    return isinstance(value, int) and not isinstance(value, bool)
