"""``405 Method Not Allowed`` answers with the ``Allow`` header RFC 9110 requires.

Starlette answers a request whose path matches a route but whose method does not with 405 and
the methods of the *first* route of that path only; several routes share a path here (``GET``
and ``POST /connectors``), so :func:`allowed_methods` collects the methods of every route that
matches the path (``HEAD`` comes with ``GET``).
"""

from __future__ import annotations

from starlette.routing import Match, Route, Router
from starlette.types import Scope

__all__ = ["allowed_methods"]


def allowed_methods(router: Router, scope: Scope) -> list[str]:
    """The methods some route of ``router`` serves at the request's path, sorted."""
    methods: set[str] = set()
    for route in router.routes:
        if isinstance(route, Route) and route.methods:
            match, _ = route.matches(scope)
            if match is not Match.NONE:
                methods.update(route.methods)
    return sorted(methods)
