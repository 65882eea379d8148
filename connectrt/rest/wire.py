"""JSON shapes of Kafka Connect's REST entities, built from the herder's dataclasses."""

from __future__ import annotations

from typing import Any

from connectrt.api.config import NO_DEFAULT, ConfigKey, ConfigType, Password, render_value
from connectrt.runtime.config.connector import ValidationResult
from connectrt.runtime.herder.info import ConnectorInfo, ConnectorStateInfo, StateInfo
from connectrt.runtime.plugins.registry import PluginDesc

__all__ = [
    "config_infos",
    "config_key_info",
    "connector_info",
    "connector_state_info",
    "plugin_info",
    "task_state",
]


def connector_info(info: ConnectorInfo) -> dict[str, Any]:
    out: dict[str, Any] = {
        "name": info.name,
        "config": info.config,
        "tasks": [{"connector": info.name, "task": t} for t in info.tasks],
        "type": info.type,
    }
    if info.offsets_status is not None:  # KIP-995: only answering a create with offsets
        out["offsets_status"] = {"message": info.offsets_status}
    return out


def _state(info: StateInfo) -> dict[str, Any]:
    out: dict[str, Any] = {"state": info.state, "worker_id": info.worker_id}
    if info.trace:
        out["trace"] = info.trace
    if info.version is not None:
        out["version"] = info.version  # KIP-891: left out when undefined, as in Kafka
    if info.restarts:
        out["restarts"] = info.restarts  # connectrt: automatic restarts so far
    if info.stalled_call is not None:  # connectrt: stuck in one call (task.stall.timeout.ms)
        out["stalled"] = True
        out["stalled_call"] = info.stalled_call
    if info.pid is not None:
        out["pid"] = info.pid  # connectrt: the task's process (task.executor=processes)
    return out


def task_state(task: int, info: StateInfo) -> dict[str, Any]:
    return {"id": task, **_state(info)}


def connector_state_info(info: ConnectorStateInfo) -> dict[str, Any]:
    return {
        "name": info.name,
        "connector": _state(info.connector),
        "tasks": [task_state(t, s) for t, s in sorted(info.tasks)],
        "type": info.type,
    }


def plugin_info(desc: PluginDesc) -> dict[str, Any]:
    out: dict[str, Any] = {"class": desc.class_name, "type": desc.type}
    version = desc.version()
    if version is not None:
        out["version"] = version
    return out


def _render_default(key: ConfigKey) -> str | None:
    if key.default is NO_DEFAULT or key.default is None:
        return None
    if key.type is ConfigType.PASSWORD:
        return Password.HIDDEN
    return render_value(key.default, key.type)


def config_key_info(key: ConfigKey) -> dict[str, Any]:
    return {
        "name": key.name,
        "type": key.type.value,
        "required": key.required,
        "default_value": _render_default(key),
        "importance": key.importance.value,
        "documentation": key.documentation,
        "group": key.group,
        "order_in_group": key.order_in_group,
        "width": key.width.value,
        "display_name": key.display_name or key.name,
        "dependents": list(key.dependents),
    }


def _rendered_value(value: Any, key: ConfigKey | None) -> Any:
    if isinstance(value, Password) or (key is not None and key.type is ConfigType.PASSWORD):
        return None if value is None else Password.HIDDEN
    if value is None or isinstance(value, str):
        return value
    return render_value(value, key.type if key else None)


def config_infos(result: ValidationResult, hide: Any = None) -> dict[str, Any]:
    """Kafka's ConfigInfos: ``name``, ``error_count``, ``groups``, ``configs``.

    ``hide(key) -> bool`` masks further values (keys matching the secret patterns).
    """
    keys = result.definition.keys
    configs = []
    for name, cv in result.values.items():
        key = keys.get(name)
        value = _rendered_value(cv.value, key)
        if value is not None and hide is not None and hide(name):
            value = Password.HIDDEN
        configs.append(
            {
                "definition": config_key_info(key) if key is not None else None,
                "value": {
                    "name": name,
                    "value": value,
                    "recommended_values": list(cv.recommended_values),
                    "errors": list(cv.errors),
                    "visible": cv.visible,
                },
            }
        )
    return {
        "name": result.connector_class,
        "error_count": result.error_count,
        "groups": result.groups,
        "configs": configs,
    }
