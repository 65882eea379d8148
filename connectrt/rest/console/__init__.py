"""The web console at ``/ui``: server-rendered pages over the herder, actions through the REST
API, every asset served by the worker itself (no CDN, no Node.js at run time).

:func:`mount_console` adds the pages (:mod:`.routes`) and the static files (``static/``:
the console's CSS and script and a vendored htmx, see ``static/VENDORED.md``) to the REST app,
so the console shares the REST listener and its authentication.
"""

from __future__ import annotations

from fastapi import APIRouter, FastAPI
from fastapi.staticfiles import StaticFiles

from connectrt.rest.console.routes import STATIC_DIR, console_router
from connectrt.runtime.herder.herder import Herder

__all__ = ["mount_console"]


def mount_console(app: FastAPI, herder: Herder) -> APIRouter:
    """Include the console's router in ``app`` and mount its static files; returns the
    router."""
    router = console_router(herder)
    app.include_router(router)
    app.mount("/ui/static", StaticFiles(directory=STATIC_DIR), name="console-static")
    return router
