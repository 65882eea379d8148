"""The record inspector over a connector: a watcher's tap on every task of it this worker runs.

:func:`open_tap` checks the request (the connector exists, its tasks run in this process, the
stage is one of its tasks') and returns a :class:`ConnectorTap`, which attaches one
:class:`~connectrt.runtime.tasks.tap.TapSubscription` to each of the connector's task runners
and follows them: a task restarted (a new runner) is picked up at the next
:meth:`ConnectorTap.sync`.
The watcher reads events with :meth:`ConnectorTap.poll` and renders them with
:meth:`ConnectorTap.render` (JSON, the worker's secrets hidden).

Tasks that run outside this process (``task.executor=processes``, Spark) cannot be tapped: their
records never pass through this process. Asking for them is a conflict (409) that says so.

Threading: a ConnectorTap belongs to its watcher (one thread at a time: the REST route's);
:meth:`ConnectorTap.close` detaches it from every task and must be called (the route does it in
a ``finally``).
"""

from __future__ import annotations

import queue
from typing import Any

from connectrt.errors import NotFoundError
from connectrt.runtime.errors import BadRequestError, ConflictError
from connectrt.runtime.tasks.settings import SettingsBuiltRunner
from connectrt.runtime.tasks.tap import DEFAULT_RATE, MAX_RATE, TapSubscription, stage_names
from connectrt.runtime.tasks.tap_render import TextRedactor, render
from connectrt.runtime.worker.worker import Worker

__all__ = ["ConnectorTap", "open_tap"]


def _stage_index(stage: str, aliases: list[str], kind: str) -> str:
    """``stage`` as the subscription names it (``transform:<index>``); BadRequestError naming
    the stages there are when it is none of them."""
    if stage in ("read", "converted", "written"):
        return stage
    if stage.startswith("transform:"):
        which = stage.split(":", 1)[1]
        if which in aliases:
            return f"transform:{aliases.index(which)}"
        if which.isdigit() and int(which) < len(aliases):
            return f"transform:{int(which)}"
    known = ", ".join(stage_names(kind, aliases))
    raise BadRequestError(f"Unknown stage {stage!r}: this connector's stages are {known}")


class ConnectorTap:
    """One watcher's subscription to a connector's tasks on this worker (module docstring)."""

    def __init__(
        self,
        worker: Worker,
        connector: str,
        sub: TapSubscription,
        redactor: TextRedactor,
        task: int | None = None,
        aliases: list[str] | None = None,
    ) -> None:
        self.connector = connector
        self.aliases = aliases or []  # the tasks' transformation aliases, in chain order
        self.subscription = sub
        self._worker = worker
        self._redactor = redactor
        self._task = task
        self._attached: dict[int, SettingsBuiltRunner[Any]] = {}
        self.closed = False

    def sync(self) -> None:
        """Attach to the connector's current runners and detach from those gone."""
        try:
            runners = self._worker.runners(self.connector)
        except NotFoundError:
            runners = {}
        current = {
            i: r
            for i, r in runners.items()
            if isinstance(r, SettingsBuiltRunner) and (self._task is None or i == self._task)
        }
        for i, old in list(self._attached.items()):
            if current.get(i) is not old:
                old.untap(self.subscription)
                del self._attached[i]
        for i, runner in current.items():
            if i not in self._attached:
                runner.tap_into(self.subscription)
                self._attached[i] = runner

    def poll(self) -> dict[str, Any] | None:
        """The next sampled record's snapshot, or None when none is waiting (never blocks)."""
        try:
            return self.subscription.events.get_nowait()
        except queue.Empty:
            return None

    def render(self, event: dict[str, Any]) -> str:
        """``event`` as one line of JSON, secrets hidden (the connector's name added)."""
        return render({"connector": self.connector, **event}, self._redactor)

    def close(self) -> None:
        """Detach from every task (idempotent)."""
        self.closed = True
        for runner in self._attached.values():
            runner.untap(self.subscription)
        self._attached.clear()


def open_tap(
    worker: Worker,
    redactor: TextRedactor,
    connector: str,
    stage: str = "read",
    rate: float = DEFAULT_RATE,
    task: int | None = None,
) -> ConnectorTap:
    """A tap on ``connector``'s tasks in this process (see the module docstring).

    NotFoundError: no such connector (or task); ConflictError: its tasks run outside this
    process; BadRequestError: an unknown stage or a rate that is not positive.
    """
    if connector not in worker.connectors():
        raise NotFoundError(f"Connector {connector} not found")
    if not rate > 0:
        raise BadRequestError(f"rate must be a positive number of events a second, not {rate}")
    if task is not None and not 0 <= task < len(worker.task_configs(connector)):
        raise NotFoundError(f"Task {connector}-{task} not found")
    runners = worker.runners(connector)
    for index, runner in sorted(runners.items()):
        if not isinstance(runner, SettingsBuiltRunner):
            raise ConflictError(
                f"Task {connector}-{index} runs outside this worker's process "
                f"({type(runner).__name__}, task.executor={worker.config['task.executor']}): "
                "its records never pass through this process, so it cannot be tapped. The tap "
                "needs task.executor=threads."
            )
    if not runners and worker.config["task.executor"] != "threads":
        raise ConflictError(
            f"Connector {connector}'s tasks run outside this worker's process "
            f"(task.executor={worker.config['task.executor']}): they cannot be tapped. The tap "
            "needs task.executor=threads."
        )
    kind = worker.connector_type(connector)
    if not runners:
        elsewhere = sorted(
            {
                t.worker_id
                for t in worker.status.tasks(connector)
                if t.worker_id and t.worker_id != worker.status.worker_id
            }
        )
        if elsewhere:
            raise ConflictError(
                f"No task of connector {connector} runs on this worker; they run on "
                f"{', '.join(elsewhere)}: open the tap there"
            )
    # The running chain's aliases; before a task runs, the config's (the same once it does).
    configured = worker.connector_config(connector).get("transforms", "")
    aliases = [a.strip() for a in configured.split(",") if a.strip()]
    for runner in runners.values():
        assert isinstance(runner, SettingsBuiltRunner)  # checked above
        aliases = runner.tap_aliases()
        break
    which = _stage_index(stage, aliases, kind)
    label = f"transform:{aliases[int(which[10:])]}" if which.startswith("transform:") else which
    sub = TapSubscription(which, min(rate, MAX_RATE), label=label)
    tap = ConnectorTap(worker, connector, sub, redactor, task, aliases)
    tap.sync()
    return tap
