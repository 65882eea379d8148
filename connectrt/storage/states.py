"""Connector and task states: what the status topic records and the REST API reports.

:class:`State` is where a connector or task is, :class:`TargetState` where the operator wants
it, :class:`Status` one reported state with its worker and trace. Immutable values, safe to share
between threads. They live in ``storage`` so the status and config stores can encode them.
"""

from __future__ import annotations

import enum
import time
from collections.abc import Callable
from dataclasses import dataclass, field

__all__ = ["State", "Status", "StatusListener", "TargetState"]


class State(enum.StrEnum):
    UNASSIGNED = "UNASSIGNED"
    RUNNING = "RUNNING"
    PAUSED = "PAUSED"
    STOPPED = "STOPPED"
    FAILED = "FAILED"
    RESTARTING = "RESTARTING"
    DESTROYED = "DESTROYED"


class TargetState(enum.StrEnum):
    STARTED = "STARTED"
    PAUSED = "PAUSED"
    STOPPED = "STOPPED"


@dataclass(frozen=True)
class Status:
    """The state of one connector (``task is None``) or one task."""

    connector: str
    task: int | None
    state: State
    worker_id: str
    trace: str | None = None
    generation: int = 0
    timestamp_ms: int = field(default_factory=lambda: int(time.time() * 1000))


StatusListener = Callable[[Status], None]
