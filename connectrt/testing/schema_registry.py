"""The built-in schema registry served over real HTTP for tests: :func:`memory_registry`.

The registry is connectrt's own (``connectrt.schema_registry``) over a memory store, on a free
loopback port, so converters and confluent-kafka's serializers talk to it exactly as they talk to
a Confluent Schema Registry.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from connectrt.listener.server import HttpServer
from connectrt.schema_registry.app import create_registry_app
from connectrt.schema_registry.store import MemorySchemaStore

__all__ = ["memory_registry"]


@contextmanager
def memory_registry() -> Iterator[tuple[MemorySchemaStore, str]]:
    """``(store, url)``: a registry over a new memory store, serving on a free loopback port
    for the block and stopped after it (also when the block raises). The server answers from
    its own thread; the store may be read from the test's thread meanwhile."""
    store = MemorySchemaStore()
    server = HttpServer(create_registry_app(store), "http://127.0.0.1:0")
    server.start()
    try:
        yield store, server.url
    finally:
        server.stop()
