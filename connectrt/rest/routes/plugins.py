"""``/connector-plugins``: the installed plugins, a plugin's config definition (with KIP-891's
``?version=``) and the validation of a config against it. Always served, also while the
herder starts."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query, Request
from starlette.concurrency import run_in_threadpool

from connectrt.rest import models as m
from connectrt.rest.bodies import read_json
from connectrt.rest.openapi import documented
from connectrt.runtime.herder.herder import Herder

__all__ = ["plugins_router"]


def plugins_router(herder: Herder) -> APIRouter:
    router = APIRouter()

    @router.get("/connector-plugins", summary="Installed plugins")
    @documented({200: list[m.PluginInfo]}, errors=(400,))
    def plugins(connectorsOnly: bool = True) -> Any:
        return [m.PluginInfo.of(p).wire() for p in herder.plugins.list_plugins(connectorsOnly)]

    @router.get("/connector-plugins/{plugin}/config", summary="A plugin's config definition")
    @documented({200: list[m.ConfigKeyInfo]}, errors=(400, 404))
    def plugin_config(
        plugin: str, version: Annotated[str | None, Query(min_length=1)] = None
    ) -> Any:
        # ?version= (KIP-891): a version or range of the installed plugin; default the newest
        keys = herder.plugins.plugin_config(plugin, version)
        return [m.ConfigKeyInfo.of(k).wire() for k in keys]

    @router.put("/connector-plugins/{plugin}/config/validate", summary="Validate a config")
    @documented({200: m.ConfigInfos}, m.PatchConfigRequest, errors=(404,))
    async def validate(plugin: str, request: Request) -> Any:
        config = m.PatchConfigRequest.read(await read_json(request))
        result = await run_in_threadpool(herder.plugins.validate, plugin, config)
        definition = result.definition
        hide = lambda key: herder.masker.is_secret(key, definition)  # noqa: E731
        return m.ConfigInfos.of(result, hide).wire()

    return router
