"""A task launch as plain data, and rebuilding its runner where it runs.

Executors that run a task outside the worker's process (Spark executors, child processes)
send it a :class:`TaskPayload`: the worker properties, the resolved connector config and the
task config, ids, the initial target state and the launch generation. Only plain data crosses
(picklable; no secrets in its repr), so the task is rebuilt on the other side exactly as a
local worker builds it, by :func:`build_runner`: converters, transforms, ``errors.*``,
producer or consumer, through the same
:class:`~connectrt.runtime.executors.runner_factory.RunnerFactory`.

The resolved configs hold secrets resolved from config providers, as the config topic of a
Kafka Connect cluster does: protect the channel a payload travels on accordingly.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

from connectrt.runtime.clients.settings import OverridePolicy
from connectrt.runtime.config.worker import WorkerConfig
from connectrt.runtime.executors.runner_factory import RunnerFactory
from connectrt.runtime.executors.task_executor import WorkerView
from connectrt.runtime.plugins.registry import PluginRegistry, registry
from connectrt.runtime.status import StatusBoard, TargetState
from connectrt.runtime.tasks.runner import TaskId, TaskRunner
from connectrt.storage.offsets import OffsetStore

__all__ = ["ConnectorLaunch", "TaskPayload", "build_runner"]


@dataclass(frozen=True)
class TaskPayload:
    """Everything needed to run one launch of one task elsewhere (immutable, picklable).

    ``kind`` is ``"source"`` or ``"sink"``, ``target`` a :class:`TargetState` value,
    ``generation`` tells this launch of the task from earlier ones.
    """

    connector: str
    task: int
    kind: str
    target: str
    generation: int
    worker_props: dict[str, str] = field(repr=False)
    connector_config: dict[str, str] = field(repr=False)
    task_config: dict[str, str] = field(repr=False)

    @property
    def task_id(self) -> TaskId:
        return TaskId(self.connector, self.task)


P = TypeVar("P", bound=TaskPayload)


@dataclass(frozen=True)
class ConnectorLaunch:
    """What the payloads of one ``start_tasks`` call share (immutable): the connector's type,
    target state and resolved config, read once from the worker.

    Built by :meth:`read` in ``start_tasks`` (under the worker's lock); :meth:`payload` then
    makes each task's payload, of the executor's own :class:`TaskPayload` subclass.
    """

    connector: str
    kind: str
    target: TargetState
    config: dict[str, str] = field(repr=False)

    @classmethod
    def read(cls, worker: WorkerView, connector: str) -> ConnectorLaunch:
        return cls(
            connector=connector,
            kind=worker.connector_type(connector),
            target=worker.target_state(connector),
            config=worker.resolved_config(connector),
        )

    def payload(
        self,
        payload_type: type[P],
        index: int,
        task_config: Mapping[str, str],
        *,
        generation: int,
        worker_props: Mapping[str, str],
        **extra: Any,
    ) -> P:
        """The payload of task ``index``: the shared fields from here (configs copied), and
        ``extra``, the fields ``payload_type`` adds to :class:`TaskPayload`."""
        return payload_type(
            connector=self.connector,
            task=index,
            kind=self.kind,
            target=self.target.value,
            generation=generation,
            worker_props=dict(worker_props),
            connector_config=dict(self.config),
            task_config=dict(task_config),
            **extra,
        )


def build_runner(
    payload: TaskPayload,
    offset_store: OffsetStore,
    status: StatusBoard,
    on_topic: Callable[[str, str, int], None],
    plugins: PluginRegistry = registry,
) -> TaskRunner:
    """Build (not start) the runner of ``payload``'s task as a local worker would.

    Source offsets go to ``offset_store`` (started by the caller), states to ``status``, and
    ``on_topic(connector, topic, task)`` is called the first time the task uses a topic. The
    task class is loaded by name from the task config's ``task.class`` (after adding the
    worker's ``plugin.path``), so it must be importable where the payload runs.
    """
    wc = WorkerConfig.from_props(payload.worker_props)
    plugins.add_plugin_path(wc["plugin.path"], wc["plugin.packages"])
    task_cls = plugins.load_class(payload.task_config["task.class"], "Task")
    factory = RunnerFactory(
        wc,
        plugins,
        OverridePolicy.from_worker_config(wc),
        offset_store,
        status,
        on_topic,
    )
    return factory.create_runner(
        payload.task_id,
        task_cls,
        dict(payload.task_config),
        payload.connector_config,
        TargetState(payload.target),
    )
