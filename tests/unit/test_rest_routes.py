"""The REST app's routes, one router per resource, served as one app: a ``405`` names in
``Allow`` the methods of every router's routes at the path (the app, the resources' routers,
the console's)."""

from __future__ import annotations

from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any, cast

import httpx
import pytest

from connectrt.listener.server import HttpServer
from connectrt.rest.app import create_app


@pytest.fixture(scope="module")
def client() -> Iterator[httpx.Client]:
    """The app over real HTTP. Only paths outside /connectors are asked: the herder stand-in
    is never ready (StartupGate answers 503 there) and has nothing else; a 405 is answered
    before any handler runs."""
    server = HttpServer(create_app(cast(Any, SimpleNamespace(ready=False))), "http://127.0.0.1:0")
    server.start()
    with httpx.Client(base_url=server.url, timeout=60) as http:
        yield http
    server.stop()


@pytest.mark.parametrize(
    ("method", "path", "allow"),
    [
        ("PUT", "/", "GET"),
        ("DELETE", "/connector-plugins", "GET"),
        ("DELETE", "/admin/loggers/x", "GET, PUT"),
        ("POST", "/control/events", "GET"),
        ("POST", "/openapi.json", "GET, HEAD"),
        ("POST", "/ui", "GET"),
        ("DELETE", "/ui/new", "GET"),
    ],
)
def test_405_allow_names_the_methods_of_every_router(
    client: httpx.Client, method: str, path: str, allow: str
) -> None:
    response = client.request(method, path)
    assert response.status_code == 405
    assert response.headers["allow"] == allow
    assert response.json() == {"error_code": 405, "message": "HTTP 405 Method Not Allowed"}
