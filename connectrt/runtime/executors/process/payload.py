"""What a task process is given: :class:`ProcessTaskPayload` (sent as the channel's first
message, never on the command line or in the environment, because it holds resolved
secrets)."""

from __future__ import annotations

from dataclasses import dataclass, field

from connectrt.runtime.executors.task_payload import TaskPayload

__all__ = ["ProcessTaskPayload"]


@dataclass(frozen=True)
class ProcessTaskPayload(TaskPayload):
    """The shared payload plus what the child needs of its worker's process.

    ``worker_id`` is the worker's ``host:port`` (for the child's logs), ``log_level`` the
    worker's root log level, ``memory_limit_mb`` the limit the child runs under (0: none),
    ``redact`` the secret values the worker keeps out of its logs that occur in this task's
    configs (the child's log filter hides them too).
    """

    worker_id: str = ""
    log_level: int = 20
    memory_limit_mb: int = 0
    redact: tuple[str, ...] = field(default=(), repr=False)
