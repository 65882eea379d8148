"""A small typed client for a connectrt (or Kafka Connect) worker's REST API.

::

    from connectrt.client import ConnectClient, ClientError

    with ConnectClient("http://localhost:8083", auth=("admin", "secret")) as c:
        c.create("files", {"connector.class": "FileStreamSource", "file": "in.txt", "topic": "t"})
        print(c.status("files")["connector"]["state"])

One method per endpoint. A non-2xx answer raises :class:`ClientError` carrying the HTTP status
and the server's ``message`` (from Kafka Connect's ``{"error_code", "message"}`` error body);
a transport failure (refused connection, DNS, TLS, timeout) raises :class:`ConnectionFailed`.
"""

from __future__ import annotations

import json
import ssl
from collections.abc import Iterable, Iterator, Mapping
from datetime import datetime
from typing import Any, NotRequired, TypedDict, cast
from urllib.parse import quote

import httpx

__all__ = [
    "ClientError",
    "ConnectClient",
    "ConnectionFailed",
    "ConnectorInfo",
    "ConnectorStatus",
    "OffsetEntry",
    "StateInfo",
    "TaskConfig",
    "TaskId",
    "TaskState",
    "server_sent_events",
]


class TaskId(TypedDict):
    connector: str
    task: int


class ConnectorInfo(TypedDict):
    name: str
    config: dict[str, str]
    tasks: list[TaskId]
    type: str
    offsets_status: NotRequired[dict[str, str]]  # only answering a create with initial offsets


class StateInfo(TypedDict):
    state: str
    worker_id: str
    trace: NotRequired[str]


class TaskState(StateInfo):
    id: int


class ConnectorStatus(TypedDict):
    name: str
    connector: StateInfo
    tasks: list[TaskState]
    type: str


class TaskConfig(TypedDict):
    id: TaskId
    config: dict[str, str]


class OffsetEntry(TypedDict):
    partition: dict[str, Any]
    offset: dict[str, Any] | None


