"""The headers of dead letter queue records: Kafka's error context, and connectrt's replay
history.

A record sent to a dead letter queue carries Kafka Connect's ``__connect.errors.*`` context
headers (when ``errors.deadletterqueue.context.headers.enable=true``): where the record was,
which connector, task, stage and class failed, and the exception. :func:`context_headers`
builds them, for the task error handler and for replay runs alike.

A replay (:mod:`connectrt.runtime.dlq_replay.run`) re-delivers a DLQ record with the history
of its failures kept and its replays counted (:func:`for_replay`):

* each ``__connect.errors.<field>`` header becomes ``connectrt.errors.<n>.<field>``, where
  ``n`` is the replay count the copy gets: the context of failure ``n`` stays with the record,
  and a later failure adds fresh ``__connect.errors.*`` headers beside it;
* ``connectrt.replay.count`` is how many times the record has been replayed;
* ``connectrt.replay.run`` names the replay run that produced this copy, and
  ``connectrt.replay.origin`` the DLQ record it came from (``<topic>/<partition>/<offset>``).

A task that fails the copy again writes it to the DLQ with these headers (a sink's DLQ record
keeps the consumed record's headers), which is how a replay run counts what came back.
Pure functions over confluent-kafka's ``[(key, bytes)]`` header lists; thread-safe.
"""

from __future__ import annotations

import traceback
from collections.abc import Iterable, Sequence

from connectrt.runtime.redaction import redact
from connectrt.runtime.tasks.runner import class_path

__all__ = [
    "CONTEXT_PREFIX",
    "HISTORY_PREFIX",
    "REPLAY_COUNT",
    "REPLAY_ORIGIN",
    "REPLAY_RUN",
    "RawHeaders",
    "context_headers",
    "for_replay",
    "header_text",
    "original_topic_partition",
    "replay_count",
]

RawHeaders = list[tuple[str, bytes | None]]
"""Record headers as confluent-kafka hands them over and takes them: ``[(key, value)]``."""

CONTEXT_PREFIX = "__connect.errors."
HISTORY_PREFIX = "connectrt.errors."
REPLAY_COUNT = "connectrt.replay.count"
REPLAY_RUN = "connectrt.replay.run"
REPLAY_ORIGIN = "connectrt.replay.origin"

_REPLAY_KEYS = frozenset({REPLAY_COUNT, REPLAY_RUN, REPLAY_ORIGIN})


def context_headers(
    *,
    topic: str | None,
    partition: int | None,
    offset: int | None,
    connector: str,
    task: int | None,
    stage: str,
    class_name: str,
    error: BaseException,
    stacktrace: str | None = None,
) -> RawHeaders:
    """Kafka Connect's ``__connect.errors.*`` headers for one failure (absent values are
    left out, as Kafka does). ``stacktrace`` is the error's, rendered already (by default
    rendered here from the error). The exception message and stack trace are redacted
    (:func:`connectrt.runtime.redaction.redact`)."""
    context = {
        "topic": topic,
        "partition": partition,
        "offset": offset,
        "connector.name": connector,
        "task.id": task,
        "stage": stage,
        "class.name": class_name,
        "exception.class.name": class_path(error),
        # The error's text may quote a secret (a resolved value, a password): the one
        # redaction function hides every secret this process knows, as in traces and logs.
        "exception.message": redact(str(error)),
        "exception.stacktrace": redact(stacktrace or "".join(traceback.format_exception(error))),
    }
    return [(CONTEXT_PREFIX + k, str(v).encode()) for k, v in context.items() if v is not None]


def header_text(headers: Sequence[tuple[str, bytes | None]] | None, key: str) -> str | None:
    """The last value of header ``key`` as text (None when absent, null or not UTF-8)."""
    for k, v in reversed(headers or ()):
        if k == key:
            if v is None:
                return None
            try:
                return bytes(v).decode("utf-8")
            except UnicodeDecodeError:
                return None
    return None


def replay_count(headers: Sequence[tuple[str, bytes | None]] | None) -> int:
    """How many times a record has been replayed (0 without a valid count header)."""
    text = header_text(headers, REPLAY_COUNT)
    try:
        return max(0, int(text)) if text is not None else 0
    except ValueError:
        return 0


def _latest_history(headers: Iterable[tuple[str, bytes | None]], field: str) -> str | None:
    """``connectrt.errors.<n>.<field>`` of the highest ``n``."""
    best: tuple[int, str] | None = None
    for key, value in headers:
        if not key.startswith(HISTORY_PREFIX) or not key.endswith("." + field) or value is None:
            continue
        number = key[len(HISTORY_PREFIX) : -len(field) - 1]
        if number.isdigit() and (best is None or int(number) >= best[0]):
            best = (int(number), bytes(value).decode("utf-8", errors="replace"))
    return best[1] if best is not None else None


def original_topic_partition(
    headers: Sequence[tuple[str, bytes | None]] | None,
) -> tuple[str | None, int | None]:
    """Where a sink's DLQ record was consumed from: the ``__connect.errors.topic`` and
    ``.partition`` headers, else the latest ones kept in the replay history."""
    headers = headers or []
    topic = header_text(headers, CONTEXT_PREFIX + "topic") or _latest_history(headers, "topic")
    partition_text = header_text(headers, CONTEXT_PREFIX + "partition")
    if partition_text is None:
        partition_text = _latest_history(headers, "partition")
    try:
        partition = int(partition_text) if partition_text is not None else None
    except ValueError:
        partition = None
    return topic, partition


def for_replay(
    headers: Sequence[tuple[str, bytes | None]] | None, run_id: str, origin: str
) -> tuple[RawHeaders, int]:
    """The headers of a replayed copy and its replay count: the error context renamed into the
    history, the previous replay headers replaced (see the module docstring)."""
    count = replay_count(headers) + 1
    history = f"{HISTORY_PREFIX}{count}."
    out: RawHeaders = []
    for key, value in headers or ():
        if key in _REPLAY_KEYS:
            continue
        if key.startswith(CONTEXT_PREFIX):
            out.append((history + key[len(CONTEXT_PREFIX) :], value))
        else:
            out.append((key, value))
    out.append((REPLAY_COUNT, str(count).encode()))
    out.append((REPLAY_RUN, run_id.encode()))
    out.append((REPLAY_ORIGIN, origin.encode()))
    return out, count
