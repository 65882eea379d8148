"""What a source task's ``poll()`` may return, and a readable failure when it returns else.

``poll()`` returns None (nothing now), a list of :class:`~connectrt.api.records.SourceRecord`
(Kafka Connect's ``List<SourceRecord>``; a tuple is taken as a list) or a
:class:`~connectrt.api.source_batch.SourceRecordBatch`. Anything else used to surface as a bare
``AttributeError`` from deep in the send path; the source runner now fails the task with a
message naming the task class, what it returned and what is allowed.

The checks cost nothing on the hot path: :func:`checked_poll_result` is one type comparison for
a list or None; the items of a list are looked at only when delivering the batch failed
(:func:`bad_item_message`, called by the runner on an ``AttributeError`` or ``TypeError``), or
before a transformation chain (which would otherwise report a wrong item as a tolerable
transformation failure). Pure functions; any thread.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from connectrt.api.records import SourceRecord
from connectrt.api.source_batch import SourceRecordBatch
from connectrt.runtime.tasks.runner import class_path

__all__ = ["BadPollResult", "bad_item_message", "checked_poll_result"]

_ALLOWED = "None, a list of SourceRecord or a SourceRecordBatch"


class BadPollResult(TypeError):
    """``poll()`` returned something the runtime cannot deliver; the message says what."""


def _what(value: object) -> str:
    return f"{type(value).__name__} ({class_path(value)})"


def checked_poll_result(task: object, result: Any) -> list[SourceRecord] | SourceRecordBatch:
    """A non-None ``poll()`` result that is not a list, as the runner delivers it: a
    :class:`SourceRecordBatch` as it is, a tuple as a list; else :class:`BadPollResult`."""
    if isinstance(result, SourceRecordBatch | list):
        return result
    if isinstance(result, tuple):
        return list(result)
    raise BadPollResult(
        f"{class_path(task)}.poll() returned a {_what(result)}; it must return {_ALLOWED}"
    )


def bad_item_message(task: object, records: Sequence[Any]) -> str | None:
    """Why ``records`` (a polled list) cannot be delivered: its first item that is not a
    :class:`SourceRecord`, or None when every item is one."""
    if set(map(type, records)) <= {SourceRecord}:  # C-level: the usual case
        return None
    for i, item in enumerate(records):
        if not isinstance(item, SourceRecord):
            return (
                f"{class_path(task)}.poll() returned a list whose item {i} is a {_what(item)}, "
                f"not a SourceRecord; it must return {_ALLOWED}"
            )
    return None
