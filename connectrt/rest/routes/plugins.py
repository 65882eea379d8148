"""``/connector-plugins``: the installed plugins, a plugin's config definition (with KIP-891's
``?version=``) and the validation of a config against it. Always served, also while the
herder starts."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query, Request
from starlette.concurrency import run_in_threadpool

from connectrt.rest import wire
from connectrt.rest.bodies import read_json, string_map
from connectrt.runtime.herder.herder import Herder

__all__ = ["plugins_router"]


def plugins_router(herder: Herder) -> APIRouter:
    router = APIRouter()

    @router.get("/connector-plugins", summary="Installed plugins")
    def plugins(connectorsOnly: bool = True) -> Any:
        return [wire.plugin_info(p) for p in herder.plugins.list_plugins(connectorsOnly)]

    @router.get("/connector-plugins/{plugin}/config", summary="A plugin's config definition")
    def plugin_config(
        plugin: str, version: Annotated[str | None, Query(min_length=1)] = None
    ) -> Any:
        # ?version= (KIP-891): a version or range of the installed plugin; default the newest
        return [wire.config_key_info(k) for k in herder.plugins.plugin_config(plugin, version)]

    @router.put("/connector-plugins/{plugin}/config/validate", summary="Validate a config")
    async def validate(plugin: str, request: Request) -> Any:
        config = string_map(await read_json(request), allow_null=True)
        result = await run_in_threadpool(herder.plugins.validate, plugin, config)
        definition = result.definition
        return wire.config_infos(result, lambda key: herder.masker.is_secret(key, definition))

    return router
