"""What a sink task does with a record it cannot write: report it, or fail the task.

:class:`UnwritableRecords` hands such a record to the task's errant record reporter (a dead
letter queue or error logging is configured) with the reason as a DataError, logging a warning;
without a reporter it raises ConnectError, which fails the task.

Lifecycle and threading: created in the task's ``__init__``; the reporter is looked up in the
task's context on first use (the runtime sets the context after construction) and kept. Used
from the task's thread only.
"""

from __future__ import annotations

import logging
from typing import Any

from connectrt.api import ConnectError, DataError, ErrantRecordReporter, SinkRecord, SinkTask

__all__ = ["UnwritableRecords"]

_UNSET: Any = object()


class UnwritableRecords:
    """Reports the records ``task`` cannot write (see the module docstring).

    ``destination`` ends the failure message, e.g. ``" to Iceberg"``; ``log`` is the task
    module's logger, the one the warnings go to.
    """

    def __init__(self, task: SinkTask, destination: str, log: logging.Logger) -> None:
        self._task = task
        self._destination = destination
        self._log = log
        self._reporter: ErrantRecordReporter | Any | None = _UNSET

    def reporter(self) -> ErrantRecordReporter | None:
        """The task's errant record reporter (None when none is configured)."""
        if self._reporter is _UNSET:
            self._reporter = self._task.context.errant_record_reporter
        reporter: ErrantRecordReporter | None = self._reporter
        return reporter

    def report(self, record: SinkRecord, exc: Exception) -> None:
        """Report ``record``, which failed with ``exc``, or raise ConnectError without a
        reporter."""
        error = exc if isinstance(exc, DataError) else DataError(f"{type(exc).__name__}: {exc}")
        where = f"{record.topic}-{record.kafka_partition}@{record.kafka_offset}"
        reporter = self.reporter()
        if reporter is None:
            raise ConnectError(f"Cannot write record {where}{self._destination}: {error}") from exc
        self._log.warning("Reporting record %s: %s", where, error)
        reporter.report(record, error)
