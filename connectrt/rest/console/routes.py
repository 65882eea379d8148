"""The console's pages and fragments under ``/ui`` (HTML; not part of the OpenAPI document).

Pages render whole documents; ``/ui/.../fragments/...`` render the parts the pages refresh with
htmx (the connector table, a connector's status, its charts, its offsets) and the config form
built from a plugin's validation answer. Every route only reads (see :mod:`.views`); the
browser sends changes (create, edit, pause, resume, stop, restart, delete, offset reset) to
the REST API itself, so the console adds no second way to change anything.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import quote

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from fastapi.templating import Jinja2Templates
from starlette.concurrency import run_in_threadpool

from connectrt import __version__
from connectrt.errors import ConnectError, NotFoundError
from connectrt.rest.console import views
from connectrt.rest.console.schemas import add_schema_routes
from connectrt.runtime.herder.herder import Herder

__all__ = ["STATIC_DIR", "console_router"]

_HERE = Path(__file__).parent
STATIC_DIR = _HERE / "static"
_templates = Jinja2Templates(directory=_HERE / "templates")
_templates.env.filters["path"] = lambda value: quote(str(value), safe="")


def _hex(key: str) -> str:
    """A DOM id for a config key (keys hold dots, which CSS selectors would misread)."""
    return "k-" + key.encode().hex()


_templates.env.filters["key_id"] = _hex


def console_router(herder: Herder) -> APIRouter:
    router = APIRouter(prefix="/ui", include_in_schema=False)

    def page(request: Request, template: str, status_code: int = 200, **context: Any) -> Response:
        context.setdefault("worker", views.worker_summary(herder))
        return _templates.TemplateResponse(
            request, template, {"version": __version__, **context}, status_code=status_code
        )

    add_schema_routes(router, herder, page)  # /ui/schemas

    def missing(request: Request, name: str) -> Response:
        return page(request, "missing.html", 404, name=name)

    @router.get("", response_class=HTMLResponse)
    def overview(request: Request) -> Response:
        return page(request, "overview.html", rows=views.connector_rows(herder))

    @router.get("/", response_class=HTMLResponse)
    def overview_slash() -> Response:
        return RedirectResponse("/ui", status_code=307)

    @router.get("/fragments/connectors", response_class=HTMLResponse)
    def connectors_fragment(request: Request) -> Response:
        return _templates.TemplateResponse(
            request, "_connectors.html", {"rows": views.connector_rows(herder)}
        )

    @router.get("/connectors/{name}", response_class=HTMLResponse)
    def connector(request: Request, name: str) -> Response:
        try:
            data = views.connector_page(herder, name)
            status = views.connector_status(herder, name)
        except NotFoundError:
            return missing(request, name)
        return page(request, "connector.html", name=name, status=status, **data)

    @router.get("/connectors/{name}/tap", response_class=HTMLResponse)
    def tap(request: Request, name: str) -> Response:
        """The record inspector: the browser reads ``GET /connectors/{name}/tap`` itself
        (EventSource), so the page only offers the connector's stages."""
        try:
            data = views.tap_page(herder, name)
        except NotFoundError:
            return missing(request, name)
        return page(request, "tap.html", name=name, **data)

    @router.get("/connectors/{name}/fragments/status", response_class=HTMLResponse)
    def status_fragment(request: Request, name: str) -> Response:
        try:
            status = views.connector_status(herder, name)
        except NotFoundError:
            return HTMLResponse('<p class="notice">This connector no longer exists.</p>')
        return _templates.TemplateResponse(
            request, "_status.html", {"name": name, "status": status}
        )

    @router.get("/connectors/{name}/fragments/charts", response_class=HTMLResponse)
    def charts_fragment(request: Request, name: str) -> Response:
        return _templates.TemplateResponse(
            request, "_charts.html", {"charts": views.task_charts(herder, name)}
        )

    @router.get("/connectors/{name}/fragments/offsets", response_class=HTMLResponse)
    def offsets_fragment(request: Request, name: str) -> Response:
        try:
            offsets: Any = herder.offsets.get(name)
            error = None
        except NotFoundError:
            offsets, error = [], "This connector no longer exists."
        except ConnectError as e:
            offsets, error = [], herder.secrets.redact(str(e))
        return _templates.TemplateResponse(
            request, "_offsets.html", {"offsets": offsets, "error": error}
        )

    @router.get("/connectors/{name}/edit", response_class=HTMLResponse)
    async def edit(request: Request, name: str) -> Response:
        try:
            config = herder.connector_config(name)  # secrets as [hidden]
        except NotFoundError:
            return missing(request, name)
        plugin = config.get("connector.class", "")
        try:
            form = await run_in_threadpool(
                views.validation, herder, plugin, views.validation_config(dict(config))
            )
        except ConnectError as e:  # the plugin's validation failed: say so, with a 400 page
            return page(
                request, "new.html", 400, plugins=views.plugin_choices(herder), error=str(e)
            )
        return page(
            request, "form.html", mode="edit", name=name, plugin=plugin, form=form, config=config
        )

    @router.get("/new", response_class=HTMLResponse)
    async def new(request: Request, plugin: str = "") -> Response:
        if not plugin:
            return page(request, "new.html", plugins=views.plugin_choices(herder))
        try:
            form = await run_in_threadpool(
                views.validation, herder, plugin, {"connector.class": plugin}
            )
        except ConnectError as e:
            return page(
                request,
                "new.html",
                400,
                plugins=views.plugin_choices(herder),
                error=herder.secrets.redact(str(e)),
            )
        return page(
            request,
            "form.html",
            mode="create",
            name="",
            plugin=plugin,
            form=form,
            config={"connector.class": plugin},
        )

    return router
