"""Config keys of task liveness and rate limits, for connectors and, as defaults, the worker.

``task.stall.timeout.ms`` / ``task.stall.action`` (see :mod:`connectrt.runtime.tasks.liveness`),
``task.rate.limit.records.per.sec`` / ``task.rate.limit.bytes.per.sec`` (see
:mod:`connectrt.runtime.tasks.rate_limit`) and ``task.memory.limit.mb`` (task processes only, see
:mod:`connectrt.runtime.executors.process`). A connector that leaves a key unset gets the worker's
value. Read-only after import.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from connectrt.api.config import ConfigDef, ConfigType, Importance, Range, ValidString, Width
from connectrt.errors import ConfigError

__all__ = [
    "MIN_MEMORY_LIMIT_MB",
    "TASK_LIMITS_CONFIG_DEF",
    "WORKER_TASK_LIMITS_CONFIG_DEF",
    "task_limit",
]

MIN_MEMORY_LIMIT_MB = 128
"""The smallest ``task.memory.limit.mb``: a task process with a producer or a consumer holds
30 to 100 MB of private writable memory (mostly reserved thread stacks) before its task
allocates anything."""


def _valid_memory_limit(name: str, value: Any) -> None:
    """``task.memory.limit.mb``: 0 (no limit) or at least :data:`MIN_MEMORY_LIMIT_MB`."""
    if value == 0:
        return
    if not isinstance(value, int) or value < MIN_MEMORY_LIMIT_MB:
        raise ConfigError(
            f"Invalid value {value} for configuration {name}: must be 0 (no limit) or at "
            f"least {MIN_MEMORY_LIMIT_MB} (MB); a task process with its Kafka clients needs "
            "up to about 100 MB before its task allocates anything",
            name,
            value,
        )


_GROUP = "Task Limits"
_STALL_ACTIONS = ValidString.of("log", "restart")

_DOCS = {
    "task.stall.timeout.ms": (
        "connectrt: a task inside one call (start, poll, put, flush/commit, stop) for longer "
        'than this is reported stalled: its state is kept, its status gains "stalled": true '
        "and its thread's stack as trace. Time between calls (idle partitions) does not "
        "count. Every executor (threads, processes, spark). 0 = off."
    ),
    "task.stall.action": (
        "connectrt: what to do with a stalled task: 'log' (report it) or 'restart' (also "
        "restart it; the stuck thread is abandoned as after task.shutdown.graceful.timeout.ms)."
    ),
    "task.rate.limit.records.per.sec": (
        "connectrt: at most this many records per second per task (a token bucket in the "
        "runner, applied per batch: before produce for sources, before put for sinks). "
        "0 = no limit."
    ),
    "task.rate.limit.bytes.per.sec": (
        "connectrt: at most this many bytes per second per task, as on the wire: a sink's "
        "consumed key+value+header bytes, a source's produced key+value+header bytes after "
        "the converters (any value type). 0 = no limit."
    ),
    "task.memory.limit.mb": (
        "connectrt, with task.executor=processes: the memory limit of each task process in MB "
        "(private writable memory, enforced by the OS as RLIMIT_DATA). A task over it is "
        "FAILED with 'memory limit' in its trace; its siblings are untouched. 0 = no limit; "
        "with another task.executor, setting it is refused."
    ),
}
_WORKER_DEFAULT = " The worker's value is the default of connectors that do not set it."
_CONNECTOR_DEFAULT = " Unset: the worker's value."


def _define(out: ConfigDef, worker: bool) -> ConfigDef:
    suffix = _WORKER_DEFAULT if worker else _CONNECTOR_DEFAULT
    specs: list[tuple[str, ConfigType, Any, Any]] = [
        ("task.stall.timeout.ms", ConfigType.LONG, 300000, Range.at_least(0)),
        ("task.stall.action", ConfigType.STRING, "log", _STALL_ACTIONS),
        ("task.rate.limit.records.per.sec", ConfigType.DOUBLE, 0.0, Range.at_least(0)),
        ("task.rate.limit.bytes.per.sec", ConfigType.DOUBLE, 0.0, Range.at_least(0)),
        ("task.memory.limit.mb", ConfigType.INT, 0, _valid_memory_limit),
    ]
    for order, (name, type_, default, validator) in enumerate(specs, 1):
        if worker:
            out = out.define(name, type_, default, validator, Importance.LOW, _DOCS[name] + suffix)
        else:
            out = out.define(
                name,
                type_,
                None,
                _optional(validator),
                Importance.LOW,
                _DOCS[name] + suffix,
                group=_GROUP,
                order_in_group=order,
                width=Width.SHORT,
                display_name=name,
            )
    return out


def _optional(validator: Any) -> Any:
    def check(name: str, value: Any) -> None:
        if value is not None:
            validator(name, value)

    return check


TASK_LIMITS_CONFIG_DEF = _define(ConfigDef(), worker=False)
"""The connector-level keys (no default: unset means the worker's value)."""

WORKER_TASK_LIMITS_CONFIG_DEF = _define(ConfigDef(), worker=True)
"""The worker-level keys, the connectors' defaults."""


def task_limit(connector_config: Mapping[str, str], worker_config: Any, key: str) -> Any:
    """The effective value of ``key`` for a connector: its own (already validated) or the
    worker's (``worker_config[key]``, a WorkerConfig or a parsed dict)."""
    raw = connector_config.get(key)
    if raw is None or str(raw).strip() == "":
        return worker_config[key]
    return TASK_LIMITS_CONFIG_DEF.parse({key: raw})[key]
