"""Serving the schema registry on its own listener: a :class:`KafkaSchemaStore` + HttpServer.

Inside a worker it is served behind the worker's
:class:`~connectrt.listener.security.ListenerSecurity` (the REST API's users and schemes; no
path is open without credentials).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from connectrt.listener.security import ListenerSecurity
from connectrt.listener.server import HttpServer
from connectrt.schema_registry.app import create_registry_app
from connectrt.schema_registry.store import DEFAULT_COMPATIBILITY, KafkaSchemaStore

__all__ = ["SchemaRegistryServer"]


class SchemaRegistryServer:
    """A Schema Registry-compatible API over the ``topic`` of ``bootstrap_servers``.

    ``start()`` replays the topic (creating it if needed), then listens on ``listener``
    (``http://127.0.0.1:0`` picks a free port; ``url`` reports the one bound) behind
    ``security`` (default: no authentication; ``ssl`` gives an https listener its certificate
    and key). ``stop()`` stops serving and closes the Kafka clients.
    """

    def __init__(
        self,
        bootstrap_servers: str,
        topic: str = "_schemas",
        listener: str = "http://127.0.0.1:8081",
        *,
        default_compatibility: str = DEFAULT_COMPATIBILITY,
        ssl: Mapping[str, str] | None = None,
        security: ListenerSecurity | None = None,
        timeout: float = 30.0,
        **store_options: Any,
    ) -> None:
        self.store = KafkaSchemaStore(
            topic,
            bootstrap_servers=bootstrap_servers,
            default_compatibility=default_compatibility,
            timeout=timeout,
            **store_options,
        )
        self.app = create_registry_app(self.store)
        self._server = HttpServer(self.app, listener, ssl, security=security)
        self._started = False

    @property
    def url(self) -> str:
        return self._server.url

    @property
    def security(self) -> ListenerSecurity:
        return self._server.security

    def start(self) -> None:
        self.store.start()
        try:
            self._server.start()
        except BaseException:
            self.store.stop()
            raise
        self._started = True

    def stop(self) -> None:
        if self._started:
            self._server.stop()
            self._started = False
        self.store.stop()

    def __enter__(self) -> SchemaRegistryServer:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