class ClientError(Exception):
    """The server answered with a non-2xx status."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(f"{message} (HTTP {status})")
        self.status = status
        self.message = message


class ConnectionFailed(Exception):
    """The request never got an HTTP answer (connection refused, DNS, TLS, timeout)."""

    def __init__(self, url: str, reason: str) -> None:
        super().__init__(f"cannot reach {url}: {reason}")
        self.url = url
        self.reason = reason


def _seg(value: str | int) -> str:
    """One URL path segment (connector names may hold ``/``, spaces, ...)."""
    return quote(str(value), safe="")


class ConnectClient:
    """Kafka Connect REST API over ``httpx``.

    ``auth`` is HTTP Basic ``(user, password)``; ``token`` sends ``Authorization: Bearer``.
    ``verify`` is ``True`` (system CAs), ``False`` (no TLS verification) or a CA bundle path.
    """

    def __init__(
        self,
        url: str,
        auth: tuple[str, str] | None = None,
        token: str | None = None,
        verify: bool | str = True,
        timeout: float = 30,
    ) -> None:
        self.url = url.rstrip("/")
        #: Seconds each request may take (the ``timeout`` given).
        self.timeout = timeout
        headers = {"Accept": "application/json"}
        if token:
            headers["Authorization"] = f"Bearer {token}"
        tls = ssl.create_default_context(cafile=verify) if isinstance(verify, str) else verify
        self._http = httpx.Client(
            base_url=self.url,
            auth=auth,
            headers=headers,
            verify=tls,
            timeout=timeout,
        )

    # -- plumbing ------------------------------------------------------------------------------
    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> ConnectClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def request(
        self,
        method: str,
        path: str,
        *,
        params: Any = None,
        json: Any = None,
    ) -> Any:
        """Send one request; return the decoded JSON body, or None when there is none."""
        try:
            response = self._http.request(method, path, params=params, json=json)
        except httpx.TransportError as e:
            raise ConnectionFailed(self.url, str(e) or type(e).__name__) from None
        if not response.is_success:
            raise ClientError(response.status_code, _error_message(response))
        if response.status_code == 204 or not response.content.strip():
            return None
        try:
            return response.json()
        except ValueError:
            return response.text

    # -- worker --------------------------------------------------------------------------------
    def server_info(self) -> dict[str, Any]:
        return cast(dict[str, Any], self.request("GET", "/"))

    def health(self) -> dict[str, Any]:
        return cast(dict[str, Any], self.request("GET", "/health"))

    # -- connectors ----------------------------------------------------------------------------
    def connectors(self, expand: Iterable[str] = ()) -> Any:
        """Names (``list[str]``), or with ``expand`` (``status``/``info``) a dict by name."""
        wanted = list(expand)
        params = [("expand", e) for e in wanted] or None
        return self.request("GET", "/connectors", params=params)

    def connector(self, name: str) -> ConnectorInfo:
        return cast(ConnectorInfo, self.request("GET", f"/connectors/{_seg(name)}"))

    def config(self, name: str) -> dict[str, str]:
        return cast(dict[str, str], self.request("GET", f"/connectors/{_seg(name)}/config"))

    def create(
        self,
        name: str,
        config: Mapping[str, str],
        initial_state: str | None = None,
        initial_offsets: list[dict[str, Any]] | None = None,
    ) -> ConnectorInfo:
        """Create a connector; ``initial_offsets`` (KIP-995, the offsets API's
        ``[{"partition": ..., "offset": ...}]``) set where it starts, and the answer then has
        ``offsets_status``."""
        body: dict[str, Any] = {"name": name, "config": dict(config)}
        if initial_state is not None:
            body["initial_state"] = initial_state
        if initial_offsets is not None:
            body["initial_offsets"] = initial_offsets
        return cast(ConnectorInfo, self.request("POST", "/connectors", json=body))

    def put_config(self, name: str, config: Mapping[str, str]) -> ConnectorInfo:
        """Create or replace a connector's config (PUT)."""
        path = f"/connectors/{_seg(name)}/config"
        return cast(ConnectorInfo, self.request("PUT", path, json=dict(config)))

    def patch_config(self, name: str, patch: Mapping[str, str | None]) -> ConnectorInfo:
        """Change some keys; a ``None`` value removes that key (KIP-477)."""
        path = f"/connectors/{_seg(name)}/config"
        return cast(ConnectorInfo, self.request("PATCH", path, json=dict(patch)))

    def delete(self, name: str) -> None:
        self.request("DELETE", f"/connectors/{_seg(name)}")

    def status(self, name: str) -> ConnectorStatus:
        return cast(ConnectorStatus, self.request("GET", f"/connectors/{_seg(name)}/status"))

    def task_status(self, name: str, task: int) -> TaskState:
        path = f"/connectors/{_seg(name)}/tasks/{int(task)}/status"
        return cast(TaskState, self.request("GET", path))

    def tasks(self, name: str) -> list[TaskConfig]:
        return cast(list[TaskConfig], self.request("GET", f"/connectors/{_seg(name)}/tasks"))

    def topics(self, name: str) -> list[str]:
        body = self.request("GET", f"/connectors/{_seg(name)}/topics")
        return cast(list[str], body[name]["topics"])

    def reset_topics(self, name: str) -> None:
        self.request("PUT", f"/connectors/{_seg(name)}/topics/reset")

    def pause(self, name: str) -> None:
        self.request("PUT", f"/connectors/{_seg(name)}/pause")

    def resume(self, name: str) -> None:
        self.request("PUT", f"/connectors/{_seg(name)}/resume")

    def stop(self, name: str) -> None:
        self.request("PUT", f"/connectors/{_seg(name)}/stop")

    def restart(
        self, name: str, include_tasks: bool = False, only_failed: bool = False
    ) -> ConnectorStatus | None:
        """Restart (KIP-745). With either flag, returns the plan: instances being restarted
        show ``RESTARTING``; without flags only the connector restarts and None is returned."""
        params = {
            "includeTasks": "true" if include_tasks else "false",
            "onlyFailed": "true" if only_failed else "false",
        }
        path = f"/connectors/{_seg(name)}/restart"
        return cast("ConnectorStatus | None", self.request("POST", path, params=params))

    def restart_task(self, name: str, task: int) -> None:
        self.request("POST", f"/connectors/{_seg(name)}/tasks/{int(task)}/restart")

    # -- offsets -------------------------------------------------------------------------------
    def offsets(self, name: str) -> list[OffsetEntry]:
        body = self.request("GET", f"/connectors/{_seg(name)}/offsets")
        return cast(list[OffsetEntry], body["offsets"])

    def alter_offsets(self, name: str, offsets: Iterable[Mapping[str, Any]]) -> str:
        """PATCH offsets (KIP-875); the connector must be STOPPED. Returns the message."""
        body = {"offsets": [dict(o) for o in offsets]}
        answer = self.request("PATCH", f"/connectors/{_seg(name)}/offsets", json=body)
        return cast(str, answer["message"])

    def reset_offsets(self, name: str) -> str:
        """DELETE offsets (KIP-875); the connector must be STOPPED. Returns the message."""
        answer = self.request("DELETE", f"/connectors/{_seg(name)}/offsets")
        return cast(str, answer["message"])

    def rewind(
        self,
        name: str,
        to: str,
        timestamp: datetime | str | None = None,
        offset: int | None = None,
        topic: str | None = None,
    ) -> list[OffsetEntry]:
        """connectrt's one-call reset (stop, move offsets, resume): ``to`` is ``earliest``,
        ``latest``, ``timestamp`` (ISO-8601 ``timestamp``) or ``offset`` (``offset``).
        Returns the offsets the connector now starts from."""
        body: dict[str, Any] = {"to": to}
        if timestamp is not None:
            body["timestamp"] = (
                timestamp.isoformat() if isinstance(timestamp, datetime) else timestamp
            )
        if offset is not None:
            body["offset"] = offset
        if topic is not None:
            body["topic"] = topic
        answer = self.request("POST", f"/connectors/{_seg(name)}/offsets/reset", json=body)
        return cast(list[OffsetEntry], answer.get("offsets", []))

    # -- dead letter queue replay (a connectrt extension) --------------------------------------
    def dlq_replay(
        self,
        name: str,
        from_: datetime | str | int | None = None,
        to: datetime | str | int | None = None,
        dry_run: bool = False,
        max_replays: int | None = None,
    ) -> dict[str, Any]:
        """Start replaying connector ``name``'s dead letter queue (records with ``from_ <=
        timestamp < to``; ISO-8601, a datetime or epoch ms). Returns the run's status."""
        body: dict[str, Any] = {"dry_run": dry_run}
        for key, value in (("from", from_), ("to", to)):
            if value is not None:
                body[key] = value.isoformat() if isinstance(value, datetime) else value
        if max_replays is not None:
            body["max_replays"] = max_replays
        path = f"/connectors/{_seg(name)}/dlq/replay"
        return cast(dict[str, Any], self.request("POST", path, json=body))

    def dlq_replay_status(self, name: str) -> dict[str, Any]:
        """The latest replay run of connector ``name``: state, counts, partitions."""
        path = f"/connectors/{_seg(name)}/dlq/replay"
        return cast(dict[str, Any], self.request("GET", path))

    def cancel_dlq_replay(self, name: str) -> dict[str, Any]:
        """Cancel connector ``name``'s running replay (after the batch in hand)."""
        path = f"/connectors/{_seg(name)}/dlq/replay"
        return cast(dict[str, Any], self.request("DELETE", path))

    # -- the record inspector (a connectrt extension) --------------------------------------------
    def tap(
        self,
        name: str,
        stage: str = "read",
        rate: float | None = None,
        task: int | None = None,
        limit: int | None = None,
    ) -> Iterator[tuple[str, Any]]:
        """``GET /connectors/NAME/tap``: its server-sent events as ``(event, data)`` pairs,
        ``data`` decoded from JSON, as they arrive (a generator: the stream stays open until
        the server ends it, after ``limit`` records, or the caller stops iterating). The
        read timeout is at least 60 s: the server sends a keep-alive every 15 s."""
        params: dict[str, Any] = {"stage": stage}
        for key, value in (("rate", rate), ("task", task), ("limit", limit)):
            if value is not None:
                params[key] = value
        path = f"/connectors/{_seg(name)}/tap"
        timeout = httpx.Timeout(self.timeout, read=max(self.timeout, 60.0))
        headers = {"Accept": "text/event-stream"}
        try:
            with self._http.stream(
                "GET", path, params=params, headers=headers, timeout=timeout
            ) as response:
                if not response.is_success:
                    response.read()
                    raise ClientError(response.status_code, _error_message(response))
                yield from server_sent_events(response.iter_lines())
        except httpx.TransportError as e:
            raise ConnectionFailed(self.url, str(e) or type(e).__name__) from None

    # -- plugins -------------------------------------------------------------------------------
    def plugins(self, connectors_only: bool = True) -> list[dict[str, Any]]:
        params = {"connectorsOnly": "true" if connectors_only else "false"}
        return cast(list[dict[str, Any]], self.request("GET", "/connector-plugins", params=params))

    def plugin_config(self, plugin: str) -> list[dict[str, Any]]:
        path = f"/connector-plugins/{_seg(plugin)}/config"
        return cast(list[dict[str, Any]], self.request("GET", path))

    def validate(self, plugin: str, config: Mapping[str, str | None]) -> dict[str, Any]:
        path = f"/connector-plugins/{_seg(plugin)}/config/validate"
        return cast(dict[str, Any], self.request("PUT", path, json=dict(config)))

    # -- loggers -------------------------------------------------------------------------------
    def loggers(self) -> dict[str, dict[str, Any]]:
        return cast(dict[str, dict[str, Any]], self.request("GET", "/admin/loggers"))

    def logger(self, name: str) -> dict[str, Any]:
        return cast(dict[str, Any], self.request("GET", f"/admin/loggers/{_seg(name)}"))

    def set_logger(self, name: str, level: str, scope: str = "worker") -> list[str] | None:
        """Set a level; returns the loggers changed (``None`` for ``scope="cluster"``)."""
        path = f"/admin/loggers/{_seg(name)}"
        answer = self.request("PUT", path, params={"scope": scope}, json={"level": level})
        return cast("list[str] | None", answer)


def server_sent_events(lines: Iterable[str]) -> Iterator[tuple[str, Any]]:
    """``(event, data)`` of a ``text/event-stream`` (``data`` decoded from JSON); comment lines
    (keep-alives) are skipped."""
    event = "message"
    data: list[str] = []
    for line in lines:
        if not line:
            if data:
                yield event, json.loads("\n".join(data))
            event, data = "message", []
        elif line.startswith(":"):
            continue
        else:
            field, _, value = line.partition(":")
            value = value[1:] if value.startswith(" ") else value
            if field == "event":
                event = value
            elif field == "data":
                data.append(value)


def _error_message(response: httpx.Response) -> str:
    try:
        body = response.json()
    except ValueError:
        body = None
    if isinstance(body, dict) and isinstance(body.get("message"), str):
        return cast(str, body["message"])
    text = response.text.strip()
    return text or response.reason_phrase or f"HTTP {response.status_code}"
