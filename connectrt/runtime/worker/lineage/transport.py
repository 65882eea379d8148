"""Where OpenLineage events go: HTTP, the log, or a file (``lineage.transport``).

:func:`transport_from_config` builds the one :class:`Transport` the worker's settings name, or
None (``none``). Each ``send`` takes one event (a JSON-ready dict) and raises on failure; the
emitter logs the failure and drops the event. The HTTP transport's API key is held as a
:class:`~connectrt.api.Password` and only read to build the request header: never logged,
never part of an error message (httpx's errors name the URL, not the headers), and registered
with the process redactor, so it is hidden from any log line or trace it might reach.

Threading: ``send`` and ``close`` are called from the emitter's one thread.
"""

from __future__ import annotations

import json
import logging
import threading
from typing import Any, Protocol

import httpx

from connectrt.api.config import Password
from connectrt.errors import ConfigError
from connectrt.runtime.redaction import process_redactor

__all__ = [
    "ConsoleTransport",
    "FileTransport",
    "HttpTransport",
    "Transport",
    "transport_from_config",
]

log = logging.getLogger("connectrt.lineage")


class Transport(Protocol):
    def send(self, event: dict[str, Any]) -> None: ...
    def close(self) -> None: ...


class HttpTransport:
    """POSTs each event as JSON to ``url``/``endpoint`` (bearer ``api_key`` when given)."""

    def __init__(self, url: str, endpoint: str, api_key: Password | None, timeout_s: float) -> None:
        self.address = url.rstrip("/") + "/" + endpoint.lstrip("/") if endpoint else url
        headers = {"Content-Type": "application/json"}
        if api_key is not None and api_key.value:
            headers["Authorization"] = f"Bearer {api_key.value}"
        self._client = httpx.Client(timeout=timeout_s, headers=headers)

    def send(self, event: dict[str, Any]) -> None:
        response = self._client.post(self.address, content=json.dumps(event))
        if response.status_code >= 300:
            raise RuntimeError(f"{self.address} answered HTTP {response.status_code}")

    def close(self) -> None:
        self._client.close()


class ConsoleTransport:
    """Logs each event as one JSON document (logger ``connectrt.lineage``, INFO)."""

    def send(self, event: dict[str, Any]) -> None:
        log.info("%s", json.dumps(event))

    def close(self) -> None:
        pass


class FileTransport:
    """Appends each event to ``path`` as one line of JSON (flushed per event)."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._lock = threading.Lock()

    def send(self, event: dict[str, Any]) -> None:
        line = json.dumps(event) + "\n"
        with self._lock, open(self.path, "a", encoding="utf-8") as f:
            f.write(line)

    def close(self) -> None:
        pass


def transport_from_config(values: Any) -> Transport | None:
    """The transport ``lineage.*`` worker settings describe (``values[key]``), or None."""
    kind = str(values["lineage.transport"]).lower()
    if kind == "none":
        return None
    if kind == "http":
        url = str(values["lineage.url"] or "").strip()
        if not url:
            raise ConfigError("lineage.transport=http needs lineage.url", "lineage.url")
        key = values["lineage.api.key"]
        if isinstance(key, Password) and key.value:
            process_redactor().register_all([key.value])  # hidden should it reach a log line
        return HttpTransport(
            url,
            str(values["lineage.endpoint"] or ""),
            key if isinstance(key, Password) else None,
            int(values["lineage.timeout.ms"]) / 1000.0,
        )
    if kind == "console":
        return ConsoleTransport()
    path = str(values["lineage.file.path"] or "").strip()
    if not path:
        raise ConfigError("lineage.transport=file needs lineage.file.path", "lineage.file.path")
    return FileTransport(path)
