"""``405 Method Not Allowed`` answers with the ``Allow`` header RFC 9110 requires.

Starlette answers a request whose path matches a route but whose method does not with 405 and
the methods of the *first* route of that path only; several routes share a path here (``GET``
and ``POST /connectors``), so :func:`allowed_methods` collects the methods of every route that
matches the path (``HEAD`` comes with ``GET``). The app's routes live in several routers (one
per resource, and FastAPI may keep an included router as one entry of the app's routes rather
than copying its routes), so it looks at the routes of every router it is given.
"""

from __future__ import annotations

from collections.abc import Iterable

from starlette.routing import Match, Route, Router
from starlette.types import Scope

__all__ = ["allowed_methods"]


def allowed_methods(routers: Iterable[Router], scope: Scope) -> list[str]:
    """The methods some route of ``routers`` serves at the request's path, sorted. Routers
    must be included without a prefix (their routes' paths are matched as they are)."""
    methods: set[str] = set()
    for router in routers:
        for route in router.routes:
            if isinstance(route, Route) and route.methods:
                match, _ = route.matches(scope)
                if match is not Match.NONE:
                    methods.update(route.methods)
    return sorted(methods)
