"""The SMT chain applied to a task's batch, with the errors.* framework around each record.

Both runners (source and sink) call :func:`transform_records` on each batch they convert: the
chain's batch path first (no per-record work when no stage drops, fans out or fails), then,
only when that path declines, record by record, where a failing record goes through the task's
:class:`~connectrt.runtime.tasks.error_handling.ErrorHandler` (retried, tolerated and reported to
the dead letter queue, or failing the task). A record that a stage drops or whose failure is
tolerated is passed to ``skipped`` so the runner can still commit its offset.

A pure function over its arguments; runs on the calling runner's thread.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

from connectrt.api.records import ConnectRecord
from connectrt.runtime.tasks.error_handling import ErrorHandler
from connectrt.runtime.tasks.runner import TaskStage
from connectrt.transforms.chain import TransformationChain, failed_transformation

__all__ = ["transform_records"]

R = TypeVar("R", bound=ConnectRecord)


def transform_records(
    chain: TransformationChain[R],
    records: list[R],
    errors: ErrorHandler,
    skipped: Callable[[R], None],
    raw_for: Callable[[R], Any] | None = None,
) -> list[R]:
    """``records`` through ``chain``: the records to deliver, in order (a fan-out's records in
    place of their source). ``raw_for(record)`` gives what a dead letter queue stores for a
    failed record (the consumed message of a sink record); None: the record itself."""
    transformed = chain.apply_batch(records)
    if transformed is not None:
        return transformed
    # Record by record: a stage drops or fans out records, or one failed.
    out: list[R] = []
    for record in records:
        try:
            result = chain.apply(record)
        except Exception as exc:
            ok, result = errors.call(
                TaskStage.TRANSFORMATION,
                failed_transformation(exc) or type(chain).__name__,
                functools.partial(chain.apply, record),
                raw=raw_for(record) if raw_for is not None else None,
                record=record,
            )
            if not ok:
                skipped(record)
                continue
        if result:
            out.extend(result)
        else:
            skipped(record)
    return out
