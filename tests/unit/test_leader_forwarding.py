"""A standby forwards connector requests to the leader it learned from the group, and only there.

Two real HTTP servers on loopback: a "leader" that echoes what reached it, and a "standby"
(:class:`LeaderForwarding` over an app that must never be reached for forwarded paths). The
leadership is a plain object whose role and leader URL the tests set, as the group would.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from connectrt.listener.server import HttpServer
from connectrt.ports import free_port
from connectrt.rest.forwarding import LeaderForwarding


@dataclass
class _Leadership:
    role: str = "standby"
    leader_url: str | None = None
    reads: Any = None  # no copy of the topics: reads are forwarded too

    def to_dict(self) -> dict[str, Any]:
        return {"role": self.role, "leader_url": self.leader_url}


async def _echo(request: Request) -> JSONResponse:
    return JSONResponse(
        {
            "method": request.method,
            "path": request.url.path,
            "query": request.url.query,
            "authorization": request.headers.get("authorization"),
            "forwarded": request.headers.get("x-connectrt-forwarded"),
            "body": (await request.body()).decode(),
        },
        status_code=201,
        headers={"Location": "/connectors/x"},
    )


async def _local(request: Request) -> JSONResponse:
    return JSONResponse({"served": "locally"})


def _app(endpoint: Any) -> Starlette:
    return Starlette(routes=[Route("/{path:path}", endpoint, methods=["GET", "POST", "PUT"])])


@pytest.fixture(scope="module")
def leader() -> Iterator[HttpServer]:
    server = HttpServer(_app(_echo), "http://127.0.0.1:0")
    server.start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def standby() -> Iterator[tuple[HttpServer, _Leadership]]:
    leadership = _Leadership()
    holder: dict[str, _Leadership | None] = {"l": leadership}
    app = LeaderForwarding(_app(_local), leadership=lambda: holder["l"])
    server = HttpServer(app, "http://127.0.0.1:0")
    server.start()
    yield server, leadership
    server.stop()


def test_a_write_is_forwarded_with_its_credentials_to_the_learned_leader_only(
    leader: HttpServer, standby: tuple[HttpServer, _Leadership]
) -> None:
    server, leadership = standby
    leadership.role, leadership.leader_url = "standby", leader.url
    answer = httpx.post(
        f"{server.url}/connectors?expand=info",
        content=b'{"name":"x"}',
        headers={
            "Authorization": "Basic dTpw",
            "Content-Type": "application/json",
            # Nothing of the request chooses the target: not its Host, nor any header.
            "Host": "169.254.169.254",
            "X-Forwarded-Host": "169.254.169.254",
        },
        timeout=30,
    )
    assert answer.status_code == 201
    assert answer.headers["location"] == "/connectors/x"
    assert answer.json() == {
        "method": "POST",
        "path": "/connectors",
        "query": "expand=info",
        "authorization": "Basic dTpw",
        "forwarded": "1",
        "body": '{"name":"x"}',
    }


def test_without_a_reachable_leader_a_request_answers_409(
    standby: tuple[HttpServer, _Leadership],
) -> None:
    server, leadership = standby
    leadership.role, leadership.leader_url = "standby", None
    answer = httpx.put(f"{server.url}/connectors/x/pause", timeout=30)
    assert answer.status_code == 409
    assert "no leader is known" in answer.json()["message"]
    leadership.leader_url = f"http://127.0.0.1:{free_port()}"  # nobody listens there
    answer = httpx.put(f"{server.url}/connectors/x/pause", timeout=30)
    assert answer.status_code == 409
    assert "could not be reached" in answer.json()["message"]


def test_a_request_forwarded_once_is_not_forwarded_again(
    leader: HttpServer, standby: tuple[HttpServer, _Leadership]
) -> None:
    server, leadership = standby
    leadership.role, leadership.leader_url = "standby", leader.url
    answer = httpx.get(
        f"{server.url}/connectors", headers={"X-Connectrt-Forwarded": "1"}, timeout=30
    )
    assert answer.status_code == 409


def test_the_leader_and_paths_outside_connectors_are_served_locally(
    leader: HttpServer, standby: tuple[HttpServer, _Leadership]
) -> None:
    server, leadership = standby
    leadership.role, leadership.leader_url = "standby", leader.url
    assert httpx.get(f"{server.url}/connector-plugins", timeout=30).json() == {"served": "locally"}
    leadership.role = "leader"
    assert httpx.get(f"{server.url}/connectors", timeout=30).json() == {"served": "locally"}


def test_get_leader_says_who_leads(
    leader: HttpServer, standby: tuple[HttpServer, _Leadership]
) -> None:
    server, leadership = standby
    leadership.role, leadership.leader_url = "standby", leader.url
    assert httpx.get(f"{server.url}/leader", timeout=30).json() == {
        "role": "standby",
        "leader_url": leader.url,
    }
    health = httpx.get(f"{server.url}/health", timeout=30)
    assert health.status_code == 200 and leader.url in health.json()["message"]
    single = HttpServer(LeaderForwarding(_app(_local), lambda: None), "http://127.0.0.1:0")
    single.start()
    try:
        assert httpx.get(f"{single.url}/leader", timeout=30).json() == {
            "role": "single",
            "leader_url": None,
        }
    finally:
        single.stop()
