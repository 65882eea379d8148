"""The bodies of ``/connector-plugins``: plugin infos, config definitions and validation."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Self

from pydantic import Field

from connectrt.api.config import NO_DEFAULT, ConfigKey, ConfigType, Password, render_value
from connectrt.rest.models.base import Model
from connectrt.runtime.config.connector import ValidationResult
from connectrt.runtime.plugins.registry import PluginDesc

__all__ = ["ConfigInfo", "ConfigInfos", "ConfigKeyInfo", "ConfigValueInfo", "PluginInfo"]


class PluginInfo(Model):
    class_: str = Field(alias="class")
    type: str
    version: str | None = None

    @classmethod
    def of(cls, desc: PluginDesc) -> Self:
        body: dict[str, Any] = {"class": desc.class_name, "type": desc.type}
        version = desc.version()
        if version is not None:
            body["version"] = version
        return cls.model_validate(body)


class ConfigKeyInfo(Model):
    name: str
    type: str
    required: bool
    default_value: str | None
    importance: str
    documentation: str
    group: str | None
    order_in_group: int
    width: str
    display_name: str
    dependents: list[str]

    @classmethod
    def of(cls, key: ConfigKey) -> Self:
        return cls(
            name=key.name,
            type=key.type.value,
            required=key.required,
            default_value=_render_default(key),
            importance=key.importance.value,
            documentation=key.documentation,
            group=key.group,
            order_in_group=key.order_in_group,
            width=key.width.value,
            display_name=key.display_name or key.name,
            dependents=list(key.dependents),
        )


def _render_default(key: ConfigKey) -> str | None:
    if key.default is NO_DEFAULT or key.default is None:
        return None
    if key.type is ConfigType.PASSWORD:
        return Password.HIDDEN
    return render_value(key.default, key.type)


def _rendered_value(value: Any, key: ConfigKey | None) -> Any:
    if isinstance(value, Password) or (key is not None and key.type is ConfigType.PASSWORD):
        return None if value is None else Password.HIDDEN
    if value is None or isinstance(value, str):
        return value
    return render_value(value, key.type if key else None)


class ConfigValueInfo(Model):
    name: str
    value: Any = None
    recommended_values: list[Any]
    errors: list[str]
    visible: bool


class ConfigInfo(Model):
    definition: ConfigKeyInfo | None
    value: ConfigValueInfo


class ConfigInfos(Model):
    name: str
    error_count: int
    groups: list[str]
    configs: list[ConfigInfo]

    @classmethod
    def of(cls, result: ValidationResult, hide: Callable[[str], bool] | None = None) -> Self:
        """Kafka's ConfigInfos; ``hide(key)`` masks further values (keys matching the secret
        patterns)."""
        keys = result.definition.keys
        configs = []
        for name, cv in result.values.items():
            key = keys.get(name)
            value = _rendered_value(cv.value, key)
            if value is not None and hide is not None and hide(name):
                value = Password.HIDDEN
            configs.append(
                ConfigInfo(
                    definition=ConfigKeyInfo.of(key) if key is not None else None,
                    value=ConfigValueInfo(
                        name=name,
                        value=value,
                        recommended_values=list(cv.recommended_values),
                        errors=list(cv.errors),
                        visible=cv.visible,
                    ),
                )
            )
        return cls(
            name=result.connector_class,
            error_count=result.error_count,
            groups=result.groups,
            configs=configs,
        )
